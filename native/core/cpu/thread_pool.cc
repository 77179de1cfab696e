#include "core/cpu/thread_pool.h"

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"

namespace pygpukit::cpu {
namespace {

thread_local bool tls_in_pool = false;
thread_local int tls_cap = 0;

class Pool {
 public:
  explicit Pool(int n) {
    for (int i = 0; i < n; ++i) {
      threads_.emplace_back([this] {
        tls_in_pool = true;
        Loop();
      });
    }
  }
  ~Pool() {
    {
      std::lock_guard<std::mutex> l(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }
  void Submit(std::function<void()> fn) {
    {
      std::lock_guard<std::mutex> l(mu_);
      q_.push_back(std::move(fn));
    }
    cv_.notify_one();
  }

 private:
  void Loop() {
    for (;;) {
      std::function<void()> fn;
      {
        std::unique_lock<std::mutex> l(mu_);
        cv_.wait(l, [&] { return stop_ || !q_.empty(); });
        if (stop_ && q_.empty()) return;
        fn = std::move(q_.front());
        q_.pop_front();
      }
      fn();
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> q_;
  std::vector<std::thread> threads_;
  bool stop_ = false;
};

Pool& GetPool() {
  // Leaked on purpose: worker threads must not be joined during static destruction.
  static Pool* pool = new Pool(std::max(1, NumThreads() - 1));
  return *pool;
}

}  // namespace

int NumThreads() {
  static const int n = [] {
    if (const char* env = std::getenv("PYGPUKIT_NUM_THREADS"); env != nullptr && *env != '\0') {
      int v = 0;
      if (absl::SimpleAtoi(env, &v) && v > 0 && v <= 4096) return v;
      std::fprintf(stderr,
                   "pygpukit: ignoring PYGPUKIT_NUM_THREADS=%s (expected an integer in [1, "
                   "4096]); using the core count\n",
                   env);
    }
    return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  }();
  return n;
}

void SetThreadCap(int threads) { tls_cap = std::max(threads, 0); }

void ParallelFor(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  const int threads = tls_cap > 0 ? std::min(tls_cap, NumThreads()) : NumThreads();
  int64_t chunks = std::min<int64_t>(threads, (n + grain - 1) / grain);
  if (chunks <= 1 || tls_in_pool) {
    fn(0, n);
    return;
  }
  int64_t per = (n + chunks - 1) / chunks;
  std::mutex mu;
  std::condition_variable cv;
  int64_t pending = chunks - 1;
  // The pool's tasks refer to this frame: every chunk must finish before it unwinds, so an
  // exception (bad_alloc in a kernel, say) is held and rethrown once all chunks are done.
  std::exception_ptr error;
  auto run = [&](int64_t b, int64_t e) {
    try {
      if (b < e) fn(b, e);
    } catch (...) {
      std::lock_guard<std::mutex> l(mu);
      if (!error) error = std::current_exception();
    }
  };
  for (int64_t c = 1; c < chunks; ++c) {
    int64_t b = c * per, e = std::min(n, b + per);
    GetPool().Submit([&, b, e] {
      run(b, e);
      std::lock_guard<std::mutex> l(mu);
      if (--pending == 0) cv.notify_one();
    });
  }
  run(0, std::min(n, per));  // the calling thread takes the first chunk
  std::unique_lock<std::mutex> l(mu);
  cv.wait(l, [&] { return pending == 0; });
  if (error) std::rethrow_exception(error);
}

}  // namespace pygpukit::cpu

// Helpers of the memory pool, spill and transfer tests: a CPU backend with a byte quota and
// bookkeeping of what the pool asks of the "driver", gates that hold a stream busy so that work
// still in flight is observable, and a test environment owning backend, pools, engine and streams
// in a safe destruction order.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/cpu/cpu_backend.h"
#include "core/status.h"
#include "runtime/memory/memory_pool.h"
#include "runtime/memory/pinned_pool.h"
#include "runtime/memory/transfer.h"
#include "test_util.h"

namespace pygpukit::pool_testing {

inline constexpr Device kCpu{DeviceType::kCPU, 0};
inline constexpr size_t kKiB = 1024;
inline constexpr size_t kMiB = size_t{1} << 20;

// The CPU backend with a limit on raw device bytes outstanding (like a small GPU), a record of
// every raw allocation and free, and hooks to widen race windows deterministically.
class QuotaBackend final : public hal::Backend {
 public:
  explicit QuotaBackend(size_t quota) : quota_(quota) {}
  DeviceType type() const override { return DeviceType::kCPU; }
  int device_count() const override { return 1; }
  absl::StatusOr<hal::DeviceProperties> properties(int d) const override {
    return cpu_.properties(d);
  }
  absl::StatusOr<void*> RawAllocate(int d, size_t bytes) override {
    ++allocating_;
    if (int ms = alloc_delay_ms.load(); ms > 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    }
    --allocating_;
    bool fits;
    {
      std::lock_guard<std::mutex> l(mu_);
      fits = used_ + bytes <= quota_;
      if (fits) {
        used_ += bytes;
        peak_used_ = std::max(peak_used_, used_);
      }
    }
    if (!fits) {
      ++failed_allocs_;
      if (on_alloc_failure) on_alloc_failure();
      return MemoryError(absl::StrCat("quota: ", bytes, " bytes do not fit"));
    }
    auto p = cpu_.RawAllocate(d, bytes);
    std::lock_guard<std::mutex> l(mu_);
    if (!p.ok()) {
      used_ -= bytes;
      return p;
    }
    sizes_[*p] = bytes;
    ++raw_allocs_;
    return p;
  }
  absl::Status RawFree(int d, void* ptr) override {
    {
      std::lock_guard<std::mutex> l(mu_);
      auto it = sizes_.find(ptr);
      if (it == sizes_.end()) return RuntimeError("quota: freeing an unknown pointer");
      used_ -= it->second;
      sizes_.erase(it);
      freed_.push_back(ptr);
      ++raw_frees_;
    }
    return cpu_.RawFree(d, ptr);
  }
  absl::StatusOr<void*> RawAllocateHost(size_t bytes) override {
    ++host_allocating_;
    if (int ms = host_delay_ms.load(); ms > 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    }
    --host_allocating_;
    ++host_allocs_;
    return cpu_.RawAllocateHost(bytes);
  }
  absl::Status RawFreeHost(void* ptr) override {
    ++host_frees_;
    return cpu_.RawFreeHost(ptr);
  }
  absl::StatusOr<std::pair<size_t, size_t>> MemoryInfo(int) const override {
    std::lock_guard<std::mutex> l(mu_);
    return std::pair<size_t, size_t>(quota_ - used_, quota_);
  }
  absl::StatusOr<std::unique_ptr<hal::Stream>> CreateStream(int d, int p) override {
    return cpu_.CreateStream(d, p);
  }
  std::pair<int, int> StreamPriorityRange() const override { return cpu_.StreamPriorityRange(); }
  absl::StatusOr<std::unique_ptr<hal::Event>> CreateEvent(int d, bool t) override {
    return cpu_.CreateEvent(d, t);
  }
  absl::Status Record(hal::Event& e, hal::Stream& s) override { return cpu_.Record(e, s); }
  absl::Status Wait(hal::Stream& s, hal::Event& e) override {
    ++waits_;
    return cpu_.Wait(s, e);
  }
  absl::StatusOr<bool> Query(hal::Event& e) override { return cpu_.Query(e); }
  absl::Status Synchronize(hal::Event& e) override { return cpu_.Synchronize(e); }
  absl::Status Synchronize(hal::Stream& s) override { return cpu_.Synchronize(s); }
  absl::StatusOr<float> ElapsedMs(hal::Event& a, hal::Event& b) override {
    return cpu_.ElapsedMs(a, b);
  }
  absl::Status CopyAsync(void* dst, const void* src, size_t n, hal::CopyKind k,
                         hal::Stream& s) override {
    return cpu_.CopyAsync(dst, src, n, k, s);
  }
  absl::Status MemsetAsync(void* dst, uint8_t v, size_t n, hal::Stream& s) override {
    return cpu_.MemsetAsync(dst, v, n, s);
  }
  absl::Status WriteWordAsync(uint32_t* dst, uint32_t v, hal::Stream& s) override {
    return cpu_.WriteWordAsync(dst, v, s);
  }

  absl::Status Enqueue(hal::Stream& s, std::function<void()> task) {
    return cpu_.Enqueue(s, std::move(task));
  }
  size_t used() const {
    std::lock_guard<std::mutex> l(mu_);
    return used_;
  }
  size_t peak_used() const {
    std::lock_guard<std::mutex> l(mu_);
    return peak_used_;
  }
  size_t live_allocations() const {
    std::lock_guard<std::mutex> l(mu_);
    return sizes_.size();
  }
  // Raw device pointers returned to the backend, in order.
  std::vector<void*> freed() const {
    std::lock_guard<std::mutex> l(mu_);
    return freed_;
  }
  int raw_allocs() const { return raw_allocs_; }
  int raw_frees() const { return raw_frees_; }
  int failed_allocs() const { return failed_allocs_; }
  int allocating() const { return allocating_; }
  int waits() const { return waits_; }
  int host_allocating() const { return host_allocating_; }
  int host_allocs() const { return host_allocs_; }
  int host_frees() const { return host_frees_; }

  std::atomic<int> alloc_delay_ms{0};      // RawAllocate sleeps this long first
  std::atomic<int> host_delay_ms{0};       // RawAllocateHost sleeps this long first
  std::function<void()> on_alloc_failure;  // runs when RawAllocate fails the quota

 private:
  cpu::CpuBackend cpu_;
  size_t quota_;
  mutable std::mutex mu_;
  size_t used_ = 0, peak_used_ = 0;
  std::map<void*, size_t> sizes_;
  std::vector<void*> freed_;
  std::atomic<int> raw_allocs_{0}, raw_frees_{0}, failed_allocs_{0}, allocating_{0}, waits_{0},
      host_allocating_{0}, host_allocs_{0}, host_frees_{0};
};

// Holds a stream busy: a task queued on it waits until Release() (or destruction), so that every
// later piece of work on the stream, and every event recorded there, stays pending until then.
class StreamBlocker {
 public:
  StreamBlocker(QuotaBackend& backend, hal::Stream& stream) : state_(std::make_shared<State>()) {
    auto st = state_;
    EXPECT_OK(backend.Enqueue(stream, [st] {
      std::unique_lock<std::mutex> l(st->mu);
      st->cv.wait(l, [&] { return st->open; });
    }));
  }
  ~StreamBlocker() { Release(); }
  StreamBlocker(const StreamBlocker&) = delete;
  StreamBlocker& operator=(const StreamBlocker&) = delete;
  void Release() {
    {
      std::lock_guard<std::mutex> l(state_->mu);
      state_->open = true;
    }
    state_->cv.notify_all();
  }

 private:
  struct State {
    std::mutex mu;
    std::condition_variable cv;
    bool open = false;
  };
  std::shared_ptr<State> state_;
};

// Runs `f` on a thread; Done() tells whether it has returned (to observe blocking calls).
class Async {
 public:
  explicit Async(std::function<void()> f)
      : thread_([this, f = std::move(f)] {
          f();
          done_ = true;
        }) {}
  ~Async() { Join(); }
  bool Done() const { return done_; }
  // True when `f` returned within `ms` milliseconds.
  bool DoneWithin(int ms) const {
    auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    while (!done_ && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return done_;
  }
  void Join() {
    if (thread_.joinable()) thread_.join();
  }

 private:
  std::atomic<bool> done_{false};
  std::thread thread_;
};

inline std::vector<uint8_t> RandomBytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& x : v) x = static_cast<uint8_t>(rng());
  return v;
}

inline bool SameBytes(const void* p, const std::vector<uint8_t>& v) {
  return std::memcmp(p, v.data(), v.size()) == 0;
}

// Small pool geometry: requests up to 4 KiB come from 64 KiB small segments; larger ones up to
// 128 KiB share 256 KiB segments; larger still get their own segment, a multiple of 64 KiB.
inline PoolOptions TinyOptions() {
  PoolOptions o;
  o.small_max = 4 * kKiB;
  o.small_segment = 64 * kKiB;
  o.large_granularity = 64 * kKiB;
  o.mid_segment = 256 * kKiB;
  return o;
}

// Like TinyOptions, but requests over 32 KiB get a segment of their own (64 KiB multiples), so
// that one 64 KiB buffer is exactly one segment.
inline PoolOptions ExactOptions() {
  PoolOptions o = TinyOptions();
  o.mid_segment = 64 * kKiB;
  return o;
}

// Backend, pinned pool, transfer engine (when spill is wanted), pool and two streams. Members are
// destroyed streams first (their queued tasks may still hold buffers), then the pool, then the
// engine and the pinned pool the pool's spilled buffers use, then the backend.
struct PoolEnv {
  explicit PoolEnv(size_t quota, PoolOptions options = {}, bool spill = false,
                   TransferOptions transfer = {})
      : backend(quota), pinned(&backend, 0), pool(&backend, kCpu, options) {
    if (spill) {
      auto e = TransferEngine::Create(&backend, kCpu, &pinned, transfer);
      EXPECT_TRUE(e.ok()) << e.status();
      if (e.ok()) engine = std::move(*e);
      pool.set_transfer_engine(engine.get());
    }
    s = NewStream();
    t = NewStream();
  }
  std::unique_ptr<hal::Stream> NewStream() {
    auto st = backend.CreateStream(0, 0);
    EXPECT_TRUE(st.ok()) << st.status();
    return st.ok() ? std::move(*st) : nullptr;
  }

  QuotaBackend backend;
  PinnedPool pinned;
  std::unique_ptr<TransferEngine> engine;
  MemoryPool pool;
  std::unique_ptr<hal::Stream> s, t;
};

inline char* Ptr(const std::shared_ptr<Buffer>& b) { return static_cast<char*>(b->data()); }

}  // namespace pygpukit::pool_testing

#include "core/launch_queue.h"

#include <chrono>
#include <cstdlib>

#include "absl/container/flat_hash_set.h"

namespace pygpukit {
namespace {

// Spin before sleeping: the launcher waits this long for the next launch (a host loop between
// synchronizations keeps it awake; waking it costs the producer a futex call), a flusher this
// long for the launcher.
constexpr auto kLauncherIdleSpin = std::chrono::microseconds(100);
constexpr auto kFlushSpin = std::chrono::microseconds(50);

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Calls `ready` until it returns true or `limit` has passed; true if it did.
template <typename F>
bool SpinUntil(F&& ready, std::chrono::microseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  for (int i = 1;; ++i) {
    if (ready()) return true;
    CpuRelax();
    if (i % 64 == 0 && std::chrono::steady_clock::now() >= deadline) return false;
  }
}

std::mutex& LiveMu() {
  static auto* mu = new std::mutex();
  return *mu;
}
absl::flat_hash_set<LaunchQueue*>& Live() {
  static auto* live = new absl::flat_hash_set<LaunchQueue*>();
  return *live;
}

size_t RoundUpPow2(size_t n) {
  size_t p = 1;
  while (p < n) p <<= 1;
  return p;
}

}  // namespace

// A slot's sequence number says whose turn it is: == ticket, free for that ticket's producer;
// == ticket + 1, filled and waiting for the launcher; the launcher then frees it for the ticket
// one lap later (ticket + capacity).
struct LaunchQueue::Slot {
  std::atomic<uint64_t> seq{0};
  Launch launch;
};

LaunchQueue::LaunchQueue(size_t capacity, std::function<absl::Status(const Launch&)> submit,
                         std::function<void()> thread_start)
    : mask_(RoundUpPow2(capacity < 2 ? 2 : capacity) - 1),
      slots_(new Slot[mask_ + 1]),
      submit_(std::move(submit)),
      thread_start_(std::move(thread_start)) {
  for (size_t i = 0; i <= mask_; ++i) slots_[i].seq.store(i, std::memory_order_relaxed);
}

LaunchQueue::~LaunchQueue() {
  std::lock_guard<std::mutex> l(LiveMu());
  Live().erase(this);
  Stop();
}

void LaunchQueue::StopAll() {
  std::lock_guard<std::mutex> l(LiveMu());
  for (LaunchQueue* q : Live()) q->Stop();
}

void LaunchQueue::Stop() {
  stop_.store(true, std::memory_order_seq_cst);
  if (!thread_.joinable()) return;
  wake_.fetch_add(1, std::memory_order_release);
  wake_.notify_one();
  thread_.join();
}

void LaunchQueue::EnsureStarted() {
  std::call_once(started_, [this] {
    static std::once_flag at_exit;
    std::call_once(at_exit, [] { std::atexit(&LaunchQueue::StopAll); });
    std::lock_guard<std::mutex> l(LiveMu());
    Live().insert(this);
    thread_ = std::thread([this] { Run(); });
  });
}

LaunchQueue::Launch& LaunchQueue::Reserve(uint64_t* ticket) {
  EnsureStarted();
  const uint64_t t = head_.fetch_add(1, std::memory_order_relaxed);
  Slot& s = slots_[t & mask_];
  // Full: the slot frees when the launcher makes the launch one lap back, a few us, unless the
  // driver holds the launcher back (its own queue full behind long kernels): then sleep.
  for (int i = 0; s.seq.load(std::memory_order_acquire) != t; ++i) {
    if (i < 4096) {
      CpuRelax();
    } else if (i < 8192) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }
  *ticket = t;
  return s.launch;
}

void LaunchQueue::Commit(uint64_t ticket) {
  slots_[ticket & mask_].seq.store(ticket + 1, std::memory_order_release);
  // Pairs with the launcher's fence before it sleeps: either it sees this slot, or this sees it
  // asleep and wakes it.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (sleeping_.load(std::memory_order_relaxed)) {
    wake_.fetch_add(1, std::memory_order_release);
    wake_.notify_one();
  }
}

void LaunchQueue::Run() {
  if (thread_start_) thread_start_();
  uint64_t t = 0;
  for (;;) {
    Slot& s = slots_[t & mask_];
    auto ready = [&] { return s.seq.load(std::memory_order_acquire) == t + 1; };
    if (!ready()) {
      if (stop_.load(std::memory_order_acquire) && head_.load(std::memory_order_acquire) == t) {
        return;
      }
      if (SpinUntil(ready, kLauncherIdleSpin)) continue;
      const uint32_t w = wake_.load(std::memory_order_acquire);
      sleeping_.store(true, std::memory_order_relaxed);
      std::atomic_thread_fence(std::memory_order_seq_cst);
      if (!ready() && !stop_.load(std::memory_order_relaxed)) {
        wake_.wait(w, std::memory_order_acquire);
      }
      sleeping_.store(false, std::memory_order_relaxed);
      continue;
    }
    absl::Status st = submit_(s.launch);
    if (!st.ok()) {
      std::lock_guard<std::mutex> l(error_mu_);
      if (error_.ok()) error_ = std::move(st);
      failed_.store(true, std::memory_order_release);
    }
    // Counted before the slot is freed: a producer that gets the slot sees the count.
    done_.store(t + 1, std::memory_order_release);
    s.seq.store(t + mask_ + 1, std::memory_order_release);
    ++t;
    // Pairs with Flush's fence before it sleeps.
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (flush_waiters_.load(std::memory_order_relaxed) > 0) done_.notify_all();
  }
}

absl::Status LaunchQueue::Flush() {
  const uint64_t target = head_.load(std::memory_order_acquire);
  auto reached = [&] { return done_.load(std::memory_order_acquire) >= target; };
  if (!reached() && !SpinUntil(reached, kFlushSpin)) {
    flush_waiters_.fetch_add(1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    for (uint64_t d; (d = done_.load(std::memory_order_acquire)) < target;) {
      done_.wait(d, std::memory_order_acquire);
    }
    flush_waiters_.fetch_sub(1, std::memory_order_relaxed);
  }
  return status();
}

absl::Status LaunchQueue::status() const {
  if (!failed_.load(std::memory_order_acquire)) return absl::OkStatus();
  std::lock_guard<std::mutex> l(error_mu_);
  return error_;
}

}  // namespace pygpukit

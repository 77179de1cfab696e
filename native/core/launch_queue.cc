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

bool stopped_all = false;  // StopAll ran: queues started later stop at once (under LiveMu)

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
                         std::function<absl::Status()> thread_start)
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
  stopped_all = true;
  for (LaunchQueue* q : Live()) q->Stop();
}

void LaunchQueue::Close() {
  stop_.store(true, std::memory_order_seq_cst);
  // Tickets below the head at the moment the bit is set are made; later ones are refused. The
  // count is published before the bit, so whoever sees the bit reads it.
  uint64_t h = head_.load(std::memory_order_acquire);
  while (!(h & kClosed)) {
    closed_at_.store(h, std::memory_order_relaxed);
    if (head_.compare_exchange_weak(h, h | kClosed, std::memory_order_acq_rel)) break;
  }
}

void LaunchQueue::Stop() {
  Close();
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
    if (stopped_all) {  // first used after StopAll (at exit): refuse every launch
      Close();
      return;
    }
    Live().insert(this);
    thread_ = std::thread([this] { Run(); });
  });
}

LaunchQueue::Launch* LaunchQueue::Reserve(uint64_t* ticket) {
  EnsureStarted();
  const uint64_t t = head_.fetch_add(1, std::memory_order_acquire);
  if (t & kClosed) return nullptr;  // closed: nothing will make this ticket
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
  return &s.launch;
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

bool LaunchQueue::LaunchDirectly() {
  if (!sleeping_.load(std::memory_order_acquire)) return false;
  // Something queued (a ticket taken and not yet made): the launcher is about to run anyway.
  if ((head_.load(std::memory_order_acquire) & ~kClosed) != done_.load(std::memory_order_acquire)) {
    return false;
  }
  if (direct_while_asleep_.fetch_add(1, std::memory_order_relaxed) + 1 == kDirectBeforeWake) {
    wake_.fetch_add(1, std::memory_order_release);
    wake_.notify_one();
  }
  return true;
}

void LaunchQueue::Fail(absl::Status status) {
  std::lock_guard<std::mutex> l(error_mu_);
  if (error_.ok()) error_ = std::move(status);
  failed_.store(true, std::memory_order_release);
}

void LaunchQueue::Run() {
  if (thread_start_) {
    if (absl::Status st = thread_start_(); !st.ok()) Fail(std::move(st));
  }
  uint64_t t = 0;
  for (;;) {
    Slot& s = slots_[t & mask_];
    auto ready = [&] { return s.seq.load(std::memory_order_acquire) == t + 1; };
    if (!ready()) {
      // Closed and every accepted ticket made: done. (Accepted tickets not yet committed are
      // waited for: their producers are between Reserve and Commit.)
      if ((head_.load(std::memory_order_acquire) & kClosed) &&
          t == closed_at_.load(std::memory_order_relaxed)) {
        return;
      }
      if (SpinUntil(ready, kLauncherIdleSpin)) continue;
      const uint32_t w = wake_.load(std::memory_order_acquire);
      // Reset before sleeping, not on waking: callers that saw it asleep may still count after
      // it woke, and a count left past the wake point would never wake it again.
      direct_while_asleep_.store(0, std::memory_order_relaxed);
      sleeping_.store(true, std::memory_order_relaxed);
      std::atomic_thread_fence(std::memory_order_seq_cst);
      if (!ready() && !stop_.load(std::memory_order_relaxed)) {
        wake_.wait(w, std::memory_order_acquire);
      }
      sleeping_.store(false, std::memory_order_relaxed);
      sleeps_.fetch_add(1, std::memory_order_release);
      continue;
    }
    if (absl::Status st = submit_(s.launch); !st.ok()) Fail(std::move(st));
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
  // Tickets taken after the ring closed were refused (their Reserve returned null).
  const uint64_t head = head_.load(std::memory_order_acquire);
  const uint64_t target = head & kClosed ? closed_at_.load(std::memory_order_relaxed) : head;
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

// A mutex for very short critical sections under contention (the memory pool's hot path): spins
// with a CPU pause, then yields, instead of sleeping in the kernel the way std::mutex does after
// a failed try. Never hold it across anything that blocks (driver calls, waits on streams).
#pragma once

#include <atomic>
#include <thread>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace pygpukit {

/// BasicLockable spin-then-yield mutex (use with std::lock_guard / std::unique_lock and
/// std::condition_variable_any).
class SpinMutex {
 public:
  void lock() {
    for (int spins = 0; locked_.exchange(true, std::memory_order_acquire); ++spins) {
      // Wait for it to look free before trying again (no cache-line ping-pong meanwhile).
      while (locked_.load(std::memory_order_relaxed)) {
        if (++spins < 128) {
          Pause();
        } else {
          std::this_thread::yield();  // the holder may have been descheduled
        }
      }
    }
  }
  bool try_lock() { return !locked_.exchange(true, std::memory_order_acquire); }
  void unlock() { locked_.store(false, std::memory_order_release); }

 private:
  static void Pause() {
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#endif
  }
  std::atomic<bool> locked_{false};
};

}  // namespace pygpukit

// A bounded multi-producer queue of kernel launches, drained in order by one launcher thread.
//
// Why: on our hosts a driver launch (cuLaunchKernelEx) costs 3-4.5 us of host time, as much as
// all of our own per-op work. A caller that only copies the launch into a slot and returns
// overlaps its next op's work with the driver's launch of this one, so a stream of tiny ops costs
// the larger of the two per call rather than their sum.
//
// Order: launches are made in ticket order, which is each thread's call order (and, across
// threads, the order their Reserve calls took tickets). Anything else that uses a stream (event
// records, copies, library calls, synchronization, handing the stream to another library) must
// first Flush, so it follows every launch queued before it.
//
// Errors: a launch the driver refuses cannot be reported to its caller, who has returned. The
// first failure is kept and returned by every later Flush and checked by launchers, as CUDA's
// sticky errors are: work queued after a lost launch may have read its missing output.
//
// Shutdown: a stopping queue closes (Reserve returns null from then on, and the caller launches
// directly) and makes the launches it accepted before; StopAll stops every queue at exit.
//
// The queue knows nothing of CUDA: `submit` makes the launch, so tests drive it with a fake.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "absl/status/status.h"
#include "core/hal/backend.h"

namespace pygpukit {

class LaunchQueue {
 public:
  /// Parameter bytes one slot holds; a launch with more is made directly by its caller.
  static constexpr size_t kParamBytes = 1024;
  /// Parameters one slot describes.
  static constexpr size_t kMaxParams = 64;

  /// Where each parameter of a function lives in its packed parameter block.
  struct ParamLayout {
    uint16_t count = 0;
    uint16_t offset[kMaxParams] = {};
    uint16_t size[kMaxParams] = {};
  };

  /// One queued launch: the configuration and the parameters packed at `layout`'s offsets.
  struct Launch {
    void* function = nullptr;
    void* stream = nullptr;  // the backend's native stream
    hal::LaunchDims dims;
    const ParamLayout* layout = nullptr;  // outlives the queue (layouts are kept per function)
    alignas(64) unsigned char params[kParamBytes];
  };

  /// `capacity` slots (rounded up to a power of two). `submit` makes one launch on the launcher
  /// thread; `thread_start` runs once there first (e.g. makes a context current; its failure is
  /// kept like a launch's). The thread starts with the first Reserve.
  LaunchQueue(size_t capacity, std::function<absl::Status(const Launch&)> submit,
              std::function<absl::Status()> thread_start = {});
  /// Makes every queued launch, then stops the launcher thread.
  ~LaunchQueue();
  LaunchQueue(const LaunchQueue&) = delete;
  LaunchQueue& operator=(const LaunchQueue&) = delete;

  /// Takes the next ticket and returns its slot to fill, waiting while the queue is full; null
  /// once the queue has stopped (launch directly then). The caller fills the slot and calls
  /// Commit(ticket) at once: Flush waits for reserved slots too.
  Launch* Reserve(uint64_t* ticket);
  /// Hands a filled slot to the launcher thread.
  void Commit(uint64_t ticket);
  /// Returns when every launch reserved before the call has been made; the first failure of any
  /// launch so far, if there was one.
  absl::Status Flush();
  /// The first failure so far (OK if none); cheap enough to check before each Reserve.
  absl::Status status() const;
  /// True when the launcher sleeps with nothing queued (it idled past its spin): the caller
  /// should then launch directly (after Flush, as for any direct launch), since a queued
  /// launch would wait for the launcher to wake, tens of microseconds and far more at the tail
  /// (an H200 request loop, a request every 1 ms: p99 283 us queued, 80 launching directly).
  /// After kDirectBeforeWake such launches in a row the launcher is woken, so that a longer
  /// burst is queued again.
  bool LaunchDirectly();
  static constexpr uint32_t kDirectBeforeWake = 8;
  /// Launches made so far.
  uint64_t launched() const { return done_.load(std::memory_order_acquire); }
  /// Times the launcher has slept and woken again.
  uint64_t sleeps() const { return sleeps_.load(std::memory_order_acquire); }
  /// False once the queue is stopping (Reserve may then return null).
  bool accepting() const { return !stop_.load(std::memory_order_relaxed); }

  /// Stops every live queue's thread after making its queued launches; idempotent. Registered
  /// with atexit, so no launcher thread is inside the driver while the process tears it down.
  static void StopAll();

 private:
  struct Slot;
  // Set in head_ when the queue closes: tickets taken after it are refused, never made.
  static constexpr uint64_t kClosed = uint64_t{1} << 63;
  void EnsureStarted();
  void Run();
  void Close();  // refuses later tickets
  void Stop();   // closes, makes the accepted launches, joins the thread
  void Fail(absl::Status status);

  const size_t mask_;
  std::unique_ptr<Slot[]> slots_;
  std::function<absl::Status(const Launch&)> submit_;
  std::function<absl::Status()> thread_start_;
  std::once_flag started_;
  std::thread thread_;
  alignas(64) std::atomic<uint64_t> head_{0};  // next ticket (producers); kClosed once closed
  std::atomic<uint64_t> closed_at_{0};         // the head when it closed
  alignas(64) std::atomic<uint64_t> done_{0};  // launches made (the launcher thread)
  alignas(64) std::atomic<uint32_t> wake_{0};  // bumped to wake a sleeping launcher
  std::atomic<bool> sleeping_{false};
  std::atomic<uint32_t> direct_while_asleep_{0};  // LaunchDirectly answers since it slept
  std::atomic<uint64_t> sleeps_{0};
  std::atomic<int> flush_waiters_{0};
  std::atomic<bool> stop_{false};
  std::atomic<bool> failed_{false};
  mutable std::mutex error_mu_;
  absl::Status error_;
};

}  // namespace pygpukit

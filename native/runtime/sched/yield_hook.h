// The scheduler's hook for ops that can give way to more urgent work: how big one launch may be
// (ops split larger work, e.g. a matmul by rows) and whether work can be preempted (the sm90
// matmul kernels stop on a signal and resume later). The scheduler owns the policy
// (Scheduler::Gate implements this for tasks of paced tenants); the GEMM family is the one
// caller, once per op, through CurrentYield().
#pragma once

#include <atomic>
#include <cstdint>

#include "core/device.h"
#include "runtime/dispatcher.h"

namespace pygpukit {

/// How a task's preemptible kernels are told to yield: one flag, 1 while more urgent work
/// runs, in two copies.
struct PreemptSignal {
  /// The host's copy: whether to launch (or relaunch) at all.
  const std::atomic<uint32_t>* host = nullptr;
  /// The device's copy, in device memory, which running kernels poll. It is written without a
  /// kernel (hal::Backend::WriteWordAsync), set right after the host's copy and cleared before
  /// it, so a kernel launched while the host's copy reads 0 never sees a stale 1. (Kernels
  /// polling host memory instead ran 30x slower on an H200.)
  const uint32_t* device = nullptr;
  /// Where the device copy lives: only kernels on this device may poll it.
  Device on;
};

/// What a running task allows its ops (see the file comment).
class YieldHook {
 public:
  virtual ~YieldHook() = default;
  /// Largest launch, in FLOPs, ops should make, so that more urgent work waits for at most
  /// that much (kernels are not preemptible). 0: no limit.
  virtual int64_t max_launch_flops() const = 0;
  /// The task's preemption signal for work on `device`, or null: while it is set, preemptible
  /// work stops, saving its state, and resumes once it is clear again, so that more urgent
  /// work gets the SMs within microseconds.
  virtual const PreemptSignal* preempt_signal(Device device) const = 0;
  /// Blocks (GIL released) until the preemption signal's host copy is clear.
  virtual void AwaitResume() = 0;
  /// Called after an op that ran on preemptible kernels, with the times it was preempted.
  virtual void Preempted(int times) = 0;
};

/// The hook of the innermost LaunchGateScope on this thread, or null.
inline YieldHook* CurrentYield() {
  LaunchGate* gate = LaunchGateScope::Current();
  return gate != nullptr ? gate->yield() : nullptr;
}

}  // namespace pygpukit

// The dispatcher: the one place kernels are launched. Every op hands its work here, either as a
// host task (CPU backend) or as a named device kernel from the embedded images (CUDA backend), or
// as a library call (cuBLASLt). Kernel lookup, module loading on first use, per-kernel launch
// counters, the pacing hook (LaunchGate, installed by the scheduler around a task) and the
// launch records of the tracer (runtime/trace/tracer.h) live here.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/hal/backend.h"
#include "runtime/trace/tracer.h"

namespace pygpukit {

namespace cpu {
class CpuBackend;
}
namespace cuda {
class CudaBackend;
}

/// Launch counters, per kernel name (kernels launched at least once since the last reset).
struct DispatchStats {
  int64_t host_tasks = 0;
  int64_t device_kernels = 0;
  int64_t library_calls = 0;
  int64_t copies = 0;  // device copies (LaunchCopy)
  /// Device kernels the backend's launcher threads made (core/launch_queue.h); the rest of
  /// device_kernels were launched by their callers.
  int64_t queued_kernels = 0;
  std::map<std::string, int64_t, std::less<>> per_kernel;
};

/// Who makes a device launch. kQueued: the device's launch queue, when the calling thread has
/// no LaunchGate (pacing needs each launch's outcome at once) and no profiling session is open;
/// a failure then surfaces at a later call on the device. kImmediate: the caller, who gets the
/// launch's outcome (user kernels, whose launch configuration we cannot vouch for).
enum class LaunchMode { kQueued, kImmediate };

class YieldHook;  // runtime/sched/yield_hook.h

/// Pacing hook, consulted around every launch made by a thread that runs a scheduled task.
class LaunchGate {
 public:
  virtual ~LaunchGate() = default;
  /// Before a launch on `stream`: may wait (pacing) or fail (then nothing is launched).
  virtual absl::Status BeforeLaunch(hal::Stream& stream) = 0;
  /// After every launch that BeforeLaunch allowed; `launched` is the launch's outcome.
  virtual void AfterLaunch(hal::Stream& stream, const absl::Status& launched) = 0;
  /// What ops that can split or preempt their work ask of the running task (the scheduler's
  /// policy), or null: no limit, no preemption.
  virtual YieldHook* yield() { return nullptr; }
};

/// While alive, launches by this thread pass `gate`. Scopes nest; the innermost wins.
class LaunchGateScope {
 public:
  explicit LaunchGateScope(LaunchGate* gate);
  ~LaunchGateScope();
  LaunchGateScope(const LaunchGateScope&) = delete;
  LaunchGateScope& operator=(const LaunchGateScope&) = delete;
  /// The innermost gate on this thread, or null.
  static LaunchGate* Current();

 private:
  LaunchGate* previous_;
};

/// Launches work on streams. Thread-safe. Each launch may declare its cost (FLOPs, bytes moved),
/// which profiles turn into achieved TFLOP/s and GB/s.
class Dispatcher {
 public:
  Dispatcher(cpu::CpuBackend* cpu, cuda::CudaBackend* cuda);
  ~Dispatcher();

  /// Enqueues `task` (a CPU kernel) on a CPU stream; `held_bytes` is the memory it keeps alive
  /// until it has run (its KeepAlive). Waits first (GIL released) while the stream holds too
  /// much unfinished work (cpu::CpuBackend::Crowded): backpressure on a producer far ahead.
  absl::Status LaunchHost(hal::Stream& stream, absl::string_view kernel, std::function<void()> task,
                          LaunchCost cost = {}, int64_t held_bytes = 0);
  /// Launches the embedded CUDA kernel `kernel` (an extern "C" symbol) with `args` (pointers to
  /// the kernel's parameters, as for cuLaunchKernel).
  absl::Status LaunchDevice(hal::Stream& stream, absl::string_view kernel,
                            const hal::LaunchDims& dims, void** args, LaunchCost cost = {},
                            LaunchMode mode = LaunchMode::kQueued);
  /// Launches `function`, a CUfunction resolved elsewhere (a JIT-compiled kernel), counted as
  /// `kernel`.
  absl::Status LaunchFunction(hal::Stream& stream, absl::string_view kernel, void* function,
                              const hal::LaunchDims& dims, void** args, LaunchCost cost = {},
                              LaunchMode mode = LaunchMode::kQueued);
  /// Blocks of `block` threads of `function` (a CUfunction) one SM of CUDA device `device`
  /// holds at once.
  absl::StatusOr<int> ResidentBlocks(void* function, int device, int block);
  /// Runs `call`, which enqueues work on `stream` through a vendor library (cuBLASLt).
  absl::Status LaunchLibrary(hal::Stream& stream, absl::string_view what,
                             const std::function<absl::Status()>& call, LaunchCost cost = {});

  /// Runs `call`, which enqueues a copy of `bytes` on `stream` (a device-to-device memcpy),
  /// recorded as a copy named `what` (not paced by a LaunchGate, as before it was traced).
  absl::Status LaunchCopy(hal::Stream& stream, absl::string_view what,
                          const std::function<absl::Status()>& call, int64_t bytes);

  DispatchStats stats() const;
  void ResetStats();

 private:
  absl::StatusOr<void*> DeviceFunction(absl::string_view kernel, int device);
  hal::Backend* BackendOf(hal::Stream& stream) const;  // the backend of the stream's device
  /// Counts one launch of `kernel` (lock-free once this thread has counted it); returns the
  /// tracer's interned name for it.
  const std::string* Count(absl::string_view kernel);

  cpu::CpuBackend* cpu_;
  cuda::CudaBackend* cuda_;
  const uint64_t id_;  // distinguishes dispatchers in the threads' counter caches
  mutable std::mutex mu_;
  std::vector<void*> libraries_;  // loaded lazily, once
  bool libraries_loaded_ = false;
  absl::Status library_status_;
  absl::flat_hash_map<std::pair<std::string, int>, void*> functions_;
  // Dynamic shared-memory limit raised so far per function (launches above 48 KiB need it).
  absl::flat_hash_map<void*, unsigned> shared_limit_;
  std::atomic<int64_t> host_tasks_{0}, device_kernels_{0}, library_calls_{0}, copies_{0};
  std::atomic<int64_t> queued_base_{0};  // the launcher threads' count at the last reset
  int64_t QueuedLaunches() const;
  // Per-kernel counters. Map nodes never move and are never erased (a reset zeroes them), so
  // threads keep pointers to them (Count's cache) and bump them without the lock; the lock
  // guards insertion and iteration.
  std::map<std::string, std::atomic<int64_t>, std::less<>> counters_;
};

}  // namespace pygpukit

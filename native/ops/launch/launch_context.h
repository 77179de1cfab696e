// The launch context: what every kernel launch of an op needs, done once. An op opens one over
// the arrays its kernels read and write; the context pins them resident (paging spilled ones
// back in), takes the thread's current stream for their device (the StreamScope: a scheduled
// task's or a gp.Stream block's), records the buffers as used on that stream, and keeps them
// alive for queued CPU tasks. A kernel family's implementation for a backend receives the
// context and launches through it: CPU implementations queue host tasks (HostTask, ForEach),
// CUDA ones launch device kernels (cuda_launch.h). The op layer never asks which backend it is
// on; kernel_slot.h routes to the implementation registered for the context's backend.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "core/cpu/thread_pool.h"
#include "core/hal/backend.h"
#include "ops/array.h"
#include "runtime/dispatcher.h"
#include "runtime/memory/memory_pool.h"
#include "runtime/trace/tracer.h"

namespace pygpukit::ops {

/// Buffers a queued CPU task must keep alive until it has run.
using KeepAlive = std::vector<std::shared_ptr<Buffer>>;

/// The backends an implementation registers for (kernel_slot.h).
enum class BackendKind : uint8_t { kCpu = 0, kCuda = 1 };
inline constexpr int kBackendKinds = 2;
/// "cpu" or "cuda".
absl::string_view BackendKindName(BackendKind kind);

/// Pins `buf` (paging it back in if spilled) and records it as used on `s` when that is not its
/// own stream, ordering a page-in before `s`'s work: what every launch does per buffer.
absl::Status PinForStream(ResidencyPin& pin, const std::shared_ptr<Buffer>& buf, hal::Stream& s);

/// Holds the arrays' buffers resident (paging spilled ones back in) and records them on the
/// thread's stream, for code that reads device addresses outside a LaunchContext (nulls
/// skipped; one device per array's stream).
absl::StatusOr<ResidencyPin> Resident(absl::Span<const GPUArray* const> arrays);
inline absl::StatusOr<ResidencyPin> Resident(std::initializer_list<const GPUArray*> arrays) {
  return Resident(absl::MakeConstSpan(arrays.begin(), arrays.size()));
}

/// One op's launches on one device (see the file comment). Move-only; the arrays stay pinned
/// until it is destroyed, so destroy it only after the last launch through it.
class LaunchContext {
 public:
  /// Opens a context for `op` over `arrays` (nulls and invalid arrays skipped), which must all
  /// be on one device (ValueError naming `op` otherwise); `op` must outlive the context.
  static absl::StatusOr<LaunchContext> Open(absl::string_view op,
                                            absl::Span<const GPUArray* const> arrays);
  static absl::StatusOr<LaunchContext> Open(absl::string_view op,
                                            std::initializer_list<const GPUArray*> arrays) {
    return Open(op, absl::MakeConstSpan(arrays.begin(), arrays.size()));
  }
  /// A context on `device` over no arrays yet (Use adds the arrays the implementation picks).
  static absl::StatusOr<LaunchContext> OnDevice(absl::string_view op, Device device);

  LaunchContext(LaunchContext&&) = default;
  LaunchContext& operator=(LaunchContext&&) = default;

  absl::string_view op() const { return op_; }
  Device device() const { return device_; }
  BackendKind backend() const { return device_.is_cpu() ? BackendKind::kCpu : BackendKind::kCuda; }
  /// The stream every launch of this context is queued on.
  hal::Stream& stream() const { return *stream_; }

  /// Adds an array (an index array, a temporary) after opening: pinned, recorded on the
  /// stream and kept alive like the others; ValueError if it is on another device.
  absl::Status Use(const GPUArray& a);

  // ---- CPU backend ----
  /// Queues `task` on the stream as kernel `kernel` (counted, traced, paced by the dispatcher);
  /// the context's buffers stay alive until it has run.
  template <typename Task>
  absl::Status HostTask(absl::string_view kernel, Task&& task, LaunchCost cost = {}) {
    return QueueHost(
        kernel, [task = std::forward<Task>(task), keep = keep_]() mutable { task(); }, cost);
  }
  /// Queues `body(i)` for i in [0, n) as one host task that runs in parallel chunks of `grain`
  /// indices on the host thread pool.
  template <typename Body>
  absl::Status ForEach(absl::string_view kernel, int64_t n, Body body, int64_t grain = 1 << 15,
                       LaunchCost cost = {}) {
    return HostTask(
        kernel,
        [n, grain, body] {
          cpu::ParallelFor(n, grain, [&](int64_t b, int64_t e) {
            for (int64_t i = b; i < e; ++i) body(i);
          });
        },
        cost);
  }

  // ---- CUDA backend ----
  /// Launches the embedded kernel `kernel` (an extern "C" symbol of the kernel images) with
  /// `args` (pointers to its parameters, as for cuLaunchKernel).
  /// `mode` kImmediate returns the launch's own outcome (a caller that waits for the kernel).
  absl::Status Kernel(absl::string_view kernel, const hal::LaunchDims& dims, void** args,
                      LaunchCost cost = {}, LaunchMode mode = LaunchMode::kQueued) const;
  /// Launches `function`, a CUfunction resolved elsewhere (a JIT-compiled kernel), counted as
  /// `kernel`.
  absl::Status Function(absl::string_view kernel, void* function, const hal::LaunchDims& dims,
                        void** args, LaunchCost cost = {}) const;
  /// Runs `call`, which enqueues work on stream() through a vendor library (cuBLASLt) or the
  /// driver (a memset), counted and traced as `what`.
  absl::Status Library(absl::string_view what, const std::function<absl::Status()>& call,
                       LaunchCost cost = {}) const;

 private:
  LaunchContext(absl::string_view op, Device device, hal::Stream* stream)
      : op_(op), device_(device), stream_(stream) {}
  absl::Status QueueHost(absl::string_view kernel, std::function<void()> task, LaunchCost cost);

  absl::string_view op_;
  Device device_;
  hal::Stream* stream_;
  ResidencyPin pin_;
  KeepAlive keep_;
  int64_t held_bytes_ = 0;
};

}  // namespace pygpukit::ops

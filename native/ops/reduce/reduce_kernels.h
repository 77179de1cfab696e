// The reduce family's launches (reductions and scans) and their kernel entry points
// (ops/launch/kernel_slot.h): the CPU loops (cpu/) fold inputs converted to the compute dtype
// first; the CUDA JIT kernels (cuda/) convert as they load.
#pragma once

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "ops/array.h"
#include "ops/launch/kernel_slot.h"
#include "ops/reduce/reduce_ops.h"
#include "ops/reduce/reduce_table.h"
#include "runtime/trace/tracer.h"

namespace pygpukit::ops {

/// One reduction or scan, checked and typed by the op layer.
struct ReduceLaunch {
  ReduceOp op;
  absl::string_view name;
  DType compute;  // the dtype elements are cast to before they are folded
  double correction = 0.0;
  LaunchCost cost;  // declared to the profiler (set by the implementations)
};
/// out (dense, of the result dtype, the kept dims' extents) = the reduction of `a` over the dims
/// flagged in `reduced` (one flag per dim of a).
absl::Status LaunchReduce(const ReduceLaunch& l, const GPUArray& a, absl::Span<const bool> reduced,
                          const GPUArray& out);
/// out (dense, a's shape with `include_initial` more elements along `axis`) = the running
/// reduction of `a` along `axis`.
absl::Status LaunchScan(const ReduceLaunch& l, const GPUArray& a, int axis, bool include_initial,
                        const GPUArray& out);

/// The parameter block of the reduction of `a` over the dims flagged in `reduced` into `out`:
/// kept and reduced dims coalesced (read the addresses while the arrays are pinned).
absl::StatusOr<kernels::ReduceParams> ReduceParamsOf(absl::string_view name, const GPUArray& a,
                                                     absl::Span<const bool> reduced,
                                                     const GPUArray& out, double correction);
/// The parameter block of the scan of `a` along `axis` into `out`.
absl::StatusOr<kernels::ScanParams> ScanParamsOf(absl::string_view name, const GPUArray& a,
                                                 int axis, bool include_initial,
                                                 const GPUArray& out);

/// The reduction `l` of `a` into `out` (a context on out's device, no arrays yet: the
/// implementation uses what it reads).
inline constinit KernelSlot<absl::Status(LaunchContext&, const ReduceLaunch&, const GPUArray&,
                                         absl::Span<const bool>, const GPUArray&)>
    kReduceKernel{"reduce"};
/// The scan `l` of `a` along `axis` into `out`.
inline constinit KernelSlot<absl::Status(LaunchContext&, const ReduceLaunch&, const GPUArray&, int,
                                         bool, const GPUArray&)>
    kScanKernel{"scan"};

}  // namespace pygpukit::ops

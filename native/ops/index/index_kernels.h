// The index family's gather / scatter launch (take, take_along_axis, integer-array indexing and
// assignment through index arrays) and its kernel entry point (ops/launch/kernel_slot.h).
#pragma once

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "ops/array.h"
#include "ops/index/gather.h"
#include "ops/launch/kernel_slot.h"

namespace pygpukit::ops {

/// One integer index array of a gather: int64 values (bounds already checked; negative ones
/// count from the source axis's extent), broadcast to the output's shape, stepping `src_axis` of
/// the source.
struct GatherIndex {
  GPUArray values;
  int src_axis;
};
/// dst (dense) = src gathered: dst's dimension d walks src with `src_strides[d]` (elements; 0
/// where it does not), plus each index's value times the stride of its source axis. With
/// `scatter` the copy goes the other way: the places of src so described receive dst's
/// elements (an element named twice gets one of its values, as in NumPy).
absl::Status LaunchGather(const GPUArray& src, absl::Span<const int64_t> src_strides,
                          absl::Span<const GatherIndex> indices, const GPUArray& dst,
                          bool scatter = false);

/// p's gather (or with `scatter` its scatter) of itemsize-byte elements.
inline constinit KernelSlot<absl::Status(LaunchContext&, int, const kernels::GatherParams&, bool)>
    kGatherKernel{"gather"};

}  // namespace pygpukit::ops

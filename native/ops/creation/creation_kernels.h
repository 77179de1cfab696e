// The creation family's launches (copy with conversion, fill, arange) and their kernel entry
// points (ops/launch/kernel_slot.h), implemented in cpu/ and cuda/.
#pragma once

#include "absl/status/status.h"
#include "core/dtype.h"
#include "ops/array.h"
#include "ops/creation/creation_elements.h"
#include "ops/launch/kernel_slot.h"

namespace pygpukit::ops {

// ---- launches (creation_launch.cc) ----
/// dst = cast(src) elementwise; shapes equal (src may carry broadcast strides).
absl::Status LaunchCopy(const GPUArray& src, const GPUArray& dst);
/// Every element of dst = `value` (already encoded in dst's dtype, itemsize bytes).
absl::Status LaunchFill(const GPUArray& dst, const unsigned char* value);
/// dst (contiguous) = arange.
absl::Status LaunchArange(const GPUArray& dst, const kernels::ArangeParams& params);

// ---- kernel entry points ----
/// dst = cast(src) (both pinned by the context). CUDA: a JIT kernel per dtype pair and layout,
/// or the precompiled copy kernels without NVRTC.
inline constinit KernelSlot<absl::Status(LaunchContext&, const GPUArray&, const GPUArray&)>
    kCopyKernel{"copy"};
/// p.out's elements = the itemsize-byte word in p.scalar.
inline constinit KernelSlot<absl::Status(LaunchContext&, int, const kernels::ElementwiseParams&)>
    kFillKernel{"fill"};
/// p.n elements of arange into p.out, of `dtype` (real, not bool).
inline constinit KernelSlot<absl::Status(LaunchContext&, DType, const kernels::ArangeParams&)>
    kArangeKernel{"arange"};

}  // namespace pygpukit::ops

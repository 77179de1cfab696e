// Kernel parameter blocks filled from arrays: the coalesced layout of an elementwise launch.
#pragma once

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "ops/array.h"
#include "ops/kernels/params.h"

namespace pygpukit::ops {

/// Fills `p` (zeroed first) with the coalesced shape and element strides of `out` and the
/// optional operands `a` and `b` (of out's shape, broadcast strides allowed), their addresses
/// (read them while the arrays are pinned: LaunchContext) and whether all are dense.
/// NotImplementedError naming `op` when more than kKernelMaxDims dimensions remain.
absl::Status ElementwiseParamsOf(const GPUArray& out, const GPUArray* a, const GPUArray* b,
                                 kernels::ElementwiseParams& p, absl::string_view op);

}  // namespace pygpukit::ops

// Host side of the CUDA elementwise families: picks the kernel symbol for the dtype, sizes the
// grid and launches through the dispatcher. Compiled by the host compiler; the kernels themselves
// are in elementwise.cu.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "ops/cuda/launch_cuda.h"
#include "ops/kernel_launch.h"
#include "runtime/runtime.h"

namespace pygpukit::ops::cuda_kernels {

absl::Status Binary(hal::Stream& s, ElementwiseOp op, DType dtype,
                    const kernels::ElementwiseParams& p) {
  if (op == ElementwiseOp::kDivide && (IsInteger(dtype) || dtype == DType::Bool)) {
    return TypeError("divide: integer operands must be promoted before the kernel");
  }
  return LaunchGridStride(s, absl::StrCat("pgk_", ElementwiseOpName(op), "_", DTypeCode(dtype)),
                          p.n, p);
}

absl::Status Negative(hal::Stream& s, DType dtype, const kernels::ElementwiseParams& p) {
  if (dtype == DType::Bool) {
    return TypeError("negative: boolean operands are rejected before kernels");
  }
  return LaunchGridStride(s, absl::StrCat("pgk_negative_", DTypeCode(dtype)), p.n, p);
}

}  // namespace pygpukit::ops::cuda_kernels

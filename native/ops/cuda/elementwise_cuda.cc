// Host side of the CUDA elementwise families: picks the kernel symbol for the dtype, sizes the
// grid and launches through the dispatcher. Compiled by the host compiler; the kernels themselves
// are in elementwise.cu.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "ops/cuda/launch_cuda.h"
#include "ops/kernel_launch.h"
#include "ops/kernels/philox.h"
#include "runtime/runtime.h"

namespace pygpukit::ops::cuda_kernels {

absl::Status Copy(hal::Stream& s, DType, DType dst, const kernels::ElementwiseParams& p) {
  return LaunchGridStride(s, absl::StrCat("pgk_copy_", DTypeCode(dst)), p.n, p);
}

absl::Status Fill(hal::Stream& s, int itemsize, const kernels::ElementwiseParams& p) {
  return LaunchGridStride(s, absl::StrCat("pgk_fill_", itemsize), p.n, p);
}

absl::Status Gather(hal::Stream& s, int itemsize, const kernels::GatherParams& p, bool scatter) {
  return LaunchGridStride(s, absl::StrCat(scatter ? "pgk_scatter_" : "pgk_gather_", itemsize), p.n,
                          p);
}

absl::Status SearchSorted(hal::Stream& s, DType dtype, const kernels::SearchParams& p) {
  return LaunchGridStride(s, absl::StrCat("pgk_searchsorted_", DTypeCode(dtype)), p.n, p);
}

absl::Status Merge(hal::Stream& s, DType dtype, const kernels::MergeParams& p) {
  return LaunchGridStride(s, absl::StrCat("pgk_merge_", DTypeCode(dtype)), p.total, p);
}

absl::Status Random(hal::Stream& s, DType dtype, const kernels::RandomParams& p) {
  if (IsComplex(dtype)) {
    return TypeError(absl::StrCat("random: unsupported dtype ", DTypeName(dtype)));
  }
  // One thread per Philox block.
  const int64_t per = kernels::RandomPerBlock(p.kind, ItemSize(dtype));
  return LaunchGridStride(s, absl::StrCat("pgk_random_", DTypeCode(dtype)), (p.n + per - 1) / per,
                          p);
}

absl::Status Arange(hal::Stream& s, DType dtype, const kernels::ArangeParams& p) {
  if (IsComplex(dtype) || dtype == DType::Bool) {
    return TypeError(absl::StrCat("arange: unsupported dtype ", DTypeName(dtype)));
  }
  return LaunchGridStride(s, absl::StrCat("pgk_arange_", DTypeCode(dtype)), p.n, p);
}

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

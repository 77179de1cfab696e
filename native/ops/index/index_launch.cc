// The index family's launch: the gather parameter block over the output, the source walk and
// every index array, coalesced.
#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "core/shape.h"
#include "core/status.h"
#include "ops/index/index_kernels.h"

namespace pygpukit::ops {

absl::Status LaunchGather(const GPUArray& src, absl::Span<const int64_t> src_strides,
                          absl::Span<const GatherIndex> indices, const GPUArray& dst,
                          bool scatter) {
  if (dst.size() == 0) return absl::OkStatus();
  if (indices.size() > static_cast<size_t>(kernels::kGatherMaxIndices)) {
    return NotImplementedError(absl::StrCat("index: at most ", kernels::kGatherMaxIndices,
                                            " integer index arrays, got ", indices.size()));
  }
  absl::InlinedVector<const GPUArray*, 6> arrays = {&src, &dst};
  for (const GatherIndex& g : indices) arrays.push_back(&g.values);
  PGK_ASSIGN_OR_RETURN(LaunchContext ctx,
                       LaunchContext::Open(scatter ? "scatter" : "gather", arrays));
  // Coalesce over the output, the source walk and every index array.
  absl::InlinedVector<absl::Span<const int64_t>, 6> strides = {dst.strides(), src_strides};
  for (const GatherIndex& g : indices) strides.push_back(g.values.strides());
  CoalescedLayout c = Coalesce(dst.shape(), strides);
  if (c.shape.size() > static_cast<size_t>(kernels::kKernelMaxDims)) {
    return NotImplementedError(absl::StrCat("index: gather layout has ", c.shape.size(),
                                            " non-mergeable dimensions; kernels support ",
                                            kernels::kKernelMaxDims));
  }
  kernels::GatherParams p{};
  p.n = dst.size();
  p.ndim = static_cast<int32_t>(c.shape.size());
  p.nidx = static_cast<int32_t>(indices.size());
  const int64_t item = src.itemsize();
  for (int d = 0; d < p.ndim; ++d) {
    p.shape[d] = c.shape[d];
    p.src_strides[d] = c.strides[1][d] * item;
  }
  p.src = src.data();
  p.out = dst.data();
  for (size_t k = 0; k < indices.size(); ++k) {
    const GatherIndex& g = indices[k];
    p.idx[k].ptr = static_cast<const int64_t*>(g.values.data());
    for (int d = 0; d < p.ndim; ++d) p.idx[k].strides[d] = c.strides[2 + k][d];
    p.idx[k].src_stride = src.strides()[g.src_axis] * item;
    p.idx[k].extent = src.shape()[g.src_axis];
  }
  return kGatherKernel(ctx, static_cast<int>(item), p, scatter);
}

}  // namespace pygpukit::ops

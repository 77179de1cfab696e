// The reduce family's launches (LaunchReduce, LaunchScan) and the parameter blocks both backends
// fill: the kept, reduced and line dims coalesced.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/shape.h"
#include "core/status.h"
#include "ops/reduce/reduce_kernels.h"

namespace pygpukit::ops {
namespace {

using DimFlags = absl::InlinedVector<bool, 8>;

// The dims of `shape` with flags[d] == pick, coalesced over the given operands' strides.
absl::StatusOr<CoalescedLayout> Select(absl::string_view name, absl::Span<const int64_t> shape,
                                       absl::Span<const bool> flags, bool pick,
                                       absl::Span<const absl::Span<const int64_t>> strides) {
  Shape sub;
  absl::InlinedVector<Strides, 2> sub_strides(strides.size());
  for (size_t d = 0; d < shape.size(); ++d) {
    if (flags[d] != pick) continue;
    sub.push_back(shape[d]);
    for (size_t k = 0; k < strides.size(); ++k) sub_strides[k].push_back(strides[k][d]);
  }
  absl::InlinedVector<absl::Span<const int64_t>, 2> views(sub_strides.begin(), sub_strides.end());
  CoalescedLayout layout = Coalesce(sub, views);
  if (layout.shape.size() > static_cast<size_t>(kernels::kKernelMaxDims)) {
    return NotImplementedError(absl::StrCat(name, ": operand layout has ", layout.shape.size(),
                                            " non-mergeable dimensions; kernels support ",
                                            kernels::kKernelMaxDims));
  }
  return layout;
}

int64_t Product(absl::Span<const int64_t> shape) {
  int64_t n = 1;
  for (int64_t e : shape) n *= e;
  return n;
}

}  // namespace

absl::StatusOr<kernels::ReduceParams> ReduceParamsOf(absl::string_view name, const GPUArray& a,
                                                     absl::Span<const bool> reduced,
                                                     const GPUArray& out, double correction) {
  kernels::ReduceParams p = {};
  const absl::Span<const int64_t> strides[] = {a.strides()};
  PGK_ASSIGN_OR_RETURN(CoalescedLayout kept, Select(name, a.shape(), reduced, false, strides));
  PGK_ASSIGN_OR_RETURN(CoalescedLayout red, Select(name, a.shape(), reduced, true, strides));
  p.in = a.data();
  p.out = out.data();
  p.n_out = Product(kept.shape);
  p.n_red = Product(red.shape);
  p.slice = std::max<int64_t>(p.n_red, 1);
  p.slices = 1;
  p.out_ndim = static_cast<int64_t>(kept.shape.size());
  // Nothing to reduce: no reduced dims to walk (an extent 0 would divide by zero).
  p.red_ndim = p.n_red == 0 ? 0 : static_cast<int64_t>(red.shape.size());
  std::copy(kept.shape.begin(), kept.shape.end(), p.out_shape);
  std::copy(kept.strides[0].begin(), kept.strides[0].end(), p.out_stride);
  std::copy(red.shape.begin(), red.shape.end(), p.red_shape);
  std::copy(red.strides[0].begin(), red.strides[0].end(), p.red_stride);
  p.correction = correction;
  return p;
}

absl::StatusOr<kernels::ScanParams> ScanParamsOf(absl::string_view name, const GPUArray& a,
                                                 int axis, bool include_initial,
                                                 const GPUArray& out) {
  kernels::ScanParams p = {};
  DimFlags is_axis(a.ndim(), false);
  is_axis[axis] = true;
  const absl::Span<const int64_t> strides[] = {a.strides(), out.strides()};
  PGK_ASSIGN_OR_RETURN(CoalescedLayout lines, Select(name, a.shape(), is_axis, false, strides));
  p.in = a.data();
  p.out = out.data();
  p.n_lines = Product(lines.shape);
  p.length = a.shape()[axis];
  p.in_axis_stride = a.strides()[axis];
  p.out_axis_stride = out.strides()[axis];
  p.chunk = std::max<int64_t>(p.length, 1);
  p.chunks = 1;
  p.line_ndim = static_cast<int64_t>(lines.shape.size());
  std::copy(lines.shape.begin(), lines.shape.end(), p.line_shape);
  std::copy(lines.strides[0].begin(), lines.strides[0].end(), p.line_in_stride);
  std::copy(lines.strides[1].begin(), lines.strides[1].end(), p.line_out_stride);
  p.include_initial = include_initial ? 1 : 0;
  return p;
}

absl::Status LaunchReduce(const ReduceLaunch& l, const GPUArray& a, absl::Span<const bool> reduced,
                          const GPUArray& out) {
  PGK_ASSIGN_OR_RETURN(LaunchContext ctx, LaunchContext::OnDevice(l.name, out.device()));
  return kReduceKernel(ctx, l, a, reduced, out);
}

absl::Status LaunchScan(const ReduceLaunch& l, const GPUArray& a, int axis, bool include_initial,
                        const GPUArray& out) {
  PGK_ASSIGN_OR_RETURN(LaunchContext ctx, LaunchContext::OnDevice(l.name, out.device()));
  return kScanKernel(ctx, l, a, axis, include_initial, out);
}

}  // namespace pygpukit::ops

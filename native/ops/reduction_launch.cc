// Routing of reductions and scans to the backends (LaunchReduce, LaunchScan): the kept, reduced
// and line dims coalesced into the kernels' parameter blocks, cast-first inputs for the CPU
// loops, the CUDA JIT otherwise.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "ops/kernel_launch.h"
#include "runtime/runtime.h"

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

// The input the backend reads: itself on CUDA (the kernel converts), converted to the compute
// dtype first on the CPU (the loops are instantiated per compute dtype only).
absl::StatusOr<GPUArray> Source(const ReduceLaunch& l, const GPUArray& a) {
  if (a.device().is_cpu()) return AsType(a, l.compute, /*copy=*/false);
  if (absl::Status jit = Runtime::Get().jit().Available(); !jit.ok()) {
    return NotImplementedError(absl::StrCat(
        l.name, " on ", a.device().ToString(), " needs the NVRTC JIT, which is unavailable (",
        jit.message(), "); install the CUDA runtime compiler (libnvrtc) or use the CPU backend"));
  }
  return a;
}

}  // namespace

absl::Status LaunchReduce(const ReduceLaunch& l, const GPUArray& a, absl::Span<const bool> reduced,
                          const GPUArray& out) {
  PGK_ASSIGN_OR_RETURN(GPUArray src, Source(l, a));
  PGK_ASSIGN_OR_RETURN(ResidencyPin pin, Resident({&src, &out}));
  PGK_ASSIGN_OR_RETURN(kernels::ReduceParams p,
                       ReduceParamsOf(l.name, src, reduced, out, l.correction));
  PGK_ASSIGN_OR_RETURN(hal::Stream * s, Runtime::Get().stream(out.device()));
  ReduceLaunch lc = l;
  lc.cost = ReduceCost(src.size(), src.dtype(), out.size(), out.dtype());
  if (out.device().is_cpu()) {
    return cpu_kernels::Reduce(*s, lc, out.dtype(), p, {src.buffer(), out.buffer()});
  }
  return cuda_kernels::ReduceJit(*s, lc, src.dtype(), out.dtype(), p, out.device());
}

absl::Status LaunchScan(const ReduceLaunch& l, const GPUArray& a, int axis, bool include_initial,
                        const GPUArray& out) {
  PGK_ASSIGN_OR_RETURN(GPUArray src, Source(l, a));
  PGK_ASSIGN_OR_RETURN(ResidencyPin pin, Resident({&src, &out}));
  PGK_ASSIGN_OR_RETURN(kernels::ScanParams p,
                       ScanParamsOf(l.name, src, axis, include_initial, out));
  PGK_ASSIGN_OR_RETURN(hal::Stream * s, Runtime::Get().stream(out.device()));
  ReduceLaunch lc = l;
  lc.cost = ReduceCost(src.size(), src.dtype(), out.size(), out.dtype());
  if (out.device().is_cpu()) {
    return cpu_kernels::Scan(*s, lc, out.dtype(), p, {src.buffer(), out.buffer()});
  }
  return cuda_kernels::ScanJit(*s, lc, src.dtype(), out.dtype(), p, out.device());
}

}  // namespace pygpukit::ops

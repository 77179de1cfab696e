// tensordot (one matmul of the operands permuted and reshaped to matrices; integers: products
// summed) and vecdot (conj(x1) * x2 summed over one axis).
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "ops/ops.h"

namespace pygpukit::ops {

absl::StatusOr<GPUArray> Tensordot(const GPUArray& a, const GPUArray& b,
                                   absl::Span<const int64_t> a_axes,
                                   absl::Span<const int64_t> b_axes) {
  if (a_axes.size() != b_axes.size()) {
    return ValueError(absl::StrCat("tensordot: ", a_axes.size(), " axes of x1 paired with ",
                                   b_axes.size(), " axes of x2"));
  }
  std::vector<bool> a_summed(a.ndim(), false), b_summed(b.ndim(), false);
  std::vector<int64_t> a_order, b_order;  // a: free then summed; b: summed then free
  int64_t k = 1;
  for (size_t i = 0; i < a_axes.size(); ++i) {
    PGK_ASSIGN_OR_RETURN(int x, NormalizeAxis(a_axes[i], a.ndim(), "tensordot"));
    PGK_ASSIGN_OR_RETURN(int y, NormalizeAxis(b_axes[i], b.ndim(), "tensordot"));
    if (a_summed[x] || b_summed[y]) return ValueError("tensordot: repeated axis");
    if (a.shape()[x] != b.shape()[y]) {
      return ValueError(absl::StrCat("tensordot: contracted extents differ: axis ", x, " of x1 ",
                                     ShapeToString(a.shape()), " and axis ", y, " of x2 ",
                                     ShapeToString(b.shape())));
    }
    a_summed[x] = b_summed[y] = true;
    b_order.push_back(y);
    k *= a.shape()[x];
  }
  Shape out_shape;
  int64_t m = 1, n = 1;
  for (int d = 0; d < a.ndim(); ++d) {
    if (a_summed[d]) continue;
    a_order.push_back(d);
    out_shape.push_back(a.shape()[d]);
    m *= a.shape()[d];
  }
  for (int64_t x : a_axes) a_order.push_back(x < 0 ? x + a.ndim() : x);
  for (int d = 0; d < b.ndim(); ++d) {
    if (b_summed[d]) continue;
    b_order.push_back(d);
    out_shape.push_back(b.shape()[d]);
    n *= b.shape()[d];
  }
  PGK_ASSIGN_OR_RETURN(GPUArray ap, PermuteDims(a, a_order));
  PGK_ASSIGN_OR_RETURN(GPUArray bp, PermuteDims(b, b_order));
  PGK_ASSIGN_OR_RETURN(GPUArray am, Reshape(ap, {m, k}));
  PGK_ASSIGN_OR_RETURN(GPUArray bm, Reshape(bp, {k, n}));
  const DType dtype = PromoteTypes(a.dtype(), b.dtype());
  GPUArray c;
  if (IsInexact(dtype)) {
    PGK_ASSIGN_OR_RETURN(c, Matmul(am, bm));
  } else {
    // Integer (and bool) operands, which matmul does not take: products of the (m, k, 1) and
    // (1, k, n) views summed over k, in the promoted dtype.
    if (dtype == DType::Bool) return TypeError("tensordot: needs numeric operands, got bool");
    PGK_ASSIGN_OR_RETURN(GPUArray a3, Reshape(am, {m, k, 1}));
    PGK_ASSIGN_OR_RETURN(GPUArray b3, Reshape(bm, {1, k, n}));
    PGK_ASSIGN_OR_RETURN(GPUArray prod, Binary(ElementwiseOp::kMultiply, a3, b3));
    ReduceOptions o;
    o.axes = std::vector<int64_t>{1};
    o.dtype = dtype;
    PGK_ASSIGN_OR_RETURN(c, Reduce(ReduceOp::kSum, prod, o));
  }
  return Reshape(c, out_shape);
}

absl::StatusOr<GPUArray> Vecdot(const GPUArray& x1, const GPUArray& x2, int64_t axis) {
  if (x1.ndim() == 0 || x2.ndim() == 0) {
    return ValueError("vecdot: operands need at least one dimension");
  }
  if (x1.dtype() == DType::Bool || x2.dtype() == DType::Bool) {
    return TypeError("vecdot: needs numeric operands, got bool");
  }
  PGK_ASSIGN_OR_RETURN(Shape shape, BroadcastShapes(x1.shape(), x2.shape(), "vecdot"));
  const int nd = static_cast<int>(shape.size());
  PGK_ASSIGN_OR_RETURN(int ax, NormalizeAxis(axis, nd, "vecdot"));
  // The contracted axis is not broadcast: both operands must have it, with one extent.
  const int from_end = nd - ax;
  if (from_end > x1.ndim() || from_end > x2.ndim() ||
      x1.shape()[x1.ndim() - from_end] != x2.shape()[x2.ndim() - from_end]) {
    return ValueError(absl::StrCat("vecdot: axis ", axis, " must have one extent in both x1 ",
                                   ShapeToString(x1.shape()), " and x2 ",
                                   ShapeToString(x2.shape())));
  }
  const DType dtype = PromoteTypes(x1.dtype(), x2.dtype());
  GPUArray c1 = x1;
  if (IsComplex(x1.dtype())) {
    PGK_ASSIGN_OR_RETURN(c1, Unary(ElementwiseOp::kConj, x1));
  }
  PGK_ASSIGN_OR_RETURN(GPUArray prod, Binary(ElementwiseOp::kMultiply, c1, x2));
  ReduceOptions o;
  o.axes = std::vector<int64_t>{ax};
  o.dtype = dtype;
  return Reduce(ReduceOp::kSum, prod, o);
}

}  // namespace pygpukit::ops

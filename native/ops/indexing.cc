// Integer-array indexing: take, take_along_axis and NumPy's advanced indexing with integer
// arrays (x[i], x[:, i, j], x[i, ..., 3]). Every one is a gather kernel (ops/kernels/gather.h)
// after its indices are checked: out-of-bounds indices raise IndexError (one reduction and one
// host read per index array) rather than reading memory they should not.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "ops/kernel_launch.h"
#include "ops/ops.h"

namespace pygpukit::ops {
namespace {

// The value of a one-element integer array as int64, clamped to +-2^63 for uint64 beyond it
// (out of bounds either way).
absl::StatusOr<int64_t> IntItem(const GPUArray& a) {
  PGK_ASSIGN_OR_RETURN(Scalar s, Item(a));
  if (s.above_int64) return INT64_MAX;
  return s.i;
}

// `idx` as int64 values after checking they index an axis of `extent` (negative ones from the
// end); TypeError for non-integer indices.
absl::StatusOr<GPUArray> CheckedIndices(const GPUArray& idx, int64_t extent, int axis,
                                        absl::string_view op) {
  if (!IsInteger(idx.dtype())) {
    return IndexError(absl::StrCat(op, ": arrays used as indices must be of integer type, got ",
                                   DTypeName(idx.dtype())));
  }
  if (idx.size() > 0) {
    PGK_ASSIGN_OR_RETURN(GPUArray lo, Reduce(ReduceOp::kMin, idx));
    PGK_ASSIGN_OR_RETURN(GPUArray hi, Reduce(ReduceOp::kMax, idx));
    PGK_ASSIGN_OR_RETURN(int64_t min, IntItem(lo));
    PGK_ASSIGN_OR_RETURN(int64_t max, IntItem(hi));
    if (min < -extent || max >= extent) {
      const int64_t bad = min < -extent ? min : max;
      return IndexError(absl::StrCat(op, ": index ",
                                     bad == INT64_MAX ? std::string(">= 2**63") : absl::StrCat(bad),
                                     " is out of bounds for axis ", axis, " with size ", extent));
    }
  }
  return AsType(idx, DType::Int64, /*copy=*/false);
}

// A view of int64 `values` over `shape` with `strides` (0 where it is broadcast).
GPUArray Spread(const GPUArray& values, absl::Span<const int64_t> shape, Strides strides) {
  return GPUArray(values.buffer(), DType::Int64, Shape(shape.begin(), shape.end()),
                  std::move(strides), values.offset());
}

struct Advanced {
  int axis;      // of the source view
  GPUArray idx;  // checked int64 values
};

// NumPy's advanced indexing of `v` by integer arrays on some of its axes (the others taken
// whole): the arrays broadcast together to B; B's dimensions replace the indexed axes where
// those are adjacent, else they come first.
absl::StatusOr<GPUArray> GatherAxes(const GPUArray& v, absl::Span<const Advanced> adv,
                                    absl::string_view op) {
  Shape b;
  for (const Advanced& a : adv) {
    PGK_ASSIGN_OR_RETURN(b, BroadcastShapes(b, a.idx.shape(), op));
  }
  std::vector<bool> indexed(v.ndim(), false);
  bool adjacent = true;
  for (size_t k = 0; k < adv.size(); ++k) {
    indexed[adv[k].axis] = true;
    if (k > 0 && adv[k].axis != adv[k - 1].axis + 1) adjacent = false;
  }
  const int first = adv.front().axis;
  const int at = adjacent ? static_cast<int>(std::count(indexed.begin(), indexed.begin() + first,
                                                        false))
                          : 0;  // where B's dimensions go among the output's
  Shape shape;
  std::vector<int64_t> src_strides;
  for (int d = 0; d < v.ndim(); ++d) {
    if (indexed[d]) continue;
    shape.push_back(v.shape()[d]);
    src_strides.push_back(v.strides()[d]);
  }
  shape.insert(shape.begin() + at, b.begin(), b.end());
  src_strides.insert(src_strides.begin() + at, b.size(), 0);
  std::vector<GatherIndex> indices;
  for (const Advanced& a : adv) {
    PGK_ASSIGN_OR_RETURN(Strides bs, BroadcastStrides(a.idx.shape(), a.idx.strides(), b, op));
    Strides st(shape.size(), 0);
    std::copy(bs.begin(), bs.end(), st.begin() + at);
    indices.push_back(GatherIndex{Spread(a.idx, shape, std::move(st)), a.axis});
  }
  PGK_ASSIGN_OR_RETURN(GPUArray out, Empty(shape, v.dtype(), v.device()));
  PGK_RETURN_IF_ERROR(LaunchGather(v, src_strides, indices, out));
  return out;
}

absl::Status SameDevice(const GPUArray& x, const GPUArray& idx, absl::string_view op) {
  if (x.device() != idx.device()) {
    return ValueError(absl::StrCat(op, ": the array is on ", x.device().ToString(),
                                   " but the indices on ", idx.device().ToString()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<GPUArray> Take(const GPUArray& x, const GPUArray& indices,
                              std::optional<int64_t> axis) {
  PGK_RETURN_IF_ERROR(SameDevice(x, indices, "take"));
  GPUArray v = x;
  if (!axis.has_value()) {
    PGK_ASSIGN_OR_RETURN(v, Reshape(x, {-1}));
    axis = 0;
  }
  if (v.ndim() == 0) return ValueError("take: a 0-d array needs axis=None");
  PGK_ASSIGN_OR_RETURN(int ax, NormalizeAxis(*axis, v.ndim(), "take"));
  PGK_ASSIGN_OR_RETURN(GPUArray idx, CheckedIndices(indices, v.shape()[ax], ax, "take"));
  const Advanced adv[] = {{ax, idx}};
  return GatherAxes(v, adv, "take");
}

absl::StatusOr<GPUArray> TakeAlongAxis(const GPUArray& x, const GPUArray& indices, int64_t axis) {
  PGK_RETURN_IF_ERROR(SameDevice(x, indices, "take_along_axis"));
  if (x.ndim() == 0 || indices.ndim() != x.ndim()) {
    return ValueError(absl::StrCat("take_along_axis: x ", ShapeToString(x.shape()), " and indices ",
                                   ShapeToString(indices.shape()),
                                   " must have one number of dimensions, at least 1"));
  }
  PGK_ASSIGN_OR_RETURN(int ax, NormalizeAxis(axis, x.ndim(), "take_along_axis"));
  PGK_ASSIGN_OR_RETURN(GPUArray idx, CheckedIndices(indices, x.shape()[ax], ax, "take_along_axis"));
  // The other axes broadcast between x and the indices; along `ax` the indices pick.
  Shape xs = x.shape();
  xs[ax] = indices.shape()[ax];
  PGK_ASSIGN_OR_RETURN(Shape shape, BroadcastShapes(xs, indices.shape(), "take_along_axis"));
  std::vector<int64_t> src_strides(x.ndim());
  for (int d = 0; d < x.ndim(); ++d) {
    src_strides[d] = (d == ax || x.shape()[d] == 1) ? 0 : x.strides()[d];
  }
  PGK_ASSIGN_OR_RETURN(GPUArray spread, BroadcastTo(idx, shape));
  const GatherIndex g[] = {{spread, ax}};
  PGK_ASSIGN_OR_RETURN(GPUArray out, Empty(shape, x.dtype(), x.device()));
  PGK_RETURN_IF_ERROR(LaunchGather(x, src_strides, g, out));
  return out;
}

absl::StatusOr<GPUArray> AdvancedIndex(const GPUArray& a, absl::Span<const IndexItem> items,
                                       absl::Span<const GPUArray> arrays) {
  using Kind = IndexItem::Kind;
  if (arrays.empty()) return Index(a, items);
  // The basic part as a view with every axis kept: integers and arrays become whole slices.
  std::vector<IndexItem> basic(items.begin(), items.end());
  int consumed = 0;
  for (const IndexItem& it : items) {
    if (it.kind == Kind::kNewAxis) {
      return NotImplementedError(
          "index: None together with integer-array indices is not supported yet");
    }
    if (it.kind != Kind::kEllipsis) ++consumed;
  }
  std::vector<int> axis_of(items.size(), -1);
  int dim = 0;
  for (size_t k = 0; k < items.size(); ++k) {
    if (items[k].kind == Kind::kEllipsis) {
      dim += std::max(0, a.ndim() - consumed);
      continue;
    }
    axis_of[k] = dim++;
    if (items[k].kind == Kind::kInteger || items[k].kind == Kind::kArray) {
      basic[k] = IndexItem{};
      basic[k].kind = Kind::kSlice;
    }
  }
  PGK_ASSIGN_OR_RETURN(GPUArray v, Index(a, basic));  // too many indices are reported here
  std::vector<Advanced> adv;
  for (size_t k = 0; k < items.size(); ++k) {
    const IndexItem& it = items[k];
    const int ax = axis_of[k];
    if (it.kind == Kind::kArray) {
      if (it.array < 0 || static_cast<size_t>(it.array) >= arrays.size()) {
        return ValueError("index: bad array slot");
      }
      const GPUArray& idx = arrays[it.array];
      PGK_RETURN_IF_ERROR(SameDevice(a, idx, "index"));
      PGK_ASSIGN_OR_RETURN(GPUArray checked, CheckedIndices(idx, v.shape()[ax], ax, "index"));
      adv.push_back({ax, std::move(checked)});
    } else if (it.kind == Kind::kInteger) {  // an integer among arrays is a 0-d index array
      const int64_t n = v.shape()[ax];
      if (it.index < -n || it.index >= n) {
        return IndexError(absl::StrCat("index: index ", it.index, " is out of bounds for axis ", ax,
                                       " with size ", n));
      }
      PGK_ASSIGN_OR_RETURN(GPUArray i, Full({}, Scalar::Int(it.index), DType::Int64, a.device()));
      adv.push_back({ax, std::move(i)});
    }
  }
  return GatherAxes(v, adv, "index");
}

}  // namespace pygpukit::ops

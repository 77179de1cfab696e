// Integer-array indexing: take, take_along_axis and NumPy's advanced indexing with integer
// arrays (x[i], x[:, i, j], x[i, ..., 3]); searchsorted (a binary-search kernel); and the
// compositions over them: count_nonzero, nonzero (a scan, then one binary search per nonzero
// element) and repeat with per-element counts. Every one is
// a gather kernel (ops/index/gather.h) after its indices are checked: out-of-bounds indices raise
// IndexError (one reduction and one host read per index array) rather than reading memory they
// should not.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "ops/creation/new_array.h"
#include "ops/index/index_kernels.h"
#include "ops/launch/launch_context.h"
#include "ops/launch/launch_cost.h"
#include "ops/ops.h"
#include "ops/sort/sort_kernels.h"

namespace pygpukit::ops {
namespace {

// Integer values as a private int64 copy and, when asked and not empty, their range read back
// in one host transfer. Checking the copy that kernels then read means no other writer can
// change a value between the check and its use. uint64 values of 2**63 and above would wrap in
// the copy: they are reported as max = INT64_MAX instead.
struct IntValues {
  GPUArray values;
  int64_t min = 0, max = -1;
};

absl::StatusOr<IntValues> PrivateInt64(const GPUArray& a, bool range) {
  IntValues r;
  if (range && a.size() > 0 && a.dtype() == DType::UInt64) {
    PGK_ASSIGN_OR_RETURN(GPUArray hi, Reduce(ReduceOp::kMax, a));
    PGK_ASSIGN_OR_RETURN(Scalar s, Item(hi));
    if (s.above_int64) {
      r.max = INT64_MAX;
      return r;
    }
  }
  PGK_ASSIGN_OR_RETURN(r.values, AsType(a, DType::Int64, /*copy=*/true));
  if (range && a.size() > 0) {
    PGK_ASSIGN_OR_RETURN(GPUArray lo, Reduce(ReduceOp::kMin, r.values));
    PGK_ASSIGN_OR_RETURN(GPUArray hi, Reduce(ReduceOp::kMax, r.values));
    const GPUArray both[] = {lo, hi};
    PGK_ASSIGN_OR_RETURN(GPUArray pair, Stack(both, 0));
    int64_t host[2];
    PGK_RETURN_IF_ERROR(ToHost(pair, host));
    r.min = host[0];
    r.max = host[1];
  }
  return r;
}

// `idx` as a checked private int64 copy (PrivateInt64) indexing an axis of `extent` (negative
// values from the end). IndexError for non-integer indices; `check` false skips the range check
// (an empty broadcast result reads nothing).
absl::StatusOr<GPUArray> CheckedIndices(const GPUArray& idx, int64_t extent, int axis,
                                        absl::string_view op, bool check = true) {
  if (!IsInteger(idx.dtype())) {
    return IndexError(absl::StrCat(op, ": arrays used as indices must be of integer type, got ",
                                   DTypeName(idx.dtype())));
  }
  PGK_ASSIGN_OR_RETURN(IntValues v, PrivateInt64(idx, check));
  if (check && idx.size() > 0 && (v.min < -extent || v.max >= extent)) {
    const std::string bad = v.max == INT64_MAX ? std::string(">= 2**63")
                            : v.min < -extent  ? absl::StrCat(v.min)
                                               : absl::StrCat(v.max);
    return IndexError(absl::StrCat(op, ": index ", bad, " is out of bounds for axis ", axis,
                                   " with size ", extent));
  }
  return v.values;
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

// Where NumPy's advanced indexing of `v` by integer arrays on some of its axes (the others
// taken whole) reads: the arrays broadcast together to B; B's dimensions replace the indexed
// axes when the advanced items of the index were `adjacent` (no slice, Ellipsis or None between
// them), else they come first. The result's shape, v's stride along each result dimension
// (0 on B's) and the index arrays spread over the result.
struct GatherPlan {
  Shape shape;
  std::vector<int64_t> strides;
  std::vector<GatherIndex> indices;
};

absl::StatusOr<GatherPlan> PlanAxes(const GPUArray& v, absl::Span<const Advanced> adv,
                                    bool adjacent, absl::string_view op) {
  if (adv.empty()) return ValueError(absl::StrCat(op, ": no index arrays to gather with"));
  Shape b;
  for (const Advanced& a : adv) {
    PGK_ASSIGN_OR_RETURN(b, BroadcastShapes(b, a.idx.shape(), op));
  }
  std::vector<bool> indexed(v.ndim(), false);
  for (const Advanced& a : adv) indexed[a.axis] = true;
  const int first = adv.front().axis;
  const int at = adjacent ? static_cast<int>(std::count(indexed.begin(), indexed.begin() + first,
                                                        false))
                          : 0;  // where B's dimensions go among the output's
  GatherPlan plan;
  for (int d = 0; d < v.ndim(); ++d) {
    if (indexed[d]) continue;
    plan.shape.push_back(v.shape()[d]);
    plan.strides.push_back(v.strides()[d]);
  }
  plan.shape.insert(plan.shape.begin() + at, b.begin(), b.end());
  plan.strides.insert(plan.strides.begin() + at, b.size(), 0);
  if (plan.shape.size() > static_cast<size_t>(kMaxDims)) {
    return IndexError(absl::StrCat(op, ": the result would have ", plan.shape.size(),
                                   " dimensions, more than the maximum of ", kMaxDims));
  }
  for (const Advanced& a : adv) {
    PGK_ASSIGN_OR_RETURN(Strides bs, BroadcastStrides(a.idx.shape(), a.idx.strides(), b, op));
    Strides st(plan.shape.size(), 0);
    std::copy(bs.begin(), bs.end(), st.begin() + at);
    plan.indices.push_back(GatherIndex{Spread(a.idx, plan.shape, std::move(st)), a.axis});
  }
  return plan;
}

absl::StatusOr<GPUArray> GatherAxes(const GPUArray& v, absl::Span<const Advanced> adv,
                                    bool adjacent, absl::string_view op) {
  PGK_ASSIGN_OR_RETURN(GatherPlan plan, PlanAxes(v, adv, adjacent, op));
  PGK_ASSIGN_OR_RETURN(GPUArray out, Empty(plan.shape, v.dtype(), v.device()));
  PGK_RETURN_IF_ERROR(LaunchGather(v, plan.strides, plan.indices, out));
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
  PGK_ASSIGN_OR_RETURN(AxisOf f, AxisOrFlattened(x, axis, "take"));
  const GPUArray& v = f.array;
  const int ax = f.axis;
  PGK_ASSIGN_OR_RETURN(GPUArray idx, CheckedIndices(indices, v.shape()[ax], ax, "take"));
  const Advanced adv[] = {{ax, idx}};
  return GatherAxes(v, adv, /*adjacent=*/true, "take");
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

namespace {

// An index with arrays among its items, resolved: the basic view, its indexed axes with their
// checked int64 indices, and whether the advanced items were adjacent.
struct Resolved {
  GPUArray view;
  std::vector<Advanced> adv;
  bool adjacent = true;
};

absl::StatusOr<Resolved> Resolve(const GPUArray& a, absl::Span<const IndexItem> items,
                                 absl::Span<const GPUArray> arrays) {
  using Kind = IndexItem::Kind;
  auto array_of = [&](const IndexItem& it) -> absl::StatusOr<const GPUArray*> {
    if (it.array < 0 || static_cast<size_t>(it.array) >= arrays.size()) {
      return ValueError("index: bad array slot");
    }
    PGK_RETURN_IF_ERROR(SameDevice(a, arrays[it.array], "index"));
    return &arrays[it.array];
  };
  // Axes each item consumes (a boolean mask: its rank), for the Ellipsis's expansion.
  int consumed = 0;
  for (const IndexItem& it : items) {
    if (it.kind == Kind::kMask) {
      PGK_ASSIGN_OR_RETURN(const GPUArray* m, array_of(it));
      consumed += m->ndim();
    } else if (it.kind != Kind::kEllipsis && it.kind != Kind::kNewAxis) {
      ++consumed;
    }
  }
  // The basic part is a view: integers drop their axes there, arrays and masks keep theirs
  // whole. A mask stands for the index arrays of its nonzero elements, one per dimension. For
  // the placement of the result, integers, arrays and masks are the advanced items (NumPy).
  std::vector<IndexItem> basic;
  std::vector<std::pair<int, GPUArray>> raw;  // (axis of the view, integer indices)
  IndexItem whole, newaxis;
  whole.kind = Kind::kSlice;
  newaxis.kind = Kind::kNewAxis;
  int first_adv = -1, last_adv = -1, advanced_items = 0, sdim = 0, vdim = 0;
  for (size_t k = 0; k < items.size(); ++k) {
    const IndexItem& it = items[k];
    if (it.kind == Kind::kArray || it.kind == Kind::kInteger || it.kind == Kind::kMask) {
      if (first_adv < 0) first_adv = static_cast<int>(k);
      last_adv = static_cast<int>(k);
      ++advanced_items;
    }
    switch (it.kind) {
      case Kind::kEllipsis: {
        const int expand = std::max(0, a.ndim() - consumed);
        basic.push_back(it);
        sdim += expand;
        vdim += expand;
        break;
      }
      case Kind::kSlice:
        basic.push_back(it);
        ++sdim;
        ++vdim;
        break;
      case Kind::kInteger:
        basic.push_back(it);
        ++sdim;
        break;
      case Kind::kArray: {
        PGK_ASSIGN_OR_RETURN(const GPUArray* idx, array_of(it));
        basic.push_back(whole);
        raw.emplace_back(vdim++, *idx);
        ++sdim;
        break;
      }
      case Kind::kMask: {
        PGK_ASSIGN_OR_RETURN(const GPUArray* m, array_of(it));
        if (m->ndim() == 0) {
          // A 0-d mask adds an axis of one element, indexed by [0] (True) or [] (False).
          basic.push_back(newaxis);
          PGK_ASSIGN_OR_RETURN(GPUArray one, Reshape(*m, {1}));
          PGK_ASSIGN_OR_RETURN(std::vector<GPUArray> nz, Nonzero(one));
          raw.emplace_back(vdim++, std::move(nz[0]));
          break;
        }
        if (sdim + m->ndim() > a.ndim()) {
          return IndexError(absl::StrCat("index: too many indices for array: array is ", a.ndim(),
                                         "-dimensional, but ", consumed, " were indexed"));
        }
        for (int i = 0; i < m->ndim(); ++i) {
          if (m->shape()[i] != a.shape()[sdim + i]) {
            return IndexError(
                absl::StrCat("index: boolean index did not match indexed array along axis ",
                             sdim + i, "; size of axis is ", a.shape()[sdim + i],
                             " but size of corresponding boolean axis is ", m->shape()[i]));
          }
        }
        PGK_ASSIGN_OR_RETURN(std::vector<GPUArray> nz, Nonzero(*m));
        for (GPUArray& idx : nz) {
          basic.push_back(whole);
          raw.emplace_back(vdim++, std::move(idx));
        }
        sdim += m->ndim();
        break;
      }
      case Kind::kNewAxis:
        basic.push_back(it);
        ++vdim;
        break;
    }
  }
  const bool adjacent = last_adv - first_adv + 1 == advanced_items;
  PGK_ASSIGN_OR_RETURN(GPUArray v, Index(a, basic));  // too many indices are reported here
  // Bounds matter only when something is read: an empty broadcast result reads nothing.
  Shape b;
  for (const auto& [axis, idx] : raw) {
    PGK_ASSIGN_OR_RETURN(b, BroadcastShapes(b, idx.shape(), "index"));
  }
  const bool check = NumElements(b) > 0;
  if (raw.empty()) return ValueError("index: no index arrays");
  Resolved r{v, {}, adjacent};
  for (const auto& [axis, idx] : raw) {
    PGK_ASSIGN_OR_RETURN(GPUArray checked,
                         CheckedIndices(idx, v.shape()[axis], axis, "index", check));
    r.adv.push_back({axis, std::move(checked)});
  }
  return r;
}

}  // namespace

absl::StatusOr<GPUArray> AdvancedIndex(const GPUArray& a, absl::Span<const IndexItem> items,
                                       absl::Span<const GPUArray> arrays) {
  if (arrays.empty()) return Index(a, items);
  PGK_ASSIGN_OR_RETURN(Resolved r, Resolve(a, items, arrays));
  return GatherAxes(r.view, r.adv, r.adjacent, "index");
}

absl::Status AdvancedAssign(const GPUArray& a, absl::Span<const IndexItem> items,
                            absl::Span<const GPUArray> arrays, const GPUArray* value,
                            const Scalar* scalar) {
  PGK_RETURN_IF_ERROR(CheckWritable(a, "setitem", "the target"));
  PGK_ASSIGN_OR_RETURN(Resolved r, Resolve(a, items, arrays));
  PGK_ASSIGN_OR_RETURN(GatherPlan plan, PlanAxes(r.view, r.adv, r.adjacent, "index"));
  // The value, broadcast and cast to the selected shape, in a dense array of its own (so that a
  // value overlapping `a` is read before any element is written).
  PGK_ASSIGN_OR_RETURN(GPUArray dense, Empty(plan.shape, a.dtype(), a.device()));
  if (value != nullptr) {
    if (value->device() != a.device()) {
      return ValueError(absl::StrCat("setitem: the value is on ", value->device().ToString(),
                                     ", the array on ", a.device().ToString()));
    }
    PGK_RETURN_IF_ERROR(Assign(dense, *value));
  } else {
    PGK_RETURN_IF_ERROR(Assign(dense, *scalar));
  }
  return LaunchGather(r.view, plan.strides, plan.indices, dense, /*scatter=*/true);
}

absl::StatusOr<GPUArray> CountNonzero(const GPUArray& x,
                                      const std::optional<std::vector<int64_t>>& axes,
                                      bool keepdims) {
  if (axes.has_value()) {  // checked here so that errors name count_nonzero, not sum
    std::vector<bool> seen(x.ndim(), false);
    for (int64_t a : *axes) {
      PGK_ASSIGN_OR_RETURN(int ax, NormalizeAxis(a, x.ndim(), "count_nonzero"));
      if (seen[ax]) return ValueError(absl::StrCat("count_nonzero: repeated axis ", a));
      seen[ax] = true;
    }
  }
  PGK_ASSIGN_OR_RETURN(GPUArray nz, Binary(ElementwiseOp::kNotEqual, x, Scalar::Int(0)));
  ReduceOptions o;
  o.axes = axes;
  o.keepdims = keepdims;
  o.dtype = DType::Int64;
  return Reduce(ReduceOp::kSum, nz, o);
}

absl::StatusOr<GPUArray> SearchSorted(const GPUArray& x1, const GPUArray& x2, bool right,
                                      const std::optional<GPUArray>& sorter) {
  if (x1.ndim() != 1) {
    return ValueError(
        absl::StrCat("searchsorted: x1 must be 1-D, got shape ", ShapeToString(x1.shape())));
  }
  PGK_RETURN_IF_ERROR(SameDevice(x1, x2, "searchsorted"));
  // Both sides compare in their promoted dtype.
  const DType dtype = PromoteTypes(x1.dtype(), x2.dtype());
  PGK_ASSIGN_OR_RETURN(GPUArray sorted, AsType(x1, dtype, /*copy=*/false));
  PGK_ASSIGN_OR_RETURN(GPUArray values, AsType(x2, dtype, /*copy=*/false));
  GPUArray order;
  if (sorter.has_value()) {
    PGK_RETURN_IF_ERROR(SameDevice(x1, *sorter, "searchsorted"));
    if (sorter->ndim() != 1 || sorter->size() != x1.size()) {
      return ValueError(absl::StrCat("searchsorted: sorter must be 1-D with x1's ", x1.size(),
                                     " elements, got shape ", ShapeToString(sorter->shape())));
    }
    // NumPy's rule: sorter entries index x1 directly, 0 <= i < n (no negative indices).
    if (!IsInteger(sorter->dtype())) {
      return TypeError(
          absl::StrCat("searchsorted: sorter must be integers, got ", DTypeName(sorter->dtype())));
    }
    PGK_ASSIGN_OR_RETURN(IntValues v, PrivateInt64(*sorter, /*range=*/true));
    if (sorter->size() > 0 && (v.min < 0 || v.max >= x1.size())) {
      return ValueError("searchsorted: sorter index out of range");
    }
    order = v.values;
  }
  PGK_ASSIGN_OR_RETURN(GPUArray out, Empty(x2.shape(), DType::Int64, x2.device()));
  PGK_RETURN_IF_ERROR(LaunchSearchSorted(sorted, order, values, right, out));
  return out;
}

namespace {

// The total of an inclusive int64 scan `counts` (its last element; 0 when empty), read back to
// the host: the size of a data-dependent result.
absl::StatusOr<int64_t> LastCount(const GPUArray& counts) {
  if (counts.size() == 0) return 0;
  GPUArray last(counts.buffer(), DType::Int64, Shape{}, Strides{},
                counts.offset() + (counts.size() - 1) * counts.strides()[0]);
  PGK_ASSIGN_OR_RETURN(Scalar s, Item(last));
  return s.i;
}

// For k = 0 .. total-1, the position in `counts` (an inclusive scan of non-negative counts) of
// the element the k-th unit belongs to.
absl::StatusOr<GPUArray> Owners(const GPUArray& counts, int64_t total, Device device) {
  PGK_ASSIGN_OR_RETURN(GPUArray k, ArangeInt(0, total, 1, DType::Int64, device));
  return SearchSorted(counts, k, /*right=*/true, std::nullopt);
}

}  // namespace

absl::StatusOr<std::vector<GPUArray>> Nonzero(const GPUArray& x) {
  if (x.ndim() == 0) {
    return ValueError("nonzero: a 0-d array has no axes to give indices for (use x[None])");
  }
  GPUArray mask = x;
  if (x.dtype() != DType::Bool || !x.is_contiguous()) {
    PGK_ASSIGN_OR_RETURN(mask, Binary(ElementwiseOp::kNotEqual, x, Scalar::Int(0)));
  }
  PGK_ASSIGN_OR_RETURN(GPUArray flat, Reshape(mask, {-1}));
  GPUArray where;
  if (flat.size() <= kernels::kRadixMaxElements) {
    PGK_ASSIGN_OR_RETURN(where, LaunchCompact(flat));  // stream compaction
  } else {
    // Past uint32 tile offsets: a scan of the mask, then the owner of each nonzero.
    PGK_ASSIGN_OR_RETURN(GPUArray counts, CumulativeReduce(ReduceOp::kSum, flat, 0, DType::Int64));
    PGK_ASSIGN_OR_RETURN(int64_t total, LastCount(counts));
    PGK_ASSIGN_OR_RETURN(where, Owners(counts, total, x.device()));
  }
  // The flat C-order positions, unravelled into one index array per axis.
  std::vector<GPUArray> out;
  int64_t stride = 1;
  std::vector<int64_t> strides(x.ndim());
  for (int d = x.ndim() - 1; d >= 0; --d) {
    strides[d] = stride;
    stride *= std::max<int64_t>(x.shape()[d], 1);
  }
  for (int d = 0; d < x.ndim(); ++d) {
    GPUArray c = where;
    if (strides[d] != 1) {
      PGK_ASSIGN_OR_RETURN(c, Binary(ElementwiseOp::kFloorDivide, c, Scalar::Int(strides[d])));
    }
    if (d > 0) {
      PGK_ASSIGN_OR_RETURN(c, Binary(ElementwiseOp::kRemainder, c, Scalar::Int(x.shape()[d])));
    }
    if (c.buffer() == where.buffer() && x.ndim() > 1) {
      PGK_ASSIGN_OR_RETURN(c, Copy(c));  // each axis gets an array of its own
    }
    out.push_back(std::move(c));
  }
  return out;
}

absl::StatusOr<GPUArray> RepeatEach(const GPUArray& a, const GPUArray& repeats,
                                    std::optional<int64_t> axis) {
  PGK_RETURN_IF_ERROR(SameDevice(a, repeats, "repeat"));
  if (!IsInteger(repeats.dtype())) {
    return TypeError(
        absl::StrCat("repeat: repeats must be integers, got ", DTypeName(repeats.dtype())));
  }
  PGK_ASSIGN_OR_RETURN(AxisOf f, AxisOrFlattened(a, axis, "repeat"));
  const GPUArray& x = f.array;
  const int ax = f.axis;
  const int64_t n = x.shape()[ax];
  if (repeats.ndim() > 1 || (repeats.ndim() == 1 && repeats.size() != n && repeats.size() != 1)) {
    return ValueError(absl::StrCat("repeat: repeats of shape ", ShapeToString(repeats.shape()),
                                   " for an axis of ", n, " elements"));
  }
  PGK_ASSIGN_OR_RETURN(IntValues v, PrivateInt64(repeats, /*range=*/n > 0));
  if (v.max == INT64_MAX) return ValueError("repeat: a count of 2**63 or more is too large");
  if (v.min < 0) return ValueError(absl::StrCat("repeat: negative repeats ", v.min));
  PGK_ASSIGN_OR_RETURN(GPUArray r, Reshape(v.values, {-1}));
  PGK_ASSIGN_OR_RETURN(r, BroadcastTo(r, {n}));
  if (n > 0) {
    // The total in float64 first: an int64 scan of huge counts would wrap.
    ReduceOptions wide;
    wide.dtype = DType::Float64;
    PGK_ASSIGN_OR_RETURN(GPUArray sum, Reduce(ReduceOp::kSum, r, wide));
    PGK_ASSIGN_OR_RETURN(Scalar t, Item(sum));
    if (t.f >= 9.2e18) {
      return ValueError(absl::StrCat("repeat: the result would have ", t.f, " elements"));
    }
  }
  PGK_ASSIGN_OR_RETURN(GPUArray counts, CumulativeReduce(ReduceOp::kSum, r, 0, DType::Int64));
  PGK_ASSIGN_OR_RETURN(int64_t total, LastCount(counts));
  PGK_ASSIGN_OR_RETURN(GPUArray src, Owners(counts, total, x.device()));
  return Take(x, src, ax);
}

}  // namespace pygpukit::ops

// Array API manipulation functions: expand_dims, squeeze, flip, moveaxis, broadcast_arrays and
// unstack are views; concat, stack, roll, tile and repeat write one new array through Assign
// (which casts, broadcasts and runs on the array's backend), so they need no kernels of their own;
// diff is slices and one elementwise function per order.
#include <algorithm>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "ops/ops.h"

namespace pygpukit::ops {
namespace {

GPUArray View(const GPUArray& a, Shape shape, Strides strides, int64_t offset) {
  return GPUArray(a.buffer(), a.dtype(), std::move(shape), std::move(strides), offset);
}

// a[..., start : start + len*step : step, ...] along `axis`.
GPUArray SliceAxis(const GPUArray& a, int axis, int64_t start, int64_t len, int64_t step = 1) {
  Shape shape = a.shape();
  Strides strides = a.strides();
  const int64_t offset = a.offset() + (len > 0 ? start * strides[axis] : 0);
  shape[axis] = len;
  strides[axis] *= step;
  return View(a, std::move(shape), std::move(strides), offset);
}

// Normalized, distinct axes; ValueError for a repeated one.
absl::StatusOr<std::vector<int>> NormalizeAxes(absl::Span<const int64_t> axes, int ndim,
                                               absl::string_view op) {
  std::vector<int> out;
  std::vector<bool> seen(ndim, false);
  for (int64_t a : axes) {
    PGK_ASSIGN_OR_RETURN(int ax, NormalizeAxis(a, ndim, op));
    if (seen[ax]) return ValueError(absl::StrCat(op, ": repeated axis ", a));
    seen[ax] = true;
    out.push_back(ax);
  }
  return out;
}

// The arrays' common device; ValueError when they differ or the list is empty.
absl::StatusOr<Device> CommonDevice(absl::Span<const GPUArray> arrays, absl::string_view op) {
  if (arrays.empty()) return ValueError(absl::StrCat(op, ": needs at least one array"));
  const Device d = arrays[0].device();
  for (const GPUArray& a : arrays) {
    if (a.device() != d) {
      return ValueError(absl::StrCat(op, ": arrays on different devices (", d.ToString(), " and ",
                                     a.device().ToString(), ")"));
    }
  }
  return d;
}

// `a` with its dimensions interleaved with broadcast ones: dimension d is preceded by an extent
// outer[d] and followed by inner[d] (stride 0; extents of 1 add no dimension). A contiguous copy
// of it, reshaped to merge each group, is tile (outer) or repeat (inner).
absl::StatusOr<GPUArray> Spread(const GPUArray& a, absl::Span<const int64_t> outer,
                                absl::Span<const int64_t> inner, absl::string_view op) {
  Shape shape, merged;
  Strides strides;
  for (int d = 0; d < a.ndim(); ++d) {
    if (outer[d] != 1) {
      shape.push_back(outer[d]);
      strides.push_back(0);
    }
    shape.push_back(a.shape()[d]);
    strides.push_back(a.strides()[d]);
    if (inner[d] != 1) {
      shape.push_back(inner[d]);
      strides.push_back(0);
    }
    int64_t extent = 0;
    if (__builtin_mul_overflow(outer[d], a.shape()[d], &extent) ||
        __builtin_mul_overflow(extent, inner[d], &extent)) {
      return ValueError(
          absl::StrCat(op, ": the result of ", ShapeToString(a.shape()), " is too large"));
    }
    merged.push_back(extent);
  }
  PGK_RETURN_IF_ERROR(ValidateShape(merged, op));
  PGK_ASSIGN_OR_RETURN(GPUArray copy, Copy(View(a, shape, strides, a.offset())));
  return Reshape(copy, merged);
}

}  // namespace

absl::StatusOr<GPUArray> ExpandDims(const GPUArray& a, int64_t axis) {
  PGK_ASSIGN_OR_RETURN(int ax, NormalizeAxis(axis, a.ndim() + 1, "expand_dims"));
  Shape shape = a.shape();
  Strides strides = a.strides();
  const int64_t stride = ax < a.ndim() ? a.strides()[ax] * a.shape()[ax] : 1;
  shape.insert(shape.begin() + ax, 1);
  strides.insert(strides.begin() + ax, stride);
  PGK_RETURN_IF_ERROR(ValidateShape(shape, "expand_dims"));
  return View(a, std::move(shape), std::move(strides), a.offset());
}

absl::StatusOr<GPUArray> Squeeze(const GPUArray& a, std::optional<absl::Span<const int64_t>> axes) {
  std::vector<bool> drop(a.ndim(), false);
  if (axes.has_value()) {
    PGK_ASSIGN_OR_RETURN(std::vector<int> ax, NormalizeAxes(*axes, a.ndim(), "squeeze"));
    for (int d : ax) {
      if (a.shape()[d] != 1) {
        return ValueError(absl::StrCat("squeeze: axis ", d, " of shape ", ShapeToString(a.shape()),
                                       " has extent ", a.shape()[d], ", not 1"));
      }
      drop[d] = true;
    }
  } else {
    for (int d = 0; d < a.ndim(); ++d) drop[d] = a.shape()[d] == 1;
  }
  Shape shape;
  Strides strides;
  for (int d = 0; d < a.ndim(); ++d) {
    if (drop[d]) continue;
    shape.push_back(a.shape()[d]);
    strides.push_back(a.strides()[d]);
  }
  return View(a, std::move(shape), std::move(strides), a.offset());
}

absl::StatusOr<GPUArray> Flip(const GPUArray& a, std::optional<absl::Span<const int64_t>> axes) {
  std::vector<int> ax;
  if (axes.has_value()) {
    PGK_ASSIGN_OR_RETURN(ax, NormalizeAxes(*axes, a.ndim(), "flip"));
  } else {
    ax.resize(a.ndim());
    std::iota(ax.begin(), ax.end(), 0);
  }
  Strides strides = a.strides();
  int64_t offset = a.offset();
  for (int d : ax) {
    if (a.shape()[d] > 0) offset += (a.shape()[d] - 1) * strides[d];
    strides[d] = -strides[d];
  }
  return View(a, a.shape(), std::move(strides), offset);
}

absl::StatusOr<GPUArray> MoveAxis(const GPUArray& a, absl::Span<const int64_t> source,
                                  absl::Span<const int64_t> destination) {
  if (source.size() != destination.size()) {
    return ValueError(absl::StrCat("moveaxis: source has ", source.size(),
                                   " axes but destination has ", destination.size()));
  }
  PGK_ASSIGN_OR_RETURN(std::vector<int> src, NormalizeAxes(source, a.ndim(), "moveaxis"));
  PGK_ASSIGN_OR_RETURN(std::vector<int> dst, NormalizeAxes(destination, a.ndim(), "moveaxis"));
  // The axes not moved keep their order; each moved one goes to its destination slot.
  std::vector<int64_t> order(a.ndim(), -1);
  for (size_t i = 0; i < src.size(); ++i) order[dst[i]] = src[i];
  int next = 0;
  for (int64_t& o : order) {
    if (o >= 0) continue;
    while (std::find(src.begin(), src.end(), next) != src.end()) ++next;
    o = next++;
  }
  return PermuteDims(a, order);
}

absl::StatusOr<std::vector<GPUArray>> BroadcastArrays(absl::Span<const GPUArray> arrays) {
  Shape shape;
  for (const GPUArray& a : arrays) {
    PGK_ASSIGN_OR_RETURN(shape, BroadcastShapes(shape, a.shape(), "broadcast_arrays"));
  }
  std::vector<GPUArray> out;
  for (const GPUArray& a : arrays) {
    PGK_ASSIGN_OR_RETURN(GPUArray v, BroadcastTo(a, shape));
    out.push_back(std::move(v));
  }
  return out;
}

absl::StatusOr<GPUArray> Concat(absl::Span<const GPUArray> arrays, std::optional<int64_t> axis) {
  PGK_ASSIGN_OR_RETURN(Device device, CommonDevice(arrays, "concat"));
  std::vector<GPUArray> parts(arrays.begin(), arrays.end());
  if (!axis.has_value()) {
    for (GPUArray& p : parts) {
      PGK_ASSIGN_OR_RETURN(p, Reshape(p, {-1}));
    }
    axis = 0;
  }
  const GPUArray& first = parts[0];
  if (first.ndim() == 0) {
    return ValueError("concat: zero-dimensional arrays cannot be concatenated");
  }
  PGK_ASSIGN_OR_RETURN(int ax, NormalizeAxis(*axis, first.ndim(), "concat"));
  DType dtype = first.dtype();
  Shape shape = first.shape();
  shape[ax] = 0;
  for (const GPUArray& p : parts) {
    bool same = p.ndim() == first.ndim();
    for (int d = 0; same && d < p.ndim(); ++d) same = d == ax || p.shape()[d] == first.shape()[d];
    if (!same) {
      return ValueError(absl::StrCat("concat: shapes ", ShapeToString(first.shape()), " and ",
                                     ShapeToString(p.shape()), " differ outside axis ", ax));
    }
    if (__builtin_add_overflow(shape[ax], p.shape()[ax], &shape[ax])) {
      return ValueError("concat: the joined extent is too large");
    }
    dtype = PromoteTypes(dtype, p.dtype());
  }
  PGK_ASSIGN_OR_RETURN(GPUArray out, Empty(shape, dtype, device));
  int64_t at = 0;
  for (const GPUArray& p : parts) {
    if (p.size() > 0) PGK_RETURN_IF_ERROR(Assign(SliceAxis(out, ax, at, p.shape()[ax]), p));
    at += p.shape()[ax];
  }
  return out;
}

absl::StatusOr<GPUArray> Stack(absl::Span<const GPUArray> arrays, int64_t axis) {
  PGK_RETURN_IF_ERROR(CommonDevice(arrays, "stack").status());
  if (!arrays.empty()) {  // the new axis is one of the result's ndim + 1 dimensions
    PGK_RETURN_IF_ERROR(NormalizeAxis(axis, arrays[0].ndim() + 1, "stack").status());
  }
  std::vector<GPUArray> parts;
  for (const GPUArray& a : arrays) {
    if (a.shape() != arrays[0].shape()) {
      return ValueError(absl::StrCat("stack: all arrays must have one shape, got ",
                                     ShapeToString(arrays[0].shape()), " and ",
                                     ShapeToString(a.shape())));
    }
    PGK_ASSIGN_OR_RETURN(GPUArray v, ExpandDims(a, axis));
    parts.push_back(std::move(v));
  }
  return Concat(parts, axis < 0 ? axis : std::min<int64_t>(axis, arrays[0].ndim()));
}

absl::StatusOr<std::vector<GPUArray>> Unstack(const GPUArray& a, int64_t axis) {
  if (a.ndim() == 0) return ValueError("unstack: needs an array of at least one dimension");
  PGK_ASSIGN_OR_RETURN(int ax, NormalizeAxis(axis, a.ndim(), "unstack"));
  std::vector<GPUArray> out;
  for (int64_t i = 0; i < a.shape()[ax]; ++i) {
    Shape shape = a.shape();
    Strides strides = a.strides();
    shape.erase(shape.begin() + ax);
    strides.erase(strides.begin() + ax);
    out.push_back(View(a, std::move(shape), std::move(strides), a.offset() + i * a.strides()[ax]));
  }
  return out;
}

absl::StatusOr<GPUArray> Roll(const GPUArray& a, absl::Span<const int64_t> shifts,
                              std::optional<absl::Span<const int64_t>> axes) {
  if (!axes.has_value()) {
    if (shifts.size() != 1) {
      return ValueError("roll: without axes, shift must be a single integer");
    }
    PGK_ASSIGN_OR_RETURN(GPUArray flat, Reshape(a, {-1}));
    const int64_t axis0[] = {0};
    PGK_ASSIGN_OR_RETURN(GPUArray rolled, Roll(flat, shifts, absl::MakeConstSpan(axis0)));
    return Reshape(rolled, a.shape());
  }
  if (shifts.size() != axes->size() && shifts.size() != 1) {
    return ValueError(absl::StrCat("roll: ", shifts.size(), " shifts for ", axes->size(),
                                   " axes; give one shift per axis or a single one"));
  }
  // Net shift per axis in [0, extent) (shifts of a repeated axis add up, as in NumPy).
  std::vector<int64_t> net(a.ndim(), 0);
  for (size_t i = 0; i < axes->size(); ++i) {
    PGK_ASSIGN_OR_RETURN(int ax, NormalizeAxis((*axes)[i], a.ndim(), "roll"));
    const int64_t n = a.shape()[ax];
    if (n == 0) continue;
    const int64_t s = shifts.size() == 1 ? shifts[0] : shifts[i];
    net[ax] = (((net[ax] + s % n) % n) + n) % n;
  }
  PGK_ASSIGN_OR_RETURN(GPUArray out, Empty(a.shape(), a.dtype(), a.device()));
  if (a.size() == 0) return out;
  // Along a rolled axis, out[s:] = a[:n-s] and out[:s] = a[n-s:]: every combination of those two
  // pieces over the rolled axes is one block copy.
  std::vector<int> rolled;
  for (int d = 0; d < a.ndim(); ++d) {
    if (net[d] != 0) rolled.push_back(d);
  }
  for (uint64_t pick = 0; pick < (uint64_t{1} << rolled.size()); ++pick) {
    GPUArray dst = out, src = a;
    for (size_t i = 0; i < rolled.size(); ++i) {
      const int d = rolled[i];
      const int64_t n = a.shape()[d], s = net[d];
      if ((pick >> i) & 1) {
        dst = SliceAxis(dst, d, 0, s);
        src = SliceAxis(src, d, n - s, s);
      } else {
        dst = SliceAxis(dst, d, s, n - s);
        src = SliceAxis(src, d, 0, n - s);
      }
    }
    PGK_RETURN_IF_ERROR(Assign(dst, src));
  }
  return out;
}

absl::StatusOr<GPUArray> Tile(const GPUArray& a, absl::Span<const int64_t> reps) {
  for (int64_t r : reps) {
    if (r < 0) return ValueError(absl::StrCat("tile: negative repetition ", r));
  }
  const int nd = std::max<int>(a.ndim(), static_cast<int>(reps.size()));
  Shape shape(nd - a.ndim(), 1);
  shape.insert(shape.end(), a.shape().begin(), a.shape().end());
  PGK_ASSIGN_OR_RETURN(GPUArray padded, Reshape(a, shape));
  std::vector<int64_t> outer(nd - reps.size(), 1), inner(nd, 1);
  outer.insert(outer.end(), reps.begin(), reps.end());
  return Spread(padded, outer, inner, "tile");
}

absl::StatusOr<GPUArray> Repeat(const GPUArray& a, int64_t repeats, std::optional<int64_t> axis) {
  if (repeats < 0) return ValueError(absl::StrCat("repeat: negative repeats ", repeats));
  PGK_ASSIGN_OR_RETURN(AxisOf f, AxisOrFlattened(a, axis, "repeat"));
  const GPUArray& x = f.array;
  std::vector<int64_t> outer(x.ndim(), 1), inner(x.ndim(), 1);
  inner[f.axis] = repeats;
  return Spread(x, outer, inner, "repeat");
}

absl::StatusOr<GPUArray> Diff(const GPUArray& x, int64_t axis, int64_t n,
                              const std::optional<GPUArray>& prepend,
                              const std::optional<GPUArray>& append) {
  if (x.ndim() == 0) return ValueError("diff: needs an array of at least one dimension");
  if (n < 0) return ValueError(absl::StrCat("diff: order n must be non-negative, got ", n));
  PGK_ASSIGN_OR_RETURN(int ax, NormalizeAxis(axis, x.ndim(), "diff"));
  if (n == 0) return x;  // as NumPy: prepend / append are not joined either
  GPUArray a = x;
  if (prepend.has_value() || append.has_value()) {
    std::vector<GPUArray> parts;
    if (prepend.has_value()) parts.push_back(*prepend);
    parts.push_back(x);
    if (append.has_value()) parts.push_back(*append);
    PGK_ASSIGN_OR_RETURN(a, WithOp("diff: joining prepend / append", Concat(parts, ax)));
  }
  // Booleans differ or not (NumPy's rule); other dtypes subtract.
  const ElementwiseOp op =
      a.dtype() == DType::Bool ? ElementwiseOp::kNotEqual : ElementwiseOp::kSubtract;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t len = std::max<int64_t>(a.shape()[ax] - 1, 0);
    PGK_ASSIGN_OR_RETURN(a, Binary(op, SliceAxis(a, ax, 1, len), SliceAxis(a, ax, 0, len)));
    if (len == 0) break;
  }
  return a;
}

absl::StatusOr<AxisOf> AxisOrFlattened(const GPUArray& a, std::optional<int64_t> axis,
                                       absl::string_view op) {
  if (!axis.has_value()) {
    PGK_ASSIGN_OR_RETURN(GPUArray flat, Reshape(a, {-1}));
    return AxisOf{std::move(flat), 0};
  }
  if (a.ndim() == 0) return ValueError(absl::StrCat(op, ": a 0-d array needs axis=None"));
  PGK_ASSIGN_OR_RETURN(int ax, NormalizeAxis(*axis, a.ndim(), op));
  return AxisOf{a, ax};
}

}  // namespace pygpukit::ops

// View ops: reshape, permute_dims, transposes, broadcast_to and basic indexing. All share the
// source buffer; reshape falls back to a copy only when no strides can describe the result.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status.h"
#include "ops/ops.h"

namespace pygpukit::ops {
namespace {

GPUArray ViewOf(const GPUArray& a, Shape shape, Strides strides, int64_t offset) {
  return GPUArray(a.buffer(), a.dtype(), std::move(shape), std::move(strides), offset);
}

// Strides that give `a` the shape `shape` without moving data, if any exist (NumPy's rule).
std::optional<Strides> NoCopyStrides(const GPUArray& a, absl::Span<const int64_t> shape) {
  Shape od;
  Strides os;
  for (int i = 0; i < a.ndim(); ++i) {
    if (a.shape()[i] != 1) {
      od.push_back(a.shape()[i]);
      os.push_back(a.strides()[i]);
    }
  }
  size_t ond = od.size(), nnd = shape.size();
  Strides ns(nnd, 0);
  size_t oi = 0, oj = 1, ni = 0, nj = 1;
  while (ni < nnd && oi < ond) {
    int64_t np = shape[ni], op = od[oi];
    while (np != op) {
      if (np < op) {
        np *= shape[nj++];
      } else {
        op *= od[oj++];
      }
    }
    for (size_t ok = oi; ok + 1 < oj; ++ok) {
      if (os[ok] != od[ok + 1] * os[ok + 1]) return std::nullopt;
    }
    ns[nj - 1] = os[oj - 1];
    for (size_t nk = nj - 1; nk > ni; --nk) ns[nk - 1] = ns[nk] * shape[nk];
    ni = nj++;
    oi = oj++;
  }
  // Trailing size-1 dims take the stride of a contiguous successor.
  for (size_t nk = ni; nk < nnd; ++nk) ns[nk] = (nk == 0 || ni == 0) ? 1 : ns[ni - 1];
  return ns;
}

}  // namespace

absl::StatusOr<GPUArray> Reshape(const GPUArray& a, absl::Span<const int64_t> new_shape,
                                 std::optional<bool> copy) {
  Shape shape(new_shape.begin(), new_shape.end());
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (infer >= 0) {
        return ValueError(absl::StrCat("reshape: can only specify one unknown dimension, got ",
                                       ShapeToString(new_shape)));
      }
      infer = static_cast<int>(i);
    } else if (shape[i] < 0) {
      return ValueError(absl::StrCat("reshape: negative dimension in ", ShapeToString(shape)));
    } else if (__builtin_mul_overflow(known, shape[i], &known)) {
      return ValueError(absl::StrCat("reshape: shape ", ShapeToString(shape), " is too large"));
    }
  }
  if (infer >= 0) {
    if (known == 0 || a.size() % known != 0) {
      return ValueError(absl::StrCat("reshape: cannot reshape array of size ", a.size(),
                                     " into shape ", ShapeToString(new_shape)));
    }
    shape[infer] = a.size() / known;
    known *= shape[infer];
  }
  if (known != a.size()) {
    return ValueError(absl::StrCat("reshape: cannot reshape array of size ", a.size(),
                                   " into shape ", ShapeToString(new_shape)));
  }
  PGK_RETURN_IF_ERROR(ValidateShape(shape, "reshape"));
  if (copy != true) {
    if (a.is_contiguous()) return ViewOf(a, shape, ContiguousStrides(shape), a.offset());
    if (a.size() > 0) {
      if (auto strides = NoCopyStrides(a, shape)) return ViewOf(a, shape, *strides, a.offset());
    }
    if (copy == false) {
      return ValueError(absl::StrCat("reshape: an array of shape ", ShapeToString(a.shape()),
                                     " with strides ", ShapeToString(a.strides()),
                                     " cannot be viewed as shape ", ShapeToString(new_shape),
                                     " without a copy, and copy=False"));
    }
  }
  PGK_ASSIGN_OR_RETURN(GPUArray c, Copy(a));
  return ViewOf(c, shape, ContiguousStrides(shape), 0);
}

absl::StatusOr<GPUArray> PermuteDims(const GPUArray& a, absl::Span<const int64_t> axes) {
  if (static_cast<int>(axes.size()) != a.ndim()) {
    return ValueError(absl::StrCat("permute_dims: axes (", absl::StrJoin(axes, ", "),
                                   ") do not match array of dimension ", a.ndim()));
  }
  Shape shape(a.ndim());
  Strides strides(a.ndim());
  std::vector<bool> seen(a.ndim(), false);
  for (int i = 0; i < a.ndim(); ++i) {
    PGK_ASSIGN_OR_RETURN(int ax, NormalizeAxis(axes[i], a.ndim(), "permute_dims"));
    if (seen[ax]) {
      return ValueError(absl::StrCat("permute_dims: repeated axis in permutation (",
                                     absl::StrJoin(axes, ", "), ")"));
    }
    seen[ax] = true;
    shape[i] = a.shape()[ax];
    strides[i] = a.strides()[ax];
  }
  return ViewOf(a, shape, strides, a.offset());
}

absl::StatusOr<GPUArray> Transpose(const GPUArray& a) {
  Shape shape(a.shape().rbegin(), a.shape().rend());
  Strides strides(a.strides().rbegin(), a.strides().rend());
  return ViewOf(a, shape, strides, a.offset());
}

absl::StatusOr<GPUArray> MatrixTranspose(const GPUArray& a) {
  if (a.ndim() < 2) {
    return ValueError(absl::StrCat("matrix_transpose: array of shape ", ShapeToString(a.shape()),
                                   " needs at least 2 dimensions"));
  }
  Shape shape = a.shape();
  Strides strides = a.strides();
  std::swap(shape[a.ndim() - 1], shape[a.ndim() - 2]);
  std::swap(strides[a.ndim() - 1], strides[a.ndim() - 2]);
  return ViewOf(a, shape, strides, a.offset());
}

absl::StatusOr<GPUArray> BroadcastTo(const GPUArray& a, absl::Span<const int64_t> shape) {
  PGK_RETURN_IF_ERROR(ValidateShape(shape, "broadcast_to"));
  PGK_ASSIGN_OR_RETURN(Strides strides,
                       BroadcastStrides(a.shape(), a.strides(), shape, "broadcast_to"));
  return ViewOf(a, Shape(shape.begin(), shape.end()), strides, a.offset());
}

absl::StatusOr<GPUArray> Index(const GPUArray& a, absl::Span<const IndexItem> items) {
  using Kind = IndexItem::Kind;
  int consumed = 0, ellipses = 0;
  for (const IndexItem& it : items) {
    if (it.kind == Kind::kEllipsis) ++ellipses;
    if (it.kind == Kind::kArray || it.kind == Kind::kMask) {
      return ValueError("index: array items need AdvancedIndex");
    }
    if (it.kind == Kind::kInteger || it.kind == Kind::kSlice) ++consumed;
  }
  if (ellipses > 1) return IndexError("index: an index can only have a single ellipsis ('...')");
  if (consumed > a.ndim()) {
    return IndexError(absl::StrCat("index: too many indices for array: array is ", a.ndim(),
                                   "-dimensional, but ", consumed, " were indexed"));
  }
  Shape shape;
  Strides strides;
  int64_t offset = a.offset();
  int dim = 0;
  for (const IndexItem& it : items) {
    switch (it.kind) {
      case Kind::kArray:  // rejected above
      case Kind::kMask:
        break;
      case Kind::kNewAxis:
        shape.push_back(1);
        strides.push_back(0);
        break;
      case Kind::kEllipsis:
        for (int k = 0; k < a.ndim() - consumed; ++k, ++dim) {
          shape.push_back(a.shape()[dim]);
          strides.push_back(a.strides()[dim]);
        }
        break;
      case Kind::kInteger: {
        int64_t n = a.shape()[dim], i = it.index;
        if (i < -n || i >= n) {
          return IndexError(absl::StrCat("index: index ", i, " is out of bounds for axis ", dim,
                                         " with size ", n));
        }
        offset += (i < 0 ? i + n : i) * a.strides()[dim];
        ++dim;
        break;
      }
      case Kind::kSlice: {
        int64_t n = a.shape()[dim], step = it.step;
        if (step == 0) return ValueError("index: slice step cannot be zero");
        step = std::max(step, -INT64_MAX);  // as CPython: -step must not overflow
        int64_t lower = step > 0 ? 0 : -1, upper = step > 0 ? n : n - 1;
        auto clamp = [&](std::optional<int64_t> v, int64_t dflt) {
          if (!v) return dflt;
          int64_t x = *v;
          if (x < 0) return std::max(x + n, lower);
          return std::min(x, upper);
        };
        int64_t start = clamp(it.start, step > 0 ? lower : upper);
        int64_t stop = clamp(it.stop, step > 0 ? upper : lower);
        int64_t len = step > 0 ? (stop > start ? (stop - start - 1) / step + 1 : 0)
                               : (start > stop ? (start - stop - 1) / (-step) + 1 : 0);
        if (len > 0) offset += start * a.strides()[dim];
        shape.push_back(len);
        // stride * step, as NumPy reports it; it can only overflow when the slice has at most
        // one element (the stride is then never used), so keep the old stride there.
        int64_t stride;
        if (__builtin_mul_overflow(a.strides()[dim], step, &stride)) stride = a.strides()[dim];
        strides.push_back(stride);
        ++dim;
        break;
      }
    }
  }
  for (; dim < a.ndim(); ++dim) {
    shape.push_back(a.shape()[dim]);
    strides.push_back(a.strides()[dim]);
  }
  if (shape.size() > static_cast<size_t>(kMaxDims)) {  // NumPy's limit, and every op's
    return IndexError(absl::StrCat("index: the result would have ", shape.size(),
                                   " dimensions, more than the maximum of ", kMaxDims));
  }
  return ViewOf(a, shape, strides, offset);
}

}  // namespace pygpukit::ops

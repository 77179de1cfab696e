#include "core/shape.h"

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status.h"

namespace pygpukit {

int64_t NumElements(absl::Span<const int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

Strides ContiguousStrides(absl::Span<const int64_t> shape) {
  Strides s(shape.size());
  int64_t acc = 1;
  for (int i = static_cast<int>(shape.size()) - 1; i >= 0; --i) {
    s[i] = acc;
    // An empty array's other dimensions may multiply past int64 (ValidateShape bounds only the
    // element count): its strides address nothing, so they saturate.
    if (__builtin_mul_overflow(acc, shape[i] > 0 ? shape[i] : 1, &acc)) acc = INT64_MAX;
  }
  return s;
}

bool IsContiguous(absl::Span<const int64_t> shape, absl::Span<const int64_t> strides) {
  // An empty array has no elements to misplace: it is contiguous whatever its strides (NumPy).
  for (int64_t d : shape) {
    if (d == 0) return true;
  }
  int64_t expected = 1;
  for (int i = static_cast<int>(shape.size()) - 1; i >= 0; --i) {
    if (shape[i] != 1 && strides[i] != expected) return false;
    expected *= shape[i];
  }
  return true;
}

std::string ShapeToString(absl::Span<const int64_t> shape) {
  if (shape.size() == 1) return absl::StrCat("(", shape[0], ",)");
  return absl::StrCat("(", absl::StrJoin(shape, ", "), ")");
}

absl::Status ValidateShape(absl::Span<const int64_t> shape, absl::string_view op) {
  if (shape.size() > static_cast<size_t>(kMaxDims)) {
    return ValueError(
        absl::StrCat(op, ": ", shape.size(), " dimensions exceed the maximum of ", kMaxDims));
  }
  // The product of the non-zero dimensions is bounded, as in NumPy: an empty array's strides are
  // products of its other dimensions too.
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) {
      return ValueError(absl::StrCat(op, ": negative dimension in shape ", ShapeToString(shape)));
    }
    if (d != 0 && n > (int64_t{1} << 62) / d) {
      return ValueError(absl::StrCat(op, ": shape ", ShapeToString(shape), " is too large"));
    }
    n *= d != 0 ? d : 1;
  }
  return absl::OkStatus();
}

absl::StatusOr<Shape> BroadcastShapes(absl::Span<const int64_t> a, absl::Span<const int64_t> b,
                                      absl::string_view op) {
  size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1) {
      return ValueError(absl::StrCat(op, ": shapes ", ShapeToString(a), " and ", ShapeToString(b),
                                     " cannot be broadcast together"));
    }
    out[i] = da == 1 ? db : da;
  }
  return out;
}

absl::StatusOr<Strides> BroadcastStrides(absl::Span<const int64_t> shape,
                                         absl::Span<const int64_t> strides,
                                         absl::Span<const int64_t> target, absl::string_view op) {
  if (shape.size() > target.size()) {
    return ValueError(absl::StrCat(op, ": cannot broadcast shape ", ShapeToString(shape), " to ",
                                   ShapeToString(target)));
  }
  size_t lead = target.size() - shape.size();
  Strides out(target.size(), 0);
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == target[lead + i]) {
      out[lead + i] = strides[i];
    } else if (shape[i] != 1) {
      return ValueError(absl::StrCat(op, ": cannot broadcast shape ", ShapeToString(shape), " to ",
                                     ShapeToString(target)));
    }
  }
  return out;
}

absl::StatusOr<int> NormalizeAxis(int64_t axis, int ndim, absl::string_view op) {
  if (axis < -ndim || axis >= ndim) {
    return IndexError(
        absl::StrCat(op, ": axis ", axis, " is out of bounds for array of dimension ", ndim));
  }
  return static_cast<int>(axis < 0 ? axis + ndim : axis);
}

CoalescedLayout Coalesce(absl::Span<const int64_t> shape,
                         absl::Span<const absl::Span<const int64_t>> operand_strides) {
  CoalescedLayout out;
  size_t nops = operand_strides.size();
  out.strides.resize(nops);
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 1) continue;
    bool merge = !out.shape.empty();
    for (size_t k = 0; merge && k < nops; ++k) {
      int64_t span = 0;
      merge = !__builtin_mul_overflow(operand_strides[k][i], shape[i], &span) &&
              out.strides[k].back() == span;
    }
    if (merge) {
      out.shape.back() *= shape[i];
      for (size_t k = 0; k < nops; ++k) out.strides[k].back() = operand_strides[k][i];
    } else {
      out.shape.push_back(shape[i]);
      for (size_t k = 0; k < nops; ++k) out.strides[k].push_back(operand_strides[k][i]);
    }
  }
  return out;
}

}  // namespace pygpukit

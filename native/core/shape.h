// Shape and stride algebra. Strides are in elements (not bytes) and may be zero (broadcast) or
// negative (reversed views).
#pragma once

#include <cstdint>
#include <string>

#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace pygpukit {

/// Most dimensions an array may have (NumPy's limit).
inline constexpr int kMaxDims = 64;

/// Extents of an array.
using Shape = absl::InlinedVector<int64_t, 6>;
/// Per-dimension element strides.
using Strides = absl::InlinedVector<int64_t, 6>;

/// Number of elements of a shape (1 for 0-d).
int64_t NumElements(absl::Span<const int64_t> shape);
/// C-order (row-major) strides of a shape.
Strides ContiguousStrides(absl::Span<const int64_t> shape);
/// True when the strides describe a C-order dense layout (size-1 dims may have any stride).
bool IsContiguous(absl::Span<const int64_t> shape, absl::Span<const int64_t> strides);
/// "(2, 3)" / "(5,)" / "()".
std::string ShapeToString(absl::Span<const int64_t> shape);
/// Checks extents are non-negative, the rank is within kMaxDims and the size does not overflow.
absl::Status ValidateShape(absl::Span<const int64_t> shape, absl::string_view op);
/// Broadcast result of two shapes; the error names `op` and both shapes.
absl::StatusOr<Shape> BroadcastShapes(absl::Span<const int64_t> a, absl::Span<const int64_t> b,
                                      absl::string_view op);
/// Strides of an array of `shape`/`strides` viewed as broadcast to `target` (0 where broadcast).
absl::StatusOr<Strides> BroadcastStrides(absl::Span<const int64_t> shape,
                                         absl::Span<const int64_t> strides,
                                         absl::Span<const int64_t> target, absl::string_view op);
/// Normalizes a possibly negative axis against `ndim`; IndexError-style status when out of range.
absl::StatusOr<int> NormalizeAxis(int64_t axis, int ndim, absl::string_view op);

/// A shape plus the strides of several operands over it, with dimensions merged where every
/// operand is contiguous across them. Kernels iterate over this reduced form.
struct CoalescedLayout {
  Shape shape;
  absl::InlinedVector<Strides, 3> strides;  // one per operand
};
/// Drops size-1 dims and merges adjacent dims that are contiguous for all operands.
CoalescedLayout Coalesce(absl::Span<const int64_t> shape,
                         absl::Span<const absl::Span<const int64_t>> operand_strides);

}  // namespace pygpukit

// Creation ops: empty / full / zeros / ones / arange / eye / linspace / meshgrid / tril / triu.
// The last four are compositions of existing ops (fill, assign, elementwise), on every backend.
#include <cmath>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/status.h"
#include "ops/creation/creation_kernels.h"
#include "ops/creation/new_array.h"
#include "ops/kernels/scalar_ops.h"
#include "ops/launch/launch_context.h"
#include "ops/launch/launch_cost.h"
#include "ops/ops.h"
#include "runtime/runtime.h"

namespace pygpukit::ops {

absl::StatusOr<GPUArray> NewArray(absl::Span<const int64_t> shape, DType dtype, Device device,
                                  absl::string_view op) {
  PGK_RETURN_IF_ERROR(ValidateShape(shape, op));
  // The element count is bounded by ValidateShape; the byte count must fit int64 too.
  const __int128 bytes = static_cast<__int128>(NumElements(shape)) * ItemSize(dtype);
  if (bytes > INT64_MAX) {
    return MemoryError(absl::StrCat(
        op, ": out of memory: ", ShapeToString(shape), " ", DTypeName(dtype), " needs ",
        absl::StrFormat("%d", absl::int128(bytes)), " bytes, more than any device can hold"));
  }
  Runtime& rt = Runtime::Get();
  PGK_ASSIGN_OR_RETURN(MemoryPool * alloc, rt.pool(device));
  PGK_ASSIGN_OR_RETURN(hal::Stream * stream, rt.stream(device));
  PGK_ASSIGN_OR_RETURN(auto buffer, alloc->Allocate(static_cast<size_t>(bytes), *stream));
  return GPUArray(std::move(buffer), dtype, Shape(shape.begin(), shape.end()),
                  ContiguousStrides(shape), 0);
}

absl::StatusOr<GPUArray> Empty(absl::Span<const int64_t> shape, DType dtype, Device device) {
  return NewArray(shape, dtype, device, "empty");
}

namespace {

absl::StatusOr<GPUArray> Filled(absl::Span<const int64_t> shape, const Scalar& value, DType dtype,
                                Device device, absl::string_view op) {
  unsigned char encoded[16];
  PGK_RETURN_IF_ERROR(EncodeScalar(value, dtype, encoded, op));
  PGK_ASSIGN_OR_RETURN(GPUArray out, NewArray(shape, dtype, device, op));
  PGK_RETURN_IF_ERROR(LaunchFill(out, encoded));
  return out;
}

}  // namespace

absl::StatusOr<GPUArray> Full(absl::Span<const int64_t> shape, const Scalar& value, DType dtype,
                              Device device) {
  // As setitem: a complex value does not silently lose its imaginary part.
  if (value.kind == ScalarKind::Complex && !IsComplex(dtype) && dtype != DType::Bool) {
    return TypeError(absl::StrCat("full: cannot fill a ", DTypeName(dtype),
                                  " array with the complex value ", value.c.real(),
                                  value.c.imag() < 0 ? "" : "+", value.c.imag(), "j"));
  }
  return Filled(shape, value, dtype, device, "full");
}

absl::StatusOr<GPUArray> Zeros(absl::Span<const int64_t> shape, DType dtype, Device device) {
  return Filled(shape, Scalar::Int(0), dtype, device, "zeros");
}

absl::StatusOr<GPUArray> Ones(absl::Span<const int64_t> shape, DType dtype, Device device) {
  return Filled(shape, Scalar::Int(1), dtype, device, "ones");
}

namespace {

// Shared tail of both arange forms: checks, allocates n elements and launches the kernel.
absl::StatusOr<GPUArray> ArangeOf(int64_t n, const kernels::ArangeParams& params, DType dtype,
                                  Device device) {
  if (IsComplex(dtype) || dtype == DType::Bool) {
    return TypeError(absl::StrCat("arange: unsupported dtype ", DTypeName(dtype)));
  }
  PGK_ASSIGN_OR_RETURN(GPUArray out, NewArray({n}, dtype, device, "arange"));
  PGK_RETURN_IF_ERROR(LaunchArange(out, params));
  return out;
}

}  // namespace

absl::StatusOr<GPUArray> Arange(double start, double stop, double step, DType dtype,
                                Device device) {
  if (step == 0) return ValueError("arange: step must not be zero");
  if (!std::isfinite(start) || !std::isfinite(stop) || !std::isfinite(step)) {
    return ValueError("arange: start, stop and step must be finite");
  }
  double len = std::ceil((stop - start) / step);
  if (len > 4e18) return ValueError(absl::StrCat("arange: ", len, " elements is too many"));
  kernels::ArangeParams p{};
  p.start_f = start;
  p.step_f = step;
  p.start_i = kernels::detail::TruncToInt64(start);  // defined for any double
  p.step_i = kernels::detail::TruncToInt64(step);
  return ArangeOf(len > 0 ? static_cast<int64_t>(len) : 0, p, dtype, device);
}

absl::StatusOr<GPUArray> ArangeInt(int64_t start, int64_t stop, int64_t step, DType dtype,
                                   Device device) {
  if (step == 0) return ValueError("arange: step must not be zero");
  // Exact count in 128-bit arithmetic: (stop - start) may overflow int64.
  __int128 span = static_cast<__int128>(stop) - start;
  __int128 count = step > 0 ? (span + step - 1) / step : (span + step + 1) / step;
  if (count > INT64_MAX) {
    return ValueError(absl::StrCat("arange: the range [", start, ", ", stop, ") with step ", step,
                                   " has more than 2^63 - 1 elements"));
  }
  kernels::ArangeParams p{};
  p.start_i = start;
  p.step_i = step;
  p.start_f = static_cast<double>(start);
  p.step_f = static_cast<double>(step);
  return ArangeOf(count > 0 ? static_cast<int64_t>(count) : 0, p, dtype, device);
}

absl::StatusOr<GPUArray> Eye(int64_t n_rows, int64_t n_cols, int64_t k, DType dtype,
                             Device device) {
  if (n_rows < 0 || n_cols < 0) {
    return ValueError(absl::StrCat("eye: negative dimensions ", n_rows, ", ", n_cols));
  }
  PGK_ASSIGN_OR_RETURN(GPUArray out,
                       Filled({n_rows, n_cols}, Scalar::Int(0), dtype, device, "eye"));
  // The k-th diagonal is a strided 1-D view of the row-major matrix: stride n_cols + 1.
  if (k >= n_cols || k <= -n_rows) return out;  // no diagonal inside (and no overflow below)
  const int64_t len = k >= 0 ? std::min(n_rows, n_cols - k) : std::min(n_rows + k, n_cols);
  const int64_t start = k >= 0 ? k : -k * n_cols;
  GPUArray diag(out.buffer(), dtype, Shape{len}, Strides{n_cols + 1}, start);
  PGK_RETURN_IF_ERROR(Assign(diag, Scalar::Int(1)));
  return out;
}

absl::StatusOr<GPUArray> Linspace(const Scalar& start, const Scalar& stop, int64_t num,
                                  bool endpoint, DType dtype, Device device) {
  if (num < 0) return ValueError(absl::StrCat("linspace: num must be non-negative, got ", num));
  if (!IsInexact(dtype)) {
    return TypeError(
        absl::StrCat("linspace: dtype must be floating or complex, got ", DTypeName(dtype)));
  }
  const bool complex = start.kind == ScalarKind::Complex || stop.kind == ScalarKind::Complex;
  if (complex && !IsComplex(dtype)) {
    return TypeError(absl::StrCat("linspace: complex start or stop needs a complex dtype, got ",
                                  DTypeName(dtype)));
  }
  // As NumPy: start + i * step in double precision, the last value exactly `stop`, then cast.
  const int64_t div = endpoint ? num - 1 : num;
  PGK_ASSIGN_OR_RETURN(GPUArray i,
                       WithOp("linspace", ArangeInt(0, num, 1, DType::Float64, device)));
  absl::StatusOr<GPUArray> values;
  if (complex) {
    const std::complex<double> a = start.c, b = stop.c;
    const std::complex<double> step = div > 0 ? (b - a) / static_cast<double>(div) : b - a;
    PGK_ASSIGN_OR_RETURN(GPUArray scaled,
                         Binary(ElementwiseOp::kMultiply, i, Scalar::Complex(step)));
    values = Binary(ElementwiseOp::kAdd, scaled, Scalar::Complex(a));
  } else {
    const double a = start.f, b = stop.f;
    const double step = div > 0 ? (b - a) / static_cast<double>(div) : b - a;
    PGK_ASSIGN_OR_RETURN(GPUArray scaled, Binary(ElementwiseOp::kMultiply, i, Scalar::Float(step)));
    values = Binary(ElementwiseOp::kAdd, scaled, Scalar::Float(a));
  }
  PGK_RETURN_IF_ERROR(values.status());
  if (endpoint && num > 1) {
    GPUArray last(values->buffer(), values->dtype(), Shape{}, Strides{}, num - 1);
    PGK_RETURN_IF_ERROR(Assign(last, stop));
  }
  return AsType(*values, dtype, /*copy=*/false);
}

absl::StatusOr<std::vector<GPUArray>> Meshgrid(absl::Span<const GPUArray> arrays, bool xy) {
  Shape shape;
  for (const GPUArray& a : arrays) {
    if (a.ndim() != 1) {
      return ValueError(
          absl::StrCat("meshgrid: arrays must be 1-D, got shape ", ShapeToString(a.shape())));
    }
    if (a.device() != arrays[0].device()) {
      return ValueError("meshgrid: arrays on different devices");
    }
    shape.push_back(a.shape()[0]);
  }
  // "xy" (Cartesian) indexing swaps the first two output axes.
  const bool swap = xy && arrays.size() >= 2;
  if (swap) std::swap(shape[0], shape[1]);
  std::vector<GPUArray> out;
  for (size_t i = 0; i < arrays.size(); ++i) {
    size_t axis = i;
    if (swap && i < 2) axis = 1 - i;
    Strides strides(shape.size(), 0);
    strides[axis] = arrays[i].strides()[0];
    GPUArray view(arrays[i].buffer(), arrays[i].dtype(), shape, strides, arrays[i].offset());
    PGK_ASSIGN_OR_RETURN(GPUArray copy, Copy(view));
    out.push_back(std::move(copy));
  }
  return out;
}

namespace {

// x where (column - row) compares with k as `keep` says, else 0, over the last two axes.
absl::StatusOr<GPUArray> Triangle(const GPUArray& x, int64_t k, ElementwiseOp keep,
                                  absl::string_view op) {
  if (x.ndim() < 2) {
    return ValueError(absl::StrCat(op, ": needs an array of at least 2 dimensions, got shape ",
                                   ShapeToString(x.shape())));
  }
  const int64_t rows = x.shape()[x.ndim() - 2], cols = x.shape()[x.ndim() - 1];
  PGK_ASSIGN_OR_RETURN(GPUArray r, ArangeInt(0, rows, 1, DType::Int64, x.device()));
  PGK_ASSIGN_OR_RETURN(GPUArray c, ArangeInt(0, cols, 1, DType::Int64, x.device()));
  PGK_ASSIGN_OR_RETURN(r, Reshape(r, {rows, 1}));
  PGK_ASSIGN_OR_RETURN(GPUArray offset, Binary(ElementwiseOp::kSubtract, c, r));
  PGK_ASSIGN_OR_RETURN(GPUArray mask, Binary(keep, offset, Scalar::Int(k)));
  PGK_ASSIGN_OR_RETURN(GPUArray zero, Filled({}, Scalar::Int(0), x.dtype(), x.device(), op));
  return Where(mask, x, zero);
}

}  // namespace

absl::StatusOr<GPUArray> Tril(const GPUArray& x, int64_t k) {
  return Triangle(x, k, ElementwiseOp::kLessEqual, "tril");
}

absl::StatusOr<GPUArray> Triu(const GPUArray& x, int64_t k) {
  return Triangle(x, k, ElementwiseOp::kGreaterEqual, "triu");
}

}  // namespace pygpukit::ops

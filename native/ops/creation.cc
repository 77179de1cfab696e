// Creation ops: empty / full / zeros / ones / arange / from host data.
#include <cmath>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "ops/kernel_launch.h"
#include "ops/kernels/scalar_ops.h"
#include "ops/ops.h"
#include "runtime/runtime.h"

namespace pygpukit::ops {

namespace {

// Exact decimal digits of a non-negative 128-bit count (absl::StrCat has no __int128 overload).
std::string DecimalString(unsigned __int128 v) {
  std::string out;
  do {
    out.insert(out.begin(), static_cast<char>('0' + static_cast<int>(v % 10)));
    v /= 10;
  } while (v != 0);
  return out;
}

}  // namespace

absl::StatusOr<GPUArray> NewArray(absl::Span<const int64_t> shape, DType dtype, Device device,
                                  absl::string_view op) {
  PGK_RETURN_IF_ERROR(ValidateShape(shape, op));
  // The element count is bounded by ValidateShape; the byte count must fit int64 too.
  const __int128 bytes = static_cast<__int128>(NumElements(shape)) * ItemSize(dtype);
  if (bytes > INT64_MAX) {
    return MemoryError(absl::StrCat(op, ": out of memory: ", ShapeToString(shape), " ",
                                    DTypeName(dtype), " needs ", DecimalString(bytes),
                                    " bytes, more than any device can hold"));
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
  kernels::ArangeParams p{};
  p.start_i = start;
  p.step_i = step;
  p.start_f = static_cast<double>(start);
  p.step_f = static_cast<double>(step);
  return ArangeOf(count > 0 ? static_cast<int64_t>(count) : 0, p, dtype, device);
}

}  // namespace pygpukit::ops

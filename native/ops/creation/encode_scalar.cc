#include <cstring>
#include <limits>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "ops/creation/new_array.h"
#include "ops/kernels/scalar_ops.h"

namespace pygpukit::ops {
namespace {

template <typename T>
bool FitsInteger(int64_t v) {
  if constexpr (std::is_same_v<T, uint64_t>) {
    return v >= 0;
  } else {
    return v >= static_cast<int64_t>(std::numeric_limits<T>::min()) &&
           v <= static_cast<int64_t>(std::numeric_limits<T>::max());
  }
}

}  // namespace

absl::Status EncodeScalar(const Scalar& s, DType dtype, unsigned char* out16,
                          absl::string_view op) {
  std::memset(out16, 0, 16);
  return VisitDType(dtype, [&](auto tag) -> absl::Status {
    using T = typename decltype(tag)::type;
    T v{};
    switch (s.kind) {
      case ScalarKind::Bool:
        v = kernels::Cast<T>(s.b);
        break;
      case ScalarKind::Int:
        if (s.beyond_64_bits) {
          if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
            return OverflowError(absl::StrCat(op, ": Python integer (about ", s.f,
                                              ") out of bounds for ", DTypeName(dtype)));
          }
          v = kernels::Cast<T>(s.f);
          break;
        }
        if (s.above_int64) {
          if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool> &&
                        !std::is_same_v<T, uint64_t>) {
            return OverflowError(absl::StrCat(op, ": Python integer ", s.u, " out of bounds for ",
                                              DTypeName(dtype)));
          }
          v = kernels::Cast<T>(s.u);
          break;
        }
        if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
          if (!FitsInteger<T>(s.i)) {
            return OverflowError(absl::StrCat(op, ": Python integer ", s.i, " out of bounds for ",
                                              DTypeName(dtype)));
          }
        }
        v = kernels::Cast<T>(s.i);
        break;
      case ScalarKind::Float:
        v = kernels::Cast<T>(s.f);
        break;
      case ScalarKind::Complex:
        v = kernels::Cast<T>(complex128(s.c.real(), s.c.imag()));
        break;
    }
    std::memcpy(out16, &v, sizeof(T));
    return absl::OkStatus();
  });
}

}  // namespace pygpukit::ops

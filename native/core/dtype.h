// Dtypes, their properties and the type-promotion rules (Python Array API tables extended the way
// NumPy 2 does for mixed kinds, with NEP 50 "weak" Python scalars).
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/dtype_list.h"
#include "core/scalar_types.h"

namespace pygpukit {

/// Element type of an array.
enum class DType : uint8_t {
#define PGK_DTYPE_ENUM(E, T, C) E,
  PGK_FOR_EACH_DTYPE(PGK_DTYPE_ENUM)
#undef PGK_DTYPE_ENUM
};

/// Number of dtypes in PGK_FOR_EACH_DTYPE.
inline constexpr int kNumDTypes = 0
#define PGK_DTYPE_COUNT(E, T, C) +1
    PGK_FOR_EACH_DTYPE(PGK_DTYPE_COUNT)
#undef PGK_DTYPE_COUNT
    ;

/// Broad category of a dtype, in promotion order.
enum class DTypeKind : uint8_t { Bool, Signed, Unsigned, Float, Complex };

namespace dtype_internal {
// Sizes in the header: ops ask for them several times per call, and an out-of-line call costs
// more than the lookup.
inline constexpr unsigned char kItemSize[] = {
#define PGK_DTYPE_SIZE(E, T, C) static_cast<unsigned char>(sizeof(T)),
    PGK_FOR_EACH_DTYPE(PGK_DTYPE_SIZE)
#undef PGK_DTYPE_SIZE
};
}  // namespace dtype_internal

/// Size in bytes of one element.
inline int ItemSize(DType dt) { return dtype_internal::kItemSize[static_cast<int>(dt)]; }
/// Kind of a dtype.
constexpr DTypeKind KindOf(DType dt) {
  switch (dt) {
    case DType::Bool:
      return DTypeKind::Bool;
    case DType::Int8:
    case DType::Int16:
    case DType::Int32:
    case DType::Int64:
      return DTypeKind::Signed;
    case DType::UInt8:
    case DType::UInt16:
    case DType::UInt32:
    case DType::UInt64:
      return DTypeKind::Unsigned;
    case DType::Float16:
    case DType::BFloat16:
    case DType::Float32:
    case DType::Float64:
    case DType::Float8E4M3Fn:
    case DType::Float8E5M2:
      return DTypeKind::Float;
    case DType::Complex64:
    case DType::Complex128:
      return DTypeKind::Complex;
  }
  return DTypeKind::Complex;
}
/// NumPy-style name: "float32", "bfloat16", "bool", ...
absl::string_view DTypeName(DType dt);
/// Short code used in CUDA kernel symbol names ("f4", "bf2", ...).
absl::string_view DTypeCode(DType dt);
/// Parses a dtype name (also accepts NumPy aliases such as "float", "int", "f4").
absl::StatusOr<DType> ParseDType(absl::string_view name);

inline bool IsFloating(DType dt) { return KindOf(dt) == DTypeKind::Float; }
inline bool IsComplex(DType dt) { return KindOf(dt) == DTypeKind::Complex; }
inline bool IsInteger(DType dt) {
  return KindOf(dt) == DTypeKind::Signed || KindOf(dt) == DTypeKind::Unsigned;
}
/// One of the 8-bit floats (float8_e4m3fn, float8_e5m2).
inline bool IsFloat8(DType dt) { return dt == DType::Float8E4M3Fn || dt == DType::Float8E5M2; }
/// Float or complex.
inline bool IsInexact(DType dt) { return IsFloating(dt) || IsComplex(dt); }

/// Default dtypes of this library (documented in docs/python-guide.md): float32 / int64 /
/// complex64, the GPU-friendly choice PyTorch also makes.
inline constexpr DType kDefaultFloat = DType::Float32;
inline constexpr DType kDefaultInt = DType::Int64;
inline constexpr DType kDefaultComplex = DType::Complex64;

/// Result dtype of a binary operation between two arrays.
DType PromoteTypes(DType a, DType b);

/// Kind of a Python scalar operand.
enum class ScalarKind : uint8_t { Bool, Int, Float, Complex };

/// Result dtype of an array of dtype `a` combined with a weak Python scalar (NEP 50): the array's
/// dtype wins unless the scalar is of a higher kind.
DType PromoteWithScalar(DType a, ScalarKind s);
/// The dtype a lone Python scalar takes: bool, kDefaultInt, kDefaultFloat or kDefaultComplex.
DType DefaultDTypeOf(ScalarKind k);

/// Complex dtype with the given float component type (float32 -> complex64, ...).
DType ComplexOf(DType real);
/// Real component dtype of a complex dtype (complex64 -> float32); identity otherwise.
DType RealOf(DType dt);

/// Maps the C++ scalar type of a dtype (bool, float, pygpukit::float16, ...) to its DType.
template <typename T>
struct DTypeOf;
#define PGK_DTYPE_OF(E, T, C)                \
  template <>                                \
  struct DTypeOf<T> {                        \
    static constexpr DType value = DType::E; \
  };
PGK_FOR_EACH_DTYPE(PGK_DTYPE_OF)
#undef PGK_DTYPE_OF

/// Tag carrying a C++ scalar type, passed to VisitDType's callback.
template <typename T>
struct TypeTag {
  using type = T;
};

/// The one dtype-dispatch helper: calls fn(TypeTag<T>{}) with T the scalar type of `dt`.
template <typename Fn>
decltype(auto) VisitDType(DType dt, Fn&& fn) {
  switch (dt) {
#define PGK_VISIT_CASE(E, T, C) \
  case DType::E:                \
    return std::forward<Fn>(fn)(TypeTag<T>{});
    PGK_FOR_EACH_DTYPE(PGK_VISIT_CASE)
#undef PGK_VISIT_CASE
  }
  __builtin_unreachable();
}

}  // namespace pygpukit

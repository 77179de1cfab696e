#include "core/dtype.h"

#include <array>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "core/status.h"

namespace pygpukit {
namespace {

struct Info {
  absl::string_view name;
  absl::string_view code;
};

constexpr absl::string_view NameFor(DType dt) {
  constexpr std::array<absl::string_view, kNumDTypes> names = {
      "bool",    "int8",      "int16",      "int32",         "int64",      "uint8",
      "uint16",  "uint32",    "uint64",     "float16",       "bfloat16",   "float32",
      "float64", "complex64", "complex128", "float8_e4m3fn", "float8_e5m2"};
  return names[static_cast<int>(dt)];
}

constexpr std::array<Info, kNumDTypes> kInfo = [] {
  std::array<Info, kNumDTypes> a{};
  int i = 0;
#define PGK_INFO(E, T, C)             \
  a[i] = Info{NameFor(DType::E), #C}; \
  ++i;
  PGK_FOR_EACH_DTYPE(PGK_INFO)
#undef PGK_INFO
  return a;
}();

const Info& InfoOf(DType dt) { return kInfo[static_cast<int>(dt)]; }

// Integer width in bytes for promotion purposes.
int IntBits(DType dt) { return ItemSize(dt) * 8; }

// Smallest float dtype that represents every value of an integer dtype exactly (NumPy's rule:
// 8-bit -> float16, 16-bit -> float32, wider -> float64).
DType FloatForInt(DType dt) {
  switch (ItemSize(dt)) {
    case 1:
      return DType::Float16;
    case 2:
      return DType::Float32;
    default:
      return DType::Float64;
  }
}

// The smallest float dtype holding every value of both exactly.
DType PromoteFloats(DType a, DType b) {
  if (a == b) return a;
  // float16 and bfloat16 have no common 16-bit supertype.
  if ((a == DType::Float16 && b == DType::BFloat16) ||
      (a == DType::BFloat16 && b == DType::Float16))
    return DType::Float32;
  // Both 8-bit floats are exact in float16 (e5m2 is float16 with the low mantissa bits cut off),
  // and in bfloat16: an 8-bit float meets a 16-bit one in the 16-bit one.
  if (IsFloat8(a) && IsFloat8(b)) return DType::Float16;
  return ItemSize(a) >= ItemSize(b) ? a : b;
}

}  // namespace

absl::string_view DTypeName(DType dt) { return InfoOf(dt).name; }
absl::string_view DTypeCode(DType dt) { return InfoOf(dt).code; }

absl::StatusOr<DType> ParseDType(absl::string_view name) {
  std::string n = absl::AsciiStrToLower(name);
  for (int i = 0; i < kNumDTypes; ++i) {
    if (kInfo[i].name == n) return static_cast<DType>(i);
  }
  struct Alias {
    absl::string_view name;
    DType dt;
  };
  static constexpr Alias kAliases[] = {
      {"bool_", DType::Bool},    {"?", DType::Bool},         {"b1", DType::Bool},
      {"i1", DType::Int8},       {"i2", DType::Int16},       {"i4", DType::Int32},
      {"i8", DType::Int64},      {"int", DType::Int64},      {"u1", DType::UInt8},
      {"u2", DType::UInt16},     {"u4", DType::UInt32},      {"u8", DType::UInt64},
      {"f2", DType::Float16},    {"half", DType::Float16},   {"e", DType::Float16},
      {"f4", DType::Float32},    {"f", DType::Float32},      {"float", DType::Float64},
      {"f8", DType::Float64},    {"d", DType::Float64},      {"double", DType::Float64},
      {"c8", DType::Complex64},  {"c16", DType::Complex128}, {"complex", DType::Complex128},
      {"bf16", DType::BFloat16},
  };
  // Aliases match exactly: NumPy's one-letter codes are case-sensitive ('F' is complex64 there,
  // 'f' float32), so only the canonical names above are matched ignoring case.
  for (const Alias& a : kAliases) {
    if (a.name == name) return a.dt;
  }
  return TypeError(absl::StrCat("dtype: unknown dtype '", name, "'"));
}

DType ComplexOf(DType real) {
  return real == DType::Float64 ? DType::Complex128 : DType::Complex64;
}

DType RealOf(DType dt) {
  if (dt == DType::Complex64) return DType::Float32;
  if (dt == DType::Complex128) return DType::Float64;
  return dt;
}

DType PromoteTypes(DType a, DType b) {
  if (a == b) return a;
  DTypeKind ka = KindOf(a), kb = KindOf(b);
  if (ka > kb) {
    std::swap(a, b);
    std::swap(ka, kb);
  }
  // Now kind(a) <= kind(b).
  if (ka == DTypeKind::Bool) return b;
  if (kb == DTypeKind::Complex) {
    if (ka == DTypeKind::Complex) return ItemSize(a) >= ItemSize(b) ? a : b;
    DType real = (ka == DTypeKind::Float) ? a : FloatForInt(a);
    return ComplexOf(PromoteFloats(real, RealOf(b)) == DType::Float64 ? DType::Float64
                                                                      : DType::Float32);
  }
  if (kb == DTypeKind::Float) {
    if (ka == DTypeKind::Float) return PromoteFloats(a, b);
    DType fa = FloatForInt(a);
    // An 8-bit integer fits bfloat16 exactly as well as float16; with an 8-bit float it keeps the
    // float's dtype (ml_dtypes' rule, as bfloat16 does).
    if ((b == DType::BFloat16 || IsFloat8(b)) && fa == DType::Float16) return b;
    return PromoteFloats(fa, b);
  }
  if (ka == kb) return IntBits(a) >= IntBits(b) ? a : b;
  // One signed, one unsigned: the signed type must be strictly wider to hold the unsigned one.
  DType s = ka == DTypeKind::Signed ? a : b;
  DType u = ka == DTypeKind::Signed ? b : a;
  if (IntBits(s) > IntBits(u)) return s;
  switch (IntBits(u)) {
    case 8:
      return DType::Int16;
    case 16:
      return DType::Int32;
    case 32:
      return DType::Int64;
    default:
      return DType::Float64;  // int64 with uint64: NumPy's answer
  }
}

DType DefaultDTypeOf(ScalarKind k) {
  switch (k) {
    case ScalarKind::Bool:
      return DType::Bool;
    case ScalarKind::Int:
      return kDefaultInt;
    case ScalarKind::Float:
      return kDefaultFloat;
    case ScalarKind::Complex:
      return kDefaultComplex;
  }
  return kDefaultFloat;
}

DType PromoteWithScalar(DType a, ScalarKind s) {
  DTypeKind k = KindOf(a);
  switch (s) {
    case ScalarKind::Bool:
      return a;
    case ScalarKind::Int:
      return k == DTypeKind::Bool ? kDefaultInt : a;
    case ScalarKind::Float:
      return (k == DTypeKind::Float || k == DTypeKind::Complex) ? a : kDefaultFloat;
    case ScalarKind::Complex:
      if (k == DTypeKind::Complex) return a;
      if (k == DTypeKind::Float)
        return ComplexOf(a == DType::Float64 ? DType::Float64 : DType::Float32);
      return kDefaultComplex;
  }
  return a;
}

}  // namespace pygpukit

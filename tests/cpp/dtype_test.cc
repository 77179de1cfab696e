#include "core/dtype.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <type_traits>

#include "core/status.h"

namespace pygpukit {
namespace {

constexpr DType kAll[] = {
    DType::Bool,         DType::Int8,      DType::Int16,   DType::Int32,     DType::Int64,
    DType::UInt8,        DType::UInt16,    DType::UInt32,  DType::UInt64,    DType::Float16,
    DType::BFloat16,     DType::Float32,   DType::Float64, DType::Complex64, DType::Complex128,
    DType::Float8E4M3Fn, DType::Float8E5M2};
static_assert(sizeof(kAll) / sizeof(kAll[0]) == kNumDTypes);

TEST(DType, ItemSizes) {
  EXPECT_EQ(ItemSize(DType::Bool), 1);
  EXPECT_EQ(ItemSize(DType::BFloat16), 2);
  EXPECT_EQ(ItemSize(DType::Complex128), 16);
  const int expected[] = {1, 1, 2, 4, 8, 1, 2, 4, 8, 2, 2, 4, 8, 8, 16, 1, 1};
  for (int i = 0; i < kNumDTypes; ++i) {
    EXPECT_EQ(ItemSize(kAll[i]), expected[i]) << DTypeName(kAll[i]);
  }
}

TEST(DType, Kinds) {
  using K = DTypeKind;
  const K expected[] = {K::Bool,     K::Signed,   K::Signed,   K::Signed, K::Signed, K::Unsigned,
                        K::Unsigned, K::Unsigned, K::Unsigned, K::Float,  K::Float,  K::Float,
                        K::Float,    K::Complex,  K::Complex,  K::Float,  K::Float};
  for (int i = 0; i < kNumDTypes; ++i) {
    EXPECT_EQ(KindOf(kAll[i]), expected[i]) << DTypeName(kAll[i]);
  }
  EXPECT_TRUE(IsFloating(DType::BFloat16));
  EXPECT_FALSE(IsFloating(DType::Complex64));
  EXPECT_TRUE(IsComplex(DType::Complex128));
  EXPECT_TRUE(IsInteger(DType::UInt8));
  EXPECT_TRUE(IsInteger(DType::Int64));
  EXPECT_FALSE(IsInteger(DType::Bool));
  EXPECT_TRUE(IsInexact(DType::Float16));
  EXPECT_TRUE(IsInexact(DType::Complex64));
  EXPECT_FALSE(IsInexact(DType::Int32));
}

TEST(DType, NamesAndCodes) {
  const char* names[] = {"bool",          "int8",       "int16",   "int32",     "int64",
                         "uint8",         "uint16",     "uint32",  "uint64",    "float16",
                         "bfloat16",      "float32",    "float64", "complex64", "complex128",
                         "float8_e4m3fn", "float8_e5m2"};
  const char* codes[] = {"b1", "i1",  "i2", "i4", "i8", "u1",  "u2",   "u4",  "u8",
                         "f2", "bf2", "f4", "f8", "c8", "c16", "e4m3", "e5m2"};
  for (int i = 0; i < kNumDTypes; ++i) {
    EXPECT_EQ(DTypeName(kAll[i]), names[i]);
    EXPECT_EQ(DTypeCode(kAll[i]), codes[i]);
    // Every canonical name parses back to its dtype.
    auto parsed = ParseDType(names[i]);
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, kAll[i]);
  }
}

TEST(DType, ParseCanonicalNamesIgnoreCase) {
  auto f = ParseDType("Float32");
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(*f, DType::Float32);
  auto b = ParseDType("BFLOAT16");
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(*b, DType::BFloat16);
}

TEST(DType, ParseAliases) {
  struct Case {
    const char* name;
    DType dt;
  };
  const Case cases[] = {
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
  for (const Case& c : cases) {
    auto dt = ParseDType(c.name);
    ASSERT_TRUE(dt.ok()) << c.name << ": " << dt.status();
    EXPECT_EQ(*dt, c.dt) << c.name;
  }
}

TEST(DType, ParseUnknownNameIsTypeError) {
  for (const char* bad : {"float128", "", "int7", "complex32", "floaty", " float32"}) {
    auto dt = ParseDType(bad);
    ASSERT_FALSE(dt.ok()) << "'" << bad << "' parsed as " << DTypeName(*dt);
    EXPECT_EQ(ErrorTypeOf(dt.status()), ErrorType::kType) << bad;
    EXPECT_EQ(dt.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(std::string(dt.status().message()).find(std::string("'") + bad + "'"),
              std::string::npos)
        << dt.status();
  }
}

// NumPy type codes are case-sensitive: 'F' / 'D' are complex64 / complex128 there, so they must
// not be read as the lower-case float codes 'f' / 'd'.
TEST(DType, SingleLetterCodesAreCaseSensitive) {
  for (const char* code : {"F", "D", "E"}) {
    auto dt = ParseDType(code);
    if (dt.ok()) {
      ADD_FAILURE() << "'" << code << "' parsed as " << DTypeName(*dt);
    } else {
      EXPECT_EQ(ErrorTypeOf(dt.status()), ErrorType::kType);
    }
  }
}

// The full promotion table, written out independently: NumPy 2's table for the NumPy dtypes,
// extended for bfloat16 (8-bit integers fit it exactly; float16 + bfloat16 -> float32).
TEST(DType, PromoteTypesFullTable) {
  constexpr DType b = DType::Bool, i1 = DType::Int8, i2 = DType::Int16, i4 = DType::Int32,
                  i8 = DType::Int64, u1 = DType::UInt8, u2 = DType::UInt16, u4 = DType::UInt32,
                  u8 = DType::UInt64, f2 = DType::Float16, bf = DType::BFloat16,
                  f4 = DType::Float32, f8 = DType::Float64, c8 = DType::Complex64,
                  c16 = DType::Complex128, e4 = DType::Float8E4M3Fn, e5 = DType::Float8E5M2;
  // Rows / columns in kAll order: b i1 i2 i4 i8 u1 u2 u4 u8 f2 bf f4 f8 c8 c16 e4 e5. The 8-bit
  // floats: kept with 8-bit integers (ml_dtypes' rule, as bfloat16), met in a wider float, and
  // float16 for the two together (it holds both exactly).
  const DType table[kNumDTypes][kNumDTypes] = {
      /* b  */ {b, i1, i2, i4, i8, u1, u2, u4, u8, f2, bf, f4, f8, c8, c16, e4, e5},
      /* i1 */ {i1, i1, i2, i4, i8, i2, i4, i8, f8, f2, bf, f4, f8, c8, c16, e4, e5},
      /* i2 */ {i2, i2, i2, i4, i8, i2, i4, i8, f8, f4, f4, f4, f8, c8, c16, f4, f4},
      /* i4 */ {i4, i4, i4, i4, i8, i4, i4, i8, f8, f8, f8, f8, f8, c16, c16, f8, f8},
      /* i8 */ {i8, i8, i8, i8, i8, i8, i8, i8, f8, f8, f8, f8, f8, c16, c16, f8, f8},
      /* u1 */ {u1, i2, i2, i4, i8, u1, u2, u4, u8, f2, bf, f4, f8, c8, c16, e4, e5},
      /* u2 */ {u2, i4, i4, i4, i8, u2, u2, u4, u8, f4, f4, f4, f8, c8, c16, f4, f4},
      /* u4 */ {u4, i8, i8, i8, i8, u4, u4, u4, u8, f8, f8, f8, f8, c16, c16, f8, f8},
      /* u8 */ {u8, f8, f8, f8, f8, u8, u8, u8, u8, f8, f8, f8, f8, c16, c16, f8, f8},
      /* f2 */ {f2, f2, f4, f8, f8, f2, f4, f8, f8, f2, f4, f4, f8, c8, c16, f2, f2},
      /* bf */ {bf, bf, f4, f8, f8, bf, f4, f8, f8, f4, bf, f4, f8, c8, c16, bf, bf},
      /* f4 */ {f4, f4, f4, f8, f8, f4, f4, f8, f8, f4, f4, f4, f8, c8, c16, f4, f4},
      /* f8 */ {f8, f8, f8, f8, f8, f8, f8, f8, f8, f8, f8, f8, f8, c16, c16, f8, f8},
      /* c8 */ {c8, c8, c8, c16, c16, c8, c8, c16, c16, c8, c8, c8, c16, c8, c16, c8, c8},
      /* c16*/
      {c16, c16, c16, c16, c16, c16, c16, c16, c16, c16, c16, c16, c16, c16, c16, c16, c16},
      /* e4 */ {e4, e4, f4, f8, f8, e4, f4, f8, f8, f2, bf, f4, f8, c8, c16, e4, f2},
      /* e5 */ {e5, e5, f4, f8, f8, e5, f4, f8, f8, f2, bf, f4, f8, c8, c16, f2, e5},
  };
  for (int i = 0; i < kNumDTypes; ++i) {
    for (int j = 0; j < kNumDTypes; ++j) {
      ASSERT_EQ(table[i][j], table[j][i]) << "test table not symmetric at " << i << "," << j;
      EXPECT_EQ(PromoteTypes(kAll[i], kAll[j]), table[i][j])
          << DTypeName(kAll[i]) << " + " << DTypeName(kAll[j]) << " gave "
          << DTypeName(PromoteTypes(kAll[i], kAll[j]));
    }
  }
}

TEST(DType, PromoteTypesRepresentativePairs) {
  struct Case {
    DType a, b, want;
  };
  const Case cases[] = {
      {DType::Bool, DType::Float16, DType::Float16},
      {DType::Bool, DType::UInt64, DType::UInt64},
      {DType::Int8, DType::UInt8, DType::Int16},
      {DType::Int64, DType::UInt64, DType::Float64},
      {DType::Int32, DType::Float32, DType::Float64},
      {DType::Int16, DType::Float16, DType::Float32},
      {DType::UInt8, DType::Float16, DType::Float16},
      {DType::BFloat16, DType::Float16, DType::Float32},
      {DType::Int8, DType::BFloat16, DType::BFloat16},
      {DType::Complex64, DType::Float64, DType::Complex128},
      {DType::Complex64, DType::Int16, DType::Complex64},
      {DType::UInt32, DType::Int8, DType::Int64},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(PromoteTypes(c.a, c.b), c.want) << DTypeName(c.a) << " + " << DTypeName(c.b);
    EXPECT_EQ(PromoteTypes(c.b, c.a), c.want) << DTypeName(c.b) << " + " << DTypeName(c.a);
  }
}

// Bool < integers (either signedness) < floats < complex.
int KindRank(DType dt) {
  switch (KindOf(dt)) {
    case DTypeKind::Bool:
      return 0;
    case DTypeKind::Signed:
    case DTypeKind::Unsigned:
      return 1;
    case DTypeKind::Float:
      return 2;
    case DTypeKind::Complex:
      return 3;
  }
  return -1;
}

TEST(DType, PromoteTypesIsSymmetricAndIdempotent) {
  for (DType a : kAll) {
    EXPECT_EQ(PromoteTypes(a, a), a);
    EXPECT_EQ(PromoteTypes(DType::Bool, a), a);
    for (DType b : kAll) {
      DType ab = PromoteTypes(a, b);
      EXPECT_EQ(ab, PromoteTypes(b, a)) << DTypeName(a) << ", " << DTypeName(b);
      // The result is never of a lower kind, nor narrower than either operand.
      EXPECT_GE(KindRank(ab), std::max(KindRank(a), KindRank(b)));
      EXPECT_GE(ItemSize(ab), std::max(ItemSize(a), ItemSize(b)) / (IsComplex(ab) ? 2 : 1));
      // Promotion is idempotent: promoting the result with either operand changes nothing.
      EXPECT_EQ(PromoteTypes(ab, a), ab);
      EXPECT_EQ(PromoteTypes(ab, b), ab);
    }
  }
}

// NEP 50: a Python scalar is "weak"; the array dtype wins unless the scalar is of a higher kind,
// in which case the library's default dtype of that kind is used (float32 / int64 / complex64).
TEST(DType, PromoteWithScalar) {
  for (DType a : kAll) {
    SCOPED_TRACE(DTypeName(a));
    EXPECT_EQ(PromoteWithScalar(a, ScalarKind::Bool), a);
    EXPECT_EQ(PromoteWithScalar(a, ScalarKind::Int), a == DType::Bool ? DType::Int64 : a);
    DType want_f = IsInexact(a) ? a : DType::Float32;
    EXPECT_EQ(PromoteWithScalar(a, ScalarKind::Float), want_f);
    DType want_c = IsComplex(a) ? a : a == DType::Float64 ? DType::Complex128 : DType::Complex64;
    EXPECT_EQ(PromoteWithScalar(a, ScalarKind::Complex), want_c);
  }
  EXPECT_EQ(kDefaultFloat, DType::Float32);
  EXPECT_EQ(kDefaultInt, DType::Int64);
  EXPECT_EQ(kDefaultComplex, DType::Complex64);
}

TEST(DType, ComplexOfAndRealOf) {
  EXPECT_EQ(ComplexOf(DType::Float32), DType::Complex64);
  EXPECT_EQ(ComplexOf(DType::Float64), DType::Complex128);
  EXPECT_EQ(ComplexOf(DType::Float16), DType::Complex64);
  EXPECT_EQ(RealOf(DType::Complex64), DType::Float32);
  EXPECT_EQ(RealOf(DType::Complex128), DType::Float64);
  EXPECT_EQ(RealOf(DType::Int16), DType::Int16);
  EXPECT_EQ(RealOf(DType::BFloat16), DType::BFloat16);
}

TEST(DType, VisitDTypeMapsEveryDTypeToItsScalarType) {
  for (DType dt : kAll) {
    int size = VisitDType(dt, [](auto tag) {
      using T = typename decltype(tag)::type;
      return static_cast<int>(sizeof(T));
    });
    EXPECT_EQ(size, ItemSize(dt)) << DTypeName(dt);
    DType back =
        VisitDType(dt, [](auto tag) { return DTypeOf<typename decltype(tag)::type>::value; });
    EXPECT_EQ(back, dt);
    bool is_float = VisitDType(dt, [](auto tag) {
      using T = typename decltype(tag)::type;
      return std::is_floating_point_v<T> || std::is_same_v<T, float16> ||
             std::is_same_v<T, bfloat16> || std::is_same_v<T, float8_e4m3fn> ||
             std::is_same_v<T, float8_e5m2>;
    });
    EXPECT_EQ(is_float, IsFloating(dt)) << DTypeName(dt);
  }
  // The callback's result is forwarded, including a reference.
  int storage = 3;
  int& ref = VisitDType(DType::Int32, [&](auto) -> int& { return storage; });
  ref = 7;
  EXPECT_EQ(storage, 7);
}

TEST(DType, DTypeOfMatchesScalarTypes) {
  EXPECT_EQ(DTypeOf<bool>::value, DType::Bool);
  EXPECT_EQ(DTypeOf<int8_t>::value, DType::Int8);
  EXPECT_EQ(DTypeOf<uint64_t>::value, DType::UInt64);
  EXPECT_EQ(DTypeOf<float16>::value, DType::Float16);
  EXPECT_EQ(DTypeOf<bfloat16>::value, DType::BFloat16);
  EXPECT_EQ(DTypeOf<double>::value, DType::Float64);
  EXPECT_EQ(DTypeOf<complex64>::value, DType::Complex64);
  EXPECT_EQ(DTypeOf<complex128>::value, DType::Complex128);
  static_assert(sizeof(complex64) == 8 && alignof(complex64) == 8);
  static_assert(sizeof(complex128) == 16 && alignof(complex128) == 16);
}

}  // namespace
}  // namespace pygpukit

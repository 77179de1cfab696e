// Scalar semantics of elementwise ops, defined once for both backends: the CPU kernels (g++) and
// the CUDA kernels (nvcc) instantiate these same templates, so both compute the same bits.
#pragma once

#include <cstdint>
#include <type_traits>

#include "core/scalar_types.h"

namespace pygpukit::kernels {

template <typename T>
struct IsComplexT : std::false_type {};
template <typename T>
struct IsComplexT<Complex<T>> : std::true_type {};
/// The storage floats narrower than float (float16, bfloat16, the 8-bit floats): arithmetic on
/// them goes through float, and the result is rounded back once.
template <typename T>
struct IsNarrowFloatT
    : std::bool_constant<std::is_same_v<T, float16> || std::is_same_v<T, bfloat16> ||
                         std::is_same_v<T, float8_e4m3fn> || std::is_same_v<T, float8_e5m2>> {};
/// The bit word of a narrow float and its sign bit.
template <typename T>
using NarrowBits = decltype(T{}.bits);
template <typename T>
inline constexpr NarrowBits<T> kNarrowSign = NarrowBits<T>(NarrowBits<T>{1} << (8 * sizeof(T) - 1));

namespace detail {
// double -> float rounding to odd: a following rounding to a narrower format (half, bfloat16)
// then rounds correctly, avoiding double-rounding errors.
PGK_HD float DoubleToFloatRoundOdd(double d) {
  float f = static_cast<float>(d);
  if (static_cast<double>(f) == d || d != d) return f;
  uint32_t bits = ::pygpukit::detail::FloatBits(f);
  if ((bits & 1u) == 0) {
    bool f_above = static_cast<double>(f) > d;
    bool positive = (bits >> 31) == 0;
    bits += (f_above == positive) ? uint32_t(-1) : 1u;  // step toward d in magnitude terms
  }
  return ::pygpukit::detail::BitsFloat(bits);
}

// 64-bit integer -> double rounding to odd (exact below 2^53). With the step above it lets wide
// integers reach half / bfloat16 correctly rounded: round-to-odd at 53 and then 24 bits equals
// round-to-odd at 24 bits, which the final round-to-nearest-even cannot double-round.
template <typename I>
PGK_HD double Int64ToDoubleRoundOdd(I x) {
  const bool negative = x < I(0);
  // Magnitude in uint64 arithmetic: -INT64_MIN does not fit int64.
  uint64_t u = negative ? uint64_t(0) - static_cast<uint64_t>(x) : static_cast<uint64_t>(x);
  int shift = 0;
  while ((u >> shift) >= (uint64_t{1} << 53)) ++shift;
  uint64_t kept = u >> shift;
  if (shift > 0 && (u & ((uint64_t{1} << shift) - 1)) != 0) kept |= 1;  // sticky bit
  double d = static_cast<double>(kept);                                 // exact: kept < 2^53
  for (int i = 0; i < shift; ++i) d *= 2.0;
  return negative ? -d : d;
}

// Float -> integer conversion with one defined result on every backend. In range it truncates
// toward zero. NaN and values outside the range follow x86-64's conversion instructions (what
// NumPy gives there; C++ leaves them undefined and GPUs saturate instead): int64 and int32 get
// their minimum; int8/int16/uint8/uint16 convert through int32 and wrap; uint32 converts through
// int64 and wraps; uint64 is exact below 2^64, 0 at or above it, and below 2^63 goes through
// int64 (so negative values wrap and NaN gives 2^63).
PGK_HD int64_t TruncToInt64(double d) {
  if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0)) return INT64_MIN;
  return static_cast<int64_t>(d);
}
PGK_HD int32_t TruncToInt32(double d) {
  if (!(d > -2147483649.0 && d < 2147483648.0)) return INT32_MIN;
  return static_cast<int32_t>(d);
}
template <typename To>
PGK_HD To FloatToInt(double d) {
  if constexpr (std::is_same_v<To, uint64_t>) {
    if (d >= 9223372036854775808.0) return d < 18446744073709551616.0 ? static_cast<To>(d) : To(0);
    return static_cast<To>(TruncToInt64(d));
  } else if constexpr (sizeof(To) == 8 || std::is_same_v<To, uint32_t>) {
    return static_cast<To>(TruncToInt64(d));
  } else {
    return static_cast<To>(TruncToInt32(d));
  }
}
}  // namespace detail

/// Converts between any two dtypes' scalar types with NumPy semantics (complex -> real keeps the
/// real part; anything -> bool is != 0; float -> int truncates).
template <typename To, typename From>
PGK_HD To Cast(From x) {
  if constexpr (std::is_same_v<To, From>) {
    return x;
  } else if constexpr (IsComplexT<From>::value) {
    if constexpr (IsComplexT<To>::value) {
      using R = decltype(To{}.re);
      return To(static_cast<R>(x.re), static_cast<R>(x.im));
    } else if constexpr (std::is_same_v<To, bool>) {
      return x.re != 0 || x.im != 0;
    } else {
      return Cast<To>(x.re);
    }
  } else if constexpr (IsComplexT<To>::value) {
    using R = decltype(To{}.re);
    return To(Cast<R>(x), R(0));
  } else if constexpr (IsNarrowFloatT<From>::value) {
    return Cast<To>(static_cast<float>(x));
  } else if constexpr (IsNarrowFloatT<To>::value) {
    if constexpr (std::is_same_v<From, double>) {
      return To(detail::DoubleToFloatRoundOdd(x));
    } else if constexpr (std::is_integral_v<From> && sizeof(From) == 8) {
      return To(detail::DoubleToFloatRoundOdd(detail::Int64ToDoubleRoundOdd(x)));
    } else if constexpr (std::is_integral_v<From> && sizeof(From) == 4) {
      return To(detail::DoubleToFloatRoundOdd(static_cast<double>(x)));  // exact in double
    } else {
      return To(static_cast<float>(x));
    }
  } else if constexpr (std::is_same_v<To, bool>) {
    return x != From(0);
  } else if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To>) {
    return detail::FloatToInt<To>(static_cast<double>(x));
  } else {
    return static_cast<To>(x);
  }
}

/// Unsigned type integer arithmetic is done in: integer ops wrap (two's complement) as in NumPy,
/// and signed overflow is undefined in C++. At least 32 bits so that narrow operands are not
/// promoted to (signed) int, where uint16 * uint16 could overflow.
template <typename T>
using WrapType = std::conditional_t<(sizeof(T) < 4), uint32_t, std::make_unsigned_t<T>>;

#define PGK_BINARY_OP(NAME, EXPR_BOOL, OPERATOR)                        \
  struct NAME {                                                         \
    template <typename T>                                               \
    PGK_HD static T Apply(T a, T b) {                                   \
      if constexpr (std::is_same_v<T, bool>) {                          \
        return EXPR_BOOL;                                               \
      } else if constexpr (IsNarrowFloatT<T>::value) {                  \
        return T(static_cast<float>(a) OPERATOR static_cast<float>(b)); \
      } else if constexpr (std::is_integral_v<T>) {                     \
        return static_cast<T>(WrapType<T>(a) OPERATOR WrapType<T>(b));  \
      } else {                                                          \
        return a OPERATOR b;                                            \
      }                                                                 \
    }                                                                   \
  };

PGK_BINARY_OP(AddOp, a || b, +)
PGK_BINARY_OP(SubOp, a != b, -)  // bool is rejected before reaching kernels
PGK_BINARY_OP(MulOp, a&& b, *)
#undef PGK_BINARY_OP

/// Arithmetic negation: integers wrap (so -INT_MIN == INT_MIN and unsigned values wrap modulo
/// 2^bits, as NumPy), floats flip the sign bit (so -0.0 and NaN payloads behave), complex values
/// negate both parts (never a complex multiply, which would turn infinities into NaN).
struct NegOp {
  template <typename T>
  PGK_HD static T Apply(T a) {
    if constexpr (IsComplexT<T>::value) {
      return T(Apply(a.re), Apply(a.im));
    } else if constexpr (IsNarrowFloatT<T>::value) {
      return T::FromBits(static_cast<NarrowBits<T>>(a.bits ^ kNarrowSign<T>));
    } else if constexpr (std::is_integral_v<T>) {
      static_assert(!std::is_same_v<T, bool>, "boolean negation is rejected before kernels");
      return static_cast<T>(WrapType<T>(0) - WrapType<T>(a));
    } else if constexpr (std::is_same_v<T, float>) {
      // The sign bit itself: device `neg` may canonicalize NaNs, the host flips the bit.
      return ::pygpukit::detail::BitsFloat(::pygpukit::detail::FloatBits(a) ^ 0x80000000u);
    } else {
      static_assert(std::is_same_v<T, double>);
      return ::pygpukit::detail::BitsDouble(::pygpukit::detail::DoubleBits(a) ^
                                            (uint64_t{1} << 63));
    }
  }
};

/// True division; ops promote integer operands to a floating dtype before reaching it.
struct DivOp {
  template <typename T>
  PGK_HD static T Apply(T a, T b) {
    if constexpr (IsNarrowFloatT<T>::value) {
      return T(static_cast<float>(a) / static_cast<float>(b));
    } else {
      static_assert(!std::is_integral_v<T>, "integer true division is done in floating point");
      return a / b;
    }
  }
};

}  // namespace pygpukit::kernels

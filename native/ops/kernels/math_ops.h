// Over 600 lines on purpose: one header the JIT hands to NVRTC as a unit (PGK_JIT_HEADERS);
// each function's real and complex forms stay side by side.
// Scalar semantics of the Array API elementwise functions, defined once for both backends: the
// CPU kernels (g++) instantiate these templates and the CUDA kernels are generated at run time
// (NVRTC receives this header as source), so both compute with the same code. Functions from the
// math library (sin, exp, ...) come from the host's libm on the CPU and CUDA's math library on
// the GPU; both are within a few ulp of the correctly rounded result, and their special values
// (NaN, infinities, signed zeros) follow C99 Annex F / G, as NumPy's do.
//
// Each op is a struct with a static `Apply` over the compute type T (the promoted dtype's scalar
// type): 16-bit floats compute in float and round once; integers wrap; complex functions come
// from ComplexMath (ops/kernels/complex_math.h, included only where complex types are used, so
// kernels without them do not pay for its compile time).
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "ops/kernels/activations.h"
#include "ops/kernels/scalar_ops.h"

namespace pygpukit::kernels {

/// Complex elementary functions for Complex<F> (defined in complex_math.h).
template <typename T>
struct ComplexMath;

/// The real type of T (F for Complex<F>, else T).
template <typename T>
struct RealOfT {
  using type = T;
};
template <typename F>
struct RealOfT<Complex<F>> {
  using type = F;
};
template <typename T>
using RealOf = typename RealOfT<T>::type;

namespace detail {
// Float view of a real compute value: 16-bit floats widen, others stay.
template <typename T>
PGK_HD auto Wide(T x) {
  if constexpr (IsNarrowFloatT<T>::value) {
    return static_cast<float>(x);
  } else {
    return x;
  }
}
template <typename R>
PGK_HD R QuietNan() {
  if constexpr (std::is_same_v<R, float>) {
    return ::pygpukit::detail::BitsFloat(0x7fc00000u);
  } else {
    return ::pygpukit::detail::BitsDouble(uint64_t{0x7ff8000000000000});
  }
}
template <typename T>
PGK_HD bool IsNan(T x) {
  if constexpr (std::is_integral_v<T>) {
    return false;
  } else {
    return Wide(x) != Wide(x);
  }
}
}  // namespace detail

// ---- floating-point functions (integer operands are promoted before the kernel) ----

#define PGK_FLOAT_UNARY(NAME, FN)                   \
  struct NAME {                                     \
    template <typename T>                           \
    PGK_HD static T Apply(T x) {                    \
      if constexpr (IsNarrowFloatT<T>::value) {     \
        return T(std::FN(static_cast<float>(x)));   \
      } else if constexpr (IsComplexT<T>::value) {  \
        return ComplexMath<T>::FN(x);               \
      } else {                                      \
        static_assert(std::is_floating_point_v<T>); \
        return std::FN(x);                          \
      }                                             \
    }                                               \
  };

namespace detail {
// sin (kCos false) or cos of a 16-bit float's value x, |x| <= kHalfTrigMax, for a result
// rounded to 16 bits. Both compilers build this one definition, so the two backends give the
// same bits. Why not std::sin: on the GPU the library function interleaves its range check and
// slow-path branch with the arithmetic, so the 8 elements of a 16-byte access run one after
// another with no overlap, which made bfloat16 sin instruction-latency bound at 0.89x of
// memory bandwidth on an H100. Here the arithmetic has no branch: the quadrant j by the
// 1.5 * 2^23 shifter (its low bits are j mod 4), r = x - j pi/2 in three FMA steps (pi/2 split
// into three floats; the first step is exact), and minimax polynomials on [-pi/4, pi/4]
// (relative error 4e-9 for sin, 7e-11 for cos, below float rounding). tests/cpp/
// half_trig_test.cc checks every float16 value and every bfloat16 value: all correctly
// rounded.
constexpr float kHalfTrigMax = 105615.0f;
template <bool kCos>
PGK_HD float HalfSinCos(float x) {
  constexpr float kShifter = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  const float shifted = std::fma(x, 0.636619772f, kShifter);
  const float j = shifted - kShifter;
  const uint32_t q = ::pygpukit::detail::FloatBits(shifted) + (kCos ? 1u : 0u);
  float r = std::fma(j, -1.57079637f, x);
  r = std::fma(j, 4.37113883e-8f, r);
  r = std::fma(j, 1.71512451e-15f, r);
  const float s = r * r;
  // sin r = r + r s (S0 + S1 s + S2 s^2); cos r = 1 + s (-1/2 + C1 s + C2 s^2 + C3 s^3).
  const float ps = std::fma(
      std::fma(std::fma(s, -1.95083834e-4f, 8.33210722e-3f), s, -1.66666538e-1f), s * r, r);
  const float pc = std::fma(
      std::fma(std::fma(std::fma(s, 2.43762388e-5f, -1.38865993e-3f), s, 4.16666158e-2f), s, -0.5f),
      s, 1.0f);
  const float v = (q & 1u) != 0 ? pc : ps;
  const float signed_v =
      ::pygpukit::detail::BitsFloat(::pygpukit::detail::FloatBits(v) ^ ((q & 2u) << 30));
  // sin(-0) is -0, which the reduction's additions would turn into +0.
  return !kCos && x == 0.0f ? x : signed_v;
}
}  // namespace detail

// sin / cos: 16-bit floats through detail::HalfSinCos where it applies (InFastRange; larger
// values, inf and NaN take the library function: SinOpLibrary, CosOpLibrary), others as the
// other functions. Generated contiguous kernels test InFastRange for all the elements a thread
// holds and then run ApplyFast on all of them without a branch per element
// (ops/elementwise/elementwise_codegen.h, EwKernelSpec::fast_body), which lets the elements'
// arithmetic overlap.
#define PGK_TRIG(NAME, FN, IS_COS)                                             \
  PGK_FLOAT_UNARY(NAME##Library, FN)                                           \
  struct NAME {                                                                \
    template <typename T>                                                      \
    PGK_HD static bool InFastRange(T x) {                                      \
      return std::fabs(static_cast<float>(x)) <= detail::kHalfTrigMax;         \
    }                                                                          \
    template <typename T>                                                      \
    PGK_HD static T ApplyFast(T x) {                                           \
      return T::FromNonNan(detail::HalfSinCos<IS_COS>(static_cast<float>(x))); \
    }                                                                          \
    template <typename T>                                                      \
    PGK_HD static T Apply(T x) {                                               \
      if constexpr (IsNarrowFloatT<T>::value) {                                \
        if (InFastRange(x)) return ApplyFast(x);                               \
      }                                                                        \
      return NAME##Library::Apply(x);                                          \
    }                                                                          \
  };
PGK_TRIG(SinOp, sin, false)
PGK_TRIG(CosOp, cos, true)
#undef PGK_TRIG

PGK_FLOAT_UNARY(AcosOp, acos)
PGK_FLOAT_UNARY(AcoshOp, acosh)
PGK_FLOAT_UNARY(AsinOp, asin)
PGK_FLOAT_UNARY(AsinhOp, asinh)
PGK_FLOAT_UNARY(AtanOp, atan)
PGK_FLOAT_UNARY(AtanhOp, atanh)
PGK_FLOAT_UNARY(CoshOp, cosh)
PGK_FLOAT_UNARY(ExpOp, exp)
PGK_FLOAT_UNARY(Expm1Op, expm1)
PGK_FLOAT_UNARY(LogOp, log)
PGK_FLOAT_UNARY(Log1pOp, log1p)
PGK_FLOAT_UNARY(Log2Op, log2)
PGK_FLOAT_UNARY(Log10Op, log10)
PGK_FLOAT_UNARY(SinhOp, sinh)
PGK_FLOAT_UNARY(SqrtOp, sqrt)
PGK_FLOAT_UNARY(TanOp, tan)
PGK_FLOAT_UNARY(TanhOp, tanh)
#undef PGK_FLOAT_UNARY

/// 1 / x.
struct ReciprocalOp {
  template <typename T>
  PGK_HD static T Apply(T x) {
    if constexpr (IsComplexT<T>::value) {
      return T(RealOf<T>(1)) / x;
    } else if constexpr (IsNarrowFloatT<T>::value) {
      return T(1.0f / static_cast<float>(x));
    } else {
      return T(1) / x;
    }
  }
};

// Rounding to integral values: identity on integers; complex values round both parts.
#define PGK_ROUNDING(NAME, FN)                         \
  struct NAME {                                        \
    template <typename T>                              \
    PGK_HD static T Apply(T x) {                       \
      if constexpr (std::is_integral_v<T>) {           \
        return x;                                      \
      } else if constexpr (IsComplexT<T>::value) {     \
        return T(Apply(x.re), Apply(x.im));            \
      } else if constexpr (IsNarrowFloatT<T>::value) { \
        return T(std::FN(static_cast<float>(x)));      \
      } else {                                         \
        return std::FN(x);                             \
      }                                                \
    }                                                  \
  };
PGK_ROUNDING(CeilOp, ceil)
PGK_ROUNDING(FloorOp, floor)
PGK_ROUNDING(TruncOp, trunc)
PGK_ROUNDING(RoundOp, rint)  // halves to even, as NumPy and the Array API
#undef PGK_ROUNDING

// ---- sign, magnitude and classification ----

/// |x|: integers wrap (abs(INT_MIN) == INT_MIN, as NumPy), floats clear the sign bit, complex
/// values give their magnitude hypot(re, im) in the real dtype.
struct AbsOp {
  template <typename T>
  PGK_HD static RealOf<T> Apply(T x) {
    if constexpr (IsComplexT<T>::value) {
      return std::hypot(x.re, x.im);
    } else if constexpr (IsNarrowFloatT<T>::value) {
      return T::FromBits(static_cast<NarrowBits<T>>(x.bits & ~kNarrowSign<T>));
    } else if constexpr (std::is_floating_point_v<T>) {
      return std::fabs(x);
    } else if constexpr (std::is_same_v<T, bool> || std::is_unsigned_v<T>) {
      return x;
    } else {
      return x < T(0) ? NegOp::Apply(x) : x;
    }
  }
};

/// -1, 0 or +1 (NaN stays NaN; zeros give +0); complex x / |x| (0 for 0), as NumPy 2.
struct SignOp {
  template <typename T>
  PGK_HD static T Apply(T x) {
    if constexpr (IsComplexT<T>::value) {
      using R = RealOf<T>;
      const R nan = detail::QuietNan<R>();
      const R mag = std::hypot(x.re, x.im);
      if (mag != mag) return T(nan, nan);
      if (std::isinf(mag)) {
        if (std::isinf(x.re)) {
          if (std::isinf(x.im)) return T(nan, nan);
          return T(x.re > 0 ? R(1) : R(-1), R(0));
        }
        return T(R(0), x.im > 0 ? R(1) : R(-1));
      }
      if (mag == R(0)) return T(R(0), R(0));
      return T(x.re / mag, x.im / mag);
    } else if constexpr (IsNarrowFloatT<T>::value) {
      return T(Apply(static_cast<float>(x)));
    } else if constexpr (std::is_floating_point_v<T>) {
      return x > T(0) ? T(1) : x < T(0) ? T(-1) : x == T(0) ? T(0) : x;
    } else if constexpr (std::is_unsigned_v<T>) {
      return static_cast<T>(x > T(0));
    } else {
      return static_cast<T>((x > T(0)) - (x < T(0)));
    }
  }
};

/// Whether the sign bit is set (real floating types).
struct SignbitOp {
  template <typename T>
  PGK_HD static bool Apply(T x) {
    if constexpr (IsNarrowFloatT<T>::value) {
      return (x.bits & kNarrowSign<T>) != 0;
    } else {
      return std::signbit(x);
    }
  }
};

struct IsNanOp {
  template <typename T>
  PGK_HD static bool Apply(T x) {
    if constexpr (IsComplexT<T>::value) {
      return detail::IsNan(x.re) || detail::IsNan(x.im);
    } else {
      return detail::IsNan(x);
    }
  }
};

struct IsInfOp {
  template <typename T>
  PGK_HD static bool Apply(T x) {
    if constexpr (IsComplexT<T>::value) {
      return Apply(x.re) || Apply(x.im);
    } else if constexpr (std::is_integral_v<T>) {
      return false;
    } else {
      return std::isinf(detail::Wide(x));
    }
  }
};

struct IsFiniteOp {
  template <typename T>
  PGK_HD static bool Apply(T x) {
    if constexpr (IsComplexT<T>::value) {
      return Apply(x.re) && Apply(x.im);
    } else if constexpr (std::is_integral_v<T>) {
      return true;
    } else {
      return std::isfinite(detail::Wide(x));
    }
  }
};

/// x * x with multiply's semantics (integers wrap; bool is logical and).
struct SquareOp {
  template <typename T>
  PGK_HD static T Apply(T x) {
    if constexpr (IsComplexT<T>::value) {
      return x * x;
    } else {
      return MulOp::Apply(x, x);
    }
  }
};

// ---- complex parts ----

/// Complex conjugate (the imaginary part's sign flips, -0 included); identity on reals.
struct ConjOp {
  template <typename T>
  PGK_HD static T Apply(T x) {
    if constexpr (IsComplexT<T>::value) {
      return T(x.re, NegOp::Apply(x.im));
    } else {
      return x;
    }
  }
};

struct RealOp {
  template <typename T>
  PGK_HD static RealOf<T> Apply(T x) {
    if constexpr (IsComplexT<T>::value) {
      return x.re;
    } else {
      return x;
    }
  }
};

/// Imaginary part; zeros for real operands (as NumPy).
struct ImagOp {
  template <typename T>
  PGK_HD static RealOf<T> Apply(T x) {
    if constexpr (IsComplexT<T>::value) {
      return x.im;
    } else {
      return Cast<T>(0);
    }
  }
};

// ---- bitwise and logical ----

struct BitwiseInvertOp {
  template <typename T>
  PGK_HD static T Apply(T x) {
    if constexpr (std::is_same_v<T, bool>) {
      return !x;
    } else {
      return static_cast<T>(~x);
    }
  }
};

#define PGK_BITWISE(NAME, OPERATOR)                                    \
  struct NAME {                                                        \
    template <typename T>                                              \
    PGK_HD static T Apply(T a, T b) {                                  \
      if constexpr (std::is_same_v<T, bool>) {                         \
        return static_cast<bool>(a OPERATOR b);                        \
      } else {                                                         \
        return static_cast<T>(WrapType<T>(a) OPERATOR WrapType<T>(b)); \
      }                                                                \
    }                                                                  \
  };
PGK_BITWISE(BitwiseAndOp, &)
PGK_BITWISE(BitwiseOrOp, |)
PGK_BITWISE(BitwiseXorOp, ^)
#undef PGK_BITWISE

/// a << b as NumPy: shifts by the bit width or more (or by a negative amount) give 0.
struct LeftShiftOp {
  template <typename T>
  PGK_HD static T Apply(T a, T b) {
    using U = std::make_unsigned_t<T>;
    if (static_cast<uint64_t>(b) >= sizeof(T) * 8) return T(0);
    return static_cast<T>(static_cast<U>(static_cast<U>(a) << static_cast<int>(b)));
  }
};

/// a >> b as NumPy: arithmetic for signed types; shifts by the bit width or more (or by a
/// negative amount) give 0, or -1 for negative signed a.
struct RightShiftOp {
  template <typename T>
  PGK_HD static T Apply(T a, T b) {
    if (static_cast<uint64_t>(b) >= sizeof(T) * 8) {
      if constexpr (std::is_signed_v<T>) return a < T(0) ? T(-1) : T(0);
      return T(0);
    }
    return static_cast<T>(a >> static_cast<int>(b));
  }
};

struct LogicalNotOp {
  PGK_HD static bool Apply(bool x) { return !x; }
};
struct LogicalAndOp {
  PGK_HD static bool Apply(bool a, bool b) { return a && b; }
};
struct LogicalOrOp {
  PGK_HD static bool Apply(bool a, bool b) { return a || b; }
};
struct LogicalXorOp {
  PGK_HD static bool Apply(bool a, bool b) { return a != b; }
};

// ---- comparisons (NaN compares unequal to everything; ordering is for real types, equality of
// complex values compares both parts) ----

#define PGK_COMPARISON(NAME, OPERATOR)                 \
  struct NAME {                                        \
    template <typename T>                              \
    PGK_HD static bool Apply(T a, T b) {               \
      return detail::Wide(a) OPERATOR detail::Wide(b); \
    }                                                  \
  };
PGK_COMPARISON(LessOp, <)
PGK_COMPARISON(LessEqualOp, <=)
PGK_COMPARISON(GreaterOp, >)
PGK_COMPARISON(GreaterEqualOp, >=)
#undef PGK_COMPARISON

struct EqualOp {
  template <typename T>
  PGK_HD static bool Apply(T a, T b) {
    if constexpr (IsComplexT<T>::value) {
      return a.re == b.re && a.im == b.im;
    } else {
      return detail::Wide(a) == detail::Wide(b);
    }
  }
};
struct NotEqualOp {
  template <typename T>
  PGK_HD static bool Apply(T a, T b) {
    return !EqualOp::Apply(a, b);
  }
};

// ---- real binary functions ----

/// NumPy's maximum / minimum: NaN in either operand propagates (the first operand's when both);
/// of two zeros, maximum prefers +0 and minimum -0.
struct MaximumOp {
  template <typename T>
  PGK_HD static T Apply(T a, T b) {
    if constexpr (std::is_integral_v<T>) {
      return a >= b ? a : b;
    } else {
      if (detail::IsNan(a)) return a;
      if (detail::IsNan(b)) return b;
      const auto x = detail::Wide(a), y = detail::Wide(b);
      if (x == y) return std::signbit(x) ? b : a;
      return x > y ? a : b;
    }
  }
};
struct MinimumOp {
  template <typename T>
  PGK_HD static T Apply(T a, T b) {
    if constexpr (std::is_integral_v<T>) {
      return a <= b ? a : b;
    } else {
      if (detail::IsNan(a)) return a;
      if (detail::IsNan(b)) return b;
      const auto x = detail::Wide(a), y = detail::Wide(b);
      if (x == y) return std::signbit(x) ? a : b;
      return x < y ? a : b;
    }
  }
};

#define PGK_REAL_BINARY(NAME, FN)                                        \
  struct NAME {                                                          \
    template <typename T>                                                \
    PGK_HD static T Apply(T a, T b) {                                    \
      if constexpr (IsNarrowFloatT<T>::value) {                          \
        return T(std::FN(static_cast<float>(a), static_cast<float>(b))); \
      } else {                                                           \
        return std::FN(a, b);                                            \
      }                                                                  \
    }                                                                    \
  };
PGK_REAL_BINARY(Atan2Op, atan2)
PGK_REAL_BINARY(HypotOp, hypot)
#undef PGK_REAL_BINARY

// Activations (ops/kernels/activations.h, the GEMM epilogue's too) over real floats, and the
// gated products act(a) * b of a GLU layer (SwiGLU: silu(gate) * up): 16-bit floats compute in
// float and round once.
#define PGK_ACTIVATION(NAME, FN)                                     \
  struct NAME {                                                      \
    template <typename T>                                            \
    PGK_HD static T Apply(T x) {                                     \
      if constexpr (IsNarrowFloatT<T>::value) {                      \
        return T(FN(static_cast<float>(x)));                         \
      } else {                                                       \
        return FN(x);                                                \
      }                                                              \
    }                                                                \
    template <typename T>                                            \
    PGK_HD static T Apply(T a, T b) {                                \
      if constexpr (IsNarrowFloatT<T>::value) {                      \
        return T(FN(static_cast<float>(a)) * static_cast<float>(b)); \
      } else {                                                       \
        return FN(a) * b;                                            \
      }                                                              \
    }                                                                \
  };
PGK_ACTIVATION(GeluOp, Gelu)
PGK_ACTIVATION(GeluTanhOp, GeluTanh)
PGK_ACTIVATION(SiluOp, Silu)
#undef PGK_ACTIVATION

/// |a| with b's sign (bit operations for 16-bit floats: exact for NaN payloads too).
struct CopysignOp {
  template <typename T>
  PGK_HD static T Apply(T a, T b) {
    if constexpr (IsNarrowFloatT<T>::value) {
      return T::FromBits(
          static_cast<NarrowBits<T>>((a.bits & ~kNarrowSign<T>) | (b.bits & kNarrowSign<T>)));
    } else {
      return std::copysign(a, b);
    }
  }
};

/// The next representable value after a toward b, in T's own format (so 16-bit floats step by
/// their own ulp, not float's).
struct NextafterOp {
  template <typename T>
  PGK_HD static T Apply(T a, T b) {
    if constexpr (IsNarrowFloatT<T>::value) {
      const float fa = static_cast<float>(a), fb = static_cast<float>(b);
      if (fa != fa || fb != fb) return T(fa + fb);
      if (fa == fb) return b;
      if (fa == 0.0f)
        return T::FromBits(static_cast<NarrowBits<T>>((b.bits & kNarrowSign<T>) | 1u));
      // Sign-magnitude encoding: one step away from zero is +1 on the bits, toward zero -1.
      const bool away = (fa < fb) == (fa > 0.0f);
      return T::FromBits(static_cast<NarrowBits<T>>(away ? a.bits + 1u : a.bits - 1u));
    } else {
      return std::nextafter(a, b);
    }
  }
};

/// log(exp(a) + exp(b)) without overflow (NumPy's formulation).
struct LogaddexpOp {
  template <typename T>
  PGK_HD static T Apply(T a, T b) {
    if constexpr (IsNarrowFloatT<T>::value) {
      return T(Apply(static_cast<float>(a), static_cast<float>(b)));
    } else {
      if (a == b) return a + T(0.693147180559945309417232121458176568);  // a + log(2); infs too
      const T d = a - b;
      if (d > T(0)) return a + std::log1p(std::exp(-d));
      if (d <= T(0)) return b + std::log1p(std::exp(d));
      return d;  // NaN
    }
  }
};

// ---- division, remainder, power ----

namespace detail {
// NumPy's npy_divmod for real floating types: the floored quotient, and the remainder with the
// divisor's sign.
template <typename F>
PGK_HD F FloorDivMod(F a, F b, F* mod_out) {
  F mod = std::fmod(a, b);
  if (b == F(0)) {
    *mod_out = mod;
    return a / b;
  }
  F div = (a - mod) / b;
  if (mod != F(0)) {
    if ((b < F(0)) != (mod < F(0))) {
      mod += b;
      div -= F(1);
    }
  } else {
    mod = std::copysign(F(0), b);
  }
  F floordiv;
  if (div != F(0)) {
    floordiv = std::floor(div);
    if (div - floordiv > F(0.5)) floordiv += F(1);
  } else {
    floordiv = std::copysign(F(0), a / b);
  }
  *mod_out = mod;
  return floordiv;
}
}  // namespace detail

/// Floored division. Integers: division by zero gives 0 and INT_MIN // -1 wraps to INT_MIN (as
/// NumPy, without its warnings); floats: NumPy's divmod quotient (a / b when b is 0).
struct FloorDivideOp {
  template <typename T>
  PGK_HD static T Apply(T a, T b) {
    if constexpr (IsNarrowFloatT<T>::value) {
      return T(Apply(static_cast<float>(a), static_cast<float>(b)));
    } else if constexpr (std::is_floating_point_v<T>) {
      if (b == T(0)) return a / b;
      T mod;
      return detail::FloorDivMod(a, b, &mod);
    } else {
      if (b == T(0)) return T(0);
      if constexpr (std::is_signed_v<T>) {
        if (b == T(-1)) return NegOp::Apply(a);  // wraps for INT_MIN
        T q = static_cast<T>(a / b);
        if ((a % b != 0) && ((a < T(0)) != (b < T(0)))) q = static_cast<T>(q - 1);
        return q;
      } else {
        return static_cast<T>(a / b);
      }
    }
  }
};

/// Remainder with the divisor's sign (Python's %). Integers: x % 0 == 0; floats: NumPy's divmod
/// remainder (fmod's NaN when b is 0).
struct RemainderOp {
  template <typename T>
  PGK_HD static T Apply(T a, T b) {
    if constexpr (IsNarrowFloatT<T>::value) {
      return T(Apply(static_cast<float>(a), static_cast<float>(b)));
    } else if constexpr (std::is_floating_point_v<T>) {
      if (b == T(0)) return std::fmod(a, b);
      T mod;
      detail::FloorDivMod(a, b, &mod);
      return mod;
    } else {
      if (b == T(0)) return T(0);
      if constexpr (std::is_signed_v<T>) {
        if (b == T(-1)) return T(0);
        T r = static_cast<T>(a % b);
        if (r != 0 && ((r < T(0)) != (b < T(0)))) r = static_cast<T>(r + b);
        return r;
      } else {
        return static_cast<T>(a % b);
      }
    }
  }
};

/// a ** b. Integers: exact with wrap-around; a negative exponent gives 0 except for bases 1 and
/// -1 (NumPy raises instead, which a GPU kernel cannot). Complex: NumPy's algorithm (repeated
/// multiplication for small integral exponents, else exp(b log a)).
struct PowOp {
  template <typename T>
  PGK_HD static T Apply(T a, T b) {
    if constexpr (IsComplexT<T>::value) {
      return ComplexMath<T>::pow(a, b);
    } else if constexpr (IsNarrowFloatT<T>::value) {
      return T(std::pow(static_cast<float>(a), static_cast<float>(b)));
    } else if constexpr (std::is_floating_point_v<T>) {
      return std::pow(a, b);
    } else {
      using W = WrapType<T>;
      if constexpr (std::is_signed_v<T>) {
        if (b < T(0)) {
          if (a == T(1)) return T(1);
          if (a == T(-1)) return (b & T(1)) ? T(-1) : T(1);
          return T(0);
        }
      }
      W result = 1, base = static_cast<W>(a);
      for (auto e = static_cast<std::make_unsigned_t<T>>(b); e != 0; e >>= 1) {
        if (e & 1u) result = static_cast<W>(result * base);
        base = static_cast<W>(base * base);
      }
      return static_cast<T>(result);
    }
  }
};

/// Array API `where` and `clip` bodies.
struct WhereOp {
  template <typename T>
  PGK_HD static T Apply(bool c, T a, T b) {
    return c ? a : b;
  }
};
struct ClipOp {
  template <typename T>
  PGK_HD static T Apply(T x, T lo, T hi) {
    return MinimumOp::Apply(MaximumOp::Apply(x, lo), hi);
  }
};

}  // namespace pygpukit::kernels

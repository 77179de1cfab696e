// Portable scalar types shared by the host compiler and nvcc: float16 / bfloat16 storage types
// with round-to-nearest-even conversions, and a small complex type. The same definitions are used
// by CPU kernels and CUDA kernels so both backends compute identical bits for conversions.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define PGK_HD __host__ __device__ __forceinline__
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#else
#define PGK_HD inline
#endif

namespace pygpukit {

namespace detail {
PGK_HD uint32_t FloatBits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
#endif
}
PGK_HD float BitsFloat(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, 4);
  return f;
#endif
}

PGK_HD uint64_t DoubleBits(double d) {
#if defined(__CUDA_ARCH__)
  return static_cast<uint64_t>(__double_as_longlong(d));
#else
  uint64_t u;
  std::memcpy(&u, &d, 8);
  return u;
#endif
}
PGK_HD double BitsDouble(uint64_t u) {
#if defined(__CUDA_ARCH__)
  return __longlong_as_double(static_cast<long long>(u));
#else
  double d;
  std::memcpy(&d, &u, 8);
  return d;
#endif
}

// IEEE binary16 from binary32, round to nearest even, with overflow to inf and NaN kept quiet.
PGK_HD uint16_t FloatToHalfBits(float f) {
  uint32_t x = FloatBits(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t absx = x & 0x7fffffffu;
#if defined(__CUDA_ARCH__)
  // The GPU's conversion instruction rounds identically (nearest even, overflow to inf, exact
  // subnormals) in one instruction instead of about ten; NaNs keep the path below, which keeps
  // their sign and payload bits as the host does.
  if (absx <= 0x7f800000u) {
    unsigned short r;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(r) : "f"(f));
    return r;
  }
#endif
  if (absx >= 0x7f800000u) {  // inf or NaN
    return static_cast<uint16_t>(sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u : 0u));
  }
  if (absx >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to inf
  if (absx < 0x38800000u) {  // result is subnormal or zero: let float addition round for us
    float a = BitsFloat(absx) + 0.5f;  // 0.5 = 2^-1; ulp of subnormal half is 2^-24
    return static_cast<uint16_t>(sign | (FloatBits(a) - 0x3f000000u));
  }
  uint32_t mant_odd = (absx >> 13) & 1u;
  absx += 0xc8000fffu + mant_odd;  // rebias exponent (-112 << 23) and round half to even
  return static_cast<uint16_t>(sign | (absx >> 13));
}

PGK_HD float HalfBitsToFloat(uint16_t h) {
#if defined(__CUDA_ARCH__)
  if ((h & 0x7fffu) <= 0x7c00u) {  // exact either way; NaN payloads take the path below
    float r;
    asm("cvt.f32.f16 %0, %1;" : "=f"(r) : "h"(static_cast<unsigned short>(h)));
    return r;
  }
#endif
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0x1fu) return BitsFloat(sign | 0x7f800000u | (mant << 13));
  if (exp == 0) {  // zero or subnormal: mant * 2^-24
    float v = static_cast<float>(mant) * 5.9604644775390625e-8f;
    return sign ? -v : v;
  }
  return BitsFloat(sign | ((exp + 112u) << 23) | (mant << 13));
}

PGK_HD uint16_t FloatToBFloat16Bits(float f) {
  uint32_t x = FloatBits(f);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if ((x & 0x7fffffffu) <= 0x7f800000u) {  // as FloatToHalfBits: one instruction, same rounding
    unsigned short r;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r) : "f"(f));
    return r;
  }
#endif
  if ((x & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet NaN
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}
PGK_HD float BFloat16BitsToFloat(uint16_t b) { return BitsFloat(static_cast<uint32_t>(b) << 16); }

// The conversions above for a value known not to be NaN: on the GPU one instruction, without
// the NaN test and branch (the same bits for every non-NaN value).
PGK_HD uint16_t NonNanToHalfBits(float f) {
#if defined(__CUDA_ARCH__)
  unsigned short r;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(r) : "f"(f));
  return r;
#else
  return FloatToHalfBits(f);
#endif
}
PGK_HD uint16_t NonNanToBFloat16Bits(float f) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  unsigned short r;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r) : "f"(f));
  return r;
#else
  return FloatToBFloat16Bits(f);
#endif
}

// FP8 from binary32, round to nearest even. kExp / kMan: exponent and mantissa bits; kFn: the
// "finite" layout of e4m3fn (no infinity, one NaN pattern per sign: all exponent and mantissa
// bits set) instead of the IEEE one of e5m2 (exponent all ones: infinity or NaN). Values beyond
// the largest finite one become infinity (IEEE layout) or NaN (fn layout) as in ml_dtypes, or the
// largest finite value when `saturate` (NaN stays NaN).
template <int kExp, int kMan, bool kFn>
PGK_HD uint8_t FloatToFp8Bits(float f, bool saturate) {
  constexpr int kBias = (1 << (kExp - 1)) - 1;
  constexpr uint32_t kMaxFinite = kFn ? 0x7eu : ((((1u << kExp) - 1u) << kMan) - 1u);
  constexpr uint32_t kInfOrNan = kFn ? 0x7fu : 0x7cu;
  constexpr uint32_t kNan = kFn ? 0x7fu : 0x7eu;
  const uint32_t x = FloatBits(f);
  const uint32_t sign = (x >> 24) & 0x80u;
  uint32_t a = x & 0x7fffffffu;
  if (a > 0x7f800000u) return static_cast<uint8_t>(sign | kNan);
  const uint32_t overflow = sign | (saturate ? kMaxFinite : kInfOrNan);
  if (a == 0x7f800000u) return static_cast<uint8_t>(overflow);
  constexpr uint32_t kMinNormal = static_cast<uint32_t>(127 + 1 - kBias) << 23;
  if (a < kMinNormal) {
    // Subnormal or zero: adding 2^(23 + emin - kMan), whose ulp is the subnormal step, lets the
    // float addition round to nearest even; the low bits are then the code.
    constexpr uint32_t kMagic = static_cast<uint32_t>(127 + 1 - kBias - kMan + 23) << 23;
    return static_cast<uint8_t>(sign | (FloatBits(BitsFloat(a) + BitsFloat(kMagic)) - kMagic));
  }
  const uint32_t odd = (a >> (23 - kMan)) & 1u;
  a += (1u << (22 - kMan)) - 1u + odd;  // round half to even at the kept mantissa bits
  a -= static_cast<uint32_t>(127 - kBias) << 23;
  const uint32_t r = a >> (23 - kMan);
  return static_cast<uint8_t>(r > kMaxFinite ? overflow : (sign | r));
}

PGK_HD float Fp8E4M3FnBitsToFloat(uint8_t b) {
  const uint32_t sign = static_cast<uint32_t>(b & 0x80u) << 24;
  const uint32_t exp = (b >> 3) & 0xfu, man = b & 0x7u;
  if ((b & 0x7fu) == 0x7fu) return BitsFloat(sign | 0x7fc00000u);
  if (exp == 0) {  // zero or subnormal: man * 2^-9
    const float v = static_cast<float>(man) * 0.001953125f;
    return sign ? -v : v;
  }
  return BitsFloat(sign | ((exp + 120u) << 23) | (man << 20));
}
// e5m2 is binary16 with the low 8 mantissa bits cut off.
PGK_HD float Fp8E5M2BitsToFloat(uint8_t b) {
  return HalfBitsToFloat(static_cast<uint16_t>(b << 8));
}
}  // namespace detail

// 16-bit IEEE half precision storage type; arithmetic goes through float.
struct float16 {
  uint16_t bits;
  float16() = default;
  PGK_HD explicit float16(float f) : bits(detail::FloatToHalfBits(f)) {}
  PGK_HD explicit operator float() const { return detail::HalfBitsToFloat(bits); }
  PGK_HD static float16 FromBits(uint16_t b) {
    float16 h;
    h.bits = b;
    return h;
  }
  /// From a float that is not NaN (the caller knows): as the constructor, cheaper on the GPU.
  PGK_HD static float16 FromNonNan(float f) { return FromBits(detail::NonNanToHalfBits(f)); }
};

// bfloat16 storage type (8-bit exponent, 7-bit mantissa); arithmetic goes through float.
struct bfloat16 {
  uint16_t bits;
  bfloat16() = default;
  PGK_HD explicit bfloat16(float f) : bits(detail::FloatToBFloat16Bits(f)) {}
  PGK_HD explicit operator float() const { return detail::BFloat16BitsToFloat(bits); }
  PGK_HD static bfloat16 FromBits(uint16_t b) {
    bfloat16 h;
    h.bits = b;
    return h;
  }
  /// From a float that is not NaN (the caller knows): as the constructor, cheaper on the GPU.
  PGK_HD static bfloat16 FromNonNan(float f) { return FromBits(detail::NonNanToBFloat16Bits(f)); }
};

// FP8 storage types (OCP 8-bit floating point): e4m3fn (4 exponent bits, 3 mantissa bits, no
// infinity, largest finite 448) and e5m2 (IEEE-like, largest finite 57344). Arithmetic goes
// through float; the conversion from float rounds to nearest even with ml_dtypes' overflow rules
// (FromFloat(f, /*saturate=*/true) clamps to the largest finite value instead).
template <int kExp, int kMan, bool kFn>
struct Float8 {
  uint8_t bits;
  Float8() = default;
  PGK_HD explicit Float8(float f) : bits(detail::FloatToFp8Bits<kExp, kMan, kFn>(f, false)) {}
  PGK_HD explicit operator float() const {
    if constexpr (kFn) {
      return detail::Fp8E4M3FnBitsToFloat(bits);
    } else {
      return detail::Fp8E5M2BitsToFloat(bits);
    }
  }
  PGK_HD static Float8 FromBits(uint8_t b) {
    Float8 h;
    h.bits = b;
    return h;
  }
  PGK_HD static Float8 FromFloat(float f, bool saturate) {
    return FromBits(detail::FloatToFp8Bits<kExp, kMan, kFn>(f, saturate));
  }
  PGK_HD static Float8 FromNonNan(float f) { return Float8(f); }
};
using float8_e4m3fn = Float8<4, 3, true>;
using float8_e5m2 = Float8<5, 2, false>;
static_assert(sizeof(float8_e4m3fn) == 1 && sizeof(float8_e5m2) == 1);

// Complex number with the memory layout of std::complex / cuComplex (real, imag).
template <typename T>
struct alignas(2 * sizeof(T)) Complex {
  T re, im;
  Complex() = default;
  PGK_HD constexpr Complex(T r, T i = T(0)) : re(r), im(i) {}
};
using complex64 = Complex<float>;
using complex128 = Complex<double>;

template <typename T>
PGK_HD Complex<T> operator+(Complex<T> a, Complex<T> b) {
  return {a.re + b.re, a.im + b.im};
}
template <typename T>
PGK_HD Complex<T> operator-(Complex<T> a, Complex<T> b) {
  return {a.re - b.re, a.im - b.im};
}
template <typename T>
PGK_HD Complex<T> operator*(Complex<T> a, Complex<T> b) {
  return {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re};
}
// Smith's algorithm: avoids overflow of |b|^2 for large operands.
template <typename T>
PGK_HD Complex<T> operator/(Complex<T> a, Complex<T> b) {
  using std::fabs;
  if (fabs(b.re) >= fabs(b.im)) {
    if (b.re == T(0) && b.im == T(0)) {
      return {a.re / fabs(b.re), a.im / fabs(b.im)};
    }
    T r = b.im / b.re, d = b.re + b.im * r;
    return {(a.re + a.im * r) / d, (a.im - a.re * r) / d};
  }
  T r = b.re / b.im, d = b.re * r + b.im;
  return {(a.re * r + a.im) / d, (a.im * r - a.re) / d};
}

}  // namespace pygpukit

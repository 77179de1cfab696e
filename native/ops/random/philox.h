// gp.random's numbers, defined once for the CPU loop (g++) and the CUDA kernels (nvcc) so both
// backends give the same bits: the Philox4x64-10 block function (NumPy's np.random.Philox) and
// the transforms from its 64-bit words to uniform, normal and integer outputs.
//
// Stream: block j of a request is Philox4x64-10(counter + j, key) with the 256-bit counter in
// four little-endian words; its words r[0..3] are outputs 4j..4j+3 of the raw stream. NumPy
// increments its counter before each block, so a request starting at NumPy's state counter C
// passes C + 1 here (see PhiloxGenerator::Reserve in ops/random.cc).
//
// Transforms (element i of a request; "word" k is raw output k):
//  - float64 uniform: u = (word_i >> 11) * 2^-53 in [0, 1), NumPy's Generator.random(); then
//    low + (high - low) * u rounded once per operation (NumPy's uniform).
//  - float32 uniform: 32-bit halves, the low half of word i/2 first (NumPy's 32-bit buffering),
//    u = (half >> 8) * 2^-24 (NumPy's random(dtype=float32)). float16 / bfloat16 keep the top
//    11 / 8 bits of the same half (u * 2^-11 / 2^-8 steps): the float32 value truncated, so
//    every value is exact and below 1 (rounding to nearest could give 1.0). The affine map runs
//    in float64 and rounds once to the dtype.
//  - normal: Box-Muller on the word pair (2m, 2m+1): r = sqrt(-2 log(u1)) with
//    u1 = ((word_2m >> 11) + 1) * 2^-53 in (0, 1], angle = 2 pi (word_2m+1 >> 11) * 2^-53;
//    output 2m is r cos(angle), 2m+1 is r sin(angle), then loc + scale * z in float64 and one
//    rounding to the dtype. Not NumPy's numbers (it uses a ziggurat).
//  - integers: low + ((word_i * range) >> 64) (Lemire's multiply-high without rejection: one
//    word per element, each value's probability off by at most range / 2^64 relative).
//
// Bit equality across compilers needs every floating operation rounded once, as written: on the
// device the _rn intrinsics (which nvcc never contracts into an FMA), on the host plain
// operators in a file compiled with -ffp-contract=off (ops/random/cpu/random_cpu.cc; only such files
// may call the floating functions, or the linker could keep another file's copy). log, sin and cos
// are our own (libm and CUDA's differ in the last bit): log is fdlibm's e_log.c (< 1 ulp);
// sin / cos of the angle are Taylor polynomials after an exact reduction of the integer angle
// to [0, pi/4] (measured errors in tests/cpp/random_test.cc).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "core/scalar_types.h"
#include "ops/kernels/params.h"
#include "ops/kernels/scalar_ops.h"

namespace pygpukit::kernels {

/// What a random kernel computes from its Philox stream (below).
enum RandomKind : int32_t { kRandomUniform = 0, kRandomNormal = 1, kRandomIntegers = 2 };

/// n dense outputs from the Philox4x64-10 stream of `key`: block j (counter `counter` + j,
/// 256-bit, little-endian words) gives outputs j * per_block ... (RandomPerBlock). Uniform:
/// a + b * u; normal: a + b * z; integers: low + (u64 * range) >> 64 in two's complement, with
/// range 0 standing for 2^64 (the raw stream).
struct RandomParams {
  int64_t n;
  void* out;
  uint64_t key[2];
  uint64_t counter[4];
  int32_t kind;  // RandomKind
  int32_t reserved;
  double a, b;
  uint64_t low, range;
};

static_assert(sizeof(RandomParams) == 104, "RandomParams layout changed");
namespace rnd {

// ---- operations rounded once on both compilers ----
PGK_HD double Add(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}
PGK_HD double Sub(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dsub_rn(a, b);
#else
  return a - b;
#endif
}
PGK_HD double Mul(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}
PGK_HD double Div(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __ddiv_rn(a, b);
#else
  return a / b;
#endif
}
PGK_HD double Fma(double a, double b, double c) {
#if defined(__CUDA_ARCH__)
  return __fma_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}
PGK_HD double Sqrt(double a) {
#if defined(__CUDA_ARCH__)
  return __dsqrt_rn(a);
#else
  return std::sqrt(a);
#endif
}

/// The high 64 bits of a * b.
PGK_HD uint64_t MulHi(uint64_t a, uint64_t b) {
#if defined(__CUDA_ARCH__)
  return __umul64hi(a, b);
#else
  return static_cast<uint64_t>((static_cast<unsigned __int128>(a) * b) >> 64);
#endif
}

// ---- Philox4x64-10 (Salmon et al., Random123; NumPy's constants and round order) ----
inline constexpr uint64_t kPhiloxM0 = 0xD2E7470EE14C6C93ull, kPhiloxM1 = 0xCA5A826395121157ull;
inline constexpr uint64_t kPhiloxW0 = 0x9E3779B97F4A7C15ull, kPhiloxW1 = 0xBB67AE8584CAA73Bull;

/// The four words of the block at counter `c` under key (k0, k1).
PGK_HD void Philox4x64(const uint64_t c_in[4], uint64_t k0, uint64_t k1, uint64_t out[4]) {
  uint64_t c0 = c_in[0], c1 = c_in[1], c2 = c_in[2], c3 = c_in[3];
  for (int round = 0; round < 10; ++round) {
    const uint64_t hi0 = MulHi(kPhiloxM0, c0), lo0 = kPhiloxM0 * c0;
    const uint64_t hi1 = MulHi(kPhiloxM1, c2), lo1 = kPhiloxM1 * c2;
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
    k0 += kPhiloxW0;
    k1 += kPhiloxW1;
  }
  out[0] = c0;
  out[1] = c1;
  out[2] = c2;
  out[3] = c3;
}

/// out = base + j (256-bit, words little-endian, wrapping).
PGK_HD void CounterAdd(const uint64_t base[4], uint64_t j, uint64_t out[4]) {
  out[0] = base[0] + j;
  uint64_t carry = out[0] < j ? 1 : 0;
  for (int w = 1; w < 4; ++w) {
    out[w] = base[w] + carry;
    carry = (carry != 0 && out[w] == 0) ? 1 : 0;
  }
}

// ---- log: fdlibm's __ieee754_log (e_log.c, Sun Microsystems 1993), error < 1 ulp ----
// For positive normal x only (the callers pass (0, 1]).
PGK_HD double Log(double x) {
  constexpr double kLn2Hi = 0x1.62e42feep-1, kLn2Lo = 0x1.a39ef35793c76p-33;
  constexpr double kLg1 = 0x1.5555555555593p-1, kLg2 = 0x1.999999997fa04p-2,
                   kLg3 = 0x1.2492494229359p-2, kLg4 = 0x1.c71c51d8e78afp-3,
                   kLg5 = 0x1.7466496cb03dep-3, kLg6 = 0x1.39a09d078c69fp-3,
                   kLg7 = 0x1.2f112df3e5244p-3;
  const uint64_t bits = ::pygpukit::detail::DoubleBits(x);
  int32_t hx = static_cast<int32_t>(bits >> 32);
  int32_t k = (hx >> 20) - 1023;
  hx &= 0x000fffff;
  const int32_t i = (hx + 0x95f64) & 0x100000;
  // x scaled into [sqrt(2)/2, sqrt(2)): the exponent of 1 or of 1/2.
  const uint64_t scaled =
      (static_cast<uint64_t>(static_cast<uint32_t>(hx | (i ^ 0x3ff00000))) << 32) |
      (bits & 0xffffffffull);
  k += i >> 20;
  const double f = Sub(::pygpukit::detail::BitsDouble(scaled), 1.0);
  const double dk = static_cast<double>(k);
  if ((0x000fffff & (2 + hx)) < 3) {  // |f| < 2^-20
    if (f == 0.0) return k == 0 ? 0.0 : Add(Mul(dk, kLn2Hi), Mul(dk, kLn2Lo));
    const double r = Mul(Mul(f, f), Sub(0.5, Mul(0.33333333333333333, f)));
    if (k == 0) return Sub(f, r);
    return Sub(Mul(dk, kLn2Hi), Sub(Sub(r, Mul(dk, kLn2Lo)), f));
  }
  const double s = Div(f, Add(2.0, f));
  const double z = Mul(s, s);
  const double w = Mul(z, z);
  const double t1 = Mul(w, Add(kLg2, Mul(w, Add(kLg4, Mul(w, kLg6)))));
  const double t2 = Mul(z, Add(kLg1, Mul(w, Add(kLg3, Mul(w, Add(kLg5, Mul(w, kLg7)))))));
  const double r = Add(t2, t1);
  if (((hx - 0x6147a) | (0x6b851 - hx)) > 0) {
    const double hfsq = Mul(Mul(0.5, f), f);
    if (k == 0) return Sub(f, Sub(hfsq, Mul(s, Add(hfsq, r))));
    return Sub(Mul(dk, kLn2Hi), Sub(Sub(hfsq, Add(Mul(s, Add(hfsq, r)), Mul(dk, kLn2Lo))), f));
  }
  if (k == 0) return Sub(f, Mul(s, Sub(f, r)));
  return Sub(Mul(dk, kLn2Hi), Sub(Sub(Mul(s, Sub(f, r)), Mul(dk, kLn2Lo)), f));
}

// ---- sin and cos of t / 2^53 turns, t < 2^53 ----
/// c[0] x^(N-1) + ... + c[N-1] by Horner's rule, one rounding per operation.
template <int N>
PGK_HD double Horner(double x, const double (&c)[N]) {
  double r = c[0];
  for (int i = 1; i < N; ++i) r = Add(c[i], Mul(x, r));
  return r;
}

/// sin and cos of (pi/2) * y for y in [0, 1/2] (angles up to pi/4): Taylor series in y whose
/// truncation error is below 10^-19 (coefficients (-1)^k (pi/2)^n / n!, highest first); the
/// leading pi/2 is split in two so that y * pi/2 is carried beyond double precision into the
/// final sum.
PGK_HD void SinCosQuarter(double y, double& s, double& c) {
  constexpr double kPio2Hi = 0x1.921fb54442d18p+0, kPio2Lo = 0x1.1a62633145c07p-54;
  constexpr double kSin[] = {0x1.aaec32af93359p-38,  -0x1.6fadb9f155744p-31, 0x1.e8f434d018d63p-25,
                             -0x1.e3074fde8871fp-19, 0x1.50783487ee782p-13,  -0x1.32d2cce62bd86p-8,
                             0x1.466bc6775aae2p-4,   -0x1.4abbce625be53p-1};
  constexpr double kCos[] = {-0x1.2a0c591af8314p-41, 0x1.20c62c2f2d7f5p-34,  -0x1.b6e24f44b128fp-28,
                             0x1.f9d38a3763cc3p-22,  -0x1.a6d1f2a204a8cp-16, 0x1.e1f506891babbp-11,
                             -0x1.55d3c7e3cbffap-6,  0x1.03c1f081b5ac4p-2,   -0x1.3bd3cc9be45dep+0};
  const double y2 = Mul(y, y);
  // sin = y * (pi/2) + y^3 * P(y^2), with y * pio2_hi exact inside the FMA.
  s = Fma(y, kPio2Hi, Mul(y, Add(kPio2Lo, Mul(y2, Horner(y2, kSin)))));
  c = Add(1.0, Mul(y2, Horner(y2, kCos)));
}

/// sin and cos of 2 pi t / 2^53 (t < 2^53): the quadrant and the mirror about pi/4 are taken
/// from t's bits exactly, so no rounding happens before the polynomials.
PGK_HD void SinCosTurns(uint64_t t, double& sin_out, double& cos_out) {
  constexpr uint64_t kQuarter = uint64_t{1} << 51;
  const unsigned quadrant = static_cast<unsigned>(t >> 51) & 3u;
  uint64_t w = t & (kQuarter - 1);
  const bool mirror = w > kQuarter / 2;
  if (mirror) w = kQuarter - w;
  double s, c;
  SinCosQuarter(Mul(static_cast<double>(w), 0x1p-51), s, c);  // exact: w < 2^51
  if (mirror) {
    const double tmp = s;
    s = c;
    c = tmp;
  }
  switch (quadrant) {
    case 0:
      sin_out = s;
      cos_out = c;
      break;
    case 1:
      sin_out = c;
      cos_out = -s;
      break;
    case 2:
      sin_out = -s;
      cos_out = -c;
      break;
    default:
      sin_out = -c;
      cos_out = s;
      break;
  }
}

/// Box-Muller: two standard normal values from two words.
PGK_HD void BoxMuller(uint64_t w1, uint64_t w2, double& z0, double& z1) {
  const double u1 = Mul(static_cast<double>((w1 >> 11) + 1), 0x1p-53);  // (0, 1], exact
  const double radius = Sqrt(Mul(-2.0, Log(u1)));
  double s, c;
  SinCosTurns(w2 >> 11, s, c);
  z0 = Mul(radius, c);
  z1 = Mul(radius, s);
}

}  // namespace rnd

/// Outputs one Philox block gives: 8 for uniform values of 32 bits or fewer (two per word), 4
/// otherwise.
PGK_HD constexpr int RandomPerBlock(int32_t kind, int itemsize) {
  return kind == kRandomUniform && itemsize < 8 ? 8 : 4;
}

/// [0, 1) from a 32-bit half: float32's 24 bits, truncated to the narrower dtype's precision.
template <typename T>
PGK_HD double UniformOf32(uint32_t h) {
  if constexpr (std::is_same_v<T, float16>) {
    return rnd::Mul(static_cast<double>(h >> 21), 0x1p-11);
  } else if constexpr (std::is_same_v<T, bfloat16>) {
    return rnd::Mul(static_cast<double>(h >> 24), 0x1p-8);
  } else {
    return rnd::Mul(static_cast<double>(h >> 8), 0x1p-24);
  }
}

/// Stores the first `count` of a block's K outputs at dst. On CUDA a whole, aligned block
/// goes out in vector stores: a thread's scalar stores, 32 bytes apart across a warp, would
/// each touch a sector of their own (the store traffic, not Philox, bounded the first version).
template <typename T, int K>
PGK_HD void StoreBlock(T* dst, const T (&vals)[K], int64_t count) {
#if defined(__CUDA_ARCH__)
  constexpr int kBytes = K * static_cast<int>(sizeof(T));
  const uintptr_t at = reinterpret_cast<uintptr_t>(dst);
  if (count >= K) {
    if constexpr (kBytes % 16 == 0) {
      if (at % 16 == 0) {
        for (int c = 0; c < kBytes / 16; ++c) {
          uint4 v;
          memcpy(&v, reinterpret_cast<const char*>(vals) + 16 * c, 16);
          reinterpret_cast<uint4*>(dst)[c] = v;
        }
        return;
      }
    } else if constexpr (kBytes == 8) {
      if (at % 8 == 0) {
        uint2 v;
        memcpy(&v, vals, 8);
        *reinterpret_cast<uint2*>(dst) = v;
        return;
      }
    } else if constexpr (kBytes == 4) {
      if (at % 4 == 0) {
        uint32_t v;
        memcpy(&v, vals, 4);
        *reinterpret_cast<uint32_t*>(dst) = v;
        return;
      }
    }
  }
#endif
  for (int j = 0; j < K && j < count; ++j) dst[j] = vals[j];
}

/// Writes the outputs of Philox block `block` (see RandomParams).
template <typename T>
PGK_HD void RandomBlock(const RandomParams& p, int64_t block) {
  uint64_t ctr[4], r[4];
  rnd::CounterAdd(p.counter, static_cast<uint64_t>(block), ctr);
  rnd::Philox4x64(ctr, p.key[0], p.key[1], r);
  T* out = static_cast<T*>(p.out);
  if constexpr (std::is_floating_point_v<T> || IsNarrowFloatT<T>::value) {
    if (p.kind == kRandomNormal) {
      double z[4];
      rnd::BoxMuller(r[0], r[1], z[0], z[1]);
      rnd::BoxMuller(r[2], r[3], z[2], z[3]);
      T vals[4];
      for (int j = 0; j < 4; ++j) vals[j] = Cast<T>(rnd::Add(p.a, rnd::Mul(p.b, z[j])));
      StoreBlock(out + block * 4, vals, p.n - block * 4);
    } else if constexpr (sizeof(T) == 8) {
      T vals[4];
      for (int j = 0; j < 4; ++j) {
        const double u = rnd::Mul(static_cast<double>(r[j] >> 11), 0x1p-53);
        vals[j] = rnd::Add(p.a, rnd::Mul(p.b, u));
      }
      StoreBlock(out + block * 4, vals, p.n - block * 4);
    } else {
      T vals[8];
      for (int j = 0; j < 8; ++j) {
        const uint64_t word = r[j / 2];
        const uint32_t half = static_cast<uint32_t>((j & 1) != 0 ? word >> 32 : word);
        vals[j] = Cast<T>(rnd::Add(p.a, rnd::Mul(p.b, UniformOf32<T>(half))));
      }
      StoreBlock(out + block * 8, vals, p.n - block * 8);
    }
  } else {
    T vals[4];
    for (int j = 0; j < 4; ++j) {
      const uint64_t offset = p.range == 0 ? r[j] : rnd::MulHi(r[j], p.range);
      const uint64_t v = p.low + offset;  // the value in two's complement: it fits T
      if constexpr (std::is_same_v<T, bool>) {
        vals[j] = v != 0;
      } else {
        vals[j] = static_cast<T>(v);
      }
    }
    StoreBlock(out + block * 4, vals, p.n - block * 4);
  }
}

}  // namespace pygpukit::kernels

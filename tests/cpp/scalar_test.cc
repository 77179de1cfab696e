// Over 600 lines on purpose: every dtype pair of the shared scalar layer against one reference.
// Scalar semantics shared by the CPU and CUDA kernels (core/scalar_types.h,
// ops/kernels/scalar_ops.h): float16 / bfloat16 conversions checked against a reference that
// rounds exact values to the nearest representable number (ties to even), Cast, and integer
// wrap-around.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "core/scalar_types.h"
#include "ops/kernels/scalar_ops.h"

namespace pygpukit {
namespace {

using kernels::AddOp;
using kernels::Cast;
using kernels::DivOp;
using kernels::MulOp;
using kernels::SubOp;

// ---- independent reference: values of 16-bit formats and correct rounding ----

// Value of a binary16 pattern from the IEEE definition.
double HalfValue(uint16_t h) {
  int exp = (h >> 10) & 31, mant = h & 1023;
  double v;
  if (exp == 31) {
    v = mant ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  } else if (exp == 0) {
    v = std::ldexp(mant, -24);
  } else {
    v = std::ldexp(1024 + mant, exp - 25);
  }
  return (h & 0x8000) ? -v : v;
}

// Value of a bfloat16 pattern (1 sign, 8 exponent, 7 mantissa bits).
double BFloat16Value(uint16_t b) {
  int exp = (b >> 7) & 255, mant = b & 127;
  double v;
  if (exp == 255) {
    v = mant ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  } else if (exp == 0) {
    v = std::ldexp(mant, -133);
  } else {
    v = std::ldexp(128 + mant, exp - 134);
  }
  return (b & 0x8000) ? -v : v;
}

// A 16-bit format: every non-negative finite value in increasing order, then the first value
// past the largest one (2^(emax+1), whose pattern is +inf, an "even" pattern), so that the
// rounding below overflows to infinity exactly where IEEE round-to-nearest-even does.
struct Format {
  std::vector<double> values;
  std::vector<uint16_t> bits;
  uint16_t inf_bits;
};

const Format& HalfFormat() {
  static const Format f = [] {
    Format f;
    for (uint32_t h = 0; h < 0x7c00u; ++h) {
      f.values.push_back(HalfValue(static_cast<uint16_t>(h)));
      f.bits.push_back(static_cast<uint16_t>(h));
    }
    f.values.push_back(65536.0);
    f.bits.push_back(0x7c00);
    f.inf_bits = 0x7c00;
    return f;
  }();
  return f;
}

const Format& BFloat16Format() {
  static const Format f = [] {
    Format f;
    for (uint32_t b = 0; b < 0x7f80u; ++b) {
      f.values.push_back(BFloat16Value(static_cast<uint16_t>(b)));
      f.bits.push_back(static_cast<uint16_t>(b));
    }
    f.values.push_back(std::ldexp(1.0, 128));
    f.bits.push_back(0x7f80);
    f.inf_bits = 0x7f80;
    return f;
  }();
  return f;
}

// Correctly rounded (to nearest, ties to even) pattern of the exact value `x`; 0xffff for NaN.
uint16_t RoundRef(double x, const Format& f) {
  if (std::isnan(x)) return 0xffff;
  uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  double ax = std::fabs(x);
  if (ax >= f.values.back()) return sign | f.inf_bits;
  size_t i = std::lower_bound(f.values.begin(), f.values.end(), ax) - f.values.begin();
  if (f.values[i] == ax) return sign | f.bits[i];
  // values[i-1] < ax < values[i]; the differences are exact (Sterbenz).
  double below = ax - f.values[i - 1], above = f.values[i] - ax;
  size_t pick = below < above ? i - 1 : above < below ? i : ((f.bits[i - 1] & 1) ? i : i - 1);
  return sign | f.bits[pick];
}

bool IsHalfNaN(uint16_t h) { return (h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0; }
bool IsBFloat16NaN(uint16_t b) { return (b & 0x7f80) == 0x7f80 && (b & 0x7f) != 0; }

float BitsToFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
uint32_t FloatToBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// Floats covering every interesting region: random bit patterns (NaN, inf, subnormals, huge),
// random values in the 16-bit formats' ranges, and the boundaries between each pair of
// consecutive representable values of `fmt` (midpoints and their float neighbours).
std::vector<float> TestFloats(const Format& fmt, uint32_t seed) {
  std::vector<float> out;
  std::mt19937 rng(seed);
  for (int i = 0; i < 300000; ++i) out.push_back(BitsToFloat(rng()));
  std::uniform_real_distribution<double> mant(1.0, 2.0);
  std::uniform_int_distribution<int> exp(-30, 17);
  for (int i = 0; i < 300000; ++i) {
    double v = std::ldexp(mant(rng), exp(rng));
    out.push_back(static_cast<float>(rng() & 1 ? v : -v));
  }
  for (size_t i = 0; i + 1 < fmt.values.size(); ++i) {
    float lo = static_cast<float>(fmt.values[i]);
    float hi = static_cast<float>(std::min(fmt.values[i + 1], 3.4028234663852886e38));
    float mid = static_cast<float>((fmt.values[i] + fmt.values[i + 1]) / 2);
    for (float v : {lo, std::nextafter(lo, hi), std::nextafter(mid, lo), mid,
                    std::nextafter(mid, hi), std::nextafter(hi, lo)}) {
      out.push_back(v);
      out.push_back(-v);
    }
  }
  for (float v : {0.0f, -0.0f, 65504.0f, 65519.996f, 65520.0f, 65520.004f, 1e30f,
                  std::numeric_limits<float>::max(), std::numeric_limits<float>::denorm_min(),
                  std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN(),
                  BitsToFloat(0x7f800001u), BitsToFloat(0xffc00000u), std::ldexp(1.0f, -25),
                  std::ldexp(1.0f, -25) * 1.0000001f, std::ldexp(3.0f, -26)}) {
    out.push_back(v);
    out.push_back(-v);
  }
  return out;
}

// ---- float16 ----

TEST(Float16, AllBitPatternsDecodeExactlyAndRoundTrip) {
  int checked = 0;
  for (uint32_t u = 0; u < 65536; ++u) {
    uint16_t h = static_cast<uint16_t>(u);
    float f = detail::HalfBitsToFloat(h);
    double want = HalfValue(h);
    if (IsHalfNaN(h)) {
      ASSERT_TRUE(std::isnan(f)) << std::hex << h;
      uint16_t back = detail::FloatToHalfBits(f);
      ASSERT_TRUE(IsHalfNaN(back)) << std::hex << h << " -> " << back;
      EXPECT_EQ(back & 0x8000, h & 0x8000) << "NaN sign lost for " << std::hex << h;
      EXPECT_EQ(back & 0x0200, 0x0200) << "NaN not quiet for " << std::hex << h;
      continue;
    }
    ASSERT_EQ(static_cast<double>(f), want) << std::hex << h;
    ASSERT_EQ(std::signbit(f), (h & 0x8000) != 0) << std::hex << h;
    ASSERT_EQ(detail::FloatToHalfBits(f), h) << "round trip of " << std::hex << h;
    ASSERT_EQ(float16(f).bits, h);
    ASSERT_EQ(static_cast<float>(float16::FromBits(h)), f);
    ++checked;
  }
  EXPECT_EQ(checked, 65536 - 2 * 1023);
}

TEST(Float16, FloatToHalfRoundsToNearestEven) {
  const Format& fmt = HalfFormat();
  int64_t n = 0;
  for (float f : TestFloats(fmt, 1234)) {
    uint16_t got = detail::FloatToHalfBits(f);
    if (std::isnan(f)) {
      ASSERT_TRUE(IsHalfNaN(got)) << f;
      ASSERT_EQ(got & 0x8000, std::signbit(f) ? 0x8000 : 0);
      continue;
    }
    uint16_t want = RoundRef(static_cast<double>(f), fmt);
    ASSERT_EQ(got, want) << "float " << f << " (bits 0x" << std::hex << FloatToBits(f) << ")";
    ++n;
  }
  EXPECT_GT(n, 700000);
}

TEST(Float16, KnownValues) {
  EXPECT_EQ(float16(1.0f).bits, 0x3c00);
  EXPECT_EQ(float16(-2.0f).bits, 0xc000);
  EXPECT_EQ(float16(65504.0f).bits, 0x7bff);
  EXPECT_EQ(float16(65519.0f).bits, 0x7bff);
  EXPECT_EQ(float16(65520.0f).bits, 0x7c00);  // tie between 65504 and 2^16 goes to even (inf)
  EXPECT_EQ(float16(-1e9f).bits, 0xfc00);
  EXPECT_EQ(float16(std::ldexp(1.0f, -24)).bits, 0x0001);             // smallest subnormal
  EXPECT_EQ(float16(std::ldexp(1.0f, -25)).bits, 0x0000);             // tie with zero goes to zero
  EXPECT_EQ(float16(std::ldexp(3.0f, -25)).bits, 0x0002);             // 1.5 ulp: tie goes to even 2
  EXPECT_EQ(float16(std::ldexp(1.0f, -14)).bits, 0x0400);             // smallest normal
  EXPECT_EQ(float16(1.0f + std::ldexp(1.0f, -11)).bits, 0x3c00);      // tie -> even
  EXPECT_EQ(float16(1.0f + 3 * std::ldexp(1.0f, -11)).bits, 0x3c02);  // tie -> even (up)
  EXPECT_EQ(float16(-0.0f).bits, 0x8000);
}

// ---- bfloat16 ----

TEST(BFloat16, AllBitPatternsDecodeExactlyAndRoundTrip) {
  for (uint32_t u = 0; u < 65536; ++u) {
    uint16_t b = static_cast<uint16_t>(u);
    float f = detail::BFloat16BitsToFloat(b);
    if (IsBFloat16NaN(b)) {
      ASSERT_TRUE(std::isnan(f));
      uint16_t back = detail::FloatToBFloat16Bits(f);
      ASSERT_TRUE(IsBFloat16NaN(back)) << std::hex << b << " -> " << back;
      EXPECT_EQ(back & 0x8000, b & 0x8000);
      continue;
    }
    ASSERT_EQ(static_cast<double>(f), BFloat16Value(b)) << std::hex << b;
    ASSERT_EQ(detail::FloatToBFloat16Bits(f), b) << std::hex << b;
    ASSERT_EQ(bfloat16(f).bits, b);
  }
}

TEST(BFloat16, FloatToBFloat16RoundsToNearestEven) {
  const Format& fmt = BFloat16Format();
  for (float f : TestFloats(fmt, 99)) {
    uint16_t got = detail::FloatToBFloat16Bits(f);
    if (std::isnan(f)) {
      ASSERT_TRUE(IsBFloat16NaN(got)) << std::hex << FloatToBits(f) << " -> " << got;
      continue;
    }
    ASSERT_EQ(got, RoundRef(static_cast<double>(f), fmt))
        << "float " << f << " (bits 0x" << std::hex << FloatToBits(f) << ")";
  }
}

// ---- Cast: correct rounding from wider types ----

// Doubles next to the midpoints of `fmt`, where rounding to float first would land exactly on
// the midpoint (double rounding), plus random doubles and specials.
std::vector<double> TestDoubles(const Format& fmt, uint32_t seed) {
  std::vector<double> out;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> mant(1.0, 2.0);
  std::uniform_int_distribution<int> exp(-40, 20);
  for (int i = 0; i < 400000; ++i) {
    double v = std::ldexp(mant(rng), exp(rng));
    out.push_back(rng() & 1 ? v : -v);
  }
  for (size_t i = 1; i + 1 < fmt.values.size(); i += 7) {
    double mid = (fmt.values[i] + fmt.values[i + 1]) / 2;
    double tiny = mid * 1e-12;  // far below float resolution: float(mid +- tiny) == mid
    for (double v : {mid, mid + tiny, mid - tiny, std::nextafter(mid, 1e300),
                     std::nextafter(mid, 0.0), fmt.values[i]}) {
      out.push_back(v);
      out.push_back(-v);
    }
  }
  for (double v :
       {0.0, -0.0, 1e-300, -1e-300, 1e300, -1e300, 65520.0, 65519.999999999, 65520.000000001,
        std::ldexp(1.0, -25), std::ldexp(1.0, -25) + 1e-30, std::numeric_limits<double>::infinity(),
        std::numeric_limits<double>::denorm_min(), 3.4028235677973366e38, 3.3961775292304e38}) {
    out.push_back(v);
    out.push_back(-v);
  }
  return out;
}

TEST(Cast, DoubleToFloat16IsCorrectlyRounded) {
  const Format& fmt = HalfFormat();
  for (double d : TestDoubles(fmt, 7)) {
    ASSERT_EQ(Cast<float16>(d).bits, RoundRef(d, fmt)) << std::hexfloat << d;
  }
  // The classic double-rounding case: 1 + 2^-11 + 2^-40 rounds to float as the exact tie
  // 1 + 2^-11 (which would then go to even, 1.0), but is above the tie: the answer is 1 + 2^-10.
  EXPECT_EQ(Cast<float16>(1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40)).bits, 0x3c01);
  EXPECT_EQ(Cast<float16>(1.0 + std::ldexp(1.0, -11)).bits, 0x3c00);
  EXPECT_TRUE(IsHalfNaN(Cast<float16>(std::numeric_limits<double>::quiet_NaN()).bits));
}

TEST(Cast, DoubleToBFloat16IsCorrectlyRounded) {
  const Format& fmt = BFloat16Format();
  for (double d : TestDoubles(fmt, 8)) {
    ASSERT_EQ(Cast<bfloat16>(d).bits, RoundRef(d, fmt)) << std::hexfloat << d;
  }
  EXPECT_EQ(Cast<bfloat16>(1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -40)).bits, 0x3f81);
  EXPECT_TRUE(IsBFloat16NaN(Cast<bfloat16>(std::numeric_limits<double>::quiet_NaN()).bits));
}

TEST(Cast, NarrowIntegersToHalfTypesExhaustive) {
  const Format& h = HalfFormat();
  const Format& b = BFloat16Format();
  for (int32_t v = -32768; v <= 32767; ++v) {
    ASSERT_EQ(Cast<float16>(static_cast<int16_t>(v)).bits, RoundRef(v, h)) << v;
    ASSERT_EQ(Cast<bfloat16>(static_cast<int16_t>(v)).bits, RoundRef(v, b)) << v;
  }
  for (int32_t v = 0; v <= 65535; ++v) {
    ASSERT_EQ(Cast<float16>(static_cast<uint16_t>(v)).bits, RoundRef(v, h)) << v;
  }
}

TEST(Cast, Int32ToHalfTypesIsCorrectlyRounded) {
  std::mt19937 rng(5);
  const Format& h = HalfFormat();
  const Format& b = BFloat16Format();
  for (int i = 0; i < 200000; ++i) {
    int32_t v = static_cast<int32_t>(rng());
    if (i % 2) v >>= (rng() % 31);
    ASSERT_EQ(Cast<float16>(v).bits, RoundRef(v, h)) << v;
    ASSERT_EQ(Cast<bfloat16>(v).bits, RoundRef(v, b)) << v;
    ASSERT_EQ(Cast<bfloat16>(static_cast<uint32_t>(v)).bits, RoundRef(static_cast<uint32_t>(v), b))
        << static_cast<uint32_t>(v);
  }
}

// int64 values above 2^53 are not exact in double; converting through double first rounds
// twice. 2^62 + 2^54 + 1 lies just above the bfloat16 tie 2^62 + 2^54 and must round up, but
// double(x) == 2^62 + 2^54 exactly, which then ties to even (down). Reference values are
// computed with integer arithmetic only.
TEST(Cast, Int64ToBFloat16IsCorrectlyRounded) {
  const Format& b = BFloat16Format();
  const int64_t tie = (int64_t{1} << 62) + (int64_t{1} << 54);
  const double up = std::ldexp(1.0, 62) + std::ldexp(1.0, 55), down = std::ldexp(1.0, 62);
  EXPECT_EQ(Cast<bfloat16>(tie + 1).bits, RoundRef(up, b));
  EXPECT_EQ(Cast<bfloat16>(tie - 1).bits, RoundRef(down, b));
  EXPECT_EQ(Cast<bfloat16>(-(tie + 1)).bits, RoundRef(-up, b));
  const uint64_t utie = (uint64_t{1} << 63) + (uint64_t{1} << 55);
  EXPECT_EQ(Cast<bfloat16>(utie + 1).bits, RoundRef(std::ldexp(1.0, 63) + std::ldexp(1.0, 56), b));
}

// Rounds |v| to `bits` significant bits, nearest-even, in integer arithmetic only; the result is
// exact in double, so RoundRef of it gives the reference bits.
double RoundIntToBits(int64_t v, int bits) {
  bool neg = v < 0;
  uint64_t u = neg ? uint64_t(0) - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  int width = 0;
  while (width < 64 && (u >> width) != 0) ++width;
  int drop = width > bits ? width - bits : 0;
  if (drop > 0) {
    uint64_t kept = u >> drop, rem = u & ((uint64_t{1} << drop) - 1),
             half = uint64_t{1} << (drop - 1);
    if (rem > half || (rem == half && (kept & 1))) ++kept;
    return (neg ? -1.0 : 1.0) * std::ldexp(static_cast<double>(kept), drop);
  }
  return (neg ? -1.0 : 1.0) * static_cast<double>(u);
}

TEST(Cast, Int64ToHalfTypesRandomWideValues) {
  std::mt19937_64 rng(13);
  const Format& h = HalfFormat();
  const Format& b = BFloat16Format();
  for (int i = 0; i < 200000; ++i) {
    int64_t v = static_cast<int64_t>(rng()) >> (rng() % 12);  // mostly beyond 2^53
    if (i % 3 == 0) {  // exactly on or next to a bfloat16 tie
      int width = 62 - static_cast<int>(rng() % 10);
      int64_t tie = (int64_t{1} << width) + (int64_t{1} << (width - 8));
      v = tie + static_cast<int64_t>(rng() % 3) - 1;
    }
    ASSERT_EQ(Cast<bfloat16>(v).bits, RoundRef(RoundIntToBits(v, 8), b)) << v;
    ASSERT_EQ(Cast<float16>(v).bits, RoundRef(RoundIntToBits(v, 11), h)) << v;
  }
}

TEST(Cast, Int64ToHalfTypesAwayFromTies) {
  // Away from the double-rounding corner, wide integers convert correctly.
  std::mt19937_64 rng(11);
  const Format& h = HalfFormat();
  const Format& b = BFloat16Format();
  for (int i = 0; i < 100000; ++i) {
    int64_t v = static_cast<int64_t>(rng()) >> (rng() % 63);
    if (std::abs(static_cast<double>(v)) < 9007199254740992.0) {  // exact in double
      ASSERT_EQ(Cast<bfloat16>(v).bits, RoundRef(static_cast<double>(v), b)) << v;
      ASSERT_EQ(Cast<float16>(v).bits, RoundRef(static_cast<double>(v), h)) << v;
    }
  }
  EXPECT_EQ(Cast<float16>(int64_t{1} << 40).bits, 0x7c00);
  EXPECT_EQ(Cast<float16>(std::numeric_limits<int64_t>::min()).bits, 0xfc00);
}

TEST(Cast, DoubleToFloatRoundOdd) {
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> mant(1.0, 2.0);
  std::uniform_int_distribution<int> exp(-160, 130);
  for (int i = 0; i < 200000; ++i) {
    double d = std::ldexp(mant(rng), exp(rng)) * (rng() & 1 ? 1 : -1);
    float f = kernels::detail::DoubleToFloatRoundOdd(d);
    if (static_cast<double>(static_cast<float>(d)) == d) {
      ASSERT_EQ(static_cast<double>(f), d);
      continue;
    }
    // Inexact: the result is one of the two floats around d (truncation toward zero or away)
    // and has an odd last bit.
    ASSERT_EQ(FloatToBits(f) & 1u, 1u) << std::hexfloat << d;
    double fd = static_cast<double>(f);
    if (std::isinf(f)) FAIL() << "round-to-odd must not overflow: " << d;
    float other = std::nextafter(f, fd < d ? std::numeric_limits<float>::infinity()
                                           : -std::numeric_limits<float>::infinity());
    double od = static_cast<double>(other);
    ASSERT_TRUE((fd < d && d < od) || (od < d && d < fd))
        << std::hexfloat << d << " -> " << f << " / " << other;
  }
  EXPECT_EQ(kernels::detail::DoubleToFloatRoundOdd(1e300), std::numeric_limits<float>::max());
  EXPECT_EQ(kernels::detail::DoubleToFloatRoundOdd(-1e-300),
            -std::numeric_limits<float>::denorm_min());
  EXPECT_EQ(kernels::detail::DoubleToFloatRoundOdd(0.5), 0.5f);
}

TEST(Cast, NumPySemantics) {
  EXPECT_EQ(Cast<int32_t>(-2.7), -2);  // float -> int truncates
  EXPECT_EQ(Cast<int32_t>(2.7f), 2);
  EXPECT_EQ(Cast<int8_t>(float16(-3.5f)), -3);
  EXPECT_EQ(Cast<uint8_t>(bfloat16(200.0f)), 200);
  EXPECT_TRUE(Cast<bool>(0.1));
  EXPECT_FALSE(Cast<bool>(-0.0));
  EXPECT_TRUE(Cast<bool>(std::numeric_limits<double>::quiet_NaN()));
  EXPECT_FALSE(Cast<bool>(int64_t{0}));
  EXPECT_TRUE(Cast<bool>(float16(1.0f)));
  EXPECT_FALSE(Cast<bool>(bfloat16(0.0f)));
  EXPECT_TRUE(Cast<bool>(complex64(0.0f, 1.0f)));  // nonzero imaginary part
  EXPECT_FALSE(Cast<bool>(complex128(0.0, 0.0)));
  EXPECT_EQ(Cast<double>(true), 1.0);
  EXPECT_EQ(Cast<float16>(true).bits, 0x3c00);
  // complex -> real keeps the real part
  EXPECT_EQ(Cast<double>(complex128(2.5, -7.0)), 2.5);
  EXPECT_EQ(Cast<int16_t>(complex64(-9.75f, 3.0f)), -9);
  EXPECT_EQ(Cast<float16>(complex128(70000.0, 1.0)).bits, 0x7c00);
  // real -> complex has zero imaginary part; complex -> complex converts both parts
  complex64 c = Cast<complex64>(1.5);
  EXPECT_EQ(c.re, 1.5f);
  EXPECT_EQ(c.im, 0.0f);
  complex64 h = Cast<complex64>(float16(0.25f));
  EXPECT_EQ(h.re, 0.25f);
  complex64 n = Cast<complex64>(complex128(0.1, -0.2));
  EXPECT_EQ(n.re, 0.1f);
  EXPECT_EQ(n.im, -0.2f);
  // float16 <-> bfloat16 goes through float (exact here: 1 + 2^-7 is representable in both)
  EXPECT_EQ(Cast<bfloat16>(float16(1.0078125f)).bits, 0x3f81);
  EXPECT_EQ(Cast<float16>(bfloat16(1.0078125f)).bits, 0x3c08);
}

// ---- integer arithmetic wraps (two's complement), as in NumPy ----

template <typename T>
T Wrap(__int128 v) {
  constexpr int bits = 8 * sizeof(T);
  const __int128 mod = static_cast<__int128>(1) << bits;
  __int128 r = v % mod;
  if (r < 0) r += mod;
  if (std::is_signed_v<T> && r >= mod / 2) r -= mod;
  return static_cast<T>(r);
}

template <typename T>
void CheckIntegerOps(T a, T b) {
  if constexpr (std::is_same_v<T, uint64_t>) {
    // Unsigned 64-bit arithmetic is itself defined modulo 2^64.
    ASSERT_EQ(AddOp::Apply<T>(a, b), a + b);
    ASSERT_EQ(SubOp::Apply<T>(a, b), a - b);
    ASSERT_EQ(MulOp::Apply<T>(a, b), a * b);
  } else {
    __int128 x = a, y = b;  // exact: at most 2^126 in magnitude
    ASSERT_EQ(AddOp::Apply<T>(a, b), Wrap<T>(x + y)) << +a << " + " << +b;
    ASSERT_EQ(SubOp::Apply<T>(a, b), Wrap<T>(x - y)) << +a << " - " << +b;
    ASSERT_EQ(MulOp::Apply<T>(a, b), Wrap<T>(x * y)) << +a << " * " << +b;
  }
}

TEST(IntegerOps, Int8Exhaustive) {
  for (int a = -128; a < 128; ++a) {
    for (int b = -128; b < 128; ++b) {
      CheckIntegerOps<int8_t>(static_cast<int8_t>(a), static_cast<int8_t>(b));
    }
  }
  EXPECT_EQ(AddOp::Apply<int8_t>(127, 1), -128);
  EXPECT_EQ(MulOp::Apply<int8_t>(-128, -1), -128);
}

TEST(IntegerOps, UInt16) {
  std::mt19937 rng(1);
  for (int i = 0; i < 500000; ++i) {
    CheckIntegerOps<uint16_t>(static_cast<uint16_t>(rng()), static_cast<uint16_t>(rng()));
  }
  for (uint32_t a : {0u, 1u, 255u, 256u, 32767u, 32768u, 65535u}) {
    for (uint32_t b : {0u, 1u, 2u, 255u, 32768u, 65535u}) {
      CheckIntegerOps<uint16_t>(static_cast<uint16_t>(a), static_cast<uint16_t>(b));
    }
  }
  // 65535 * 65535 overflows int: the op must not compute it in (signed) int.
  EXPECT_EQ(MulOp::Apply<uint16_t>(65535, 65535), 1);
  EXPECT_EQ(AddOp::Apply<uint16_t>(65535, 2), 1);
  EXPECT_EQ(SubOp::Apply<uint16_t>(0, 1), 65535);
}

TEST(IntegerOps, Int64) {
  std::mt19937_64 rng(2);
  for (int i = 0; i < 500000; ++i) {
    int64_t a = static_cast<int64_t>(rng()) >> (rng() % 64);
    int64_t b = static_cast<int64_t>(rng()) >> (rng() % 64);
    CheckIntegerOps<int64_t>(a, b);
  }
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  for (int64_t a : {kMin, kMin + 1, int64_t{-1}, int64_t{0}, int64_t{1}, kMax - 1, kMax}) {
    for (int64_t b : {kMin, int64_t{-1}, int64_t{0}, int64_t{1}, int64_t{2}, kMax}) {
      CheckIntegerOps<int64_t>(a, b);
    }
  }
  EXPECT_EQ(AddOp::Apply<int64_t>(kMax, 1), kMin);
  EXPECT_EQ(MulOp::Apply<int64_t>(kMin, -1), kMin);
}

TEST(IntegerOps, OtherWidths) {
  std::mt19937_64 rng(4);
  for (int i = 0; i < 100000; ++i) {
    CheckIntegerOps<uint8_t>(static_cast<uint8_t>(rng()), static_cast<uint8_t>(rng()));
    CheckIntegerOps<int16_t>(static_cast<int16_t>(rng()), static_cast<int16_t>(rng()));
    CheckIntegerOps<int32_t>(static_cast<int32_t>(rng()), static_cast<int32_t>(rng()));
    CheckIntegerOps<uint32_t>(static_cast<uint32_t>(rng()), static_cast<uint32_t>(rng()));
    CheckIntegerOps<uint64_t>(rng(), rng());
  }
}

TEST(BoolOps, LogicalSemantics) {
  for (bool a : {false, true}) {
    for (bool b : {false, true}) {
      EXPECT_EQ(AddOp::Apply<bool>(a, b), a || b);
      EXPECT_EQ(MulOp::Apply<bool>(a, b), a && b);
    }
  }
}

// ---- 16-bit float arithmetic is correctly rounded (computed in float, rounded once) ----

template <typename H>
void CheckHalfArithmetic(const Format& fmt, uint32_t seed, int min_exp, int max_exp) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> mant(1.0, 2.0);
  std::uniform_int_distribution<int> exp(min_exp, max_exp);
  auto random_value = [&] {
    double v = std::ldexp(mant(rng), exp(rng)) * (rng() & 1 ? 1 : -1);
    return H(static_cast<float>(v));
  };
  for (int i = 0; i < 200000; ++i) {
    H a = random_value(), b = random_value();
    double x = static_cast<float>(a), y = static_cast<float>(b);
    ASSERT_EQ(AddOp::Apply<H>(a, b).bits, RoundRef(x + y, fmt)) << x << " + " << y;
    ASSERT_EQ(SubOp::Apply<H>(a, b).bits, RoundRef(x - y, fmt)) << x << " - " << y;
    ASSERT_EQ(MulOp::Apply<H>(a, b).bits, RoundRef(x * y, fmt)) << x << " * " << y;
    ASSERT_EQ(DivOp::Apply<H>(a, b).bits, RoundRef(x / y, fmt)) << x << " / " << y;
  }
}

TEST(HalfOps, Float16ArithmeticIsCorrectlyRounded) {
  CheckHalfArithmetic<float16>(HalfFormat(), 21, -14, 15);
  EXPECT_EQ(AddOp::Apply(float16(65504.0f), float16(32.0f)).bits, 0x7c00);  // overflow to inf
  EXPECT_EQ(AddOp::Apply(float16(65504.0f), float16(8.0f)).bits, 0x7bff);
}

TEST(HalfOps, BFloat16ArithmeticIsCorrectlyRounded) {
  CheckHalfArithmetic<bfloat16>(BFloat16Format(), 22, -60, 60);
}

// ---- complex arithmetic ----

TEST(ComplexOps, MatchStdComplex) {
  std::mt19937_64 rng(6);
  std::uniform_real_distribution<double> dist(-10.0, 10.0);
  for (int i = 0; i < 100000; ++i) {
    std::complex<double> x(dist(rng), dist(rng)), y(dist(rng), dist(rng));
    if (i % 3 == 0) y = std::complex<double>(y.real() * 1e-3, y.imag());  // |re| < |im| branch
    complex128 a(x.real(), x.imag()), b(y.real(), y.imag());
    auto check = [&](complex128 got, std::complex<double> want, const char* op) {
      double tol = 1e-13 * std::max(1.0, std::abs(want));
      ASSERT_NEAR(got.re, want.real(), tol) << op;
      ASSERT_NEAR(got.im, want.imag(), tol) << op;
    };
    check(AddOp::Apply(a, b), x + y, "+");
    check(SubOp::Apply(a, b), x - y, "-");
    check(MulOp::Apply(a, b), x * y, "*");
    check(DivOp::Apply(a, b), x / y, "/");
  }
  // Smith's algorithm avoids overflowing |b|^2.
  complex128 big = DivOp::Apply(complex128(1e300, 1e300), complex128(1e300, 1e300));
  EXPECT_NEAR(big.re, 1.0, 1e-15);
  EXPECT_NEAR(big.im, 0.0, 1e-15);
}

}  // namespace
}  // namespace pygpukit

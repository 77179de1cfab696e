// The 8-bit float storage types (core/scalar_types.h): decoding against the formats' definition,
// rounding to nearest even with ties, subnormals, overflow (ml_dtypes' rules and the saturating
// form) and NaN / infinity handling.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include "core/scalar_types.h"

namespace pygpukit {
namespace {

// The value of a code from the definition: (-1)^s 2^(e - bias) (1 + m / 2^man), subnormal below.
double Decode(uint8_t b, int exp_bits, int man_bits) {
  const int bias = (1 << (exp_bits - 1)) - 1;
  const int e = (b >> man_bits) & ((1 << exp_bits) - 1);
  const int m = b & ((1 << man_bits) - 1);
  const double mag = e == 0 ? std::ldexp(m, 1 - bias - man_bits)
                            : std::ldexp((1 << man_bits) + m, e - bias - man_bits);
  return (b & 0x80) ? -mag : mag;
}

TEST(Float8, E4M3FnDecodesEveryCode) {
  for (int i = 0; i < 256; ++i) {
    const float v = static_cast<float>(float8_e4m3fn::FromBits(static_cast<uint8_t>(i)));
    if ((i & 0x7f) == 0x7f) {
      EXPECT_TRUE(std::isnan(v)) << i;  // the only NaN patterns; no infinity
      continue;
    }
    EXPECT_EQ(v, Decode(static_cast<uint8_t>(i), 4, 3)) << i;
    EXPECT_EQ(std::signbit(v), (i & 0x80) != 0) << i;
  }
  EXPECT_EQ(static_cast<float>(float8_e4m3fn::FromBits(0x7e)), 448.0f);
  EXPECT_EQ(static_cast<float>(float8_e4m3fn::FromBits(0x01)), std::ldexp(1.0f, -9));
}

TEST(Float8, E5M2DecodesEveryCode) {
  for (int i = 0; i < 256; ++i) {
    const float v = static_cast<float>(float8_e5m2::FromBits(static_cast<uint8_t>(i)));
    const int mag = i & 0x7f;
    if (mag > 0x7c) {
      EXPECT_TRUE(std::isnan(v)) << i;
    } else if (mag == 0x7c) {
      EXPECT_EQ(v, (i & 0x80) ? -INFINITY : INFINITY);
    } else {
      EXPECT_EQ(v, Decode(static_cast<uint8_t>(i), 5, 2)) << i;
    }
  }
  EXPECT_EQ(static_cast<float>(float8_e5m2::FromBits(0x7b)), 57344.0f);
}

// Every finite code converts back to itself; every midpoint between neighbours rounds to the
// one with the even code, and anything strictly between goes to the nearer.
template <typename T>
void CheckRounding(int max_code) {
  for (int c = 0; c < max_code; ++c) {
    for (int sign : {0, 0x80}) {
      const uint8_t lo = static_cast<uint8_t>(c | sign), hi = static_cast<uint8_t>((c + 1) | sign);
      const float a = static_cast<float>(T::FromBits(lo)), b = static_cast<float>(T::FromBits(hi));
      EXPECT_EQ(T(a).bits, lo) << c;
      const float mid = 0.5f * (a + b);  // exact: both have few bits
      EXPECT_EQ(T(mid).bits, (c & 1) == 0 ? lo : hi) << "midpoint after code " << c;
      EXPECT_EQ(T(std::nextafter(mid, a)).bits, lo) << c;
      EXPECT_EQ(T(std::nextafter(mid, b)).bits, hi) << c;
    }
  }
}

TEST(Float8, RoundsToNearestEven) {
  CheckRounding<float8_e4m3fn>(0x7e);
  CheckRounding<float8_e5m2>(0x7b);
}

TEST(Float8, OverflowInfinityAndNan) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // e4m3fn has no infinity: beyond 448 (from the midpoint to the next step, 480, on) is NaN,
  // as ml_dtypes converts; the saturating form clamps to +-448 and keeps NaN.
  EXPECT_EQ(float8_e4m3fn(464.0f).bits, 0x7e);  // the midpoint rounds to even 448
  EXPECT_EQ(float8_e4m3fn(465.0f).bits, 0x7f);
  EXPECT_EQ(float8_e4m3fn(-1e9f).bits, 0xff);
  EXPECT_EQ(float8_e4m3fn(inf).bits, 0x7f);
  EXPECT_EQ(float8_e4m3fn::FromFloat(1e9f, true).bits, 0x7e);
  EXPECT_EQ(float8_e4m3fn::FromFloat(-inf, true).bits, 0xfe);
  EXPECT_EQ(float8_e4m3fn::FromFloat(nan, true).bits & 0x7f, 0x7f);
  // e5m2 overflows to infinity; saturating: +-57344.
  EXPECT_EQ(float8_e5m2(61440.0f).bits, 0x7c);  // midpoint of 57344 and 65536: even is inf
  EXPECT_EQ(float8_e5m2(60000.0f).bits, 0x7b);
  EXPECT_EQ(float8_e5m2(-inf).bits, 0xfc);
  EXPECT_EQ(float8_e5m2::FromFloat(inf, true).bits, 0x7b);
  EXPECT_TRUE(std::isnan(static_cast<float>(float8_e5m2(nan))));
  EXPECT_TRUE(std::isnan(static_cast<float>(float8_e5m2::FromFloat(nan, true))));
  // Signed zeros and underflow.
  EXPECT_EQ(float8_e4m3fn(-0.0f).bits, 0x80);
  EXPECT_EQ(float8_e4m3fn(std::ldexp(1.0f, -11)).bits, 0x00);  // below half the least step
  EXPECT_EQ(float8_e4m3fn(std::ldexp(1.5f, -10)).bits, 0x01);  // above half: rounds up
  EXPECT_EQ(float8_e5m2(-std::ldexp(1.0f, -18)).bits, 0x80);
}

}  // namespace
}  // namespace pygpukit

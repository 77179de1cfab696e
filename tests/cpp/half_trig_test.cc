// sin / cos of float16 and bfloat16 (ops/kernels/math_ops.h, detail::HalfSinCos): every
// 16-bit value against float64's sin / cos rounded to the format. The kernels of both
// backends compile this code, so these checks hold for the CUDA results bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>

#include "core/scalar_types.h"
#include "ops/kernels/math_ops.h"

namespace pygpukit {
namespace {

// Position of a 16-bit float pattern on the number line (sign-magnitude to two's complement),
// so that adjacent values differ by 1 and -0 sits on +0.
int32_t Ordinal(uint16_t bits) {
  const int32_t magnitude = bits & 0x7fff;
  return (bits & 0x8000) != 0 ? -magnitude : magnitude;
}

struct Tally {
  int finite = 0;
  int exact = 0;
  int max_ulps = 0;
};

template <typename H, typename Op>
Tally Sweep(double (*reference)(double)) {
  Tally t;
  for (uint32_t b = 0; b <= 0xffff; ++b) {
    H h;
    h.bits = static_cast<uint16_t>(b);
    const float x = static_cast<float>(h);
    const H got = Op::Apply(h);
    if (!std::isfinite(x)) {
      EXPECT_TRUE(std::isnan(static_cast<float>(got))) << "bits " << b;
      continue;
    }
    ++t.finite;
    // float64's value rounded to float, then to the 16-bit format.
    const H want(static_cast<float>(reference(static_cast<double>(x))));
    const int ulps = std::abs(Ordinal(got.bits) - Ordinal(want.bits));
    if (ulps == 0) ++t.exact;
    if (ulps > t.max_ulps) t.max_ulps = ulps;
    EXPECT_LE(ulps, 1) << "x = " << x << " got " << static_cast<float>(got) << " want "
                       << static_cast<float>(want);
  }
  return t;
}

double Sin(double x) { return std::sin(x); }
double Cos(double x) { return std::cos(x); }

template <typename H>
void CheckAll() {
  for (int which = 0; which < 2; ++which) {
    const Tally t = which == 0 ? Sweep<H, kernels::SinOp>(Sin) : Sweep<H, kernels::CosOp>(Cos);
    // Every value correctly rounded (float64's value rounded to float, then to the format).
    EXPECT_EQ(t.exact, t.finite) << (which == 0 ? "sin" : "cos") << ", max " << t.max_ulps
                                 << " ulp";
  }
}

TEST(HalfTrig, EveryBFloat16Value) { CheckAll<bfloat16>(); }
TEST(HalfTrig, EveryFloat16Value) { CheckAll<float16>(); }

TEST(HalfTrig, SignedZeroAndSpecials) {
  using kernels::CosOp;
  using kernels::SinOp;
  EXPECT_TRUE(std::signbit(static_cast<float>(SinOp::Apply(bfloat16(-0.0f)))));
  EXPECT_FALSE(std::signbit(static_cast<float>(SinOp::Apply(bfloat16(0.0f)))));
  EXPECT_EQ(static_cast<float>(CosOp::Apply(float16(-0.0f))), 1.0f);
  EXPECT_TRUE(std::isnan(static_cast<float>(SinOp::Apply(bfloat16(INFINITY)))));
  EXPECT_TRUE(std::isnan(static_cast<float>(CosOp::Apply(float16(-INFINITY)))));
  EXPECT_TRUE(std::isnan(static_cast<float>(SinOp::Apply(bfloat16(NAN)))));
  // Odd and even symmetry hold exactly.
  for (float x : {0.5f, 1.0f, 3.0f, 100.0f, 1.0e4f, 3.0e5f}) {
    EXPECT_EQ(SinOp::Apply(bfloat16(-x)).bits, SinOp::Apply(bfloat16(x)).bits ^ 0x8000) << x;
    EXPECT_EQ(CosOp::Apply(bfloat16(-x)).bits, CosOp::Apply(bfloat16(x)).bits) << x;
  }
}

}  // namespace
}  // namespace pygpukit

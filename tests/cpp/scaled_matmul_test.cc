// ops::ScaledMatmul from C++: 8-bit float operands with per-row / per-column and 1x128 / 128x128
// block scales against a float64 product of the dequantized operands (on the default device: the
// CPU in this suite), and the errors that name the op and the shapes.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "test_util.h"

namespace pygpukit {
namespace {

using testing::FromVector;
using testing::RandomDoubles;
using testing::ToVector;

// x as `dt` (rounded there) and its values back as doubles.
absl::StatusOr<std::pair<GPUArray, std::vector<double>>> Quantized(const std::vector<double>& x,
                                                                   Shape shape, DType dt) {
  PGK_ASSIGN_OR_RETURN(GPUArray d, FromVector(x, shape));
  PGK_ASSIGN_OR_RETURN(GPUArray q, ops::AsType(d, dt));
  PGK_ASSIGN_OR_RETURN(GPUArray back, ops::AsType(q, DType::Float64));
  PGK_ASSIGN_OR_RETURN(std::vector<double> v, ToVector<double>(back));
  return std::make_pair(q, v);
}

TEST(ScaledMatmul, BlockAndRowScalesMatchTheDequantizedProduct) {
  const int64_t m = 5, k = 300, n = 6, kb = 3;  // K blocks: 128, 128, 44
  ASSERT_OK_AND_ASSIGN(auto qa,
                       Quantized(RandomDoubles(m * k, 1, -8, 8), {m, k}, DType::Float8E4M3Fn));
  ASSERT_OK_AND_ASSIGN(auto qb,
                       Quantized(RandomDoubles(k * n, 2, -8, 8), {k, n}, DType::Float8E5M2));
  const std::vector<double> sa = RandomDoubles(m * kb, 3, 0.5, 2.0);  // 1x128 groups of a
  const std::vector<double> sb = RandomDoubles(n, 4, 0.5, 2.0);       // per column of b
  ASSERT_OK_AND_ASSIGN(GPUArray SA64, FromVector(sa, {m, kb}));
  ASSERT_OK_AND_ASSIGN(GPUArray SB64, FromVector(sb, {1, n}));
  ASSERT_OK_AND_ASSIGN(GPUArray SA, ops::AsType(SA64, DType::Float32));
  ASSERT_OK_AND_ASSIGN(GPUArray SB, ops::AsType(SB64, DType::Float32));
  ASSERT_OK_AND_ASSIGN(auto sa32, ToVector<float>(SA));
  ASSERT_OK_AND_ASSIGN(auto sb32, ToVector<float>(SB));
  ops::ScaledMatmulOptions o;
  o.out_dtype = DType::Float32;
  ASSERT_OK_AND_ASSIGN(GPUArray D, ops::ScaledMatmul(qa.first, qb.first, SA, SB, o));
  ASSERT_EQ(D.shape(), (Shape{m, n}));
  ASSERT_EQ(D.dtype(), DType::Float32);
  ASSERT_OK_AND_ASSIGN(auto got, ToVector<float>(D));
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double want = 0, mag = 0;
      for (int64_t q = 0; q < k; ++q) {
        const double t =
            qa.second[i * k + q] * sa32[i * kb + q / 128] * qb.second[q * n + j] * sb32[j];
        want += t;
        mag += std::fabs(t);
      }
      // float32 dequantization and accumulation: (k + 4) roundings of at most 2^-24 of |terms|.
      EXPECT_NEAR(got[i * n + j], want, (k + 4) * std::ldexp(1.0, -24) * mag) << i << ", " << j;
    }
  }
}

TEST(ScaledMatmul, ScaleShapesThatFitNoRecipeAreValueErrors) {
  ASSERT_OK_AND_ASSIGN(GPUArray a64, FromVector(RandomDoubles(4 * 256, 5), {4, 256}));
  ASSERT_OK_AND_ASSIGN(GPUArray b64, FromVector(RandomDoubles(256 * 8, 6), {256, 8}));
  ASSERT_OK_AND_ASSIGN(GPUArray a, ops::AsType(a64, DType::Float8E4M3Fn));
  ASSERT_OK_AND_ASSIGN(GPUArray b, ops::AsType(b64, DType::Float8E4M3Fn));
  ASSERT_OK_AND_ASSIGN(GPUArray one, ops::Full({}, Scalar::Float(1.0), DType::Float32, a.device()));
  ASSERT_OK_AND_ASSIGN(GPUArray bad,
                       ops::Full({3, 3}, Scalar::Float(1.0), DType::Float32, a.device()));
  absl::StatusOr<GPUArray> r = ops::ScaledMatmul(a, b, bad, one);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(r.status())) << r.status();
  EXPECT_NE(r.status().message().find("scaled_matmul: scale_a of shape (3, 3) does not fit a of "
                                      "shape (4, 256)"),
            std::string::npos)
      << r.status();
  r = ops::ScaledMatmul(a64, b, one, one);  // float64 operand
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("float8_e4m3fn or float8_e5m2, got float64"),
            std::string::npos)
      << r.status();
}

}  // namespace
}  // namespace pygpukit

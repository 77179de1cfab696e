// The nn family's C++ API (ops/nn/nn.h) on the test device: softmax and the norms against
// float64 references on random rows, the fused residual, and the statuses of bad input.
#include "ops/nn/nn.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "test_util.h"

namespace pygpukit {
namespace {

using testing::FromVector;
using testing::RandomDoubles;
using testing::ToVector;

constexpr int64_t kRows = 5, kCols = 1000;

std::vector<float> Floats(const std::vector<double>& v) { return {v.begin(), v.end()}; }

TEST(Nn, SoftmaxRowsSumToOneAndMatchAFloat64Reference) {
  const std::vector<double> x = RandomDoubles(kRows * kCols, 7, -4.0, 4.0);
  ASSERT_OK_AND_ASSIGN(GPUArray a, FromVector(x, {kRows, kCols}));
  for (bool log : {false, true}) {
    ASSERT_OK_AND_ASSIGN(GPUArray y, ops::Softmax(a, -1, log));
    ASSERT_OK_AND_ASSIGN(std::vector<double> got, ToVector<double>(y));
    for (int64_t r = 0; r < kRows; ++r) {
      double m = -INFINITY, s = 0.0;
      for (int64_t c = 0; c < kCols; ++c) m = std::max(m, x[r * kCols + c]);
      for (int64_t c = 0; c < kCols; ++c) s += std::exp(x[r * kCols + c] - m);
      for (int64_t c = 0; c < kCols; ++c) {
        const double d = x[r * kCols + c] - m;
        const double want = log ? d - std::log(s) : std::exp(d) / s;
        EXPECT_NEAR(got[r * kCols + c], want, 1e-12 * (std::abs(want) + 1.0));
      }
    }
  }
}

TEST(Nn, RmsNormWithResidualReturnsTheSumItNormalized) {
  const std::vector<float> x = Floats(RandomDoubles(kRows * kCols, 8));
  const std::vector<float> res = Floats(RandomDoubles(kRows * kCols, 9));
  const std::vector<float> w = Floats(RandomDoubles(kCols, 10, 0.5, 1.5));
  ASSERT_OK_AND_ASSIGN(GPUArray a, FromVector(x, {kRows, kCols}));
  ASSERT_OK_AND_ASSIGN(GPUArray r, FromVector(res, {kRows, kCols}));
  ASSERT_OK_AND_ASSIGN(GPUArray wa, FromVector(w, {kCols}));
  const int64_t ns[] = {kCols};
  ASSERT_OK_AND_ASSIGN(ops::NormResult out, ops::RmsNorm(a, ns, &wa, 1e-6, &r));
  ASSERT_TRUE(out.residual.has_value());
  ASSERT_OK_AND_ASSIGN(std::vector<float> h, ToVector<float>(*out.residual));
  ASSERT_OK_AND_ASSIGN(std::vector<float> y, ToVector<float>(out.y));
  for (int64_t i = 0; i < kRows; ++i) {
    double ss = 0.0;
    for (int64_t c = 0; c < kCols; ++c) {
      const float sum = x[i * kCols + c] + res[i * kCols + c];
      EXPECT_EQ(h[i * kCols + c], sum);
      ss += double{sum} * sum;
    }
    const double rstd = 1.0 / std::sqrt(ss / kCols + 1e-6);
    for (int64_t c = 0; c < kCols; ++c) {
      const double want = double{h[i * kCols + c]} * rstd * w[c];
      EXPECT_NEAR(y[i * kCols + c], want, 1e-5 * (std::abs(want) + 1.0));
    }
  }
}

TEST(Nn, BadInputIsAStatusNamingTheOpAndShapes) {
  ASSERT_OK_AND_ASSIGN(GPUArray a, FromVector(std::vector<float>(24, 1.0f), {2, 3, 4}));
  const int64_t wrong[] = {3};
  absl::StatusOr<ops::NormResult> r = ops::LayerNorm(a, wrong, nullptr, nullptr, 1e-5);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("layer_norm: normalized_shape (3,)"), absl::string_view::npos)
      << r.status();
  ASSERT_OK_AND_ASSIGN(GPUArray i, FromVector(std::vector<int32_t>(4, 1), {4}));
  absl::StatusOr<GPUArray> s = ops::Softmax(i, 0, false);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("softmax: unsupported dtype int32"), absl::string_view::npos)
      << s.status();
}

}  // namespace
}  // namespace pygpukit

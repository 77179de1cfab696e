// ops::GroupedMatmul from C++ (the mixture-of-experts product): each group's rows against its
// own matrix, checked against a float64 loop on random data, with empty groups; bad offsets are
// ValueErrors naming the op.
#include <gtest/gtest.h>

#include <vector>

#include "absl/strings/str_cat.h"
#include "test_util.h"

namespace pygpukit {
namespace {

using testing::FromVector;
using testing::RandomDoubles;
using testing::ToVector;

TEST(GroupedMatmul, EachGroupTimesItsOwnMatrix) {
  const std::vector<int64_t> sizes = {3, 0, 17, 1, 9};
  const int64_t groups = 5, k = 13, n = 7;
  std::vector<int64_t> offsets;
  int64_t m = 0;
  for (int64_t s : sizes) offsets.push_back(m += s);
  std::vector<double> a = RandomDoubles(m * k, 30), b = RandomDoubles(groups * k * n, 31);
  ASSERT_OK_AND_ASSIGN(GPUArray A, FromVector(a, {m, k}));
  ASSERT_OK_AND_ASSIGN(GPUArray B, FromVector(b, {groups, k, n}));
  ASSERT_OK_AND_ASSIGN(GPUArray C, ops::GroupedMatmul(A, B, offsets));
  ASSERT_EQ(C.shape(), (Shape{m, n}));
  ASSERT_OK_AND_ASSIGN(auto got, ToVector<double>(C));
  int64_t r0 = 0;
  for (int64_t g = 0; g < groups; ++g) {
    for (int64_t i = r0; i < offsets[g]; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double want = 0;
        for (int64_t q = 0; q < k; ++q) want += a[i * k + q] * b[(g * k + q) * n + j];
        ASSERT_NEAR(got[i * n + j], want, 1e-12 * k) << "group " << g << " row " << i;
      }
    }
    r0 = offsets[g];
  }
}

TEST(GroupedMatmul, BadOffsetsAreValueErrorsNamingTheOp) {
  ASSERT_OK_AND_ASSIGN(GPUArray A, FromVector(RandomDoubles(6 * 4, 1), {6, 4}));
  ASSERT_OK_AND_ASSIGN(GPUArray B, FromVector(RandomDoubles(2 * 4 * 3, 2), {2, 4, 3}));
  for (const std::vector<int64_t>& bad : {std::vector<int64_t>{6}, std::vector<int64_t>{4, 2},
                                          std::vector<int64_t>{2, 5}, std::vector<int64_t>{2, 7}}) {
    absl::StatusOr<GPUArray> r = ops::GroupedMatmul(A, B, bad);
    ASSERT_FALSE(r.ok());
    EXPECT_TRUE(absl::IsInvalidArgument(r.status())) << r.status();
    EXPECT_NE(r.status().message().find("grouped_matmul: "), std::string::npos) << r.status();
  }
}

}  // namespace
}  // namespace pygpukit

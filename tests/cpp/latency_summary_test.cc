// SummarizeLatencies: the nearest-rank figures the scheduler's stats and the C++ co-location
// benchmark report (benchmarks/scheduler.py computes the same).
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "runtime/sched/scheduler.h"

namespace pygpukit {
namespace {

TEST(SummarizeLatencies, NearestRankOfShuffledInput) {
  std::vector<int64_t> ns;
  for (int i = 1; i <= 200; ++i) ns.push_back(int64_t{1000} * i);  // 1 .. 200 us
  std::shuffle(ns.begin(), ns.end(), std::mt19937(7));
  const LatencySummary s = SummarizeLatencies(ns);
  EXPECT_EQ(s.count, 200);
  EXPECT_DOUBLE_EQ(s.p50, 100);  // rank ceil(0.5 * 200) = 100
  EXPECT_DOUBLE_EQ(s.p90, 180);
  EXPECT_DOUBLE_EQ(s.p99, 198);
  EXPECT_DOUBLE_EQ(s.max, 200);
  EXPECT_DOUBLE_EQ(s.mean, 100.5);
}

TEST(SummarizeLatencies, OddCountsTakeTheRankAboveNotAnInterpolation) {
  const LatencySummary s = SummarizeLatencies({3000, 1000, 2000});
  EXPECT_DOUBLE_EQ(s.p50, 2);  // rank ceil(1.5) = 2
  EXPECT_DOUBLE_EQ(s.p99, 3);  // rank ceil(2.97) = 3, not 2.98
  EXPECT_DOUBLE_EQ(s.mean, 2);
}

TEST(SummarizeLatencies, OneValueAndNone) {
  const LatencySummary one = SummarizeLatencies({5500});
  EXPECT_EQ(one.count, 1);
  EXPECT_DOUBLE_EQ(one.p50, 5.5);
  EXPECT_DOUBLE_EQ(one.p99, 5.5);
  EXPECT_DOUBLE_EQ(one.max, 5.5);
  const LatencySummary none = SummarizeLatencies({});
  EXPECT_EQ(none.count, 0);
  EXPECT_EQ(none.p50, 0);
  EXPECT_EQ(none.mean, 0);
}

}  // namespace
}  // namespace pygpukit

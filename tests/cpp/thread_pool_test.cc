// cpu::ParallelFor: every index is visited once, and an exception in any chunk reaches the
// caller only after all chunks have finished (the pool's tasks refer to the caller's frame).
#include "core/cpu/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

namespace pygpukit::cpu {
namespace {

TEST(ParallelFor, VisitsEveryIndexOnce) {
  for (int64_t n : {0, 1, 7, 1000, 100003}) {
    std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
    ParallelFor(n, 16, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) ++hits[static_cast<size_t>(i)];
    });
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[static_cast<size_t>(i)].load(), 1) << i;
  }
}

TEST(ParallelFor, ExceptionIsRethrownAfterAllChunksFinish) {
  if (NumThreads() < 2) GTEST_SKIP() << "one thread: no pool chunks";
  for (int trial = 0; trial < 20; ++trial) {
    std::atomic<int> finished{0};
    const int64_t n = 64;
    EXPECT_THROW(ParallelFor(n, 1,
                             [&](int64_t b, int64_t e) {
                               if (b == 0) throw std::runtime_error("first chunk fails");
                               std::this_thread::sleep_for(std::chrono::milliseconds(2));
                               finished += static_cast<int>(e - b);
                             }),
                 std::runtime_error);
    // Every other chunk ran to completion before the exception left ParallelFor.
    int64_t chunks = std::min<int64_t>(NumThreads(), n);
    int64_t per = (n + chunks - 1) / chunks;
    EXPECT_EQ(finished.load(), n - per);
  }
}

}  // namespace
}  // namespace pygpukit::cpu

// Profiles from trace records (runtime/trace/profile.h): per-kernel statistics on synthetic records
// (percentiles, rates, unknown values), the summary's sorting and its bad input, the Chrome
// trace's escaping and tracks, and a session over real work on the default device.
#include "runtime/trace/profile.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "runtime/sched/task_state.h"
#include "test_util.h"

namespace pygpukit {
namespace {

TraceRecord Launch(const std::string* name, double gpu_ms, int64_t flops = 0, int64_t bytes = 0,
                   int64_t begin_ns = 0) {
  TraceRecord r;
  r.kind = TraceKind::kKernel;
  r.name = name;
  r.gpu_ms = gpu_ms;
  r.flops = flops;
  r.bytes = bytes;
  r.begin_ns = begin_ns;
  r.end_ns = begin_ns + 1000;
  r.thread = 1;
  return r;
}

TEST(Profile, KernelTableStatisticsAndRates) {
  Tracer& t = Tracer::Get();
  const std::string* gemm = t.Intern("gemm");
  const std::string* add = t.Intern("add");
  std::vector<TraceRecord> rs;
  // gemm: 4 timed calls of 1, 2, 3, 4 ms, 1e9 FLOPs each; one untimed call.
  for (int i = 1; i <= 4; ++i) rs.push_back(Launch(gemm, i, 1'000'000'000, 0, i * 10));
  rs.push_back(Launch(gemm, -1, 1'000'000'000));
  rs.push_back(Launch(add, -1, 0, 4096));  // untimed only
  TraceRecord alloc;
  alloc.kind = TraceKind::kAlloc;
  alloc.bytes = 64;
  rs.push_back(alloc);
  const std::vector<KernelStats> table = KernelTable(rs);
  ASSERT_EQ(table.size(), 2u);
  const KernelStats& g = table[0];
  EXPECT_EQ(g.name, "gemm");
  EXPECT_EQ(g.calls, 5);
  EXPECT_EQ(g.timed, 4);
  EXPECT_DOUBLE_EQ(g.gpu_total_ms, 10);
  EXPECT_DOUBLE_EQ(g.gpu_mean_ms, 2.5);
  EXPECT_DOUBLE_EQ(g.gpu_p50_ms, 2.5);             // between ranks 1 and 2 of 0..3
  EXPECT_NEAR(g.gpu_p99_ms, 3 + 0.97, 1e-12);      // pos 2.97
  EXPECT_DOUBLE_EQ(g.host_total_ms, 5 * 1e-3);     // 1000 ns each
  EXPECT_EQ(g.flops, 5'000'000'000);               // all calls
  EXPECT_DOUBLE_EQ(g.tflops, 4e9 / 10e-3 / 1e12);  // timed calls over their time
  EXPECT_TRUE(std::isnan(g.gbps));                 // no bytes declared
  const KernelStats& a = table[1];
  EXPECT_EQ(a.name, "add");
  EXPECT_EQ(a.timed, 0);
  EXPECT_TRUE(std::isnan(a.gpu_total_ms) && std::isnan(a.gpu_p99_ms) && std::isnan(a.gbps));
  EXPECT_EQ(a.bytes, 4096);
}

TEST(Profile, SummarySortsLargestFirstUnknownLastAndRejectsBadFields) {
  Tracer& t = Tracer::Get();
  std::vector<TraceRecord> rs = {Launch(t.Intern("slow"), 5), Launch(t.Intern("untimed"), -1),
                                 Launch(t.Intern("fast"), 1), Launch(t.Intern("fast"), 1)};
  ASSERT_OK_AND_ASSIGN(std::string text, SummaryText(rs, "gpu_total_ms"));
  const size_t slow = text.find("\nslow"), fast = text.find("\nfast"),
               untimed = text.find("\nuntimed");
  ASSERT_NE(slow, std::string::npos);
  EXPECT_LT(slow, fast);
  EXPECT_LT(fast, untimed);
  ASSERT_OK_AND_ASSIGN(text, SummaryText(rs, "calls"));
  EXPECT_LT(text.find("\nfast"), text.find("\nslow"));
  EXPECT_NE(text.find("0 allocations, 4 records"), std::string::npos);
  absl::StatusOr<std::string> bad = SummaryText(rs, "nope");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(ErrorTypeOf(bad.status()), ErrorType::kValue);
  EXPECT_NE(bad.status().message().find("gpu_p99_ms"), absl::string_view::npos);
}

TEST(Profile, ChromeTraceEscapesNamesAndLaysOutTracks) {
  Tracer& t = Tracer::Get();
  std::vector<TraceRecord> rs = {Launch(t.Intern("a\"b\\c\nd\x01"), 2, 0, 0, 1000),
                                 Launch(t.Intern("k2"), 1, 0, 0, 1500)};
  TraceRecord task;
  task.kind = TraceKind::kTask;
  task.name = t.Intern("tenant");
  task.task = 7;
  task.from = static_cast<uint8_t>(TaskState::kRunning);
  task.to = static_cast<uint8_t>(TaskState::kCompleted);
  task.thread = 2;
  rs.push_back(task);
  const std::string json = ChromeTraceJson(rs);
  EXPECT_NE(json.find(R"("a\"b\\c\nd\u0001")"), std::string::npos) << json;
  EXPECT_NE(json.find(R"("tenant task 7: completed")"), std::string::npos);
  EXPECT_NE(json.find(R"("from":"running","to":"completed")"), std::string::npos);
  // The second launch's device span starts when the first one's ends (2 ms after 1 us).
  EXPECT_NE(json.find(R"("name":"k2","cat":"gpu","ph":"X","ts":2001.000)"), std::string::npos)
      << json;
  EXPECT_NE(json.find(R"("name":"thread_name","ph":"M","pid":0,"tid":2)"), std::string::npos);
  EXPECT_EQ(json.front(), '{');
  EXPECT_EQ(json.substr(json.size() - 25), R"(],"displayTimeUnit":"ms"})");
}

TEST(Profile, SessionCollectsItsWorkOnce) {
  const Device dev = Runtime::Get().default_device();
  ProfileSession session;
  ASSERT_OK_AND_ASSIGN(GPUArray a, ops::Ones({256}, DType::Float32, dev));
  ASSERT_OK_AND_ASSIGN(GPUArray s, ops::Reduce(ops::ReduceOp::kSum, a));
  ASSERT_OK_AND_ASSIGN(std::vector<TraceRecord> records, session.Stop());
  const std::vector<KernelStats> table = KernelTable(records);
  ASSERT_FALSE(table.empty());
  int64_t timed = 0;
  for (const KernelStats& k : table) timed += k.timed;
  EXPECT_GT(timed, 0);
  EXPECT_FALSE(MemoryTimeline(records).empty());
  absl::StatusOr<std::vector<TraceRecord>> again = session.Stop();
  EXPECT_FALSE(again.ok());
  EXPECT_EQ(ErrorTypeOf(again.status()), ErrorType::kRuntime);
}

}  // namespace
}  // namespace pygpukit

// The process runtime: device discovery, the default device, and device errors.
#include "runtime/runtime.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "test_util.h"

namespace pygpukit {
namespace {

TEST(Runtime, DevicesListCudaFirstThenTheCpu) {
  Runtime& rt = Runtime::Get();
  std::vector<Device> devs = rt.devices();
  ASSERT_FALSE(devs.empty());
  EXPECT_EQ(devs.back(), (Device{DeviceType::kCPU, 0}));
  for (size_t i = 0; i + 1 < devs.size(); ++i) {
    EXPECT_EQ(devs[i], (Device{DeviceType::kCUDA, static_cast<int>(i)}));
  }
  for (Device d : devs) {
    EXPECT_OK(rt.CheckDevice(d));
    ASSERT_OK_AND_ASSIGN(hal::Stream * s, rt.stream(d));
    EXPECT_EQ(s->device(), d);
    EXPECT_OK(rt.pool(d));
    EXPECT_OK(rt.transfer(d));
    EXPECT_OK(rt.Synchronize(d));
  }
}

TEST(Runtime, DefaultDeviceFollowsAvailabilityAndTheEnvironment) {
  Runtime& rt = Runtime::Get();
  RuntimeInfo info = rt.info();
  const char* env = std::getenv("PYGPUKIT_DEVICE");
  std::string forced = env ? env : "";
  EXPECT_EQ(info.forced_device, forced);
  if (forced == "cpu") {
    EXPECT_TRUE(rt.default_device().is_cpu());
    EXPECT_FALSE(info.cuda_available);
  } else if (forced.rfind("cuda", 0) == 0) {
    EXPECT_TRUE(rt.default_device().is_cuda());
  } else {
    EXPECT_EQ(rt.default_device().is_cuda(), info.cuda_available);
  }
  EXPECT_EQ(info.cuda_available, rt.cuda_backend() != nullptr);
  EXPECT_EQ(info.cuda_status == "ok", info.cuda_available);
  EXPECT_FALSE(info.version.empty());
}

TEST(Runtime, UnavailableDevicesAreClearErrors) {
  Runtime& rt = Runtime::Get();
  absl::Status bad_cpu = rt.CheckDevice(Device{DeviceType::kCPU, 1});
  EXPECT_EQ(ErrorTypeOf(bad_cpu), ErrorType::kValue) << bad_cpu;
  absl::Status far = rt.CheckDevice(Device{DeviceType::kCUDA, 99});
  ASSERT_FALSE(far.ok());
  EXPECT_NE(far.message().find("cuda:99"), absl::string_view::npos) << far;
  if (!rt.info().cuda_available) {
    // With no GPU, asking for one says why, as a RuntimeError.
    absl::Status s = rt.CheckDevice(Device{DeviceType::kCUDA, 0});
    EXPECT_EQ(ErrorTypeOf(s), ErrorType::kRuntime) << s;
    EXPECT_NE(s.message().find("not available"), absl::string_view::npos) << s;
    auto a = ops::Zeros({2}, DType::Float32, Device{DeviceType::kCUDA, 0});
    EXPECT_EQ(ErrorTypeOf(a.status()), ErrorType::kRuntime) << a.status();
  }
}

TEST(Runtime, PropertiesOfTheTestDevice) {
  ASSERT_OK_AND_ASSIGN(hal::DeviceProperties p, Runtime::Get().properties(testing::TestDevice()));
  EXPECT_FALSE(p.name.empty());
  EXPECT_GT(p.total_memory, 0);
}

// Pooled streams come back for the same (priority, partition) request only.
TEST(Runtime, AcquiredStreamsArePooledByPriorityAndPartition) {
  Runtime& rt = Runtime::Get();
  const Device d = testing::TestDevice();
  ASSERT_OK_AND_ASSIGN(hal::DeviceProperties p, rt.properties(d));
  EXPECT_EQ(ErrorTypeOf(rt.AcquireStream(d, 0, -1).status()), ErrorType::kValue);
  EXPECT_EQ(ErrorTypeOf(rt.AcquireStream(d, 0, p.multiprocessors + 1).status()), ErrorType::kValue);
  if (p.multiprocessors < 2) GTEST_SKIP() << "a one-SM device has no partitions";
  ASSERT_OK_AND_ASSIGN(hal::Stream * part, rt.AcquireStream(d, 0, 1));
  ASSERT_OK_AND_ASSIGN(hal::Stream * plain, rt.AcquireStream(d, 0));
  EXPECT_NE(part, plain);
  EXPECT_GE(part->sm_count(), 1);
  EXPECT_LT(part->sm_count(), p.multiprocessors);
  EXPECT_EQ(plain->sm_count(), 0);
  rt.ReleaseStream(plain);
  rt.ReleaseStream(part);  // last in: what a pool keyed by priority alone would hand out next
  ASSERT_OK_AND_ASSIGN(hal::Stream * again, rt.AcquireStream(d, 0));
  EXPECT_EQ(again, plain) << "a plain request never gets the partitioned stream";
  ASSERT_OK_AND_ASSIGN(hal::Stream * part_again, rt.AcquireStream(d, 0, 1));
  EXPECT_EQ(part_again, part);
  rt.ReleaseStream(again);
  rt.ReleaseStream(part_again);
}

TEST(Runtime, ParseDevice) {
  ASSERT_OK_AND_ASSIGN(Device c, ParseDevice("cuda:3"));
  EXPECT_EQ(c, (Device{DeviceType::kCUDA, 3}));
  ASSERT_OK_AND_ASSIGN(Device g, ParseDevice("gpu"));
  EXPECT_EQ(g, (Device{DeviceType::kCUDA, 0}));
  for (const char* bad : {"tpu", "cuda:", "cuda:-1", "cuda:x", "", "cpu:a"}) {
    auto d = ParseDevice(bad);
    EXPECT_FALSE(d.ok()) << bad;
    EXPECT_EQ(ErrorTypeOf(d.status()), ErrorType::kValue) << bad;
  }
}

// Launch counters are bumped without the lock through per-thread caches of the counters: every
// launch of every thread must still be counted under its own name, including names that live at
// one reused address with different contents, and a reset must zero them.
TEST(Dispatcher, CountsEveryLaunchPerKernelAcrossThreads) {
  Dispatcher& d = Runtime::Get().dispatcher();
  ASSERT_OK_AND_ASSIGN(hal::Stream * cpu, Runtime::Get().stream(Device{DeviceType::kCPU, 0}));
  d.ResetStats();
  constexpr int kThreads = 4, kRounds = 200;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::string name;  // one buffer, several names: the cache must compare contents
      for (int i = 0; i < kRounds; ++i) {
        name = i % 2 == 0 ? "count_even" : "count_odd";
        EXPECT_TRUE(d.LaunchHost(*cpu, name, [] {}).ok());
        EXPECT_TRUE(d.LaunchHost(*cpu, t % 2 == 0 ? "count_a" : "count_b", [] {}).ok());
      }
    });
  }
  for (auto& th : threads) th.join();
  ASSERT_OK(Runtime::Get().Synchronize(Device{DeviceType::kCPU, 0}));
  DispatchStats s = d.stats();
  EXPECT_EQ(s.host_tasks, 2 * kThreads * kRounds);
  EXPECT_EQ(s.per_kernel["count_even"], kThreads * kRounds / 2);
  EXPECT_EQ(s.per_kernel["count_odd"], kThreads * kRounds / 2);
  EXPECT_EQ(s.per_kernel["count_a"], kThreads / 2 * kRounds);
  EXPECT_EQ(s.per_kernel["count_b"], kThreads / 2 * kRounds);
  EXPECT_EQ(s.per_kernel.size(), 4u);
  d.ResetStats();
  s = d.stats();
  EXPECT_EQ(s.host_tasks, 0);
  EXPECT_TRUE(s.per_kernel.empty());
  // Counted again after the reset, through the same cached counters.
  ASSERT_OK(d.LaunchHost(*cpu, "count_a", [] {}));
  ASSERT_OK(Runtime::Get().Synchronize(Device{DeviceType::kCPU, 0}));
  EXPECT_EQ(d.stats().per_kernel["count_a"], 1);
}

}  // namespace
}  // namespace pygpukit

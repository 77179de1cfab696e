// Backend (HAL) semantics both implementations must share: in-order streams, events, cross-stream
// waits, copies and fills. The generic tests run on the CPU backend and, when the test device is a
// GPU (PYGPUKIT_DEVICE=cuda), on the CUDA backend too; the CPU-only tests below use host tasks to
// make one stream provably slower than another.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "core/cpu/cpu_backend.h"
#include "core/cpu/thread_pool.h"
#include "test_util.h"

namespace pygpukit {
namespace {

using hal::CopyKind;
using testing::TestDevice;

struct Target {
  hal::Backend* backend;
  int device;
  std::string name;
};

// The CPU backend always; the CUDA backend as well when the tests run on a GPU.
std::vector<Target> Targets() {
  std::vector<Target> out;
  Runtime& rt = Runtime::Get();
  out.push_back({&rt.cpu_backend(), 0, "cpu"});
  if (TestDevice().is_cuda()) {
    auto b = rt.backend(DeviceType::kCUDA);
    EXPECT_TRUE(b.ok()) << b.status();
    if (b.ok()) out.push_back({*b, TestDevice().index, TestDevice().ToString()});
  }
  return out;
}

// Device memory that frees itself.
struct RawBlock {
  hal::Backend* backend;
  int device;
  void* ptr = nullptr;
  RawBlock(hal::Backend* b, int d, size_t bytes) : backend(b), device(d) {
    auto p = b->RawAllocate(d, bytes);
    EXPECT_TRUE(p.ok()) << p.status();
    if (p.ok()) ptr = *p;
  }
  ~RawBlock() {
    if (ptr != nullptr) EXPECT_OK(backend->RawFree(device, ptr));
  }
};

TEST(Backend, StreamRunsWorkInIssueOrder) {
  for (const Target& t : Targets()) {
    SCOPED_TRACE(t.name);
    constexpr size_t kBytes = 1 << 16;
    ASSERT_OK_AND_ASSIGN(auto s, t.backend->CreateStream(t.device, 0));
    RawBlock x(t.backend, t.device, kBytes), y(t.backend, t.device, kBytes),
        z(t.backend, t.device, kBytes);
    // x = 1; y = x; x = 2; z = y; y = x: only issue order gives z == 1 and y == 2.
    ASSERT_OK(t.backend->MemsetAsync(x.ptr, 1, kBytes, *s));
    ASSERT_OK(t.backend->CopyAsync(y.ptr, x.ptr, kBytes, CopyKind::kDeviceToDevice, *s));
    ASSERT_OK(t.backend->MemsetAsync(x.ptr, 2, kBytes, *s));
    ASSERT_OK(t.backend->CopyAsync(z.ptr, y.ptr, kBytes, CopyKind::kDeviceToDevice, *s));
    ASSERT_OK(t.backend->CopyAsync(y.ptr, x.ptr, kBytes, CopyKind::kDeviceToDevice, *s));
    std::vector<uint8_t> hz(kBytes), hy(kBytes);
    ASSERT_OK(t.backend->CopyAsync(hz.data(), z.ptr, kBytes, CopyKind::kDeviceToHost, *s));
    ASSERT_OK(t.backend->CopyAsync(hy.data(), y.ptr, kBytes, CopyKind::kDeviceToHost, *s));
    ASSERT_OK(t.backend->Synchronize(*s));
    EXPECT_EQ(hz, std::vector<uint8_t>(kBytes, 1));
    EXPECT_EQ(hy, std::vector<uint8_t>(kBytes, 2));
  }
}

TEST(Backend, HostRoundTripOfRandomBytes) {
  for (const Target& t : Targets()) {
    SCOPED_TRACE(t.name);
    ASSERT_OK_AND_ASSIGN(auto s, t.backend->CreateStream(t.device, 0));
    std::vector<uint8_t> in = testing::RandomInts<uint8_t>(100003, 7, 0, 255), out(in.size());
    RawBlock d(t.backend, t.device, in.size());
    ASSERT_OK(t.backend->CopyAsync(d.ptr, in.data(), in.size(), CopyKind::kHostToDevice, *s));
    ASSERT_OK(t.backend->CopyAsync(out.data(), d.ptr, out.size(), CopyKind::kDeviceToHost, *s));
    ASSERT_OK(t.backend->Synchronize(*s));
    EXPECT_EQ(in, out);
    // Zero-byte copies and fills are no-ops, not errors.
    EXPECT_OK(t.backend->CopyAsync(out.data(), d.ptr, 0, CopyKind::kDeviceToHost, *s));
    EXPECT_OK(t.backend->MemsetAsync(d.ptr, 0, 0, *s));
  }
}

// Stream `slow` does a lot of work and then writes x = 7; stream `fast` waits on an event recorded
// after that write, then reads x. Without the wait it would read x before the write lands.
TEST(Backend, CrossStreamWaitOrdersWork) {
  for (const Target& t : Targets()) {
    SCOPED_TRACE(t.name);
    ASSERT_OK_AND_ASSIGN(auto slow, t.backend->CreateStream(t.device, 0));
    ASSERT_OK_AND_ASSIGN(auto fast, t.backend->CreateStream(t.device, 0));
    ASSERT_OK_AND_ASSIGN(auto ev, t.backend->CreateEvent(t.device, false));
    constexpr size_t kBig = size_t{64} << 20, kSmall = 4096;
    RawBlock big(t.backend, t.device, kBig), x(t.backend, t.device, kSmall);
    ASSERT_OK(t.backend->MemsetAsync(x.ptr, 0, kSmall, *slow));
    ASSERT_OK(t.backend->Synchronize(*slow));
    for (int i = 0; i < 20; ++i) ASSERT_OK(t.backend->MemsetAsync(big.ptr, i, kBig, *slow));
    ASSERT_OK(t.backend->MemsetAsync(x.ptr, 7, kSmall, *slow));
    ASSERT_OK(t.backend->Record(*ev, *slow));
    ASSERT_OK(t.backend->Wait(*fast, *ev));
    std::vector<uint8_t> host(kSmall, 0xEE);
    ASSERT_OK(t.backend->CopyAsync(host.data(), x.ptr, kSmall, CopyKind::kDeviceToHost, *fast));
    ASSERT_OK(t.backend->Synchronize(*fast));
    EXPECT_EQ(host, std::vector<uint8_t>(kSmall, 7));
    ASSERT_OK(t.backend->Synchronize(*slow));
  }
}

TEST(Backend, EventsCompleteAndTime) {
  for (const Target& t : Targets()) {
    SCOPED_TRACE(t.name);
    ASSERT_OK_AND_ASSIGN(auto s, t.backend->CreateStream(t.device, 0));
    ASSERT_OK_AND_ASSIGN(auto start, t.backend->CreateEvent(t.device, true));
    ASSERT_OK_AND_ASSIGN(auto end, t.backend->CreateEvent(t.device, true));
    // A never-recorded event counts as complete (CUDA semantics).
    ASSERT_OK_AND_ASSIGN(bool done, t.backend->Query(*start));
    EXPECT_TRUE(done);
    EXPECT_OK(t.backend->Synchronize(*start));
    constexpr size_t kBig = size_t{64} << 20;
    RawBlock big(t.backend, t.device, kBig);
    ASSERT_OK(t.backend->Record(*start, *s));
    for (int i = 0; i < 4; ++i) ASSERT_OK(t.backend->MemsetAsync(big.ptr, i, kBig, *s));
    ASSERT_OK(t.backend->Record(*end, *s));
    ASSERT_OK(t.backend->Synchronize(*end));
    ASSERT_OK_AND_ASSIGN(done, t.backend->Query(*end));
    EXPECT_TRUE(done);
    ASSERT_OK_AND_ASSIGN(float ms, t.backend->ElapsedMs(*start, *end));
    EXPECT_GT(ms, 0.0f);
    EXPECT_LT(ms, 60000.0f);
  }
}

TEST(Backend, StreamPrioritiesAreClampedToTheDeviceRange) {
  for (const Target& t : Targets()) {
    SCOPED_TRACE(t.name);
    auto [least, greatest] = t.backend->StreamPriorityRange();
    EXPECT_LE(greatest, least);  // greatest priority is numerically lowest
    ASSERT_OK_AND_ASSIGN(auto hi, t.backend->CreateStream(t.device, greatest - 100));
    ASSERT_OK_AND_ASSIGN(auto lo, t.backend->CreateStream(t.device, least + 100));
    EXPECT_EQ(hi->priority(), greatest);
    EXPECT_EQ(lo->priority(), least);
    EXPECT_EQ(hi->device().index, t.device);
  }
}

TEST(Backend, BadDeviceOrdinalIsAnError) {
  for (const Target& t : Targets()) {
    SCOPED_TRACE(t.name);
    EXPECT_FALSE(t.backend->CreateStream(t.backend->device_count(), 0).ok());
    EXPECT_FALSE(t.backend->CreateEvent(-1, false).ok());
    EXPECT_FALSE(t.backend->properties(t.backend->device_count()).ok());
  }
}

TEST(Backend, PropertiesDescribeTheDevice) {
  for (const Target& t : Targets()) {
    SCOPED_TRACE(t.name);
    ASSERT_OK_AND_ASSIGN(hal::DeviceProperties p, t.backend->properties(t.device));
    EXPECT_FALSE(p.name.empty());
    EXPECT_GT(p.multiprocessors, 0);
    EXPECT_GT(p.total_memory, 0);
    ASSERT_OK_AND_ASSIGN(auto mem, t.backend->MemoryInfo(t.device));
    EXPECT_LE(mem.first, mem.second);
    EXPECT_GT(mem.second, 0u);
    if (t.backend->type() == DeviceType::kCUDA) {
      EXPECT_GE(p.sm_major, 8) << "kernels are built for SM80 and newer";
      EXPECT_GT(p.driver_version, 0);
    }
  }
}

TEST(Backend, PartitionedStreamsAreCheckedRoundedAndOrdered) {
  for (const Target& t : Targets()) {
    SCOPED_TRACE(t.name);
    ASSERT_OK_AND_ASSIGN(hal::DeviceProperties p, t.backend->properties(t.device));
    for (int bad : {0, -1, p.multiprocessors + 1}) {
      auto s = t.backend->CreatePartitionedStream(t.device, 0, bad);
      EXPECT_EQ(ErrorTypeOf(s.status()), ErrorType::kValue) << bad << ": " << s.status();
    }
    EXPECT_FALSE(t.backend->CreatePartitionedStream(t.backend->device_count(), 0, 1).ok());
    ASSERT_OK_AND_ASSIGN(auto whole,
                         t.backend->CreatePartitionedStream(t.device, 0, p.multiprocessors));
    EXPECT_EQ(whole->sm_count(), 0) << "the whole device is no partition";
    if (p.multiprocessors < 2) continue;
    auto [least, greatest] = t.backend->StreamPriorityRange();
    ASSERT_OK_AND_ASSIGN(auto part, t.backend->CreatePartitionedStream(t.device, least + 100, 1));
    EXPECT_EQ(part->priority(), least);
    EXPECT_GE(part->sm_count(), 1);
    EXPECT_LT(part->sm_count(), p.multiprocessors);
    // Copies and events on the partition order with a plain stream's work.
    ASSERT_OK_AND_ASSIGN(auto plain, t.backend->CreateStream(t.device, greatest));
    std::vector<uint8_t> in = testing::RandomInts<uint8_t>(1 << 20, 11, 0, 255), out(in.size());
    RawBlock d(t.backend, t.device, in.size());
    ASSERT_OK(t.backend->CopyAsync(d.ptr, in.data(), in.size(), CopyKind::kHostToDevice, *part));
    ASSERT_OK_AND_ASSIGN(auto ev, t.backend->CreateEvent(t.device, false));
    ASSERT_OK(t.backend->Record(*ev, *part));
    ASSERT_OK(t.backend->Wait(*plain, *ev));
    ASSERT_OK(t.backend->CopyAsync(out.data(), d.ptr, out.size(), CopyKind::kDeviceToHost, *plain));
    ASSERT_OK(t.backend->Synchronize(*plain));
    EXPECT_EQ(in, out);
    ASSERT_OK(t.backend->MemsetAsync(d.ptr, 0x5a, in.size(), *part));
    ASSERT_OK(t.backend->Synchronize(*part));
    ASSERT_OK(t.backend->CopyAsync(out.data(), d.ptr, out.size(), CopyKind::kDeviceToHost, *part));
    ASSERT_OK(t.backend->Synchronize(*part));
    EXPECT_EQ(out, std::vector<uint8_t>(in.size(), 0x5a));
  }
}

// ---- CPU backend only: host tasks make stream timing deterministic ----

class Gate {
 public:
  void Open() {
    {
      std::lock_guard<std::mutex> l(mu_);
      open_ = true;
    }
    cv_.notify_all();
  }
  void Wait() {
    std::unique_lock<std::mutex> l(mu_);
    cv_.wait(l, [&] { return open_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
};

TEST(CpuBackend, QueryReportsPendingWorkUntilItRuns) {
  cpu::CpuBackend b;
  ASSERT_OK_AND_ASSIGN(auto s, b.CreateStream(0, 0));
  ASSERT_OK_AND_ASSIGN(auto ev, b.CreateEvent(0, false));
  Gate gate;
  ASSERT_OK(b.Enqueue(*s, [&] { gate.Wait(); }));
  ASSERT_OK(b.Record(*ev, *s));
  ASSERT_OK_AND_ASSIGN(bool done, b.Query(*ev));
  EXPECT_FALSE(done);
  gate.Open();
  ASSERT_OK(b.Synchronize(*ev));
  ASSERT_OK_AND_ASSIGN(done, b.Query(*ev));
  EXPECT_TRUE(done);
}

TEST(CpuBackend, WaitBlocksOnlyTheWaitingStream) {
  cpu::CpuBackend b;
  ASSERT_OK_AND_ASSIGN(auto a, b.CreateStream(0, 0));
  ASSERT_OK_AND_ASSIGN(auto w, b.CreateStream(0, 0));
  ASSERT_OK_AND_ASSIGN(auto other, b.CreateStream(0, 0));
  ASSERT_OK_AND_ASSIGN(auto ev, b.CreateEvent(0, false));
  Gate gate;
  std::atomic<int> order{0};
  int a_done = -1, w_done = -1, other_done = -1;
  ASSERT_OK(b.Enqueue(*a, [&] {
    gate.Wait();
    a_done = order++;
  }));
  ASSERT_OK(b.Record(*ev, *a));
  ASSERT_OK(b.Wait(*w, *ev));
  ASSERT_OK(b.Enqueue(*w, [&] { w_done = order++; }));
  ASSERT_OK(b.Enqueue(*other, [&] { other_done = order++; }));
  ASSERT_OK(b.Synchronize(*other));  // an unrelated stream is not held up by the wait
  EXPECT_EQ(other_done, 0);
  gate.Open();
  ASSERT_OK(b.Synchronize(*w));
  EXPECT_EQ(a_done, 1);
  EXPECT_EQ(w_done, 2);
}

TEST(CpuBackend, WaitUsesTheRecordingAtTheTimeOfTheWait) {
  // Re-recording an event after a Wait must not change what the wait waits for (CUDA semantics).
  cpu::CpuBackend b;
  ASSERT_OK_AND_ASSIGN(auto a, b.CreateStream(0, 0));
  ASSERT_OK_AND_ASSIGN(auto w, b.CreateStream(0, 0));
  ASSERT_OK_AND_ASSIGN(auto ev, b.CreateEvent(0, false));
  ASSERT_OK(b.Record(*ev, *a));
  ASSERT_OK(b.Synchronize(*a));
  ASSERT_OK(b.Wait(*w, *ev));  // the first recording has completed: no wait
  Gate gate;
  ASSERT_OK(b.Enqueue(*a, [&] { gate.Wait(); }));
  ASSERT_OK(b.Record(*ev, *a));  // pending behind the gate
  ASSERT_OK(b.Synchronize(*w));  // must not deadlock on the second recording
  gate.Open();
  ASSERT_OK(b.Synchronize(*a));
}

TEST(CpuBackend, WaitIsNotReleasedByANewerRecordingElsewhere) {
  // CUDA semantics: a Wait waits for the recording current when it was issued. Re-recording the
  // event on another stream that finishes first must not release it early.
  cpu::CpuBackend b;
  ASSERT_OK_AND_ASSIGN(auto slow, b.CreateStream(0, 0));
  ASSERT_OK_AND_ASSIGN(auto quick, b.CreateStream(0, 0));
  ASSERT_OK_AND_ASSIGN(auto waiter, b.CreateStream(0, 0));
  ASSERT_OK_AND_ASSIGN(auto ev, b.CreateEvent(0, false));
  Gate gate;
  std::atomic<bool> slow_done{false};
  ASSERT_OK(b.Enqueue(*slow, [&] {
    gate.Wait();
    slow_done = true;
  }));
  ASSERT_OK(b.Record(*ev, *slow));
  ASSERT_OK(b.Wait(*waiter, *ev));
  ASSERT_OK(b.Record(*ev, *quick));  // newer generation, completes at once
  ASSERT_OK(b.Synchronize(*quick));
  bool seen = true;
  ASSERT_OK(b.Enqueue(*waiter, [&] { seen = slow_done.load(); }));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  gate.Open();
  ASSERT_OK(b.Synchronize(*waiter));
  EXPECT_TRUE(seen) << "the wait was released before the work it waits for";
}

TEST(CpuBackend, ElapsedTimeOfAnEventWithItselfIsZero) {
  cpu::CpuBackend b;
  ASSERT_OK_AND_ASSIGN(auto s, b.CreateStream(0, 0));
  ASSERT_OK_AND_ASSIGN(auto e, b.CreateEvent(0, true));
  EXPECT_FALSE(b.ElapsedMs(*e, *e).ok());
  ASSERT_OK(b.Record(*e, *s));
  ASSERT_OK(b.Synchronize(*e));
  ASSERT_OK_AND_ASSIGN(float ms, b.ElapsedMs(*e, *e));
  EXPECT_EQ(ms, 0.0f);
}

TEST(CpuBackend, TaskExceptionIsTheDevicesFailureUntilTaken) {
  cpu::CpuBackend b;
  ASSERT_OK_AND_ASSIGN(auto s, b.CreateStream(0, 0));
  ASSERT_OK_AND_ASSIGN(auto other, b.CreateStream(0, 0));
  int after = 0;
  const std::string name = "blower";
  ASSERT_OK(b.Enqueue(
      *s, [] { throw std::runtime_error("kernel blew up"); }, &name));
  ASSERT_OK(b.Enqueue(*s, [&] { after = 1; }));  // later work still runs
  ASSERT_OK(b.Enqueue(*s, [] { throw 7; }));     // a second failure: the first is kept
  absl::Status st = b.Synchronize(*s);
  EXPECT_EQ(ErrorTypeOf(st), ErrorType::kRuntime) << st;
  for (absl::string_view part : {"cpu kernel 'blower' failed", "kernel blew up", "incomplete"}) {
    EXPECT_NE(st.message().find(part), absl::string_view::npos) << part << " in " << st;
  }
  EXPECT_EQ(after, 1);
  EXPECT_EQ(b.Synchronize(*other), st);  // every wait on the device reports it...
  EXPECT_EQ(b.TaskFailure(0, /*take=*/false), st);
  EXPECT_EQ(b.TaskFailure(0, /*take=*/true), st);  // ...until it is taken
  EXPECT_OK(b.TaskFailure(0, false));
  EXPECT_OK(b.Synchronize(*s));
  EXPECT_OK(b.Synchronize(*other));
  ASSERT_OK(b.Enqueue(*other, [] { throw 7; }));
  st = b.Synchronize(*other);
  EXPECT_NE(st.message().find("cpu stream work failed: it threw an exception that is not a "
                              "std::exception"),
            absl::string_view::npos)
      << st;
  EXPECT_EQ(b.TaskFailure(0, true), st);
}

TEST(CpuBackend, CrowdedStreamsHoldProducersBackUntilHalfIsDone) {
  cpu::CpuBackend b;
  ASSERT_OK_AND_ASSIGN(auto s, b.CreateStream(0, 0));
  std::atomic<bool> open{false};
  std::atomic<int> ran{0};
  // A gate holds the worker; tasks that keep 16 MiB each pile up behind it.
  ASSERT_OK(b.Enqueue(*s, [&] {
    while (!open.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }));
  for (int i = 0; i < 5; ++i) {
    EXPECT_FALSE(b.Crowded(*s)) << i;
    ASSERT_OK(b.Enqueue(
        *s, [&] { ran.fetch_add(1); }, nullptr, int64_t{16} << 20));
  }
  EXPECT_TRUE(b.Crowded(*s));  // 80 MiB kept alive > 64 MiB
  std::atomic<bool> waited{false};
  std::thread producer([&] {
    b.WaitForRoom(*s);
    waited.store(true);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  EXPECT_FALSE(waited.load());  // still held back
  open.store(true);
  producer.join();
  EXPECT_GE(ran.load(), 3);  // it resumed once at most 32 MiB were left
  ASSERT_OK(b.Synchronize(*s));
  EXPECT_EQ(ran.load(), 5);
  EXPECT_FALSE(b.Crowded(*s));
  // A task's own launch never waits for its stream (it would wait for itself): the work it
  // queues sits behind it.
  ASSERT_OK(b.Enqueue(*s, [&] {
    for (int i = 0; i < 5; ++i) {
      (void)b.Enqueue(
          *s, [&] { ran.fetch_add(1); }, nullptr, int64_t{16} << 20);
    }
    EXPECT_TRUE(b.Crowded(*s));
    b.WaitForRoom(*s);
    open.store(false);  // done: its tasks are queued
  }));
  while (open.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_OK(b.Synchronize(*s));  // queued after the task's own tasks
  EXPECT_EQ(ran.load(), 10);
}

TEST(CpuBackend, ElapsedTimeMeasuresTheWorkBetweenEvents) {
  cpu::CpuBackend b;
  ASSERT_OK_AND_ASSIGN(auto s, b.CreateStream(0, 0));
  ASSERT_OK_AND_ASSIGN(auto start, b.CreateEvent(0, true));
  ASSERT_OK_AND_ASSIGN(auto end, b.CreateEvent(0, true));
  EXPECT_FALSE(b.ElapsedMs(*start, *end).ok());  // never recorded
  ASSERT_OK(b.Record(*start, *s));
  ASSERT_OK(b.Enqueue(*s, [] { std::this_thread::sleep_for(std::chrono::milliseconds(30)); }));
  ASSERT_OK(b.Record(*end, *s));
  ASSERT_OK(b.Synchronize(*s));
  ASSERT_OK_AND_ASSIGN(float ms, b.ElapsedMs(*start, *end));
  EXPECT_GE(ms, 25.0f);
  EXPECT_LT(ms, 5000.0f);
}

// A partition of the CPU device is a cap on the threads a stream's kernels fan out to.
TEST(CpuBackend, APartitionCapsTheThreadsOfItsKernels) {
  if (cpu::NumThreads() < 2) GTEST_SKIP() << "one worker thread: nothing to cap";
  cpu::CpuBackend b;
  auto threads_used = [&](hal::Stream& s) {
    std::mutex mu;
    std::set<std::thread::id> ids;
    EXPECT_OK(b.Enqueue(s, [&] {
      cpu::ParallelFor(1 << 16, 1, [&](int64_t, int64_t) {
        std::lock_guard<std::mutex> l(mu);
        ids.insert(std::this_thread::get_id());
      });
    }));
    EXPECT_OK(b.Synchronize(s));
    return static_cast<int>(ids.size());
  };
  // The calling thread takes the first chunk and pool threads the others, so a fan-out to k
  // chunks uses at least 2 and at most k threads.
  ASSERT_OK_AND_ASSIGN(auto plain, b.CreateStream(0, 0));
  EXPECT_GE(threads_used(*plain), 2);
  ASSERT_OK_AND_ASSIGN(auto one, b.CreatePartitionedStream(0, 0, 1));
  EXPECT_EQ(one->sm_count(), 1);
  EXPECT_EQ(threads_used(*one), 1);
  for (int cap = 2; cap < cpu::NumThreads() && cap <= 4; ++cap) {
    ASSERT_OK_AND_ASSIGN(auto part, b.CreatePartitionedStream(0, 0, cap));
    EXPECT_EQ(part->sm_count(), cap);
    const int used = threads_used(*part);
    EXPECT_GE(used, 2);
    EXPECT_LE(used, cap);
  }
  EXPECT_GE(threads_used(*plain), 2) << "other streams keep every thread";
}

TEST(CpuBackend, DestroyingAStreamDrainsItsQueue) {
  cpu::CpuBackend b;
  std::atomic<int> ran{0};
  {
    ASSERT_OK_AND_ASSIGN(auto s, b.CreateStream(0, 0));
    for (int i = 0; i < 100; ++i) {
      ASSERT_OK(b.Enqueue(*s, [&] {
        std::this_thread::sleep_for(std::chrono::microseconds(50));
        ++ran;
      }));
    }
  }
  EXPECT_EQ(ran.load(), 100);
}

TEST(CpuBackend, RejectsObjectsOfAnotherBackend) {
  if (!TestDevice().is_cuda())
    GTEST_SKIP() << "needs a CUDA stream (run with PYGPUKIT_DEVICE=cuda)";
  cpu::CpuBackend b;
  ASSERT_OK_AND_ASSIGN(hal::Stream * cuda_stream, Runtime::Get().stream(TestDevice()));
  absl::Status st = b.Enqueue(*cuda_stream, [] {});
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(ErrorTypeOf(st), ErrorType::kValue) << st;
  // A rejected Record leaves the event as it was (complete), not pending forever.
  ASSERT_OK_AND_ASSIGN(auto ev, b.CreateEvent(0, false));
  EXPECT_FALSE(b.Record(*ev, *cuda_stream).ok());
  ASSERT_OK_AND_ASSIGN(bool done, b.Query(*ev));
  EXPECT_TRUE(done);
  EXPECT_OK(b.Synchronize(*ev));
}

}  // namespace
}  // namespace pygpukit

// The tracer on the CPU backend: records of launches and of the pool, their order across
// threads, ring wrap-around, collection since a mark, device times in a profiling session, and
// a backend whose events fail (timing turns off once, records go on).
#include "runtime/trace/tracer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "test_util.h"

namespace pygpukit {
namespace {

const Device kCpu{DeviceType::kCPU, 0};

hal::Stream& CpuStream() { return *Runtime::Get().stream(kCpu).value(); }

std::vector<TraceRecord> Since(uint64_t mark) {
  EXPECT_TRUE(Runtime::Get().Synchronize(kCpu).ok());
  return Tracer::Get().Collect(mark);
}

// A launch after the mark: the untimed pool records that follow it take its time.
void MarkLaunch() {
  ASSERT_OK(Runtime::Get().dispatcher().LaunchHost(CpuStream(), "trace_mark", [] {}));
}

TEST(Tracer, LaunchesAndPoolOperationsAreRecordedInOrder) {
  const uint64_t mark = Tracer::Ticks();
  MarkLaunch();
  ASSERT_OK_AND_ASSIGN(GPUArray a, ops::Ones({16}, DType::Float32, kCpu));
  ASSERT_OK_AND_ASSIGN(GPUArray b, ops::Add(a, a));
  std::vector<TraceRecord> rs = Since(mark);
  std::vector<std::string> kinds, names;
  std::vector<TraceRecord> mine;
  for (const TraceRecord& r : rs) {
    // Frees of earlier buffers may land here (CPU tasks hand theirs back at the next allocation).
    if (r.kind == TraceKind::kFree) continue;
    mine.push_back(r);
    kinds.emplace_back(TraceKindName(r.kind));
    names.push_back(*r.name);
    EXPECT_GE(r.end_ns, r.begin_ns);
    EXPECT_EQ(r.device, kCpu);
    EXPECT_EQ(r.gpu_ms, -1);  // no profiling session
  }
  EXPECT_EQ(kinds,
            (std::vector<std::string>{"host_task", "alloc", "host_task", "alloc", "host_task"}));
  EXPECT_EQ(names[0], "trace_mark");
  EXPECT_EQ(names[2], "fill");
  EXPECT_EQ(names[4], "add");
  for (size_t i = 1; i < rs.size(); ++i) EXPECT_LE(rs[i - 1].begin_ns, rs[i].begin_ns);
  for (size_t i = 1; i < mine.size(); ++i) EXPECT_LT(mine[i - 1].seq, mine[i].seq);  // one thread
  // Outside a profiling session allocations are untimed: each takes the launch's before it.
  EXPECT_EQ(mine[1].begin_ns, mine[0].begin_ns);
  EXPECT_EQ(mine[3].begin_ns, mine[2].begin_ns);
  // The pool's bytes after each allocation: the second adds a block (64 bytes round to 512).
  EXPECT_EQ(mine[1].bytes, 64);
  EXPECT_EQ(mine[3].allocated - mine[1].allocated, 512);
  EXPECT_GE(mine[1].reserved, mine[1].allocated);
}

TEST(Tracer, PoolRecordsAreTimedInProfilingSessions) {
  Tracer& t = Tracer::Get();
  const uint64_t mark = Tracer::Ticks();
  MarkLaunch();
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  ASSERT_OK_AND_ASSIGN(GPUArray untimed, ops::Empty({8}, DType::Float32, kCpu));
  t.BeginProfiling(false);
  MarkLaunch();
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  ASSERT_OK_AND_ASSIGN(GPUArray timed, ops::Empty({8}, DType::Float32, kCpu));
  t.EndProfiling(false);
  std::vector<const TraceRecord*> seen;
  std::vector<TraceRecord> rs = Since(mark);
  uint32_t me = 0;  // this thread's records only (the CPU backend's workers free buffers too)
  for (const TraceRecord& r : rs) {
    if (*r.name == "trace_mark") me = r.thread;
  }
  for (const TraceRecord& r : rs) {
    if (r.thread == me && (r.kind == TraceKind::kAlloc || *r.name == "trace_mark")) {
      seen.push_back(&r);
    }
  }
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_EQ(seen[1]->kind, TraceKind::kAlloc);
  EXPECT_EQ(seen[1]->begin_ns, seen[0]->begin_ns);  // untimed: the mark's time
  EXPECT_EQ(seen[3]->kind, TraceKind::kAlloc);
  EXPECT_GE(seen[3]->begin_ns - seen[2]->begin_ns, 1'900'000);  // its own: after the sleep
}

// A range's record is added at its end but begins at its start: an untimed record made after
// it must still come after the launches inside it.
TEST(Tracer, AnUntimedRecordAfterARangeFollowsItsLaunches) {
  const uint64_t mark = Tracer::Ticks();
  PushTraceRange("trace_outer");
  std::this_thread::sleep_for(std::chrono::milliseconds(1));
  MarkLaunch();
  ASSERT_OK(PopTraceRange());
  ASSERT_OK_AND_ASSIGN(GPUArray a, ops::Empty({8}, DType::Float32, kCpu));
  std::vector<TraceRecord> rs = Since(mark);
  int range = -1, launch = -1, alloc = -1;
  for (int i = 0; i < static_cast<int>(rs.size()); ++i) {
    if (*rs[i].name == "trace_outer") range = i;
    if (*rs[i].name == "trace_mark") launch = i;
  }
  ASSERT_GE(range, 0);
  ASSERT_GE(launch, 0);
  for (int i = 0; i < static_cast<int>(rs.size()); ++i) {
    if (rs[i].kind == TraceKind::kAlloc && rs[i].thread == rs[launch].thread) alloc = i;
  }
  ASSERT_GE(alloc, 0);
  EXPECT_GT(alloc, launch);
  EXPECT_GE(rs[alloc].begin_ns, rs[range].end_ns);
}

TEST(Tracer, FreesCarryThePoolState) {
  ASSERT_OK_AND_ASSIGN(GPUArray a, ops::Empty({100}, DType::Float64, kCpu));
  const uint64_t mark = Tracer::Ticks();
  MarkLaunch();
  a = GPUArray();
  std::vector<TraceRecord> rs = Since(mark);
  ASSERT_EQ(rs.size(), 2u);
  rs.erase(rs.begin());  // the mark
  ASSERT_EQ(rs.size(), 1u);
  EXPECT_EQ(rs[0].kind, TraceKind::kFree);
  EXPECT_EQ(rs[0].bytes, 800);
  EXPECT_EQ(*rs[0].name, "free");
}

TEST(Tracer, ThreadsRecordIntoTheirOwnRingsWithUniqueSeqs) {
  const uint64_t mark = Tracer::Ticks();
  constexpr int kThreads = 4, kEach = 50;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([] {
      for (int i = 0; i < kEach; ++i) {
        ASSERT_OK(Runtime::Get().dispatcher().LaunchHost(CpuStream(), "trace_threads", [] {}));
      }
    });
  }
  for (auto& th : threads) th.join();
  std::vector<TraceRecord> rs = Since(mark);
  std::set<uint32_t> ids;
  std::set<uint64_t> seqs;
  int n = 0;
  for (const TraceRecord& r : rs) {
    if (*r.name != "trace_threads") continue;
    ++n;
    ids.insert(r.thread);
    seqs.insert(r.seq);
  }
  EXPECT_EQ(n, kThreads * kEach);
  EXPECT_EQ(ids.size(), static_cast<size_t>(kThreads));
  EXPECT_EQ(seqs.size(), static_cast<size_t>(n));  // unique
}

TEST(Tracer, AFullRingOverwritesItsOldestRecordsAndCountsThem) {
  Tracer& t = Tracer::Get();
  const size_t saved = t.capacity();
  t.set_capacity(8);  // for rings made from now on: the new thread's
  const int64_t dropped_before = t.dropped();
  const uint64_t mark = Tracer::Ticks();
  const std::string* name = t.Intern("trace_wrap");
  std::thread([&] {
    for (int i = 0; i < 20; ++i) {
      TraceEntry r;
      r.begin = Tracer::Ticks();
      r.name = name;
      r.bytes = i;
      t.Add(r);
    }
  }).join();
  t.set_capacity(saved);
  std::vector<int64_t> kept;
  for (const TraceRecord& r : t.Collect(mark)) {
    if (r.name == name) kept.push_back(r.bytes);
  }
  EXPECT_EQ(kept, (std::vector<int64_t>{12, 13, 14, 15, 16, 17, 18, 19}));
  EXPECT_EQ(t.dropped() - dropped_before, 12);
}

// Collections while the owner keeps wrapping its ring return only whole records: each record's
// words were written together (allocated == 2 * bytes), in order, none torn. Every other record
// is untimed: it must take the time of the kept record just before it (never that of a newer
// record that overwrote an older slot meanwhile), and one with no kept record before it goes.
TEST(Tracer, CollectingWhileARingWrapsReturnsOnlyWholeRecords) {
  Tracer& t = Tracer::Get();
  const size_t saved = t.capacity();
  t.set_capacity(8);
  const uint64_t mark = Tracer::Ticks();
  const std::string* name = t.Intern("trace_race");
  std::atomic<bool> stop{false}, started{false};
  std::thread writer([&] {
    for (int64_t i = 0; !stop; ++i) {
      if (i == 1) started = true;  // its ring (of 8 records) exists
      TraceEntry e;
      e.kind = TraceKind::kAlloc;  // a kind that keeps all three numbers
      e.begin = i % 2 == 0 ? Tracer::Ticks() : 0;
      e.name = name;
      e.bytes = i;
      e.allocated = 2 * i;
      e.reserved = 3 * i;
      t.Add(e);
    }
  });
  while (!started) std::this_thread::yield();
  t.set_capacity(saved);
  for (int round = 0; round < 2000; ++round) {
    const TraceRecord* last = nullptr;
    for (const TraceRecord& r : t.Collect(mark)) {
      if (r.name != name) continue;
      ASSERT_EQ(r.allocated, 2 * r.bytes);
      ASSERT_EQ(r.reserved, 3 * r.bytes);
      if (last == nullptr) {
        ASSERT_EQ(r.bytes % 2, 0) << "an untimed record kept without its predecessor";
      } else {
        ASSERT_EQ(r.bytes, last->bytes + 1);  // the kept records are one run, in order
        if (r.bytes % 2 == 1) ASSERT_EQ(r.begin_ns, last->begin_ns);
      }
      last = &r;
    }
  }
  stop = true;
  writer.join();
}

TEST(Tracer, EachKindKeepsItsFields) {
  Tracer& t = Tracer::Get();
  const uint64_t mark = Tracer::Ticks();
  TraceEntry k;
  k.kind = TraceKind::kKernel;
  k.name = t.Intern("packing_kernel");
  k.begin = Tracer::Ticks();
  k.bytes = 12345;
  k.flops = int64_t{1} << 40;
  t.Add(k);
  TraceEntry task;
  task.kind = TraceKind::kTask;
  task.name = t.Intern("packing_tenant");
  task.begin = Tracer::Ticks();
  task.task = 99;
  task.from = 2;
  task.to = 3;
  t.Add(task);
  PushTraceRange("packing_range");
  std::this_thread::sleep_for(std::chrono::milliseconds(3));
  ASSERT_OK(PopTraceRange());
  EXPECT_EQ(ErrorTypeOf(PopTraceRange()), ErrorType::kRuntime);  // none open
  int seen = 0;
  for (const TraceRecord& r : t.Collect(mark)) {
    if (r.name == k.name) {
      EXPECT_EQ(r.kind, TraceKind::kKernel);
      EXPECT_EQ(r.bytes, 12345);
      EXPECT_EQ(r.flops, int64_t{1} << 40);
      ++seen;
    } else if (r.name == task.name) {
      EXPECT_EQ(r.kind, TraceKind::kTask);
      EXPECT_EQ(r.task, 99u);
      EXPECT_EQ(r.from, 2);
      EXPECT_EQ(r.to, 3);
      ++seen;
    } else if (r.name != nullptr && *r.name == "packing_range") {
      EXPECT_EQ(r.kind, TraceKind::kRange);
      EXPECT_GE(r.end_ns - r.begin_ns, 2'900'000);  // the range spans the sleep
      ++seen;
    }
  }
  EXPECT_EQ(seen, 3);
}

TEST(Tracer, CapacityIsBounded) {
  Tracer& t = Tracer::Get();
  const size_t saved = t.capacity();
  t.set_capacity(size_t{1} << 62);
  EXPECT_EQ(t.capacity(), size_t{1} << 26);
  t.set_capacity(0);
  EXPECT_EQ(t.capacity(), 1u);
  t.set_capacity(1000);  // rounded up to a power of two (slots are indexed by a mask)
  EXPECT_EQ(t.capacity(), 1024u);
  t.set_capacity(saved);
}

TEST(Tracer, OffMeansNoRecords) {
  Tracer& t = Tracer::Get();
  const uint64_t mark = Tracer::Ticks();
  t.set_enabled(false);
  ASSERT_OK_AND_ASSIGN(GPUArray a, ops::Ones({4}, DType::Float32, kCpu));
  t.set_enabled(true);
  EXPECT_TRUE(Since(mark).empty());
}

TEST(Tracer, InternedNamesAreStableAndShared) {
  Tracer& t = Tracer::Get();
  std::string s = "trace_intern";
  const std::string* a = t.Intern(s);
  s[0] = 'X';
  EXPECT_EQ(*a, "trace_intern");
  EXPECT_EQ(t.Intern("trace_intern"), a);
  EXPECT_NE(t.Intern(s), a);
}

TEST(Tracer, ProfilingTimesEachLaunchOnTheDevice) {
  Tracer& t = Tracer::Get();
  const uint64_t mark = Tracer::Ticks();
  t.BeginProfiling();
  ASSERT_OK(Runtime::Get().dispatcher().LaunchHost(CpuStream(), "trace_sleep", [] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }));
  ASSERT_OK(Runtime::Get().dispatcher().LaunchHost(CpuStream(), "trace_quick", [] {}));
  t.EndProfiling();
  double sleep_ms = -1, quick_ms = -1;
  for (const TraceRecord& r : Since(mark)) {
    if (*r.name == "trace_sleep") sleep_ms = r.gpu_ms;
    if (*r.name == "trace_quick") quick_ms = r.gpu_ms;
  }
  EXPECT_GE(sleep_ms, 19.0);
  EXPECT_GE(quick_ms, 0.0);
  EXPECT_LT(quick_ms, sleep_ms);
  EXPECT_FALSE(t.profiling());
}

// The CPU backend, except that no event can be made.
class NoEvents final : public hal::Backend {
 public:
  explicit NoEvents(hal::Backend& b) : b_(b) {}
  DeviceType type() const override { return b_.type(); }
  int device_count() const override { return b_.device_count(); }
  absl::StatusOr<hal::DeviceProperties> properties(int d) const override {
    return b_.properties(d);
  }
  absl::StatusOr<void*> RawAllocate(int d, size_t n) override { return b_.RawAllocate(d, n); }
  absl::Status RawFree(int d, void* p) override { return b_.RawFree(d, p); }
  absl::StatusOr<void*> RawAllocateHost(size_t n) override { return b_.RawAllocateHost(n); }
  absl::Status RawFreeHost(void* p) override { return b_.RawFreeHost(p); }
  absl::StatusOr<std::pair<size_t, size_t>> MemoryInfo(int d) const override {
    return b_.MemoryInfo(d);
  }
  absl::StatusOr<std::unique_ptr<hal::Stream>> CreateStream(int d, int p) override {
    return b_.CreateStream(d, p);
  }
  std::pair<int, int> StreamPriorityRange() const override { return b_.StreamPriorityRange(); }
  absl::StatusOr<std::unique_ptr<hal::Event>> CreateEvent(int, bool) override {
    return RuntimeError("no events here");
  }
  absl::Status Record(hal::Event& e, hal::Stream& s) override { return b_.Record(e, s); }
  absl::Status Wait(hal::Stream& s, hal::Event& e) override { return b_.Wait(s, e); }
  absl::StatusOr<bool> Query(hal::Event& e) override { return b_.Query(e); }
  absl::Status Synchronize(hal::Event& e) override { return b_.Synchronize(e); }
  absl::Status Synchronize(hal::Stream& s) override { return b_.Synchronize(s); }
  absl::StatusOr<float> ElapsedMs(hal::Event& a, hal::Event& b) override {
    return b_.ElapsedMs(a, b);
  }
  absl::Status CopyAsync(void* d, const void* s, size_t n, hal::CopyKind k,
                         hal::Stream& st) override {
    return b_.CopyAsync(d, s, n, k, st);
  }
  absl::Status MemsetAsync(void* d, uint8_t v, size_t n, hal::Stream& s) override {
    return b_.MemsetAsync(d, v, n, s);
  }
  absl::Status WriteWordAsync(uint32_t* d, uint32_t v, hal::Stream& s) override {
    return b_.WriteWordAsync(d, v, s);
  }

 private:
  hal::Backend& b_;
};

// Last in this file (gtest keeps file order; ctest runs each test alone): GPU timing stays off for
// the process after a failure, by design.
TEST(Tracer, FailingEventsTurnTimingOffOnceAndRecordsGoOn) {
  Tracer& t = Tracer::Get();
  ASSERT_OK_AND_ASSIGN(hal::Backend * cpu, Runtime::Get().backend(DeviceType::kCPU));
  NoEvents broken(*cpu);
  t.BeginProfiling();
  EXPECT_EQ(t.StartTiming(broken, CpuStream()), nullptr);
  EXPECT_FALSE(t.status().ok());
  EXPECT_NE(t.status().message().find("no events here"), absl::string_view::npos);
  // Launches still work and are recorded, untimed.
  const uint64_t mark = Tracer::Ticks();
  ASSERT_OK(Runtime::Get().dispatcher().LaunchHost(CpuStream(), "trace_after_failure", [] {}));
  t.EndProfiling();
  int seen = 0;
  for (const TraceRecord& r : Since(mark)) {
    if (*r.name != "trace_after_failure") continue;
    ++seen;
    EXPECT_EQ(r.gpu_ms, -1);
  }
  EXPECT_EQ(seen, 1);
}

}  // namespace
}  // namespace pygpukit

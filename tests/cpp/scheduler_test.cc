// Over 600 lines on purpose: one suite for the Scheduler class, sharing its fixtures
// (sched_test_util.h) and waiting helpers; preemption has its own file.
// Scheduler on the test device: the task life cycle and its histories and listeners, per-tenant
// streams and quotas, stream ordering with the default stream (worker and inline tasks),
// failure isolation, cancellation of pending / admitted / running tasks, timeouts,
// dependencies across tenants, rejection, pacing of best-effort work (also while guaranteed work
// runs), RemoveTenant, Shutdown, the absence of leaks, and replay of the admission decisions.
// Stream gates (host tasks that hold a stream) make "work still in flight" observable without
// sleeps; they need the CPU backend, so those tests skip on other devices.
#include "runtime/sched/scheduler.h"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "pool_test_util.h"
#include "runtime/memory/memory_pool.h"
#include "sched_test_util.h"

namespace pygpukit {
namespace {

using namespace sched_testing;  // NOLINT
using pool_testing::Async;
using testing::FromVector;
using testing::RandomDoubles;
using testing::TestDevice;
using testing::ToVector;

#define SKIP_UNLESS_CPU()                                                            \
  do {                                                                               \
    if (!TestDevice().is_cpu()) GTEST_SKIP() << "stream gates need the CPU backend"; \
  } while (0)

std::unique_ptr<Scheduler> Make(SchedulerOptions o = {}) {
  if (o.memory_capacity == 0) o.memory_capacity = 64 * kMiB;
  auto s = Scheduler::Create(o);
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? std::move(*s) : nullptr;
}

hal::Stream* DefaultStream() {
  auto s = Runtime::Get().default_stream(TestDevice());
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? *s : nullptr;
}

void ExpectError(const absl::Status& s, ErrorType type, const std::string& part) {
  EXPECT_FALSE(s.ok()) << "expected: " << part;
  EXPECT_EQ(ErrorTypeOf(s), type) << s;
  EXPECT_NE(s.message().find(part), absl::string_view::npos) << "'" << part << "' missing in " << s;
}

// A float64 array of random values and its host copy.
struct Data {
  std::vector<double> host;
  GPUArray array;
};
Data RandomArray(std::vector<int64_t> shape, uint32_t seed) {
  Data d;
  int64_t n = 1;
  for (int64_t e : shape) n *= e;
  d.host = RandomDoubles(static_cast<size_t>(n), seed);
  auto a = FromVector(d.host, shape);
  EXPECT_TRUE(a.ok()) << a.status();
  if (a.ok()) d.array = *a;
  return d;
}

// ---- construction and tenants ----

TEST(Scheduler, CreateValidatesOptions) {
  auto bad = [](auto mutate, const std::string& part) {
    SchedulerOptions o;
    mutate(o);
    auto s = Scheduler::Create(o);
    ExpectError(s.status(), ErrorType::kValue, part);
  };
  bad([](SchedulerOptions& o) { o.worker_threads = 0; }, "worker_threads 0 is outside [1, 256]");
  bad([](SchedulerOptions& o) { o.worker_threads = 257; }, "worker_threads 257");
  bad([](SchedulerOptions& o) { o.inflight_budget = 0; }, "inflight_budget must be >= 1, got 0");
  bad([](SchedulerOptions& o) { o.memory_capacity = -1; }, "memory_capacity must be >= 0, got -1");
  bad([](SchedulerOptions& o) { o.best_effort_inflight_while_guaranteed = -1; },
      "best_effort_inflight_while_guaranteed must be >= 0, got -1");

  ASSERT_OK_AND_ASSIGN(auto s, Scheduler::Create());
  EXPECT_EQ(s->device(), TestDevice());
  ASSERT_OK_AND_ASSIGN(MemoryPool * pool, Runtime::Get().pool(TestDevice()));
  ASSERT_OK_AND_ASSIGN(hal::DeviceProperties props, Runtime::Get().properties(TestDevice()));
  EXPECT_EQ(s->memory_capacity(), pool->limit() > 0 ? pool->limit() : props.total_memory);
  EXPECT_GT(s->memory_capacity(), 0);
  SchedulerOptions o;
  o.memory_capacity = 12345;
  ASSERT_OK_AND_ASSIGN(auto s2, Scheduler::Create(o));
  EXPECT_EQ(s2->memory_capacity(), 12345);
  EXPECT_EQ(s2->stats().admission.capacity, 12345);
  EXPECT_TRUE(s2->tenants().empty());
}

TEST(Scheduler, AddTenantValidatesAndDerivesPacingAndPriorities) {
  SchedulerOptions so;
  so.memory_capacity = 10 * kMiB;
  so.inflight_budget = 32;
  auto s = Make(so);
  ASSERT_NE(s, nullptr);
  auto bad = [&](TenantOptions o, const std::string& part) {
    ExpectError(s->AddTenant(o), ErrorType::kValue, part);
  };
  TenantOptions o = Tenant("x", QosClass::kBurstable);
  o.compute_share = 0;
  bad(o, "tenant 'x': compute_share 0 is outside (0, 1]");
  o.compute_share = 1.5;
  bad(o, "compute_share 1.5");
  o.compute_share = std::nan("");
  bad(o, "compute_share nan");
  o = Tenant("x", QosClass::kBurstable);
  o.max_inflight = -1;
  bad(o, "negative max_inflight");
  o = Tenant("x", QosClass::kBurstable);
  o.streams = 0;
  bad(o, "streams 0 is outside [1, 16]");
  o.streams = 17;
  bad(o, "streams 17");
  bad(Tenant("x", QosClass::kBestEffort, 100), "a best-effort tenant reserves nothing");
  bad(Tenant("x", QosClass::kGuaranteed, 11 * kMiB), "over-commits");
  EXPECT_TRUE(s->tenants().empty()) << "refused tenants leave nothing behind";

  ASSERT_OK(s->AddTenant(Tenant("g", QosClass::kGuaranteed, kMiB)));
  TenantOptions share = Tenant("share", QosClass::kBurstable, kMiB, 2 * kMiB);
  share.compute_share = 0.25;
  ASSERT_OK(s->AddTenant(share));
  TenantOptions tiny = Tenant("tiny", QosClass::kBurstable);
  tiny.compute_share = 0.001;
  ASSERT_OK(s->AddTenant(tiny));
  TenantOptions be = Tenant("be", QosClass::kBestEffort);
  be.max_inflight = 3;
  ASSERT_OK(s->AddTenant(be));
  TenantOptions pinned = Tenant("pinned", QosClass::kBestEffort);
  pinned.stream_priority = -1000;  // clamped to the backend's range
  ASSERT_OK(s->AddTenant(pinned));
  bad(Tenant("g", QosClass::kBurstable), "tenant 'g' already exists");
  EXPECT_EQ(s->tenants(), (std::vector<std::string>{"be", "g", "pinned", "share", "tiny"}));

  auto [least, greatest] = testing::TestBackend()->StreamPriorityRange();
  SchedulerStats st = s->stats();
  EXPECT_EQ(TenantOf(st, "g").inflight_limit, 0) << "guaranteed: never paced";
  EXPECT_EQ(TenantOf(st, "share").inflight_limit, 8) << "0.25 x 32";
  EXPECT_EQ(TenantOf(st, "tiny").inflight_limit, 1) << "at least one";
  EXPECT_EQ(TenantOf(st, "be").inflight_limit, 3);
  EXPECT_EQ(TenantOf(st, "g").stream_priority, greatest);
  EXPECT_EQ(TenantOf(st, "be").stream_priority, least);
  EXPECT_EQ(TenantOf(st, "share").stream_priority, least + (greatest - least) / 2);
  EXPECT_EQ(TenantOf(st, "pinned").stream_priority, std::min(least, greatest));
  EXPECT_EQ(TenantOf(st, "g").admission.memory_limit, kMiB);
  EXPECT_EQ(st.admission.reserved, 2 * kMiB);
}

// Best-effort tenants are confined to a partition of the device unless told otherwise, so the
// other tenants keep the rest of it whatever the best-effort kernels' length; the others get the
// whole device unless they ask. Their tasks run on streams of that partition.
TEST(Scheduler, TenantsGetSmPartitionsByClassOrOnRequest) {
  ASSERT_OK_AND_ASSIGN(hal::DeviceProperties props, Runtime::Get().properties(TestDevice()));
  const int all = props.multiprocessors;
  if (all < 2) GTEST_SKIP() << "a one-SM device has no partitions";
  {
    SchedulerOptions o;
    o.best_effort_sms = -2;
    ExpectError(Scheduler::Create(o).status(), ErrorType::kValue, "best_effort_sms -2");
  }
  auto s = Make();
  ASSERT_NE(s, nullptr);
  TenantOptions neg = Tenant("neg", QosClass::kBestEffort);
  neg.sms = -1;
  ExpectError(s->AddTenant(neg), ErrorType::kValue, "tenant 'neg': negative sms -1");
  TenantOptions huge = Tenant("huge", QosClass::kBurstable);
  huge.sms = all + 1;
  ExpectError(s->AddTenant(huge), ErrorType::kValue, "tenant 'huge': stream: a partition of");
  EXPECT_TRUE(s->tenants().empty());

  ASSERT_OK(s->AddTenant(Tenant("g", QosClass::kGuaranteed, kMiB)));
  ASSERT_OK(s->AddTenant(Tenant("b", QosClass::kBurstable)));
  ASSERT_OK(s->AddTenant(Tenant("be", QosClass::kBestEffort)));
  TenantOptions whole = Tenant("be_whole", QosClass::kBestEffort);
  whole.sms = 0;
  ASSERT_OK(s->AddTenant(whole));
  TenantOptions small = Tenant("g_small", QosClass::kGuaranteed, kMiB);
  small.sms = 1;
  ASSERT_OK(s->AddTenant(small));
  const int automatic = static_cast<int>(all * SchedulerOptions::kBestEffortSmShare);
  EXPECT_EQ(TenantOf(*s, "g").sms, 0);
  EXPECT_EQ(TenantOf(*s, "b").sms, 0);
  EXPECT_EQ(TenantOf(*s, "be_whole").sms, 0);
  if (automatic >= 1) {
    EXPECT_GE(TenantOf(*s, "be").sms, automatic) << "rounded up, never down";
    EXPECT_LT(TenantOf(*s, "be").sms, all);
  } else {
    EXPECT_EQ(TenantOf(*s, "be").sms, 0);
  }
  const int small_sms = TenantOf(*s, "g_small").sms;
  EXPECT_GE(small_sms, 1);
  EXPECT_LT(small_sms, all);

  auto seen = std::make_shared<std::atomic<int>>(-1);
  const Device d = TestDevice();
  ASSERT_OK_AND_ASSIGN(auto task, s->Submit("g_small", [seen, d]() -> absl::Status {
    PGK_ASSIGN_OR_RETURN(hal::Stream * stream, Runtime::Get().stream(d));
    seen->store(stream->sm_count());
    return absl::OkStatus();
  }));
  ASSERT_TRUE(task->Wait(kLongWaitNs));
  ASSERT_EQ(task->state(), TaskState::kCompleted) << task->status();
  EXPECT_EQ(seen->load(), small_sms);

  for (int be_sms : {0, 1}) {
    SchedulerOptions o;
    o.best_effort_sms = be_sms;
    auto s2 = Make(o);
    ASSERT_NE(s2, nullptr);
    ASSERT_OK(s2->AddTenant(Tenant("be", QosClass::kBestEffort)));
    if (be_sms == 0) {
      EXPECT_EQ(TenantOf(*s2, "be").sms, 0);
    } else {
      EXPECT_GE(TenantOf(*s2, "be").sms, 1);
      EXPECT_LT(TenantOf(*s2, "be").sms, all);
    }
  }
}

// ---- the life cycle ----

TEST(Scheduler, SubmittedTaskCompletesWithItsHistoryAndListenersSeeEveryTransition) {
  auto s = Make();
  ASSERT_NE(s, nullptr);
  ASSERT_OK(s->AddTenant(Tenant("t", QosClass::kBurstable, kMiB)));
  Recorder rec;
  s->AddListener(rec.Listener());
  Data a = RandomArray({17, 23}, 1), b = RandomArray({23, 9}, 2);
  auto slot = std::make_shared<Slot>();
  TaskOptions opt;
  opt.name = "matmul";
  opt.memory = 4 * kKiB;
  ASSERT_OK_AND_ASSIGN(auto task, s->Submit(
                                      "t",
                                      [&, slot]() -> absl::Status {
                                        PGK_ASSIGN_OR_RETURN(GPUArray c,
                                                             ops::Matmul(a.array, b.array));
                                        slot->Set(c);
                                        return absl::OkStatus();
                                      },
                                      opt));
  EXPECT_EQ(task->tenant(), "t");
  EXPECT_EQ(task->name(), "matmul");
  EXPECT_EQ(task->options().memory, 4 * kKiB);
  EXPECT_GT(task->id(), 0u);
  ASSERT_TRUE(task->Wait(kLongWaitNs));
  EXPECT_TRUE(task->done());
  EXPECT_EQ(task->state(), TaskState::kCompleted);
  EXPECT_OK(task->status());
  ASSERT_OK_AND_ASSIGN(auto c, ToVector<double>(slot->Get()));
  ExpectNear(c, HostMatmul(a.host, b.host, 17, 23, 9));

  std::vector<TransitionRecord> h = task->history();
  EXPECT_EQ(States(h), "pending,admitted,running,completed");
  ASSERT_EQ(h.size(), 4u);
  EXPECT_EQ(h[0].from, TaskState::kPending);
  EXPECT_EQ(h[1].from, TaskState::kPending);
  EXPECT_EQ(h[2].from, TaskState::kAdmitted);
  EXPECT_EQ(h[3].from, TaskState::kRunning);
  for (size_t i = 0; i < h.size(); ++i) {
    EXPECT_EQ(h[i].task, task->id());
    EXPECT_EQ(h[i].tenant, "t");
    EXPECT_TRUE(h[i].reason.empty()) << h[i].reason;
    if (i > 0) EXPECT_LE(h[i - 1].time_ns, h[i].time_ns);
  }
  EXPECT_EQ(task->submit_ns(), h[0].time_ns);
  EXPECT_EQ(task->start_ns(), h[2].time_ns);
  EXPECT_EQ(task->end_ns(), h[3].time_ns);
  EXPECT_LE(task->submit_ns(), task->start_ns());
  EXPECT_LE(task->start_ns(), task->end_ns());
  EXPECT_LE(task->end_ns(), Scheduler::Now());

  // Listeners get each transition (the submission itself is not one), in order.
  ASSERT_TRUE(rec.WaitCount(3));
  std::vector<TransitionRecord> seen = rec.of(task->id());
  EXPECT_EQ(States(seen), "admitted,running,completed");
  for (size_t i = 0; i < seen.size(); ++i) {
    EXPECT_EQ(seen[i].from, h[i + 1].from);
    EXPECT_EQ(seen[i].time_ns, h[i + 1].time_ns);
  }
  // The scheduler's history has the same four records.
  std::vector<TransitionRecord> all = s->history();
  ASSERT_EQ(all.size(), 4u);
  EXPECT_EQ(States(all), "pending,admitted,running,completed");

  // A done callback added after the end runs at once, on this thread.
  std::thread::id ran_on;
  task->AddDoneCallback([&](const Task& t) {
    EXPECT_EQ(&t, task.get());
    ran_on = std::this_thread::get_id();
  });
  EXPECT_EQ(ran_on, std::this_thread::get_id());
}

TEST(Scheduler, DoneCallbacksRunAfterTheListenersOnTheNotifierThread) {
  auto s = Make();
  ASSERT_NE(s, nullptr);
  ASSERT_OK(s->AddTenant(Tenant("t", QosClass::kBurstable)));
  Recorder rec;
  s->AddListener(rec.Listener());
  Blocker blocker;
  ASSERT_OK_AND_ASSIGN(auto task, s->Submit("t", blocker.Fn()));
  ASSERT_TRUE(blocker.WaitStarted());
  Flag called;
  std::atomic<int> calls{0};
  std::atomic<size_t> listener_records_then{0};
  std::thread::id ran_on;
  task->AddDoneCallback([&](const Task& t) {
    ++calls;
    EXPECT_EQ(t.state(), TaskState::kCompleted);
    listener_records_then = rec.of(t.id()).size();
    ran_on = std::this_thread::get_id();
    called.Set();
  });
  EXPECT_FALSE(called.IsSet());
  blocker.Release();
  ASSERT_TRUE(called.Wait());
  EXPECT_EQ(calls.load(), 1);
  EXPECT_EQ(listener_records_then.load(), 3u) << "the terminal transition was announced first";
  EXPECT_NE(ran_on, std::this_thread::get_id());
  EXPECT_OK(s->Shutdown());
  EXPECT_EQ(calls.load(), 1);
}

TEST(Scheduler, TasksRunOnTheTenantStreamAndAllocateUnderItsQuota) {
  auto s = Make();
  ASSERT_NE(s, nullptr);
  ASSERT_OK(s->AddTenant(Tenant("g", QosClass::kGuaranteed, kMiB)));
  EXPECT_EQ(StreamScope::Current(), nullptr);
  EXPECT_EQ(QuotaScope::Current(), nullptr);
  struct Seen {
    hal::Stream* stream = nullptr;
    hal::Stream* scope = nullptr;
    std::string quota;
    int64_t quota_limit = 0;
  };
  auto seen = std::make_shared<Seen>();
  auto slot = std::make_shared<Slot>();
  const Device d = TestDevice();
  ASSERT_OK_AND_ASSIGN(auto task, s->Submit("g", [seen, slot, d]() -> absl::Status {
    PGK_ASSIGN_OR_RETURN(seen->stream, Runtime::Get().stream(d));
    seen->scope = StreamScope::Current();
    if (QuotaScope::Current() != nullptr) {
      seen->quota = QuotaScope::Current()->name();
      seen->quota_limit = QuotaScope::Current()->limit();
    }
    PGK_ASSIGN_OR_RETURN(GPUArray z, ops::Zeros({1000}, DType::Float64, d));  // 8000 bytes
    slot->Set(z);
    return absl::OkStatus();
  }));
  ASSERT_TRUE(task->Wait(kLongWaitNs));
  ASSERT_EQ(task->state(), TaskState::kCompleted) << task->status();
  EXPECT_NE(seen->stream, nullptr);
  EXPECT_NE(seen->stream, DefaultStream());
  EXPECT_EQ(seen->scope, seen->stream);
  EXPECT_EQ(seen->stream->priority(), TenantOf(*s, "g").stream_priority);
  EXPECT_EQ(seen->quota, "g");
  EXPECT_EQ(seen->quota_limit, kMiB);
  EXPECT_EQ(slot->Get().buffer()->stream(), seen->stream) << "allocated on the task stream";

  TenantStats t = TenantOf(*s, "g");
  EXPECT_EQ(t.memory_used, 8192) << "8000 bytes rounded to 512";
  EXPECT_EQ(t.memory_peak, 8192);
  // Work outside a task is not charged to the tenant.
  ASSERT_OK_AND_ASSIGN(GPUArray outside, ops::Zeros({1000}, DType::Float64, d));
  EXPECT_EQ(TenantOf(*s, "g").memory_used, 8192);
  ASSERT_OK_AND_ASSIGN(auto zeros, ToVector<double>(slot->Get()));
  EXPECT_EQ(zeros, std::vector<double>(1000, 0.0));
  slot->Clear();
  EXPECT_EQ(TenantOf(*s, "g").memory_used, 0);
  EXPECT_EQ(TenantOf(*s, "g").memory_peak, 8192);
  EXPECT_EQ(StreamScope::Current(), nullptr) << "the scopes stay on the worker thread";
}

TEST(Scheduler, TenantStreamsAreUsedRoundRobin) {
  auto s = Make();
  ASSERT_NE(s, nullptr);
  TenantOptions o = Tenant("t", QosClass::kBurstable);
  o.streams = 2;
  ASSERT_OK(s->AddTenant(o));
  std::vector<hal::Stream*> used;
  for (int i = 0; i < 4; ++i) {
    auto stream = std::make_shared<hal::Stream*>(nullptr);
    ASSERT_OK_AND_ASSIGN(auto task, s->Submit("t", [stream] {
      *stream = Runtime::Get().stream(TestDevice()).value();
      return absl::OkStatus();
    }));
    ASSERT_TRUE(task->Wait(kLongWaitNs));
    used.push_back(*stream);
  }
  EXPECT_NE(used[0], used[1]);
  EXPECT_EQ(used[0], used[2]);
  EXPECT_EQ(used[1], used[3]);
  EXPECT_NE(used[0], DefaultStream());
  EXPECT_NE(used[1], DefaultStream());
}

TEST(Scheduler, QuotaLimitsAllocationsInsideTasks) {
  auto s = Make();
  ASSERT_NE(s, nullptr);
  ASSERT_OK(s->AddTenant(Tenant("g", QosClass::kGuaranteed, 64 * kKiB)));
  const Device d = TestDevice();
  ASSERT_OK_AND_ASSIGN(auto big, s->Submit("g", [d]() -> absl::Status {
    return ops::Zeros({16 * 1024}, DType::Float64, d).status();  // 128 KiB
  }));
  ASSERT_OK_AND_ASSIGN(auto fits, s->Submit("g", [d]() -> absl::Status {
    return ops::Zeros({4 * 1024}, DType::Float64, d).status();  // 32 KiB
  }));
  ASSERT_TRUE(big->Wait(kLongWaitNs));
  ASSERT_TRUE(fits->Wait(kLongWaitNs));
  EXPECT_EQ(big->state(), TaskState::kFailed);
  ExpectError(big->status(), ErrorType::kMemory, "exceeds the whole quota 'g'");
  EXPECT_EQ(big->history().back().reason, big->status().message());
  EXPECT_EQ(fits->state(), TaskState::kCompleted) << fits->status();
  EXPECT_OK(s->Drain());
  EXPECT_EQ(TenantOf(*s, "g").memory_used, 0);
  EXPECT_EQ(TenantOf(*s, "g").admission.failed, 1);
  EXPECT_EQ(TenantOf(*s, "g").admission.completed, 1);
}

// ---- stream ordering ----

TEST(Scheduler, TaskSeesDefaultStreamWorkAndCompletesOnlyWhenItsWorkIsDone) {
  SKIP_UNLESS_CPU();
  auto s = Make();
  ASSERT_NE(s, nullptr);
  ASSERT_OK(s->AddTenant(Tenant("t", QosClass::kBurstable)));
  Data a = RandomArray({4096}, 3), b = RandomArray({4096}, 4);
  std::vector<double> later = RandomDoubles(4096, 5);
  // Default-stream work queued before the task: held by a gate, then overwriting a.
  StreamGate gate(*DefaultStream());
  double* a_ptr = static_cast<double*>(a.array.data());
  ASSERT_OK(Runtime::Get().cpu_backend().Enqueue(
      *DefaultStream(), [a_ptr, later] { std::copy(later.begin(), later.end(), a_ptr); }));
  auto slot = std::make_shared<Slot>();
  Flag launched;
  ASSERT_OK_AND_ASSIGN(auto task, s->Submit("t", [&, slot]() -> absl::Status {
    PGK_ASSIGN_OR_RETURN(GPUArray c, ops::Add(a.array, b.array));
    slot->Set(c);
    launched.Set();
    return absl::OkStatus();
  }));
  ASSERT_TRUE(launched.Wait());
  // The body returned, but its work waits behind the gate: the task is not done.
  EXPECT_FALSE(task->Wait(20'000'000));
  EXPECT_EQ(task->state(), TaskState::kRunning);
  gate.Open();
  ASSERT_TRUE(task->Wait(kLongWaitNs));
  ASSERT_EQ(task->state(), TaskState::kCompleted) << task->status();
  // Completed means the GPU work is done: read the memory with no further synchronization.
  std::vector<double> want(4096);
  for (size_t i = 0; i < want.size(); ++i) want[i] = later[i] + b.host[i];
  ExpectNear(RawDoubles(slot->Get()), want, 0);
}

TEST(Scheduler, InlineTaskRunsOnItsStreamAndIsVisibleToDefaultStreamWorkAfterEnd) {
  SKIP_UNLESS_CPU();
  auto s = Make();
  ASSERT_NE(s, nullptr);
  ASSERT_OK(s->AddTenant(Tenant("t", QosClass::kBurstable, kMiB)));
  Data a = RandomArray({33, 20}, 6), b = RandomArray({20, 7}, 7);
  GPUArray c;
  std::unique_ptr<StreamGate> gate;
  hal::Stream* task_stream = nullptr;
  std::shared_ptr<Task> task;
  {
    ASSERT_OK_AND_ASSIGN(InlineTask it, s->Begin("t", TaskOptions{"inline", 64 * kKiB}));
    task = it.task();
    EXPECT_EQ(task->state(), TaskState::kRunning);
    EXPECT_EQ(task->name(), "inline");
    ASSERT_OK_AND_ASSIGN(task_stream, Runtime::Get().stream(TestDevice()));
    EXPECT_NE(task_stream, DefaultStream());
    ASSERT_NE(QuotaScope::Current(), nullptr);
    EXPECT_EQ(QuotaScope::Current()->name(), "t");
    gate = std::make_unique<StreamGate>(*task_stream);  // holds the task's work
    ASSERT_OK_AND_ASSIGN(c, ops::Matmul(a.array, b.array));
    EXPECT_EQ(TenantOf(*s, "t").memory_used, 2048) << "33 x 7 doubles, rounded to 512";
    ASSERT_OK(it.End());
    ASSERT_OK(it.End());  // idempotent
  }
  EXPECT_EQ(StreamScope::Current(), nullptr) << "End closed the scopes";
  EXPECT_EQ(QuotaScope::Current(), nullptr);
  ASSERT_OK_AND_ASSIGN(hal::Stream * now, Runtime::Get().stream(TestDevice()));
  EXPECT_EQ(now, DefaultStream());
  // A host task on the default stream after End reads c directly: it must wait for the task.
  auto copied = std::make_shared<std::vector<double>>();
  auto done = std::make_shared<Flag>();
  ASSERT_OK(Runtime::Get().cpu_backend().Enqueue(*DefaultStream(), [c, copied, done] {
    *copied = RawDoubles(c);
    done->Set();
  }));
  EXPECT_FALSE(task->done()) << "its work is held by the gate";
  gate->Open();
  ASSERT_TRUE(done->Wait());
  ExpectNear(*copied, HostMatmul(a.host, b.host, 33, 20, 7));
  ASSERT_TRUE(task->Wait(kLongWaitNs));
  EXPECT_EQ(task->state(), TaskState::kCompleted) << task->status();
  EXPECT_EQ(States(task->history()), "pending,admitted,running,completed");
  ASSERT_OK_AND_ASSIGN(auto again, ToVector<double>(c));
  ExpectNear(again, HostMatmul(a.host, b.host, 33, 20, 7));
}

TEST(Scheduler, InlineTaskOutcomes) {
  auto s = Make();
  ASSERT_NE(s, nullptr);
  ASSERT_OK(s->AddTenant(Tenant("t", QosClass::kBurstable, kMiB, 2 * kMiB)));
  std::shared_ptr<Task> failed, dropped;
  {
    ASSERT_OK_AND_ASSIGN(InlineTask it, s->Begin("t"));
    failed = it.task();
    EXPECT_OK(it.End(absl::InternalError("the body broke")));
  }
  {
    ASSERT_OK_AND_ASSIGN(InlineTask it, s->Begin("t"));
    InlineTask moved(std::move(it));
    dropped = moved.task();
    EXPECT_EQ(it.task(), nullptr);
    EXPECT_OK(it.End());  // a moved-from inline task is empty
  }                       // the destructor ends it
  ASSERT_TRUE(failed->Wait(kLongWaitNs));
  EXPECT_EQ(failed->state(), TaskState::kFailed);
  EXPECT_EQ(failed->status(), absl::InternalError("the body broke"));
  ASSERT_TRUE(dropped->Wait(kLongWaitNs));
  EXPECT_EQ(dropped->state(), TaskState::kCompleted);

  auto never = s->Begin("t", TaskOptions{"big", 3 * kMiB});
  ExpectError(never.status(), ErrorType::kTaskRejected, "can never fit tenant 't'");
  ExpectError(s->Begin("nope").status(), ErrorType::kValue, "tenant 'nope' does not exist");
  TaskOptions late;
  late.deadline_ns = 1;
  ExpectError(s->Begin("t", late).status(), ErrorType::kTaskRejected,
              "deadline already passed at submission");
  EXPECT_OK(s->Drain());
  SchedulerStats st = s->stats();
  EXPECT_EQ(st.admission.rejected, 2);
  EXPECT_EQ(st.admission.failed, 1);
  EXPECT_EQ(st.admission.completed, 1);
}

// Calls that would wait for a task body running on the calling thread refuse instead of
// hanging (issue 31): Drain, Shutdown and RemoveTenant inside a task block, and a nested block
// of a tenant whose max_running the thread's own blocks already use up.
TEST(Scheduler, CallsThatWouldWaitForTheirOwnBlockRefuse) {
  auto s = Make();
  ASSERT_NE(s, nullptr);
  TenantOptions o = Tenant("be", QosClass::kBestEffort);
  o.max_running = 1;
  ASSERT_OK(s->AddTenant(o));
  ASSERT_OK(s->AddTenant(Tenant("other", QosClass::kBurstable)));
  {
    ASSERT_OK_AND_ASSIGN(InlineTask outer, s->Begin("be"));
    EXPECT_EQ(s->HeldHere(), 1);
    ExpectError(s->Drain(), ErrorType::kRuntime, "drain: called inside a task block");
    ExpectError(s->Shutdown(), ErrorType::kRuntime, "shutdown: called inside a task block");
    ExpectError(s->RemoveTenant("be"), ErrorType::kRuntime, "inside a task block of that tenant");
    ExpectError(s->Begin("be").status(), ErrorType::kRuntime, "would wait for itself");
    {
      // Another tenant's block nests; removing a tenant the thread holds no block of is fine.
      ASSERT_OK_AND_ASSIGN(InlineTask inner, s->Begin("other"));
      EXPECT_EQ(s->HeldHere(), 2);
      EXPECT_OK(inner.End());
    }
    // Another thread may drain: it waits for the block, which ends below.
    std::thread drainer([&] { EXPECT_OK(s->Drain()); });
    EXPECT_OK(outer.End());
    drainer.join();
  }
  EXPECT_EQ(s->HeldHere(), 0);
  // A worker's task body holds its tenant too.
  auto nested = s->Submit("be", [&] { return s->Begin("be").status(); });
  ASSERT_OK(nested.status());
  ASSERT_TRUE((*nested)->Wait(kLongWaitNs));
  ExpectError((*nested)->status(), ErrorType::kRuntime, "would wait for itself");
  EXPECT_OK(s->Drain(kLongWaitNs));
  EXPECT_OK(s->RemoveTenant("be"));
  EXPECT_OK(s->Shutdown());
}

TEST(Scheduler, DrainWithATimeout) {
  auto s = Make();
  ASSERT_NE(s, nullptr);
  ASSERT_OK(s->AddTenant(Tenant("t", QosClass::kBurstable)));
  Blocker blocker;
  ASSERT_OK_AND_ASSIGN(auto task, s->Submit("t", blocker.Fn()));
  ASSERT_TRUE(blocker.WaitStarted());
  const int64_t start = Scheduler::Now();
  const absl::Status st = s->Drain(20'000'000);
  EXPECT_TRUE(absl::IsDeadlineExceeded(st)) << st;
  EXPECT_GE(Scheduler::Now() - start, 20'000'000);
  blocker.Release();
  EXPECT_OK(s->Drain(kLongWaitNs));
  EXPECT_EQ(task->state(), TaskState::kCompleted);
}

TEST(Scheduler, BeginWaitsForAdmission) {
  SchedulerOptions so;
  so.worker_threads = 2;
  auto s = Make(so);
  ASSERT_NE(s, nullptr);
  TenantOptions o = Tenant("t", QosClass::kBurstable);
  o.max_running = 1;
  ASSERT_OK(s->AddTenant(o));
  Blocker blocker;
  ASSERT_OK_AND_ASSIGN(auto first, s->Submit("t", blocker.Fn()));
  ASSERT_TRUE(blocker.WaitStarted());
  Data a = RandomArray({100}, 8);
  std::vector<double> result;
  absl::Status status;
  Async waiter([&] {
    auto it = s->Begin("t");
    status = it.status();
    if (!it.ok()) return;
    std::shared_ptr<Task> task = it->task();  // End() lets go of it
    auto y = ops::Binary(ops::ElementwiseOp::kMultiply, a.array, Scalar::Float(3.0));
    status = y.status();
    if (y.ok()) status = it->End();
    if (status.ok()) {
      EXPECT_TRUE(task->Wait(kLongWaitNs));
      EXPECT_EQ(task->state(), TaskState::kCompleted);
      auto v = ToVector<double>(*y);
      if (v.ok()) result = *v;
    }
  });
  ASSERT_TRUE(WaitUntil([&] { return TenantOf(*s, "t").admission.pending == 1; }));
  EXPECT_FALSE(waiter.Done()) << "Begin waits while its task is pending";
  blocker.Release();
  waiter.Join();
  ASSERT_OK(status);
  std::vector<double> want(100);
  for (int i = 0; i < 100; ++i) want[i] = a.host[i] * 3.0;
  ExpectNear(result, want, 0);
  EXPECT_EQ(first->state(), TaskState::kCompleted);
}

// ---- failures and cancellation ----

TEST(Scheduler, AFailingTaskFailsAloneAndReturnsItsReservation) {
  auto s = Make();
  ASSERT_NE(s, nullptr);
  ASSERT_OK(s->AddTenant(Tenant("a", QosClass::kBurstable, kMiB)));
  ASSERT_OK(s->AddTenant(Tenant("b", QosClass::kGuaranteed, kMiB)));
  const Device d = TestDevice();
  TaskOptions mem;
  mem.memory = 256 * kKiB;
  ASSERT_OK_AND_ASSIGN(auto boom, s->Submit(
                                      "a",
                                      [d]() -> absl::Status {
                                        PGK_ASSIGN_OR_RETURN(GPUArray tmp,
                                                             ops::Ones({1000}, DType::Float32, d));
                                        return absl::InternalError("boom");
                                      },
                                      mem));
  ASSERT_OK_AND_ASSIGN(auto bad_op,
                       s->Submit(
                           "a",
                           [d]() -> absl::Status {
                             PGK_ASSIGN_OR_RETURN(GPUArray x, ops::Ones({3, 4}, DType::Float32, d));
                             PGK_ASSIGN_OR_RETURN(GPUArray y, ops::Ones({5, 2}, DType::Float32, d));
                             return ops::Matmul(x, y).status();
                           },
                           mem));
  std::vector<Data> inputs;
  std::vector<std::shared_ptr<Slot>> slots;
  std::vector<std::shared_ptr<Task>> good;
  for (int i = 0; i < 8; ++i) {
    inputs.push_back(RandomArray({64}, 100 + i));
    slots.push_back(std::make_shared<Slot>());
  }
  for (int i = 0; i < 8; ++i) {
    GPUArray x = inputs[i].array;
    auto slot = slots[i];
    ASSERT_OK_AND_ASSIGN(auto t, s->Submit(
                                     "b",
                                     [x, slot]() -> absl::Status {
                                       PGK_ASSIGN_OR_RETURN(GPUArray y, ops::Add(x, x));
                                       slot->Set(y);
                                       return absl::OkStatus();
                                     },
                                     mem));
    good.push_back(t);
  }
  ASSERT_TRUE(boom->Wait(kLongWaitNs));
  ASSERT_TRUE(bad_op->Wait(kLongWaitNs));
  EXPECT_EQ(boom->state(), TaskState::kFailed);
  EXPECT_EQ(boom->status(), absl::InternalError("boom"));
  EXPECT_EQ(States(boom->history()), "pending,admitted,running,failed");
  EXPECT_EQ(boom->history().back().reason, "boom");
  EXPECT_EQ(bad_op->state(), TaskState::kFailed);
  ExpectError(bad_op->status(), ErrorType::kValue, "matmul");
  for (int i = 0; i < 8; ++i) {
    ASSERT_TRUE(good[i]->Wait(kLongWaitNs));
    EXPECT_EQ(good[i]->state(), TaskState::kCompleted) << good[i]->status();
    ASSERT_OK_AND_ASSIGN(auto y, ToVector<double>(slots[i]->Get()));
    std::vector<double> want(64);
    for (int j = 0; j < 64; ++j) want[j] = 2 * inputs[i].host[j];
    ExpectNear(y, want, 0);
  }
  EXPECT_OK(s->Drain());
  SchedulerStats st = s->stats();
  EXPECT_EQ(TenantOf(st, "a").admission.failed, 2);
  EXPECT_EQ(TenantOf(st, "b").admission.completed, 8);
  EXPECT_EQ(st.admission.borrowed, 0);
  for (const TenantStats& t : st.tenants) {
    EXPECT_EQ(t.admission.memory_admitted, 0) << t.admission.name;
    EXPECT_EQ(t.admission.active, 0) << t.admission.name;
  }
  EXPECT_EQ(TenantOf(st, "a").memory_used, 0) << "the failed task's temporaries were freed";
}

TEST(Scheduler, CancelledErrorFromTheCallableCancelsTheTask) {
  auto s = Make();
  ASSERT_NE(s, nullptr);
  ASSERT_OK(s->AddTenant(Tenant("t", QosClass::kBurstable)));
  ASSERT_OK_AND_ASSIGN(auto task, s->Submit("t", [] { return absl::CancelledError("gave up"); }));
  ASSERT_TRUE(task->Wait(kLongWaitNs));
  EXPECT_EQ(task->state(), TaskState::kCancelled);
  EXPECT_EQ(task->status(), absl::CancelledError("gave up"));
  EXPECT_EQ(States(task->history()), "pending,admitted,running,cancelled");
  EXPECT_OK(s->Drain());
  EXPECT_EQ(s->stats().admission.cancelled, 1);
  EXPECT_EQ(s->stats().admission.failed, 0);
}

TEST(Scheduler, CancelPendingAdmittedRunningAndFinishedTasks) {
  SchedulerOptions so;
  so.worker_threads = 1;  // the blocker occupies the only worker: admitted tasks wait for it
  auto s = Make(so);
  ASSERT_NE(s, nullptr);
  TenantOptions one = Tenant("one", QosClass::kBurstable);
  one.max_running = 1;
  ASSERT_OK(s->AddTenant(one));
  ASSERT_OK(s->AddTenant(Tenant("other", QosClass::kBurstable)));
  Recorder rec;
  s->AddListener(rec.Listener());
  Blocker blocker;
  ASSERT_OK_AND_ASSIGN(auto running, s->Submit("one", blocker.Fn()));
  ASSERT_TRUE(blocker.WaitStarted());
  std::atomic<int> ran{0};
  auto count = [&ran] {
    ++ran;
    return absl::OkStatus();
  };
  ASSERT_OK_AND_ASSIGN(auto pending, s->Submit("one", count));
  ASSERT_OK_AND_ASSIGN(auto pending2, s->Submit("one", count));
  ASSERT_OK_AND_ASSIGN(auto admitted, s->Submit("other", count));
  ASSERT_OK_AND_ASSIGN(auto admitted2, s->Submit("other", count));
  EXPECT_EQ(pending->state(), TaskState::kPending);
  EXPECT_EQ(admitted->state(), TaskState::kAdmitted);
  SchedulerStats st = s->stats();
  EXPECT_EQ(st.ready, 2);
  EXPECT_EQ(st.running, 1);

  EXPECT_TRUE(s->Cancel(*pending));
  EXPECT_EQ(pending->state(), TaskState::kCancelled);
  EXPECT_TRUE(absl::IsCancelled(pending->status())) << pending->status();
  EXPECT_NE(pending->status().message().find("cancelled while pending"), std::string::npos);
  EXPECT_EQ(States(pending->history()), "pending,cancelled");
  EXPECT_EQ(pending2->state(), TaskState::kPending) << "still behind max_running";

  EXPECT_TRUE(s->Cancel(*admitted));
  EXPECT_EQ(admitted->state(), TaskState::kCancelled);
  EXPECT_TRUE(absl::IsCancelled(admitted->status()));
  EXPECT_NE(admitted->status().message().find("cancelled after admission"), std::string::npos);
  EXPECT_EQ(States(admitted->history()), "pending,admitted,cancelled");
  EXPECT_EQ(s->stats().ready, 1);

  EXPECT_FALSE(s->Cancel(*running)) << "a running task is only asked to stop";
  EXPECT_TRUE(running->cancel_requested());
  EXPECT_EQ(running->state(), TaskState::kRunning);
  EXPECT_FALSE(s->Cancel(*pending)) << "already finished";
  EXPECT_FALSE(pending2->cancel_requested());

  blocker.Release();  // the blocker ignores the request and completes
  for (auto* t : {&running, &pending2, &admitted2}) ASSERT_TRUE((*t)->Wait(kLongWaitNs));
  EXPECT_EQ(running->state(), TaskState::kCompleted);
  EXPECT_EQ(pending2->state(), TaskState::kCompleted);
  EXPECT_EQ(admitted2->state(), TaskState::kCompleted);
  EXPECT_FALSE(s->Cancel(*running));
  EXPECT_OK(s->Drain());
  EXPECT_EQ(ran.load(), 2) << "the cancelled callables never ran";
  st = s->stats();
  EXPECT_EQ(st.admission.cancelled, 2);
  EXPECT_EQ(st.admission.completed, 3);
  EXPECT_EQ(st.admission.pending + st.admission.active + st.ready + st.running, 0);
  EXPECT_OK(s->Shutdown());  // every notification delivered
  EXPECT_EQ(States(rec.of(admitted->id())), "admitted,cancelled");
  EXPECT_EQ(States(rec.of(pending->id())), "cancelled");
}

TEST(Scheduler, ARunningTaskMayHonourTheCancelRequest) {
  auto s = Make();
  ASSERT_NE(s, nullptr);
  ASSERT_OK(s->AddTenant(Tenant("t", QosClass::kBurstable)));
  struct Shared {
    Flag started, handle_set;
    std::atomic<Task*> task{nullptr};
  };
  auto sh = std::make_shared<Shared>();
  ASSERT_OK_AND_ASSIGN(auto task, s->Submit("t", [sh]() -> absl::Status {
    sh->started.Set();
    if (!sh->handle_set.Wait()) return absl::InternalError("no handle");
    const auto until = std::chrono::steady_clock::now() + kLongWait;
    while (!sh->task.load()->cancel_requested()) {
      if (std::chrono::steady_clock::now() > until) return absl::InternalError("never asked");
      std::this_thread::sleep_for(1ms);
    }
    return absl::CancelledError("stopped on request");
  }));
  sh->task = task.get();
  sh->handle_set.Set();
  ASSERT_TRUE(sh->started.Wait());
  EXPECT_FALSE(s->Cancel(*task));
  ASSERT_TRUE(task->Wait(kLongWaitNs));
  EXPECT_EQ(task->state(), TaskState::kCancelled);
  EXPECT_EQ(task->status(), absl::CancelledError("stopped on request"));
}

// ---- timeouts, rejection, dependencies ----

TEST(Scheduler, TimeoutsRejectPendingTasks) {
  SchedulerOptions so;
  so.worker_threads = 2;  // one runs the blocker, the other keeps time
  auto s = Make(so);
  ASSERT_NE(s, nullptr);
  TenantOptions one = Tenant("one", QosClass::kBurstable);
  one.max_running = 1;
  ASSERT_OK(s->AddTenant(one));
  Blocker blocker;
  ASSERT_OK_AND_ASSIGN(auto first, s->Submit("one", blocker.Fn()));
  ASSERT_TRUE(blocker.WaitStarted());
  TaskOptions t;
  t.timeout_ns = 20'000'000;  // 20 ms
  ASSERT_OK_AND_ASSIGN(auto timed, s->Submit(
                                       "one", [] { return absl::OkStatus(); }, t));
  TaskOptions both;
  both.deadline_ns = Scheduler::Now() + 3600'000'000'000;  // an hour: the timeout is earlier
  both.timeout_ns = 30'000'000;
  ASSERT_OK_AND_ASSIGN(auto timed2, s->Submit(
                                        "one", [] { return absl::OkStatus(); }, both));
  ASSERT_OK_AND_ASSIGN(auto patient, s->Submit("one", [] { return absl::OkStatus(); }));
  ASSERT_TRUE(timed->Wait(kLongWaitNs));
  ASSERT_TRUE(timed2->Wait(kLongWaitNs));
  for (auto& task : {timed, timed2}) {
    EXPECT_EQ(task->state(), TaskState::kRejected);
    ExpectError(task->status(), ErrorType::kTaskRejected,
                absl::StrCat("task ", task->id(),
                             " (tenant 'one') rejected: deadline passed "
                             "while pending"));
    EXPECT_EQ(States(task->history()), "pending,rejected");
    EXPECT_GE(task->end_ns() - task->submit_ns(), task->options().timeout_ns);
  }
  EXPECT_EQ(patient->state(), TaskState::kPending);
  EXPECT_EQ(first->state(), TaskState::kRunning);
  // A deadline already passed is rejected at submission: the returned task is finished.
  TaskOptions past;
  past.deadline_ns = Scheduler::Now() - 1;
  ASSERT_OK_AND_ASSIGN(auto late, s->Submit(
                                      "one", [] { return absl::OkStatus(); }, past));
  EXPECT_EQ(late->state(), TaskState::kRejected);
  EXPECT_EQ(late->history().back().reason, "deadline already passed at submission");
  blocker.Release();
  ASSERT_TRUE(patient->Wait(kLongWaitNs));
  EXPECT_EQ(patient->state(), TaskState::kCompleted);
  EXPECT_OK(s->Drain());
  EXPECT_EQ(s->stats().admission.rejected, 3);
}

TEST(Scheduler, SubmitValidatesAndRejectsWhatCanNeverFit) {
  SchedulerOptions so;
  so.memory_capacity = 4 * kMiB;
  auto s = Make(so);
  ASSERT_NE(s, nullptr);
  ASSERT_OK(s->AddTenant(Tenant("b", QosClass::kBurstable, kMiB, 2 * kMiB)));
  auto ok = [] { return absl::OkStatus(); };
  ExpectError(s->Submit("nope", ok).status(), ErrorType::kValue,
              "submit: tenant 'nope' does not exist");
  ExpectError(s->Submit("b", TaskFn()).status(), ErrorType::kValue, "has no callable");
  for (auto [mutate, name] : {std::pair{+[](TaskOptions& o) { o.memory = -1; }, "memory"},
                              std::pair{+[](TaskOptions& o) { o.deadline_ns = -1; }, "deadline"},
                              std::pair{+[](TaskOptions& o) { o.timeout_ns = -1; }, "timeout"}}) {
    TaskOptions o;
    mutate(o);
    ExpectError(s->Submit("b", ok, o).status(), ErrorType::kValue,
                absl::StrCat("submit: ", name, " must be >= 0, got -1 (tenant 'b')"));
  }
  TaskOptions huge;
  huge.memory = 2 * kMiB + 1;
  std::atomic<bool> ran{false};
  ASSERT_OK_AND_ASSIGN(auto never, s->Submit(
                                       "b",
                                       [&] {
                                         ran = true;
                                         return absl::OkStatus();
                                       },
                                       huge));
  EXPECT_EQ(never->state(), TaskState::kRejected) << "rejected at once";
  ExpectError(never->status(), ErrorType::kTaskRejected, "can never fit tenant 'b'");
  EXPECT_EQ(States(never->history()), "pending,rejected");
  TaskOptions unknown;
  unknown.depends_on = {987654};
  ASSERT_OK_AND_ASSIGN(auto orphan, s->Submit("b", ok, unknown));
  EXPECT_EQ(orphan->state(), TaskState::kRejected);
  ExpectError(orphan->status(), ErrorType::kTaskRejected, "unknown dependency 987654");
  EXPECT_OK(s->Drain());
  EXPECT_FALSE(ran.load());
  EXPECT_EQ(s->stats().admission.rejected, 2);
}

TEST(Scheduler, DependenciesAcrossTenantsOrderTasksAndPassResults) {
  auto s = Make();
  ASSERT_NE(s, nullptr);
  ASSERT_OK(s->AddTenant(Tenant("producer", QosClass::kGuaranteed, kMiB)));
  ASSERT_OK(s->AddTenant(Tenant("consumer", QosClass::kBestEffort)));
  Data a = RandomArray({12, 30}, 9), b = RandomArray({30, 5}, 10);
  auto produced = std::make_shared<Slot>();
  auto consumed = std::make_shared<Slot>();
  Flag go;
  ASSERT_OK_AND_ASSIGN(auto first, s->Submit("producer", [&, produced]() -> absl::Status {
    go.Wait();
    PGK_ASSIGN_OR_RETURN(GPUArray c, ops::Matmul(a.array, b.array));
    produced->Set(c);
    return absl::OkStatus();
  }));
  TaskOptions after;
  after.depends_on = {first->id()};
  ASSERT_OK_AND_ASSIGN(auto second, s->Submit(
                                        "consumer",
                                        [produced, consumed]() -> absl::Status {
                                          PGK_ASSIGN_OR_RETURN(
                                              GPUArray d,
                                              ops::Binary(ops::ElementwiseOp::kSubtract,
                                                          produced->Get(), Scalar::Float(0.5)));
                                          consumed->Set(d);
                                          return absl::OkStatus();
                                        },
                                        after));
  EXPECT_EQ(second->state(), TaskState::kPending) << "waits for its dependency";
  // A dependent of the dependent, failing, and one of the failure.
  TaskOptions after2;
  after2.depends_on = {second->id()};
  ASSERT_OK_AND_ASSIGN(
      auto third,
      s->Submit(
          "producer", [] { return absl::InvalidArgumentError("third fails"); }, after2));
  TaskOptions after3;
  after3.depends_on = {third->id(), first->id()};
  std::atomic<bool> fourth_ran{false};
  ASSERT_OK_AND_ASSIGN(auto fourth, s->Submit(
                                        "consumer",
                                        [&] {
                                          fourth_ran = true;
                                          return absl::OkStatus();
                                        },
                                        after3));
  go.Set();
  for (auto& t : {first, second, third, fourth}) ASSERT_TRUE(t->Wait(kLongWaitNs));
  EXPECT_EQ(first->state(), TaskState::kCompleted);
  EXPECT_EQ(second->state(), TaskState::kCompleted) << second->status();
  EXPECT_GE(second->start_ns(), first->end_ns());
  std::vector<double> want = HostMatmul(a.host, b.host, 12, 30, 5);
  for (double& v : want) v -= 0.5;
  ASSERT_OK_AND_ASSIGN(auto got, ToVector<double>(consumed->Get()));
  ExpectNear(got, want);
  EXPECT_EQ(third->state(), TaskState::kFailed);
  EXPECT_EQ(fourth->state(), TaskState::kCancelled);
  EXPECT_EQ(States(fourth->history()), "pending,cancelled");
  EXPECT_EQ(fourth->history().back().reason, absl::StrCat("dependency ", third->id(), " failed"));
  EXPECT_TRUE(absl::IsCancelled(fourth->status()));
  EXPECT_FALSE(fourth_ran.load());
}

// ---- pacing ----

TEST(Scheduler, PacingBoundsKernelsInFlightOfBestEffortTenants) {
  Data x = RandomArray({2048}, 11);
  const int64_t per_op = LaunchesOf([&] {
    EXPECT_OK(ops::Binary(ops::ElementwiseOp::kAdd, x.array, Scalar::Float(1.0)).status());
  });
  ASSERT_GE(per_op, 1);
  auto s = Make();
  ASSERT_NE(s, nullptr);
  TenantOptions be = Tenant("be", QosClass::kBestEffort);
  be.max_inflight = 1;
  ASSERT_OK(s->AddTenant(be));
  ASSERT_OK(s->AddTenant(Tenant("g", QosClass::kGuaranteed, kMiB)));
  constexpr int kOps = 40;
  auto chain = [x](std::shared_ptr<Slot> slot) {
    return [x, slot]() -> absl::Status {
      GPUArray v = x.array;
      for (int i = 0; i < kOps; ++i) {
        PGK_ASSIGN_OR_RETURN(v, ops::Binary(ops::ElementwiseOp::kAdd, v, Scalar::Float(1.0)));
      }
      slot->Set(v);
      return absl::OkStatus();
    };
  };
  std::vector<double> want(2048);
  for (int i = 0; i < 2048; ++i) {
    want[i] = x.host[i];
    for (int k = 0; k < kOps; ++k) want[i] += 1.0;  // rounded like the kernels
  }
  for (const char* tenant : {"be", "g"}) {
    auto slot = std::make_shared<Slot>();
    ASSERT_OK_AND_ASSIGN(auto task, s->Submit(tenant, chain(slot)));
    ASSERT_TRUE(task->Wait(kLongWaitNs));
    ASSERT_EQ(task->state(), TaskState::kCompleted) << task->status();
    ASSERT_OK_AND_ASSIGN(auto got, ToVector<double>(slot->Get()));
    ExpectNear(got, want, 0, tenant);
  }
  // An inline best-effort task is paced too.
  {
    ASSERT_OK_AND_ASSIGN(InlineTask it, s->Begin("be"));
    GPUArray v = x.array;
    for (int i = 0; i < kOps; ++i) {
      ASSERT_OK_AND_ASSIGN(v, ops::Binary(ops::ElementwiseOp::kAdd, v, Scalar::Float(1.0)));
    }
    ASSERT_OK(it.End());
    ASSERT_OK_AND_ASSIGN(auto got, ToVector<double>(v));
    ExpectNear(got, want, 0, "inline");
  }
  EXPECT_OK(s->Drain());
  ASSERT_TRUE(WaitUntil([&] { return TenantOf(*s, "be").inflight == 0; }))
      << "every paced kernel's completion is observed";
  TenantStats t = TenantOf(*s, "be");
  EXPECT_EQ(t.inflight_limit, 1);
  EXPECT_EQ(t.max_inflight_seen, 1);
  EXPECT_EQ(t.launches, 2 * kOps * per_op);
  TenantStats g = TenantOf(*s, "g");
  EXPECT_EQ(g.inflight_limit, 0) << "guaranteed: never paced";
  EXPECT_EQ(g.launches, kOps * per_op);
  EXPECT_EQ(g.max_inflight_seen, 0);
  EXPECT_EQ(g.paced_waits, 0);
  EXPECT_EQ(g.inflight, 0);
}

TEST(Scheduler, PacedTenantFillsItsLimitAndWaitsThenDrains) {
  SKIP_UNLESS_CPU();
  Data x = RandomArray({512}, 12);
  const int64_t per_op = LaunchesOf([&] {
    EXPECT_OK(ops::Binary(ops::ElementwiseOp::kMultiply, x.array, Scalar::Float(2.0)).status());
  });
  auto s = Make();
  ASSERT_NE(s, nullptr);
  TenantOptions be = Tenant("be", QosClass::kBestEffort);
  be.max_inflight = 2;
  ASSERT_OK(s->AddTenant(be));
  constexpr int kOps = 10;
  StreamGate gate(*DefaultStream());  // the task's stream waits for the default stream
  auto slot = std::make_shared<Slot>();
  ASSERT_OK_AND_ASSIGN(auto task, s->Submit("be", [x, slot]() -> absl::Status {
    GPUArray v = x.array;
    for (int i = 0; i < kOps; ++i) {
      PGK_ASSIGN_OR_RETURN(v, ops::Binary(ops::ElementwiseOp::kMultiply, v, Scalar::Float(2.0)));
    }
    slot->Set(v);
    return absl::OkStatus();
  }));
  // Two kernels are queued behind the gate; the third launch waits for a slot.
  ASSERT_TRUE(WaitUntil([&] {
    TenantStats t = TenantOf(*s, "be");
    return t.inflight == 2 && t.paced_waits >= 1;
  }));
  if (per_op == 1) EXPECT_EQ(TenantOf(*s, "be").launches, 3) << "two in flight, one waiting";
  EXPECT_EQ(task->state(), TaskState::kRunning);
  gate.Open();
  ASSERT_TRUE(task->Wait(kLongWaitNs));
  ASSERT_EQ(task->state(), TaskState::kCompleted) << task->status();
  ASSERT_TRUE(WaitUntil([&] { return TenantOf(*s, "be").inflight == 0; }));
  TenantStats t = TenantOf(*s, "be");
  EXPECT_EQ(t.max_inflight_seen, 2);
  EXPECT_EQ(t.launches, kOps * per_op);
  EXPECT_GE(t.paced_waits, 1);
  ASSERT_OK_AND_ASSIGN(auto got, ToVector<double>(slot->Get()));
  std::vector<double> want(512);
  for (int i = 0; i < 512; ++i) want[i] = x.host[i] * 1024.0;
  ExpectNear(got, want, 0);
}

// Without a partition a best-effort tenant drops to best_effort_inflight_while_guaranteed
// while guaranteed work runs; with one it keeps its limit (its SMs are not the guaranteed
// tenant's).
TEST(Scheduler, BestEffortIsThrottledWhileGuaranteedWorkRunsUnlessPartitioned) {
  SKIP_UNLESS_CPU();
  ASSERT_OK_AND_ASSIGN(hal::DeviceProperties props, Runtime::Get().properties(TestDevice()));
  for (bool partitioned : {false, true}) {
    SCOPED_TRACE(partitioned ? "partitioned" : "whole device");
    if (partitioned && props.multiprocessors < 2) continue;
    Data x = RandomArray({512}, 13);
    SchedulerOptions so;
    so.best_effort_inflight_while_guaranteed = 1;
    auto s = Make(so);
    ASSERT_NE(s, nullptr);
    ASSERT_OK(s->AddTenant(Tenant("g", QosClass::kGuaranteed, kMiB)));
    TenantOptions be = Tenant("be", QosClass::kBestEffort);
    be.max_inflight = 4;
    be.sms = partitioned ? 1 : 0;
    ASSERT_OK(s->AddTenant(be));
    ASSERT_EQ(TenantOf(*s, "be").sms > 0, partitioned);
    Blocker blocker;
    ASSERT_OK_AND_ASSIGN(auto g, s->Submit("g", blocker.Fn()));
    ASSERT_TRUE(blocker.WaitStarted());
    EXPECT_EQ(s->stats().guaranteed_running, 1);
    StreamGate gate(*DefaultStream());
    auto slot = std::make_shared<Slot>();
    ASSERT_OK_AND_ASSIGN(auto task, s->Submit("be", [x, slot]() -> absl::Status {
      GPUArray v = x.array;
      for (int i = 0; i < 10; ++i) {
        PGK_ASSIGN_OR_RETURN(v, ops::Binary(ops::ElementwiseOp::kAdd, v, Scalar::Float(1.0)));
      }
      slot->Set(v);
      return absl::OkStatus();
    }));
    // While the gate holds the stream: 1 kernel in flight and the next waiting (limit 1), or
    // all 4 (the tenant's own limit).
    const int limit = partitioned ? 4 : 1;
    ASSERT_TRUE(WaitUntil([&] {
      TenantStats t = TenantOf(*s, "be");
      return t.inflight == limit && t.paced_waits >= 1;
    }));
    gate.Open();
    ASSERT_TRUE(task->Wait(kLongWaitNs));
    ASSERT_EQ(task->state(), TaskState::kCompleted) << task->status();
    EXPECT_EQ(g->state(), TaskState::kRunning) << "the guaranteed task ran all along";
    EXPECT_EQ(TenantOf(*s, "be").max_inflight_seen, limit);
    blocker.Release();
    ASSERT_TRUE(g->Wait(kLongWaitNs));
    EXPECT_OK(s->Drain());
    EXPECT_EQ(s->stats().guaranteed_running, 0);
    ASSERT_OK_AND_ASSIGN(auto got, ToVector<double>(slot->Get()));
    std::vector<double> want(512);
    for (int i = 0; i < 512; ++i) {
      want[i] = x.host[i];
      for (int k = 0; k < 10; ++k) want[i] += 1.0;
    }
    ExpectNear(got, want, 0);
  }
}

TEST(Scheduler, BestEffortWaitsWhileGuaranteedWorkRunsWhenItsBudgetIsZero) {
  Data x = RandomArray({256}, 14);
  SchedulerOptions so;
  so.best_effort_inflight_while_guaranteed = 0;
  auto s = Make(so);
  ASSERT_NE(s, nullptr);
  ASSERT_OK(s->AddTenant(Tenant("g", QosClass::kGuaranteed, kMiB)));
  TenantOptions be = Tenant("be", QosClass::kBestEffort);
  be.max_inflight = 4;
  be.sms = 1;  // a hold applies to partitioned tenants too (a one-SM device: no partition)
  ASSERT_OK(s->AddTenant(be));
  Blocker blocker;
  ASSERT_OK_AND_ASSIGN(auto g, s->Submit("g", blocker.Fn()));
  ASSERT_TRUE(blocker.WaitStarted());
  auto slot = std::make_shared<Slot>();
  ASSERT_OK_AND_ASSIGN(auto task, s->Submit("be", [x, slot]() -> absl::Status {
    PGK_ASSIGN_OR_RETURN(GPUArray v,
                         ops::Binary(ops::ElementwiseOp::kAdd, x.array, Scalar::Float(2.0)));
    slot->Set(v);
    return absl::OkStatus();
  }));
  ASSERT_TRUE(WaitUntil([&] { return TenantOf(*s, "be").paced_waits == 1; }))
      << "held at its first launch";
  EXPECT_EQ(TenantOf(*s, "be").inflight, 0);
  EXPECT_EQ(task->state(), TaskState::kRunning);
  blocker.Release();
  ASSERT_TRUE(task->Wait(kLongWaitNs));
  ASSERT_EQ(task->state(), TaskState::kCompleted) << task->status();
  ASSERT_OK_AND_ASSIGN(auto got, ToVector<double>(slot->Get()));
  std::vector<double> want(256);
  for (int i = 0; i < 256; ++i) want[i] = x.host[i] + 2.0;
  ExpectNear(got, want, 0);
  ASSERT_TRUE(g->Wait(kLongWaitNs));
  EXPECT_LE(g->end_ns(), task->end_ns());
}

// ---- removal, shutdown, leaks, replay ----

TEST(Scheduler, RemoveTenantCancelsWaitingTasksAndWaitsForRunningOnes) {
  SchedulerOptions so;
  so.worker_threads = 2;
  auto s = Make(so);
  ASSERT_NE(s, nullptr);
  TenantOptions one = Tenant("one", QosClass::kGuaranteed, kMiB);
  one.max_running = 1;
  ASSERT_OK(s->AddTenant(one));
  ASSERT_OK(s->AddTenant(Tenant("other", QosClass::kBurstable)));
  Blocker blocker;
  ASSERT_OK_AND_ASSIGN(auto running, s->Submit("one", blocker.Fn()));
  ASSERT_TRUE(blocker.WaitStarted());
  ASSERT_OK_AND_ASSIGN(auto waiting, s->Submit("one", [] { return absl::OkStatus(); }));
  ASSERT_OK_AND_ASSIGN(auto waiting2, s->Submit("one", [] { return absl::OkStatus(); }));
  absl::Status begin_status;
  Async inline_waiter([&] { begin_status = s->Begin("one").status(); });
  ASSERT_TRUE(WaitUntil([&] { return TenantOf(*s, "one").admission.pending == 3; }));

  absl::Status removed = absl::UnknownError("not yet");
  Async remover([&] { removed = s->RemoveTenant("one"); });
  ASSERT_TRUE(waiting->Wait(kLongWaitNs));
  ASSERT_TRUE(waiting2->Wait(kLongWaitNs));
  inline_waiter.Join();
  EXPECT_EQ(waiting->state(), TaskState::kCancelled);
  EXPECT_EQ(waiting2->state(), TaskState::kCancelled);
  EXPECT_TRUE(absl::IsCancelled(begin_status)) << begin_status;
  EXPECT_TRUE(running->cancel_requested());
  EXPECT_EQ(s->tenants(), std::vector<std::string>{"other"}) << "hidden while removing";
  ExpectError(s->Submit("one", [] { return absl::OkStatus(); }).status(), ErrorType::kValue,
              "tenant 'one' does not exist");
  ExpectError(s->RemoveTenant("one"), ErrorType::kValue, "tenant 'one' does not exist");
  EXPECT_FALSE(remover.Done()) << "waits for the running task";
  EXPECT_EQ(running->state(), TaskState::kRunning);
  blocker.Release();
  remover.Join();
  ASSERT_OK(removed);
  EXPECT_EQ(running->state(), TaskState::kCompleted) << "it ignored the request";
  EXPECT_EQ(s->stats().admission.reserved, 0) << "the reservation is returned";
  EXPECT_EQ(s->stats().tenants.size(), 1u);
  // The name can be used again.
  ASSERT_OK(s->AddTenant(Tenant("one", QosClass::kBurstable)));
  ASSERT_OK_AND_ASSIGN(auto again, s->Submit("one", [] { return absl::OkStatus(); }));
  ASSERT_TRUE(again->Wait(kLongWaitNs));
  EXPECT_EQ(again->state(), TaskState::kCompleted);
  ExpectError(s->RemoveTenant("never"), ErrorType::kValue, "tenant 'never' does not exist");
}

TEST(Scheduler, ShutdownCancelsWaitingTasksWaitsForRunningOnesAndIsIdempotent) {
  SchedulerOptions so;
  so.worker_threads = 2;
  auto s = Make(so);
  ASSERT_NE(s, nullptr);
  TenantOptions one = Tenant("one", QosClass::kBurstable);
  one.max_running = 1;
  ASSERT_OK(s->AddTenant(one));
  Blocker blocker;
  ASSERT_OK_AND_ASSIGN(auto running, s->Submit("one", blocker.Fn()));
  ASSERT_TRUE(blocker.WaitStarted());
  std::vector<std::shared_ptr<Task>> waiting;
  for (int i = 0; i < 3; ++i) {
    ASSERT_OK_AND_ASSIGN(auto t, s->Submit("one", [] { return absl::OkStatus(); }));
    waiting.push_back(t);
  }
  Async stopper([&] { EXPECT_OK(s->Shutdown()); });
  for (auto& t : waiting) {
    ASSERT_TRUE(t->Wait(kLongWaitNs));
    EXPECT_EQ(t->state(), TaskState::kCancelled);
  }
  EXPECT_FALSE(stopper.Done()) << "waits for the running task";
  ExpectError(s->Submit("one", [] { return absl::OkStatus(); }).status(), ErrorType::kRuntime,
              "submit: the scheduler is shut down");
  ExpectError(s->AddTenant(Tenant("late", QosClass::kBurstable)), ErrorType::kRuntime,
              "the scheduler is shut down");
  ExpectError(s->Begin("one").status(), ErrorType::kRuntime, "shut down");
  blocker.Release();
  stopper.Join();
  EXPECT_EQ(running->state(), TaskState::kCompleted);
  EXPECT_FALSE(running->cancel_requested()) << "Shutdown lets running tasks finish";
  EXPECT_OK(s->Shutdown());  // idempotent
  EXPECT_OK(s->Drain());     // nothing live
  SchedulerStats st = s->stats();
  EXPECT_EQ(st.admission.cancelled, 3);
  EXPECT_EQ(st.admission.completed, 1);
  EXPECT_EQ(st.admission.pending + st.admission.active + st.running + st.ready, 0);
}

TEST(Scheduler, NoLeaksAfterDrainAndTheDecisionsReplay) {
  SchedulerOptions so;
  so.record_admission = true;
  so.memory_capacity = 8 * kMiB;
  so.worker_threads = 3;
  auto s = Make(so);
  ASSERT_NE(s, nullptr);
  TenantOptions g = Tenant("g", QosClass::kGuaranteed, 2 * kMiB);
  g.max_running = 2;
  ASSERT_OK(s->AddTenant(g));
  ASSERT_OK(s->AddTenant(Tenant("b", QosClass::kBurstable, kMiB, 4 * kMiB)));
  TenantOptions be = Tenant("be", QosClass::kBestEffort, 0, 3 * kMiB);
  be.max_inflight = 2;
  ASSERT_OK(s->AddTenant(be));
  const char* names[] = {"g", "b", "be"};
  std::vector<std::shared_ptr<Task>> tasks;
  std::vector<std::shared_ptr<Slot>> slots;
  Data x = RandomArray({256}, 15);
  for (int i = 0; i < 60; ++i) {
    TaskOptions o;
    o.memory = (i % 7) * 300 * kKiB;
    o.priority = i % 3;
    if (i % 11 == 5) o.memory = 5 * kMiB;  // never fits anyone
    if (i % 5 == 4 && !tasks.empty()) o.depends_on = {tasks[i - 1]->id()};
    auto slot = std::make_shared<Slot>();
    slots.push_back(slot);
    TaskFn fn = [x, slot, i]() -> absl::Status {
      PGK_ASSIGN_OR_RETURN(GPUArray v, ops::Binary(ops::ElementwiseOp::kAdd, x.array,
                                                   Scalar::Float(static_cast<double>(i))));
      slot->Set(v);
      if (i % 9 == 3) return absl::InternalError("planned failure");
      if (i % 13 == 6) return absl::CancelledError("planned cancellation");
      return absl::OkStatus();
    };
    ASSERT_OK_AND_ASSIGN(auto t, s->Submit(names[i % 3], fn, o));
    tasks.push_back(t);
    if (i % 8 == 7) s->Cancel(*t);
  }
  {
    ASSERT_OK_AND_ASSIGN(InlineTask it, s->Begin("b", TaskOptions{"inline", 100 * kKiB}));
    tasks.push_back(it.task());  // End() lets go of it
    ASSERT_OK_AND_ASSIGN(GPUArray v, ops::Add(x.array, x.array));
    ASSERT_OK(it.End());
  }
  EXPECT_OK(s->Drain());
  std::map<TaskState, int> by_state;
  for (size_t i = 0; i < tasks.size(); ++i) {
    ASSERT_TRUE(tasks[i]->done()) << i;
    ++by_state[tasks[i]->state()];
    if (i < slots.size() && tasks[i]->state() == TaskState::kCompleted) {
      ASSERT_OK_AND_ASSIGN(auto got, ToVector<double>(slots[i]->Get()));
      std::vector<double> want(256);
      for (int j = 0; j < 256; ++j) want[j] = x.host[j] + static_cast<double>(i);
      ExpectNear(got, want, 0, absl::StrCat("task ", i));
    }
  }
  SchedulerStats st = s->stats();
  EXPECT_EQ(st.admission.completed, by_state[TaskState::kCompleted]);
  EXPECT_EQ(st.admission.failed, by_state[TaskState::kFailed]);
  EXPECT_EQ(st.admission.cancelled, by_state[TaskState::kCancelled]);
  EXPECT_EQ(st.admission.rejected, by_state[TaskState::kRejected]);
  EXPECT_GT(by_state[TaskState::kCompleted], 10);
  EXPECT_GT(by_state[TaskState::kFailed], 0);
  EXPECT_GT(by_state[TaskState::kCancelled], 0);
  EXPECT_GT(by_state[TaskState::kRejected], 0);
  EXPECT_EQ(st.admission.pending, 0);
  EXPECT_EQ(st.admission.active, 0);
  EXPECT_EQ(st.admission.borrowed, 0);
  EXPECT_EQ(st.running, 0);
  EXPECT_EQ(st.ready, 0);
  EXPECT_EQ(st.guaranteed_running, 0);
  slots.clear();  // results die: the quotas go back to zero
  ASSERT_TRUE(WaitUntil([&] { return TenantOf(*s, "be").inflight == 0; }));
  st = s->stats();
  for (const TenantStats& t : st.tenants) {
    EXPECT_EQ(t.admission.memory_admitted, 0) << t.admission.name;
    EXPECT_EQ(t.admission.pending, 0) << t.admission.name;
    EXPECT_EQ(t.admission.active, 0) << t.admission.name;
    EXPECT_EQ(t.memory_used, 0) << t.admission.name;
    EXPECT_EQ(t.inflight, 0) << t.admission.name;
    const int64_t ran = t.admission.completed + t.admission.failed;
    EXPECT_GE(t.total_us.count, ran) << t.admission.name;
    EXPECT_EQ(t.queue_us.count, t.run_us.count);
    if (t.total_us.count > 0) {
      EXPECT_LE(t.total_us.p50, t.total_us.p90);
      EXPECT_LE(t.total_us.p90, t.total_us.p99);
      EXPECT_LE(t.total_us.p99, t.total_us.max);
      EXPECT_GT(t.total_us.mean, 0);
      EXPECT_LE(t.run_us.max, t.total_us.max);
    }
  }
  EXPECT_GT(TenantOf(st, "g").memory_peak, 0);

  const std::vector<Decision> decisions = s->decisions();
  ASSERT_OK_AND_ASSIGN(std::vector<Decision> replayed,
                       AdmissionController::Replay(s->memory_capacity(), s->admission_trace()));
  ASSERT_EQ(replayed.size(), decisions.size());
  EXPECT_TRUE(replayed == decisions);
  // Every task got exactly one admission decision or a terminal one without admission.
  EXPECT_GE(decisions.size(), tasks.size());
}

TEST(Scheduler, WithoutRecordingThereAreNoDecisionsOrTrace) {
  auto s = Make();
  ASSERT_NE(s, nullptr);
  ASSERT_OK(s->AddTenant(Tenant("t", QosClass::kBurstable)));
  ASSERT_OK_AND_ASSIGN(auto t, s->Submit("t", [] { return absl::OkStatus(); }));
  ASSERT_TRUE(t->Wait(kLongWaitNs));
  EXPECT_OK(s->Drain());
  EXPECT_TRUE(s->decisions().empty());
  EXPECT_TRUE(s->admission_trace().empty());
}

TEST(Scheduler, HistoryIsBounded) {
  SchedulerOptions so;
  so.history_capacity = 10;
  auto s = Make(so);
  ASSERT_NE(s, nullptr);
  ASSERT_OK(s->AddTenant(Tenant("t", QosClass::kBurstable)));
  std::shared_ptr<Task> last;
  for (int i = 0; i < 6; ++i) {
    ASSERT_OK_AND_ASSIGN(last, s->Submit("t", [] { return absl::OkStatus(); }));
    ASSERT_TRUE(last->Wait(kLongWaitNs));
  }
  EXPECT_OK(s->Drain());
  std::vector<TransitionRecord> h = s->history();
  ASSERT_EQ(h.size(), 10u);
  EXPECT_EQ(h.back().task, last->id());
  EXPECT_EQ(h.back().to, TaskState::kCompleted);
  for (size_t i = 1; i < h.size(); ++i) EXPECT_LE(h[i - 1].time_ns, h[i].time_ns);
  EXPECT_EQ(last->history().size(), 4u) << "a task keeps its own history";
}

// ---- known bugs (disabled until fixed; see the report) ----

// Shutdown and RemoveTenant cancel the waiting tasks one by one, releasing the lock in between.
// Cancelling a head-of-line task lets admission admit the next one, which a worker starts before
// its own Cancel comes: a task that was pending when Shutdown / RemoveTenant began runs (in 49
// and 41 of the 200 rounds here on a 2-core machine). Its callable must never run.
TEST(Scheduler, ShutdownAndRemoveTenantNeverStartATaskThatWasWaiting) {
  for (bool remove : {false, true}) {
    int ran_rounds = 0;
    for (int round = 0; round < 200; ++round) {
      SchedulerOptions so;
      so.worker_threads = 2;
      so.memory_capacity = 1000;
      auto s = Make(so);
      ASSERT_NE(s, nullptr);
      ASSERT_OK(s->AddTenant(Tenant("a", QosClass::kBurstable)));
      Blocker blocker;
      ASSERT_OK_AND_ASSIGN(auto big, s->Submit("a", blocker.Fn(), TaskOptions{"big", 800}));
      ASSERT_TRUE(blocker.WaitStarted());
      auto ok = [] { return absl::OkStatus(); };
      ASSERT_OK_AND_ASSIGN(auto head, s->Submit("a", ok, TaskOptions{"head", 300}));
      auto ran = std::make_shared<std::atomic<bool>>(false);
      ASSERT_OK_AND_ASSIGN(auto behind, s->Submit(
                                            "a",
                                            [ran] {
                                              *ran = true;
                                              return absl::OkStatus();
                                            },
                                            TaskOptions{"behind", 100}));
      ASSERT_EQ(head->state(), TaskState::kPending);
      ASSERT_EQ(behind->state(), TaskState::kPending) << "blocked behind the head of line";
      Async stopper([&] {
        if (remove) {
          EXPECT_OK(s->RemoveTenant("a"));
        } else {
          EXPECT_OK(s->Shutdown());
        }
      });
      ASSERT_TRUE(behind->Wait(kLongWaitNs));
      blocker.Release();
      stopper.Join();
      ran_rounds += ran->load();
    }
    EXPECT_EQ(ran_rounds, 0) << (remove ? "RemoveTenant" : "Shutdown")
                             << " started a task that was pending when it began";
  }
}

}  // namespace
}  // namespace pygpukit

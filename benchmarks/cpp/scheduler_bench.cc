// Microbenchmarks of the scheduler: the latency of one admission decision (target: <= 10 us) of
// the AdmissionController with N tenants and Q pending tasks, timed per call (manual time, so the
// untimed bookkeeping that keeps the state steady is left out), and, for information, the
// end-to-end round trip of an empty task through a Scheduler on the runtime's default device.
//   scheduler_bench --benchmark_out=scheduler_bench.json --benchmark_out_format=json
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "runtime/runtime.h"
#include "runtime/sched/admission.h"
#include "runtime/sched/scheduler.h"

namespace pygpukit {
namespace {

constexpr int64_t kCapacity = int64_t{1} << 40;  // memory never limits: order, deps, max_running
constexpr int64_t kTaskBytes = 1 << 20;

double Seconds(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// A controller with `n` Burstable tenants (t0, t1, ...), each reserving 1 GiB.
struct Fixture {
  AdmissionController c{kCapacity};
  std::vector<std::string> names;
  uint64_t next_id = 1;
  int64_t now = 1;
  absl::flat_hash_map<uint64_t, int> tenant_of;  // pending and active tasks
  std::vector<uint64_t> active;                  // per tenant, the last admitted task (0: none)

  Fixture(int n, int max_running) : active(n, 0) {
    for (int i = 0; i < n; ++i) {
      names.push_back("t" + std::to_string(i));
      TenantSpec s{names.back(), QosClass::kBurstable, int64_t{1} << 30, 0, max_running, 1 << 20};
      if (!c.AddTenant(s).ok()) std::abort();
    }
  }
  TaskSpec Spec(int tenant, std::vector<uint64_t> deps = {}) {
    TaskSpec t;
    t.id = next_id++;
    t.tenant = names[tenant];
    t.memory = kTaskBytes;
    t.depends_on = std::move(deps);
    tenant_of[t.id] = tenant;
    return t;
  }
  // Applies decisions; returns how many admitted.
  int Apply(const absl::StatusOr<std::vector<Decision>>& d) {
    if (!d.ok()) std::abort();
    int admitted = 0;
    for (const Decision& x : *d) {
      if (x.state != TaskState::kAdmitted) std::abort();  // nothing is rejected here
      active[tenant_of.at(x.task)] = x.task;
      ++admitted;
    }
    return admitted;
  }
  void Finish(uint64_t id) {
    Apply(c.Finish(id, TaskState::kCompleted, ++now));
    tenant_of.erase(id);
  }
};

// Submit of a task that is admitted at once, behind Q pending tasks spread over the tenants
// that wait for a dependency (a long-running root task): they block nobody, so every pass of
// the queue walks them all, and the new task (submitted last) comes after them in the order.
// The task is then finished, untimed, to keep the state steady.
void BM_AdmissionSubmit(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0)), q = static_cast<int>(state.range(1));
  Fixture f(n, 0);
  TaskSpec root = f.Spec(0);
  f.Apply(f.c.Submit(root, f.now));
  for (int i = 0; i < q; ++i) f.Apply(f.c.Submit(f.Spec(i % n, {root.id}), f.now));
  int tenant = 0;
  int64_t admitted = 0;
  for (auto _ : state) {
    TaskSpec spec = f.Spec(tenant);
    const auto t0 = std::chrono::steady_clock::now();
    auto d = f.c.Submit(spec, ++f.now);
    const auto t1 = std::chrono::steady_clock::now();
    state.SetIterationTime(Seconds(t0, t1));
    admitted += f.Apply(d);
    f.Finish(spec.id);
    tenant = (tenant + 1) % n;
  }
  if (f.c.stats().pending != q) state.SkipWithError("the pending queue changed size");
  state.counters["admitted_per_op"] =
      benchmark::Counter(static_cast<double>(admitted), benchmark::Counter::kAvgIterations);
}

// Finish of a running task that admits its tenant's next pending task: every tenant runs one
// task at a time (max_running 1) and has Q / N pending tasks (at least one when Q >= N). The
// admitted task's place in the queue is refilled, untimed, with a new pending task.
void BM_AdmissionFinish(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0)), q = static_cast<int>(state.range(1));
  Fixture f(n, 1);
  for (int i = 0; i < n + q; ++i) f.Apply(f.c.Submit(f.Spec(i % n), f.now));
  int tenant = 0;
  int64_t admitted = 0;
  for (auto _ : state) {
    const uint64_t id = f.active[tenant];
    f.active[tenant] = 0;
    const auto t0 = std::chrono::steady_clock::now();
    auto d = f.c.Finish(id, TaskState::kCompleted, ++f.now);
    const auto t1 = std::chrono::steady_clock::now();
    state.SetIterationTime(Seconds(t0, t1));
    admitted += f.Apply(d);
    f.tenant_of.erase(id);
    f.Apply(f.c.Submit(f.Spec(tenant), ++f.now));  // refill (admitted at once when Q == 0)
    tenant = (tenant + 1) % n;
  }
  if (f.c.stats().pending != q) state.SkipWithError("the pending queue changed size");
  state.counters["admitted_per_op"] =
      benchmark::Counter(static_cast<double>(admitted), benchmark::Counter::kAvgIterations);
}

void AdmissionArgs(benchmark::internal::Benchmark* b) {
  b->ArgNames({"tenants", "queue"})->ArgsProduct({{1, 8, 64}, {0, 100, 1000}})->UseManualTime();
}
BENCHMARK(BM_AdmissionSubmit)->Apply(AdmissionArgs);
BENCHMARK(BM_AdmissionFinish)->Apply(AdmissionArgs);

// ---- the whole scheduler, for information ----

std::unique_ptr<Scheduler> MakeScheduler(benchmark::State& state) {
  auto s = Scheduler::Create();
  TenantOptions tenant;
  tenant.name = "bench";
  absl::Status added = s.ok() ? (*s)->AddTenant(tenant) : s.status();
  if (!added.ok()) {
    state.SkipWithError(std::string(added.message()).c_str());
    return nullptr;
  }
  return *std::move(s);
}

// Medians of the scheduler's own latency split (us), from the last latency_window tasks.
void LatencyCounters(benchmark::State& state, const Scheduler& s) {
  for (const TenantStats& t : s.stats().tenants) {
    state.counters["queue_us_p50"] = t.queue_us.p50;  // submission -> start
    state.counters["run_us_p50"] = t.run_us.p50;      // start -> work done (watcher)
    state.counters["total_us_p50"] = t.total_us.p50;
    state.counters["total_us_mean"] = t.total_us.mean;
  }
}

// Submit -> Wait of an empty task: admission, a worker's wake-up, the stream ordering after the
// default stream, the watcher observing the task stream's tail, and the waiter's wake-up.
void BM_SchedulerSubmitWait(benchmark::State& state) {
  std::unique_ptr<Scheduler> s = MakeScheduler(state);
  if (s == nullptr) return;
  for (auto _ : state) {
    auto task = s->Submit("bench", [] { return absl::OkStatus(); });
    if (task.ok()) (*task)->Wait();
    if (!task.ok() || !(*task)->status().ok()) {
      state.SkipWithError("the task failed");
      break;
    }
  }
  state.SetItemsProcessed(state.iterations());
  LatencyCounters(state, *s);
}
BENCHMARK(BM_SchedulerSubmitWait)->UseRealTime()->MinTime(0.5);

// Begin -> End -> Wait of an empty inline task (no worker thread involved).
void BM_SchedulerBeginEndWait(benchmark::State& state) {
  std::unique_ptr<Scheduler> s = MakeScheduler(state);
  if (s == nullptr) return;
  for (auto _ : state) {
    auto inline_task = s->Begin("bench");
    if (!inline_task.ok()) {
      state.SkipWithError(std::string(inline_task.status().message()).c_str());
      break;
    }
    std::shared_ptr<Task> task = inline_task->task();
    const bool ended = inline_task->End().ok();
    task->Wait();
    if (!ended || !task->status().ok()) {
      state.SkipWithError("the task failed");
      break;
    }
  }
  state.SetItemsProcessed(state.iterations());
  LatencyCounters(state, *s);
}
BENCHMARK(BM_SchedulerBeginEndWait)->UseRealTime()->MinTime(0.5);

}  // namespace
}  // namespace pygpukit

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  pygpukit::Runtime& rt = pygpukit::Runtime::Get();
  benchmark::AddCustomContext("pygpukit_device", rt.default_device().ToString());
  benchmark::AddCustomContext("pygpukit_version", pygpukit::Version());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

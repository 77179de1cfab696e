// Internal to the scheduler's .cc files: the per-tenant runtime state, the pacing gate and the
// scopes a running task's thread holds.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/dispatcher.h"
#include "runtime/memory/memory_pool.h"
#include "runtime/runtime.h"
#include "runtime/sched/scheduler.h"

namespace pygpukit {

struct Scheduler::TenantRt {
  TenantOptions options;
  std::shared_ptr<MemoryQuota> quota;
  std::vector<hal::Stream*> streams;
  size_t next_stream = 0;
  int stream_priority = 0;
  int inflight_limit = 0;  // 0: not paced
  int sms = 0;             // SMs of the streams' partition; 0: the whole device
  bool removing = false;
  int running = 0;
  // Pacing state (under `mu`, not the scheduler lock): an event recorded after each paced
  // launch, oldest first; a gate over the limit waits on the oldest one directly.
  hal::Backend* backend = nullptr;
  std::mutex mu;
  std::condition_variable cv;  // slots given back; guaranteed work ended
  std::deque<std::shared_ptr<hal::Event>> inflight_events;
  std::vector<std::shared_ptr<hal::Event>> spare_events;
  int reserved = 0;  // slots taken by launches being made
  int max_seen = 0;
  int64_t launches = 0, paced_waits = 0, preemptions = 0;
  int Inflight() const { return static_cast<int>(inflight_events.size()) + reserved; }
  void Retire();  // drops completed events from the front (mu held)
  // Latency windows, nanoseconds (scheduler lock).
  std::deque<int64_t> queue_ns, run_ns, total_ns;
};

/// Paces launches of one running task of a paced tenant: waits while the tenant has its limit
/// of kernels in flight (best-effort tenants get a lower limit while guaranteed work runs),
/// on the oldest in-flight kernel's event, so the next launch follows its end at once.
/// Also the task's YieldHook: the scheduler's policy for splitting and preempting its work.
class Scheduler::Gate final : public LaunchGate, public YieldHook {
 public:
  Gate(Scheduler* s, std::shared_ptr<TenantRt> t) : scheduler_(s), tenant_(std::move(t)) {}
  absl::Status BeforeLaunch(hal::Stream& stream) override;
  void AfterLaunch(hal::Stream& stream, const absl::Status& launched) override;
  YieldHook* yield() override { return this; }
  int64_t max_launch_flops() const override;
  const PreemptSignal* preempt_signal(Device device) const override;
  void Preempted(int times) override;
  void AwaitResume() override;

 private:
  int Limit() const;
  Scheduler* scheduler_;
  std::shared_ptr<TenantRt> tenant_;
};

/// Task bodies running on this thread (a worker's task, open task blocks), innermost last:
/// Drain, Shutdown, RemoveTenant and Begin refuse what would wait for one of them.
struct HeldTask {
  const Scheduler* scheduler;
  const std::string* tenant;  // the tenant's name (it outlives its running tasks)
};
std::vector<HeldTask>& HeldTasks();

/// What the thread running a task's body holds: its stream, quota and gate.
struct InlineTask::Scopes {
  Scopes(Scheduler* s, const std::shared_ptr<Scheduler::TenantRt>& t, hal::Stream* stream)
      : stream_scope(stream), quota_scope(t->quota), gate(s, t), gate_scope(&gate) {
    HeldTasks().push_back({s, &t->options.name});
  }
  ~Scopes() { HeldTasks().pop_back(); }
  StreamScope stream_scope;
  QuotaScope quota_scope;
  Scheduler::Gate gate;
  LaunchGateScope gate_scope;
};

}  // namespace pygpukit

// The GPU scheduler: tenants with a QoS class share one device; their tasks pass admission
// control (admission.h), run concurrently on per-tenant priority streams under the tenant's
// memory quota, and are paced through the dispatcher so that guaranteed work keeps its latency
// while best-effort work fills the GPU. Completion is observed from a runtime thread through
// events (event_watcher.h).
//
// Threads: `worker_threads` workers run tasks' callables; one watcher observes events; one
// notifier runs transition listeners and done callbacks, in transition order, outside every
// lock. A callable may block (its waits release the Python GIL through BlockingRegion).
//
// Ordering: a task's stream first waits for the work queued, before the task started, on the
// stream current where it was submitted (the default stream, or an enclosing task's or
// gp.Stream's), so its inputs are ready. A task's results are ready once it is Completed; an
// inline task (Begin) also makes the thread's current stream wait for its work when it ends.
// Tasks that share arrays without a dependency race, as two streams do.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/device.h"
#include "core/hal/backend.h"
#include "runtime/dispatcher.h"
#include "runtime/sched/admission.h"
#include "runtime/sched/task_state.h"
#include "runtime/sched/yield_hook.h"

namespace pygpukit {

class Buffer;
class EventWatcher;
class MemoryQuota;
class Scheduler;

/// A tenant (partition of the device).
struct TenantOptions {
  std::string name;
  QosClass qos = QosClass::kBurstable;
  int64_t memory_request = 0;  // bytes reserved (Guaranteed, Burstable)
  int64_t memory_limit = 0;    // bytes; 0: none (Guaranteed: the request)
  /// Share of the scheduler's in-flight kernel budget a paced tenant may use, in (0, 1].
  double compute_share = 1.0;
  /// Kernels in flight at once; 0: compute_share x the scheduler's inflight_budget (Burstable)
  /// or best_effort_inflight (Best-effort), at least 1. Guaranteed tenants are never paced.
  int max_inflight = 0;
  /// CUDA convention (lower = more urgent); unset: by class (Guaranteed most urgent).
  std::optional<int> stream_priority;
  /// SMs the tenant's kernels are confined to (a spatial partition: CUDA green contexts, rounded
  /// up to the driver's granularity; CPU: worker threads); 0: the whole device. Unset: by class,
  /// best-effort tenants SchedulerOptions::best_effort_sms, the others the whole device. Tenants
  /// without a partition still use every SM, so a partition reserves the rest for them. Two
  /// partitioned tenants share SMs unless one has more than half the device and the other the
  /// rest or less (hal::Backend::CreatePartitionedStream).
  std::optional<int> sms;
  int streams = 1;  // streams the tenant's tasks are spread over (round robin)
  int max_running = 0;
  int queue_capacity = 1024;
};

/// How to run one task.
struct TaskOptions {
  std::string name;         // for history and stats
  int64_t memory = 0;       // estimate of the device bytes it allocates (admission)
  int priority = 0;         // higher first
  int64_t deadline_ns = 0;  // absolute (Scheduler::Now()); rejected if not admitted by then
  int64_t timeout_ns = 0;   // relative to submission; the earlier of the two applies
  std::vector<uint64_t> depends_on;  // task ids that must complete first
};

/// One state change, as kept in histories and passed to listeners.
struct TransitionRecord {
  uint64_t task = 0;
  std::string tenant;
  TaskState from = TaskState::kPending, to = TaskState::kPending;
  int64_t time_ns = 0;  // Scheduler::Now()
  std::string reason;   // rejection / cancellation / failure reason
};

/// The work of a task: enqueue GPU work with the ops (they use the task's stream and quota);
/// a non-OK status (or absl::CancelledError to end as Cancelled) fails the task.
using TaskFn = std::function<absl::Status()>;

/// A submitted task. Thread-safe handle; the scheduler keeps its own reference until the end.
class Task : public std::enable_shared_from_this<Task> {
 public:
  uint64_t id() const { return id_; }
  const std::string& tenant() const { return tenant_; }
  const std::string& name() const { return options_.name; }
  const TaskOptions& options() const { return options_; }
  TaskState state() const { return state_.load(std::memory_order_acquire); }
  bool done() const { return IsTerminal(state()); }
  /// OK while not finished or when Completed; else the failure, rejection or cancellation.
  absl::Status status() const;
  std::vector<TransitionRecord> history() const;
  /// Blocks until the task is finished or `timeout_ns` passed (negative: no limit); true when
  /// finished. Releases the Python GIL while waiting.
  bool Wait(int64_t timeout_ns = -1) const;
  /// Asks a running task to stop: a callable may poll cancel_requested() and return
  /// absl::CancelledError. Pending and admitted tasks are cancelled by Scheduler::Cancel.
  bool cancel_requested() const { return cancel_requested_.load(std::memory_order_acquire); }
  /// Runs `fn` once the task is finished (at once, on this thread, if it already is; else on the
  /// scheduler's notifier thread).
  void AddDoneCallback(std::function<void(const Task&)> fn);
  /// Times on Scheduler::Now() (0 until reached).
  int64_t submit_ns() const { return submit_ns_; }
  int64_t start_ns() const { return start_ns_.load(std::memory_order_acquire); }
  int64_t end_ns() const { return end_ns_.load(std::memory_order_acquire); }

  Task(uint64_t id, std::string tenant, TaskOptions options, TaskFn fn, int64_t submit_ns);

 private:
  friend class Scheduler;
  friend class InlineTask;
  // Applies a validated transition (scheduler lock held); returns the callbacks to run if
  // the task finished.
  absl::StatusOr<std::vector<std::function<void(const Task&)>>> Transition(TransitionRecord rec,
                                                                           absl::Status final);

  const uint64_t id_;
  const std::string tenant_;
  const TaskOptions options_;
  TaskFn fn_;
  const int64_t submit_ns_;
  std::atomic<TaskState> state_{TaskState::kPending};
  std::atomic<bool> cancel_requested_{false};
  std::atomic<int64_t> start_ns_{0}, end_ns_{0};
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  absl::Status status_;
  std::vector<TransitionRecord> history_;
  std::vector<std::function<void(const Task&)>> callbacks_;
  // Execution (scheduler-owned)
  hal::Stream* stream_ = nullptr;
  hal::Stream* origin_ = nullptr;
  const Scheduler* owner_ = nullptr;  // Cancel refuses tasks of other schedulers  // the
                                      // submitter's stream: the task's work follows its work
  bool inline_ = false;
};

/// A task whose body runs on the calling thread (Scheduler::Begin): while the object lives,
/// ops on this thread use the task's stream, quota and pacing. End() (or the destructor) ends
/// it; it completes when its GPU work has.
class InlineTask {
 public:
  InlineTask(InlineTask&&) noexcept;
  InlineTask& operator=(InlineTask&&) = delete;
  ~InlineTask();
  const std::shared_ptr<Task>& task() const { return task_; }
  /// Ends the body: `body` is the outcome (non-OK fails the task). Idempotent. Must be called
  /// on the thread that began it, innermost block first; otherwise the task still ends (failed)
  /// but the thread's scopes cannot be restored, and a RuntimeError says so.
  absl::Status End(absl::Status body = absl::OkStatus());

 private:
  friend class Scheduler;
  struct Scopes;
  InlineTask(Scheduler* s, std::shared_ptr<Task> t, std::unique_ptr<Scopes> scopes);
  Scheduler* scheduler_ = nullptr;
  std::shared_ptr<Task> task_;
  std::unique_ptr<Scopes> scopes_;
  std::thread::id owner_ = std::this_thread::get_id();  // scopes are this thread's
};

/// Latency percentiles over a tenant's recent tasks, in microseconds.
struct LatencySummary {
  int64_t count = 0;
  double p50 = 0, p90 = 0, p99 = 0, max = 0, mean = 0;
};
/// Nearest-rank percentiles, max and mean of latencies given in ns (as benchmarks/scheduler.py
/// computes them); all zero when there are none.
LatencySummary SummarizeLatencies(std::vector<int64_t> ns);

/// Per-tenant figures.
struct TenantStats {
  TenantAdmissionStats admission;            // queue, counts, admitted memory
  int64_t memory_used = 0, memory_peak = 0;  // live bytes under the tenant's quota
  int inflight = 0, inflight_limit = 0;      // paced kernels now; 0 limit: not paced
  int sms = 0;                               // SMs of the tenant's partition; 0: whole device
  int64_t launches = 0, paced_waits = 0;     // launches; launches that had to wait
  int64_t preemptions = 0;                   // times its kernels yielded to guaranteed work
  int max_inflight_seen = 0;
  int stream_priority = 0;
  LatencySummary queue_us;  // submission -> start
  LatencySummary run_us;    // start -> GPU work done
  LatencySummary total_us;  // submission -> done
};

/// Whole-scheduler figures.
struct SchedulerStats {
  AdmissionStats admission;
  std::vector<TenantStats> tenants;  // by name
  int running = 0, ready = 0;        // running tasks; admitted tasks waiting for a worker
  int guaranteed_running = 0;
};

/// Scheduler construction options.
struct SchedulerOptions {
  Device device;                 // default: the runtime's default device
  bool device_set = false;       // false: use the default device
  int worker_threads = 4;        // tasks whose callables run at once
  int64_t memory_capacity = 0;   // 0: the pool's limit, else the device's memory
  int inflight_budget = 32;      // kernels in flight for a burstable tenant of share 1
  int best_effort_inflight = 2;  // for a best-effort tenant of share 1: one running, one queued
  /// Best-effort kernels in flight while guaranteed work runs, for tenants without a partition
  /// (partitioned ones keep their limit: their SMs are not the guaranteed tenants'). 0 holds
  /// every best-effort tenant while guaranteed work runs.
  int best_effort_inflight_while_guaranteed = 1;
  /// SMs best-effort tenants are confined to unless they say otherwise: -1 (automatic):
  /// kBestEffortSmShare of the device, leaving the rest to the other tenants at once however
  /// long best-effort kernels run; 0: no partition (best-effort kernels then are split, below).
  /// Automatic falls back to no partition where the driver cannot partition.
  int best_effort_sms = -1;
  static constexpr double kBestEffortSmShare = 0.85;
  /// Best-effort launches of tenants without a partition are split to at most this many FLOPs
  /// (a matmul by rows), so that guaranteed work waits for at most one piece; 2^37 is about
  /// 0.2 ms of bf16 on an H100. 0: no splitting.
  int64_t best_effort_slice_flops = int64_t{1} << 37;
  /// Best-effort tenants without a partition yield to guaranteed work: while a guaranteed task
  /// runs, their matmuls on preemptible kernels (sm90, 16-bit) stop within microseconds, saving
  /// their partial sums, and resume when no guaranteed task is left (the others are split, as
  /// above). Such a matmul is host-synchronous. Needs a driver with stream memory operations
  /// (Create fails otherwise). Off by default: best-effort work gets nothing while guaranteed
  /// work runs without a pause (a closed loop), where the default partition keeps most of its
  /// throughput; for a service with idle time between requests it is the better choice
  /// (measurements in docs/scheduler.md).
  bool best_effort_preemption = false;
  size_t history_capacity = 4096;  // transitions kept for history()
  size_t latency_window = 4096;    // tasks per tenant kept for percentiles
  bool record_admission = false;   // keep the admission input trace (for replay)
};

/// The scheduler of one device. Thread-safe.
class Scheduler {
 public:
  static absl::StatusOr<std::unique_ptr<Scheduler>> Create(SchedulerOptions options = {});
  /// Shutdown(), then frees everything. Never from the scheduler's own threads (that aborts
  /// with a message, as it would wait for itself).
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  Device device() const { return device_; }
  /// Nanoseconds on the monotonic clock (the clock of deadlines).
  static int64_t Now();

  absl::Status AddTenant(const TenantOptions& options);
  /// Cancels the tenant's pending and admitted tasks, waits for its running ones, removes it.
  /// A RuntimeError on the scheduler's own threads and inside a task block of the tenant.
  absl::Status RemoveTenant(const std::string& name);
  std::vector<std::string> tenants() const;

  /// Submits `fn` for `tenant`. The task may already be finished (rejected) on return; an
  /// unknown tenant or bad options give an error instead.
  absl::StatusOr<std::shared_ptr<Task>> Submit(const std::string& tenant, TaskFn fn,
                                               TaskOptions options = {});
  /// Starts a task whose body is the caller's code: waits (GIL released) until admitted, then
  /// returns it Running on this thread. A rejected or cancelled task returns its error; a
  /// RuntimeError when this thread already runs as many of the tenant's tasks as its
  /// max_running allows (the new one could never start).
  absl::StatusOr<InlineTask> Begin(const std::string& tenant, TaskOptions options = {});
  /// Cancels a pending or admitted task (true), or asks a running one to stop (false; see
  /// Task::cancel_requested). Finished tasks: false.
  bool Cancel(Task& task);

  /// Called (on the notifier thread) for every transition, in order.
  void AddListener(std::function<void(const TransitionRecord&)> fn);
  /// The last history_capacity transitions, oldest first.
  std::vector<TransitionRecord> history() const;
  /// Decisions of admission control so far, in order (with record_admission).
  std::vector<Decision> decisions() const;
  /// Admission inputs so far (with record_admission), for AdmissionController::Replay.
  std::vector<AdmissionEvent> admission_trace() const;
  int64_t memory_capacity() const { return capacity_; }
  SchedulerStats stats() const;
  /// Whether best-effort work is being asked to yield now (a guaranteed task is running and
  /// best_effort_preemption is on).
  bool preempting() const;

  /// Waits until no task is pending, admitted or running and their done callbacks have run
  /// (GIL released), at most `timeout_ns` (negative: no limit; DeadlineExceeded when it
  /// passes). A RuntimeError on the scheduler's own threads and inside a task block of this
  /// scheduler (a task body, a callback or a block would wait for itself).
  absl::Status Drain(int64_t timeout_ns = -1);
  /// Stops accepting tasks, cancels pending and admitted ones, waits for running ones, joins
  /// the threads. Idempotent. A RuntimeError on the scheduler's own threads and inside a task
  /// block of this scheduler.
  absl::Status Shutdown();
  /// True on the scheduler's worker, timer, watcher and notifier threads (task bodies and
  /// callbacks run there). The scheduler must not be destroyed on them.
  bool OnOwnThread() const;
  /// True on the thread that runs listeners and done callbacks (which settle futures): a wait
  /// there for an unfinished task's callbacks would never end.
  bool OnNotifierThread() const { return std::this_thread::get_id() == notifier_.get_id(); }
  /// Task bodies of this scheduler running on this thread (all tenants', or `tenant`'s).
  int HeldHere(const std::string* tenant = nullptr) const;

  // Internal (scheduler_internal.h).
  struct TenantRt;
  class Gate;

 private:
  friend class InlineTask;
  Scheduler(SchedulerOptions options, Device device, int64_t capacity, hal::Backend* backend,
            hal::Stream* signal_stream, std::shared_ptr<Buffer> device_word);

  absl::StatusOr<std::shared_ptr<Task>> SubmitImpl(const std::string& tenant, TaskFn fn,
                                                   TaskOptions options, bool is_inline);
  void WorkerLoop();
  // Applies admission decisions (lock held); admitted worker tasks join the ready queue.
  void ApplyLocked(const std::vector<Decision>& decisions);
  // Records a transition (lock held) and queues notifications.
  absl::Status TransitionLocked(Task& task, TaskState to, std::string reason,
                                absl::Status final = absl::OkStatus());
  // Moves an admitted task to Running; returns its tenant.
  absl::StatusOr<std::shared_ptr<TenantRt>> StartLocked(Task& task);
  // Runs a worker task's callable on this thread.
  void RunTask(const std::shared_ptr<Task>& task, const std::shared_ptr<TenantRt>& tenant);
  // The task's callable returned (or its inline body ended): watch its stream's tail.
  void FinishBody(const std::shared_ptr<Task>& task, absl::Status body);
  // The task's GPU work is done (watcher thread).
  void OnWorkDone(const std::shared_ptr<Task>& task, absl::Status body, absl::Status gpu);
  // Brings the preemption signal's copies in line with the guaranteed running count (with
  // preemption on; called without mu_ after every change of the count, before a guaranteed
  // task's body runs; other tasks' starts leave the count alone and skip it).
  void UpdatePreemptSignal();
  void Notify(std::function<void()> fn);  // lock held; run on the notifier thread
  void NotifierLoop();
  void TimerLoop();  // expires deadlines, even while every worker is busy
  void TickLocked();
  bool CancelLocked(Task& task);
  void UpdateQuotasLocked();  // non-guaranteed quotas: request + unreserved, within the limit

  const SchedulerOptions options_;
  const Device device_;
  const int64_t capacity_;
  hal::Backend* backend_;

  mutable std::mutex mu_;
  std::condition_variable work_cv_;   // workers: ready tasks, shutdown
  std::condition_variable timer_cv_;  // the timer: new deadlines, shutdown
  std::condition_variable state_cv_;  // Drain / Begin / RemoveTenant waiters
  bool stopping_ = false;
  bool shutdown_started_ = false, shutdown_done_ = false;
  AdmissionController admission_;
  uint64_t next_id_ = 1;
  // shared: pacing callbacks on the watcher thread may outlive the tenant's removal
  std::map<std::string, std::shared_ptr<TenantRt>> tenants_;
  std::map<uint64_t, std::shared_ptr<Task>> live_;  // not yet finished
  std::deque<std::shared_ptr<Task>> ready_;         // admitted worker tasks, admission order
  int running_ = 0;
  std::atomic<int> guaranteed_running_{0};  // read lock-free by best-effort gates
  int signal_updates_ = 0;  // finished guaranteed tasks whose UpdatePreemptSignal is running
  // With preemption, 1 while a guaranteed task runs: the host's copy (preempt_word_, which
  // best-effort gates read) and the device's (device_word_, which preemptible kernels poll,
  // written on signal_stream_, a stream of its own so that no other work delays a write).
  // UpdatePreemptSignal sets them when the guaranteed running count leaves 0 and clears them
  // when it returns to 0, under signal_mu_ (so the device writes keep the order of the
  // decisions); the host's copy is cleared once the device's clear has landed, so that a
  // relaunched kernel never reads a stale 1 (PreemptSignal).
  std::atomic<uint32_t> preempt_word_{0};
  hal::Stream* signal_stream_;           // null without preemption
  std::shared_ptr<Buffer> device_word_;  // null without preemption
  PreemptSignal signal_;
  std::mutex signal_mu_;
  uint32_t signal_written_ = 0;         // the copies' value (signal_mu_)
  std::mutex preempt_mu_;               // the host copy's writes and AwaitResume's check
  std::condition_variable preempt_cv_;  // the host copy was cleared
  std::deque<TransitionRecord> history_;
  std::vector<Decision> decisions_;
  std::vector<std::function<void(const TransitionRecord&)>> listeners_;

  std::mutex notify_mu_;
  std::condition_variable notify_cv_;
  std::condition_variable notify_idle_cv_;  // Drain: the queue is empty and nothing runs
  std::deque<std::function<void()>> notifications_;
  bool notify_busy_ = false;
  bool notify_stop_ = false;

  std::unique_ptr<EventWatcher> watcher_;
  std::vector<std::thread> workers_;
  std::thread notifier_;
  std::thread timer_;
  std::vector<std::thread::id> own_threads_;  // fixed after construction
};

}  // namespace pygpukit

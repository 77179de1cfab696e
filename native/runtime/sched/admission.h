// Admission control: which pending task may start, decided from memory reservations, tenant
// quotas, dependencies, priorities and deadlines. A pure state machine with no threads and no
// clock of its own: the scheduler feeds it events (tenants added or removed, tasks submitted,
// finished or cancelled, time passing) under its lock, and it answers with decisions. The same
// sequence of events therefore gives the same decisions in the same order; `Replay` re-runs a
// recorded sequence (tests compare the two).
//
// Rules, in the order they are applied:
//  1. Tenants. Guaranteed and Burstable tenants reserve their memory request out of the
//     capacity when they are added (the sum of requests may not exceed it); Best-effort tenants
//     reserve nothing. A Guaranteed tenant's limit equals its request.
//  2. Submission. A task is rejected at once, with the reason, when its tenant's queue is full,
//     its deadline has passed, a dependency is unknown, or its memory estimate can never fit
//     (above the tenant's limit, or above its request plus all unreserved capacity). A task
//     whose dependency failed, was cancelled or rejected is cancelled.
//  3. Order. Pending tasks are considered by QoS class (Guaranteed, Burstable, Best-effort),
//     then priority (higher first), then deadline (earlier first, none last), then submission.
//  4. Fit. A task fits when its tenant's admitted estimates plus its own stay within the
//     tenant's request, or, beyond the request (Burstable up to its limit, Best-effort up to its
//     limit if any), when the excess fits in the capacity no tenant has reserved or borrowed.
//     A tenant's max_running bounds its admitted-or-running tasks.
//  5. Head of line. Within one tenant, a task that does not fit blocks the tenant's later tasks
//     in this pass (so small tasks cannot starve a large one); other tenants go on. Tasks
//     waiting for dependencies block nobody.
//  6. Expiry. A pending task whose deadline passes is rejected; so is one that a new tenant's
//     reservation leaves unable ever to fit.
//  7. Release. Finishing (completed, failed or cancelled) returns the task's estimate; then
//     the queue is considered again.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "runtime/sched/task_state.h"

namespace pygpukit {

/// What a tenant asks for.
struct TenantSpec {
  std::string name;
  QosClass qos = QosClass::kBurstable;
  int64_t memory_request = 0;  // bytes reserved for the tenant (0 for Best-effort)
  int64_t memory_limit = 0;    // bytes; 0: no limit of its own (Guaranteed: the request)
  int max_running = 0;         // admitted-or-running tasks at once; 0: unlimited
  int queue_capacity = 1024;   // pending tasks; more are rejected
};

/// What admission control knows of a task.
struct TaskSpec {
  uint64_t id = 0;  // unique per controller
  std::string tenant;
  int64_t memory = 0;       // estimate of the device bytes the task allocates
  int priority = 0;         // higher first
  int64_t deadline_ns = 0;  // absolute, on the scheduler's clock; 0: none
  std::vector<uint64_t> depends_on;
};

/// One decision: a pending task is admitted, rejected or cancelled.
struct Decision {
  uint64_t task = 0;
  TaskState state = TaskState::kPending;  // kAdmitted, kRejected or kCancelled
  std::string reason;                     // empty for admissions
  bool operator==(const Decision& o) const {
    return task == o.task && state == o.state && reason == o.reason;
  }
};

/// One input event, as recorded for replay.
struct AdmissionEvent {
  enum class Kind { kAddTenant, kRemoveTenant, kSubmit, kFinish, kCancel, kTick };
  Kind kind = Kind::kTick;
  int64_t now_ns = 0;
  TenantSpec tenant;                              // kAddTenant
  std::string name;                               // kRemoveTenant
  TaskSpec task;                                  // kSubmit
  uint64_t id = 0;                                // kFinish, kCancel
  TaskState final_state = TaskState::kCompleted;  // kFinish
};

/// Per-tenant figures.
struct TenantAdmissionStats {
  std::string name;
  QosClass qos = QosClass::kBurstable;
  int64_t memory_request = 0, memory_limit = 0;
  int64_t memory_admitted = 0;  // sum of the estimates of admitted and running tasks
  int pending = 0, active = 0;  // active: admitted or running
  int64_t admitted = 0, rejected = 0, cancelled = 0, completed = 0, failed = 0;
};

/// Whole-controller figures.
struct AdmissionStats {
  int64_t capacity = 0, reserved = 0, borrowed = 0;  // borrowed: admitted beyond requests
  int pending = 0, active = 0;
  int64_t admitted = 0, rejected = 0, cancelled = 0, completed = 0, failed = 0;
  std::vector<TenantAdmissionStats> tenants;  // by name
};

/// Deterministic admission controller. Not thread-safe: the owner serializes calls.
class AdmissionController {
 public:
  /// `capacity_bytes`: the device memory tasks may be admitted against.
  explicit AdmissionController(int64_t capacity_bytes);

  /// Adds a tenant; ValueError for a bad spec, a duplicate name or an over-committed capacity.
  /// Its reservation shrinks what other tenants can borrow: pending tasks that can then never
  /// fit are rejected at once (with their dependents cancelled), reported in `decisions`.
  absl::Status AddTenant(const TenantSpec& spec, std::vector<Decision>* decisions = nullptr);
  /// Removes a tenant with no pending or active tasks (ValueError otherwise).
  absl::Status RemoveTenant(const std::string& name);
  bool HasTenant(const std::string& name) const { return tenants_.contains(name); }

  /// Enqueues a task (ValueError for an unknown tenant or a reused id) and returns the decisions
  /// it causes, possibly its own rejection.
  absl::StatusOr<std::vector<Decision>> Submit(const TaskSpec& task, int64_t now_ns);
  /// An admitted task ended (kCompleted, kFailed or kCancelled): its reservation is returned and
  /// the queue reconsidered.
  absl::StatusOr<std::vector<Decision>> Finish(uint64_t id, TaskState final_state, int64_t now_ns);
  /// Cancels a pending task (ValueError when it is not pending).
  absl::StatusOr<std::vector<Decision>> Cancel(uint64_t id, int64_t now_ns);
  /// Time passed: expires pending tasks whose deadline is at or before `now_ns`.
  std::vector<Decision> Tick(int64_t now_ns);

  /// Earliest deadline among pending tasks (0: none), for the owner's timer.
  int64_t NextDeadline() const;
  bool IsPending(uint64_t id) const;
  bool IsActive(uint64_t id) const;
  AdmissionStats stats() const;

  /// Starts (or stops) recording every input event, for Replay.
  void set_recording(bool on) { recording_ = on; }
  const std::vector<AdmissionEvent>& recorded() const { return recorded_; }
  /// Applies one recorded event, appending its decisions.
  absl::Status Apply(const AdmissionEvent& e, std::vector<Decision>* decisions);
  /// Runs `events` on a fresh controller of `capacity_bytes` and returns every decision.
  static absl::StatusOr<std::vector<Decision>> Replay(int64_t capacity_bytes,
                                                      const std::vector<AdmissionEvent>& events);

 private:
  using Key = std::tuple<int, int, int64_t, uint64_t>;  // (class, -priority, deadline, id)
  struct Tenant {
    TenantSpec spec;
    int64_t used = 0;  // admitted estimates
    int pending = 0, active = 0;
    std::set<Key> queue;  // pending tasks whose dependencies have all completed, in order
    TenantAdmissionStats counts;
  };
  struct Task {
    TaskSpec spec;
    Tenant* tenant = nullptr;
    bool active = false;
    int unresolved = 0;  // dependencies not yet completed
  };
  static Key KeyOf(const Task& t);

  int64_t Borrowed(const Tenant& t, int64_t used) const;  // bytes beyond the request
  int64_t MaxFit(const Tenant& t) const;
  bool Fits(const Tenant& t, int64_t bytes) const;
  // Removes pending task `id` with a terminal decision (cancelling its dependents).
  void Drop(uint64_t id, TaskState state, std::string reason, std::vector<Decision>* out);
  // Task `id` ended as `state`: its dependents become ready or are cancelled.
  void Resolve(uint64_t id, TaskState state, std::vector<Decision>* out);
  void Expire(int64_t now_ns, std::vector<Decision>* out);
  void Pump(std::vector<Decision>* out);
  void RememberFinished(uint64_t id, TaskState state);
  void Record(AdmissionEvent e);

  int64_t capacity_;
  int64_t reserved_ = 0;  // sum of Guaranteed and Burstable requests
  int64_t borrowed_ = 0;  // sum over tenants of admitted bytes beyond their request
  std::map<std::string, Tenant> tenants_;
  absl::flat_hash_map<uint64_t, Task> tasks_;  // pending and active
  // Pending tasks waiting for a task, by the id they wait for.
  absl::flat_hash_map<uint64_t, std::vector<uint64_t>> dependents_;
  std::set<std::pair<int64_t, uint64_t>> deadlines_;  // (deadline, id) of pending tasks
  // Final states of finished tasks, for dependencies; the oldest are forgotten past a bound.
  absl::flat_hash_map<uint64_t, TaskState> finished_;
  std::deque<uint64_t> finished_order_;
  AdmissionStats totals_;
  bool recording_ = false;
  std::vector<AdmissionEvent> recorded_;
};

}  // namespace pygpukit

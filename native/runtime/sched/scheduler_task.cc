// Scheduler: running tasks (workers, inline tasks), observing their completion, and pacing
// their launches; the Task handle.
#include <algorithm>
#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "runtime/blocking.h"
#include "runtime/sched/event_watcher.h"
#include "runtime/sched/scheduler_internal.h"

namespace pygpukit {
namespace {

void PushWindow(std::deque<int64_t>& w, int64_t v, size_t cap) {
  w.push_back(v);
  while (w.size() > cap) w.pop_front();
}

}  // namespace

// ---- Task ----

Task::Task(uint64_t id, std::string tenant, TaskOptions options, TaskFn fn, int64_t submit_ns)
    : id_(id),
      tenant_(std::move(tenant)),
      options_(std::move(options)),
      fn_(std::move(fn)),
      submit_ns_(submit_ns) {}

absl::Status Task::status() const {
  std::lock_guard<std::mutex> l(mu_);
  return status_;
}

std::vector<TransitionRecord> Task::history() const {
  std::lock_guard<std::mutex> l(mu_);
  return history_;
}

bool Task::Wait(int64_t timeout_ns) const {
  if (done()) return true;
  BlockingRegion unlocked;
  std::unique_lock<std::mutex> l(mu_);
  auto finished = [&] { return IsTerminal(state_.load(std::memory_order_acquire)); };
  if (timeout_ns < 0) {
    cv_.wait(l, finished);
    return true;
  }
  return cv_.wait_for(l, std::chrono::nanoseconds(timeout_ns), finished);
}

void Task::AddDoneCallback(std::function<void(const Task&)> fn) {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (!IsTerminal(state_.load(std::memory_order_acquire))) {
      callbacks_.push_back(std::move(fn));
      return;
    }
  }
  fn(*this);
}

absl::StatusOr<std::vector<std::function<void(const Task&)>>> Task::Transition(TransitionRecord rec,
                                                                               absl::Status final) {
  std::vector<std::function<void(const Task&)>> callbacks;
  std::lock_guard<std::mutex> l(mu_);
  if (rec.to == TaskState::kRunning) start_ns_.store(rec.time_ns, std::memory_order_release);
  if (IsTerminal(rec.to)) {
    status_ = std::move(final);
    end_ns_.store(rec.time_ns, std::memory_order_release);
    callbacks.swap(callbacks_);
  }
  history_.push_back(std::move(rec));
  state_.store(history_.back().to, std::memory_order_release);
  cv_.notify_all();
  return callbacks;
}

// ---- pacing ----

int Scheduler::Gate::Limit() const {
  int limit = tenant_->inflight_limit;
  const int while_guaranteed = scheduler_->options_.best_effort_inflight_while_guaranteed;
  // The throttle keeps guaranteed kernels from waiting behind best-effort ones for SMs; a
  // partitioned tenant leaves them SMs of their own, so only a hold (0) applies to it.
  if (tenant_->options.qos == QosClass::kBestEffort &&
      (tenant_->sms == 0 || while_guaranteed == 0) &&
      scheduler_->guaranteed_running_.load(std::memory_order_acquire) > 0) {
    limit = std::min(limit, while_guaranteed);
  }
  return limit;
}

void Scheduler::TenantRt::Retire() {
  while (!inflight_events.empty()) {
    absl::StatusOr<bool> done = backend->Query(*inflight_events.front());
    // A failed query counts as done: the task's own end event reports the stream's error.
    if (done.ok() && !*done) break;
    std::shared_ptr<hal::Event> ev = std::move(inflight_events.front());
    inflight_events.pop_front();
    // Reuse only events nobody waits on (a gate may still be synchronizing on it).
    if (ev.use_count() == 1 && spare_events.size() < 16) spare_events.push_back(std::move(ev));
  }
}

absl::Status Scheduler::Gate::BeforeLaunch(hal::Stream& stream) {
  TenantRt& t = *tenant_;
  std::unique_lock<std::mutex> l(t.mu);
  ++t.launches;
  if (t.inflight_limit == 0) return absl::OkStatus();  // guaranteed: never paced
  bool waited = false;
  for (;;) {
    t.Retire();
    if (t.Inflight() < Limit()) break;
    if (!waited) ++t.paced_waits;
    waited = true;
    std::shared_ptr<hal::Event> oldest =
        t.inflight_events.empty() ? nullptr : t.inflight_events.front();
    l.unlock();
    {
      // The GIL is released for the wait and taken back only after t.mu is released (a thread
      // holding the GIL may be waiting for t.mu).
      BlockingRegion unlocked;
      if (oldest != nullptr) {
        (void)t.backend->Synchronize(*oldest);  // errors: Retire drops it, the task reports it
      } else {  // slots held by launches being made, or guaranteed work holding best-effort
        std::unique_lock<std::mutex> w(t.mu);
        t.cv.wait_for(w, std::chrono::milliseconds(1));
      }
    }
    l.lock();
  }
  ++t.reserved;  // the slot is taken now, so concurrent tasks of the tenant cannot overshoot
  t.max_seen = std::max(t.max_seen, t.Inflight());
  return absl::OkStatus();
}

int64_t Scheduler::Gate::max_launch_flops() const {
  // A partitioned tenant leaves the other SMs free whatever its kernels' length: no splitting.
  return tenant_->options.qos == QosClass::kBestEffort && tenant_->sms == 0
             ? scheduler_->options_.best_effort_slice_flops
             : 0;
}

const PreemptSignal* Scheduler::Gate::preempt_signal(Device device) const {
  // Only kernels on the signal's device can poll its device copy.
  return tenant_->options.qos == QosClass::kBestEffort && tenant_->sms == 0 &&
                 scheduler_->options_.best_effort_preemption && device == scheduler_->signal_.on
             ? &scheduler_->signal_
             : nullptr;
}

void Scheduler::Gate::AwaitResume() {
  Scheduler& s = *scheduler_;
  BlockingRegion unlocked;
  std::unique_lock<std::mutex> l(s.preempt_mu_);
  s.preempt_cv_.wait(l, [&] { return s.preempt_word_.load(std::memory_order_acquire) == 0; });
}

void Scheduler::Gate::Preempted(int times) {
  std::lock_guard<std::mutex> l(tenant_->mu);
  tenant_->preemptions += times;
}

void Scheduler::Gate::AfterLaunch(hal::Stream& stream, const absl::Status& launched) {
  TenantRt& t = *tenant_;
  std::lock_guard<std::mutex> l(t.mu);
  if (t.inflight_limit == 0) return;
  --t.reserved;
  if (launched.ok()) {
    std::shared_ptr<hal::Event> ev;
    if (!t.spare_events.empty()) {
      ev = std::move(t.spare_events.back());
      t.spare_events.pop_back();
    } else if (auto e = t.backend->CreateEvent(stream.device().index, false); e.ok()) {
      ev = std::move(*e);
    }
    // Without an event the launch is not counted: pacing is best effort, the work is not.
    if (ev != nullptr && t.backend->Record(*ev, stream).ok()) {
      t.inflight_events.push_back(std::move(ev));
    }
  }
  t.cv.notify_all();
}

// ---- running ----

absl::StatusOr<std::shared_ptr<Scheduler::TenantRt>> Scheduler::StartLocked(Task& task) {
  std::shared_ptr<TenantRt> t = tenants_.at(task.tenant());
  PGK_RETURN_IF_ERROR(TransitionLocked(task, TaskState::kRunning, ""));
  task.stream_ = t->streams[t->next_stream++ % t->streams.size()];
  ++running_;
  ++t->running;
  // The preemption signal follows (UpdatePreemptSignal, called once mu_ is released).
  if (t->options.qos == QosClass::kGuaranteed) {
    guaranteed_running_.fetch_add(1, std::memory_order_acq_rel);
  }
  return t;
}

void Scheduler::UpdatePreemptSignal() {
  if (!options_.best_effort_preemption) return;
  // Whoever runs this last after a change of the guaranteed count sees the final count, so the
  // copies end up right whatever the order of callers; the device write, which may first wait
  // for the device's launch queue to drain, is made without mu_.
  std::lock_guard<std::mutex> sl(signal_mu_);
  const uint32_t want = guaranteed_running_.load(std::memory_order_acquire) > 0 ? 1 : 0;
  if (want == signal_written_) return;
  signal_written_ = want;
  auto* word = static_cast<uint32_t*>(device_word_->data());
  // A failed write leaves the device's copy behind; the driver's errors that could cause one
  // are sticky, so the preemptible kernels' next launch reports it to their task.
  if (want == 1) {
    {
      std::lock_guard<std::mutex> pl(preempt_mu_);
      preempt_word_.store(1, std::memory_order_release);  // no best-effort (re)launches
    }
    (void)backend_->WriteWordAsync(word, 1, *signal_stream_);  // running ones: yield
    return;
  }
  // The host's copy follows once the device's clear has landed, then preempted best-effort
  // work resumes.
  (void)backend_->WriteWordAsync(word, 0, *signal_stream_);
  (void)backend_->Synchronize(*signal_stream_);
  {
    std::lock_guard<std::mutex> pl(preempt_mu_);
    preempt_word_.store(0, std::memory_order_release);
  }
  preempt_cv_.notify_all();
}

void Scheduler::WorkerLoop() {
  std::unique_lock<std::mutex> l(mu_);
  for (;;) {
    if (!ready_.empty()) {
      std::shared_ptr<Task> task = std::move(ready_.front());
      ready_.pop_front();
      auto t = StartLocked(*task);
      if (!t.ok()) {  // not admitted any more (cannot happen for a task from ready_)
        CancelLocked(*task);
        continue;
      }
      l.unlock();
      if ((*t)->options.qos == QosClass::kGuaranteed) UpdatePreemptSignal();
      RunTask(task, *t);
      l.lock();
      continue;
    }
    if (stopping_) return;
    work_cv_.wait(l);
  }
}

void Scheduler::RunTask(const std::shared_ptr<Task>& task,
                        const std::shared_ptr<TenantRt>& tenant) {
  absl::Status body;
  {
    body = StreamWaitStream(*task->stream_, *task->origin_);
    if (body.ok()) {
      InlineTask::Scopes scopes(this, tenant, task->stream_);
      body = task->fn_();
    }
  }
  task->fn_ = nullptr;  // the callable's captures die here, on a thread that holds no lock
  FinishBody(task, body);
}

void Scheduler::FinishBody(const std::shared_ptr<Task>& task, absl::Status body) {
  absl::Status s = watcher_->RecordAndWatch(
      *backend_, *task->stream_,
      [this, task, body](absl::Status gpu) { OnWorkDone(task, body, std::move(gpu)); });
  if (!s.ok()) OnWorkDone(task, body, s);
}

void Scheduler::OnWorkDone(const std::shared_ptr<Task>& task, absl::Status body, absl::Status gpu) {
  // A kernel that threw (CPU) does not fail the event the watcher observed: ask the backend.
  if (gpu.ok()) gpu = backend_->TaskFailure(device_.index, /*take=*/false);
  std::vector<std::shared_ptr<TenantRt>> best_effort;
  bool update_signal = false;
  {
    std::lock_guard<std::mutex> l(mu_);
    TenantRt& t = *tenants_.at(task->tenant());
    TaskState final = TaskState::kCompleted;
    absl::Status status;
    if (!gpu.ok()) {
      final = TaskState::kFailed;
      status = RuntimeError(absl::StrCat("task ", task->id(), " (tenant '", task->tenant(),
                                         "'): its GPU work failed: ", gpu.message()));
    } else if (absl::IsCancelled(body)) {
      final = TaskState::kCancelled;
      status = body;
    } else if (!body.ok()) {
      final = TaskState::kFailed;
      status = body;
    }
    --running_;
    --t.running;
    if (t.options.qos == QosClass::kGuaranteed &&
        guaranteed_running_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      if (options_.best_effort_preemption) {
        update_signal = true;
        ++signal_updates_;  // Shutdown waits for it: the update below runs without mu_
      }
      for (auto& [name, other] : tenants_) {
        if (other->options.qos == QosClass::kBestEffort) best_effort.push_back(other);
      }
    }
    const int64_t now = Now();
    PushWindow(t.queue_ns, task->start_ns() - task->submit_ns(), options_.latency_window);
    PushWindow(t.run_ns, now - task->start_ns(), options_.latency_window);
    PushWindow(t.total_ns, now - task->submit_ns(), options_.latency_window);
    (void)TransitionLocked(*task, final, std::string(status.message()), status);
    live_.erase(task->id());
    auto d = admission_.Finish(task->id(), final, now);
    if (d.ok()) ApplyLocked(*d);
    state_cv_.notify_all();  // the tasks it admitted woke their workers (ApplyLocked)
  }
  if (update_signal) {
    UpdatePreemptSignal();
    std::lock_guard<std::mutex> l(mu_);
    --signal_updates_;
    state_cv_.notify_all();
  }
  for (auto& t : best_effort) t->cv.notify_all();  // guaranteed work ended: pace less
}

// ---- inline tasks ----

absl::StatusOr<InlineTask> Scheduler::Begin(const std::string& tenant, TaskOptions options) {
  if (const int held = HeldHere(&tenant); held > 0) {
    int max_running = 0;
    {
      std::lock_guard<std::mutex> l(mu_);
      if (auto it = tenants_.find(tenant); it != tenants_.end()) {
        max_running = it->second->options.max_running;
      }
    }
    if (max_running > 0 && held >= max_running) {
      return RuntimeError(absl::StrCat(
          "task block of tenant '", tenant, "': this thread already runs ", held,
          " of its tasks and the tenant runs at most ", max_running,
          " at once (max_running), so the block could never start: it would wait for itself"));
    }
  }
  PGK_ASSIGN_OR_RETURN(
      std::shared_ptr<Task> task,
      SubmitImpl(tenant, TaskFn([] { return absl::OkStatus(); }), std::move(options), true));
  std::shared_ptr<TenantRt> t;
  {
    BlockingRegion unlocked;
    std::unique_lock<std::mutex> l(mu_);
    state_cv_.wait(l, [&] { return task->state() != TaskState::kPending; });
    if (task->state() != TaskState::kAdmitted) return task->status();
    task->fn_ = nullptr;
    PGK_ASSIGN_OR_RETURN(t, StartLocked(*task));
  }
  if (t->options.qos == QosClass::kGuaranteed) UpdatePreemptSignal();
  absl::Status order = StreamWaitStream(*task->stream_, *task->origin_);
  if (!order.ok()) {
    FinishBody(task, order);
    return order;
  }
  return InlineTask(this, task, std::make_unique<InlineTask::Scopes>(this, t, task->stream_));
}

InlineTask::InlineTask(Scheduler* s, std::shared_ptr<Task> t, std::unique_ptr<Scopes> scopes)
    : scheduler_(s), task_(std::move(t)), scopes_(std::move(scopes)) {}

InlineTask::InlineTask(InlineTask&& o) noexcept
    : scheduler_(o.scheduler_), task_(std::move(o.task_)), scopes_(std::move(o.scopes_)) {}

InlineTask::~InlineTask() { (void)End(); }

absl::Status InlineTask::End(absl::Status body) {
  if (task_ == nullptr) return absl::OkStatus();
  std::shared_ptr<Task> task = std::move(task_);
  // The scopes restore this thread's previous ones: only valid on the owner thread, innermost
  // first. Otherwise they are left in place (a leak, never a dangling pointer) and the task
  // fails with the reason.
  absl::Status misuse;
  if (std::this_thread::get_id() != owner_) {
    misuse = RuntimeError(
        absl::StrCat("task ", task->id(), ": a task block must end on the thread that began it"));
  } else if (LaunchGateScope::Current() != &scopes_->gate ||
             StreamScope::Current() != task->stream_) {
    misuse = RuntimeError(
        absl::StrCat("task ", task->id(), ": task blocks on a thread must end innermost first"));
  }
  if (!misuse.ok()) {
    (void)scopes_.release();  // NOLINT: deliberately leaked, see above
    scheduler_->FinishBody(task, misuse);
    return misuse;
  }
  scopes_.reset();
  // Work queued after the block on the thread's stream (restored now) sees its results.
  auto current = Runtime::Get().stream(scheduler_->device_);
  absl::Status order =
      current.ok() ? StreamWaitStream(**current, *task->stream_) : current.status();
  scheduler_->FinishBody(task, body.ok() ? order : body);
  return order;
}

}  // namespace pygpukit

// Scheduler: creation, submission, cancellation, the transition bookkeeping, shutdown and stats.
// Tenants (adding, removing, their quotas) are in scheduler_tenants.cc; running tasks, pacing
// and inline tasks in scheduler_task.cc.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <new>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "runtime/blocking.h"
#include "runtime/memory/memory_pool.h"
#include "runtime/sched/event_watcher.h"
#include "runtime/sched/scheduler_internal.h"

namespace pygpukit {

int64_t Scheduler::Now() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

absl::StatusOr<std::unique_ptr<Scheduler>> Scheduler::Create(SchedulerOptions options) {
  Runtime& rt = Runtime::Get();
  const Device d = options.device_set ? options.device : rt.default_device();
  PGK_RETURN_IF_ERROR(rt.CheckDevice(d));
  if (options.worker_threads < 1 || options.worker_threads > 256) {
    return ValueError(
        absl::StrCat("scheduler: worker_threads ", options.worker_threads, " is outside [1, 256]"));
  }
  for (const auto& [name, value] :
       {std::pair<const char*, int64_t>{"inflight_budget", options.inflight_budget},
        {"best_effort_inflight", options.best_effort_inflight}}) {
    if (value < 1) {
      return ValueError(absl::StrCat("scheduler: ", name, " must be >= 1, got ", value));
    }
  }
  if (options.best_effort_sms < -1) {
    return ValueError(absl::StrCat("scheduler: best_effort_sms ", options.best_effort_sms,
                                   " (use -1 for automatic, 0 for none)"));
  }
  if (options.best_effort_sms > 0) {
    PGK_ASSIGN_OR_RETURN(hal::DeviceProperties p, rt.properties(d));
    if (options.best_effort_sms > p.multiprocessors) {
      return ValueError(absl::StrCat("scheduler: best_effort_sms ", options.best_effort_sms,
                                     " exceeds the ", p.multiprocessors, " SMs of ", d.ToString()));
    }
  }
  for (const auto& [name, value] :
       {std::pair<const char*, int64_t>{"best_effort_inflight_while_guaranteed",
                                        options.best_effort_inflight_while_guaranteed},
        {"memory_capacity", options.memory_capacity},
        {"best_effort_slice_flops", options.best_effort_slice_flops}}) {
    if (value < 0) {
      return ValueError(absl::StrCat("scheduler: ", name, " must be >= 0, got ", value));
    }
  }
  int64_t capacity = options.memory_capacity;
  if (capacity == 0) {
    PGK_ASSIGN_OR_RETURN(MemoryPool * pool, rt.pool(d));
    capacity = pool->limit();
  }
  if (capacity == 0) {
    PGK_ASSIGN_OR_RETURN(hal::DeviceProperties p, rt.properties(d));
    capacity = p.total_memory;
  }
  PGK_ASSIGN_OR_RETURN(hal::Backend * backend, rt.backend(d.type));
  // With preemption, the signal's device copy: a word of device memory and the stream that
  // writes it (pooled, so it outlives the word's stream-ordered free).
  hal::Stream* signal_stream = nullptr;
  std::shared_ptr<Buffer> device_word;
  if (options.best_effort_preemption) {
    PGK_ASSIGN_OR_RETURN(signal_stream, rt.AcquireStream(d, backend->StreamPriorityRange().second));
    absl::Status st = [&]() -> absl::Status {
      PGK_ASSIGN_OR_RETURN(MemoryPool * pool, rt.pool(d));
      QuotaScope uncharged(nullptr);  // runtime state, like a workspace
      PGK_ASSIGN_OR_RETURN(device_word, pool->Allocate(sizeof(uint32_t), *signal_stream));
      PGK_RETURN_IF_ERROR(
          backend->WriteWordAsync(static_cast<uint32_t*>(device_word->data()), 0, *signal_stream));
      return backend->Synchronize(*signal_stream);
    }();
    if (!st.ok()) {
      device_word.reset();
      rt.ReleaseStream(signal_stream);
      return absl::Status(st.code(),
                          absl::StrCat("scheduler: best_effort_preemption: ", st.message()));
    }
  }
  return std::unique_ptr<Scheduler>(new Scheduler(std::move(options), d, capacity, backend,
                                                  signal_stream, std::move(device_word)));
}

Scheduler::Scheduler(SchedulerOptions options, Device device, int64_t capacity,
                     hal::Backend* backend, hal::Stream* signal_stream,
                     std::shared_ptr<Buffer> device_word)
    : options_(std::move(options)),
      device_(device),
      capacity_(capacity),
      backend_(backend),
      admission_(capacity),
      signal_stream_(signal_stream),
      device_word_(std::move(device_word)),
      signal_{
          &preempt_word_,
          device_word_ != nullptr ? static_cast<const uint32_t*>(device_word_->data()) : nullptr,
          device},
      watcher_(std::make_unique<EventWatcher>()) {
  admission_.set_recording(options_.record_admission);
  notifier_ = std::thread([this] { NotifierLoop(); });
  timer_ = std::thread([this] { TimerLoop(); });
  for (int i = 0; i < options_.worker_threads; ++i) {
    workers_.emplace_back([this] { WorkerLoop(); });
  }
  own_threads_ = {notifier_.get_id(), timer_.get_id(), watcher_->thread_id()};
  for (const std::thread& w : workers_) own_threads_.push_back(w.get_id());
}

Scheduler::~Scheduler() {
  if (OnOwnThread()) {
    std::fprintf(stderr,
                 "pygpukit: a Scheduler is being destroyed on one of its own threads (a task "
                 "body or a callback dropped the last reference); it would wait for itself\n");
    std::abort();
  }
  (void)Shutdown();
  // Nothing reads the device word any more: Shutdown waited for every task, and preemptible
  // work waits for its kernels on the host.
  if (signal_stream_ != nullptr) {
    device_word_.reset();
    Runtime::Get().ReleaseStream(signal_stream_);
  }
}

bool Scheduler::preempting() const { return preempt_word_.load(std::memory_order_acquire) != 0; }

bool Scheduler::OnOwnThread() const {
  const std::thread::id me = std::this_thread::get_id();
  return std::find(own_threads_.begin(), own_threads_.end(), me) != own_threads_.end();
}

std::vector<HeldTask>& HeldTasks() {
  thread_local std::vector<HeldTask> held;
  return held;
}

int Scheduler::HeldHere(const std::string* tenant) const {
  int n = 0;
  for (const HeldTask& h : HeldTasks()) {
    if (h.scheduler == this && (tenant == nullptr || *h.tenant == *tenant)) ++n;
  }
  return n;
}

absl::StatusOr<std::shared_ptr<Task>> Scheduler::Submit(const std::string& tenant, TaskFn fn,
                                                        TaskOptions options) {
  if (!fn) return ValueError("submit: the task has no callable");
  return SubmitImpl(tenant, std::move(fn), std::move(options), false);
}

absl::StatusOr<std::shared_ptr<Task>> Scheduler::SubmitImpl(const std::string& tenant, TaskFn fn,
                                                            TaskOptions options, bool is_inline) {
  std::unique_lock<std::mutex> l(mu_);
  if (stopping_) return RuntimeError("submit: the scheduler is shut down");
  auto it = tenants_.find(tenant);
  if (it == tenants_.end() || it->second->removing) {
    return ValueError(absl::StrCat("submit: tenant '", tenant, "' does not exist"));
  }
  for (const auto& [name, value] : {std::pair<const char*, int64_t>{"memory", options.memory},
                                    {"deadline", options.deadline_ns},
                                    {"timeout", options.timeout_ns}}) {
    if (value < 0) {
      return ValueError(
          absl::StrCat("submit: ", name, " must be >= 0, got ", value, " (tenant '", tenant, "')"));
    }
  }
  const int64_t now = Now();
  auto task = std::make_shared<Task>(next_id_++, tenant, std::move(options), std::move(fn), now);
  task->inline_ = is_inline;
  task->owner_ = this;
  PGK_ASSIGN_OR_RETURN(task->origin_, Runtime::Get().stream(device_));
  TaskSpec spec;
  spec.id = task->id();
  spec.tenant = tenant;
  spec.memory = task->options().memory;
  spec.priority = task->options().priority;
  spec.deadline_ns = task->options().deadline_ns;
  if (task->options().timeout_ns > 0 &&
      task->options().timeout_ns < std::numeric_limits<int64_t>::max() - now) {  // else: none
    const int64_t by = now + task->options().timeout_ns;
    spec.deadline_ns = spec.deadline_ns > 0 ? std::min(spec.deadline_ns, by) : by;
  }
  spec.depends_on = task->options().depends_on;
  auto decisions = admission_.Submit(spec, now);
  if (!decisions.ok()) return decisions.status();
  live_[task->id()] = task;
  {  // the submission itself opens the task's history
    TransitionRecord rec{task->id(), tenant, TaskState::kPending, TaskState::kPending, now, ""};
    history_.push_back(rec);
    if (history_.size() > options_.history_capacity) history_.pop_front();
    (void)task->Transition(rec, absl::OkStatus());
  }
  ApplyLocked(*decisions);
  if (spec.deadline_ns > 0) timer_cv_.notify_one();
  return task;
}

bool Scheduler::Cancel(Task& task) {
  if (task.owner_ != this) return false;  // another scheduler's task
  std::lock_guard<std::mutex> l(mu_);
  return CancelLocked(task);
}

bool Scheduler::CancelLocked(Task& task) {
  const int64_t now = Now();
  switch (task.state()) {
    case TaskState::kPending: {
      auto d = admission_.Cancel(task.id(), now);
      if (!d.ok()) return false;
      ApplyLocked(*d);
      return true;
    }
    case TaskState::kAdmitted: {
      auto it = std::find_if(ready_.begin(), ready_.end(),
                             [&](const auto& t) { return t.get() == &task; });
      if (it != ready_.end()) ready_.erase(it);
      std::shared_ptr<Task> keep = task.shared_from_this();
      const std::string why =
          stopping_ ? "the scheduler is shutting down" : "cancelled after admission";
      (void)TransitionLocked(task, TaskState::kCancelled, why,
                             absl::CancelledError(absl::StrCat("task ", task.id(), ": ", why)));
      live_.erase(task.id());
      auto d = admission_.Finish(task.id(), TaskState::kCancelled, now);
      if (d.ok()) ApplyLocked(*d);
      state_cv_.notify_all();
      return true;
    }
    case TaskState::kRunning:
      task.cancel_requested_.store(true, std::memory_order_release);
      return false;
    default:
      return false;
  }
}

void Scheduler::ApplyLocked(const std::vector<Decision>& decisions) {
  if (options_.record_admission) {
    decisions_.insert(decisions_.end(), decisions.begin(), decisions.end());
  }
  for (const Decision& d : decisions) {
    auto it = live_.find(d.task);
    if (it == live_.end()) continue;
    std::shared_ptr<Task> task = it->second;
    if (d.state == TaskState::kAdmitted) {
      (void)TransitionLocked(*task, TaskState::kAdmitted, "");
      auto tit = tenants_.find(task->tenant());
      if (stopping_ || tit == tenants_.end() || tit->second->removing) {
        // Admitted only because a task ahead of it was cancelled by Shutdown / RemoveTenant:
        // it must not start (CancelLocked applies the decisions its release causes).
        CancelLocked(*task);
        continue;
      }
      if (!task->inline_) {  // an inline task runs on its caller's thread: no worker to wake
        ready_.push_back(task);
        work_cv_.notify_one();
      }
    } else {
      const std::string msg = absl::StrCat("task ", task->id(), " (tenant '", task->tenant(), "') ",
                                           TaskStateName(d.state), ": ", d.reason);
      (void)TransitionLocked(*task, d.state, d.reason,
                             d.state == TaskState::kCancelled  ? absl::CancelledError(msg)
                             : d.state == TaskState::kRejected ? TaskRejectedError(msg)
                                                               : RuntimeError(msg));
      live_.erase(it);
    }
  }
  state_cv_.notify_all();
}

absl::Status Scheduler::TransitionLocked(Task& task, TaskState to, std::string reason,
                                         absl::Status final) {
  TransitionRecord rec{task.id(), task.tenant(), task.state(), to, Now(), std::move(reason)};
  PGK_RETURN_IF_ERROR(CheckTransition(task.id(), rec.from, to));
  history_.push_back(rec);
  if (history_.size() > options_.history_capacity) history_.pop_front();
  if (Tracer& tracer = Tracer::Get(); tracer.enabled()) {
    TraceEntry e;
    e.kind = TraceKind::kTask;
    e.name = tracer.Intern(rec.tenant);  // tenants are few; task names may be unbounded
    e.device = device_;
    e.begin = Tracer::Ticks();
    e.task = rec.task;
    e.from = static_cast<uint8_t>(rec.from);
    e.to = static_cast<uint8_t>(rec.to);
    tracer.Add(e);
  }
  PGK_ASSIGN_OR_RETURN(auto callbacks, task.Transition(rec, std::move(final)));
  // A finished task's callable (if it never ran) is released on the notifier thread too, as
  // no lock is held there (releasing a Python callable takes the GIL).
  TaskFn fn = IsTerminal(to) ? std::move(task.fn_) : TaskFn();
  if (listeners_.empty() && callbacks.empty() && !fn) return absl::OkStatus();
  std::shared_ptr<Task> keep = task.shared_from_this();
  Notify(
      [listeners = listeners_, rec, callbacks = std::move(callbacks), keep, fn = std::move(fn)]() {
        for (const auto& l : listeners) l(rec);
        for (const auto& cb : callbacks) cb(*keep);
      });
  return absl::OkStatus();
}

void Scheduler::Notify(std::function<void()> fn) {
  {
    std::lock_guard<std::mutex> l(notify_mu_);
    notifications_.push_back(std::move(fn));
  }
  notify_cv_.notify_one();
}

void Scheduler::NotifierLoop() {
  std::unique_lock<std::mutex> l(notify_mu_);
  for (;;) {
    notify_cv_.wait(l, [&] { return notify_stop_ || !notifications_.empty(); });
    if (notifications_.empty()) return;
    std::function<void()> fn = std::move(notifications_.front());
    notifications_.pop_front();
    notify_busy_ = true;
    l.unlock();
    fn();
    fn = nullptr;  // captured state (possibly Python objects) dies outside the lock
    l.lock();
    notify_busy_ = false;
    if (notifications_.empty()) notify_idle_cv_.notify_all();
  }
}

void Scheduler::TimerLoop() {
  std::unique_lock<std::mutex> l(mu_);
  while (!stopping_) {
    const int64_t next = admission_.NextDeadline();
    if (next > 0) {
      timer_cv_.wait_until(l,
                           std::chrono::steady_clock::time_point(std::chrono::nanoseconds(next)));
    } else {
      timer_cv_.wait(l);
    }
    TickLocked();
  }
}

void Scheduler::TickLocked() {
  std::vector<Decision> d = admission_.Tick(Now());
  if (!d.empty()) ApplyLocked(d);
}

void Scheduler::AddListener(std::function<void(const TransitionRecord&)> fn) {
  std::lock_guard<std::mutex> l(mu_);
  listeners_.push_back(std::move(fn));
}

std::vector<TransitionRecord> Scheduler::history() const {
  std::lock_guard<std::mutex> l(mu_);
  return {history_.begin(), history_.end()};
}

std::vector<Decision> Scheduler::decisions() const {
  std::lock_guard<std::mutex> l(mu_);
  return decisions_;
}

std::vector<AdmissionEvent> Scheduler::admission_trace() const {
  std::lock_guard<std::mutex> l(mu_);
  return admission_.recorded();
}

absl::Status Scheduler::Drain(int64_t timeout_ns) {
  if (OnOwnThread()) {
    return RuntimeError(
        "drain: called from a task or a callback of this scheduler (it would "
        "wait for itself)");
  }
  if (HeldHere() > 0) {
    return RuntimeError(
        "drain: called inside a task block of this scheduler (it would wait for the block, "
        "which waits for it)");
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::nanoseconds(timeout_ns);
  auto wait = [&](std::condition_variable& cv, std::unique_lock<std::mutex>& l, auto done) {
    if (timeout_ns < 0) {
      cv.wait(l, done);
      return true;
    }
    return cv.wait_until(l, deadline, done);
  };
  BlockingRegion unlocked;
  {
    std::unique_lock<std::mutex> l(mu_);
    if (!wait(state_cv_, l, [&] { return live_.empty() && signal_updates_ == 0; })) {
      return absl::DeadlineExceededError("drain: tasks are still running");
    }
  }
  // Done callbacks (which complete futures) have run too when Drain returns.
  std::unique_lock<std::mutex> l(notify_mu_);
  if (!wait(notify_idle_cv_, l, [&] { return notifications_.empty() && !notify_busy_; })) {
    return absl::DeadlineExceededError("drain: done callbacks are still running");
  }
  return absl::OkStatus();
}

absl::Status Scheduler::Shutdown() {
  if (OnOwnThread()) {
    return RuntimeError(
        "shutdown: called from a task or a callback of this scheduler (it "
        "would wait for itself)");
  }
  if (HeldHere() > 0) {
    return RuntimeError(
        "shutdown: called inside a task block of this scheduler (it would wait for the block, "
        "which waits for it)");
  }
  // The GIL stays released throughout: the joins below wait for threads that may need it.
  BlockingRegion unlocked;
  {
    std::unique_lock<std::mutex> l(mu_);
    if (shutdown_started_) {  // another thread is shutting down, or has
      state_cv_.wait(l, [&] { return shutdown_done_; });
      return absl::OkStatus();
    }
    shutdown_started_ = true;
    stopping_ = true;
    std::vector<std::shared_ptr<Task>> waiting;
    for (auto& [id, task] : live_) {
      if (task->state() == TaskState::kPending || task->state() == TaskState::kAdmitted) {
        waiting.push_back(task);
      }
    }
    for (auto& task : waiting) CancelLocked(*task);
    work_cv_.notify_all();
    timer_cv_.notify_all();
    state_cv_.wait(l, [&] { return live_.empty() && signal_updates_ == 0; });
  }
  for (std::thread& w : workers_) w.join();
  timer_.join();
  watcher_.reset();  // joins after the last watched event
  {
    std::lock_guard<std::mutex> l(notify_mu_);
    notify_stop_ = true;
  }
  notify_cv_.notify_all();
  notifier_.join();
  std::lock_guard<std::mutex> l(mu_);
  for (auto& [name, t] : tenants_) {
    for (hal::Stream* s : t->streams) Runtime::Get().ReleaseStream(s);
    t->streams.clear();
  }
  shutdown_done_ = true;
  state_cv_.notify_all();
  return absl::OkStatus();
}

LatencySummary SummarizeLatencies(std::vector<int64_t> v) {
  LatencySummary s;
  s.count = static_cast<int64_t>(v.size());
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  auto pct = [&](double p) {  // nearest rank
    size_t i = static_cast<size_t>(std::ceil(p / 100.0 * v.size()));
    return v[std::clamp<size_t>(i, 1, v.size()) - 1] / 1e3;
  };
  s.p50 = pct(50);
  s.p90 = pct(90);
  s.p99 = pct(99);
  s.max = v.back() / 1e3;
  double sum = 0;
  for (int64_t x : v) sum += static_cast<double>(x);
  s.mean = sum / v.size() / 1e3;
  return s;
}

SchedulerStats Scheduler::stats() const {
  std::lock_guard<std::mutex> l(mu_);
  SchedulerStats s;
  s.admission = admission_.stats();
  s.running = running_;
  s.ready = static_cast<int>(ready_.size());
  s.guaranteed_running = guaranteed_running_.load();
  for (const TenantAdmissionStats& a : s.admission.tenants) {
    auto it = tenants_.find(a.name);
    if (it == tenants_.end()) continue;
    TenantRt& t = *it->second;
    TenantStats ts;
    ts.admission = a;
    ts.memory_used = t.quota->used();
    ts.memory_peak = t.quota->peak();
    ts.stream_priority = t.stream_priority;
    ts.sms = t.sms;
    ts.inflight_limit = t.inflight_limit;
    {
      std::lock_guard<std::mutex> tl(t.mu);
      t.Retire();
      ts.inflight = t.Inflight();
      ts.launches = t.launches;
      ts.paced_waits = t.paced_waits;
      ts.preemptions = t.preemptions;
      ts.max_inflight_seen = t.max_seen;
    }
    ts.queue_us = SummarizeLatencies({t.queue_ns.begin(), t.queue_ns.end()});
    ts.run_us = SummarizeLatencies({t.run_ns.begin(), t.run_ns.end()});
    ts.total_us = SummarizeLatencies({t.total_ns.begin(), t.total_ns.end()});
    s.tenants.push_back(std::move(ts));
  }
  return s;
}

}  // namespace pygpukit

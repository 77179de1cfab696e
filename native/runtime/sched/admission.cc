#include "runtime/sched/admission.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <queue>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "runtime/memory/memory_pool.h"

namespace pygpukit {
namespace {

constexpr size_t kRememberFinished = 1 << 16;
constexpr int64_t kNoDeadline = std::numeric_limits<int64_t>::max();

}  // namespace

AdmissionController::AdmissionController(int64_t capacity_bytes)
    : capacity_(std::max<int64_t>(capacity_bytes, 0)) {}

void AdmissionController::Record(AdmissionEvent e) {
  if (recording_) recorded_.push_back(std::move(e));
}

AdmissionController::Key AdmissionController::KeyOf(const Task& t) {
  return Key{static_cast<int>(t.tenant->spec.qos), -t.spec.priority,
             t.spec.deadline_ns > 0 ? t.spec.deadline_ns : kNoDeadline, t.spec.id};
}

absl::Status AdmissionController::AddTenant(const TenantSpec& in,
                                            std::vector<Decision>* decisions) {
  TenantSpec spec = in;
  const std::string what = absl::StrCat("tenant '", spec.name, "'");
  if (spec.name.empty()) return ValueError("tenant: the name is empty");
  if (tenants_.contains(spec.name)) return ValueError(absl::StrCat(what, " already exists"));
  if (spec.memory_request < 0 || spec.memory_limit < 0) {
    return ValueError(absl::StrCat(what, ": negative memory request or limit"));
  }
  if (spec.max_running < 0) return ValueError(absl::StrCat(what, ": negative max_running"));
  if (spec.queue_capacity < 1) {
    return ValueError(absl::StrCat(what, ": queue capacity ", spec.queue_capacity, " < 1"));
  }
  switch (spec.qos) {
    case QosClass::kGuaranteed:
      if (spec.memory_request == 0) {
        return ValueError(absl::StrCat(what,
                                       ": a guaranteed tenant needs a memory request > 0 "
                                       "(its reservation and its limit)"));
      }
      if (spec.memory_limit == 0) spec.memory_limit = spec.memory_request;
      if (spec.memory_limit != spec.memory_request) {
        return ValueError(absl::StrCat(what, ": a guaranteed tenant's memory limit (",
                                       FormatBytes(spec.memory_limit), ") must equal its request (",
                                       FormatBytes(spec.memory_request), ")"));
      }
      break;
    case QosClass::kBurstable:
      if (spec.memory_limit != 0 && spec.memory_limit < spec.memory_request) {
        return ValueError(absl::StrCat(what, ": memory limit ", FormatBytes(spec.memory_limit),
                                       " is below the request ", FormatBytes(spec.memory_request)));
      }
      break;
    case QosClass::kBestEffort:
      if (spec.memory_request != 0) {
        return ValueError(absl::StrCat(what, ": a best-effort tenant reserves nothing (request ",
                                       FormatBytes(spec.memory_request), " given)"));
      }
      break;
  }
  if (reserved_ + spec.memory_request > capacity_) {
    return ValueError(absl::StrCat(what, ": request ", FormatBytes(spec.memory_request),
                                   " over-commits the device: ", FormatBytes(reserved_), " of ",
                                   FormatBytes(capacity_), " already reserved"));
  }
  AdmissionEvent e;
  e.kind = AdmissionEvent::Kind::kAddTenant;
  e.tenant = spec;
  Record(std::move(e));
  reserved_ += spec.memory_request;
  Tenant& t = tenants_[spec.name];
  t.spec = spec;
  t.counts.name = spec.name;
  t.counts.qos = spec.qos;
  t.counts.memory_request = spec.memory_request;
  t.counts.memory_limit = spec.memory_limit;
  if (spec.memory_request == 0) return absl::OkStatus();
  // Less unreserved capacity: pending tasks beyond their tenant's new maximum would otherwise
  // wait for a deadline (or forever). In id order, so that replays decide alike.
  std::vector<uint64_t> unfit;
  for (const auto& [id, task] : tasks_) {
    if (!task.active && task.spec.memory > MaxFit(*task.tenant)) unfit.push_back(id);
  }
  std::sort(unfit.begin(), unfit.end());
  std::vector<Decision> out;
  for (uint64_t id : unfit) {
    auto it = tasks_.find(id);
    if (it == tasks_.end()) continue;  // cancelled with an earlier one it depended on
    const Tenant& owner = *it->second.tenant;
    Drop(id, TaskState::kRejected,
         absl::StrCat("memory estimate ", FormatBytes(it->second.spec.memory),
                      " can no longer fit tenant '", owner.spec.name, "' (",
                      QosClassName(owner.spec.qos), ", request ",
                      FormatBytes(owner.spec.memory_request), ") after tenant '", spec.name,
                      "' reserved ", FormatBytes(spec.memory_request), "; unreserved capacity ",
                      FormatBytes(capacity_ - reserved_)),
         &out);
  }
  // A rejected head of line may unblock its tenant's later tasks.
  if (!out.empty()) Pump(&out);
  if (decisions != nullptr) decisions->insert(decisions->end(), out.begin(), out.end());
  return absl::OkStatus();
}

absl::Status AdmissionController::RemoveTenant(const std::string& name) {
  auto it = tenants_.find(name);
  if (it == tenants_.end()) return ValueError(absl::StrCat("tenant '", name, "' does not exist"));
  if (it->second.pending > 0 || it->second.active > 0) {
    return ValueError(absl::StrCat("tenant '", name, "' still has ", it->second.pending,
                                   " pending and ", it->second.active, " active tasks"));
  }
  AdmissionEvent e;
  e.kind = AdmissionEvent::Kind::kRemoveTenant;
  e.name = name;
  Record(std::move(e));
  reserved_ -= it->second.spec.memory_request;
  tenants_.erase(it);
  return absl::OkStatus();
}

int64_t AdmissionController::Borrowed(const Tenant& t, int64_t used) const {
  return std::max<int64_t>(0, used - t.spec.memory_request);
}

int64_t AdmissionController::MaxFit(const Tenant& t) const {
  int64_t most = t.spec.memory_request + (capacity_ - reserved_);
  if (t.spec.memory_limit > 0) most = std::min(most, t.spec.memory_limit);
  return most;
}

bool AdmissionController::Fits(const Tenant& t, int64_t bytes) const {
  const int64_t used = t.used + bytes;
  if (t.spec.memory_limit > 0 && used > t.spec.memory_limit) return false;
  const int64_t extra = Borrowed(t, used) - Borrowed(t, t.used);
  return extra <= capacity_ - reserved_ - borrowed_;
}

void AdmissionController::RememberFinished(uint64_t id, TaskState state) {
  finished_[id] = state;
  finished_order_.push_back(id);
  if (finished_order_.size() > kRememberFinished) {
    finished_.erase(finished_order_.front());
    finished_order_.pop_front();
  }
}

void AdmissionController::Drop(uint64_t id, TaskState state, std::string reason,
                               std::vector<Decision>* out) {
  auto it = tasks_.find(id);
  Task& task = it->second;
  Tenant& t = *task.tenant;
  t.queue.erase(KeyOf(task));
  deadlines_.erase({task.spec.deadline_ns, id});
  --t.pending;
  --totals_.pending;
  if (state == TaskState::kRejected) {
    ++t.counts.rejected;
    ++totals_.rejected;
  } else {
    ++t.counts.cancelled;
    ++totals_.cancelled;
  }
  tasks_.erase(it);
  RememberFinished(id, state);
  out->push_back(Decision{id, state, std::move(reason)});
  Resolve(id, state, out);
}

void AdmissionController::Resolve(uint64_t id, TaskState state, std::vector<Decision>* out) {
  // A worklist rather than recursion: dependency chains may be long.
  std::deque<std::pair<uint64_t, TaskState>> work = {{id, state}};
  while (!work.empty()) {
    auto [done, how] = work.front();
    work.pop_front();
    auto dit = dependents_.find(done);
    if (dit == dependents_.end()) continue;
    std::vector<uint64_t> waiting = std::move(dit->second);
    dependents_.erase(dit);
    for (uint64_t w : waiting) {
      auto it = tasks_.find(w);
      if (it == tasks_.end() || it->second.active) continue;  // already gone
      Task& task = it->second;
      if (how == TaskState::kCompleted) {
        if (--task.unresolved == 0) task.tenant->queue.insert(KeyOf(task));
        continue;
      }
      // Cancel without Drop's own Resolve: its dependents join the worklist instead.
      Tenant& t = *task.tenant;
      t.queue.erase(KeyOf(task));
      deadlines_.erase({task.spec.deadline_ns, w});
      --t.pending;
      --totals_.pending;
      ++t.counts.cancelled;
      ++totals_.cancelled;
      tasks_.erase(it);
      RememberFinished(w, TaskState::kCancelled);
      out->push_back(Decision{w, TaskState::kCancelled,
                              absl::StrCat("dependency ", done, " ", TaskStateName(how))});
      work.emplace_back(w, TaskState::kCancelled);
    }
  }
}

absl::StatusOr<std::vector<Decision>> AdmissionController::Submit(const TaskSpec& spec,
                                                                  int64_t now_ns) {
  auto tit = tenants_.find(spec.tenant);
  if (tit == tenants_.end()) {
    return ValueError(absl::StrCat("submit: tenant '", spec.tenant, "' does not exist"));
  }
  if (tasks_.contains(spec.id) || finished_.contains(spec.id)) {
    return ValueError(absl::StrCat("submit: task id ", spec.id, " is already in use"));
  }
  if (spec.memory < 0) {
    return ValueError(absl::StrCat("submit: negative memory estimate ", spec.memory));
  }
  AdmissionEvent e;
  e.kind = AdmissionEvent::Kind::kSubmit;
  e.now_ns = now_ns;
  e.task = spec;
  Record(std::move(e));

  Tenant& t = tit->second;
  Task& task = tasks_[spec.id];
  task.spec = spec;
  task.tenant = &t;
  if (spec.deadline_ns > 0) deadlines_.insert({spec.deadline_ns, spec.id});
  ++t.pending;
  ++totals_.pending;

  std::vector<Decision> out;
  const std::string who = absl::StrCat("tenant '", t.spec.name, "'");
  if (t.pending > t.spec.queue_capacity) {
    Drop(spec.id, TaskState::kRejected,
         absl::StrCat(who, ": queue full (", t.spec.queue_capacity, " pending tasks)"), &out);
    return out;
  }
  if (spec.deadline_ns > 0 && spec.deadline_ns <= now_ns) {
    Drop(spec.id, TaskState::kRejected, "deadline already passed at submission", &out);
    return out;
  }
  if (spec.memory > MaxFit(t)) {
    Drop(spec.id, TaskState::kRejected,
         absl::StrCat("memory estimate ", FormatBytes(spec.memory), " can never fit ", who, " (",
                      QosClassName(t.spec.qos), ", request ", FormatBytes(t.spec.memory_request),
                      ", limit ",
                      t.spec.memory_limit > 0 ? FormatBytes(t.spec.memory_limit) : "none",
                      ", unreserved capacity ", FormatBytes(capacity_ - reserved_), ")"),
         &out);
    return out;
  }
  for (uint64_t dep : spec.depends_on) {
    if (dep == spec.id || (!tasks_.contains(dep) && !finished_.contains(dep))) {
      Drop(spec.id, TaskState::kRejected, absl::StrCat("unknown dependency ", dep), &out);
      return out;
    }
    if (auto f = finished_.find(dep); f != finished_.end() && f->second != TaskState::kCompleted) {
      Drop(spec.id, TaskState::kCancelled,
           absl::StrCat("dependency ", dep, " ", TaskStateName(f->second)), &out);
      return out;
    }
  }
  for (uint64_t dep : spec.depends_on) {
    if (tasks_.contains(dep)) {
      dependents_[dep].push_back(spec.id);
      ++task.unresolved;
    }
  }
  if (task.unresolved == 0) t.queue.insert(KeyOf(task));
  Expire(now_ns, &out);
  Pump(&out);
  return out;
}

absl::StatusOr<std::vector<Decision>> AdmissionController::Finish(uint64_t id,
                                                                  TaskState final_state,
                                                                  int64_t now_ns) {
  auto it = tasks_.find(id);
  if (it == tasks_.end() || !it->second.active) {
    return ValueError(absl::StrCat("finish: task ", id, " is not admitted"));
  }
  if (final_state != TaskState::kCompleted && final_state != TaskState::kFailed &&
      final_state != TaskState::kCancelled) {
    return ValueError(
        absl::StrCat("finish: task ", id, " cannot end as ", TaskStateName(final_state)));
  }
  AdmissionEvent e;
  e.kind = AdmissionEvent::Kind::kFinish;
  e.now_ns = now_ns;
  e.id = id;
  e.final_state = final_state;
  Record(std::move(e));

  Task& task = it->second;
  Tenant& t = *task.tenant;
  borrowed_ -= Borrowed(t, t.used) - Borrowed(t, t.used - task.spec.memory);
  t.used -= task.spec.memory;
  --t.active;
  --totals_.active;
  switch (final_state) {
    case TaskState::kCompleted:
      ++t.counts.completed;
      ++totals_.completed;
      break;
    case TaskState::kFailed:
      ++t.counts.failed;
      ++totals_.failed;
      break;
    default:
      ++t.counts.cancelled;
      ++totals_.cancelled;
  }
  tasks_.erase(it);
  RememberFinished(id, final_state);
  std::vector<Decision> out;
  Resolve(id, final_state, &out);
  Expire(now_ns, &out);
  Pump(&out);
  return out;
}

absl::StatusOr<std::vector<Decision>> AdmissionController::Cancel(uint64_t id, int64_t now_ns) {
  auto it = tasks_.find(id);
  if (it == tasks_.end() || it->second.active) {
    return ValueError(absl::StrCat("cancel: task ", id, " is not pending"));
  }
  AdmissionEvent e;
  e.kind = AdmissionEvent::Kind::kCancel;
  e.now_ns = now_ns;
  e.id = id;
  Record(std::move(e));
  std::vector<Decision> out;
  Drop(id, TaskState::kCancelled, "cancelled while pending", &out);
  Expire(now_ns, &out);
  Pump(&out);  // a cancelled head of line may unblock its tenant
  return out;
}

std::vector<Decision> AdmissionController::Tick(int64_t now_ns) {
  std::vector<Decision> out;
  if (NextDeadline() == 0 || NextDeadline() > now_ns) return out;
  AdmissionEvent e;
  e.kind = AdmissionEvent::Kind::kTick;
  e.now_ns = now_ns;
  Record(std::move(e));
  Expire(now_ns, &out);
  Pump(&out);
  return out;
}

void AdmissionController::Expire(int64_t now_ns, std::vector<Decision>* out) {
  while (!deadlines_.empty() && deadlines_.begin()->first <= now_ns) {
    Drop(deadlines_.begin()->second, TaskState::kRejected, "deadline passed while pending", out);
  }
}

void AdmissionController::Pump(std::vector<Decision>* out) {
  // Merge the tenants' ordered queues by key. A tenant leaves the pass when its head does not
  // fit or it reaches max_running; admitting only uses room, so one pass is enough.
  using Head = std::pair<Key, Tenant*>;
  std::priority_queue<Head, std::vector<Head>, std::greater<Head>> heads;
  for (auto& [name, t] : tenants_) {
    if (!t.queue.empty()) heads.emplace(*t.queue.begin(), &t);
  }
  while (!heads.empty()) {
    auto [key, tp] = heads.top();
    heads.pop();
    Tenant& t = *tp;
    const uint64_t id = std::get<3>(key);
    Task& task = tasks_.at(id);
    if ((t.spec.max_running > 0 && t.active >= t.spec.max_running) || !Fits(t, task.spec.memory)) {
      continue;  // blocked for this pass
    }
    t.queue.erase(t.queue.begin());
    deadlines_.erase({task.spec.deadline_ns, id});
    borrowed_ += Borrowed(t, t.used + task.spec.memory) - Borrowed(t, t.used);
    t.used += task.spec.memory;
    task.active = true;
    --t.pending;
    ++t.active;
    ++t.counts.admitted;
    --totals_.pending;
    ++totals_.active;
    ++totals_.admitted;
    out->push_back(Decision{id, TaskState::kAdmitted, ""});
    if (!t.queue.empty()) heads.emplace(*t.queue.begin(), &t);
  }
}

int64_t AdmissionController::NextDeadline() const {
  return deadlines_.empty() ? 0 : deadlines_.begin()->first;
}

bool AdmissionController::IsPending(uint64_t id) const {
  auto it = tasks_.find(id);
  return it != tasks_.end() && !it->second.active;
}

bool AdmissionController::IsActive(uint64_t id) const {
  auto it = tasks_.find(id);
  return it != tasks_.end() && it->second.active;
}

AdmissionStats AdmissionController::stats() const {
  AdmissionStats s = totals_;
  s.capacity = capacity_;
  s.reserved = reserved_;
  s.borrowed = borrowed_;
  for (const auto& [name, t] : tenants_) {
    TenantAdmissionStats ts = t.counts;
    ts.memory_admitted = t.used;
    ts.pending = t.pending;
    ts.active = t.active;
    s.tenants.push_back(std::move(ts));
  }
  return s;
}

absl::Status AdmissionController::Apply(const AdmissionEvent& e, std::vector<Decision>* decisions) {
  using K = AdmissionEvent::Kind;
  auto append = [&](absl::StatusOr<std::vector<Decision>> r) -> absl::Status {
    PGK_RETURN_IF_ERROR(r.status());
    decisions->insert(decisions->end(), r->begin(), r->end());
    return absl::OkStatus();
  };
  switch (e.kind) {
    case K::kAddTenant:
      return AddTenant(e.tenant, decisions);
    case K::kRemoveTenant:
      return RemoveTenant(e.name);
    case K::kSubmit:
      return append(Submit(e.task, e.now_ns));
    case K::kFinish:
      return append(Finish(e.id, e.final_state, e.now_ns));
    case K::kCancel:
      return append(Cancel(e.id, e.now_ns));
    case K::kTick:
      return append(Tick(e.now_ns));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Decision>> AdmissionController::Replay(
    int64_t capacity_bytes, const std::vector<AdmissionEvent>& events) {
  AdmissionController c(capacity_bytes);
  std::vector<Decision> out;
  for (const AdmissionEvent& e : events) PGK_RETURN_IF_ERROR(c.Apply(e, &out));
  return out;
}

}  // namespace pygpukit

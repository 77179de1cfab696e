// Scheduler tenants: adding one (validating its options against the device and the other
// tenants' guarantees), removing one (draining its tasks first), and the memory quotas that
// follow from the set of tenants.
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

absl::Status Scheduler::AddTenant(const TenantOptions& o) {
  const std::string what = absl::StrCat("tenant '", o.name, "'");
  if (!(o.compute_share > 0 && o.compute_share <= 1)) {
    return ValueError(
        absl::StrCat(what, ": compute_share ", o.compute_share, " is outside (0, 1]"));
  }
  if (o.max_inflight < 0) return ValueError(absl::StrCat(what, ": negative max_inflight"));
  if (o.streams < 1 || o.streams > 16) {
    return ValueError(absl::StrCat(what, ": streams ", o.streams, " is outside [1, 16]"));
  }
  if (o.sms && *o.sms < 0) return ValueError(absl::StrCat(what, ": negative sms ", *o.sms));
  // The partition: asked for, else by class. An automatic one is dropped where the device
  // cannot partition; one asked for fails instead.
  int sms = o.sms.value_or(0);
  bool automatic = false;
  if (!o.sms && o.qos == QosClass::kBestEffort && options_.best_effort_sms != 0) {
    automatic = options_.best_effort_sms < 0;
    sms = options_.best_effort_sms;
    if (automatic) {
      PGK_ASSIGN_OR_RETURN(hal::DeviceProperties props, Runtime::Get().properties(device_));
      sms = static_cast<int>(props.multiprocessors * SchedulerOptions::kBestEffortSmShare);
      if (sms < 1 || sms >= props.multiprocessors) sms = 0;
    }
  }
  auto t = std::make_shared<TenantRt>();
  t->options = o;
  t->backend = backend_;
  auto [least, greatest] = backend_->StreamPriorityRange();
  switch (o.qos) {
    case QosClass::kGuaranteed:
      t->stream_priority = greatest;
      break;
    case QosClass::kBurstable:
      t->stream_priority = least + (greatest - least) / 2;
      break;
    case QosClass::kBestEffort:
      t->stream_priority = least;
      break;
  }
  if (o.stream_priority) t->stream_priority = *o.stream_priority;
  if (o.qos != QosClass::kGuaranteed) {
    const int budget =
        o.qos == QosClass::kBestEffort ? options_.best_effort_inflight : options_.inflight_budget;
    t->inflight_limit = o.max_inflight > 0
                            ? o.max_inflight
                            : std::max(1, static_cast<int>(std::lround(o.compute_share * budget)));
  }
  TenantSpec spec{o.name, o.qos, o.memory_request, o.memory_limit, o.max_running, o.queue_capacity};
  std::lock_guard<std::mutex> l(mu_);
  if (stopping_) return RuntimeError(absl::StrCat(what, ": the scheduler is shut down"));
  // Streams first: once admission control has the tenant, its reservation may already have
  // rejected other tenants' queued tasks, which cannot be undone.
  absl::Status status;
  for (int i = 0; i < o.streams && status.ok(); ++i) {
    auto s = Runtime::Get().AcquireStream(device_, t->stream_priority, sms);
    // Automatic: no partition where the device cannot make one (no green contexts, or a driver
    // or MPS setup that refuses them); a bad size is still an error.
    if (automatic && !s.ok() && ErrorTypeOf(s.status()) != ErrorType::kValue) {
      sms = 0;
      s = Runtime::Get().AcquireStream(device_, t->stream_priority, 0);
    }
    if (!s.ok()) {
      status = absl::Status(s.status().code(), absl::StrCat(what, ": ", s.status().message()));
    } else {
      t->streams.push_back(*s);
    }
  }
  std::vector<Decision> rejected;
  if (status.ok()) status = admission_.AddTenant(spec, &rejected);  // validates the memory spec
  if (!status.ok()) {
    for (hal::Stream* s : t->streams) Runtime::Get().ReleaseStream(s);
    return status;
  }
  // Guaranteed: the request; the others are set by UpdateQuotasLocked.
  t->quota = std::make_shared<MemoryQuota>(o.name, o.memory_request);
  t->quota->set_spill_order(o.qos == QosClass::kGuaranteed   ? SpillOrder::kNever
                            : o.qos == QosClass::kBestEffort ? SpillOrder::kFirst
                                                             : SpillOrder::kNormal);
  t->stream_priority = t->streams.front()->priority();  // as clamped
  t->sms = t->streams.front()->sm_count();              // as rounded
  tenants_[o.name] = std::move(t);
  UpdateQuotasLocked();
  if (!rejected.empty()) ApplyLocked(rejected);
  return absl::OkStatus();
}

void Scheduler::UpdateQuotasLocked() {
  // Reservations are real, not only bookkeeping: a tenant's quota never reaches into memory
  // reserved by other tenants (its own request plus what nobody reserved, within its limit).
  const int64_t unreserved = capacity_ - admission_.stats().reserved;
  for (auto& [name, t] : tenants_) {
    const TenantOptions& o = t->options;
    if (o.qos == QosClass::kGuaranteed) continue;  // limit == request
    int64_t limit = o.memory_request + unreserved;
    if (o.memory_limit > 0) limit = std::min(limit, o.memory_limit);
    t->quota->set_limit(std::max<int64_t>(limit, 0));
  }
}

absl::Status Scheduler::RemoveTenant(const std::string& name) {
  if (OnOwnThread()) {
    return RuntimeError(absl::StrCat("remove_tenant '", name,
                                     "': called from a task or a "
                                     "callback of this scheduler (it may wait for itself)"));
  }
  if (HeldHere(&name) > 0) {
    return RuntimeError(absl::StrCat("remove_tenant '", name,
                                     "': called inside a task block of that tenant (it would "
                                     "wait for the block, which waits for it)"));
  }
  BlockingRegion unlocked;
  std::unique_lock<std::mutex> l(mu_);
  auto it = tenants_.find(name);
  if (it == tenants_.end() || it->second->removing) {
    return ValueError(absl::StrCat("tenant '", name, "' does not exist"));
  }
  it->second->removing = true;  // no new submissions; admissions from now on are cancelled
  std::vector<std::shared_ptr<Task>> mine;
  for (auto& [id, task] : live_) {
    if (task->tenant() == name) mine.push_back(task);
  }
  for (auto& task : mine) CancelLocked(*task);
  state_cv_.wait(l, [&] {
    for (const auto& [id, task] : live_) {
      if (task->tenant() == name) return false;
    }
    return true;
  });
  PGK_RETURN_IF_ERROR(admission_.RemoveTenant(name));
  for (hal::Stream* s : it->second->streams) Runtime::Get().ReleaseStream(s);
  tenants_.erase(it);
  UpdateQuotasLocked();
  return absl::OkStatus();
}

std::vector<std::string> Scheduler::tenants() const {
  std::lock_guard<std::mutex> l(mu_);
  std::vector<std::string> out;
  for (const auto& [name, t] : tenants_) {
    if (!t->removing) out.push_back(name);
  }
  return out;
}

}  // namespace pygpukit

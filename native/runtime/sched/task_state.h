// Scheduler vocabulary shared by the admission controller, the scheduler and the bindings: QoS
// classes, task states and the one table of legal state transitions.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace pygpukit {

/// Quality-of-service class of a tenant (Kubernetes' vocabulary).
enum class QosClass {
  kGuaranteed,  // memory request == limit, reserved; admitted first, never paced or spilled
  kBurstable,   // request < limit: the request is reserved, growth up to the limit uses free memory
  kBestEffort,  // no reservation: runs on what is left, paced first, spilled first
};

/// Life cycle of a task. Pending -> Admitted -> Running -> Completed | Failed | Cancelled;
/// Pending -> Rejected; Pending | Admitted -> Cancelled.
enum class TaskState { kPending, kAdmitted, kRunning, kCompleted, kFailed, kCancelled, kRejected };

/// "guaranteed", "burstable", "best_effort".
absl::string_view QosClassName(QosClass q);
/// Parses QosClassName's output (also "besteffort", "best-effort"); InvalidArgument otherwise.
absl::Status ParseQosClass(absl::string_view text, QosClass* out);
/// "pending", "admitted", ...
absl::string_view TaskStateName(TaskState s);
/// True for Completed, Failed, Cancelled and Rejected.
bool IsTerminal(TaskState s);
/// True when `from -> to` is in the transition table.
bool IsLegalTransition(TaskState from, TaskState to);
/// OK for a legal transition; a RuntimeError naming task, states and the legal targets.
absl::Status CheckTransition(uint64_t task, TaskState from, TaskState to);

}  // namespace pygpukit

#include "runtime/sched/task_state.h"

#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status.h"

namespace pygpukit {

absl::string_view QosClassName(QosClass q) {
  switch (q) {
    case QosClass::kGuaranteed:
      return "guaranteed";
    case QosClass::kBurstable:
      return "burstable";
    case QosClass::kBestEffort:
      return "best_effort";
  }
  return "?";
}

absl::Status ParseQosClass(absl::string_view text, QosClass* out) {
  std::string t = absl::AsciiStrToLower(text);
  if (t == "guaranteed") {
    *out = QosClass::kGuaranteed;
  } else if (t == "burstable") {
    *out = QosClass::kBurstable;
  } else if (t == "best_effort" || t == "besteffort" || t == "best-effort") {
    *out = QosClass::kBestEffort;
  } else {
    return ValueError(absl::StrCat("tenant: unknown QoS class '", text,
                                   "' (expected guaranteed, burstable or best_effort)"));
  }
  return absl::OkStatus();
}

absl::string_view TaskStateName(TaskState s) {
  switch (s) {
    case TaskState::kPending:
      return "pending";
    case TaskState::kAdmitted:
      return "admitted";
    case TaskState::kRunning:
      return "running";
    case TaskState::kCompleted:
      return "completed";
    case TaskState::kFailed:
      return "failed";
    case TaskState::kCancelled:
      return "cancelled";
    case TaskState::kRejected:
      return "rejected";
  }
  return "?";
}

bool IsTerminal(TaskState s) {
  return s == TaskState::kCompleted || s == TaskState::kFailed || s == TaskState::kCancelled ||
         s == TaskState::kRejected;
}

bool IsLegalTransition(TaskState from, TaskState to) {
  using S = TaskState;
  switch (from) {
    case S::kPending:
      return to == S::kAdmitted || to == S::kRejected || to == S::kCancelled;
    case S::kAdmitted:
      return to == S::kRunning || to == S::kCancelled;
    case S::kRunning:
      return to == S::kCompleted || to == S::kFailed || to == S::kCancelled;
    default:
      return false;  // terminal states never change
  }
}

absl::Status CheckTransition(uint64_t task, TaskState from, TaskState to) {
  if (IsLegalTransition(from, to)) return absl::OkStatus();
  std::vector<std::string> legal;
  for (int i = 0; i <= static_cast<int>(TaskState::kRejected); ++i) {
    auto s = static_cast<TaskState>(i);
    if (IsLegalTransition(from, s)) legal.emplace_back(TaskStateName(s));
  }
  return RuntimeError(absl::StrCat(
      "task ", task, ": illegal transition ", TaskStateName(from), " -> ", TaskStateName(to),
      legal.empty() ? std::string(" (the state is final)")
                    : absl::StrCat(" (legal from ", TaskStateName(from), ": ",
                                   absl::StrJoin(legal, ", "), ")")));
}

}  // namespace pygpukit

// Task states and QoS classes: the full transition table (every (from, to) pair of the seven
// states against the documented legal set), terminal states, CheckTransition's messages, and
// QosClass names / parsing with bad input.
#include "runtime/sched/task_state.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"

namespace pygpukit {
namespace {

using S = TaskState;

constexpr S kAllStates[] = {S::kPending, S::kAdmitted,  S::kRunning, S::kCompleted,
                            S::kFailed,  S::kCancelled, S::kRejected};

// The documented life cycle: Pending -> Admitted | Rejected | Cancelled; Admitted -> Running |
// Cancelled; Running -> Completed | Failed | Cancelled; terminal states never change.
const std::set<std::pair<S, S>>& LegalSet() {
  static const auto* legal = new std::set<std::pair<S, S>>{
      {S::kPending, S::kAdmitted}, {S::kPending, S::kRejected},   {S::kPending, S::kCancelled},
      {S::kAdmitted, S::kRunning}, {S::kAdmitted, S::kCancelled}, {S::kRunning, S::kCompleted},
      {S::kRunning, S::kFailed},   {S::kRunning, S::kCancelled},
  };
  return *legal;
}

TEST(TaskState, SevenStatesHaveDistinctNames) {
  std::vector<std::string> expected = {"pending", "admitted",  "running", "completed",
                                       "failed",  "cancelled", "rejected"};
  std::set<std::string> seen;
  for (size_t i = 0; i < std::size(kAllStates); ++i) {
    EXPECT_EQ(TaskStateName(kAllStates[i]), expected[i]);
    seen.insert(std::string(TaskStateName(kAllStates[i])));
  }
  EXPECT_EQ(seen.size(), 7u);
  // kRejected is the last enumerator: CheckTransition iterates up to it.
  EXPECT_EQ(static_cast<int>(S::kRejected), 6);
}

TEST(TaskState, TerminalStates) {
  EXPECT_FALSE(IsTerminal(S::kPending));
  EXPECT_FALSE(IsTerminal(S::kAdmitted));
  EXPECT_FALSE(IsTerminal(S::kRunning));
  EXPECT_TRUE(IsTerminal(S::kCompleted));
  EXPECT_TRUE(IsTerminal(S::kFailed));
  EXPECT_TRUE(IsTerminal(S::kCancelled));
  EXPECT_TRUE(IsTerminal(S::kRejected));
}

TEST(TaskState, ExhaustiveTransitionTable) {
  int legal_count = 0;
  for (S from : kAllStates) {
    for (S to : kAllStates) {
      const bool expected = LegalSet().count({from, to}) > 0;
      EXPECT_EQ(IsLegalTransition(from, to), expected)
          << TaskStateName(from) << " -> " << TaskStateName(to);
      absl::Status s = CheckTransition(7, from, to);
      EXPECT_EQ(s.ok(), expected) << TaskStateName(from) << " -> " << TaskStateName(to) << ": "
                                  << s;
      legal_count += expected;
    }
  }
  EXPECT_EQ(legal_count, 8);
}

TEST(TaskState, NoSelfTransitionsAndTerminalStatesNeverChange) {
  for (S s : kAllStates) EXPECT_FALSE(IsLegalTransition(s, s)) << TaskStateName(s);
  for (S from : kAllStates) {
    if (!IsTerminal(from)) continue;
    for (S to : kAllStates) {
      EXPECT_FALSE(IsLegalTransition(from, to))
          << TaskStateName(from) << " -> " << TaskStateName(to);
    }
  }
  // Nothing leads back to Pending, and only Pending leads to Admitted or Rejected.
  for (S from : kAllStates) {
    EXPECT_FALSE(IsLegalTransition(from, S::kPending));
    if (from != S::kPending) {
      EXPECT_FALSE(IsLegalTransition(from, S::kAdmitted));
      EXPECT_FALSE(IsLegalTransition(from, S::kRejected));
    }
  }
}

TEST(TaskState, EveryNonTerminalStateReachesATerminalOne) {
  // Breadth-first from Pending: every state is reachable, and every non-terminal state can
  // still end.
  std::set<S> reached = {S::kPending};
  std::vector<S> frontier = {S::kPending};
  while (!frontier.empty()) {
    S from = frontier.back();
    frontier.pop_back();
    for (S to : kAllStates) {
      if (IsLegalTransition(from, to) && reached.insert(to).second) frontier.push_back(to);
    }
  }
  EXPECT_EQ(reached.size(), 7u);
  for (S s : kAllStates) {
    if (IsTerminal(s)) continue;
    bool can_end = false;
    for (S to : kAllStates) can_end |= IsTerminal(to) && IsLegalTransition(s, to);
    EXPECT_TRUE(can_end) << TaskStateName(s);
  }
}

TEST(TaskState, CheckTransitionNamesTaskStatesAndLegalTargets) {
  absl::Status s = CheckTransition(42, S::kPending, S::kRunning);
  EXPECT_EQ(ErrorTypeOf(s), ErrorType::kRuntime) << s;
  EXPECT_EQ(s.message(),
            "task 42: illegal transition pending -> running (legal from pending: admitted, "
            "cancelled, rejected)");

  s = CheckTransition(7, S::kAdmitted, S::kCompleted);
  EXPECT_EQ(s.message(),
            "task 7: illegal transition admitted -> completed (legal from admitted: running, "
            "cancelled)");

  s = CheckTransition(123456789012345ull, S::kRunning, S::kAdmitted);
  EXPECT_EQ(s.message(),
            "task 123456789012345: illegal transition running -> admitted (legal from running: "
            "completed, failed, cancelled)");

  for (S terminal : {S::kCompleted, S::kFailed, S::kCancelled, S::kRejected}) {
    s = CheckTransition(3, terminal, S::kRunning);
    EXPECT_EQ(ErrorTypeOf(s), ErrorType::kRuntime);
    EXPECT_EQ(s.message(), "task 3: illegal transition " + std::string(TaskStateName(terminal)) +
                               " -> running (the state is final)");
  }
  EXPECT_TRUE(CheckTransition(1, S::kRunning, S::kCancelled).ok());
}

TEST(QosClass, NamesRoundTrip) {
  const std::pair<QosClass, const char*> table[] = {
      {QosClass::kGuaranteed, "guaranteed"},
      {QosClass::kBurstable, "burstable"},
      {QosClass::kBestEffort, "best_effort"},
  };
  for (const auto& [q, name] : table) {
    EXPECT_EQ(QosClassName(q), name);
    QosClass parsed = q == QosClass::kGuaranteed ? QosClass::kBestEffort : QosClass::kGuaranteed;
    ASSERT_TRUE(ParseQosClass(QosClassName(q), &parsed).ok()) << name;
    EXPECT_EQ(parsed, q) << name;
  }
}

TEST(QosClass, ParseAcceptsAliasesAndAnyCase) {
  const std::pair<const char*, QosClass> table[] = {
      {"GUARANTEED", QosClass::kGuaranteed},  {"Burstable", QosClass::kBurstable},
      {"besteffort", QosClass::kBestEffort},  {"best-effort", QosClass::kBestEffort},
      {"Best_Effort", QosClass::kBestEffort}, {"BestEffort", QosClass::kBestEffort},
  };
  for (const auto& [text, q] : table) {
    QosClass parsed = QosClass::kBurstable;
    if (q == QosClass::kBurstable) parsed = QosClass::kGuaranteed;
    ASSERT_TRUE(ParseQosClass(text, &parsed).ok()) << text;
    EXPECT_EQ(parsed, q) << text;
  }
}

TEST(QosClass, ParseRejectsBadInputAndLeavesTheOutputAlone) {
  for (const char* bad : {"", "guaranteed ", " burstable", "best effort", "best__effort", "gold",
                          "guarantee", "burst", "be"}) {
    QosClass out = QosClass::kBurstable;
    absl::Status s = ParseQosClass(bad, &out);
    EXPECT_FALSE(s.ok()) << "'" << bad << "'";
    EXPECT_EQ(ErrorTypeOf(s), ErrorType::kValue) << s;
    EXPECT_EQ(s.message(), "tenant: unknown QoS class '" + std::string(bad) +
                               "' (expected guaranteed, burstable or best_effort)");
    EXPECT_EQ(out, QosClass::kBurstable) << bad;
  }
}

}  // namespace
}  // namespace pygpukit

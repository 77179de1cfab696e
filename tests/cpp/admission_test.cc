// Over 600 lines on purpose: the admission state machine's whole table of transitions in one
// place, each case building on the same tenant fixtures.
// AdmissionController: the pure, single-threaded admission state machine. Tenant validation,
// memory fit per QoS class (Guaranteed within its request, Burstable borrowing unreserved
// capacity up to its limit, Best-effort on what is left), immediate rejections, admission order
// (class, priority, deadline, submission), per-tenant head-of-line blocking, max_running,
// dependencies, deadline expiry, the return of reservations, and deterministic replay of a long
// random event sequence.
#include "runtime/sched/admission.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "test_util.h"

namespace pygpukit {
namespace {

using S = TaskState;
constexpr int64_t kCap = 1000;  // bytes: small numbers keep messages readable ("400 bytes")

TenantSpec Spec(std::string name, QosClass qos, int64_t request = 0, int64_t limit = 0,
                int max_running = 0, int queue_capacity = 1024) {
  TenantSpec t;
  t.name = std::move(name);
  t.qos = qos;
  t.memory_request = request;
  t.memory_limit = limit;
  t.max_running = max_running;
  t.queue_capacity = queue_capacity;
  return t;
}

TenantSpec G(std::string name, int64_t request, int max_running = 0) {
  return Spec(std::move(name), QosClass::kGuaranteed, request, 0, max_running);
}
TenantSpec B(std::string name, int64_t request, int64_t limit = 0, int max_running = 0) {
  return Spec(std::move(name), QosClass::kBurstable, request, limit, max_running);
}
TenantSpec BE(std::string name, int64_t limit = 0, int max_running = 0) {
  return Spec(std::move(name), QosClass::kBestEffort, 0, limit, max_running);
}

std::string Str(const Decision& d) { return absl::StrCat(d.task, ":", TaskStateName(d.state)); }

std::vector<std::string> Strs(const std::vector<Decision>& ds) {
  std::vector<std::string> out;
  for (const Decision& d : ds) out.push_back(Str(d));
  return out;
}

using Names = std::vector<std::string>;

// A controller with a clock and short-hands; every call asserts the call itself succeeded and
// remembers the decisions (and their reasons).
class Harness {
 public:
  explicit Harness(int64_t capacity = kCap) : c(capacity) {}

  void Add(const TenantSpec& spec) {
    absl::Status s = c.AddTenant(spec);
    ASSERT_TRUE(s.ok()) << s;
  }
  // Adds a tenant and returns the decisions its reservation caused.
  Names AddReporting(const TenantSpec& spec) {
    std::vector<Decision> ds;
    absl::Status s = c.AddTenant(spec, &ds);
    EXPECT_TRUE(s.ok()) << s;
    return Strs(Remember(ds));
  }

  Names Submit(uint64_t id, const std::string& tenant, int64_t memory, int priority = 0,
               int64_t deadline = 0, std::vector<uint64_t> deps = {}) {
    TaskSpec t;
    t.id = id;
    t.tenant = tenant;
    t.memory = memory;
    t.priority = priority;
    t.deadline_ns = deadline;
    t.depends_on = std::move(deps);
    return Take(c.Submit(t, now));
  }
  Names Finish(uint64_t id, S state = S::kCompleted) { return Take(c.Finish(id, state, now)); }
  Names Cancel(uint64_t id) { return Take(c.Cancel(id, now)); }
  Names Tick(int64_t at) {
    now = at;
    return Strs(Remember(c.Tick(at)));
  }

  // The reason of the latest decision about `id`.
  std::string Reason(uint64_t id) const {
    auto it = reasons_.find(id);
    return it == reasons_.end() ? "<no decision>" : it->second;
  }
  const TenantAdmissionStats& Tenant(const std::string& name) {
    stats_ = c.stats();
    for (const auto& t : stats_.tenants) {
      if (t.name == name) return t;
    }
    ADD_FAILURE() << "no tenant " << name;
    static TenantAdmissionStats none;
    return none;
  }

  AdmissionController c;
  int64_t now = 0;

 private:
  Names Take(const absl::StatusOr<std::vector<Decision>>& r) {
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok()) return {"<error: " + std::string(r.status().message()) + ">"};
    return Strs(Remember(*r));
  }
  const std::vector<Decision>& Remember(const std::vector<Decision>& ds) {
    for (const Decision& d : ds) {
      reasons_[d.task] = d.reason;
      EXPECT_EQ(d.state == S::kAdmitted, d.reason.empty()) << Str(d) << " " << d.reason;
    }
    return ds;
  }
  std::map<uint64_t, std::string> reasons_;
  AdmissionStats stats_;
};

void ExpectValueError(const absl::Status& s, const std::string& part) {
  EXPECT_FALSE(s.ok()) << "expected an error containing: " << part;
  EXPECT_EQ(ErrorTypeOf(s), ErrorType::kValue) << s;
  EXPECT_NE(s.message().find(part), absl::string_view::npos) << "'" << part << "' missing in " << s;
}

// ---- tenants ----

TEST(Admission, TenantValidationErrors) {
  struct Case {
    const char* what;
    TenantSpec spec;
    std::string error;
  };
  const Case cases[] = {
      {"empty name", G("", 10), "tenant: the name is empty"},
      {"guaranteed limit above request", Spec("g", QosClass::kGuaranteed, 200, 300),
       "tenant 'g': a guaranteed tenant's memory limit (300 bytes) must equal its request "
       "(200 bytes)"},
      {"guaranteed limit below request", Spec("g", QosClass::kGuaranteed, 200, 100),
       "must equal its request"},
      {"burstable limit below request", B("b", 200, 100),
       "tenant 'b': memory limit 100 bytes is below the request 200 bytes"},
      {"best effort with a request", Spec("e", QosClass::kBestEffort, 10, 0),
       "tenant 'e': a best-effort tenant reserves nothing (request 10 bytes given)"},
      {"negative request", B("b", -1), "tenant 'b': negative memory request or limit"},
      {"negative limit", BE("e", -5), "tenant 'e': negative memory request or limit"},
      {"negative max_running", Spec("b", QosClass::kBurstable, 0, 0, -1),
       "tenant 'b': negative max_running"},
      {"empty queue", Spec("b", QosClass::kBurstable, 0, 0, 0, 0),
       "tenant 'b': queue capacity 0 < 1"},
      {"request beyond capacity", G("g", kCap + 1),
       "tenant 'g': request 1001 bytes over-commits the device: 0 bytes of 1000 bytes already "
       "reserved"},
  };
  for (const Case& c : cases) {
    AdmissionController a(kCap);
    a.set_recording(true);
    absl::Status s = a.AddTenant(c.spec);
    ExpectValueError(s, c.error);
    EXPECT_FALSE(a.HasTenant(c.spec.name)) << c.what;
    EXPECT_EQ(a.stats().reserved, 0) << c.what;
    EXPECT_TRUE(a.stats().tenants.empty()) << c.what;
    EXPECT_TRUE(a.recorded().empty()) << c.what << ": a refused tenant is not recorded";
  }
}

TEST(Admission, TenantReservationsDuplicatesAndRemoval) {
  AdmissionController a(kCap);
  ASSERT_OK(a.AddTenant(G("g", 600)));  // limit defaults to the request
  ASSERT_OK(a.AddTenant(B("b", 300, 900)));
  ASSERT_OK(a.AddTenant(BE("e")));  // reserves nothing
  AdmissionStats st = a.stats();
  EXPECT_EQ(st.capacity, kCap);
  EXPECT_EQ(st.reserved, 900);
  ASSERT_EQ(st.tenants.size(), 3u);  // by name
  EXPECT_EQ(st.tenants[0].name, "b");
  EXPECT_EQ(st.tenants[1].name, "e");
  EXPECT_EQ(st.tenants[2].name, "g");
  EXPECT_EQ(st.tenants[2].qos, QosClass::kGuaranteed);
  EXPECT_EQ(st.tenants[2].memory_request, 600);
  EXPECT_EQ(st.tenants[2].memory_limit, 600);
  EXPECT_EQ(st.tenants[0].memory_limit, 900);

  ExpectValueError(a.AddTenant(B("g", 10)), "tenant 'g' already exists");
  ExpectValueError(a.AddTenant(B("b2", 101)),
                   "tenant 'b2': request 101 bytes over-commits the device: 900 bytes of 1000 "
                   "bytes already reserved");
  ASSERT_OK(a.AddTenant(B("b2", 100)));  // exactly the capacity
  EXPECT_EQ(a.stats().reserved, kCap);
  ExpectValueError(a.AddTenant(G("g2", 1)), "over-commits");
  ASSERT_OK(a.AddTenant(BE("e2")));  // best-effort tenants never over-commit

  // Removal returns the reservation; a tenant with work cannot be removed.
  ExpectValueError(a.RemoveTenant("nope"), "tenant 'nope' does not exist");
  TaskSpec t{1, "g", 100};
  ASSERT_OK(a.Submit(t, 0));
  EXPECT_TRUE(a.IsActive(1));
  ExpectValueError(a.RemoveTenant("g"), "tenant 'g' still has 0 pending and 1 active tasks");
  ASSERT_OK(a.Finish(1, S::kCompleted, 0));
  ASSERT_OK(a.RemoveTenant("g"));
  EXPECT_FALSE(a.HasTenant("g"));
  EXPECT_EQ(a.stats().reserved, 400);
  ASSERT_OK(a.AddTenant(G("g2", 600)));  // the freed reservation is available again
  EXPECT_EQ(a.stats().reserved, kCap);
}

// ---- fit per class ----

TEST(Admission, GuaranteedFitsOnlyWithinItsRequest) {
  Harness h;
  h.Add(G("g", 400));
  EXPECT_EQ(h.Submit(1, "g", 300), Names{"1:admitted"});
  // 600 bytes are unreserved, but a guaranteed tenant never borrows.
  EXPECT_EQ(h.Submit(2, "g", 200), Names{});
  EXPECT_TRUE(h.c.IsPending(2));
  EXPECT_EQ(h.Submit(3, "g", 401), Names{"3:rejected"});
  EXPECT_EQ(h.Reason(3),
            "memory estimate 401 bytes can never fit tenant 'g' (guaranteed, request 400 bytes, "
            "limit 400 bytes, unreserved capacity 600 bytes)");
  EXPECT_EQ(h.Submit(4, "g", 100), Names{}) << "head of line: 2 is first";
  EXPECT_EQ(h.Tenant("g").memory_admitted, 300);
  EXPECT_EQ(h.c.stats().borrowed, 0);
  EXPECT_EQ(h.Finish(1), (Names{"2:admitted", "4:admitted"}));
  EXPECT_EQ(h.Tenant("g").memory_admitted, 300);
  EXPECT_EQ(h.Submit(5, "g", 100), Names{"5:admitted"});  // exactly the request
  EXPECT_EQ(h.Tenant("g").memory_admitted, 400);
  EXPECT_EQ(h.Submit(6, "g", 0), Names{"6:admitted"});  // zero bytes always fit
  EXPECT_EQ(h.c.stats().borrowed, 0);
}

TEST(Admission, BurstableBorrowsUnreservedCapacityUpToItsLimit) {
  Harness h;
  h.Add(G("g", 400));
  h.Add(B("b", 200, 500));
  h.Add(B("c", 100));  // no limit of its own
  // Unreserved: 1000 - 400 - 200 - 100 = 300.
  EXPECT_EQ(h.Submit(1, "b", 200), Names{"1:admitted"});  // within the request
  EXPECT_EQ(h.c.stats().borrowed, 0);
  EXPECT_EQ(h.Submit(2, "b", 250), Names{"2:admitted"});  // borrows 250 of 300
  EXPECT_EQ(h.c.stats().borrowed, 250);
  EXPECT_EQ(h.Tenant("b").memory_admitted, 450);
  EXPECT_EQ(h.Submit(3, "b", 100), Names{}) << "450 + 100 is beyond the limit 500";
  EXPECT_EQ(h.Submit(4, "b", 501), Names{"4:rejected"});
  EXPECT_EQ(h.Reason(4),
            "memory estimate 501 bytes can never fit tenant 'b' (burstable, request 200 bytes, "
            "limit 500 bytes, unreserved capacity 300 bytes)");
  // c: its own request is always available; beyond it only the 50 unborrowed bytes.
  EXPECT_EQ(h.Submit(5, "c", 100), Names{"5:admitted"});
  EXPECT_EQ(h.Submit(6, "c", 60), Names{});
  EXPECT_EQ(h.Submit(7, "c", 401), Names{"7:rejected"}) << "request + unreserved = 400";
  EXPECT_EQ(h.Reason(7),
            "memory estimate 401 bytes can never fit tenant 'c' (burstable, request 100 bytes, "
            "limit none, unreserved capacity 300 bytes)");
  // b gives back 200: its use drops to 250, so its loan shrinks to 50 and c can borrow 60.
  EXPECT_EQ(h.Finish(1), (Names{"3:admitted", "6:admitted"}));
  EXPECT_EQ(h.Tenant("b").memory_admitted, 350);
  EXPECT_EQ(h.Tenant("c").memory_admitted, 160);
  EXPECT_EQ(h.c.stats().borrowed, 150 + 60);
  EXPECT_EQ(h.Tenant("g").memory_admitted, 0) << "the guaranteed reservation stays untouched";
}

TEST(Admission, ANewReservationRejectsQueuedTasksThatCanNoLongerFit) {
  Harness h;
  h.c.set_recording(true);
  h.Add(B("burst", 100, 0, /*max_running=*/1));
  h.Add(BE("batch"));
  EXPECT_EQ(h.Submit(1, "burst", 100), Names({"1:admitted"}));
  // Queued behind max_running: 800 fits burst's 100 + 900 unreserved, for now.
  EXPECT_EQ(h.Submit(2, "burst", 800), Names{});
  EXPECT_EQ(h.Submit(3, "burst", 500), Names{});
  EXPECT_EQ(h.Submit(4, "batch", 850), Names({"4:admitted"}));
  EXPECT_EQ(h.Finish(4), Names{});
  EXPECT_EQ(h.Submit(5, "batch", 700, 0, 0, {2}), Names{});  // waits for task 2
  EXPECT_EQ(h.Submit(6, "batch", 300), Names({"6:admitted"}));
  // A guaranteed tenant reserves 400: burst can now reach 100 + 500 and batch 500 at most.
  EXPECT_EQ(h.AddReporting(G("online", 400)), Names({"2:rejected", "5:cancelled"}));
  EXPECT_NE(h.Reason(2).find("can no longer fit tenant 'burst'"), std::string::npos) << h.Reason(2);
  EXPECT_NE(h.Reason(2).find("after tenant 'online' reserved 400"), std::string::npos)
      << h.Reason(2);
  EXPECT_EQ(h.Tenant("burst").rejected, 1);
  // Task 3 (500) still fits burst's maximum and runs once task 1 is done (and batch returns
  // the capacity it borrowed).
  EXPECT_EQ(h.Finish(6), Names{});
  EXPECT_EQ(h.Finish(1), Names({"3:admitted"}));
  // A tenant without a reservation rejects nothing.
  EXPECT_EQ(h.AddReporting(BE("other")), Names{});
  // Replaying the recorded events decides alike, the rejection included.
  std::vector<Decision> all;
  ASSERT_OK_AND_ASSIGN(all, AdmissionController::Replay(kCap, h.c.recorded()));
  Names replayed = Strs(all);
  EXPECT_NE(std::find(replayed.begin(), replayed.end(), "2:rejected"), replayed.end());
  EXPECT_NE(std::find(replayed.begin(), replayed.end(), "5:cancelled"), replayed.end());
}

TEST(Admission, ARejectedHeadOfLineUnblocksItsTenantAtOnce) {
  Harness h;
  h.Add(B("u", 100));
  h.Add(BE("batch"));
  EXPECT_EQ(h.Submit(1, "batch", 300), Names({"1:admitted"}));
  EXPECT_EQ(h.Submit(2, "u", 800), Names{});  // needs 700 borrowed, 600 free: waits
  EXPECT_EQ(h.Submit(3, "u", 50), Names{});   // blocked behind it (head of line)
  // 400 reserved: u's maximum drops to 500, task 2 can never fit, and task 3 runs at once.
  EXPECT_EQ(h.AddReporting(G("g", 400)), Names({"2:rejected", "3:admitted"}));
}

TEST(Admission, BestEffortRunsOnWhatIsLeft) {
  Harness h;
  h.Add(G("g", 600));
  h.Add(BE("e"));
  h.Add(BE("f", 150));
  // The guaranteed reservation is never lent, even while unused.
  EXPECT_EQ(h.Submit(1, "e", 401), Names{"1:rejected"});
  EXPECT_EQ(h.Reason(1),
            "memory estimate 401 bytes can never fit tenant 'e' (best_effort, request 0 bytes, "
            "limit none, unreserved capacity 400 bytes)");
  EXPECT_EQ(h.Submit(2, "e", 300), Names{"2:admitted"});
  EXPECT_EQ(h.c.stats().borrowed, 300);
  EXPECT_EQ(h.Submit(3, "e", 200), Names{});
  EXPECT_EQ(h.Submit(4, "f", 151), Names{"4:rejected"}) << "its own limit";
  EXPECT_EQ(h.Submit(5, "f", 100), Names{"5:admitted"});
  EXPECT_EQ(h.Submit(6, "f", 10), Names{}) << "only 0 bytes left";
  EXPECT_EQ(h.Submit(7, "g", 600), Names{"7:admitted"}) << "the guaranteed request is intact";
  EXPECT_EQ(h.Finish(2), (Names{"3:admitted", "6:admitted"}));
  EXPECT_EQ(h.c.stats().borrowed, 310);
  EXPECT_EQ(h.Finish(5), Names{});
  EXPECT_EQ(h.Tenant("f").memory_admitted, 10);
}

// ---- immediate rejections and bad submissions ----

TEST(Admission, ImmediateRejectionReasons) {
  Harness h;
  h.now = 1000;
  h.Add(Spec("q", QosClass::kBurstable, 0, 0, /*max_running=*/1, /*queue_capacity=*/2));
  h.Add(B("b", 100, 200));
  EXPECT_EQ(h.Submit(1, "q", 0), Names{"1:admitted"});  // active: not in the queue
  EXPECT_EQ(h.Submit(2, "q", 0), Names{});
  EXPECT_EQ(h.Submit(3, "q", 0), Names{});
  EXPECT_EQ(h.Submit(4, "q", 0), Names{"4:rejected"});
  EXPECT_EQ(h.Reason(4), "tenant 'q': queue full (2 pending tasks)");

  EXPECT_EQ(h.Submit(5, "b", 201), Names{"5:rejected"});
  EXPECT_NE(h.Reason(5).find("memory estimate 201 bytes can never fit tenant 'b'"),
            std::string::npos)
      << h.Reason(5);
  EXPECT_EQ(h.Submit(6, "b", 10, 0, /*deadline=*/1000), Names{"6:rejected"});
  EXPECT_EQ(h.Reason(6), "deadline already passed at submission");
  EXPECT_EQ(h.Submit(7, "b", 10, 0, /*deadline=*/999), Names{"7:rejected"});
  EXPECT_EQ(h.Submit(8, "b", 10, 0, 0, {99}), Names{"8:rejected"});
  EXPECT_EQ(h.Reason(8), "unknown dependency 99");
  EXPECT_EQ(h.Submit(9, "b", 10, 0, 0, {1, 9}), Names{"9:rejected"});
  EXPECT_EQ(h.Reason(9), "unknown dependency 9") << "a task cannot wait for itself";
  EXPECT_EQ(h.Submit(10, "b", 10, 0, /*deadline=*/1001), Names{"10:admitted"});

  AdmissionStats st = h.c.stats();
  EXPECT_EQ(st.rejected, 6);
  EXPECT_EQ(st.pending, 2);
  EXPECT_EQ(st.active, 2);
  EXPECT_EQ(h.Tenant("q").rejected, 1);
  EXPECT_EQ(h.Tenant("b").rejected, 5);
  EXPECT_EQ(h.Tenant("b").memory_admitted, 10) << "rejected tasks reserve nothing";
  // Once the queue drains below its capacity, the tenant accepts tasks again.
  EXPECT_EQ(h.Finish(1), Names{"2:admitted"});
  EXPECT_EQ(h.Submit(11, "q", 0), Names{});
  EXPECT_EQ(h.Tenant("q").pending, 2);
}

TEST(Admission, BadSubmissionsAreErrorsAndChangeNothing) {
  AdmissionController a(kCap);
  ASSERT_OK(a.AddTenant(B("b", 100)));
  a.set_recording(true);
  ExpectValueError(a.Submit(TaskSpec{1, "nope", 10}, 0).status(),
                   "submit: tenant 'nope' does not exist");
  ExpectValueError(a.Submit(TaskSpec{1, "b", -1}, 0).status(),
                   "submit: negative memory estimate -1");
  ASSERT_OK(a.Submit(TaskSpec{1, "b", 10}, 0));
  ExpectValueError(a.Submit(TaskSpec{1, "b", 10}, 0).status(),
                   "submit: task id 1 is already in use");
  ASSERT_OK(a.Finish(1, S::kCompleted, 0));
  ExpectValueError(a.Submit(TaskSpec{1, "b", 10}, 0).status(), "task id 1 is already in use");
  // A rejected id is in use too.
  ASSERT_OK(a.Submit(TaskSpec{2, "b", 5000}, 0));
  ExpectValueError(a.Submit(TaskSpec{2, "b", 10}, 0).status(), "task id 2 is already in use");

  ExpectValueError(a.Finish(1, S::kCompleted, 0).status(), "finish: task 1 is not admitted");
  ExpectValueError(a.Finish(77, S::kFailed, 0).status(), "finish: task 77 is not admitted");
  ExpectValueError(a.Cancel(77, 0).status(), "cancel: task 77 is not pending");
  ASSERT_OK(a.Submit(TaskSpec{3, "b", 10}, 0));
  ASSERT_TRUE(a.IsActive(3));
  ExpectValueError(a.Cancel(3, 0).status(), "cancel: task 3 is not pending");
  for (S bad : {S::kPending, S::kAdmitted, S::kRunning, S::kRejected}) {
    ExpectValueError(a.Finish(3, bad, 0).status(),
                     absl::StrCat("finish: task 3 cannot end as ", TaskStateName(bad)));
  }
  EXPECT_TRUE(a.IsActive(3));
  AdmissionStats st = a.stats();
  EXPECT_EQ(st.admitted, 2);
  EXPECT_EQ(st.completed, 1);
  EXPECT_EQ(st.rejected, 1);
  EXPECT_EQ(st.active, 1);
  // Only the successful calls were recorded: submit 1, finish 1, submit 2, submit 3.
  ASSERT_EQ(a.recorded().size(), 4u);
  EXPECT_EQ(a.recorded()[0].kind, AdmissionEvent::Kind::kSubmit);
  EXPECT_EQ(a.recorded()[1].kind, AdmissionEvent::Kind::kFinish);
  EXPECT_EQ(a.recorded()[3].task.id, 3u);
}

// ---- order ----

TEST(Admission, OrderWithinATenantIsPriorityThenDeadlineThenSubmission) {
  Harness h;
  h.now = 10;
  h.Add(B("a", 0, 0, /*max_running=*/1));
  EXPECT_EQ(h.Submit(1, "a", 0), Names{"1:admitted"});
  // (id, priority, deadline)
  const std::tuple<uint64_t, int, int64_t> tasks[] = {
      {2, 0, 0}, {3, 5, 0}, {4, 5, 1000}, {5, 5, 500}, {6, 0, 100}, {7, -1, 0}, {8, 5, 500},
  };
  for (auto [id, prio, deadline] : tasks) EXPECT_EQ(h.Submit(id, "a", 0, prio, deadline), Names{});
  EXPECT_EQ(h.c.NextDeadline(), 100);
  std::vector<uint64_t> order;
  uint64_t running = 1;
  for (int i = 0; i < 7; ++i) {
    Names d = h.Finish(running);
    ASSERT_EQ(d.size(), 1u) << i;
    running = std::stoull(d[0].substr(0, d[0].find(':')));
    order.push_back(running);
  }
  EXPECT_EQ(order, (std::vector<uint64_t>{5, 8, 4, 3, 6, 2, 7}));
  EXPECT_EQ(h.c.NextDeadline(), 0);
}

TEST(Admission, OrderAcrossTenantsIsClassFirst) {
  // Everything waits for task 1, so one pass admits all of it and shows the order.
  Harness h;
  h.now = 100;
  h.Add(G("g", 300));
  h.Add(G("g2", 100));
  h.Add(B("b", 100));
  h.Add(BE("e"));
  EXPECT_EQ(h.Submit(1, "b", 0), Names{"1:admitted"});
  // (id, tenant, priority, deadline)
  const std::tuple<uint64_t, const char*, int, int64_t> tasks[] = {
      {10, "e", 9, 0},   {11, "b", 0, 0}, {12, "g", 0, 500}, {13, "g2", 1, 0},  {14, "b", 5, 0},
      {15, "e", 9, 400}, {16, "g", 0, 0}, {17, "b", 5, 900}, {18, "g", 0, 500},
  };
  for (auto [id, tenant, prio, deadline] : tasks) {
    EXPECT_EQ(h.Submit(id, tenant, 10, prio, deadline, {1}), Names{}) << id;
  }
  EXPECT_EQ(h.Finish(1),
            (Names{"13:admitted", "12:admitted", "18:admitted", "16:admitted", "17:admitted",
                   "14:admitted", "11:admitted", "15:admitted", "10:admitted"}));
}

TEST(Admission, ClassBeatsPriorityAndSubmissionForSharedCapacity) {
  Harness h;
  h.Add(B("hog", 0));
  h.Add(B("b", 0));
  h.Add(BE("e"));
  EXPECT_EQ(h.Submit(1, "hog", 1000), Names{"1:admitted"});
  EXPECT_EQ(h.Submit(2, "e", 600, /*priority=*/100), Names{});
  EXPECT_EQ(h.Submit(3, "b", 600, /*priority=*/-100), Names{});
  EXPECT_EQ(h.Finish(1), Names{"3:admitted"}) << "burstable first; 400 bytes left for e";
  EXPECT_EQ(h.Finish(3), Names{"2:admitted"});
}

// ---- head of line, max_running ----

TEST(Admission, HeadOfLineBlocksTheSameTenantOnly) {
  Harness h;
  h.Add(B("a", 0));
  h.Add(B("b", 0));
  EXPECT_EQ(h.Submit(1, "a", 800), Names{"1:admitted"});
  EXPECT_EQ(h.Submit(2, "a", 300), Names{}) << "does not fit";
  EXPECT_EQ(h.Submit(3, "a", 100), Names{}) << "would fit, but 2 is ahead of it";
  EXPECT_EQ(h.Submit(4, "b", 100), Names{"4:admitted"}) << "another tenant is not blocked";
  EXPECT_EQ(h.Submit(5, "a", 50, /*priority=*/1), Names{"5:admitted"})
      << "ahead of the blocked task in order, so not behind it";
  EXPECT_EQ(h.Tenant("a").pending, 2);
  EXPECT_EQ(h.c.stats().borrowed, 950);
  EXPECT_EQ(h.Finish(4), Names{}) << "2 still does not fit (850 + 300), and blocks 3";
  EXPECT_EQ(h.Finish(1), (Names{"2:admitted", "3:admitted"}));
  EXPECT_EQ(h.Tenant("a").memory_admitted, 450);
}

TEST(Admission, CancellingTheHeadOfLineUnblocksItsTenant) {
  Harness h;
  h.Add(B("a", 0));
  EXPECT_EQ(h.Submit(1, "a", 800), Names{"1:admitted"});
  EXPECT_EQ(h.Submit(2, "a", 300), Names{});
  EXPECT_EQ(h.Submit(3, "a", 100), Names{});
  EXPECT_EQ(h.Cancel(2), (Names{"2:cancelled", "3:admitted"}));
  EXPECT_EQ(h.Reason(2), "cancelled while pending");
  EXPECT_EQ(h.Tenant("a").cancelled, 1);
}

TEST(Admission, MaxRunningBoundsAdmittedAndRunningTasks) {
  Harness h;
  h.Add(B("a", 0, 0, /*max_running=*/2));
  h.Add(B("b", 0));
  EXPECT_EQ(h.Submit(1, "a", 1), Names{"1:admitted"});
  EXPECT_EQ(h.Submit(2, "a", 1), Names{"2:admitted"});
  EXPECT_EQ(h.Submit(3, "a", 1), Names{});
  EXPECT_EQ(h.Submit(4, "a", 1), Names{});
  EXPECT_EQ(h.Submit(5, "b", 1), Names{"5:admitted"});
  EXPECT_EQ(h.Tenant("a").active, 2);
  EXPECT_EQ(h.Tenant("a").pending, 2);
  EXPECT_EQ(h.Finish(2, S::kFailed), Names{"3:admitted"});
  EXPECT_EQ(h.Finish(1, S::kCancelled), Names{"4:admitted"});
  EXPECT_EQ(h.Tenant("a").active, 2);
  EXPECT_EQ(h.Tenant("a").pending, 0);
}

// ---- dependencies ----

TEST(Admission, DependentsWaitForCompletionAndBlockNobody) {
  Harness h;
  h.Add(B("x", 0));
  h.Add(B("a", 0));
  EXPECT_EQ(h.Submit(1, "x", 0), Names{"1:admitted"});
  EXPECT_EQ(h.Submit(2, "a", 10, /*priority=*/5, 0, {1}), Names{});
  EXPECT_EQ(h.Submit(3, "a", 10), Names{"3:admitted"}) << "a waiting dependent blocks nobody";
  EXPECT_EQ(h.Submit(4, "a", 10, 0, 0, {1, 3}), Names{});
  EXPECT_EQ(h.Finish(3), Names{}) << "4 still waits for 1";
  EXPECT_EQ(h.Finish(1), (Names{"2:admitted", "4:admitted"}));
  // A dependency that already completed is satisfied at once.
  EXPECT_EQ(h.Submit(5, "a", 10, 0, 0, {1, 3}), Names{"5:admitted"});
}

TEST(Admission, FailedCancelledOrRejectedDependenciesCancelDependentsTransitively) {
  for (S end : {S::kFailed, S::kCancelled}) {
    SCOPED_TRACE(TaskStateName(end));
    Harness h;
    h.Add(B("a", 0));
    h.Add(B("b", 0));
    EXPECT_EQ(h.Submit(1, "a", 0), Names{"1:admitted"});
    EXPECT_EQ(h.Submit(2, "b", 0, 0, 0, {1}), Names{});
    EXPECT_EQ(h.Submit(3, "a", 0, 0, 0, {2}), Names{});
    EXPECT_EQ(h.Submit(4, "b", 0, 0, 0, {3, 1}), Names{});
    EXPECT_EQ(h.Submit(5, "b", 0), Names{"5:admitted"});
    EXPECT_EQ(h.Submit(6, "a", 0, 0, 0, {5}), Names{});
    // The order of a cascade is not specified; its members and reasons are.
    Names cascade = h.Finish(1, end);
    std::sort(cascade.begin(), cascade.end());
    EXPECT_EQ(cascade, (Names{"2:cancelled", "3:cancelled", "4:cancelled"}));
    const std::string direct = absl::StrCat("dependency 1 ", TaskStateName(end));
    EXPECT_EQ(h.Reason(2), direct);
    EXPECT_EQ(h.Reason(3), "dependency 2 cancelled");
    EXPECT_TRUE(h.Reason(4) == direct || h.Reason(4) == "dependency 3 cancelled") << h.Reason(4);
    EXPECT_TRUE(h.c.IsPending(6)) << "unrelated dependents keep waiting";
    EXPECT_EQ(h.Finish(5), Names{"6:admitted"});
    // A new task naming a finished-unsuccessfully dependency is cancelled at submission.
    EXPECT_EQ(h.Submit(7, "a", 0, 0, 0, {3}), Names{"7:cancelled"});
    EXPECT_EQ(h.Reason(7), "dependency 3 cancelled");
    AdmissionStats st = h.c.stats();
    EXPECT_EQ(st.cancelled, end == S::kCancelled ? 5 : 4);
    EXPECT_EQ(st.failed, end == S::kFailed ? 1 : 0);
  }
}

TEST(Admission, RepeatedDependenciesAndLongChains) {
  Harness h;
  h.Add(Spec("a", QosClass::kBurstable, 0, 0, 0, /*queue_capacity=*/1 << 20));
  EXPECT_EQ(h.Submit(1, "a", 0), Names{"1:admitted"});
  EXPECT_EQ(h.Submit(2, "a", 0, 0, 0, {1, 1, 1}), Names{});
  EXPECT_EQ(h.Finish(1), Names{"2:admitted"}) << "admitted once";
  // A chain of 20000 tasks, each waiting for the previous one; the root fails.
  constexpr uint64_t kChain = 20000;
  EXPECT_EQ(h.Submit(100, "a", 0), Names{"100:admitted"});
  for (uint64_t id = 101; id <= 100 + kChain; ++id) {
    ASSERT_EQ(h.Submit(id, "a", 0, 0, 0, {id - 1}), Names{}) << id;
  }
  EXPECT_EQ(h.c.stats().pending, static_cast<int>(kChain));
  Names cascade = h.Finish(100, S::kFailed);
  EXPECT_EQ(cascade.size(), kChain);
  EXPECT_EQ(h.Reason(101), "dependency 100 failed");
  EXPECT_EQ(h.Reason(100 + kChain), absl::StrCat("dependency ", 99 + kChain, " cancelled"));
  AdmissionStats st = h.c.stats();
  EXPECT_EQ(st.pending, 0);
  EXPECT_EQ(st.cancelled, static_cast<int64_t>(kChain));
}

TEST(Admission, RejectedOrCancelledPendingDependencies) {
  Harness h;
  h.now = 50;
  h.Add(B("a", 0, 100, /*max_running=*/1));
  EXPECT_EQ(h.Submit(1, "a", 200), Names{"1:rejected"});
  EXPECT_EQ(h.Submit(2, "a", 0, 0, 0, {1}), Names{"2:cancelled"});
  EXPECT_EQ(h.Reason(2), "dependency 1 rejected");
  EXPECT_EQ(h.Submit(3, "a", 0), Names{"3:admitted"});
  EXPECT_EQ(h.Submit(4, "a", 0), Names{});
  EXPECT_EQ(h.Submit(5, "a", 0, 0, 0, {4}), Names{});
  EXPECT_EQ(h.Submit(6, "a", 0, 0, /*deadline=*/60), Names{});
  EXPECT_EQ(h.Submit(7, "a", 0, 0, 0, {6}), Names{});
  EXPECT_EQ(h.Cancel(4), (Names{"4:cancelled", "5:cancelled"}));
  EXPECT_EQ(h.Reason(5), "dependency 4 cancelled");
  EXPECT_EQ(h.Tick(60), (Names{"6:rejected", "7:cancelled"}));
  EXPECT_EQ(h.Reason(6), "deadline passed while pending");
  EXPECT_EQ(h.Reason(7), "dependency 6 rejected");
  EXPECT_EQ(h.c.stats().pending, 0);
}

TEST(Admission, OldFinishedTasksAreForgottenPastTheBound) {
  AdmissionController a(kCap);
  ASSERT_OK(a.AddTenant(B("b", 0)));
  constexpr uint64_t kBound = 1 << 16;
  for (uint64_t id = 1; id <= kBound + 1; ++id) {
    ASSERT_OK(a.Submit(TaskSpec{id, "b", 0}, 0));
    ASSERT_OK(a.Finish(id, S::kCompleted, 0));
  }
  // Task 1 is forgotten: depending on it is an unknown dependency, and its id is free again.
  TaskSpec dep{kBound + 2, "b", 0};
  dep.depends_on = {1};
  ASSERT_OK_AND_ASSIGN(auto d, a.Submit(dep, 0));
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].state, S::kRejected);
  EXPECT_EQ(d[0].reason, "unknown dependency 1");
  dep = TaskSpec{kBound + 3, "b", 0};
  dep.depends_on = {kBound};  // recent: still remembered
  ASSERT_OK_AND_ASSIGN(d, a.Submit(dep, 0));
  EXPECT_EQ(Strs(d), Names{absl::StrCat(kBound + 3, ":admitted")});
  ASSERT_OK(a.Submit(TaskSpec{1, "b", 0}, 0));
  EXPECT_EQ(a.stats().completed, static_cast<int64_t>(kBound + 1));
}

// ---- deadlines ----

TEST(Admission, DeadlinesExpireOnTick) {
  Harness h;
  h.Add(B("a", 0, 0, /*max_running=*/1));
  h.c.set_recording(true);
  EXPECT_EQ(h.Submit(1, "a", 0, 0, /*deadline=*/300), Names{"1:admitted"});
  EXPECT_EQ(h.c.NextDeadline(), 0) << "admitted tasks have no deadline left";
  EXPECT_EQ(h.Submit(2, "a", 0, 0, 200), Names{});
  EXPECT_EQ(h.Submit(3, "a", 0, 0, 100), Names{});
  EXPECT_EQ(h.Submit(4, "a", 0), Names{});
  EXPECT_EQ(h.c.NextDeadline(), 100);
  const size_t recorded = h.c.recorded().size();
  EXPECT_EQ(h.Tick(99), Names{});
  EXPECT_EQ(h.c.recorded().size(), recorded) << "a tick that changes nothing is not recorded";
  EXPECT_EQ(h.Tick(100), Names{"3:rejected"}) << "at the deadline counts as passed";
  EXPECT_EQ(h.Reason(3), "deadline passed while pending");
  EXPECT_EQ(h.c.recorded().size(), recorded + 1);
  EXPECT_EQ(h.c.NextDeadline(), 200);
  EXPECT_EQ(h.Tick(1000), Names{"2:rejected"});
  EXPECT_EQ(h.c.NextDeadline(), 0);
  EXPECT_EQ(h.Finish(1), Names{"4:admitted"}) << "the admitted task 1 never expires";
  EXPECT_EQ(h.Tenant("a").rejected, 2);
}

TEST(Admission, ExpiryUnblocksTheTenantAndHappensOnEveryEvent) {
  Harness h;
  h.Add(B("a", 0));
  h.Add(B("b", 0));
  EXPECT_EQ(h.Submit(1, "a", 800), Names{"1:admitted"});
  EXPECT_EQ(h.Submit(2, "a", 300, 0, /*deadline=*/100), Names{});
  EXPECT_EQ(h.Submit(3, "a", 100), Names{});
  EXPECT_EQ(h.Tick(100), (Names{"2:rejected", "3:admitted"}));
  // Submit, Finish and Cancel expire what is due at their time, before admitting.
  EXPECT_EQ(h.Submit(4, "b", 200, 0, /*deadline=*/150), Names{});
  EXPECT_EQ(h.Submit(5, "b", 0, /*priority=*/1), Names{"5:admitted"}) << "ahead of 4";
  h.now = 150;
  EXPECT_EQ(h.Submit(6, "b", 0), (Names{"4:rejected", "6:admitted"}));
  EXPECT_EQ(h.Submit(7, "a", 200, 0, /*deadline=*/170), Names{});
  EXPECT_EQ(h.Submit(8, "a", 200), Names{});
  h.now = 170;
  EXPECT_EQ(h.Finish(5), (Names{"7:rejected"}));
  EXPECT_EQ(h.Submit(9, "a", 0, /*priority=*/-1, /*deadline=*/180), Names{}) << "behind 8";
  h.now = 180;
  EXPECT_EQ(h.Cancel(8), (Names{"8:cancelled", "9:rejected"}));
}

// ---- release ----

TEST(Admission, FinishReturnsEveryReservation) {
  for (S end : {S::kCompleted, S::kFailed, S::kCancelled}) {
    SCOPED_TRACE(TaskStateName(end));
    Harness h;
    h.Add(G("g", 300));
    h.Add(B("b", 200, 600));
    h.Add(BE("e"));
    uint64_t id = 0;
    std::vector<uint64_t> admitted;
    for (auto [tenant, bytes] : std::vector<std::pair<const char*, int64_t>>{
             {"g", 150}, {"g", 150}, {"b", 150}, {"b", 250}, {"e", 100}, {"e", 50}}) {
      ++id;
      EXPECT_EQ(h.Submit(id, tenant, bytes), Names{absl::StrCat(id, ":admitted")});
      admitted.push_back(id);
    }
    ++id;
    EXPECT_EQ(h.Submit(id, "e", 400), Names{}) << "pending: 150 bytes left to borrow";
    AdmissionStats st = h.c.stats();
    EXPECT_EQ(st.borrowed, 200 + 150);
    EXPECT_EQ(st.active, 6);
    EXPECT_EQ(st.pending, 1);
    EXPECT_EQ(h.Tenant("b").memory_admitted, 400);
    EXPECT_EQ(h.Tenant("e").memory_admitted, 150);
    Names later;
    for (uint64_t t : admitted) {
      Names d = h.Finish(t, end);
      later.insert(later.end(), d.begin(), d.end());
      if (t == 4) EXPECT_TRUE(h.c.IsPending(7)) << "350 bytes free: not yet";
    }
    EXPECT_EQ(later, Names{"7:admitted"});
    EXPECT_EQ(h.Finish(7, end), Names{});
    st = h.c.stats();
    EXPECT_EQ(st.borrowed, 0);
    EXPECT_EQ(st.active, 0);
    EXPECT_EQ(st.pending, 0);
    EXPECT_EQ(st.reserved, 500) << "tenant reservations stay";
    EXPECT_EQ(st.admitted, 7);
    EXPECT_EQ(st.completed, end == S::kCompleted ? 7 : 0);
    EXPECT_EQ(st.failed, end == S::kFailed ? 7 : 0);
    EXPECT_EQ(st.cancelled, end == S::kCancelled ? 7 : 0);
    for (const TenantAdmissionStats& t : st.tenants) {
      EXPECT_EQ(t.memory_admitted, 0) << t.name;
      EXPECT_EQ(t.active, 0) << t.name;
      EXPECT_EQ(t.pending, 0) << t.name;
    }
    EXPECT_FALSE(h.c.IsActive(1));
    EXPECT_FALSE(h.c.IsPending(1));
  }
}

TEST(Admission, CancelOfPendingTasks) {
  Harness h;
  h.Add(B("a", 0, 0, 1));
  EXPECT_EQ(h.Submit(1, "a", 0), Names{"1:admitted"});
  EXPECT_EQ(h.Submit(2, "a", 0), Names{});
  EXPECT_EQ(h.Submit(3, "a", 0, 0, /*deadline=*/500), Names{});
  EXPECT_TRUE(h.c.IsPending(3));
  EXPECT_EQ(h.Cancel(3), Names{"3:cancelled"});
  EXPECT_FALSE(h.c.IsPending(3));
  EXPECT_EQ(h.c.NextDeadline(), 0) << "the cancelled task's deadline is gone";
  EXPECT_EQ(h.Tenant("a").pending, 1);
  EXPECT_EQ(h.Tenant("a").cancelled, 1);
  ExpectValueError(h.c.Cancel(3, 0).status(), "cancel: task 3 is not pending");
  EXPECT_EQ(h.Finish(1), Names{"2:admitted"});
}

// ---- deterministic replay ----

struct RandomRun {
  std::vector<Decision> decisions;
  std::vector<AdmissionEvent> recorded;
  AdmissionStats end;
  int64_t submitted = 0, removals = 0;
};

// `steps` random events on a controller of six tenants, checking invariants after each; then
// everything is finished so the controller ends empty.
RandomRun RunRandom(uint32_t seed, int steps) {
  constexpr int64_t kRandCap = 1 << 20;
  const std::vector<TenantSpec> specs = {
      G("g1", 200 << 10, /*max_running=*/4),
      G("g2", 100 << 10),
      B("b1", 100 << 10, 400 << 10, /*max_running=*/3),
      Spec("b2", QosClass::kBurstable, 50 << 10, 0, 0, /*queue_capacity=*/16),
      BE("e1"),
      BE("e2", 300 << 10, /*max_running=*/2),
  };
  RandomRun run;
  AdmissionController c(kRandCap);
  c.set_recording(true);
  for (const TenantSpec& s : specs) EXPECT_OK(c.AddTenant(s));
  std::mt19937 rng(seed);
  auto uniform = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  std::set<uint64_t> pending, active;
  std::map<uint64_t, int64_t> memory;
  std::map<uint64_t, std::string> owner;
  uint64_t next_id = 1;
  int64_t now = 1000;
  auto apply = [&](const std::vector<Decision>& ds) {
    for (const Decision& d : ds) {
      run.decisions.push_back(d);
      EXPECT_EQ(pending.count(d.task), 1u) << Str(d);
      pending.erase(d.task);
      if (d.state == S::kAdmitted) active.insert(d.task);
    }
  };
  auto pick = [&](const std::set<uint64_t>& s) {
    auto it = s.begin();
    std::advance(it, uniform(0, static_cast<int64_t>(s.size()) - 1));
    return *it;
  };
  auto check = [&](int step) {
    AdmissionStats st = c.stats();
    EXPECT_EQ(st.pending, static_cast<int>(pending.size())) << step;
    EXPECT_EQ(st.active, static_cast<int>(active.size())) << step;
    EXPECT_EQ(run.submitted,
              st.pending + st.active + st.completed + st.failed + st.cancelled + st.rejected)
        << step;
    int64_t borrowed = 0;
    std::map<std::string, int64_t> used;
    for (uint64_t id : active) used[owner[id]] += memory[id];
    for (const TenantAdmissionStats& t : st.tenants) {
      EXPECT_EQ(t.memory_admitted, used[t.name]) << step << " " << t.name;
      if (t.memory_limit > 0) EXPECT_LE(t.memory_admitted, t.memory_limit) << step;
      borrowed += std::max<int64_t>(0, t.memory_admitted - t.memory_request);
      for (const TenantSpec& s : specs) {
        if (s.name != t.name) continue;
        if (s.max_running > 0) EXPECT_LE(t.active, s.max_running) << step;
        EXPECT_LE(t.pending, s.queue_capacity) << step;
      }
    }
    EXPECT_EQ(st.borrowed, borrowed) << step;
    EXPECT_LE(st.borrowed, st.capacity - st.reserved) << step;
    for (uint64_t id : pending) EXPECT_TRUE(c.IsPending(id)) << step << " " << id;
    for (uint64_t id : active) EXPECT_TRUE(c.IsActive(id)) << step << " " << id;
  };
  const S ends[] = {S::kCompleted, S::kCompleted, S::kFailed, S::kCancelled};
  for (int step = 0; step < steps; ++step) {
    now += uniform(0, 2000);
    const int64_t r = uniform(0, 99);
    if (r < 45) {
      TaskSpec t;
      t.id = next_id++;
      t.tenant = specs[uniform(0, specs.size() - 1)].name;
      t.memory = uniform(0, 9) == 0 ? uniform(0, 2 * kRandCap) : uniform(0, 300 << 10);
      t.priority = static_cast<int>(uniform(-2, 2));
      const int64_t dr = uniform(0, 99);
      if (dr < 30) t.deadline_ns = now + uniform(1, 60000);
      if (dr == 30) t.deadline_ns = now - uniform(0, 10);
      if (uniform(0, 4) == 0 && t.id > 1) {
        for (int64_t k = uniform(1, 2); k > 0; --k) {
          t.depends_on.push_back(uniform(std::max<int64_t>(1, t.id - 40), t.id - 1));
        }
      }
      if (uniform(0, 49) == 0) t.depends_on.push_back(t.id + 1000);
      ++run.submitted;
      pending.insert(t.id);
      memory[t.id] = t.memory;
      owner[t.id] = t.tenant;
      auto d = c.Submit(t, now);
      EXPECT_TRUE(d.ok()) << d.status();
      if (d.ok()) apply(*d);
    } else if (r < 80) {
      if (active.empty()) continue;
      const uint64_t id = pick(active);
      active.erase(id);
      auto d = c.Finish(id, ends[uniform(0, 3)], now);
      EXPECT_TRUE(d.ok()) << d.status();
      if (d.ok()) apply(*d);
    } else if (r < 90) {
      if (pending.empty()) continue;
      auto d = c.Cancel(pick(pending), now);
      EXPECT_TRUE(d.ok()) << d.status();
      if (d.ok()) apply(*d);
    } else if (r < 98) {
      apply(c.Tick(now));
    } else {
      // An idle tenant is removed and added again.
      const TenantSpec& s = specs[uniform(0, specs.size() - 1)];
      bool idle = true;
      for (uint64_t id : pending) idle &= owner[id] != s.name;
      for (uint64_t id : active) idle &= owner[id] != s.name;
      if (!idle) {
        EXPECT_FALSE(c.RemoveTenant(s.name).ok());
        continue;
      }
      EXPECT_OK(c.RemoveTenant(s.name));
      EXPECT_OK(c.AddTenant(s));
      ++run.removals;
    }
    check(step);
  }
  // Wind down: finish what runs (admitting more) and cancel what waits.
  while (!active.empty() || !pending.empty()) {
    if (!active.empty()) {
      const uint64_t id = *active.begin();
      active.erase(id);
      auto d = c.Finish(id, S::kCompleted, now);
      EXPECT_TRUE(d.ok()) << d.status();
      if (d.ok()) apply(*d);
    } else {
      auto d = c.Cancel(*pending.begin(), now);
      EXPECT_TRUE(d.ok()) << d.status();
      if (d.ok()) apply(*d);
    }
  }
  check(steps);
  run.recorded = c.recorded();
  run.end = c.stats();
  return run;
}

TEST(Admission, RandomSequenceReplaysToTheSameDecisions) {
  RandomRun run = RunRandom(/*seed=*/20240605, /*steps=*/6000);
  // The run exercised every kind of decision.
  std::map<S, int> kinds;
  for (const Decision& d : run.decisions) ++kinds[d.state];
  EXPECT_GT(kinds[S::kAdmitted], 500);
  EXPECT_GT(kinds[S::kRejected], 50);
  EXPECT_GT(kinds[S::kCancelled], 50);
  EXPECT_GT(run.removals, 0);
  std::set<AdmissionEvent::Kind> events;
  for (const AdmissionEvent& e : run.recorded) events.insert(e.kind);
  EXPECT_EQ(events.size(), 6u) << "every event kind was recorded";

  ASSERT_OK_AND_ASSIGN(std::vector<Decision> replayed,
                       AdmissionController::Replay(1 << 20, run.recorded));
  ASSERT_EQ(replayed.size(), run.decisions.size());
  for (size_t i = 0; i < replayed.size(); ++i) {
    ASSERT_EQ(replayed[i], run.decisions[i])
        << i << ": " << Str(replayed[i]) << " (" << replayed[i].reason << ") vs "
        << Str(run.decisions[i]) << " (" << run.decisions[i].reason << ")";
  }
  // Replaying event by event through Apply gives the same decisions too.
  AdmissionController c(1 << 20);
  std::vector<Decision> applied;
  for (const AdmissionEvent& e : run.recorded) ASSERT_OK(c.Apply(e, &applied));
  EXPECT_TRUE(applied == run.decisions);
  AdmissionStats st = c.stats();
  EXPECT_EQ(st.admitted, run.end.admitted);
  EXPECT_EQ(st.completed, run.end.completed);
  EXPECT_EQ(st.failed, run.end.failed);
  EXPECT_EQ(st.cancelled, run.end.cancelled);
  EXPECT_EQ(st.rejected, run.end.rejected);
  EXPECT_EQ(st.pending, 0);
  EXPECT_EQ(st.active, 0);
  EXPECT_EQ(st.borrowed, 0);
}

TEST(Admission, TheSameRandomSequenceGivesTheSameDecisions) {
  RandomRun a = RunRandom(7, 3000);
  RandomRun b = RunRandom(7, 3000);
  EXPECT_EQ(a.submitted, b.submitted);
  EXPECT_EQ(a.recorded.size(), b.recorded.size());
  ASSERT_EQ(a.decisions.size(), b.decisions.size());
  EXPECT_TRUE(a.decisions == b.decisions);
  RandomRun c = RunRandom(8, 3000);
  EXPECT_FALSE(a.decisions == c.decisions) << "a different seed is a different run";
}

TEST(Admission, ReplayReportsABadTrace) {
  AdmissionEvent add;
  add.kind = AdmissionEvent::Kind::kAddTenant;
  add.tenant = B("b", 10);
  AdmissionEvent finish;
  finish.kind = AdmissionEvent::Kind::kFinish;
  finish.id = 5;
  auto r = AdmissionController::Replay(kCap, {add, finish});
  ExpectValueError(r.status(), "finish: task 5 is not admitted");
  r = AdmissionController::Replay(kCap, {add, add});
  ExpectValueError(r.status(), "tenant 'b' already exists");
  ASSERT_OK_AND_ASSIGN(auto empty, AdmissionController::Replay(kCap, {}));
  EXPECT_TRUE(empty.empty());
}

TEST(Admission, RecordingIsOffByDefaultAndCanStop) {
  AdmissionController a(kCap);
  ASSERT_OK(a.AddTenant(B("b", 0)));
  ASSERT_OK(a.Submit(TaskSpec{1, "b", 0}, 0));
  EXPECT_TRUE(a.recorded().empty());
  a.set_recording(true);
  ASSERT_OK(a.Finish(1, S::kCompleted, 5));
  a.set_recording(false);
  ASSERT_OK(a.Submit(TaskSpec{2, "b", 0}, 0));
  ASSERT_EQ(a.recorded().size(), 1u);
  EXPECT_EQ(a.recorded()[0].kind, AdmissionEvent::Kind::kFinish);
  EXPECT_EQ(a.recorded()[0].id, 1u);
  EXPECT_EQ(a.recorded()[0].now_ns, 5);
  EXPECT_EQ(a.recorded()[0].final_state, S::kCompleted);
}

// Regression: a pending task whose dependency completed long ago (and was forgotten since:
// finished tasks are remembered up to a bound) is still admitted once it fits.
TEST(Admission, PendingDependentOfAForgottenCompletedTaskIsStillAdmitted) {
  Harness h;
  h.Add(B("a", 0, 0, /*max_running=*/1));
  h.Add(B("x", 0));
  EXPECT_EQ(h.Submit(1, "a", 0), Names{"1:admitted"});
  EXPECT_EQ(h.Submit(2, "x", 0), Names{"2:admitted"});
  EXPECT_EQ(h.Finish(2), Names{});
  EXPECT_EQ(h.Submit(3, "a", 0, 0, 0, {2}), Names{}) << "dependency done; waits for max_running";
  for (uint64_t id = 10; id < 10 + (1 << 16); ++id) {
    ASSERT_OK(h.c.Submit(TaskSpec{id, "x", 0}, 0));
    ASSERT_OK(h.c.Finish(id, S::kCompleted, 0));
  }
  EXPECT_EQ(h.Finish(1), Names{"3:admitted"});
  EXPECT_FALSE(h.c.IsPending(3));
}

// A guaranteed tenant's reservation is its limit: with a request of 0 it could never allocate,
// so it is refused rather than silently borrowing unreserved capacity.
TEST(Admission, GuaranteedTenantNeedsARequest) {
  AdmissionController a(kCap);
  absl::Status s = a.AddTenant(G("g", 0));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(s.message()).find("memory request > 0"), std::string::npos);
  EXPECT_FALSE(a.HasTenant("g"));
}

}  // namespace
}  // namespace pygpukit

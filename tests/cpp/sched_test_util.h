// Helpers of the scheduler tests: one-shot flags, a blocking task body, a transition recorder,
// stream gates that hold a runtime stream busy, polling with a generous limit, and host
// references for the ops the tasks run.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/cpu/cpu_backend.h"
#include "ops/array.h"
#include "runtime/sched/scheduler.h"
#include "test_util.h"

namespace pygpukit::sched_testing {

using namespace std::chrono_literals;  // NOLINT

/// Limit of every wait in these tests: far above anything a healthy run needs.
inline constexpr auto kLongWait = 60s;
inline constexpr int64_t kLongWaitNs = 60'000'000'000;
inline constexpr int64_t kKiB = 1024, kMiB = 1 << 20;

// A result slot a task fills (read by the submitting thread after the task ends).
struct Slot {
  std::mutex mu;
  GPUArray value;
  void Set(GPUArray a) {
    std::lock_guard<std::mutex> l(mu);
    value = std::move(a);
  }
  GPUArray Get() {
    std::lock_guard<std::mutex> l(mu);
    return value;
  }
  void Clear() { Set(GPUArray()); }
};

/// A one-shot event.
class Flag {
 public:
  void Set() {
    {
      std::lock_guard<std::mutex> l(mu_);
      set_ = true;
    }
    cv_.notify_all();
  }
  bool IsSet() const {
    std::lock_guard<std::mutex> l(mu_);
    return set_;
  }
  /// True once set; false after `limit`.
  bool Wait(std::chrono::milliseconds limit = kLongWait) const {
    std::unique_lock<std::mutex> l(mu_);
    return cv_.wait_for(l, limit, [&] { return set_; });
  }

 private:
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  bool set_ = false;
};

/// Polls `pred` (1 ms apart) until it holds; false after `limit`. For figures that have no
/// notification (stats); never used to order events.
inline bool WaitUntil(const std::function<bool()>& pred,
                      std::chrono::milliseconds limit = kLongWait) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

/// A task body that signals `started` and returns once released (or when the blocker dies, so a
/// failing test cannot hang the scheduler's shutdown).
class Blocker {
 public:
  Blocker() : s_(std::make_shared<State>()) {}
  ~Blocker() { Release(); }
  Blocker(const Blocker&) = delete;
  Blocker& operator=(const Blocker&) = delete;
  TaskFn Fn() const {
    auto s = s_;
    return [s] {
      s->started.Set();
      s->release.Wait();
      return absl::OkStatus();
    };
  }
  bool WaitStarted() const { return s_->started.Wait(); }
  void Release() { s_->release.Set(); }

 private:
  struct State {
    Flag started, release;
  };
  std::shared_ptr<State> s_;
};

/// Holds a runtime stream (CPU backend) busy: work queued on it after the gate waits until
/// Open() (or destruction).
class StreamGate {
 public:
  explicit StreamGate(hal::Stream& stream) : open_(std::make_shared<Flag>()) {
    auto open = open_;
    EXPECT_OK(Runtime::Get().cpu_backend().Enqueue(stream, [open] { open->Wait(); }));
  }
  ~StreamGate() { Open(); }
  StreamGate(const StreamGate&) = delete;
  StreamGate& operator=(const StreamGate&) = delete;
  void Open() { open_->Set(); }

 private:
  std::shared_ptr<Flag> open_;
};

/// Every transition a listener saw, thread-safe. The listener shares the records, so it may
/// outlive the recorder.
class Recorder {
 public:
  std::function<void(const TransitionRecord&)> Listener() {
    auto st = s_;
    return [st](const TransitionRecord& r) {
      {
        std::lock_guard<std::mutex> l(st->mu);
        st->records.push_back(r);
      }
      st->cv.notify_all();
    };
  }
  bool WaitCount(size_t n) {
    std::unique_lock<std::mutex> l(s_->mu);
    return s_->cv.wait_for(l, kLongWait, [&] { return s_->records.size() >= n; });
  }
  std::vector<TransitionRecord> all() {
    std::lock_guard<std::mutex> l(s_->mu);
    return s_->records;
  }
  std::vector<TransitionRecord> of(uint64_t task) {
    std::lock_guard<std::mutex> l(s_->mu);
    std::vector<TransitionRecord> out;
    for (const auto& r : s_->records) {
      if (r.task == task) out.push_back(r);
    }
    return out;
  }

 private:
  struct State {
    std::mutex mu;
    std::condition_variable cv;
    std::vector<TransitionRecord> records;
  };
  std::shared_ptr<State> s_ = std::make_shared<State>();
};

/// "pending,admitted,..." of the `to` states of `records`.
inline std::string States(const std::vector<TransitionRecord>& records) {
  std::string out;
  for (const auto& r : records) {
    if (!out.empty()) out += ",";
    out += std::string(TaskStateName(r.to));
  }
  return out;
}

/// The named tenant's figures (a failure, and an empty record, when it is missing).
inline TenantStats TenantOf(const SchedulerStats& st, const std::string& name) {
  for (const TenantStats& t : st.tenants) {
    if (t.admission.name == name) return t;
  }
  ADD_FAILURE() << "no tenant " << name;
  return {};
}
inline TenantStats TenantOf(const Scheduler& s, const std::string& name) {
  return TenantOf(s.stats(), name);
}

inline TenantOptions Tenant(std::string name, QosClass qos, int64_t request = 0,
                            int64_t limit = 0) {
  TenantOptions o;
  o.name = std::move(name);
  o.qos = qos;
  o.memory_request = request;
  o.memory_limit = limit;
  return o;
}

/// Row-major m x k times k x n in double, summed in k order.
inline std::vector<double> HostMatmul(const std::vector<double>& a, const std::vector<double>& b,
                                      int64_t m, int64_t k, int64_t n) {
  std::vector<double> c(static_cast<size_t>(m * n), 0.0);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (int64_t p = 0; p < k; ++p) acc += a[i * k + p] * b[p * n + j];
      c[i * n + j] = acc;
    }
  }
  return c;
}

/// Element-wise closeness (relative to the magnitude, absolute near zero).
inline void ExpectNear(const std::vector<double>& got, const std::vector<double>& want,
                       double tol = 1e-12, const std::string& what = "") {
  ASSERT_EQ(got.size(), want.size()) << what;
  int bad = 0;
  for (size_t i = 0; i < got.size() && bad < 5; ++i) {
    const double scale = std::max(1.0, std::abs(want[i]));
    if (!(std::abs(got[i] - want[i]) <= tol * scale)) {
      ADD_FAILURE() << what << " [" << i << "]: got " << got[i] << ", want " << want[i];
      ++bad;
    }
  }
}

/// The host values behind a CPU array (no synchronization: the caller knows the work is done).
inline std::vector<double> RawDoubles(const GPUArray& a) {
  const double* p = static_cast<const double*>(a.data());
  return std::vector<double>(p, p + a.size());
}

/// Launches one op makes on the test device (measured, so the tests do not hard-code it).
inline int64_t LaunchesOf(const std::function<void()>& op) {
  EXPECT_OK(ops::Synchronize(testing::TestDevice()));
  const int64_t before = testing::TotalLaunches();
  op();
  EXPECT_OK(ops::Synchronize(testing::TestDevice()));
  return testing::TotalLaunches() - before;
}

}  // namespace pygpukit::sched_testing

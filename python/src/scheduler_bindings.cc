// pygpukit._core._scheduler: the scheduler, its tenants and task handles (wrapped by
// pygpukit/scheduler.py, which builds futures on them). Argument conversion and error mapping
// only. Python objects that runtime threads hold (task callables, done callbacks, listeners)
// are wrapped so that they are called and released with the GIL.
#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "array_bindings.h"
#include "convert.h"
#include "gil.h"
#include "runtime/blocking.h"

namespace pygpukit::py {
namespace {

// A Python object a runtime thread may copy and drop: released with the GIL held.
using PyRef = std::shared_ptr<pyb::object>;
PyRef Hold(pyb::object o) {
  return PyRef(new pyb::object(std::move(o)), [](pyb::object* p) {
    if (!WithGilUnlessExiting([p] { delete p; })) {
      p->release();  // the interpreter is exiting: leak the reference rather than touch it
      delete p;
    }
  });
}

std::string Describe(pyb::error_already_set& e) {
  return absl::StrCat(std::string(pyb::str(e.type().attr("__name__"))), ": ",
                      std::string(pyb::str(e.value())));
}

// Runs a Python callable as a task body on a worker thread. Nothing may escape: the thread is
// the scheduler's, and describing the exception can raise again (a failing __str__, imports
// during interpreter shutdown).
TaskFn PyTaskFn(PyRef fn) {
  return [fn]() -> absl::Status {
    pyb::gil_scoped_acquire gil;
    try {
      (*fn)();
      return absl::OkStatus();
    } catch (pyb::error_already_set& e) {
      try {
        pyb::module_ futures = pyb::module_::import("concurrent.futures");
        pyb::module_ aio = pyb::module_::import("asyncio");
        if (e.matches(futures.attr("CancelledError")) || e.matches(aio.attr("CancelledError"))) {
          return absl::CancelledError(absl::StrCat("the task cancelled itself: ", Describe(e)));
        }
        return RuntimeError(absl::StrCat("the task raised ", Describe(e)));
      } catch (...) {
        PyErr_Clear();
        return RuntimeError("the task raised an exception that could not be described");
      }
    } catch (...) {
      PyErr_Clear();
      return RuntimeError("the task raised a C++ exception");
    }
  };
}

pyb::dict RecordDict(const TransitionRecord& r) {
  pyb::dict d;
  d["task"] = r.task;
  d["tenant"] = r.tenant;
  d["from"] = std::string(TaskStateName(r.from));
  d["to"] = std::string(TaskStateName(r.to));
  d["time_ns"] = r.time_ns;
  d["reason"] = r.reason;
  return d;
}

pyb::dict LatencyDict(const LatencySummary& s) {
  pyb::dict d;
  d["count"] = s.count;
  d["p50"] = s.p50;
  d["p90"] = s.p90;
  d["p99"] = s.p99;
  d["max"] = s.max;
  d["mean"] = s.mean;
  return d;
}

pyb::dict StatsDict(const SchedulerStats& s) {
  pyb::dict out;
  const AdmissionStats& a = s.admission;
  out["memory_capacity"] = a.capacity;
  out["memory_reserved"] = a.reserved;
  out["memory_borrowed"] = a.borrowed;
  out["pending"] = a.pending;
  out["active"] = a.active;
  out["running"] = s.running;
  out["ready"] = s.ready;
  out["guaranteed_running"] = s.guaranteed_running;
  out["admitted"] = a.admitted;
  out["rejected"] = a.rejected;
  out["cancelled"] = a.cancelled;
  out["completed"] = a.completed;
  out["failed"] = a.failed;
  pyb::dict tenants;
  for (const TenantStats& t : s.tenants) {
    pyb::dict d;
    const TenantAdmissionStats& ta = t.admission;
    d["qos"] = std::string(QosClassName(ta.qos));
    d["memory_request"] = ta.memory_request;
    d["memory_limit"] = ta.memory_limit;
    d["memory_admitted"] = ta.memory_admitted;
    d["memory_used"] = t.memory_used;
    d["memory_peak"] = t.memory_peak;
    d["pending"] = ta.pending;
    d["active"] = ta.active;
    d["admitted"] = ta.admitted;
    d["rejected"] = ta.rejected;
    d["cancelled"] = ta.cancelled;
    d["completed"] = ta.completed;
    d["failed"] = ta.failed;
    d["inflight"] = t.inflight;
    d["inflight_limit"] = t.inflight_limit;
    d["max_inflight_seen"] = t.max_inflight_seen;
    d["launches"] = t.launches;
    d["paced_waits"] = t.paced_waits;
    d["preemptions"] = t.preemptions;
    d["stream_priority"] = t.stream_priority;
    d["sms"] = t.sms;
    d["queue_us"] = LatencyDict(t.queue_us);
    d["run_us"] = LatencyDict(t.run_us);
    d["total_us"] = LatencyDict(t.total_us);
    tenants[pyb::str(ta.name)] = d;
  }
  out["tenants"] = tenants;
  return out;
}

QosClass ToQos(const std::string& text) {
  QosClass q;
  Check(ParseQosClass(text, &q));
  return q;
}

int64_t Nanos(const pyb::object& seconds, const char* what) {
  if (seconds.is_none()) return 0;
  double s = seconds.cast<double>();
  if (!(s >= 0)) throw pyb::value_error(absl::StrCat(what, " must be >= 0, not ", s));
  return s >= 9e9 ? int64_t{9'000'000'000'000'000'000} : static_cast<int64_t>(s * 1e9);
}

TaskOptions ToTaskOptions(const std::string& name, int64_t memory, int priority,
                          const pyb::object& deadline, const pyb::object& timeout,
                          const std::vector<uint64_t>& depends_on) {
  TaskOptions o;
  o.name = name;
  o.memory = memory;
  o.priority = priority;
  o.deadline_ns = Nanos(deadline, "deadline");  // time.monotonic() seconds: the same clock
  if (!deadline.is_none() && o.deadline_ns == 0) o.deadline_ns = 1;  // long past
  o.timeout_ns = Nanos(timeout, "timeout");
  if (!timeout.is_none() && o.timeout_ns == 0) {  // timeout=0: late already
    const int64_t now = Scheduler::Now();
    o.deadline_ns = o.deadline_ns > 0 ? std::min(o.deadline_ns, now) : now;
  }
  o.depends_on = depends_on;
  return o;
}

void InstallBlockingHooks() {
  BlockingHooks h;
  h.enter = []() -> void* { return PyGILState_Check() ? PyEval_SaveThread() : nullptr; };
  h.leave = [](void* token) {
    if (token != nullptr) PyEval_RestoreThread(static_cast<PyThreadState*>(token));
  };
  SetBlockingHooks(h);
}

}  // namespace

void BindScheduler(pyb::module_& m) {
  InstallBlockingHooks();
  pyb::module_ s = m.def_submodule("_scheduler", "GPU scheduler (see pygpukit.scheduler)");
  s.attr("TaskRejected") = TaskRejectedType();

  pyb::class_<Task, std::shared_ptr<Task>>(s, "Task")
      .def_property_readonly("id", &Task::id)
      .def_property_readonly("tenant", &Task::tenant)
      .def_property_readonly("name", &Task::name)
      .def_property_readonly("state",
                             [](const Task& t) { return std::string(TaskStateName(t.state())); })
      .def_property_readonly("done", &Task::done)
      .def_property_readonly("cancel_requested", &Task::cancel_requested)
      .def_property_readonly("error",
                             [](const Task& t) -> pyb::object {
                               absl::Status st = t.status();
                               if (st.ok()) return pyb::none();
                               return pyb::str(std::string(st.message()));
                             })
      .def_property_readonly("submit_ns", &Task::submit_ns)
      .def_property_readonly("start_ns", &Task::start_ns)
      .def_property_readonly("end_ns", &Task::end_ns)
      .def_property_readonly("history",
                             [](const Task& t) {
                               pyb::list out;
                               for (const auto& r : t.history()) out.append(RecordDict(r));
                               return out;
                             })
      .def(
          "wait",
          [](const Task& t, const pyb::object& timeout) {
            return t.Wait(timeout.is_none() ? -1 : Nanos(timeout, "timeout"));
          },
          pyb::arg("timeout") = pyb::none())
      .def("add_done_callback", [](Task& t, pyb::object fn) {
        PyRef ref = Hold(std::move(fn));
        t.AddDoneCallback([ref](const Task& task) {
          pyb::gil_scoped_acquire gil;
          try {
            (*ref)(std::const_pointer_cast<Task>(task.shared_from_this()));
          } catch (pyb::error_already_set& e) {
            e.discard_as_unraisable("pygpukit scheduler done callback");
          }
        });
      });

  pyb::class_<InlineTask>(s, "InlineTask")
      .def_property_readonly("task", [](const InlineTask& t) { return t.task(); })
      .def(
          "end",
          [](InlineTask& t, const pyb::object& error) {
            absl::Status body = error.is_none()
                                    ? absl::OkStatus()
                                    : RuntimeError(absl::StrCat("the task block raised ",
                                                                std::string(pyb::str(error))));
            Check(t.End(body));
          },
          pyb::arg("error") = pyb::none());

  pyb::class_<Scheduler, std::shared_ptr<Scheduler>>(s, "Scheduler")
      .def(pyb::init([](const pyb::object& device, int workers, int64_t memory_capacity,
                        int inflight_budget, int best_effort_inflight,
                        int best_effort_inflight_while_guaranteed, int best_effort_sms,
                        int64_t best_effort_slice_flops, bool best_effort_preemption,
                        bool record_admission, size_t history_capacity) {
             SchedulerOptions o;
             if (!device.is_none()) {
               o.device = ToDevice(device, "Scheduler");
               o.device_set = true;
             }
             o.worker_threads = workers;
             o.memory_capacity = memory_capacity;
             o.inflight_budget = inflight_budget;
             o.best_effort_inflight = best_effort_inflight;
             o.best_effort_inflight_while_guaranteed = best_effort_inflight_while_guaranteed;
             o.best_effort_sms = best_effort_sms;
             o.best_effort_slice_flops = best_effort_slice_flops;
             o.best_effort_preemption = best_effort_preemption;
             o.record_admission = record_admission;
             o.history_capacity = history_capacity;
             // The last reference may go on one of the scheduler's own threads (a task or a
             // done callback held it): tear it down on a thread of its own then.
             return std::shared_ptr<Scheduler>(Unwrap(Scheduler::Create(o)).release(),
                                               [](Scheduler* s) {
                                                 if (s->OnOwnThread()) {
                                                   std::thread([s] { delete s; }).detach();
                                                 } else {
                                                   delete s;
                                                 }
                                               });
           }),
           pyb::arg("device") = pyb::none(), pyb::arg("workers") = 4,
           pyb::arg("memory_capacity") = 0, pyb::arg("inflight_budget") = 32,
           pyb::arg("best_effort_inflight") = 2,
           pyb::arg("best_effort_inflight_while_guaranteed") = 1, pyb::arg("best_effort_sms") = -1,
           pyb::arg("best_effort_slice_flops") = int64_t{1} << 37,
           pyb::arg("best_effort_preemption") = false, pyb::arg("record_admission") = false,
           pyb::arg("history_capacity") = 4096)
      .def_property_readonly("device", &Scheduler::device)
      .def_property_readonly("memory_capacity", &Scheduler::memory_capacity)
      .def(
          "add_tenant",
          [](Scheduler& sch, const std::string& name, const std::string& qos,
             int64_t memory_request, int64_t memory_limit, double compute_share, int max_inflight,
             const pyb::object& stream_priority, const pyb::object& sms, int streams,
             int max_running, int queue_capacity) {
            TenantOptions o;
            o.name = name;
            o.qos = ToQos(qos);
            o.memory_request = memory_request;
            o.memory_limit = memory_limit;
            o.compute_share = compute_share;
            o.max_inflight = max_inflight;
            if (!stream_priority.is_none()) o.stream_priority = stream_priority.cast<int>();
            if (!sms.is_none()) {
              const int64_t n = ToInt(sms, "sms", "add_tenant");
              if (n < INT32_MIN || n > INT32_MAX) {
                throw pyb::value_error(absl::StrCat("add_tenant: sms ", n, " is out of range"));
              }
              o.sms = static_cast<int>(n);
            }
            o.streams = streams;
            o.max_running = max_running;
            o.queue_capacity = queue_capacity;
            Check(sch.AddTenant(o));
          },
          pyb::arg("name"), pyb::arg("qos") = "burstable", pyb::arg("memory_request") = 0,
          pyb::arg("memory_limit") = 0, pyb::arg("compute_share") = 1.0,
          pyb::arg("max_inflight") = 0, pyb::arg("stream_priority") = pyb::none(),
          pyb::arg("sms") = pyb::none(), pyb::arg("streams") = 1, pyb::arg("max_running") = 0,
          pyb::arg("queue_capacity") = 1024)
      .def("remove_tenant",
           [](Scheduler& sch, const std::string& name) { Check(sch.RemoveTenant(name)); })
      .def("tenants", &Scheduler::tenants)
      .def(
          "submit",
          [](Scheduler& sch, const std::string& tenant, pyb::object fn, const std::string& name,
             int64_t memory, int priority, const pyb::object& deadline, const pyb::object& timeout,
             const std::vector<uint64_t>& depends_on) {
            if (!PyCallable_Check(fn.ptr())) {
              throw pyb::type_error(
                  absl::StrCat("submit: ", std::string(pyb::repr(fn)), " is not callable"));
            }
            TaskOptions o = ToTaskOptions(name, memory, priority, deadline, timeout, depends_on);
            return Unwrap(sch.Submit(tenant, PyTaskFn(Hold(std::move(fn))), std::move(o)));
          },
          pyb::arg("tenant"), pyb::arg("fn"), pyb::arg("name") = "", pyb::arg("memory") = 0,
          pyb::arg("priority") = 0, pyb::arg("deadline") = pyb::none(),
          pyb::arg("timeout") = pyb::none(), pyb::arg("depends_on") = std::vector<uint64_t>{})
      .def(
          "begin",
          [](Scheduler& sch, const std::string& tenant, const std::string& name, int64_t memory,
             int priority, const pyb::object& deadline, const pyb::object& timeout,
             const std::vector<uint64_t>& depends_on) {
            TaskOptions o = ToTaskOptions(name, memory, priority, deadline, timeout, depends_on);
            return std::make_unique<InlineTask>(Unwrap(sch.Begin(tenant, std::move(o))));
          },
          pyb::arg("tenant"), pyb::arg("name") = "", pyb::arg("memory") = 0,
          pyb::arg("priority") = 0, pyb::arg("deadline") = pyb::none(),
          pyb::arg("timeout") = pyb::none(), pyb::arg("depends_on") = std::vector<uint64_t>{})
      .def("cancel", [](Scheduler& sch, Task& t) { return sch.Cancel(t); })
      .def("add_listener",
           [](Scheduler& sch, pyb::object fn) {
             PyRef ref = Hold(std::move(fn));
             sch.AddListener([ref](const TransitionRecord& r) {
               pyb::gil_scoped_acquire gil;
               try {
                 (*ref)(RecordDict(r));
               } catch (pyb::error_already_set& e) {
                 e.discard_as_unraisable("pygpukit scheduler listener");
               }
             });
           })
      .def("history",
           [](const Scheduler& sch) {
             pyb::list out;
             for (const auto& r : sch.history()) out.append(RecordDict(r));
             return out;
           })
      .def("decisions",
           [](const Scheduler& sch) {
             pyb::list out;
             for (const Decision& d : sch.decisions()) {
               out.append(pyb::make_tuple(d.task, std::string(TaskStateName(d.state)), d.reason));
             }
             return out;
           })
      .def("replay_decisions",
           [](const Scheduler& sch) {
             auto r = AdmissionController::Replay(sch.memory_capacity(), sch.admission_trace());
             pyb::list out;
             for (const Decision& d : Unwrap(std::move(r))) {
               out.append(pyb::make_tuple(d.task, std::string(TaskStateName(d.state)), d.reason));
             }
             return out;
           })
      .def("stats", [](const Scheduler& sch) { return StatsDict(sch.stats()); })
      .def(
          "drain",
          [](Scheduler& sch, const pyb::object& timeout) {
            // In slices, checking for signals between them: Ctrl-C interrupts a long drain.
            const int64_t limit = timeout.is_none() ? -1 : Nanos(timeout, "drain: timeout");
            const int64_t start = Scheduler::Now();
            for (;;) {
              int64_t slice = 50'000'000;
              if (limit >= 0)
                slice = std::min(slice, std::max<int64_t>(0, start + limit - Scheduler::Now()));
              const absl::Status st = sch.Drain(slice);
              if (st.ok()) return true;
              if (!absl::IsDeadlineExceeded(st)) RaiseStatus(st);
              if (PyErr_CheckSignals() != 0) throw pyb::error_already_set();
              if (limit >= 0 && Scheduler::Now() - start >= limit) return false;
            }
          },
          pyb::arg("timeout") = pyb::none())
      .def("on_notifier_thread", &Scheduler::OnNotifierThread)
      .def("shutdown", [](Scheduler& sch) { Check(sch.Shutdown()); })
      .def_static("now_ns", &Scheduler::Now);
}

}  // namespace pygpukit::py

// Binding of the tracer and of runtime/trace/profile.h (pygpukit._core._trace; the public API is
// pygpukit.profiler).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cmath>
#include <memory>
#include <vector>

#include "array_bindings.h"
#include "convert.h"
#include "runtime/sched/task_state.h"
#include "runtime/trace/profile.h"
#include "runtime/trace/tracer.h"

namespace pygpukit::py {

namespace {
// A stopped session's records; the profile views are computed from them on request.
struct Records {
  std::vector<TraceRecord> records;
};
}  // namespace
}  // namespace pygpukit::py

PGK_CHECKED_HOLDER_CASTER(pygpukit::py::Records)

namespace pygpukit::py {
namespace {

pyb::object OrNone(double v) { return std::isnan(v) ? pyb::none() : pyb::cast(v); }
pyb::object OrNone(int64_t v) { return v < 0 ? pyb::none() : pyb::cast(v); }

pyb::tuple EventTuple(const TraceRecord& r) {
  pyb::object from = pyb::none(), to = pyb::none();
  if (r.kind == TraceKind::kTask) {
    from = pyb::str(std::string(TaskStateName(static_cast<TaskState>(r.from))));
    to = pyb::str(std::string(TaskStateName(static_cast<TaskState>(r.to))));
  }
  return pyb::make_tuple(r.seq, std::string(TraceKindName(r.kind)),
                         r.name != nullptr ? pyb::str(*r.name) : pyb::str(""), r.begin_ns, r.end_ns,
                         r.gpu_ms < 0 ? pyb::none() : pyb::cast(r.gpu_ms), r.bytes, r.flops,
                         OrNone(r.allocated), OrNone(r.reserved), r.device.ToString(), r.stream,
                         r.thread, r.kind == TraceKind::kTask ? pyb::cast(r.task) : pyb::none(),
                         from, to);
}
}  // namespace

void BindTrace(pyb::module_& m) {
  pyb::module_ t = m.def_submodule("_trace", "Tracer internals (see pygpukit.profiler).");
  t.def("enabled", [] { return Tracer::Get().enabled(); });
  t.def(
      "set_enabled", [](bool on) { Tracer::Get().set_enabled(on); }, pyb::arg("on"));
  t.def("capacity", [] { return Tracer::Get().capacity(); });
  t.def(
      "set_capacity",
      [](int64_t n) {
        if (n < 1) throw pyb::value_error("trace capacity: at least 1 record per thread");
        Tracer::Get().set_capacity(static_cast<size_t>(n));
      },
      pyb::arg("records"));
  t.def("dropped", [] { return Tracer::Get().dropped(); });
  t.def("status", []() -> pyb::object {
    absl::Status s = Tracer::Get().status();
    if (s.ok()) return pyb::none();
    return pyb::str(std::string(s.message()));
  });
  t.def("nvtx_available", &NvtxAvailable);
  t.def(
      "push_range", [](const std::string& name) { PushTraceRange(name); }, pyb::arg("name"));
  t.def("pop_range", [] { Check(PopTraceRange()); });

  pyb::class_<Records, std::shared_ptr<Records>>(t, "Records")
      .def(pyb::init<>())
      .def("__len__", [](const Records& r) { return r.records.size(); })
      .def(
          "events",
          [](const Records& r) {
            pyb::list out;
            for (const TraceRecord& e : r.records) out.append(EventTuple(e));
            return out;
          },
          "Tuples (seq, kind, name, begin_ns, end_ns, gpu_ms, bytes, flops, allocated, "
          "reserved, device, stream, thread, task, from_state, to_state).")
      .def("kernels",
           [](const Records& r) {
             pyb::list out;
             for (const KernelStats& s : KernelTable(r.records)) {
               pyb::dict d;
               d["calls"] = s.calls;
               d["kind"] = std::string(TraceKindName(s.kind));
               d["timed"] = s.timed;
               d["gpu_total_ms"] = OrNone(s.gpu_total_ms);
               d["gpu_mean_ms"] = OrNone(s.gpu_mean_ms);
               d["gpu_p50_ms"] = OrNone(s.gpu_p50_ms);
               d["gpu_p99_ms"] = OrNone(s.gpu_p99_ms);
               d["host_total_ms"] = s.host_total_ms;
               d["flops"] = s.flops;
               d["bytes"] = s.bytes;
               d["tflops"] = OrNone(s.tflops);
               d["gbps"] = OrNone(s.gbps);
               out.append(pyb::make_tuple(s.name, d));
             }
             return out;
           })
      .def(
          "summary",
          [](const Records& r, const std::string& sort_by) {
            return Unwrap(SummaryText(r.records, sort_by));
          },
          pyb::arg("sort_by"))
      .def("memory_timeline",
           [](const Records& r) {
             pyb::list out;
             for (const MemoryPoint& p : MemoryTimeline(r.records)) {
               out.append(pyb::make_tuple(static_cast<double>(p.time_ns) / 1e6, p.allocated,
                                          p.reserved, p.device.ToString()));
             }
             return out;
           })
      .def("chrome_trace_json", [](const Records& r) { return ChromeTraceJson(r.records); });

  pyb::class_<ProfileSession>(t, "Session")
      .def(pyb::init<bool>(), pyb::arg("gpu_timing"))
      .def("stop", [](ProfileSession& s) {
        auto records = std::make_shared<Records>();
        records->records = Unwrap(WithoutGil([&] { return s.Stop(); }));
        return records;
      });
}

}  // namespace pygpukit::py

// Binding of the tracer (pygpukit._core._trace; the public API is pygpukit.profiler).
#include <pybind11/pybind11.h>

#include "array_bindings.h"
#include "convert.h"
#include "runtime/tracer.h"

namespace pygpukit::py {

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
  t.def(
      "mark", [] { return Tracer::Ticks(); }, "The trace clock now (a session's start).");
  t.def("begin_profiling", [] { Tracer::Get().BeginProfiling(); });
  t.def("end_profiling", [] { Tracer::Get().EndProfiling(); });
  t.def("dropped", [] { return Tracer::Get().dropped(); });
  t.def("status", []() -> pyb::object {
    absl::Status s = Tracer::Get().status();
    if (s.ok()) return pyb::none();
    return pyb::str(std::string(s.message()));
  });
  t.def(
      "collect",
      [](uint64_t since) {
        std::vector<TraceRecord> records = WithoutGil([&] { return Tracer::Get().Collect(since); });
        pyb::list out;
        for (const TraceRecord& r : records) {
          out.append(pyb::make_tuple(r.seq, std::string(TraceKindName(r.kind)),
                                     r.name != nullptr ? pyb::str(*r.name) : pyb::str(""),
                                     r.begin_ns, r.end_ns, r.gpu_ms, r.bytes, r.allocated,
                                     r.reserved, r.device.ToString(), r.stream, r.thread));
        }
        return out;
      },
      pyb::arg("since"),
      "Records that began at or after `since` (a mark()), in time order, as tuples (seq, "
      "kind, name, begin_ns, end_ns, gpu_ms, bytes, "
      "allocated, reserved, device, stream, thread); waits for the timed launches.");
}

}  // namespace pygpukit::py

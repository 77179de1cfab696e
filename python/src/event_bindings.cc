// gp.Event: a marker on a device's runtime stream, for timing GPU work without host clocks
// (benchmarks) and for waiting on it without synchronizing the whole device.
#include <pybind11/pybind11.h>

#include <memory>

#include "absl/strings/str_cat.h"
#include "array_bindings.h"
#include "convert.h"

namespace pygpukit::py {
namespace {

struct PyEvent {
  Device device;
  hal::Backend* backend = nullptr;
  std::unique_ptr<hal::Event> event;
  bool timing = true;
  bool recorded = false;
};
}  // namespace
}  // namespace pygpukit::py

PGK_CHECKED_CASTER(pygpukit::py::PyEvent)

namespace pygpukit::py {
namespace {

hal::Stream& StreamOf(Device d) { return *Unwrap(Runtime::Get().stream(d)); }

}  // namespace

void BindEvent(pyb::module_& m) {
  pyb::class_<PyEvent>(m, "Event", R"doc(
A marker recorded on a device's stream; completes when all work queued before it has finished.

    start, end = gp.Event(), gp.Event()
    start.record(); C = A @ B; end.record()
    end.synchronize(); print(start.elapsed_time(end), "ms")
)doc")
      .def(pyb::init([](const pyb::object& device, const pyb::handle& timing_arg) {
             const bool timing = BoolArg(timing_arg, "timing", "Event");
             auto e = std::make_unique<PyEvent>();
             e->device = ToDevice(device, "Event");
             e->backend = Unwrap(Runtime::Get().backend(e->device.type));
             Check(Runtime::Get().CheckDevice(e->device));
             e->event = Unwrap(e->backend->CreateEvent(e->device.index, timing));
             e->timing = timing;
             return e;
           }),
           pyb::arg("device") = pyb::none(), pyb::arg("timing") = pyb::bool_(true))
      .def_readonly("device", &PyEvent::device)
      .def(
          "record",
          [](PyEvent& e) {
            Check(e.backend->Record(*e.event, StreamOf(e.device)));
            e.recorded = true;
          },
          "Records the event at the current end of the device's stream.")
      .def(
          "query", [](PyEvent& e) { return Unwrap(e.backend->Query(*e.event)); },
          "True when the work before the event has finished (or it was never recorded).")
      .def(
          "synchronize",
          [](PyEvent& e) {
            absl::Status s = WithoutGil([&] { return e.backend->Synchronize(*e.event); });
            Check(s);
          },
          "Blocks (without holding the GIL) until the event has completed.")
      .def(
          "elapsed_time",
          [](PyEvent& e, PyEvent& end) {
            if (!e.timing || !end.timing) {
              throw pyb::value_error("Event.elapsed_time: both events need timing=True");
            }
            if (!e.recorded || !end.recorded) {
              throw pyb::value_error("Event.elapsed_time: both events must be recorded first");
            }
            if (!(e.device == end.device)) {
              throw pyb::value_error(absl::StrCat("Event.elapsed_time: events are on ",
                                                  e.device.ToString(), " and ",
                                                  end.device.ToString()));
            }
            absl::Status s = WithoutGil([&] { return e.backend->Synchronize(*end.event); });
            Check(s);
            return Unwrap(e.backend->ElapsedMs(*e.event, *end.event));
          },
          pyb::arg("end"), "Milliseconds from this event to `end` (waits for `end`).");
}

}  // namespace pygpukit::py

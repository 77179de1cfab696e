// gp.Stream: a runtime stream (pooled, with a priority) that a `with` block makes current on this
// thread, as torch.cuda.stream / cupy.cuda.Stream do: ops, allocations, gp.synchronize() and
// Event.record() in the block use it. The scheduler gives tasks such streams itself.
#include <pybind11/pybind11.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "array_bindings.h"
#include "convert.h"

namespace pygpukit::py {
namespace {

struct PyStream {
  Device device;
  hal::Backend* backend = nullptr;
  hal::Stream* stream = nullptr;
  ~PyStream() { Runtime::Get().ReleaseStream(stream); }
};
}  // namespace
}  // namespace pygpukit::py

PGK_CHECKED_CASTER(pygpukit::py::PyStream)

namespace pygpukit::py {
namespace {

// Scopes opened from Python: a per-thread stack, so that `with` blocks nest.
thread_local std::vector<std::unique_ptr<StreamScope>> stream_scopes;

}  // namespace

void BindStream(pyb::module_& m) {
  pyb::class_<PyStream>(m, "Stream", R"doc(
An in-order queue of work on a device, with a priority (lower = more urgent, CUDA convention;
clamped to the device's range). Inside `with s:` work on s's device goes to s.

    s = gp.Stream(priority=-1)
    with s:
        C = A @ B            # queued on s
    s.synchronize()

sms=N confines the stream's kernels to a partition of N SMs (CUDA green contexts, rounded up
to the driver's granularity, 8 on Hopper; the CPU device: N worker threads); `s.sms` tells the
size, 0 for the whole device (also what sms=0 asks for). Other streams still use every SM.
Partitions of one size are the same SMs; on CUDA those of more than half the device come from
one end and smaller ones from the other, so a small and a large one that fit together are
disjoint, while two small or two large ones overlap.
)doc")
      .def(pyb::init([](const pyb::object& device, const pyb::handle& priority_arg,
                        const pyb::object& sms) {
             // Clamped to the device's range below: any int32 is accepted.
             const int priority =
                 static_cast<int>(IntArg(priority_arg, "priority", "Stream", INT32_MIN, INT32_MAX));
             auto s = std::make_unique<PyStream>();
             s->device = ToDevice(device, "Stream");
             s->backend = Unwrap(Runtime::Get().backend(s->device.type));
             const int64_t n = sms.is_none() ? 0 : ToInt(sms, "sms", "Stream");
             if (n < 0 || n > INT32_MAX) {
               throw pyb::value_error(
                   absl::StrCat("Stream: sms ", n, " is outside [0, 2^31) (0: the whole device)"));
             }
             s->stream =
                 Unwrap(Runtime::Get().AcquireStream(s->device, priority, static_cast<int>(n)));
             return s;
           }),
           pyb::arg("device") = pyb::none(), pyb::arg("priority") = pyb::int_(0),
           pyb::arg("sms") = pyb::none())
      .def_readonly("device", &PyStream::device)
      .def_property_readonly("priority", [](const PyStream& s) { return s.stream->priority(); })
      .def_property_readonly(
          "sms", [](const PyStream& s) { return s.stream->sm_count(); },
          "SMs of the stream's partition; 0: the whole device.")
      .def(
          "synchronize",
          [](PyStream& s) { Check(WithoutGil([&] { return s.backend->Synchronize(*s.stream); })); },
          "Blocks (without holding the GIL) until the work queued on the stream has finished.")
      .def(
          "wait_stream",
          [](PyStream& s, PyStream& other) { Check(StreamWaitStream(*s.stream, *other.stream)); },
          pyb::arg("other"),
          "Later work on this stream waits for the work queued on `other` so far (no host "
          "blocking).")
      .def("__enter__",
           [](pyb::object self) {
             stream_scopes.push_back(std::make_unique<StreamScope>(self.cast<PyStream&>().stream));
             return self;
           })
      .def("__exit__", [](PyStream& s, const pyb::args&) {
        if (stream_scopes.empty() || StreamScope::Current() != s.stream) {
          throw pyb::value_error(
              "Stream.__exit__: not the innermost `with stream` block of this thread");
        }
        stream_scopes.pop_back();
        return false;
      });
  m.def(
      "stream_priority_range",
      [](const pyb::object& device) {
        Device d = ToDevice(device, "stream_priority_range");
        return Unwrap(Runtime::Get().backend(d.type))->StreamPriorityRange();
      },
      pyb::arg("device") = pyb::none(),
      "(least, greatest) stream priorities of the device's backend; greatest is most urgent.");
}

}  // namespace pygpukit::py

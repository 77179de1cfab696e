#include "ops/launch/launch_context.h"

#include <optional>

#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "runtime/dispatcher.h"
#include "runtime/runtime.h"

namespace pygpukit::ops {

absl::string_view BackendKindName(BackendKind kind) {
  return kind == BackendKind::kCpu ? "cpu" : "cuda";
}

absl::StatusOr<LaunchContext> LaunchContext::Open(absl::string_view op,
                                                  absl::Span<const GPUArray* const> arrays) {
  const GPUArray* first = nullptr;
  for (const GPUArray* a : arrays) {
    if (a != nullptr && a->valid()) {
      first = a;
      break;
    }
  }
  if (first == nullptr) return ValueError(absl::StrCat(op, ": no array to launch on"));
  PGK_ASSIGN_OR_RETURN(LaunchContext ctx, OnDevice(op, first->device()));
  for (const GPUArray* a : arrays) {
    if (a != nullptr && a->valid()) PGK_RETURN_IF_ERROR(ctx.Use(*a));
  }
  return ctx;
}

absl::StatusOr<LaunchContext> LaunchContext::OnDevice(absl::string_view op, Device device) {
  PGK_ASSIGN_OR_RETURN(hal::Stream * s, Runtime::Get().stream(device));
  return LaunchContext(op, device, s);
}

absl::Status PinForStream(ResidencyPin& pin, const std::shared_ptr<Buffer>& buf, hal::Stream& s) {
  PGK_RETURN_IF_ERROR(pin.Add(buf));
  // Work is about to be queued on `s` (a scheduled task's own stream differs from the one the
  // buffer came from): its memory must not be reused before that work has run.
  if (&s != buf->stream()) {
    PGK_RETURN_IF_ERROR(buf->RecordStream(s));
    // A page-in (the pin may just have done one) is ordered on the buffer's own stream only.
    if (buf->evictable()) PGK_RETURN_IF_ERROR(StreamWaitStream(s, *buf->stream()));
  }
  return absl::OkStatus();
}

absl::Status LaunchContext::Use(const GPUArray& a) {
  if (a.device() != device_) {
    return ValueError(
        absl::StrCat(op_, ": arrays on ", device_.ToString(), " and ", a.device().ToString()));
  }
  // A buffer named twice (x + x, views of one array) is pinned, recorded and kept once.
  const std::shared_ptr<Buffer>& buf = a.buffer();
  for (const auto& k : keep_) {
    if (k == buf) return absl::OkStatus();
  }
  PGK_RETURN_IF_ERROR(PinForStream(pin_, buf, *stream_));
  held_bytes_ += static_cast<int64_t>(buf->size());
  keep_.push_back(buf);
  return absl::OkStatus();
}

absl::Status LaunchContext::QueueHost(absl::string_view kernel, std::function<void()> task,
                                      LaunchCost cost) {
  return Runtime::Get().dispatcher().LaunchHost(*stream_, kernel, std::move(task), cost,
                                                held_bytes_);
}

absl::Status LaunchContext::Kernel(absl::string_view kernel, const hal::LaunchDims& dims,
                                   void** args, LaunchCost cost, LaunchMode mode) const {
  return Runtime::Get().dispatcher().LaunchDevice(*stream_, kernel, dims, args, cost, mode);
}

absl::Status LaunchContext::Library(absl::string_view what,
                                    const std::function<absl::Status()>& call,
                                    LaunchCost cost) const {
  return Runtime::Get().dispatcher().LaunchLibrary(*stream_, what, call, cost);
}

absl::Status LaunchContext::Function(absl::string_view kernel, void* function,
                                     const hal::LaunchDims& dims, void** args,
                                     LaunchCost cost) const {
  return Runtime::Get().dispatcher().LaunchFunction(*stream_, kernel, function, dims, args, cost);
}

absl::StatusOr<ResidencyPin> Resident(absl::Span<const GPUArray* const> arrays) {
  ResidencyPin pin;
  // The thread's current stream, looked up once per device (ops pass arrays of one device).
  std::optional<Device> stream_device;
  hal::Stream* s = nullptr;
  for (size_t k = 0; k < arrays.size(); ++k) {
    const GPUArray* a = arrays[k];
    if (a == nullptr) continue;
    // A buffer named twice (x + x, views of one array) is pinned and recorded once.
    bool seen = false;
    for (size_t j = 0; j < k && !seen; ++j) {
      seen = arrays[j] != nullptr && arrays[j]->buffer() == a->buffer();
    }
    if (seen) continue;
    if (stream_device != a->device()) {
      PGK_ASSIGN_OR_RETURN(s, Runtime::Get().stream(a->device()));
      stream_device = a->device();
    }
    PGK_RETURN_IF_ERROR(PinForStream(pin, a->buffer(), *s));
  }
  return pin;
}

}  // namespace pygpukit::ops

// Copies: host <-> device transfers (through the device's transfer engine), contiguous copies,
// casts, assignment and moves between devices.
#include <cmath>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "ops/creation/creation_kernels.h"
#include "ops/creation/new_array.h"
#include "ops/launch/launch_context.h"
#include "ops/launch/launch_cost.h"
#include "ops/ops.h"
#include "runtime/runtime.h"

namespace pygpukit::ops {
namespace {

struct Queue {
  hal::Backend* backend;
  hal::Stream* stream;
};

absl::StatusOr<Queue> QueueOf(Device d) {
  Runtime& rt = Runtime::Get();
  PGK_ASSIGN_OR_RETURN(hal::Backend * b, rt.backend(d.type));
  PGK_ASSIGN_OR_RETURN(hal::Stream * s, rt.stream(d));
  return Queue{b, s};
}

}  // namespace

absl::StatusOr<GPUArray> FromHost(const void* data, absl::Span<const int64_t> shape, DType dtype,
                                  Device device, bool blocking) {
  PGK_ASSIGN_OR_RETURN(GPUArray out, Empty(shape, dtype, device));
  if (out.nbytes() == 0) return out;
  PGK_ASSIGN_OR_RETURN(Queue q, QueueOf(device));
  PGK_ASSIGN_OR_RETURN(TransferEngine * engine, Runtime::Get().transfer(device));
  PGK_ASSIGN_OR_RETURN(ResidencyPin pin, Resident({&out}));
  PGK_RETURN_IF_ERROR(engine->ToDevice(out.data(), data, out.nbytes(), *q.stream, blocking));
  return out;
}

absl::Status ToHost(const GPUArray& a, void* dst, bool blocking) {
  if (a.size() == 0) return absl::OkStatus();
  PGK_ASSIGN_OR_RETURN(Queue q, QueueOf(a.device()));
  // The copy follows every write to `a`, not only those queued on this thread's stream.
  PGK_RETURN_IF_ERROR(AwaitUsers(a, *q.stream));
  PGK_ASSIGN_OR_RETURN(GPUArray src, Contiguous(a));
  PGK_ASSIGN_OR_RETURN(TransferEngine * engine, Runtime::Get().transfer(src.device()));
  PGK_ASSIGN_OR_RETURN(ResidencyPin pin, Resident({&src}));
  PGK_RETURN_IF_ERROR(engine->ToHost(dst, src.data(), src.nbytes(), *q.stream, blocking));
  // A kernel that failed before the copy left its outputs incomplete: the read fails with it.
  if (blocking) PGK_RETURN_IF_ERROR(q.backend->TaskFailure(a.device().index, /*take=*/false));
  if (!blocking) {
    // The DMA may outlive `src`: its memory is reused only after the copy stream's work.
    PGK_RETURN_IF_ERROR(src.buffer()->RecordStream(engine->d2h_stream()));
  }
  return absl::OkStatus();
}

absl::StatusOr<GPUArray> Copy(const GPUArray& a) {
  PGK_ASSIGN_OR_RETURN(GPUArray out, Empty(a.shape(), a.dtype(), a.device()));
  if (a.is_contiguous() && a.size() > 0) {
    // A dense copy is a plain device-to-device memcpy.
    PGK_ASSIGN_OR_RETURN(ResidencyPin pin, Resident({&a, &out}));
    PGK_ASSIGN_OR_RETURN(Queue q, QueueOf(a.device()));
    PGK_RETURN_IF_ERROR(Runtime::Get().dispatcher().LaunchCopy(
        *q.stream, "copy_d2d",
        [&] {
          return q.backend->CopyAsync(out.data(), a.data(), a.nbytes(),
                                      hal::CopyKind::kDeviceToDevice, *q.stream);
        },
        a.nbytes()));
    return out;
  }
  PGK_RETURN_IF_ERROR(LaunchCopy(a, out));
  return out;
}

absl::StatusOr<GPUArray> Contiguous(const GPUArray& a) {
  if (a.is_contiguous()) return a;
  return Copy(a);
}

absl::StatusOr<GPUArray> AsType(const GPUArray& a, DType dtype, bool copy) {
  if (dtype == a.dtype()) return copy ? Copy(a) : a;
  PGK_ASSIGN_OR_RETURN(GPUArray out, Empty(a.shape(), dtype, a.device()));
  PGK_RETURN_IF_ERROR(LaunchCopy(a, out));
  return out;
}

absl::StatusOr<GPUArray> ToDevice(const GPUArray& a, Device device) {
  PGK_RETURN_IF_ERROR(Runtime::Get().CheckDevice(device));
  if (device == a.device()) return a;
  PGK_ASSIGN_OR_RETURN(Queue q, QueueOf(a.device()));
  PGK_RETURN_IF_ERROR(AwaitUsers(a, *q.stream));  // the copy reads every write to `a`
  // One side is CPU-backend memory, which is host memory: the transfer engine of the other
  // side copies straight from / into it. The CPU stream is drained first so that its queued
  // work on those bytes (producing the source, or still using a recycled block) is done.
  PGK_ASSIGN_OR_RETURN(GPUArray src, Contiguous(a));
  if (src.device().is_cpu() && device.is_cpu()) return src;
  if (src.device().is_cpu()) {
    // Pin first: a page-in of a spilled source is queued on its stream, which the drain waits
    // for before the host reads the bytes.
    PGK_ASSIGN_OR_RETURN(ResidencyPin pin, Resident({&src}));
    PGK_RETURN_IF_ERROR(SynchronizeArray(src));
    return FromHost(src.data(), src.shape(), src.dtype(), device);
  }
  if (device.is_cpu()) {
    PGK_ASSIGN_OR_RETURN(GPUArray out, Empty(src.shape(), src.dtype(), device));
    PGK_RETURN_IF_ERROR(Runtime::Get().Synchronize(device));
    PGK_ASSIGN_OR_RETURN(ResidencyPin pin, Resident({&out}));
    PGK_RETURN_IF_ERROR(ToHost(src, out.data()));
    return out;
  }
  // Between two CUDA devices: through host memory.
  std::vector<unsigned char> host(static_cast<size_t>(src.nbytes()));
  PGK_RETURN_IF_ERROR(ToHost(src, host.data()));
  return FromHost(host.data(), src.shape(), src.dtype(), device);
}

absl::Status Assign(const GPUArray& dst, const GPUArray& src) {
  PGK_RETURN_IF_ERROR(CheckWritable(dst, "setitem", "the target"));
  if (dst.device() != src.device()) {
    return ValueError(absl::StrCat("setitem: value is on ", src.device().ToString(),
                                   " but the array is on ", dst.device().ToString()));
  }
  // NumPy drops leading size-1 dims of the value that the target does not have.
  int lead = 0;
  while (src.ndim() - lead > dst.ndim() && src.shape()[lead] == 1) ++lead;
  Shape shape(src.shape().begin() + lead, src.shape().end());
  Strides strides(src.strides().begin() + lead, src.strides().end());
  auto bstrides = BroadcastStrides(shape, strides, dst.shape(), "setitem");
  if (!bstrides.ok()) {
    return ValueError(absl::StrCat("setitem: could not broadcast value of shape ",
                                   ShapeToString(src.shape()), " into shape ",
                                   ShapeToString(dst.shape())));
  }
  GPUArray value(src.buffer(), src.dtype(), dst.shape(), *std::move(bstrides), src.offset());
  if (value.buffer() == dst.buffer()) {
    // Source and destination may overlap: read everything before writing.
    PGK_ASSIGN_OR_RETURN(value, Copy(value));
  }
  return LaunchCopy(value, dst);
}

absl::Status Assign(const GPUArray& dst, const Scalar& value) {
  PGK_RETURN_IF_ERROR(CheckWritable(dst, "setitem", "the target"));
  // NumPy converts the Python value with int() / float() here, not with an unsafe cast: NaN,
  // infinities and out-of-range values are errors, and complex values do not fit real arrays.
  Scalar v = value;
  if (v.kind == ScalarKind::Complex && !IsComplex(dst.dtype()) && dst.dtype() != DType::Bool) {
    return TypeError(absl::StrCat("setitem: cannot assign a complex value to a ",
                                  DTypeName(dst.dtype()), " array"));
  }
  if (v.kind == ScalarKind::Float && IsInteger(dst.dtype())) {
    if (std::isnan(v.f)) return ValueError("setitem: cannot convert float NaN to integer");
    const double t = std::trunc(v.f);
    if (t >= 0 && t < 18446744073709551616.0) {
      v = Scalar::UInt(static_cast<uint64_t>(t));
    } else if (t < 0 && t >= -9223372036854775808.0) {
      v = Scalar::Int(static_cast<int64_t>(t));
    } else {
      return OverflowError(
          absl::StrCat("setitem: float ", v.f, " out of bounds for ", DTypeName(dst.dtype())));
    }
  }
  unsigned char encoded[16];
  PGK_RETURN_IF_ERROR(EncodeScalar(v, dst.dtype(), encoded, "setitem"));
  return LaunchFill(dst, encoded);
}

absl::StatusOr<Scalar> Item(const GPUArray& a) {
  if (a.size() != 1) {
    return ValueError(
        absl::StrCat("item: only arrays of one element convert to a scalar, got shape ",
                     ShapeToString(a.shape())));
  }
  // Read the value as float64 / complex128 / int64 / bool, the Python scalar's precision.
  DType wide = IsComplex(a.dtype())         ? DType::Complex128
               : IsFloating(a.dtype())      ? DType::Float64
               : a.dtype() == DType::Bool   ? DType::Bool
               : a.dtype() == DType::UInt64 ? DType::UInt64
                                            : DType::Int64;
  PGK_ASSIGN_OR_RETURN(Queue q, QueueOf(a.device()));
  PGK_RETURN_IF_ERROR(AwaitUsers(a, *q.stream));  // the conversion reads every write to `a`
  PGK_ASSIGN_OR_RETURN(GPUArray w, AsType(a, wide, false));
  unsigned char raw[16] = {0};
  PGK_RETURN_IF_ERROR(ToHost(w, raw));
  switch (wide) {
    case DType::Complex128: {
      double c[2];
      std::memcpy(c, raw, 16);
      return Scalar::Complex({c[0], c[1]});
    }
    case DType::Float64: {
      double v;
      std::memcpy(&v, raw, 8);
      return Scalar::Float(v);
    }
    case DType::Bool:
      return Scalar::Bool(raw[0] != 0);
    case DType::UInt64: {
      uint64_t v;
      std::memcpy(&v, raw, 8);
      return Scalar::UInt(v);
    }
    default: {
      int64_t v;
      std::memcpy(&v, raw, 8);
      return Scalar::Int(v);
    }
  }
}

absl::Status Synchronize(Device device) { return Runtime::Get().Synchronize(device); }

absl::Status AwaitUsers(const GPUArray& a, hal::Stream& reader) {
  if (!a.valid()) return absl::OkStatus();
  for (hal::Stream* s : a.buffer()->UsedOn()) {
    if (s != &reader) PGK_RETURN_IF_ERROR(StreamWaitStream(reader, *s));
  }
  return absl::OkStatus();
}

absl::Status SynchronizeArray(const GPUArray& a) {
  PGK_ASSIGN_OR_RETURN(Queue q, QueueOf(a.device()));
  PGK_RETURN_IF_ERROR(AwaitUsers(a, *q.stream));
  return q.backend->Synchronize(*q.stream);
}

}  // namespace pygpukit::ops

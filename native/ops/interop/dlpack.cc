// DLPack export / import, views of foreign memory and the external-stream handshakes
// (ops/interop/dlpack.h).
#include "ops/interop/dlpack.h"

#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "ops/ops.h"
#include "runtime/memory/memory_pool.h"
#include "runtime/runtime.h"
#include "runtime/sched/event_watcher.h"

namespace pygpukit::ops {
namespace {

// What an exported tensor's deleter frees: the pin holding the memory alive and resident, and
// the shape and stride arrays the DLTensor points at.
struct Exported {
  ResidencyPin pin;
  std::vector<int64_t> shape, strides;
};

DLDataType ToDLDataType(DType dt) {
  DLDataType t{};
  t.bits = static_cast<uint8_t>(ItemSize(dt) * 8);
  t.lanes = 1;
  switch (KindOf(dt)) {
    case DTypeKind::Bool:
      t.code = kDLPackBoolCode;
      break;
    case DTypeKind::Signed:
      t.code = kDLInt;
      break;
    case DTypeKind::Unsigned:
      t.code = kDLUInt;
      break;
    case DTypeKind::Float:
      t.code = dt == DType::BFloat16       ? kDLBfloat
               : dt == DType::Float8E4M3Fn ? kDLPackFloat8E4M3FnCode
               : dt == DType::Float8E5M2   ? kDLPackFloat8E5M2Code
                                           : kDLFloat;
      break;
    case DTypeKind::Complex:
      t.code = kDLComplex;
      break;
  }
  return t;
}

absl::StatusOr<DType> FromDLDataType(DLDataType t) {
  auto unsupported = [&] {
    return TypeError(absl::StrCat("from_dlpack: unsupported DLPack dtype (code ", t.code, ", bits ",
                                  t.bits, ", lanes ", t.lanes, ")"));
  };
  if (t.lanes != 1) return unsupported();
  switch (t.code) {
    case kDLInt:
      switch (t.bits) {
        case 8:
          return DType::Int8;
        case 16:
          return DType::Int16;
        case 32:
          return DType::Int32;
        case 64:
          return DType::Int64;
      }
      break;
    case kDLUInt:
      switch (t.bits) {
        case 8:
          return DType::UInt8;
        case 16:
          return DType::UInt16;
        case 32:
          return DType::UInt32;
        case 64:
          return DType::UInt64;
      }
      break;
    case kDLFloat:
      switch (t.bits) {
        case 16:
          return DType::Float16;
        case 32:
          return DType::Float32;
        case 64:
          return DType::Float64;
      }
      break;
    case kDLBfloat:
      if (t.bits == 16) return DType::BFloat16;
      break;
    case kDLComplex:
      if (t.bits == 64) return DType::Complex64;
      if (t.bits == 128) return DType::Complex128;
      break;
    case kDLPackBoolCode:
      if (t.bits == 8) return DType::Bool;
      break;
    case kDLPackFloat8E4M3FnCode:
      if (t.bits == 8) return DType::Float8E4M3Fn;
      break;
    case kDLPackFloat8E5M2Code:
      if (t.bits == 8) return DType::Float8E5M2;
      break;
  }
  return unsupported();
}

// Fills the DLTensor of a managed tensor for `a` and returns its context.
absl::StatusOr<std::unique_ptr<Exported>> Describe(const GPUArray& a, DLTensor& t) {
  auto ctx = std::make_unique<Exported>();
  PGK_RETURN_IF_ERROR(ctx->pin.Add(a.buffer()));  // resident (and alive) until the deleter
  // Whatever stream handshake the consumer asks for (none included), the launches that write
  // the array are with the driver when it gets the pointer: its own synchronization covers them.
  PGK_ASSIGN_OR_RETURN(hal::Backend * backend, Runtime::Get().backend(a.device().type));
  PGK_RETURN_IF_ERROR(backend->Drain(a.device().index));
  ctx->shape.assign(a.shape().begin(), a.shape().end());
  ctx->strides.assign(a.strides().begin(), a.strides().end());
  // The first element's address (not the buffer's plus an offset), as PyTorch and CuPy do.
  t.data = a.size() > 0 ? a.data() : a.buffer()->data();
  t.byte_offset = 0;
  const auto [type, id] = DLPackDevice(a.device());
  t.device.device_type = static_cast<DLDeviceType>(type);
  t.device.device_id = id;
  t.ndim = a.ndim();
  t.dtype = ToDLDataType(a.dtype());
  t.shape = ctx->shape.data();
  t.strides = ctx->strides.data();
  return ctx;
}

// Fences the streams that used a foreign buffer on the watcher thread, then releases it.
EventWatcher& ReleaseWatcher() {
  static auto* w = new EventWatcher;  // never destroyed: foreign memory may die at exit
  return *w;
}

// Releases run on the watcher thread, never on the thread dropping the last view: that can be a
// CPU stream worker, and a release that waits for the Python GIL (NumPy's DLPack deleter does)
// must not stall a stream the GIL holder may be waiting for. On CUDA the watcher also fences
// the streams that used the memory.
void FenceThenRelease(Device device, std::vector<hal::Stream*> used,
                      std::function<void()> release) {
  absl::StatusOr<hal::Backend*> backend = Runtime::Get().backend(device.type);
  if (!backend.ok()) {  // nothing to fence: release on a thread of its own, as below
    std::thread(std::move(release)).detach();
    return;
  }
  auto left = std::make_shared<std::atomic<size_t>>(used.size());
  auto done = [left, release](absl::Status) {
    if (left->fetch_sub(1) == 1) release();
  };
  for (hal::Stream* s : used) {
    if (!ReleaseWatcher().RecordAndWatch(**backend, *s, done).ok()) {
      // Cannot watch it: wait on a thread of its own (never on this one, which may be the
      // stream's worker).
      hal::Backend* b = *backend;
      std::thread([b, s, done] {
        (void)b->Synchronize(*s);
        done(absl::OkStatus());
      }).detach();
    }
  }
}

template <typename Managed>
absl::StatusOr<GPUArray> Import(Managed* t, bool read_only) {
  if (t == nullptr) return ValueError("from_dlpack: null DLPack tensor");
  if (read_only) {
    return ValueError(
        "from_dlpack: the tensor is read-only, and arrays here are writable (ask for a copy)");
  }
  const DLTensor& d = t->dl_tensor;
  PGK_ASSIGN_OR_RETURN(DType dt, FromDLDataType(d.dtype));
  // Read as the integer it is: a producer's value outside the enum's range (a C producer may
  // write any) must not be loaded as a DLDeviceType.
  int32_t device_type = 0;
  static_assert(sizeof(d.device.device_type) == sizeof(device_type));
  std::memcpy(&device_type, &d.device.device_type, sizeof(device_type));
  PGK_ASSIGN_OR_RETURN(Device dev, DeviceFromDLPack(device_type, d.device.device_id));
  // The producer's fields are untrusted: check them before reading through them.
  if (d.ndim < 0 || d.ndim > kMaxDims) {
    return ValueError(
        absl::StrCat("from_dlpack: ndim ", d.ndim, " is outside [0, ", kMaxDims, "]"));
  }
  if (d.ndim > 0 && d.shape == nullptr) {
    return ValueError(absl::StrCat("from_dlpack: a null shape for ndim ", d.ndim));
  }
  Shape shape(d.shape, d.shape + d.ndim);
  std::optional<absl::Span<const int64_t>> strides;
  if (d.strides != nullptr) strides = absl::MakeConstSpan(d.strides, d.ndim);
  uintptr_t address = 0;
  if (__builtin_add_overflow(reinterpret_cast<uintptr_t>(d.data), d.byte_offset, &address)) {
    return ValueError(
        absl::StrCat("from_dlpack: byte_offset ", d.byte_offset, " wraps the address space"));
  }
  void* data = reinterpret_cast<void*>(address);
  return FromForeignMemory(data, dt, shape, strides, dev, [t] {
    if (t->deleter != nullptr) t->deleter(t);
  });
}

}  // namespace

std::pair<int, int> DLPackDevice(Device device) {
  return device.is_cuda() ? std::pair<int, int>{kDLCUDA, device.index}
                          : std::pair<int, int>{kDLCPU, 0};
}

absl::StatusOr<Device> DeviceFromDLPack(int device_type, int device_id) {
  Device d;
  switch (device_type) {
    case kDLCPU:
    case kDLCUDAHost:
      d = Device{DeviceType::kCPU, 0};
      break;
    case kDLCUDA:
    case kDLCUDAManaged:
      d = Device{DeviceType::kCUDA, device_id};
      break;
    default:
      return NotImplementedError(absl::StrCat("from_dlpack: DLPack device type ", device_type,
                                              " is not supported (CPU and CUDA memory are)"));
  }
  PGK_RETURN_IF_ERROR(Runtime::Get().CheckDevice(d));
  return d;
}

absl::StatusOr<DLManagedTensorVersioned*> ToDLPack(const GPUArray& a) {
  auto m = std::make_unique<DLManagedTensorVersioned>();
  m->version = {DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION};
  m->flags = 0;
  PGK_ASSIGN_OR_RETURN(std::unique_ptr<Exported> ctx, Describe(a, m->dl_tensor));
  m->manager_ctx = ctx.release();
  m->deleter = [](DLManagedTensorVersioned* self) {
    delete static_cast<Exported*>(self->manager_ctx);
    delete self;
  };
  return m.release();
}

absl::StatusOr<DLManagedTensor*> ToDLPackLegacy(const GPUArray& a) {
  auto m = std::make_unique<DLManagedTensor>();
  PGK_ASSIGN_OR_RETURN(std::unique_ptr<Exported> ctx, Describe(a, m->dl_tensor));
  m->manager_ctx = ctx.release();
  m->deleter = [](DLManagedTensor* self) {
    delete static_cast<Exported*>(self->manager_ctx);
    delete self;
  };
  return m.release();
}

absl::StatusOr<GPUArray> FromDLPack(DLManagedTensorVersioned* t, bool read_only_ok) {
  if (t != nullptr && t->version.major != DLPACK_MAJOR_VERSION) {
    return NotImplementedError(absl::StrCat("from_dlpack: DLPack version ", t->version.major, ".",
                                            t->version.minor, " is not supported (1.x is)"));
  }
  return Import(t, t != nullptr && IsReadOnly(*t) && !read_only_ok);
}

absl::StatusOr<GPUArray> FromDLPackLegacy(DLManagedTensor* t) { return Import(t, false); }

absl::StatusOr<GPUArray> FromForeignMemory(void* data, DType dtype, absl::Span<const int64_t> shape,
                                           std::optional<absl::Span<const int64_t>> strides,
                                           Device device, std::function<void()> release) {
  PGK_RETURN_IF_ERROR(ValidateShape(shape, "from foreign memory"));
  PGK_RETURN_IF_ERROR(Runtime::Get().CheckDevice(device));
  Strides st =
      strides.has_value() ? Strides(strides->begin(), strides->end()) : ContiguousStrides(shape);
  if (st.size() != shape.size()) {
    return ValueError(absl::StrCat("from foreign memory: ", st.size(), " strides for shape ",
                                   ShapeToString(shape)));
  }
  const int64_t item = ItemSize(dtype);
  if (reinterpret_cast<uintptr_t>(data) % item != 0) {
    return ValueError(absl::StrCat("from foreign memory: data at 0x",
                                   absl::Hex(reinterpret_cast<uintptr_t>(data)),
                                   " is not aligned to ", DTypeName(dtype), "'s ", item, " bytes"));
  }
  // The buffer spans the lowest to the highest element address (negative strides included).
  int64_t lo = 0, hi = 0, bytes = 0;
  if (NumElements(shape) > 0) {
    if (data == nullptr) return ValueError("from foreign memory: null data for a non-empty array");
    bool overflow = false;
    for (size_t d = 0; d < shape.size(); ++d) {
      int64_t span = 0;
      overflow |= __builtin_mul_overflow(shape[d] - 1, st[d], &span);
      overflow |= __builtin_add_overflow(span < 0 ? lo : hi, span, span < 0 ? &lo : &hi);
    }
    overflow |=
        __builtin_sub_overflow(hi, lo, &bytes) || __builtin_add_overflow(bytes, 1, &bytes) ||
        __builtin_mul_overflow(bytes, item, &bytes) || __builtin_mul_overflow(lo, item, &lo);
    if (overflow) {
      return ValueError(absl::StrCat("from foreign memory: strides of shape ", ShapeToString(shape),
                                     " reach beyond 64-bit offsets"));
    }
    // The elements' addresses, lowest to highest, must lie inside the address space.
    const uintptr_t at = reinterpret_cast<uintptr_t>(data);
    const uintptr_t below = uintptr_t{0} - static_cast<uintptr_t>(lo);  // lo <= 0
    uintptr_t end = 0;
    if (below > at || __builtin_add_overflow(at - below, static_cast<uintptr_t>(bytes), &end)) {
      return ValueError(absl::StrCat("from foreign memory: shape ", ShapeToString(shape),
                                     " with strides ", ShapeToString(st), " at 0x", absl::Hex(at),
                                     " reaches beyond the address space"));
    }
    PGK_ASSIGN_OR_RETURN(hal::Backend * backend, Runtime::Get().backend(device.type));
    PGK_RETURN_IF_ERROR(backend->CheckForeignRange(
        device.index, reinterpret_cast<void*>(at - below), static_cast<size_t>(bytes)));
    lo /= item;
  }
  char* base = static_cast<char*>(data) + lo * item;
  PGK_ASSIGN_OR_RETURN(hal::Stream * stream, Runtime::Get().stream(device));
  auto buffer = Buffer::Foreign(
      device, base, bytes, stream,
      [device, release = std::move(release)](std::vector<hal::Stream*> used) mutable {
        FenceThenRelease(device, std::move(used), std::move(release));
      });
  return GPUArray(std::move(buffer), dtype, Shape(shape.begin(), shape.end()), std::move(st), -lo);
}

absl::StatusOr<Device> CudaDeviceOf(uintptr_t ptr) {
  absl::StatusOr<hal::Backend*> cuda = Runtime::Get().backend(DeviceType::kCUDA);
  if (!cuda.ok()) return ValueError("CUDA memory: CUDA is not available");
  absl::StatusOr<int> ordinal = (*cuda)->PointerDevice(ptr);
  if (!ordinal.ok()) return ValueError(ordinal.status().message());
  return Device{DeviceType::kCUDA, *ordinal};
}

namespace {

// `device`'s backend and the thread's stream on it, or ValueError naming `what` where the
// backend's streams have no handles to exchange (`call` Unimplemented: the CPU backend).
const absl::Status& StatusOf(const absl::Status& s) { return s; }
template <typename T>
const absl::Status& StatusOf(const absl::StatusOr<T>& s) {
  return s.status();
}

template <typename Call>
auto WithExternalStream(Device device, absl::string_view what, Call call)
    -> decltype(call(std::declval<hal::Backend&>(), std::declval<hal::Stream&>())) {
  auto none = [&] {
    return ValueError(absl::StrCat(what, ": ", device.ToString(), " has no CUDA stream"));
  };
  absl::StatusOr<hal::Backend*> backend = Runtime::Get().backend(device.type);
  if (!backend.ok()) return none();
  PGK_ASSIGN_OR_RETURN(hal::Stream * s, Runtime::Get().stream(device));
  auto result = call(**backend, *s);
  if (absl::IsUnimplemented(StatusOf(result))) return none();
  return result;
}

}  // namespace

absl::StatusOr<uintptr_t> StreamHandle(Device device) {
  return WithExternalStream(device, "stream handle",
                            [](hal::Backend& b, hal::Stream& s) { return b.ExternalHandle(s); });
}

absl::Status WaitForExternalStream(Device device, uintptr_t external) {
  return WithExternalStream(device, "stream wait", [&](hal::Backend& b, hal::Stream& s) {
    return b.WaitForExternal(s, external);
  });
}

absl::Status ExternalStreamWaits(Device device, uintptr_t external) {
  return WithExternalStream(device, "stream wait", [&](hal::Backend& b, hal::Stream& s) {
    return b.ExternalWaitsFor(external, s);
  });
}

}  // namespace pygpukit::ops

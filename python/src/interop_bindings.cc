// Zero-copy interop with NumPy, PyTorch, CuPy and any DLPack / CUDA-array-interface library:
// __dlpack__ / __dlpack_device__ / from_dlpack (versioned and legacy capsules, with the stream
// handshake), __cuda_array_interface__ (v3, producer and consumer) and __array__ (NumPy views of
// CPU-backend arrays; GPU arrays refuse implicit conversion).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>

#include "absl/strings/str_cat.h"
#include "array_bindings.h"
#include "convert.h"
#include "gil.h"
#include "ops/interop/dlpack.h"

namespace pygpukit::py {
namespace {

constexpr const char* kVersionedName = "dltensor_versioned";
constexpr const char* kLegacyName = "dltensor";

[[noreturn]] void RaiseBufferError(const std::string& msg) {
  PyErr_SetString(PyExc_BufferError, msg.c_str());
  throw pyb::error_already_set();
}

// Capsule destructors: a capsule nobody consumed still owns its tensor.
void DeleteVersionedCapsule(PyObject* cap) {
  if (!PyCapsule_IsValid(cap, kVersionedName)) return;  // consumed (renamed "used_...")
  auto* m = static_cast<DLManagedTensorVersioned*>(PyCapsule_GetPointer(cap, kVersionedName));
  if (m != nullptr && m->deleter != nullptr) m->deleter(m);
}
void DeleteLegacyCapsule(PyObject* cap) {
  if (!PyCapsule_IsValid(cap, kLegacyName)) return;
  auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(cap, kLegacyName));
  if (m != nullptr && m->deleter != nullptr) m->deleter(m);
}

// A pair of integers from a tuple argument (max_version, dl_device); TypeError otherwise.
std::pair<int64_t, int64_t> IntPair(const pyb::handle& obj, const char* what, const char* op) {
  if (!pyb::isinstance<pyb::tuple>(obj) || pyb::len(obj) != 2) {
    RaiseStatus(TypeError(absl::StrCat(op, ": ", what, " must be a tuple of two integers, got ",
                                       std::string(pyb::repr(obj)))));
  }
  auto t = pyb::reinterpret_borrow<pyb::tuple>(obj);
  return {ToInt(t[0], what, op), ToInt(t[1], what, op)};
}

// The consumer's stream argument of __dlpack__ as a CUDA handle; nullopt: no synchronization.
std::optional<uintptr_t> ConsumerStream(const pyb::handle& stream) {
  if (stream.is_none()) return uintptr_t{1};  // the protocol's default: the legacy stream
  const int64_t s = ToInt(stream, "stream", "__dlpack__");
  if (s == -1) return std::nullopt;
  if (s == 0) {
    RaiseStatus(
        ValueError("__dlpack__: stream 0 is ambiguous for CUDA; pass 1 for the legacy "
                   "default stream or 2 for the per-thread one"));
  }
  if (s < -1) RaiseStatus(ValueError(absl::StrCat("__dlpack__: invalid stream ", s)));
  return static_cast<uintptr_t>(s);
}

pyb::object Dlpack(const GPUArray& self, const pyb::handle& stream, const pyb::handle& max_version,
                   const pyb::handle& dl_device, const pyb::handle& copy_arg) {
  const std::optional<bool> copy = OptionalBoolArg(copy_arg, "copy", "__dlpack__");
  GPUArray a = self;
  bool copied = false;
  if (!dl_device.is_none()) {
    const auto pair = IntPair(dl_device, "dl_device", "__dlpack__");
    absl::StatusOr<Device> wanted =
        ops::DeviceFromDLPack(static_cast<int>(pair.first), static_cast<int>(pair.second));
    if (!wanted.ok()) {
      RaiseBufferError(absl::StrCat("__dlpack__: cannot export to the requested device: ",
                                    wanted.status().message()));
    }
    const Device target = *wanted;
    if (target != a.device()) {
      if (copy == false) {
        RaiseBufferError(absl::StrCat("__dlpack__: the array is on ", a.device().ToString(),
                                      ", not on the requested device, and copy=False"));
      }
      a = Unwrap(WithoutGil([&] { return ops::ToDevice(a, target); }));
      copied = true;
    }
  }
  if (copy == true && !copied) {
    a = Unwrap(ops::Copy(a));
    copied = true;
  }
  if (a.device().is_cuda()) {
    if (std::optional<uintptr_t> s = ConsumerStream(stream)) {
      // The consumer's stream follows every write to the array, whatever stream queued it.
      Check(ops::AwaitUsers(a, *Unwrap(Runtime::Get().stream(a.device()))));
      Check(ops::ExternalStreamWaits(a.device(), *s));
    }
  } else {
    if (!stream.is_none()) {
      RaiseStatus(ValueError("__dlpack__: stream must be None for arrays on the cpu device"));
    }
    // The consumer reads the memory at once: let the queued CPU work on it finish.
    Check(WithoutGil([&] { return ops::SynchronizeArray(a); }));
  }
  bool versioned = false;
  if (!max_version.is_none()) {
    versioned = IntPair(max_version, "max_version", "__dlpack__").first >= 1;
  }
  PyObject* cap = nullptr;
  if (versioned) {
    DLManagedTensorVersioned* m = Unwrap(ops::ToDLPack(a));
    if (copied) m->flags |= DLPACK_FLAG_BITMASK_IS_COPIED;
    cap = PyCapsule_New(m, kVersionedName, DeleteVersionedCapsule);
    if (cap == nullptr) m->deleter(m);
  } else {
    DLManagedTensor* m = Unwrap(ops::ToDLPackLegacy(a));
    cap = PyCapsule_New(m, kLegacyName, DeleteLegacyCapsule);
    if (cap == nullptr) m->deleter(m);
  }
  if (cap == nullptr) throw pyb::error_already_set();
  return pyb::reinterpret_steal<pyb::object>(cap);
}

// A producer's managed tensor behind one of ours whose deleter runs the producer's with the GIL
// taken first (WithGilUnlessExiting): the importer calls it on a runtime thread, and a
// producer's deleter may take the GIL from a destructor (torch's does), which aborts the process
// when interpreter exit stops that thread.
template <typename Managed>
struct GuardedTensor {
  Managed self;  // handed to the importer in the producer's place
  Managed* producer;
};

template <typename Managed>
Managed* GuardRelease(Managed* producer) {
  auto* g = new GuardedTensor<Managed>{*producer, producer};
  g->self.manager_ctx = g;
  g->self.deleter = [](Managed* self) {
    auto* guard = static_cast<GuardedTensor<Managed>*>(self->manager_ctx);
    Managed* p = guard->producer;
    delete guard;
    if (p->deleter != nullptr) WithGilUnlessExiting([p] { p->deleter(p); });
  };
  return &g->self;
}

// ops::FromDLPack / FromDLPackLegacy through a guard; on an error the producer's tensor stays
// with its capsule.
template <typename Managed, typename Import>
GPUArray ImportGuarded(Managed* producer, Import import) {
  Managed* guarded = GuardRelease(producer);
  // Freed here unless the import took it (an error status or an exception).
  std::unique_ptr<GuardedTensor<Managed>> owner(
      static_cast<GuardedTensor<Managed>*>(guarded->manager_ctx));
  absl::StatusOr<GPUArray> view = import(guarded);
  if (!view.ok()) RaiseStatus(view.status());
  (void)owner.release();
  return *std::move(view);
}

// Imports a capsule from a producer's __dlpack__; the result owns the tensor.
GPUArray FromCapsule(const pyb::object& cap, std::optional<bool> copy, bool* producer_copied) {
  *producer_copied = false;
  if (PyCapsule_IsValid(cap.ptr(), kVersionedName)) {
    auto* m =
        static_cast<DLManagedTensorVersioned*>(PyCapsule_GetPointer(cap.ptr(), kVersionedName));
    const bool read_only = ops::IsReadOnly(*m);
    if (read_only && copy == false) {
      RaiseBufferError("from_dlpack: the producer's tensor is read-only and copy=False");
    }
    GPUArray view = ImportGuarded(m, [&](DLManagedTensorVersioned* g) {
      return ops::FromDLPack(g, /*read_only_ok=*/read_only);
    });
    PyCapsule_SetName(cap.ptr(), "used_dltensor_versioned");
    *producer_copied = (m->flags & DLPACK_FLAG_BITMASK_IS_COPIED) != 0;
    if (read_only) {
      *producer_copied = true;
      return Unwrap(ops::Copy(view));  // the view (and the tensor) go when `view` does
    }
    return view;
  }
  if (PyCapsule_IsValid(cap.ptr(), kLegacyName)) {
    auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(cap.ptr(), kLegacyName));
    GPUArray view = ImportGuarded(m, [](DLManagedTensor* g) { return ops::FromDLPackLegacy(g); });
    PyCapsule_SetName(cap.ptr(), "used_dltensor");
    return view;
  }
  RaiseStatus(
      TypeError(absl::StrCat("from_dlpack: __dlpack__ returned ", TypeName(cap),
                             ", not an unconsumed 'dltensor' or 'dltensor_versioned' capsule")));
}

GPUArray FromDlpack(const pyb::object& x, const pyb::handle& device_arg,
                    const pyb::handle& copy_arg) {
  const std::optional<bool> copy = OptionalBoolArg(copy_arg, "copy", "from_dlpack");
  if (!pyb::hasattr(x, "__dlpack__") || !pyb::hasattr(x, "__dlpack_device__")) {
    RaiseStatus(TypeError(absl::StrCat("from_dlpack: ", TypeName(x),
                                       " does not support DLPack (no __dlpack__ / "
                                       "__dlpack_device__)")));
  }
  const auto dev = IntPair(x.attr("__dlpack_device__")(), "__dlpack_device__()", "from_dlpack");
  const Device source =
      Unwrap(ops::DeviceFromDLPack(static_cast<int>(dev.first), static_cast<int>(dev.second)));
  const Device target = device_arg.is_none() ? source : ToDevice(device_arg, "from_dlpack");
  if (target != source && copy == false) {
    RaiseBufferError(absl::StrCat("from_dlpack: the data is on ", source.ToString(), ", device ",
                                  target.ToString(), " needs a copy, and copy=False"));
  }
  pyb::object stream = pyb::none();
  if (source.is_cuda()) stream = pyb::int_(Unwrap(ops::StreamHandle(source)));
  pyb::object cap;
  try {
    cap = x.attr("__dlpack__")(pyb::arg("stream") = stream,
                               pyb::arg("max_version") = pyb::make_tuple(1, 0),
                               pyb::arg("copy") = copy_arg);
  } catch (pyb::error_already_set& e) {
    if (!e.matches(PyExc_TypeError)) throw;
    cap = x.attr("__dlpack__")(pyb::arg("stream") = stream);  // a producer before DLPack 1.0
  }
  bool producer_copied = false;
  GPUArray out = FromCapsule(cap, copy, &producer_copied);
  if (target != source) return Unwrap(WithoutGil([&] { return ops::ToDevice(out, target); }));
  if (copy == true && !producer_copied) return Unwrap(ops::Copy(out));
  return out;
}

// ---- CUDA array interface (v3) ----

pyb::dict CudaArrayInterface(const GPUArray& a) {
  if (!a.device().is_cuda()) {
    throw pyb::attribute_error(absl::StrCat(
        "__cuda_array_interface__: only arrays on a CUDA device have one; this one is on ",
        a.device().ToString()));
  }
  if (a.dtype() == DType::BFloat16) {
    RaiseStatus(
        TypeError("__cuda_array_interface__: bfloat16 has no typestr; exchange it through DLPack"));
  }
  {
    // The consumer holds a raw pointer and never says when it is done: the memory stays put
    // (paged in if spilled) for the rest of the buffer's life.
    ResidencyPin pin;
    Check(WithoutGil([&] { return pin.Add(a.buffer()); }));
    ResidencyPin::PinForLife(*a.buffer());
  }
  pyb::dict d;
  pyb::tuple shape(a.ndim());
  for (int i = 0; i < a.ndim(); ++i) shape[i] = pyb::int_(a.shape()[i]);
  d["shape"] = shape;
  d["typestr"] = NumpyDType(a.dtype()).attr("str");
  d["data"] =
      pyb::make_tuple(pyb::int_(reinterpret_cast<uintptr_t>(a.size() ? a.data() : nullptr)), false);
  d["version"] = 3;
  if (a.is_contiguous()) {
    d["strides"] = pyb::none();
  } else {
    pyb::tuple st(a.ndim());
    for (int i = 0; i < a.ndim(); ++i) st[i] = pyb::int_(a.strides()[i] * a.itemsize());
    d["strides"] = st;
  }
  // The stream named is where the data is ready: it follows every write to the array.
  Check(ops::AwaitUsers(a, *Unwrap(Runtime::Get().stream(a.device()))));
  d["stream"] = pyb::int_(Unwrap(ops::StreamHandle(a.device())));
  return d;
}

GPUArray FromCudaArrayInterface(const pyb::object& obj, const pyb::handle& device_arg,
                                const pyb::handle& copy_arg) {
  constexpr const char* op = "asarray";
  const std::optional<bool> copy = OptionalBoolArg(copy_arg, "copy", op);
  pyb::dict d = obj.attr("__cuda_array_interface__");
  const int version = d.contains("version") ? d["version"].cast<int>() : 0;
  if (version < 2) {
    RaiseStatus(NotImplementedError(absl::StrCat(op, ": __cuda_array_interface__ version ", version,
                                                 " is not supported (2 and 3 are)")));
  }
  if (d.contains("mask") && !d["mask"].is_none()) {
    RaiseStatus(NotImplementedError(
        absl::StrCat(op, ": masked __cuda_array_interface__ arrays are not supported")));
  }
  // The typestr ("<f4", "|b1", ...) through NumPy; the data must be in this machine's byte order.
  pyb::object np_dtype = pyb::module_::import("numpy").attr("dtype")(d["typestr"]);
  if (!np_dtype.attr("isnative").cast<bool>()) {
    RaiseStatus(ValueError(absl::StrCat(op, ": __cuda_array_interface__ typestr ",
                                        std::string(pyb::str(d["typestr"])),
                                        " is not in native byte order")));
  }
  const DType dt = ToDType(np_dtype, op);
  const Shape shape = ToShape(d["shape"], op);
  auto data = d["data"].cast<pyb::tuple>();
  const auto ptr = data[0].cast<uintptr_t>();
  const bool read_only = data[1].cast<bool>();
  const bool empty = NumElements(shape) == 0;
  if (!empty && ptr == 0) {
    RaiseStatus(ValueError(absl::StrCat(op, ": __cuda_array_interface__ data is null")));
  }
  // The memory's own device, not whichever is current.
  Device source;
  if (!empty) {
    source = Unwrap(ops::CudaDeviceOf(ptr));
  } else {
    source = device_arg.is_none() ? Runtime::Get().default_device() : ToDevice(device_arg, op);
    if (!source.is_cuda()) source = Device{DeviceType::kCUDA, 0};
  }
  const Device target = device_arg.is_none() ? source : ToDevice(device_arg, op);
  if (copy == false && (target != source || read_only)) {
    RaiseStatus(ValueError(absl::StrCat(
        op, ": copy=False, but ",
        read_only
            ? std::string("the __cuda_array_interface__ data is read-only (arrays here "
                          "are writable)")
            : absl::StrCat("the data is on ", source.ToString(), ", not ", target.ToString()))));
  }
  std::optional<std::vector<int64_t>> strides;
  if (d.contains("strides") && !d["strides"].is_none()) {
    strides.emplace();
    const int64_t item = ItemSize(dt);
    for (const pyb::handle& s : d["strides"]) {
      const int64_t b = ToInt(s, "strides", op);
      if (b % item != 0) {
        RaiseStatus(ValueError(absl::StrCat(op, ": stride ", b, " bytes is not a multiple of ",
                                            DTypeName(dt), "'s ", item)));
      }
      strides->push_back(b / item);
    }
  }
  if (d.contains("stream") && !d["stream"].is_none()) {
    const int64_t s = ToInt(d["stream"], "stream", op);
    if (s <= 0) {
      RaiseStatus(ValueError(
          absl::StrCat(op, ": __cuda_array_interface__ stream ", s,
                       " is invalid (1: legacy default, 2: per-thread default, else a CUstream)")));
    }
    Check(ops::WaitForExternalStream(source, static_cast<uintptr_t>(s)));
  }
  // The producer object keeps the memory alive; released with the GIL once our work is done.
  auto owner = std::make_shared<pyb::object>(obj);
  auto release = [owner]() {
    if (!WithGilUnlessExiting([&] { *owner = pyb::object(); })) {
      owner->release();  // the interpreter is exiting: leak the reference
    }
  };
  std::optional<absl::Span<const int64_t>> st;
  if (strides.has_value()) st = absl::MakeConstSpan(*strides);
  GPUArray view = Unwrap(ops::FromForeignMemory(reinterpret_cast<void*>(ptr), dt, shape, st, source,
                                                std::move(release)));
  if (target != source) return Unwrap(WithoutGil([&] { return ops::ToDevice(view, target); }));
  if (read_only || copy == true) return Unwrap(ops::Copy(view));
  return view;
}

// ---- NumPy ----

pyb::object ArrayProtocol(const pyb::object& self, const pyb::handle& dtype,
                          const pyb::handle& copy_arg) {
  const GPUArray& a = self.cast<const GPUArray&>();
  const std::optional<bool> copy = OptionalBoolArg(copy_arg, "copy", "__array__");
  if (!a.device().is_cpu()) {
    RaiseStatus(TypeError(
        absl::StrCat("Implicit conversion to a NumPy array is not supported for arrays on ",
                     a.device().ToString(),
                     " (it would copy from the device); use gp.to_numpy(x) or "
                     "x.get()")));
  }
  pyb::object out;
  if (copy == true) {
    out = ToNumpy(a);
  } else {
    // A view of the memory: the capsule pins the buffer (resident, in place) and holds it alive
    // as long as NumPy needs it.
    auto pin = std::make_unique<ResidencyPin>();
    Check(WithoutGil([&] {
      PGK_RETURN_IF_ERROR(pin->Add(a.buffer()));
      return ops::SynchronizeArray(a);
    }));
    pyb::capsule base(pin.release(), [](void* p) { delete static_cast<ResidencyPin*>(p); });
    std::vector<pyb::ssize_t> shape(a.shape().begin(), a.shape().end()), strides;
    for (int64_t s : a.strides()) strides.push_back(s * a.itemsize());
    out = pyb::array(pyb::dtype::from_args(NumpyDType(a.dtype())), shape, strides,
                     a.size() ? a.data() : a.buffer()->data(), base);
  }
  if (!dtype.is_none()) {
    pyb::object want = pyb::module_::import("numpy").attr("dtype")(dtype);
    if (!pyb::object(out.attr("dtype")).equal(want)) {
      if (copy == false) {
        RaiseStatus(ValueError("__array__: a dtype conversion needs a copy, and copy=False"));
      }
      out = out.attr("astype")(want);
    }
  }
  return out;
}

// A legacy DLPack capsule over four float32 zeros whose deleter takes the GIL from a destructor,
// as torch's does: what test_interop.py releases just before the interpreter exits.
pyb::object DlpackTestCapsule() {
  struct Ctx {
    float data[4] = {};
    int64_t shape[1] = {4};
  };
  auto* ctx = new Ctx;
  auto* m = new DLManagedTensor{};
  m->dl_tensor.data = ctx->data;
  m->dl_tensor.device = {kDLCPU, 0};
  m->dl_tensor.ndim = 1;
  m->dl_tensor.dtype = {kDLFloat, 32, 1};
  m->dl_tensor.shape = ctx->shape;
  m->manager_ctx = ctx;
  m->deleter = [](DLManagedTensor* self) {
    struct TakesGil {
      ~TakesGil() { pyb::gil_scoped_acquire gil; }
    };
    { TakesGil t; }
    delete static_cast<Ctx*>(self->manager_ctx);
    delete self;
  };
  PyObject* cap = PyCapsule_New(m, kLegacyName, DeleteLegacyCapsule);
  if (cap == nullptr) {
    m->deleter(m);
    throw pyb::error_already_set();
  }
  return pyb::reinterpret_steal<pyb::object>(cap);
}

}  // namespace

void BindInterop(pyb::module_& m, pyb::class_<GPUArray>& cls) {
  const auto none = pyb::none();
  cls.def("__dlpack__", &Dlpack, pyb::kw_only(), pyb::arg("stream") = none,
          pyb::arg("max_version") = none, pyb::arg("dl_device") = none, pyb::arg("copy") = none,
          "DLPack export (a versioned capsule when max_version >= (1, 0), else a legacy one) "
          "sharing the memory; on CUDA the consumer's `stream` waits for the array's work.");
  cls.def(
      "__dlpack_device__",
      [](const GPUArray& a) {
        const auto [type, id] = ops::DLPackDevice(a.device());
        return pyb::make_tuple(type, id);
      },
      "(DLPack device type, device id): (1, 0) for the cpu, (2, N) for cuda:N.");
  cls.def_property_readonly("__cuda_array_interface__", &CudaArrayInterface);
  cls.def("__array__", &ArrayProtocol, pyb::arg("dtype") = none, pyb::pos_only(), pyb::kw_only(),
          pyb::arg("copy") = none);
  m.def("from_dlpack", &FromDlpack, pyb::arg("x"), pyb::pos_only(), pyb::kw_only(),
        pyb::arg("device") = none, pyb::arg("copy") = none,
        "from_dlpack(x, /, *, device=None, copy=None)\n\nAn array sharing the memory of any "
        "DLPack producer (NumPy, PyTorch, CuPy, JAX ...), with the CUDA stream handshake; "
        "`device` different from the data's, or copy=True, copies.");
  m.def("_dlpack_test_capsule", &DlpackTestCapsule);
  m.def("_from_cuda_array_interface", &FromCudaArrayInterface, pyb::arg("obj"),
        pyb::arg("device") = none, pyb::arg("copy") = none);
}

}  // namespace pygpukit::py

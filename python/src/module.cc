// pygpukit._core: module definition, dtypes, devices, runtime information and the free
// functions. Argument conversion and error mapping only; the work is in the C++ ops.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "array_bindings.h"
#include "convert.h"
#include "gil.h"

namespace pygpukit::py {
namespace {

pyb::dict PropertiesDict(Device d) {
  hal::DeviceProperties p = Unwrap(Runtime::Get().properties(d));
  pyb::dict out;
  out["name"] = p.name;
  out["sm"] = d.is_cuda() ? absl::StrCat(p.sm_major, p.sm_minor) : std::string("");
  out["compute_capability"] = pyb::make_tuple(p.sm_major, p.sm_minor);
  out["multiprocessors"] = p.multiprocessors;
  out["total_memory"] = p.total_memory;
  out["l2_cache_bytes"] = p.l2_cache_bytes;
  out["max_shared_memory_per_block"] = p.max_shared_memory_per_block;
  out["driver_version"] = p.driver_version;
  return out;
}

pyb::dict InfoDict() {
  RuntimeInfo i = Runtime::Get().info();
  pyb::dict out;
  out["version"] = i.version;
  out["default_device"] = i.default_device;
  out["cuda_available"] = i.cuda_available;
  out["cuda_status"] = i.cuda_status;
  out["forced_device"] = i.forced_device;
  out["kernel_archs"] = i.kernel_archs;
  out["nvrtc_available"] = i.nvrtc_available;
  out["nvrtc_version"] = i.nvrtc_version;
  out["cublaslt_available"] = i.cublaslt_available;
  out["cublaslt_version"] = i.cublaslt_version;
  return out;
}

pyb::dict DispatchStatsDict() {
  DispatchStats s = Runtime::Get().dispatcher().stats();
  pyb::dict out;
  out["host_tasks"] = s.host_tasks;
  out["device_kernels"] = s.device_kernels;
  out["library_calls"] = s.library_calls;
  out["copies"] = s.copies;
  out["queued_kernels"] = s.queued_kernels;
  pyb::dict per;
  for (const auto& [k, v] : s.per_kernel) per[pyb::str(k)] = v;
  out["per_kernel"] = per;
  return out;
}

ops::MatmulOptions ParseMatmulOptions(const pyb::handle& precision_arg,
                                      const pyb::handle& backend_arg,
                                      absl::string_view op = "matmul") {
  const std::string precision = StrArg(precision_arg, "precision", op);
  const std::string backend = StrArg(backend_arg, "backend", op);
  ops::MatmulOptions o;
  if (precision == "highest" || precision == "fp32" || precision == "float32") {
    o.precision = ops::MatmulPrecision::kHighest;
  } else if (precision == "tf32") {
    o.precision = ops::MatmulPrecision::kTF32;
  } else {
    throw pyb::value_error(
        absl::StrCat(op, ": unknown precision '", precision, "' (expected 'highest' or 'tf32')"));
  }
  if (backend == "auto") {
    o.backend = ops::MatmulBackend::kAuto;
  } else if (backend == "cublaslt") {
    o.backend = ops::MatmulBackend::kCublasLt;
  } else if (backend == "sm90") {
    o.backend = ops::MatmulBackend::kSm90;
  } else if (backend == "sm80") {
    o.backend = ops::MatmulBackend::kSm80;
  } else if (backend == "simt") {
    o.backend = ops::MatmulBackend::kSimt;
  } else {
    throw pyb::value_error(absl::StrCat(op, ": unknown backend '", backend,
                                        "' (expected 'auto', 'cublaslt', 'sm90', 'sm80' or "
                                        "'simt')"));
  }
  return o;
}

ops::Activation ParseActivation(const pyb::handle& act, absl::string_view op) {
  if (act.is_none()) return ops::Activation::kNone;
  if (!pyb::isinstance<pyb::str>(act)) {
    throw pyb::type_error(absl::StrCat(op, ": activation must be None or a string"));
  }
  const std::string name = act.cast<std::string>();
  if (name == "none") return ops::Activation::kNone;
  if (name == "relu") return ops::Activation::kRelu;
  if (name == "gelu") return ops::Activation::kGelu;
  if (name == "silu") return ops::Activation::kSilu;
  if (name == "gelu_tanh") return ops::Activation::kGeluTanh;
  throw pyb::value_error(absl::StrCat(op, ": unknown activation '", name,
                                      "' (expected None, 'relu', 'gelu', 'gelu_tanh' or 'silu')"));
}

pyb::object StrOrNone(const std::string& s) {
  return s.empty() ? pyb::object(pyb::none()) : pyb::object(pyb::str(s));
}

pyb::dict TuneInfoDict(Device d) {
  const ops::GemmTuneInfo i = Unwrap(ops::GemmTuneCacheInfo(d));
  const ops::TuneCacheStats& c = i.cache;
  pyb::dict out;
  out["enabled"] = i.enabled;
  out["device"] = d;
  out["directory"] = StrOrNone(i.directory);
  out["path"] = StrOrNone(c.path);
  out["loaded"] = c.loaded;
  out["file_status"] = std::string(ops::TuneFileStatusName(c.file_status));
  out["entries"] = c.entries;
  out["hits"] = c.hits;
  out["misses"] = c.misses;
  out["tuned"] = c.tuned;
  out["skipped_lines"] = c.skipped_lines;
  out["disk_usable"] = c.disk_usable;
  out["disk_error"] = c.disk_error;
  return out;
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "pygpukit native core: GPUArray, devices and array operations.";
  RegisterGilExitHook();

  pyb::class_<PyDType>(m, "dtype", "An array element type.")
      .def_property_readonly("name",
                             [](const PyDType& d) { return std::string(DTypeName(d.dtype)); })
      .def_property_readonly("itemsize", [](const PyDType& d) { return ItemSize(d.dtype); })
      .def_property_readonly("kind",
                             [](const PyDType& d) {
                               switch (KindOf(d.dtype)) {
                                 case DTypeKind::Bool:
                                   return "b";
                                 case DTypeKind::Signed:
                                   return "i";
                                 case DTypeKind::Unsigned:
                                   return "u";
                                 case DTypeKind::Float:
                                   return "f";
                                 default:
                                   return "c";
                               }
                             })
      .def("__repr__",
           [](const PyDType& d) { return absl::StrCat("pygpukit.", DTypeName(d.dtype)); })
      .def("__str__", [](const PyDType& d) { return std::string(DTypeName(d.dtype)); })
      .def("__hash__", [](const PyDType& d) { return static_cast<int>(d.dtype); })
      .def("__eq__", [](const PyDType& d, const pyb::object& other) {
        try {
          return ToDType(other, "dtype comparison") == d.dtype;
        } catch (pyb::error_already_set&) {
          PyErr_Clear();
          return false;
        } catch (pyb::type_error&) {
          return false;
        }
      });
#define PGK_EXPORT_DTYPE(E, T, C) \
  m.attr(std::string(DTypeName(DType::E)).c_str()) = PyDType{DType::E};
  PGK_FOR_EACH_DTYPE(PGK_EXPORT_DTYPE)
#undef PGK_EXPORT_DTYPE

  pyb::class_<Device>(m, "Device", "A device: 'cpu' or 'cuda:N'.")
      .def(pyb::init([](const std::string& spec) { return Unwrap(ParseDevice(spec)); }))
      .def_property_readonly("type", [](const Device& d) { return d.is_cuda() ? "cuda" : "cpu"; })
      .def_readonly("index", &Device::index)
      .def("__repr__", [](const Device& d) { return absl::StrCat("Device('", d.ToString(), "')"); })
      .def("__str__", &Device::ToString)
      .def("__hash__", [](const Device& d) { return static_cast<int>(d.type) * 1024 + d.index; })
      .def("__eq__", [](const Device& d, const pyb::object& other) {
        if (pyb::isinstance<Device>(other)) return d == other.cast<Device>();
        if (pyb::isinstance<pyb::str>(other)) {
          auto p = ParseDevice(other.cast<std::string>());
          return p.ok() && *p == d;
        }
        return false;
      });

  BindArray(m);
  BindManipulation(m);
  BindDTypes(m);
  BindEvent(m);
  BindMemory(m);
  BindStream(m);
  BindScheduler(m);
  BindJit(m);
  BindRandom(m);
  BindNn(m);
  BindTrace(m);

  m.def(
      "devices", [] { return Runtime::Get().devices(); }, "All usable devices.");
  m.def("default_device", [] { return Runtime::Get().default_device(); });
  m.def("runtime_info", &InfoDict, "What the runtime found at start-up.");
  m.def(
      "device_properties",
      [](const pyb::object& d) { return PropertiesDict(ToDevice(d, "device_properties")); },
      pyb::arg("device") = pyb::none());
  m.def("dispatch_stats", &DispatchStatsDict);
  m.def("reset_dispatch_stats", [] { Runtime::Get().dispatcher().ResetStats(); });
  m.def(
      "synchronize",
      [](const pyb::object& d) {
        Device dev = ToDevice(d, "synchronize");
        absl::Status s = WithoutGil([&] { return ops::Synchronize(dev); });
        Check(s);
      },
      pyb::arg("device") = pyb::none());

  // empty / zeros / ones(shape, *, dtype=float32, device=None): one binding, op-named errors.
  using CreateFn = absl::StatusOr<GPUArray> (*)(absl::Span<const int64_t>, DType, Device);
  for (auto [name, fn, doc] :
       {std::tuple<const char*, CreateFn, const char*>{"empty", &ops::Empty,
                                                       "An uninitialized array (default float32)."},
        {"zeros", &ops::Zeros, "An array of zeros (default dtype float32)."},
        {"ones", &ops::Ones, "An array of ones (default dtype float32)."}}) {
    m.def(
        name,
        [name = std::string(name), fn = fn](const pyb::object& shape, const pyb::object& dtype,
                                            const pyb::object& device) {
          return Unwrap(fn(ToShape(shape, name), ToDTypeOr(dtype, kDefaultFloat, name),
                           ToDevice(device, name)));
        },
        pyb::arg("shape"), pyb::kw_only(), pyb::arg("dtype") = pyb::none(),
        pyb::arg("device") = pyb::none(), doc);
  }
  m.def(
      "full",
      [](const pyb::object& shape, const pyb::object& value, const pyb::object& dtype,
         const pyb::object& device) {
        if (!IsScalar(value)) {
          throw pyb::type_error(absl::StrCat("full: fill_value must be a Python scalar, got ",
                                             std::string(pyb::repr(value))));
        }
        Scalar v = ToScalar(value);
        // Default dtype from the fill value's kind, as in the Array API.
        DType dflt = v.kind == ScalarKind::Bool    ? DType::Bool
                     : v.above_int64               ? DType::UInt64  // as NumPy: 2**63 is uint64
                     : v.kind == ScalarKind::Int   ? kDefaultInt
                     : v.kind == ScalarKind::Float ? kDefaultFloat
                                                   : kDefaultComplex;
        return Unwrap(ops::Full(ToShape(shape, "full"), v, ToDTypeOr(dtype, dflt, "full"),
                                ToDevice(device, "full")));
      },
      pyb::arg("shape"), pyb::arg("fill_value"), pyb::arg("dtype") = pyb::none(),
      pyb::arg("device") = pyb::none());
  m.def(
      "arange",
      [](const pyb::object& start, const pyb::object& stop, const pyb::object& step,
         const pyb::object& dtype, const pyb::object& device) {
        pyb::object lo = stop.is_none() ? pyb::object(pyb::int_(0)) : start;
        pyb::object hi = stop.is_none() ? start : stop;
        for (const pyb::object& v : {lo, hi, step}) {
          if (PyBool_Check(v.ptr()) || (!PyLong_Check(v.ptr()) && !PyFloat_Check(v.ptr()))) {
            throw pyb::type_error(absl::StrCat("arange: arguments must be int or float, got ",
                                               std::string(pyb::repr(v))));
          }
        }
        bool all_int = PyLong_Check(lo.ptr()) && PyLong_Check(hi.ptr()) && PyLong_Check(step.ptr());
        DType dt = ToDTypeOr(dtype, all_int ? kDefaultInt : kDefaultFloat, "arange");
        Device dev = ToDevice(device, "arange");
        if (all_int) {
          auto to_i64 = [](const pyb::object& v) {
            int overflow = 0;
            long long x = PyLong_AsLongLongAndOverflow(v.ptr(), &overflow);
            if (overflow != 0) {
              RaiseStatus(OverflowError(
                  absl::StrCat("arange: ", std::string(pyb::str(v)), " does not fit in int64")));
            }
            return static_cast<int64_t>(x);
          };
          return Unwrap(ops::ArangeInt(to_i64(lo), to_i64(hi), to_i64(step), dt, dev));
        }
        auto to_f64 = [](const pyb::object& v) {
          double x = PyFloat_AsDouble(v.ptr());
          if (x == -1.0 && PyErr_Occurred()) {
            PyErr_Clear();
            RaiseStatus(OverflowError(
                absl::StrCat("arange: ", std::string(pyb::str(v)), " does not fit in float64")));
          }
          return x;
        };
        return Unwrap(ops::Arange(to_f64(lo), to_f64(hi), to_f64(step), dt, dev));
      },
      pyb::arg("start"), pyb::arg("stop") = pyb::none(), pyb::arg("step") = 1,
      pyb::arg("dtype") = pyb::none(), pyb::arg("device") = pyb::none());
  // Argument conversion for the Python layer (asarray), with the caller's op in messages.
  m.def(
      "_parse_dtype",
      [](const pyb::handle& dt, const std::string& op) { return PyDType{ToDType(dt, op)}; },
      pyb::arg("dtype"), pyb::arg("op"));
  m.def(
      "_from_numpy_as",
      [](const pyb::array& arr, const Device& device, const std::string& op, bool blocking) {
        return FromNumpy(arr, device, op, blocking);
      },
      pyb::arg("array"), pyb::arg("device"), pyb::arg("op"), pyb::arg("blocking") = true);
  m.def(
      "_parse_device", [](const pyb::handle& d, const std::string& op) { return ToDevice(d, op); },
      pyb::arg("device"), pyb::arg("op"));
  m.def(
      "from_numpy",
      [](const pyb::array& arr, const pyb::object& device) {
        return FromNumpy(arr, ToDevice(device, "from_numpy"), "from_numpy");
      },
      pyb::arg("array"), pyb::arg("device") = pyb::none(), "Copies a NumPy array to a device.");
  m.def(
      "to_numpy",
      [](const pyb::handle& x, const pyb::object& out, const pyb::handle& blocking) {
        return ToNumpy(AsArray(x, "to_numpy"), out, BoolArg(blocking, "blocking", "to_numpy"));
      },
      pyb::arg("x"), pyb::pos_only(), pyb::kw_only(), pyb::arg("out") = pyb::none(),
      pyb::arg("blocking") = pyb::bool_(true),
      "Copies an array into a NumPy array (a new one, or `out`). blocking=False needs `out` "
      "from pygpukit.memory.pinned_empty and returns before the copy ends: synchronize the "
      "device before reading it.");
  m.def(
      "matmul",
      [](const pyb::handle& a, const pyb::handle& b, const pyb::handle& precision,
         const pyb::handle& backend) {
        return Unwrap(ops::Matmul(AsArray(a, "matmul"), AsArray(b, "matmul"),
                                  ParseMatmulOptions(precision, backend)));
      },
      pyb::arg("x1"), pyb::arg("x2"), pyb::kw_only(), pyb::arg("precision") = "highest",
      pyb::arg("backend") = "auto",
      "Matrix product with NumPy semantics. precision='tf32' allows TF32 tensor cores for "
      "float32 on CUDA; the default keeps true FP32. backend picks the CUDA kernel family "
      "('auto', 'cublaslt', 'sm90', 'sm80', 'simt'); a forced family that cannot serve the "
      "problem raises NotImplementedError.");
  m.def(
      "gemm",
      [](const pyb::handle& a, const pyb::handle& b, const pyb::handle& c, const pyb::handle& alpha,
         const pyb::handle& beta, const pyb::handle& bias, const pyb::handle& activation,
         const pyb::handle& out_dtype, const pyb::handle& precision, const pyb::handle& backend) {
        ops::GemmEpilogue e;
        e.alpha = RealArg(alpha, "alpha", "gemm");
        e.c = OptionalArray(c, "gemm");
        e.beta = beta.is_none() ? (e.c.has_value() ? 1.0 : 0.0) : RealArg(beta, "beta", "gemm");
        e.bias = OptionalArray(bias, "gemm");
        e.activation = ParseActivation(activation, "gemm");
        if (!out_dtype.is_none()) e.out_dtype = ToDType(out_dtype, "gemm");
        return Unwrap(ops::Gemm(AsArray(a, "gemm"), AsArray(b, "gemm"), e,
                                ParseMatmulOptions(precision, backend, "gemm")));
      },
      pyb::arg("a"), pyb::arg("b"), pyb::arg("c") = pyb::none(), pyb::kw_only(),
      pyb::arg("alpha") = 1.0, pyb::arg("beta") = pyb::none(), pyb::arg("bias") = pyb::none(),
      pyb::arg("activation") = pyb::none(), pyb::arg("out_dtype") = pyb::none(),
      pyb::arg("precision") = "highest", pyb::arg("backend") = "auto",
      "activation(alpha * (a @ b) + beta * c + bias) in one kernel where the selected kernel "
      "family fuses it. beta defaults to 1 when c is given, else 0; bias is 1-D of length N; "
      "activation is None, 'relu', 'gelu' (erf form), 'gelu_tanh' (tanh approximation) or 'silu'; "
      "out_dtype may be float32 for "
      "float16 / bfloat16 operands. Real floating dtypes only.");
  m.def(
      "linear",
      [](const pyb::handle& x, const pyb::handle& w, const pyb::handle& bias,
         const pyb::handle& activation, const pyb::handle& precision, const pyb::handle& backend) {
        return Unwrap(ops::Linear(AsArray(x, "linear"), AsArray(w, "linear"),
                                  OptionalArray(bias, "linear"),
                                  ParseActivation(activation, "linear"),
                                  ParseMatmulOptions(precision, backend, "linear")));
      },
      pyb::arg("x"), pyb::arg("weight"), pyb::arg("bias") = pyb::none(), pyb::kw_only(),
      pyb::arg("activation") = pyb::none(), pyb::arg("precision") = "highest",
      pyb::arg("backend") = "auto",
      "Linear layer: activation(x @ weight.T + bias) with weight of shape (out_features, "
      "in_features), read without a copy; x may have leading batch dims.");
  m.def(
      "grouped_matmul",
      [](const pyb::handle& a, const pyb::handle& b, const pyb::handle& offsets,
         const pyb::handle& precision, const pyb::handle& backend) {
        std::vector<int64_t> offs;
        try {
          offs = offsets.cast<std::vector<int64_t>>();
        } catch (const pyb::cast_error&) {
          throw pyb::type_error(
              absl::StrCat("grouped_matmul: offsets must be a sequence of integers, got ",
                           std::string(pyb::str(pyb::type::of(offsets).attr("__name__")))));
        }
        return Unwrap(ops::GroupedMatmul(AsArray(a, "grouped_matmul"), AsArray(b, "grouped_matmul"),
                                         offs,
                                         ParseMatmulOptions(precision, backend, "grouped_matmul")));
      },
      pyb::arg("a"), pyb::arg("b"), pyb::arg("offsets"), pyb::kw_only(),
      pyb::arg("precision") = "highest", pyb::arg("backend") = "auto",
      "Grouped product (mixture-of-experts): rows [offsets[g-1], offsets[g]) of a (rows, K) "
      "times b[g] (b of shape (groups, K, N)) into the same rows of the (rows, N) result. "
      "offsets: the groups' end rows, non-decreasing, one per group, the last = rows (a "
      "sequence or a host array of integers).");
  m.def(
      "scaled_matmul",
      [](const pyb::handle& a, const pyb::handle& b, const pyb::handle& scale_a,
         const pyb::handle& scale_b, const pyb::handle& out_dtype, const pyb::handle& bias,
         const pyb::handle& activation, const pyb::handle& backend) {
        constexpr absl::string_view op = "scaled_matmul";
        ops::ScaledMatmulOptions o;
        o.backend = ParseMatmulOptions(pyb::str("highest"), backend, op).backend;
        if (!out_dtype.is_none()) o.out_dtype = ToDType(out_dtype, op);
        o.bias = OptionalArray(bias, op);
        o.activation = ParseActivation(activation, op);
        return Unwrap(ops::ScaledMatmul(AsArray(a, op), AsArray(b, op), AsArray(scale_a, op),
                                        AsArray(scale_b, op), o));
      },
      pyb::arg("a"), pyb::arg("b"), pyb::arg("scale_a"), pyb::arg("scale_b"), pyb::kw_only(),
      pyb::arg("out_dtype") = pyb::none(), pyb::arg("bias") = pyb::none(),
      pyb::arg("activation") = pyb::none(), pyb::arg("backend") = "auto",
      "Scaled product of 8-bit float matrices: activation((a * scale_a) @ (b * scale_b) + bias) "
      "accumulated in float32 and written as out_dtype (bfloat16 by default, float16, float32). "
      "a (M, K) and b (K, N) are float8_e4m3fn or float8_e5m2; the float32 scales' shapes say "
      "how they cover their operand: () or (1, 1) one scale; (M, 1) / (1, N) per row of a / "
      "column of b; (M, ceil(K/128)) / (ceil(K/128), N) per 128 elements along K; "
      "(ceil(M/128), ceil(K/128)) / (ceil(K/128), ceil(N/128)) per 128x128 block. backend: "
      "'auto' (cuBLASLt's FP8 matmul where it serves, else the dequantized float32 product), "
      "'cublaslt', or 'sm90' (our wgmma kernels: float8_e4m3fn, one scale per operand or per "
      "row / column); a forced family that cannot serve raises NotImplementedError.");
  m.def(
      "set_gemm_autotune",
      [](const pyb::handle& enabled) {
        ops::SetGemmAutotune(BoolArg(enabled, "enabled", "set_gemm_autotune"));
      },
      pyb::arg("enabled"),
      "Turns GEMM autotuning on or off for auto-mode CUDA matmuls of this process (default off, "
      "or PYGPUKIT_GEMM_AUTOTUNE=1): each new problem key times the applicable kernel "
      "configurations once and reuses the fastest, cached per device in memory and on disk.");
  m.def("gemm_autotune_enabled", &ops::GemmAutotuneEnabled,
        "Whether GEMM autotuning is on (see set_gemm_autotune).");
  m.def(
      "gemm_tune_cache_info",
      [](const pyb::object& d) { return TuneInfoDict(ToDevice(d, "gemm_tune_cache_info")); },
      pyb::arg("device") = pyb::none(),
      "The GEMM tune cache of a device: enabled, directory, path (None when memory only or on "
      "the CPU), loaded, file_status, entries, hits, misses, tuned, skipped_lines, disk_usable, "
      "disk_error.");
  m.def(
      "clear_gemm_tune_cache",
      [](const pyb::handle& disk) {
        Check(ops::ClearGemmTuneCache(BoolArg(disk, "disk", "clear_gemm_tune_cache")));
      },
      pyb::arg("disk") = false,
      "Forgets the tuned GEMM choices and counters of every device (cache files are read again "
      "on next use); disk=True also deletes this process's devices' cache files.");
  m.def(
      "astype",
      [](const pyb::handle& x, const pyb::object& dtype, const pyb::handle& copy) {
        AsArray(x, "astype");
        return AsTypeOf(pyb::reinterpret_borrow<pyb::object>(x), dtype,
                        BoolArg(copy, "copy", "astype"));
      },
      pyb::arg("x"), pyb::arg("dtype"), pyb::kw_only(), pyb::arg("copy") = pyb::bool_(true));
  m.def(
      "reshape",
      [](const pyb::handle& x, const pyb::object& shape, const pyb::handle& copy) {
        return Unwrap(ops::Reshape(AsArray(x, "reshape"), ToShape(shape, "reshape"),
                                   OptionalBoolArg(copy, "copy", "reshape")));
      },
      pyb::arg("x"), pyb::arg("shape"), pyb::kw_only(), pyb::arg("copy") = pyb::none(),
      "reshape(x, /, shape, *, copy=None): a view when the layout allows, else a copy; copy=True "
      "always copies, copy=False raises ValueError where a copy would be needed.");
  m.def(
      "permute_dims",
      [](const pyb::handle& x, const pyb::object& axes) {
        return Unwrap(ops::PermuteDims(AsArray(x, "permute_dims"), ToShape(axes, "permute_dims")));
      },
      pyb::arg("x"), pyb::arg("axes"));
  m.def(
      "matrix_transpose",
      [](const pyb::handle& x) {
        return Unwrap(ops::MatrixTranspose(AsArray(x, "matrix_transpose")));
      },
      pyb::arg("x"));
  m.def(
      "broadcast_to",
      [](const pyb::handle& x, const pyb::object& shape) {
        return Unwrap(ops::BroadcastTo(AsArray(x, "broadcast_to"), ToShape(shape, "broadcast_to")));
      },
      pyb::arg("x"), pyb::arg("shape"));
  m.def(
      "contiguous",
      [](const pyb::handle& x) { return Unwrap(ops::Contiguous(AsArray(x, "contiguous"))); },
      pyb::arg("x"));
  // Last: every function, method and constructor defined above.
  ConciseArgumentErrors(m);
}

}  // namespace pygpukit::py

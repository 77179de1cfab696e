// gp.RawKernel (user kernels from CUDA C++ source) and the JIT cache controls (gp.jit).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "array_bindings.h"
#include "convert.h"
#include "ops/raw_kernel/raw_kernel.h"
#include "runtime/jit/host_jit.h"
#include "runtime/runtime.h"

namespace pygpukit::py {
namespace {

struct PyRawKernel {
  JitSource src;
  std::string kernel;
};
}  // namespace
}  // namespace pygpukit::py

PGK_CHECKED_CASTER(pygpukit::py::PyRawKernel)

namespace pygpukit::py {
namespace {

// An int (or NumPy integer) or a sequence of 1..3 of them; missing dims are 1.
std::array<int64_t, 3> ToDims(const pyb::handle& obj, const char* what, const std::string& op) {
  std::array<int64_t, 3> out{1, 1, 1};
  auto is_int = [](const pyb::handle& v) {
    return !pyb::isinstance<pyb::bool_>(v) && PyIndex_Check(v.ptr()) != 0;
  };
  auto as_int = [&](const pyb::handle& v) -> int64_t {
    if (!is_int(v)) {
      Check(TypeError(absl::StrCat(op, ": ", what,
                                   " must be an int or a tuple of up to 3 ints, "
                                   "got ",
                                   TypeName(v))));
    }
    const pyb::int_ i = pyb::reinterpret_steal<pyb::int_>(PyNumber_Index(v.ptr()));
    const long long n = PyLong_AsLongLong(i.ptr());
    if (n == -1 && PyErr_Occurred()) {
      PyErr_Clear();
      Check(ValueError(absl::StrCat(op, ": ", what, " has a dim out of range")));
    }
    return n;
  };
  if (is_int(obj)) {
    out[0] = as_int(obj);
    return out;
  }
  if (!pyb::isinstance<pyb::sequence>(obj) || pyb::isinstance<pyb::str>(obj)) {
    as_int(obj);  // raises the TypeError
  }
  const auto seq = obj.cast<pyb::sequence>();
  if (seq.size() < 1 || seq.size() > 3) {
    Check(ValueError(absl::StrCat(op, ": ", what, " has ", seq.size(), " dims (1 to 3 expected)")));
  }
  for (size_t i = 0; i < seq.size(); ++i) out[i] = as_int(seq[i]);
  return out;
}

// `with stream:` around a launch, left on every path out.
class StreamEntered {
 public:
  explicit StreamEntered(const pyb::object& stream) : stream_(stream) {
    if (!stream_.is_none()) stream_.attr("__enter__")();
  }
  ~StreamEntered() {
    if (stream_.is_none()) return;
    try {
      stream_.attr("__exit__")(pyb::none(), pyb::none(), pyb::none());
    } catch (const pyb::error_already_set&) {
      // Leaving the scope cannot fail for a scope this call entered; nothing to report.
    }
  }
  StreamEntered(const StreamEntered&) = delete;
  StreamEntered& operator=(const StreamEntered&) = delete;

 private:
  pyb::object stream_;
};

// Arrays pass their address; NumPy scalars their bytes; Python bool / int / float / complex
// pass as bool / int64 / double / complex<double> (NumPy's defaults, as CuPy does): a kernel
// taking an int or a float wants np.int32(...) / np.float32(...).
ops::KernelArg ToArg(const pyb::handle& v, size_t i, const std::string& op) {
  ops::KernelArg a;
  if (pyb::isinstance<GPUArray>(v)) {
    a.array = &v.cast<const GPUArray&>();
    return a;
  }
  auto put = [&a](const auto& value) {
    static_assert(sizeof(value) <= 16);
    std::memcpy(a.bytes.data(), &value, sizeof(value));
    a.size = sizeof(value);
  };
  const pyb::object generic = pyb::module_::import("numpy").attr("generic");
  if (pyb::isinstance(v, generic)) {
    const pyb::object dt = v.attr("dtype");
    const std::string kind = pyb::str(dt.attr("kind"));
    const auto size = dt.attr("itemsize").cast<size_t>();
    if (kind == "O" || kind == "U" || kind == "S" || kind == "M" || kind == "m" || size > 16 ||
        size == 0) {
      Check(TypeError(absl::StrCat(op, ": argument ", i, " is a NumPy ", std::string(pyb::str(dt)),
                                   " scalar, not a number")));
    }
    const auto raw = v.attr("tobytes")().cast<std::string>();
    std::memcpy(a.bytes.data(), raw.data(), raw.size());
    a.size = static_cast<int>(raw.size());
    return a;
  }
  if (pyb::isinstance<pyb::bool_>(v)) {
    put(static_cast<bool>(v.cast<bool>()));
  } else if (pyb::isinstance<pyb::int_>(v)) {
    try {
      put(v.cast<int64_t>());
    } catch (const pyb::cast_error&) {
      Check(OverflowError(absl::StrCat(op, ": argument ", i, " does not fit int64")));
    }
  } else if (pyb::isinstance<pyb::float_>(v)) {
    put(v.cast<double>());
  } else if (PyComplex_Check(v.ptr())) {
    const double c[2] = {PyComplex_RealAsDouble(v.ptr()), PyComplex_ImagAsDouble(v.ptr())};
    put(c);
  } else {
    Check(TypeError(absl::StrCat(op, ": argument ", i, " of type ", TypeName(v),
                                 " is not a GPUArray or a scalar")));
  }
  return a;
}

// The operands of a user kernel call; a value traced by gp.fuse cannot be one.
std::vector<ops::EwOperand> Operands(const pyb::tuple& args, const std::string& kernel) {
  std::vector<ops::EwOperand> operands;
  try {
    for (const pyb::handle& a : args) operands.push_back(Operand(a, kernel));
  } catch (const FuseTrace&) {
    RaiseStatus(NotImplementedError(
        absl::StrCat(kernel,
                     ": user kernels and fused functions cannot be called inside a "
                     "gp.fuse function")));
  }
  return operands;
}

std::string OpName(const PyRawKernel& k) { return absl::StrCat("RawKernel ", k.kernel); }

}  // namespace

void BindJit(pyb::module_& m) {
  pyb::class_<PyRawKernel>(m, "RawKernel", R"doc(
A CUDA C++ kernel compiled by NVRTC for the GPU it runs on (cached in memory and on disk; see
gp.jit.cache_info). `name` is an extern "C" __global__ function of `source`.

    add = gp.RawKernel(r'''
    extern "C" __global__ void add(const float* x, const float* y, float* z, long long n) {
      long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
      if (i < n) z[i] = x[i] + y[i];
    }''', "add")
    add(((n + 255) // 256,), (256,), (x, y, z, n))

Arguments: GPUArrays pass the address of their first element (mind their dtype and strides);
NumPy scalars pass their bytes; Python bool / int / float / complex pass as bool / int64 /
double / complex double, so a kernel parameter of type int or float wants np.int32(...) or
np.float32(...). The launch goes on the arrays' device, on its current stream (or `stream`).
)doc")
      .def(pyb::init([](std::string source, std::string name, std::vector<std::string> options) {
             auto k = std::make_unique<PyRawKernel>();
             k->src.source = std::move(source);
             k->src.name = name;
             k->src.options = std::move(options);
             k->kernel = std::move(name);
             return k;
           }),
           pyb::arg("code"), pyb::arg("name"), pyb::arg("options") = std::vector<std::string>{})
      .def_property_readonly("code", [](const PyRawKernel& k) { return k.src.source; })
      .def_property_readonly("name", [](const PyRawKernel& k) { return k.kernel; })
      .def_property_readonly("options", [](const PyRawKernel& k) { return k.src.options; })
      .def(
          "__call__",
          [](const PyRawKernel& k, const pyb::handle& grid, const pyb::handle& block,
             const pyb::handle& args, int64_t shared_mem, const pyb::object& stream,
             const pyb::object& device) {
            const std::string op = OpName(k);
            ops::KernelDims dims;
            dims.grid = ToDims(grid, "grid", op);
            dims.block = ToDims(block, "block", op);
            dims.shared_bytes = shared_mem;
            if (!pyb::isinstance<pyb::tuple>(args) && !pyb::isinstance<pyb::list>(args)) {
              Check(TypeError(absl::StrCat(op, ": args must be a tuple or list")));
            }
            // A tuple copy: the arrays stay referenced (and the list may change) while the GIL
            // is released below.
            const pyb::tuple held(pyb::reinterpret_borrow<pyb::object>(args));
            std::vector<ops::KernelArg> kargs;
            for (size_t i = 0; i < held.size(); ++i) kargs.push_back(ToArg(held[i], i, op));
            std::optional<Device> dev;
            if (!device.is_none()) dev = ToDevice(device, op);
            if (!stream.is_none()) {
              const pyb::object stream_type = pyb::module_::import("pygpukit._core").attr("Stream");
              if (!pyb::isinstance(stream, stream_type)) {
                Check(TypeError(
                    absl::StrCat(op, ": stream must be a gp.Stream, got ", TypeName(stream))));
              }
              // The launch goes to the stream's device; arrays or `device` elsewhere are refused.
              const Device on = stream.attr("device").cast<Device>();
              if (dev.has_value() && *dev != on) {
                Check(ValueError(absl::StrCat(op, ": stream on ", on.ToString(),
                                              " but device=", dev->ToString())));
              }
              dev = on;
            }
            StreamEntered entered(stream);
            absl::Status st =
                WithoutGil([&] { return ops::LaunchRawKernel(k.src, k.kernel, dims, kargs, dev); });
            Check(st);
          },
          pyb::arg("grid"), pyb::arg("block"), pyb::arg("args"), pyb::kw_only(),
          pyb::arg("shared_mem") = 0, pyb::arg("stream") = pyb::none(),
          pyb::arg("device") = pyb::none(),
          "Launches the kernel: grid and block are ints or tuples of up to 3 ints.")
      .def(
          "compile",
          [](const PyRawKernel& k, std::optional<std::string> arch) {
            absl::StatusOr<std::string> image =
                WithoutGil([&] { return ops::CompileRawKernel(k.src, arch); });
            return pyb::bytes(Unwrap(std::move(image)));
          },
          pyb::arg("arch") = pyb::none(),
          "Compiles without launching (no GPU needed with `arch`, e.g. \"sm_90\") and returns "
          "the cubin; compile errors raise RuntimeError with NVRTC's log.")
      .def("__repr__",
           [](const PyRawKernel& k) { return absl::StrCat("RawKernel(name='", k.kernel, "')"); });

  pyb::class_<ops::UserKernel>(m, "ElementwiseKernel", R"doc(
A user elementwise kernel, in the spirit of CuPy's: C++ statements run per element over typed
parameters, with broadcasting, on both backends (CUDA: NVRTC; CPU: the host C++ compiler, $CXX).

    k = gp.ElementwiseKernel("float32 x, T y", "T z", "z = x * y + T(1);", "axpb")
    z = k(x, y)            # or k(x, y, out=z)

Parameter types are dtype names or placeholders (T, U, ...) bound to the dtype of the first
array passed for them. Arrays must have their parameter's dtype exactly; Python scalars are
converted to it. Values are the dtypes' scalar types (float, double, int32_t, bool,
pygpukit::float16 / bfloat16, complex64 / complex128); names from pygpukit::kernels (Cast,
AddOp, ...) and <cmath> are visible. Several output parameters give a tuple of outputs:

    k = gp.ElementwiseKernel("T x", "T lo, T hi", "lo = x - 1; hi = x + 1;", "span")
    lo, hi = k(x)          # or k(x, lo, hi), or k(x, out=(lo, hi)))doc")
      .def(pyb::init([](const std::string& in_params, const std::string& out_params,
                        const std::string& operation, const std::string& name) {
             return Unwrap(ops::DefineUserKernel(in_params, out_params, operation, name));
           }),
           pyb::arg("in_params"), pyb::arg("out_params"), pyb::arg("operation"),
           pyb::arg("name") = "user_kernel")
      .def_property_readonly("name", [](const ops::UserKernel& k) { return k.name; })
      .def_property_readonly("operation", [](const ops::UserKernel& k) { return k.body; })
      .def(
          "__call__",
          [](const ops::UserKernel& k, const pyb::args& args, const pyb::object& out) {
            // Outputs come positionally after the inputs (as in CuPy) or as out=.
            const size_t nin = k.inputs.size(), nout = k.outputs.size();
            if (args.size() != nin && args.size() != nin + nout) {
              RaiseStatus(TypeError(absl::StrCat(
                  k.name, ": takes ", nin, " inputs (and optionally its ", nout,
                  nout == 1 ? " output" : " outputs", "), got ", args.size(), " arguments")));
            }
            pyb::tuple ins(nin);
            for (size_t i = 0; i < nin; ++i) ins[i] = args[i];
            std::vector<pyb::object> given;
            for (size_t j = nin; j < args.size(); ++j) given.push_back(args[j]);
            if (!out.is_none()) {
              if (!given.empty()) {
                RaiseStatus(TypeError(
                    absl::StrCat(k.name, ": outputs given both as arguments and as out=")));
              }
              if (pyb::isinstance<pyb::tuple>(out) || pyb::isinstance<pyb::list>(out)) {
                for (const pyb::handle& o : out)
                  given.push_back(pyb::reinterpret_borrow<pyb::object>(o));
              } else {
                given.push_back(out);
              }
              if (given.size() != nout) {
                RaiseStatus(TypeError(
                    absl::StrCat(k.name, ": has ", nout, " outputs, out= gives ", given.size())));
              }
            }
            std::vector<ops::EwOperand> operands = Operands(ins, k.name);
            std::vector<GPUArray> outs;
            for (size_t j = 0; j < given.size(); ++j) {
              outs.push_back(
                  AsArray(given[j], absl::StrCat(k.name, " output \"", k.outputs[j].name, "\"")));
            }
            // The first call may run a compiler: other Python threads go on meanwhile.
            std::vector<GPUArray> r =
                Unwrap(WithoutGil([&] { return ops::RunUserKernel(k, operands, outs); }));
            // Given outputs come back as the same objects.
            auto result = [&](size_t j) {
              return given.empty() ? pyb::cast(std::move(r[j])) : given[j];
            };
            if (r.size() == 1) return result(0);
            pyb::tuple t(r.size());
            for (size_t j = 0; j < r.size(); ++j) t[j] = result(j);
            return pyb::object(std::move(t));
          },
          pyb::kw_only(), pyb::arg("out") = pyb::none(),
          "Runs the kernel on arrays / scalars (one per input parameter, then optionally one "
          "array per output parameter); returns the output, or a tuple of them.")
      .def("__repr__", [](const ops::UserKernel& k) {
        return absl::StrCat("ElementwiseKernel(name='", k.name, "')");
      });

  // gp.fuse's traced expressions (python/pygpukit/fusion.py builds the node list).
  pyb::class_<ops::FusedExpr>(m, "_FusedExpr")
      .def(pyb::init([](int inputs, const pyb::list& nodes, std::vector<int> outputs,
                        const std::string& name) {
             static const auto* by_name = [] {
               auto* m = new std::map<std::string, ops::ElementwiseOp>;
#define PGK_EW_NAME(E, n, F, arity, domain, result) (*m)[#n] = ops::ElementwiseOp::k##E;
               PGK_FOR_EACH_ELEMENTWISE_OP(PGK_EW_NAME)
#undef PGK_EW_NAME
               return m;
             }();
             ops::FusedExpr e;
             e.inputs = inputs;
             e.outputs = std::move(outputs);
             e.name = name;
             e.id = ops::NewFusedExprId();
             for (const pyb::handle& node : nodes) {
               auto t = node.cast<pyb::tuple>();
               const std::string op = t[0].cast<std::string>();
               auto it = by_name->find(op);
               if (it == by_name->end()) {
                 RaiseStatus(
                     ValueError(absl::StrCat(name, ": ", op, " is not an elementwise function")));
               }
               ops::FusedNode n{it->second, {}};
               for (const pyb::handle& a : t[1].cast<pyb::list>()) {
                 auto arg = a.cast<pyb::tuple>();
                 ops::FusedArg fa;
                 fa.kind = static_cast<ops::FusedArg::Kind>(arg[0].cast<int>());
                 if (fa.kind == ops::FusedArg::Kind::kConstant) {
                   fa.constant = ToScalar(arg[1]);
                 } else {
                   fa.index = arg[1].cast<int>();
                 }
                 n.args.push_back(std::move(fa));
               }
               e.nodes.push_back(std::move(n));
             }
             return e;
           }),
           pyb::arg("inputs"), pyb::arg("nodes"), pyb::arg("outputs"), pyb::arg("name"))
      .def("__call__", [](const ops::FusedExpr& e, const pyb::args& args) {
        std::vector<ops::EwOperand> operands = Operands(args, e.name);
        return Unwrap(WithoutGil([&] { return ops::RunFused(e, operands); }));
      });
  m.def("_jit_cache_info", [] {
    const JitCacheInfo i = Runtime::Get().jit().info();
    pyb::dict d;
    d["directory"] = i.directory;
    d["disk_usable"] = i.disk_usable;
    d["disk_error"] = i.disk_error;
    d["memory_entries"] = i.memory_entries;
    d["memory_hits"] = i.memory_hits;
    d["disk_hits"] = i.disk_hits;
    d["compiles"] = i.compiles;
    d["disk_writes"] = i.disk_writes;
    d["rejected_entries"] = i.rejected_entries;
    d["compile_seconds"] = i.compile_seconds;
    d["nvrtc_available"] = i.nvrtc_available;
    d["nvrtc_version"] = i.nvrtc_version;
    const HostJitInfo h = HostJitStats();  // gp.ElementwiseKernel / gp.fuse on the CPU backend
    d["host_directory"] = h.directory;
    d["host_compiles"] = h.compiles;
    d["host_disk_hits"] = h.disk_hits;
    d["host_rejected_entries"] = h.rejected_entries;
    d["host_loaded"] = h.loaded;
    d["host_compile_seconds"] = h.compile_seconds;
    return d;
  });
  m.def(
      "_jit_clear_cache",
      [](bool disk) {
        Check(Runtime::Get().jit().Clear(disk));
        Check(HostJitClear(disk));
      },
      pyb::arg("disk") = false);
}

}  // namespace pygpukit::py

// Binding of GPUArray: attributes, operators (dunders call the C++ ops directly, so Python adds
// nothing per op), indexing and host conversion.
#include "array_bindings.h"

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "absl/strings/str_cat.h"
#include "convert.h"

namespace pygpukit::py {
namespace {

pyb::tuple ShapeTuple(const GPUArray& a) {
  pyb::tuple t(a.ndim());
  for (int i = 0; i < a.ndim(); ++i) t[i] = pyb::int_(a.shape()[i]);
  return t;
}

int64_t IntegerIndex(const pyb::handle& k) {
  int overflow = 0;
  pyb::object v = pyb::reinterpret_steal<pyb::object>(PyNumber_Index(k.ptr()));
  if (!v) throw pyb::error_already_set();
  long long i = PyLong_AsLongLongAndOverflow(v.ptr(), &overflow);
  if (overflow != 0) {
    RaiseStatus(IndexError(absl::StrCat("index: index ", std::string(pyb::str(v)),
                                        " is out of bounds (beyond int64)")));
  }
  return i;
}

// An index array on `device`: a GPUArray as is, a NumPy array or a list uploaded (an empty
// list is an empty int64 index, as in NumPy). Integer or (boolean masks) bool; others are
// IndexError.
GPUArray IndexArray(const pyb::handle& k, Device device) {
  if (pyb::isinstance<GPUArray>(k)) return k.cast<GPUArray>();
  pyb::module_ np = pyb::module_::import("numpy");
  pyb::array h = np.attr("asarray")(k);
  // An empty list is an integer index (NumPy's rule); an empty float array is not.
  if (pyb::isinstance<pyb::list>(k) && h.size() == 0) h = np.attr("asarray")(h, "int64");
  const char kind = h.dtype().kind();
  if (kind != 'i' && kind != 'u' && kind != 'b') {
    RaiseStatus(IndexError(
        absl::StrCat("index: arrays used as indices must be of integer (or boolean) type, got ",
                     std::string(pyb::str(h.dtype())))));
  }
  return FromNumpy(h, device, "index");
}

// The items of an index; integer arrays (other than 0-d ones, which are integers) go to
// `arrays`, on `device`.
std::vector<ops::IndexItem> ToIndex(const pyb::handle& key, Device device,
                                    std::vector<GPUArray>& arrays) {
  std::vector<ops::IndexItem> items;
  auto as_array = [&](const pyb::handle& k) {
    ops::IndexItem it;
    GPUArray a = IndexArray(k, device);
    it.kind = a.dtype() == DType::Bool ? ops::IndexItem::Kind::kMask : ops::IndexItem::Kind::kArray;
    it.array = static_cast<int>(arrays.size());
    arrays.push_back(std::move(a));
    return it;
  };
  auto one = [&](const pyb::handle& k) {
    ops::IndexItem it;
    if (k.is_none()) {
      it.kind = ops::IndexItem::Kind::kNewAxis;
    } else if (k.ptr() == Py_Ellipsis) {
      it.kind = ops::IndexItem::Kind::kEllipsis;
    } else if (PySlice_Check(k.ptr())) {
      it.kind = ops::IndexItem::Kind::kSlice;
      auto field = [&](const char* name) -> std::optional<int64_t> {
        pyb::object v = k.attr(name);
        if (v.is_none()) return std::nullopt;
        if (!PyIndex_Check(v.ptr())) {
          throw pyb::type_error("index: slice indices must be integers or None");
        }
        // Bounds beyond int64 clamp, as in NumPy (slices never index out of range).
        Py_ssize_t x = PyNumber_AsSsize_t(v.ptr(), nullptr);
        if (x == -1 && PyErr_Occurred()) throw pyb::error_already_set();
        return static_cast<int64_t>(x);
      };
      it.start = field("start");
      it.stop = field("stop");
      it.step = field("step").value_or(1);
    } else if (PyBool_Check(k.ptr())) {
      it = as_array(k);  // a 0-d mask
    } else if (pyb::isinstance<GPUArray>(k) || pyb::isinstance<pyb::array>(k)) {
      // A 0-d integer array is an integer, as NumPy takes it; others are index arrays.
      const bool zero_d_int =
          pyb::isinstance<GPUArray>(k)
              ? (k.cast<const GPUArray&>().ndim() == 0 &&
                 IsInteger(k.cast<const GPUArray&>().dtype()))
              : (pyb::reinterpret_borrow<pyb::array>(k).ndim() == 0 &&
                 (pyb::reinterpret_borrow<pyb::array>(k).dtype().kind() == 'i' ||
                  pyb::reinterpret_borrow<pyb::array>(k).dtype().kind() == 'u'));
      if (zero_d_int) {
        it.kind = ops::IndexItem::Kind::kInteger;
        it.index = IntegerIndex(k);
      } else {
        it = as_array(k);
      }
    } else if (PyIndex_Check(k.ptr())) {
      it.kind = ops::IndexItem::Kind::kInteger;
      it.index = IntegerIndex(k);
    } else if (pyb::isinstance<pyb::list>(k)) {
      it = as_array(k);
    } else if (pyb::isinstance(k, pyb::module_::import("numpy").attr("bool_"))) {
      // Looked up only here: NumPy bools have no __index__, and the common keys above must not
      // pay for a module lookup on every indexing call. A 0-d mask.
      it = as_array(k);
    } else {
      throw pyb::index_error(absl::StrCat(
          "index: only integers, slices, None, Ellipsis, integer arrays and boolean arrays are "
          "valid indices, "
          "got ",
          std::string(pyb::repr(k))));
    }
    items.push_back(it);
  };
  if (pyb::isinstance<pyb::tuple>(key)) {
    for (pyb::handle k : key) one(k);
  } else {
    one(key);
  }
  return items;
}

pyb::object ScalarToPython(const Scalar& s) {
  switch (s.kind) {
    case ScalarKind::Bool:
      return pyb::bool_(s.b);
    case ScalarKind::Int:
      if (s.above_int64) {
        return pyb::reinterpret_steal<pyb::object>(PyLong_FromUnsignedLongLong(s.u));
      }
      return pyb::int_(s.i);
    case ScalarKind::Float:
      return pyb::float_(s.f);
    case ScalarKind::Complex:
      return pyb::cast(s.c);
  }
  return pyb::none();
}

pyb::object ItemOf(const GPUArray& a) {
  absl::StatusOr<Scalar> s = WithoutGil([&] { return ops::Item(a); });
  return ScalarToPython(Unwrap(std::move(s)));
}

}  // namespace

pyb::object AsTypeOf(const pyb::object& self, const pyb::object& dtype, bool copy) {
  const GPUArray& a = self.cast<const GPUArray&>();
  DType dt = ToDType(dtype, "astype");
  // Array API: copy=False with a matching dtype returns the input array itself.
  if (!copy && dt == a.dtype()) return self;
  return pyb::cast(Unwrap(ops::AsType(a, dt, copy)));
}

const GPUArray* ArrayOrNull(const pyb::handle& obj) {
  pyb::detail::make_caster<GPUArray> caster;
  if (!caster.load(obj, /*convert=*/false)) return nullptr;
  return &pyb::detail::cast_op<const GPUArray&>(caster);
}

const GPUArray& AsArray(const pyb::handle& obj, absl::string_view op) {
  const GPUArray* a = ArrayOrNull(obj);
  if (a == nullptr) {
    throw pyb::type_error(absl::StrCat(op, ": expected a GPUArray, got ",
                                       std::string(pyb::repr(pyb::type::handle_of(obj)))));
  }
  return *a;
}

std::optional<GPUArray> OptionalArray(const pyb::handle& x, absl::string_view op) {
  if (x.is_none()) return std::nullopt;
  return AsArray(x, op);
}

pyb::array ToNumpy(const GPUArray& a, const pyb::object& out_obj, bool blocking) {
  pyb::object dt = NumpyDType(a.dtype());
  std::vector<pyb::ssize_t> shape(a.shape().begin(), a.shape().end());
  if (!blocking && out_obj.is_none()) {
    throw pyb::value_error(
        "to_numpy: blocking=False needs `out` in pinned memory (pygpukit.memory.pinned_empty)");
  }
  pyb::array out;
  if (out_obj.is_none()) {
    // A GPU array of 1 MiB or more lands in pinned memory while results held by the user take
    // at most half the pinned limit (the rest stays for staging and spill): one DMA straight
    // into the result, no staging and no page faults on fresh pages. Otherwise a plain NumPy
    // array, filled through the staged path.
    constexpr int64_t kPinnedMin = int64_t{1} << 20;
    bool made = false;
    PinnedPool* pool = a.device().is_cuda() && a.nbytes() >= kPinnedMin
                           ? Unwrap(Runtime::Get().pinned_pool(a.device().type))
                           : nullptr;
    const PinnedStats ps = pool != nullptr ? pool->stats() : PinnedStats{};
    if (pool != nullptr &&
        (ps.limit_bytes == 0 || ps.allocated_bytes + a.nbytes() <= ps.limit_bytes / 2)) {
      auto pinned = PinnedArray(a.shape(), a.dtype(), a.device().type, "to_numpy");
      if (pinned.ok()) {
        out = *std::move(pinned);
        made = true;
      }
    }
    if (!made) out = pyb::array(pyb::dtype::from_args(dt), shape);
  } else {
    if (!pyb::isinstance<pyb::array>(out_obj)) {
      throw pyb::type_error(absl::StrCat("to_numpy: out must be a NumPy array, got ",
                                         std::string(pyb::repr(pyb::type::handle_of(out_obj)))));
    }
    out = pyb::reinterpret_borrow<pyb::array>(out_obj);
    if (!out.dtype().is(pyb::dtype::from_args(dt)) &&
        !out.dtype().equal(pyb::dtype::from_args(dt))) {
      throw pyb::type_error(absl::StrCat("to_numpy: out has dtype ",
                                         std::string(pyb::str(out.dtype())), ", the array ",
                                         DTypeName(a.dtype())));
    }
    Shape oshape(out.shape(), out.shape() + out.ndim());
    if (oshape != a.shape()) {
      throw pyb::value_error(absl::StrCat("to_numpy: out has shape ", ShapeToString(oshape),
                                          ", the array ", ShapeToString(a.shape())));
    }
    if (!(out.flags() & pyb::array::c_style) || !out.writeable()) {
      throw pyb::value_error("to_numpy: out must be C-contiguous and writeable");
    }
  }
  void* dst = out.mutable_data();
  if (!blocking && a.nbytes() > 0) {
    PinnedPool* pinned = Unwrap(Runtime::Get().pinned_pool(a.device().type));
    if (!pinned->Contains(dst, static_cast<size_t>(a.nbytes()))) {
      throw pyb::value_error(
          "to_numpy: blocking=False needs `out` in pinned memory (pygpukit.memory.pinned_empty); "
          "a pageable destination is only filled by a blocking copy");
    }
  }
  absl::Status s = WithoutGil([&] { return ops::ToHost(a, dst, blocking); });
  Check(s);  // errors are raised with the GIL held
  return out;
}

GPUArray FromNumpy(const pyb::array& arr, Device device, absl::string_view op, bool blocking) {
  pyb::module_ np = pyb::module_::import("numpy");
  // Not ascontiguousarray: it turns 0-d arrays into 1-d ones.
  // C order, and native byte order ('>f8' has the name float64 but not its bytes).
  pyb::object dtype = arr.attr("dtype");
  if (!dtype.attr("isnative").cast<bool>()) dtype = dtype.attr("newbyteorder")("=");
  pyb::array c = np.attr("asarray")(arr, pyb::arg("dtype") = dtype, pyb::arg("order") = "C");
  DType dt = ToDType(c.attr("dtype"), op);
  Shape shape(c.shape(), c.shape() + c.ndim());
  const void* data = c.data();
  absl::StatusOr<GPUArray> r =
      WithoutGil([&] { return ops::FromHost(data, shape, dt, device, blocking); });
  return Unwrap(std::move(r));
}

void BindArray(pyb::module_& m) {
  auto cls = pyb::class_<GPUArray>(m, "GPUArray", R"doc(
An n-dimensional array on a device (a CUDA GPU or the CPU backend).

Create arrays with pygpukit.asarray / zeros / ones / arange ...; operators (+ - * / @) and
indexing run on the array's device. Convert to NumPy with pygpukit.to_numpy(x) or x.get().
)doc");
  cls.def_property_readonly("shape", &ShapeTuple, "Extents of each dimension.")
      .def_property_readonly("dtype", [](const GPUArray& a) { return PyDType{a.dtype()}; })
      .def_property_readonly("device", &GPUArray::device)
      .def_property_readonly("ndim", &GPUArray::ndim)
      .def_property_readonly("size", &GPUArray::size)
      .def_property_readonly("itemsize", &GPUArray::itemsize)
      .def_property_readonly("nbytes", &GPUArray::nbytes)
      .def_property_readonly(
          "strides",
          [](const GPUArray& a) {
            pyb::tuple t(a.ndim());
            for (int i = 0; i < a.ndim(); ++i) t[i] = pyb::int_(a.strides()[i] * a.itemsize());
            return t;
          },
          "Strides in bytes, as in NumPy.")
      .def_property_readonly("is_contiguous", &GPUArray::is_contiguous)
      .def_property_readonly("T", [](const GPUArray& a) { return Unwrap(ops::Transpose(a)); })
      .def_property_readonly("mT",
                             [](const GPUArray& a) { return Unwrap(ops::MatrixTranspose(a)); })
      .def("__len__",
           [](const GPUArray& a) {
             if (a.ndim() == 0) throw pyb::type_error("len() of unsized (0-d) array");
             return a.shape()[0];
           })
      .def("reshape",
           [](const GPUArray& a, pyb::args args) {
             pyb::object shape = args.size() == 1 ? args[0] : pyb::object(args);
             return Unwrap(ops::Reshape(a, ToShape(shape, "reshape")));
           })
      .def(
          "astype",
          [](const pyb::object& self, const pyb::object& dtype, const pyb::handle& copy) {
            return AsTypeOf(self, dtype, BoolArg(copy, "copy", "astype"));
          },
          pyb::arg("dtype"), pyb::arg("copy") = pyb::bool_(true))
      .def("copy", [](const GPUArray& a) { return Unwrap(ops::Copy(a)); })
      .def(
          "get",
          [](const GPUArray& a, const pyb::object& out, const pyb::handle& blocking) {
            return ToNumpy(a, out, BoolArg(blocking, "blocking", "get"));
          },
          pyb::kw_only(), pyb::arg("out") = pyb::none(), pyb::arg("blocking") = pyb::bool_(true),
          "Copies the array to a NumPy array (see pygpukit.to_numpy).")
      .def(
          "to_device",
          [](const GPUArray& a, const pyb::object& device, const pyb::object& stream) {
            if (!stream.is_none()) {
              throw pyb::value_error("to_device: the stream argument is not supported yet");
            }
            Device d = ToDevice(device, "to_device");
            absl::StatusOr<GPUArray> r = WithoutGil([&] { return ops::ToDevice(a, d); });
            return Unwrap(std::move(r));
          },
          pyb::arg("device"), pyb::arg("stream") = pyb::none())
      .def("item", &ItemOf)
      .def("__bool__",
           [](const GPUArray& a) {
             if (a.size() != 1) {
               throw pyb::value_error(
                   "The truth value of an array with more than one element is ambiguous");
             }
             return pyb::bool_(ItemOf(a));
           })
      .def("__float__", [](const GPUArray& a) { return pyb::float_(ItemOf(a)); })
      .def("__int__",
           [](const GPUArray& a) {
             // PyNumber_Long: a bool item must come back as a plain int.
             PyObject* r = PyNumber_Long(ItemOf(a).ptr());
             if (r == nullptr) throw pyb::error_already_set();  // int(nan), int(inf)
             return pyb::reinterpret_steal<pyb::object>(r);
           })
      .def("__complex__",
           [](const GPUArray& a) {
             return pyb::module_::import("builtins").attr("complex")(ItemOf(a));
           })
      .def("__index__",
           [](const GPUArray& a) {
             if (!IsInteger(a.dtype()) || a.ndim() != 0) {
               throw pyb::type_error(absl::StrCat(
                   "only 0-d integer arrays can be converted to an index, got a ",
                   DTypeName(a.dtype()), " array of shape ", ShapeToString(a.shape())));
             }
             return pyb::int_(ItemOf(a));
           })
      .def("__getitem__",
           [](const GPUArray& a, const pyb::object& key) {
             std::vector<GPUArray> arrays;
             std::vector<ops::IndexItem> items = ToIndex(key, a.device(), arrays);
             if (arrays.empty()) return Unwrap(ops::Index(a, items));
             return Unwrap(ops::AdvancedIndex(a, items, arrays));
           })
      .def("__setitem__",
           [](const GPUArray& a, const pyb::object& key, const pyb::object& value) {
             std::vector<GPUArray> arrays;
             std::vector<ops::IndexItem> items = ToIndex(key, a.device(), arrays);
             if (!arrays.empty()) {
               if (pyb::isinstance<GPUArray>(value)) {
                 Check(ops::AdvancedAssign(a, items, arrays, &value.cast<const GPUArray&>(),
                                           nullptr));
               } else if (IsScalar(value)) {
                 const Scalar v = ToScalar(value);
                 Check(ops::AdvancedAssign(a, items, arrays, nullptr, &v));
               } else {
                 throw pyb::type_error(
                     absl::StrCat("setitem: value must be a GPUArray or a Python scalar, got ",
                                  std::string(pyb::repr(pyb::type::handle_of(value)))));
               }
               return;
             }
             GPUArray view = Unwrap(ops::Index(a, items));
             if (pyb::isinstance<GPUArray>(value)) {
               Check(ops::Assign(view, value.cast<const GPUArray&>()));
             } else if (IsScalar(value)) {
               Check(ops::Assign(view, ToScalar(value)));
             } else {
               throw pyb::type_error(
                   absl::StrCat("setitem: value must be a GPUArray or a Python scalar, got ",
                                std::string(pyb::repr(pyb::type::handle_of(value)))));
             }
           })
      .def("__matmul__",
           [](const GPUArray& a, const pyb::object& b) -> pyb::object {
             if (!pyb::isinstance<GPUArray>(b))
               return pyb::reinterpret_borrow<pyb::object>(Py_NotImplemented);
             return pyb::cast(Unwrap(ops::Matmul(a, b.cast<const GPUArray&>())));
           })
      .def("__rmatmul__",
           [](const GPUArray& a, const pyb::object& b) -> pyb::object {
             if (!pyb::isinstance<GPUArray>(b))
               return pyb::reinterpret_borrow<pyb::object>(Py_NotImplemented);
             return pyb::cast(Unwrap(ops::Matmul(b.cast<const GPUArray&>(), a)));
           })
      .def("__pos__", [](const GPUArray& a) { return Unwrap(ops::Positive(a)); })
      .def("__neg__", [](const GPUArray& a) { return Unwrap(ops::Negative(a)); })
      .attr("__array_ufunc__") = pyb::none();

  BindElementwise(m, cls);
  BindReductions(m, cls);
  BindInterop(m, cls);
}

}  // namespace pygpukit::py

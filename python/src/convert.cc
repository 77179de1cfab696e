#include "convert.h"

#include <pybind11/complex.h>
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include "absl/strings/str_cat.h"

namespace pygpukit::py {

pyb::handle TaskRejectedType() {
  // Created once (with the GIL, at module import) and never freed: it lives as long as the
  // module does.
  static PyObject* type = PyErr_NewExceptionWithDoc(
      "pygpukit.scheduler.TaskRejected",
      "Admission control refused the task (the message says why).", PyExc_RuntimeError, nullptr);
  return type;
}

void RaiseStatus(const absl::Status& s) {
  PyObject* type = PyExc_RuntimeError;
  switch (ErrorTypeOf(s)) {
    case ErrorType::kValue:
      type = PyExc_ValueError;
      break;
    case ErrorType::kType:
      type = PyExc_TypeError;
      break;
    case ErrorType::kIndex:
      type = PyExc_IndexError;
      break;
    case ErrorType::kMemory:
      type = PyExc_MemoryError;
      break;
    case ErrorType::kNotImplemented:
      type = PyExc_NotImplementedError;
      break;
    case ErrorType::kOverflow:
      type = PyExc_OverflowError;
      break;
    case ErrorType::kRuntime:
      type = PyExc_RuntimeError;
      break;
    case ErrorType::kTaskRejected:
      type = TaskRejectedType().ptr();
      break;
  }
  PyErr_SetString(type, std::string(s.message()).c_str());
  throw pyb::error_already_set();
}

DType ToDType(const pyb::handle& obj, absl::string_view op) {
  if (pyb::isinstance<PyDType>(obj)) return obj.cast<PyDType>().dtype;
  auto parse = [&](const std::string& name) {
    absl::StatusOr<DType> dt = ParseDType(name);
    if (!dt.ok()) RaiseStatus(TypeError(absl::StrCat(op, ": ", dt.status().message())));
    return *dt;
  };
  if (pyb::isinstance<pyb::str>(obj)) return parse(obj.cast<std::string>());
  // NumPy dtypes, NumPy scalar types, Python types (float -> float64 as in NumPy), ml_dtypes.
  pyb::object np_dtype;
  try {
    np_dtype = pyb::module_::import("numpy").attr("dtype")(obj);
  } catch (pyb::error_already_set&) {
    PyErr_Clear();
    throw pyb::type_error(
        absl::StrCat(op, ": cannot interpret ", std::string(pyb::repr(obj)), " as a dtype"));
  }
  absl::StatusOr<DType> dt = ParseDType(np_dtype.attr("name").cast<std::string>());
  if (!dt.ok()) {
    RaiseStatus(TypeError(absl::StrCat(op, ": unsupported dtype ", std::string(pyb::repr(obj)),
                                       " (NumPy ", std::string(pyb::str(np_dtype)), ")")));
  }
  return *dt;
}

DType ToDTypeOr(const pyb::handle& obj, DType dflt, absl::string_view op) {
  return obj.is_none() ? dflt : ToDType(obj, op);
}

Device ToDevice(const pyb::handle& obj, absl::string_view op) {
  if (obj.is_none()) return Runtime::Get().default_device();
  if (pyb::isinstance<Device>(obj)) return obj.cast<Device>();
  if (pyb::isinstance<pyb::str>(obj)) {
    absl::StatusOr<Device> d = ParseDevice(obj.cast<std::string>());
    if (!d.ok()) RaiseStatus(ValueError(absl::StrCat(op, ": ", d.status().message())));
    return *d;
  }
  throw pyb::type_error(absl::StrCat(op,
                                     ": device must be a pygpukit Device or a string such as "
                                     "'cuda:0' or 'cpu', got ",
                                     std::string(pyb::repr(obj))));
}

Shape ToShape(const pyb::handle& obj, absl::string_view op) {
  Shape shape;
  auto to_int = [&](const pyb::handle& h) -> int64_t {
    if (pyb::isinstance<pyb::bool_>(h) || !PyIndex_Check(h.ptr())) {
      throw pyb::type_error(
          absl::StrCat(op, ": shape entries must be integers, got ", std::string(pyb::repr(h))));
    }
    int overflow = 0;
    pyb::object v = pyb::reinterpret_steal<pyb::object>(PyNumber_Index(h.ptr()));
    if (!v) throw pyb::error_already_set();
    long long x = PyLong_AsLongLongAndOverflow(v.ptr(), &overflow);
    if (overflow != 0) {
      RaiseStatus(
          ValueError(absl::StrCat(op, ": dimension ", std::string(pyb::str(v)), " is too large")));
    }
    return static_cast<int64_t>(x);
  };
  // A 0-d NumPy integer array is one extent; any other array is a sequence of extents.
  const bool zero_d_array =
      (pyb::isinstance<pyb::array>(obj) &&
       pyb::array(pyb::reinterpret_borrow<pyb::array>(obj)).ndim() == 0) ||
      (pyb::isinstance<GPUArray>(obj) && obj.cast<const GPUArray&>().ndim() == 0);
  const bool sequence = pyb::isinstance<pyb::sequence>(obj) && !pyb::isinstance<pyb::str>(obj);
  if (zero_d_array ||
      (!sequence && PyIndex_Check(obj.ptr()) && !pyb::isinstance<pyb::bool_>(obj))) {
    shape.push_back(to_int(obj));
  } else if (pyb::isinstance<pyb::sequence>(obj) && !pyb::isinstance<pyb::str>(obj)) {
    for (pyb::handle h : obj) shape.push_back(to_int(h));
  } else {
    throw pyb::type_error(absl::StrCat(op, ": shape must be an int or a sequence of ints, got ",
                                       std::string(pyb::repr(obj))));
  }
  return shape;
}

bool IsInt(const pyb::handle& obj) {
  return !pyb::isinstance<pyb::bool_>(obj) && PyIndex_Check(obj.ptr());
}

int64_t ToInt(const pyb::handle& obj, absl::string_view what, absl::string_view op) {
  if (!IsInt(obj)) {
    RaiseStatus(
        TypeError(absl::StrCat(op, ": ", what, " must be an integer, got ", TypeName(obj))));
  }
  pyb::object v = pyb::reinterpret_steal<pyb::object>(PyNumber_Index(obj.ptr()));
  if (!v) throw pyb::error_already_set();
  int overflow = 0;
  const long long x = PyLong_AsLongLongAndOverflow(v.ptr(), &overflow);
  if (overflow != 0) {
    RaiseStatus(OverflowError(
        absl::StrCat(op, ": ", what, " ", std::string(pyb::str(v)), " does not fit in int64")));
  }
  return static_cast<int64_t>(x);
}

int64_t IntArg(const pyb::handle& obj, absl::string_view what, absl::string_view op, int64_t lo,
               int64_t hi) {
  const int64_t v = ToInt(obj, what, op);
  if (v < lo || v > hi) {
    RaiseStatus(
        ValueError(absl::StrCat(op, ": ", what, " ", v, " is outside [", lo, ", ", hi, "]")));
  }
  return v;
}

std::optional<std::vector<int64_t>> ToAxes(const pyb::handle& obj, absl::string_view op) {
  if (obj.is_none()) return std::nullopt;
  if (IsInt(obj)) return std::vector<int64_t>{ToInt(obj, "axis", op)};
  if (pyb::isinstance<pyb::tuple>(obj) || pyb::isinstance<pyb::list>(obj)) {
    std::vector<int64_t> axes;
    for (const pyb::handle& a : obj) axes.push_back(ToInt(a, "axes", op));
    return axes;
  }
  RaiseStatus(TypeError(absl::StrCat(
      op, ": axis must be None, an integer or a tuple of integers, got ", TypeName(obj))));
}

std::optional<int64_t> ToAxis(const pyb::handle& obj, absl::string_view op) {
  if (obj.is_none()) return std::nullopt;
  if (!IsInt(obj)) {
    RaiseStatus(
        TypeError(absl::StrCat(op, ": axis must be None or an integer, got ", TypeName(obj))));
  }
  return ToInt(obj, "axis", op);
}

std::vector<GPUArray> ToArrays(const pyb::handle& seq, absl::string_view op) {
  if (!pyb::isinstance<pyb::tuple>(seq) && !pyb::isinstance<pyb::list>(seq)) {
    RaiseStatus(
        TypeError(absl::StrCat(op, ": expected a tuple or list of arrays, got ", TypeName(seq))));
  }
  std::vector<GPUArray> out;
  for (const pyb::handle& h : seq) {
    if (!pyb::isinstance<GPUArray>(h)) {
      RaiseStatus(TypeError(absl::StrCat(op, ": expected arrays, got ", TypeName(h))));
    }
    out.push_back(h.cast<const GPUArray&>());
  }
  return out;
}

bool IsScalar(const pyb::handle& obj) {
  return PyBool_Check(obj.ptr()) || PyLong_Check(obj.ptr()) || PyFloat_Check(obj.ptr()) ||
         PyComplex_Check(obj.ptr());
}

Scalar ToScalar(const pyb::handle& obj) {
  if (PyBool_Check(obj.ptr())) return Scalar::Bool(obj.cast<bool>());
  if (PyLong_Check(obj.ptr())) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(obj.ptr(), &overflow);
    if (overflow > 0) {
      unsigned long long u = PyLong_AsUnsignedLongLong(obj.ptr());
      if (!(u == static_cast<unsigned long long>(-1) && PyErr_Occurred())) return Scalar::UInt(u);
      PyErr_Clear();
    }
    if (overflow != 0) {
      double d = PyLong_AsDouble(obj.ptr());
      if (d == -1.0 && PyErr_Occurred()) {
        PyErr_Clear();
        RaiseStatus(OverflowError(absl::StrCat("Python integer ", std::string(pyb::str(obj)),
                                               " is too large for any dtype")));
      }
      return Scalar::HugeInt(d);
    }
    return Scalar::Int(v);
  }
  if (PyFloat_Check(obj.ptr())) return Scalar::Float(obj.cast<double>());
  if (PyComplex_Check(obj.ptr())) return Scalar::Complex(obj.cast<std::complex<double>>());
  throw pyb::type_error(
      absl::StrCat("expected a Python scalar, got ", std::string(pyb::repr(obj))));
}

pyb::object NumpyDType(DType dt) {
  pyb::module_ np = pyb::module_::import("numpy");
  if (dt == DType::BFloat16 || IsFloat8(dt)) {
    const std::string name(DTypeName(dt));
    try {
      return np.attr("dtype")(pyb::module_::import("ml_dtypes").attr(name.c_str()));
    } catch (pyb::error_already_set&) {
      PyErr_Clear();
      throw pyb::type_error(absl::StrCat("to_numpy: NumPy has no ", name,
                                         "; install ml_dtypes or convert with "
                                         ".astype(pygpukit.float32) first"));
    }
  }
  return np.attr("dtype")(std::string(DTypeName(dt)));
}

bool BoolArg(const pyb::handle& x, absl::string_view name, absl::string_view op) {
  if (PyBool_Check(x.ptr())) return x.ptr() == Py_True;
  if (pyb::isinstance(x, pyb::module_::import("numpy").attr("bool_"))) {
    return PyObject_IsTrue(x.ptr()) == 1;
  }
  throw pyb::type_error(absl::StrCat(op, ": ", name, " must be a bool, got ",
                                     pyb::str(pyb::type::handle_of(x)).cast<std::string>()));
}

std::string StrArg(const pyb::handle& x, absl::string_view name, absl::string_view op) {
  if (!PyUnicode_Check(x.ptr())) {
    RaiseStatus(TypeError(absl::StrCat(op, ": ", name, " must be a str, got ", TypeName(x))));
  }
  return x.cast<std::string>();
}

std::optional<bool> OptionalBoolArg(const pyb::handle& x, absl::string_view name,
                                    absl::string_view op) {
  if (x.is_none()) return std::nullopt;
  if (!PyBool_Check(x.ptr())) {
    RaiseStatus(
        TypeError(absl::StrCat(op, ": ", name, " must be None or a bool, got ", TypeName(x))));
  }
  return x.ptr() == Py_True;
}

double RealArg(const pyb::handle& x, absl::string_view name, absl::string_view op) {
  auto type_name = [&] { return pyb::str(pyb::type::handle_of(x)).cast<std::string>(); };
  // NumPy complex scalars and arrays convert to float silently (dropping the imaginary part).
  bool numpy_complex = false;
  if (!PyType_Check(x.ptr()) && pyb::hasattr(x, "dtype")) {
    pyb::object kind = pyb::getattr(pyb::getattr(x, "dtype"), "kind", pyb::none());
    numpy_complex = pyb::isinstance<pyb::str>(kind) && kind.cast<std::string>() == "c";
  }
  if (PyType_Check(x.ptr()) || PyComplex_Check(x.ptr()) || numpy_complex ||
      !PyNumber_Check(x.ptr())) {
    throw pyb::type_error(
        absl::StrCat(op, ": ", name, " must be a real number, got ", type_name()));
  }
  const double v = PyFloat_AsDouble(x.ptr());
  if (v == -1.0 && PyErr_Occurred()) {
    const bool overflow = PyErr_ExceptionMatches(PyExc_OverflowError);
    PyErr_Clear();
    if (overflow) throw pyb::value_error(absl::StrCat(op, ": ", name, " does not fit a double"));
    throw pyb::type_error(
        absl::StrCat(op, ": ", name, " must be a real number, got ", type_name()));
  }
  return v;
}

bool IsUninitialized(pyb::handle src, const std::type_info& type) {
  pyb::detail::type_info* info = pyb::detail::get_type_info(type);
  if (info == nullptr || !PyObject_TypeCheck(src.ptr(), info->type)) return false;
  auto* inst = reinterpret_cast<pyb::detail::instance*>(src.ptr());
  pyb::detail::value_and_holder vh = inst->get_value_and_holder(info, /*throw_if_missing=*/false);
  // Instances are registered once their C++ object exists (made by __init__ or returned from
  // C++); __new__ alone leaves them unregistered, with no value.
  return !vh || vh.value_ptr() == nullptr || !vh.instance_registered();
}

void RaiseUninitialized(pyb::handle src) {
  const std::string name = TypeName(src);
  throw pyb::type_error(absl::StrCat(name, " object is not initialized (made with ", name,
                                     ".__new__ without __init__); create it with ", name, "(...)"));
}

}  // namespace pygpukit::py

// Binding of the Array API data type functions that need the C++ promotion rules or the formats:
// result_type, can_cast, and the numbers behind finfo / iinfo (python/pygpukit/_dtypes.py wraps
// those in objects).
#include <pybind11/pybind11.h>

#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "array_bindings.h"
#include "convert.h"

namespace pygpukit::py {
namespace {

// A dtype, or the dtype of an array; TypeError for anything else (Python scalars included).
DType DTypeOfArg(const pyb::handle& obj, absl::string_view op) {
  if (pyb::isinstance<GPUArray>(obj)) return obj.cast<const GPUArray&>().dtype();
  if (IsScalar(obj)) {
    RaiseStatus(TypeError(absl::StrCat(op, ": expected a dtype or an array, got the ",
                                       TypeName(obj), " ", std::string(pyb::repr(obj)))));
  }
  return ToDType(obj, op);
}

PyDType ResultType(const pyb::args& args) {
  std::optional<DType> dt;
  std::vector<ScalarKind> scalars;
  for (const pyb::handle& a : args) {
    if (IsScalar(a)) {
      scalars.push_back(ToScalar(a).kind);
      continue;
    }
    const DType d = DTypeOfArg(a, "result_type");
    dt = dt.has_value() ? PromoteTypes(*dt, d) : d;
  }
  if (!dt.has_value()) {
    RaiseStatus(ValueError("result_type: needs at least one array or dtype"));
  }
  // Python scalars are weak (NEP 50): they only raise the kind.
  for (ScalarKind k : scalars) dt = PromoteWithScalar(*dt, k);
  return PyDType{*dt};
}

// Mantissa bits and largest exponent of each floating format (IEEE-style, bfloat16 included;
// float8_e4m3fn's largest value is its own, as it has no infinity).
std::pair<int, int> FloatFormat(DType real) {
  switch (real) {
    case DType::Float8E4M3Fn:
      return {3, 8};
    case DType::Float8E5M2:
      return {2, 15};
    case DType::Float16:
      return {10, 15};
    case DType::BFloat16:
      return {7, 127};
    case DType::Float32:
      return {23, 127};
    default:
      return {52, 1023};
  }
}

pyb::dict FInfo(const pyb::handle& obj) {
  const DType dt = DTypeOfArg(obj, "finfo");
  if (!IsInexact(dt)) {
    RaiseStatus(TypeError(absl::StrCat("finfo: needs a floating or complex dtype, got ",
                                       DTypeName(dt), " (use iinfo for integers)")));
  }
  const DType real = RealOf(dt);
  const auto [mant, emax] = FloatFormat(real);
  pyb::dict d;
  d["bits"] = ItemSize(real) * 8;
  d["eps"] = std::ldexp(1.0, -mant);
  // float8_e4m3fn: the all-ones mantissa of the top exponent is NaN, so 1.75 * 2^8 = 448.
  const double top = real == DType::Float8E4M3Fn ? 1.75 : 2.0 - std::ldexp(1.0, -mant);
  const int emin = real == DType::Float8E4M3Fn ? -6 : 1 - emax;
  d["max"] = std::ldexp(top, emax);
  d["min"] = -std::ldexp(top, emax);
  d["smallest_normal"] = std::ldexp(1.0, emin);
  d["dtype"] = PyDType{real};
  return d;
}

template <typename T>
void Limits(pyb::dict& d) {
  d["min"] = pyb::int_(std::numeric_limits<T>::min());
  d["max"] = pyb::int_(std::numeric_limits<T>::max());
}

pyb::dict IInfo(const pyb::handle& obj) {
  const DType dt = DTypeOfArg(obj, "iinfo");
  pyb::dict d;
  switch (dt) {
    case DType::Int8:
      Limits<int8_t>(d);
      break;
    case DType::Int16:
      Limits<int16_t>(d);
      break;
    case DType::Int32:
      Limits<int32_t>(d);
      break;
    case DType::Int64:
      Limits<int64_t>(d);
      break;
    case DType::UInt8:
      Limits<uint8_t>(d);
      break;
    case DType::UInt16:
      Limits<uint16_t>(d);
      break;
    case DType::UInt32:
      Limits<uint32_t>(d);
      break;
    case DType::UInt64:
      Limits<uint64_t>(d);
      break;
    default:
      RaiseStatus(TypeError(absl::StrCat("iinfo: needs an integer dtype, got ", DTypeName(dt),
                                         IsInexact(dt) ? " (use finfo)" : "")));
  }
  d["bits"] = ItemSize(dt) * 8;
  d["dtype"] = PyDType{dt};
  return d;
}

}  // namespace

void BindDTypes(pyb::module_& m) {
  m.def("result_type", &ResultType,
        "result_type(*arrays_and_dtypes)\n\nThe dtype type promotion gives the arguments "
        "(arrays, dtypes, and Python scalars, which are weak).");
  m.def(
      "can_cast",
      [](const pyb::handle& from, const pyb::handle& to) {
        const DType f = DTypeOfArg(from, "can_cast"), t = ToDType(to, "can_cast");
        return PromoteTypes(f, t) == t;
      },
      pyb::arg("from_"), pyb::arg("to"), pyb::pos_only(),
      "can_cast(from_, to, /)\n\nWhether type promotion turns `from_` (a dtype or an array) "
      "into `to`, i.e. the cast loses nothing.");
  m.def("_finfo", &FInfo);
  m.def("_iinfo", &IInfo);
}

}  // namespace pygpukit::py

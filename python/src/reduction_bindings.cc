// Binding of the reductions and scans (gp.sum ... gp.std, gp.argmax, gp.all, gp.cumulative_sum,
// ...) and of the GPUArray methods that map to them (x.sum(), x.max(axis=0), ...). The C++ op
// layer does all checking; this file only converts the axis and dtype arguments.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "absl/strings/str_cat.h"
#include "array_bindings.h"
#include "convert.h"

namespace pygpukit::py {
namespace {

using ops::ReduceOp;

std::optional<DType> ToOptionalDType(const pyb::handle& obj, absl::string_view op) {
  if (obj.is_none()) return std::nullopt;
  return ToDType(obj, op);
}

// Arguments arrive as Python objects and are converted here, so that a wrong type is a
// TypeError naming the op and the argument (not pybind11's dump of every argument).
GPUArray Run(ReduceOp op, const pyb::handle& xh, const pyb::object& axis, const pyb::object& dtype,
             const pyb::handle& keepdims, double correction) {
  const absl::string_view name = ops::ReduceOpName(op);
  const GPUArray& x = AsArray(xh, name);
  if ((op == ReduceOp::kArgMax || op == ReduceOp::kArgMin) && !axis.is_none() && !IsInt(axis)) {
    RaiseStatus(
        TypeError(absl::StrCat(name, ": axis must be None or an integer, got ", TypeName(axis))));
  }
  ops::ReduceOptions o;
  o.axes = ToAxes(axis, name);
  o.keepdims = BoolArg(keepdims, "keepdims", name);
  o.dtype = ToOptionalDType(dtype, name);
  o.correction = correction;
  return Unwrap(ops::Reduce(op, x, o));
}

GPUArray Cumulative(ReduceOp op, const pyb::handle& x, const pyb::object& axis,
                    const pyb::object& dtype, const pyb::handle& include_initial) {
  const std::string name = absl::StrCat("cumulative_", ops::ReduceOpName(op));
  return Unwrap(ops::CumulativeReduce(op, AsArray(x, name), ToAxis(axis, name),
                                      ToOptionalDType(dtype, name),
                                      BoolArg(include_initial, "include_initial", name)));
}

std::string Doc(absl::string_view signature, absl::string_view what) {
  return absl::StrCat(signature, "\n\n", what);
}

}  // namespace

void BindReductions(pyb::module_& m, pyb::class_<GPUArray>& cls) {
  const auto none = pyb::none();
  // sum / prod: with dtype.
  for (auto [op, what] :
       {std::pair{ReduceOp::kSum, "Sum"}, std::pair{ReduceOp::kProd, "Product"}}) {
    const std::string name(ops::ReduceOpName(op));
    auto fn = [op](const pyb::handle& x, const pyb::object& axis, const pyb::object& dtype,
                   const pyb::handle& keepdims) { return Run(op, x, axis, dtype, keepdims, 0.0); };
    const std::string doc =
        Doc(absl::StrCat(name, "(x, /, *, axis=None, dtype=None, keepdims=False)"),
            absl::StrCat(what,
                         " of the elements over `axis` (an int, a tuple, or None for all). "
                         "Bool and signed integers give int64, unsigned uint64, others "
                         "their own dtype, unless `dtype` is given. Floating values "
                         "accumulate in float64; deterministic."));
    m.def(name.c_str(), fn, pyb::arg("x"), pyb::pos_only(), pyb::kw_only(), pyb::arg("axis") = none,
          pyb::arg("dtype") = none, pyb::arg("keepdims") = pyb::bool_(false), doc.c_str());
    cls.def(name.c_str(), fn, pyb::arg("axis") = none, pyb::arg("dtype") = none,
            pyb::arg("keepdims") = pyb::bool_(false), doc.c_str());
  }
  // mean / max / min / all / any / argmax / argmin: axis and keepdims only.
  const std::pair<ReduceOp, const char*> plain[] = {
      {ReduceOp::kMean, "Arithmetic mean (bool and integers give float32; NaN for no elements)."},
      {ReduceOp::kMax, "Largest element (NaN propagates); ValueError for no elements."},
      {ReduceOp::kMin, "Smallest element (NaN propagates); ValueError for no elements."},
      {ReduceOp::kArgMax,
       "int64 index of the first largest element (a NaN counts as largest) along one axis, or "
       "in the flattened array."},
      {ReduceOp::kArgMin,
       "int64 index of the first smallest element (a NaN counts as smallest) along one axis, "
       "or in the flattened array."},
      {ReduceOp::kAll, "Whether every element is nonzero (True for no elements)."},
      {ReduceOp::kAny, "Whether some element is nonzero (False for no elements)."},
  };
  for (const auto& [op, what] : plain) {
    const std::string name(ops::ReduceOpName(op));
    auto fn = [op](const pyb::handle& x, const pyb::object& axis, const pyb::handle& keepdims) {
      return Run(op, x, axis, pyb::none(), keepdims, 0.0);
    };
    const std::string doc = Doc(absl::StrCat(name, "(x, /, *, axis=None, keepdims=False)"), what);
    m.def(name.c_str(), fn, pyb::arg("x"), pyb::pos_only(), pyb::kw_only(), pyb::arg("axis") = none,
          pyb::arg("keepdims") = pyb::bool_(false), doc.c_str());
    cls.def(name.c_str(), fn, pyb::arg("axis") = none, pyb::arg("keepdims") = pyb::bool_(false),
            doc.c_str());
  }
  // var / std: with correction.
  for (auto [op, what] :
       {std::pair{ReduceOp::kVar, "Variance"}, std::pair{ReduceOp::kStd, "Standard deviation"}}) {
    const std::string name(ops::ReduceOpName(op));
    auto fn = [op](const pyb::handle& x, const pyb::object& axis, const pyb::handle& correction,
                   const pyb::handle& keepdims) {
      const std::string name(ops::ReduceOpName(op));
      return Run(op, x, axis, pyb::none(), keepdims, RealArg(correction, "correction", name));
    };
    const std::string doc =
        Doc(absl::StrCat(name, "(x, /, *, axis=None, correction=0.0, keepdims=False)"),
            absl::StrCat(what,
                         " over `axis`, dividing by N - correction (1 gives the sample "
                         "estimate; NumPy's ddof). Complex input gives a real result; bool "
                         "and integers give float32. One pass (Welford), float64 state."));
    m.def(name.c_str(), fn, pyb::arg("x"), pyb::pos_only(), pyb::kw_only(), pyb::arg("axis") = none,
          pyb::arg("correction") = pyb::float_(0.0), pyb::arg("keepdims") = pyb::bool_(false),
          doc.c_str());
    cls.def(name.c_str(), fn, pyb::arg("axis") = none, pyb::arg("correction") = pyb::float_(0.0),
            pyb::arg("keepdims") = pyb::bool_(false), doc.c_str());
  }
  // cumulative_sum / cumulative_prod.
  for (auto [op, what] :
       {std::pair{ReduceOp::kSum, "sums"}, std::pair{ReduceOp::kProd, "products"}}) {
    const std::string name = absl::StrCat("cumulative_", ops::ReduceOpName(op));
    auto fn = [op](const pyb::handle& x, const pyb::object& axis, const pyb::object& dtype,
                   const pyb::handle& include_initial) {
      return Cumulative(op, x, axis, dtype, include_initial);
    };
    const std::string doc = Doc(
        absl::StrCat(name, "(x, /, *, axis=None, dtype=None, include_initial=False)"),
        absl::StrCat("Running ", what, " along `axis` (required unless x is 1-D), in the dtype ",
                     ops::ReduceOpName(op),
                     " would give. With include_initial the result "
                     "starts with the identity."));
    m.def(name.c_str(), fn, pyb::arg("x"), pyb::pos_only(), pyb::kw_only(), pyb::arg("axis") = none,
          pyb::arg("dtype") = none, pyb::arg("include_initial") = pyb::bool_(false), doc.c_str());
  }
}

}  // namespace pygpukit::py

// Binding of the Array API manipulation, matrix-creation and contraction functions (expand_dims
// ... repeat, take, take_along_axis, diff, eye, linspace, meshgrid, tril, triu, tensordot, vecdot).
// The C++ op layer does the checking; this file converts the Python arguments.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "absl/strings/str_cat.h"
#include "array_bindings.h"
#include "convert.h"

namespace pygpukit::py {
namespace {

pyb::list ToList(const std::vector<GPUArray>& arrays) {
  pyb::list out;
  for (const GPUArray& a : arrays) out.append(pyb::cast(a));
  return out;
}

// Shifts / repetitions: an int or a tuple or list of ints.
std::vector<int64_t> ToInts(const pyb::handle& obj, absl::string_view what, absl::string_view op) {
  if (IsInt(obj)) return {ToInt(obj, what, op)};
  if (!pyb::isinstance<pyb::tuple>(obj) && !pyb::isinstance<pyb::list>(obj)) {
    RaiseStatus(TypeError(absl::StrCat(
        op, ": ", what, " must be an integer or a tuple of integers, got ", TypeName(obj))));
  }
  std::vector<int64_t> out;
  for (const pyb::handle& h : obj) out.push_back(ToInt(h, what, op));
  return out;
}

// diff's prepend / append: an array, or a Python scalar made an array of x's shape with extent 1
// along the axis (in the dtype of x + scalar).
std::optional<GPUArray> DiffOperand(const pyb::object& v, const GPUArray& x, int64_t axis,
                                    absl::string_view what) {
  if (v.is_none()) return std::nullopt;
  if (pyb::isinstance<GPUArray>(v)) return v.cast<GPUArray>();
  if (!IsScalar(v)) {
    RaiseStatus(TypeError(
        absl::StrCat("diff: ", what, " must be an array or a Python scalar, got ", TypeName(v))));
  }
  const Scalar s = ToScalar(v);
  Shape shape = x.shape();
  const int ax = Unwrap(NormalizeAxis(axis, x.ndim(), "diff"));
  shape[ax] = 1;
  // The dtype x + scalar would have (weak scalars, as in every elementwise function).
  const std::optional<DType> dtypes[] = {x.dtype(), std::nullopt};
  const ScalarKind kinds[] = {s.kind, s.kind};
  const DType dt = Unwrap(ops::TypeElementwise(ops::ElementwiseOp::kAdd, dtypes, kinds)).result;
  return Unwrap(ops::Full(shape, s, dt, x.device()));
}

std::string Doc(absl::string_view signature, absl::string_view what) {
  return absl::StrCat(signature, "\n\n", what);
}

}  // namespace

void BindManipulation(pyb::module_& m) {
  const auto none = pyb::none();
  m.def(
      "expand_dims",
      [](const GPUArray& x, const pyb::handle& axis) {
        return Unwrap(ops::ExpandDims(x, ToInt(axis, "axis", "expand_dims")));
      },
      pyb::arg("x"), pyb::pos_only(), pyb::kw_only(), pyb::arg("axis") = 0,
      Doc("expand_dims(x, /, *, axis=0)", "View with a size-1 axis inserted at `axis`.").c_str());
  m.def(
      "squeeze",
      [](const GPUArray& x, const pyb::handle& axis) {
        auto axes = ToAxes(axis, "squeeze");
        return axes.has_value() ? Unwrap(ops::Squeeze(x, absl::MakeConstSpan(*axes)))
                                : Unwrap(ops::Squeeze(x, std::nullopt));
      },
      pyb::arg("x"), pyb::pos_only(), pyb::arg("axis") = none,
      Doc("squeeze(x, /, axis=None)",
          "View without the size-1 axes `axis` (an int or tuple; None: every size-1 axis).")
          .c_str());
  m.def(
      "flip",
      [](const GPUArray& x, const pyb::handle& axis) {
        auto axes = ToAxes(axis, "flip");
        return axes.has_value() ? Unwrap(ops::Flip(x, absl::MakeConstSpan(*axes)))
                                : Unwrap(ops::Flip(x, std::nullopt));
      },
      pyb::arg("x"), pyb::pos_only(), pyb::kw_only(), pyb::arg("axis") = none,
      Doc("flip(x, /, *, axis=None)",
          "View with the element order reversed along `axis` (all axes when None).")
          .c_str());
  m.def(
      "moveaxis",
      [](const GPUArray& x, const pyb::handle& source, const pyb::handle& destination) {
        return Unwrap(ops::MoveAxis(x, ToInts(source, "source", "moveaxis"),
                                    ToInts(destination, "destination", "moveaxis")));
      },
      pyb::arg("x"), pyb::arg("source"), pyb::arg("destination"), pyb::pos_only(),
      Doc("moveaxis(x, source, destination, /)",
          "View with axes `source` moved to `destination`; the others keep their order.")
          .c_str());
  m.def(
      "broadcast_arrays",
      [](const pyb::args& arrays) {
        return ToList(Unwrap(ops::BroadcastArrays(ToArrays(arrays, "broadcast_arrays"))));
      },
      Doc("broadcast_arrays(*arrays)", "Views of the arrays broadcast to their common shape.")
          .c_str());
  m.def(
      "concat",
      [](const pyb::handle& arrays, const pyb::handle& axis) {
        return Unwrap(ops::Concat(ToArrays(arrays, "concat"), ToAxis(axis, "concat")));
      },
      pyb::arg("arrays"), pyb::pos_only(), pyb::kw_only(), pyb::arg("axis") = 0,
      Doc("concat(arrays, /, *, axis=0)",
          "Joins arrays along `axis` (None: their flattened contents), in their promoted dtype.")
          .c_str());
  m.def(
      "stack",
      [](const pyb::handle& arrays, const pyb::handle& axis) {
        return Unwrap(ops::Stack(ToArrays(arrays, "stack"), ToInt(axis, "axis", "stack")));
      },
      pyb::arg("arrays"), pyb::pos_only(), pyb::kw_only(), pyb::arg("axis") = 0,
      Doc("stack(arrays, /, *, axis=0)", "Joins arrays of one shape along a new axis.").c_str());
  m.def(
      "unstack",
      [](const GPUArray& x, const pyb::handle& axis) {
        return pyb::tuple(ToList(Unwrap(ops::Unstack(x, ToInt(axis, "axis", "unstack")))));
      },
      pyb::arg("x"), pyb::pos_only(), pyb::kw_only(), pyb::arg("axis") = 0,
      Doc("unstack(x, /, *, axis=0)", "Tuple of views of the slices of x along `axis`.").c_str());
  m.def(
      "roll",
      [](const GPUArray& x, const pyb::handle& shift, const pyb::handle& axis) {
        const std::vector<int64_t> shifts = ToInts(shift, "shift", "roll");
        auto axes = ToAxes(axis, "roll");
        return axes.has_value() ? Unwrap(ops::Roll(x, shifts, absl::MakeConstSpan(*axes)))
                                : Unwrap(ops::Roll(x, shifts, std::nullopt));
      },
      pyb::arg("x"), pyb::pos_only(), pyb::arg("shift"), pyb::kw_only(), pyb::arg("axis") = none,
      Doc("roll(x, /, shift, *, axis=None)",
          "Elements shifted along `axis` with wrap-around (the flattened array when None).")
          .c_str());
  m.def(
      "tile",
      [](const GPUArray& x, const pyb::handle& repetitions) {
        return Unwrap(ops::Tile(x, ToInts(repetitions, "repetitions", "tile")));
      },
      pyb::arg("x"), pyb::arg("repetitions"), pyb::pos_only(),
      Doc("tile(x, repetitions, /)", "x repeated repetitions[i] times along each axis.").c_str());
  m.def(
      "repeat",
      [](const GPUArray& x, const pyb::handle& repeats, const pyb::handle& axis) {
        if (pyb::isinstance<GPUArray>(repeats)) {
          return Unwrap(
              ops::RepeatEach(x, repeats.cast<const GPUArray&>(), ToAxis(axis, "repeat")));
        }
        return Unwrap(ops::Repeat(x, ToInt(repeats, "repeats", "repeat"), ToAxis(axis, "repeat")));
      },
      pyb::arg("x"), pyb::arg("repeats"), pyb::pos_only(), pyb::kw_only(), pyb::arg("axis") = none,
      Doc("repeat(x, repeats, /, *, axis=None)",
          "Each element repeated `repeats` times (an integer, or an integer array with one count "
          "per element) along `axis` (the flattened array when None).")
          .c_str());
  m.def(
      "take",
      [](const GPUArray& x, const GPUArray& indices, const pyb::handle& axis) {
        return Unwrap(ops::Take(x, indices, ToAxis(axis, "take")));
      },
      pyb::arg("x"), pyb::arg("indices"), pyb::pos_only(), pyb::kw_only(), pyb::arg("axis") = none,
      Doc("take(x, indices, /, *, axis=None)",
          "Elements of x at integer `indices` along `axis` (the flattened array when None); "
          "IndexError for indices out of bounds.")
          .c_str());
  m.def(
      "take_along_axis",
      [](const GPUArray& x, const GPUArray& indices, const pyb::handle& axis) {
        return Unwrap(ops::TakeAlongAxis(x, indices, ToInt(axis, "axis", "take_along_axis")));
      },
      pyb::arg("x"), pyb::arg("indices"), pyb::pos_only(), pyb::kw_only(), pyb::arg("axis") = -1,
      Doc("take_along_axis(x, indices, /, *, axis=-1)",
          "x picked along `axis` at `indices` (one number of dimensions; the other axes "
          "broadcast).")
          .c_str());
  m.def(
      "searchsorted",
      [](const GPUArray& x1, const pyb::handle& x2, const pyb::handle& side,
         const pyb::object& sorter) {
        if (!pyb::isinstance<pyb::str>(side) ||
            (side.cast<std::string>() != "left" && side.cast<std::string>() != "right")) {
          RaiseStatus(ValueError(absl::StrCat("searchsorted: side must be 'left' or 'right', got ",
                                              std::string(pyb::repr(side)))));
        }
        GPUArray values;
        if (pyb::isinstance<GPUArray>(x2)) {
          values = x2.cast<GPUArray>();
        } else if (IsScalar(x2)) {  // a weak scalar: x1's dtype unless of a higher kind
          const Scalar v = ToScalar(x2);
          values = Unwrap(ops::Full({}, v, PromoteWithScalar(x1.dtype(), v.kind), x1.device()));
        } else {
          RaiseStatus(TypeError(absl::StrCat(
              "searchsorted: x2 must be an array or a Python scalar, got ", TypeName(x2))));
        }
        std::optional<GPUArray> order;
        if (!sorter.is_none()) order = AsArray(sorter, "searchsorted");
        return Unwrap(ops::SearchSorted(x1, values, side.cast<std::string>() == "right", order));
      },
      pyb::arg("x1"), pyb::arg("x2"), pyb::pos_only(), pyb::kw_only(), pyb::arg("side") = "left",
      pyb::arg("sorter") = none,
      Doc("searchsorted(x1, x2, /, *, side='left', sorter=None)",
          "Where each element of x2 would go in the sorted 1-D x1 (NaN sorts last): before equal "
          "elements ('left') or after them ('right'); int64.")
          .c_str());
  for (auto [name, arg] : {std::pair{"sort", false}, std::pair{"argsort", true}}) {
    const std::string op = name;
    const bool indices = arg;
    m.def(
        name,
        [op, indices](const GPUArray& x, const pyb::handle& axis, const pyb::handle& descending,
                      const pyb::handle& stable) {
          for (const pyb::handle& flag : {descending, stable}) {
            if (!PyBool_Check(flag.ptr())) {
              RaiseStatus(TypeError(
                  absl::StrCat(op, ": descending and stable must be bools, got ", TypeName(flag))));
            }
          }
          const int64_t ax = ToInt(axis, "axis", op);
          const bool desc = descending.ptr() == Py_True;
          return indices ? Unwrap(ops::ArgSort(x, ax, desc)) : Unwrap(ops::Sort(x, ax, desc));
        },
        pyb::arg("x"), pyb::pos_only(), pyb::kw_only(), pyb::arg("axis") = -1,
        pyb::arg("descending") = false, pyb::arg("stable") = true,
        Doc(absl::StrCat(op, "(x, /, *, axis=-1, descending=False, stable=True)"),
            indices ? "int64 indices that sort x along `axis` (always stable; NaN last, first "
                      "when descending)."
                    : "x sorted along `axis` (always stable; NaN last, first when descending).")
            .c_str());
  }
  m.def(
      "_unique",
      [](const GPUArray& x, bool indices, bool inverse, bool counts) {
        ops::UniqueResult u = Unwrap(ops::Unique(x, indices, inverse, counts));
        auto opt = [](const GPUArray& a) -> pyb::object {
          return a.valid() ? pyb::cast(a) : pyb::object(pyb::none());
        };
        return pyb::make_tuple(u.values, opt(u.indices), opt(u.inverse_indices), opt(u.counts));
      },
      pyb::arg("x"), pyb::arg("indices"), pyb::arg("inverse"), pyb::arg("counts"));
  m.def(
      "nonzero", [](const GPUArray& x) { return pyb::tuple(ToList(Unwrap(ops::Nonzero(x)))); },
      pyb::arg("x"), pyb::pos_only(),
      Doc("nonzero(x, /)",
          "Tuple of int64 index arrays, one per axis, of the nonzero elements in C order.")
          .c_str());
  m.def(
      "count_nonzero",
      [](const GPUArray& x, const pyb::handle& axis, const pyb::handle& keepdims) {
        if (!PyBool_Check(keepdims.ptr())) {
          RaiseStatus(TypeError(
              absl::StrCat("count_nonzero: keepdims must be a bool, got ", TypeName(keepdims))));
        }
        return Unwrap(
            ops::CountNonzero(x, ToAxes(axis, "count_nonzero"), keepdims.ptr() == Py_True));
      },
      pyb::arg("x"), pyb::pos_only(), pyb::kw_only(), pyb::arg("axis") = none,
      pyb::arg("keepdims") = false,
      Doc("count_nonzero(x, /, *, axis=None, keepdims=False)",
          "int64 count of the nonzero elements over `axis` (an int, a tuple, or None for all).")
          .c_str());
  m.def(
      "diff",
      [](const GPUArray& x, const pyb::handle& axis, const pyb::handle& n,
         const pyb::object& prepend, const pyb::object& append) {
        const int64_t ax = ToInt(axis, "axis", "diff");
        if (x.ndim() == 0)
          RaiseStatus(ValueError("diff: needs an array of at least one dimension"));
        return Unwrap(ops::Diff(x, ax, ToInt(n, "n", "diff"),
                                DiffOperand(prepend, x, ax, "prepend"),
                                DiffOperand(append, x, ax, "append")));
      },
      pyb::arg("x"), pyb::pos_only(), pyb::kw_only(), pyb::arg("axis") = -1, pyb::arg("n") = 1,
      pyb::arg("prepend") = none, pyb::arg("append") = none,
      Doc("diff(x, /, *, axis=-1, n=1, prepend=None, append=None)",
          "n-th discrete difference along `axis`; bool arrays give not_equal of neighbours.")
          .c_str());
  m.def(
      "eye",
      [](const pyb::handle& n_rows, const pyb::handle& n_cols, const pyb::handle& k,
         const pyb::handle& dtype, const pyb::handle& device) {
        const int64_t rows = ToInt(n_rows, "n_rows", "eye");
        const int64_t cols = n_cols.is_none() ? rows : ToInt(n_cols, "n_cols", "eye");
        return Unwrap(ops::Eye(rows, cols, ToInt(k, "k", "eye"),
                               ToDTypeOr(dtype, kDefaultFloat, "eye"), ToDevice(device, "eye")));
      },
      pyb::arg("n_rows"), pyb::arg("n_cols") = none, pyb::pos_only(), pyb::kw_only(),
      pyb::arg("k") = 0, pyb::arg("dtype") = none, pyb::arg("device") = none,
      Doc("eye(n_rows, n_cols=None, /, *, k=0, dtype=None, device=None)",
          "Ones on diagonal k, zeros elsewhere (default dtype float32).")
          .c_str());
  m.def(
      "linspace",
      [](const pyb::handle& start, const pyb::handle& stop, const pyb::handle& num,
         const pyb::handle& dtype, const pyb::handle& device, const pyb::handle& endpoint) {
        for (const pyb::handle& v : {start, stop}) {
          if (!IsScalar(v) || PyBool_Check(v.ptr())) {
            RaiseStatus(TypeError(absl::StrCat(
                "linspace: start and stop must be int, float or complex, got ", TypeName(v))));
          }
        }
        const Scalar a = ToScalar(start), b = ToScalar(stop);
        const bool complex = a.kind == ScalarKind::Complex || b.kind == ScalarKind::Complex;
        if (!PyBool_Check(endpoint.ptr())) {
          RaiseStatus(TypeError(
              absl::StrCat("linspace: endpoint must be a bool, got ", TypeName(endpoint))));
        }
        return Unwrap(
            ops::Linspace(a, b, ToInt(num, "num", "linspace"), endpoint.ptr() == Py_True,
                          ToDTypeOr(dtype, complex ? kDefaultComplex : kDefaultFloat, "linspace"),
                          ToDevice(device, "linspace")));
      },
      pyb::arg("start"), pyb::arg("stop"), pyb::pos_only(), pyb::arg("num"), pyb::kw_only(),
      pyb::arg("dtype") = none, pyb::arg("device") = none, pyb::arg("endpoint") = true,
      Doc("linspace(start, stop, /, num, *, dtype=None, device=None, endpoint=True)",
          "`num` evenly spaced values from start to stop (float32, or complex64 for complex "
          "bounds, by default), computed in double precision.")
          .c_str());
  m.def(
      "meshgrid",
      [](const pyb::args& arrays, const pyb::handle& indexing) {
        if (!pyb::isinstance<pyb::str>(indexing)) {
          RaiseStatus(TypeError(
              absl::StrCat("meshgrid: indexing must be 'xy' or 'ij', got ", TypeName(indexing))));
        }
        const std::string mode = indexing.cast<std::string>();
        if (mode != "xy" && mode != "ij") {
          RaiseStatus(ValueError(
              absl::StrCat("meshgrid: indexing must be 'xy' or 'ij', got '", mode, "'")));
        }
        return ToList(Unwrap(ops::Meshgrid(ToArrays(arrays, "meshgrid"), mode == "xy")));
      },
      pyb::arg("indexing") = "xy",
      Doc("meshgrid(*arrays, indexing='xy')",
          "Coordinate arrays of 1-D arrays (new arrays); 'xy' swaps the first two axes.")
          .c_str());
  for (auto [name, fn] : {std::pair{"tril", &ops::Tril}, std::pair{"triu", &ops::Triu}}) {
    const std::string op = name;
    m.def(
        name,
        [op, fn = fn](const GPUArray& x, const pyb::handle& k) {
          return Unwrap(fn(x, ToInt(k, "k", op)));
        },
        pyb::arg("x"), pyb::pos_only(), pyb::kw_only(), pyb::arg("k") = 0,
        Doc(absl::StrCat(op, "(x, /, *, k=0)"),
            op == "tril" ? "Elements above diagonal k of the last two axes set to zero."
                         : "Elements below diagonal k of the last two axes set to zero.")
            .c_str());
  }
  m.def(
      "tensordot",
      [](const GPUArray& x1, const GPUArray& x2, const pyb::handle& axes) {
        std::vector<int64_t> a, b;
        if (IsInt(axes)) {
          const int64_t n = ToInt(axes, "axes", "tensordot");
          if (n < 0 || n > x1.ndim() || n > x2.ndim()) {
            RaiseStatus(ValueError(absl::StrCat("tensordot: axes=", n, " for operands of ",
                                                x1.ndim(), " and ", x2.ndim(), " dimensions")));
          }
          for (int64_t i = 0; i < n; ++i) {
            a.push_back(x1.ndim() - n + i);
            b.push_back(i);
          }
        } else if ((pyb::isinstance<pyb::tuple>(axes) || pyb::isinstance<pyb::list>(axes)) &&
                   pyb::len(axes) == 2) {
          a = ToInts(axes[pyb::int_(0)], "axes", "tensordot");
          b = ToInts(axes[pyb::int_(1)], "axes", "tensordot");
        } else {
          RaiseStatus(TypeError(
              absl::StrCat("tensordot: axes must be an integer or a pair of axis sequences, got ",
                           TypeName(axes))));
        }
        return Unwrap(ops::Tensordot(x1, x2, a, b));
      },
      pyb::arg("x1"), pyb::arg("x2"), pyb::pos_only(), pyb::kw_only(), pyb::arg("axes") = 2,
      Doc("tensordot(x1, x2, /, *, axes=2)",
          "Sum of products over the last `axes` axes of x1 and the first of x2, or over the "
          "pair of axis sequences given.")
          .c_str());
  m.def(
      "vecdot",
      [](const GPUArray& x1, const GPUArray& x2, const pyb::handle& axis) {
        return Unwrap(ops::Vecdot(x1, x2, ToInt(axis, "axis", "vecdot")));
      },
      pyb::arg("x1"), pyb::arg("x2"), pyb::pos_only(), pyb::kw_only(), pyb::arg("axis") = -1,
      Doc("vecdot(x1, x2, /, *, axis=-1)", "sum(conj(x1) * x2) over `axis`.").c_str());
}

}  // namespace pygpukit::py

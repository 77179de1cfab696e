// Binding of the elementwise functions (gp.sin, gp.add, gp.where, gp.clip, ...) and of the
// GPUArray operators that map to them. Every function takes GPUArrays or Python scalars and an
// optional keyword `out`; the C++ op layer does all checking.
#include <pybind11/pybind11.h>

#include "absl/strings/str_cat.h"
#include "array_bindings.h"
#include "convert.h"

namespace pygpukit::py {

// An operand: a GPUArray (referenced, so it must outlive the call) or a Python scalar.
ops::EwOperand Operand(const pyb::handle& obj, absl::string_view op) {
  if (const GPUArray* a = ArrayOrNull(obj)) return ops::EwOperand(*a);
  if (IsScalar(obj)) return ops::EwOperand(ToScalar(obj));
  if (pyb::hasattr(obj, "_pgk_fuse_apply")) throw FuseTrace{};
  RaiseStatus(
      TypeError(absl::StrCat(op, ": expected a GPUArray or a Python scalar, got ", TypeName(obj))));
}

namespace {

using ops::ElementwiseOp;
using ops::EwOperand;

// Runs `f` (an elementwise function's call), or, when an operand is a value being traced by
// gp.fuse (Operand throws FuseTrace: no cost on the normal path), records the call on it.
template <typename F>
pyb::object RunOrTrace(const char* name, std::initializer_list<pyb::handle> args,
                       const pyb::object& out, F&& f) {
  try {
    return pyb::cast(f());
  } catch (const FuseTrace&) {
    if (!out.is_none()) {
      RaiseStatus(NotImplementedError(
          absl::StrCat(name, ": out= cannot be used inside a gp.fuse function")));
    }
    pyb::tuple t(args.size());
    size_t i = 0;
    for (const pyb::handle& a : args) t[i++] = pyb::reinterpret_borrow<pyb::object>(a);
    for (const pyb::handle& a : args) {
      if (pyb::hasattr(a, "_pgk_fuse_apply")) return a.attr("_pgk_fuse_apply")(name, *t);
    }
    throw;
  }
}

const GPUArray* OutOf(const pyb::object& out, absl::string_view op) {
  if (out.is_none()) return nullptr;
  return &AsArray(out, op);
}

// a op other for the operator dunders: NotImplemented for operands that are neither arrays nor
// Python scalars, so Python can try the reflected operation (and then raise TypeError).
pyb::object BinaryOperator(ElementwiseOp op, const GPUArray& a, const pyb::object& other,
                           bool reflected) {
  const GPUArray* b = ArrayOrNull(other);
  if (b == nullptr && !IsScalar(other)) {
    return pyb::reinterpret_borrow<pyb::object>(Py_NotImplemented);
  }
  EwOperand x(a), y = b != nullptr ? EwOperand(*b) : Operand(other, ops::ElementwiseOpName(op));
  return pyb::cast(Unwrap(reflected ? ops::Binary(op, y, x) : ops::Binary(op, x, y)));
}

// a op= other: computed into a itself (its dtype must hold the result: same kind or higher).
pyb::object InPlaceOperator(ElementwiseOp op, const pyb::object& self, const pyb::object& other) {
  if (ArrayOrNull(other) == nullptr && !IsScalar(other)) {
    return pyb::reinterpret_borrow<pyb::object>(Py_NotImplemented);
  }
  const GPUArray& a = self.cast<const GPUArray&>();
  Unwrap(ops::Binary(op, EwOperand(a), Operand(other, ops::ElementwiseOpName(op)), &a));
  return self;
}

// ---- operator slots ----
// `a + b` on a pybind11 class runs Python's generic slot: a lookup of __add__ on the type, a
// bound call, then pybind11's dispatcher (argument loading, overload resolution). A tiny op's
// whole cost is a few microseconds, most of it the driver's launch, so the binding's share
// matters: the binary operators get direct slots that do what those methods do.

// Runs `f` (returning a new reference), turning C++ exceptions into the Python error pybind11
// would raise for them.
template <typename F>
PyObject* CallingPython(F&& f) {
  try {
    return f();
  } catch (pyb::error_already_set& e) {
    e.restore();
  } catch (pyb::builtin_exception& e) {
    e.set_error();
  } catch (const std::bad_alloc&) {
    PyErr_SetString(PyExc_MemoryError, "out of host memory");
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  } catch (...) {
    PyErr_SetString(PyExc_RuntimeError, "unknown C++ exception");
  }
  return nullptr;
}

// a op b for the number protocol: Python calls the slot of either operand's type, with the
// operands in their written order; whichever is the array decides (b's: the reflected form).
template <ElementwiseOp kOp>
PyObject* BinarySlot(PyObject* a, PyObject* b) {
  return CallingPython([&] {
    if (const GPUArray* x = ArrayOrNull(a)) {
      return BinaryOperator(kOp, *x, pyb::reinterpret_borrow<pyb::object>(b), false)
          .release()
          .ptr();
    }
    const GPUArray* y = ArrayOrNull(b);
    if (y == nullptr)
      return pyb::reinterpret_borrow<pyb::object>(Py_NotImplemented).release().ptr();
    return BinaryOperator(kOp, *y, pyb::reinterpret_borrow<pyb::object>(a), true).release().ptr();
  });
}

void InstallOperatorSlots(PyTypeObject* type) {
  PyNumberMethods* n = type->tp_as_number;
  n->nb_add = BinarySlot<ElementwiseOp::kAdd>;
  n->nb_subtract = BinarySlot<ElementwiseOp::kSubtract>;
  n->nb_multiply = BinarySlot<ElementwiseOp::kMultiply>;
  n->nb_true_divide = BinarySlot<ElementwiseOp::kDivide>;
  n->nb_floor_divide = BinarySlot<ElementwiseOp::kFloorDivide>;
  n->nb_remainder = BinarySlot<ElementwiseOp::kRemainder>;
  n->nb_and = BinarySlot<ElementwiseOp::kBitwiseAnd>;
  n->nb_or = BinarySlot<ElementwiseOp::kBitwiseOr>;
  n->nb_xor = BinarySlot<ElementwiseOp::kBitwiseXor>;
  n->nb_lshift = BinarySlot<ElementwiseOp::kBitwiseLeftShift>;
  n->nb_rshift = BinarySlot<ElementwiseOp::kBitwiseRightShift>;
  PyType_Modified(type);
}

std::string Doc(absl::string_view name, int arity) {
  const char* args = arity == 1 ? "x" : arity == 2 ? "x1, x2" : "condition, x1, x2";
  return absl::StrCat(name, "(", args, ", /, *, out=None)\n\nThe Array API function `", name,
                      "` elementwise, with broadcasting and type promotion. Operands are "
                      "GPUArrays or Python scalars; `out` receives the result when given.");
}

}  // namespace

void BindElementwise(pyb::module_& m, pyb::class_<GPUArray>& cls) {
#define PGK_EW_BIND(E, name, F, arity, domain, result)                                         \
  if constexpr (arity == 1) {                                                                  \
    m.def(                                                                                     \
        #name,                                                                                 \
        [](const pyb::object& x, const pyb::object& out) {                                     \
          return RunOrTrace(#name, {x}, out, [&] {                                             \
            const EwOperand operands[] = {Operand(x, #name)};                                  \
            return Unwrap(ops::Elementwise(ElementwiseOp::k##E, operands, OutOf(out, #name))); \
          });                                                                                  \
        },                                                                                     \
        pyb::arg("x"), pyb::pos_only(), pyb::kw_only(), pyb::arg("out") = pyb::none(),         \
        Doc(#name, 1).c_str());                                                                \
  } else if constexpr (arity == 2) {                                                           \
    m.def(                                                                                     \
        #name,                                                                                 \
        [](const pyb::object& x1, const pyb::object& x2, const pyb::object& out) {             \
          return RunOrTrace(#name, {x1, x2}, out, [&] {                                        \
            const EwOperand operands[] = {Operand(x1, #name), Operand(x2, #name)};             \
            return Unwrap(ops::Elementwise(ElementwiseOp::k##E, operands, OutOf(out, #name))); \
          });                                                                                  \
        },                                                                                     \
        pyb::arg("x1"), pyb::arg("x2"), pyb::pos_only(), pyb::kw_only(),                       \
        pyb::arg("out") = pyb::none(), Doc(#name, 2).c_str());                                 \
  }
  PGK_FOR_EACH_ELEMENTWISE_OP(PGK_EW_BIND)
#undef PGK_EW_BIND

  m.def(
      "positive",
      [](const pyb::handle& x) { return Unwrap(ops::Positive(AsArray(x, "positive"))); },
      pyb::arg("x"), pyb::pos_only(), "positive(x, /)\n\nA copy of x (numeric dtypes).");
  m.def(
      "where",
      [](const pyb::object& c, const pyb::object& x1, const pyb::object& x2,
         const pyb::object& out) {
        return RunOrTrace("where", {c, x1, x2}, out, [&] {
          return Unwrap(ops::Where(Operand(c, "where"), Operand(x1, "where"), Operand(x2, "where"),
                                   OutOf(out, "where")));
        });
      },
      pyb::arg("condition"), pyb::arg("x1"), pyb::arg("x2"), pyb::pos_only(), pyb::kw_only(),
      pyb::arg("out") = pyb::none(),
      "where(condition, x1, x2, /, *, out=None)\n\nx1 where condition is true, else x2 "
      "(condition converted to bool; x1 and x2 promote together and broadcast).");
  m.def(
      "clip",
      [](const pyb::object& x, const pyb::object& min, const pyb::object& max,
         const pyb::object& out) {
        if (pyb::hasattr(x, "_pgk_fuse_apply")) {
          RaiseStatus(
              NotImplementedError("clip cannot be fused (it keeps x's dtype and clamps "
                                  "integer bounds, which fused typing does not)"));
        }
        std::optional<EwOperand> lo, hi;
        if (!min.is_none()) lo = Operand(min, "clip");
        if (!max.is_none()) hi = Operand(max, "clip");
        return Unwrap(ops::Clip(AsArray(x, "clip"), lo, hi, OutOf(out, "clip")));
      },
      pyb::arg("x"), pyb::pos_only(), pyb::arg("min") = pyb::none(), pyb::arg("max") = pyb::none(),
      pyb::kw_only(), pyb::arg("out") = pyb::none(),
      "clip(x, /, min=None, max=None, *, out=None)\n\nminimum(maximum(x, min), max) in x's "
      "dtype; an absent bound does not clip; NaN propagates.");

  struct OpDef {
    const char *name, *rname, *iname;
    ElementwiseOp op;
  };
  const OpDef arithmetic[] = {
      OpDef{"__add__", "__radd__", "__iadd__", ElementwiseOp::kAdd},
      OpDef{"__sub__", "__rsub__", "__isub__", ElementwiseOp::kSubtract},
      OpDef{"__mul__", "__rmul__", "__imul__", ElementwiseOp::kMultiply},
      OpDef{"__truediv__", "__rtruediv__", "__itruediv__", ElementwiseOp::kDivide},
      OpDef{"__floordiv__", "__rfloordiv__", "__ifloordiv__", ElementwiseOp::kFloorDivide},
      OpDef{"__mod__", "__rmod__", "__imod__", ElementwiseOp::kRemainder},
      OpDef{"__pow__", "__rpow__", "__ipow__", ElementwiseOp::kPow},
      OpDef{"__and__", "__rand__", "__iand__", ElementwiseOp::kBitwiseAnd},
      OpDef{"__or__", "__ror__", "__ior__", ElementwiseOp::kBitwiseOr},
      OpDef{"__xor__", "__rxor__", "__ixor__", ElementwiseOp::kBitwiseXor},
      OpDef{"__lshift__", "__rlshift__", "__ilshift__", ElementwiseOp::kBitwiseLeftShift},
      OpDef{"__rshift__", "__rrshift__", "__irshift__", ElementwiseOp::kBitwiseRightShift},
  };
  for (OpDef d : arithmetic) {
    const ElementwiseOp op = d.op;
    cls.def(d.name, [op](const GPUArray& a, const pyb::object& o) {
      return BinaryOperator(op, a, o, false);
    });
    cls.def(d.rname, [op](const GPUArray& a, const pyb::object& o) {
      return BinaryOperator(op, a, o, true);
    });
    cls.def(d.iname, [op](const pyb::object& self, const pyb::object& o) {
      return InPlaceOperator(op, self, o);
    });
  }
  // The methods above stay for explicit calls (x.__add__(y)); the operators themselves call
  // direct slots (defining the methods made Python install its generic ones).
  InstallOperatorSlots(reinterpret_cast<PyTypeObject*>(cls.ptr()));
  for (OpDef d : {
           OpDef{"__lt__", nullptr, nullptr, ElementwiseOp::kLess},
           OpDef{"__le__", nullptr, nullptr, ElementwiseOp::kLessEqual},
           OpDef{"__gt__", nullptr, nullptr, ElementwiseOp::kGreater},
           OpDef{"__ge__", nullptr, nullptr, ElementwiseOp::kGreaterEqual},
           OpDef{"__eq__", nullptr, nullptr, ElementwiseOp::kEqual},
           OpDef{"__ne__", nullptr, nullptr, ElementwiseOp::kNotEqual},
       }) {
    const ElementwiseOp op = d.op;
    cls.def(d.name, [op](const GPUArray& a, const pyb::object& o) {
      return BinaryOperator(op, a, o, false);
    });
  }
  cls.def("__abs__", [](const GPUArray& a) { return Unwrap(ops::Unary(ElementwiseOp::kAbs, a)); });
  cls.def("__invert__",
          [](const GPUArray& a) { return Unwrap(ops::Unary(ElementwiseOp::kBitwiseInvert, a)); });
  // Arrays compare elementwise, so they cannot be dict keys (as NumPy's).
  cls.attr("__hash__") = pyb::none();
}

}  // namespace pygpukit::py

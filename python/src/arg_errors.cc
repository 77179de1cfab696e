// Concise argument errors. When no overload of a bound function accepts its arguments,
// pybind11 raises "f(): incompatible function arguments. The following argument types are
// supported: ... Invoked with: <repr of every argument>": the repr of a large array reads it
// back from the device, and the message never says which argument was wrong. Every bound
// function, method and constructor is wrapped in a small callable that forwards the call
// unchanged and, only on that failure, raises a TypeError of its own: the op, what is wrong
// (an unknown keyword, a missing or surplus argument, a value of the wrong class) and the
// signature, with the types of the values given, never their contents. Operators are left
// alone (pybind11 returns NotImplemented for them and Python reports the operand types).
#include <Python.h>
#include <pybind11/pybind11.h>

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "convert.h"

namespace pygpukit::py {
namespace {

#ifdef Py_TPFLAGS_HAVE_VECTORCALL
constexpr unsigned long kVectorcallFlag = Py_TPFLAGS_HAVE_VECTORCALL;
#else
constexpr unsigned long kVectorcallFlag = _Py_TPFLAGS_HAVE_VECTORCALL;
#endif

struct Wrapper {
  PyObject_HEAD PyObject* wrapped;
  vectorcallfunc vectorcall;
};

// One declared parameter of a pybind11 signature: "x: pygpukit._core.GPUArray = None".
struct Param {
  std::string name, type;
  bool has_default = false;
  bool keyword_only = false, positional_only = false, star = false, double_star = false;
};

// Splits "(a: T, /, *, b: list[int] = [1, 2]) -> R" into its parameters.
std::vector<Param> ParseSignature(absl::string_view sig) {
  std::vector<Param> out;
  const size_t open = sig.find('(');
  size_t close = sig.rfind(") -> ");
  if (close == absl::string_view::npos) close = sig.rfind(')');
  if (open == absl::string_view::npos || close == absl::string_view::npos || close <= open) {
    return out;
  }
  absl::string_view body = sig.substr(open + 1, close - open - 1);
  std::vector<std::string> parts;
  int depth = 0;
  std::string cur;
  for (char c : body) {
    if (c == '(' || c == '[' || c == '{') ++depth;
    if (c == ')' || c == ']' || c == '}') --depth;
    if (c == ',' && depth == 0) {
      parts.push_back(cur);
      cur.clear();
      continue;
    }
    cur += c;
  }
  if (!cur.empty()) parts.push_back(cur);
  bool keyword_only = false;
  for (std::string& raw : parts) {
    absl::string_view p = absl::StripAsciiWhitespace(raw);
    if (p == "/") {
      for (Param& q : out) q.positional_only = true;
      continue;
    }
    if (p == "*") {
      keyword_only = true;
      continue;
    }
    Param q;
    q.keyword_only = keyword_only;
    if (absl::ConsumePrefix(&p, "**")) {
      q.double_star = true;
    } else if (absl::ConsumePrefix(&p, "*")) {
      q.star = true;
      keyword_only = true;
    }
    const size_t eq = p.find(" = ");
    q.has_default = eq != absl::string_view::npos;
    absl::string_view decl = p.substr(0, eq);
    const size_t colon = decl.find(": ");
    q.name = std::string(decl.substr(0, colon));
    if (colon != absl::string_view::npos) q.type = std::string(decl.substr(colon + 2));
    out.push_back(std::move(q));
  }
  return out;
}

// "f(a, /, *, b=None)": the declared names and defaults, without pybind11's type names.
std::string Plain(absl::string_view name, absl::string_view sig) {
  std::vector<std::string> parts;
  std::string text(sig.substr(sig.find('(')));
  const size_t arrow = text.rfind(" -> ");
  if (arrow != std::string::npos) text.resize(arrow);
  std::vector<Param> params = ParseSignature(std::string(sig));
  bool slash = false, star = false;
  for (size_t i = 0; i < params.size(); ++i) {
    const Param& p = params[i];
    if (!p.positional_only && !slash && i > 0 && params[i - 1].positional_only) {
      parts.push_back("/");
      slash = true;
    }
    if (p.keyword_only && !p.star && !p.double_star && !star) {
      parts.push_back("*");
      star = true;
    }
    std::string s = p.double_star ? "**" : p.star ? "*" : "";
    absl::StrAppend(&s, p.name);
    if (p.star) star = true;
    if (p.has_default) {
      const size_t eq = text.find(absl::StrCat(p.name, ": "));
      const size_t d = eq == std::string::npos ? std::string::npos : text.find(" = ", eq);
      if (d != std::string::npos) {
        size_t end = d + 3;
        int depth = 0;
        while (end < text.size() && !(depth == 0 && (text[end] == ',' || text[end] == ')'))) {
          if (text[end] == '(' || text[end] == '[') ++depth;
          if (text[end] == ')' || text[end] == ']') --depth;
          ++end;
        }
        absl::StrAppend(&s, "=", text.substr(d + 3, end - d - 3));
      }
    }
    parts.push_back(std::move(s));
  }
  if (!params.empty() && params.back().positional_only && !slash) parts.push_back("/");
  return absl::StrCat(name, "(", absl::StrJoin(parts, ", "), ")");
}

std::string TypeOf(PyObject* o) { return Py_TYPE(o)->tp_name; }

// Whether `o` is of the class a pybind11 annotation names ("pygpukit._core.GPUArray").
bool MatchesClass(PyObject* o, const std::string& type) {
  if (type == "str") return PyUnicode_Check(o);
  if (type == "bool") return PyBool_Check(o);
  if (absl::StartsWith(type, "typing.SupportsInt")) return PyIndex_Check(o) && !PyBool_Check(o);
  if (absl::StartsWith(type, "typing.SupportsFloat")) {
    return (PyFloat_Check(o) || PyIndex_Check(o)) && !PyBool_Check(o);
  }
  if (!absl::StartsWith(type, "pygpukit.")) return true;  // object, lists, ...: not checked
  const std::string last = type.substr(type.rfind('.') + 1);
  for (PyTypeObject* t = Py_TYPE(o); t != nullptr; t = t->tp_base) {
    absl::string_view n = t->tp_name;
    if (n == last || absl::EndsWith(n, absl::StrCat(".", last))) return true;
  }
  return false;
}

// "a GPUArray", "an integer", ... for the message.
std::string Expected(const std::string& type) {
  if (type == "str") return "a str";
  if (type == "bool") return "a bool";
  if (absl::StartsWith(type, "typing.SupportsInt")) return "an integer";
  if (absl::StartsWith(type, "typing.SupportsFloat")) return "a real number";
  return absl::StrCat("a ", type.substr(type.rfind('.') + 1));
}

// What is wrong with a call that matched no overload, from the first overload's signature.
std::string Problem(const std::vector<Param>& params, PyObject* const* args, size_t nargs,
                    PyObject* kwnames, bool is_method) {
  std::vector<bool> given(params.size(), false);
  size_t positional = 0;
  for (const Param& p : params) {
    if (!p.keyword_only && !p.star && !p.double_star) ++positional;
  }
  const bool has_star = std::any_of(params.begin(), params.end(), [](auto& p) { return p.star; });
  const bool has_kwargs =
      std::any_of(params.begin(), params.end(), [](auto& p) { return p.double_star; });
  const size_t self = is_method ? 1 : 0;
  if (nargs > positional && !has_star) {
    return absl::StrCat("takes ", positional - self, " positional argument",
                        positional - self == 1 ? "" : "s", " but ", nargs - self, " were given");
  }
  for (size_t i = 0; i < nargs && i < params.size(); ++i) {
    given[i] = true;
    if (!MatchesClass(args[i], params[i].type) && i >= self) {
      return absl::StrCat(params[i].name, " must be ", Expected(params[i].type), ", got ",
                          TypeOf(args[i]));
    }
  }
  const Py_ssize_t nkw = kwnames != nullptr ? PyTuple_GET_SIZE(kwnames) : 0;
  for (Py_ssize_t k = 0; k < nkw; ++k) {
    const char* key = PyUnicode_AsUTF8(PyTuple_GET_ITEM(kwnames, k));
    if (key == nullptr) {
      PyErr_Clear();
      continue;
    }
    size_t i = 0;
    while (i < params.size() && !(params[i].name == key && !params[i].star &&
                                  !params[i].double_star && !params[i].positional_only)) {
      ++i;
    }
    if (i == params.size()) {
      if (has_kwargs) continue;
      return absl::StrCat("got an unexpected keyword argument '", key, "'");
    }
    if (given[i]) return absl::StrCat("got multiple values for argument '", key, "'");
    given[i] = true;
    PyObject* v = args[nargs + k];
    if (!MatchesClass(v, params[i].type)) {
      return absl::StrCat(key, " must be ", Expected(params[i].type), ", got ", TypeOf(v));
    }
  }
  for (size_t i = self; i < params.size(); ++i) {
    const Param& p = params[i];
    if (!given[i] && !p.has_default && !p.star && !p.double_star) {
      return absl::StrCat("missing required argument '", p.name, "'");
    }
  }
  std::vector<std::string> types;
  for (size_t i = self; i < nargs; ++i) types.push_back(TypeOf(args[i]));
  for (Py_ssize_t k = 0; k < nkw; ++k) {
    types.push_back(
        absl::StrCat(PyUnicode_AsUTF8(PyTuple_GET_ITEM(kwnames, k)), "=", TypeOf(args[nargs + k])));
  }
  return absl::StrCat("the arguments (", absl::StrJoin(types, ", "), ") do not match");
}

PyObject* Call(PyObject* self, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  auto* w = reinterpret_cast<Wrapper*>(self);
  PyObject* result = PyObject_Vectorcall(w->wrapped, args, nargsf, kwnames);
  if (result != nullptr || !PyErr_ExceptionMatches(PyExc_TypeError)) return result;
  // The failure path only from here on.
  PyObject *type, *value, *trace;
  PyErr_Fetch(&type, &value, &trace);
  PyErr_NormalizeException(&type, &value, &trace);
  PyObject* text = value != nullptr ? PyObject_Str(value) : nullptr;
  const char* utf8 = text != nullptr ? PyUnicode_AsUTF8(text) : nullptr;
  const std::string msg = utf8 != nullptr ? utf8 : "";
  Py_XDECREF(text);
  PyErr_Clear();
  const size_t colon = msg.find("(): incompatible ");
  if (colon == std::string::npos || msg.find('\n') < colon) {
    PyErr_Restore(type, value, trace);
    return nullptr;
  }
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(trace);
  const bool ctor = absl::StrContains(msg, "incompatible constructor arguments");
  std::string op = msg.substr(0, colon);
  // The first overload's signature: "    1. (x: ..., ...) -> ..." (constructors: "Name(...)").
  std::string sig;
  for (absl::string_view line : absl::StrSplit(msg, '\n')) {
    absl::string_view l = absl::StripLeadingAsciiWhitespace(line);
    if (absl::ConsumePrefix(&l, "1. ")) {
      sig = std::string(l);
      break;
    }
  }
  const size_t nargs = PyVectorcall_NARGS(nargsf);
  if (ctor) {  // "Name(a: T, ...)": a constructor's signature lacks self; the call has it
    const size_t paren = sig.find('(');
    if (paren != std::string::npos) {
      op = sig.substr(0, paren);
      op = op.substr(op.rfind('.') + 1);  // "pygpukit._core.Event" -> "Event"
      sig = absl::StrCat("(self: object", sig[paren + 1] == ')' ? "" : ", ", sig.substr(paren + 1));
    }
  }
  const std::vector<Param> params = ParseSignature(sig);
  const bool is_method = !params.empty() && params[0].name == "self";
  std::string problem = Problem(params, args, nargs, kwnames, is_method);
  std::string plain = Plain(op, sig);
  if (is_method) absl::StrReplaceAll({{"(self, ", "("}, {"(self)", "()"}}, &plain);
  PyErr_SetString(PyExc_TypeError, absl::StrCat(op, ": ", problem, " (", plain, ")").c_str());
  return nullptr;
}

void Dealloc(PyObject* self) {
  auto* w = reinterpret_cast<Wrapper*>(self);
  PyObject_GC_UnTrack(self);
  Py_CLEAR(w->wrapped);
  PyObject_GC_Del(self);
}

int Traverse(PyObject* self, visitproc visit, void* arg) {
  Py_VISIT(reinterpret_cast<Wrapper*>(self)->wrapped);
  return 0;
}

// Everything but the call is the wrapped function's: name, doc, signature text, module.
PyObject* GetAttr(PyObject* self, PyObject* name) {
  return PyObject_GetAttr(reinterpret_cast<Wrapper*>(self)->wrapped, name);
}

PyObject* Repr(PyObject* self) { return PyObject_Repr(reinterpret_cast<Wrapper*>(self)->wrapped); }

PyTypeObject* WrapperType() {
  static PyTypeObject* type = [] {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
    static PyTypeObject t = {PyVarObject_HEAD_INIT(nullptr, 0)};
#pragma GCC diagnostic pop
    t.tp_name = "pygpukit._core.builtin_function";
    t.tp_basicsize = sizeof(Wrapper);
    t.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | kVectorcallFlag;
    t.tp_vectorcall_offset = offsetof(Wrapper, vectorcall);
    t.tp_call = PyVectorcall_Call;
    t.tp_dealloc = Dealloc;
    t.tp_traverse = Traverse;
    t.tp_getattro = GetAttr;
    t.tp_repr = Repr;
    t.tp_doc = "A bound function with concise argument errors.";
    if (PyType_Ready(&t) < 0) throw pyb::error_already_set();
    return &t;
  }();
  return type;
}

pyb::object Wrap(const pyb::handle& fn) {
  auto* w = PyObject_GC_New(Wrapper, WrapperType());
  if (w == nullptr) throw pyb::error_already_set();
  w->wrapped = fn.inc_ref().ptr();
  w->vectorcall = Call;
  PyObject_GC_Track(reinterpret_cast<PyObject*>(w));
  return pyb::reinterpret_steal<pyb::object>(reinterpret_cast<PyObject*>(w));
}

// A function pybind11 made (its self is pybind11's function record; C functions of other
// modules have their module as self).
bool IsBound(const pyb::handle& o) {
  if (!PyCFunction_Check(o.ptr())) return false;
  PyObject* self = PyCFunction_GET_SELF(o.ptr());
  return self != nullptr && !PyModule_Check(self) &&
         absl::StartsWith(Py_TYPE(self)->tp_name, "pybind11_");
}

// Binary operators and comparisons return NotImplemented when they do not apply (Python then
// tries the other operand and reports the operand types): they never raise pybind11's message,
// and are the hottest calls, so they are left unwrapped.
bool IsOperator(const std::string& name) {
  static const char* const kBinary[] = {
      "add",    "sub", "mul", "matmul", "truediv", "floordiv", "mod", "divmod", "pow", "lshift",
      "rshift", "and", "xor", "or",     "lt",      "le",       "eq",  "ne",     "gt",  "ge"};
  absl::string_view n = name;
  if (!absl::ConsumePrefix(&n, "__") || !absl::ConsumeSuffix(&n, "__")) return false;
  if (n.size() > 1 && (n[0] == 'r' || n[0] == 'i')) {
    for (const char* op : kBinary) {
      if (n.substr(1) == op) return true;
    }
  }
  for (const char* op : kBinary) {
    if (n == op) return true;
  }
  return false;
}

void WrapClass(const pyb::handle& cls) {
  pyb::dict d = cls.attr("__dict__");
  for (auto [key, value] : d) {
    const std::string name = pyb::str(key);
    if (IsOperator(name)) continue;
    pyb::handle v = value;
    if (PyInstanceMethod_Check(v.ptr())) {
      pyb::handle fn = PyInstanceMethod_GET_FUNCTION(v.ptr());
      if (!IsBound(fn)) continue;
      pyb::object m = pyb::reinterpret_steal<pyb::object>(PyInstanceMethod_New(Wrap(fn).ptr()));
      if (!m) throw pyb::error_already_set();
      pyb::setattr(cls, key, m);
    } else if (pyb::isinstance<pyb::staticmethod>(v)) {
      pyb::object fn = v.attr("__func__");
      if (IsBound(fn)) pyb::setattr(cls, key, pyb::staticmethod(Wrap(fn)));
    } else if (PyObject_TypeCheck(v.ptr(), &PyProperty_Type)) {
      pyb::object fset = v.attr("fset");
      if (fset.is_none() || !IsBound(fset)) continue;
      pyb::object prop =
          pyb::module_::import("builtins")
              .attr("property")(v.attr("fget"), Wrap(fset), v.attr("fdel"), v.attr("__doc__"));
      pyb::setattr(cls, key, prop);
    }
  }
}

void WrapModule(const pyb::module_& m, std::vector<PyObject*>& seen) {
  if (std::find(seen.begin(), seen.end(), m.ptr()) != seen.end()) return;
  seen.push_back(m.ptr());
  pyb::dict d = m.attr("__dict__");
  const std::string prefix = absl::StrCat(std::string(pyb::str(m.attr("__name__"))), ".");
  for (auto [key, value] : d) {
    pyb::handle v = value;
    if (IsBound(v)) {
      pyb::setattr(m, key, Wrap(v));
    } else if (PyModule_Check(v.ptr()) &&
               absl::StartsWith(std::string(pyb::str(v.attr("__name__"))), prefix)) {
      WrapModule(pyb::reinterpret_borrow<pyb::module_>(v), seen);
    } else if (PyType_Check(v.ptr()) && pyb::hasattr(v, "__module__") &&
               absl::StartsWith(std::string(pyb::str(v.attr("__module__"))), "pygpukit")) {
      WrapClass(v);
    }
  }
}

}  // namespace

void ConciseArgumentErrors(pyb::module_& m) {
  std::vector<PyObject*> seen;
  WrapModule(m, seen);
}

}  // namespace pygpukit::py

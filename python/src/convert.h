// Binding helpers: status -> Python exception (the one place errors are mapped) and conversion
// of Python arguments (dtypes, devices, shapes, scalars).
#pragma once

#include <pybind11/pybind11.h>

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "checked_caster.h"
#include "pygpukit.h"
#include "runtime/trace/profile.h"

namespace pygpukit::py {

namespace pyb = pybind11;

/// The exception class of scheduler tasks that admission control refused (a RuntimeError;
/// pygpukit.scheduler.TaskRejected).
pyb::handle TaskRejectedType();
/// Wraps every bound function, method and constructor of `m` (and its submodules and classes)
/// so that a call no overload accepts raises a concise TypeError naming the op and the
/// argument, instead of pybind11's dump of every argument's repr (arg_errors.cc).
void ConciseArgumentErrors(pyb::module_& m);

/// Raises the Python exception a non-OK status maps to.
[[noreturn]] void RaiseStatus(const absl::Status& s);

inline void Check(const absl::Status& s) {
  if (!s.ok()) RaiseStatus(s);
}
template <typename T>
T Unwrap(absl::StatusOr<T> r) {
  if (!r.ok()) RaiseStatus(r.status());
  return *std::move(r);
}

/// Runs `f` with the GIL released (blocking copies, synchronization) and returns its result;
/// callers raise errors from the returned status only after the GIL is held again.
template <typename F>
auto WithoutGil(F&& f) {
  pyb::gil_scoped_release release;
  return f();
}

/// The name of obj's Python type (for error messages).
inline std::string TypeName(const pyb::handle& obj) {
  return std::string(pyb::str(pyb::type::handle_of(obj).attr("__name__")));
}

/// Python-visible dtype object (gp.float32, ...).
struct PyDType {
  DType dtype;
};

/// A Python (or NumPy) bool; anything else is a TypeError naming the function, so that a
/// stray 1 or "off" is not silently taken for a truth value.
bool BoolArg(const pyb::handle& x, absl::string_view name, absl::string_view op);
/// Accepts a pygpukit dtype, a name, a NumPy dtype / scalar type or a Python type.
DType ToDType(const pyb::handle& obj, absl::string_view op);
/// None -> `dflt`; else ToDType.
DType ToDTypeOr(const pyb::handle& obj, DType dflt, absl::string_view op);
/// None -> default device; "cpu", "cuda:0", a Device. Errors name `op`.
Device ToDevice(const pyb::handle& obj, absl::string_view op);
/// int or sequence of ints.
Shape ToShape(const pyb::handle& obj, absl::string_view op);
/// None -> nullopt; a Python bool; anything else is a TypeError naming `op` and `name` (the
/// Array API's copy= arguments).
std::optional<bool> OptionalBoolArg(const pyb::handle& x, absl::string_view name,
                                    absl::string_view op);
/// The str `x` is; TypeError naming `op` and `name` otherwise.
std::string StrArg(const pyb::handle& x, absl::string_view name, absl::string_view op);
/// True for Python / NumPy integers and other objects with __index__, but not bools.
bool IsInt(const pyb::handle& obj);
/// The integer `obj` is: TypeError naming `op` and `what` for non-integers (bools included),
/// OverflowError beyond int64.
int64_t ToInt(const pyb::handle& obj, absl::string_view what, absl::string_view op);
/// ToInt, then a ValueError naming `op` and `what` outside [lo, hi] (arguments stored in
/// narrower C++ integers, or with a sign).
int64_t IntArg(const pyb::handle& obj, absl::string_view what, absl::string_view op, int64_t lo,
               int64_t hi);
/// None -> nullopt (all axes); an int; a tuple or list of ints.
std::optional<std::vector<int64_t>> ToAxes(const pyb::handle& obj, absl::string_view op);
/// None -> nullopt; an int.
std::optional<int64_t> ToAxis(const pyb::handle& obj, absl::string_view op);
/// The GPUArrays of a tuple or list (referencing them); TypeError naming `op` otherwise.
std::vector<GPUArray> ToArrays(const pyb::handle& seq, absl::string_view op);
/// A real Python number (int, float, NumPy real scalar) as a double: TypeError for anything else
/// (complex, arrays, strings), ValueError when it does not fit a double. Errors name `op` and
/// the argument `name`.
double RealArg(const pyb::handle& x, absl::string_view name, absl::string_view op);
/// True for bool / int / float / complex Python (or NumPy) scalars.
bool IsScalar(const pyb::handle& obj);
/// Converts a Python scalar; OverflowError for ints outside int64.
Scalar ToScalar(const pyb::handle& obj);
/// The NumPy dtype matching `dt` (bfloat16 needs ml_dtypes).
pyb::object NumpyDType(DType dt);

}  // namespace pygpukit::py

// The bound classes several binding files share (the others declare theirs where they are
// defined): each refuses objects whose __init__ never ran (checked_caster.h).
PGK_CHECKED_CASTER(pygpukit::GPUArray)
PGK_CHECKED_CASTER(pygpukit::Device)
PGK_CHECKED_CASTER(pygpukit::py::PyDType)
PGK_CHECKED_CASTER(pygpukit::InlineTask)
PGK_CHECKED_CASTER(pygpukit::ProfileSession)
PGK_CHECKED_CASTER(pygpukit::ops::UserKernel)
PGK_CHECKED_CASTER(pygpukit::ops::FusedExpr)
PGK_CHECKED_HOLDER_CASTER(pygpukit::MemoryQuota)
PGK_CHECKED_HOLDER_CASTER(pygpukit::ops::PhiloxGenerator)
PGK_CHECKED_HOLDER_CASTER(pygpukit::Task)
PGK_CHECKED_HOLDER_CASTER(pygpukit::Scheduler)

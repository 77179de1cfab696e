// Bound classes refuse objects whose __init__ never ran. `T.__new__(T)` makes an instance with
// no C++ object inside; pybind11's own caster would then allocate raw, uninitialized memory for
// it and hand that to the method (a crash, or garbage such as a device "cuda:21897"). Every
// bound class declares its caster with PGK_CHECKED_CASTER (PGK_CHECKED_HOLDER_CASTER for classes
// held by shared_ptr) before any binding code uses it: here for the classes several files
// share, next to their definition for those local to one file. tests/python/test_bad_input.py
// checks that no class of the module is missing.
#pragma once

#include <pybind11/pybind11.h>

#include <memory>
#include <typeinfo>

namespace pygpukit::py {

/// True when `src` is an instance of the bound class `type` whose C++ object was never
/// constructed (made with __new__ alone).
bool IsUninitialized(pybind11::handle src, const std::type_info& type);
/// The TypeError for such an object, naming its class.
[[noreturn]] void RaiseUninitialized(pybind11::handle src);

/// pybind11's caster for `T` (self, T&, T*), refusing uninitialized instances first.
template <typename T>
class CheckedCaster : public pybind11::detail::type_caster_base<T> {
 public:
  bool load(pybind11::handle src, bool convert) {
    if (src && !src.is_none() && IsUninitialized(src, typeid(T))) RaiseUninitialized(src);
    return pybind11::detail::type_caster_base<T>::load(src, convert);
  }
};

/// The same for shared_ptr<T> arguments of classes held by shared_ptr.
template <typename T>
class CheckedHolderCaster : public pybind11::detail::copyable_holder_caster<T, std::shared_ptr<T>> {
 public:
  bool load(pybind11::handle src, bool convert) {
    if (src && !src.is_none() && IsUninitialized(src, typeid(T))) RaiseUninitialized(src);
    return pybind11::detail::copyable_holder_caster<T, std::shared_ptr<T>>::load(src, convert);
  }
};

}  // namespace pygpukit::py

// At global scope: specializations of pybind11's caster template.
#define PGK_CHECKED_CASTER(T)                                        \
  namespace pybind11::detail {                                       \
  template <>                                                        \
  class type_caster<T> : public ::pygpukit::py::CheckedCaster<T> {}; \
  }  // namespace pybind11::detail

#define PGK_CHECKED_HOLDER_CASTER(T)                                                        \
  PGK_CHECKED_CASTER(T)                                                                     \
  namespace pybind11::detail {                                                              \
  template <>                                                                               \
  class type_caster<std::shared_ptr<T>> : public ::pygpukit::py::CheckedHolderCaster<T> {}; \
  }  // namespace pybind11::detail

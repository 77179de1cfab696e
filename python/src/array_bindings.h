// GPUArray binding and NumPy conversion.
#pragma once

#include <pybind11/numpy.h>

#include "convert.h"

namespace pygpukit::py {

/// Registers GPUArray on the module.
void BindArray(pyb::module_& m);
/// Registers gp.Event (event_bindings.cc).
void BindEvent(pyb::module_& m);
/// x.astype(dtype, copy): `self` itself when copy is false and the dtype already matches.
pyb::object AsTypeOf(const pyb::object& self, const pyb::object& dtype, bool copy);
/// Copies an array into a new NumPy array (blocking, GIL released during the copy).
pyb::array ToNumpy(const GPUArray& a);
/// Uploads a NumPy array (made C-contiguous first) to `device`.
GPUArray FromNumpy(const pyb::array& arr, Device device, absl::string_view op);

}  // namespace pygpukit::py

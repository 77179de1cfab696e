// GPUArray binding and NumPy conversion.
#pragma once

#include <pybind11/numpy.h>

#include "convert.h"

namespace pygpukit::py {

/// Registers GPUArray on the module.
void BindArray(pyb::module_& m);
/// Registers gp.Event (event_bindings.cc).
void BindEvent(pyb::module_& m);
/// Copies an array into a new NumPy array (blocking, GIL released during the copy).
pyb::array ToNumpy(const GPUArray& a);
/// Uploads a NumPy array (made C-contiguous first) to `device`.
GPUArray FromNumpy(const pyb::array& arr, Device device);

}  // namespace pygpukit::py

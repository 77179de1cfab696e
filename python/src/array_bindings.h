// GPUArray binding and NumPy conversion.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <optional>

#include "convert.h"

namespace pygpukit::py {

/// Registers GPUArray on the module.
void BindArray(pyb::module_& m);
/// Registers the elementwise functions on the module and the operators on GPUArray
/// (elementwise_bindings.cc).
void BindElementwise(pyb::module_& m, pyb::class_<GPUArray>& cls);
/// Registers the reductions and scans on the module and their GPUArray methods
/// (reduction_bindings.cc).
void BindReductions(pyb::module_& m, pyb::class_<GPUArray>& cls);
/// Registers the manipulation, matrix-creation and contraction functions
/// (manipulation_bindings.cc).
void BindManipulation(pyb::module_& m);
/// Registers DLPack, the CUDA array interface and __array__ on GPUArray, and from_dlpack
/// (interop_bindings.cc).
void BindInterop(pyb::module_& m, pyb::class_<GPUArray>& cls);
/// Registers result_type, can_cast and the finfo / iinfo numbers (dtype_bindings.cc).
void BindDTypes(pyb::module_& m);
/// Thrown by Operand for a value gp.fuse is tracing (python/pygpukit/fusion.py): the binding
/// records the call on it instead of running it.
struct FuseTrace {};
/// An elementwise operand: a GPUArray (referenced: it must outlive the call) or a Python
/// scalar; TypeError naming `op` otherwise.
ops::EwOperand Operand(const pyb::handle& obj, absl::string_view op);
/// Registers gp.Event (event_bindings.cc).
void BindEvent(pyb::module_& m);
/// x.astype(dtype, copy): `self` itself when copy is false and the dtype already matches.
pyb::object AsTypeOf(const pyb::object& self, const pyb::object& dtype, bool copy);
/// Registers pygpukit._core._memory (memory_bindings.cc).
void BindMemory(pyb::module_& m);
/// Registers gp.Stream and gp.stream_priority_range (stream_bindings.cc).
void BindStream(pyb::module_& m);
/// Registers gp.RawKernel and the JIT cache controls (jit_bindings.cc).
void BindJit(pyb::module_& m);
/// Registers pygpukit._core._scheduler (scheduler_bindings.cc).
void BindScheduler(pyb::module_& m);
/// Registers pygpukit._core._random (random_bindings.cc).
void BindRandom(pyb::module_& m);
/// Registers pygpukit._core._nn (nn_bindings.cc).
void BindNn(pyb::module_& m);
/// Registers pygpukit._core._trace (trace_bindings.cc).
void BindTrace(pyb::module_& m);
/// Copies an array into a NumPy array: a new one, or `out` (C-contiguous, writeable, same shape
/// and dtype). Non-blocking only into pinned-pool memory. The GIL is released during the copy.
pyb::array ToNumpy(const GPUArray& a, const pyb::object& out = pyb::none(), bool blocking = true);
/// Uploads a NumPy array (made C-contiguous first) to `device`.
GPUArray FromNumpy(const pyb::array& arr, Device device, absl::string_view op,
                   bool blocking = true);
/// An uninitialized NumPy array in memory from the pinned pool of `type`'s backend (returned to
/// the pool, fenced on the transfer streams, when the array dies). MemoryError past the limit.
absl::StatusOr<pyb::array> PinnedArray(const Shape& shape, DType dtype, DeviceType type,
                                       absl::string_view op);
/// The GPUArray `obj` is, or TypeError naming `op`.
const GPUArray& AsArray(const pyb::handle& obj, absl::string_view op);
/// None -> nullopt; else AsArray.
std::optional<GPUArray> OptionalArray(const pyb::handle& x, absl::string_view op);
/// The GPUArray `obj` is, or null (one type check: the per-call path of every op).
const GPUArray* ArrayOrNull(const pyb::handle& obj);

}  // namespace pygpukit::py

"""pygpukit: a NumPy-like GPU array runtime.

    import pygpukit as gp, numpy as np
    A = gp.asarray(np.random.rand(512, 256).astype(np.float32))
    B = gp.ones((256, 128))
    C = A @ B            # runs on the default device (cuda:0 when present, else the CPU backend)
    print(gp.to_numpy(C).sum())

Default dtypes: float32 for floating values, int64 for integers, complex64 for complex values
(the GPU-friendly choice PyTorch also makes). PYGPUKIT_DEVICE=cpu|cuda forces the device.
"""

import numpy as _np

from . import _core, jit, memory, nn, profiler, random, scheduler
from ._core import (
    Device,
    ElementwiseKernel,
    Event,
    GPUArray,
    RawKernel,
    Stream,
    abs,
    acos,
    acosh,
    add,
    all,
    any,
    arange,
    argmax,
    argmin,
    argsort,
    asin,
    asinh,
    astype,
    atan,
    atan2,
    atanh,
    bitwise_and,
    bitwise_invert,
    bitwise_left_shift,
    bitwise_or,
    bitwise_right_shift,
    bitwise_xor,
    broadcast_arrays,
    broadcast_to,
    can_cast,
    ceil,
    clear_gemm_tune_cache,
    clip,
    concat,
    conj,
    contiguous,
    copysign,
    cos,
    cosh,
    count_nonzero,
    cumulative_prod,
    cumulative_sum,
    default_device,
    device_properties,
    devices,
    diff,
    dispatch_stats,
    divide,
    dtype,
    empty,
    equal,
    exp,
    expand_dims,
    expm1,
    eye,
    flip,
    floor,
    floor_divide,
    from_dlpack,
    from_numpy,
    full,
    gemm,
    gemm_autotune_enabled,
    gemm_tune_cache_info,
    greater,
    greater_equal,
    grouped_matmul,
    hypot,
    imag,
    isfinite,
    isinf,
    isnan,
    less,
    less_equal,
    linear,
    linspace,
    log,
    log1p,
    log2,
    log10,
    logaddexp,
    logical_and,
    logical_not,
    logical_or,
    logical_xor,
    matmul,
    matrix_transpose,
    max,
    maximum,
    mean,
    meshgrid,
    min,
    minimum,
    moveaxis,
    multiply,
    negative,
    nextafter,
    nonzero,
    not_equal,
    ones,
    permute_dims,
    positive,
    pow,
    prod,
    real,
    reciprocal,
    remainder,
    repeat,
    reset_dispatch_stats,
    reshape,
    result_type,
    roll,
    round,
    runtime_info,
    scaled_matmul,
    searchsorted,
    set_gemm_autotune,
    sign,
    signbit,
    sin,
    sinh,
    sort,
    sqrt,
    square,
    squeeze,
    stack,
    std,
    stream_priority_range,
    subtract,
    sum,
    synchronize,
    take,
    take_along_axis,
    tan,
    tanh,
    tensordot,
    tile,
    to_numpy,
    tril,
    triu,
    trunc,
    unstack,
    var,
    vecdot,
    where,
    zeros,
)
from ._format import array_repr as _array_repr
from ._format import array_str as _array_str
from ._namespace import (
    __array_namespace_info__,
    finfo,
    iinfo,
    isdtype,
    unique_all,
    unique_counts,
    unique_inverse,
    unique_values,
)
from .fusion import fuse

__version__ = runtime_info()["version"]

bool = _core.bool  # noqa: A001 - the Array API names the dtype `bool`
int8, int16, int32, int64 = _core.int8, _core.int16, _core.int32, _core.int64
uint8, uint16, uint32, uint64 = _core.uint8, _core.uint16, _core.uint32, _core.uint64
float16, bfloat16, float32, float64 = _core.float16, _core.bfloat16, _core.float32, _core.float64
complex64, complex128 = _core.complex64, _core.complex128
float8_e4m3fn, float8_e5m2 = _core.float8_e4m3fn, _core.float8_e5m2

# The Array API standard this namespace implements, and its constants.
__array_api_version__ = "2024.12"
e = _np.e
inf = _np.inf
nan = _np.nan
pi = _np.pi
newaxis = None

_API_VERSIONS = ("2021.12", "2022.12", "2023.12", "2024.12")


def _array_namespace(self, /, *, api_version=None):
    if api_version is not None and api_version not in _API_VERSIONS:
        raise ValueError(
            f"__array_namespace__: unsupported api_version {api_version!r}; "
            f"supported: {', '.join(_API_VERSIONS)}"
        )
    import pygpukit

    return pygpukit


GPUArray.__array_namespace__ = _array_namespace
GPUArray.__repr__ = _array_repr
GPUArray.__str__ = _array_str


def _array_iter(x):
    # Without __iter__ Python would iterate through __getitem__ and stop silently on 0-d arrays.
    if x.ndim == 0:
        raise TypeError("iteration over a 0-d array")
    return (x[i] for i in range(x.shape[0]))


GPUArray.__iter__ = _array_iter

# Python values without a NumPy dtype of their own take the library defaults.
_DEFAULT_FOR_KIND = {"f": float32, "c": complex64}


def asarray(obj, /, *, dtype=None, device=None, copy=None, blocking=True):
    """Converts `obj` (a GPUArray, a NumPy array, a Python scalar or nested sequence) to a
    GPUArray on `device` (default: the default device, or the source array's device).

    NumPy arrays keep their dtype; Python floats / complex values become float32 / complex64
    unless `dtype` says otherwise. `copy=False` raises if a copy would be needed.
    `blocking=False` returns before the host-to-device copy ends (work on the new array is
    ordered after it); the source may be reused at once, except pinned memory from
    `memory.pinned_empty`, which is copied directly and must stay untouched until the copy is
    done.
    """
    if dtype is not None:
        dtype = _core._parse_dtype(dtype, "asarray")
    if isinstance(obj, GPUArray):
        target = obj.device if device is None else _core._parse_device(device, "asarray")
        out = obj
        if target != obj.device:
            if copy is False:
                raise ValueError("asarray: copy=False but the array is on another device")
            out = out.to_device(target)
        if dtype is not None and out.dtype != dtype:
            if copy is False:
                raise ValueError("asarray: copy=False but a dtype conversion is needed")
            return out.astype(dtype)
        if copy and out is obj:
            return obj.copy()
        return out
    if not isinstance(obj, (_np.ndarray, _np.generic)):
        # Other libraries' arrays: shared through DLPack (or the CUDA array interface) without a
        # copy where the devices allow.
        if hasattr(obj, "__dlpack__") and hasattr(obj, "__dlpack_device__"):
            try:
                out = from_dlpack(obj, device=device, copy=copy)
            except (BufferError, ValueError) as e:  # the Array API's asarray raises ValueError
                # Some exporters describe layouts wrongly through DLPack (CuPy encodes negative
                # strides as huge positive ones); their CUDA array interface, in bytes, is right.
                if not hasattr(obj, "__cuda_array_interface__"):
                    raise ValueError(f"asarray: {e}") from e
                out = _core._from_cuda_array_interface(obj, device, copy)
            return _asarray_dtype(out, dtype, copy)
        if hasattr(obj, "__cuda_array_interface__"):
            out = _core._from_cuda_array_interface(obj, device, copy)
            return _asarray_dtype(out, dtype, copy)
    device = _core._parse_device(device, "asarray")
    if copy is False and device.type == "cpu" and isinstance(obj, _np.ndarray):
        # A NumPy array viewed in place by the CPU backend (DLPack); dtype must match.
        if dtype is not None and _core._parse_dtype(obj.dtype, "asarray") != dtype:
            raise ValueError("asarray: copy=False but a dtype conversion is needed")
        try:
            return from_dlpack(obj, copy=False)
        except BufferError as e:
            raise ValueError(f"asarray: {e}") from e
    if copy is False:
        raise ValueError(
            "asarray: copy=False is not possible here: the data must be copied (host data onto "
            "a CUDA device, or a Python scalar or sequence)"
        )
    host = _np.asarray(obj)
    if host.dtype == object:
        raise TypeError(
            f"asarray: cannot convert {type(obj).__name__} (NumPy dtype object) to an array"
        )
    if not isinstance(obj, (_np.ndarray, _np.generic)) and dtype is None and not _is_buffer(obj):
        # Python scalars and sequences take the defaults; buffers (memoryview, array.array)
        # keep their format's dtype, as NumPy arrays do.
        default = _DEFAULT_FOR_KIND.get(host.dtype.kind)
        if default is not None:
            dtype = default
    out = _core._from_numpy_as(host, device, "asarray", blocking=blocking)
    if dtype is not None and out.dtype != dtype:
        out = out.astype(dtype, copy=False)
    return out


def _is_buffer(obj):
    """True for objects with the buffer protocol (their format names a dtype)."""
    try:
        memoryview(obj)
    except TypeError:
        return False
    return True


def _asarray_dtype(out, dtype, copy):
    """`out` converted to `dtype` for asarray, which copy=False forbids."""
    if dtype is None or out.dtype == dtype:
        return out
    if copy is False:
        raise ValueError("asarray: copy=False but a dtype conversion is needed")
    return out.astype(dtype)


def _like_args(x, dtype, device, op):
    """Checks the arguments of a *_like function, naming it in errors."""
    if not isinstance(x, GPUArray):
        raise TypeError(f"{op}: expected a GPUArray, got {type(x).__name__}")
    dtype = x.dtype if dtype is None else _core._parse_dtype(dtype, op)
    device = x.device if device is None else _core._parse_device(device, op)
    return x, dtype, device


def empty_like(x, /, *, dtype=None, device=None):
    """An uninitialized array with the shape (and by default dtype and device) of `x`."""
    x, dtype, device = _like_args(x, dtype, device, "empty_like")
    return empty(x.shape, dtype=dtype, device=device)


def zeros_like(x, /, *, dtype=None, device=None):
    """Zeros with the shape (and by default dtype and device) of `x`."""
    x, dtype, device = _like_args(x, dtype, device, "zeros_like")
    return zeros(x.shape, dtype=dtype, device=device)


def ones_like(x, /, *, dtype=None, device=None):
    """Ones with the shape (and by default dtype and device) of `x`."""
    x, dtype, device = _like_args(x, dtype, device, "ones_like")
    return ones(x.shape, dtype=dtype, device=device)


def full_like(x, /, fill_value, *, dtype=None, device=None):
    """`fill_value` with the shape (and by default dtype and device) of `x`."""
    x, dtype, device = _like_args(x, dtype, device, "full_like")
    return full(x.shape, fill_value, dtype=dtype, device=device)


def cmake_prefix_path():
    """Directory to put on CMAKE_PREFIX_PATH for `find_package(pygpukit)` (pip installs)."""
    import os

    return os.path.dirname(os.path.abspath(__file__))


__all__ = [
    "Device",
    "ElementwiseKernel",
    "Event",
    "GPUArray",
    "RawKernel",
    "Stream",
    "__array_api_version__",
    "__array_namespace_info__",
    "abs",
    "acos",
    "acosh",
    "add",
    "all",
    "any",
    "arange",
    "argmax",
    "argmin",
    "argsort",
    "asarray",
    "asin",
    "asinh",
    "astype",
    "atan",
    "atan2",
    "atanh",
    "bfloat16",
    "bitwise_and",
    "bitwise_invert",
    "bitwise_left_shift",
    "bitwise_or",
    "bitwise_right_shift",
    "bitwise_xor",
    "bool",
    "broadcast_arrays",
    "broadcast_to",
    "can_cast",
    "ceil",
    "clear_gemm_tune_cache",
    "clip",
    "cmake_prefix_path",
    "complex128",
    "complex64",
    "concat",
    "conj",
    "contiguous",
    "copysign",
    "cos",
    "cosh",
    "count_nonzero",
    "cumulative_prod",
    "cumulative_sum",
    "default_device",
    "device_properties",
    "devices",
    "diff",
    "dispatch_stats",
    "divide",
    "dtype",
    "e",
    "empty",
    "empty_like",
    "equal",
    "exp",
    "expand_dims",
    "expm1",
    "eye",
    "finfo",
    "flip",
    "float16",
    "float32",
    "float64",
    "float8_e4m3fn",
    "float8_e5m2",
    "floor",
    "floor_divide",
    "from_dlpack",
    "from_numpy",
    "full",
    "full_like",
    "fuse",
    "gemm",
    "gemm_autotune_enabled",
    "gemm_tune_cache_info",
    "greater",
    "greater_equal",
    "grouped_matmul",
    "hypot",
    "iinfo",
    "imag",
    "inf",
    "int16",
    "int32",
    "int64",
    "int8",
    "isdtype",
    "isfinite",
    "isinf",
    "isnan",
    "jit",
    "less",
    "less_equal",
    "linear",
    "linspace",
    "log",
    "log10",
    "log1p",
    "log2",
    "logaddexp",
    "logical_and",
    "logical_not",
    "logical_or",
    "logical_xor",
    "matmul",
    "matrix_transpose",
    "max",
    "maximum",
    "mean",
    "memory",
    "profiler",
    "meshgrid",
    "min",
    "minimum",
    "moveaxis",
    "multiply",
    "nan",
    "negative",
    "newaxis",
    "nextafter",
    "nonzero",
    "not_equal",
    "ones",
    "ones_like",
    "permute_dims",
    "pi",
    "positive",
    "pow",
    "prod",
    "nn",
    "random",
    "real",
    "reciprocal",
    "remainder",
    "repeat",
    "reset_dispatch_stats",
    "reshape",
    "result_type",
    "roll",
    "round",
    "runtime_info",
    "scaled_matmul",
    "scheduler",
    "searchsorted",
    "set_gemm_autotune",
    "sign",
    "signbit",
    "sin",
    "sinh",
    "sort",
    "sqrt",
    "square",
    "squeeze",
    "stack",
    "std",
    "stream_priority_range",
    "subtract",
    "sum",
    "synchronize",
    "take",
    "take_along_axis",
    "tan",
    "tanh",
    "tensordot",
    "tile",
    "to_numpy",
    "tril",
    "triu",
    "trunc",
    "uint16",
    "uint32",
    "uint64",
    "uint8",
    "unique_all",
    "unique_counts",
    "unique_inverse",
    "unique_values",
    "unstack",
    "var",
    "vecdot",
    "where",
    "zeros",
    "zeros_like",
]

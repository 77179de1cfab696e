"""repr / str of GPUArray, formatted by NumPy from a host copy."""

import numpy as np

from . import _core


def _host(x):
    # NumPy cannot format bfloat16 or the 8-bit floats without ml_dtypes; float32 holds all of
    # their values exactly.
    if x.dtype in (_core.bfloat16, _core.float8_e4m3fn, _core.float8_e5m2):
        x = x.astype(_core.float32)
    return _core.to_numpy(x)


def array_str(x):
    return np.array2string(_host(x), separator=" ")


def array_repr(x):
    prefix = "GPUArray("
    body = np.array2string(_host(x), separator=", ", prefix=prefix)
    return f"{prefix}{body}, dtype={x.dtype}, device='{x.device}')"

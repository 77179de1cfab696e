"""Neural-network ops: softmax and normalizations over rows, on the CPU backend and CUDA devices.

    import pygpukit as gp
    import pygpukit.nn.functional as F        # the same functions (torch's spelling)

    p = gp.nn.softmax(scores, axis=-1)
    y = gp.nn.layer_norm(x, 4096, weight=w, bias=b)
    y, h = gp.nn.rms_norm(x, w, residual=h)   # h = x + h, y = rms_norm(h): the pre-norm step

Inputs are float16, bfloat16, float32 or float64; sums run in float32 (float64 for float64) and
results come back in the input's dtype. The reduced dims are the last one(s); a contiguous input
is read once (the whole row is held on chip).
"""

import sys as _sys

from . import _core

_nn = _core._nn

__all__ = ["functional", "layer_norm", "log_softmax", "rms_norm", "softmax"]


def _axis(axis, dim, op):
    if dim is not None:
        if axis != -1:
            raise TypeError(f"{op}: give axis or dim, not both")
        return dim
    return axis


def softmax(x, /, axis=-1, *, dtype=None, dim=None):
    """exp(x) / sum(exp(x)) along ``axis`` (``dim`` is torch's name for it), computed stably
    (the row's maximum subtracted first). ``dtype`` casts x first. A row of only -inf gives NaN,
    as torch does; a NaN spreads over its row."""
    return _nn.softmax(x, _axis(axis, dim, "softmax"), False, dtype)


def log_softmax(x, /, axis=-1, *, dtype=None, dim=None):
    """x - log(sum(exp(x))) along ``axis``, computed stably; see :func:`softmax`."""
    return _nn.softmax(x, _axis(axis, dim, "log_softmax"), True, dtype)


def _shape(s):
    return (s,) if isinstance(s, int) else tuple(s)


def layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5, *, residual=None):
    """(h - mean) / sqrt(var + eps) * weight + bias over the trailing dims ``normalized_shape``
    (an int or a tuple), with the biased variance, as ``torch.nn.functional.layer_norm``.

    With ``residual`` (x's shape and dtype), h = x + residual, rounded to the dtype, and the
    result is ``(y, h)``: the pre-norm transformer's step in one pass. Otherwise h = x and the
    result is y. weight and bias have shape normalized_shape and x's dtype."""
    return _nn.layer_norm(x, _shape(normalized_shape), weight, bias, eps, residual)


def rms_norm(x, weight=None, eps=None, *, normalized_shape=None, residual=None):
    """h / sqrt(mean(h**2) + eps) * weight over the trailing dims: ``normalized_shape``, else
    weight's shape, else the last dim. ``eps`` defaults to the dtype's machine epsilon (as
    ``torch.nn.functional.rms_norm``; note that torch takes normalized_shape second).

    With ``residual``, h = x + residual (rounded to the dtype) and the result is ``(y, h)``, as
    for :func:`layer_norm`."""
    if normalized_shape is None:
        normalized_shape = weight.shape if weight is not None else x.shape[-1:]
    return _nn.rms_norm(x, _shape(normalized_shape), weight, eps, residual)


# torch's spelling: ``import pygpukit.nn.functional as F`` gives this module.
functional = _sys.modules[__name__]
_sys.modules[__name__ + ".functional"] = functional

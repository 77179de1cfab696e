"""Float64 reference of gp.gemm / gp.linear and its elementwise error bound, shared by the gemm
tests.

The reference is act(alpha * (A @ B) + beta * C + bias) computed in float64 from the operands as
stored (16-bit data already rounded), with C and bias rounded to the output dtype first (gemm
reads them in it). The bound is that of a length-k dot product accumulated in float32 (float64
for float64 operands), scaled by |alpha| |A| @ |B| + |beta C| + |bias|, times the activation's
Lipschitz constant, plus the activation's own rounding and the final rounding to the output
dtype relative to the result. It is tight enough that a missing bias, C or alpha, a wrong
activation (including GELU's tanh approximation in float32 / float64) or TF32 in place of FP32
fail it (test_gemm.py::test_bound_rejects_wrong_answers)."""

import math

import numpy as np
from helpers import UNIT_ROUNDOFF, cmp, gpdt, host, npdt

import pygpukit as gp

HALF = ("float16", "bfloat16")
ACTS = (None, "relu", "gelu", "gelu_tanh", "silu")
TF32_ROUNDOFF = 2.0**-11  # 10 explicit mantissa bits
# Smallest subnormal of each dtype: the absolute error a result near zero may carry.
TINY = {"float16": 2.0**-24, "bfloat16": 2.0**-133, "float32": 2.0**-149, "float64": 5e-324}
# max |act'(x)|: an error in the pre-activation value grows by at most this much.
LIPSCHITZ = {None: 1.0, "relu": 1.0, "gelu": 1.13, "gelu_tanh": 1.13, "silu": 1.1}

_erf = np.vectorize(math.erf, otypes=[np.float64])


def f64(x):
    return cmp(np.asarray(x)).astype(np.float64)


def activate(x, act):
    """The activations in float64: ReLU (NaN stays NaN), GELU in its exact erf form and in its
    tanh approximation, SiLU."""
    x = np.asarray(x, np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        if act is None:
            return x
        if act == "relu":
            return np.where(np.isnan(x), x, np.maximum(x, 0.0))
        if act == "gelu":
            return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))
        if act == "silu":
            return x / (1.0 + np.exp(-x))
        if act == "gelu_tanh":
            u = math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)
            return 0.5 * x * (1.0 + np.tanh(u))
    raise AssertionError(act)


def reference(a, b, *, out, c=None, alpha=1.0, beta=None, bias=None, activation=None):
    """(act(alpha * a @ b + beta * c + bias), |alpha| |a| @ |b| + |beta c| + |bias|, the
    pre-activation value) in float64 from NumPy operands; `out` is the output dtype name."""
    A, B = f64(a), f64(b)
    with np.errstate(invalid="ignore", over="ignore"):
        pre = alpha * np.matmul(A, B)
        mag = abs(alpha) * np.matmul(np.abs(A), np.abs(B))
        if beta is None:
            beta = 0.0 if c is None else 1.0
        if beta != 0.0:
            cw = f64(np.asarray(c).astype(npdt(out)))
            pre = pre + beta * cw
            mag = mag + np.abs(beta * cw)
        if bias is not None:
            bw = f64(np.asarray(bias).astype(npdt(out)))
            if np.ndim(b) == 1:  # N = 1, a dim the result drops
                bw = bw.reshape(())
            pre = pre + bw
            mag = mag + np.abs(bw)
    mag = np.broadcast_to(mag, np.shape(pre))
    return activate(pre, activation), mag, pre


def bound(dtype, out, k, ref, mag, activation=None, *, extra=0.0):
    """Elementwise error bound of gemm with `dtype` operands and `out` output (see the module
    docstring); `extra` adds a per-product relative error (TF32)."""
    u_acc = 2.0**-24 if dtype in HALF else UNIT_ROUNDOFF[dtype]
    # Worst case (k + 2) u; above k = 64 the probabilistic 8 sqrt(k + 2) u (test_matmul.py).
    growth = min(k + 2, 8 * np.sqrt(k + 2))
    # The product, then alpha *, + beta * C, + bias: a few more roundings of the accumulator.
    acc = ((growth + 4) * u_acc + extra) * mag
    if dtype == "float64":
        acc = 2 * acc  # the float64 reference carries an error of the same size
    aref = np.abs(np.nan_to_num(ref, nan=0.0, posinf=0.0, neginf=0.0))
    err = LIPSCHITZ[activation] * acc
    if activation in ("gelu", "gelu_tanh", "silu"):  # erf / tanh / exp in the accumulator's
        err = err + 16 * u_acc * (aref + mag)
    u_out = UNIT_ROUNDOFF[out]
    return err + u_out * (aref + err) + 2 * TINY[out]


def check_values(got, a, b, *, dtype, out, extra=0.0, **epilogue):
    """NumPy `got` is gemm(a, b, **epilogue) of `dtype` operands in `out` within the bound;
    NaN where the reference is NaN and equal infinities count as matches."""
    ref, mag, _ = reference(a, b, out=out, **epilogue)
    got = np.asarray(got)
    assert got.shape == ref.shape, (got.shape, ref.shape)
    assert got.dtype == npdt(out), (got.dtype, out)
    g = f64(got)
    k = np.shape(a)[-1]
    tol = bound(dtype, out, k, ref, mag, epilogue.get("activation"), extra=extra)
    with np.errstate(invalid="ignore"):
        err = np.abs(g - ref)
        ok = (err <= tol) | (np.isnan(g) & np.isnan(ref)) | (np.isinf(ref) & (g == ref))
    if not ok.all():
        bad = ~ok
        idx = tuple(np.argwhere(bad)[0])
        t = np.broadcast_to(tol, err.shape)[idx]
        raise AssertionError(
            f"{int(bad.sum())} of {bad.size} elements out of bound ({dtype} -> {out}, K={k}, "
            f"{epilogue.get('activation')}); first at {idx}: got {g[idx]}, expected {ref[idx]}, "
            f"tol {t}"
        )


def check_gemm(x, a, b, *, dtype=None, out=None, extra=0.0, **epilogue):
    """GPUArray `x` is a fresh contiguous result of gemm(a, b, **epilogue) (NumPy operands)."""
    dtype = dtype or ("bfloat16" if np.asarray(a).dtype == npdt("bfloat16") else a.dtype.name)
    out = out or dtype
    assert isinstance(x, gp.GPUArray)
    assert str(x.dtype) == out, (x.dtype, out)
    assert x.is_contiguous
    check_values(host(x), a, b, dtype=dtype, out=out, extra=extra, **epilogue)


def up(x, device=None):
    return None if x is None else gp.asarray(np.asarray(x), device=device)


def run_gemm(a, b, *, c=None, bias=None, out_dtype=None, device=None, **kw):
    """gp.gemm on uploaded copies of NumPy a, b, c and bias (out_dtype by name)."""
    od = None if out_dtype is None else gpdt(out_dtype)
    return gp.gemm(
        up(a, device), up(b, device), up(c, device), bias=up(bias, device), out_dtype=od, **kw
    )

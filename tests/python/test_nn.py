"""gp.nn on the default device: softmax, log_softmax, layer_norm and rms_norm against float64
references of the dtype-rounded inputs, over float16 / bfloat16 / float32 / float64, odd and
long rows (past what a CUDA thread block holds on chip), other axes, non-contiguous and
misaligned inputs, empty and 0-d arrays, -inf / NaN rows, the fused residual, and bad input."""

import ml_dtypes
import numpy as np
import pytest
from helpers import UNIT_ROUNDOFF, host, npdt, rand

import pygpukit as gp
import pygpukit.nn.functional as F

DTYPES = ["float16", "bfloat16", "float32", "float64"]
# Float32 sums (float64 for float64: its rows' sums of ~10^4 terms keep about 44 bits).
ACC_ROUNDOFF = {"float16": 2.0**-24, "bfloat16": 2.0**-24, "float32": 2.0**-24, "float64": 2.0**-44}


def f64(a):
    return np.asarray(a).astype(np.float64)


def softmax_ref(x, axis, log):
    m = np.max(x, axis=axis, keepdims=True)
    with np.errstate(invalid="ignore", over="ignore"):
        d = x - m
        s = np.sum(np.exp(d), axis=axis, keepdims=True)
        return d - np.log(s) if log else np.exp(d) / s


def check(got, ref, dtype, scale):
    """got (a GPUArray of `dtype`) within 2 roundings of the output (subnormals included) plus
    256 float32 (or float64) roundings of `scale` (the magnitudes the row's sums carry) of the
    float64 ref."""
    assert str(got.dtype) == dtype
    g = f64(host(got))
    assert g.shape == ref.shape
    tiny = float(ml_dtypes.finfo(npdt(dtype)).smallest_subnormal)
    tol = 2 * UNIT_ROUNDOFF[dtype] * np.abs(ref) + 256 * ACC_ROUNDOFF[dtype] * scale + 2 * tiny
    with np.errstate(invalid="ignore"):
        bad = ~((np.abs(g - ref) <= tol) | (np.isnan(g) & np.isnan(ref)))
    assert not bad.any(), (
        f"{int(bad.sum())} of {bad.size} off; first got {g[bad][0]} want {ref[bad][0]} "
        f"tol {np.broadcast_to(tol, ref.shape)[bad][0]}"
    )


SHAPES = [(3, 1000), (2, 3, 257), (5, 4096), (1, 1), (2, 20000), (0, 8)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("log", [False, True])
def test_softmax_last_axis(rng, device, dtype, shape, log):
    x = rand(rng, shape, dtype, scale=3.0)
    gx = gp.asarray(x, device=device)
    y = gp.nn.log_softmax(gx) if log else gp.nn.softmax(gx)
    ref = softmax_ref(f64(x), -1, log)
    scale = np.abs(f64(x)) + 1 if log else np.abs(ref)
    check(y, ref, dtype, scale)


@pytest.mark.parametrize("axis", [0, 1, -3])
def test_softmax_other_axes_and_layouts(rng, device, axis):
    x = rand(rng, (6, 7, 9), "float32", scale=2.0)
    gx = gp.asarray(x, device=device)
    check(F.softmax(gx, dim=axis), softmax_ref(f64(x), axis, False), "float32", 1.0)
    check(gp.nn.log_softmax(gx, axis), softmax_ref(f64(x), axis, True), "float32", 10.0)
    # A transposed view and a strided slice.
    t = gp.matrix_transpose(gx)
    check(gp.nn.softmax(t), softmax_ref(f64(x).swapaxes(-1, -2), -1, False), "float32", 1.0)
    s = gx[:, ::2, 1:]
    check(gp.nn.softmax(s), softmax_ref(f64(x)[:, ::2, 1:], -1, False), "float32", 1.0)


def test_softmax_misaligned_rows_take_the_element_path(rng, device):
    # A contiguous view starting one element in: no 16-byte vectors.
    flat = rand(rng, (1 + 4 * 64,), "bfloat16", scale=3.0)
    gx = gp.reshape(gp.asarray(flat, device=device)[1:], (4, 64))
    check(gp.nn.softmax(gx), softmax_ref(f64(flat[1:]).reshape(4, 64), -1, False), "bfloat16", 1.0)


def test_softmax_special_rows(device):
    inf, nan = np.inf, np.nan
    x = np.array(
        [
            [-inf, -inf, -inf, -inf],  # all -inf: NaN, as torch
            [0.0, -inf, 1.0, -inf],  # masked entries: 0
            [1.0, nan, 2.0, 3.0],  # NaN spreads over the row
            [1000.0, 0.0, -1000.0, 1000.0],  # large values: no overflow
        ],
        np.float32,
    )
    gx = gp.asarray(x, device=device)
    y = host(gp.nn.softmax(gx))
    assert np.isnan(y[0]).all() and np.isnan(y[2]).all()
    np.testing.assert_allclose(y[1], [1 / (1 + np.e), 0, np.e / (1 + np.e), 0], rtol=1e-6)
    np.testing.assert_allclose(y[3], [0.5, 0, 0, 0.5], rtol=1e-6)
    ly = host(gp.nn.log_softmax(gx))
    assert np.isnan(ly[0]).all() and np.isnan(ly[2]).all()
    assert ly[1][1] == -np.inf and ly[1][3] == -np.inf
    np.testing.assert_allclose(ly[3][[0, 3]], [-np.log(2)] * 2, rtol=1e-6)


def test_softmax_0d_dtype_and_empty(device):
    one = gp.nn.softmax(gp.asarray(np.float32(3.5), device=device))
    assert one.shape == () and float(host(one)) == 1.0
    assert float(host(gp.nn.log_softmax(gp.asarray(np.float32(3.5), device=device)))) == 0.0
    x = gp.asarray(np.array([[1.0, 2.0, 3.0]], np.float16), device=device)
    y = gp.nn.softmax(x, dtype=gp.float32)
    assert y.dtype == gp.float32
    check(y, softmax_ref(np.array([[1.0, 2.0, 3.0]]), -1, False), "float32", 1.0)
    e = gp.nn.softmax(gp.asarray(np.zeros((3, 0), np.float32), device=device))
    assert e.shape == (3, 0)


def test_softmax_bad_input(device):
    with pytest.raises(TypeError, match="softmax: unsupported dtype int32"):
        gp.nn.softmax(gp.asarray(np.arange(4, dtype=np.int32), device=device))
    with pytest.raises(TypeError, match="log_softmax: unsupported dtype complex64"):
        gp.nn.log_softmax(gp.asarray(np.ones(4, np.complex64), device=device))
    x = gp.asarray(np.ones((2, 3), np.float32), device=device)
    with pytest.raises(IndexError, match="softmax"):
        gp.nn.softmax(x, 2)
    with pytest.raises(TypeError, match="axis or dim"):
        gp.nn.softmax(x, 0, dim=1)
    with pytest.raises(TypeError, match="softmax"):
        gp.nn.softmax(np.ones(3, np.float32))


def layer_norm_ref(h, nd, w, b, eps):
    axes = tuple(range(h.ndim - nd, h.ndim))
    mean = h.mean(axis=axes, keepdims=True)
    var = ((h - mean) ** 2).mean(axis=axes, keepdims=True)
    core = (h - mean) / np.sqrt(var + eps)
    y = core * (1.0 if w is None else w) + (0.0 if b is None else b)
    return y, np.abs(core * (1.0 if w is None else w)) + (0.0 if b is None else np.abs(b)) + 1


def rms_norm_ref(h, nd, w, eps):
    axes = tuple(range(h.ndim - nd, h.ndim))
    core = h / np.sqrt((h**2).mean(axis=axes, keepdims=True) + eps)
    y = core * (1.0 if w is None else w)
    return y, np.abs(y) + 1


NORM_SHAPES = [((4, 1000), 1), ((2, 3, 4096), 1), ((3, 5, 7), 2), ((2, 20000), 1), ((0, 16), 1)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, nd", NORM_SHAPES, ids=str)
@pytest.mark.parametrize("affine", [False, True])
def test_layer_norm(rng, device, dtype, shape, nd, affine):
    x = rand(rng, shape, dtype, scale=2.0) + np.asarray(1.5, npdt(dtype))  # a nonzero mean
    ns = shape[len(shape) - nd :]
    w = rand(rng, ns, dtype, scale=1.0) if affine else None
    b = rand(rng, ns, dtype, scale=1.0) if affine else None
    g = lambda a: None if a is None else gp.asarray(a, device=device)  # noqa: E731
    y = gp.nn.layer_norm(g(x), ns if nd > 1 else ns[0], g(w), g(b), eps=1e-5)
    opt = lambda a: None if a is None else f64(a)  # noqa: E731
    ref, scale = layer_norm_ref(f64(x), nd, opt(w), opt(b), 1e-5)
    check(y, ref, dtype, scale)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, nd", NORM_SHAPES, ids=str)
def test_rms_norm(rng, device, dtype, shape, nd):
    x = rand(rng, shape, dtype, scale=2.0)
    ns = shape[len(shape) - nd :]
    w = rand(rng, ns, dtype, scale=1.0)
    gw = gp.asarray(w, device=device)
    y = gp.nn.rms_norm(gp.asarray(x, device=device), gw, 1e-6)  # normalized over w's shape
    ref, scale = rms_norm_ref(f64(x), nd, f64(w), 1e-6)
    check(y, ref, dtype, scale)
    # Without weight: the last dim; eps defaults to the dtype's machine epsilon (as torch).
    y = F.rms_norm(gp.asarray(x, device=device))
    ref, scale = rms_norm_ref(f64(x), 1, None, float(ml_dtypes.finfo(npdt(dtype)).eps))
    check(y, ref, dtype, scale)


@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])
@pytest.mark.parametrize("cols", [4096, 20000, 1000])
def test_fused_residual(rng, device, dtype, cols):
    x = rand(rng, (3, cols), dtype, scale=2.0)
    r = rand(rng, (3, cols), dtype, scale=2.0)
    w = rand(rng, (cols,), dtype, scale=1.0)
    gx, gr, gw = (gp.asarray(a, device=device) for a in (x, r, w))
    h = (f64(x) + f64(r)).astype(npdt(dtype))  # the sum rounded to the dtype
    y, gh = gp.nn.rms_norm(gx, gw, 1e-6, residual=gr)
    np.testing.assert_array_equal(host(gh), h)
    ref, scale = rms_norm_ref(f64(h), 1, f64(w), 1e-6)
    check(y, ref, dtype, scale)
    y, gh = gp.nn.layer_norm(gx, cols, gw, None, residual=gr)
    np.testing.assert_array_equal(host(gh), h)
    ref, scale = layer_norm_ref(f64(h), 1, f64(w), None, 1e-5)
    check(y, ref, dtype, scale)
    # The same as the unfused steps.
    y2 = gp.nn.layer_norm(gp.asarray(h, device=device), cols, gw)
    tol = 4 * UNIT_ROUNDOFF[dtype]
    np.testing.assert_allclose(f64(host(y2)), f64(host(y)), rtol=tol, atol=1e-6)


def test_norm_bad_input(device):
    x = gp.asarray(np.ones((2, 3, 4), np.float32), device=device)
    w4 = gp.asarray(np.ones(4, np.float32), device=device)
    with pytest.raises(ValueError, match=r"layer_norm: normalized_shape \(3,\) is not the"):
        gp.nn.layer_norm(x, 3)
    with pytest.raises(ValueError, match=r"layer_norm: weight has shape \(4,\), expected \(3, 4"):
        gp.nn.layer_norm(x, (3, 4), w4)
    with pytest.raises(TypeError, match="rms_norm: weight has dtype float16, the input float32"):
        gp.nn.rms_norm(x, w4.astype(gp.float16))
    with pytest.raises(ValueError, match=r"rms_norm: residual has shape \(2, 3\)"):
        gp.nn.rms_norm(x, w4, residual=gp.asarray(np.ones((2, 3), np.float32), device=device))
    with pytest.raises(TypeError, match="layer_norm: unsupported dtype int64"):
        gp.nn.layer_norm(gp.asarray(np.ones((2, 4), np.int64), device=device), 4)
    with pytest.raises(ValueError, match="rms_norm: normalized_shape"):
        gp.nn.rms_norm(gp.asarray(np.float32(1.0), device=device))
    with pytest.raises(TypeError, match="layer_norm: eps"):
        gp.nn.layer_norm(x, 4, eps="small")

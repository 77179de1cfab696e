"""gp.nn on the default device: softmax, log_softmax, layer_norm and rms_norm against float64
references of the dtype-rounded inputs, over float16 / bfloat16 / float32 / float64, odd and
long rows (past what a CUDA thread block holds on chip), other axes, non-contiguous and
misaligned inputs, empty and 0-d arrays, -inf / NaN rows, the fused residual; the activations
(gelu in both forms, silu) and the gated products (swiglu, geglu); and bad input."""

import math

import ml_dtypes
import numpy as np
import pytest
from helpers import UNIT_ROUNDOFF, host, npdt, rand, run_readme_example

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
        bad = ~((np.abs(g - ref) <= tol) | (g == ref) | (np.isnan(g) & np.isnan(ref)))
    assert not bad.any(), (
        f"{int(bad.sum())} of {bad.size} off; first got {g[bad][0]} want {ref[bad][0]} "
        f"tol {np.broadcast_to(tol, ref.shape)[bad][0]}"
    )


# (300, 24), (129, 1024), (77, 768): many short rows (on CUDA, rows that fill less than a
# thread's register cache).
SHAPES = [
    (3, 1000),
    (2, 3, 257),
    (5, 4096),
    (1, 1),
    (2, 20000),
    (0, 8),
    (300, 24),
    (129, 1024),
    (77, 768),
]


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


# (2, 40000): past what a CUDA block holds in registers for 16-bit rows too; (2, 20001): the
# one-element path on rows past it; (300, 24), (129, 1024): many short rows.
NORM_SHAPES = [
    ((4, 1000), 1),
    ((2, 3, 4096), 1),
    ((3, 5, 7), 2),
    ((2, 20000), 1),
    ((2, 40000), 1),
    ((2, 20001), 1),
    ((0, 16), 1),
    ((300, 24), 1),
    ((129, 1024), 1),
]


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
    # Without weight: the last dim; eps defaults to float32's machine epsilon (float64's for
    # float64), as torch.
    y = F.rms_norm(gp.asarray(x, device=device))
    eps = float(np.finfo(np.float64 if dtype == "float64" else np.float32).eps)
    ref, scale = rms_norm_ref(f64(x), 1, None, eps)
    check(y, ref, dtype, scale)
    # Small values: the default eps must not swamp them (a row of 1e-3 normalizes to ~1).
    tiny = np.full((2, 64), 1e-3).astype(npdt(dtype))
    y = F.rms_norm(gp.asarray(tiny, device=device))
    ref, scale = rms_norm_ref(f64(tiny), 1, None, eps)
    check(y, ref, dtype, scale)


def test_norms_with_misaligned_operands_take_the_element_path(rng, device):
    # Weight, bias and residual starting one element into their buffers: no 16-byte vectors.
    x = rand(rng, (3, 256), "bfloat16", scale=2.0)
    flat = rand(rng, (1 + 3 * 256,), "bfloat16", scale=1.0)
    gx = gp.asarray(x, device=device)
    gw = gp.asarray(flat, device=device)[1:257]
    gr = gp.reshape(gp.asarray(flat, device=device)[1:], (3, 256))
    w = f64(flat[1:257])
    y, h = gp.nn.layer_norm(gx, 256, gw, gw, residual=gr)
    hh = (f64(x) + f64(flat[1:]).reshape(3, 256)).astype(npdt("bfloat16"))
    np.testing.assert_array_equal(host(h), hh)
    ref, scale = layer_norm_ref(f64(hh), 1, w, w, 1e-5)
    check(y, ref, "bfloat16", scale)


@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])
@pytest.mark.parametrize("cols", [4096, 20000, 40000, 1000])
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


def erf(x):
    return np.vectorize(math.erf, otypes=[np.float64])(x)


ACTS = {
    "gelu": lambda x: 0.5 * x * (1 + erf(x / np.sqrt(2))),
    "gelu_tanh": lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3))),
    "silu": lambda x: x / (1 + np.exp(-x)),
}


def act_call(name, gx):
    if name == "gelu_tanh":
        return gp.nn.gelu(gx, approximate="tanh")
    return getattr(gp.nn, name)(gx)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(ACTS))
def test_activations(rng, device, dtype, name):
    x = rand(rng, (5, 37), dtype, scale=3.0)
    x.reshape(-1)[:6] = np.array([0.0, -0.0, 20.0, -20.0, np.inf, -np.inf]).astype(npdt(dtype))
    with np.errstate(over="ignore", invalid="ignore"):
        ref = ACTS[name](f64(x))
    # (-inf gives NaN: -inf times a factor that reaches 0, as the formulas say)
    got = act_call(name, gp.asarray(x, device=device))
    check(got, ref, dtype, np.abs(ref) + 1)


@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])
@pytest.mark.parametrize("gated", ["swiglu", "geglu", "geglu_tanh"])
def test_gated_products(rng, device, dtype, gated):
    x = rand(rng, (3, 4, 2 * 50), dtype, scale=2.0)
    gx = gp.asarray(x, device=device)
    act = {"swiglu": "silu", "geglu": "gelu", "geglu_tanh": "gelu_tanh"}[gated]
    g, u = f64(x)[..., :50], f64(x)[..., 50:]
    ref = ACTS[act](g) * u
    if gated == "geglu_tanh":
        one = gp.nn.geglu(gx, approximate="tanh")
        two = F.geglu(gx[..., :50], gx[..., 50:], approximate="tanh")
    else:
        fn = getattr(gp.nn, gated)
        one, two = fn(gx), fn(gx[..., :50], gx[..., 50:])
    assert one.shape == (3, 4, 50)
    check(one, ref, dtype, np.abs(ref) + 1)
    np.testing.assert_array_equal(host(one), host(two))
    # Two arguments broadcast.
    up = rand(rng, (50,), dtype, scale=1.0)
    b = gp.nn.swiglu(gx[..., :50], gp.asarray(up, device=device))
    check(b, ACTS["silu"](g) * f64(up), dtype, np.abs(ACTS["silu"](g) * f64(up)) + 1)


def test_activation_bad_input(device):
    x = gp.asarray(np.ones((2, 5), np.float32), device=device)
    with pytest.raises(
        ValueError, match=r"swiglu: the last dim .* must be even, got shape \(2, 5\)"
    ):
        gp.nn.swiglu(x)
    with pytest.raises(ValueError, match="gelu: approximate must be 'none' or 'tanh'"):
        gp.nn.gelu(x, approximate="erf")
    with pytest.raises(TypeError, match="silu"):
        gp.nn.silu(gp.asarray(np.ones(3, np.complex64), device=device))


def rope_ref(x, cos, sin, pos, interleaved):
    """float64 rotary embedding of x (..., D) with tables (P, R / 2) at positions pos (broadcast
    to x.shape[:-1])."""
    half = cos.shape[1]
    c, s = cos[pos], sin[pos]  # (..., R / 2)
    out = x.copy()
    if interleaved:
        a, b = x[..., 0 : 2 * half : 2], x[..., 1 : 2 * half : 2]
        out[..., 0 : 2 * half : 2], out[..., 1 : 2 * half : 2] = a * c - b * s, b * c + a * s
    else:
        a, b = x[..., :half], x[..., half : 2 * half]
        out[..., :half], out[..., half : 2 * half] = a * c - b * s, b * c + a * s
    return out


def test_rope_cache(device):
    cos, sin = gp.nn.rope_cache(50, 16, base=500.0, device=device)
    assert cos.shape == (50, 8) and cos.dtype == gp.float32
    angle = np.arange(50)[:, None] * 500.0 ** (-np.arange(0, 16, 2) / 16)[None, :]
    np.testing.assert_allclose(f64(host(cos)), np.cos(angle), rtol=0, atol=2**-24)
    np.testing.assert_allclose(f64(host(sin)), np.sin(angle), rtol=0, atol=2**-24)
    with pytest.raises(ValueError, match="rotary_dim must be a positive even"):
        gp.nn.rope_cache(4, 7)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("interleaved", [False, True])
@pytest.mark.parametrize("rot", [64, 32])  # the whole head dim, or partial rotary
def test_apply_rotary_bhsd(rng, device, dtype, interleaved, rot):
    b, h, s, d = 2, 3, 11, 64
    x = rand(rng, (b, h, s, d), dtype, scale=1.0)
    cos, sin = gp.nn.rope_cache(40, rot, device=device, dtype=gp.float64)
    gx = gp.asarray(x, device=device)
    y = gp.nn.apply_rotary(gx, cos, sin, interleaved=interleaved)  # positions 0 .. s-1
    ref = rope_ref(f64(x), f64(host(cos)), f64(host(sin)), np.arange(s), interleaved)
    check(y, ref, dtype, np.abs(f64(x)).max() + 1)
    # Offsets (a chunk of a longer sequence): as an int start, or as an array; in place.
    ref = rope_ref(f64(x), f64(host(cos)), f64(host(sin)), np.arange(20, 20 + s), interleaved)
    y = gp.nn.apply_rotary(gx, cos, sin, 20, interleaved=interleaved)
    check(y, ref, dtype, np.abs(f64(x)).max() + 1)
    pos = gp.asarray(np.arange(20, 20 + s), device=device)
    gp.nn.apply_rotary(gx, cos, sin, pos, interleaved=interleaved, out=gx)
    check(gx, ref, dtype, np.abs(f64(x)).max() + 1)


def test_apply_rotary_bshd_and_decode(rng, device):
    b, s, h, d = 2, 5, 4, 32
    x = rand(rng, (b, s, h, d), "bfloat16", scale=1.0)
    cos, sin = gp.nn.rope_cache(64, d, device=device)
    pos = np.array([[3, 4, 5, 6, 7], [0, 1, 2, 3, 4]])  # per sequence: (B, S) -> (B, S, 1)
    y = gp.nn.apply_rotary(
        gp.asarray(x, device=device), cos, sin, gp.asarray(pos[:, :, None], device=device)
    )
    ref = rope_ref(f64(x), f64(host(cos)), f64(host(sin)), pos[:, :, None], False)
    check(y, ref, "bfloat16", 4.0)
    # Decode: one token per sequence at its own position, (B, H, 1, D) with positions (B, 1, 1).
    q = rand(rng, (b, h, 1, d), "float32", scale=1.0)
    at = np.array([17, 63])[:, None, None]
    y = gp.nn.apply_rotary(gp.asarray(q, device=device), cos, sin, gp.asarray(at, device=device))
    check(y, rope_ref(f64(q), f64(host(cos)), f64(host(sin)), at, False), "float32", 4.0)


def test_apply_rotary_bad_input(device):
    x = gp.asarray(np.ones((2, 4, 8), np.float32), device=device)
    cos, sin = gp.nn.rope_cache(6, 8, device=device)
    with pytest.raises(
        IndexError, match="apply_rotary: position 6 is out of range for tables of 6"
    ):
        gp.nn.apply_rotary(x, cos, sin, gp.asarray(np.array([0, 1, 2, 6]), device=device))
    with pytest.raises(IndexError, match="apply_rotary: position -1"):
        gp.nn.apply_rotary(x, cos, sin, gp.asarray(np.array([0, -1, 2, 3]), device=device))
    with pytest.raises(TypeError, match="apply_rotary: positions must be integers"):
        gp.nn.apply_rotary(x, cos, sin, gp.asarray(np.zeros(4, np.float32), device=device))
    with pytest.raises(ValueError, match=r"positions of shape \(3,\) do not broadcast"):
        gp.nn.apply_rotary(x, cos, sin, gp.asarray(np.zeros(3, np.int64), device=device))
    big_c, big_s = gp.nn.rope_cache(6, 16, device=device)
    with pytest.raises(ValueError, match="R <= the head dim 8"):
        gp.nn.apply_rotary(x, big_c, big_s)
    with pytest.raises(IndexError, match=r"positions 0 .. 3 are out of range for tables of 3"):
        gp.nn.apply_rotary(x, cos[:3], sin[:3])
    with pytest.raises(IndexError, match=r"positions 3 .. 6 are out of range for tables of 6"):
        gp.nn.apply_rotary(x, cos, sin, 3)
    with pytest.raises(ValueError, match="apply_rotary: out must be a contiguous array"):
        gp.nn.apply_rotary(x, cos, sin, out=gp.matrix_transpose(x))


def test_readme_example():
    scope = run_readme_example("### Transformer building blocks")
    assert scope["o"].shape == (1, 4, 16, 64)

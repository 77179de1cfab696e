"""gp.scaled_matmul on the default device: every scale recipe (per tensor, per row / column,
1x128 and 128x1 groups, 128x128 blocks), both 8-bit formats and their mixes, bfloat16 /
float16 / float32 results, bias and activations, transposed operands, tails and empty
problems, against a float64 product of the dequantized operands; which path serves it on
CUDA (cuBLASLt's FP8 matmul where it applies); and bad input."""

import math

import ml_dtypes
import numpy as np
import pytest
from gemm_ref import activate
from helpers import UNIT_ROUNDOFF, host, run_readme_example

import pygpukit as gp

F8 = {"e4m3": ml_dtypes.float8_e4m3fn, "e5m2": ml_dtypes.float8_e5m2}
GP8 = {"e4m3": gp.float8_e4m3fn, "e5m2": gp.float8_e5m2}


def cdiv(a, b):
    return -(-a // b)


def scale_shape(recipe, rows, cols, is_a):
    """The scale's shape for a recipe over an operand of (rows, cols): a is (M, K), b (K, N)."""
    k, outer = (cols, rows) if is_a else (rows, cols)
    o, kk = {
        "tensor": (1, 1),
        "outer": (outer, 1),
        "groups": (outer, cdiv(k, 128)),
        "blocks": (cdiv(outer, 128), cdiv(k, 128)),
    }[recipe]
    return (o, kk) if is_a else (kk, o)


def expand(scale, rows, cols):
    """One scale per element: each scale repeated over its block."""
    s = np.asarray(scale, np.float64).reshape(scale.shape if scale.ndim == 2 else (1, 1))
    out = s
    for d, extent in ((0, rows), (1, cols)):
        g = s.shape[d]
        if g == 1 or g == extent:
            continue
        out = np.repeat(out, 128, axis=d)
        out = out[:rows] if d == 0 else out[:, :cols]
    return np.broadcast_to(out, (rows, cols))


def quantized(rng, shape, fmt):
    x = rng.standard_normal(shape) * (4 if fmt == "e4m3" else 64)
    return x.astype(np.float32).astype(F8[fmt])


def reference(a, b, sa, sb, bias, act):
    A = a.astype(np.float64) * expand(sa, *a.shape)
    B = b.astype(np.float64) * expand(sb, *b.shape)
    pre = A @ B
    mag = np.abs(A) @ np.abs(B)
    if bias is not None:
        pre = pre + bias.astype(np.float64)
        mag = mag + np.abs(bias.astype(np.float64))
    return activate(pre, act), mag


def check(got, a, b, sa, sb, bias, act, out, run_bits=12):
    ref, mag = reference(a, b, sa, sb, bias, act)
    g = np.asarray(got).astype(np.float64)
    assert g.shape == ref.shape
    # FP8 tensor cores accumulate short runs in reduced precision before promoting to float32
    # (`run_bits`: what a run keeps, relative to the sum of its terms' magnitudes; our sm90
    # kernels promote every 128-deep k-block, 4 wgmma steps, and keep 11 there); the final
    # rounding to the output dtype on top. A wrong scale, layout or bias is orders of magnitude
    # outside.
    run_err = 2.0**-run_bits * 1.2
    tol = run_err * mag + UNIT_ROUNDOFF[out] * (np.abs(ref) + run_err * mag)
    tol = tol + 1e-30
    bad = ~(np.abs(g - ref) <= tol)
    assert not bad.any(), (
        f"{int(bad.sum())} of {bad.size} out of bound; first: got {g[bad][0]}, "
        f"want {ref[bad][0]}, tol {tol[bad][0]}"
    )


def run(
    rng,
    m,
    k,
    n,
    ra,
    rb,
    fa="e4m3",
    fb="e4m3",
    out="bfloat16",
    bias=False,
    act=None,
    b_layout="kmajor",
    a_layout="row",
    backend="auto",
):
    a = quantized(rng, (m, k), fa)
    b = quantized(rng, (k, n), fb)
    sa = (rng.random(scale_shape(ra, m, k, True)) + 0.5).astype(np.float32)
    sb = (rng.random(scale_shape(rb, k, n, False)) + 0.5).astype(np.float32)
    if ra == "tensor":
        sa = sa.reshape(())
    bv = (rng.standard_normal(n) * 8).astype(np.float32) if bias else None
    ga = (
        gp.asarray(a)
        if a_layout == "row"
        else gp.matrix_transpose(gp.asarray(np.ascontiguousarray(a.T)))
    )
    gb = (
        gp.matrix_transpose(gp.asarray(np.ascontiguousarray(b.T)))
        if b_layout == "kmajor"
        else gp.asarray(b)
    )
    gp.reset_dispatch_stats()
    y = gp.scaled_matmul(
        ga,
        gb,
        gp.asarray(sa),
        gp.asarray(sb),
        out_dtype=getattr(gp, out),
        bias=None if bv is None else gp.asarray(bv),
        activation=act,
        backend=backend,
    )
    assert y.dtype == getattr(gp, out) and y.shape == (m, n)
    run_bits = 11 if backend == "sm90" else 12
    check(host(y).astype(np.float32), a, b, sa, sb, bv, act, out, run_bits)
    return set(gp.dispatch_stats()["per_kernel"])


def on_hopper():
    d = gp.default_device()
    return d.type == "cuda" and tuple(gp.device_properties(d)["compute_capability"])[0] == 9


def sm90_fp8():
    """Whether the default device runs our sm90 8-bit kernels (SM 9.x, sm_90a build)."""
    return on_hopper() and "90a" in gp.runtime_info()["kernel_archs"]


# (scale_a recipe, scale_b recipe, served by cuBLASLt's FP8 matmul on Hopper for e4m3, K-major
# B, K and N multiples of 16); the others run as the dequantized product.
RECIPES = [
    ("tensor", "tensor", True),
    ("outer", "outer", True),
    ("tensor", "outer", True),
    ("outer", "tensor", True),
    ("groups", "blocks", True),
    ("groups", "groups", True),
    ("blocks", "groups", True),
    ("blocks", "blocks", False),
    ("outer", "blocks", False),
    ("groups", "tensor", False),
]


@pytest.mark.parametrize("ra, rb, served", RECIPES)
def test_recipes(rng, ra, rb, served):
    used = run(rng, 96, 384, 80, ra, rb)
    if on_hopper() and served:
        assert "matmul_cublaslt" in used, used


@pytest.mark.parametrize("fa, fb", [("e4m3", "e5m2"), ("e5m2", "e4m3"), ("e5m2", "e5m2")])
@pytest.mark.parametrize("ra, rb", [("tensor", "tensor"), ("outer", "outer"), ("groups", "blocks")])
def test_format_mixes(rng, fa, fb, ra, rb):
    run(rng, 64, 256, 48, ra, rb, fa=fa, fb=fb)


@pytest.mark.parametrize("out", ["bfloat16", "float16", "float32"])
@pytest.mark.parametrize(
    "bias, act",
    [(True, None), (True, "relu"), (True, "gelu"), (False, "gelu_tanh"), (True, "silu")],
)
@pytest.mark.parametrize("ra, rb", [("tensor", "tensor"), ("outer", "outer"), ("groups", "blocks")])
def test_bias_activation_and_outputs(rng, out, bias, act, ra, rb):
    run(rng, 64, 256, 32, ra, rb, out=out, bias=bias, act=act)


@pytest.mark.parametrize(
    "m, k, n", [(1, 128, 16), (1, 200, 17), (130, 300, 144), (7, 16, 9), (257, 129, 33)]
)
@pytest.mark.parametrize(
    "ra, rb", [("tensor", "tensor"), ("outer", "outer"), ("groups", "blocks"), ("blocks", "groups")]
)
def test_tails(rng, m, k, n, ra, rb):
    run(rng, m, k, n, ra, rb)


@pytest.mark.parametrize("a_layout, b_layout", [("row", "row"), ("col", "kmajor"), ("col", "row")])
def test_operand_layouts(rng, a_layout, b_layout):
    run(rng, 64, 256, 48, "outer", "outer", a_layout=a_layout, b_layout=b_layout)
    run(rng, 64, 256, 48, "groups", "blocks", a_layout=a_layout, b_layout=b_layout)


def test_empty_and_zero_k():
    a = gp.zeros((0, 32), dtype=gp.float8_e4m3fn)
    b = gp.zeros((32, 16), dtype=gp.float8_e4m3fn)
    one = gp.asarray(np.float32(1.0))
    assert gp.scaled_matmul(a, b, one, one).shape == (0, 16)
    a = gp.zeros((4, 0), dtype=gp.float8_e4m3fn)
    b = gp.zeros((0, 16), dtype=gp.float8_e5m2)
    bias = gp.asarray(np.arange(16, dtype=np.float32) - 8)
    y = gp.scaled_matmul(a, b, one, one, bias=bias, activation="relu", out_dtype=gp.float32)
    np.testing.assert_array_equal(host(y), np.tile(np.maximum(np.arange(16) - 8, 0), (4, 1)))


def test_nan_and_inf_propagate():
    a = np.ones((2, 32), np.float32)
    a[0, 3] = np.nan
    ga = gp.asarray(a.astype(F8["e4m3"]))
    b = gp.asarray(np.ones((32, 16), np.float32).astype(F8["e5m2"]))
    b_inf = np.ones((32, 16), np.float32)
    b_inf[0, 0] = np.inf
    one = gp.asarray(np.float32(1.0))
    y = host(gp.scaled_matmul(ga, b, one, one, out_dtype=gp.float32))
    assert np.isnan(y[0]).all() and (y[1] == 32).all()
    y = host(
        gp.scaled_matmul(
            gp.asarray(np.ones((1, 32), np.float32).astype(F8["e4m3"])),
            gp.asarray(b_inf.astype(F8["e5m2"])),
            one,
            one,
            out_dtype=gp.float32,
        )
    )
    assert np.isinf(y[0, 0]) and (y[0, 1:] == 32).all()


def test_bad_input():
    e4 = gp.ones((64, 256), dtype=gp.float8_e4m3fn)
    w = gp.ones((256, 32), dtype=gp.float8_e4m3fn)
    one = gp.asarray(np.float32(1.0))
    with pytest.raises(
        ValueError,
        match=r"scale_a of shape \(3, 5\) does not fit a of shape \(64, 256\).*"
        r"\(64, 2\) \(1x128 groups\)",
    ):
        gp.scaled_matmul(e4, w, gp.ones((3, 5)), one)
    with pytest.raises(
        ValueError,
        match=r"scale_b of shape \(2, 3\).*\(2, 32\) \(128x1 groups\) or "
        r"\(2, 1\) \(128x128 blocks\)",
    ):
        gp.scaled_matmul(e4, w, one, gp.ones((2, 3)))
    with pytest.raises(ValueError, match="scale_a of shape \\(64,\\)"):
        gp.scaled_matmul(e4, w, gp.ones(64), one)  # a 1-D per-row scale is ambiguous
    with pytest.raises(TypeError, match="scale_b must be float32, got float16"):
        gp.scaled_matmul(e4, w, one, gp.ones((1, 32), dtype=gp.float16))
    with pytest.raises(TypeError, match="float8_e4m3fn or float8_e5m2, got bfloat16"):
        gp.scaled_matmul(e4.astype(gp.bfloat16), w, one, one)
    with pytest.raises(ValueError, match=r"\(64, 256\) and \(128, 32\) are not aligned"):
        gp.scaled_matmul(e4, w[:128], one, one)
    with pytest.raises(ValueError, match="2-D"):
        gp.scaled_matmul(e4.reshape((1, 64, 256)), w, one, one)
    with pytest.raises(
        TypeError, match="out_dtype must be bfloat16, float16 or float32, got float8_e4m3fn"
    ):
        gp.scaled_matmul(e4, w, one, one, out_dtype=gp.float8_e4m3fn)
    with pytest.raises(ValueError, match="bias must be 1-D of length N = 32"):
        gp.scaled_matmul(e4, w, one, one, bias=gp.ones(31))
    with pytest.raises(ValueError, match="activation"):
        gp.scaled_matmul(e4, w, one, one, activation="tanh")


def test_float64_reference_is_the_definition(rng):
    # Scales that make every dequantized product exact in float32: the result equals the float64
    # reference to the output's rounding.
    a = np.round(rng.standard_normal((32, 128)) * 2).astype(np.float32).astype(F8["e4m3"])
    b = np.round(rng.standard_normal((128, 16)) * 2).astype(np.float32).astype(F8["e4m3"])
    sa = np.exp2(rng.integers(-3, 3, (32, 1))).astype(np.float32)
    sb = np.exp2(rng.integers(-3, 3, (1, 16))).astype(np.float32)
    y = gp.scaled_matmul(
        gp.asarray(a),
        gp.matrix_transpose(gp.asarray(np.ascontiguousarray(b.T))),
        gp.asarray(sa),
        gp.asarray(sb),
        out_dtype=gp.float32,
    )
    want = (a.astype(np.float64) * sa) @ (b.astype(np.float64) * sb)
    np.testing.assert_array_equal(host(y), want.astype(np.float32))
    assert math.isfinite(float(want.sum()))


def test_readme_example():
    scope = run_readme_example("### Matrix products, fused epilogues and FP8")
    assert scope["y8"].shape == (64, 128) and scope["y8"].dtype == gp.bfloat16
    assert scope["z"].shape == (64, 128)


# Our sm90 wgmma kernels for e4m3 (backend="sm90"): per-tensor and per-row / column scales, every
# output dtype, bias and activations, tails (M, N; K a multiple of 16 as TMA needs), a skinny
# long-K product (split K), against the float64 product of the dequantized operands.
@pytest.mark.parametrize("out", ["bfloat16", "float16", "float32"])
@pytest.mark.parametrize(
    "ra, rb", [("tensor", "tensor"), ("outer", "outer"), ("tensor", "outer"), ("outer", "tensor")]
)
@pytest.mark.parametrize(
    "m, k, n, bias, act",
    [
        (200, 272, 264, False, None),
        (136, 4224, 520, True, "gelu"),
        (1, 144, 8, True, "relu"),
        (16, 8192, 256, False, "silu"),
        (260, 128, 130, True, None),
    ],
    ids=lambda v: str(v),
)
def test_sm90_kernels(rng, out, ra, rb, m, k, n, bias, act):
    if not sm90_fp8():
        with pytest.raises(NotImplementedError, match="scaled_matmul"):
            run(rng, m, k, n, ra, rb, out=out, bias=bias, act=act, backend="sm90")
        return
    kernels = run(rng, m, k, n, ra, rb, out=out, bias=bias, act=act, backend="sm90")
    assert any(k_.startswith("pgk_gemm_sm90_") and "_kk_e4m3_" in k_ for k_ in kernels), kernels
    assert not any(k_.startswith("matmul_cublaslt") for k_ in kernels), kernels


@pytest.mark.parametrize(
    "what, kwargs, match",
    [
        ("block scales", dict(ra="groups", rb="blocks"), "block scales run on cuBLASLt"),
        ("e5m2", dict(fa="e5m2"), "take float8_e4m3fn operands"),
        ("K not a multiple of 16", dict(k=100), "16-byte"),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_sm90_refusals_name_the_reason(rng, what, kwargs, match):
    if not sm90_fp8():
        pytest.skip("needs an SM 9.x device and an sm_90a build")
    args = dict(m=64, k=256, n=64, ra="tensor", rb="tensor")
    args.update(kwargs)
    with pytest.raises(NotImplementedError, match=match):
        run(rng, args.pop("m"), args.pop("k"), args.pop("n"), backend="sm90", **args)


def test_forced_backend_off_cuda_or_unknown_says_so(rng):
    a = gp.asarray(quantized(rng, (8, 32), "e4m3"), device="cpu")
    b = gp.matrix_transpose(gp.asarray(quantized(rng, (8, 32), "e4m3"), device="cpu"))
    one = gp.asarray(np.float32(1.0), device="cpu")
    for backend in ("sm90", "cublaslt"):
        with pytest.raises(NotImplementedError, match=f"backend='{backend}' runs on CUDA"):
            gp.scaled_matmul(a, b, one, one, backend=backend)
    with pytest.raises(NotImplementedError, match="backend must be 'auto', 'cublaslt' or 'sm90'"):
        gp.scaled_matmul(a, b, one, one, backend="simt")
    with pytest.raises(ValueError, match="scaled_matmul: unknown backend"):
        gp.scaled_matmul(a, b, one, one, backend="nope")

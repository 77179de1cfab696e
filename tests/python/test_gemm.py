"""gemm / linear values: D = act(alpha * (A @ B) + beta * C + bias) against a float64 reference
of the rounded operands (gemm_ref.py), on the default device: every real dtype x activation x
epilogue, float32 output of 16-bit operands, tails in M / N / K, empty products (K = 0 gives
act(beta * C + bias)), batches and broadcasting, 1-D operands, operand and C / bias layouts,
NaN / inf, linear layers, determinism and paced (row-split) products."""

import numpy as np
import pytest
from gemm_ref import (
    ACTS,
    HALF,
    TF32_ROUNDOFF,
    activate,
    check_gemm,
    check_values,
    reference,
    run_gemm,
    up,
)
from helpers import FLOATS, check_equal, gpdt, host, npdt, rand

import pygpukit as gp


def randn(rng, shape, dtype, scale=1.0):
    return rand(rng, shape, dtype, scale=scale)


def epilogue_data(rng, kind, m, n, k, out, batch=()):
    """Keyword arguments of one epilogue kind; C and bias are scaled like the product (sqrt(k))
    so that leaving one out breaks the bound."""
    s = max(np.sqrt(k), 1.0)
    c = randn(rng, (*batch, m, n), out, s)
    bias = randn(rng, (n,), out, s)
    return {
        "plain": {},
        "bias": {"bias": bias},
        "alpha_beta_c": {"c": c, "alpha": -0.75, "beta": 0.5},
        "c_default_beta": {"c": c},
        "all": {"c": c, "alpha": 1.5, "beta": -2.0, "bias": bias},
    }[kind]


def raw(x):
    """The bits of a GPUArray's values (NaN-safe bitwise comparison)."""
    h = host(x)
    return h.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[h.dtype.itemsize])


# ---- the bound tells right from wrong ----


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float64"])
def test_bound_rejects_wrong_answers(rng, dtype):
    m, k, n = 24, 257, 40
    a, b = randn(rng, (m, k), dtype), randn(rng, (k, n), dtype)
    e = epilogue_data(rng, "all", m, n, k, dtype) | {"activation": "gelu"}
    ref, _, pre = reference(a, b, out=dtype, **e)
    check_values(ref.astype(npdt(dtype)), a, b, dtype=dtype, out=dtype, **e)
    wrong = {
        "no_bias": reference(a, b, out=dtype, **(e | {"bias": None}))[0],
        "no_c": reference(a, b, out=dtype, **(e | {"beta": 0.0}))[0],
        "alpha_1": reference(a, b, out=dtype, **(e | {"alpha": 1.0}))[0],
        "silu": activate(pre, "silu"),
        "relu": activate(pre, "relu"),
    }
    for name, w in wrong.items():
        try:
            check_values(w.astype(npdt(dtype)), a, b, dtype=dtype, out=dtype, **e)
        except AssertionError:
            continue
        pytest.fail(f"the bound accepts a wrong answer: {name}")
    if dtype == "float32":  # TF32 operands break the FP32 bound
        r = a.view(np.uint32) + np.uint32(0x1000) & np.uint32(0xFFFFE000)
        tf32 = reference(r.view(np.float32), b, out=dtype, **e)[0]
        with pytest.raises(AssertionError):
            check_values(tf32.astype(np.float32), a, b, dtype=dtype, out=dtype, **e)


# ---- dtype x activation x epilogue ----

EPILOGUES = ["plain", "bias", "alpha_beta_c", "c_default_beta", "all"]


@pytest.mark.parametrize("kind", EPILOGUES)
@pytest.mark.parametrize("act", ACTS)
@pytest.mark.parametrize("dtype", FLOATS)
def test_dtype_activation_epilogue(rng, device, dtype, act, kind):
    m, k, n = 17, 65, 33
    a, b = randn(rng, (m, k), dtype), randn(rng, (k, n), dtype)
    e = epilogue_data(rng, kind, m, n, k, dtype)
    x = run_gemm(a, b, activation=act, **e)
    assert x.device == device
    check_gemm(x, a, b, activation=act, **e)


@pytest.mark.parametrize("kind", ["plain", "all"])
@pytest.mark.parametrize("act", ACTS)
@pytest.mark.parametrize("dtype", HALF)
def test_float32_output_of_16bit(rng, dtype, act, kind):
    m, k, n = 33, 129, 17
    a, b = randn(rng, (m, k), dtype), randn(rng, (k, n), dtype)
    e = epilogue_data(rng, kind, m, n, k, "float32")
    x = run_gemm(a, b, activation=act, out_dtype="float32", **e)
    check_gemm(x, a, b, out="float32", activation=act, **e)


@pytest.mark.parametrize("dtype", FLOATS)
def test_out_dtype_same_as_operands(rng, dtype):
    a, b = randn(rng, (5, 9), dtype), randn(rng, (9, 3), dtype)
    x = run_gemm(a, b, out_dtype=dtype)
    check_gemm(x, a, b)
    assert np.array_equal(raw(x), raw(run_gemm(a, b)))


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
def test_c_and_bias_in_other_dtypes_are_cast(rng, dtype):
    # C and bias are read in the output dtype: wider ones are rounded to it first.
    a, b = randn(rng, (7, 33), dtype), randn(rng, (33, 5), dtype)
    c, bias = randn(rng, (7, 5), "float64", 6.0), randn(rng, (5,), "float64", 6.0)
    x = gp.gemm(up(a), up(b), up(c), bias=up(bias), beta=0.5)
    check_gemm(x, a, b, c=c, bias=bias, beta=0.5)
    x16 = gp.gemm(up(a), up(b), up(c.astype(np.float16)), bias=up(bias.astype(np.int32)))
    check_gemm(x16, a, b, c=c.astype(np.float16), bias=bias.astype(np.int32))


@pytest.mark.parametrize(
    "da, db, promoted",
    [
        ("bfloat16", "float16", "float32"),
        ("float16", "float32", "float32"),
        ("float32", "float64", "float64"),
        ("int8", "bfloat16", "bfloat16"),
        ("bool", "float16", "float16"),
        ("int32", "float32", "float64"),
    ],
)
def test_mixed_dtypes_promote(rng, da, db, promoted):
    # Operands promote as in matmul; the output, C and bias follow the promoted dtype.
    a = rand(rng, (5, 33), da, small=True) if da in ("int8", "int32", "bool") else None
    a = randn(rng, (5, 33), da) if a is None else a
    b = randn(rng, (33, 6), db)
    bias = randn(rng, (6,), promoted, 5.0)
    x = gp.gemm(up(a), up(b), bias=up(bias), activation="silu")
    check_gemm(x, a.astype(npdt(promoted)), b.astype(npdt(promoted)), bias=bias, activation="silu")


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_c_broadcast(rng, dtype):
    m, k, n = 9, 33, 7
    a, b = randn(rng, (m, k), dtype), randn(rng, (k, n), dtype)
    for shape in [(m, n), (n,), (m, 1), (1, n), (1, 1), (), (1, m, n)]:
        c = randn(rng, shape, dtype, 4.0)
        if shape == (1, m, n):  # C may not add batch dims to the result
            with pytest.raises(ValueError, match="gemm"):
                gp.gemm(up(a), up(b), up(c))
            continue
        gc = up(c)
        for beta in (None, 1.0, 0.5, -3.0):
            x = gp.gemm(up(a), up(b), gc, beta=beta, activation="silu")
            check_gemm(x, a, b, c=c, beta=beta, activation="silu")
        check_equal(gc, c, dtype)  # C is read, never written


def test_beta_zero_does_not_read_c(rng):
    a, b = randn(rng, (4, 6), "float32"), randn(rng, (6, 3), "float32")
    c = np.full((4, 3), np.nan, np.float32)
    x = gp.gemm(up(a), up(b), up(c), beta=0.0, alpha=2.0)
    check_gemm(x, a, b, alpha=2.0)


def test_alpha_zero_and_negative(rng):
    a, b = randn(rng, (6, 40), "float64"), randn(rng, (40, 5), "float64")
    c = randn(rng, (6, 5), "float64")
    for alpha in (0.0, -1.0, 1e-3, 1e3):
        x = gp.gemm(up(a), up(b), up(c), alpha=alpha, beta=0.25, activation="relu")
        check_gemm(x, a, b, c=c, alpha=alpha, beta=0.25, activation="relu")


# ---- shapes ----

TAILS = [1, 3, 17, 63, 65, 127, 129, 255, 257]
MKN = (
    [(s, 33, 17) for s in TAILS]
    + [(17, s, 33) for s in TAILS]
    + [(33, 17, s) for s in TAILS]
    + [(129, 257, 255), (255, 129, 257), (257, 255, 129), (1, 257, 1)]
)


@pytest.mark.parametrize("mkn", MKN, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("dtype", FLOATS)
def test_tails(rng, dtype, mkn):
    m, k, n = mkn
    a, b = randn(rng, (m, k), dtype), randn(rng, (k, n), dtype)
    e = epilogue_data(rng, "all", m, n, k, dtype)
    check_gemm(run_gemm(a, b, activation="gelu", **e), a, b, activation="gelu", **e)


@pytest.mark.parametrize("mkn", [(0, 5, 3), (4, 5, 0), (0, 5, 0), (4, 0, 3), (1, 0, 1)], ids=str)
@pytest.mark.parametrize("act", ACTS)
@pytest.mark.parametrize("dtype", FLOATS)
def test_empty(rng, dtype, act, mkn):
    m, k, n = mkn
    a, b = randn(rng, (m, k), dtype), randn(rng, (k, n), dtype)
    c, bias = randn(rng, (m, n), dtype, 3.0), randn(rng, (n,), dtype, 3.0)
    # Stale NaNs in the allocator's cache must not leak into a K = 0 result.
    junk = gp.full((m, n), float("nan"), dtype=gpdt(dtype))
    del junk
    x = run_gemm(a, b, c=c, bias=bias, alpha=3.0, beta=-0.5, activation=act)
    assert x.shape == (m, n)
    check_gemm(x, a, b, c=c, bias=bias, alpha=3.0, beta=-0.5, activation=act)
    if k == 0:  # without an epilogue, zeros
        check_equal(run_gemm(a, b, alpha=3.0), np.zeros((m, n), npdt(dtype)), dtype)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_empty_batch(rng, dtype):
    a, b = randn(rng, (0, 3, 4), dtype), randn(rng, (4, 5), dtype)
    x = run_gemm(a, b, bias=randn(rng, (5,), dtype), activation="relu")
    assert x.shape == (0, 3, 5) and str(x.dtype) == dtype


BATCHED = [
    ((3, 33, 65), (3, 65, 7), (3, 33, 7)),
    ((2, 1, 9, 17), (5, 17, 6), (6,)),  # -> (2, 5, 9, 6), C broadcast over batch and rows
    ((9, 17), (4, 17, 6), (4, 1, 6)),
    ((4, 9, 17), (17, 6), (9, 1)),
    ((4, 1, 5, 3, 2), (1, 6, 1, 2, 3), (4, 6, 5, 3, 3)),
    ((17,), (2, 3, 17, 5), (3, 5)),  # 1-D with batched
    ((2, 3, 5, 17), (17,), (2, 3, 5)),
]


@pytest.mark.parametrize("sa, sb, sc", BATCHED, ids=str)
@pytest.mark.parametrize("dtype", FLOATS)
def test_batched_broadcast(rng, dtype, sa, sb, sc):
    a, b = randn(rng, sa, dtype), randn(rng, sb, dtype)
    c = randn(rng, sc, dtype, 4.0)
    n = 1 if len(sb) == 1 else sb[-1]
    bias = randn(rng, (n,), dtype, 4.0)
    x = run_gemm(a, b, c=c, beta=0.5, bias=bias, activation="gelu")
    assert x.shape == np.matmul(a.astype(np.float32), b.astype(np.float32)).shape
    check_gemm(x, a, b, c=c, beta=0.5, bias=bias, activation="gelu")


@pytest.mark.parametrize("dtype", FLOATS)
def test_1d_operands(rng, dtype):
    k, n = 33, 6
    v, w, b = randn(rng, (k,), dtype), randn(rng, (k,), dtype), randn(rng, (k, n), dtype)
    bias_n, bias_1 = randn(rng, (n,), dtype), randn(rng, (1,), dtype)
    c_n, c_0 = randn(rng, (n,), dtype), randn(rng, (), dtype)
    x = run_gemm(v, b, c=c_n, bias=bias_n, activation="relu")  # (k,) @ (k, n) -> (n,)
    check_gemm(x, v, b, c=c_n, bias=bias_n, activation="relu")
    a = randn(rng, (n, k), dtype)
    x = run_gemm(a, v, c=c_n, bias=bias_1, beta=2.0)  # (n, k) @ (k,) -> (n,); N = 1
    check_gemm(x, a, v, c=c_n, bias=bias_1, beta=2.0)
    x = run_gemm(v, w, c=c_0, bias=bias_1, activation="silu")  # (k,) @ (k,) -> ()
    assert x.shape == ()
    check_gemm(x, v, w, c=c_0, bias=bias_1, activation="silu")


# ---- layouts of A, B, C and bias ----

# name -> (base shape from the view's shape, view): the same view of the NumPy base and of the
# GPUArray of it gives the operand.
VIEWS = {
    "row": (lambda r, c: (r, c), lambda x: x),
    "T": (lambda r, c: (c, r), lambda x: x.T),  # column-major
    "step": (lambda r, c: (r, 2 * c), lambda x: x[:, ::2]),  # every other column
    "neg": (lambda r, c: (r, c), lambda x: x[::-1]),  # negative row stride
    "neg_T": (lambda r, c: (c, r), lambda x: x[:, ::-1].T),
}


def viewed(rng, name, shape, dtype, scale=1.0):
    base_shape, view = VIEWS[name]
    base = randn(rng, base_shape(*shape), dtype, scale)
    nv, gv = view(base), view(up(base))
    assert nv.shape == gv.shape == shape
    return nv, gv


@pytest.mark.parametrize("lb", list(VIEWS))
@pytest.mark.parametrize("la", list(VIEWS))
@pytest.mark.parametrize("dtype", FLOATS)
def test_operand_layouts(rng, dtype, la, lb):
    m, k, n = 19, 40, 13
    na, ga = viewed(rng, la, (m, k), dtype)
    nb, gb = viewed(rng, lb, (k, n), dtype)
    nc, gc = viewed(rng, lb, (m, n), dtype, 6.0)  # C in a layout of its own
    bias = randn(rng, (2 * n,), dtype, 6.0)
    gbias = up(bias)[::-2]  # strided, reversed bias
    x = gp.gemm(ga, gb, gc, alpha=0.5, beta=-1.0, bias=gbias, activation="relu")
    check_gemm(x, na, nb, c=nc, alpha=0.5, beta=-1.0, bias=bias[::-2], activation="relu")
    for g, nv in ((ga, na), (gb, nb), (gc, nc)):  # inputs untouched
        check_equal(g, nv, dtype)


def test_batched_layouts(rng):
    a = randn(rng, (3, 40, 9), "float32")  # A = a.mT: column-major matrices
    b = randn(rng, (6, 40, 7), "float32")  # B = b[::-2]: negative batch stride
    c = randn(rng, (7, 9), "float32", 6.0)  # C = c.T: column-major
    ga, gb = gp.permute_dims(up(a), (0, 2, 1)), up(b)[::-2]
    x = gp.gemm(ga, gb, up(c).T, bias=up(c)[:, 0], activation="gelu")
    check_gemm(x, a.transpose(0, 2, 1), b[::-2], c=c.T, bias=c[:, 0], activation="gelu")


# ---- NaN and inf ----


@pytest.mark.parametrize(
    "act",
    [
        None,
        "relu",
        "gelu",
        "gelu_tanh",
        "silu",
    ],
)
@pytest.mark.parametrize("dtype", FLOATS)
def test_nan_propagates(rng, dtype, act):
    m, k, n = 6, 33, 5
    a, b = randn(rng, (m, k), dtype), randn(rng, (k, n), dtype)
    c, bias = randn(rng, (m, n), dtype), randn(rng, (n,), dtype)
    a[2, 7] = np.nan  # row 2
    b[4, 3] = np.nan  # column 3
    c[4, 1] = np.nan  # one element
    bias[0] = np.nan  # column 0
    got = host(run_gemm(a, b, c=c, bias=bias, activation=act)).astype(np.float64)
    want = np.zeros((m, n), bool)
    want[2], want[:, 3], want[4, 1], want[:, 0] = True, True, True, True
    np.testing.assert_array_equal(np.isnan(got), want)
    check_gemm(run_gemm(a, b, c=c, bias=bias, activation=act), a, b, c=c, bias=bias, activation=act)


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
def test_inf(dtype):
    a, b = np.ones((3, 4), npdt(dtype)), np.ones((4, 2), npdt(dtype))
    a[0, 1] = np.inf
    a[1, 1] = -np.inf
    for act in ACTS:
        got = host(run_gemm(a, b, activation=act))
        assert (got[0].astype(np.float64) == np.inf).all()  # act(+inf) = +inf for all four
        if act in (None, "relu"):
            assert (got[1].astype(np.float64) == (-np.inf if act is None else 0.0)).all()
        check_values(got[2:], a[2:], b, dtype=dtype, out=dtype, activation=act)


# ---- activations at known points (K = 0: the result is act(bias)) ----


@pytest.mark.parametrize("act", ["relu", "gelu", "gelu_tanh", "silu"])
@pytest.mark.parametrize("dtype", FLOATS)
def test_activation_values(dtype, act):
    x = np.array([-30, -8, -3, -1, -0.5, -1e-3, 0, 1e-3, 0.5, 1, 2, 3, 8, 30], npdt(dtype))
    a, b = np.zeros((1, 0), npdt(dtype)), np.zeros((0, x.size), npdt(dtype))
    got = run_gemm(a, b, bias=x, activation=act)
    check_gemm(got, a, b, bias=x, activation=act)
    if act in ("gelu", "gelu_tanh") and dtype in ("float32", "float64"):  # each is its own form
        other = activate(x, "gelu_tanh" if act == "gelu" else "gelu")
        with pytest.raises(AssertionError, match="out of bound"):
            check_values(
                other.astype(x.dtype)[None],
                a,
                b,
                dtype=dtype,
                out=dtype,
                bias=x,
                activation=act,
            )


# ---- linear ----


@pytest.mark.parametrize("xshape", [(40,), (7, 40), (2, 3, 40), (2, 1, 3, 40), (0, 40)], ids=str)
@pytest.mark.parametrize("act", ACTS)
@pytest.mark.parametrize("dtype", FLOATS)
def test_linear(rng, dtype, act, xshape):
    out_f = 9
    x, w = randn(rng, xshape, dtype), randn(rng, (out_f, 40), dtype)
    bias = randn(rng, (out_f,), dtype, 6.0)
    for bb in (None, bias):
        y = gp.linear(up(x), up(w), up(bb), activation=act)
        assert y.shape == (*xshape[:-1], out_f)
        check_gemm(y, x, w.T, bias=bb, activation=act)
    # The same as gemm on the transposed weight view.
    if len(xshape) == 2:
        y = gp.linear(up(x), up(w), bias=up(bias), activation=act)
        z = gp.gemm(up(x), up(w).T, bias=up(bias), activation=act)
        assert np.array_equal(raw(y), raw(z))


def test_linear_layouts(rng):
    x = randn(rng, (40, 12), "float32")  # x given as a column-major view
    w = randn(rng, (40, 9), "float32")  # weight given as a transposed view
    y = gp.linear(up(x).T, up(w).T, bias=up(x[0, :9]))
    check_gemm(y, x.T, w, bias=x[0, :9])
    xs = randn(rng, (2, 3, 80), "bfloat16")
    y = gp.linear(up(xs)[..., ::2], up(w.T.astype(npdt("bfloat16"))), activation="silu")
    check_gemm(y, xs[..., ::2], w.astype(npdt("bfloat16")), activation="silu")


def test_linear_zero_in_features_batched():
    y = gp.linear(gp.zeros((2, 3, 0)), gp.zeros((5, 0)), gp.ones(5), activation="relu")
    check_equal(y, np.ones((2, 3, 5), np.float32))


def test_linear_zero_in_features_2d():
    y = gp.linear(gp.zeros((3, 0)), gp.zeros((5, 0)), gp.full((5,), -2.0), activation="silu")
    np.testing.assert_allclose(host(y), np.full((3, 5), activate(-2.0, "silu")), rtol=1e-6)


# ---- precision, backend option, determinism, pacing ----


def test_tf32_precision(rng, device):
    a, b = randn(rng, (64, 512), "float32"), randn(rng, (512, 48), "float32")
    bias = randn(rng, (48,), "float32", 20.0)
    x = gp.gemm(up(a), up(b), bias=up(bias), activation="gelu", precision="tf32")
    check_gemm(x, a, b, bias=bias, activation="gelu", extra=2 * TF32_ROUNDOFF)
    y = gp.gemm(up(a), up(b), bias=up(bias), activation="gelu")
    check_gemm(y, a, b, bias=bias, activation="gelu")  # highest stays true FP32
    if device.type == "cpu":  # the CPU backend stays FP32
        assert np.array_equal(raw(x), raw(y))


@pytest.mark.parametrize("backend", ["auto", "cublaslt", "sm90", "sm80", "simt"])
def test_forced_cuda_families_refuse_cpu_arrays(rng, device, backend):
    if device.type != "cpu":
        pytest.skip("forced CUDA families are covered by test_gemm_cuda.py")
    a, b = randn(rng, (9, 33), "float64"), randn(rng, (33, 5), "float64")
    bias = randn(rng, (5,), "float64")
    calls = {
        "gemm": lambda: gp.gemm(up(a), up(b), bias=up(bias), backend=backend),
        "matmul": lambda: gp.matmul(up(a), up(b), backend=backend),
        "linear": lambda: gp.linear(up(a), up(b.T.copy()), backend=backend),
    }
    if backend != "auto":  # a CUDA kernel family cannot serve host arrays: not silently ignored
        for op, call in calls.items():
            with pytest.raises(NotImplementedError, match=f"{op}: backend='{backend}' is a CUDA"):
                call()
        return
    check_gemm(calls["gemm"](), a, b, bias=bias)
    assert np.array_equal(raw(calls["matmul"]()), raw(up(a) @ up(b)))
    check_gemm(calls["linear"](), a, b)


@pytest.mark.parametrize("dtype", FLOATS)
def test_deterministic(rng, dtype):
    a, b = randn(rng, (130, 300), dtype), randn(rng, (300, 70), dtype)
    c, bias = randn(rng, (130, 70), dtype), randn(rng, (70,), dtype)
    ga, gb, gc, gbias = up(a), up(b), up(c), up(bias)
    first = raw(gp.gemm(ga, gb, gc, beta=0.5, bias=gbias, activation="gelu"))
    for _ in range(2):
        again = raw(gp.gemm(ga, gb, gc, beta=0.5, bias=gbias, activation="gelu"))
        assert np.array_equal(first, again)


def test_large(rng):
    # The CPU GEMM's panel edges and threads with the epilogue applied per element.
    a, b = randn(rng, (300, 520), "float32"), randn(rng, (520, 270), "float32")
    c, bias = randn(rng, (300, 1), "float32", 20.0), randn(rng, (270,), "float32", 20.0)
    x = run_gemm(a, b, c=c, bias=bias, alpha=0.5, activation="silu")
    check_gemm(x, a, b, c=c, bias=bias, alpha=0.5, activation="silu")


@pytest.mark.parametrize("cshape", ["full", "rows", "cols"])
@pytest.mark.parametrize("dtype, out", [("float64", "float64"), ("bfloat16", "float32")])
def test_paced_row_blocks(rng, device, dtype, out, cshape):
    # A best-effort task's product runs as row blocks (of ~10 rows, kept 256-byte aligned);
    # C's rows must follow each block.
    m, k, n = 70, 64, 32
    sched = gp.scheduler.Scheduler(
        device=device,
        memory_capacity=64 << 20,
        best_effort_sms=0,  # row blocks are for tenants without an SM partition
        best_effort_slice_flops=2 * n * k * 10,
    )
    try:
        sched.add_tenant("be", "best_effort")
        a, b = randn(rng, (m, k), dtype), randn(rng, (k, n), dtype)
        c = randn(rng, {"full": (m, n), "rows": (m, 1), "cols": (n,)}[cshape], out, 6.0)
        bias = randn(rng, (n,), out, 6.0)
        args = (up(a, device), up(b, device), up(c, device))
        kw = dict(beta=-0.5, bias=up(bias, device), activation="gelu", out_dtype=gpdt(out))
        x = sched.submit("be", lambda: gp.gemm(*args, **kw)).result(timeout=30)
        assert sched.stats()["tenants"]["be"]["launches"] >= 2
        check_gemm(x, a, b, out=out, c=c, beta=-0.5, bias=bias, activation="gelu")
    finally:
        sched.shutdown()

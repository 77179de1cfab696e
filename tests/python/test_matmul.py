# Over 600 lines on purpose: one suite per module, sharing its fixtures and reference helpers;
# a topic moves to its own file once it needs none of them.
"""matmul / `@` against a float64 (complex128) NumPy reference of the same rounded operands.

Every result is checked elementwise against the error bound of a dot product,
|C - ref| <= c * min(K + 2, 8 sqrt(K + 2)) * u * (|A| @ |B|) (plus the final rounding to a
16-bit dtype), so a wrong element, a transposed or misplaced block, or TF32 in place of FP32
cannot pass."""

import concurrent.futures

import numpy as np
import pytest
from helpers import (
    BOOL,
    INEXACT,
    INTS,
    NATIVE,
    UNIT_ROUNDOFF,
    check_equal,
    cmp,
    gpdt,
    host,
    kind,
    npdt,
    rand,
)

import pygpukit as gp

HALF = ["float16", "bfloat16"]
# Smallest subnormal of each dtype (of a component for complex): the absolute error a result
# near zero may carry from gradual underflow.
TINY = {
    "float16": 2.0**-24,
    "bfloat16": 2.0**-133,
    "float32": 2.0**-149,
    "float64": 5e-324,
    "complex64": 2.0**-149,
    "complex128": 5e-324,
}
TF32_ROUNDOFF = 2.0**-11  # 10 explicit mantissa bits


def wide(dtype):
    return np.complex128 if kind(dtype) == "c" else np.float64


def reference(a, b, dtype):
    """Exact-as-possible product of the (already rounded) NumPy operands and |A| @ |B|."""
    w = wide(dtype)
    aw, bw = cmp(a).astype(w), cmp(b).astype(w)
    return np.asarray(np.matmul(aw, bw)), np.asarray(np.matmul(np.abs(aw), np.abs(bw)))


def error_bound(dtype, k, ref, scale, *, extra=0.0):
    """Elementwise error bound of a length-k dot product computed in `dtype` (16-bit types
    accumulate in float32, then round once). `extra` adds a per-product relative error."""
    u = UNIT_ROUNDOFF[dtype]
    u_acc = 2.0**-24 if dtype in HALF else u
    c = 2.0 if kind(dtype) == "c" else 1.0  # complex products: two roundings per component
    # Worst case (k + 2) u; for k > 64 the probabilistic bound 8 sqrt(k + 2) u (Higham & Mary:
    # independent rounding errors exceed lambda sqrt(k) u with probability < 2 exp(-lambda^2 / 2)),
    # which keeps the bound tight enough to tell FP32 from TF32 at any k used here.
    growth = min(k + 2, 8 * np.sqrt(k + 2))
    acc = (c * growth * u_acc + extra) * scale
    if dtype in ("float64", "complex128"):
        acc = 2 * acc  # the float64 reference carries an error of the same size
    out = u * (np.abs(ref) + acc) if dtype in HALF else 0.0
    return acc + out + 2 * TINY[dtype]


def check_values(got, a, b, dtype, *, extra=0.0):
    """NumPy `got` is a @ b (NumPy operands a, b) in `dtype` within the dot-product bound."""
    ref, scale = reference(a, b, dtype)
    assert got.shape == ref.shape, (got.shape, ref.shape)
    got = cmp(got).astype(wide(dtype))
    k = a.shape[-1]
    tol = error_bound(dtype, k, ref, scale, extra=extra)
    err = np.abs(got - ref)
    bad = ~(err <= tol)  # NaN counts as bad
    if bad.any():
        idx = tuple(np.argwhere(bad)[0])
        ratio = np.nanmax(np.where(bad, err / np.maximum(tol, 1e-300), 0))
        t = np.broadcast_to(tol, err.shape)[idx]
        raise AssertionError(
            f"{int(bad.sum())} of {bad.size} elements out of bound (K={k}, {dtype}); first at "
            f"{idx}: got {got[idx]}, expected {ref[idx]}, tol {t}; worst err/tol {ratio:.3g}"
        )


def check_matmul(x, a, b, dtype, *, extra=0.0):
    """GPUArray `x` is a @ b (NumPy operands a, b) in `dtype` within the dot-product bound."""
    assert isinstance(x, gp.GPUArray)
    assert str(x.dtype) == dtype, (x.dtype, dtype)
    assert x.is_contiguous  # a fresh result, whatever the operands' layout
    got = host(x)
    assert got.shape == x.shape
    check_values(got, a, b, dtype, extra=extra)


def randn(rng, shape, dtype):
    return rand(rng, shape, dtype, scale=1.0)


def up(a):
    return gp.asarray(a)


def round_tf32(x):
    """float32 -> nearest TF32 value (10 explicit mantissa bits), as float32."""
    bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    return ((bits + np.uint32(0x1000)) & np.uint32(0xFFFFE000)).view(np.float32)


# ---- the bound itself is tight enough to tell FP32 from TF32 ----


@pytest.mark.parametrize("k", [256, 512, 1024])
def test_bound_rejects_tf32_rounding(rng, k):
    # A product of TF32-rounded operands is a valid TF32 result; the float32 bound must reject it
    # (otherwise the float32 tests below could not tell true FP32 from TF32) ...
    a, b = randn(rng, (48, k), "float32"), randn(rng, (k, 40), "float32")
    tf32 = round_tf32(a).astype(np.float64) @ round_tf32(b).astype(np.float64)
    ref, scale = reference(a, b, "float32")
    tol = error_bound("float32", k, ref, scale)
    assert (np.abs(tf32 - ref) > tol).mean() > 0.05
    # ... while an FP32 product stays far inside it ...
    fp32 = (a @ b).astype(np.float64)
    assert (np.abs(fp32 - ref) <= tol / 4).all()
    # ... and the TF32 bound accepts the TF32 product.
    tol32 = error_bound("float32", k, ref, scale, extra=2 * TF32_ROUNDOFF)
    assert (np.abs(tf32 - ref) <= tol32).all()


def test_bound_rejects_wrong_answer(rng):
    a, b = randn(rng, (7, 33), "float64"), randn(rng, (33, 5), "float64")
    x = up(a) @ up(b)
    check_matmul(x, a, b, "float64")
    with pytest.raises(AssertionError):
        check_matmul(x, a[::-1].copy(), b, "float64")
    with pytest.raises(AssertionError):
        check_matmul(up(a).astype(gp.float32) @ up(b), a, b, "float64")  # dtype


# ---- shapes ----

MKN = [
    (1, 1, 1),
    (1, 7, 1),
    (7, 1, 33),
    (33, 65, 7),
    (65, 33, 127),
    (127, 257, 65),
    (257, 127, 1),
    (1, 257, 127),
    (7, 257, 33),
    (65, 7, 257),
]


@pytest.mark.parametrize("mkn", MKN, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("dtype", INEXACT)
def test_2d(rng, device, dtype, mkn):
    m, k, n = mkn
    a, b = randn(rng, (m, k), dtype), randn(rng, (k, n), dtype)
    x = up(a) @ up(b)
    assert x.device == device
    check_matmul(x, a, b, dtype)


@pytest.mark.parametrize(
    "mkn",
    [(1000, 5, 3), (3, 5, 1000), (4, 3000, 2), (600, 1, 600), (2, 4000, 1)],
    ids=lambda s: "x".join(map(str, s)),
)
@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16", "complex64"])
def test_tall_skinny(rng, dtype, mkn):
    m, k, n = mkn
    a, b = randn(rng, (m, k), dtype), randn(rng, (k, n), dtype)
    check_matmul(up(a) @ up(b), a, b, dtype)


@pytest.mark.parametrize("k", [1, 7, 257, 1000])
@pytest.mark.parametrize("dtype", INEXACT)
def test_1d_1d(rng, dtype, k):
    a, b = randn(rng, (k,), dtype), randn(rng, (k,), dtype)
    x = up(a) @ up(b)
    assert x.shape == () and x.ndim == 0
    check_matmul(x, a, b, dtype)


@pytest.mark.parametrize("kn", [(1, 1), (7, 33), (65, 1), (257, 7)], ids=str)
@pytest.mark.parametrize("dtype", INEXACT)
def test_1d_2d_and_2d_1d(rng, dtype, kn):
    k, n = kn
    v, b = randn(rng, (k,), dtype), randn(rng, (k, n), dtype)
    check_matmul(up(v) @ up(b), v, b, dtype)  # (k,) @ (k, n) -> (n,)
    a = randn(rng, (n, k), dtype)
    check_matmul(up(a) @ up(v), a, v, dtype)  # (n, k) @ (k,) -> (n,)


@pytest.mark.parametrize(
    "sa, sb",
    [
        ((3, 0), (0, 4)),
        ((0,), (0,)),
        ((2, 3, 0), (0, 5)),
        ((0,), (0, 6)),
        ((5, 0), (0,)),
        ((4, 1, 2, 0), (3, 0, 7)),
    ],
    ids=str,
)
@pytest.mark.parametrize("dtype", INEXACT)
def test_k_zero_gives_zeros(dtype, sa, sb):
    expected = np.matmul(np.zeros(sa), np.zeros(sb))
    # Leave stale non-zero data in the allocator's cache: the result must still be zeros.
    junk = gp.full(expected.shape, float("nan"), dtype=gpdt(dtype))
    del junk
    x = gp.matmul(gp.zeros(sa, dtype=gpdt(dtype)), gp.zeros(sb, dtype=gpdt(dtype)))
    check_equal(x, np.zeros(expected.shape, npdt(dtype)), dtype)


@pytest.mark.parametrize(
    "sa, sb, out",
    [
        ((0, 5), (5, 3), (0, 3)),
        ((4, 5), (5, 0), (4, 0)),
        ((0, 5), (5, 0), (0, 0)),
        ((0,), (0, 0), (0,)),
        ((0, 3, 4), (4, 5), (0, 3, 5)),
        ((2, 0, 4), (4, 5), (2, 0, 5)),
        ((1, 3, 4), (0, 4, 6), (0, 3, 6)),
        ((5,), (2, 5, 0), (2, 0)),
        ((0, 4), (4,), (0,)),
    ],
    ids=str,
)
@pytest.mark.parametrize("dtype", ["float32", "complex128", "float16"])
def test_empty_result(rng, dtype, sa, sb, out):
    a, b = randn(rng, sa, dtype), randn(rng, sb, dtype)
    x = up(a) @ up(b)
    assert np.matmul(cmp(a), cmp(b)).shape == out
    assert x.shape == out and str(x.dtype) == dtype
    assert host(x).shape == out


BATCHED = [
    ((2, 1, 3, 4), (5, 4, 6)),  # -> (2, 5, 3, 6)
    ((3, 4), (2, 4, 6)),
    ((7, 3, 4), (4, 2)),
    ((1, 3, 4), (7, 4, 2)),
    ((4, 1, 5, 3, 2), (1, 6, 1, 2, 3)),
    ((3, 33, 65), (3, 65, 7)),
    ((4,), (2, 3, 4, 5)),  # 1-D with batched
    ((2, 3, 5, 4), (4,)),
    ((1, 1, 1, 7), (1, 1, 7, 1)),
]


@pytest.mark.parametrize("sa, sb", BATCHED, ids=str)
@pytest.mark.parametrize("dtype", INEXACT)
def test_batched_broadcast(rng, dtype, sa, sb):
    a, b = randn(rng, sa, dtype), randn(rng, sb, dtype)
    x = up(a) @ up(b)
    assert x.shape == np.matmul(cmp(a), cmp(b)).shape
    check_matmul(x, a, b, dtype)


# ---- layouts: views with transposed, negative, stepped, offset, broadcast and batch strides ----

# name -> (base shape of A, base shape of B, view): the view is applied to the NumPy base and to
# the GPUArray of it, and must give the same operand.
LAYOUTS = {
    "a.T@b": ((33, 7), (33, 5), lambda a, b: (a.T, b)),
    "a@b.T": ((7, 33), (5, 33), lambda a, b: (a, b.T)),
    "a.T@b.T": ((65, 7), (9, 65), lambda a, b: (a.T, b.T)),
    "mT": ((3, 33, 7), (3, 9, 33), lambda a, b: (a.mT, b.mT)),
    "neg_rows": ((7, 33), (33, 9), lambda a, b: (a[::-1], b[::-1])),
    "neg_both": ((7, 33), (33, 9), lambda a, b: (a[::-1, ::-1], b[::-1, ::-1])),
    "neg_T": ((33, 7), (9, 33), lambda a, b: (a[::-1].T, b[:, ::-1].T)),
    "step2": ((14, 66), (66, 18), lambda a, b: (a[::2, ::2], b[::2, ::2])),
    "step2_cols": ((7, 66), (33, 18), lambda a, b: (a[:, ::2], b[:, 1::2])),
    "offset": ((9, 36), (37, 11), lambda a, b: (a[1:, 3:], b[4:, 1:])),
    "offset_T": ((36, 9), (11, 35), lambda a, b: (a[3:, 1:].T, b[1:, 2:].T)),
    "batch_step": ((6, 7, 33), (3, 33, 5), lambda a, b: (a[::2], b)),
    "batch_neg": ((3, 7, 33), (3, 33, 5), lambda a, b: (a[::-1], b[::-1])),
    "batch_offset": ((4, 7, 33), (4, 33, 5), lambda a, b: (a[1:], b[:3])),
    "batch_inner": ((7, 4, 33), (33, 4, 5), lambda a, b: (perm(a, (1, 0, 2)), perm(b, (1, 0, 2)))),
    "batch_last": ((7, 33, 4), (33, 5, 4), lambda a, b: (perm(a, (2, 0, 1)), perm(b, (2, 0, 1)))),
    "batch_mixed": (
        (2, 7, 3, 33),
        (3, 2, 33, 5),
        lambda a, b: (perm(a, (0, 2, 1, 3)), perm(b, (1, 0, 2, 3))),
    ),
    "bcast_rows": ((1, 33), (33, 9), lambda a, b: (bcast(a, (7, 33)), b)),
    "bcast_cols": ((7, 1), (1, 9), lambda a, b: (bcast(a, (7, 33)), bcast(b, (33, 9)))),
    "bcast_batch": ((7, 33), (33, 5), lambda a, b: (bcast(a, (4, 7, 33)), bcast(b, (4, 33, 5)))),
    "bcast_batch_inner": (
        (2, 1, 7, 33),
        (33, 5),
        lambda a, b: (bcast(a, (2, 3, 7, 33)), bcast(b, (2, 3, 33, 5))),
    ),
    "bcast_scalar": ((1, 1), (33, 9), lambda a, b: (bcast(a, (7, 33)), b[::-1])),
}


def perm(x, axes):
    return np.transpose(x, axes) if isinstance(x, np.ndarray) else gp.permute_dims(x, axes)


def bcast(x, shape):
    return np.broadcast_to(x, shape) if isinstance(x, np.ndarray) else gp.broadcast_to(x, shape)


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("dtype", INEXACT)
def test_views(rng, dtype, layout):
    sa, sb, view = LAYOUTS[layout]
    abase, bbase = randn(rng, sa, dtype), randn(rng, sb, dtype)
    ga, gb = view(up(abase), up(bbase))
    na, nb = view(abase, bbase)
    assert ga.shape == na.shape and gb.shape == nb.shape
    check_matmul(ga @ gb, na, nb, dtype)
    # The operands are not changed by the product.
    check_equal(ga, na, dtype)
    check_equal(gb, nb, dtype)


def test_views_match_contiguous_bitwise(rng, device):
    # The same matrices in different layouts give bitwise the same float64 product on the CPU
    # oracle (exact sums are not expected on a GPU, whose kernels may depend on the layout).
    abase, bbase = randn(rng, (9, 36), "float64"), randn(rng, (37, 11), "float64")
    a, b = up(abase)[1:, 3:], up(bbase)[4:, 1:]
    x = a @ b
    check_matmul(x, abase[1:, 3:], bbase[4:, 1:], "float64")
    if device.type == "cpu":
        y = gp.contiguous(a) @ gp.contiguous(b)
        np.testing.assert_array_equal(host(x), host(y))


# ---- dtypes: promotion, precision and unsupported dtypes ----


@pytest.mark.parametrize(
    "da, db, out",
    [
        ("float16", "float32", "float32"),
        ("float32", "float64", "float64"),
        ("float64", "float16", "float64"),
        ("bfloat16", "float16", "float32"),
        ("bfloat16", "float32", "float32"),
        ("float64", "bfloat16", "float64"),
        ("complex64", "float64", "complex128"),
        ("float32", "complex64", "complex64"),
        ("float16", "complex128", "complex128"),
        ("complex64", "complex128", "complex128"),
        ("int8", "float16", "float16"),
        ("int16", "float16", "float32"),
        ("int64", "float32", "float64"),
        ("float32", "uint8", "float32"),
        ("int32", "float32", "float64"),
        ("uint16", "float64", "float64"),
        ("bool", "float32", "float32"),
        ("float16", "bool", "float16"),
        ("int8", "bfloat16", "bfloat16"),
        ("int16", "bfloat16", "float32"),
        ("bfloat16", "int32", "float64"),
        ("uint64", "complex64", "complex128"),
        ("int64", "complex64", "complex128"),
    ],
)
def test_mixed_dtypes_promote(rng, da, db, out):
    if da in NATIVE and db in NATIVE:
        assert np.result_type(npdt(da), npdt(db)) == np.dtype(out)  # NumPy 2 promotion
    a = rand(rng, (5, 33), da, small=True) if kind(da) in "biu" else randn(rng, (5, 33), da)
    b = rand(rng, (33, 6), db, small=True) if kind(db) in "biu" else randn(rng, (33, 6), db)
    x = up(a) @ up(b)
    assert str(x.dtype) == out
    # Integers up to 9 are exact in every float dtype: the reference is the promoted product.
    check_matmul(x, a.astype(npdt(out)), b.astype(npdt(out)), out)
    check_matmul(
        gp.matmul(up(b.T.copy()), up(a.T.copy())), b.T.astype(npdt(out)), a.T.astype(npdt(out)), out
    )


INT_AND_BOOL = INTS + BOOL


@pytest.mark.parametrize("dtype", INT_AND_BOOL)
def test_integer_operands_rejected(dtype):
    a = gp.ones((3, 4), dtype=gpdt(dtype))
    b = gp.ones((4, 2), dtype=gpdt(dtype))
    for f in (lambda: a @ b, lambda: gp.matmul(a, b), lambda: a[0] @ b, lambda: a @ b[:, 0]):
        with pytest.raises(TypeError, match="matmul") as e:
            f()
        assert dtype in str(e.value)


@pytest.mark.parametrize(
    "da, db", [("int8", "uint8"), ("int32", "uint32"), ("bool", "int8"), ("uint8", "int64")]
)
def test_mixed_integer_operands_rejected(da, db):
    a = gp.ones((3, 4), dtype=gpdt(da))
    b = gp.ones((4, 2), dtype=gpdt(db))
    with pytest.raises(TypeError, match="matmul") as e:
        a @ b
    # The message names a dtype the caller actually passed.
    assert da in str(e.value) or db in str(e.value), str(e.value)


@pytest.mark.parametrize("dtype", ["float32", "complex64"])
@pytest.mark.parametrize("mkn", [(64, 512, 48), (9, 1024, 17), (3, 2, 256, 40)], ids=str)
def test_float32_is_true_fp32_by_default(rng, dtype, mkn):
    # K >= 256 random data: TF32 (10-bit mantissa) breaks the float32 bound by a wide margin.
    *batch, m, k, n = mkn
    a, b = randn(rng, (*batch, m, k), dtype), randn(rng, (*batch, k, n), dtype)
    ga, gb = up(a), up(b)
    x = ga @ gb
    check_matmul(x, a, b, dtype)
    check_matmul(gp.matmul(ga, gb, precision="highest"), a, b, dtype)


@pytest.mark.parametrize("dtype", ["float32", "complex64"])
def test_tf32_precision(rng, device, dtype):
    a, b = randn(rng, (64, 512), dtype), randn(rng, (512, 48), dtype)
    ga, gb = up(a), up(b)
    x = gp.matmul(ga, gb, precision="tf32")
    check_matmul(x, a, b, dtype, extra=2 * TF32_ROUNDOFF)
    if device.type == "cpu":  # the CPU backend stays FP32
        np.testing.assert_array_equal(host(x), host(ga @ gb))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float64", "complex128"])
def test_tf32_precision_other_dtypes_unaffected(rng, dtype):
    a, b = randn(rng, (33, 300), dtype), randn(rng, (300, 17), dtype)
    check_matmul(gp.matmul(up(a), up(b), precision="tf32"), a, b, dtype)


def test_matmul_function_equals_operator(rng, device):
    a, b = randn(rng, (2, 33, 65), "float32"), randn(rng, (65, 7), "float32")
    ga, gb = up(a), up(b)
    x = ga @ gb
    for y in (
        gp.matmul(ga, gb),
        gp.matmul(ga, gb, precision="highest"),
        gp.matmul(ga, gb, precision="highest", backend="auto"),
        gp.matmul(x1=ga, x2=gb),
    ):
        assert y.shape == x.shape and y.dtype == x.dtype and y.device == device
        np.testing.assert_array_equal(host(y), host(x))
    check_matmul(x, a, b, "float32")
    # __rmatmul__ path: a NumPy-free reflected call gives the same result.
    np.testing.assert_array_equal(host(gb.__rmatmul__(ga)), host(x))


def test_default_precision_is_highest():
    assert "precision: object = 'highest'" in gp.matmul.__doc__
    assert "backend: object = 'auto'" in gp.matmul.__doc__


def test_backend_cublaslt_option(rng, device):
    # backend= picks the implementation of a CUDA matmul; the CPU device has one kernel and
    # refuses a forced CUDA family (ops.h: "Which implementation serves a CUDA matmul").
    a, b = randn(rng, (33, 65), "float32"), randn(rng, (65, 7), "float32")
    ga, gb = up(a), up(b)
    if device.type == "cpu":
        with pytest.raises(NotImplementedError, match="backend='cublaslt' is a CUDA kernel"):
            gp.matmul(ga, gb, backend="cublaslt")
        return
    y = gp.matmul(ga, gb, backend="cublaslt")
    assert y.device == device
    check_matmul(y, a, b, "float32")
    np.testing.assert_array_equal(host(y), host(gp.matmul(ga, gb, backend="auto")))
    z = gp.matmul(ga, gb, backend="cublaslt", precision="tf32")
    check_matmul(z, a, b, "float32", extra=2 * TF32_ROUNDOFF)


@pytest.mark.parametrize("bad", ["foo", "", "HIGHEST", "tf16", "medium"])
def test_bad_precision(bad):
    a = gp.ones((2, 2))
    with pytest.raises(ValueError, match="matmul") as e:
        gp.matmul(a, a, precision=bad)
    assert "precision" in str(e.value) and f"'{bad}'" in str(e.value)


@pytest.mark.parametrize("bad", ["foo", "", "cublas", "cpu", "AUTO"])
def test_bad_backend(bad):
    a = gp.ones((2, 2))
    with pytest.raises(ValueError, match="matmul") as e:
        gp.matmul(a, a, backend=bad)
    assert "backend" in str(e.value) and f"'{bad}'" in str(e.value)


@pytest.mark.parametrize("kw", [{"precision": None}, {"precision": 32}, {"backend": 1}])
def test_non_string_options(kw):
    a = gp.ones((2, 2))
    with pytest.raises(TypeError, match="matmul"):
        gp.matmul(a, a, **kw)


def test_options_keyword_only():
    a = gp.ones((2, 2))
    with pytest.raises(TypeError, match="matmul"):
        gp.matmul(a, a, "tf32")


# ---- large products: the blocked CPU GEMM's panel edges and its threads ----


@pytest.mark.parametrize(
    "mkn", [(300, 520, 270), (130, 300, 530), (65, 257, 513)], ids=lambda s: "x".join(map(str, s))
)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_large(rng, dtype, mkn):
    m, k, n = mkn
    a, b = randn(rng, (m, k), dtype), randn(rng, (k, n), dtype)
    check_matmul(up(a) @ up(b), a, b, dtype)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "complex64", "complex128"])
def test_large_other_dtypes(rng, dtype):
    a, b = randn(rng, (129, 520), dtype), randn(rng, (520, 515), dtype)
    check_matmul(up(a) @ up(b), a, b, dtype)


def test_large_batched_transposed(rng):
    a, b = randn(rng, (3, 260, 70), "float32"), randn(rng, (1, 530, 260), "float32")
    ga, gb = up(a).mT, up(b).mT
    check_matmul(ga @ gb, np.swapaxes(a, -1, -2), np.swapaxes(b, -1, -2), "float32")


def test_concurrent_callers(rng):
    # Several Python threads issuing products at once (shared runtime, allocator and pool).
    data = [(randn(rng, (65, 130), "float32"), randn(rng, (130, 70), "float32")) for _ in range(8)]

    def work(pair):
        a, b = pair
        return [host(up(a) @ up(b)) for _ in range(3)]

    with concurrent.futures.ThreadPoolExecutor(4) as ex:
        results = list(ex.map(work, data))
    for (a, b), outs in zip(data, results):
        for out in outs:
            check_values(out, a, b, "float32")


def test_repeatable(rng):
    a, b = randn(rng, (300, 520), "float32"), randn(rng, (520, 270), "float32")
    ga, gb = up(a), up(b)
    first = host(ga @ gb)
    for _ in range(2):
        np.testing.assert_array_equal(host(ga @ gb), first)


# ---- NaN and inf ----


@pytest.mark.parametrize("dtype", INEXACT)
def test_nan_inf_propagate(rng, dtype):
    m, k, n = 9, 33, 7
    a, b = randn(rng, (m, k), dtype), randn(rng, (k, n), dtype)
    b[b == 0] = 1  # inf * 0 would add NaNs where the test expects +-inf
    a[2, 5] = np.nan  # NaN row 2
    b[7, 4] = np.nan  # NaN column 4
    a[5, 3] = np.inf  # row 5: +-inf following the sign of b[3, :]
    a[6, 1] = -np.inf
    a[6, 2] = np.inf  # row 6: inf - inf -> NaN wherever b[1, j] and b[2, j] share a sign
    x = up(a) @ up(b)
    w = wide(dtype)
    with np.errstate(invalid="ignore", over="ignore"):
        ref = cmp(a).astype(w) @ cmp(b).astype(w)
    got = cmp(host(x)).astype(w)
    assert np.isnan(ref[2]).all() and np.isnan(ref[:, 4]).all()
    if kind(dtype) == "c":
        # Complex infinities have no single IEEE answer (NumPy's BLAS path turns inf + 0j into
        # NaN through alpha = 1 + 0j); require NaN rows / columns and non-finite inf rows.
        assert np.isnan(got[2]).all() and np.isnan(got[:, 4]).all()
        assert not np.isfinite(got[5:7]).any()
        finite = np.ones(got.shape, bool)
        finite[[2, 5, 6]] = False
        finite[:, 4] = False
        assert np.isfinite(got[finite]).all()
    else:
        assert np.isinf(ref[5]).sum() == n - 1
        np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
        np.testing.assert_array_equal(np.isinf(got), np.isinf(ref))
        np.testing.assert_array_equal(got[np.isinf(ref)], ref[np.isinf(ref)])
    # Rows and columns untouched by non-finite values keep their ordinary accuracy.
    rows, cols = [0, 1, 3, 4, 7, 8], [0, 1, 2, 3, 5, 6]
    check_values(host(x)[rows][:, cols], a[rows], b[:, cols], dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64"])
def test_nan_1d(dtype):
    a = np.array([1.0, np.nan, 2.0], npdt(dtype))
    b = np.array([0.0, 0.0, 1.0], npdt(dtype))
    assert np.isnan(complex(host(up(a) @ up(b))))  # NaN * 0 is NaN, as in NumPy


# ---- bad input ----


@pytest.mark.parametrize(
    "sa, sb",
    [
        ((3,), (4,)),
        ((2, 3), (4, 5)),
        ((2, 3), (4,)),
        ((3,), (4, 5)),
        ((2, 3, 4), (2, 5, 6)),
        ((5, 1, 7), (5, 8, 2)),
    ],
    ids=str,
)
def test_shape_mismatch(sa, sb):
    a, b = gp.zeros(sa), gp.zeros(sb)
    for f in (lambda: a @ b, lambda: gp.matmul(a, b)):
        with pytest.raises(ValueError, match="matmul") as e:
            f()
        msg = str(e.value)
        assert str(sa) in msg and str(sb) in msg, msg


@pytest.mark.parametrize(
    "sa, sb",
    [((2, 3, 4), (5, 4, 6)), ((3, 2, 2), (2, 2, 2)), ((2, 1, 3, 4), (3, 1, 4, 6))],
    ids=str,
)
def test_batch_mismatch(sa, sb):
    a, b = gp.zeros(sa), gp.zeros(sb)
    assert not _np_broadcastable(sa[:-2], sb[:-2])
    with pytest.raises(ValueError, match="matmul") as e:
        a @ b
    msg = str(e.value)
    assert str(sa) in msg and str(sb) in msg, msg


def _np_broadcastable(s1, s2):
    try:
        np.broadcast_shapes(s1, s2)
    except ValueError:
        return False
    return True


@pytest.mark.parametrize("sa, sb", [((), (3,)), ((3,), ()), ((), ()), ((), (3, 4))], ids=str)
def test_zero_dim_operand(sa, sb):
    a, b = gp.ones(sa), gp.ones(sb)
    with pytest.raises(ValueError, match="matmul"):
        a @ b
    with pytest.raises(ValueError, match="matmul"):
        gp.matmul(a, b)


@pytest.mark.parametrize(
    "other", [[1.0, 2.0, 3.0], 2.0, 3, 1j, None, "abc", (1.0, 2.0, 3.0)], ids=repr
)
def test_non_array_operand(other):
    a = gp.ones((3,))
    with pytest.raises(TypeError):
        a @ other
    with pytest.raises(TypeError):
        other @ a
    with pytest.raises(TypeError, match="matmul"):
        gp.matmul(a, other)
    with pytest.raises(TypeError, match="matmul"):
        gp.matmul(other, a)


def test_numpy_operand_not_converted():
    # Documented: GPUArrays are never implicitly converted to or from NumPy.
    a, n = gp.ones((3,)), np.ones(3, np.float32)
    with pytest.raises(TypeError):
        a @ n
    with pytest.raises(TypeError):
        n @ a
    with pytest.raises(TypeError, match="matmul"):
        gp.matmul(a, n)


def test_different_devices(rng, device):
    others = [d for d in gp.devices() if d != device]
    if not others:
        pytest.skip("only one device")
    a = randn(rng, (3, 4), "float32")
    x, y = gp.asarray(a, device=device), gp.asarray(a.T.copy(), device=others[0])
    for f in (lambda: x @ y, lambda: y @ x, lambda: gp.matmul(x, y)):
        with pytest.raises(ValueError, match="matmul") as e:
            f()
        assert "device" in str(e.value)
        assert str(device) in str(e.value) and str(others[0]) in str(e.value)

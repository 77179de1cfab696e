"""Reductions and scans against NumPy (float64 / complex128 references for inexact dtypes) on
random data: every dtype each accepts, axes and keepdims, special values, layouts (strided,
negative strides, broadcast, 0-d, empty), sizes that split the work, determinism and errors."""

import numpy as np
import pytest
from helpers import (
    ALL,
    BF16,
    COMPLEX,
    FLOATS,
    INEXACT,
    INTS,
    NATIVE,
    UNIT_ROUNDOFF,
    arr,
    check_close,
    check_equal,
    cmp,
    kind,
    npdt,
    rand,
    run_readme_example,
)

import pygpukit as gp

REAL = ["bool"] + INTS + FLOATS
AXES = [None, 0, 1, -1, (0, 2), (2, 0, 1), ()]
SHAPE = (4, 5, 6)


def np_axis(axis):
    return axis if axis is None or not isinstance(axis, tuple) else tuple(axis)


def sum_dtype(dt):
    if dt == "bool" or dt.startswith("int"):
        return "int64"
    if dt.startswith("uint"):
        return "uint64"
    return dt


def wide(x):
    """float64 / complex128 copy (integers stay integers)."""
    x = np.asarray(x)
    if x.dtype == BF16 or x.dtype.kind == "f":
        return x.astype(np.float64)
    if x.dtype.kind == "c":
        return x.astype(np.complex128)
    return x


def n_reduced(shape, axis):
    if axis is None:
        return int(np.prod(shape))
    axes = axis if isinstance(axis, tuple) else (axis,)
    return int(np.prod([shape[a] for a in axes])) if axes else 1


def check_float_reduction(got, ref, abs_ref, result, n):
    """`got` within rounding of `result` (once) plus float64 accumulation error over n terms."""
    u = UNIT_ROUNDOFF[result]
    atol = 4 * max(n, 1) * 2.0**-53 * float(np.max(abs_ref, initial=0.0)) + 1e-300
    check_close(
        got,
        ref.astype(npdt(result)),
        result,
        rtol=2 * u,
        atol=atol,
    )


# ---- sum / prod ----


@pytest.mark.parametrize("dt", ALL)
@pytest.mark.parametrize("axis", AXES)
def test_sum(dt, axis, rng):
    x = rand(rng, SHAPE, dt)
    keepdims = axis in (1, (0, 2))
    got = gp.sum(arr(x), axis=axis, keepdims=keepdims)
    res = sum_dtype(dt)
    if kind(dt) in "biu":
        check_equal(got, np.sum(x, axis=np_axis(axis), dtype=res, keepdims=keepdims), res)
    else:
        ref = np.sum(wide(x), axis=np_axis(axis), keepdims=keepdims)
        abs_ref = np.sum(np.abs(wide(x)), axis=np_axis(axis), keepdims=keepdims)
        check_float_reduction(got, ref, abs_ref, res, n_reduced(SHAPE, axis))


@pytest.mark.filterwarnings("ignore:overflow:RuntimeWarning")
@pytest.mark.parametrize("dt", ALL)
@pytest.mark.parametrize("axis", [None, 1, (0, 2)])
def test_prod(dt, axis, rng):
    x = rand(rng, SHAPE, dt, small=True)
    got = gp.prod(arr(x), axis=axis)
    res = sum_dtype(dt)
    if kind(dt) in "biu":
        check_equal(got, np.prod(x, axis=np_axis(axis), dtype=res), res)
    else:
        ref = np.prod(wide(x), axis=np_axis(axis)).astype(npdt(res))  # may overflow to inf
        check_close(got, ref, res, rtol=2 * UNIT_ROUNDOFF[res] + 1e-13)


def test_integer_sums_wrap_like_numpy(rng):
    x = rand(rng, (3, 1000), "int64")
    check_equal(gp.sum(arr(x), axis=1), np.sum(x, axis=1))
    u = rand(rng, (3, 1000), "uint64")
    check_equal(gp.prod(arr(u), axis=1), np.prod(u, axis=1))
    # dtype= casts first, then wraps in the requested width (as NumPy's accumulator).
    i = rand(rng, (5, 300), "int32")
    check_equal(gp.sum(arr(i), axis=1, dtype=gp.int8), np.sum(i, axis=1, dtype=np.int8))
    check_equal(gp.sum(arr(i), dtype="int16"), np.sum(i, dtype=np.int16))


@pytest.mark.parametrize("dt", ["float32", "bfloat16", "int16"])
def test_sum_dtype_argument(dt, rng):
    x = rand(rng, (6, 50), dt, small=True)
    got = gp.sum(arr(x), axis=1, dtype=gp.float64)
    check_close(got, np.sum(wide(x).astype(np.float64), axis=1), "float64", rtol=1e-14)
    got = x_sum = gp.prod(arr(x)[:, :4], dtype="complex64")
    assert str(x_sum.dtype) == "complex64"
    check_close(got, np.prod(wide(x)[:, :4].astype(np.complex128)), "complex64", rtol=1e-5)


def test_float_sums_accumulate_wide(rng):
    # 2^24 + many ones: a float32 running sum would stall at 2^24.
    x = np.ones(50_000, dtype=np.float32)
    x[0] = 2.0**24
    got = float(gp.to_numpy(gp.sum(arr(x))))
    assert got == float(np.float32(2.0**24 + 49_999))
    # float16 sums beyond float16's integer range still round once at the end.
    h = np.full(3000, 1.0, dtype=np.float16)
    assert float(gp.to_numpy(gp.sum(arr(h)))) == float(np.float16(3000.0))


# ---- mean / var / std ----


@pytest.mark.parametrize("dt", INEXACT + ["int32", "bool", "uint8"])
@pytest.mark.parametrize("axis", [None, 1, (0, 2), ()])
def test_mean(dt, axis, rng):
    x = rand(rng, SHAPE, dt, small=True)
    got = gp.mean(arr(x), axis=axis)
    res = dt if dt in INEXACT else "float32"
    ref = np.mean(
        wide(x).astype(np.complex128 if dt in COMPLEX else np.float64), axis=np_axis(axis)
    )
    abs_ref = np.mean(
        np.abs(wide(x).astype(np.float64 if dt not in COMPLEX else np.complex128)),
        axis=np_axis(axis),
    )
    check_float_reduction(got, ref, abs_ref, res, n_reduced(SHAPE, axis))


@pytest.mark.parametrize("op", ["var", "std"])
@pytest.mark.parametrize("dt", INEXACT + ["int16", "bool"])
@pytest.mark.parametrize("correction", [0.0, 1.0, 2.5])
def test_var_std(op, dt, correction, rng):
    x = rand(rng, (5, 40, 3), dt) + (
        100 if kind(dt) in "fc" and dt not in ("float16", "bfloat16") else 0
    )
    x = np.asarray(x, dtype=npdt(dt))
    got = getattr(gp, op)(arr(x), axis=(0, 1), correction=correction)
    res = {"complex64": "float32", "complex128": "float64"}.get(
        dt, dt if dt in FLOATS else "float32"
    )
    w = wide(x).astype(np.complex128 if dt in COMPLEX else np.float64)
    ref = getattr(np, op)(w, axis=(0, 1), ddof=correction)
    check_close(got, ref, res, rtol=4 * UNIT_ROUNDOFF[res] + 1e-12)


def test_var_is_stable_with_a_large_offset(rng):
    # Mean 1e8, variance 1: E[x^2] - E[x]^2 in float64 loses every digit (the squares carry
    # ~1 unit of rounding); Welford / Chan keep about eps * 1e8 relative.
    x = (1e8 + rng.standard_normal(100_000)).astype(np.float64)
    check_close(gp.var(arr(x)), np.var(x), "float64", rtol=1e-7)
    check_close(gp.std(arr(x), correction=1), np.std(x, ddof=1), "float64", rtol=1e-7)


def test_var_small_counts():
    x = arr(np.array([3.0], dtype=np.float32))
    assert np.isnan(gp.to_numpy(gp.var(x, correction=1)))  # 0 / 0
    assert gp.to_numpy(gp.var(arr(np.array([1.0, 2.0])), correction=3)) == np.inf
    assert float(gp.to_numpy(gp.var(x))) == 0.0


# ---- max / min / argmax / argmin ----


@pytest.mark.parametrize("dt", REAL)
@pytest.mark.parametrize("axis", [None, 0, -1, (0, 2)])
@pytest.mark.parametrize("op", ["max", "min"])
def test_max_min(op, dt, axis, rng):
    x = rand(rng, SHAPE, dt)
    got = getattr(gp, op)(arr(x), axis=axis, keepdims=axis == 0)
    check_equal(got, getattr(np, op)(x, axis=np_axis(axis), keepdims=axis == 0), dt)


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")
@pytest.mark.parametrize("dt", FLOATS)
def test_max_min_signed_zeros_infinities_and_nan_signs(dt, rng):
    # -0 orders below +0 (max of mixed zeros is +0, min -0); a NaN of either sign anywhere (the
    # encodings next to the infinities too), also beside infinities, in a range split across
    # blocks and among the elements past the last whole vector, makes the result NaN. Rows are
    # long enough for the vector paths.
    f = npdt(dt)
    z = np.array([[-0.0, 0.0, -0.0], [0.0, -0.0, 0.0], [-0.0, -0.0, -0.0], [0.0, 0.0, 0.0]], f)
    z = np.repeat(z, 32, axis=1)
    signs = {
        op: np.signbit(gp.to_numpy(getattr(gp, op)(arr(z), axis=1)).astype(np.float32))
        for op in ("max", "min")
    }
    assert signs["max"].tolist() == [False, False, True, False]
    assert signs["min"].tolist() == [True, True, True, False]
    inf = np.repeat(np.array([[-np.inf, -np.inf], [np.inf, np.inf], [-np.inf, np.inf]], f), 48, 1)
    check_equal(gp.max(arr(inf), axis=1), np.array([-np.inf, np.inf, np.inf], f), dt)
    check_equal(gp.min(arr(inf), axis=1), np.array([-np.inf, np.inf, -np.inf], f), dt)
    # NaNs with the smallest payloads (one past the infinities' bits) and the usual ones.
    bits = {"float16": (0x7C01, 0xFC01), "bfloat16": (0x7F81, 0xFF81)}.get(dt)
    if bits is not None:
        edge = np.array(bits, np.uint16).view(f)
    else:
        wide = f.itemsize == 8
        ints = (0x7FF0000000000001, 0xFFF0000000000001) if wide else (0x7F800001, 0xFF800001)
        edge = np.array(ints, np.uint64 if wide else np.uint32).view(f)
    nans = [np.array(np.nan, f), np.array(-np.nan, np.float32).astype(f), edge[0], edge[1]]
    assert all(np.isnan(v.astype(np.float32)) for v in nans)
    assert np.signbit(nans[1].astype(np.float32)) and np.signbit(edge[1].astype(np.float32))
    n = (1 << 18) + 5
    x = rng.standard_normal(n).astype(f)
    for pos in (0, n // 3, n - 1):
        for nan in nans:
            y = x.copy()
            y[pos] = nan
            y[(pos + 1) % n] = np.inf
            y[(pos + 2) % n] = -np.inf
            for op in ("max", "min"):
                got = gp.to_numpy(getattr(gp, op)(arr(y)))
                assert np.isnan(got.astype(np.float32)), (op, pos, nan)
                r = y[: 1 << 18].reshape(64, -1)
                rows = gp.to_numpy(getattr(gp, op)(arr(r), axis=1))
                want = getattr(np, op)(r.astype(np.float64), axis=1)
                np.testing.assert_array_equal(rows.astype(np.float64), want)
            # The first of two NaNs (either sign) is the argmax / argmin; without them the
            # infinities are.
            y[(pos + 5) % n] = -nan
            first = min(pos, (pos + 5) % n)
            for op in ("argmax", "argmin"):
                assert int(gp.to_numpy(getattr(gp, op)(arr(y)))) == first, (op, pos, nan)
            y[[pos, (pos + 5) % n]] = 0
            assert int(gp.to_numpy(gp.argmax(arr(y)))) == (pos + 1) % n
            assert int(gp.to_numpy(gp.argmin(arr(y)))) == (pos + 2) % n


@pytest.mark.parametrize("dt", REAL)
@pytest.mark.parametrize("axis", [None, 0, 1, -1])
@pytest.mark.parametrize("op", ["argmax", "argmin"])
def test_argmax_argmin(op, dt, axis, rng):
    # Few distinct values: ties everywhere, the first index must win.
    x = rand(rng, SHAPE, dt, small=True)
    if kind(dt) != "b":
        x = (np.asarray(cmp(x), dtype=np.float64) // 4).astype(npdt(dt))
    got = getattr(gp, op)(arr(x), axis=axis, keepdims=axis == 1)
    check_equal(got, getattr(np, op)(cmp(x), axis=axis, keepdims=axis == 1), "int64")


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")
@pytest.mark.parametrize("dt", FLOATS)
def test_nan_propagation_and_arg_of_nan(dt):
    x = np.array([[1.0, np.nan, 3.0, np.nan], [2.0, -np.inf, np.inf, 0.0], [5, 4, 3, 2]])
    x = x.astype(npdt(dt))
    g = arr(x)
    for op in ("max", "min"):
        check_equal(getattr(gp, op)(g, axis=1), getattr(np, op)(x, axis=1), dt)
        check_equal(getattr(gp, op)(g), getattr(np, op)(x), dt)
    for op in ("argmax", "argmin"):
        check_equal(getattr(gp, op)(g, axis=1), getattr(np, op)(cmp(x), axis=1), "int64")
        check_equal(getattr(gp, op)(g), getattr(np, op)(cmp(x)), "int64")
    # Signed zeros are equal: the first one is the argmax.
    z = arr(np.array([-0.0, 0.0], dtype=npdt(dt)))
    assert int(gp.to_numpy(gp.argmax(z))) == 0 and int(gp.to_numpy(gp.argmin(z))) == 0


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_sum_of_special_values():
    x = np.array([[np.inf, 1.0], [np.inf, -np.inf], [np.nan, 1.0], [1e308, 1e308]])
    check_equal(gp.sum(arr(x), axis=1), np.sum(x, axis=1))
    check_equal(gp.prod(arr(x), axis=1), np.prod(x, axis=1))
    f = x.astype(np.float32)[:3]
    check_equal(gp.mean(arr(f), axis=1), np.mean(f, axis=1))


# ---- all / any ----


@pytest.mark.parametrize("dt", ALL)
@pytest.mark.parametrize("axis", [None, 1, (0, 2)])
def test_all_any(dt, axis, rng):
    x = rand(rng, SHAPE, dt, small=True)
    x[(rng.random(SHAPE) < 0.15)] = 0
    x[0, 1] = 1  # one all-nonzero row (for all) and one all-zero row (for any)
    x[1, 2] = 0
    g = arr(x)
    xx = cmp(x)
    check_equal(gp.all(g, axis=axis), np.all(xx, axis=np_axis(axis)), "bool")
    check_equal(gp.any(g, axis=axis), np.any(xx, axis=np_axis(axis)), "bool")


def test_all_any_special_values():
    x = np.array([np.nan, 0.0, -0.0, np.inf], dtype=np.float32)
    assert gp.to_numpy(gp.any(arr(x))) and not gp.to_numpy(gp.all(arr(x)))
    assert gp.to_numpy(gp.all(arr(x[[0, 3]])))
    assert not gp.to_numpy(gp.any(arr(x[1:3])))
    c = np.array([0j, 1j, 0.0 + 0j], dtype=np.complex64)
    assert gp.to_numpy(gp.any(arr(c))) and not gp.to_numpy(gp.all(arr(c)))


# ---- empty, 0-d and layouts ----


def test_empty_reductions():
    e = arr(np.zeros((0, 3), dtype=np.float32))
    check_equal(gp.sum(e, axis=0), np.zeros(3, np.float32))
    check_equal(gp.prod(e), np.float32(1))
    check_equal(gp.all(e), np.True_)
    check_equal(gp.any(e, axis=0), np.zeros(3, bool))
    assert np.all(np.isnan(gp.to_numpy(gp.mean(e, axis=0))))
    assert np.isnan(gp.to_numpy(gp.var(e)))
    check_equal(gp.max(e, axis=1), np.zeros(0, np.float32))  # nothing to reduce per output
    check_equal(gp.sum(e, axis=1, keepdims=True), np.zeros((0, 1), np.float32))
    i = arr(np.zeros((2, 0), dtype=np.int8))
    check_equal(gp.sum(i, axis=1), np.zeros(2, np.int64))
    for op in ("max", "min", "argmax", "argmin"):
        with pytest.raises(ValueError, match=f"{op}: reduction over zero elements"):
            getattr(gp, op)(e, axis=0)


def test_zero_dimensional(rng):
    x = np.array(3.5, dtype=np.float32)
    g = arr(x)
    check_equal(gp.sum(g), np.float32(3.5))
    check_equal(gp.max(g, axis=()), np.float32(3.5))
    check_equal(gp.argmax(g), np.int64(0))
    check_equal(gp.mean(g, keepdims=True), np.float32(3.5))
    with pytest.raises(IndexError):
        gp.sum(g, axis=0)


@pytest.mark.parametrize("op", ["sum", "max", "argmin", "mean", "var", "any"])
def test_strided_negative_and_broadcast_layouts(op, rng):
    base = rand(rng, (12, 9, 10), "float32")
    views = {
        "transposed": (lambda a: gp.permute_dims(a, (2, 0, 1)), lambda a: a.transpose(2, 0, 1)),
        "stepped": (lambda a: a[::2, 1::3, ::-1], lambda a: a[::2, 1::3, ::-1]),
        "broadcast": (
            lambda a: gp.broadcast_to(a[:, :1, :], (12, 9, 10)),
            lambda a: np.broadcast_to(a[:, :1, :], (12, 9, 10)),
        ),
    }
    for gview, nview in views.values():
        g, x = gview(arr(base)), nview(base)
        for axis in (None, 0, 1, 2, (0, 2)):
            if op.startswith("arg") and isinstance(axis, tuple):
                continue
            got = getattr(gp, op)(g, axis=axis)
            if op in ("argmin", "any"):
                check_equal(got, getattr(np, op)(x, axis=axis), str(got.dtype))
            elif op == "max":
                check_equal(got, np.max(x, axis=axis), "float32")
            else:
                ref = getattr(np, op)(x.astype(np.float64), axis=axis)
                check_close(got, ref, "float32", rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dt", ["float32", "bfloat16", "float64", "int8", "complex64"])
def test_sizes_that_split_the_work(dt, rng):
    # Long rows (sliced across blocks), many short rows, columns (outer mode), odd tails and an
    # unaligned start.
    # (3, 2^17) and (2000, 256) have aligned rows / runs: the vector paths with split grids.
    cases = [((3, 200_003), 1), ((4099, 37), 1), ((2000, 301), 0), ((70_001,), None)]
    cases += [((3, 1 << 17), 1), ((2000, 256), 0), ((5000, 64), 0)]
    # Many interleaved slices with a partial last trip and a few elements past the last vector.
    cases += [(((1 << 20) + 37,), None)]
    for shape, axis in cases:
        x = rand(rng, shape, dt, small=True)
        g = arr(x)
        for gv, xv in [(g, x), (g[..., 1:], x[..., 1:])]:
            res = sum_dtype(dt)
            got = gp.sum(gv, axis=axis)
            if kind(dt) in "iu":
                check_equal(got, np.sum(xv, axis=axis, dtype=res), res)
            else:
                ref = np.sum(wide(xv), axis=axis)
                abs_ref = np.sum(np.abs(wide(xv)), axis=axis)
                check_float_reduction(got, ref, abs_ref, res, xv.size)
            if kind(dt) != "c":
                check_equal(gp.max(gv, axis=axis), np.max(xv, axis=axis), dt)
                check_equal(gp.argmax(gv, axis=axis), np.argmax(cmp(xv), axis=axis), "int64")


def test_deterministic_bits(rng):
    x = arr(rand(rng, (1_000_003,), "float32"))
    first = gp.to_numpy(gp.sum(x)).tobytes()
    v = arr(rand(rng, (257, 3001), "float32"))
    rows = gp.to_numpy(gp.var(v, axis=0)).tobytes()
    for _ in range(3):
        assert gp.to_numpy(gp.sum(x)).tobytes() == first
        assert gp.to_numpy(gp.var(v, axis=0)).tobytes() == rows


def test_methods(rng):
    x = rand(rng, (3, 4), "float32")
    g = arr(x)
    check_close(g.sum(0), x.sum(0), "float32", rtol=1e-6)
    check_equal(g.max(axis=1, keepdims=True), x.max(axis=1, keepdims=True))
    check_equal(g.argmin(), np.int64(x.argmin()))
    check_close(g.std(correction=1), x.astype(np.float64).std(ddof=1), "float32", rtol=1e-6)
    check_equal(g.any(), np.True_)
    check_close(g.prod(dtype=gp.float64), x.astype(np.float64).prod(), "float64", rtol=1e-12)


def test_errors():
    f = arr(np.ones((2, 3), dtype=np.float32))
    c = arr(np.ones(3, dtype=np.complex64))
    with pytest.raises(TypeError, match="max: complex values have no order"):
        gp.max(c)
    with pytest.raises(TypeError, match="argmin: complex"):
        gp.argmin(c)
    with pytest.raises(ValueError, match=r"sum: axis -1 is repeated in \(1, -1\)"):
        gp.sum(f, axis=(1, -1))
    with pytest.raises(IndexError, match="mean: axis 2 is out of bounds"):
        gp.mean(f, axis=2)
    with pytest.raises(TypeError, match="argmax: axis must be None or an integer"):
        gp.argmax(f, axis=(0,))
    with pytest.raises(TypeError, match="axis must be None, an integer or a tuple"):
        gp.sum(f, axis=1.0)
    with pytest.raises(TypeError, match="sum: axes must be an integer, got str"):
        gp.sum(f, axis=(0, "1"))
    with pytest.raises(ValueError, match="correction must be finite"):
        gp.var(f, correction=float("nan"))
    with pytest.raises(TypeError):
        gp.sum(np.ones(3))
    with pytest.raises(TypeError, match="unknown|dtype"):
        gp.sum(f, dtype="float128x")


# ---- scans ----


@pytest.mark.parametrize("dt", NATIVE + ["bfloat16"])
@pytest.mark.parametrize("op", ["cumulative_sum", "cumulative_prod"])
def test_scans(op, dt, rng):
    x = rand(rng, (4, 7, 5), dt, small=True)
    res = sum_dtype(dt)
    for axis in (0, 1, -1):
        for include_initial in (False, True):
            got = getattr(gp, op)(arr(x), axis=axis, include_initial=include_initial)
            npop = np.cumsum if op == "cumulative_sum" else np.cumprod
            if kind(dt) in "biu":
                ref = npop(x, axis=axis, dtype=res)
            else:
                ref = npop(wide(x), axis=axis)
            if include_initial:
                shape = list(ref.shape)
                shape[axis] = 1
                ident = np.zeros(shape) if op == "cumulative_sum" else np.ones(shape)
                ref = np.concatenate([ident.astype(ref.dtype), ref], axis=axis)
            if kind(dt) in "biu":
                check_equal(got, ref, res)
            else:
                check_close(
                    got,
                    ref,
                    res,
                    rtol=4 * UNIT_ROUNDOFF[res] + 1e-13,
                    atol=1e-300 if op == "cumulative_prod" else 0.0,
                )


@pytest.mark.parametrize("dt", ["float32", "int32", "float64"])
def test_long_and_strided_scans(dt, rng):
    # One long line (split into chunks on the GPU), many lines along a slow axis (one thread per
    # line on the GPU), strided and negative-stride views.
    cases = [((300_001,), 0), ((3, 100_000), 1), ((70, 1000), 0), ((500, 200), 1)]
    cases += [((6, 70_000), 0)]  # enough lines for one thread per line on the GPU
    for shape, axis in cases:
        x = rand(rng, shape, dt, small=True)
        g = arr(x)
        for gv, xv in [
            (g, x),
            (
                g[..., ::-1] if len(shape) > 1 else g[::-2],
                x[..., ::-1] if len(shape) > 1 else x[::-2],
            ),
        ]:
            got = gp.cumulative_sum(gv, axis=axis)
            res = sum_dtype(dt)
            if kind(dt) in "iu":
                check_equal(got, np.cumsum(xv, axis=axis, dtype=res), res)
            else:
                ref = np.cumsum(wide(xv), axis=axis)
                scale = np.cumsum(np.abs(wide(xv)), axis=axis)
                check_close(
                    got,
                    ref,
                    res,
                    rtol=0,
                    atol=float(np.max(scale)) * (4 * UNIT_ROUNDOFF[res] + 1e-12),
                )


@pytest.mark.parametrize("dt", ["float32", "complex128", "int16"])
def test_long_scans_with_initial_and_products(dt, rng):
    # Lines longer than one block tile (chunked on the GPU), with the output shifted by the
    # initial element (unaligned for 16-byte stores unless the element is 16 bytes).
    for shape in [(2, 5000), (1, 300_001)]:
        x = rand(rng, shape, dt, small=True)
        if kind(dt) in "fc":
            x = (1 + np.asarray(x) * 1e-4).astype(npdt(dt))  # products stay finite
        res = sum_dtype(dt)
        for op, npop, ident in [
            ("cumulative_sum", np.cumsum, 0),
            ("cumulative_prod", np.cumprod, 1),
        ]:
            got = getattr(gp, op)(arr(x), axis=1, include_initial=True)
            ref = npop(wide(x), axis=1, dtype=res if kind(dt) in "iu" else None)
            ref = np.concatenate([np.full((shape[0], 1), ident, ref.dtype), ref], axis=1)
            if kind(dt) in "iu":
                check_equal(got, ref, res)
            else:
                scale = (
                    np.maximum(np.abs(ref), 1.0)
                    if op == "cumulative_prod"
                    else np.cumsum(
                        np.abs(wide(np.concatenate([np.zeros((shape[0], 1), x.dtype), x], 1))), 1
                    )
                )
                err = np.abs(gp.to_numpy(got).astype(ref.dtype) - ref)
                assert np.all(err <= scale * (shape[1] * 4 * UNIT_ROUNDOFF[res])), op


def test_signed_zero_sums():
    z = np.array([-0.0, -0.0], dtype=np.float32)
    assert np.signbit(gp.to_numpy(gp.sum(arr(z))))
    assert np.all(np.signbit(gp.to_numpy(gp.cumulative_sum(arr(z)))))
    assert not np.signbit(gp.to_numpy(gp.sum(arr(z[:0]))))  # the empty sum is +0
    first = gp.to_numpy(gp.cumulative_sum(arr(z), include_initial=True))
    assert not np.signbit(first[0]) and np.all(np.signbit(first[1:]))


def test_mean_of_integers_is_exact_before_rounding():
    big = np.array([2**40 + 1, -(2**40)], dtype=np.int64)
    check_equal(gp.mean(arr(big)), np.float32(0.5))
    check_equal(gp.var(arr(np.array([2**40 + 1, 2**40], dtype=np.int64))), np.float32(0.25))
    check_equal(gp.mean(arr(np.array([16777217] * 3 + [0], dtype=np.int32))), np.float32(12582913))


def test_scan_dtype_and_errors(rng):
    x = rand(rng, (5,), "int8", small=True)
    check_equal(gp.cumulative_sum(arr(x), dtype=gp.float32), np.cumsum(x, dtype=np.float32))
    check_equal(gp.cumulative_prod(arr(x)), np.cumprod(x, dtype=np.int64))
    e = arr(np.zeros((0, 3), dtype=np.float32))
    check_equal(gp.cumulative_sum(e, axis=0, include_initial=True), np.zeros((1, 3), np.float32))
    check_equal(gp.cumulative_sum(e, axis=1), np.zeros((0, 3), np.float32))
    with pytest.raises(ValueError, match="cumulative_sum: axis is required"):
        gp.cumulative_sum(arr(np.ones((2, 2))))
    with pytest.raises(ValueError, match="at least one dimension"):
        gp.cumulative_prod(arr(np.array(1.0)))
    with pytest.raises(IndexError, match="cumulative_sum: axis 3 is out of bounds"):
        gp.cumulative_sum(arr(np.ones((2, 2))), axis=3)
    with pytest.raises(TypeError, match="axis must be None or an integer"):
        gp.cumulative_sum(arr(np.ones(2)), axis=(0,))


def test_readme_example_runs(capsys):
    run_readme_example("## Reductions and scans")
    lines = capsys.readouterr().out.splitlines()
    x = np.random.default_rng(0).standard_normal((1000, 512), dtype=np.float32)
    total = float(lines[0].split(" ", 1)[0])
    assert abs(total - float(x.astype(np.float64).sum())) < 1e-3
    assert lines[0].endswith("(512,) (1000,)"), lines[0]
    assert lines[1] == f"{x.argmax(axis=1)[:4]} {bool((x > 3).any())}", lines[1]
    assert lines[2] == "(1000, 513)"

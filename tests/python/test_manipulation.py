"""Array API manipulation and matrix functions (expand_dims, squeeze, flip, moveaxis,
broadcast_arrays, concat, stack, unstack, roll, tile, repeat, diff, eye, linspace, meshgrid,
tril, triu, tensordot, vecdot) against NumPy on random data of every dtype, with strided,
negative-stride, empty and 0-d inputs, the views' sharing of memory, and bad input."""

import numpy as np
import pytest
from helpers import (
    ALL,
    COMPLEX,
    FLOATS,
    INEXACT,
    NUMERIC,
    check_close,
    check_equal,
    gpdt,
    host,
    npdt,
    rand,
)
from hypothesis import given, settings
from hypothesis import strategies as st

import pygpukit as gp


def _g(a):
    return gp.asarray(np.asarray(a))


def _pair(rng, shape, dtype):
    """(NumPy data, the same on the device)."""
    h = rand(rng, shape, dtype)
    return h, _g(h)


def _strided(rng, shape, dtype):
    """(NumPy view, device view) with steps and a reversed axis over a larger random array."""
    big = rand(rng, tuple(2 * s for s in shape), dtype)
    idx = tuple(slice(None, None, 2 if i % 2 == 0 else -2) for i in range(len(shape)))
    h = big[idx]
    g = _g(big)[idx]
    assert g.shape == h.shape
    return h, g


# ---- views ----


@pytest.mark.parametrize("dtype", ALL)
def test_expand_dims_squeeze_flip_moveaxis_match_numpy(rng, dtype):
    h, g = _strided(rng, (3, 4, 5), dtype)
    for axis in (0, 1, 3, -1, -4):
        check_equal(gp.expand_dims(g, axis=axis), np.expand_dims(h, axis))
    s = np.expand_dims(np.expand_dims(h, 0), -1)
    gs = gp.expand_dims(gp.expand_dims(g, axis=0), axis=-1)
    check_equal(gp.squeeze(gs), np.squeeze(s))
    check_equal(gp.squeeze(gs, axis=0), np.squeeze(s, 0))
    check_equal(gp.squeeze(gs, axis=(0, -1)), np.squeeze(s, (0, -1)))
    for axis in (None, 0, -1, (0, 2), (1,)):
        check_equal(gp.flip(g, axis=axis), np.flip(h, axis))
    check_equal(gp.moveaxis(g, 0, -1), np.moveaxis(h, 0, -1))
    check_equal(gp.moveaxis(g, (0, 1), (2, 0)), np.moveaxis(h, (0, 1), (2, 0)))
    check_equal(gp.moveaxis(g, [-1, 0], [0, -1]), np.moveaxis(h, [-1, 0], [0, -1]))


def test_views_share_memory(rng):
    h = rand(rng, (4, 5), "float32")
    g = _g(h)
    f = gp.flip(g, axis=1)
    f[0, 0] = 7.0  # writes g[0, 4]
    h[0, 4] = 7.0
    e = gp.expand_dims(g, axis=1)
    e[2, 0, 1] = -3.0
    h[2, 1] = -3.0
    m = gp.moveaxis(g, 0, 1)
    m[3, 1] = 11.0
    h[1, 3] = 11.0
    u = gp.unstack(g, axis=1)[2]
    u[3] = 5.0
    h[3, 2] = 5.0
    check_equal(g, h)


def test_zero_d_and_empty_views():
    z = gp.asarray(np.float32(2.5))
    check_equal(gp.expand_dims(z, axis=0), np.array([2.5], np.float32))
    check_equal(gp.expand_dims(z, axis=-1), np.array([2.5], np.float32))
    check_equal(gp.flip(z), np.float32(2.5))
    check_equal(gp.squeeze(z), np.float32(2.5))
    e = gp.zeros((0, 3))
    check_equal(gp.flip(e), np.zeros((0, 3), np.float32))
    check_equal(gp.moveaxis(e, 0, 1), np.zeros((3, 0), np.float32))
    assert gp.unstack(e, axis=0) == ()
    assert len(gp.unstack(e, axis=1)) == 3


def test_view_errors():
    x = gp.zeros((2, 1, 3))
    with pytest.raises(ValueError, match="squeeze: axis 0 of shape \\(2, 1, 3\\) has extent 2"):
        gp.squeeze(x, axis=0)
    with pytest.raises(ValueError, match="repeated axis"):
        gp.squeeze(x, axis=(1, -2))
    with pytest.raises(IndexError):
        gp.expand_dims(x, axis=4)
    with pytest.raises(IndexError):
        gp.flip(x, axis=3)
    with pytest.raises(ValueError, match="repeated axis"):
        gp.flip(x, axis=(0, 0))
    with pytest.raises(ValueError, match="source has 2 axes but destination has 1"):
        gp.moveaxis(x, (0, 1), (0,))
    with pytest.raises(ValueError, match="repeated axis"):
        gp.moveaxis(x, (0, 0), (1, 2))
    with pytest.raises(TypeError, match="axis must be an integer"):
        gp.expand_dims(x, axis=1.0)
    with pytest.raises(TypeError, match="axes must be an integer"):
        gp.flip(x, axis=(True,))
    with pytest.raises(ValueError, match="at least one dimension"):
        gp.unstack(gp.asarray(np.float32(1)))


@given(
    shapes=st.lists(
        st.lists(st.sampled_from([1, 2, 3]), min_size=0, max_size=3), min_size=1, max_size=3
    )
)
@settings(max_examples=40, deadline=None)
def test_broadcast_arrays_property(shapes):
    hs = [np.arange(int(np.prod(s)), dtype=np.int32).reshape(s) for s in shapes]
    try:
        want = np.broadcast_arrays(*hs)
    except ValueError:
        with pytest.raises(ValueError):
            gp.broadcast_arrays(*[_g(h) for h in hs])
        return
    got = gp.broadcast_arrays(*[_g(h) for h in hs])
    assert isinstance(got, list) and len(got) == len(want)
    for g, w in zip(got, want):
        check_equal(g, w)


# ---- concat / stack / unstack ----


@pytest.mark.parametrize("dtype", ALL)
def test_concat_stack_unstack_match_numpy(rng, dtype):
    a, ga = _strided(rng, (2, 3, 4), dtype)
    b, gb = _pair(rng, (2, 1, 4), dtype)
    c, gc = _pair(rng, (2, 0, 4), dtype)
    check_equal(gp.concat([ga, gb, gc], axis=1), np.concatenate([a, b, c], axis=1))
    check_equal(gp.concat((ga, gb), axis=-2), np.concatenate([a, b], axis=-2))
    check_equal(gp.concat([ga, gb], axis=None), np.concatenate([a, b], axis=None))
    check_equal(gp.concat([ga]), a.copy())
    d, gd = _pair(rng, (2, 3, 4), dtype)
    for axis in (0, 1, 3, -1, -4):
        check_equal(gp.stack([ga, gd, ga], axis=axis), np.stack([a, d, a], axis=axis))
    for axis in (0, 1, -1):
        got = gp.unstack(ga, axis=axis)
        assert isinstance(got, tuple)
        want = [np.take(a, i, axis=axis) for i in range(a.shape[axis])]
        assert len(got) == len(want)
        for g, w in zip(got, want):
            check_equal(g, w)


@pytest.mark.parametrize(
    ("d1", "d2"),
    [
        ("int8", "uint8"),
        ("int32", "float32"),
        ("bool", "int16"),
        ("float16", "bfloat16"),
        ("float32", "complex64"),
        ("uint64", "float64"),
        ("bfloat16", "float64"),
    ],
)
def test_concat_promotes_dtypes(rng, d1, d2):
    a, ga = _pair(rng, (3, 2), d1)
    b, gb = _pair(rng, (1, 2), d2)
    out = gp.concat([ga, gb], axis=0)
    # NumPy's promotion where it has both dtypes; bfloat16 by the documented table.
    bf16 = {("float16", "bfloat16"): "float32", ("bfloat16", "float64"): "float64"}
    want = bf16.get((d1, d2)) or np.result_type(np.dtype(d1), np.dtype(d2)).name
    assert str(out.dtype) == want
    dt = want
    check_equal(out, np.concatenate([a.astype(npdt(dt)), b.astype(npdt(dt))]), dt)
    st_ = gp.stack([ga, ga.astype(gpdt(d2))], axis=1)
    assert str(st_.dtype) == dt


def test_concat_stack_errors():
    x, y = gp.zeros((2, 3)), gp.zeros((3, 3))
    with pytest.raises(ValueError, match="zero-dimensional"):
        gp.concat([gp.asarray(np.float32(1)), gp.asarray(np.float32(2))])
    with pytest.raises(ValueError, match=r"shapes \(2, 3\) and \(3, 3\) differ outside axis 1"):
        gp.concat([x, y], axis=1)
    with pytest.raises(ValueError, match="differ outside axis"):
        gp.concat([x, gp.zeros((2, 3, 1))])
    with pytest.raises(ValueError, match="needs at least one array"):
        gp.concat([])
    with pytest.raises(ValueError, match="needs at least one array"):
        gp.stack([])
    with pytest.raises(TypeError, match="expected arrays, got ndarray"):
        gp.concat([x, np.zeros((2, 3))])
    with pytest.raises(TypeError, match="tuple or list of arrays"):
        gp.concat(x)
    with pytest.raises(IndexError):
        gp.concat([x, x], axis=2)
    with pytest.raises(ValueError, match=r"one shape, got \(2, 3\) and \(3, 3\)"):
        gp.stack([x, y])
    with pytest.raises(IndexError):
        gp.stack([x, x], axis=3)


def test_concat_rejects_mixed_devices(cuda):
    with pytest.raises(ValueError, match="different devices"):
        gp.concat([gp.zeros((2,), device=cuda), gp.zeros((2,), device="cpu")])


# ---- roll / tile / repeat ----


@pytest.mark.parametrize("dtype", ALL)
def test_roll_tile_repeat_match_numpy(rng, dtype):
    h, g = _strided(rng, (3, 4, 5), dtype)
    for shift, axis in [
        (1, 0),
        (-2, 1),
        (7, -1),
        ((1, 2), (0, 2)),
        (3, (0, 1)),
        ((1, -1), (1, 1)),
        (0, 0),
        (-13, None),
        (5, None),
        (10**12, 2),
    ]:
        check_equal(gp.roll(g, shift, axis=axis), np.roll(h, shift, axis=axis))
    for reps in [(2,), (1, 2), (2, 1, 3), (2, 1, 1, 2), (0, 2), 3, ()]:
        check_equal(gp.tile(g, reps), np.tile(h, reps))
    for repeats, axis in [(2, 0), (3, -1), (1, 1), (0, 1), (2, None)]:
        check_equal(gp.repeat(g, repeats, axis=axis), np.repeat(h, repeats, axis=axis))


def test_overflowing_results_are_value_errors():
    x = gp.arange(4)
    with pytest.raises(ValueError, match="tile: the result of \\(4,\\) is too large"):
        gp.tile(x, (2**61,))
    with pytest.raises(ValueError, match="repeat: .* too large"):
        gp.repeat(x, 2**62)
    big = gp.broadcast_to(gp.zeros((1,), dtype=gp.int8), (2**62,))
    with pytest.raises(ValueError, match="concat: the joined extent is too large"):
        gp.concat([big, big, big])


def test_roll_tile_repeat_edge_cases():
    z = gp.asarray(np.int32(4))
    check_equal(gp.roll(z, 3), np.roll(np.int32(4), 3))
    check_equal(gp.tile(z, (2, 3)), np.tile(np.int32(4), (2, 3)))
    check_equal(gp.repeat(z, 3), np.repeat(np.int32(4), 3))
    e = np.zeros((0, 4), np.float32)
    check_equal(gp.roll(_g(e), 2, axis=1), np.roll(e, 2, axis=1))
    check_equal(gp.roll(_g(e), 2, axis=0), np.roll(e, 2, axis=0))
    check_equal(gp.tile(_g(e), (3, 2)), np.tile(e, (3, 2)))
    check_equal(gp.repeat(_g(e), 2, axis=1), np.repeat(e, 2, axis=1))
    x = gp.arange(6)
    with pytest.raises(ValueError, match="negative repetition"):
        gp.tile(x, (-1,))
    with pytest.raises(ValueError, match="negative repeats"):
        gp.repeat(x, -1)
    with pytest.raises(ValueError, match="0-d array needs axis=None"):
        gp.repeat(z, 2, axis=0)
    with pytest.raises(ValueError, match="repeat: negative repeats -1"):
        gp.repeat(x, gp.asarray(np.array([1, -1, 0, 0, 0, 0])))
    with pytest.raises(ValueError, match=r"repeats of shape \(2,\) for an axis of 6"):
        gp.repeat(x, gp.asarray(np.array([1, 2])))
    with pytest.raises(TypeError, match="repeats must be integers"):
        gp.repeat(x, gp.ones(6))
    with pytest.raises(ValueError, match="without axes, shift must be a single integer"):
        gp.roll(x, (1, 2))
    with pytest.raises(ValueError, match="2 shifts for 3 axes"):
        gp.roll(gp.zeros((2, 2, 2)), (1, 2), axis=(0, 1, 2))
    with pytest.raises(TypeError, match="shift must be an integer"):
        gp.roll(x, 1.5)
    with pytest.raises(IndexError):
        gp.roll(x, 1, axis=1)
    with pytest.raises(TypeError, match="repetitions must be an integer"):
        gp.tile(x, "ab")


# ---- diff ----


@pytest.mark.parametrize("dtype", ALL)
def test_diff_matches_numpy(rng, dtype):
    h, g = _strided(rng, (4, 6), dtype)
    with np.errstate(over="ignore"):
        for n, axis in [(0, -1), (1, -1), (2, 0), (3, 1), (4, 0), (9, 1)]:
            want = np.diff(h, n=n, axis=axis)
            got = gp.diff(g, n=n, axis=axis)
            if dtype in FLOATS or dtype in COMPLEX:
                rt = 1e-2 if dtype in ("float16", "bfloat16") else 1e-5
                check_close(got, want, dtype, rtol=rt, atol=rt * 64)
            else:
                check_equal(got, want)
        p, gp_ = _pair(rng, (4, 1), dtype)
        a, ga = _pair(rng, (4, 2), dtype)
        want = np.diff(h, axis=1, prepend=p, append=a)
        got = gp.diff(g, axis=1, prepend=gp_, append=ga)
        if dtype in INEXACT:
            check_close(got, want, dtype, rtol=1e-2, atol=1e-1)
        else:
            check_equal(got, want)


def test_diff_scalars_and_errors():
    x = gp.asarray(np.array([1, 4, 9], np.int32))
    # Python scalars are weak (NEP 50): they take x's dtype, or the default float for floats.
    check_equal(gp.diff(x, prepend=0, append=20), np.array([1, 3, 5, 11], np.int32))
    # 0.5 becomes a float32 array (the dtype of x + 0.5), which joins int32 as float64.
    got = gp.diff(x, prepend=0.5)
    assert got.dtype == gp.float64
    np.testing.assert_array_equal(host(got), [0.5, 3.0, 5.0])
    # n=0 gives x itself, prepend / append not joined (as NumPy).
    check_equal(gp.diff(x, n=0, prepend=7), np.array([1, 4, 9], np.int32))
    with pytest.raises(ValueError, match="at least one dimension"):
        gp.diff(gp.asarray(np.int32(3)))
    with pytest.raises(ValueError, match="order n must be non-negative"):
        gp.diff(x, n=-1)
    with pytest.raises(ValueError, match="differ outside axis"):
        gp.diff(gp.zeros((2, 3)), prepend=gp.zeros((3, 1)))
    with pytest.raises(TypeError, match="prepend must be an array or a Python scalar"):
        gp.diff(x, prepend="a")


# ---- eye / linspace / meshgrid / tril / triu ----


@pytest.mark.parametrize("dtype", ALL)
def test_eye_matches_numpy(dtype):
    for n, m, k in [
        (3, None, 0),
        (3, 5, 1),
        (5, 3, -2),
        (4, 4, 4),
        (4, 4, -4),
        (0, 3, 0),
        (3, 0, 0),
        (2, 6, 5),
        (6, 2, -5),
        (3, 3, 2**62),
        (3, 3, -(2**62)),
    ]:
        want = np.eye(n, m, k=k, dtype=npdt(dtype))
        check_equal(gp.eye(n, m, k=k, dtype=gpdt(dtype)), want, dtype)
    assert gp.eye(2).dtype == gp.float32


def test_eye_errors():
    with pytest.raises(ValueError, match="negative dimensions"):
        gp.eye(-1)
    with pytest.raises(TypeError, match="n_rows must be an integer"):
        gp.eye(2.0)
    with pytest.raises(OverflowError):
        gp.eye(2, k=2**70)


@pytest.mark.parametrize("dtype", INEXACT)
def test_linspace_matches_numpy(dtype):
    rt = {"float16": 2e-3, "bfloat16": 2e-2}.get(dtype, 1e-6)
    for start, stop, num, endpoint in [
        (0, 1, 5, True),
        (-3.5, 2.25, 11, False),
        (2, -7, 1, True),
        (1, 1, 4, True),
        (0, 10, 0, True),
        (0.1, 0.9, 1000, True),
        (5, 6, 2, False),
    ]:
        want = np.linspace(start, stop, num, endpoint=endpoint)
        got = gp.linspace(start, stop, num, dtype=gpdt(dtype), endpoint=endpoint)
        check_close(
            got,
            want.astype(np.complex128 if dtype in COMPLEX else np.float64),
            dtype,
            rtol=rt,
            atol=rt,
        )
        if endpoint and num > 1:
            assert host(got)[-1] == np.asarray(stop).astype(npdt(dtype))


def test_linspace_complex_defaults_and_errors():
    got = gp.linspace(1 + 2j, -3j, 7)
    assert got.dtype == gp.complex64
    check_close(got, np.linspace(1 + 2j, -3j, 7), "complex64", rtol=1e-6, atol=1e-6)
    assert gp.linspace(0, 1, 3).dtype == gp.float32
    check_close(
        gp.linspace(0, 1j, 3, dtype=gp.complex128),
        np.linspace(0, 1j, 3),
        "complex128",
        rtol=0,
        atol=0,
    )
    with pytest.raises(ValueError, match="num must be non-negative"):
        gp.linspace(0, 1, -1)
    with pytest.raises(TypeError, match="dtype must be floating or complex"):
        gp.linspace(0, 1, 3, dtype=gp.int32)
    with pytest.raises(TypeError, match="complex start or stop needs a complex dtype"):
        gp.linspace(0, 1j, 3, dtype=gp.float64)
    with pytest.raises(TypeError, match="start and stop must be int, float or complex"):
        gp.linspace(True, 1, 3)
    with pytest.raises(TypeError, match="num must be an integer"):
        gp.linspace(0, 1, 3.0)
    with pytest.raises(TypeError, match="endpoint must be a bool"):
        gp.linspace(0, 1, 3, endpoint=1)


@pytest.mark.parametrize("indexing", ["xy", "ij"])
def test_meshgrid_matches_numpy(rng, indexing):
    hs = [rand(rng, (n,), d) for n, d in [(3, "float32"), (4, "int16"), (2, "bool")]]
    for k in (1, 2, 3):
        got = gp.meshgrid(*[_g(h) for h in hs[:k]], indexing=indexing)
        want = np.meshgrid(*hs[:k], indexing=indexing)
        assert isinstance(got, list) and len(got) == k
        for g, w in zip(got, want):
            check_equal(g, w)
            assert g.is_contiguous
    assert gp.meshgrid() == []
    h, g = _strided(rng, (5,), "float64")
    for g1, w1 in zip(
        gp.meshgrid(g, g[::2], indexing=indexing), np.meshgrid(h, h[::2], indexing=indexing)
    ):
        check_equal(g1, w1)


def test_meshgrid_errors():
    with pytest.raises(ValueError, match="arrays must be 1-D"):
        gp.meshgrid(gp.zeros((2, 2)))
    with pytest.raises(ValueError, match="indexing must be 'xy' or 'ij'"):
        gp.meshgrid(gp.zeros(2), indexing="ji")
    with pytest.raises(TypeError, match="indexing must be"):
        gp.meshgrid(gp.zeros(2), indexing=1)


@pytest.mark.parametrize("dtype", ALL)
def test_tril_triu_match_numpy(rng, dtype):
    h, g = _strided(rng, (2, 4, 5), dtype)
    for k in (0, 1, -1, 3, -3, 10, -10):
        check_equal(gp.tril(g, k=k), np.tril(h, k=k))
        check_equal(gp.triu(g, k=k), np.triu(h, k=k))
    e = np.zeros((0, 3), npdt(dtype))
    check_equal(gp.tril(_g(e)), np.tril(e))
    with pytest.raises(ValueError, match=r"tril: needs an array of at least 2 dimensions"):
        gp.tril(gp.zeros((3,)))
    with pytest.raises(ValueError, match=r"triu: needs an array of at least 2 dimensions"):
        gp.triu(gp.zeros((3,)))


# ---- tensordot / vecdot ----


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64", "complex128"])
def test_tensordot_matches_numpy(rng, dtype):
    a, ga = _strided(rng, (3, 4, 5), dtype)
    b, gb = _pair(rng, (4, 5, 2), dtype)
    rt = 1e-4 if dtype in ("float32", "complex64") else 1e-10
    check_close(gp.tensordot(ga, gb, axes=2), np.tensordot(a, b, axes=2), dtype, rtol=rt, atol=rt)
    check_close(
        gp.tensordot(ga, gb, axes=([1, 2], [0, 1])),
        np.tensordot(a, b, axes=([1, 2], [0, 1])),
        dtype,
        rtol=rt,
        atol=rt,
    )
    check_close(
        gp.tensordot(ga, gb, axes=([2, 1], [1, 0])),
        np.tensordot(a, b, axes=([2, 1], [1, 0])),
        dtype,
        rtol=rt,
        atol=rt,
    )
    c, gc = _pair(rng, (5, 3), dtype)
    check_close(
        gp.tensordot(ga, gc, axes=([0], [1])),
        np.tensordot(a, c, axes=([0], [1])),
        dtype,
        rtol=rt,
        atol=rt,
    )
    check_close(gp.tensordot(ga, gc, axes=0), np.tensordot(a, c, axes=0), dtype, rtol=rt, atol=rt)


@pytest.mark.parametrize("dtype", ["int8", "int32", "uint16", "int64"])
def test_tensordot_integers(rng, dtype):
    a = rand(rng, (3, 4, 2), dtype, small=True)
    b = rand(rng, (2, 4, 5), dtype, small=True)
    got = gp.tensordot(_g(a), _g(b), axes=([1, 2], [1, 0]))
    check_equal(got, np.tensordot(a, b, axes=([1, 2], [1, 0])).astype(npdt(dtype)))
    with pytest.raises(TypeError, match="tensordot: needs numeric operands"):
        gp.tensordot(gp.zeros((2, 2), dtype=gp.bool), gp.zeros((2, 2), dtype=gp.bool))


def test_tensordot_errors():
    a, b = gp.zeros((3, 4)), gp.zeros((5, 3))
    with pytest.raises(ValueError, match="contracted extents differ"):
        gp.tensordot(a, b, axes=1)
    with pytest.raises(ValueError, match="axes=3 for operands of 2 and 2 dimensions"):
        gp.tensordot(a, b, axes=3)
    with pytest.raises(ValueError, match="1 axes of x1 paired with 2 axes of x2"):
        gp.tensordot(a, b, axes=([0], [0, 1]))
    with pytest.raises(ValueError, match="repeated axis"):
        gp.tensordot(gp.zeros((3, 3)), gp.zeros((3, 3)), axes=([0, 0], [0, 1]))
    with pytest.raises(TypeError, match="axes must be an integer or a pair"):
        gp.tensordot(a, b, axes="x")


@pytest.mark.parametrize("dtype", NUMERIC)
def test_vecdot_matches_numpy(rng, dtype):
    a = rand(rng, (3, 1, 5), dtype, small=True)
    b = rand(rng, (4, 5), dtype, small=True)
    ga, gb = _g(a), _g(b)
    want = np.sum(np.conj(a) * b, axis=-1, dtype=npdt(dtype)) if dtype != "bfloat16" else None
    got = gp.vecdot(ga, gb)
    assert str(got.dtype) == dtype
    if dtype in INEXACT:
        ref = np.sum(np.conj(a.astype(np.complex128)) * b.astype(np.complex128), axis=-1)
        rt = 5e-2 if dtype in ("float16", "bfloat16") else 1e-5
        check_close(got, ref if dtype in COMPLEX else ref.real, dtype, rtol=rt, atol=rt * 10)
    else:
        check_equal(got, want)
    # A strided operand and a contracted axis that is not the last one.
    c = rand(rng, (2, 5, 3), dtype, small=True)
    gc = _g(c)[:, :, ::-1]
    hc = c[:, :, ::-1]
    ref = np.sum(np.conj(hc.astype(np.complex128)) * b.T[None, :, :3].astype(np.complex128), axis=1)
    got = gp.vecdot(gc, gb.T[None, :, :3], axis=1)
    if dtype in INEXACT:
        rt = 5e-2 if dtype in ("float16", "bfloat16") else 1e-5
        check_close(got, ref if dtype in COMPLEX else ref.real, dtype, rtol=rt, atol=rt * 10)
    else:
        check_equal(got, np.sum(hc * b.T[None, :, :3], axis=1, dtype=npdt(dtype)))


def test_vecdot_errors():
    with pytest.raises(ValueError, match="vecdot: shapes"):
        gp.vecdot(gp.zeros((3, 4)), gp.zeros((3, 5)))
    with pytest.raises(ValueError, match="must have one extent in both"):
        gp.vecdot(gp.zeros((3, 1)), gp.zeros((3, 4)))
    with pytest.raises(TypeError, match="numeric operands"):
        gp.vecdot(gp.zeros(3, dtype=gp.bool), gp.zeros(3, dtype=gp.bool))
    with pytest.raises(ValueError, match="at least one dimension"):
        gp.vecdot(gp.asarray(np.float32(1)), gp.zeros(3))
    with pytest.raises(ValueError):
        gp.vecdot(gp.zeros((2, 3)), gp.zeros((4, 3)))

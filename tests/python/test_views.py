# Over 600 lines on purpose: one suite per module, sharing its fixtures and reference helpers;
# a topic moves to its own file once it needs none of them.
"""Views and basic indexing: reshape, permute_dims, .T / .mT, broadcast_to, contiguous, copy,
__getitem__ / __setitem__ with integers, slices, None and Ellipsis, and their errors. Every
result is compared with NumPy on random data, and sharing is checked by writing through the
view and comparing the base with NumPy doing the same."""

import re

import numpy as np
import pytest
from helpers import (
    ALL,
    FLOATS,
    NUMERIC,
    UNIT_ROUNDOFF,
    check_close,
    check_equal,
    cmp,
    gpdt,
    host,
    kind,
    npdt,
    rand,
)

import pygpukit as gp

# ---- helpers ----


def _g(a):
    """GPUArray copy of NumPy data on the default device (dtype kept)."""
    return gp.asarray(np.asarray(a))


def _fresh(rng, cur, dtype):
    """Random NumPy data of `cur`'s shape in `dtype` that differs from `cur` everywhere."""
    cur = np.asarray(cur)
    if dtype == "bool":
        return ~cur
    new = rand(rng, cur.shape, dtype)
    same = cmp(new) == cmp(cur)
    if same.any():
        bumped = (cmp(cur) + 1).astype(npdt(dtype)) if kind(dtype) in "iu" else -cur - 1
        new = np.where(same, bumped, new).astype(npdt(dtype))
    assert not (cmp(new) == cmp(cur)).any()
    return np.asarray(new, dtype=npdt(dtype))


def _same_layout(x, expected):
    """x's shape and byte strides are NumPy's (strides of empty arrays are arbitrary: NumPy's
    depend on how the array was made)."""
    expected = np.asarray(expected)
    assert x.shape == expected.shape, (x.shape, expected.shape)
    if expected.size:
        assert x.strides == expected.strides, (x.strides, expected.strides)


def _py_scalar(rng, dtype):
    """A random Python scalar that `dtype` holds without overflow."""
    k = kind(dtype)
    if k == "b":
        return bool(rng.random() < 0.5)
    if k in "iu":
        info = np.iinfo(npdt(dtype))
        return int(rng.integers(max(int(info.min), -(2**62)), min(int(info.max), 2**62)))
    if k == "f":
        return float(rng.standard_normal() * 8)
    return complex(rng.standard_normal() * 8, rng.standard_normal() * 8)


def _msg(*parts):
    """Regex that matches a message containing every part, in order."""
    return ".*".join(re.escape(p) for p in parts)


# ---- reshape ----


RESHAPE_CONTIG = [
    ((12,), (3, 4)),
    ((3, 4), (12,)),
    ((2, 3, 4), (4, 6)),
    ((2, 3, 4), (4, -1)),
    ((2, 3, 4), (-1,)),
    ((2, 3, 4), (1, 6, 1, 4)),
    ((2, 3, 4), (2, -1, 2, 1)),
    ((6, 1), (1, 6)),
    ((1,), ()),
    ((), (1, 1)),
    ((), (-1,)),
]


@pytest.mark.parametrize("src, new", RESHAPE_CONTIG)
@pytest.mark.parametrize("dtype", ALL)
def test_reshape_contiguous_is_view(rng, dtype, src, new):
    a = rand(rng, src, dtype)
    x = _g(a)
    y = x.reshape(new)
    e = a.reshape(new)
    check_equal(y, e, dtype)
    _same_layout(y, e)
    assert y.is_contiguous
    # Writing through the view changes the base, exactly as in NumPy.
    v = _fresh(rng, e, dtype)
    y[...] = _g(v)
    e[...] = v
    check_equal(x, a, dtype)
    check_equal(y, v, dtype)


# (view of the base, new shape, whether NumPy can reshape without copying)
RESHAPE_STRIDED = [
    (lambda b: b.T, (24,), False),
    (lambda b: b.T, (4, 6), False),
    (lambda b: b.T, (4, 3, 2, 1), True),
    (lambda b: b.T, (2, 2, 3, 2), True),
    (lambda b: b[:, ::2], (2, 2, 2, 2), True),
    (lambda b: b[:, ::2], (16,), False),
    (lambda b: b[:, ::2], (4, 4), False),
    (lambda b: b[:, ::-1], (2, 3, 2, 2), True),
    (lambda b: b[:, ::-1], (6, 4), False),
    (lambda b: b[::-1, :, 1:], (2, 9), False),
    (lambda b: b[::-1, :, 1:], (1, 2, 3, 3, 1), True),
    (lambda b: b[:, 1:2], (2, 4), True),
    (lambda b: b[1, :, ::3], (3, 2), True),
    (lambda b: b[1, :, ::3], (6,), False),
    (lambda b: b[:, :, None, 0], (6,), True),
    (lambda b: b[:, None, ::2, 0], (4,), False),
    (lambda b: b[:, :0], (0, 4), True),
]


@pytest.mark.parametrize("case", range(len(RESHAPE_STRIDED)))
@pytest.mark.parametrize("dtype", ALL)
def test_reshape_strided_view_or_copy(rng, dtype, case):
    view, new, is_view = RESHAPE_STRIDED[case]
    a = rand(rng, (2, 3, 4), dtype)
    x = _g(a)
    e = view(a).reshape(new)
    assert np.shares_memory(e, a) == is_view or e.size == 0
    y = view(x).reshape(new)
    check_equal(y, e, dtype)
    if is_view:
        _same_layout(y, e)
    else:
        assert y.is_contiguous
    v = _fresh(rng, e, dtype)
    y[...] = _g(v)
    e[...] = v  # changes `a` only when NumPy's reshape was a view
    check_equal(x, a, dtype)
    check_equal(y, v, dtype)


def test_reshape_copy_is_independent(rng):
    a = rand(rng, (3, 5), "float32")
    x = _g(a)
    y = x.T.reshape(15)  # strides cannot describe this: a copy
    check_equal(y, a.T.reshape(15))
    x[...] = 0.5
    check_equal(y, a.T.reshape(15))
    y[0] = 7.0
    check_equal(x, np.full((3, 5), 0.5, np.float32))


@pytest.mark.parametrize("dtype", ["bool", "int16", "bfloat16", "complex128"])
def test_reshape_infer(rng, dtype):
    a = rand(rng, (4, 6), dtype)
    x = _g(a)
    for shape in [(-1,), (-1, 3), (2, -1), (2, -1, 4), (-1, 1, 1), (1, -1, 8), (3, 8, -1)]:
        y = x.reshape(shape)
        e = a.reshape(shape)
        check_equal(y, e, dtype)
        _same_layout(y, e)
    check_equal(x.T.reshape(-1), a.T.reshape(-1), dtype)
    check_equal(x[::-1].reshape(2, -1), a[::-1].reshape(2, -1), dtype)


@pytest.mark.parametrize("dtype", ALL)
def test_reshape_zero_d(rng, dtype):
    a = rand(rng, (), dtype)
    x = _g(a)
    one = x.reshape(1)
    check_equal(one, a.reshape(1), dtype)
    back = one.reshape(())
    check_equal(back, a, dtype)
    check_equal(x.reshape(()), a, dtype)
    check_equal(x.reshape(1, 1, 1), a.reshape(1, 1, 1), dtype)
    check_equal(x.reshape(-1), a.reshape(-1), dtype)
    check_equal(x.reshape(), a.reshape(()), dtype)
    check_equal(gp.reshape(one, ()), a, dtype)
    # All of them share one element: write through the deepest one.
    v = _fresh(rng, a, dtype)
    back[()] = _g(v)
    check_equal(x, v, dtype)
    check_equal(one, v.reshape(1), dtype)


@pytest.mark.parametrize(
    "src, new",
    [
        ((0, 3), (3, 0)),
        ((0, 3), (0,)),
        ((0,), (0, 5)),
        ((3, 0), (-1,)),
        ((2, 0, 4), (0, 8)),
        ((0, 3), (3, -1)),
        ((4, 0), (0, 2, 2)),
        ((0,), (1, 0, 1)),
    ],
)
@pytest.mark.parametrize("dtype", ["bool", "uint32", "float16", "complex64"])
def test_reshape_empty(dtype, src, new):
    x = gp.empty(src, dtype=gpdt(dtype))
    y = x.reshape(new)
    e = np.empty(src, npdt(dtype)).reshape(new)
    check_equal(y, e, dtype)
    assert y.size == 0 and y.nbytes == 0
    check_equal(x.T.reshape(new), e, dtype)


def test_reshape_forms(rng):
    a = rand(rng, (2, 6), "int32")
    x = _g(a)
    e = a.reshape(3, 4)
    for y in (
        x.reshape(3, 4),
        x.reshape((3, 4)),
        x.reshape([3, 4]),
        gp.reshape(x, (3, 4)),
        gp.reshape(x, shape=[3, -1]),
        gp.reshape(x=x, shape=(-1, 4)),
        x.reshape(np.int64(3), np.int32(4)),
        x.reshape((np.uint8(3), 4)),
    ):
        check_equal(y, e)
    check_equal(x.reshape(12), a.reshape(12))
    check_equal(gp.reshape(x, 12), a.reshape(12))
    check_equal(gp.reshape(x, -1), a.reshape(-1))
    # gp.reshape is a view too.
    y = gp.reshape(x, (4, 3))
    y[1, 2] = 99
    a.reshape(4, 3)[1, 2] = 99
    check_equal(x, a)


def test_reshape_shape_as_numpy_array(rng):
    # NumPy takes any sequence of integers as a shape, an integer ndarray included.
    a = rand(rng, (2, 6), "int32")
    x = _g(a)
    check_equal(x.reshape(np.array([3, 4])), a.reshape(np.array([3, 4])))
    check_equal(gp.reshape(x, np.array([4, -1])), a.reshape(np.array([4, -1])))
    check_equal(gp.broadcast_to(x[0], np.array([2, 6])), np.broadcast_to(a[0], np.array([2, 6])))


# ---- permute_dims, .T, .mT, matrix_transpose ----


PERMS = [
    (0, 1, 2),
    (2, 1, 0),
    (1, 0, 2),
    (0, 2, 1),
    (2, 0, 1),
    (1, 2, 0),
    (-1, 0, 1),
    (-3, -1, -2),
    (2, -2, 0),
]


@pytest.mark.parametrize("dtype", ALL)
def test_permute_dims(rng, dtype):
    a = rand(rng, (2, 3, 4), dtype)
    x = _g(a)
    for axes in PERMS:
        y = gp.permute_dims(x, axes)
        e = np.transpose(a, axes)
        check_equal(y, e, dtype)
        _same_layout(y, e)
        assert y.is_contiguous == (axes == (0, 1, 2))
    # Of a strided view, and written through.
    y = gp.permute_dims(x[::-1, 1:, ::2], [2, 0, 1])
    e = np.transpose(a[::-1, 1:, ::2], (2, 0, 1))
    check_equal(y, e, dtype)
    _same_layout(y, e)
    v = _fresh(rng, e, dtype)
    y[...] = _g(v)
    e[...] = v
    check_equal(x, a, dtype)


@pytest.mark.parametrize("shape", [(), (5,), (0,), (1, 1), (3, 4), (2, 0), (2, 3, 4), (2, 1, 3, 2)])
@pytest.mark.parametrize("dtype", ALL)
def test_T(rng, dtype, shape):
    a = rand(rng, shape, dtype)
    x = _g(a)
    check_equal(x.T, a.T, dtype)
    _same_layout(x.T, a.T)
    check_equal(x.T.T, a, dtype)
    if a.size:
        v = _fresh(rng, a.T, dtype)
        x.T[...] = _g(v)
        check_equal(x, v.T, dtype)


@pytest.mark.parametrize("shape", [(3, 4), (1, 5), (2, 3, 4), (2, 1, 3, 4), (3, 0, 2)])
@pytest.mark.parametrize("dtype", ALL)
def test_matrix_transpose(rng, dtype, shape):
    a = rand(rng, shape, dtype)
    x = _g(a)
    e = np.swapaxes(a, -1, -2)
    for y in (x.mT, gp.matrix_transpose(x)):
        check_equal(y, e, dtype)
        _same_layout(y, e)
    check_equal(x.mT.mT, a, dtype)
    # Of a negative-stride view, written through.
    y = x[..., ::-1, :].mT
    e = np.swapaxes(a[..., ::-1, :], -1, -2)
    check_equal(y, e, dtype)
    v = _fresh(rng, e, dtype)
    y[...] = _g(v)
    e[...] = v
    check_equal(x, a, dtype)


# ---- broadcast_to, contiguous, copy ----


BROADCASTS = [
    ((), (3, 2)),
    ((1,), (4,)),
    ((3,), (2, 3)),
    ((3, 1), (3, 4)),
    ((1, 4), (2, 3, 4)),
    ((2, 1, 3), (2, 5, 3)),
    ((1, 3), (0, 3)),
    ((2, 3), (2, 3)),
    ((), ()),
    ((3, 1), (1, 3, 0)),
]


@pytest.mark.parametrize("src, target", BROADCASTS)
@pytest.mark.parametrize("dtype", ALL)
def test_broadcast_to(rng, dtype, src, target):
    a = rand(rng, src, dtype)
    x = _g(a)
    y = gp.broadcast_to(x, target)
    e = np.broadcast_to(a, target)
    check_equal(y, e, dtype)
    _same_layout(y, e)
    np.testing.assert_array_equal(cmp(gp.to_numpy(y)), cmp(e))
    np.testing.assert_array_equal(cmp(y.get()), cmp(e))
    # 0-stride results copied: a dense, independent array.
    copies = [y.copy()] + ([] if y.dtype == gp.bool else [+y])  # no +bool, as NumPy 2
    copies += [] if y.is_contiguous else [gp.contiguous(y)]
    assert y.is_contiguous == (src == target or y.size <= 1)
    for c in copies:
        check_equal(c, e, dtype)
        assert c.is_contiguous
        _same_layout(c, np.array(e, order="C"))
        if c.size:
            w = _fresh(rng, c.get(), dtype)
            c[...] = _g(w)
            check_equal(c, w, dtype)
            check_equal(x, a, dtype)
            check_equal(y, e, dtype)


def test_broadcast_to_sees_base_changes(rng):
    a = rand(rng, (3, 1), "float64")
    x = _g(a)
    y = gp.broadcast_to(x, (2, 3, 4))
    x[1, 0] = 5.25
    a[1, 0] = 5.25
    check_equal(y, np.broadcast_to(a, (2, 3, 4)))
    z = gp.broadcast_to(x[::-1], (3, 3))  # broadcast of a negative-stride view
    check_equal(z, np.broadcast_to(a[::-1], (3, 3)))


@pytest.mark.parametrize("dtype", ALL)
def test_contiguous(rng, dtype):
    a = rand(rng, (4, 5), dtype)
    x = _g(a)
    # Already contiguous: the same data, no copy.
    same = gp.contiguous(x)
    check_equal(same, a, dtype)
    v = _fresh(rng, a, dtype)
    same[...] = _g(v)
    check_equal(x, v, dtype)
    a = v
    for f in (lambda b: b.T, lambda b: b[::-1, 1::2], lambda b: b[:, None, 2], lambda b: b[3::-2]):
        view = f(x)
        e = f(a)
        c = gp.contiguous(view)
        check_equal(c, e, dtype)
        assert c.is_contiguous
        _same_layout(c, np.array(e, order="C"))
        w = _fresh(rng, e, dtype)
        c[...] = _g(w)
        check_equal(x, a, dtype)  # the copy does not write back


@pytest.mark.parametrize("dtype", ALL)
def test_copy_is_independent(rng, dtype):
    a = rand(rng, (3, 4), dtype)
    x = _g(a)
    for f in (lambda b: b, lambda b: b.T, lambda b: b[::-1, ::3], lambda b: b[1]):
        c = f(x).copy()
        e = np.array(f(a))
        check_equal(c, e, dtype)
        assert c.is_contiguous
        # Changing the source leaves the copy alone, and the other way round.
        v = _fresh(rng, a, dtype)
        x[...] = _g(v)
        check_equal(c, e, dtype)
        w = _fresh(rng, e, dtype)
        c[...] = _g(w)
        check_equal(x, v, dtype)
        x[...] = _g(a)


# ---- basic indexing ----


KEYS_0D = [(), Ellipsis, None, (None, None), (Ellipsis, None), (None, Ellipsis, None)]

S = slice
KEYS_1D = [
    0,
    -1,
    3,
    -7,
    6,
    S(None),
    S(2, 5),
    S(None, None, 2),
    S(None, None, -1),
    S(None, None, -3),
    S(5, 1, -1),
    S(-2, None),
    S(-100, 100),
    S(100, -100, -1),
    S(3, 3),
    S(5, 2),
    S(20, 30),
    S(-30, -20),
    S(-1, -8, -2),
    S(None, None, 7),
    S(None, None, 100),
    S(0, 7, -1),
    S(6, None, -100),
    None,
    Ellipsis,
    (),
    (None, S(1, None)),
    (S(None, None, -1), None),
    (Ellipsis, 2),
    (Ellipsis, None),
    (None, Ellipsis, None),
    (-2, Ellipsis),
    (None, -3),
    np.int64(2),
    np.uint8(1),
]
KEYS_2D = [
    (1, 2),
    (-1, -6),
    (1,),
    2,
    (S(None), 0),
    (S(None, None, -1), S(None, None, 2)),
    (S(4, 0, -2), S(-1, None, -1)),
    (Ellipsis, 3),
    (3, Ellipsis),
    (None, 1, None, S(None)),
    (S(1, 4), None, S(None, None, -2)),
    (Ellipsis, None),
    (S(10, 20), S(None)),
    (S(None), S(3, 3)),
    (0, S(None, None, -1)),
    (Ellipsis,),
    (),
    (S(-100, 100, 3), S(100, -100, -4)),
    (None, None),
    (-5, Ellipsis, -1),
    (S(None, None, -1), Ellipsis, None),
    (S(3, None, -1), 4),
    (None, Ellipsis, -2, None),
]
KEYS_4D = [
    (Ellipsis, 1),
    (1, Ellipsis),
    (0, Ellipsis, S(None, None, -1)),
    (S(None), None, 1, S(1, 3), Ellipsis),
    (-1, -1, -1, -1),
    (S(None, None, -1),) * 4,
    (None, Ellipsis, None),
    (S(None), S(2, None, -2), Ellipsis, S(4, None, -3)),
    (1, S(None), 2),
    (Ellipsis, S(0, 0)),
    (S(1, 2), Ellipsis, None, 0),
    (S(None), -2, None, S(None, None, 2)),
    (0, 0),
    (Ellipsis, -1, S(None, None, -2)),
    (None, 1, None, 2, None, 3, None, 4, None),
    (S(None, None, -1), S(1, None, 1), S(3, 0, -2), S(None, None, -4)),
]


def _check_key(rng, dtype, a, key):
    """x[key] matches NumPy (values, shape, strides), shares x's data, and x[key] = v too."""
    x = _g(a)
    e = np.asarray(a[key])
    y = x[key]
    check_equal(y, e, dtype)
    _same_layout(y, e)
    # Writing through the view writes the base.
    v = _fresh(rng, e, dtype)
    y[...] = _g(v)
    b = a.copy()
    b[key] = v
    check_equal(x, b, dtype)
    # x[key] = value directly.
    w = _fresh(rng, e, dtype)
    x[key] = _g(w)
    b[key] = w
    check_equal(x, b, dtype)


@pytest.mark.parametrize(
    "shape, keys",
    [((), KEYS_0D), ((7,), KEYS_1D), ((5, 6), KEYS_2D), ((2, 3, 4, 5), KEYS_4D)],
    ids=["0d", "1d", "2d", "4d"],
)
@pytest.mark.parametrize("dtype", ALL)
def test_getitem(rng, dtype, shape, keys):
    a = rand(rng, shape, dtype)
    for key in keys:
        try:
            _check_key(rng, dtype, a, key)
        except AssertionError as err:
            raise AssertionError(f"key {key!r}: {err}") from err


@pytest.mark.parametrize("dtype", ["int8", "float32", "complex128"])
def test_getitem_index_like_integers(rng, dtype):
    # NumPy integer scalars and 0-d integer arrays index like Python ints.
    a = rand(rng, (4, 5), dtype)
    x = _g(a)
    for key, nkey in [
        (np.int8(-2), -2),
        (np.uint64(3), 3),
        (np.array(1), 1),
        (_g(np.array(2)), 2),
        ((1, np.int32(-1)), (1, -1)),
        ((_g(np.array(-1, np.int16)), S(None, None, -1)), (-1, S(None, None, -1))),
    ]:
        check_equal(x[key], np.asarray(a[nkey]), dtype)


def test_getitem_huge_slice_bounds(rng):
    # Bounds beyond int64 are clamped like any out-of-range bound (Python's slice.indices).
    a = rand(rng, (5, 3), "int32")
    x = _g(a)
    for key in (
        S(None, 10**20),
        S(-(10**20), None),
        S(10**20, None, -1),
        S(2, -(10**20), -1),
        (S(None), S(-(2**64), 2**64)),
        S(None, None, 2**64),
    ):
        check_equal(x[key], a[key])


@pytest.mark.parametrize("dtype", ALL)
def test_chained_views(rng, dtype):
    a = rand(rng, (6, 7, 4), dtype)
    x = _g(a)
    chains = [
        lambda b: b[::-1][1:, ::2][None, ::-2, ..., 1],
        lambda b: b[::-2, ::-1, ::-1][1][::-1, None][2:5],
        lambda b: b[:, 1:6][..., ::-1].transpose(2, 0, 1)[1:, ::-1][0, 3::-1],
        lambda b: b[1:-1].reshape(4, 14, 2)[::-1, 3:11:3].T[1],
        lambda b: b[::-3].mT[..., 5::-2][:, ::-1][None][0, 1],
        lambda b: b[2:2][::-1],
        lambda b: b[:, ::-1][:, 2:5][:, ::-1][:, 1:2],
    ]
    for i, f in enumerate(chains):
        g = _chain2_gp(x) if i == 2 else f(x)
        e = f(a)
        check_equal(g, e, dtype)
        _same_layout(g, e)
        v = _fresh(rng, e, dtype)
        g[...] = _g(v)
        b = a.copy()
        f(b)[...] = v
        check_equal(x, b, dtype)
        x[...] = _g(a)


def _chain2_gp(x):
    # chains[2] spelled with gp.permute_dims for NumPy's .transpose.
    return gp.permute_dims(x[:, 1:6][..., ::-1], (2, 0, 1))[1:, ::-1][0, 3::-1]


@pytest.mark.parametrize("dtype", ["bool", "uint16", "float64", "complex64"])
def test_empty_slices(rng, dtype):
    a = rand(rng, (4, 5), dtype)
    x = _g(a)
    for key in [
        S(0, 0),
        S(3, 1),
        S(1, 3, -1),
        S(10, None),
        (S(None), S(5, None)),
        (S(2, 2), S(None, None, -1)),
        (Ellipsis, S(-1, -1)),
        (1, S(4, 4)),
        (S(0, 0), None, 1),
    ]:
        y = x[key]
        e = a[key]
        check_equal(y, e, dtype)
        _same_layout(y, e)
        assert y.size == 0 and y.nbytes == 0
        # Further views of an empty view, and assignments into it, are no-ops.
        check_equal(y[::-1], e[::-1], dtype)
        x[key] = _g(np.empty(e.shape, npdt(dtype)))
        x[key] = _py_scalar(rng, dtype)
        check_equal(x, a, dtype)
    z = _g(np.empty((0, 3), npdt(dtype)))
    check_equal(z[:, 1], np.empty((0,), npdt(dtype)), dtype)
    check_equal(z[::-1, None, ::2], np.empty((0, 1, 2), npdt(dtype)), dtype)


# ---- __setitem__ ----


@pytest.mark.parametrize("dtype", ALL)
def test_setitem_scalar(rng, dtype):
    a = rand(rng, (4, 6), dtype)
    x = _g(a)
    for key in [
        (1, 2),
        (-1, -1),
        0,
        (S(None), 3),
        (S(None, None, -1), S(1, None, 2)),
        Ellipsis,
        (S(3, 0, -2), None, -2),
        (None, S(None), S(-1, None, -3)),
    ]:
        s = _py_scalar(rng, dtype)
        x[key] = s
        a[key] = s
        check_equal(x, a, dtype)


@pytest.mark.parametrize("dtype", ALL)
def test_setitem_broadcast_value(rng, dtype):
    a = rand(rng, (3, 4, 5), dtype)
    x = _g(a)
    for key, vshape in [
        (Ellipsis, (5,)),
        (Ellipsis, (4, 1)),
        (1, (1, 5)),
        (S(None), ()),
        ((S(None, None, -1), 0), (1,)),
        ((S(None), S(None, None, -2)), (3, 1, 1)),
        ((0, S(None), S(1, 4)), (4, 1)),
        ((None, 2), (1, 5)),
        (2, (4, 5)),
    ]:
        v = rand(rng, vshape, dtype)
        x[key] = _g(v)
        a[key] = v
        check_equal(x, a, dtype)


def test_setitem_value_with_leading_unit_dims(rng):
    # NumPy drops leading length-1 dimensions of the value: a[0] = b with b.shape == (1, 5).
    a = rand(rng, (3, 5), "float32")
    x = _g(a)
    for key, vshape in [(0, (1, 5)), (S(1, 3), (1, 1, 2, 5)), ((1, S(2, 3)), (1, 1))]:
        v = rand(rng, vshape, "float32")
        x[key] = _g(v)
        a[key] = v
        check_equal(x, a)


# (source dtype, destination dtype): the value is cast to the destination, as in NumPy.
CASTS = [
    ("float64", "int32"),
    ("int64", "float32"),
    ("bool", "float16"),
    ("float32", "bfloat16"),
    ("int16", "complex64"),
    ("uint8", "bool"),
    ("float64", "bool"),
    ("int8", "uint16"),
    ("float16", "float64"),
    ("bfloat16", "complex128"),
    ("uint32", "int64"),
    ("complex64", "complex128"),
    ("int32", "uint8"),
]


@pytest.mark.parametrize("src, dst", CASTS)
def test_setitem_casts_value(rng, src, dst):
    a = rand(rng, (4, 5), dst)
    x = _g(a)
    v = rand(rng, (4, 3), src, small=True)
    if kind(src) == "f" and kind(dst) in "iu":
        v = np.abs(v)
    x[:, 1:4] = _g(v)
    a[:, 1:4] = v.astype(np.float32).astype(npdt(dst)) if src == "bfloat16" else v.astype(npdt(dst))
    check_equal(x, a, dst)
    # A 0-d value of another dtype, broadcast through a negative-stride view.
    w = rand(rng, (), src, small=True)
    x[::-1, ::-2] = _g(w)
    a[::-1, ::-2] = cmp(w).astype(npdt(dst))
    check_equal(x, a, dst)


@pytest.mark.parametrize(
    "dtype, value, expected",
    [
        ("int32", 7.9, 7),
        ("int64", -3.9, -3),
        ("uint8", 200.5, 200),
        ("float32", 3, 3.0),
        ("float16", True, 1.0),
        ("int16", False, 0),
        ("bool", 2, True),
        ("bool", 0.0, False),
        ("complex64", 2.5, 2.5 + 0j),
        ("complex128", -4, -4 + 0j),
        ("float64", 2**53 + 1, 2.0**53),
    ],
)
def test_setitem_casts_python_scalar(rng, dtype, value, expected):
    a = rand(rng, (3,), dtype)
    x = _g(a)
    x[1] = value
    a[1] = expected
    check_equal(x, a, dtype)


@pytest.mark.parametrize("dtype", ALL)
def test_setitem_negative_stride_view(rng, dtype):
    a = rand(rng, (5, 6), dtype)
    x = _g(a)
    y = x[::-1, 1::2]
    b = a[::-1, 1::2]
    v = rand(rng, (3,), dtype)
    y[0] = _g(v)
    b[0] = v
    s = _py_scalar(rng, dtype)
    y[:, -1] = s
    b[:, -1] = s
    w = rand(rng, (2, 1), dtype)
    y[3:1:-1, ::-1] = _g(w)
    b[3:1:-1, ::-1] = w
    z = y[::-2, ::-1]  # a negative-stride view of a negative-stride view
    u = rand(rng, z.shape, dtype)
    z[...] = _g(u)
    b[::-2, ::-1] = u
    check_equal(x, a, dtype)
    check_equal(y, b, dtype)


@pytest.mark.parametrize("dtype", ALL)
def test_setitem_overlapping(rng, dtype):
    a = rand(rng, (6, 5), dtype)
    x = _g(a)
    cases = [
        lambda t: t.__setitem__(S(1, None), t[:-1]),
        lambda t: t.__setitem__(S(None, -1), t[1:]),
        lambda t: t.__setitem__(S(None, None, -1), t),
        lambda t: t.__setitem__((S(None), S(1, None)), t[:, :-1]),
        lambda t: t.__setitem__(S(None), t[:, ::-1]),
        lambda t: t.__setitem__((S(0, 5), S(0, 5)), t[:5, :5].T),
        lambda t: t.__setitem__((S(1, 6), S(0, 4)), t[4::-1, 1:][::-1, ::-1]),
        lambda t: t.__setitem__(S(2, None), t[0]),
        lambda t: t.__setitem__(S(None, None, 2), t[1::2][::-1]),
        lambda t: t.__setitem__(Ellipsis, t[None, 3]),
    ]
    for i, f in enumerate(cases):
        f(x)
        f(a)
        try:
            check_equal(x, a, dtype)
        except AssertionError as err:
            raise AssertionError(f"case {i}: {err}") from err


@pytest.mark.parametrize("dtype", ALL)
def test_setitem_zero_d(rng, dtype):
    a = rand(rng, (), dtype)
    x = _g(a)
    s = _py_scalar(rng, dtype)
    x[()] = s
    check_equal(x, np.asarray(s, npdt(dtype)), dtype)
    v = _fresh(rng, a, dtype)
    x[()] = _g(v)
    check_equal(x, v, dtype)
    w = _fresh(rng, v, dtype)
    x[...] = _g(w)
    check_equal(x, w, dtype)
    u = _fresh(rng, w, dtype)
    x[None] = _g(u.reshape(1))
    check_equal(x, u, dtype)
    # A 0-d element view of a larger array.
    b = rand(rng, (3, 2), dtype)
    y = _g(b)
    e = y[2, 1]
    assert e.shape == () and e.ndim == 0
    t = _fresh(rng, b[2, 1], dtype)
    e[()] = _g(t)
    b[2, 1] = t
    check_equal(y, b, dtype)


# ---- ops on views ----


@pytest.mark.parametrize("dtype", ALL)
def test_arithmetic_on_views(rng, dtype):
    a = rand(rng, (5, 6), dtype, small=True)
    x = _g(a)
    y = rand(rng, (6, 5), dtype, small=True)
    gy = _g(y)
    views = [
        (x[::-1, ::2], a[::-1, ::2]),
        (x.T, a.T),
        (gp.broadcast_to(x[2:3], (4, 6)), np.broadcast_to(a[2:3], (4, 6))),
        (x[None, 1:, -1], a[None, 1:, -1]),
    ]
    for gv, nv in views:
        got = gv + 1
        dense = _g(np.array(nv)) + 1  # the same op on dense data
        check_equal(got, host(dense), str(dense.dtype))
        if dtype in NUMERIC:
            check_equal(got, nv + np.asarray(1, npdt(dtype)), dtype)
    # Two views of different layouts, and a broadcast view.
    got = x[::-1, ::2] * gy.T[::-1, 1::2]
    dense = _g(np.array(a[::-1, ::2])) * _g(np.array(y.T[::-1, 1::2]))
    check_equal(got, host(dense), str(dense.dtype))
    if dtype in NUMERIC:
        # Complex products may round differently from NumPy's formula in the last place.
        tol = 4 * UNIT_ROUNDOFF.get(dtype, 0.0) if kind(dtype) == "c" else 0.0
        check_close(got, a[::-1, ::2] * y.T[::-1, 1::2], dtype, rtol=tol)
        check_equal(
            x.T[::2] - gp.broadcast_to(gy[0, :, None], (5, 5))[::2],
            a.T[::2] - np.broadcast_to(y[0, :, None], (5, 5))[::2],
            dtype,
        )


@pytest.mark.parametrize("dtype", ALL)
def test_astype_of_views(rng, dtype):
    a = rand(rng, (3, 4, 5), dtype)
    x = _g(a)
    for target in ("float64", "complex128", "bool", dtype):
        for gv, nv in (
            (x.T, a.T),
            (x[::-1, 1, ::-2], a[::-1, 1, ::-2]),
            (gp.broadcast_to(x[:, :1], (2, 3, 4, 5)), np.broadcast_to(a[:, :1], (2, 3, 4, 5))),
        ):
            # complex -> float64 keeps the real part (NumPy: the same, with a ComplexWarning).
            ref = cmp(nv).real if kind(dtype) == "c" and target == "float64" else cmp(nv)
            expected = ref.astype(npdt(target))
            y = gv.astype(gpdt(target))
            check_equal(y, expected, target)
            assert y.is_contiguous
            check_equal(gp.astype(gv, target), expected, target)


@pytest.mark.parametrize("dtype", FLOATS + ["complex64"])
def test_matmul_of_views(rng, dtype):
    a = rand(rng, (4, 6), dtype, small=True)
    b = rand(rng, (5, 4), dtype, small=True)
    got = _g(a).T[::-1] @ _g(b).mT[:, ::2]
    expected = cmp(a).astype(np.complex128).T[::-1] @ cmp(b).astype(np.complex128).T[:, ::2]
    if kind(dtype) == "f":
        expected = expected.real
    tol = {"float16": 1e-2, "bfloat16": 5e-2}.get(dtype, 1e-5)
    check_close(got, expected, dtype, rtol=tol, atol=tol * 40)


@pytest.mark.parametrize("dtype", ALL)
def test_views_to_host_and_device(rng, dtype):
    a = rand(rng, (4, 3), dtype)
    x = _g(a)
    cases = [
        (x[::-1, ::-2], a[::-1, ::-2]),
        (x.T, a.T),
        (gp.broadcast_to(x[1], (2, 4, 3)), np.broadcast_to(a[1], (2, 4, 3))),
        (x[:, None, 1], a[:, None, 1]),
        (x[2, 2], a[2, 2]),
    ]
    for gv, nv in cases:
        np.testing.assert_array_equal(cmp(gp.to_numpy(gv)), cmp(nv), strict=True)
        np.testing.assert_array_equal(cmp(gv.get()), cmp(nv), strict=True)
        for d in gp.devices():
            moved = gv.to_device(d)
            assert moved.device == d
            check_equal(moved, np.asarray(nv), dtype)


# ---- attributes ----


def _attr_cases(a, x):
    return [
        (x, a),
        (x[1:, ::2], a[1:, ::2]),
        (x[::-1, ::-3, 1], a[::-1, ::-3, 1]),
        (x.T, a.T),
        (gp.permute_dims(x, (1, 2, 0)), a.transpose(1, 2, 0)),
        (x[:, None, 2], a[:, None, 2]),
        (
            gp.broadcast_to(x[:1, :, 2:3], (2, 3, 4, 7)),
            np.broadcast_to(a[:1, :, 2:3], (2, 3, 4, 7)),
        ),
        (x[1, 2, 3], a[1, 2, 3]),
        (x[2:1], a[2:1]),
        (x.reshape(6, 10), a.reshape(6, 10)),
        (x[..., 1:4].reshape(3, 4, 3), a[..., 1:4].reshape(3, 4, 3)),
    ]


@pytest.mark.parametrize("dtype", ALL)
def test_attributes(rng, dtype):
    a = rand(rng, (3, 4, 5), dtype)
    x = _g(a)
    for y, e in _attr_cases(a, x):
        e = np.asarray(e)
        assert y.shape == e.shape
        assert y.strides == e.strides, (y.shape, y.strides, e.strides)
        assert y.ndim == e.ndim
        assert y.size == e.size
        assert y.itemsize == e.itemsize == npdt(dtype).itemsize
        assert y.nbytes == e.nbytes
        assert y.is_contiguous == e.flags.c_contiguous, (y.shape, y.strides)
        if e.ndim:
            assert len(y) == len(e)
        assert str(y.dtype) == dtype


# ---- bad input ----


@pytest.fixture
def m34(rng):
    return _g(rand(rng, (3, 4), "float32"))


@pytest.mark.parametrize(
    "key", [(0, 0, 0), (S(None), S(None), 1), (0, Ellipsis, 1, 2), (None, 1, 2, S(None))]
)
def test_too_many_indices(m34, key):
    with pytest.raises(IndexError, match=_msg("index", "too many indices", "2-dimensional")):
        m34[key]
    with pytest.raises(IndexError, match=_msg("index", "too many indices", "2-dimensional")):
        m34[key] = 1.0
    with pytest.raises(IndexError, match="index.*0-dimensional"):
        _g(np.float32(2))[0]


@pytest.mark.parametrize(
    "key, index, axis, size",
    [
        (3, 3, 0, 3),
        (-4, -4, 0, 3),
        ((0, 4), 4, 1, 4),
        ((1, -5), -5, 1, 4),
        ((Ellipsis, 7), 7, 1, 4),
        ((None, S(None), 10), 10, 1, 4),
    ],
)
def test_index_out_of_bounds(m34, key, index, axis, size):
    expected = _msg("index", str(index), "out of bounds", f"axis {axis}", f"size {size}")
    with pytest.raises(IndexError, match=expected):
        m34[key]
    with pytest.raises(IndexError, match=expected):
        m34[key] = 0.0


@pytest.mark.parametrize("index", [2**63, -(2**63) - 1, 2**70])
def test_index_huge_integer(m34, index):
    # Python ints beyond int64 cannot index anything: NumPy raises OverflowError, a Python list
    # IndexError; either way a clear error naming the index, not an internal cast failure.
    with pytest.raises((IndexError, OverflowError), match="index"):
        m34[index]
    with pytest.raises((IndexError, OverflowError), match="index"):
        m34[0, index]


def test_index_out_of_bounds_on_empty_axis():
    x = gp.empty((0, 3))
    with pytest.raises(IndexError, match=_msg("index", "0", "out of bounds", "size 0")):
        x[0]
    with pytest.raises(IndexError, match=_msg("index", "-1", "out of bounds", "size 0")):
        x[-1, 1]


@pytest.mark.parametrize("key", [S(None, None, 0), (S(None), S(1, 3, 0)), (Ellipsis, S(0, 0, 0))])
def test_zero_slice_step(m34, key):
    with pytest.raises(ValueError, match="index.*step"):
        m34[key]
    with pytest.raises(ValueError, match="index.*step"):
        m34[key] = 1.0


@pytest.mark.parametrize(
    "key", [(Ellipsis, Ellipsis), (Ellipsis, 0, Ellipsis), (None, Ellipsis, None, Ellipsis)]
)
def test_two_ellipses(m34, key):
    with pytest.raises(IndexError, match="index.*ellipsis"):
        m34[key]


@pytest.mark.parametrize(
    "key, shown", [(1.5, "1.5"), ((0, 2.0), "2.0"), ("a", "'a'"), ((S(None), {}), "{}"), (1j, "1j")]
)
def test_invalid_index_type(m34, key, shown):
    with pytest.raises(IndexError, match=_msg("index", shown)):
        m34[key]
    with pytest.raises(IndexError, match=_msg("index", shown)):
        m34[key] = 1.0


@pytest.mark.parametrize("key", [S(0.5, 2), S(None, "x"), S(None, None, 1.0)])
def test_invalid_slice_entries(m34, key):
    # NumPy: TypeError "slice indices must be integers or None or have an __index__ method".
    with pytest.raises(TypeError, match="index.*slice indices"):
        m34[key]


def _advanced_keys():
    return [
        [0, 1],
        ([0, 2], S(None)),
        (S(None), [1]),
        [[0, 1], [1, 2]],
        np.array([0, 2]),
        np.array([1]),
        np.array([True, False, True]),
        _g(np.array([0, 1])),
        _g(np.array([1])),
        _g(np.array([True, False, True])),
        _g(np.ones((3, 4), bool)),
        (_g(np.array([2])), 1),
        _g(np.array(True)),
        True,
        False,
        (0, True),
        np.True_,
    ]


def _numpy_key(key):
    """The key with GPUArrays as NumPy arrays (for the NumPy reference)."""
    if isinstance(key, tuple):
        return tuple(_numpy_key(k) for k in key)
    return host(key) if isinstance(key, gp.GPUArray) else key


@pytest.mark.parametrize("case", range(17))
def test_advanced_indexing(m34, case):
    # Integer arrays and boolean masks (0-d ones too): a gather and a scatter, as NumPy.
    key = _advanced_keys()[case]
    h = host(m34)
    check_equal(m34[key], h[_numpy_key(key)])
    m34[key] = 1.0
    h[_numpy_key(key)] = 1.0
    check_equal(m34, h)


@pytest.mark.parametrize("shape", [(5, 3), (13,), (2, 2, 2), (0,), (12, 0), (1,)])
def test_reshape_incompatible(m34, shape):
    # NumPy: "cannot reshape array of size 12 into shape (5,3)".
    shown = "(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"
    with pytest.raises(ValueError, match=_msg("reshape", "size 12", shown)):
        m34.reshape(shape)
    with pytest.raises(ValueError, match=_msg("reshape", "size 12", shown)):
        gp.reshape(m34.T, shape)


@pytest.mark.parametrize(
    "shape, shown", [((5, -1), "(5, -1)"), ((-1, 0), "(-1, 0)"), ((-1, 5, 2), "(-1, 5, 2)")]
)
def test_reshape_incompatible_infer(m34, shape, shown):
    with pytest.raises(ValueError, match=_msg("reshape", "12", shown)):
        m34.reshape(shape)


def test_reshape_empty_cannot_infer():
    # Size 0 with a 0 among the known dimensions: -1 is ambiguous (NumPy raises too).
    with pytest.raises(ValueError, match=_msg("reshape", "size 0", "(-1, 0)")):
        gp.empty((0, 3)).reshape(-1, 0)


@pytest.mark.parametrize("shape", [(-1, -1), (2, -1, -1), (-1, 3, -1, 4)])
def test_reshape_two_unknown(m34, shape):
    shown = "(" + ", ".join(map(str, shape)) + ")"
    with pytest.raises(ValueError, match=_msg("reshape", "unknown dimension")):
        m34.reshape(shape)
    # The message also names the offending shape.
    with pytest.raises(ValueError, match=_msg("reshape", shown)):
        m34.reshape(shape)


@pytest.mark.parametrize("shape", [(-2, -6), (3, -4), (-3, 0), (-12,)])
def test_reshape_negative_dims(m34, shape):
    shown = "(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"
    with pytest.raises(ValueError, match=_msg("reshape", "negative", shown)):
        m34.reshape(shape)


@pytest.mark.parametrize("bad", ["3", None, (3, 4.0), (True, 12), 2.5])
def test_reshape_bad_shape_type(m34, bad):
    with pytest.raises(TypeError, match="reshape"):
        m34.reshape(bad)


@pytest.mark.parametrize("axes, shown", [((0,), "(0)"), ((0, 1, 2), "(0, 1, 2)"), ((), "()")])
def test_permute_dims_wrong_length(m34, axes, shown):
    with pytest.raises(ValueError, match=_msg("permute_dims", shown, "dimension 2")):
        gp.permute_dims(m34, axes)


@pytest.mark.parametrize("axes", [(0, 0), (1, -1), (-2, 0)])
def test_permute_dims_repeated_axes(m34, axes):
    with pytest.raises(ValueError, match=_msg("permute_dims", "repeated axis")):
        gp.permute_dims(m34, axes)
    # The message also names the axes.
    shown = "(" + ", ".join(map(str, axes)) + ")"
    with pytest.raises(ValueError, match=_msg("permute_dims", shown)):
        gp.permute_dims(m34, axes)


@pytest.mark.parametrize("axes, axis", [((0, 2), 2), ((-3, 0), -3), ((5, 1), 5)])
def test_permute_dims_axis_out_of_range(m34, axes, axis):
    # NumPy raises AxisError, which is both an IndexError and a ValueError.
    with pytest.raises(
        (IndexError, ValueError), match=_msg("permute_dims", f"axis {axis}", "dimension 2")
    ):
        gp.permute_dims(m34, axes)


@pytest.mark.parametrize(
    "src, target",
    [
        ((3, 4), (2, 4)),
        ((3, 4), (4,)),
        ((3,), (3, 4)),
        ((2, 1), (3, 5)),
        ((0,), (2,)),
        ((3, 4), ()),
    ],
)
def test_broadcast_to_incompatible(rng, src, target):
    def show(s):
        return "(" + ", ".join(map(str, s)) + ("," if len(s) == 1 else "") + ")"

    x = _g(rand(rng, src, "int16"))
    with pytest.raises(ValueError, match=_msg("broadcast_to", show(src), show(target))):
        gp.broadcast_to(x, target)


def test_broadcast_to_negative_dim(m34):
    with pytest.raises(ValueError, match=_msg("broadcast_to", "negative", "(-3, 4)")):
        gp.broadcast_to(m34, (-3, 4))


@pytest.mark.parametrize("shape, shown", [((3,), "(3,)"), ((), "()"), ((0,), "(0,)")])
def test_matrix_transpose_needs_2d(shape, shown):
    x = gp.zeros(shape)
    with pytest.raises(ValueError, match=_msg("matrix_transpose", shown)):
        _ = x.mT
    with pytest.raises(ValueError, match=_msg("matrix_transpose", shown)):
        gp.matrix_transpose(x)


def test_len_of_zero_d():
    with pytest.raises(TypeError, match="len.*0-d"):
        len(gp.full((), 3.5))
    assert len(gp.empty((0, 4))) == 0
    assert len(gp.empty((6,))[::-4]) == 2


@pytest.mark.parametrize(
    "key, vshape, shown",
    [
        (Ellipsis, (3,), "(3,)"),
        (0, (3,), "(3,)"),
        (S(1, None), (3, 4), "(3, 4)"),
        ((S(None), None), (2, 1, 4), "(2, 1, 4)"),
        (1, (2, 4), "(2, 4)"),
    ],
)
def test_setitem_not_broadcastable(rng, m34, key, vshape, shown):
    target = np.empty((3, 4))[key].shape
    tshown = "(" + ", ".join(map(str, target)) + ("," if len(target) == 1 else "") + ")"
    v = _g(rand(rng, vshape, "float32"))
    before = m34.get()
    # NumPy: "could not broadcast input array from shape (3,) into shape (3,4)".
    with pytest.raises(ValueError, match=_msg(shown, tshown)):
        m34[key] = v
    check_equal(m34, before)
    # The message names the operation the user called.
    with pytest.raises(ValueError, match="setitem"):
        m34[key] = v


@pytest.mark.parametrize(
    "value, shown",
    [
        ([1.0, 2.0, 3.0, 4.0], "list"),
        ((1, 2), "tuple"),
        (None, "NoneType"),
        ("1", "str"),
        ({}, "dict"),
    ],
)
def test_setitem_bad_value_type(m34, value, shown):
    before = m34.get()
    with pytest.raises(TypeError, match=_msg("setitem", shown)):
        m34[0] = value
    check_equal(m34, before)


@pytest.mark.parametrize(
    "dtype, value",
    [("uint8", 300), ("uint8", -1), ("int8", 128), ("int16", -(2**15) - 1), ("uint32", 2**32)],
)
def test_setitem_scalar_overflow(rng, dtype, value):
    # As NumPy 2: a Python int out of the array's range raises OverflowError.
    a = rand(rng, (4,), dtype)
    x = _g(a)
    with pytest.raises(OverflowError, match=_msg(str(value), dtype)):
        x[1] = value
    check_equal(x, a, dtype)
    with pytest.raises(OverflowError, match="setitem"):
        x[1] = value


@pytest.mark.parametrize("step", [2**62, -(2**63), -(2**100), 2**100])
def test_huge_slice_steps(rng, step):
    a = rand(rng, (10,), "int32")
    x = gp.asarray(a)
    check_equal(x[::step], a[::step])
    check_equal(x[3::step], a[3::step])


def test_zero_d_array_as_shape_and_iteration(rng):
    n = gp.asarray(np.array(5))
    assert gp.zeros(n).shape == (5,)
    assert gp.zeros((n, 2)).shape == (5, 2)
    with pytest.raises(TypeError, match="0-d"):
        iter(n)
    a = rand(rng, (3, 2), "float32")
    rows = list(gp.asarray(a))
    assert len(rows) == 3
    for got, want in zip(rows, a):
        check_equal(got, want)


@pytest.mark.parametrize("dtype", ["int8", "int64", "uint16"])
def test_setitem_python_float_into_integers_as_numpy(dtype):
    x = gp.zeros((3,), dtype=dtype)
    x[0] = 3.9
    x[1] = -0.5
    check_equal(x, np.array([3, 0, 0], dtype=dtype))
    with pytest.raises(ValueError, match="setitem.*NaN"):
        x[0] = float("nan")
    with pytest.raises(OverflowError, match="setitem"):
        x[0] = float("inf")
    with pytest.raises(OverflowError, match="setitem"):
        x[1] = 1e30
    with pytest.raises(TypeError, match="setitem.*complex"):
        x[2] = 1 + 2j
    check_equal(x, np.array([3, 0, 0], dtype=dtype))  # failed assignments wrote nothing
    b = gp.zeros((2,), dtype=gp.bool)
    b[0] = float("nan")  # NaN is truthy, as in NumPy
    check_equal(b, np.array([True, False]))

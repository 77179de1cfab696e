"""Integer-array indexing: take, take_along_axis and x[...] with integer arrays (lists, NumPy
and device arrays, integers among them, slices and Ellipsis around them), against NumPy on
random data for every dtype, with negative, repeated, empty and strided indices, property-based
keys (hypothesis), and the errors of bad indices."""

import numpy as np
import pytest
from helpers import ALL, INTS, check_equal, host, rand
from hypothesis import given, settings
from hypothesis import strategies as st

import pygpukit as gp


def _g(a):
    return gp.asarray(np.asarray(a))


@pytest.mark.parametrize("dtype", ALL)
def test_take_matches_numpy(rng, dtype):
    h = rand(rng, (4, 5, 3), dtype)
    x = _g(h)[:, ::-1]  # a strided source
    hx = h[:, ::-1]
    for idx, axis in [
        ([0, 4, -1, 2, 2], 1),
        ([[1, 0], [3, -4]], 0),
        ([2, 0], -1),
        ([], 1),
        ([7, -60, 0], None),
        (np.int64(3), 0),
    ]:
        want = np.take(hx, idx, axis=axis)
        got = gp.take(x, _g(np.asarray(idx, dtype=np.int64)), axis=axis)
        check_equal(got, want)


@pytest.mark.parametrize("idx_dtype", INTS)
def test_take_accepts_every_integer_index_dtype(rng, idx_dtype):
    h = rand(rng, (6, 2), "float32")
    idx = np.array([5, 0, 3], dtype=idx_dtype)
    check_equal(gp.take(_g(h), _g(idx), axis=0), np.take(h, idx, axis=0))


@pytest.mark.parametrize("dtype", ALL)
def test_take_along_axis_matches_numpy(rng, dtype):
    h = rand(rng, (3, 4, 5), dtype)
    x = _g(h)
    for axis, ishape in [
        (2, (3, 4, 2)),
        (0, (6, 4, 5)),
        (1, (3, 1, 5)),
        (-1, (1, 4, 3)),
        (1, (3, 0, 5)),
    ]:
        n = h.shape[axis]
        i = rng.integers(-n, n, size=ishape)
        check_equal(gp.take_along_axis(x, _g(i), axis=axis), np.take_along_axis(h, i, axis=axis))
    # Sorting-style use: argsort indices from NumPy.
    i = np.argsort(np.abs(h.astype(np.complex128)) if dtype != "bool" else h, axis=1)
    check_equal(gp.take_along_axis(x, _g(i), axis=1), np.take_along_axis(h, i, axis=1))


def test_take_errors():
    x = gp.arange(10).reshape(2, 5)
    with pytest.raises(IndexError, match="take: index 5 is out of bounds for axis 1 with size 5"):
        gp.take(x, _g(np.array([0, 5])), axis=1)
    with pytest.raises(IndexError, match="take: index -3 is out of bounds for axis 0 with size 2"):
        gp.take(x, _g(np.array([-3])), axis=0)
    with pytest.raises(IndexError, match="index >= 2\\*\\*63"):
        gp.take(x, _g(np.array([2**63], dtype=np.uint64)), axis=1)
    with pytest.raises(IndexError, match="must be of integer type, got float32"):
        gp.take(x, gp.zeros(2), axis=0)
    with pytest.raises(IndexError, match="out of bounds for axis 0 with size 0"):
        gp.take(gp.zeros((0,)), _g(np.array([0])))
    with pytest.raises(ValueError, match="0-d array needs axis=None"):
        gp.take(gp.asarray(np.float32(1)), _g(np.array([0])), axis=0)
    with pytest.raises(IndexError):
        gp.take(x, _g(np.array([0])), axis=2)
    with pytest.raises(ValueError, match="one number of dimensions"):
        gp.take_along_axis(x, _g(np.array([0])), axis=0)
    with pytest.raises(ValueError, match="cannot be broadcast"):
        gp.take_along_axis(x, _g(np.zeros((3, 1), np.int64)), axis=1)
    with pytest.raises(IndexError, match="take_along_axis: index 9 is out of bounds"):
        gp.take_along_axis(x, _g(np.full((2, 1), 9)), axis=1)


@pytest.mark.parametrize("dtype", ["bool", "int8", "float16", "bfloat16", "float64", "complex128"])
def test_integer_array_getitem_matches_numpy(rng, dtype):
    h = rand(rng, (4, 5, 6), dtype)
    x = _g(h)
    keys = [
        [3, 0, -1],
        ([1, 2], [4, 0]),
        (slice(None), [0, 0, 4]),
        (Ellipsis, [5, -6]),
        ([[0, 1], [2, 3]], slice(1, 4), [[0], [5]]),  # separated: the broadcast dims go first
        (1, [2, 3], slice(None, None, -2)),  # an integer beside an array is an index array
        (slice(1, 3), [4, 1], [0, 2]),
        (np.array([1, 3]), Ellipsis),
        ([0, 1], 2, [3, 4]),  # separated by an integer: first as well
        np.array([], dtype=np.int64),
    ]
    for key in keys:
        check_equal(x[key], h[key])
    # An Ellipsis between advanced items separates them, even when it expands to nothing.
    for key in [
        (slice(None), [0], Ellipsis, [1]),
        (slice(None), 1, Ellipsis, [1]),
        (0, Ellipsis, [2]),
    ]:
        check_equal(x[key], h[key])
    # Device index arrays, and a strided source.
    i = _g(np.array([[2, 0], [1, 1]]))
    check_equal(x[::-1][i], h[::-1][host(i)])


@given(
    data=st.data(),
    shape=st.lists(st.integers(1, 4), min_size=1, max_size=4),
)
@settings(max_examples=80, deadline=None)
def test_integer_array_getitem_property(data, shape):
    h = np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape)
    key = []
    ishape = data.draw(st.lists(st.integers(0, 3), min_size=0, max_size=2))
    for n in shape:
        kind = data.draw(st.sampled_from(["array", "slice", "int"]))
        if kind == "array":
            key.append(
                np.asarray(
                    data.draw(
                        st.lists(
                            st.integers(-n, n - 1),
                            min_size=int(np.prod(ishape)),
                            max_size=int(np.prod(ishape)),
                        )
                    )
                )
                .reshape(ishape)
                .astype(np.int64)
            )
        elif kind == "int":
            key.append(data.draw(st.integers(-n, n - 1)))
        else:
            key.append(
                slice(data.draw(st.integers(-n, n)), None, data.draw(st.sampled_from([1, 2, -1])))
            )
    key = tuple(key)
    check_equal(_g(h)[key], h[key])


def test_many_integers_among_arrays_and_empty_results():
    h = np.arange(2 * 3 * 2 * 3 * 4).reshape(2, 3, 2, 3, 4)
    x = _g(h)
    check_equal(x[0, 1, 0, 2, [1, 3]], h[0, 1, 0, 2, [1, 3]])  # integers take no gather slot
    check_equal(x[[1], 0, [1], 0, [0]], h[[1], 0, [1], 0, [0]])
    # Nothing is read when the indices broadcast to an empty shape: no bounds check (NumPy).
    check_equal(x[np.zeros(0, np.int64), [9]], h[np.zeros(0, np.int64), [9]])
    with pytest.raises(IndexError, match="integer \\(or boolean\\) type, got float32"):
        x[np.array([], np.float32)]  # unlike an empty list
    check_equal(x[[]], h[[]])


def test_masks_past_the_last_axis_and_huge_repeats():
    a = gp.arange(3.0)
    with pytest.raises(IndexError, match="too many indices"):
        a[np.ones((3, 4), bool)]
    with pytest.raises(IndexError, match="too many indices"):
        a[0, np.ones(3, bool)]
    with pytest.raises(IndexError, match="too many indices"):
        a[[0, 1], np.array([True, False])]
    with pytest.raises(ValueError, match="repeat: the result would have"):
        gp.repeat(gp.arange(4.0), _g(np.full(4, 2**62)))
    with pytest.raises(ValueError, match="2\\*\\*63 or more is too large"):
        gp.repeat(gp.arange(3.0), _g(np.array([1, 2**64 - 1, 1], np.uint64)))


def test_integer_array_index_errors():
    x = gp.arange(12).reshape(3, 4)
    with pytest.raises(IndexError, match="index: index 3 is out of bounds for axis 0 with size 3"):
        x[[0, 3]]
    with pytest.raises(IndexError, match="index 9 is out of bounds for axis 1"):
        x[[0], 9]
    with pytest.raises(IndexError, match="integer \\(or boolean\\) type, got float64"):
        x[np.array([0.5])]
    with pytest.raises(ValueError, match="cannot be broadcast"):
        x[[0, 1], [0, 1, 2]]
    check_equal(x[None, [0, 1]], host(x)[None, [0, 1]])  # None beside arrays: a basic axis
    with pytest.raises(IndexError, match="boolean index did not match indexed array along axis 0"):
        x[np.array([True, False])]
    check_equal(x[True], host(x)[True])  # a 0-d mask adds an axis
    check_equal(x[False, 0], host(x)[False, 0])
    with pytest.raises(ValueError, match="cannot be broadcast|could not broadcast"):
        x[[0, 1]] = gp.zeros((3,))
    with pytest.raises(IndexError, match="index 5 is out of bounds"):
        x[[0, 5]] = 1
    with pytest.raises(TypeError, match="setitem: value must be a GPUArray or a Python scalar"):
        x[[0]] = "a"
    with pytest.raises(IndexError, match="too many indices"):
        x[[0], [0], [0]]


@pytest.mark.parametrize("dtype", ALL)
def test_count_nonzero_matches_numpy(rng, dtype):
    h = rand(rng, (3, 4, 5), dtype, small=True)
    if dtype not in ("bool",):
        h[0, 0, :2] = 0
    if dtype in ("float32", "float64", "complex128"):
        h[1, 1, 1] = np.nan
    x = _g(h)[:, ::-1]
    hx = h[:, ::-1]
    for axis, keepdims in [(None, False), (0, False), ((0, 2), True), (-1, False), ((), False)]:
        got = gp.count_nonzero(x, axis=axis, keepdims=keepdims)
        want = np.count_nonzero(hx, axis=axis, keepdims=keepdims)
        check_equal(got, np.asarray(want, dtype=np.int64))
    check_equal(gp.count_nonzero(gp.zeros((0, 3))), np.int64(0))


def test_count_nonzero_errors():
    x = gp.zeros((2, 3))
    with pytest.raises(IndexError, match="count_nonzero: axis 2 is out of bounds"):
        gp.count_nonzero(x, axis=2)
    with pytest.raises(ValueError, match="count_nonzero: repeated axis"):
        gp.count_nonzero(x, axis=(0, -2))
    with pytest.raises(TypeError, match="keepdims must be a bool"):
        gp.count_nonzero(x, keepdims=1)


# ---- searchsorted / nonzero / repeat with counts ----


@pytest.mark.parametrize("dtype", ALL)
def test_searchsorted_matches_numpy(rng, dtype):
    a = np.sort(rand(rng, (40,), dtype, small=True))
    if dtype in ("float16", "float32", "float64", "complex64", "complex128"):
        a[-3:] = np.nan  # NaN sorts last
        a = np.sort(a)
    v = np.concatenate([rand(rng, (4, 5), dtype, small=True).ravel(), a[::7]]).reshape(2, -1)
    x1, x2 = _g(a), _g(v)
    for side in ("left", "right"):
        check_equal(
            gp.searchsorted(x1, x2, side=side), np.searchsorted(cmp_(a), cmp_(v), side=side)
        )
    # A strided x1 and a sorter.
    perm = rng.permutation(40)
    shuffled = a[perm]
    sorter = np.argsort(perm, kind="stable")
    check_equal(
        gp.searchsorted(_g(shuffled), x2, sorter=_g(sorter)),
        np.searchsorted(cmp_(shuffled), cmp_(v), sorter=sorter),
    )
    check_equal(
        gp.searchsorted(_g(np.repeat(a, 2))[::2], x2[0]),  # x1 with stride 2
        np.searchsorted(cmp_(a), cmp_(v[0])),
    )


def cmp_(a):
    """bfloat16 data as float32 for NumPy (same order)."""
    return a.astype(np.float32) if a.dtype.name == "bfloat16" else a


def test_searchsorted_edge_cases_and_errors():
    a = _g(np.array([1, 3, 5], np.int32))
    check_equal(gp.searchsorted(a, 4), np.int64(2))  # a scalar value
    check_equal(gp.searchsorted(a, _g(np.array([2.5, 9.0]))), np.array([1, 3], np.int64))
    check_equal(gp.searchsorted(_g(np.zeros(0, np.int32)), a), np.zeros(3, np.int64))
    check_equal(gp.searchsorted(a, _g(np.zeros((2, 0), np.int32))), np.zeros((2, 0), np.int64))
    with pytest.raises(ValueError, match="x1 must be 1-D"):
        gp.searchsorted(gp.zeros((2, 2)), a)
    with pytest.raises(ValueError, match="side must be 'left' or 'right'"):
        gp.searchsorted(a, a, side="middle")
    with pytest.raises(ValueError, match="sorter must be 1-D with x1's 3 elements"):
        gp.searchsorted(a, a, sorter=_g(np.array([0, 1])))
    with pytest.raises(ValueError, match="searchsorted: sorter index out of range"):
        gp.searchsorted(a, a, sorter=_g(np.array([0, 1, 3])))
    with pytest.raises(ValueError, match="searchsorted: sorter index out of range"):
        gp.searchsorted(a, a, sorter=_g(np.array([-2, 2, 0])))  # no negative indices (NumPy)
    with pytest.raises(TypeError, match="x2 must be an array or a Python scalar"):
        gp.searchsorted(a, "x")


@pytest.mark.parametrize("dtype", ALL)
def test_nonzero_matches_numpy(rng, dtype):
    for shape in [(7,), (3, 4), (2, 3, 4), (0, 3), (5, 1)]:
        h = rand(rng, shape, dtype, small=True)
        if h.size and dtype != "bool":
            h.reshape(-1)[::3] = 0
        got = gp.nonzero(_g(h)[..., ::-1] if h.ndim > 1 else _g(h))
        want = np.nonzero(h[..., ::-1] if h.ndim > 1 else h)
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            check_equal(g, w.astype(np.int64))
    nan = np.array([0.0, np.nan, 0.0, 1.0])
    check_equal(gp.nonzero(_g(nan))[0], np.array([1, 3], np.int64))
    with pytest.raises(ValueError, match="nonzero: a 0-d array"):
        gp.nonzero(gp.asarray(np.float32(1)))


@pytest.mark.parametrize("density", [0.0, 0.01, 0.5, 1.0])
@pytest.mark.parametrize("n", [4095, 4096, 3 * 4096 + 17, 70000])
def test_nonzero_across_tiles(rng, n, density):
    # Stream compaction over 4096-element tiles: empty, sparse, half and full tiles, tails.
    h = rng.random(n) < density
    check_equal(gp.nonzero(_g(h))[0], np.nonzero(h)[0].astype(np.int64))
    m = h.reshape(-1, n // 5 if n % 5 == 0 else 1)
    for g, w in zip(gp.nonzero(_g(m)), np.nonzero(m)):
        check_equal(g, w.astype(np.int64))
    check_equal(gp.count_nonzero(_g(h)), np.int64(h.sum()))
    # A dense bool view that starts inside its buffer is compacted in place.
    check_equal(gp.nonzero(_g(h)[7:])[0], np.nonzero(h[7:])[0].astype(np.int64))


@pytest.mark.parametrize("dtype", ["bool", "int16", "bfloat16", "float64", "complex64"])
def test_repeat_with_counts_matches_numpy(rng, dtype):
    h = rand(rng, (3, 4), dtype)
    x = _g(h)
    for reps, axis in [
        ([2, 0, 1, 3], 1),
        ([1, 0, 2], 0),
        ([3], 0),
        (list(range(12)), None),
        ([0, 0, 0], 0),
    ]:
        r = np.array(reps, dtype=np.int32)
        check_equal(gp.repeat(x, _g(r), axis=axis), np.repeat(h, r, axis=axis))


@pytest.mark.parametrize("dtype", ["bool", "int32", "float16", "float64", "complex64"])
def test_boolean_mask_getitem_matches_numpy(rng, dtype):
    h = rand(rng, (3, 4, 5), dtype)
    x = _g(h)
    m3 = rng.random((3, 4, 5)) < 0.4
    m2 = rng.random((4, 5)) < 0.5
    m1 = np.array([True, False, True])
    for key in [
        m3,
        (slice(None), m2),
        m1,
        (m1, slice(1, 3)),
        (Ellipsis, m2[0]),
        ([2, 0], np.array([True, False, False, True])),
        (m1, 1),
        np.zeros((3, 4, 5), bool),
    ]:
        check_equal(x[key], h[key])
    check_equal(x[_g(m3)], h[m3])  # a device mask
    check_equal(x[x != 0], h[h != 0])  # a mask computed on the device


# ---- assignment through index arrays and masks (scatter) ----


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint64", "bfloat16", "float32", "complex128"])
def test_setitem_through_arrays_and_masks_matches_numpy(rng, dtype):
    h = rand(rng, (3, 4, 5), dtype)
    x = _g(h)
    m = rng.random((4, 5)) < 0.5
    lead = rng.random((3, 4)) < 0.5
    for key, shape in [
        ([2, 0], (2, 4, 5)),
        ((slice(None), [3, 1], [0, 4]), (3, 2)),
        ((lead,), None),
        ((slice(None), m), None),
        ((1, [0, 2], slice(1, 3)), (2, 2)),
        ((Ellipsis, [4, -5]), (3, 4, 2)),
    ]:
        sel = h[key]
        assert shape is None or sel.shape == shape
        assert x[key].shape == sel.shape
        val = rand(rng, sel.shape, dtype)
        x[key] = _g(val)
        h[key] = val
        check_equal(x, h)
        # A broadcast value of another dtype, and a Python scalar.
        row = rand(rng, sel.shape[-1:], "int8" if dtype != "bool" else "bool", small=True)
        x[key] = _g(row)
        h[key] = row.astype(h.dtype)
        check_equal(x, h)
        x[key] = 1
        h[key] = 1
        check_equal(x, h)


def test_setitem_value_overlapping_the_target():
    h = np.arange(8.0)
    x = _g(h)
    x[[0, 1, 2]] = x[[5, 6, 7]]  # the value is read before anything is written
    h[[0, 1, 2]] = h[[5, 6, 7]]
    x[x > 6] = x[:2]  # [5, 6, 7, 3, 4, 5, 6, 7]: two elements above 6
    h[h > 6] = h[:2]
    check_equal(x, h)


def test_setitem_mask_from_the_array_itself(rng):
    h = rand(rng, (50,), "float32")
    x = _g(h)
    x[x < 0] = 0.0
    h[h < 0] = 0.0
    check_equal(x, h)

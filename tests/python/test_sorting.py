"""sort / argsort (a stable radix sort on the device; merge sort for complex values) and the
unique_* set functions, against NumPy on random data of every dtype (with ties, NaN, signed
zeros, complex values), along every axis, descending, many rows and many tiles, extreme values,
strided and empty inputs, and bad input."""

import ml_dtypes
import numpy as np
import pytest
from helpers import ALL, check_equal, npdt, rand

import pygpukit as gp


def _g(a):
    return gp.asarray(np.asarray(a))


def _np_order(h):
    """Data NumPy sorts the way we do (bfloat16 compared as float32, same order)."""
    return h.astype(np.float32) if h.dtype.name == "bfloat16" else h


def _data(rng, shape, dtype):
    h = rand(rng, shape, dtype, small=True)  # small values: many ties
    if dtype in ("float16", "bfloat16", "float32", "float64"):
        h.reshape(-1)[::5] = np.nan
        h.reshape(-1)[1::7] = -0.0
    if dtype in ("complex64", "complex128"):
        flat = h.reshape(-1)
        flat[::6] = complex(np.nan, 1)
        flat[1::6] = complex(1, np.nan)
        flat[2::6] = flat[3]
    return h


@pytest.mark.parametrize("dtype", ALL)
def test_sort_and_argsort_match_numpy(rng, dtype):
    h = _data(rng, (5, 9, 4), dtype)
    x = _g(h)[:, ::-1]
    hx = h[:, ::-1]
    for axis in (0, 1, -1):
        want_idx = np.argsort(_np_order(hx), axis=axis, kind="stable")
        check_equal(gp.argsort(x, axis=axis), want_idx.astype(np.int64))
        check_equal(gp.sort(x, axis=axis), np.take_along_axis(hx, want_idx, axis=axis))


@pytest.mark.parametrize("dtype", ["int8", "uint32", "float32", "float64", "complex64", "bool"])
def test_descending_is_stable_with_nan_first(rng, dtype):
    h = _data(rng, (4, 33), dtype)
    x = _g(h)
    # The reference: a stable ascending sort of the reversed rows, reversed back.
    rev = h[:, ::-1]
    want_idx = (h.shape[1] - 1 - np.argsort(_np_order(rev), axis=1, kind="stable"))[:, ::-1]
    check_equal(gp.argsort(x, axis=1, descending=True), want_idx.astype(np.int64))
    check_equal(gp.sort(x, axis=1, descending=True), np.take_along_axis(h, want_idx, axis=1))


@pytest.mark.parametrize("n", [0, 1, 2, 3, 31, 64, 1000, 4097])
def test_sort_lengths(rng, n):
    h = rng.standard_normal(n).astype(np.float32)
    check_equal(gp.sort(_g(h)), np.sort(h))
    check_equal(gp.argsort(_g(h)), np.argsort(h, kind="stable").astype(np.int64))


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint16", "int64", "float16", "float64"])
@pytest.mark.parametrize("shape", [(300, 37), (3, 9000), (2, 700, 3)])
def test_many_rows_and_tiles(rng, dtype, shape):
    # More than 256 rows (two passes over the row digits), rows longer than a 4096-element tile,
    # and few distinct values, so stability across tiles shows.
    h = _data(rng, shape, dtype)
    x = _g(h)
    for axis in (0, -1):
        want_idx = np.argsort(_np_order(h), axis=axis, kind="stable")
        check_equal(gp.argsort(x, axis=axis), want_idx.astype(np.int64))
        check_equal(gp.sort(x, axis=axis), np.take_along_axis(h, want_idx, axis=axis))


@pytest.mark.parametrize("shape", [(300, 37), (5000,), (300, 1), (1, 1)])
@pytest.mark.parametrize("dtype", ["int16", "float32", "bfloat16"])
def test_descending_and_single_element_rows(rng, shape, dtype):
    # Descending order is finished in the last pass (a key pass for one row, a row pass for
    # many); rows of one element take no pass at all.
    h = _data(rng, shape, dtype)
    x = _g(h)
    for axis in range(-1, -len(shape) - 1, -1):
        rev = np.flip(h, axis=axis)
        n = h.shape[axis]
        want_idx = np.flip(n - 1 - np.argsort(_np_order(rev), axis=axis, kind="stable"), axis=axis)
        check_equal(gp.argsort(x, axis=axis, descending=True), want_idx.astype(np.int64))
        check_equal(
            gp.sort(x, axis=axis, descending=True), np.take_along_axis(h, want_idx, axis=axis)
        )
        asc = np.argsort(_np_order(h), axis=axis, kind="stable")
        check_equal(gp.argsort(x, axis=axis), asc.astype(np.int64))


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64", "uint8", "uint32", "uint64"])
def test_integer_extremes(rng, dtype):
    info = np.iinfo(dtype)
    h = rng.integers(info.min, info.max, 5000, dtype=dtype, endpoint=True)
    h[::97] = info.min
    h[1::89] = info.max
    h[2::83] = 0
    check_equal(gp.sort(_g(h)), np.sort(h))
    check_equal(gp.argsort(_g(h)), np.argsort(h, kind="stable").astype(np.int64))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_float_specials(dtype):
    info = ml_dtypes.finfo(dtype) if dtype == "bfloat16" else np.finfo(dtype)
    vals = [np.inf, -np.inf, np.nan, -np.nan, 0.0, -0.0, 1.0, -1.0]
    vals += [float(info.tiny) / 4, -float(info.tiny) / 4]  # subnormals
    vals += [float(info.max), float(info.min)]
    h = np.array(vals * 3, dtype=npdt(dtype))
    # argsort: -0.0 equals 0.0 and NaNs come last, all in their original order.
    check_equal(gp.argsort(_g(h)), np.argsort(_np_order(h), kind="stable").astype(np.int64))
    got = np.asarray(gp.sort(_g(h)).get()).astype(np.float64)
    want = np.sort(h.astype(np.float64))
    np.testing.assert_array_equal(got, want)
    # Sorted values keep their bits: the zeros are -0.0 then 0.0 (a radix order that NumPy's
    # stable sort does not promise; documented), NaNs lose only their sign.
    zeros = got[got == 0]
    assert list(np.signbit(zeros)) == [True] * 3 + [False] * 3
    assert np.isnan(got[-6:]).all() and not np.signbit(got[-6:]).any()


def test_sort_errors():
    with pytest.raises(ValueError, match="sort: needs an array of at least one dimension"):
        gp.sort(gp.asarray(np.float32(1)))
    with pytest.raises(ValueError, match="argsort: needs an array of at least one dimension"):
        gp.argsort(gp.asarray(np.float32(1)))
    with pytest.raises(IndexError):
        gp.sort(gp.zeros((2, 3)), axis=2)
    with pytest.raises(TypeError, match="descending and stable must be bools"):
        gp.sort(gp.zeros(3), descending=1)


@pytest.mark.parametrize("dtype", ALL)
def test_unique_functions_match_numpy(rng, dtype):
    h = _data(rng, (6, 7), dtype)
    x = _g(h)
    ho = _np_order(h)
    # NumPy collapses NaNs by default; the Array API keeps each NaN distinct.
    vals, idx, inv, cnt = np.unique(
        ho, return_index=True, return_inverse=True, return_counts=True, equal_nan=False
    )
    u = gp.unique_all(x)
    assert type(u).__name__ == "UniqueAllResult"
    check_equal(u.values, h.reshape(-1)[idx])
    check_equal(u.indices, idx.astype(np.int64))
    check_equal(u.counts, cnt.astype(np.int64))
    assert u.inverse_indices.shape == h.shape
    recon = np.asarray(u.values.get())[np.asarray(u.inverse_indices.get())]
    np.testing.assert_array_equal(_np_order(recon), ho)
    check_equal(gp.unique_values(x), h.reshape(-1)[idx])
    c = gp.unique_counts(x)
    check_equal(c.values, h.reshape(-1)[idx])
    check_equal(c.counts, cnt.astype(np.int64))
    i = gp.unique_inverse(x)
    check_equal(i.values, h.reshape(-1)[idx])
    np.testing.assert_array_equal(
        _np_order(np.asarray(i.values.get())[np.asarray(i.inverse_indices.get())]), ho
    )
    assert len(vals) == u.values.shape[0]


def test_unique_edge_cases():
    e = gp.unique_all(gp.zeros((0, 3)))
    assert e.values.shape == (0,) and e.counts.shape == (0,) and e.inverse_indices.shape == (0, 3)
    z = gp.unique_all(gp.asarray(np.float32(2.5)))
    check_equal(z.values, np.array([2.5], np.float32))
    check_equal(z.inverse_indices, np.int64(0))
    nan = gp.unique_counts(_g(np.array([np.nan, 1.0, np.nan])))
    check_equal(nan.values, np.array([1.0, np.nan, np.nan]))
    check_equal(nan.counts, np.array([1, 1, 1], np.int64))
    zeros = gp.unique_values(_g(np.array([0.0, -0.0, 0.0])))
    assert zeros.shape == (1,)

"""gp.grouped_matmul (mixture-of-experts groups): each group's rows of `a` times its own matrix
of `b`, against the float64 per-group reference (gemm_ref's bound), on the default device, for
groups of size 0 and 1, one group, no rows, K = 0, transposed and strided operands, and bad
input (errors name the op and the offending shapes or offsets)."""

import numpy as np
import pytest
from gemm_ref import check_values
from helpers import FLOATS, gpdt, host, npdt, rand

import pygpukit as gp


def grouped_reference_check(got, a, b, offsets, dtype):
    got = host(got)
    assert got.shape == (a.shape[0], b.shape[2])
    assert got.dtype == npdt(dtype)
    r0 = 0
    for g, r1 in enumerate(offsets):
        if r1 > r0:  # every group within the bound of its own product
            check_values(got[r0:r1], a[r0:r1], b[g], dtype=dtype, out=dtype)
        r0 = r1


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize(
    "sizes",
    [[5, 0, 17, 1, 33], [64], [0, 0, 9], [1, 1, 1, 1], [40, 0]],
    ids=lambda s: "-".join(map(str, s)),
)
def test_values_per_group(rng, dtype, sizes):
    k, n = 24, 19
    a = rand(rng, (sum(sizes), k), dtype, scale=1.0)
    b = rand(rng, (len(sizes), k, n), dtype, scale=1.0)
    offsets = list(np.cumsum(sizes))
    x = gp.grouped_matmul(gp.asarray(a), gp.asarray(b), offsets)
    grouped_reference_check(x, a, b, offsets, dtype)
    # A NumPy array of offsets is taken as well.
    y = gp.grouped_matmul(gp.asarray(a), gp.asarray(b), np.asarray(offsets, np.int32))
    np.testing.assert_array_equal(host(y), host(x))


def test_views_and_promotion(rng):
    # a as a transposed view, b with its matrices transposed (W.T per expert), mixed dtypes.
    at = rand(rng, (16, 30), "float32", scale=1.0)  # (K, rows)
    w = rand(rng, (3, 8, 16), "float64", scale=1.0)  # (groups, N, K)
    a, b = at.T, w.transpose(0, 2, 1)
    offsets = [10, 10, 30]
    x = gp.grouped_matmul(gp.asarray(at).T, gp.permute_dims(gp.asarray(w), (0, 2, 1)), offsets)
    assert x.dtype == gp.float64
    grouped_reference_check(x, a.astype(np.float64), b, offsets, "float64")


def test_empty_cases():
    z = gp.grouped_matmul(gp.zeros((0, 4)), gp.zeros((0, 4, 3)), [])
    assert z.shape == (0, 3)
    e = gp.grouped_matmul(gp.zeros((0, 4)), gp.zeros((2, 4, 3)), [0, 0])
    assert e.shape == (0, 3)
    k0 = gp.grouped_matmul(gp.ones((5, 0)), gp.ones((2, 0, 3)), [2, 5])
    np.testing.assert_array_equal(host(k0), np.zeros((5, 3), np.float32))


@pytest.mark.parametrize(
    "a_shape, b_shape, offsets, match",
    [
        ((6, 4), (2, 4, 3), [2], r"1 offsets for 2 groups \(b of shape \(2, 4, 3\)\)"),
        ((6, 4), (2, 4, 3), [4, 2], r"non-decreasing .* offsets\[1\] = 2 after 4"),
        ((6, 4), (2, 4, 3), [-1, 6], r"offsets\[0\] = -1"),
        ((6, 4), (2, 4, 3), [2, 7], r"in \[0, 6\]; offsets\[1\] = 7"),
        ((6, 4), (2, 4, 3), [2, 5], r"cover rows \[0, 5\) of a, which has 6 rows"),
        ((6, 4), (2, 5, 3), [2, 6], r"shapes \(6, 4\) and \(2, 5, 3\) are not aligned"),
        ((6,), (2, 4, 3), [2, 6], r"a must be 2-D .* got shapes \(6,\) and \(2, 4, 3\)"),
        ((6, 4), (4, 3), [6], r"b 3-D \(groups, K, N\), got shapes \(6, 4\) and \(4, 3\)"),
        ((3, 4), (0, 4, 3), [], r"cover rows \[0, 0\) of a, which has 3 rows"),
    ],
)
def test_bad_shapes_and_offsets(a_shape, b_shape, offsets, match):
    with pytest.raises(ValueError, match=match) as e:
        gp.grouped_matmul(gp.ones(a_shape), gp.ones(b_shape), offsets)
    assert str(e.value).startswith("grouped_matmul: "), e.value


@pytest.mark.parametrize("bad", [[1.5, 6], "26", None, [[2], [6]]], ids=repr)
def test_offsets_must_be_integers(bad):
    with pytest.raises(TypeError, match="grouped_matmul: offsets must be a sequence of integers"):
        gp.grouped_matmul(gp.ones((6, 4)), gp.ones((2, 4, 3)), bad)


def test_integer_operands_and_devices_are_refused():
    with pytest.raises(TypeError, match="grouped_matmul: unsupported dtype int32"):
        gp.grouped_matmul(
            gp.ones((6, 4), dtype=gp.int32), gp.ones((2, 4, 3), dtype=gp.int32), [2, 6]
        )


def test_forced_cuda_family_on_the_cpu_says_so():
    with pytest.raises(NotImplementedError, match="grouped_matmul: backend='sm90'"):
        gp.grouped_matmul(
            gp.ones((6, 4), device="cpu"), gp.ones((2, 4, 3), device="cpu"), [2, 6], backend="sm90"
        )


def test_dtype_of_result_follows_promotion(rng):
    a = rand(rng, (8, 4), "bfloat16", scale=1.0)
    b = rand(rng, (2, 4, 5), "bfloat16", scale=1.0)
    x = gp.grouped_matmul(gp.asarray(a), gp.asarray(b), [3, 8])
    assert x.dtype == gpdt("bfloat16")
    grouped_reference_check(x, a, b, [3, 8], "bfloat16")

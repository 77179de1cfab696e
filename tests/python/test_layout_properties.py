"""Property-based layouts for the elementwise kernels and user kernels (hypothesis): random
shapes, slices (steps of either sign, offsets), transposes and broadcasts of two operands, checked
against NumPy exactly. On CUDA these reach every generated layout: dense vectors with tails,
element strides, and 16-byte runs along a dense or broadcast last axis."""

import numpy as np
from helpers import host, npdt
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pygpukit as gp

DTYPES = ["float32", "bfloat16", "int8", "float64", "uint16"]
EXTENTS = [1, 2, 3, 4, 5, 8, 9, 16]
SETTINGS = settings(max_examples=50, deadline=None, suppress_health_check=list(HealthCheck))

# The table's functors, so 16-bit types (no C++ operators) compute as the functions do.
SUM_DIFF = gp.ElementwiseKernel(
    "T x, T y",
    "T s, T d",
    "s = AddOp::Apply(x, y); d = AddOp::Apply(SubOp::Apply(x, y), T(i % 3));",
    "sum_diff",
)


@st.composite
def strided(draw, shape):
    """How to cut a view of exactly `shape` from a larger array: (base shape, index, perm)."""
    ndim = len(shape)
    perm = list(draw(st.permutations(range(ndim)))) if ndim > 1 and draw(st.booleans()) else None
    pre = [shape[perm.index(d)] for d in range(ndim)] if perm else list(shape)
    base, index = [], []
    for n in pre:
        step = draw(st.sampled_from([1, 1, 2, -1, -2]))
        off = draw(st.integers(0, 2))
        last = off + (n - 1) * abs(step)
        base.append(last + 1)
        if step > 0:
            index.append(slice(off, last + 1, step))
        else:
            index.append(slice(last, off - 1 if off > 0 else None, step))
    return base, tuple(index), perm


def make(rng, cut, dtype):
    """The same view of random small integers in `dtype`, in NumPy and on the default device."""
    base, index, perm = cut
    a = rng.integers(0 if dtype.startswith("uint") else -40, 40, size=base).astype(npdt(dtype))
    n, g = a[index], gp.asarray(a)[index]
    if perm is not None:
        n, g = np.transpose(n, perm), gp.permute_dims(g, perm)
    return n, g


@st.composite
def operands(draw):
    """Cuts of x (shape s) and y (s without `drop` leading axes, some axes of extent 1)."""
    shape = tuple(draw(st.lists(st.sampled_from(EXTENTS), min_size=0, max_size=3)))
    drop = draw(st.integers(0, len(shape)))
    ones = draw(st.sets(st.integers(0, max(len(shape) - 1, 0))))
    y_shape = tuple(1 if d in ones else shape[d] for d in range(drop, len(shape)))
    return draw(strided(shape)), draw(strided(y_shape)), draw(st.booleans())


@SETTINGS
@given(ops=operands(), dt=st.sampled_from(DTYPES), seed=st.integers(0, 2**32 - 1))
def test_random_layouts_match_numpy(ops, dt, seed):
    xcut, ycut, swap = ops
    rng = np.random.default_rng(seed)
    nx, gx = make(rng, xcut, dt)
    ny, gy = make(rng, ycut, dt)
    if swap:  # the broadcast operand first
        nx, gx, ny, gy = ny, gy, nx, gx
    np.testing.assert_array_equal(host(gx + gy), nx + ny)
    np.testing.assert_array_equal(host(gp.where(gx > gy, gx, gy)), np.where(nx > ny, nx, ny))
    s, d = SUM_DIFF(gx, gy)
    shape = np.broadcast_shapes(nx.shape, ny.shape)
    index = (np.arange(int(np.prod(shape))) % 3).reshape(shape).astype(nx.dtype)
    np.testing.assert_array_equal(host(s), nx + ny)
    np.testing.assert_array_equal(host(d), nx - ny + index)

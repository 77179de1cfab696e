"""Creation functions: empty / zeros / ones / full / arange / asarray / from_numpy / *_like."""

import numpy as np
import pytest
from helpers import (
    ALL,
    FLOATS,
    INTS,
    NATIVE,
    UNSIGNED,
    check_close,
    check_equal,
    gpdt,
    kind,
    npdt,
    rand,
)

import pygpukit as gp

SHAPES = [(), (0,), (3, 0), (1,), (7,), (2, 3), (2, 3, 4), (1, 1, 5)]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", ALL)
def test_empty(device, shape, dtype):
    x = gp.empty(shape, dtype=gpdt(dtype))
    assert x.shape == shape
    assert x.dtype == gpdt(dtype)
    assert x.device == device
    assert x.ndim == len(shape)
    assert x.size == int(np.prod(shape))
    assert x.itemsize == npdt(dtype).itemsize
    assert x.nbytes == x.size * x.itemsize
    assert x.is_contiguous
    assert gp.to_numpy(x).shape == shape


def test_empty_defaults(device):
    x = gp.empty(4)
    assert x.shape == (4,) and x.dtype == gp.float32 and x.device == device
    y = gp.empty([2, 3], dtype="int16", device=str(device))
    assert y.shape == (2, 3) and y.dtype == gp.int16 and y.device == device


def test_empty_beyond_any_device_names_the_exact_byte_count(device):
    # 2^62 elements of 16 bytes: 2^66 bytes, a count past 64 bits printed exactly.
    with pytest.raises(
        MemoryError,
        match=r"\(1099511627776, 4194304\) complex128 needs "
        r"73786976294838206464 bytes, more than any device can hold",
    ):
        gp.empty((2**40, 2**22), dtype=gp.complex128, device=device)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", ALL)
def test_zeros_ones(shape, dtype):
    check_equal(gp.zeros(shape, dtype=gpdt(dtype)), np.zeros(shape, npdt(dtype)), dtype)
    check_equal(gp.ones(shape, dtype=gpdt(dtype)), np.ones(shape, npdt(dtype)), dtype)


def test_zeros_ones_default_dtype():
    check_equal(gp.zeros((2, 2)), np.zeros((2, 2), np.float32))
    check_equal(gp.ones(3), np.ones(3, np.float32))


def _fill_value(rng, dtype):
    k = kind(dtype)
    if k == "b":
        return True
    if k in "iu":
        info = np.iinfo(npdt(dtype))
        return int(rng.integers(max(info.min, -(2**62)), min(info.max, 2**62)))
    if k == "f":
        return float(rng.standard_normal() * 100)
    return complex(rng.standard_normal(), rng.standard_normal())


@pytest.mark.parametrize("shape", [(), (0,), (5,), (3, 4), (2, 0, 3)])
@pytest.mark.parametrize("dtype", ALL)
def test_full(rng, shape, dtype):
    v = _fill_value(rng, dtype)
    x = gp.full(shape, v, dtype=gpdt(dtype))
    check_equal(x, np.full(shape, v, dtype=npdt(dtype)), dtype)


@pytest.mark.parametrize(
    "value, dtype",
    [
        (True, "bool"),
        (3, "int64"),
        (-(2**40), "int64"),
        (2.5, "float32"),
        (1 + 2j, "complex64"),
        (False, "bool"),
    ],
)
def test_full_default_dtype(value, dtype):
    check_equal(gp.full((2, 3), value), np.full((2, 3), value, npdt(dtype)), dtype)


@pytest.mark.parametrize("dtype", FLOATS + ["complex64", "complex128"])
@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf"), -0.0, 1e300])
def test_full_special_floats(dtype, value):
    x = gp.full((3,), value, dtype=gpdt(dtype))
    with np.errstate(over="ignore"):
        expected = np.full((3,), value, dtype=npdt(dtype))
    check_equal(x, expected, dtype)
    if value == 0:
        assert np.signbit(gp.to_numpy(x).real).all()


@pytest.mark.parametrize("dtype", INTS)
def test_full_int_limits(dtype):
    info = np.iinfo(npdt(dtype))
    for v in (int(info.min), int(info.max)):
        if v >= 2**63:
            continue  # Python ints are passed as int64
        check_equal(gp.full((2,), v, dtype=gpdt(dtype)), np.full((2,), v, npdt(dtype)), dtype)


@pytest.mark.parametrize("dtype", INTS)
def test_full_float_truncates(dtype):
    check_equal(gp.full((2,), 7.9, dtype=gpdt(dtype)), np.full((2,), 7, npdt(dtype)), dtype)


@pytest.mark.parametrize(
    "value, dtype",
    [
        (300, "int8"),
        (-1, "uint8"),
        (70000, "uint16"),
        (2**31, "int32"),
        (-1, "uint64"),
        (-129, "int8"),
    ],
)
def test_full_int_overflow(value, dtype):
    with pytest.raises(OverflowError, match="full"):
        gp.full((2,), value, dtype=gpdt(dtype))


def test_full_huge_python_int():
    with pytest.raises(OverflowError, match="int64"):
        gp.full((2,), 2**64)


def test_full_bad_value():
    with pytest.raises(TypeError):
        gp.full((2,), "a")
    with pytest.raises(TypeError):
        gp.full((2,), None)


# ---- arange ----


@pytest.mark.parametrize(
    "args",
    [
        (5,),
        (0,),
        (-3,),
        (2, 9),
        (9, 2),
        (2, 9, 3),
        (9, 2, -2),
        (10, -10, -3),
        (-5, 5, 7),
        (0, 1, 5),
        (3, 3),
        (5, 3, 1),
        (1, 5, -1),
        (-(2**40), -(2**40) + 10, 3),
        (2**62, 2**62 - 100, -17),
    ],
)
def test_arange_int(args):
    x = gp.arange(*args)
    check_equal(x, np.arange(*args, dtype=np.int64), "int64")


def test_arange_int_extreme_span():
    # (stop - start) does not fit in int64.
    x = gp.arange(-(2**63) + 1, 2**63 - 1, 2**62)
    check_equal(x, np.arange(-(2**63) + 1, 2**63 - 1, 2**62, dtype=np.int64))


@pytest.mark.parametrize(
    "args",
    [
        (5.0,),
        (0.5, 3.0),
        (0, 1, 0.1),
        (1.0, 0.0, -0.25),
        (-2.5, 2.5, 0.7),
        (3.0, 1.0),
        (0, 2.5),
        (10, 0, -1.5),
        (1e-3, 2e-3, 1e-4),
    ],
)
def test_arange_float(args):
    x = gp.arange(*args)
    expected = np.arange(*args, dtype=np.float64)
    check_close(x, expected, "float32", rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("dtype", INTS + FLOATS)
def test_arange_dtype(dtype):
    if dtype in UNSIGNED or dtype == "bfloat16":
        args = (20, 3, -3)
    else:
        args = (-7, 21, 2)
    x = gp.arange(*args, dtype=gpdt(dtype))
    check_equal(x, np.arange(*args).astype(npdt(dtype)), dtype)


@pytest.mark.parametrize("dtype", ["float16", "float64"])
def test_arange_float_dtype(dtype):
    x = gp.arange(-1.0, 1.0, 0.125, dtype=gpdt(dtype))
    check_equal(x, np.arange(-1.0, 1.0, 0.125).astype(dtype), dtype)


def test_arange_device(device):
    assert gp.arange(3, device=device).device == device


@pytest.mark.parametrize("args", [(0, 5, 0), (1.0, 2.0, 0.0), (5, 1, 0)])
def test_arange_zero_step(args):
    with pytest.raises(ValueError, match="arange"):
        gp.arange(*args)


@pytest.mark.parametrize("args", [(0.0, float("inf")), (float("nan"),), (0, 1, float("nan"))])
def test_arange_nonfinite(args):
    with pytest.raises(ValueError, match="arange"):
        gp.arange(*args)


@pytest.mark.parametrize("dtype", ["bool", "complex64", "complex128"])
def test_arange_bad_dtype(dtype):
    with pytest.raises(TypeError, match="arange"):
        gp.arange(5, dtype=gpdt(dtype))
    with pytest.raises(TypeError, match="arange"):
        gp.arange(0.5, 5.0, dtype=gpdt(dtype))


@pytest.mark.parametrize("bad", ["5", None, 1j, [3]])
def test_arange_bad_args(bad):
    with pytest.raises(TypeError, match="arange"):
        gp.arange(bad)
    with pytest.raises(TypeError, match="arange"):
        gp.arange(0, 5, bad)


# ---- asarray / from_numpy ----


NP_LAYOUTS = {
    "contig": lambda a: a,
    "step": lambda a: a[::2],
    "neg": lambda a: a[::-1],
    "T": lambda a: a.T,
    "neg2d": lambda a: a[::-1, ::-2],
}


@pytest.mark.parametrize("layout", list(NP_LAYOUTS))
@pytest.mark.parametrize("dtype", ALL)
def test_asarray_numpy(rng, device, dtype, layout):
    base = rand(rng, (6, 5), dtype)
    src = NP_LAYOUTS[layout](base)
    x = gp.asarray(src)
    assert x.device == device
    assert x.is_contiguous
    check_equal(x, src, dtype)
    # The upload is a copy: changing the source afterwards does not change the array.
    expected = src.copy()
    base[...] = base[::-1, ::-1].copy()
    check_equal(x, expected, dtype)


@pytest.mark.parametrize("shape", [(), (0,), (3, 0), (0, 4, 2), (1,), (2, 1, 3)])
@pytest.mark.parametrize("dtype", ALL)
def test_from_numpy(rng, device, shape, dtype):
    src = rand(rng, shape, dtype)
    x = gp.from_numpy(src)
    assert x.device == device
    check_equal(x, src, dtype)
    check_equal(gp.from_numpy(src, device), src, dtype)


@pytest.mark.parametrize("dtype", NATIVE)
def test_asarray_numpy_scalar_keeps_dtype(dtype):
    v = np.asarray(7 if dtype != "bool" else True).astype(dtype)[()]
    assert isinstance(v, np.generic)
    x = gp.asarray(v)
    check_equal(x, np.asarray(v), dtype)


@pytest.mark.parametrize(
    "obj, dtype",
    [
        (1.5, "float32"),
        (-3, "int64"),
        (True, "bool"),
        (2 - 1j, "complex64"),
        ([1.5, -2.25, 1e-3], "float32"),
        ([[1, 2, 3], [4, 5, -6]], "int64"),
        ([[True, False]], "bool"),
        ([1j, 2, 3.5], "complex64"),
        ([1, 2.5], "float32"),
        ((1, 2, 3), "int64"),
        ([], "float32"),
        ([[]], "float32"),
        (2**62, "int64"),
    ],
)
def test_asarray_python(device, obj, dtype):
    x = gp.asarray(obj)
    assert x.device == device
    check_equal(x, np.asarray(obj).astype(npdt(dtype)), dtype)


@pytest.mark.parametrize("dtype", ALL)
def test_asarray_dtype_argument(dtype):
    data = [[0, 1, 2], [3, 4, 5]]
    x = gp.asarray(data, dtype=gpdt(dtype))
    check_equal(x, np.asarray(data).astype(npdt(dtype)), dtype)
    y = gp.asarray(np.asarray(data, np.int16), dtype=dtype)
    check_equal(y, np.asarray(data).astype(npdt(dtype)), dtype)


def test_asarray_python_float_dtype_float64_keeps_precision():
    x = gp.asarray([0.1, 1 / 3], dtype=gp.float64)
    check_equal(x, np.asarray([0.1, 1 / 3], np.float64))


def test_asarray_gpuarray(rng):
    src = rand(rng, (4, 3), "float32")
    x = gp.asarray(src)
    assert gp.asarray(x) is x
    assert gp.asarray(x, copy=False) is x
    y = gp.asarray(x, copy=True)
    assert y is not x
    y[0, 0] = 100.0
    check_equal(x, src)
    z = gp.asarray(x, dtype=gp.float64)
    check_equal(z, src.astype(np.float64))
    with pytest.raises(ValueError, match="asarray"):
        gp.asarray(x, dtype=gp.float64, copy=False)


def test_asarray_host_copy_false(device):
    with pytest.raises(ValueError, match="asarray: copy=False is not possible here"):
        gp.asarray([1.0, 2.0], copy=False)
    h = np.ones(3)
    if device.type == "cpu":  # the CPU backend views NumPy memory in place
        x = gp.asarray(h, copy=False)
        x[0] = 5.0
        gp.synchronize(device)
        assert h[0] == 5.0
    else:
        with pytest.raises(ValueError, match="asarray: copy=False is not possible here"):
            gp.asarray(h, copy=False)


@pytest.mark.parametrize("obj", [None, {"a": 1}, object(), [1, "a", None], 2**70])
def test_asarray_object_rejected(obj):
    with pytest.raises(TypeError, match="asarray"):
        gp.asarray(obj)


@pytest.mark.parametrize(
    "src",
    [
        np.array(["ab", "c"]),
        np.array([1, 2], dtype="datetime64[s]"),
        np.array([1.0], dtype=np.longdouble)
        if np.dtype(np.longdouble).itemsize > 8
        else np.array([b"x"]),
        np.zeros(2, dtype=[("a", "i4")]),
    ],
)
def test_asarray_unsupported_numpy_dtype(src):
    with pytest.raises(TypeError, match="asarray"):
        gp.asarray(src)
    with pytest.raises(TypeError, match="from_numpy"):
        gp.from_numpy(src)


def test_from_numpy_requires_array():
    with pytest.raises(TypeError):
        gp.from_numpy("abc")


# ---- *_like ----


LIKES = [
    ("empty_like", lambda x, **kw: gp.empty_like(x, **kw), None),
    ("zeros_like", lambda x, **kw: gp.zeros_like(x, **kw), 0),
    ("ones_like", lambda x, **kw: gp.ones_like(x, **kw), 1),
    ("full_like", lambda x, **kw: gp.full_like(x, 5, **kw), 5),
]


@pytest.mark.parametrize("name, fn, value", LIKES, ids=[n for n, _, _ in LIKES])
@pytest.mark.parametrize("dtype", ALL)
def test_like(rng, device, name, fn, value, dtype):
    base = gp.asarray(rand(rng, (4, 6), dtype))
    src = base[::-1, ::2].T  # a non-contiguous view: the result is a fresh dense array
    out = fn(src)
    assert out.shape == (3, 4) and out.dtype == gpdt(dtype) and out.device == device
    assert out.is_contiguous
    if value is not None:
        check_equal(out, np.full((3, 4), value).astype(npdt(dtype)), dtype)
    out2 = fn(src, dtype=gp.float64, device=device)
    assert out2.dtype == gp.float64 and out2.shape == (3, 4)
    if value is not None:
        check_equal(out2, np.full((3, 4), value, np.float64))


@pytest.mark.parametrize("shape", [(), (0,), (3, 0)])
def test_like_edge_shapes(shape):
    x = gp.zeros(shape, dtype=gp.int8)
    check_equal(gp.full_like(x, -3), np.full(shape, -3, np.int8))
    check_equal(gp.ones_like(x, dtype="complex64"), np.ones(shape, np.complex64))
    assert gp.empty_like(x).shape == shape


def test_full_like_values(rng):
    x = gp.asarray(rand(rng, (3,), "float16"))
    check_equal(gp.full_like(x, 2.5), np.full((3,), 2.5, np.float16))
    check_equal(gp.full_like(x, float("nan")), np.full((3,), np.nan, np.float16))
    with pytest.raises(OverflowError, match="full"):
        gp.full_like(gp.zeros(3, dtype=gp.uint8), 256)


@pytest.mark.parametrize("dtype", [">f8", ">i4", "<u2", ">c16", ">f2"])
def test_asarray_non_native_byte_order(rng, dtype):
    a = rng.standard_normal(7).astype(np.dtype(dtype).newbyteorder("="))
    a = (a * 100).astype(dtype)
    x = gp.asarray(a)
    assert str(x.dtype) == np.dtype(dtype).newbyteorder("=").name
    np.testing.assert_array_equal(gp.to_numpy(x), a.astype(np.dtype(dtype).newbyteorder("=")))


def test_python_ints_beyond_int64():
    # As NumPy 2: 2**63 fills a uint64 array by default; floats take any Python int that fits.
    x = gp.full((2,), 2**63)
    assert x.dtype == gp.uint64 and int(x[0]) == 2**63
    y = gp.zeros((2,), dtype=gp.float32) + 2**64
    np.testing.assert_array_equal(gp.to_numpy(y), np.float32(2.0**64))
    with pytest.raises(OverflowError, match="add"):
        gp.zeros((2,), dtype=gp.int64) + 2**64
    with pytest.raises(OverflowError, match="too large"):
        gp.zeros((2,)) + 10**400

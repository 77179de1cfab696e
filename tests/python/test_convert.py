# Over 600 lines on purpose: one suite per module, sharing its fixtures and reference helpers;
# a topic moves to its own file once it needs none of them.
"""Conversions: astype (every dtype pair), host transfer (to_numpy / get), Python scalars
(item / float / int / bool / complex / index), repr / str, devices (to_device, Device parsing)
and the runtime introspection functions."""

import operator
import os
import warnings

import ml_dtypes
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
    UNSIGNED,
    check_equal,
    cmp,
    gpdt,
    host,
    kind,
    npdt,
    rand,
    settle,
)

import pygpukit as gp

# Special values (as float64) cast to each inexact source dtype; out of range for float16 they
# become inf there, as in NumPy.
FLOAT_SPECIALS = [
    np.nan,
    np.inf,
    -np.inf,
    -0.0,
    0.0,
    0.5,
    -0.5,
    1.0,
    -1.0,
    2.0**-20,
    65504.0,
    1e5,
    -1e5,
    1e30,
    1e-30,
    3.0e38,
    1e300,
    -1e300,
]


def np_astype(x, dst):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")  # ComplexWarning, overflow
        return np.asarray(x).astype(npdt(dst))


def specials(src):
    v = np.array(FLOAT_SPECIALS)
    if kind(src) == "c":
        c = np.empty(len(v), np.complex128)
        c.real, c.imag = v, np.roll(v, 5)
        v = c
    return np_astype(v, src)


def assert_same_values(got, expected, dtype):
    """Exact equality (NaN == NaN) including the sign of zeros."""
    check_equal(got, expected, dtype)
    if kind(dtype) in "fc":
        g, e = cmp(host(got)), cmp(np.asarray(expected))
        for part in (np.real, np.imag) if kind(dtype) == "c" else (np.real,):
            np.testing.assert_array_equal(np.signbit(part(g)), np.signbit(part(e)))


# ---- astype: every pair ----


@pytest.mark.parametrize("dst", ALL)
@pytest.mark.parametrize("src", ALL)
def test_astype_all_pairs(rng, src, dst):
    x = rand(rng, (5, 7), src).reshape(-1)
    if kind(src) in "fc" and kind(dst) not in "iu":
        # NaN / inf / signed zeros / values beyond the destination's range (-> inf).
        x = np.concatenate([x, specials(src)])
    g = gp.asarray(x)
    y = g.astype(gpdt(dst))
    assert y.dtype == gpdt(dst) and y.shape == x.shape and y.device == g.device
    assert_same_values(y, np_astype(x, dst), dst)
    # Other spellings of the dtype, and the function form.
    assert_same_values(gp.astype(g, dst), np_astype(x, dst), dst)
    assert_same_values(g.astype(npdt(dst)), np_astype(x, dst), dst)
    check_equal(g, x, src)  # the source is unchanged


@pytest.mark.parametrize("dst", ALL)
@pytest.mark.parametrize("src", ["int16", "float32", "complex128", "bfloat16", "bool"])
def test_astype_layouts(rng, src, dst):
    base = rand(rng, (6, 8), src)
    for view in (
        lambda a: a[::-1, 1::3],
        lambda a: a.T,
        lambda a: a[2, ::-2],
        lambda a: a[0, 0],
        lambda a: a[:0],
        lambda a: a[3:4, 1:1],
    ):
        expected = np_astype(view(base), dst)
        got = view(gp.asarray(base)).astype(dst)
        assert got.is_contiguous
        check_equal(got, expected, dst)


def _x86_float_to_int(v, dst):
    """The float -> integer rule documented in ops/kernels/scalar_ops.h (x86-64's conversion
    instructions): truncation in range; NaN / out of range follow cvttsd2si's 'indefinite'."""

    def t64(d):
        return int(d) if -(2.0**63) <= d < 2.0**63 else -(2**63)

    def t32(d):
        return int(d) if -(2.0**31) - 1 < d < 2.0**31 else -(2**31)

    info = np.iinfo(npdt(dst))
    bits = info.bits
    if dst == "uint64" and v >= 2.0**63:
        return int(v) if v < 2.0**64 else 0
    r = t64(v) if bits == 64 or dst == "uint32" else t32(v)
    r %= 2**bits  # wrap to the destination width
    return r - 2**bits if info.min < 0 and r > info.max else r


@pytest.mark.parametrize("dst", INTS)
@pytest.mark.parametrize("src", FLOATS + COMPLEX)
def test_astype_float_to_int_out_of_range(src, dst):
    # One defined result on every backend (CUDA hardware would saturate instead).
    values = [
        300.7,
        -300.7,
        -1.5,
        -0.99,
        255.9,
        256.0,
        40000.5,
        -40000.5,
        65504.0,
        70000.25,
        -70000.25,
        3e9,
        -3e9,
        4294967296.0 + 7,
        1e10,
        -1e10,
        5e15,
        1e18,
        -1e18,
        9e18,
        -9e18,
        1e19,
        -1e19,
        2.0**63,
        -(2.0**63),
        2.0**64,
        1e30,
        -1e30,
        np.nan,
        np.inf,
        -np.inf,
    ]
    x = np_astype(values, src)
    wide = x.real.astype(np.float64)
    expected = np.array([_x86_float_to_int(v, dst) for v in wide], dtype=npdt(dst))
    got = gp.asarray(x).astype(dst)
    check_equal(got, expected, dst)
    # Where the conversion is defined (in range), NumPy agrees.
    info = np.iinfo(npdt(dst))
    in_range = (wide > info.min - 1.0) & (wide < info.max + 1.0)
    np.testing.assert_array_equal(host(got)[in_range], np_astype(wide[in_range], dst))


@pytest.mark.parametrize("dst", ["float16", "bfloat16", "float32", "float64", "int32", "uint8"])
@pytest.mark.parametrize("src", COMPLEX)
def test_astype_complex_to_real_keeps_real_part(src, dst):
    x = np.array([1.25 + 2j, -3.5 - 4j, 0 + 7j, 100.75 - 0.5j], src)
    got = gp.asarray(x).astype(dst)
    expected = np.array([1.25, -3.5, 0.0, 100.75]).astype(npdt(dst))
    check_equal(got, expected, dst)


@pytest.mark.parametrize("src", ALL)
def test_astype_to_bool_is_nonzero(rng, src):
    x = rand(rng, (20,), src)
    x[:2] = 0
    extra = []
    if kind(src) in "fc":
        extra = np_astype([-0.0, np.nan, np.inf, 2.0**-24], src)
        if kind(src) == "c":
            extra = np.concatenate([extra, np.array([0.5j, complex(0.0, -0.0)], src)])
    x = np.concatenate([x, np.asarray(extra, x.dtype)])
    got = host(gp.asarray(x).astype(gp.bool))
    expected = cmp(x) != 0
    np.testing.assert_array_equal(got, expected)
    assert not got[:2].any()


@pytest.mark.parametrize("dtype", ["float32", "int8", "complex64", "bfloat16", "bool"])
def test_astype_copy_false_shares_data(rng, dtype):
    x = rand(rng, (3, 4), dtype)
    g = gp.asarray(x)
    y = g.astype(dtype, copy=False)
    assert y.dtype == g.dtype and y.shape == g.shape
    y[0, 0] = 1
    assert host(g)[0, 0] == 1  # same data
    z = gp.astype(g, gpdt(dtype), copy=False)
    z[1, 1] = 0
    assert host(g)[1, 1] == 0


def test_astype_copy_false_returns_input_array():
    # NumPy and the Array API: with copy=False and a matching dtype the input array is returned.
    g = gp.asarray(np.arange(4, dtype=np.float32))
    assert g.astype(gp.float32, copy=False) is g
    assert gp.astype(g, "float32", copy=False) is g


@pytest.mark.parametrize("dtype", ["float32", "int64", "uint8", "bfloat16", "complex128"])
def test_astype_copy_true_is_independent(rng, dtype):
    x = rand(rng, (3, 4), dtype)
    g = gp.asarray(x)
    for y in (g.astype(dtype), g.astype(dtype, copy=True), gp.astype(g, dtype, copy=True)):
        assert y is not g
        y[...] = 0
        check_equal(g, x, dtype)
    y = g.astype(dtype)
    g[...] = 1
    check_equal(y, x, dtype)
    # copy=False with a different dtype still converts (a copy is unavoidable).
    w = g.astype("float64", copy=False)
    assert w.dtype == gp.float64
    w[...] = 5
    check_equal(g, np.ones((3, 4), npdt(dtype)), dtype)


def test_astype_dtype_spellings(rng):
    x = rand(rng, (5,), "float64")
    g = gp.asarray(x)
    for spec in (gp.float32, "float32", "f4", np.float32, np.dtype("float32")):
        check_equal(g.astype(spec), x.astype(np.float32))
    for spec in (gp.bfloat16, "bfloat16", ml_dtypes.bfloat16, BF16):
        check_equal(g.astype(spec), x.astype(BF16), "bfloat16")
    check_equal(g.astype(float), x)
    check_equal(g.astype(bool), x != 0)


@pytest.mark.parametrize("bad", ["float128", "floaty", 3, object(), np.dtype("U3")])
def test_astype_bad_dtype(bad):
    g = gp.asarray(np.arange(3))
    with pytest.raises(TypeError, match="astype|dtype"):
        g.astype(bad)
    with pytest.raises(TypeError):
        gp.astype(g, bad)


def test_astype_function_requires_array():
    with pytest.raises(TypeError, match="astype"):
        gp.astype(np.arange(3), gp.float32)
    with pytest.raises(TypeError, match="astype"):
        gp.astype([1, 2], "int8")


# ---- to_numpy / get ----


@pytest.mark.parametrize("shape", [(), (0,), (3, 0), (1,), (4, 5), (2, 3, 4)])
@pytest.mark.parametrize("dtype", ALL)
def test_to_numpy(rng, shape, dtype):
    x = rand(rng, shape, dtype)
    g = gp.asarray(x)
    for out in (gp.to_numpy(g), g.get()):
        assert isinstance(out, np.ndarray)
        assert out.dtype == npdt(dtype)
        assert out.shape == shape
        np.testing.assert_array_equal(cmp(out), cmp(x), strict=True)
        assert out.flags.writeable and out.flags.c_contiguous
    # The host copy is independent of the device array.
    out = gp.to_numpy(g)
    out[...] = 0
    check_equal(g, x, dtype)


@pytest.mark.parametrize("dtype", ALL)
def test_to_numpy_noncontiguous(rng, dtype):
    x = rand(rng, (6, 7, 3), dtype)
    g = gp.asarray(x)
    views = [
        lambda a: a[::2, ::-3],
        lambda a: a[..., 1],
        lambda a: a[::-1, :, ::-1],
        lambda a: a[:, 3],
        lambda a: a[1:1],
    ]
    for v in views:
        out = gp.to_numpy(v(g))
        np.testing.assert_array_equal(cmp(out), cmp(v(x)), strict=True)
        np.testing.assert_array_equal(cmp(v(g).get()), cmp(v(x)), strict=True)
    pt = gp.permute_dims(g, (2, 0, 1))
    np.testing.assert_array_equal(cmp(pt.get()), cmp(x.transpose(2, 0, 1)), strict=True)
    bc = gp.broadcast_to(gp.asarray(x[0, :, :1]), (4, 7, 3))
    np.testing.assert_array_equal(
        cmp(bc.get()), cmp(np.broadcast_to(x[0, :, :1], (4, 7, 3))), strict=True
    )


def test_to_numpy_rejects_non_arrays():
    with pytest.raises(TypeError, match="to_numpy"):
        gp.to_numpy(np.arange(3))
    with pytest.raises(TypeError, match="to_numpy"):
        gp.to_numpy([1, 2])


# ---- Python scalars ----


# Warnings are errors: e.g. "DeprecationWarning: __int__ returned non-int (type bool)".
@pytest.mark.filterwarnings("error")
@pytest.mark.parametrize("shape", [(), (1,), (1, 1)])
@pytest.mark.parametrize("dtype", ALL)
def test_python_scalar_conversions(rng, dtype, shape):
    x = rand(rng, shape, dtype)
    g = gp.asarray(x)
    ref = x.astype(np.float32) if dtype == "bfloat16" else x
    expected = ref.reshape(()).item()  # NumPy's Python scalar of the value
    item = g.item()
    assert type(item) is type(expected)
    assert item == expected
    k = kind(dtype)
    assert bool(g) is bool(expected)
    assert complex(g) == complex(expected)
    assert type(complex(g)) is complex
    if k == "c":
        with pytest.raises(TypeError):
            float(g)
        with pytest.raises(TypeError):
            int(g)
    else:
        assert float(g) == float(expected) and type(float(g)) is float
        r = int(g)
        assert r == int(expected) and type(r) is int
    if k in "iu" and g.ndim == 0:
        r = operator.index(g)
        assert r == expected and type(r) is int
    else:  # NumPy too: only 0-d integer arrays are indices
        with pytest.raises(TypeError):
            operator.index(g)


@pytest.mark.parametrize(
    "dtype, value",
    [
        ("int64", 2**63 - 1),
        ("int64", -(2**63)),
        ("uint64", 2**63 - 1),
        ("uint64", 2**63),
        ("uint64", 2**63 + 1),
        ("uint64", 2**64 - 1),
        ("uint32", 2**32 - 1),
        ("int32", -(2**31)),
        ("int8", -128),
        ("uint8", 255),
    ],
)
def test_python_int_conversions_exact(dtype, value):
    x = np.array(value, dtype=npdt(dtype))
    g = gp.asarray(x)
    assert x.item() == value
    for r in (g.item(), int(g), operator.index(g)):
        assert type(r) is int, (type(r), r)
        assert r == value
    assert float(g) == float(value)


@pytest.mark.parametrize(
    "dtype, value",
    [
        ("float64", 0.1),
        ("float64", 1 / 3),
        ("float64", 1e308),
        ("float64", 5e-324),
        ("float32", float(np.float32(0.1))),
        ("float16", float(np.float16(1 / 3))),
        ("bfloat16", 1.5),
        ("float64", -0.0),
        ("complex128", 0.1 + (1 / 3) * 1j),
        ("complex64", complex(np.complex64(0.1 - 0.7j))),
    ],
)
def test_python_float_conversions_exact(dtype, value):
    g = gp.asarray(np.array([value], dtype=npdt(dtype)))
    r = g.item()
    assert r == value
    if kind(dtype) == "f":
        assert float(g) == value
        assert np.signbit(float(g)) == np.signbit(value)
    else:
        assert complex(g) == value


@pytest.mark.parametrize("dtype", FLOATS)
def test_python_scalar_special_floats(dtype):
    nan = gp.asarray(np.array([np.nan], npdt(dtype)))
    inf = gp.asarray(np.array([-np.inf], npdt(dtype)))
    assert np.isnan(nan.item()) and np.isnan(float(nan))
    assert inf.item() == -np.inf and float(inf) == -np.inf
    assert bool(nan) is True
    assert bool(gp.asarray(np.array([-0.0], npdt(dtype)))) is False
    with pytest.raises(ValueError):
        int(nan)  # as int(float('nan'))
    with pytest.raises(OverflowError):
        int(inf)


def test_int_of_float_truncates():
    assert int(gp.asarray(np.array([-2.75]))) == -2
    assert int(gp.asarray(np.array([7.9], np.float32))) == 7


@pytest.mark.parametrize("shape", [(2,), (0,), (2, 3), (1, 2)])
def test_scalar_conversions_need_one_element(shape):
    g = gp.zeros(shape, dtype=gp.int32)
    with pytest.raises(ValueError, match="ambiguous"):
        bool(g)
    with pytest.raises((TypeError, ValueError)):
        int(g)
    with pytest.raises((TypeError, ValueError)):
        float(g)
    with pytest.raises((TypeError, ValueError)):
        complex(g)
    with pytest.raises(ValueError, match="item"):
        g.item()


def test_index_of_non_integer_raises():
    for dt in ("float32", "float64", "bfloat16", "complex64", "bool"):
        g = gp.asarray(np.array([1], npdt(dt)))
        with pytest.raises(TypeError, match="index"):
            operator.index(g)
        with pytest.raises(TypeError):
            [0, 1, 2][g]


def test_index_usable_as_python_index():
    g = gp.asarray(np.array(2, np.int16))
    assert [10, 11, 12, 13][g] == 12
    with pytest.raises(TypeError, match="0-d integer"):  # as NumPy: only 0-d arrays are indices
        [10, 11][gp.asarray(np.array([1]))]
    assert list(range(10))[gp.asarray(np.array(1, np.uint8)) : gp.asarray(np.array(3))] == [1, 2]


# ---- repr / str ----


def _fmt_host(x):
    h = host(x)
    return h.astype(np.float32) if h.dtype == BF16 else h


@pytest.mark.parametrize("shape", [(), (0,), (4,), (2, 3), (2, 2, 3), (3, 0)])
@pytest.mark.parametrize("dtype", ALL)
def test_repr_str_small(rng, device, dtype, shape):
    x = rand(rng, shape, dtype)
    g = gp.asarray(x)
    h = x.astype(np.float32) if dtype == "bfloat16" else x
    assert str(g) == np.array2string(h, separator=" ")
    if dtype != "bfloat16" and x.ndim > 0:
        assert str(g) == str(x)  # NumPy's str of the same data
    r = repr(g)
    body = np.array2string(h, separator=", ", prefix="GPUArray(")
    assert r == f"GPUArray({body}, dtype={dtype}, device='{device}')"
    if dtype != "bfloat16":
        # NumPy's own repr has the same body (aligned to its shorter prefix).
        assert np.array2string(h, separator=", ", prefix="array(") in repr(x)


def test_repr_multiline_alignment():
    g = gp.asarray(np.arange(6, dtype=np.int16).reshape(2, 3))
    assert repr(g).splitlines() == [
        "GPUArray([[0, 1, 2],",
        f"          [3, 4, 5]], dtype=int16, device='{g.device}')",
    ]
    assert str(g) == "[[0 1 2]\n [3 4 5]]"


def test_repr_values():
    g = gp.asarray(np.array([1.5, -2.25, np.nan, np.inf], np.float32))
    assert str(g) == "[ 1.5  -2.25   nan   inf]"
    assert repr(g).startswith("GPUArray([ 1.5 , -2.25,   nan,   inf], dtype=float32")
    b = gp.asarray(np.array([1.5, -3.0, 0.25], np.float32)).astype(gp.bfloat16)
    assert repr(b) == f"GPUArray([ 1.5 , -3.  ,  0.25], dtype=bfloat16, device='{b.device}')"
    assert str(b) == "[ 1.5  -3.    0.25]"
    z = gp.asarray(np.array(7, np.int64))
    assert str(z) == "7" and repr(z) == f"GPUArray(7, dtype=int64, device='{z.device}')"
    c = gp.asarray(np.array([1 + 2j], np.complex64))
    assert str(c) == "[1.+2.j]"
    t = gp.asarray(np.array([True, False]))
    assert str(t) == "[ True False]"


@pytest.mark.parametrize("dtype", ["float32", "int64", "bfloat16", "bool"])
def test_repr_large_is_summarized(rng, device, dtype):
    x = rand(rng, (10000,), dtype)
    g = gp.asarray(x)
    for s in (str(g), repr(g)):
        assert "..." in s
        assert len(s) < 1000
    assert repr(g).endswith(f"dtype={dtype}, device='{device}')")
    h = x.astype(np.float32) if dtype == "bfloat16" else x
    assert str(g) == np.array2string(h, separator=" ")
    g2 = gp.asarray(rand(rng, (200, 300), dtype))
    assert "..." in repr(g2) and len(repr(g2)) < 2000


def test_repr_noncontiguous_and_does_not_change_print_options(rng):
    x = rand(rng, (5, 6), "float64")
    opts = np.get_printoptions()
    g = gp.asarray(x)[::-2, 1::2]
    assert str(g) == str(x[::-2, 1::2])
    assert np.get_printoptions() == opts


# ---- devices ----


def test_device_attribute(device):
    g = gp.asarray(np.arange(3))
    assert isinstance(g.device, gp.Device)
    assert g.device == device == gp.default_device()
    assert g.device == str(device)
    assert str(device) in ("cpu",) or str(device).startswith("cuda:")
    assert repr(device) == f"Device('{device}')"
    assert device in gp.devices()


@pytest.mark.parametrize("dtype", ALL)
def test_to_device_round_trip(rng, device, dtype):
    x = rand(rng, (4, 5), dtype)
    g = gp.asarray(x)
    for d in gp.devices():
        for spec in (d, str(d)):
            y = g.to_device(spec)
            assert y.device == d
            check_equal(y, x, dtype)
            back = y.to_device(device)
            assert back.device == device
            check_equal(back, x, dtype)
        # Non-contiguous source.
        z = g[::-1, ::2].to_device(d)
        assert z.device == d
        check_equal(z, x[::-1, ::2], dtype)
        # A moved copy is independent of the source.
        if d != device:
            w = g.to_device(d)
            g2 = gp.asarray(x)
            w2 = g2.to_device(d)
            g2[...] = 0
            check_equal(w2, x, dtype)
            assert w.device == d


def test_to_device_same_device_keeps_data(rng, device):
    x = rand(rng, (3,), "float32")
    g = gp.asarray(x)
    y = g.to_device(device)
    check_equal(y, x)
    check_equal(gp.asarray(x, device=device), x)


@pytest.mark.parametrize("bad", ["tpu", "cuda:abc", "cpu:1", "cuda:-1", "", "CUDA:0", "cuda:0:1"])
def test_to_device_bogus_string(bad):
    g = gp.asarray(np.arange(3))
    with pytest.raises(ValueError, match="device"):
        g.to_device(bad)


def test_to_device_missing_cuda_device():
    g = gp.asarray(np.arange(3))
    n = sum(d.type == "cuda" for d in gp.devices())
    if gp.runtime_info()["cuda_available"]:
        with pytest.raises(ValueError, match="device"):
            g.to_device(f"cuda:{n + 7}")
    else:
        with pytest.raises(RuntimeError, match="not available"):
            g.to_device("cuda:0")


def test_to_device_bad_arguments():
    g = gp.asarray(np.arange(3))
    with pytest.raises(TypeError, match="device"):
        g.to_device(0)
    with pytest.raises(ValueError, match="stream"):
        g.to_device(gp.default_device(), stream=1)


@pytest.mark.parametrize(
    "spec, type_, index",
    [
        ("cpu", "cpu", 0),
        ("cpu:0", "cpu", 0),
        ("cuda", "cuda", 0),
        ("cuda:0", "cuda", 0),
        ("cuda:3", "cuda", 3),
        ("gpu", "cuda", 0),
        ("gpu:2", "cuda", 2),
    ],
)
def test_device_parsing(spec, type_, index):
    d = gp.Device(spec)
    assert d.type == type_ and d.index == index
    assert str(d) == ("cpu" if type_ == "cpu" else f"cuda:{index}")
    assert d == gp.Device(str(d))
    assert d == str(d)
    assert d == spec
    assert hash(d) == hash(gp.Device(str(d)))


@pytest.mark.parametrize(
    "bad", ["", "tpu", "CPU", "cuda:x", "cuda:-1", "cuda:1.5", " cpu", "cuda:", "gpu:", "cuda:0:0"]
)
def test_device_parsing_bad(bad):
    with pytest.raises(ValueError, match="device"):
        gp.Device(bad)


def test_device_equality():
    cpu = gp.Device("cpu")
    assert cpu == "cpu" and cpu == gp.Device("cpu")
    assert cpu != "cuda:0" and cpu != gp.Device("cuda:0")
    assert gp.Device("cuda:1") != gp.Device("cuda:0")
    assert gp.Device("cuda:1") == "gpu:1"
    assert not (cpu == "bogus")  # a bad string compares unequal, it does not raise
    assert cpu != 0 and cpu is not None and cpu != None  # noqa: E711
    assert len({gp.Device("cuda"), gp.Device("cuda:0"), gp.Device("gpu")}) == 1
    with pytest.raises(TypeError):
        gp.Device(0)


# ---- runtime introspection ----


def test_runtime_info(device):
    info = gp.runtime_info()
    types = {
        "version": str,
        "default_device": gp.Device,
        "cuda_available": bool,
        "cuda_status": str,
        "forced_device": str,
        "kernel_archs": str,
        "nvrtc_available": bool,
        "nvrtc_version": str,
        "cublaslt_available": bool,
        "cublaslt_version": str,
    }
    assert set(info) == set(types)
    for k, t in types.items():
        assert isinstance(info[k], t), (k, info[k])
    assert info["default_device"] == device
    assert info["version"] == gp.__version__
    assert info["version"].count(".") >= 2
    if info["cuda_available"]:
        assert info["cuda_status"] == "ok"
        assert any(d.type == "cuda" for d in gp.devices())
    else:
        assert info["cuda_status"] != "ok" and info["cuda_status"]
        assert gp.devices() == [gp.Device("cpu")]


MEMORY_KEYS = {
    "allocated_bytes",
    "reserved_bytes",
    "peak_allocated_bytes",
    "active_blocks",
    "num_allocations",
    "num_cache_hits",
    "num_driver_allocations",
    "num_driver_frees",
    "requested_bytes",
    "cached_bytes",
    "peak_reserved_bytes",
    "segments",
    "largest_free_block",
    "limit_bytes",
    "num_evictions",
    "num_spills",
    "num_page_ins",
    "spilled_bytes",
    "evictable_buffers",
}


def test_memory_stats_keys(device):
    for s in (gp.memory.stats(), gp.memory.stats(device), gp.memory.stats(str(device))):
        assert set(s) == MEMORY_KEYS
        assert all(type(v) is int and v >= 0 for v in s.values()), s
        assert s["reserved_bytes"] >= s["allocated_bytes"]
        assert s["peak_allocated_bytes"] >= s["allocated_bytes"]
    with pytest.raises(ValueError):
        gp.memory.stats("tpu")


def test_memory_stats_track_allocation(device):
    nbytes = 16 << 20
    slack = 1 << 20
    settle()
    before = gp.memory.stats()
    x = gp.empty((nbytes // 4,), dtype=gp.float32)
    assert x.nbytes == nbytes
    mid = gp.memory.stats(device)
    assert mid["allocated_bytes"] >= before["allocated_bytes"] + nbytes - slack
    assert mid["num_allocations"] >= before["num_allocations"] + 1
    assert mid["active_blocks"] >= before["active_blocks"] + 1
    assert mid["peak_allocated_bytes"] >= mid["allocated_bytes"]
    assert mid["reserved_bytes"] >= mid["allocated_bytes"]
    del x
    settle()
    after = gp.memory.stats()
    assert after["allocated_bytes"] <= mid["allocated_bytes"] - nbytes
    assert after["active_blocks"] <= mid["active_blocks"] - 1
    # The freed block stays cached (reserved) until empty_cache releases it to the driver.
    assert after["reserved_bytes"] >= mid["reserved_bytes"] - slack
    gp.memory.empty_cache()
    emptied = gp.memory.stats()
    assert emptied["reserved_bytes"] <= after["reserved_bytes"] - nbytes
    assert emptied["num_driver_frees"] >= after["num_driver_frees"] + 1
    assert emptied["reserved_bytes"] >= emptied["allocated_bytes"]
    gp.memory.empty_cache(device)
    gp.memory.empty_cache(str(device))


def test_memory_reused_from_cache(device):
    settle()
    x = gp.empty((1 << 18,), dtype=gp.float64)
    del x
    settle()
    before = gp.memory.stats()
    y = gp.empty((1 << 18,), dtype=gp.float64)
    after = gp.memory.stats()
    assert after["num_cache_hits"] == before["num_cache_hits"] + 1
    assert after["num_driver_allocations"] == before["num_driver_allocations"]
    del y


def test_dispatch_stats_count_launches(rng, device):
    a = gp.asarray(rand(rng, (100,), "float32"))
    b = gp.asarray(rand(rng, (100,), "float32"))
    gp.synchronize()
    gp.reset_dispatch_stats()
    s0 = gp.dispatch_stats()
    keys = {"host_tasks", "device_kernels", "queued_kernels", "library_calls", "copies"}
    assert set(s0) == keys | {"per_kernel"}
    assert all(s0[k] == 0 for k in keys)
    assert s0["per_kernel"] == {}

    def adds(s):
        return sum(v for k, v in s["per_kernel"].items() if "add" in k)

    c = a + b
    gp.synchronize()
    s1 = gp.dispatch_stats()
    assert adds(s1) == 1
    launches = s1["host_tasks"] if device.type == "cpu" else s1["device_kernels"]
    assert launches == 1
    # Made by the CUDA launch queue's thread if it was awake, else by this thread directly
    # (LaunchQueue::LaunchDirectly); never queued on the CPU or with the queue turned off.
    queue_on = device.type == "cuda" and os.environ.get("PYGPUKIT_LAUNCH_QUEUE") != "0"
    assert s1["queued_kernels"] in ((0, 1) if queue_on else (0,))
    c = c + a
    s2 = gp.dispatch_stats()
    assert adds(s2) == 2
    assert all(type(v) is int for v in s2["per_kernel"].values())
    _ = a * b
    s3 = gp.dispatch_stats()
    assert adds(s3) == 2
    assert sum(s3["per_kernel"].values()) == sum(s2["per_kernel"].values()) + 1
    gp.reset_dispatch_stats()
    assert gp.dispatch_stats()["per_kernel"] == {}
    check_equal(c, (host(a) + host(b)) + host(a))


# ---- misc ----


@pytest.mark.parametrize("dtype", NATIVE)
def test_bfloat16_round_trip_via_float32(rng, dtype):
    # Casting to bfloat16 and back to float32 matches ml_dtypes.
    x = rand(rng, (6,), dtype)
    got = gp.asarray(x).astype(gp.bfloat16).astype(gp.float32)
    check_equal(got, np_astype(np_astype(x, "bfloat16"), "float32"), "float32")


@pytest.mark.parametrize("dtype", UNSIGNED + INEXACT)
def test_astype_round_trip_to_same_kind_wider(rng, dtype):
    x = rand(rng, (7,), dtype)
    wide = {"u": "uint64", "f": "float64", "c": "complex128"}[kind(dtype)]
    g = gp.asarray(x).astype(wide).astype(dtype)
    check_equal(g, x, dtype)

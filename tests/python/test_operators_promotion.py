# Over 600 lines on purpose: one suite per module, sharing its fixtures and reference helpers;
# a topic moves to its own file once it needs none of them.
"""Elementwise arithmetic: + - * / (and reflected forms), unary - and +, type promotion (array
with array, NEP 50 weak Python scalars, the documented deviations), broadcasting and errors,
against NumPy on random data."""

import operator
import re
import warnings

import numpy as np
import pytest
from helpers import (
    ALL,
    BF16,
    COMPLEX,
    FLOATS,
    INTS,
    NATIVE,
    NUMERIC,
    SIGNED,
    UNIT_ROUNDOFF,
    UNSIGNED,
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

OPS = {
    "add": operator.add,
    "subtract": operator.sub,
    "multiply": operator.mul,
    "divide": operator.truediv,
}
REFLECTED = {
    "add": "__radd__",
    "subtract": "__rsub__",
    "multiply": "__rmul__",
    "divide": "__rtruediv__",
}

# Documented bfloat16 promotion (docs/python-guide.md, "Dtypes and deviations from NumPy"):
# with bool / 8-bit integers it stays bfloat16, with 16-bit integers and float16 it gives
# float32, with wider integers float64; with float32 / float64 (and complex) the wider type wins.
BF16_WITH = {
    "bool": "bfloat16",
    "int8": "bfloat16",
    "uint8": "bfloat16",
    "bfloat16": "bfloat16",
    "int16": "float32",
    "uint16": "float32",
    "float16": "float32",
    "int32": "float64",
    "uint32": "float64",
    "int64": "float64",
    "uint64": "float64",
    "float32": "float32",
    "float64": "float64",
    "complex64": "complex64",
    "complex128": "complex128",
}


def promoted(a, b):
    """Promoted dtype of two array dtypes: NumPy's, plus the documented bfloat16 table."""
    if a == "bfloat16":
        return BF16_WITH[b]
    if b == "bfloat16":
        return BF16_WITH[a]
    return np.result_type(np.dtype(a), np.dtype(b)).name


def result_dtype(op, promoted_dtype):
    # Documented deviation: true division of integers / bools gives float32 (NumPy: float64).
    if op == "divide" and kind(promoted_dtype) in "biu":
        return "float32"
    return promoted_dtype


def scalar_promoted(a, skind):
    """Documented NEP 50 promotion of an array of dtype `a` with a Python scalar."""
    ka = kind(a)
    if skind == "bool":
        return a
    if skind == "int":
        return "int64" if ka == "b" else a
    if skind == "float":
        return a if ka in "fc" else "float32"  # deviation: NumPy gives float64 for int arrays
    if ka == "c":
        return a
    return "complex128" if a == "float64" else "complex64"  # deviation for int: complex128


def np_compute(op, x, y, dtype):
    """NumPy reference: both operands cast to `dtype`, then the op computed in that dtype
    (bfloat16 storage arithmetic goes through float32, as ml_dtypes and the library do)."""
    dt = npdt(dtype)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        x = np.asarray(x).astype(dt)
        y = np.asarray(y).astype(dt)
        if dtype == "bfloat16":
            return OPS[op](x.astype(np.float32), y.astype(np.float32)).astype(BF16)
        return OPS[op](x, y)


def check_result(op, got, expected, dtype, x=None, y=None):
    """Exact for integer / bool results and float32 / float64 add, subtract and multiply;
    within about an ulp for half types and division; complex products and quotients get an
    absolute tolerance from the operand magnitudes."""
    k = kind(dtype)
    if k in "biu" or (dtype in ("float32", "float64") and op != "divide"):
        check_equal(got, expected, dtype)
        return
    u = UNIT_ROUNDOFF[dtype]
    if k == "f":
        check_close(got, expected, dtype, rtol=2 * u)
        return
    if op in ("add", "subtract"):
        check_close(got, expected, dtype, rtol=2 * u)
        return
    e = np.asarray(expected)
    finite = np.abs(e[np.isfinite(e)])
    if op == "multiply" and x is not None:
        scale = np.max(np.abs(np.asarray(x, np.complex128)), initial=1.0) * np.max(
            np.abs(np.asarray(y, np.complex128)), initial=1.0
        )
    else:
        scale = np.max(finite, initial=1.0)
    check_close(got, expected, dtype, rtol=8 * u, atol=8 * u * scale)


def zero_signs_match(got, expected):
    g = cmp(host(got))
    e = cmp(np.asarray(expected))
    for part in (np.real, np.imag) if np.iscomplexobj(e) else (np.real,):
        ge, ee = part(g), part(e)
        zero = ee == 0
        np.testing.assert_array_equal(np.signbit(ge[zero]), np.signbit(ee[zero]))


# ---- array op array: every dtype pair ----


def test_promotion_table_matches_numpy_except_documented():
    # Sanity of the expected table itself: native pairs are NumPy's promotion.
    for a in NATIVE:
        for b in NATIVE:
            assert promoted(a, b) == np.result_type(a, b).name
    assert promoted("bfloat16", "float16") == "float32"
    assert promoted("int8", "bfloat16") == "bfloat16"


@pytest.mark.parametrize("b", ALL)
@pytest.mark.parametrize("a", ALL)
@pytest.mark.parametrize("op", list(OPS))
def test_binary_all_dtype_pairs(rng, op, a, b):
    xa = rand(rng, (5, 7), a)
    xb = rand(rng, (5, 7), b, nonzero=(op == "divide"))
    ga, gb = gp.asarray(xa), gp.asarray(xb)
    pr = promoted(a, b)
    if op == "subtract" and pr == "bool":
        with pytest.raises(TypeError, match="subtract"):
            ga - gb
        return
    dtype = result_dtype(op, pr)
    got = OPS[op](ga, gb)
    assert got.dtype == gpdt(dtype)
    assert got.device == ga.device
    check_result(op, got, np_compute(op, xa, xb, dtype), dtype, xa, xb)


@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize("dtype", ["int8", "uint16", "float32", "complex128", "bfloat16"])
def test_reflected_array_methods(rng, op, dtype):
    xa = rand(rng, (4, 3), dtype, nonzero=True)
    xb = rand(rng, (4, 3), "float64", nonzero=True)
    ga, gb = gp.asarray(xa), gp.asarray(xb)
    got = getattr(ga, REFLECTED[op])(gb)  # gb op ga
    dtype_r = result_dtype(op, promoted("float64", dtype))
    check_result(op, got, np_compute(op, xb, xa, dtype_r), dtype_r, xb, xa)


# ---- integer wraparound ----


@pytest.mark.parametrize(
    "dtype, x, y, op, expected",
    [
        ("int8", 127, 1, "add", -128),
        ("int8", -128, 1, "subtract", 127),
        ("int8", -128, -1, "multiply", -128),
        ("int8", 100, 3, "multiply", 44),
        ("uint8", 0, 1, "subtract", 255),
        ("uint8", 255, 1, "add", 0),
        ("uint8", 16, 17, "multiply", 16),
        ("int16", 32767, 2, "add", -32767),
        ("uint16", 65535, 65535, "multiply", 1),
        ("int32", 2**31 - 1, 1, "add", -(2**31)),
        ("uint32", 0, 5, "subtract", 2**32 - 5),
        ("int64", 2**63 - 1, 1, "add", -(2**63)),
        ("int64", -(2**63), -1, "multiply", -(2**63)),
        ("uint64", 0, 1, "subtract", 2**64 - 1),
        ("uint64", 2**63, 2, "multiply", 0),
    ],
)
def test_integer_wraparound(rng, dtype, x, y, op, expected):
    dt = npdt(dtype)
    noise = rand(rng, (6,), dtype)
    xa = np.concatenate([np.array([x], dt), noise])
    ya = np.concatenate([np.array([y], dt), rand(rng, (6,), dtype)])
    got = OPS[op](gp.asarray(xa), gp.asarray(ya))
    with np.errstate(all="ignore"):
        ref = OPS[op](xa, ya)
    assert ref[0] == expected  # NumPy wraps too
    check_equal(got, ref, dtype)
    # The same with a Python scalar where it fits the dtype (NEP 50: the scalar takes the dtype).
    if -(2**63) <= y < 2**63:
        got_s = OPS[op](gp.asarray(xa), y)
        with np.errstate(all="ignore"):
            ref_s = OPS[op](xa, dt.type(y))
        check_equal(got_s, ref_s, dtype)
        assert int(host(got_s)[0]) == expected


# ---- broadcasting and layouts ----


@pytest.mark.parametrize(
    "sa, sb",
    [
        ((3, 1), (1, 4)),
        ((4,), (2, 3, 4)),
        ((2, 3, 4), (4,)),
        ((), (2, 3)),
        ((2, 3), ()),
        ((), ()),
        ((0, 3), (1, 3)),
        ((1, 3), (0, 3)),
        ((0,), ()),
        ((2, 0, 3), (3,)),
        ((5, 1, 1), (1, 1, 0)),
        ((2, 1, 3), (4, 1)),
        ((1, 1, 1, 6), (5, 1)),
    ],
)
@pytest.mark.parametrize("op", list(OPS))
def test_broadcasting(rng, op, sa, sb):
    xa = rand(rng, sa, "float32")
    xb = rand(rng, sb, "float64", nonzero=True)
    got = OPS[op](gp.asarray(xa), gp.asarray(xb))
    expected = np_compute(op, xa, xb, "float64")
    assert got.shape == np.broadcast_shapes(sa, sb)
    check_result(op, got, expected, "float64")
    # Integers: exact, and broadcasting the other way round.
    ia = rand(rng, sa, "int16")
    ib = rand(rng, sb, "uint8", nonzero=True)
    got2 = OPS[op](gp.asarray(ib), gp.asarray(ia))
    dtype = result_dtype(op, "int16")
    check_result(op, got2, np_compute(op, ib, ia, dtype), dtype)


# Views of an (8, 9) array, all of shape (4, 3) or broadcastable to it.
VIEWS = {
    "contig": lambda a: a[4:8],
    "step": lambda a: a[::2, ::3],
    "neg": lambda a: a[::-2, ::-3],
    "T": lambda a: a[:3, :4].T,
    "offset": lambda a: a[1:5, 2:5],
    "row": lambda a: a[5:6, 6:],
}


@pytest.mark.parametrize("vb", list(VIEWS))
@pytest.mark.parametrize("va", list(VIEWS))
@pytest.mark.parametrize("dtype", ["int32", "float32", "complex64"])
def test_noncontiguous_operands(rng, dtype, va, vb):
    base_a = rand(rng, (8, 9), dtype)
    base_b = rand(rng, (8, 9), dtype, nonzero=True)
    if va == "contig":
        base_a = base_a.reshape(24, 3)
    if vb == "contig":
        base_b = base_b.reshape(24, 3)
    na, nb = VIEWS[va](base_a), VIEWS[vb](base_b)
    ga, gb = VIEWS[va](gp.asarray(base_a)), VIEWS[vb](gp.asarray(base_b))
    assert ga.shape == na.shape and gb.shape == nb.shape
    assert ga.is_contiguous == (va in ("contig", "row"))
    for op in OPS:
        got = OPS[op](ga, gb)
        assert got.shape == np.broadcast_shapes(na.shape, nb.shape)
        dt = result_dtype(op, dtype)
        check_result(op, got, np_compute(op, na, nb, dt), dt, na, nb)
    # The sources are untouched.
    check_equal(gp.asarray(base_a), base_a)


def test_broadcast_views_and_newaxis(rng):
    a = rand(rng, (5,), "float32")
    b = rand(rng, (3, 1), "float32")
    ga = gp.broadcast_to(gp.asarray(a), (3, 5))
    assert ga.strides[0] == 0
    check_equal(ga + gp.asarray(b), a + b)
    check_equal(ga * ga, (a * a)[None, :].repeat(3, 0))
    x = rand(rng, (4,), "int64")
    y = rand(rng, (6,), "int64")
    gx, gy = gp.asarray(x), gp.asarray(y)
    check_equal(gx[:, None] - gy[None, :], x[:, None] - y[None, :])
    check_equal(gx[None, ::-1] * gy[::-2, None], x[None, ::-1] * y[::-2, None])


def test_overlapping_views_of_one_array(rng):
    x = rand(rng, (10,), "float64")
    g = gp.asarray(x)
    check_equal(g[1:] - g[:-1], x[1:] - x[:-1])
    check_equal(g + g, x + x)
    check_equal(g[::-1] * g, x[::-1] * x)


def test_result_is_a_new_array(rng):
    x = rand(rng, (3, 4), "float32")
    y = rand(rng, (3, 4), "float32")
    gx, gy = gp.asarray(x), gp.asarray(y)
    out = gx + gy
    out[...] = 0.0
    check_equal(gx, x)
    check_equal(gy, y)


# ---- Python scalars (NEP 50) ----


def _scalar(rng, dtype, skind):
    """A random Python scalar of kind `skind` that fits the array dtype (for ints)."""
    if skind == "bool":
        return bool(rng.integers(0, 2))
    if skind == "int":
        if kind(dtype) in "iu":
            info = np.iinfo(npdt(dtype))
            return int(rng.integers(int(info.min), min(int(info.max), 2**63 - 1), endpoint=True))
        if kind(dtype) == "b":
            return int(rng.integers(-(2**62), 2**62))
        return int(rng.integers(-1000, 1000))
    if skind == "float":
        return float(rng.standard_normal() * 4)
    return complex(rng.standard_normal() * 4, rng.standard_normal() * 4)


@pytest.mark.parametrize("skind", ["bool", "int", "float", "complex"])
def test_scalar_promotion_matches_numpy_except_documented(skind):
    value = {"bool": True, "int": 3, "float": 2.5, "complex": 1j}[skind]
    for a in NATIVE:
        ours = scalar_promoted(a, skind)
        theirs = np.result_type(np.dtype(a), value).name
        if kind(a) in "biu" and skind == "float":
            assert (theirs, ours) == ("float64", "float32")
        elif kind(a) in "biu" and skind == "complex":
            assert (theirs, ours) == ("complex128", "complex64")
        else:
            assert ours == theirs


@pytest.mark.parametrize("reflected", [False, True], ids=["array_first", "scalar_first"])
@pytest.mark.parametrize("skind", ["bool", "int", "float", "complex"])
@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("op", list(OPS))
def test_python_scalar(rng, op, dtype, skind, reflected):
    xa = rand(rng, (5, 7), dtype, nonzero=(op == "divide" and reflected))
    s = _scalar(rng, dtype, skind)
    if op == "divide" and not reflected and s == 0:
        s = type(s)(1)
    g = gp.asarray(xa)
    pr = scalar_promoted(dtype, skind)
    if op == "subtract" and pr == "bool":
        with pytest.raises(TypeError, match="subtract"):
            (s - g) if reflected else (g - s)
        return
    rdt = result_dtype(op, pr)
    got = OPS[op](s, g) if reflected else OPS[op](g, s)
    assert got.dtype == gpdt(rdt)
    assert got.shape == (5, 7)
    if reflected:
        expected = np_compute(op, s, xa, rdt)
    else:
        expected = np_compute(op, xa, s, rdt)
    check_result(op, got, expected, rdt, xa, np.full(xa.shape, s))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_times_python_float_stays_half(rng, dtype):
    x = rand(rng, (6,), dtype)
    got = gp.asarray(x) * 2.5
    assert got.dtype == gpdt(dtype)
    check_result("multiply", got, np_compute("multiply", x, 2.5, dtype), dtype)
    got = 2.5 * gp.asarray(x)
    assert got.dtype == gpdt(dtype)


@pytest.mark.parametrize("dtype", INTS)
def test_int_array_true_division_gives_float32(rng, dtype):
    x = rand(rng, (9,), dtype)
    got = gp.asarray(x) / 2
    assert got.dtype == gp.float32
    check_equal(got, x.astype(np.float32) / np.float32(2))
    got = gp.asarray(x) / gp.asarray(rand(rng, (9,), dtype, nonzero=True))
    assert got.dtype == gp.float32
    assert (gp.asarray(x) + 0.5).dtype == gp.float32
    assert (gp.asarray(x) * 1j).dtype == gp.complex64
    assert (gp.asarray(np.array([True, False])) / True).dtype == gp.float32


@pytest.mark.parametrize(
    "dtype, value",
    [
        ("int8", 1000),
        ("int8", -129),
        ("int8", 128),
        ("uint8", -1),
        ("uint8", 256),
        ("int16", 40000),
        ("uint16", -5),
        ("int32", 2**31),
        ("uint32", 2**32),
        ("uint64", -1),
        ("int64", 2**63),
        ("int64", -(2**63) - 1),
    ],
)
@pytest.mark.parametrize("op", ["add", "subtract", "multiply"])
def test_python_int_out_of_range_raises(rng, op, dtype, value):
    g = gp.asarray(rand(rng, (3,), dtype))
    with pytest.raises(OverflowError):
        OPS[op](g, value)
    with pytest.raises(OverflowError):
        OPS[op](value, g)


def test_python_int_overflow_message_names_op():
    g = gp.asarray(np.arange(3, dtype=np.int8))
    with pytest.raises(OverflowError, match="add.*1000.*int8"):
        g + 1000
    with pytest.raises(OverflowError, match="multiply"):
        -200 * g


def test_python_int_overflow_int64_is_not_silent():
    with pytest.raises(OverflowError):
        gp.asarray(np.arange(3)) + 2**64


def test_uint64_with_python_int_above_int64_max(rng):
    # NEP 50: the Python int takes the array's dtype; 2**63 + 5 is a valid uint64 value.
    x = rand(rng, (5,), "uint64")
    value = 2**63 + 5
    with np.errstate(all="ignore"):
        expected = x + value
    check_equal(gp.asarray(x) + value, expected, "uint64")


def test_float_array_with_large_python_int(rng):
    x = rand(rng, (4,), "float32")
    check_equal(gp.asarray(x) + 2**40, x + np.float32(2**40))
    with np.errstate(over="ignore"):
        expected = np.asarray(x, np.float16) * np.float16(100000)
    check_equal(gp.asarray(x.astype(np.float16)) * 100000, expected)  # 100000 -> inf in float16


def test_bool_array_with_python_scalars(rng):
    x = rand(rng, (8,), "bool")
    g = gp.asarray(x)
    check_equal(g + True, x + True)
    check_equal(g * False, x * False)
    check_equal(g + 3, x.astype(np.int64) + 3)
    check_equal(g - 1, x.astype(np.int64) - 1)  # an int scalar makes subtraction valid
    check_equal(1 - g, 1 - x.astype(np.int64))
    check_close(g * 2.5, x * np.float32(2.5), "float32", rtol=0)


def test_boolean_subtract_raises(rng):
    x = gp.asarray(rand(rng, (4,), "bool"))
    y = gp.asarray(rand(rng, (1,), "bool"))
    with pytest.raises(TypeError, match="subtract"):
        x - y
    with pytest.raises(TypeError, match="subtract"):
        x - True
    with pytest.raises(TypeError, match="subtract"):
        False - x
    with pytest.raises(TypeError, match="subtract"):
        x.__rsub__(y)


# ---- unary - and + ----


@pytest.mark.parametrize("dtype", NUMERIC)
def test_negative(rng, dtype):
    x = rand(rng, (5, 7), dtype)
    if kind(dtype) in "iu":
        info = np.iinfo(npdt(dtype))
        x[0, :3] = [info.min, info.max, 0]
    g = gp.asarray(x)
    got = -g
    assert got.dtype == gpdt(dtype)
    with np.errstate(all="ignore"):
        expected = (-x.astype(np.float32)).astype(BF16) if dtype == "bfloat16" else -x
    check_equal(got, expected, dtype)
    check_equal(-got, x, dtype)  # negating twice gives the input back
    check_equal(-g[::-1, ::2], expected[::-1, ::2], dtype)
    check_equal(g, x, dtype)  # the operand is unchanged


@pytest.mark.parametrize("dtype", FLOATS)
def test_negative_signed_zero_and_specials(dtype):
    x = np.array([0.0, -0.0, np.inf, -np.inf, 1.5, -2.0], npdt(dtype))
    got = host(-gp.asarray(x)).astype(np.float64)
    np.testing.assert_array_equal(got, [-0.0, 0.0, -np.inf, np.inf, -1.5, 2.0])
    np.testing.assert_array_equal(np.signbit(got), [True, False, True, False, True, False])
    nan = host(-gp.asarray(np.array([np.nan], npdt(dtype)))).astype(np.float64)
    assert np.isnan(nan).all()


@pytest.mark.parametrize("dtype", COMPLEX)
def test_negative_complex_special_values(dtype):
    values = [
        0j,
        complex(0.0, -0.0),
        complex(-0.0, 0.0),
        complex(np.inf, 1.0),
        complex(1.0, np.inf),
        complex(-np.inf, -np.inf),
        complex(2.0, np.nan),
        complex(np.nan, 3.0),
        complex(1.5, -2.5),
    ]
    x = np.array(values, dtype)
    got = -gp.asarray(x)
    expected = -x
    check_equal(got, expected, dtype)
    zero_signs_match(got, expected)


@pytest.mark.parametrize("dtype", ["uint8", "uint16", "uint32", "uint64"])
def test_negative_unsigned_wraps(dtype):
    top = int(np.iinfo(npdt(dtype)).max)
    x = np.array([0, 1, 2, top], npdt(dtype))
    expected = np.array([0, top, top - 1, 1], npdt(dtype))
    check_equal(-gp.asarray(x), expected, dtype)
    check_equal(-gp.asarray(x), -x, dtype)


def test_negative_bool_raises():
    with pytest.raises(TypeError, match="negative"):
        -gp.asarray(np.array([True, False]))
    with pytest.raises(TypeError):
        -gp.asarray(np.array(True))


@pytest.mark.parametrize("dtype", NUMERIC)
def test_positive(rng, dtype):
    x = rand(rng, (4, 6), dtype)
    g = gp.asarray(x)
    got = +g
    check_equal(got, +x if dtype != "bfloat16" else x, dtype)
    # A new array: writing to it leaves the operand alone.
    got[...] = 0
    check_equal(g, x, dtype)
    check_equal(+g[::-1, 1::2], x[::-1, 1::2], dtype)


def test_positive_bool_raises_like_numpy():
    with pytest.raises(TypeError):
        +np.array([True, False])
    with pytest.raises(TypeError):
        +gp.asarray(np.array([True, False]))


# ---- division by zero, NaN / inf, signed zeros ----


@pytest.mark.parametrize("dtype", ["bool"] + INTS)
def test_integer_division_by_zero(rng, dtype):
    x = rand(rng, (12,), dtype)
    x[:2] = 0
    g = gp.asarray(x)
    zeros = np.zeros(12, npdt(dtype))
    with np.errstate(all="ignore"):
        expected = x.astype(np.float32) / np.float32(0)
        expected_r = np.float32(0) / x.astype(np.float32)
    got = g / gp.asarray(zeros)
    check_equal(got, expected, "float32")
    assert np.isnan(host(got)[:2]).all()
    check_equal(g / 0, expected, "float32")
    if dtype != "bool":
        check_equal(g / False, expected, "float32")
    check_equal(0 / g, expected_r, "float32")
    # Signs of the infinities follow the numerator.
    nz = x != 0
    if kind(dtype) == "i":
        np.testing.assert_array_equal(np.sign(host(got)[nz]), np.sign(x[nz]))


@pytest.mark.parametrize("dtype", FLOATS + COMPLEX)
def test_float_division_by_zero(rng, dtype):
    x = rand(rng, (10,), dtype)
    x[:2] = 0
    g = gp.asarray(x)
    for zero in (0.0, -0.0):
        zarr = np.full(10, zero, npdt(dtype))
        expected = np_compute("divide", x, zarr, dtype)
        check_equal(g / gp.asarray(zarr), expected, dtype)
        if kind(dtype) == "f":
            check_equal(g / zero, expected, dtype)
    if kind(dtype) == "f":
        one = np.ones(2, npdt(dtype))
        got = host(gp.asarray(one) / gp.asarray(np.array([0.0, -0.0], npdt(dtype))))
        np.testing.assert_array_equal(got.astype(np.float64), [np.inf, -np.inf])


SPECIALS = [0.0, -0.0, 1.0, -2.5, np.inf, -np.inf, np.nan]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op", list(OPS))
def test_float_special_values(op, dtype):
    v = np.array(SPECIALS, npdt(dtype))
    a, b = v[:, None], v[None, :]
    got = OPS[op](gp.asarray(a), gp.asarray(b))
    expected = np_compute(op, a, b, dtype)
    check_equal(got, expected, dtype)
    zero_signs_match(got, expected)


@pytest.mark.parametrize("dtype", FLOATS + COMPLEX)
@pytest.mark.parametrize("op", list(OPS))
def test_nan_inf_propagate(rng, op, dtype):
    x = rand(rng, (4, 5), dtype, nonzero=True)
    y = rand(rng, (4, 5), dtype, nonzero=True)
    x[0, :] = np.nan
    x[1, :] = np.inf
    y[2, :] = -np.inf
    got = host(OPS[op](gp.asarray(x), gp.asarray(y)))
    expected = np_compute(op, x, y, dtype)
    e, g = cmp(expected), cmp(got)
    np.testing.assert_array_equal(np.isnan(g), np.isnan(e))
    np.testing.assert_array_equal(np.isinf(g), np.isinf(e))
    assert np.isnan(g[0]).all()


@pytest.mark.parametrize("dtype", FLOATS)
def test_signed_zero_arithmetic(dtype):
    pz = gp.asarray(np.zeros(1, npdt(dtype)))
    nz = -pz
    assert np.signbit(host(nz).astype(np.float64)).all()
    assert np.signbit(host(nz + nz).astype(np.float64)).all()
    assert not np.signbit(host(nz + pz).astype(np.float64)).any()
    assert not np.signbit(host(nz - nz).astype(np.float64)).any()
    assert np.signbit(host(nz * 3.0).astype(np.float64)).all()
    assert np.signbit(host(pz * -3.0).astype(np.float64)).all()
    assert np.signbit(host(pz / -3.0).astype(np.float64)).all()
    assert np.signbit(host(nz - 0.0).astype(np.float64)).all()


# ---- complex ----


@pytest.mark.parametrize("db", COMPLEX + ["float32", "float64", "int16"])
@pytest.mark.parametrize("da", COMPLEX)
@pytest.mark.parametrize("op", list(OPS))
def test_complex_arithmetic(rng, op, da, db):
    x = rand(rng, (8, 9), da)
    y = rand(rng, (8, 9), db, nonzero=True)
    dtype = result_dtype(op, promoted(da, db))
    check_result(
        op, OPS[op](gp.asarray(x), gp.asarray(y)), np_compute(op, x, y, dtype), dtype, x, y
    )
    check_result(
        op, OPS[op](gp.asarray(y), gp.asarray(x)), np_compute(op, y, x, dtype), dtype, y, x
    )


@pytest.mark.parametrize(
    "dtype, scale",
    [("complex64", 1e20), ("complex64", 1e-20), ("complex128", 1e200), ("complex128", 1e-200)],
)
def test_complex_division_extreme_magnitudes(rng, dtype, scale):
    # |b|^2 overflows / underflows in the naive formula; NumPy (Smith) gets the right result.
    x = rand(rng, (20,), dtype, scale=1.0) * np.asarray(scale, npdt(dtype))
    y = rand(rng, (20,), dtype, scale=1.0, nonzero=True) * np.asarray(scale, npdt(dtype))
    got = gp.asarray(x) / gp.asarray(y)
    expected = x / y
    assert np.isfinite(expected).all()
    u = UNIT_ROUNDOFF[dtype]
    check_close(got, expected, dtype, rtol=8 * u, atol=8 * u * np.max(np.abs(expected)))


@pytest.mark.parametrize("dtype", COMPLEX)
def test_complex_division_by_zero(dtype):
    x = np.array([1 + 1j, -2 + 0j, 0j, complex(0, -3)], dtype)
    y = np.zeros(4, dtype)
    with np.errstate(all="ignore"):
        expected = x / y
    check_equal(gp.asarray(x) / gp.asarray(y), expected, dtype)
    check_equal(gp.asarray(x) / 0j, expected, dtype)


# ---- errors ----


BAD_OPERANDS = {
    "list": [1.0, 2.0, 3.0],
    "str": "abc",
    "None": None,
    "ndarray": np.ones(3, np.float32),
    "ndarray0d": np.array(2.0),
    "dict": {"a": 1},
    "object": object(),
}


@pytest.mark.parametrize("dtype", ["float32", "int64", "bool"])
@pytest.mark.parametrize("name", list(BAD_OPERANDS))
@pytest.mark.parametrize("op", list(OPS))
def test_non_array_operand_raises_type_error(op, name, dtype):
    g = gp.asarray(np.array([1, 2, 3]).astype(dtype))
    other = BAD_OPERANDS[name]
    with pytest.raises(TypeError):
        OPS[op](g, other)
    with pytest.raises(TypeError):
        OPS[op](other, g)


@pytest.mark.parametrize("op", list(OPS))
def test_different_devices_raise(rng, op):
    devs = gp.devices()
    if len(devs) < 2:
        pytest.skip("needs two devices")
    x = rand(rng, (3,), "float32")
    a = gp.asarray(x, device=devs[0])
    b = gp.asarray(x, device=devs[1])
    assert a.device != b.device
    with pytest.raises(ValueError, match=op):
        OPS[op](a, b)
    with pytest.raises(ValueError, match=op):
        OPS[op](b, a)


@pytest.mark.parametrize(
    "sa, sb", [((2, 3), (4,)), ((3,), (4,)), ((2, 3, 4), (3, 3)), ((0,), (2,)), ((5, 2), (2, 5))]
)
@pytest.mark.parametrize("op", list(OPS))
def test_mismatched_shapes_raise(op, sa, sb):
    a = gp.zeros(sa, dtype=gp.float32)
    b = gp.ones(sb, dtype=gp.int32)
    with pytest.raises(ValueError) as info:
        OPS[op](a, b)
    msg = str(info.value)
    assert op in msg
    assert str(sa) in msg and str(sb) in msg, msg
    with pytest.raises(ValueError, match=re.escape(str(sb))):
        OPS[op](b, a)


@pytest.mark.parametrize("dtype", SIGNED + UNSIGNED)
def test_int_ops_keep_dtype_with_same_dtype(rng, dtype):
    # Same-dtype integer add / subtract / multiply never widen.
    x, y = rand(rng, (3,), dtype), rand(rng, (3,), dtype)
    for op in ("add", "subtract", "multiply"):
        got = OPS[op](gp.asarray(x), gp.asarray(y))
        assert got.dtype == gpdt(dtype)
        with np.errstate(all="ignore"):
            check_equal(got, OPS[op](x, y), dtype)

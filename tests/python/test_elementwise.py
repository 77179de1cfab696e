# Over 600 lines on purpose: one suite per module, sharing its fixtures and reference helpers;
# a topic moves to its own file once it needs none of them.
"""The Array API elementwise functions (gp.sin, gp.add, gp.where, gp.clip, ...) against NumPy on
random data with special values, for every dtype each accepts, on the default device; layouts
(strided, negative strides, broadcast, 0-d, empty), out= and in-place forms, and bad input."""

import numpy as np
import pytest
from helpers import (
    ALL,
    BF16,
    COMPLEX,
    FLOATS,
    INTS,
    NUMERIC,
    SIGNED,
    gpdt,
    host,
    kind,
    npdt,
    rand,
    run_readme_example,
)

import pygpukit as gp

REAL = INTS + FLOATS
REAL_OR_BOOL = ["bool"] + REAL

# Dtypes each domain accepts (native/ops/elementwise/elementwise_table.h).
DOMAIN = {
    "all": ALL,
    "numeric": NUMERIC,
    "real": REAL,
    "real_or_bool": REAL_OR_BOOL,
    "inexact": ALL,  # bool and integers compute in float32
    "real_inexact": REAL_OR_BOOL,  # bool and integers compute in float32
    "int_or_bool": ["bool"] + INTS,
    "int": INTS,
    "logical": ALL,
}

# name -> (domain, result kind, NumPy reference, exact)
# result kind: "same" (the compute dtype), "bool", "real" (complex -> its real dtype).
UNARY = {
    "abs": ("all", "real", np.abs, True),
    "acos": ("inexact", "same", np.arccos, False),
    "acosh": ("inexact", "same", np.arccosh, False),
    "asin": ("inexact", "same", np.arcsin, False),
    "asinh": ("inexact", "same", np.arcsinh, False),
    "atan": ("inexact", "same", np.arctan, False),
    "atanh": ("inexact", "same", np.arctanh, False),
    "bitwise_invert": ("int_or_bool", "same", np.invert, True),
    "ceil": ("real", "same", np.ceil, True),
    "conj": ("all", "same", np.conj, True),
    "cos": ("inexact", "same", np.cos, False),
    "cosh": ("inexact", "same", np.cosh, False),
    "exp": ("inexact", "same", np.exp, False),
    "expm1": ("inexact", "same", np.expm1, False),
    "floor": ("real", "same", np.floor, True),
    "imag": ("all", "real", np.imag, True),
    "isfinite": ("all", "bool", np.isfinite, True),
    "isinf": ("all", "bool", np.isinf, True),
    "isnan": ("all", "bool", np.isnan, True),
    "log": ("inexact", "same", np.log, False),
    "log1p": ("inexact", "same", np.log1p, False),
    "log2": ("inexact", "same", np.log2, False),
    "log10": ("inexact", "same", np.log10, False),
    "logical_not": ("logical", "bool", np.logical_not, True),
    "negative": ("numeric", "same", np.negative, True),
    "positive": ("numeric", "same", np.positive, True),
    "real": ("all", "real", np.real, True),
    "reciprocal": ("inexact", "same", np.reciprocal, False),
    "round": ("numeric", "same", np.round, True),
    "sign": ("numeric", "same", np.sign, False),
    "signbit": ("real_inexact", "bool", np.signbit, True),
    "sin": ("inexact", "same", np.sin, False),
    "sinh": ("inexact", "same", np.sinh, False),
    "sqrt": ("inexact", "same", np.sqrt, False),
    "square": ("numeric", "same", np.square, False),
    "tan": ("inexact", "same", np.tan, False),
    "tanh": ("inexact", "same", np.tanh, False),
    "trunc": ("real", "same", np.trunc, True),
}

BINARY = {
    "add": ("all", "same", np.add, False),
    "atan2": ("real_inexact", "same", np.arctan2, False),
    "bitwise_and": ("int_or_bool", "same", np.bitwise_and, True),
    "bitwise_left_shift": ("int", "same", np.left_shift, True),
    "bitwise_or": ("int_or_bool", "same", np.bitwise_or, True),
    "bitwise_right_shift": ("int", "same", np.right_shift, True),
    "bitwise_xor": ("int_or_bool", "same", np.bitwise_xor, True),
    "copysign": ("real_inexact", "same", np.copysign, True),
    "divide": ("inexact", "same", np.divide, False),
    "equal": ("all", "bool", np.equal, True),
    "floor_divide": ("real", "same", np.floor_divide, True),
    "greater": ("real_or_bool", "bool", np.greater, True),
    "greater_equal": ("real_or_bool", "bool", np.greater_equal, True),
    "hypot": ("real_inexact", "same", np.hypot, False),
    "less": ("real_or_bool", "bool", np.less, True),
    "less_equal": ("real_or_bool", "bool", np.less_equal, True),
    "logaddexp": ("real_inexact", "same", np.logaddexp, False),
    "logical_and": ("logical", "bool", np.logical_and, True),
    "logical_or": ("logical", "bool", np.logical_or, True),
    "logical_xor": ("logical", "bool", np.logical_xor, True),
    "maximum": ("real_or_bool", "same", np.maximum, True),
    "minimum": ("real_or_bool", "same", np.minimum, True),
    "multiply": ("all", "same", np.multiply, False),
    "nextafter": ("real_inexact", "same", np.nextafter, True),
    "not_equal": ("all", "bool", np.not_equal, True),
    "pow": ("numeric", "same", np.power, False),
    "remainder": ("real", "same", np.remainder, True),
    "subtract": ("numeric", "same", np.subtract, False),
}

# Relative tolerance of results computed in each dtype (the math libraries differ by a few ulp;
# libcu++'s single-precision inverse complex functions by up to about 400 ulp).
RTOL = {
    "float16": 2e-3,
    "bfloat16": 1.6e-2,
    "float32": 1e-5,
    "float64": 1e-12,
    "complex64": 1e-4,
    "complex128": 1e-12,
}

SPECIAL = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.5, -2.5, 1e-30, 1e30]


def compute_dtype(domain, dt):
    if domain == "logical":
        return "bool"
    if domain in ("inexact", "real_inexact") and kind(dt) in "biu":
        return "float32"
    return dt


def result_dtype(res, compute):
    if res == "bool":
        return "bool"
    if res == "real" and kind(compute) == "c":
        return {"complex64": "float32", "complex128": "float64"}[compute]
    return compute


def sample(rng, dt, shape, name=""):
    """Random data of dtype dt with special values mixed in (floats), small where needed."""
    small = name in ("pow", "square", "multiply", "bitwise_left_shift", "bitwise_right_shift")
    x = rand(rng, shape, dt, small=small)
    if kind(dt) == "f" and x.size >= len(SPECIAL) and name not in ("pow",):
        flat = x.reshape(-1)
        with np.errstate(over="ignore"):
            flat[: len(SPECIAL)] = np.array(SPECIAL).astype(npdt(dt))
    if kind(dt) == "c" and x.size >= 4:
        flat = x.reshape(-1)
        flat[:4] = np.array([0, -0.0, 1j, -1]).astype(npdt(dt))
    if name in ("bitwise_left_shift", "bitwise_right_shift"):
        x = np.abs(x) % (8 * npdt(dt).itemsize + 2)  # shift counts, some beyond the width
    if name == "pow" and kind(dt) in "iu":
        x = np.abs(x) % 5
    return x


def reference(fn, inputs, compute, result):
    """NumPy's fn on the inputs converted to the compute dtype (16-bit floats computed in float32,
    as the kernels do), converted to the result dtype."""
    half = compute in ("float16", "bfloat16") and fn is not np.nextafter  # steps in its own ulp
    wide = "float32" if half else compute
    xs = [np.asarray(x).astype(npdt(compute)).astype(npdt(wide)) for x in inputs]
    with np.errstate(all="ignore"):
        out = fn(*xs)
    return np.asarray(out).astype(npdt(result))


def as_wide(a):
    a = np.asarray(a)
    if a.dtype == BF16:
        return a.astype(np.float32)
    return a


def assert_matches(got_arr, expected, result, exact):
    got = host(got_arr)
    assert str(got_arr.dtype) == result, (got_arr.dtype, result)
    assert got.shape == expected.shape
    g, e = as_wide(got), as_wide(expected)
    if exact or kind(result) in "biu":
        np.testing.assert_array_equal(g, e)
        if kind(result) in "fc":  # signed zeros too (a NaN's sign is not specified)
            keep = ~np.isnan(e.real)
            np.testing.assert_array_equal(np.signbit(g.real[keep]), np.signbit(e.real[keep]))
        return
    rtol = RTOL[result]
    np.testing.assert_allclose(g, e, rtol=rtol, atol=rtol, equal_nan=True)


def run_case(name, table, rng, dt, shape=(7, 19)):
    domain, res, fn, exact = table[name]
    exact = exact and not (name == "abs" and kind(dt) == "c")  # hypot: within an ulp
    compute = compute_dtype(domain, dt)
    result = result_dtype(res, compute)
    arity = 1 if table is UNARY else 2
    xs = [sample(rng, dt, shape, name) for _ in range(arity)]
    if name in ("floor_divide", "remainder") and kind(dt) in "iu":
        xs[1][xs[1] == 0] = 3  # NumPy warns; the zero-divisor results are tested separately
    got = getattr(gp, name)(*[gp.asarray(x) for x in xs])
    assert_matches(got, reference(fn, xs, compute, result), result, exact)


def cases(table):
    return [(n, dt) for n in sorted(table) for dt in DOMAIN[table[n][0]]]


@pytest.mark.parametrize("name,dt", cases(UNARY))
def test_unary(name, dt, rng):
    if name == "sign" and kind(dt) == "c":
        pytest.skip("tested in test_complex_sign (NumPy 2 definition)")
    run_case(name, UNARY, rng, dt)


@pytest.mark.parametrize("name,dt", cases(BINARY))
def test_binary(name, dt, rng):
    if name == "nextafter" and dt == "bfloat16":
        pytest.skip("NumPy has no bfloat16 nextafter; see test_nextafter_bfloat16")
    run_case(name, BINARY, rng, dt)


@pytest.mark.parametrize("name", sorted(set(BINARY) - {"nextafter"}))
def test_binary_mixed_dtypes_promote(name, rng):
    # int8 with float32 (and weak Python scalars) promote as the Array API says; conversions
    # happen inside the kernel.
    domain, res, fn, exact = BINARY[name]
    if domain in ("int", "int_or_bool"):
        a, b = rand(rng, (33,), "int8", small=True), rand(rng, (33,), "int32", small=True)
        a, b = np.abs(a), np.abs(b)
        compute = "int32"
    else:
        a, b = rand(rng, (33,), "int8", small=True), rand(rng, (33,), "float32", small=True)
        compute = "float32"
        if name in ("floor_divide", "remainder"):
            b[b == 0] = 1
    if domain == "logical":
        compute = "bool"
    result = result_dtype(res, compute)
    got = getattr(gp, name)(gp.asarray(a), gp.asarray(b))
    assert_matches(got, reference(fn, [a, b], compute, result), result, exact)
    # A weak Python scalar takes the array's dtype.
    got = getattr(gp, name)(gp.asarray(b), 3)
    assert_matches(got, reference(fn, [b, np.full_like(b, 3)], compute, result), result, exact)


def test_complex_sign(rng):
    for dt in COMPLEX:
        x = rand(rng, (50,), dt)
        x[:6] = np.array([0, np.inf, -np.inf * 1j, np.nan, complex(np.inf, np.inf), 3 + 4j])
        got = host(gp.sign(gp.asarray(x)))
        with np.errstate(all="ignore"):
            mag = np.abs(x[6:])
        np.testing.assert_allclose(got[6:], x[6:] / mag, rtol=RTOL[dt])
        expected_special = [0, 1, -1j, np.nan * (1 + 1j), np.nan * (1 + 1j), 0.6 + 0.8j]
        np.testing.assert_allclose(got[:6], np.array(expected_special, dtype=dt), rtol=RTOL[dt])


def test_nextafter_bfloat16():
    x = np.array([0.0, -0.0, 1.0, 1.0, -1.0, np.inf, 3.0, np.nan], dtype=BF16)
    y = np.array([1.0, -1.0, 2.0, 0.0, -2.0, 0.0, 3.0, 1.0], dtype=BF16)
    bits = host(gp.nextafter(gp.asarray(x), gp.asarray(y))).view(np.uint16)
    # One bfloat16 ulp each way (sign-magnitude bits), the smallest subnormal from zero.
    expected = [0x0001, 0x8001, 0x3F81, 0x3F7F, 0xBF81, 0x7F7F, 0x4040]
    assert list(bits[:7]) == expected
    assert np.isnan(host(gp.nextafter(gp.asarray(x), gp.asarray(y))).astype(np.float32)[7])


@pytest.mark.parametrize("dt", SIGNED + ["uint8", "uint64"])
def test_integer_division_by_zero_and_overflow(dt):
    info = np.iinfo(dt)
    a = np.array([7, -7 if info.min < 0 else 9, info.min, info.max, 0], dtype=dt)
    b = np.zeros_like(a)
    ga, gb = gp.asarray(a), gp.asarray(b)
    assert host(gp.floor_divide(ga, gb)).tolist() == [0] * 5
    assert host(gp.remainder(ga, gb)).tolist() == [0] * 5
    if info.min < 0:
        m1 = gp.asarray(np.full_like(a, -1))
        with np.errstate(all="ignore"):
            assert host(gp.floor_divide(ga, m1)).tolist() == np.floor_divide(a, -1).tolist()
        assert host(gp.remainder(ga, m1)).tolist() == [0] * 5


def test_integer_pow_negative_exponent():
    base = gp.asarray(np.array([2, 1, -1, -1, 0, 5], dtype=np.int32))
    exp = gp.asarray(np.array([-1, -5, -3, -2, -1, 0], dtype=np.int32))
    assert host(gp.pow(base, exp)).tolist() == [0, 1, -1, 1, 0, 1]
    assert host(gp.pow(gp.asarray(np.array([3], np.int8)), 5)).tolist() == [np.int8(243 - 256)]


def test_complex_functions_special_values():
    z = np.array([0j, complex(-0.0, 0), complex(np.inf, 0), complex(-np.inf, 0)], np.complex128)
    g = gp.asarray(z)
    np.testing.assert_array_equal(host(gp.exp(g)), np.exp(z))
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(host(gp.log(g)), np.log(z))
    np.testing.assert_array_equal(host(gp.sqrt(g)), np.sqrt(z))
    w = np.array([2, 0.5 + 1j, -3, 0], np.complex128)
    base = np.array([1 + 1j, 2 - 1j, 0.5j, 0], np.complex128)
    np.testing.assert_allclose(host(gp.pow(gp.asarray(base), gp.asarray(w))), base**w, rtol=1e-12)


EXACT_FLOAT_BINARY = sorted(
    n
    for n, (d, r, f, exact) in BINARY.items()
    if exact and d in ("real_inexact", "real", "all", "real_or_bool")
)


@pytest.mark.parametrize("name", EXACT_FLOAT_BINARY)
@pytest.mark.parametrize("dt", ["float16", "float32", "float64"])
def test_special_value_pairs(name, dt):
    # Every pair of special values, against NumPy (the random tests only pair them diagonally).
    sp = np.array(SPECIAL, dtype=np.float64)
    with np.errstate(over="ignore"):  # 1e30 is inf in float16
        a, b = (v.astype(npdt(dt)) for v in np.meshgrid(sp, sp))
    _, res, fn, _ = BINARY[name]
    got = host(getattr(gp, name)(gp.asarray(a), gp.asarray(b)))
    with np.errstate(all="ignore"):
        expected = fn(a, b)
    if name in ("maximum", "minimum"):
        zeros = (a == 0) & (b == 0)  # which zero: see test_maximum_minimum_zeros_and_nan
        got, expected = got[~zeros], expected[~zeros]
    if name == "nextafter":
        same = a == b  # the Array API returns x2 (NumPy's float16 loop returns x1)
        got, expected = got[~same], expected[~same]
    np.testing.assert_array_equal(got, expected)
    if got.dtype.kind == "f":
        keep = ~np.isnan(expected)
        np.testing.assert_array_equal(np.signbit(got[keep]), np.signbit(expected[keep]))


@pytest.mark.parametrize("dt", FLOATS)
def test_maximum_minimum_zeros_and_nan(dt):
    a = np.array([0.0, -0.0, np.nan, 1.0, np.nan], dtype=npdt(dt))
    b = np.array([-0.0, 0.0, 1.0, np.nan, np.nan], dtype=npdt(dt))
    ga, gb = gp.asarray(a), gp.asarray(b)
    mx = as_wide(host(gp.maximum(ga, gb)))
    mn = as_wide(host(gp.minimum(ga, gb)))
    assert list(np.signbit(mx[:2])) == [False, False]
    assert list(np.signbit(mn[:2])) == [True, True]
    assert np.isnan(mx[2:]).all() and np.isnan(mn[2:]).all()


# ---- where and clip ----


@pytest.mark.parametrize("dt", ALL)
def test_where(dt, rng):
    c = rng.random((5, 1, 4)) < 0.5
    x = rand(rng, (3, 4), dt)
    y = rand(rng, (5, 3, 1), dt)
    got = gp.where(gp.asarray(c), gp.asarray(x), gp.asarray(y))
    expected = np.where(c, x, y)
    assert str(got.dtype) == dt
    np.testing.assert_array_equal(as_wide(host(got)), as_wide(expected))


def test_where_condition_conversion_and_scalars(rng):
    c = np.array([0, 2, -1, 0], np.int16)  # converted to bool (nonzero is true)
    x = np.arange(4, dtype=np.float32)
    got = gp.where(gp.asarray(c), gp.asarray(x), 7)
    np.testing.assert_array_equal(host(got), np.where(c != 0, x, np.float32(7)))
    assert got.dtype == gp.float32
    # Both values Python scalars: the scalars' default dtype.
    got = gp.where(gp.asarray(c), 1.5, 2)
    assert got.dtype == gp.float32
    np.testing.assert_array_equal(host(got), [2, 1.5, 1.5, 2])
    got = gp.where(gp.asarray(c), gp.asarray(np.int8([1, 2, 3, 4])), gp.asarray(x))
    assert got.dtype == gp.float32


@pytest.mark.parametrize("dt", REAL_OR_BOOL)
def test_clip(dt, rng):
    x = rand(rng, (6, 7), dt, small=True)
    lo = rand(rng, (7,), dt, small=True)
    hi = rand(rng, (6, 1), dt, small=True)
    got = gp.clip(gp.asarray(x), gp.asarray(lo), gp.asarray(hi))
    wide = [as_wide(v) for v in (x, lo, hi)]
    expected = np.minimum(np.maximum(wide[0], wide[1]), wide[2]).astype(as_wide(x).dtype)
    assert str(got.dtype) == dt
    np.testing.assert_array_equal(as_wide(host(got)), expected)


def test_clip_uint64_bounds_and_bound_dtypes():
    big = 2**63
    x = gp.asarray(np.array([0, 5, big + 100, 2**64 - 1], np.uint64))
    assert host(gp.clip(x, None, big + 5)).tolist() == [0, 5, big + 5, big + 5]
    assert host(gp.clip(x, big + 5, None)).tolist() == [big + 5, big + 5, big + 100, 2**64 - 1]
    assert host(gp.clip(x, -1, 2**70)).tolist() == host(x).tolist()
    i8 = gp.asarray(np.int8([1, 2, 3]))
    with pytest.raises(TypeError, match="clip: a int16 bound for a int8 array"):
        gp.clip(i8, gp.asarray(np.int16([300])), None)
    with pytest.raises(TypeError, match="clip: a float32 bound for a int32 array"):
        gp.clip(gp.asarray(np.int32([0, 1])), gp.asarray(np.float32([0.5])), None)
    # Bounds that promote to x's dtype are fine.
    f = gp.asarray(np.float32([0.25, 2.0]))
    assert host(gp.clip(f, gp.asarray(np.int8([1])), None)).tolist() == [1.0, 2.0]


def test_clip_bounds():
    x = gp.asarray(np.array([-128, -5, 0, 5, 120], np.int8))
    assert host(gp.clip(x, -3, 3)).tolist() == [-3, -3, 0, 3, 3]
    assert host(gp.clip(x, min=0)).tolist() == [0, 0, 0, 5, 120]
    assert host(gp.clip(x, max=0)).tolist() == [-128, -5, 0, 0, 0]
    # Python integer bounds beyond int8 clamp to its range.
    assert host(gp.clip(x, -1000, 1000)).tolist() == host(x).tolist()
    assert host(gp.clip(x, 1000, None)).tolist() == [127] * 5
    f = gp.asarray(np.array([np.nan, -np.inf, 0.5, np.inf], np.float32))
    np.testing.assert_array_equal(host(gp.clip(f, 0, 1)), [np.nan, 0, 0.5, 1])
    np.testing.assert_array_equal(host(gp.clip(f)), host(f))
    with pytest.raises(TypeError, match="clip: a Python float bound for a int8 array"):
        gp.clip(x, 0.5, 2)
    with pytest.raises(TypeError, match="clip: complex"):
        gp.clip(gp.asarray(np.array([1j])), 0, 1)


# ---- layouts ----


@pytest.mark.parametrize("name", ["add", "atan2", "maximum", "less"])
@pytest.mark.parametrize("dt", ["float32", "bfloat16", "int16"])
def test_layouts(name, dt, rng):
    domain, res, fn, exact = BINARY[name]
    compute = compute_dtype(domain, dt)
    result = result_dtype(res, compute)
    base_a = rand(rng, (6, 10, 9), dt)
    base_b = rand(rng, (9, 10), dt)
    ga, gb = gp.asarray(base_a), gp.asarray(base_b)
    views = [
        (ga[:, ::2, ::-1], gb[::-1, ::2].T, base_a[:, ::2, ::-1], base_b[::-1, ::2].T),  # strided
        (ga[1:, 3], gb[:, 4], base_a[1:, 3], base_b[:, 4]),  # broadcast (5, 9) with (9,)
        (ga[0, 0, 0], gb[1, 1], base_a[0, 0, 0], base_b[1, 1]),  # 0-d
        (ga[:0], gb[0, :9], base_a[:0], base_b[0, :9]),  # empty
    ]
    for x, y, nx, ny in views:
        got = getattr(gp, name)(x, y)
        expected = reference(fn, [nx, ny], compute, result)
        assert_matches(got, expected, result, exact or result == "bool")


@pytest.mark.parametrize("dt", ["float32", "bfloat16", "int8", "float64", "complex128"])
def test_broadcast_rows_and_columns(dt, rng):
    # Last dimensions that move in 16-byte runs (CUDA): rows, columns, both, 3-D, mixed dtypes,
    # negative outer strides; and ones that cannot (odd extents, unaligned starts, a transposed
    # operand) and keep element indexing. Exact: add in the operands' own dtype.
    a = rand(rng, (6, 4, 48), dt, small=True)
    row, col = rand(rng, (48,), dt, small=True), rand(rng, (4, 1), dt, small=True)
    ga, grow, gcol = gp.asarray(a), gp.asarray(row), gp.asarray(col)
    cases = [
        (ga, grow, a, row),
        (ga, gcol, a, col),
        (gcol, grow, col, row),
        (ga[::-1, ::2], grow, a[::-1, ::2], row),
        (ga[:, :, 1:], grow[1:], a[:, :, 1:], row[1:]),  # unaligned starts, odd extent
        (ga[:, :, :47], gcol, a[:, :, :47], col),
        (gp.permute_dims(ga, (0, 2, 1))[:, :4], gcol[:, 0], a.transpose(0, 2, 1)[:, :4], col[:, 0]),
        (ga, gp.asarray(np.asarray(row[3])), a, row[3]),  # a 0-d array
    ]
    for x, y, nx, ny in cases:
        want = (nx + ny).astype(nx.dtype)
        np.testing.assert_array_equal(host(x + y), want)
        np.testing.assert_array_equal(host(gp.where(x == y, x, y)), np.where(nx == ny, nx, ny))
    # A bool (1-byte) output beside wider inputs, and an int8 column against a float64 row.
    np.testing.assert_array_equal(host(ga != grow), a != row)
    c8 = rand(rng, (4, 1), "int8", small=True)
    np.testing.assert_array_equal(host(gp.asarray(c8) * grow), c8 * row)


def test_long_contiguous_and_unaligned(rng):
    # Vector loads with a tail, and a view whose start is not 16-byte aligned.
    x = rand(rng, (100_003,), "float32")
    g = gp.asarray(x)
    np.testing.assert_allclose(host(gp.exp(g)), np.exp(x), rtol=1e-5)
    np.testing.assert_allclose(host(gp.exp(g[1:])), np.exp(x[1:]), rtol=1e-5)
    np.testing.assert_array_equal(host(g[3:] + g[:-3]), x[3:] + x[:-3])


# ---- out= and in-place ----


def test_out_and_casting(rng):
    x = rand(rng, (4, 5), "float32")
    out = gp.empty((4, 5), dtype=gp.float64)
    r = gp.sin(gp.asarray(x), out=out)
    np.testing.assert_allclose(host(out), np.sin(x).astype(np.float64), rtol=1e-6)
    np.testing.assert_array_equal(host(r), host(out))  # the result is out's memory
    gp.add(out, 1.0, out=out)
    np.testing.assert_array_equal(host(r), host(out))
    with pytest.raises(TypeError, match="cannot store the float32 result in an out array of"):
        gp.sin(gp.asarray(x), out=gp.empty((4, 5), dtype=gp.int32))
    with pytest.raises(ValueError, match=r"out has shape \(5, 4\)"):
        gp.sin(gp.asarray(x), out=gp.empty((5, 4)))
    # A strided out view.
    big = gp.zeros((4, 10))
    gp.add(gp.asarray(x), 1, out=big[:, ::2])
    np.testing.assert_allclose(host(big)[:, ::2], x + 1)
    assert (host(big)[:, 1::2] == 0).all()


def test_out_overlapping_inputs(rng):
    x = rand(rng, (6, 6), "float32")
    g = gp.asarray(x)
    gp.add(g, g.T, out=g)  # out overlaps an input element-by-element differently
    np.testing.assert_allclose(host(g), x + x.T)
    v = rand(rng, (10,), "int32", small=True)
    g = gp.asarray(v)
    gp.add(g[:-1], 1, out=g[1:])  # shifted overlap
    expected = v.copy()
    expected[1:] = v[:-1] + 1
    np.testing.assert_array_equal(host(g), expected)


def test_broadcast_out_is_rejected():
    z = gp.zeros((1,), dtype=gp.float32)
    b = gp.broadcast_to(z, (8,))
    with pytest.raises(ValueError, match=r"add: out \(shape \(8,\)\) is a broadcast view"):
        b += 1
    with pytest.raises(ValueError, match="broadcast view"):
        gp.add(gp.ones((8,)), 0, out=b)
    assert host(z).tolist() == [0.0]


def test_in_place_operators(rng):
    x = rand(rng, (3, 4), "float32")
    g = gp.asarray(x)
    before = g
    g += 1
    g *= gp.asarray(x)
    g -= 2
    g /= 4
    assert g is before
    np.testing.assert_allclose(host(g), ((x + 1) * x - 2) / 4, rtol=1e-6)
    i = gp.asarray(np.arange(6, dtype=np.int32))
    i //= 4
    i <<= 2
    i |= 1
    np.testing.assert_array_equal(host(i), ((np.arange(6) // 4) << 2) | 1)
    with pytest.raises(TypeError, match="cannot store the float32 result"):
        i += 0.5


def test_operators_map_to_functions(rng):
    a = rand(rng, (5,), "int32", small=True)
    b = rand(rng, (5,), "int32", small=True)
    b[b == 0] = 2
    ga, gb = gp.asarray(a), gp.asarray(b)
    pairs = [
        (ga // gb, a // b),
        (ga % gb, a % b),
        (ga & gb, a & b),
        (ga | gb, a | b),
        (ga ^ gb, a ^ b),
        (ga < gb, a < b),
        (ga <= 2, a <= 2),
        (ga > gb, a > b),
        (ga >= gb, a >= b),
        (ga == gb, a == b),
        (ga != 3, a != 3),
        (abs(ga), np.abs(a)),
        (~ga, ~a),
        (2 ** abs(ga), 2 ** np.abs(a)),
        (7 // gb, 7 // b),
        (7 % gb, 7 % b),
    ]
    for got, expected in pairs:
        np.testing.assert_array_equal(host(got), expected)
    with pytest.raises(TypeError):
        hash(ga)


# ---- bad input ----


@pytest.mark.parametrize(
    "call,match",
    [
        (lambda: gp.bitwise_and(gp.ones(3), gp.ones(3)), "bitwise_and: float32 operands"),
        (lambda: gp.less(gp.asarray(np.array([1j])), 0), "less: complex128 operands"),
        (lambda: gp.subtract(gp.ones(2, dtype=gp.bool), True), "use logical_xor"),
        (lambda: gp.negative(gp.ones(2, dtype=gp.bool)), "use logical_not"),
        (lambda: gp.atan2(gp.asarray(np.array([1j])), 1.0), "atan2: complex128 operands"),
        (lambda: gp.bitwise_left_shift(gp.ones(2), 1), "bitwise_left_shift: float32"),
        (lambda: gp.square(gp.ones(2, dtype=gp.bool)), "square: bool operands"),
        (lambda: gp.floor(gp.asarray(np.array([1j]))), "floor: complex128 operands"),
        (lambda: gp.sin("x"), "sin: expected a GPUArray or a Python scalar, got str"),
    ],
)
def test_type_errors(call, match):
    with pytest.raises(TypeError, match=match):
        call()


def test_shape_and_arity_errors():
    with pytest.raises(ValueError, match="add"):
        gp.add(gp.ones((2, 3)), gp.ones((4,)))
    with pytest.raises(ValueError, match="at least one operand must be an array"):
        gp.add(1, 2)
    with pytest.raises(TypeError):
        gp.sin(gp.ones(3), gp.ones(3))


def test_integer_scalar_out_of_range():
    with pytest.raises(OverflowError, match="add: Python integer 300 out of bounds for int8"):
        gp.add(gp.ones(2, dtype=gp.int8), 300)


@pytest.mark.parametrize("dt", [d for d in INTS if d != "uint64"])
def test_unsigned_and_signed_results_are_exact_for_wide_values(dt, rng):
    x = rand(rng, (64,), dt)
    g = gp.asarray(x)
    np.testing.assert_array_equal(host(abs(g)), np.abs(x))
    np.testing.assert_array_equal(host(gp.sign(g)), np.sign(x))
    np.testing.assert_array_equal(host(gp.square(g)), np.square(x))


def test_readme_example_runs(capsys):
    run_readme_example("## Elementwise functions")
    printed = capsys.readouterr().out
    assert printed.startswith("[-1. -1.  0.  1.  1.  1.  1.] float32 [3.6055"), printed


@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
def test_16_bit_conversions_match_the_cpu_bit_for_bit(dt, cuda):
    # The GPU converts with its cvt instructions, the CPU in software: every 16-bit pattern back
    # to float32, and float32 values at, just below and just above every rounding midpoint.
    patterns = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(npdt(dt))
    wide = patterns.astype(np.float32)
    finite = np.sort(wide[np.isfinite(wide)].astype(np.float64))
    mid = ((finite[:-1] + finite[1:]) / 2).astype(np.float32)
    values = np.concatenate(
        [
            wide,
            mid,
            np.nextafter(mid, np.float32(np.inf)),
            np.nextafter(mid, np.float32(-np.inf)),
            np.array([1e30, -1e30, 7e4, -7e4, 65520, 65519.99, 1e-40, -1e-45], np.float32),
        ]
    )
    cpu = gp.asarray(values, device="cpu").astype(gpdt(dt))
    gpu = gp.asarray(values, device=cuda).astype(gpdt(dt))
    np.testing.assert_array_equal(host(gpu).view(np.uint16), host(cpu).view(np.uint16))
    back_cpu = gp.asarray(patterns, device="cpu").astype(gp.float32)
    back_gpu = gp.asarray(patterns, device=cuda).astype(gp.float32)
    np.testing.assert_array_equal(host(back_gpu).view(np.uint32), host(back_cpu).view(np.uint32))
    # Through a JIT kernel too (a conversion fused into an elementwise function).
    np.testing.assert_array_equal(
        host(
            gp.negative(
                gp.asarray(values, device=cuda),
                out=gp.empty(values.shape, dtype=gpdt(dt), device=cuda),
            )
        ).view(np.uint16),
        host(gp.negative(gp.asarray(values, device="cpu")).astype(gpdt(dt))).view(np.uint16),
    )


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")
@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
@pytest.mark.parametrize("name", ["sin", "cos"])
def test_half_sin_cos_of_every_value(name, dt, rng):
    # Every 16-bit pattern, in order (vectors of neighbouring values) and shuffled (vectors that
    # mix huge values, inf and NaN, which take the library function, with the rest): results are
    # float64's rounded to the format, NaN for inf and NaN.
    bits = np.arange(1 << 16, dtype=np.uint16)
    for order in (bits, rng.permutation(bits)):
        x = order.view(npdt(dt))
        got = host(getattr(gp, name)(gp.asarray(x))).astype(np.float64)
        wide = x.astype(np.float64)
        want = getattr(np, name)(wide).astype(np.float32).astype(npdt(dt)).astype(np.float64)
        finite = np.isfinite(wide)
        assert np.all(np.isnan(got[~finite]))
        fast = finite & (np.abs(wide) <= 105615.0)
        np.testing.assert_array_equal(got[fast], want[fast])
        np.testing.assert_allclose(got[finite & ~fast], want[finite & ~fast], rtol=2.0**-7)

"""The 8-bit float dtypes float8_e4m3fn and float8_e5m2 on the default device: conversions from
every dtype against ml_dtypes bit for bit (rounding, subnormals, overflow to NaN / infinity, NaN),
exchange with NumPy through ml_dtypes, arithmetic through float32, the sign-bit operations,
sorting, promotion, finfo and the products that refuse them."""

import ml_dtypes
import numpy as np
import pytest
from helpers import FLOAT8, host, npdt

import pygpukit as gp

ML = {name: np.dtype(getattr(ml_dtypes, name)) for name in FLOAT8}
MAX = {"float8_e4m3fn": 448.0, "float8_e5m2": 57344.0}


def bits(x):
    return np.asarray(x).view(np.uint8)


def specials():
    """Floats at the formats' edges: zeros, subnormal steps and their midpoints, the largest
    values and the midpoints beyond them, infinities, NaN."""
    v = [0.0, -0.0, 2.0**-9, 2.0**-10, 3 * 2.0**-10, 2.0**-16, 2.0**-17, 2.0**-6, 2.0**-14]
    v += [448.0, 464.0, 465.0, 480.0, 57344.0, 61440.0, 61439.0, 65536.0, 1e30]
    v += [np.inf, np.nan, 1.0625, 1.1875, 3.5, 0.3]
    v = np.array(v, np.float32)
    return np.concatenate([v, -v])


def correctly_rounded(x64, name):
    """float64 -> 8-bit float rounded once (ml_dtypes rounds through float32 first, which
    double-rounds values just past a midpoint): rounding to odd at float32's precision first
    keeps the final rounding to nearest even exact."""
    with np.errstate(invalid="ignore", over="ignore"):
        f = x64.astype(np.float32)
        inexact = np.isfinite(x64) & (f.astype(np.float64) != x64)
        even = (f.view(np.uint32) & 1) == 0
        step = inexact & even & np.isfinite(f)
        toward = np.where(x64[step] > f[step], np.inf, -np.inf).astype(np.float32)
        f[step] = np.nextafter(f[step], toward)
    return f.astype(ML[name])


@pytest.mark.parametrize("name", FLOAT8)
@pytest.mark.parametrize("src", ["float32", "float64", "float16", "bfloat16"])
def test_cast_from_floats_matches_ml_dtypes(rng, name, src):
    x = np.concatenate(
        [
            specials(),
            (rng.standard_normal(20000) * np.exp2(rng.integers(-20, 20, 20000))).astype(np.float32),
        ]
    )
    if src == "float64":  # values between float32 neighbours: no double rounding through float32
        x = x.astype(np.float64) * (1 + 2.0**-30)
    x = x.astype(npdt(src))
    want = x.astype(ML[name]) if src != "float64" else correctly_rounded(x, name)
    got = host(gp.asarray(x).astype(getattr(gp, name)))
    assert got.dtype == ML[name]
    np.testing.assert_array_equal(bits(got), bits(want))


@pytest.mark.parametrize("name", FLOAT8)
def test_cast_from_integers_and_bool(name):
    x = np.array([0, 1, -1, 17, 100, 300, 448, 449, 1000, -70000, 127, -128], np.int64)
    for src in ("int8", "int16", "int32", "int64", "uint8"):
        v = x.astype(src)
        got = host(gp.asarray(v).astype(getattr(gp, name)))
        np.testing.assert_array_equal(bits(got), bits(v.astype(np.float64).astype(ML[name])))
    b = np.array([True, False])
    np.testing.assert_array_equal(
        host(gp.asarray(b).astype(getattr(gp, name))).astype(np.float32), [1.0, 0.0]
    )


@pytest.mark.parametrize("name", FLOAT8)
def test_every_code_converts_out_exactly(name):
    codes = np.arange(256, dtype=np.uint8).view(ML[name])
    x = gp.asarray(codes)  # from NumPy through ml_dtypes
    assert x.dtype == getattr(gp, name)
    np.testing.assert_array_equal(bits(host(x)), np.arange(256))
    for dst in ("float32", "float64", "float16", "bfloat16"):
        got = host(x.astype(getattr(gp, dst)))
        want = codes.astype(npdt(dst))
        np.testing.assert_array_equal(got.astype(np.float64), want.astype(np.float64))
    ints = host(x.astype(gp.int32))
    finite = np.isfinite(codes.astype(np.float32))
    np.testing.assert_array_equal(ints[finite], codes.astype(np.float32)[finite].astype(np.int32))
    np.testing.assert_array_equal(host(x.astype(gp.bool)), codes.astype(np.float32) != 0)


@pytest.mark.parametrize("name", FLOAT8)
def test_between_the_two_formats(name):
    other = [n for n in FLOAT8 if n != name][0]
    codes = np.arange(256, dtype=np.uint8).view(ML[name])
    got = host(gp.asarray(codes).astype(getattr(gp, other)))
    want = codes.astype(np.float32).astype(ML[other])
    np.testing.assert_array_equal(bits(got), bits(want))


@pytest.mark.parametrize("name", FLOAT8)
def test_arithmetic_rounds_once_from_float32(rng, name):
    a = rng.standard_normal(4096).astype(np.float32).astype(ML[name])
    b = (rng.standard_normal(4096) * 4).astype(np.float32).astype(ML[name])
    ga, gb = gp.asarray(a), gp.asarray(b)
    fa, fb = a.astype(np.float32), b.astype(np.float32)
    with np.errstate(all="ignore"):
        cases = {
            "add": (ga + gb, fa + fb),
            "mul": (ga * gb, fa * fb),
            "div": (ga / gb, fa / fb),
            "exp": (gp.exp(ga), np.exp(fa)),
            "sqrt": (gp.sqrt(gp.abs(gb)), np.sqrt(np.abs(fb))),
        }
        for op, (got, want) in cases.items():
            assert got.dtype == getattr(gp, name), op
            np.testing.assert_array_equal(bits(host(got)), bits(want.astype(ML[name])), err_msg=op)
    # Python scalars are weak: the array's dtype stays.
    assert (ga * 2.0).dtype == getattr(gp, name)
    np.testing.assert_array_equal(bits(host(ga * 2.0)), bits((fa * 2.0).astype(ML[name])))


@pytest.mark.parametrize("name", FLOAT8)
def test_sign_bit_operations(name):
    x = specials().astype(ML[name])
    g = gp.asarray(x)
    sign = np.uint8(0x80)
    np.testing.assert_array_equal(bits(host(-g)), bits(x) ^ sign)
    np.testing.assert_array_equal(bits(host(gp.abs(g))), bits(x) & np.uint8(0x7F))
    np.testing.assert_array_equal(host(gp.signbit(g)), (bits(x) & sign) != 0)
    y = gp.copysign(g, gp.asarray(-np.ones(len(x), np.float32).astype(ML[name])))
    np.testing.assert_array_equal(bits(host(y)), bits(x) | sign)
    one = gp.asarray(np.ones(1, np.float32).astype(ML[name]))
    up = gp.nextafter(one, gp.asarray(np.full(1, 2.0, np.float32).astype(ML[name])))
    assert bits(host(up))[0] == bits(host(one))[0] + 1


@pytest.mark.parametrize("name", FLOAT8)
def test_sort_min_max_and_nan(rng, name):
    x = np.concatenate([rng.standard_normal(500) * 50, [np.nan, -0.0, 0.0, -np.inf, np.inf]])
    x = x.astype(np.float32).astype(ML[name])
    g = gp.asarray(x)
    got = host(gp.sort(g)).astype(np.float32)
    want = np.sort(x.astype(np.float32))
    np.testing.assert_array_equal(got, want)
    order = host(gp.argsort(g, stable=True))
    np.testing.assert_array_equal(x.astype(np.float32)[order], want)
    finite = gp.asarray(x[np.isfinite(x.astype(np.float32))])
    assert float(gp.max(finite)) == np.nanmax(
        x.astype(np.float32)[np.isfinite(x.astype(np.float32))]
    )
    assert np.isnan(float(gp.max(g)))  # NaN propagates


@pytest.mark.parametrize("name", FLOAT8)
def test_sum_accumulates_wider(rng, name):
    x = (rng.random(10000) + 0.5).astype(np.float32).astype(ML[name])
    total = float(gp.sum(gp.asarray(x), dtype=gp.float32))
    assert total == pytest.approx(x.astype(np.float64).sum(), rel=1e-5)


def test_promotion_and_finfo():
    e4, e5 = gp.float8_e4m3fn, gp.float8_e5m2
    assert gp.result_type(e4, e5) == gp.float16  # float16 holds both exactly
    assert gp.result_type(e4, gp.int8) == e4  # ml_dtypes' rule, as bfloat16
    assert gp.result_type(e5, gp.int16) == gp.float32
    assert gp.result_type(e4, gp.bfloat16) == gp.bfloat16
    assert gp.result_type(e5, gp.float16) == gp.float16
    assert gp.result_type(e4, gp.complex64) == gp.complex64
    assert gp.isdtype(e4, "real floating")
    for name in FLOAT8:
        f, ref = gp.finfo(getattr(gp, name)), ml_dtypes.finfo(ML[name])
        assert (f.bits, f.eps, f.max, f.min) == (8, float(ref.eps), float(ref.max), float(ref.min))
        assert f.smallest_normal == float(ref.smallest_normal)
        assert f.max == MAX[name]
    assert gp.float8_e4m3fn == "float8_e4m3fn" and gp.float8_e5m2 == ML["float8_e5m2"]
    assert "float8_e4m3fn" not in gp.__array_namespace_info__().dtypes()


def test_repr_and_creation():
    x = gp.asarray([1.0, -2.5, 448.0], dtype=gp.float8_e4m3fn)
    assert x.dtype == gp.float8_e4m3fn
    assert "448" in repr(x) and "float8_e4m3fn" in repr(x)
    z = gp.zeros((2, 3), dtype=gp.float8_e5m2)
    np.testing.assert_array_equal(bits(host(z)), np.zeros((2, 3), np.uint8))
    f = gp.full((4,), 3.0, dtype=gp.float8_e5m2)
    np.testing.assert_array_equal(host(f).astype(np.float32), [3.0] * 4)


def test_products_refuse_8_bit_floats():
    a = gp.ones((4, 4), dtype=gp.float8_e4m3fn)
    for fn in (
        lambda: a @ a,
        lambda: gp.matmul(a, a.astype(gp.float32)),
        lambda: gp.gemm(a, a),
        lambda: gp.linear(a, a),
        lambda: gp.grouped_matmul(a, gp.ones((1, 4, 4), dtype=gp.float8_e4m3fn), [4]),
    ):
        with pytest.raises(TypeError, match="float8_e4m3fn"):
            fn()

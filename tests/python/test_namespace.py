"""The Array API namespace's inspection surface: __array_api_version__, __array_namespace__,
__array_namespace_info__, constants, finfo, iinfo, isdtype, result_type and can_cast, against
NumPy (and ml_dtypes for bfloat16) where it defines the same thing."""

import math

import ml_dtypes
import numpy as np
import pytest
from helpers import ALL, FLOATS, INTS, NATIVE, gpdt, npdt
from hypothesis import example, given, settings
from hypothesis import strategies as st

import pygpukit as gp


def test_version_constants_and_namespace():
    assert gp.__array_api_version__ == "2024.12"
    assert gp.e == math.e and gp.pi == math.pi
    assert math.isinf(gp.inf) and gp.inf > 0
    assert math.isnan(gp.nan)
    assert gp.newaxis is None
    x = gp.zeros((2, 3))
    assert x.__array_namespace__() is gp
    for v in ("2021.12", "2022.12", "2023.12", "2024.12"):
        assert x.__array_namespace__(api_version=v) is gp
    with pytest.raises(ValueError, match="unsupported api_version '2019.01'"):
        x.__array_namespace__(api_version="2019.01")
    check = x[:, gp.newaxis]
    assert check.shape == (2, 1, 3)


@pytest.mark.parametrize("dtype", FLOATS + ["complex64", "complex128"])
def test_finfo_matches_numpy(dtype):
    real = {"complex64": "float32", "complex128": "float64"}.get(dtype, dtype)
    ref = ml_dtypes.finfo(ml_dtypes.bfloat16) if real == "bfloat16" else np.finfo(real)
    for obj in (gpdt(dtype), gp.zeros(2, dtype=gpdt(dtype))):
        f = gp.finfo(obj)
        assert f.bits == ref.bits
        assert f.eps == float(ref.eps)
        assert f.max == float(ref.max)
        assert f.min == float(ref.min)
        assert f.smallest_normal == float(ref.smallest_normal)
        assert f.dtype == gpdt(real)


@pytest.mark.parametrize("dtype", INTS)
def test_iinfo_matches_numpy(dtype):
    ref = np.iinfo(dtype)
    for obj in (gpdt(dtype), gp.zeros(2, dtype=gpdt(dtype))):
        i = gp.iinfo(obj)
        assert (i.bits, i.min, i.max) == (ref.bits, int(ref.min), int(ref.max))
        assert isinstance(i.max, int)
        assert i.dtype == gpdt(dtype)


def test_finfo_iinfo_errors():
    with pytest.raises(TypeError, match="finfo: needs a floating or complex dtype, got int32"):
        gp.finfo(gp.int32)
    with pytest.raises(TypeError, match="iinfo: needs an integer dtype, got float32 \\(use finfo"):
        gp.iinfo(gp.float32)
    with pytest.raises(TypeError, match="iinfo: needs an integer dtype, got bool"):
        gp.iinfo(gp.bool)
    with pytest.raises(TypeError, match="expected a dtype or an array, got the float 1.5"):
        gp.finfo(1.5)
    with pytest.raises(TypeError, match="cannot interpret"):
        gp.iinfo(object())


KINDS = {
    "bool": {"bool"},
    "signed integer": {"int8", "int16", "int32", "int64"},
    "unsigned integer": {"uint8", "uint16", "uint32", "uint64"},
    "real floating": set(FLOATS),
    "complex floating": {"complex64", "complex128"},
}
KINDS["integral"] = KINDS["signed integer"] | KINDS["unsigned integer"]
KINDS["numeric"] = KINDS["integral"] | KINDS["real floating"] | KINDS["complex floating"]


@pytest.mark.parametrize("dtype", ALL)
def test_isdtype(dtype):
    dt = gpdt(dtype)
    for kind, members in KINDS.items():
        assert gp.isdtype(dt, kind) == (dtype in members), kind
    assert gp.isdtype(dt, dt)
    assert gp.isdtype(dt, ("bool", dt))
    other = gp.float32 if dtype != "float32" else gp.int8
    assert not gp.isdtype(dt, other)
    assert gp.isdtype(dt, ("complex floating", "real floating", "integral", "bool"))


def test_isdtype_errors():
    with pytest.raises(ValueError, match="unknown kind 'integer'"):
        gp.isdtype(gp.int8, "integer")
    with pytest.raises(TypeError, match="dtype must be a pygpukit dtype"):
        gp.isdtype("int8", "integral")
    with pytest.raises(TypeError, match="kind must be a dtype, a kind name or a tuple"):
        gp.isdtype(gp.int8, 3)


def test_result_type_and_can_cast_match_numpy_for_native_dtypes():
    for a in NATIVE:
        for b in NATIVE:
            want = np.result_type(np.dtype(a), np.dtype(b)).name
            assert str(gp.result_type(gpdt(a), gpdt(b))) == want, (a, b)
            assert gp.can_cast(gpdt(a), gpdt(b)) == np.can_cast(a, b, casting="safe"), (a, b)
    assert gp.result_type(gp.int8, gp.uint8, gp.int16) == gp.int16
    assert gp.result_type(gp.zeros(2, dtype=gp.int32), gp.float16) == gp.float64
    assert gp.can_cast(gp.zeros(2, dtype=gp.int8), gp.int16)


def test_result_type_bfloat16_and_weak_scalars():
    assert gp.result_type(gp.bfloat16, gp.float16) == gp.float32
    assert gp.result_type(gp.bfloat16, gp.int8) == gp.bfloat16
    assert gp.result_type(gp.bfloat16, gp.float32) == gp.float32
    assert gp.can_cast(gp.bfloat16, gp.float32)
    assert not gp.can_cast(gp.bfloat16, gp.float16)
    assert not gp.can_cast(gp.float16, gp.bfloat16)
    # Python scalars are weak: they raise the kind only, as in the operators.
    assert gp.result_type(gp.int8, 1) == gp.int8
    assert gp.result_type(gp.float16, 1.0) == gp.float16
    assert gp.result_type(gp.int16, 1.0) == (gp.zeros(1, dtype=gp.int16) + 1.0).dtype
    assert gp.result_type(gp.float32, 1j) == gp.complex64
    assert gp.result_type(gp.bool, True) == gp.bool
    with pytest.raises(ValueError, match="needs at least one array or dtype"):
        gp.result_type(1, 2.0)
    with pytest.raises(TypeError, match="cannot interpret"):
        gp.result_type(gp.int8, object())
    with pytest.raises(TypeError, match="expected a dtype or an array"):
        gp.can_cast(1, gp.int8)


_SCALARS = st.one_of(
    st.booleans(),
    st.integers(-100, 100),
    st.floats(-1e3, 1e3, allow_nan=False),
    st.complex_numbers(max_magnitude=1e3, allow_nan=False, allow_infinity=False),
)


@settings(max_examples=150, deadline=None)
@given(a=st.sampled_from(NATIVE), b=st.sampled_from(NATIVE), scalar=_SCALARS)
@example(a="int8", b="bool", scalar=2.4956361901220502e-45)  # rounds to float32's subnormals
@example(a="int8", b="bool", scalar=complex(2.4956361901220502e-45, 2.4956361901220502e-45))
def test_operator_promotion_property(a, b, scalar):
    # Arrays promote as NumPy's result_type; a Python scalar is weak (NEP 50), so only its
    # kind counts. Each real operator result agrees with result_type and with NumPy's value.
    ha = np.arange(1, 4).astype(a)
    hb = np.arange(2, 5).astype(b)
    x, y = gp.asarray(ha), gp.asarray(hb)
    want = np.result_type(ha, hb)
    got = x * y
    assert str(got.dtype) == want.name == str(gp.result_type(x, y)), (a, b)
    np.testing.assert_array_equal(got.get(), (ha * hb).astype(want))
    if a == "bool" and isinstance(scalar, bool):
        return  # bool * bool is and; checked above
    try:
        ref = ha * scalar
    except (OverflowError, TypeError):  # NumPy 2 rejects the scalar for this dtype
        with pytest.raises((OverflowError, TypeError)):
            x * scalar
        return
    want = ref.dtype.name
    if a == "bool" or np.issubdtype(a, np.integer):
        # An integer array with a Python float / complex takes the default float32 /
        # complex64 here (documented; NumPy takes float64 / complex128).
        want = {"float64": "float32", "complex128": "complex64"}.get(want, want)
        if want != ref.dtype.name:  # both operands in that dtype, as NumPy's float32 arrays do
            ref = ha.astype(want) * np.asarray(scalar).astype(want)
    got = x * scalar
    assert str(got.dtype) == want == str(gp.result_type(x, scalar)), (a, scalar)
    np.testing.assert_allclose(got.get(), ref.astype(want), rtol=2e-3)


def test_namespace_info():
    info = gp.__array_namespace_info__()
    caps = info.capabilities()
    assert set(caps) == {"boolean indexing", "data-dependent shapes", "max dimensions"}
    assert caps["max dimensions"] == 64
    assert caps["data-dependent shapes"] is True  # nonzero, unique_*, masks, repeat with counts
    assert caps["boolean indexing"] is True  # masks of any rank, in reads and assignments
    assert info.default_device() == gp.default_device()
    d = info.default_dtypes()
    assert d == {
        "real floating": gp.float32,
        "complex floating": gp.complex64,
        "integral": gp.int64,
        "indexing": gp.int64,
    }
    assert info.default_dtypes(device=gp.default_device()) == d
    all_ = info.dtypes()
    assert list(all_) == ALL and all(all_[n] == gpdt(n) for n in ALL)
    assert list(info.dtypes(kind="real floating")) == FLOATS
    assert list(info.dtypes(kind=("bool", "unsigned integer"))) == ["bool"] + [
        d for d in INTS if d.startswith("u")
    ]
    assert info.devices() == list(gp.devices())
    assert gp.default_device() in info.devices()
    with pytest.raises(ValueError):
        info.dtypes(device="tpu:0")
    assert npdt("bfloat16") == np.dtype(ml_dtypes.bfloat16)

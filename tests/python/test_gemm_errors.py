"""gemm / linear bad input: each error type, and messages that name the op and the offending
shapes / dtypes / values."""

import numpy as np
import pytest
from helpers import COMPLEX, INTS, gpdt

import pygpukit as gp

OPS = {
    "gemm": lambda a, b, **kw: gp.gemm(a, b, **kw),
    # linear takes the weight as (out_features, in_features): the same product as gemm.
    "linear": lambda a, b, **kw: gp.linear(a, gp.matrix_transpose(b), **kw),
}


def ones(shape, dtype="float32"):
    return gp.ones(shape, dtype=gpdt(dtype))


@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize("dtype", INTS + COMPLEX + ["bool"])
def test_non_real_floating_operands(op, dtype):
    a, b = ones((3, 4), dtype), ones((4, 2), dtype)
    with pytest.raises(TypeError, match=op) as e:
        OPS[op](a, b)
    assert dtype in str(e.value)
    assert "float32" in str(e.value)  # names what is supported


@pytest.mark.parametrize("op", list(OPS))
def test_mixed_operands_promote_to_complex(op):
    with pytest.raises(TypeError, match=op):
        OPS[op](ones((3, 4)), ones((4, 2), "complex64"))


@pytest.mark.parametrize(
    "dtype, out",
    [
        ("float32", "float64"),
        ("float32", "float16"),
        ("float32", "bfloat16"),
        ("float64", "float32"),
        ("float16", "bfloat16"),
        ("bfloat16", "float16"),
        ("bfloat16", "float64"),
        ("float32", "int32"),
        ("float16", "complex64"),
    ],
)
def test_bad_out_dtype(dtype, out):
    a, b = ones((3, 4), dtype), ones((4, 2), dtype)
    with pytest.raises(TypeError, match="gemm") as e:
        gp.gemm(a, b, out_dtype=gpdt(out))
    msg = str(e.value)
    assert "out_dtype" in msg and out in msg and dtype in msg, msg


@pytest.mark.parametrize("bad", ["foo", 3, object()], ids=repr)
def test_out_dtype_not_a_dtype(bad):
    with pytest.raises(TypeError, match="gemm"):
        gp.gemm(ones((2, 2)), ones((2, 2)), out_dtype=bad)


@pytest.mark.parametrize(
    "kw",
    [
        {"alpha": float("nan")},
        {"alpha": float("inf")},
        {"beta": float("-inf")},
        {"beta": float("nan")},
    ],
    ids=str,
)
def test_non_finite_alpha_beta(kw):
    a = ones((2, 2))
    with pytest.raises(ValueError, match="gemm") as e:
        gp.gemm(a, a, a, **kw)
    assert "finite" in str(e.value)


@pytest.mark.parametrize("beta", [1.0, -0.5, 1e-30])
def test_beta_without_c(beta):
    a = ones((2, 2))
    with pytest.raises(ValueError, match="gemm") as e:
        gp.gemm(a, a, beta=beta)
    assert "beta" in str(e.value) and "C" in str(e.value)
    gp.gemm(a, a, beta=0.0)  # beta = 0 without C is the plain product


NOT_REAL = ["x", 1j, [1.0], np.complex64(1), np.array([1.0, 2.0])]


@pytest.mark.parametrize("beta", NOT_REAL, ids=repr)
def test_beta_not_a_number(beta):
    a = ones((2, 2))
    with pytest.raises(TypeError, match="gemm: beta"):
        gp.gemm(a, a, a, beta=beta)


@pytest.mark.parametrize("alpha", NOT_REAL + [None], ids=repr)
def test_alpha_not_a_number(alpha):
    a = ones((2, 2))
    with pytest.raises(TypeError, match="gemm: alpha"):
        gp.gemm(a, a, alpha=alpha)


@pytest.mark.parametrize("name", ["alpha", "beta"])
def test_scalar_beyond_double(name):
    a = ones((2, 2))
    with pytest.raises(ValueError, match=f"gemm: {name}"):
        gp.gemm(a, a, a, **{name: 10**400})


@pytest.mark.parametrize("value", [np.float32(0.5), np.float64(2.0), 3, True], ids=repr)
def test_numpy_and_int_scalars_accepted(value):
    a = ones((2, 2))
    got = gp.to_numpy(gp.gemm(a, a, a, alpha=value, beta=value))
    np.testing.assert_allclose(got, np.full((2, 2), 3.0 * float(value)))


@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize("shape", [(), (3,), (1, 2), (2, 1), (4,)], ids=str)
def test_bad_bias_shape(op, shape):
    a, b = ones((3, 4)), ones((4, 2))
    with pytest.raises(ValueError, match=op) as e:
        OPS[op](a, b, bias=ones(shape))
    msg = str(e.value)
    assert "bias" in msg and str(shape) in msg and "2" in msg, msg


@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize("bad", ["foo", "", "RELU", "tanh", "gelu-tanh"])
def test_unknown_activation(op, bad):
    with pytest.raises(ValueError, match=op) as e:
        OPS[op](ones((2, 2)), ones((2, 2)), activation=bad)
    assert f"'{bad}'" in str(e.value) and "relu" in str(e.value)


@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize("bad", [1, True, 0.5, gp.float32, ["relu"]], ids=repr)
def test_activation_not_a_string(op, bad):
    with pytest.raises(TypeError, match=op):
        OPS[op](ones((2, 2)), ones((2, 2)), activation=bad)


@pytest.mark.parametrize(
    "sa, sb",
    [((3,), (4,)), ((2, 3), (4, 5)), ((2, 3), (4,)), ((3,), (4, 5)), ((2, 3, 4), (2, 5, 6))],
    ids=str,
)
def test_gemm_shape_mismatch(sa, sb):
    with pytest.raises(ValueError, match="gemm") as e:
        gp.gemm(gp.zeros(sa), gp.zeros(sb))
    msg = str(e.value)
    assert str(sa) in msg and str(sb) in msg, msg


@pytest.mark.parametrize("sa, sb", [((2, 3, 4), (5, 4, 6)), ((2, 1, 3, 4), (3, 1, 4, 6))], ids=str)
def test_gemm_batch_mismatch(sa, sb):
    with pytest.raises(ValueError, match="gemm") as e:
        gp.gemm(gp.zeros(sa), gp.zeros(sb))
    assert str(sa) in str(e.value) and str(sb) in str(e.value)


@pytest.mark.parametrize("beta", [None, 0.0], ids=repr)
@pytest.mark.parametrize("cshape", [(3, 3), (3,), (3, 1, 2), (2, 3, 2), (4, 1)], ids=str)
def test_c_not_broadcastable(cshape, beta):
    # Checked even with beta = 0, where C is not read.
    a, b = ones((3, 4)), ones((4, 2))
    with pytest.raises(ValueError, match="gemm") as e:
        gp.gemm(a, b, ones(cshape), beta=beta)
    msg = str(e.value)
    assert str(cshape) in msg and "(3, 2)" in msg, msg


@pytest.mark.parametrize("sa, sb", [((), (3,)), ((3,), ()), ((), (2, 2))], ids=str)
def test_zero_dim_operand(sa, sb):
    with pytest.raises(ValueError, match="gemm"):
        gp.gemm(gp.ones(sa), gp.ones(sb))


@pytest.mark.parametrize(
    "xshape, wshape",
    [((2, 3), (4, 5)), ((3,), (4, 5)), ((2, 2, 3), (3, 2)), ((5,), (5,)), ((5,), (2, 2, 5))],
    ids=str,
)
def test_linear_shape_errors(xshape, wshape):
    with pytest.raises(ValueError, match="linear") as e:
        gp.linear(gp.zeros(xshape), gp.zeros(wshape))
    msg = str(e.value)
    assert str(wshape) in msg, msg
    if len(wshape) == 2:  # an in_features mismatch names both shapes
        assert str(xshape) in msg, msg


def test_linear_zero_dim_input():
    with pytest.raises(ValueError, match="linear"):
        gp.linear(gp.ones(()), gp.ones((2, 2)))


@pytest.mark.parametrize("other", [np.ones((2, 2), np.float32), [[1.0, 2.0]], 2.0, None], ids=repr)
def test_non_array_arguments(other):
    a = ones((2, 2))
    with pytest.raises(TypeError, match="gemm"):
        gp.gemm(other, a)
    with pytest.raises(TypeError, match="linear"):
        gp.linear(a, other)
    if other is not None:  # None is "no C" / "no bias"
        with pytest.raises(TypeError, match="gemm"):
            gp.gemm(a, a, other)
        with pytest.raises(TypeError, match="gemm"):
            gp.gemm(a, a, bias=other)
        with pytest.raises(TypeError, match="linear"):
            gp.linear(a, a, other)


def test_keyword_only_options():
    a = ones((2, 2))
    with pytest.raises(TypeError):
        gp.gemm(a, a, a, 2.0)  # alpha is keyword-only
    with pytest.raises(TypeError):
        gp.linear(a, a, None, "relu")  # activation is keyword-only


@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize(
    "kw", [{"precision": "foo"}, {"backend": "cuda"}, {"backend": "SM90"}], ids=str
)
def test_bad_precision_or_backend(op, kw):
    with pytest.raises(ValueError) as e:
        OPS[op](ones((2, 2)), ones((2, 2)), **kw)
    ((name, value),) = kw.items()
    assert name in str(e.value) and f"'{value}'" in str(e.value)


@pytest.mark.parametrize("op", list(OPS))
def test_bad_option_message_names_the_op(op):
    with pytest.raises(ValueError, match=f"^{op}:"):
        OPS[op](ones((2, 2)), ones((2, 2)), precision="foo")


@pytest.mark.parametrize("which", ["c", "bias"])
def test_complex_c_or_bias(which):
    a = ones((2, 2))
    z = gp.asarray(np.full((2, 2) if which == "c" else (2,), 1 + 5j, np.complex64))
    with pytest.raises(TypeError, match="gemm"):
        gp.gemm(a, a, z) if which == "c" else gp.gemm(a, a, bias=z)


def test_different_devices(device):
    others = [d for d in gp.devices() if d != device]
    if not others:
        pytest.skip("only one device")
    a, o = gp.ones((2, 2), device=device), gp.ones((2, 2), device=others[0])
    for f, what in (
        (lambda: gp.gemm(a, o), "device"),
        (lambda: gp.gemm(a, a, o), "C"),
        (lambda: gp.gemm(a, a, bias=gp.ones((2,), device=others[0])), "bias"),
        (lambda: gp.linear(a, o), "device"),
    ):
        with pytest.raises(ValueError, match="gemm|linear") as e:
            f()
        assert what in str(e.value) and str(others[0]) in str(e.value)


def test_errors_leave_no_state(rng):
    # A failed call does not poison the next one (same arrays, valid arguments).
    a = gp.asarray(rng.standard_normal((3, 4)).astype(np.float32))
    b = gp.asarray(rng.standard_normal((4, 2)).astype(np.float32))
    for bad in ({"activation": "x"}, {"beta": 2.0}, {"bias": ones((5,))}, {"alpha": float("nan")}):
        with pytest.raises(ValueError):
            gp.gemm(a, b, **bad)
    got = gp.to_numpy(gp.gemm(a, b, activation="relu"))
    np.testing.assert_allclose(
        got, np.maximum(gp.to_numpy(a) @ gp.to_numpy(b), 0), rtol=1e-5, atol=1e-6
    )

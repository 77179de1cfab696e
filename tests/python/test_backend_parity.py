"""The CPU backend is the correctness oracle: on a machine with CUDA, every op runs on both
backends on the same random inputs and the results must agree (bit-exactly where the op's
semantics are exact, within rounding for matmul)."""

import numpy as np
import pytest
from helpers import ALL, INEXACT

import pygpukit as gp

pytestmark = pytest.mark.gpu


@pytest.fixture(autouse=True)
def _need_cuda():
    if not gp.runtime_info()["cuda_available"]:
        pytest.skip("needs a CUDA device")


def host(x):
    if x.dtype == gp.bfloat16:
        x = x.astype(gp.float32)
    return gp.to_numpy(x)


def both(f, *arrays):
    """Runs f on copies of `arrays` on cuda:0 and on cpu; returns the two NumPy results."""
    out = []
    for d in ("cuda:0", "cpu"):
        out.append(host(f(*[gp.asarray(a, device=d) for a in arrays])))
    return out


def assert_same(g, c, exact=True):
    assert g.shape == c.shape and g.dtype == c.dtype
    if exact:
        np.testing.assert_array_equal(g, c)
    else:
        np.testing.assert_allclose(g, c, rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("src", ALL)
@pytest.mark.parametrize("dst", ALL)
def test_astype_matches(src, dst, rng):
    a = (rng.standard_normal((7, 9)) * 50).astype(np.float64)
    # NaN / inf / out-of-range values too: float -> int has one defined result on both backends
    # (GPU hardware would saturate; ops/kernels/scalar_ops.h defines the rule).
    a[0, :5] = [np.nan, np.inf, -np.inf, 1e30, -3e9] if src in INEXACT else [0, 1, 2, 3, 4]
    g, c = both(lambda x: x.astype(src).astype(dst)[::2, ::-1], a)
    assert_same(g, c)


@pytest.mark.parametrize(
    "dt", ["int8", "uint16", "int64", "float16", "bfloat16", "float64", "complex64", "complex128"]
)
def test_negative_matches(dt, rng):
    a = rng.standard_normal((6, 5)) * 100
    a[0, :3] = [0.0, np.inf, np.nan]
    g, c = both(lambda x: -(x.astype(dt)[::-1, ::2]), a)
    assert_same(g, c)
    if dt in INEXACT:  # the sign bit itself, NaNs and zeros included, is the same on both
        for part in (np.real, np.imag):
            np.testing.assert_array_equal(np.signbit(part(g)), np.signbit(part(c)))


@pytest.mark.parametrize("dt", ALL)
@pytest.mark.parametrize("op", ["add", "subtract", "multiply", "divide"])
def test_binary_matches(dt, op, rng):
    if dt == "bool" and op == "subtract":
        for d in ("cuda:0", "cpu"):  # both backends reject it the same way
            x = gp.ones((2,), dtype=gp.bool, device=d)
            with pytest.raises(TypeError, match="subtract"):
                x - x
        return
    a = rng.standard_normal((5, 1, 6)) * 20
    b = rng.standard_normal((4, 6)) * 20 + 0.5
    f = {
        "add": lambda x, y: x + y,
        "subtract": lambda x, y: x - y,
        "multiply": lambda x, y: x * y,
        "divide": lambda x, y: x / y,
    }[op]
    g, c = both(lambda x, y: f(x.astype(dt), y.astype(dt).T[::-1].T), a, b)
    assert_same(g, c)
    g, c = both(lambda x: f(x.astype(dt), 3), a)
    assert_same(g, c)


@pytest.mark.parametrize("dt", INEXACT)
def test_matmul_matches(dt, rng):
    a = rng.standard_normal((3, 33, 17))
    b = rng.standard_normal((17, 9))
    g, c = both(lambda x, y: gp.matmul(x.astype(dt).mT.mT, y.astype(dt)), a, b)
    assert_same(g, c, exact=False)


@pytest.mark.parametrize("dt", [d for d in ALL if d not in ("bool", "complex64", "complex128")])
def test_creation_matches(dt):
    for f in (
        lambda d: gp.arange(-7, 50, 3, dtype=dt, device=d),
        lambda d: gp.full((4, 5), 2, dtype=dt, device=d),
        lambda d: (
            gp.arange(0.5, 9.0, 0.75, dtype=dt, device=d)
            if dt in INEXACT
            else gp.ones(3, dtype=dt, device=d)
        ),
    ):
        assert_same(host(f("cuda:0")), host(f("cpu")))


def test_large_strided_copy_matches(rng):
    a = rng.standard_normal((300, 257, 3)).astype(np.float32)
    g, c = both(lambda x: gp.contiguous(gp.permute_dims(x, (2, 0, 1))[:, ::-3]), a)
    assert_same(g, c)

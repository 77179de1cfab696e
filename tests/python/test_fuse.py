"""gp.fuse against the same operations run one by one: identical bits (same typing, intermediates
in their dtypes) for several dtypes and mixes, broadcasting, scalars, and errors."""

import pytest
from helpers import arr, host, rand, run_readme_example

import pygpukit as gp


def same_bits(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape, (a.dtype, b.dtype, a.shape, b.shape)
    assert host(a).tobytes() == host(b).tobytes()


def chain(x, y):
    t = gp.sin(x) * 2 + y / 3
    u = gp.where(x > y, t, gp.exp(-gp.abs(t)))
    return gp.sqrt(gp.abs(u)) - 0.5 * u * u


@pytest.mark.parametrize(
    "dx,dy",
    [
        ("float32", "float32"),
        ("bfloat16", "float32"),
        ("float16", "float16"),
        ("float64", "int32"),
        ("bfloat16", "bfloat16"),
        ("complex64", "float32"),
    ],
)
def test_fused_equals_unfused_bits(dx, dy, rng):
    if dx == "complex64":

        def fn(x, y):
            return gp.exp(x * y) + gp.conj(x) / (y + 2)
    else:
        fn = chain
    x = arr(rand(rng, (7, 33), dx, small=True))
    y = arr(rand(rng, (7, 33), dy, small=True))
    same_bits(gp.fuse(fn)(x, y), fn(x, y))


def test_integer_ops_broadcasting_and_scalars(rng):
    def f(a, b):
        return ((a * 3 + b) // 2) % 7 - (a ^ b) + (a << 2)

    a = arr(rand(rng, (5, 1), "int16", small=True))
    b = arr(rand(rng, (1, 6), "int32", small=True))
    fused = gp.fuse(f)
    same_bits(fused(a, b), f(a, b))
    # A Python scalar argument is a weak scalar, as in the unfused call.
    same_bits(fused(a, 5), f(a, 5))
    # Comparisons and logical functions give bool.
    g = gp.fuse(lambda x, y: gp.logical_and(x > 0, y < 2))
    same_bits(g(a, b), gp.logical_and(a > 0, b < 2))


def test_returning_an_argument_and_strided_inputs(rng):
    ident = gp.fuse(lambda x, y: x)
    x = arr(rand(rng, (4,), "float32"))
    assert ident(x, x) is x
    f = gp.fuse(lambda x, y: x * y + 1)
    big = arr(rand(rng, (8, 10), "float32"))
    view = gp.permute_dims(big, (1, 0))[::2, ::-1]
    same_bits(f(view, 2.0), view * 2.0 + 1)


def test_several_outputs(rng):
    def f(x, y):
        t = x * y
        s = gp.sin(t)
        return s, t > 0, x, t, s

    fused = gp.fuse(f)
    for dx, dy in [("float32", "bfloat16"), ("int16", "float64")]:
        x = arr(rand(rng, (6, 5), dx, small=True))
        y = arr(rand(rng, (5,), dy, small=True))
        got, want = fused(x, y), f(x, y)
        assert isinstance(got, tuple) and len(got) == 5
        for g, w in zip(got, want):
            same_bits(g, w)
        assert got[2] is x and got[0] is got[4]  # an argument as is; a repeated value once
    # A list stays a list; outputs of different shapes (from different arguments) keep them.
    g = gp.fuse(lambda a, b: [a + 1, b * 2, a - b])
    a = arr(rand(rng, (3,), "float32"))
    b = arr(rand(rng, (2, 3), "float32"))
    got = g(a, b)
    assert isinstance(got, list)
    for x, w in zip(got, [a + 1, b * 2, a - b]):
        same_bits(x, w)
    assert got[0].shape == (3,) and got[1].shape == (2, 3)


def test_unused_values_still_raise_and_results_keep_their_devices(rng):
    x = arr(rand(rng, (4,), "float32"))
    y = arr(rand(rng, (5,), "float32"))
    # A value no result uses still raises what the unfused call would.
    with pytest.raises(TypeError, match="bitwise_and"):
        gp.fuse(lambda a: (a & a, a * 2)[1])(x)
    with pytest.raises(ValueError, match="add"):
        gp.fuse(lambda a, b: (a + b, a * 2)[1])(x, y)
    i8 = arr(rand(rng, (4,), "int8", small=True))
    with pytest.raises(OverflowError):
        gp.fuse(lambda a: (a + 300, a * 2)[1])(i8)
    # A namedtuple of results; results on different devices (one kernel each).
    import collections

    Pair = collections.namedtuple("Pair", "lo hi")
    got = gp.fuse(lambda a: Pair(a - 1, a + 1))(x)
    assert isinstance(got, Pair)
    same_bits(got.lo, x - 1)
    same_bits(got.hi, x + 1)
    if gp.runtime_info()["cuda_available"]:
        c = arr(rand(rng, (4,), "float32"), device="cpu")
        g = arr(rand(rng, (4,), "float32"), device="cuda")
        lo, hi = gp.fuse(lambda a, b: (a + 1, b + 1))(c, g)
        assert lo.device.type == "cpu" and hi.device.type == "cuda"
        same_bits(lo, c + 1)
        same_bits(hi, g + 1)
    # Results of one shape sharing an intermediate of another dtype.
    i = arr(rand(rng, (4,), "int16", small=True))
    f = gp.fuse(lambda a, b: (lambda t: (t * 2, t > 0, gp.sin(t)))(a + b))
    for got, want in zip(f(i, x), (lambda t: (t * 2, t > 0, gp.sin(t)))(i + x)):
        same_bits(got, want)


def test_cached_kernels_take_each_calls_scalars_and_dtypes(rng):
    # The generated kernel is kept per dtype signature: new scalar values and new dtypes give
    # the unfused bits every time, and scalar range errors are checked per call.
    f = gp.fuse(lambda a, s: a * s + 1)
    x = arr(rand(rng, (5,), "int8", small=True))
    for s in (2, -3, 7):
        same_bits(f(x, s), x * s + 1)
    with pytest.raises(OverflowError):
        f(x, 300)
    y = arr(rand(rng, (5,), "float32"))
    for s in (0.5, 2.0):
        same_bits(f(y, s), y * s + 1)


def test_functions_bound_before_tracing_are_traced(rng):
    from pygpukit import exp, where

    tanh = gp.tanh
    f = gp.fuse(lambda x: where(x > 0, tanh(x), exp(x)))
    x = arr(rand(rng, (9,), "float32"))
    same_bits(f(x), gp.where(x > 0, gp.tanh(x), gp.exp(x)))


def test_errors(rng):
    x = arr(rand(rng, (3,), "float32"))
    other = arr(rand(rng, (3,), "float32"))
    with pytest.raises(TypeError, match="take their arrays as arguments"):
        gp.fuse(lambda a: a + other)(x)
    with pytest.raises(TypeError, match="must return values computed from its arguments"):
        gp.fuse(lambda a: (a + 1, other))(x)
    with pytest.raises(TypeError, match="at least one value"):
        gp.fuse(lambda a: ())(x)
    with pytest.raises(TypeError, match="bitwise_and: float32 operands are not supported"):
        gp.fuse(lambda a: a & a)(x)
    with pytest.raises(NotImplementedError, match="clip cannot be fused"):
        gp.fuse(lambda a: gp.clip(a, 0, 1))(x)
    with pytest.raises(TypeError, match="must return arrays"):
        gp.fuse(lambda a: a + 1)(1.0)


def test_readme_example_runs(capsys):
    scope = run_readme_example("### `gp.fuse`")
    x = scope["x"]
    expect = 0.5 * x * (1 + gp.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))
    same_bits(scope["gelu"](x), expect)
    assert capsys.readouterr().out.startswith("[-0.0036")


def test_scalar_arithmetic_runs_in_python_and_unused_arguments_do_not_broadcast(rng):
    def f(x, s):
        return x + s * 2 - (s > 1)

    fused = gp.fuse(f)
    for dt, s in [("float16", 1.5), ("int8", 3), ("bfloat16", True)]:
        x = arr(rand(rng, (6,), dt, small=True))
        same_bits(fused(x, s), f(x, s))
    x = arr(rand(rng, (3,), "float32"))
    y = arr(rand(rng, (2, 3), "float32"))
    same_bits(gp.fuse(lambda a, b: a + 1)(x, y), x + 1)
    z = arr(rand(rng, (5,), "float32"))
    same_bits(gp.fuse(lambda a, b: a + 1)(x, z), x + 1)  # shapes that do not broadcast


def test_tracing_limits(rng):
    x = arr(rand(rng, (4,), "float32"))
    with pytest.raises(TypeError, match="truth value of a traced value"):
        gp.fuse(lambda a: a if a > 1 else -a)(x)
    o = gp.zeros((4,), dtype=gp.float32)
    with pytest.raises(NotImplementedError, match="out= cannot be used inside"):
        gp.fuse(lambda a: gp.sin(a, out=o))(x)
    inner = gp.fuse(lambda a: a * 2)
    with pytest.raises(NotImplementedError, match="cannot be called inside a gp.fuse"):
        gp.fuse(lambda a: inner(a) + 1)(x)
    same_bits(gp.fuse(lambda a: +a * 2)(x), x * 2)
    with pytest.raises(ValueError, match="sin: at least one operand must be an array"):
        gp.fuse(lambda a, s: a + gp.sin(s))(x, 1.0)

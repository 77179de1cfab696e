"""gp.ElementwiseKernel against NumPy on both backends (CPU: the host C++ compiler; CUDA: NVRTC):
placeholders, broadcasting, scalars, out= (also overlapping an input), layouts, 16-bit and
complex types, and errors (bad definitions, dtypes, compile errors, a missing compiler)."""

import numpy as np
import pytest
from helpers import arr, check_equal, host, rand, run_readme_example

import pygpukit as gp

AXPB = gp.ElementwiseKernel("float32 x, T y", "T z", "z = x * y + T(1);", "axpb")


def test_placeholders_broadcasting_and_scalars(rng):
    x = rand(rng, (4, 3), "float32")
    y = rand(rng, (3,), "float64")
    check_equal(AXPB(arr(x), arr(y)), x.astype(np.float64) * y + 1)
    # A scalar binds T to the default float dtype (float32).
    check_equal(AXPB(arr(x), 2.5), x * np.float32(2.5) + np.float32(1))
    assert AXPB.name == "axpb" and "T(1)" in AXPB.operation


def test_out_and_in_place(rng):
    x = rand(rng, (5, 6), "float32")
    y = rand(rng, (5, 6), "float32")
    out = gp.empty((5, 6), dtype=gp.float32)
    AXPB(arr(x), arr(y), out=out)
    check_equal(out, x * y + 1)
    with pytest.raises(ValueError, match="broadcast view"):
        AXPB(arr(x[0]), arr(y[0]), out=gp.broadcast_to(out[0], (5, 6)))
    # out may be an input (element for element) or overlap one (a temporary is used).
    g = arr(y)
    AXPB(arr(x), g, out=g)
    check_equal(g, x * y + 1)
    h = arr(y.copy())
    AXPB(arr(x[:, :5]), h[:, 1:], out=h[:, :5])
    expect = y.copy()
    expect[:, :5] = x[:, :5] * y[:, 1:] + 1
    check_equal(h, expect)


def test_strided_and_special_shapes(rng):
    k = gp.ElementwiseKernel("T a, T b", "T c", "c = a > b ? a - b : b - a;", "absdiff")
    a = rand(rng, (6, 8), "int32", small=True)
    b = rand(rng, (8, 6), "int32", small=True)
    check_equal(
        k(arr(a)[::2, ::-1], gp.permute_dims(arr(b), (1, 0))[::2, ::-1]),
        np.abs(a[::2, ::-1] - b.T[::2, ::-1]),
    )
    check_equal(k(arr(np.array(3, np.int32)), arr(np.array(5, np.int32))), np.int32(2))
    check_equal(k(arr(np.zeros((0, 4), np.int32)), 1), np.zeros((0, 4), np.int32))


def test_16_bit_and_complex_types(rng):
    half = gp.ElementwiseKernel(
        "bfloat16 x", "float32 y", "y = 2.0f * static_cast<float>(x);", "twice"
    )
    x = rand(rng, (33,), "bfloat16")
    check_equal(half(arr(x)), x.astype(np.float32) * 2)
    conj = gp.ElementwiseKernel("complex64 z", "complex64 w", "w = complex64(z.re, -z.im);", "cj")
    z = rand(rng, (17,), "complex64")
    check_equal(conj(arr(z)), np.conj(z))
    fn = gp.ElementwiseKernel("float64 x", "float64 y", "y = std::exp(x) + Cast<double>(1);", "e1")
    v = rand(rng, (9,), "float64", small=True)
    np.testing.assert_allclose(host(fn(arr(v))), np.exp(v) + 1, rtol=1e-14)


def test_complex_types_without_complex_parameters(rng):
    k = gp.ElementwiseKernel("float32 x", "float32 y", "y = ExpOp::Apply(complex64(x, 0.0f)).re;")
    x = rand(rng, (5,), "float32", small=True)
    np.testing.assert_allclose(host(k(arr(x))), np.exp(x), rtol=1e-6)


def test_compiler_with_arguments(monkeypatch, rng):
    if gp.default_device().type != "cpu":
        pytest.skip("the host compiler serves the CPU backend")
    monkeypatch.setenv("CXX", "c++ -w")
    k = gp.ElementwiseKernel("float32 x", "float32 y", "y = x + 4.0f;", "cxx_words")
    x = rand(rng, (3,), "float32")
    check_equal(k(arr(x)), x + 4)


def test_definition_errors():
    with pytest.raises(ValueError, match="a parameter is"):
        gp.ElementwiseKernel("float32", "float32 y", "y = 1;")
    with pytest.raises(ValueError, match="unknown type"):
        gp.ElementwiseKernel("float-32 x", "float32 y", "y = x;")
    with pytest.raises(ValueError, match='parameter "x" repeats'):
        gp.ElementwiseKernel("float32 x", "float32 x", "x = x;")
    with pytest.raises(ValueError, match="reserved"):
        gp.ElementwiseKernel("float32 pgk_x", "float32 y", "y = pgk_x;")
    with pytest.raises(ValueError, match="at least one output parameter"):
        gp.ElementwiseKernel("float32 x", "", "x;")
    with pytest.raises(ValueError, match="C identifier"):
        gp.ElementwiseKernel("float32 x", "float32 y", "y = x;", "bad name")


def test_call_errors(rng):
    x = arr(rand(rng, (3,), "float32"))
    with pytest.raises(TypeError, match='axpb: input "x" is float64, the kernel wants float32'):
        AXPB(arr(np.ones(3)), x)
    with pytest.raises(TypeError, match=r"takes 2 inputs \(and optionally its 1 output\), got 1"):
        AXPB(x)
    with pytest.raises(ValueError, match=r'axpb: output "z" has shape \(4,\)'):
        AXPB(x, x, out=gp.empty((4,), dtype=gp.float32))
    with pytest.raises(TypeError, match='output "z" is int32, the kernel wants float32'):
        AXPB(x, x, out=gp.empty((3,), dtype=gp.int32))
    free = gp.ElementwiseKernel("float32 x", "U y", "y = x;", "free")
    with pytest.raises(TypeError, match='the type U of output "y" is not bound'):
        free(x)
    check_equal(free(x, out=gp.zeros((3,), dtype=gp.float64)), host(x).astype(np.float64))
    with pytest.raises(TypeError, match="expected a GPUArray or a Python scalar"):
        AXPB(x, "2")


SPLIT = gp.ElementwiseKernel(
    "T x, float32 s",
    "T lo, T hi, bool neg",
    "lo = x - T(s); hi = x + T(s); neg = x < T(0);",
    "split",
)


def test_several_outputs(rng):
    x = rand(rng, (5, 7), "float64")
    lo, hi, neg = SPLIT(arr(x), 0.5)
    check_equal(lo, x - 0.5)
    check_equal(hi, x + 0.5)
    check_equal(neg, x < 0)
    assert neg.dtype == gp.bool
    # Outputs positionally after the inputs (as in CuPy), or as out=; strided and broadcast.
    big = gp.zeros((5, 14), dtype=gp.float64)
    o = [big[:, ::2], big[:, 1::2], gp.empty((5, 7), dtype=gp.bool)]
    r = SPLIT(arr(x[:, ::-1]), 2.0, *o)
    assert all(a is b for a, b in zip(r, o))
    check_equal(o[0], x[:, ::-1] - 2)
    check_equal(o[1], x[:, ::-1] + 2)
    row = rand(rng, (7,), "float64")
    SPLIT(gp.broadcast_to(arr(row), (5, 7)), 1.0, out=tuple(o))
    check_equal(o[2], np.broadcast_to(row < 0, (5, 7)))
    # An output overlapping an input other than element for element goes through a temporary.
    y = rand(rng, (9,), "float64")
    g = arr(y.copy())
    SPLIT(g[1:], 1.0, g[:-1], gp.empty((8,), dtype=gp.float64), gp.empty((8,), dtype=gp.bool))
    expect = y.copy()
    expect[:-1] = y[1:] - 1
    check_equal(g, expect)
    # Only outputs: their shape, every placeholder bound by them.
    fill = gp.ElementwiseKernel("", "T a, int32 b", "a = T(7); b = 3;", "fill2")
    a, b = fill(out=(gp.empty((2, 3), dtype=gp.float16), gp.empty((2, 3), dtype=gp.int32)))
    check_equal(a, np.full((2, 3), 7, np.float16))
    check_equal(b, np.full((2, 3), 3, np.int32))


def test_given_outputs_can_be_read(rng):
    # Outputs passed in hold their values for the body (as CuPy's references do), in every
    # layout: dense (vectors and the tail), broadcast rows (runs), strided, through a temporary.
    acc = gp.ElementwiseKernel("T x", "T y", "y += x;", "acc")
    for shape in [(37,), (6, 8), (6, 9)]:
        x = rand(rng, shape, "float32", small=True)
        y = rand(rng, shape, "float32", small=True)
        g = arr(y)
        acc(arr(x), g)
        check_equal(g, y + x)
        row = rand(rng, shape[-1:], "float32", small=True)
        g = arr(y)
        acc(gp.broadcast_to(arr(row), shape), g)
        check_equal(g, y + row)
        big = arr(np.zeros((2,) + shape, np.float32) + y)
        acc(arr(x), big[1])
        check_equal(big[1], y + x)
    z = rand(rng, (10,), "float32", small=True)
    g = arr(z)
    acc(g[1:], g[:-1])  # overlapping: computed in a temporary that starts as the output
    expect = z.copy()
    expect[:-1] = z[:-1] + z[1:]
    check_equal(g, expect)


def test_the_element_index_i(rng):
    # `i` is the element's index in C order, in every layout (dense with a tail, broadcast rows,
    # strided outputs); a parameter named i hides it.
    k = gp.ElementwiseKernel("T x", "T y", "y = x + T(i);", "plus_index")
    for shape in [(37,), (6, 8), (5, 3, 4)]:
        x = rand(rng, shape, "float64", small=True)
        idx = np.arange(x.size, dtype=np.float64).reshape(shape)
        check_equal(k(arr(x)), x + idx)
        row = rand(rng, shape[-1:], "float64", small=True)
        check_equal(k(gp.broadcast_to(arr(row), shape)), row + idx)
        out = gp.zeros((2,) + shape, dtype=gp.float64)
        k(arr(x), out[1])
        check_equal(out[1], x + idx)
    own = gp.ElementwiseKernel("int32 i", "int32 y", "y = i * 2;", "own_i")
    check_equal(own(arr(np.array([3, 4], np.int32))), np.array([6, 8], np.int32))


def test_several_outputs_errors(rng):
    x = arr(rand(rng, (4,), "float32"))
    f = gp.empty((4,), dtype=gp.float32)
    b = gp.empty((4,), dtype=gp.bool)
    with pytest.raises(TypeError, match=r"takes 2 inputs \(and optionally its 3 outputs\), got 4"):
        SPLIT(x, 1.0, f, f)
    with pytest.raises(TypeError, match="has 3 outputs, out= gives 2"):
        SPLIT(x, 1.0, out=(f, f))
    with pytest.raises(TypeError, match="both as arguments and as out="):
        SPLIT(x, 1.0, f, gp.empty_like(f), b, out=(f, f, b))
    with pytest.raises(ValueError, match=r'split: outputs "lo" and "hi" \(shape \(4,\)\) may'):
        SPLIT(x, 1.0, f, f, b)
    g = gp.empty((8,), dtype=gp.float32)
    with pytest.raises(ValueError, match='outputs "lo" and "hi" .* may share memory'):
        SPLIT(x, 1.0, g[:4], g[2:6], b)
    # Interleaved outputs share no element.
    SPLIT(x, 1.0, g[::2], g[1::2], b)
    check_equal(g[::2], host(x) - 1)
    check_equal(g[1::2], host(x) + 1)
    with pytest.raises(TypeError, match='split output "hi": expected a GPUArray'):
        SPLIT(x, 1.0, f, 2.0, b)
    with pytest.raises(TypeError, match='output "neg" is float32, the kernel wants bool'):
        SPLIT(x, 1.0, f, gp.empty_like(f), gp.empty_like(f))
    with pytest.raises(ValueError, match='output "hi" has shape \\(5,\\)'):
        SPLIT(x, 1.0, f, gp.empty((5,), dtype=gp.float32), b)


def test_compile_errors_carry_the_log(rng):
    bad = gp.ElementwiseKernel("float32 x", "float32 y", "y = x +* 2;", "broken")
    # The compiler's log names the kernel and cites the offending line.
    with pytest.raises(RuntimeError, match=r"(?s)broken.*x \+\* 2"):
        bad(arr(rand(rng, (3,), "float32")))


def test_missing_host_compiler(monkeypatch, rng):
    if gp.default_device().type != "cpu":
        pytest.skip("the host compiler serves the CPU backend")
    monkeypatch.setenv("CXX", "/nonexistent/c++")
    k = gp.ElementwiseKernel("float32 x", "float32 y", "y = x * 3.0f;", "needs_cxx")
    with pytest.raises(NotImplementedError, match="does not run .set CXX"):
        k(arr(rand(rng, (3,), "float32")))


def test_readme_example_runs(capsys):
    scope = run_readme_example("### `gp.ElementwiseKernel`")
    out = capsys.readouterr().out
    assert out.startswith("[[ 1.  3.  7.]\n [ 4.  9. 16.]] float32"), out
    np.testing.assert_array_equal(host(scope["x"]), np.arange(6).reshape(2, 3) * 2.0 + 1)


def test_host_cache_info_and_clear(tmp_path, monkeypatch, rng):
    if gp.default_device().type != "cpu":
        pytest.skip("the host compiler serves the CPU backend")
    monkeypatch.setenv("PYGPUKIT_CACHE_DIR", str(tmp_path))
    gp.jit.clear_cache()  # forget what earlier tests loaded (and where)
    k = gp.ElementwiseKernel("float32 x", "float32 y", "y = x - 7.0f;", "host_cache")
    x = rand(rng, (3,), "float32")
    before = gp.jit.cache_info()
    check_equal(k(arr(x)), x - 7)
    info = gp.jit.cache_info()
    assert info["host_directory"] == str(tmp_path / "host")
    assert info["host_compiles"] == before["host_compiles"] + 1
    assert info["host_loaded"] >= 1
    objects = list((tmp_path / "host").glob("k-*.bin"))
    assert len(objects) == 1
    # Forgotten in memory: found on disk again, no compile.
    gp.jit.clear_cache()
    check_equal(k(arr(x)), x - 7)
    after = gp.jit.cache_info()
    assert after["host_compiles"] == info["host_compiles"]
    assert after["host_disk_hits"] == info["host_disk_hits"] + 1
    # disk=True deletes the objects: the next call compiles again.
    gp.jit.clear_cache(disk=True)
    assert not list((tmp_path / "host").glob("k-*.bin"))
    check_equal(k(arr(x)), x - 7)
    assert gp.jit.cache_info()["host_compiles"] == info["host_compiles"] + 1

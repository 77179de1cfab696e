"""Argument validation across the API: every bad argument raises the documented built-in
exception (ValueError, TypeError, IndexError, MemoryError, NotImplementedError, RuntimeError,
OverflowError) with a message naming the op and the offending value / shape / dtype; nothing
raises SystemError or crashes the interpreter (checked in child processes where a crash is
possible)."""

import gc

import numpy as np
import pytest
from helpers import run_child

import pygpukit as gp

DOCUMENTED = (
    ValueError,
    TypeError,
    IndexError,
    MemoryError,
    NotImplementedError,
    RuntimeError,
    OverflowError,
)

CUDA = gp.runtime_info()["cuda_available"]


def raises(exc, f, *needles):
    """Calls f, expects `exc`, checks every needle is in the message; returns the message."""
    with pytest.raises(exc) as e:
        f()
    assert not isinstance(e.value, SystemError)
    msg = str(e.value)
    for needle in needles:
        assert needle in msg, f"{needle!r} not in {msg!r}"
    return msg


def _x():
    return gp.zeros((2, 3))


# ---- dtypes ----

# op name -> call with a dtype argument
DTYPE_OPS = {
    "empty": lambda dt: gp.empty((2,), dtype=dt),
    "zeros": lambda dt: gp.zeros((2,), dtype=dt),
    "ones": lambda dt: gp.ones((2,), dtype=dt),
    "full": lambda dt: gp.full((2,), 1, dtype=dt),
    "arange": lambda dt: gp.arange(3, dtype=dt),
    "astype": lambda dt: gp.astype(_x(), dt),
    "astype ": lambda dt: _x().astype(dt),  # the method
    "asarray": lambda dt: gp.asarray([1.0, 2.0], dtype=dt),
    "empty_like": lambda dt: gp.empty_like(_x(), dtype=dt),
    "zeros_like": lambda dt: gp.zeros_like(_x(), dtype=dt),
    "full_like": lambda dt: gp.full_like(_x(), 2, dtype=dt),
}

BAD_DTYPES = [
    "floaty",
    "float128",
    "U5",
    "",
    np.dtype("O"),
    object,
    3,
    np.str_,
    np.dtype("U5"),
    np.dtype("datetime64[s]"),
    {"a": 1},
    1.5,
]


@pytest.mark.parametrize("op", list(DTYPE_OPS))
def test_bad_dtype(op):
    f = DTYPE_OPS[op]
    for dt in BAD_DTYPES:
        raises(TypeError, lambda dt=dt: f(dt), repr(dt))
    # Control: valid spellings of the same argument are accepted.
    for dt, name in (("float64", "float64"), (np.float32, "float32"), ("f8", "float64")):
        assert str(f(dt).dtype) == name


def test_bad_dtype_message_names_op():
    wrong = []
    for op, f in DTYPE_OPS.items():
        for dt in BAD_DTYPES:
            with pytest.raises(TypeError) as e:
                f(dt)
            names = (op.strip(), op.strip().replace("_like", ""))
            if not str(e.value).startswith(tuple(n + ":" for n in names)):
                wrong.append(f"{op.strip()}({dt!r}): {e.value}")
    assert not wrong, "messages not naming the op:\n" + "\n".join(wrong)


@pytest.mark.parametrize(
    "src",
    [
        np.array(["ab", "c"], dtype="U5"),
        np.array([b"x"]),
        np.array([None, 1], dtype=object),
        np.zeros(2, dtype="datetime64[s]"),
        np.zeros(2, dtype=[("a", "i4")]),
        np.zeros(2, "V4"),
        np.zeros(2, np.longdouble) if np.dtype(np.longdouble).itemsize > 8 else np.zeros(2, "m8"),
    ],
    ids=lambda a: a.dtype.str,
)
def test_unsupported_numpy_dtype(src):
    for name, f in (("asarray", gp.asarray), ("from_numpy", gp.from_numpy)):
        msg = raises(TypeError, lambda f=f: f(src))
        assert msg.startswith(("asarray:", f"{name}:")), msg
        # The offending dtype is named (as NumPy spells it).
        names = [n for n in (str(src.dtype), src.dtype.name, src.dtype.str[1:]) if len(n) > 1]
        assert any(n in msg for n in names), (names, msg)


@pytest.mark.parametrize("obj", [["a", "b"], "abc", [b"x"]], ids=repr)
def test_asarray_strings(obj):
    raises(TypeError, lambda: gp.asarray(obj), "asarray")


# ---- shapes ----

SHAPE_OPS = {
    "empty": lambda s: gp.empty(s),
    "zeros": lambda s: gp.zeros(s, dtype=gp.int8),
    "ones": lambda s: gp.ones(s, dtype=gp.float16),
    "full": lambda s: gp.full(s, 2.5),
    "reshape": lambda s: gp.reshape(gp.ones(()), s),
    "broadcast_to": lambda s: gp.broadcast_to(gp.ones(()), s),
}
CREATION = ["empty", "zeros", "ones", "full"]


@pytest.mark.parametrize("op", list(SHAPE_OPS))
@pytest.mark.parametrize("shape", [(-2, 3), (2, -3), (-5,), (-(2**63),), (4, 0, -1)], ids=str)
def test_negative_dims(op, shape):
    msg = raises(ValueError, lambda: SHAPE_OPS[op](shape))
    assert str(shape) in msg or "negative" in msg, msg


@pytest.mark.parametrize("op", list(SHAPE_OPS) + ["permute_dims"])
@pytest.mark.parametrize("entry", [2.0, "2", None, 1j, (2,), np.float64(2), True], ids=repr)
def test_non_int_dims(op, entry):
    if op == "permute_dims":
        raises(TypeError, lambda: gp.permute_dims(_x(), (1, entry)), repr(entry))
    else:
        raises(TypeError, lambda: SHAPE_OPS[op]((2, entry)), repr(entry))


@pytest.mark.parametrize("op", list(SHAPE_OPS))
# Ids without addresses, so that pytest-xdist workers collect the same tests.
@pytest.mark.parametrize(
    "shape",
    [None, 2.5, "ab", {1: 2}, {2, 3}, object()],
    ids=lambda v: "object" if type(v) is object else repr(v),
)
def test_shape_not_a_sequence(op, shape):
    raises(TypeError, lambda: SHAPE_OPS[op](shape), "shape")


@pytest.mark.parametrize("op", list(SHAPE_OPS))
def test_too_many_dims(op):
    f = SHAPE_OPS[op]
    raises(ValueError, lambda: f((1,) * 65), "65", "64")
    assert f((1,) * 64).ndim == 64  # the maximum itself is fine


@pytest.mark.parametrize("op", CREATION + ["broadcast_to"])
@pytest.mark.parametrize(
    "shape",
    [(2**40, 2**40), (2**62, 4), (2**31, 2**31, 2**31), (2**63 - 1,), (3, 2**62)],
    ids=str,
)
def test_absurd_sizes(op, shape):
    with pytest.raises((ValueError, MemoryError)) as e:
        SHAPE_OPS[op](shape)
    assert "too large" in str(e.value) or "memory" in str(e.value), str(e.value)


def test_shape_errors_name_op():
    # The message names the function the caller used (zeros, not the full / empty it is built on).
    bad = [(-2, 3), (2, 2.0), None, (1,) * 65, (2**40, 2**40)]
    wrong = []
    for op, f in SHAPE_OPS.items():
        for shape in bad:
            if op == "reshape" and shape == (2**40, 2**40):
                continue  # a size mismatch there, not a size limit
            with pytest.raises((ValueError, TypeError)) as e:
                f(shape)
            if not str(e.value).startswith(op + ":"):
                wrong.append(f"{op}({shape!r}): {e.value}")
    assert not wrong, "messages not naming the op:\n" + "\n".join(wrong)


@pytest.mark.parametrize("dim", [2**63, 2**64 + 3, 2**70, -(2**63) - 1], ids=str)
def test_dim_beyond_int64(dim):
    # Python ints beyond int64 are out of range for a dimension: ValueError or OverflowError
    # naming the op, never pybind11's internal cast RuntimeError.
    wrong = []
    for op in CREATION + ["broadcast_to"]:
        try:
            SHAPE_OPS[op]((dim,))
            wrong.append(f"{op}: no error")
        except (ValueError, OverflowError) as e:
            if op not in str(e):
                wrong.append(f"{op}: {type(e).__name__}: {e}")
        except Exception as e:
            wrong.append(f"{op}: {type(e).__name__}: {e}")
    assert not wrong, "\n".join(wrong)


# Shapes whose element count passes the shape check (<= 2**62) but whose byte count reaches
# 2**63 or wraps around 2**64.
OVERFLOW_CASES = [
    (shape, dtype)
    for shape in [(2**62,), (2**31, 2**31), (2**61 + 1,), (2**40, 2**21), (2**62 - 1,), (2**61,)]
    for dtype in ["int16", "float32", "float64", "complex64", "complex128"]
    if int(np.prod(shape, dtype=object)) * np.dtype(dtype).itemsize >= 2**63
]


def test_byte_size_overflow_in_child():
    # Each request must fail with ValueError / MemoryError, not wrap around into a tiny buffer;
    # a child process runs them since a wrong answer can corrupt the allocator. (Results are
    # kept alive: freed blocks in the cache would turn a later 2**63-byte request into the
    # crash test_huge_request_with_cached_blocks_in_child checks.)
    proc = run_child(f"""
        import pygpukit as gp
        keep = []
        for shape, dt in {OVERFLOW_CASES!r}:
            try:
                keep.append(gp.empty(shape, dtype=getattr(gp, dt)))
                print(shape, dt, "no error: nbytes", keep[-1].nbytes, flush=True)
            except (ValueError, MemoryError) as e:
                named = "empty" in str(e) or "memory" in str(e)
                print(shape, dt, "ok" if named else "unnamed: " + str(e), flush=True)
            except Exception as e:
                print(shape, dt, "wrong:", type(e).__name__, e, flush=True)
        print("done")
    """)
    lines = proc.stdout.splitlines()
    assert proc.returncode == 0, (proc.returncode, proc.stdout, proc.stderr[-2000:])
    assert lines[-1] == "done", proc.stdout
    bad = [line for line in lines[:-1] if not line.endswith(" ok")]
    assert not bad, "\n".join(bad)


def test_huge_request_with_cached_blocks_in_child():
    # A request of 2**63 bytes (a valid element count) while the allocator caches freed blocks:
    # MemoryError, never a cached small block handed out or a corrupted free list.
    proc = run_child("""
        import pygpukit as gp
        out = []
        for _ in range(5):
            for shape, dt in [((2**61,), gp.float32), ((2**62,), gp.int16),
                              ((2**60,), gp.float64), ((2**59,), gp.complex128)]:
                cached = [gp.zeros(n) for n in (10, 1000, 100000)]
                del cached
                try:
                    y = gp.empty(shape, dtype=dt)
                    out.append(f"no error: {y.shape} {y.dtype} nbytes={y.nbytes}")
                except MemoryError as e:
                    out.append("ok" if str(2**63) in str(e) else "unnamed: " + str(e))
        y = gp.full((1000,), 2.0)
        out.append(str(float(gp.to_numpy(y).sum())))
        print("\\n".join(out))
    """)
    assert proc.returncode == 0, (proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:])
    lines = proc.stdout.splitlines()
    assert lines == ["ok"] * 20 + ["2000.0"], "\n".join(sorted(set(lines)))


# ---- devices ----

DEVICE_OPS = {
    "empty": lambda d: gp.empty((2,), device=d),
    "zeros": lambda d: gp.zeros((2,), device=d),
    "full": lambda d: gp.full((2,), 1.0, device=d),
    "arange": lambda d: gp.arange(3, device=d),
    "asarray": lambda d: gp.asarray([1.0], device=d),
    "asarray ": lambda d: gp.asarray(_x(), device=d),  # a GPUArray source
    "from_numpy": lambda d: gp.from_numpy(np.ones(2), d),
    "to_device": lambda d: _x().to_device(d),
    "empty_like": lambda d: gp.empty_like(_x(), device=d),
    "memory.stats": lambda d: gp.memory.stats(d),
    "device_properties": lambda d: gp.device_properties(d),
    "synchronize": lambda d: gp.synchronize(d),
    "memory.empty_cache": lambda d: gp.memory.empty_cache(d),
}

# device -> (exception types, needle the message must contain)
BAD_DEVICES = {
    "tpu": (ValueError, "'tpu'"),
    "": (ValueError, "''"),
    "CPU": (ValueError, "'CPU'"),
    "cuda:-1": (ValueError, "cuda:-1"),
    "cuda:x": (ValueError, "cuda:x"),
    "cuda:": (ValueError, "cuda:"),
    "cpu:1": (ValueError, "cpu:1"),
    "cuda:99": ((ValueError, RuntimeError), "cuda:99"),
    123: (TypeError, "123"),
    1.5: (TypeError, "1.5"),
    b"cpu": (TypeError, "cpu"),
}


@pytest.mark.parametrize("op", list(DEVICE_OPS))
def test_bad_device(op):
    f = DEVICE_OPS[op]
    for dev, (exc, needle) in BAD_DEVICES.items():
        raises(exc, lambda dev=dev: f(dev), needle)


def test_bad_device_message_names_op():
    wrong = []
    for op, f in DEVICE_OPS.items():
        for dev in ("tpu", 123):
            with pytest.raises((ValueError, TypeError)) as e:
                f(dev)
            if op.strip() not in str(e.value):
                wrong.append(f"{op.strip()}({dev!r}): {e.value}")
    assert not wrong, "messages not naming the op:\n" + "\n".join(wrong)


@pytest.mark.parametrize("spec", ["tpu", "", "cuda:-1", "cuda:x", "cuda:", "cuda:1:2", "gpu:-3"])
def test_device_constructor(spec):
    raises(ValueError, lambda: gp.Device(spec), "device", repr(spec).strip("'") or "''")


def test_device_constructor_non_string():
    raises(TypeError, lambda: gp.Device(123), "Device")


@pytest.mark.parametrize("op", ["empty", "zeros", "asarray", "to_device", "memory.stats"])
def test_cuda_device_availability(op):
    f = DEVICE_OPS[op]
    if CUDA:
        out = f("cuda")
        if isinstance(out, gp.GPUArray):
            assert out.device == gp.Device("cuda:0") and out.device.type == "cuda"
    else:
        for spec in ("cuda", "cuda:0", "gpu"):
            msg = raises(RuntimeError, lambda spec=spec: f(spec), "cuda")
            assert "not available" in msg, msg


def test_cuda_out_of_range_index():
    n = sum(d.type == "cuda" for d in gp.devices())
    for f in (DEVICE_OPS["empty"], DEVICE_OPS["to_device"], DEVICE_OPS["device_properties"]):
        raises((ValueError, RuntimeError), lambda f=f: f(f"cuda:{n}"), f"cuda:{n}")


# ---- out of memory ----


def _settled_allocated_bytes(device):
    # Queued CPU tasks hold their operands until they run: settle them before reading the books.
    gc.collect()
    gp.synchronize(device)
    return gp.memory.stats(device)["allocated_bytes"]


def test_out_of_memory_empty(device):
    before = _settled_allocated_bytes(device)
    msg = raises(MemoryError, lambda: gp.empty((2**45,), dtype=gp.uint8), str(2**45))
    assert str(device) in msg or "memory" in msg, msg
    # The runtime is still usable and nothing leaked.
    assert _settled_allocated_bytes(device) == before
    y = gp.full((1000,), 3.0)
    assert float(gp.to_numpy(y).sum()) == 3000.0


def test_out_of_memory_2d_and_float(device):
    raises(MemoryError, lambda: gp.empty((2**20, 2**22), dtype=gp.float64), str(2**45))
    raises(MemoryError, lambda: gp.empty((2**43,), dtype=gp.complex64, device=device), str(2**46))


def test_out_of_memory_filled_creation_in_child():
    # zeros / ones / full / arange write their result: run them in a child so that an
    # allocation that wrongly succeeds can only kill the child.
    proc = run_child("""
        import pygpukit as gp
        calls = {
            "zeros": lambda: gp.zeros((2**45,), dtype=gp.uint8),
            "ones": lambda: gp.ones((2**44,), dtype=gp.int16),
            "full": lambda: gp.full((2**42,), 1.0, dtype=gp.float64),
            "arange": lambda: gp.arange(2**45, dtype=gp.uint8),
        }
        for name, f in calls.items():
            try:
                f()
                print(name, "no error")
            except MemoryError as e:
                print(name, "MemoryError", "35184372088832" in str(e))
            except Exception as e:
                print(name, type(e).__name__, e)
        print("done")
    """)
    assert proc.returncode == 0, (proc.returncode, proc.stdout, proc.stderr[-2000:])
    lines = proc.stdout.splitlines()
    assert lines[-1] == "done"
    assert lines[:-1] == [f"{n} MemoryError True" for n in ("zeros", "ones", "full", "arange")], (
        proc.stdout
    )


def test_byte_size_overflow_filled_in_child():
    # A byte count that wraps around 2**64 must not give a small buffer that the fill kernel
    # then overruns (heap corruption / segfault).
    proc = run_child("""
        import pygpukit as gp
        calls = [
            lambda: gp.zeros((2**31, 2**31), dtype=gp.complex128),
            lambda: gp.full((2**62,), 1.0, dtype=gp.float32),
            lambda: gp.ones((2**61 + 1,), dtype=gp.float64),
            lambda: gp.arange(0, 2**62, dtype=gp.float64),
        ]
        for f in calls:
            try:
                x = f()
                gp.synchronize()
                print("no error", x.shape, x.nbytes)
            except (ValueError, MemoryError) as e:
                print("ok", type(e).__name__)
            except Exception as e:
                print("wrong", type(e).__name__, e)
        print("done")
    """)
    assert proc.returncode == 0, (proc.returncode, proc.stdout, proc.stderr[-2000:])
    lines = proc.stdout.splitlines()
    assert lines[-1] == "done" and len(lines) == 5, proc.stdout
    assert all(line.startswith("ok ") for line in lines[:-1]), proc.stdout


# ---- functions given non-arrays ----

NON_ARRAY_OPS = {
    "to_numpy": lambda v: gp.to_numpy(v),
    "reshape": lambda v: gp.reshape(v, (2,)),
    "matmul": lambda v: gp.matmul(v, v),
    "astype": lambda v: gp.astype(v, gp.float32),
    "permute_dims": lambda v: gp.permute_dims(v, (0,)),
    "matrix_transpose": lambda v: gp.matrix_transpose(v),
    "broadcast_to": lambda v: gp.broadcast_to(v, (2, 2)),
    "contiguous": lambda v: gp.contiguous(v),
}


@pytest.mark.parametrize("op", list(NON_ARRAY_OPS))
@pytest.mark.parametrize("value", [5, [1, 2], None, np.ones(2, np.float32), "ab"], ids=repr)
def test_non_array_argument(op, value):
    raises(TypeError, lambda: NON_ARRAY_OPS[op](value), op, type(value).__name__)


def test_matmul_non_array_second_operand():
    raises(TypeError, lambda: gp.matmul(gp.ones(2), [1.0, 1.0]), "matmul", "list")


@pytest.mark.parametrize("op", ["empty_like", "zeros_like", "ones_like", "full_like"])
def test_like_non_array(op):
    f = getattr(gp, op)
    for value in ([1, 2], None, 3):
        args = (value, 1) if op == "full_like" else (value,)
        raises(TypeError, lambda args=args: f(*args), op)


# ---- every error is a documented built-in exception ----

# (label, call, expected type)
SWEEP = [
    ("index out of range", lambda: _x()[5], IndexError),
    ("too many indices", lambda: _x()[0, 0, 0], IndexError),
    ("float index", lambda: _x()[1.5], IndexError),
    ("list index out of range", lambda: _x()[[0, 7]], IndexError),
    ("float array index", lambda: _x()[np.array([0.5])], IndexError),
    (
        "int-array assignment shape",
        lambda: _x().__setitem__(np.array([0, 1]), gp.zeros(4)),
        ValueError,
    ),
    ("numpy mask index", lambda: _x()[np.array([True, False, True])], IndexError),
    ("mask past the last axis", lambda: _x()[0, np.ones((3, 2), bool)], IndexError),
    ("setitem bad value", lambda: _x().__setitem__(0, "a"), TypeError),
    ("setitem bad shape", lambda: _x().__setitem__(0, gp.zeros(4)), ValueError),
    ("setitem overflow", lambda: gp.zeros(2, dtype=gp.int8).__setitem__(0, 300), OverflowError),
    ("add shapes", lambda: _x() + gp.zeros(4), ValueError),
    ("add str", lambda: _x() + "a", TypeError),
    ("add overflow", lambda: gp.zeros(2, dtype=gp.uint8) + 256, OverflowError),
    ("bool negate", lambda: -gp.zeros(2, dtype=gp.bool), TypeError),
    ("item of many", lambda: _x().item(), ValueError),
    ("float of many", lambda: float(_x()), ValueError),
    ("bool of many", lambda: bool(_x()), ValueError),
    ("reshape size", lambda: _x().reshape(4), ValueError),
    ("reshape two -1", lambda: _x().reshape(-1, -1), ValueError),
    ("permute bad axis", lambda: gp.permute_dims(_x(), (0, 2)), (ValueError, IndexError)),
    ("permute repeated", lambda: gp.permute_dims(_x(), (0, 0)), ValueError),
    ("broadcast_to bad", lambda: gp.broadcast_to(_x(), (3, 3)), ValueError),
    ("full bad value", lambda: gp.full(2, "a"), TypeError),
    ("full overflow", lambda: gp.full(2, 2**64), OverflowError),
    ("arange zero step", lambda: gp.arange(0, 5, 0), ValueError),
    ("arange nan", lambda: gp.arange(float("nan")), ValueError),
    ("asarray copy=False", lambda: gp.asarray([1.0, 2.0], copy=False), ValueError),
    ("asarray object", lambda: gp.asarray(object()), TypeError),
    ("asarray huge int", lambda: gp.asarray(2**70), (TypeError, OverflowError)),
    (
        "matmul ints",
        lambda: gp.ones((2, 2), dtype=gp.int32) @ gp.ones((2, 2), dtype=gp.int32),
        TypeError,
    ),
    ("matmul shapes", lambda: gp.ones((2, 3)) @ gp.ones((2, 3)), ValueError),
    ("matmul 0-d", lambda: gp.ones(()) @ gp.ones(()), ValueError),
    ("matmul precision", lambda: gp.matmul(_x(), _x().T, precision="x"), ValueError),
    ("empty dtype", lambda: gp.empty(2, dtype="x"), TypeError),
    ("empty shape", lambda: gp.empty(-1), ValueError),
    ("empty too large", lambda: gp.empty((2**40, 2**40)), ValueError),
    ("device", lambda: gp.empty(2, device="tpu"), ValueError),
    ("device type", lambda: gp.empty(2, device=1), TypeError),
    ("to_numpy", lambda: gp.to_numpy(1), TypeError),
]


@pytest.mark.parametrize("label, f, exc", SWEEP, ids=[s[0] for s in SWEEP])
def test_error_types(label, f, exc):
    with pytest.raises(DOCUMENTED) as e:
        f()
    assert not isinstance(e.value, SystemError)
    assert isinstance(e.value, exc), f"{label}: {type(e.value).__name__}: {e.value}"
    assert str(e.value), label


def test_error_sweep_in_child_does_not_crash():
    # The same kind of bad calls, plus a few that touch memory, in a fresh process: none may
    # crash it or raise anything but the documented exceptions.
    proc = run_child("""
        import numpy as np
        import pygpukit as gp
        DOC = (ValueError, TypeError, IndexError, MemoryError, NotImplementedError,
               RuntimeError, OverflowError)
        x = gp.zeros((3, 4))
        calls = [
            lambda: x[10], lambda: x[:, 7], lambda: x[..., ...], lambda: x[None, 5],
            lambda: x.reshape(5), lambda: gp.broadcast_to(x, (4, 3)),
            lambda: gp.permute_dims(x, (1, 1)), lambda: gp.permute_dims(x, (5, 0)),
            lambda: x @ x, lambda: x[0] @ x[0, :3], lambda: gp.matmul(x, x.T, backend="x"),
            lambda: gp.empty((2**40, 2**40)), lambda: gp.empty((2**45,), dtype=gp.uint8),
            lambda: gp.zeros((2**45,), dtype=gp.uint8), lambda: gp.empty(2**70),
            lambda: gp.asarray(np.array(["a"])), lambda: gp.asarray([1, None]),
            lambda: gp.full((2,), 300, dtype=gp.int8), lambda: gp.arange(0, 1, 0.0),
            lambda: gp.arange(2**63 - 1), lambda: gp.arange(-(2**63), 2**63 - 1),
            lambda: x.to_device("cuda:99"), lambda: gp.to_numpy(None),
            lambda: gp.zeros(3, dtype=gp.uint8) - 300, lambda: x + gp.zeros((2, 3, 5)),
            lambda: x.__setitem__((slice(None), 0), gp.zeros(4)),
            lambda: gp.reshape(x, (2**62, 2**62)), lambda: gp.broadcast_to(x, (2**62, 3, 4)),
        ]
        for i, f in enumerate(calls):
            try:
                f()
                print(i, "no error")
            except DOC as e:
                if isinstance(e, SystemError):
                    print(i, "SystemError", e)
            except BaseException as e:
                print(i, "undocumented", type(e).__name__, e)
        print("done")
    """)
    assert proc.returncode == 0, (proc.returncode, proc.stdout, proc.stderr[-2000:])
    assert proc.stdout.strip() == "done", proc.stdout

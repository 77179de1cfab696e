# Over 600 lines on purpose: one suite per module, sharing its fixtures and reference helpers;
# a topic moves to its own file once it needs none of them.
"""Crashes, hangs, wrong results and isolation holes a bad-input probe found (issue 31), one
test each; cases that could crash or hang the interpreter run in a child process."""

import json
import textwrap

import numpy as np
import pytest
from helpers import run_child

import pygpukit as gp

# Every pybind11 class of the extension module and its submodules (also run in children).
_WALK = """
import inspect


def bound_classes(root):
    seen, out = set(), []

    def walk(mod):
        for name in dir(mod):
            o = getattr(mod, name)
            if inspect.ismodule(o) and o.__name__.startswith(root.__name__) and o not in seen:
                seen.add(o)
                walk(o)
            elif isinstance(o, type) and type(o).__name__ == "pybind11_type" and o not in out:
                out.append(o)

    walk(root)
    return out
"""
exec(_WALK)


def test_every_bound_class_is_found():
    names = {c.__name__ for c in bound_classes(gp._core)}  # noqa: F821 - defined by _WALK
    assert {"GPUArray", "Event", "Stream", "Scheduler", "Task", "Quota", "Records"} <= names


# ---- objects made without __init__ ----


def test_uninitialized_objects_raise_type_error():
    # Every method and property of every bound class, on an object made with __new__ alone, with
    # a few argument shapes: TypeError naming the class, never a crash or a garbage value.
    proc = run_child(
        _WALK
        + textwrap.dedent(
            """
        import json
        import pygpukit as gp
        classes = bound_classes(gp._core)
        skip = {"__new__", "__init__", "__class__", "__init_subclass__", "__subclasshook__",
                "__getattribute__", "__setattr__", "__delattr__", "__dir__", "__reduce_ex__",
                "__reduce__", "__format__", "__sizeof__", "__getstate__", "__hash__", "__eq__",
                "__ne__"}
        checked, wrong = 0, []
        for c in classes:
            for attr in sorted(set(dir(c)) - skip):
                o = c.__new__(c)
                calls = [lambda: getattr(o, attr)]
                if callable(getattr(c, attr, None)):
                    calls = [lambda a=a: getattr(o, attr)(*a)
                             for a in [(), (1,), (o,), (gp.ones((2,)),), ("x", 2)]]
                for call in calls:
                    try:
                        call()
                    except TypeError as e:
                        if "not initialized" in str(e) and c.__name__ not in str(e):
                            wrong.append(f"{c.__name__}.{attr}: {e}")
                    except Exception as e:
                        wrong.append(f"{c.__name__}.{attr}: {type(e).__name__}: {e}")
                    checked += 1
        # Used as arguments of other functions too.
        y = gp.GPUArray.__new__(gp.GPUArray)
        for f in [lambda: gp.ones((3,)) + y, lambda: gp.sum(y), lambda: y + 1,
                  lambda: gp.matmul(y, y), lambda: gp.asarray(y)]:
            try:
                f()
                wrong.append("accepted an uninitialized array")
            except TypeError as e:
                if "GPUArray object is not initialized" not in str(e):
                    wrong.append(str(e))
        print(json.dumps({"checked": checked, "wrong": wrong}))
        """
        )
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["checked"] > 500
    assert result["wrong"] == []


@pytest.mark.parametrize("name", ["GPUArray", "Event", "Stream"])
def test_uninitialized_object_message(name):
    obj = getattr(gp, name).__new__(getattr(gp, name))
    with pytest.raises(TypeError, match=f"{name} object is not initialized"):
        if name == "GPUArray":
            obj.shape  # noqa: B018 - the property is the use
        elif name == "Event":
            obj.record()
        else:
            with obj:
                pass


# ---- the host JIT's disk cache ----


@pytest.mark.parametrize("damage", ["truncate", "empty", "random", "foreign", "flip"])
def test_damaged_host_jit_entries_are_recompiled(tmp_path, damage):
    if gp.default_device().type != "cpu":
        pytest.skip("the host compiler serves the CPU backend")
    # The first child fills the cache; the entry is damaged; a second child must neither crash
    # (a truncated shared object killed it with SIGBUS) nor load the damaged bytes.
    code = """
        import json, numpy as np, pygpukit as gp
        x = gp.asarray(np.arange(5, dtype=np.float32))
        a = gp.ElementwiseKernel("T x", "T y", "y = x*3;", "k")(x).get().tolist()
        b = gp.ElementwiseKernel("T x", "T y", "y = x+4;", "other")(x).get().tolist()
        print(json.dumps([a, b, gp.jit.cache_info()]))
    """
    env = {"PYGPUKIT_CACHE_DIR": str(tmp_path)}
    first = run_child(code, env=env)
    assert first.returncode == 0, first.stderr
    entries = sorted((tmp_path / "host").glob("k-*.bin"), key=lambda p: p.stat().st_mtime_ns)
    assert len(entries) == 2
    target, other = entries
    data = target.read_bytes()
    if damage == "truncate":
        target.write_bytes(data[: len(data) // 2])
    elif damage == "empty":
        target.write_bytes(b"")
    elif damage == "random":
        target.write_bytes(np.random.default_rng(0).bytes(len(data)))
    elif damage == "foreign":
        target.write_bytes(other.read_bytes())  # another source's intact entry
    else:
        flipped = bytearray(data)
        flipped[len(data) * 3 // 4] ^= 0x40  # one bit inside the shared object
        target.write_bytes(bytes(flipped))
    second = run_child(code, env=env)
    assert second.returncode == 0, second.stderr
    a, b, info = json.loads(second.stdout.strip().splitlines()[-1])
    assert a == [0.0, 3.0, 6.0, 9.0, 12.0] and b == [4.0, 5.0, 6.0, 7.0, 8.0]
    assert info["host_rejected_entries"] == 1
    assert info["host_compiles"] == 1 and info["host_disk_hits"] == 1
    # The entry was replaced by an intact one: a third run loads both from disk.
    third = run_child(code, env=env)
    info = json.loads(third.stdout.strip().splitlines()[-1])[2]
    assert (info["host_compiles"], info["host_disk_hits"], info["host_rejected_entries"]) == (
        0,
        2,
        0,
    )


# ---- malformed DLPack capsules ----

_DLPACK = """
import ctypes


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [
        ("major", ctypes.c_uint32),
        ("minor", ctypes.c_uint32),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", ctypes.c_void_p),
        ("flags", ctypes.c_uint64),
        ("dl_tensor", DLTensor),
    ]


class Producer:
    # A DLPack producer handing out a hand-made tensor (float32 on the CPU).
    def __init__(self, data, shape, strides=None, byte_offset=0, ndim=None):
        self.keep = []
        t = DLManagedTensorVersioned()
        t.major, t.minor = 1, 0
        d = t.dl_tensor
        d.data = data
        d.device = DLDevice(1, 0)
        d.dtype = DLDataType(2, 32, 1)
        d.ndim = len(shape) if ndim is None else ndim
        if shape is not None:
            arr = (ctypes.c_int64 * max(len(shape), 1))(*shape)
            self.keep.append(arr)
            d.shape = ctypes.cast(arr, ctypes.POINTER(ctypes.c_int64))
        if strides is not None:
            arr = (ctypes.c_int64 * len(strides))(*strides)
            self.keep.append(arr)
            d.strides = ctypes.cast(arr, ctypes.POINTER(ctypes.c_int64))
        d.byte_offset = byte_offset
        self.t = t

    def __dlpack_device__(self):
        return (1, 0)

    def __dlpack__(self, stream=None, max_version=None, copy=None):
        new = ctypes.pythonapi.PyCapsule_New
        new.restype = ctypes.py_object
        new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
        return new(ctypes.addressof(self.t), b"dltensor_versioned", None)
"""
exec(_DLPACK)


@pytest.mark.parametrize(
    "case",
    [
        "null_shape",
        "offset_2_63",
        "offset_wraps",
        "huge_stride",
        "negative_stride_below_zero",
        "stride_span_overflows",
        "ndim_65",
        "negative_ndim",
        "unmapped",
    ],
)
def test_malformed_dlpack_capsules_raise(case):
    if gp.default_device().type != "cpu":
        pytest.skip("hand-made capsules describe host memory")
    code = _DLPACK + textwrap.dedent(
        """
        import sys, numpy as np, pygpukit as gp
        buf = np.arange(16, dtype=np.float32)
        p = buf.ctypes.data
        case = sys.argv[1] if len(sys.argv) > 1 else CASE
        args = {
            "null_shape": dict(data=p, shape=None, ndim=2),
            "offset_2_63": dict(data=p, shape=[4], byte_offset=2**63),
            "offset_wraps": dict(data=p, shape=[4], byte_offset=2**64 - 8),
            "huge_stride": dict(data=p, shape=[2, 2], strides=[2**40, 1]),
            "negative_stride_below_zero": dict(data=p, shape=[3], strides=[-(2**61)]),
            "stride_span_overflows": dict(data=p, shape=[2**31, 2], strides=[2**33, 1]),
            "ndim_65": dict(data=p, shape=[1] * 65),
            "negative_ndim": dict(data=p, shape=[1], ndim=-1),
            "unmapped": dict(data=4096 * 16, shape=[4]),
        }[case]
        try:
            x = gp.from_dlpack(Producer(**args))
            print("accepted", x.shape)
            print(x.get())
        except (ValueError, TypeError, BufferError) as e:
            print("raised", type(e).__name__, e)
        # A well-formed tensor still imports (and reads the right values) afterwards.
        ok = gp.from_dlpack(Producer(data=p, shape=[2, 2], strides=[1, 2], byte_offset=8))
        assert ok.get().tolist() == [[2.0, 4.0], [3.0, 5.0]], ok.get()
        print("good import ok", flush=True)
        import os
        os._exit(0)  # the hand-made tensors live in this frame: no teardown after them
        """
    ).replace("CASE", repr(case))
    proc = run_child(code)
    assert proc.returncode == 0, (proc.stdout, proc.stderr[-2000:])
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("raised ValueError"), lines
    assert "from_dlpack" in lines[0] or "foreign memory" in lines[0], lines
    assert lines[-1] == "good import ok"


# ---- writes through broadcast views ----


def test_broadcast_views_are_read_only(device):
    a = gp.asarray(np.arange(3, dtype=np.int64), device=device)
    b = gp.broadcast_to(a, (4, 3))
    for write in [
        lambda: b.__setitem__(..., gp.arange(12, device=device).reshape(4, 3)),
        lambda: b.__setitem__(..., 5),
        lambda: b.__setitem__((slice(None), 0), 7),
        lambda: b.__setitem__(gp.asarray(np.array([0, 1]), device=device), 7),
        lambda: b.__setitem__(b > 0, 1),
        lambda: gp.add(b, 1, out=b),
    ]:
        with pytest.raises(ValueError, match="broadcast view.*read-only"):
            write()
    assert a.get().tolist() == [0, 1, 2]
    # A single row of the view has no repeated elements: writable, and it writes the base.
    row = b[1]
    row[...] = gp.asarray(np.array([7, 8, 9]), device=device)
    assert a.get().tolist() == [7, 8, 9]
    # Size-1 broadcast dimensions repeat nothing either.
    gp.broadcast_to(a, (1, 3))[...] = 0
    assert a.get().tolist() == [0, 0, 0]


# ---- complex 0 ** z ----


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_zero_to_a_power(device, dtype):
    exps = np.array([2 + 1j, 2 + 0j, 2 - 3j, 1e-30 + 5j, 0.5 + 0j, 1j, -1 + 1j, -2 + 0j, 0j], dtype)
    zero = np.zeros_like(exps)
    got = gp.pow(gp.asarray(zero, device=device), gp.asarray(exps, device=device)).get()
    with np.errstate(all="ignore"):
        want = zero**exps
    np.testing.assert_array_equal(got, want)
    assert got[0] == 0 and np.isnan(got[5].real)


# ---- buffers keep their format's dtype ----


def test_asarray_of_buffers_keeps_their_dtype(device):
    import array

    cases = [
        (memoryview(np.array([0.1, 1e300])), np.float64),
        (array.array("d", [0.1, 1e300]), np.float64),
        (array.array("f", [0.5, 2.0]), np.float32),
        (array.array("b", [-3, 4]), np.int8),
        (memoryview(np.array([1, 2], dtype=np.uint16)), np.uint16),
        (bytearray(b"\x01\xff"), np.uint8),
    ]
    for obj, dt in cases:
        x = gp.asarray(obj, device=device)
        assert x.dtype == gp.asarray(np.zeros(1, dt)).dtype, (obj, x.dtype)
        np.testing.assert_array_equal(x.get(), np.asarray(obj))
    # Python sequences still take the defaults (float32 for floats).
    assert gp.asarray([0.5, 1.0], device=device).dtype == gp.float32


# ---- the 64-dimension limit in indexing ----


def test_indexing_cannot_pass_64_dimensions(device):
    x = gp.ones((1,) * 64, device=device)
    with pytest.raises(IndexError, match="74 dimensions, more than the maximum of 64"):
        x[(None,) * 10]
    with pytest.raises(IndexError, match="65 dimensions"):
        x[None]
    assert x[(0,) + (None,)].ndim == 64
    y = gp.ones((2,) + (1,) * 63, device=device)
    with pytest.raises(IndexError, match="dimensions, more than the maximum of 64"):
        y[gp.asarray(np.zeros((1, 1), np.int64), device=device)]


# ---- shapes whose non-zero dimensions overflow (found by the DLPack fuzz target) ----


def test_empty_shapes_with_huge_other_dimensions_are_refused(device):
    # NumPy refuses these too: an empty array's strides are products of its other dimensions.
    for shape in [(0, 2**62, 3), (2**40, 0, 2**40)]:
        with pytest.raises(ValueError, match="is too large"):
            gp.empty(shape, device=device)
        with pytest.raises(ValueError, match="reshape: .* too large"):
            gp.zeros((0,), device=device).reshape(shape)
    with pytest.raises(ValueError, match="reshape: shape .* is too large"):
        gp.zeros((0,), device=device).reshape((2**40, 2**40, 2**40, 0))
    # Empty shapes within bounds keep working, with NumPy's strides.
    x = gp.zeros((0, 2**20, 3), dtype=gp.int8, device=device)
    assert x.shape == (0, 2**20, 3) and x.get().shape == (0, 2**20, 3)
    assert gp.zeros((0,), device=device).reshape((5, 0, 7)).shape == (5, 0, 7)


# ---- scheduler calls that would wait for themselves ----


def test_scheduler_calls_inside_a_task_block_refuse_instead_of_hanging():
    proc = run_child(
        """
        import pygpukit as gp
        s = gp.scheduler.Scheduler(workers=1)
        s.add_tenant("be", "best_effort", max_running=1)
        s.add_tenant("other")
        out = []
        with s.task("be"):
            for call in [s.drain, s.shutdown, lambda: s.remove_tenant("be")]:
                try:
                    call()
                    out.append("returned")
                except RuntimeError as e:
                    out.append(str(e))
            try:
                with s.task("be"):
                    out.append("nested block ran")
            except RuntimeError as e:
                out.append(str(e))
            with s.task("other"):  # another tenant nests
                out.append("other ok")
        assert s.drain(5), "drain after the block"
        s.remove_tenant("be")
        s.shutdown()
        print("\\n".join(out))
        """,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    assert "drain: called inside a task block" in lines[0]
    assert "shutdown: called inside a task block" in lines[1]
    assert "remove_tenant 'be': called inside a task block of that tenant" in lines[2]
    assert "max_running" in lines[3] and "would wait for itself" in lines[3]
    assert lines[4] == "other ok"


def test_drain_lets_keyboard_interrupt_through():
    proc = run_child(
        """
        import _thread, faulthandler, signal, threading, time, pygpukit as gp
        # A hang shows where every thread was (the test's timeout kills the child silently).
        faulthandler.dump_traceback_later(45, exit=True)
        # Python leaves SIGINT alone when its parent ignored it (bash does for background jobs,
        # as gpu.sh's parallel pytest runs are): then interrupt_main does nothing.
        signal.signal(signal.SIGINT, signal.default_int_handler)
        s = gp.scheduler.Scheduler(workers=1)
        s.add_tenant("t")
        release = threading.Event()
        f = s.submit("t", release.wait)
        start = time.monotonic()
        try:  # everything from the timer on: a loaded machine may deliver it anywhere here
            threading.Timer(0.3, _thread.interrupt_main).start()
            s.drain()
            print("drained", flush=True)
        except KeyboardInterrupt:
            print("interrupted after", round(time.monotonic() - start, 1), flush=True)
        try:
            assert s.drain(0.05) is False  # a timeout: not drained yet
        finally:
            release.set()  # else the shutdown at exit would wait for the task forever
        assert s.drain(10) is True
        f.result(10)
        s.shutdown()
        print("shut down", flush=True)
        """,
        timeout=60,
    )
    assert proc.returncode == 0, (proc.stdout, proc.stderr[-4000:])
    assert proc.stdout.startswith("interrupted after"), proc.stdout


# ---- done callbacks that wait ----


def test_a_done_callback_that_waits_on_another_task_does_not_freeze_the_scheduler():
    proc = run_child(
        """
        import threading, pygpukit as gp
        s = gp.scheduler.Scheduler(workers=1)
        s.add_tenant("be", "best_effort")
        seen = []
        a = s.submit("be", lambda: 1)
        a.add_done_callback(lambda f: seen.append(s.submit("be", lambda: 5).result(10)))
        # Unrelated futures settle and their results arrive while that callback waits.
        blocker = threading.Event()
        b = s.submit("be", lambda: 2)
        b.add_done_callback(lambda f: blocker.wait(30))  # a callback that blocks a long time
        c = s.submit("be", lambda: 3)
        assert (a.result(10), b.result(10), c.result(10)) == (1, 2, 3)
        d_seen = threading.Event()
        d = s.submit("be", lambda: 4)
        d.add_done_callback(lambda f: d_seen.set())
        assert d_seen.wait(10), "a blocked callback stalled the others"
        assert s.drain(0.2) is False  # b's callback still runs
        blocker.set()
        assert s.drain(10) is True
        assert seen == [5]
        # Callbacks run in the order they were added; one added to a done future runs at once.
        order = []
        e = s.submit("be", lambda: 6)
        for i in range(5):
            e.add_done_callback(lambda f, i=i: order.append(i))
        e.result(10)
        s.drain(10)
        e.add_done_callback(lambda f: order.append("late"))
        assert order == [0, 1, 2, 3, 4, "late"], order
        # A listener (on the thread that settles futures) must not wait for an unfinished one.
        errors = []
        def listener(rec):
            if rec["to"] == "running" and not errors:
                f = s.submit("be", lambda: 7)
                try:
                    f.result(1)
                except RuntimeError as err:
                    errors.append(str(err))
        s.add_listener(listener)
        s.submit("be", lambda: 8).result(10)
        s.drain(10)
        assert errors and "would wait for itself" in errors[0], errors
        s.shutdown()
        print("ok")
        """,
        timeout=90,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip().endswith("ok")


def test_inline_task_rejection_raises_task_rejected():
    s = gp.scheduler.Scheduler(workers=1)
    try:
        s.add_tenant("t", memory_request=1 << 20, memory_limit=2 << 20)
        with (
            pytest.raises(gp.scheduler.TaskRejected, match="can never fit"),
            s.task("t", memory=3 << 20),
        ):
            pass
        assert issubclass(gp.scheduler.TaskRejected, RuntimeError)
        f = s.submit("t", lambda: 1, memory=3 << 20)
        with pytest.raises(gp.scheduler.TaskRejected, match="can never fit"):
            f.result(10)
        block = s.task("t")
        with pytest.raises(RuntimeError, match="not open"):
            block.__exit__(None, None, None)
        with block:
            with pytest.raises(RuntimeError, match="already open"):
                block.__enter__()
        with pytest.raises(RuntimeError, match="not open"):
            block.__exit__(None, None, None)
    finally:
        s.shutdown()


# ---- host reads wait for work queued on any stream ----


def test_host_reads_wait_for_writes_queued_on_other_streams(device):
    # Issue 31: reads after a gp.Stream block returned stale data in 10 of 10 trials.
    x = gp.asarray(np.random.default_rng(0).random(1 << 22, dtype=np.float32), device=device)
    reads = {
        "get": lambda y: y.get()[-1],
        "item": lambda y: y[-1].item(),
        "float": lambda y: float(y[-1]),
        "to_numpy": lambda y: gp.to_numpy(y)[-1],
        "strided get": lambda y: y[::-3].get()[0],
        "repr": lambda y: float(repr(y[-1:]).split("[")[1].split("]")[0]),
    }
    if device.type == "cpu":
        reads["asarray"] = lambda y: np.asarray(y)[-1]
        reads["from_dlpack"] = lambda y: np.from_dlpack(y)[-1]
    for name, read in reads.items():
        for trial in range(3):
            k = float(trial + 2)
            with gp.Stream(device=device):
                y = gp.sin(x) * 0 + k
            assert read(y) == k, (name, trial)
    # Written in a stream block into an array made on the default stream: the write is a use
    # recorded on the array, and reads follow it too.
    z = gp.zeros((1 << 22,), device=device)
    with gp.Stream(device=device):
        z[...] = gp.sin(x) * 0 + 7
    assert z.get()[-1] == 7 and z[5].item() == 7


# ---- a kernel that throws on the CPU backend ----


def test_a_throwing_cpu_kernel_fails_reads_and_its_task():
    if gp.default_device().type != "cpu":
        pytest.skip("host-compiled kernels run on the CPU backend")
    proc = run_child(
        """
        import numpy as np, pygpukit as gp
        x = gp.asarray(np.arange(8, dtype=np.float32))
        k = gp.ElementwiseKernel("T x", "T y", "if (x > 3) throw 1; y = x * 2;", "thrower")
        out = []
        def attempt(label, f):
            try:
                f()
                out.append(f"{label}: ok")
            except RuntimeError as e:
                out.append(f"{label}: {e}")
        y = k(x)  # returns at once: the failure happens on the stream
        attempt("get", y.get)
        attempt("item", lambda: y[0].item())
        attempt("numpy", lambda: np.asarray(y))
        attempt("synchronize", gp.synchronize)  # reports it once...
        attempt("after", lambda: gp.ones((2,)).get())  # ...then the device works again
        s = gp.scheduler.Scheduler(workers=1)
        s.add_tenant("t")
        f = s.submit("t", lambda: k(x))
        attempt("task", lambda: f.result(10))
        out.append(f"state: {f.state}")
        attempt("synchronize", gp.synchronize)
        with s.task("t") as block:
            k(x)
        block.wait(10)
        out.append(f"block: {block.state}")
        s.shutdown()
        print("\\n".join(out))
        """
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = dict(line.split(": ", 1) for line in proc.stdout.splitlines())
    for label in ["get", "item", "numpy", "synchronize"]:
        assert "cpu kernel 'thrower' failed" in lines[label], (label, lines[label])
    assert lines["after"] == "ok"
    assert "cpu kernel 'thrower' failed" in lines["task"]
    assert lines["state"] == "failed" and lines["block"] == "failed"


# ---- backpressure on the CPU backend's queues ----


def test_a_producer_far_ahead_of_the_cpu_stream_is_held_back():
    if gp.default_device().type != "cpu":
        pytest.skip("the CPU backend's queues")
    # Issue 31: 500 queued iterations of y = sin(x) + 1 (x of 1 MiB) held 995 MiB allocated. The
    # queue is bounded by the memory its tasks keep alive (64 MiB, resuming at half).
    proc = run_child(
        """
        import json, numpy as np, pygpukit as gp
        x = gp.asarray(np.random.default_rng(0).random(1 << 18, dtype=np.float32))
        gp.synchronize()
        peak = 0
        for i in range(500):
            y = gp.sin(x) + 1
            peak = max(peak, gp.memory.stats()["allocated_bytes"])
        np.testing.assert_allclose(y.get(), np.sin(x.get()) + 1, rtol=1e-6)
        # Many tiny launches are bounded by count and still all run.
        z = gp.zeros((4,), dtype=gp.int64)
        for i in range(5000):
            z += 1
        print(json.dumps({"peak": peak, "z": z.get().tolist()}))
        """
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["peak"] < 160 << 20, out["peak"] / 2**20
    assert out["z"] == [5000] * 4


# ---- errors that say what went wrong ----

_MESSAGES = [
    (lambda x: gp.sum(x, keepdims="yes"), TypeError, "sum: keepdims must be a bool"),
    (lambda x: x.max(keepdims=1), TypeError, "max: keepdims must be a bool"),
    (lambda x: gp.var(x, correction="x"), TypeError, "var: correction must be a real number"),
    (lambda x: gp.std(x, correction=1j), TypeError, "std: correction must be a real number"),
    (lambda x: gp.cumulative_sum(x, axis=0, include_initial=None), TypeError, "include_initial"),
    (lambda x: gp.sum(x.get()), TypeError, "sum: expected a GPUArray"),
    (lambda x: gp.reshape(x, (12,), copy="no"), TypeError, "reshape: copy must be None or a bool"),
    (lambda x: gp.reshape(x.T, (12,), copy=False), ValueError, "without a copy, and copy=False"),
    (lambda x: x.astype(gp.int32, copy="yes"), TypeError, "astype: copy must be a bool"),
    (lambda x: x.get(blocking=0), TypeError, "get: blocking must be a bool"),
    (lambda x: gp.matmul(x, x.T, precision=32), TypeError, "matmul: precision must be a str"),
    (lambda x: gp.gemm(x, x.T, backend=None), TypeError, "gemm: backend must be a str"),
    (lambda x: gp.linspace(0, 1, 2**62), MemoryError, "linspace: arange: out of memory"),
    (lambda x: gp.stack([x, x], axis=3), IndexError, "stack: axis 3 is out of bounds"),
    (lambda x: gp.diff(x, prepend=gp.ones((5, 5))), ValueError, "diff: joining prepend"),
    (lambda x: gp.arange(-(2**63), 2**63 - 1), ValueError, "arange: the range .* more than 2"),
    (lambda x: gp.full((2,), 1 + 2j, dtype=gp.float32), TypeError, "full: cannot fill a float32"),
    (lambda x: gp.memory.set_limit(2**64), OverflowError, "set_limit: bytes .* does not fit"),
    (lambda x: gp.memory.set_evictable(x, "no"), TypeError, "evictable must be a bool"),
    (lambda x: gp.Event(timing="yes"), TypeError, "Event: timing must be a bool"),
    (lambda x: gp.Stream(priority=2**40), ValueError, "Stream: priority 1099511627776 is outside"),
    (lambda x: gp.Stream(priority="high"), TypeError, "Stream: priority must be an integer"),
    (lambda x: gp.fuse(lambda a: a.sum())(x), TypeError, "x.sum cannot be used in a fused"),
    (lambda x: gp.fuse(lambda a: a.shape)(x), TypeError, "x.shape cannot be used in a fused"),
    (lambda x: gp.fuse(lambda a: a[0])(x), TypeError, "indexing .* cannot be used in a fused"),
    (
        lambda x: gp.scheduler.Scheduler(memory_capacity=-1),
        ValueError,
        "memory_capacity must be >= 0, got -1",
    ),
    (lambda x: gp.scheduler.Scheduler(workers="4"), TypeError, "Scheduler: workers must be an int"),
    (
        lambda x: gp.scheduler.Scheduler(record_admission=1),
        TypeError,
        "Scheduler: record_admission must be a bool",
    ),
]


@pytest.mark.parametrize("call, exc, match", _MESSAGES)
def test_errors_name_the_op_and_the_argument(device, call, exc, match):
    x = gp.asarray(np.arange(12, dtype=np.float32).reshape(3, 4), device=device)
    with pytest.raises(exc, match=match) as e:
        call(x)
    assert "incompatible function arguments" not in str(e.value)
    assert "Invoked with" not in str(e.value)


def test_reshape_copy_semantics(device):
    x = gp.asarray(np.arange(12, dtype=np.float32).reshape(3, 4), device=device)
    view = gp.reshape(x, (4, 3))
    copied = gp.reshape(x, (4, 3), copy=True)
    x[0, 0] = 100
    assert view.get()[0, 0] == 100 and copied.get()[0, 0] == 0
    np.testing.assert_array_equal(gp.reshape(x.T, (12,)).get(), x.get().T.reshape(12))
    assert gp.reshape(x, (2, 6), copy=False).get()[0, 0] == 100


@pytest.mark.parametrize(
    "env, message",
    [
        ({"PYGPUKIT_DEVICE": "bogus"}, "ignoring PYGPUKIT_DEVICE=bogus"),
        ({"PYGPUKIT_DEVICE": "cuda:x"}, "ignoring PYGPUKIT_DEVICE=cuda:x"),
        ({"PYGPUKIT_NUM_THREADS": "abc"}, "ignoring PYGPUKIT_NUM_THREADS=abc"),
        ({"PYGPUKIT_NUM_THREADS": "-2"}, "ignoring PYGPUKIT_NUM_THREADS=-2"),
    ],
)
def test_bad_environment_values_are_reported(env, message):
    proc = run_child("import pygpukit as gp; print((gp.ones((3,)) + 1).get().tolist())", env=env)
    assert proc.returncode == 0, proc.stderr
    assert message in proc.stderr
    assert proc.stdout.strip() == "[2.0, 2.0, 2.0]"

"""Zero-copy interop: NumPy (__array__ views of CPU-backend arrays, GPU arrays refusing implicit
conversion, __array_ufunc__ = None), DLPack both ways (versioned and legacy capsules, every
dtype, strides, read-only data, copy / device rules, lifetimes, bad producers), the CUDA array
interface, and round trips with PyTorch and CuPy where they are installed."""

import gc
import time
import weakref

import numpy as np
import pytest
from helpers import ALL, NATIVE, check_equal, gpdt, host, npdt, rand, run_child

import pygpukit as gp


def _on(device, h):
    return gp.asarray(h, device=device)


# ---- NumPy ----


@pytest.mark.parametrize("dtype", ALL)
def test_numpy_views_cpu_arrays_without_a_copy(rng, dtype):
    h = rand(rng, (3, 4), dtype)
    x = gp.asarray(h, device="cpu")
    v = np.asarray(x)
    assert v.dtype == npdt(dtype) and v.shape == (3, 4)
    np.testing.assert_array_equal(v, h)
    # A view: writes go both ways.
    v[1, 2] = v[0, 0]
    assert host(x)[1, 2] == h[0, 0]
    x[2, 3] = x[0, 1]
    gp.synchronize("cpu")  # CPU-backend work is asynchronous, like GPU work
    assert v[2, 3] == h[0, 1]
    # Strided, negative-stride, 0-d and empty arrays keep their layout.
    t = gp.flip(x.T, axis=0)
    np.testing.assert_array_equal(np.asarray(t), np.flip(v.T, axis=0))
    np.testing.assert_array_equal(np.asarray(x[1, 2]), v[1, 2])
    assert np.asarray(gp.zeros((0, 3), dtype=gpdt(dtype), device="cpu")).shape == (0, 3)


def test_numpy_conversion_options():
    x = gp.arange(6, device="cpu").reshape(2, 3)
    c = np.array(x, copy=True)
    c[0, 0] = 9
    assert host(x)[0, 0] == 0
    f = np.asarray(x, dtype=np.float32)
    assert f.dtype == np.float32 and f[1, 2] == 5
    with pytest.raises(ValueError, match="dtype conversion needs a copy"):
        x.__array__(np.float32, copy=False)
    # The view outlives the array object it came from.
    v = np.asarray(x)
    del x
    gc.collect()
    assert v.sum() == 15
    # Pending work is finished before NumPy reads.
    y = gp.ones((1000,), device="cpu") * 3
    assert np.asarray(y).sum() == 3000


def test_numpy_defers_to_our_operators():
    x = gp.arange(3, device="cpu")
    assert gp.GPUArray.__array_ufunc__ is None
    with pytest.raises(TypeError):
        np.add(x, 1)


def test_gpu_arrays_refuse_implicit_numpy_conversion(cuda):
    x = gp.arange(3, device=cuda)
    with pytest.raises(TypeError, match="use gp.to_numpy\\(x\\) or x.get\\(\\)"):
        np.asarray(x)
    np.testing.assert_array_equal(x.get(), [0, 1, 2])


# ---- DLPack with NumPy (CPU) ----


@pytest.mark.parametrize("dtype", NATIVE)
def test_dlpack_round_trips_with_numpy(rng, dtype):
    h = rand(rng, (4, 6), dtype)[:, ::-2]
    g = gp.from_dlpack(h)
    assert g.device == gp.Device("cpu")
    check_equal(g, h)
    g[0, 0] = g[1, 1]
    gp.synchronize("cpu")
    assert h[0, 0] == h[1, 1]  # shared
    back = np.from_dlpack(g)
    np.testing.assert_array_equal(back, h)
    back[2, 2] = back[3, 1]
    assert h[2, 2] == h[3, 1]
    assert g.__dlpack_device__() == (1, 0)


def test_dlpack_bfloat16_and_zero_d_and_empty():
    x = gp.asarray(np.arange(4, dtype=np.float32), device="cpu").astype(gp.bfloat16)
    y = gp.from_dlpack(x)  # our own capsule
    check_equal(y, host(x))
    z = gp.from_dlpack(np.array(2.5))
    check_equal(z, np.float64(2.5))
    e = gp.from_dlpack(np.zeros((0, 4), np.int16))
    check_equal(e, np.zeros((0, 4), np.int16))


def test_dlpack_versions_copies_and_lifetimes():
    h = np.arange(5.0)

    # A legacy producer (no max_version / copy keywords) still works.
    class Legacy:
        def __init__(self, a):
            self.a = a

        def __dlpack__(self, stream=None):
            return self.a.__dlpack__(stream=stream)

        def __dlpack_device__(self):
            return self.a.__dlpack_device__()

    g = gp.from_dlpack(Legacy(h))
    g[0] = 7.0
    gp.synchronize("cpu")
    assert h[0] == 7.0
    c = gp.from_dlpack(h, copy=True)
    c[1] = -1.0
    assert h[1] == 1.0
    # The producer stays alive as long as our view does.
    v = gp.from_dlpack(np.arange(3, dtype=np.int32) + 10)
    gc.collect()
    check_equal(v, np.array([10, 11, 12], np.int32))
    # Capsules: versioned on request, legacy otherwise; unconsumed ones are freed.
    x = gp.arange(3, device="cpu")
    assert "dltensor_versioned" in repr(x.__dlpack__(max_version=(1, 0)))
    legacy = repr(x.__dlpack__())
    assert '"dltensor"' in legacy and "versioned" not in legacy
    big = gp.zeros((1 << 20,), device="cpu")
    gp.synchronize("cpu")
    before = gp.memory.stats("cpu")["active_blocks"]
    for _ in range(100):
        big.__dlpack__(max_version=(1, 0))
        big.__dlpack__()
    gc.collect()
    assert gp.memory.stats("cpu")["active_blocks"] == before  # dropped capsules free their hold
    # Our export keeps the memory when the array object is gone (a large block: a freed one
    # would be reused or unmapped).
    n = np.from_dlpack(gp.arange(1 << 21, device="cpu") * 2)
    gc.collect()
    filler = gp.full((1 << 21,), -1, dtype=gp.int64, device="cpu")
    gp.synchronize("cpu")
    assert n[5] == 10 and n[-1] == 2 * ((1 << 21) - 1)
    del filler


def _wait_until(cond):
    for _ in range(2000):
        gc.collect()
        if cond():
            return True
        time.sleep(0.001)
    return False


def test_imported_memory_is_released_after_the_last_view():
    h = np.arange(1 << 20, dtype=np.float64)
    ref = weakref.ref(h)
    g = gp.from_dlpack(h)
    del h
    v = gp.flip(g)  # a second view holds it too
    del g
    gc.collect()
    assert ref() is not None
    assert gp.sum(v).item() == float((1 << 20) * ((1 << 20) - 1) // 2)
    del v
    assert _wait_until(lambda: ref() is None)  # released on the runtime's watcher thread


def test_re_exporting_imported_memory_keeps_the_producer_alive():
    # Our DLPack export of an imported array must hold the producer's memory, not just our view.
    g = gp.from_dlpack(np.full(1 << 22, 7.0))
    n = np.from_dlpack(g)
    del g
    gc.collect()
    filler = np.full(1 << 22, -1.0)  # would reuse the memory were it freed
    assert n.sum() == 7.0 * (1 << 22)
    del filler


def test_numpy_views_pin_evictable_arrays():
    x = gp.full((1 << 16,), 7.0, device="cpu")
    v = np.asarray(x)
    gp.memory.set_evictable(x, True)
    with pytest.raises(RuntimeError, match="evict"):
        gp.memory.evict(x)  # pinned while NumPy views it
    assert gp.memory.is_resident(x) and v[0] == 7.0


def test_dlpack_read_only_producers_are_copied():
    h = np.arange(4.0)
    h.flags.writeable = False
    g = gp.from_dlpack(h)
    g[0] = 5.0
    assert h[0] == 0.0
    with pytest.raises(BufferError, match="read-only and copy=False"):
        gp.from_dlpack(h, copy=False)


def test_dlpack_errors():
    x = gp.arange(3, device="cpu")
    with pytest.raises(TypeError, match="does not support DLPack"):
        gp.from_dlpack([1, 2, 3])
    with pytest.raises(ValueError, match="stream must be None for arrays on the cpu"):
        x.__dlpack__(stream=1)
    with pytest.raises(TypeError, match="copy must be None or a bool"):
        x.__dlpack__(copy=1)

    class Bad:
        def __dlpack__(self, **kw):
            return 3

        def __dlpack_device__(self):
            return (1, 0)

    with pytest.raises(TypeError, match="not an unconsumed 'dltensor'"):
        gp.from_dlpack(Bad())

    class Elsewhere(Bad):
        def __dlpack_device__(self):
            return (4, 0)  # OpenCL

    with pytest.raises(NotImplementedError, match="DLPack device type 4"):
        gp.from_dlpack(Elsewhere())
    used = x.__dlpack__(max_version=(1, 0))

    class Twice(Bad):
        def __dlpack__(self, **kw):
            return used

    gp.from_dlpack(Twice())
    with pytest.raises(TypeError, match="not an unconsumed"):
        gp.from_dlpack(Twice())  # a capsule is consumed once


def test_imported_memory_is_not_the_pools():
    g = gp.from_dlpack(np.arange(4.0))
    with pytest.raises(ValueError, match="owned by its producer"):
        gp.memory.set_evictable(g, True)
    with pytest.raises(ValueError, match="owned by its producer"):
        gp.memory.evict(g)
    assert gp.memory.is_resident(g)


def test_asarray_copy_false_follows_the_array_api():
    class Producer:  # not a NumPy array: asarray goes through DLPack
        def __init__(self, a):
            self.a = a

        def __dlpack__(self, **kw):
            return self.a.__dlpack__(**kw)

        def __dlpack_device__(self):
            return self.a.__dlpack_device__()

    h = np.arange(4, dtype=np.int32)
    g = gp.asarray(Producer(h), copy=False, device="cpu")
    assert g.dtype == gp.int32
    with pytest.raises(ValueError, match="copy=False but a dtype conversion"):
        gp.asarray(Producer(h), dtype=gp.float32, copy=False, device="cpu")
    f = gp.asarray(Producer(h), dtype=gp.float32, device="cpu")
    check_equal(f, h.astype(np.float32))
    ro = np.arange(3.0)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        gp.asarray(Producer(ro), copy=False, device="cpu")
    with pytest.raises(ValueError, match="read-only"):
        gp.asarray(ro, copy=False, device="cpu")


def test_dlpack_argument_errors():
    x = gp.arange(3, device="cpu")
    with pytest.raises(TypeError, match="max_version must be a tuple of two integers"):
        x.__dlpack__(max_version=(1,))
    with pytest.raises(TypeError, match="dl_device must be a tuple of two integers"):
        x.__dlpack__(dl_device=(1,))
    with pytest.raises(BufferError, match="cannot export to the requested device"):
        x.__dlpack__(dl_device=(4, 0))


def test_asarray_copy_false_views_numpy_on_the_cpu():
    h = np.arange(6, dtype=np.int64).reshape(2, 3)
    g = gp.asarray(h, device="cpu", copy=False)
    g[1, 1] = 40
    gp.synchronize("cpu")
    assert h[1, 1] == 40
    with pytest.raises(ValueError, match="dtype conversion"):
        gp.asarray(h, device="cpu", copy=False, dtype=gp.int32)


# ---- CUDA: DLPack, the CUDA array interface, PyTorch and CuPy ----


def test_dlpack_across_devices(cuda, rng):
    h = rand(rng, (3, 5), "float32")
    g = gp.from_dlpack(h, device=cuda)  # a copy to the GPU
    assert g.device == cuda
    check_equal(g, h)
    with pytest.raises(BufferError, match="needs a copy, and copy=False"):
        gp.from_dlpack(h, device=cuda, copy=False)
    x = _on(cuda, h)
    assert x.__dlpack_device__() == (2, cuda.index)
    cap = x.__dlpack__(dl_device=(1, 0), max_version=(1, 0))  # a host copy, flagged so

    class HostCopy:
        def __dlpack__(self, **kw):
            return cap

        def __dlpack_device__(self):
            return (1, 0)

    on_host = gp.from_dlpack(HostCopy())
    assert on_host.device == gp.Device("cpu")
    check_equal(on_host, h)
    with pytest.raises(BufferError, match="copy=False"):
        x.__dlpack__(dl_device=(1, 0), copy=False)
    with pytest.raises(ValueError, match="stream 0 is ambiguous"):
        x.__dlpack__(stream=0)
    y = gp.from_dlpack(x)  # our own CUDA capsule, stream handshake included
    check_equal(y, h)


def test_cuda_array_interface(cuda, rng):
    h = rand(rng, (4, 6), "float32")
    x = _on(cuda, h)[:, ::2]
    cai = x.__cuda_array_interface__
    assert cai["version"] == 3 and cai["shape"] == (4, 3) and cai["typestr"] == "<f4"
    assert cai["strides"] == (24, 8) and cai["data"][1] is False
    assert cai["stream"] not in (None, 0)
    with pytest.raises(AttributeError):
        gp.zeros(2, device="cpu").__cuda_array_interface__  # noqa: B018
    with pytest.raises(TypeError, match="bfloat16 has no typestr"):
        gp.zeros(2, dtype=gp.bfloat16, device=cuda).__cuda_array_interface__  # noqa: B018

    class Producer:
        def __init__(self, a):
            self.a = a
            self.__cuda_array_interface__ = a.__cuda_array_interface__

    y = gp.asarray(Producer(x), device=cuda)
    check_equal(y, h[:, ::2])
    y[0, 0] = 100.0
    assert host(x)[0, 0] == 100.0


def test_torch_round_trips(cuda, rng):
    torch = pytest.importorskip("torch")
    for dtype in ("float32", "bfloat16", "int64", "bool", "complex64"):
        h = rand(rng, (3, 4), dtype)
        x = _on(cuda, h)
        t = torch.from_dlpack(x)
        assert t.is_cuda and tuple(t.shape) == (3, 4)
        t[0, 0] = t[1, 1]
        # DLPack orders the exchange only: later writes on torch's stream are the writer's to
        # publish before another stream reads them.
        torch.cuda.current_stream().synchronize()
        assert host(x)[0, 0] == h[1, 1]
        g = gp.from_dlpack(t.T)
        check_equal(g, host(x).T)
        g2 = gp.asarray(t)
        assert g2.device.type == "cuda"
    c = torch.arange(6).reshape(2, 3)  # CPU tensors come to the CPU backend without a copy
    g = gp.from_dlpack(c)
    g[0, 0] = 50
    gp.synchronize("cpu")
    assert int(c[0, 0]) == 50
    # The stream handshake: torch work queued before the exchange is seen by ours.
    t = torch.zeros(1 << 22, device="cuda")
    t.add_(1.0)
    assert gp.sum(gp.from_dlpack(t)).item() == float(1 << 22)


def test_cupy_round_trips(cuda, rng):
    cp = pytest.importorskip("cupy")
    h = rand(rng, (5, 3), "float64")
    x = _on(cuda, h)
    c = cp.asarray(x)  # through __cuda_array_interface__
    np.testing.assert_array_equal(cp.asnumpy(c), h)
    c[0, 0] = -1.0
    cp.cuda.get_current_stream().synchronize()  # CuPy's write, seen by our stream
    assert host(x)[0, 0] == -1.0
    d = cp.from_dlpack(x)
    np.testing.assert_array_equal(cp.asnumpy(d), host(x))
    g = gp.from_dlpack(c[:, ::2])
    check_equal(g, host(x)[:, ::2])
    check_equal(gp.from_dlpack(c.T), host(x).T)
    # CuPy 13's DLPack export divides a negative byte stride by an unsigned item size, so the
    # strides it describes reach far outside the buffer: refused, never read.
    try:
        check_equal(gp.from_dlpack(c[:, ::-1]), host(x)[:, ::-1])
    except ValueError as e:
        assert "strides" in str(e)
    # asarray then takes the CUDA array interface, whose byte strides are right.
    check_equal(gp.asarray(c[:, ::-1]), host(x)[:, ::-1])
    g2 = gp.asarray(c)
    g2[1, 1] = 7.0
    gp.synchronize(cuda)  # our write, seen by CuPy's stream
    assert float(c[1, 1]) == 7.0


EXIT_PRODUCER = """
import pygpukit as gp

class Producer:
    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        return gp._core._dlpack_test_capsule()

    def __dlpack_device__(self):
        return (1, 0)

for _ in range(20):
    a = gp.from_dlpack(Producer())
    assert float(gp.sum(a)) == 0.0
    del a  # the producer's deleter runs on a runtime thread, perhaps while the interpreter exits
"""


def test_exit_right_after_releasing_a_view_of_a_producer_whose_deleter_takes_the_gil():
    """Views of a DLPack producer's memory dropped just before the interpreter exits: the
    producer's deleter takes the GIL from a C++ destructor (as torch's does), which CPython's
    exit would abort by stopping the waiting thread; the process must exit cleanly."""
    for _ in range(3):
        r = run_child(EXIT_PRODUCER)
        assert r.returncode == 0, (r.returncode, r.stderr[-2000:])
        assert "terminate" not in r.stderr, r.stderr[-2000:]


def test_exit_right_after_releasing_a_view_of_a_torch_tensor():
    """The same with torch as the producer (CPU tensors): the tensor's Python object goes first,
    so that the view's release is what drops it, inside torch's deleter."""
    pytest.importorskip("torch")
    code = """
    import pygpukit as gp, torch
    for _ in range(20):
        t = torch.arange(12, dtype=torch.float32).reshape(3, 4)[:, 1:3]
        a = gp.from_dlpack(t)
        u = torch.from_dlpack(a * 2)
        assert float(u.sum()) == 66.0
        del u, t
        del a
    """
    for _ in range(5):
        r = run_child(code, address_limit=False)
        assert r.returncode == 0, (r.returncode, r.stderr[-2000:])
        assert "terminate" not in r.stderr, r.stderr[-2000:]

"""Host <-> device transfers: gp.asarray(..., blocking=False), gp.to_numpy / x.get with `out`
and blocking=False, pinned host memory (pygpukit.memory.pinned_empty), the transfer engine's
counters, staging of large and odd-sized arrays, moves between devices and many Python threads
transferring at once."""

import gc
import threading

import numpy as np
import pytest
from helpers import ALL, NATIVE, check_equal, host, npdt, rand

import pygpukit as gp

mem = gp.memory
MiB = 1 << 20

PINNED_KEYS = {
    "allocated_bytes",
    "reserved_bytes",
    "peak_reserved_bytes",
    "limit_bytes",
    "num_allocations",
    "num_cache_hits",
    "num_driver_allocations",
    "num_driver_frees",
}
TRANSFER_KEYS = {"h2d_bytes", "d2h_bytes", "staged_chunks", "direct_copies"}

needs_cuda = pytest.mark.skipif(
    not gp.runtime_info()["cuda_available"], reason="needs a CUDA device"
)


def delta(after, before):
    return {k: after[k] - before[k] for k in before}


def pinned_copy(data, device=None):
    p = mem.pinned_empty(data.shape, data.dtype, device=device)
    p[...] = data
    return p


# ---- pinned host memory ----


@pytest.mark.parametrize(
    "shape, dtype, want_shape, want_dtype",
    [
        ((3, 4), gp.float64, (3, 4), np.float64),
        (5, None, (5,), np.float32),
        ([2, 3], "int8", (2, 3), np.int8),
        ((2, 3), np.int16, (2, 3), np.int16),
        ((), gp.complex64, (), np.complex64),
        ((0, 7), gp.bfloat16, (0, 7), npdt("bfloat16")),
        ((2, 1, 3), gp.bool, (2, 1, 3), np.bool_),
    ],
)
def test_pinned_empty_is_a_writeable_numpy_array(device, shape, dtype, want_shape, want_dtype):
    p = mem.pinned_empty(shape, dtype, device=device)
    assert type(p) is np.ndarray
    assert p.shape == want_shape and p.dtype == want_dtype
    assert p.flags.writeable and p.flags.c_contiguous
    p[...] = 1
    assert (p == 1).all()


@pytest.mark.parametrize(
    "args, exc, msg",
    [
        (((-1,), None), ValueError, r"pinned_empty: negative dimension in shape \(-1,\)"),
        (((2,), "floaty"), TypeError, "pinned_empty: dtype: unknown dtype 'floaty'"),
        (("x", None), TypeError, "pinned_empty: shape must be an int or a sequence of ints"),
        (((2.5,), None), TypeError, "pinned_empty: shape entries must be integers"),
        (((2,), None, "tpu"), ValueError, "unknown device 'tpu'"),
    ],
)
def test_pinned_empty_bad_arguments(args, exc, msg):
    shape, dtype, *dev = args
    with pytest.raises(exc, match=msg):
        mem.pinned_empty(shape, dtype, device=dev[0] if dev else None)


def test_pinned_stats_count_allocations(device):
    s0 = mem.pinned_stats(device)
    assert set(s0) == PINNED_KEYS
    assert all(type(v) is int and v >= 0 for v in s0.values())
    assert s0["limit_bytes"] > 0
    assert mem.pinned_stats() == mem.pinned_stats(str(device))
    p = mem.pinned_empty((1000, 3), gp.float64, device=device)
    s1 = mem.pinned_stats(device)
    assert s1["num_allocations"] == s0["num_allocations"] + 1
    assert s1["allocated_bytes"] >= s0["allocated_bytes"] + p.nbytes
    assert s1["reserved_bytes"] >= s1["allocated_bytes"]
    assert s1["peak_reserved_bytes"] >= s1["reserved_bytes"]
    p_nbytes = p.nbytes
    del p
    gc.collect()
    gp.synchronize()
    s2 = mem.pinned_stats(device)
    assert s2["allocated_bytes"] <= s1["allocated_bytes"] - p_nbytes
    q = mem.pinned_empty((1000, 3), gp.float64, device=device)  # same size class: cached
    assert mem.pinned_stats(device)["num_cache_hits"] == s2["num_cache_hits"] + 1
    del q


def test_set_pinned_limit(device):
    old = mem.pinned_stats(device)["limit_bytes"]
    try:
        mem.set_pinned_limit(MiB, device=device)
        assert mem.pinned_stats(device)["limit_bytes"] == MiB
        with pytest.raises(MemoryError, match="out of pinned host memory: requested 2.00 MiB"):
            mem.pinned_empty((2 * MiB,), gp.uint8, device=device)
        p = mem.pinned_empty((MiB // 2,), gp.uint8, device=device)
        p[:] = 9
        assert int(p.sum()) == 9 * (MiB // 2)
    finally:
        mem.set_pinned_limit(old, device=device)
    for bad, exc, msg in [
        (-1, ValueError, "bytes must be >= 0, got -1"),
        (1.5, TypeError, "bytes must be an integer, got float"),
        (None, TypeError, "bytes must be an integer, got NoneType"),
        (True, TypeError, "bytes must be an integer, got bool"),
    ]:
        with pytest.raises(exc, match=msg):
            mem.set_pinned_limit(bad, device=device)
    assert mem.pinned_stats(device)["limit_bytes"] == old


def test_spill_that_cannot_get_pinned_memory_fails_cleanly(device, rng):
    data = rand(rng, (MiB // 4,), "float64")  # 2 MiB
    x = gp.asarray(data, device=device)
    mem.set_evictable(x)
    old = mem.pinned_stats(device)["limit_bytes"]
    try:
        mem.set_pinned_limit(MiB, device=device)
        with pytest.raises(MemoryError, match="spill: .*out of pinned host memory"):
            mem.evict(x)
    finally:
        mem.set_pinned_limit(old, device=device)
    assert mem.is_resident(x)
    check_equal(x, data)


def test_pageable_transfers_work_under_a_small_pinned_limit(device, rng):
    # Staging is an internal detail: a pinned limit below the staging chunk must not make
    # ordinary (pageable) transfers of larger arrays fail.
    data = rand(rng, (MiB // 4,), "float64")  # 2 MiB
    x = gp.asarray(data, device=device)
    old = mem.pinned_stats(device)["limit_bytes"]
    try:
        mem.set_pinned_limit(MiB, device=device)
        check_equal(x, data)
        check_equal(gp.asarray(data, device=device), data)
    finally:
        mem.set_pinned_limit(old, device=device)


# ---- asarray(blocking=False) / to_numpy(out=, blocking=) ----


@pytest.mark.parametrize("dtype", ALL)
def test_pinned_round_trip(device, rng, dtype):
    data = rand(rng, (33, 17), dtype)
    p = pinned_copy(data, device)
    t0 = mem.transfer_stats(device)
    x = gp.asarray(p, device=device)
    d = delta(mem.transfer_stats(device), t0)
    assert d == {"h2d_bytes": data.nbytes, "d2h_bytes": 0, "staged_chunks": 0, "direct_copies": 1}
    y = gp.asarray(p, device=device, blocking=False)
    gp.synchronize(device)  # pinned sources must stay untouched until the copy is done
    p[...] = 0
    out = mem.pinned_empty(data.shape, npdt(dtype), device=device)
    t1 = mem.transfer_stats(device)
    r = gp.to_numpy(y, out=out, blocking=False)
    assert r is out
    gp.synchronize(device)
    assert delta(mem.transfer_stats(device), t1)["d2h_bytes"] == data.nbytes
    np.testing.assert_array_equal(out, data)
    check_equal(x, data, dtype)
    out2 = mem.pinned_empty(data.shape, npdt(dtype), device=device)
    assert x.get(out=out2, blocking=False) is out2
    gp.synchronize(device)
    np.testing.assert_array_equal(out2, data)


@pytest.mark.parametrize("dtype", ["float32", "int64", "complex128", "bool", "bfloat16"])
def test_async_upload_of_pageable_data_is_staged(device, rng, dtype):
    data = rand(rng, (1000, 3), dtype)
    src = data.copy()
    t0 = mem.transfer_stats(device)
    x = gp.asarray(src, device=device, blocking=False)
    src[...] = src[0, 0]  # reusable at once: it was staged
    del src
    d = delta(mem.transfer_stats(device), t0)
    assert d["h2d_bytes"] == data.nbytes and d["staged_chunks"] >= 1
    assert d["direct_copies"] == 0
    y = x[::2] + x[1::2] if dtype != "bool" else x[::2] * x[1::2]
    expect = (data[::2] + data[1::2]) if dtype != "bool" else data[::2] & data[1::2]
    check_equal(y, expect, dtype)
    check_equal(x, data, dtype)


def test_async_upload_of_converted_sources(device, rng):
    # Sources that are converted to a temporary C-contiguous native array first: the temporary
    # dies when asarray returns, so its upload must have been staged by then.
    data = rand(rng, (64, 48), "float64")
    pinned = pinned_copy(data, device)
    sources = [
        (data[::2, ::3], data[::2, ::3]),
        (data.T, data.T),
        (data.astype(">f8"), data),
        (pinned[1::2], data[1::2]),
        (data.tolist(), data.astype(np.float32)),  # Python floats become float32
    ]
    xs = [gp.asarray(src, device=device, blocking=False) for src, _ in sources]
    gc.collect()
    junk = [np.full((64, 48), -1.0) for _ in range(8)]  # may reuse the temporaries' memory
    for x, (_, expect) in zip(xs, sources):
        check_equal(x, expect)
    del junk


@pytest.mark.parametrize("blocking", [True, False])
@pytest.mark.parametrize(
    "n, dtype",
    [
        (20 * MiB // 4, "float32"),
        (8 * MiB + 3, "uint8"),
        (16 * MiB + 5, "uint8"),
        (3 * MiB - 1, "float64"),
    ],
)
def test_large_transfers_round_trip_exactly(device, rng, blocking, n, dtype):
    data = rand(rng, (n,), dtype)
    nbytes = data.nbytes
    src = data.copy()
    t0 = mem.transfer_stats(device)
    x = gp.asarray(src, device=device, blocking=blocking)
    src[:] = 0
    d = delta(mem.transfer_stats(device), t0)
    assert d["h2d_bytes"] == nbytes
    assert d["staged_chunks"] >= 1 and d["direct_copies"] == 0  # pageable: staged
    t1 = mem.transfer_stats(device)
    if blocking:
        got = gp.to_numpy(x)  # may land in pinned memory (one DMA) or be staged
        d = delta(mem.transfer_stats(device), t1)
        assert d["d2h_bytes"] == nbytes and d["staged_chunks"] + d["direct_copies"] >= 1
        np.testing.assert_array_equal(got, data)
        t1 = mem.transfer_stats(device)
        got = np.empty_like(data)  # pageable: staged
        assert x.get(out=got) is got
        d = delta(mem.transfer_stats(device), t1)
        assert d["staged_chunks"] >= 1 and d["direct_copies"] == 0
    else:
        got = mem.pinned_empty(data.shape, data.dtype, device=device)
        x.get(out=got, blocking=False)
        gp.synchronize(device)
        assert delta(mem.transfer_stats(device), t1)["direct_copies"] == 1
    assert delta(mem.transfer_stats(device), t1)["d2h_bytes"] == nbytes
    np.testing.assert_array_equal(got, data)
    # A strided view goes through a contiguous copy.
    np.testing.assert_array_equal(gp.to_numpy(x[1::3]), data[1::3])


@pytest.mark.parametrize("blocking", [True, False])
@pytest.mark.parametrize("shape", [(), (0,), (3, 0), (1,)])
@pytest.mark.parametrize("dtype", ["float64", "int8", "complex64", "bool"])
def test_empty_and_scalar_arrays(device, rng, blocking, shape, dtype):
    data = rand(rng, shape, dtype)
    x = gp.asarray(data, device=device, blocking=blocking)
    assert x.shape == shape
    out = mem.pinned_empty(shape, data.dtype, device=device)
    r = gp.to_numpy(x, out=out, blocking=blocking)
    assert r is out
    gp.synchronize(device)
    np.testing.assert_array_equal(out, data)
    check_equal(x, data, dtype)
    # A 0-byte copy needs no pinned destination.
    if data.size == 0:
        plain = np.empty(shape, data.dtype)
        assert gp.to_numpy(x, out=plain, blocking=False) is plain


def test_async_download_of_a_temporary_and_a_view(device, rng):
    data = rand(rng, (300, 40), "float32")
    x = gp.asarray(data, device=device)
    out = mem.pinned_empty((300, 40), np.float32, device=device)
    gp.to_numpy(x * 2, out=out, blocking=False)  # the temporary dies at once
    junk = [gp.full((300, 40), 7.0, device=device) for _ in range(4)]  # may reuse its memory
    gp.synchronize(device)
    np.testing.assert_array_equal(out, data * 2)
    view_out = mem.pinned_empty((40, 150), np.float32, device=device)
    x.T[:, ::2].get(out=view_out, blocking=False)
    gp.synchronize(device)
    np.testing.assert_array_equal(view_out, data.T[:, ::2])
    # Part of a larger pinned block is pinned memory too.
    big = mem.pinned_empty((100, 40), np.float32, device=device)
    x[:10].get(out=big[50:60], blocking=False)
    gp.synchronize(device)
    np.testing.assert_array_equal(big[50:60], data[:10])
    del junk


def test_released_pinned_source_is_not_reused_too_early(device, rng):
    datas = [rand(rng, (4096,), "float64") for _ in range(8)]
    xs = [gp.asarray(pinned_copy(d, device), device=device, blocking=False) for d in datas]
    # The pinned sources are gone: new pinned arrays may get their blocks only after the copies.
    scribble = [pinned_copy(np.full(4096, -1.0), device) for _ in range(8)]
    for x, d in zip(xs, datas):
        check_equal(x, d)
    del scribble


@pytest.mark.parametrize("blocking", [True, False])
def test_to_numpy_out_validation(device, blocking):
    x = gp.asarray(np.arange(12.0).reshape(3, 4), device=device)
    pinned = mem.pinned_empty((3, 4), np.float64, device=device)
    cases = [
        (np.empty((4, 3)), ValueError, r"to_numpy: out has shape \(4, 3\), the array \(3, 4\)"),
        (np.empty((12,)), ValueError, "to_numpy: out has shape"),
        (np.empty((3, 4), np.float32), TypeError, "out has dtype float32, the array float64"),
        (np.empty((4, 3)).T, ValueError, "to_numpy: out must be C-contiguous and writeable"),
        (mem.pinned_empty((4, 3), np.float64).T, ValueError, "must be C-contiguous"),
        ([0.0] * 12, TypeError, "to_numpy: out must be a NumPy array, got <class 'list'>"),
        (x, TypeError, "to_numpy: out must be a NumPy array"),
    ]
    ro = np.empty((3, 4))
    ro.flags.writeable = False
    cases.append((ro, ValueError, "C-contiguous and writeable"))
    for out, exc, msg in cases:
        with pytest.raises(exc, match=msg):
            gp.to_numpy(x, out=out, blocking=blocking)
        with pytest.raises(exc, match=msg):
            x.get(out=out, blocking=blocking)
    pinned[...] = 5
    assert gp.to_numpy(x, out=pinned, blocking=blocking) is pinned
    gp.synchronize(device)
    np.testing.assert_array_equal(pinned, np.arange(12.0).reshape(3, 4))


def test_nonblocking_download_needs_pinned_out(device):
    big = gp.zeros((1 << 19,), dtype=gp.float32, device=device)  # 2 MiB: a pinned result
    with pytest.raises(ValueError, match="blocking=False needs `out` in pinned memory"):
        gp.to_numpy(big, blocking=False)
    x = gp.asarray(np.arange(6.0), device=device)
    for out in (np.empty(6), None):
        with pytest.raises(ValueError, match="blocking=False needs `out` in pinned memory"):
            gp.to_numpy(x, out=out, blocking=False)
    # Pageable out with a blocking copy is fine and filled on return.
    out = np.empty(6)
    assert x.get(out=out) is out
    np.testing.assert_array_equal(out, np.arange(6.0))
    with pytest.raises(TypeError, match="expected a GPUArray"):
        gp.to_numpy(np.arange(3), out=np.empty(3))


def test_evicted_array_downloads_into_pinned_out(device, rng):
    data = rand(rng, (5000,), "complex64")
    x = gp.asarray(data, device=device)
    mem.set_evictable(x)
    mem.evict(x)
    out = mem.pinned_empty(data.shape, data.dtype, device=device)
    x.get(out=out, blocking=False)
    mem.evict(x)  # waits for the copy before taking the memory away
    gp.synchronize(device)
    np.testing.assert_array_equal(out, data)
    assert not mem.is_resident(x)
    check_equal(x, data)


def test_transfer_stats_keys_and_devices(device):
    for d in (None, device, str(device), "cpu"):
        s = mem.transfer_stats(d)
        assert set(s) == TRANSFER_KEYS
        assert all(type(v) is int and v >= 0 for v in s.values())


@needs_cuda
@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float32", "int8", "bool", "complex128"])
def test_to_device_between_cpu_and_gpu(rng, dtype):
    data = rand(rng, (257, 31), dtype)
    c = gp.asarray(data, device="cpu")
    t0 = mem.transfer_stats("cuda:0")
    g = c.to_device("cuda:0")
    assert g.device == gp.Device("cuda:0")
    assert delta(mem.transfer_stats("cuda:0"), t0)["h2d_bytes"] == data.nbytes
    check_equal(g, data, dtype)
    back = g.to_device("cpu")
    assert back.device == gp.Device("cpu")
    check_equal(back, data, dtype)
    mem.set_evictable(g)
    mem.evict(g)
    check_equal(g.to_device("cpu"), data, dtype)
    mem.set_evictable(c)
    mem.evict(c)
    check_equal(c[::2].to_device("cuda:0"), data[::2], dtype)


def test_to_device_of_evicted_array(device, rng):
    data = rand(rng, (100, 3), "float64")
    x = gp.asarray(data, device=device)
    mem.set_evictable(x)
    for d in gp.devices():
        mem.evict(x)
        y = x.to_device(d)
        assert y.device == d
        check_equal(y, data)


def test_to_device_of_evicted_array_whose_old_block_was_reused(rng):
    # The page-in lands in a block other arrays have since written; the copy to the other
    # device must read the paged-in bytes, not the block's old contents.
    data = rand(rng, (1 << 20,), "float32")  # 4 MiB: a large block, reused below
    x = gp.asarray(data, device="cpu")
    mem.set_evictable(x)
    for d in gp.devices():
        mem.evict(x)
        junk = [gp.zeros((1 << 20,), dtype=gp.float32, device="cpu") for _ in range(3)]
        del junk
        y = x.to_device(d)
        check_equal(y, data)


# ---- threads ----


def test_many_threads_transfer_and_compute_concurrently(device):
    errors = []
    n_threads, iters = 8, 15
    barrier = threading.Barrier(n_threads)

    def work(seed):
        try:
            rng = np.random.default_rng(seed)
            barrier.wait()
            for i in range(iters):
                dtype = NATIVE[rng.integers(len(NATIVE))]
                shape = (int(rng.integers(1, 300)), int(rng.integers(1, 40)))
                data = rand(rng, shape, dtype, small=True)
                src = data.copy()
                x = gp.asarray(src, device=device, blocking=bool(i % 2))
                src[...] = 0
                if i % 3 == 0:
                    mem.set_evictable(x)
                    mem.evict(x)
                y = x[::-1] + x if dtype != "bool" else x[::-1] * x
                expect = data[::-1] + data if dtype != "bool" else data[::-1] & data
                if i % 2:
                    got = mem.pinned_empty(shape, data.dtype)
                    y.get(out=got, blocking=False)
                    gp.synchronize(device)
                else:
                    got = host(y)
                np.testing.assert_array_equal(got, expect.astype(got.dtype))
                np.testing.assert_array_equal(host(x), data)
                del x, y
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]
    gc.collect()
    gp.synchronize(device)
    s = mem.stats(device)
    assert s["cached_bytes"] == s["reserved_bytes"] - s["allocated_bytes"]

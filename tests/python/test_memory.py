"""pygpukit.memory: pool statistics, the process limit (API and PYGPUKIT_MEMORY_LIMIT) and spill
of evictable arrays (explicit and under pressure). Quotas are in test_quota.py, host transfers
and pinned memory in test_transfer.py."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from helpers import check_close, check_equal, fmt_bytes, host, npdt, rand, round512, settle

import pygpukit as gp

mem = gp.memory
MiB = 1 << 20

STATS_KEYS = set(
    "allocated_bytes requested_bytes reserved_bytes cached_bytes peak_allocated_bytes "
    "peak_reserved_bytes active_blocks segments largest_free_block limit_bytes num_allocations "
    "num_cache_hits num_driver_allocations num_driver_frees num_evictions num_spills "
    "num_page_ins spilled_bytes evictable_buffers".split()
)

SPILL_DTYPES = ["float64", "int8", "complex64", "bool", "bfloat16", "uint16"]


def delta(after, before):
    return {k: after[k] - before[k] for k in before}


def check_invariants(s):
    assert set(s) == STATS_KEYS
    assert all(type(v) is int and v >= 0 for v in s.values()), s
    assert s["cached_bytes"] == s["reserved_bytes"] - s["allocated_bytes"]
    assert s["requested_bytes"] <= s["allocated_bytes"] <= s["reserved_bytes"]
    assert s["peak_allocated_bytes"] >= s["allocated_bytes"]
    assert s["peak_reserved_bytes"] >= s["reserved_bytes"]
    assert s["largest_free_block"] <= s["cached_bytes"]


@pytest.fixture(autouse=True)
def _restore_limits(device):
    """Every test leaves the process limits as it found them, and its arrays freed."""
    limits = {d: mem.get_limit(d) for d in {device, gp.Device("cpu")}}
    yield
    for d, v in limits.items():
        mem.set_limit(v, device=d)
    settle(device)


def pressure_limit(device, headroom):
    """Empties the cache and sets the limit `headroom` bytes above what is reserved."""
    settle(device)
    mem.empty_cache(device)
    limit = mem.stats(device)["reserved_bytes"] + headroom
    mem.set_limit(limit, device=device)
    return limit


# ---- stats ----


def test_stats_keys_and_device_forms(device):
    settle(device)
    forms = [None, device, str(device), gp.Device(str(device))]
    results = [mem.stats(d) for d in forms]
    for s in results:
        check_invariants(s)
    assert all(s == results[0] for s in results[1:])
    check_invariants(mem.stats("cpu"))
    check_invariants(mem.stats(gp.Device("cpu")))


@pytest.mark.parametrize(
    "bad, exc, msg",
    [
        ("tpu", ValueError, "unknown device 'tpu'"),
        ("cpu:1", ValueError, "no device cpu:1"),
        (3, TypeError, "memory.stats: device must be"),
        (1.5, TypeError, "memory.stats: device must be"),
    ],
)
def test_stats_bad_device(bad, exc, msg):
    with pytest.raises(exc, match=msg):
        mem.stats(bad)


@pytest.mark.parametrize(
    "f",
    [mem.empty_cache, mem.reset_peak_stats, mem.get_limit, mem.pinned_stats, mem.transfer_stats],
)
def test_other_functions_reject_bad_device(f):
    with pytest.raises(ValueError, match="unknown device 'nope'"):
        f("nope")
    with pytest.raises(TypeError, match="device must be"):
        f(7)
    with pytest.raises(ValueError, match="unknown device 'nope'"):
        mem.set_limit(1 << 30, device="nope")


@pytest.mark.parametrize("nbytes", [1, 100, 511, 512, 513, 4000, 100_000, MiB])
def test_allocation_is_accounted_in_512_byte_blocks(device, nbytes):
    settle(device)
    before = mem.stats(device)
    x = gp.empty((nbytes,), dtype=gp.uint8, device=device)
    mid = mem.stats(device)
    d = delta(mid, before)
    check_invariants(mid)
    # Small requests get exactly the rounded size.
    assert d["allocated_bytes"] == round512(nbytes)
    assert d["requested_bytes"] == nbytes
    assert d["active_blocks"] == 1
    assert d["num_allocations"] == 1
    assert mid["peak_allocated_bytes"] >= mid["allocated_bytes"]
    del x
    settle(device)
    after = mem.stats(device)
    for k in ("allocated_bytes", "requested_bytes", "active_blocks"):
        assert after[k] == before[k], k
    # The memory stays cached.
    assert after["reserved_bytes"] == mid["reserved_bytes"]
    check_invariants(after)


def test_large_allocation_is_at_least_the_rounded_request(device):
    settle(device)
    nbytes = 3 * MiB + 5
    before = mem.stats(device)
    x = gp.empty((nbytes,), dtype=gp.uint8, device=device)
    got = mem.stats(device)["allocated_bytes"] - before["allocated_bytes"]
    assert round512(nbytes) <= got < round512(nbytes) + MiB
    del x


def test_same_size_again_is_a_cache_hit(device, rng):
    settle(device)
    x = gp.empty((12345,), dtype=gp.float32, device=device)
    del x
    settle(device)
    before = mem.stats(device)
    data = rand(rng, (12345,), "float32")
    y = gp.asarray(data, device=device)
    d = delta(mem.stats(device), before)
    assert d["num_cache_hits"] == 1
    assert d["num_driver_allocations"] == 0
    assert d["reserved_bytes"] == 0
    check_equal(y, data)


def test_empty_cache_and_peaks(device):
    nbytes = 16 * MiB
    settle(device)
    mem.empty_cache(device)
    base = mem.stats(device)
    x = gp.empty((nbytes,), dtype=gp.uint8, device=device)
    held = mem.stats(device)
    assert held["reserved_bytes"] >= base["reserved_bytes"] + nbytes
    assert held["peak_allocated_bytes"] >= held["allocated_bytes"] >= nbytes
    del x
    settle(device)
    freed = mem.stats(device)
    assert freed["allocated_bytes"] == base["allocated_bytes"]
    assert freed["cached_bytes"] >= nbytes
    assert freed["peak_allocated_bytes"] >= base["allocated_bytes"] + nbytes
    assert freed["peak_reserved_bytes"] >= held["reserved_bytes"]
    mem.reset_peak_stats(device)
    reset = mem.stats(device)
    assert reset["peak_allocated_bytes"] == reset["allocated_bytes"]
    assert reset["peak_reserved_bytes"] == reset["reserved_bytes"]
    mem.empty_cache(str(device))
    emptied = mem.stats(device)
    check_invariants(emptied)
    assert emptied["reserved_bytes"] <= freed["reserved_bytes"] - nbytes
    assert emptied["num_driver_frees"] >= freed["num_driver_frees"] + 1
    assert emptied["segments"] < freed["segments"]
    assert emptied["peak_reserved_bytes"] == reset["peak_reserved_bytes"]


# ---- limit ----


def test_set_and_get_limit(device):
    total = gp.device_properties(device)["total_memory"]
    mem.set_limit(1 << 40, device=device)
    assert mem.get_limit(device) == 1 << 40
    assert mem.stats(device)["limit_bytes"] == 1 << 40
    mem.set_limit(np.int64(3 << 30), device=device)
    assert mem.get_limit(device) == 3 << 30
    assert type(mem.get_limit(device)) is int
    for fraction in (0.5, 1, np.float32(0.25), 1e-12):
        mem.set_limit(fraction=fraction, device=device)
        assert mem.get_limit(device) == max(1, int(fraction * total))
    mem.set_limit(None, device=device)
    assert mem.get_limit(device) is None
    assert mem.stats(device)["limit_bytes"] == 0


@pytest.mark.parametrize(
    "kwargs, exc, msg",
    [
        ({"bytes": 1 << 30, "fraction": 0.5}, ValueError, "give bytes or fraction, not both"),
        ({"bytes": -1}, ValueError, "bytes must be >= 0, got -1"),
        ({"bytes": 0}, ValueError, "a limit of 0 bytes; use set_limit"),
        ({"bytes": 1.5}, TypeError, "bytes must be an integer, got float"),
        ({"bytes": "1GiB"}, TypeError, "bytes must be an integer, got str"),
        ({"bytes": True}, TypeError, "bytes must be an integer, got bool"),
        ({"fraction": 0}, ValueError, r"fraction must be in \(0, 1\], got 0"),
        ({"fraction": -0.5}, ValueError, r"fraction must be in \(0, 1\]"),
        ({"fraction": 1.01}, ValueError, r"fraction must be in \(0, 1\], got 1.01"),
        ({"fraction": float("nan")}, ValueError, r"fraction must be in \(0, 1\]"),
        ({"fraction": "0.5"}, TypeError, "fraction must be a number, got str"),
        ({"fraction": True}, TypeError, "fraction must be a number, got bool"),
    ],
)
def test_set_limit_bad_arguments(device, kwargs, exc, msg):
    mem.set_limit(1 << 40, device=device)
    with pytest.raises(exc, match=msg):
        mem.set_limit(device=device, **kwargs)
    assert mem.get_limit(device) == 1 << 40  # unchanged


def test_allocation_beyond_limit_raises_descriptive_memory_error(device):
    limit = pressure_limit(device, 4 * MiB)
    before = mem.stats(device)
    request = 8 * MiB + 3
    with pytest.raises(MemoryError) as e:
        gp.empty((request,), dtype=gp.uint8, device=device)
    msg = str(e.value)
    for needle in (
        f"out of memory on {device}",
        f"requested {fmt_bytes(request)} ({request} bytes",
        f"process limit {fmt_bytes(limit)}",
        "allocated",
        "reserved",
        "cached",
    ):
        assert needle in msg, (needle, msg)
    after = mem.stats(device)
    assert after["allocated_bytes"] == before["allocated_bytes"]
    assert after["reserved_bytes"] <= limit
    # Within the limit allocation still works.
    x = gp.full((MiB,), 3, dtype=gp.uint8, device=device)
    assert int(gp.to_numpy(x).sum()) == 3 * MiB


def test_limit_releases_cached_segments_instead_of_failing(device):
    limit = pressure_limit(device, 16 * MiB)
    x = gp.empty((12 * MiB,), dtype=gp.uint8, device=device)
    del x
    settle(device)
    before = mem.stats(device)
    assert before["cached_bytes"] >= 12 * MiB
    y = gp.ones((14 * MiB,), dtype=gp.uint8, device=device)  # needs the cached segment's room
    after = mem.stats(device)
    assert after["num_evictions"] >= before["num_evictions"] + 1
    assert after["reserved_bytes"] <= limit
    assert int(gp.to_numpy(y).sum()) == 14 * MiB
    del y
    settle(device)
    mem.empty_cache(device)
    z = gp.empty((16 * MiB,), dtype=gp.uint8, device=device)  # exactly the headroom
    assert mem.stats(device)["reserved_bytes"] <= limit
    del z


def test_lowering_the_limit_releases_cache(device):
    settle(device)
    x = gp.empty((16 * MiB,), dtype=gp.uint8, device=device)
    del x
    settle(device)
    s = mem.stats(device)
    assert s["cached_bytes"] >= 16 * MiB
    mem.set_limit(s["reserved_bytes"] - 8 * MiB, device=device)
    assert mem.stats(device)["reserved_bytes"] <= s["reserved_bytes"] - 8 * MiB


def _child(env_extra, code):
    env = dict(os.environ)
    pkg_root = os.path.dirname(os.path.dirname(os.path.abspath(gp.__file__)))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (pkg_root, env.get("PYTHONPATH")) if p)
    env.update(env_extra)
    return subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )


LIMIT_CHILD = (
    "import json, pygpukit as gp\n"
    "print(json.dumps([gp.memory.get_limit(), gp.device_properties()['total_memory'],"
    " gp.memory.pinned_stats()['limit_bytes']]))\n"
)


@pytest.mark.parametrize(
    "value, expect",
    [
        ("64MiB", lambda t: 64 * MiB),
        ("1.5 GiB", lambda t: 3 << 29),
        ("123456789", lambda t: 123456789),
        ("2gb", lambda t: 2 * 10**9),
        ("50%", lambda t: t // 2),
        ("0.25", lambda t: t // 4),
    ],
)
def test_limit_from_environment(value, expect):
    r = _child({"PYGPUKIT_MEMORY_LIMIT": value}, LIMIT_CHILD)
    assert r.returncode == 0, r.stderr
    limit, total, _ = json.loads(r.stdout)
    assert abs(limit - expect(total)) <= 1, (limit, expect(total))
    assert "ignoring" not in r.stderr


@pytest.mark.parametrize("value", ["garbage", "-5", "12XB", "0", "inf"])
def test_malformed_limit_in_environment_is_ignored_with_a_warning(value):
    r = _child({"PYGPUKIT_MEMORY_LIMIT": value}, LIMIT_CHILD)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)[0] is None
    assert "pygpukit: ignoring PYGPUKIT_MEMORY_LIMIT" in r.stderr
    assert f"'{value}'" in r.stderr


def test_environment_limit_is_enforced_and_pinned_limit_read():
    code = (
        "import pygpukit as gp\n"
        "x = gp.empty((2 << 20,), dtype=gp.uint8)\n"
        "try:\n"
        "    gp.empty((8 << 20,), dtype=gp.uint8)\n"
        "except MemoryError as e:\n"
        "    print('OOM', e)\n"
        "print(gp.memory.pinned_stats()['limit_bytes'])\n"
    )
    r = _child({"PYGPUKIT_MEMORY_LIMIT": "4MiB", "PYGPUKIT_PINNED_LIMIT": "16MiB"}, code)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("OOM") and "process limit 4.00 MiB" in lines[0], r.stdout
    assert int(lines[1]) == 16 * MiB


# ---- spill ----


@pytest.mark.parametrize("dtype", SPILL_DTYPES)
def test_evicted_array_keeps_its_data(device, rng, dtype):
    data = rand(rng, (37, 13), dtype)
    x = gp.asarray(data, device=device)
    fresh = gp.asarray(data, device=device)
    assert not mem.is_evictable(x) and mem.is_resident(x)
    mem.set_evictable(x)
    assert mem.is_evictable(x) and mem.is_resident(x)

    def evict():
        before = mem.stats(device)
        mem.evict(x)
        d = delta(mem.stats(device), before)
        assert not mem.is_resident(x)
        assert d["num_spills"] == 1 and d["spilled_bytes"] == round512(data.nbytes)
        assert d["allocated_bytes"] == -round512(data.nbytes)
        return mem.stats(device)

    spilled = evict()
    assert spilled["evictable_buffers"] >= 1
    check_equal(x, data, dtype)  # to_numpy pages it in
    assert mem.is_resident(x)
    after = mem.stats(device)
    assert after["num_page_ins"] == spilled["num_page_ins"] + 1
    assert after["spilled_bytes"] == spilled["spilled_bytes"] - round512(data.nbytes)
    evict()
    np.testing.assert_array_equal(host(x + 1), host(fresh + 1))
    assert mem.is_resident(x)
    evict()
    check_equal(x[3], data[3], dtype)
    evict()
    check_equal(x[2:30:3, ::-2], data[2:30:3, ::-2], dtype)
    evict()
    check_equal(x.T.copy(), data.T, dtype)
    if dtype in ("float64", "complex64", "bfloat16"):
        evict()
        y = x @ x.T
        np.testing.assert_array_equal(host(y), host(fresh @ fresh.T))
        if dtype != "bfloat16":
            wide = data.astype(np.complex128 if dtype == "complex64" else np.float64)
            check_close(y, wide @ wide.T, dtype, rtol=1e-4, atol=1e-2)
    check_equal(x, data, dtype)


@pytest.mark.parametrize("dtype", ["float64", "int8", "complex64", "bool"])
def test_arithmetic_of_evicted_arrays_matches_numpy(device, rng, dtype):
    a, b = rand(rng, (64,), dtype), rand(rng, (64,), dtype)
    x, y = gp.asarray(a, device=device), gp.asarray(b, device=device)
    for g in (x, y):
        mem.set_evictable(g)
        mem.evict(g)
    if dtype == "bool":
        check_equal(x * y, a & b)
    else:
        check_equal(x + y, (a + b).astype(npdt(dtype)))
    assert mem.is_resident(x) and mem.is_resident(y)


def test_views_share_evictability_and_residency(device, rng):
    data = rand(rng, (8, 6), "float32")
    x = gp.asarray(data, device=device)
    v = x[1:5, ::2]
    mem.set_evictable(v)  # views share the flag with their base
    assert mem.is_evictable(x)
    mem.evict(x)
    assert not mem.is_resident(v)
    check_equal(v, data[1:5, ::2])
    assert mem.is_resident(x)
    mem.evict(v)
    w = x.reshape(48)[7:20]
    check_equal(w, data.reshape(48)[7:20])
    check_equal(x, data)


def test_setitem_into_evicted_array(device, rng):
    data = rand(rng, (10, 4), "int32")
    src = rand(rng, (4,), "int32")
    x = gp.asarray(data, device=device)
    y = gp.asarray(src, device=device)
    for g in (x, y):
        mem.set_evictable(g)
    mem.evict(x)
    x[2:5] = 7
    data[2:5] = 7
    mem.evict(x)
    check_equal(x, data)
    mem.evict(x)
    mem.evict(y)
    x[8] = y  # both operands paged in
    data[8] = src
    mem.evict(x)
    check_equal(x, data)


def test_evict_is_idempotent_and_set_evictable_false_pages_in(device, rng):
    data = rand(rng, (1000,), "float64")
    x = gp.asarray(data, device=device)
    s0 = mem.stats(device)
    mem.set_evictable(x)
    mem.set_evictable(x, True)  # twice: counted once
    assert mem.stats(device)["evictable_buffers"] == s0["evictable_buffers"] + 1
    mem.evict(x)
    mem.evict(x)  # already spilled: nothing to do
    s1 = mem.stats(device)
    assert s1["num_spills"] == s0["num_spills"] + 1
    mem.set_evictable(x, False)
    s2 = mem.stats(device)
    assert mem.is_resident(x) and not mem.is_evictable(x)
    assert s2["num_page_ins"] == s1["num_page_ins"] + 1
    assert s2["evictable_buffers"] == s0["evictable_buffers"]
    assert s2["spilled_bytes"] == s0["spilled_bytes"]
    with pytest.raises(ValueError, match="evict: the array's memory is not evictable"):
        mem.evict(x)
    check_equal(x, data)


def test_freeing_a_spilled_array_releases_its_host_copy(device, rng):
    s0 = mem.stats(device)
    x = gp.asarray(rand(rng, (5000,), "float32"), device=device)
    mem.set_evictable(x)
    mem.evict(x)
    assert mem.stats(device)["spilled_bytes"] == s0["spilled_bytes"] + round512(20000)
    del x
    settle(device)
    s1 = mem.stats(device)
    assert s1["spilled_bytes"] == s0["spilled_bytes"]
    assert s1["evictable_buffers"] == s0["evictable_buffers"]
    assert s1["allocated_bytes"] == s0["allocated_bytes"]


def test_spill_does_not_leak_or_fragment_segments(device, rng):
    # A block freed by a spill must coalesce with its free neighbours again, so that once
    # everything is freed the segment is whole and empty_cache returns it. (2 MiB arrays share
    # a fresh segment for mid-sized requests.)
    settle(device)
    mem.empty_cache(device)
    base = mem.stats(device)
    x = gp.asarray(rand(rng, (MiB // 4,), "float64"), device=device)
    y = gp.asarray(rand(rng, (MiB // 4,), "float64"), device=device)
    assert mem.stats(device)["segments"] == base["segments"] + 1
    mem.set_evictable(x)
    mem.evict(x)
    del x, y
    settle(device)
    freed = mem.stats(device)
    assert freed["allocated_bytes"] == base["allocated_bytes"]
    assert freed["largest_free_block"] == freed["reserved_bytes"] - base["reserved_bytes"]
    mem.empty_cache(device)
    assert mem.stats(device)["reserved_bytes"] == base["reserved_bytes"]


@pytest.mark.parametrize("f", [mem.set_evictable, mem.is_evictable, mem.is_resident, mem.evict])
def test_spill_functions_need_an_array(f):
    with pytest.raises(TypeError, match="expected a GPUArray, got <class 'numpy.ndarray'>"):
        f(np.zeros(3))
    with pytest.raises(TypeError, match="expected a GPUArray"):
        f(None)


def test_spill_under_pressure_takes_the_least_recently_used(device, rng):
    n = 3 * MiB  # float32: 12 MiB each, a segment of its own
    datas = [rand(rng, (n,), "float32") for _ in range(3)]
    xs = [gp.asarray(d, device=device) for d in datas]
    for x in xs:
        mem.set_evictable(x)
    for i in (1, 2, 0):  # use order: xs[1] is now the least recently used
        del_me = xs[i] + 0
        del del_me
    settle(device)
    pressure_limit(device, 4 * MiB)
    before = mem.stats(device)
    big = gp.full((12 * MiB,), 5, dtype=gp.uint8, device=device)  # room for it needs a spill
    after = mem.stats(device)
    assert [mem.is_resident(x) for x in xs] == [True, False, True]
    assert after["num_spills"] == before["num_spills"] + 1
    assert after["spilled_bytes"] == before["spilled_bytes"] + 12 * MiB
    assert after["reserved_bytes"] <= mem.get_limit(device)
    for x, d in zip(xs, datas):
        check_equal(x, d)  # each page-in spills another (LRU) one
    assert mem.stats(device)["num_page_ins"] >= before["num_page_ins"] + 1
    assert int(gp.to_numpy(big).astype(np.int64).sum()) == 5 * 12 * MiB


def test_pressure_releases_cache_before_spilling(device, rng):
    # Sizes above the 20 MiB shared segment: no leftover cached fragment can serve them.
    data = rand(rng, (3 * MiB,), "float32")
    x = gp.asarray(data, device=device)
    mem.set_evictable(x)
    limit = pressure_limit(device, 32 * MiB)
    t = gp.empty((24 * MiB,), dtype=gp.uint8, device=device)
    del t
    settle(device)
    before = mem.stats(device)
    assert before["cached_bytes"] >= 24 * MiB
    # 28 MiB: the cached 24 MiB segment cannot serve it; releasing that segment makes room.
    y = gp.empty((28 * MiB,), dtype=gp.uint8, device=device)
    after = mem.stats(device)
    assert after["num_evictions"] >= before["num_evictions"] + 1, (before, after, limit)
    assert after["num_spills"] == before["num_spills"]
    assert mem.is_resident(x)
    assert after["reserved_bytes"] <= limit
    del y
    check_equal(x, data)


def test_no_evictable_memory_left_raises(device, rng):
    data = rand(rng, (3 * MiB,), "float32")
    x = gp.asarray(data, device=device)
    mem.set_evictable(x)
    pressure_limit(device, 2 * MiB)
    with pytest.raises(MemoryError, match="evictable buffers spilled before failing"):
        gp.empty((32 * MiB,), dtype=gp.uint8, device=device)  # spilling x is not enough
    check_equal(x, data)

"""pygpukit.memory.Quota: per-thread tenant quotas, their accounting, nesting, errors, and the
spill of a quota's own evictable arrays when it is full."""

import threading

import pytest
from helpers import check_equal, fmt_bytes, rand, round512

import pygpukit as gp

mem = gp.memory
MiB = 1 << 20


def test_quota_charges_arrays_allocated_inside(device, rng):
    q = mem.Quota("tenant-a", limit=MiB)
    outside = gp.empty((1000,), dtype=gp.float32, device=device)
    with q as entered:
        assert entered is q
        a = gp.empty((1000,), dtype=gp.float32, device=device)
        assert q.used == round512(4000)
        b = gp.asarray(rand(rng, (300,), "float64"), device=device)
        c = a + 1  # op outputs are charged too
        assert q.used == 2 * round512(4000) + round512(2400)
        peak = q.used
        del c
        gp.synchronize(device)  # queued work keeps its operands alive until it has run
        assert q.used == round512(4000) + round512(2400)
        with pytest.raises(MemoryError, match="would exceed quota 'tenant-a'") as e:
            gp.empty((MiB,), dtype=gp.uint8, device=device)
        assert f"limit {fmt_bytes(MiB)}" in str(e.value)
        assert q.used == round512(4000) + round512(2400)  # a failed request is not charged
    assert q.peak == peak
    d = gp.empty((1000,), dtype=gp.float32, device=device)  # not charged: outside the block
    assert q.used == round512(4000) + round512(2400)
    del a, b
    gp.synchronize(device)
    assert q.used == 0 and q.peak == peak
    assert q.name == "tenant-a" and q.limit == MiB
    assert repr(q) == f"Quota(name='tenant-a', limit={MiB}, used=0, peak={peak})"
    del outside, d


def test_quota_limit_is_settable_and_zero_forbids_everything(device):
    q = mem.Quota("zero", 0)
    with q:
        with pytest.raises(MemoryError, match="quota 'zero'"):
            gp.empty((1,), dtype=gp.uint8, device=device)
        q.limit = 4096
        assert q.limit == 4096
        x = gp.empty((4096,), dtype=gp.uint8, device=device)
        with pytest.raises(MemoryError, match="quota 'zero'"):
            gp.empty((1,), dtype=gp.uint8, device=device)
    assert q.used == 4096
    with pytest.raises(ValueError, match="limit must be >= 0, got -1"):
        q.limit = -1
    with pytest.raises(TypeError, match="limit must be an integer, got float"):
        q.limit = 10.0
    assert q.limit == 4096
    del x


@pytest.mark.parametrize(
    "args, exc, msg",
    [
        ((3, 10), TypeError, "name must be a str, got int"),
        ((None, 10), TypeError, "name must be a str, got NoneType"),
        (("q", -1), ValueError, "limit must be >= 0, got -1"),
        (("q", 1.5), TypeError, "limit must be an integer, got float"),
        (("q", "1MiB"), TypeError, "limit must be an integer, got str"),
        (("q", False), TypeError, "limit must be an integer, got bool"),
    ],
)
def test_quota_bad_arguments(args, exc, msg):
    with pytest.raises(exc, match=msg):
        mem.Quota(*args)


def test_quota_exit_without_enter_raises():
    with pytest.raises(ValueError, match="Quota 'x': its block is not open on this thread"):
        mem.Quota("x", 1).__exit__(None, None, None)


def test_quota_blocks_end_innermost_first():
    a, b = mem.Quota("a", MiB), mem.Quota("b", MiB)
    a.__enter__()
    b.__enter__()
    with pytest.raises(ValueError, match="Quota 'a': exited before the block of quota 'b'"):
        a.__exit__(None, None, None)
    b.__exit__(None, None, None)
    a.__exit__(None, None, None)
    with pytest.raises(ValueError, match="exited twice"):
        a.__exit__(None, None, None)


def test_nested_quotas_charge_every_enclosing_quota(device):
    outer, inner = mem.Quota("outer", 16384), mem.Quota("inner", 8192)
    with outer:
        a = gp.empty((100,), dtype=gp.uint8, device=device)
        with inner:
            b = gp.empty((5000,), dtype=gp.uint8, device=device)
            with pytest.raises(MemoryError, match="quota 'inner'"):
                gp.empty((5000,), dtype=gp.uint8, device=device)
            assert outer.used == 512 + round512(5000) and inner.used == round512(5000)
        c = gp.empty((5000,), dtype=gp.uint8, device=device)  # outer only again: fits
        # A generous inner quota does not lift the outer one.
        with mem.Quota("huge", 1 << 40), pytest.raises(MemoryError, match="quota 'outer'"):
            gp.empty((12000,), dtype=gp.uint8, device=device)
        with outer:  # the same quota again is charged once
            d = gp.empty((1000,), dtype=gp.uint8, device=device)
    assert outer.used == 512 + 2 * round512(5000) + round512(1000)
    assert inner.used == round512(5000) and inner.peak == round512(5000)
    del a, b, c, d
    assert outer.used == inner.used == 0


def test_a_tenant_cannot_escape_its_limit_through_an_inner_quota(device):
    # Issue 31: inside a task of a tenant limited to 64 KiB, an inner quota of a TiB let the
    # allocation through.
    s = gp.scheduler.Scheduler(device, workers=1)
    try:
        s.add_tenant("t", "burstable", memory_request=64 << 10, memory_limit=64 << 10)
        with s.task("t"), mem.Quota("x", 1 << 40):
            kept = gp.empty((32 << 10,), dtype=gp.uint8, device=device)
            with pytest.raises(MemoryError, match="quota 't'"):
                gp.empty((64 << 10,), dtype=gp.uint8, device=device)
            del kept

        # Inside a submitted task's body too.
        def body():
            with mem.Quota("y", 1 << 40):
                return gp.empty((128 << 10,), dtype=gp.uint8, device=device)

        with pytest.raises(MemoryError, match="quota 't'"):
            s.submit("t", body).result(30)
    finally:
        s.shutdown()


def test_quota_cannot_end_inside_a_task_block_it_encloses(device):
    s = gp.scheduler.Scheduler(device, workers=1)
    try:
        s.add_tenant("t")
        q = mem.Quota("q", MiB)
        q.__enter__()
        block = s.task("t")
        block.__enter__()
        with pytest.raises(ValueError, match="a task block.*is still open"):
            q.__exit__(None, None, None)
        block.__exit__(None, None, None)
        q.__exit__(None, None, None)
    finally:
        s.shutdown()


def test_quota_scope_closes_on_exception(device):
    q = mem.Quota("x", 100)
    with pytest.raises(MemoryError, match="quota 'x'"), q:
        gp.empty((1000,), dtype=gp.uint8, device=device)
    y = gp.empty((1000,), dtype=gp.uint8, device=device)  # no quota any more
    assert q.used == 0
    del y


def test_quota_applies_to_the_current_thread_only(device, rng):
    q = mem.Quota("mine", 64 * 1024)
    started, allocated = threading.Event(), threading.Event()
    result = {}

    def other():
        started.wait()
        data = rand(rng, (50_000,), "float32")  # 200 KB: over the quota
        result["x"] = gp.asarray(data, device=device)
        result["data"] = data
        allocated.set()

    t = threading.Thread(target=other)
    t.start()
    with q:
        mine = gp.empty((1000,), dtype=gp.uint8, device=device)
        started.set()
        assert allocated.wait(60)
    t.join()
    assert q.used == round512(1000)
    check_equal(result["x"], result["data"])
    del mine


def test_quotas_of_concurrent_threads_are_independent(device, rng):
    def work(i, out):
        q = mem.Quota(f"t{i}", 1 << 20)
        with q:
            keep = [gp.empty((512 * (j + 1),), dtype=gp.uint8, device=device) for j in range(i + 1)]
            out[i] = (q.used, sum(512 * (j + 1) for j in range(i + 1)))
            del keep
        out[i] += (q.used,)

    out = {}
    threads = [threading.Thread(target=work, args=(i, out)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(used == expect and after == 0 for used, expect, after in out.values()), out


def test_quota_spills_its_own_evictable_arrays(device, rng):
    q = mem.Quota("spiller", 64 * 1024)
    other = mem.Quota("other", MiB)
    with other:
        foreign = gp.asarray(rand(rng, (2048,), "float64"), device=device)
        mem.set_evictable(foreign)
    with q:
        datas = [rand(rng, (2048,), "float64") for _ in range(3)]  # 16 KiB each
        xs = [gp.asarray(d, device=device) for d in datas]
        for x in xs:
            mem.set_evictable(x)
        assert q.used == 48 * 1024
        before = mem.stats(device)
        y = gp.zeros((4096,), dtype=gp.float64, device=device)  # 32 KiB: one must go
        assert [mem.is_resident(x) for x in xs] == [False, True, True]
        assert mem.stats(device)["num_spills"] == before["num_spills"] + 1
        assert q.used == 64 * 1024
        assert mem.is_resident(foreign)  # other quotas' arrays are left alone
        for x, d in zip(xs, datas):
            check_equal(x, d)
            assert q.used <= q.limit
        with pytest.raises(MemoryError, match="quota 'spiller'"):
            gp.zeros((16384,), dtype=gp.float64, device=device)  # more than all of it
        assert q.peak == 64 * 1024
        for x, d in zip(xs, datas):  # whatever the failed request spilled is intact
            check_equal(x, d)
    del y
    assert mem.is_resident(foreign) and other.used == 16 * 1024

"""SM partitions: streams confined to part of the device (gp.Stream(sms=N); CUDA green contexts,
CPU worker threads) and the scheduler's tenants on them (best-effort tenants by default).
Values are checked against NumPy; on a GPU a kernel reading %smid shows the confinement."""

import numpy as np
import pytest
from helpers import host, rand

import pygpukit as gp

sm = gp.scheduler
MiB = 1 << 20
WAIT = 30


def sms_of(device):
    return gp.device_properties(device)["multiprocessors"]


def skip_without_partitions(device):
    if sms_of(device) < 2:
        pytest.skip("a one-SM device has no partitions")
    try:
        gp.Stream(device, sms=1)
    except NotImplementedError as e:  # a CUDA driver without green contexts
        pytest.skip(str(e))
    return device


@pytest.fixture
def partitionable(device):
    return skip_without_partitions(device)


def test_stream_partition_is_rounded_and_the_whole_device_is_none(partitionable):
    d, n = partitionable, sms_of(partitionable)
    s = gp.Stream(d, sms=1)
    assert 1 <= s.sms < n
    assert gp.Stream(d).sms == gp.Stream(d, sms=0).sms == 0
    assert gp.Stream(d, sms=n).sms == 0, "all SMs: a plain stream"
    lo, hi = gp.stream_priority_range(d)
    assert gp.Stream(d, priority=hi - 100, sms=1).priority == hi


@pytest.mark.parametrize(
    "bad, err",
    [
        (-3, ValueError),
        (1 << 40, ValueError),
        ("2", TypeError),
        (1.5, TypeError),
        (True, TypeError),
    ],
)
def test_stream_partition_bad_sizes(device, bad, err):
    with pytest.raises(err, match="sms"):
        gp.Stream(device, sms=bad)


def test_stream_partition_larger_than_the_device(device):
    with pytest.raises(ValueError, match=f"partition of {sms_of(device) + 1} SMs is outside"):
        gp.Stream(device, sms=sms_of(device) + 1)


def test_work_on_a_partitioned_stream_is_exact_and_ordered(partitionable, rng):
    d = partitionable
    a, b = rand(rng, (300, 70), "float32"), rand(rng, (70, 45), "float32")
    s = gp.Stream(d, sms=1)
    with s:
        ga, gb = gp.asarray(a, device=d), gp.asarray(b, device=d)
        c = gp.exp(ga @ gb * 0.01) + 1
        total = gp.sum(c, axis=0)
    s.synchronize()
    ref = np.exp((a.astype(np.float64) @ b) * 0.01) + 1
    np.testing.assert_allclose(host(c), ref, rtol=2e-3)
    np.testing.assert_allclose(host(total), ref.sum(axis=0), rtol=2e-3)
    # A plain stream that waits for the partition sees its results.
    plain = gp.Stream(d)
    plain.wait_stream(s)
    with plain:
        twice = c * 2
    plain.synchronize()
    np.testing.assert_allclose(host(twice), 2 * ref, rtol=2e-3)


SMID = r"""
extern "C" __global__ void smid(int* out, long long spin) {
  unsigned s;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
  long long t0 = clock64();
  while (clock64() - t0 < spin) {}
  if (threadIdx.x == 0) out[blockIdx.x] = (int)s;
}
"""


def sm_ids(stream, device, blocks=2048):
    """The SMs a grid of many short blocks ran on."""
    out = gp.zeros((blocks,), dtype=gp.int32, device=device)
    gp.RawKernel(SMID, "smid")(blocks, 64, (out, np.int64(20000)), stream=stream)
    stream.synchronize()
    return set(host(out).tolist())


@pytest.fixture
def cuda_partitions(cuda):
    return skip_without_partitions(cuda)


def test_kernels_of_a_partitioned_stream_stay_on_its_sms(cuda_partitions):
    cuda = cuda_partitions
    n = sms_of(cuda)
    part = gp.Stream(cuda, sms=n // 2)
    assert 0 < part.sms < n
    assert len(sm_ids(part, cuda)) <= part.sms
    assert len(sm_ids(gp.Stream(cuda), cuda)) > part.sms, "a plain stream spreads wider"


def test_a_small_and_a_large_partition_that_fit_together_are_disjoint(cuda_partitions):
    cuda = cuda_partitions
    n = sms_of(cuda)
    big, small = gp.Stream(cuda, sms=n * 3 // 4), gp.Stream(cuda, sms=n // 5)
    assert big.sms + small.sms <= n
    on_big, on_small = sm_ids(big, cuda), sm_ids(small, cuda)
    assert len(on_big) <= big.sms and len(on_small) <= small.sms
    assert not on_big & on_small


# ---- the scheduler ----


def test_tenants_get_partitions_by_class_or_on_request(partitionable):
    d, n = partitionable, sms_of(partitionable)
    sched = sm.Scheduler(d, memory_capacity=64 * MiB)
    try:
        sched.add_tenant("g", "guaranteed", memory_request=MiB)
        sched.add_tenant("b", "burstable")
        sched.add_tenant("be", "best_effort")
        sched.add_tenant("be_whole", "best_effort", sms=0)
        sched.add_tenant("g_small", "guaranteed", memory_request=MiB, sms=1)
        t = sched.stats()["tenants"]
        assert t["g"]["sms"] == t["b"]["sms"] == t["be_whole"]["sms"] == 0
        automatic = int(n * 0.85)
        assert automatic <= t["be"]["sms"] < n
        assert 1 <= t["g_small"]["sms"] < n
        for bad, err, match in [
            (-1, ValueError, "tenant 'x': negative sms -1"),
            (n + 1, ValueError, f"tenant 'x': stream: a partition of {n + 1} SMs"),
            ("1", TypeError, "sms"),
            (2.0, TypeError, "sms"),
            (1 << 40, ValueError, "out of range"),
        ]:
            with pytest.raises(err, match=match):
                sched.add_tenant("x", "best_effort", sms=bad)
        assert "x" not in sched.tenants()
    finally:
        sched.shutdown()
    for be_sms, lo, hi in [(0, 0, 0), (1, 1, n - 1)]:
        s2 = sm.Scheduler(d, memory_capacity=64 * MiB, best_effort_sms=be_sms)
        try:
            s2.add_tenant("be", "best_effort")
            assert lo <= s2.stats()["tenants"]["be"]["sms"] <= hi
        finally:
            s2.shutdown()
    with pytest.raises(ValueError, match="best_effort_sms -2"):
        sm.Scheduler(d, best_effort_sms=-2)
    with pytest.raises(ValueError, match=f"best_effort_sms {n + 1} exceeds the {n} SMs"):
        sm.Scheduler(d, best_effort_sms=n + 1)


@pytest.mark.parametrize("dtype", ["float64", "bfloat16"])
def test_partitioned_best_effort_matmul_runs_whole_and_exact(partitionable, rng, dtype):
    # A partitioned tenant leaves the other SMs free, so its products are not cut into row
    # blocks (those are for tenants without a partition); the result is the same.
    d = partitionable
    a, b = rand(rng, (257, 64), dtype), rand(rng, (64, 40), dtype)
    ga, gb = gp.asarray(a, device=d), gp.asarray(b, device=d)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    tol = 1e-12 if dtype == "float64" else 2e-2
    for be_sms, split in [(-1, False), (0, True)]:
        sched = sm.Scheduler(
            d,
            memory_capacity=64 * MiB,
            best_effort_sms=be_sms,
            best_effort_slice_flops=2 * 64 * 40 * 10,
        )
        try:
            sched.add_tenant("be", "best_effort")
            assert (sched.stats()["tenants"]["be"]["sms"] == 0) == split
            out = sched.submit("be", lambda: ga @ gb).result(timeout=WAIT)
            launches = sched.stats()["tenants"]["be"]["launches"]
            assert launches >= 4 if split else launches <= 2
            got = host(out.astype(gp.float64))
            np.testing.assert_allclose(got, ref, rtol=tol, atol=tol * np.abs(ref).max())
        finally:
            sched.shutdown()


def test_best_effort_task_kernels_stay_on_the_partition(cuda_partitions):
    cuda = cuda_partitions
    sched = sm.Scheduler(cuda, memory_capacity=64 * MiB)
    try:
        sched.add_tenant("be", "best_effort")
        part = sched.stats()["tenants"]["be"]["sms"]
        assert 0 < part < sms_of(cuda)

        def body():
            out = gp.zeros((2048,), dtype=gp.int32, device=cuda)
            gp.RawKernel(SMID, "smid")(2048, 64, (out, np.int64(20000)))
            return out

        used = set(host(sched.submit("be", body).result(timeout=WAIT)).tolist())
        assert len(used) <= part
    finally:
        sched.shutdown()

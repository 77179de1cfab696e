"""The CUDA launch queue (core/launch_queue.h): ops' kernel launches are handed to a launcher
thread per device. Results must be exactly those of direct launches: ordered on their stream,
seen by copies, other streams, other threads and freed memory; user kernels launch directly and
report their errors at once; PYGPUKIT_LAUNCH_QUEUE=0 turns the queue off. On the CPU backend
nothing is queued."""

import os
import subprocess
import sys
import threading

import numpy as np
import pytest
from helpers import host

import pygpukit as gp

QUEUE_OFF = os.environ.get("PYGPUKIT_LAUNCH_QUEUE") == "0"


def chain(x, n):
    """n dependent tiny ops mixing elementwise, out= and reductions; returns (y, total)."""
    y = x
    total = gp.sum(x)
    for i in range(n):
        y = y + x if i % 3 else gp.multiply(y, 0.5)
        if i % 7 == 0:
            gp.add(y, 1.0, out=y)
        if i % 11 == 0:
            total = total + gp.sum(y)
    return y, total


def chain_ref(a, n):
    y, total = a.copy(), a.sum()
    for i in range(n):
        y = y + a if i % 3 else y * 0.5
        if i % 7 == 0:
            y = y + 1.0
        if i % 11 == 0:
            total = total + y.sum()
    return y, total


def test_a_long_chain_of_tiny_ops_is_exact_and_counted(device, rng):
    a = rng.standard_normal(16)
    x = gp.asarray(a, device=device)
    gp.reset_dispatch_stats()
    y, total = chain(x, 600)
    ref, ref_total = chain_ref(a, 600)
    np.testing.assert_allclose(host(y), ref, rtol=1e-12)
    np.testing.assert_allclose(host(total), ref_total, rtol=1e-12)
    stats = gp.dispatch_stats()
    if device.type == "cpu" or QUEUE_OFF:
        assert stats["queued_kernels"] == 0
    else:
        # A burst goes through the queue: only launches that find the launcher asleep (at the
        # start, and after a pause such as a kernel's first compile) are made directly, at most
        # LaunchQueue::kDirectBeforeWake - 1 = 7 before the eighth wakes it.
        assert stats["device_kernels"] > 600
        assert stats["device_kernels"] // 2 <= stats["queued_kernels"] <= stats["device_kernels"]


@pytest.mark.gpu
def test_queued_work_is_seen_by_another_stream_and_by_freed_memory(cuda, rng):
    a = rng.standard_normal((64, 33)).astype(np.float32)
    s, t = gp.Stream(cuda), gp.Stream(cuda)
    for _ in range(20):
        with s:
            x = gp.asarray(a, device=cuda)
            for _ in range(30):
                x = x * 1.0 + 0.0
            x = x + 2.0
        t.wait_stream(s)
        with t:
            z = gp.sum(x, axis=0)
        t.synchronize()
        np.testing.assert_allclose(host(z), (a + 2.0).sum(axis=0), rtol=1e-5)
        del x, z
        gp.memory.empty_cache(cuda)


@pytest.mark.gpu
def test_memory_returned_to_the_driver_waits_for_queued_launches(cuda, rng):
    big = rng.standard_normal(1 << 24).astype(np.float32)  # 64 MiB: a segment of its own
    expect = big.astype(np.float64).sum()
    for _ in range(5):
        a = gp.asarray(big, device=cuda)
        y = gp.zeros((16,), device=cuda)
        for _ in range(300):  # launches that keep the launcher thread busy for a while
            y = y + 1.0
        total = gp.sum(a)  # queued behind them; reads a
        del a
        # a's segment goes back to the driver (cuMemFree) at once, while the sum that reads it
        # may still wait in the queue: the free must wait for it. (Freed device memory often
        # stays readable until reused, so a free that did not wait can still pass here; the
        # C++ drain rule is what guarantees it.)
        gp.memory.empty_cache(cuda)
        np.testing.assert_allclose(host(total), expect, rtol=1e-4, atol=0.5)
        np.testing.assert_array_equal(host(y), np.full(16, 300.0, np.float32))


@pytest.mark.gpu
def test_threads_queue_launches_on_their_own_streams(cuda, rng):
    data = [rng.standard_normal(1000) for _ in range(8)]
    out, errors = [None] * len(data), []

    def work(i):
        try:
            with gp.Stream(cuda) as s:
                y, total = chain(gp.asarray(data[i], device=cuda), 300)
            s.synchronize()
            out[i] = (host(y), host(total))
        except Exception as e:  # reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(data))]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors
    for i, a in enumerate(data):
        ref, ref_total = chain_ref(a, 300)
        np.testing.assert_allclose(out[i][0], ref, rtol=1e-12)
        np.testing.assert_allclose(out[i][1], ref_total, rtol=1e-12)


# Static shared memory plus a dynamic request past the device's limit: refused by the driver at
# launch, not by our checks before it.
BIG = r"""
extern "C" __global__ void big(float* p, float v) {
  __shared__ float s[12000];
  s[threadIdx.x] = v;
  __syncthreads();
  p[threadIdx.x] = s[threadIdx.x];
}
"""


@pytest.mark.gpu
def test_a_user_kernel_fails_at_once_and_leaves_the_queue_working(cuda):
    x = gp.zeros((1024,), dtype=gp.float32, device=cuda)
    y = x + 1.0  # queued work before the failing launch
    big = gp.RawKernel(BIG, "big")
    limit = gp.device_properties(cuda)["max_shared_memory_per_block"]
    with pytest.raises(RuntimeError, match="big: launch with grid"):
        big(1, 1024, (x, np.float32(3.0)), shared_mem=limit)
    big(1, 512, (x, np.float32(3.0)))
    z = x + y
    expect = np.ones(1024, np.float32)
    expect[:512] += 3.0
    np.testing.assert_array_equal(host(z), expect)


CHILD = r"""
import numpy as np, pygpukit as gp
x = gp.asarray(np.arange(16.0), device="cuda")
gp.reset_dispatch_stats()
y = x
for _ in range(50):
    y = y + x
s = gp.dispatch_stats()
print(s["queued_kernels"], s["device_kernels"], float(gp.sum(y).item()))
"""


@pytest.mark.gpu
def test_the_queue_can_be_turned_off(cuda):
    env = dict(os.environ, PYGPUKIT_LAUNCH_QUEUE="0", PYGPUKIT_DEVICE="cuda")
    r = subprocess.run(
        [sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, check=True
    )
    queued, kernels, total = r.stdout.split()
    assert int(queued) == 0 and int(kernels) >= 50
    assert float(total) == 51 * np.arange(16.0).sum()


EXIT = r"""
import pygpukit as gp
x = gp.ones((16,), device="cuda")
gp.reset_dispatch_stats()
for _ in range(2000):
    y = x + x
print("queued", gp.dispatch_stats()["device_kernels"])
"""


@pytest.mark.gpu
def test_a_process_exits_cleanly_with_launches_still_queued(cuda):
    env = dict(os.environ, PYGPUKIT_DEVICE="cuda")
    env.pop("PYGPUKIT_LAUNCH_QUEUE", None)
    r = subprocess.run(
        [sys.executable, "-c", EXIT], env=env, capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["queued", "2000"]

"""Memory benchmarks: the device pool, fragmentation, host <-> device transfers and spill, with
torch, CuPy and the raw CUDA driver measured beside pygpukit in the same process.

Sections (each prints a table: case, ours, peers, ratio, target):
  alloc     per-call latency of creating and dropping a 1 MiB float32 array (gp.empty vs
            torch.empty vs cupy.empty), and the driver's cuMemAlloc/cuMemFree and
            cuMemAllocAsync/cuMemFreeAsync called through ctypes (plus cudaMalloc/cudaFree through
            cupy.cuda.runtime). Host wall clock (time.perf_counter_ns) over a loop of `iters`
            calls, median of `reps` loops; the loop itself costs ~0.03 us per call (reported).
  frag      fragmentation probe: one seeded trace of 20k ops (allocate a log-uniform size in
            1 B .. 64 MiB, or free a random live block; live bytes kept under a cap) replayed on
            each library. At the op where the live (requested) bytes peak: live / reserved.
  transfer  1 GiB float32 NumPy -> device, and device -> NumPy three ways: into the library's own
            new result (gp.to_numpy(x) / t.cpu().numpy() / cupy.asnumpy), into a fresh np.empty
            per call (first-touch page faults included) and into a reused array; and pinned DMA.
            GB/s from host wall clock around the blocking call and a device synchronize, median
            of `reps` after a warm-up; every result is checked bit-exactly.
  spill     a 1 GiB evictable array: gp.memory.evict(x) (device -> pinned host, blocking), then a
            use of it (x[:1] + 0, then synchronize) pages it back in; GB/s each way.

Peers are optional: without torch / CuPy / a GPU their columns are skipped with a note. On the
CPU backend (--device cpu) everything runs with small sizes for a smoke test; its numbers mean
nothing. CUDA results go to <out>/<gpu>-sm<XY>-memory.json (CPU runs write JSON only with --out).
"""

import argparse
import ctypes
import functools
import gc
import json
import math
import os
import platform
import statistics
import sys
import time

import numpy as np

import pygpukit as gp

MiB = 1 << 20
GiB = 1 << 30

# Targets and anchors of the issue (H100 SXM).
TARGET_EMPTY_US = 2.0
TARGET_FRAG_RATIO = 0.95
TARGET_TRANSFER_GBS = 25.0
ANCHOR_PINNED_GBS = 55.0


# ---------------------------------------------------------------- helpers


class Peers:
    """torch / CuPy / the CUDA driver when usable for `device`, else None with a note why."""

    def __init__(self, device):
        self.notes = {}
        self.torch = self.cupy = self.driver = None
        if device.type != "cuda":
            for name in ("torch", "cupy", "driver"):
                self.notes[name] = "peers measure CUDA; the device is the CPU backend"
            return
        try:
            import torch

            if torch.cuda.is_available():
                self.torch = torch
            else:
                self.notes["torch"] = "torch.cuda.is_available() is False"
        except Exception as e:  # noqa: BLE001 - any import failure means "skip this peer"
            self.notes["torch"] = f"not importable ({type(e).__name__}: {e})"
        try:
            import cupy

            cupy.cuda.runtime.getDeviceCount()
            self.cupy = cupy
        except Exception as e:  # noqa: BLE001
            self.notes["cupy"] = f"not usable ({type(e).__name__}: {e})"
        try:
            self.driver = Driver(device.index)
        except Exception as e:  # noqa: BLE001
            self.notes["driver"] = f"libcuda.so.1 not usable ({type(e).__name__}: {e})"

    def versions(self):
        v = {}
        if self.torch is not None:
            v["torch"] = self.torch.__version__
        if self.cupy is not None:
            v["cupy"] = self.cupy.__version__
        return v


class Driver:
    """The CUDA driver API through ctypes (no linking): the primary context of `index` made
    current on this thread, and the four allocation entry points."""

    def __init__(self, index):
        cu = ctypes.CDLL("libcuda.so.1")
        u64, sz, vp = ctypes.c_uint64, ctypes.c_size_t, ctypes.c_void_p
        self.alloc = cu.cuMemAlloc_v2
        self.alloc.argtypes, self.alloc.restype = [ctypes.POINTER(u64), sz], ctypes.c_int
        self.free = cu.cuMemFree_v2
        self.free.argtypes, self.free.restype = [u64], ctypes.c_int
        self.alloc_async = cu.cuMemAllocAsync
        self.alloc_async.argtypes = [ctypes.POINTER(u64), sz, vp]
        self.alloc_async.restype = ctypes.c_int
        self.free_async = cu.cuMemFreeAsync
        self.free_async.argtypes, self.free_async.restype = [u64, vp], ctypes.c_int
        self.sync = cu.cuCtxSynchronize
        self.sync.restype = ctypes.c_int
        dev, ctx = ctypes.c_int(), ctypes.c_void_p()
        self._check(cu.cuInit(0), "cuInit")
        self._check(cu.cuDeviceGet(ctypes.byref(dev), index), "cuDeviceGet")
        self._check(cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
        self._check(cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")

    @staticmethod
    def _check(rc, what):
        if rc != 0:
            raise RuntimeError(f"{what} failed with CUresult {rc}")

    def alloc_free_loop(self, nbytes, n):
        p = ctypes.c_uint64()
        pp, alloc, free = ctypes.byref(p), self.alloc, self.free
        err = 0
        for _ in range(n):
            err |= alloc(pp, nbytes)
            err |= free(p)
        self._check(err, "cuMemAlloc/cuMemFree")

    def alloc_free_async_loop(self, nbytes, n):
        p = ctypes.c_uint64()
        pp, alloc, free = ctypes.byref(p), self.alloc_async, self.free_async
        err = 0
        for _ in range(n):
            err |= alloc(pp, nbytes, None)
            err |= free(p, None)
        self._check(err | self.sync(), "cuMemAllocAsync/cuMemFreeAsync")


def _loop_ns(fn, iters, reps):
    """Median per-call host time in ns of `fn()` called `iters` times in a loop."""
    gc_was = gc.isenabled()
    gc.disable()
    try:
        for _ in range(max(iters // 10, 10)):
            fn()
        samples = []
        for _ in range(reps):
            t0 = time.perf_counter_ns()
            for _ in range(iters):
                fn()
            samples.append((time.perf_counter_ns() - t0) / iters)
    finally:
        if gc_was:
            gc.enable()
    return statistics.median(samples)


def _batch_ns(loop, iters, reps):
    """Median per-call ns of `loop(n)`, which makes n calls itself (no per-call Python frame)."""
    loop(max(iters // 10, 10))
    samples = []
    for _ in range(reps):
        t0 = time.perf_counter_ns()
        loop(iters)
        samples.append((time.perf_counter_ns() - t0) / iters)
    return statistics.median(samples)


def _bandwidth(fn, nbytes, reps):
    """(GB/s from the median wall time of `fn()`, the last result). One warm-up call; the
    previous result is dropped before each timed call so that memory is reused, not grown."""
    res = fn()
    times = []
    for _ in range(reps):
        res = None
        t0 = time.perf_counter()
        res = fn()
        times.append(time.perf_counter() - t0)
    return nbytes / statistics.median(times) / 1e9, res


def _fmt(v, unit=""):
    if v is None:
        return "-"
    if isinstance(v, str):
        return v
    return f"{v:.3g}{unit}" if abs(v) < 1000 else f"{v:.0f}{unit}"


def _table(title, rows, cols):
    """Prints `rows` (dicts) under `title`, columns (key, header) in `cols`."""
    print(f"\n== {title}")
    cells = [[h for _, h in cols]] + [[_fmt(r.get(k)) for k, _ in cols] for r in rows]
    widths = [max(len(c[i]) for c in cells) for i in range(len(cols))]
    for i, line in enumerate(cells):
        print(
            "  ".join(c.rjust(w) if j else c.ljust(w) for j, (c, w) in enumerate(zip(line, widths)))
        )
        if i == 0:
            print("  ".join("-" * w for w in widths))


def _ratio(peer, ours, higher_is_better):
    if peer is None or ours is None or ours == 0 or peer == 0:
        return None
    return ours / peer if higher_is_better else peer / ours


# ---------------------------------------------------------------- (a) allocation latency


def bench_alloc(dev, peers, iters, reps):
    n = 262144  # 1 MiB of float32
    nbytes = n * 4
    rows = []
    base = _loop_ns(functools.partial(len, ()), iters, reps)
    ours = _loop_ns(functools.partial(gp.empty, (n,), dtype=gp.float32, device=dev), iters, reps)
    row = {
        "case": "empty((262144,), float32) create+drop",
        "ours_us": ours / 1e3,
        "target_us": TARGET_EMPTY_US,
        "loop_overhead_us": base / 1e3,
    }
    if peers.torch is not None:
        torch = peers.torch
        tdev = torch.device("cuda", dev.index)
        fn = functools.partial(torch.empty, (n,), dtype=torch.float32, device=tdev)
        row["torch_us"] = _loop_ns(fn, iters, reps) / 1e3
    if peers.cupy is not None:
        cp = peers.cupy
        with cp.cuda.Device(dev.index):
            row["cupy_us"] = (
                _loop_ns(functools.partial(cp.empty, (n,), cp.float32), iters, reps) / 1e3
            )
    for peer in ("torch", "cupy"):
        row[f"ratio_vs_{peer}"] = _ratio(row.get(f"{peer}_us"), row["ours_us"], False)
    rows.append(row)

    # The driver, per allocate + free pair (1 MiB), for scale.
    drv_iters = max(iters // 4, 100)
    drivers = []
    if peers.driver is not None:
        d = peers.driver
        drivers.append(("cuMemAlloc+cuMemFree (ctypes)", d.alloc_free_loop))
        drivers.append(("cuMemAllocAsync+cuMemFreeAsync (ctypes)", d.alloc_free_async_loop))
    if peers.cupy is not None:
        rt = peers.cupy.cuda.runtime

        def cuda_malloc_loop(size, k):
            with peers.cupy.cuda.Device(dev.index):
                for _ in range(k):
                    rt.free(rt.malloc(size))

        drivers.append(("cudaMalloc+cudaFree (cupy.cuda.runtime)", cuda_malloc_loop))
    for case, loop in drivers:
        ns = _batch_ns(functools.partial(loop, nbytes), drv_iters, reps)
        rows.append({"case": case, "driver_us": ns / 1e3})
    _table(
        "alloc: per-call latency (us, host wall clock, median)",
        rows,
        [
            ("case", "case"),
            ("ours_us", "ours"),
            ("torch_us", "torch"),
            ("cupy_us", "cupy"),
            ("driver_us", "driver"),
            ("ratio_vs_torch", "torch/ours"),
            ("ratio_vs_cupy", "cupy/ours"),
            ("target_us", "target"),
        ],
    )
    print(f"  (python loop overhead per call: {base / 1e3:.3f} us, included in every figure)")
    return rows


# ---------------------------------------------------------------- (b) fragmentation probe


def make_trace(n_ops, cap, max_size, seed, dist="loguniform"):
    """A list of (op, id, size): op 1 allocates `size` bytes as block `id`, op 0 frees block `id`.
    Allocations have log-uniform (or uniform) sizes in [1, max_size]; 55% of ops allocate (while
    the live bytes stay under `cap`), the rest free a uniformly chosen live block. Fixed by
    `seed`."""
    rng = np.random.default_rng(seed)
    if dist == "uniform":
        sizes = rng.integers(1, max_size + 1, n_ops).astype(np.int64)
    else:
        sizes = np.exp(rng.uniform(0.0, math.log(max_size + 1), n_ops)).astype(np.int64)
    sizes = np.clip(sizes, 1, max_size)
    coins = rng.random(n_ops)
    picks = rng.random(n_ops)
    trace, live, size_of = [], [], {}
    live_bytes, next_id = 0, 0
    for i in range(n_ops):
        size = int(sizes[i])
        if live and (coins[i] >= 0.55 or live_bytes + size > cap):
            j = int(picks[i] * len(live))
            bid = live[j]
            live[j] = live[-1]
            live.pop()
            live_bytes -= size_of.pop(bid)
            trace.append((0, bid, 0))
        else:
            live.append(next_id)
            size_of[next_id] = size
            live_bytes += size
            trace.append((1, next_id, size))
            next_id += 1
    return trace


def _trace_live(trace):
    """Live bytes after each op, and the index of the first op at the peak."""
    live, size_of, out = 0, {}, []
    for op, bid, size in trace:
        if op:
            size_of[bid] = size
            live += size
        else:
            live -= size_of.pop(bid)
        out.append(live)
    peak_at = max(range(len(out)), key=out.__getitem__)
    return out, peak_at


def _replay(trace, peak_at, alloc, sample, oom):
    """Replays `trace` with `alloc(size)` (dropping an object frees it). Returns (`sample()`
    right after op `peak_at`, seconds per op, index of the op that raised an `oom` exception or
    None)."""
    live = {}
    at_peak, failed = None, None
    t0 = time.perf_counter()
    i = 0
    try:
        for i, (op, bid, size) in enumerate(trace):
            if op:
                live[bid] = alloc(size)
            else:
                del live[bid]
            if i == peak_at:
                at_peak = sample()
    except oom:
        failed = i
    dt = time.perf_counter() - t0
    live.clear()
    return at_peak, dt / (i + 1), failed


def _frag_row(library, peak_live, at_peak, per_op, failed, peak_reserved, extra):
    """A result row; `at_peak` is (reserved, allocated) bytes above the baseline."""
    row = {"library": library, "us_per_op": per_op * 1e6, **extra}
    if failed is not None:
        row.update({"failed_at_op": failed, "ratio": None})
        return row
    reserved, allocated = at_peak
    row.update(
        {
            "ratio": peak_live / reserved,
            "reserved_at_peak": reserved,
            "allocated_at_peak": allocated,
            "peak_reserved": peak_reserved,
        }
    )
    return row


def _frag_gp(dev, trace, peak_at, peak_live, limit, policy="fast"):
    """The trace on pygpukit's pool (nothing else may be allocated meanwhile) under memory
    policy `policy`; `limit` (bytes above what is reserved before the replay) or None."""
    gc.collect()
    gp.synchronize(dev)
    gp.memory.empty_cache(dev)
    gp.memory.reset_peak_stats(dev)
    old_limit = gp.memory.get_limit(dev)
    old_policy = gp.memory.get_policy(dev)
    gp.memory.set_policy(policy, device=dev)
    s0 = gp.memory.stats(dev)
    if limit is not None:
        gp.memory.set_limit(s0["reserved_bytes"] + limit, device=dev)
    seen = {}

    def sample():
        s = gp.memory.stats(dev)
        seen["requested"] = s["requested_bytes"] - s0["requested_bytes"]
        seen["largest_free_block"] = s["largest_free_block"]
        seen["segments"] = s["segments"] - s0["segments"]
        return (
            s["reserved_bytes"] - s0["reserved_bytes"],
            s["allocated_bytes"] - s0["allocated_bytes"],
        )

    empty = functools.partial(gp.empty, dtype=gp.uint8, device=dev)
    try:
        at_peak, per_op, failed = _replay(
            trace, peak_at, lambda k: empty((k,)), sample, MemoryError
        )
    finally:
        gp.memory.set_limit(old_limit, device=dev)
        gp.memory.set_policy(old_policy, device=dev)
    s1 = gp.memory.stats(dev)
    gp.memory.empty_cache(dev)
    name = "pygpukit" + ("" if policy == "fast" else f" {policy}")
    name += "" if limit is None else ", limit"
    row = _frag_row(
        name,
        peak_live,
        at_peak,
        per_op,
        failed,
        s1["peak_reserved_bytes"] - s0["reserved_bytes"],
        {
            "driver_allocations": s1["num_driver_allocations"] - s0["num_driver_allocations"],
            "segments_released": s1["num_evictions"] - s0["num_evictions"],
            "baseline_reserved": s0["reserved_bytes"],
        },
    )
    if failed is None:
        row["segments_at_peak"] = seen["segments"]
        row["largest_free_block_at_peak"] = seen["largest_free_block"]
        row["requested_matches_trace"] = seen["requested"] == peak_live
    return row


def _frag_torch(torch, dev, trace, peak_at, peak_live, limit, expandable):
    tdev = torch.device("cuda", dev.index)
    name = "torch" + (" expandable_segments" if expandable else "") + (", limit" if limit else "")
    settings = getattr(torch._C, "_accelerator_setAllocatorSettings", None) or getattr(
        torch.cuda.memory, "_set_allocator_settings", None
    )
    if expandable:
        if settings is None:
            return {"library": name, "ratio": None, "error": "not supported by this torch"}
        settings("expandable_segments:True")
    try:
        torch.cuda.synchronize(tdev)
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(tdev)
        t0 = torch.cuda.memory_stats(tdev)
        r0 = t0.get("reserved_bytes.all.current", 0)
        a0 = t0.get("allocated_bytes.all.current", 0)
        if limit is not None:
            total = torch.cuda.get_device_properties(tdev).total_memory
            torch.cuda.set_per_process_memory_fraction(min(1.0, (r0 + limit) / total), tdev)

        def sample():
            st = torch.cuda.memory_stats(tdev)
            return (
                st["reserved_bytes.all.current"] - r0,
                st["allocated_bytes.all.current"] - a0,
            )

        at_peak, per_op, failed = _replay(
            trace,
            peak_at,
            lambda k: torch.empty((k,), dtype=torch.uint8, device=tdev),
            sample,
            torch.cuda.OutOfMemoryError,
        )
        t1 = torch.cuda.memory_stats(tdev)
    finally:
        if limit is not None:
            torch.cuda.set_per_process_memory_fraction(1.0, tdev)
        torch.cuda.empty_cache()
        if expandable:
            settings("expandable_segments:False")
    return _frag_row(
        name,
        peak_live,
        at_peak,
        per_op,
        failed,
        t1["reserved_bytes.all.peak"] - r0,
        {
            "driver_allocations": t1.get("segment.all.allocated", 0)
            - t0.get("segment.all.allocated", 0),
            "baseline_reserved": r0,
        },
    )


def _frag_cupy(cp, dev, trace, peak_at, peak_live):
    with cp.cuda.Device(dev.index):
        pool = cp.get_default_memory_pool()
        cp.cuda.Device().synchronize()
        pool.free_all_blocks()
        r0, u0 = pool.total_bytes(), pool.used_bytes()
        peak = [0]

        def alloc(k):
            a = cp.empty((k,), dtype=cp.uint8)
            peak[0] = max(peak[0], pool.total_bytes() - r0)
            return a

        def sample():
            return pool.total_bytes() - r0, pool.used_bytes() - u0

        at_peak, per_op, failed = _replay(
            trace, peak_at, alloc, sample, cp.cuda.memory.OutOfMemoryError
        )
        pool.free_all_blocks()
    return _frag_row("cupy", peak_live, at_peak, per_op, failed, peak[0], {"baseline_reserved": r0})


def bench_frag(dev, peers, n_ops, cap, seed, dist):
    max_size = 64 * MiB
    trace = make_trace(n_ops, cap, max_size, seed, dist)
    live, peak_at = _trace_live(trace)
    peak_live = live[peak_at]
    # The limit at which reserved <= limit means the target is met: can the pool serve the
    # trace within it (releasing cached segments under pressure) instead of failing?
    limit = math.ceil(peak_live / TARGET_FRAG_RATIO)
    info = {
        "ops": n_ops,
        "seed": seed,
        "size_distribution": dist,
        "cap_bytes": cap,
        "max_size": max_size,
        "allocations": sum(op for op, _, _ in trace),
        "peak_live_bytes": peak_live,
        "peak_at_op": peak_at,
        "limit_bytes": limit,
    }
    rows = [
        _frag_gp(dev, trace, peak_at, peak_live, lim, policy)
        for policy in ("fast", "compact")
        for lim in (None, limit)
    ]
    if peers.torch is not None:
        for expandable, lim in ((False, None), (False, limit), (True, None)):
            try:
                rows.append(
                    _frag_torch(peers.torch, dev, trace, peak_at, peak_live, lim, expandable)
                )
            except Exception as e:  # noqa: BLE001 - a peer variant that fails is reported
                name = "torch" + (" expandable_segments" if expandable else "")
                rows.append({"library": name, "ratio": None, "error": f"{type(e).__name__}: {e}"})
    if peers.cupy is not None:
        rows.append(_frag_cupy(peers.cupy, dev, trace, peak_at, peak_live))

    for r in rows:
        r["target"] = TARGET_FRAG_RATIO if r["library"].startswith("pygpukit") else None

    def mib(v):
        return None if v is None else f"{v / MiB:.1f}"

    shown = [
        dict(
            r,
            ratio=r["ratio"]
            if r["ratio"] is not None
            else r.get("error", f"MemoryError at op {r.get('failed_at_op')}"),
            reserved_at_peak=mib(r.get("reserved_at_peak")),
            allocated_at_peak=mib(r.get("allocated_at_peak")),
            peak_reserved=mib(r.get("peak_reserved")),
        )
        for r in rows
    ]
    _table(
        f"frag: {n_ops} ops, seed {seed}, sizes 1 B..64 MiB {dist}, live cap "
        f"{cap / MiB:.0f} MiB; live (requested) bytes at the peak {peak_live / MiB:.1f} MiB "
        f"(op {peak_at}); 'limit' rows cap reserved at peak live / {TARGET_FRAG_RATIO} = "
        f"{limit / MiB:.1f} MiB",
        shown,
        [
            ("library", "library"),
            ("ratio", "live/reserved at peak"),
            ("allocated_at_peak", "allocated MiB"),
            ("reserved_at_peak", "reserved MiB"),
            ("peak_reserved", "peak reserved MiB"),
            ("us_per_op", "us/op"),
            ("target", "target"),
        ],
    )
    if rows[0].get("requested_matches_trace") is False:
        print(
            "  WARNING: the pool's requested_bytes at the peak differs from the trace's live bytes"
        )
    return {"trace": info, "results": rows}


# ---------------------------------------------------------------- (c) transfers


D2H_OWN = "d2h, library-allocated result"
D2H_FRESH = "d2h pageable, fresh np.empty out"
D2H_REUSED = "d2h pageable, reused out"


def bench_transfer(dev, peers, nbytes, reps):
    n = nbytes // 4
    rng = np.random.default_rng(0)
    src = rng.standard_normal(n, dtype=np.float32)
    reused = np.empty_like(src)
    reused.fill(0)  # touched once: the reused destination has its pages mapped
    rows = {}
    checks = {}

    def put(case, lib, gbs):
        rows.setdefault(case, {"case": case})[f"{lib}_gbs"] = gbs

    def check(what, host):
        ok = bool(np.array_equal(host, src))
        checks[what] = ok
        if not ok:
            print(f"  MISMATCH: {what} does not reproduce the source", file=sys.stderr)

    # pygpukit
    def gp_h2d():
        x = gp.asarray(src, device=dev)
        gp.synchronize(dev)
        return x

    def gp_d2h_fresh():
        return gp.to_numpy(x, out=np.empty(n, np.float32))

    gbs, x = _bandwidth(gp_h2d, nbytes, reps)
    put("h2d pageable", "ours", gbs)
    pinned0 = gp.memory.pinned_stats(dev)["allocated_bytes"]
    gbs, host = _bandwidth(lambda: gp.to_numpy(x), nbytes, reps)
    put(D2H_OWN, "ours", gbs)
    # to_numpy may hand back pinned memory (then this row is a DMA, not a pageable copy).
    result_pinned = gp.memory.pinned_stats(dev)["allocated_bytes"] - pinned0 >= nbytes
    check("gp h2d + d2h own result", host)
    host = None
    gbs, host = _bandwidth(gp_d2h_fresh, nbytes, reps)
    put(D2H_FRESH, "ours", gbs)
    check("gp d2h fresh np.empty", host)
    host = None
    gbs, _ = _bandwidth(lambda: gp.to_numpy(x, out=reused), nbytes, reps)
    put(D2H_REUSED, "ours", gbs)
    check("gp d2h reused", reused)
    pin_src = gp.memory.pinned_empty((n,), gp.float32, device=dev)
    pin_dst = gp.memory.pinned_empty((n,), gp.float32, device=dev)
    pin_src[...] = src
    x = None

    def gp_h2d_pinned():
        y = gp.asarray(pin_src, device=dev)
        gp.synchronize(dev)
        return y

    gbs, x = _bandwidth(gp_h2d_pinned, nbytes, reps)
    put("h2d pinned (DMA)", "ours", gbs)
    gbs, _ = _bandwidth(lambda: gp.to_numpy(x, out=pin_dst), nbytes, reps)
    put("d2h pinned (DMA)", "ours", gbs)
    check("gp pinned h2d + d2h", pin_dst)
    x = pin_src = pin_dst = None
    reused.fill(0)

    if peers.torch is not None:
        torch = peers.torch
        tdev = torch.device("cuda", dev.index)

        def torch_h2d():
            t = torch.from_numpy(src).to(tdev)
            torch.cuda.synchronize(tdev)
            return t

        def torch_d2h_into(dst):
            torch.from_numpy(dst).copy_(t)
            torch.cuda.synchronize(tdev)
            return dst

        gbs, t = _bandwidth(torch_h2d, nbytes, reps)
        put("h2d pageable", "torch", gbs)
        gbs, host = _bandwidth(lambda: t.cpu().numpy(), nbytes, reps)
        put(D2H_OWN, "torch", gbs)
        check("torch h2d + d2h own result", host)
        host = None
        gbs, host = _bandwidth(lambda: torch_d2h_into(np.empty(n, np.float32)), nbytes, reps)
        put(D2H_FRESH, "torch", gbs)
        check("torch d2h fresh np.empty", host)
        host = None
        gbs, _ = _bandwidth(lambda: torch_d2h_into(reused), nbytes, reps)
        put(D2H_REUSED, "torch", gbs)
        check("torch d2h reused", reused)
        tp_src = torch.empty(n, dtype=torch.float32, pin_memory=True)
        tp_dst = torch.empty(n, dtype=torch.float32, pin_memory=True)
        tp_src.numpy()[...] = src
        t = None

        def torch_h2d_pinned():
            y = tp_src.to(tdev, non_blocking=True)
            torch.cuda.synchronize(tdev)
            return y

        def torch_d2h_pinned():
            tp_dst.copy_(t, non_blocking=True)
            torch.cuda.synchronize(tdev)

        gbs, t = _bandwidth(torch_h2d_pinned, nbytes, reps)
        put("h2d pinned (DMA)", "torch", gbs)
        gbs, _ = _bandwidth(torch_d2h_pinned, nbytes, reps)
        put("d2h pinned (DMA)", "torch", gbs)
        check("torch pinned h2d + d2h", tp_dst.numpy())
        t = tp_src = tp_dst = None
        torch.cuda.empty_cache()
        reused.fill(0)

    if peers.cupy is not None:
        cp = peers.cupy
        with cp.cuda.Device(dev.index):

            def cupy_h2d():
                c = cp.asarray(src)
                cp.cuda.Device().synchronize()
                return c

            def cupy_d2h_into(dst):
                c.get(out=dst)
                cp.cuda.Device().synchronize()
                return dst

            gbs, c = _bandwidth(cupy_h2d, nbytes, reps)
            put("h2d pageable", "cupy", gbs)
            gbs, host = _bandwidth(lambda: cp.asnumpy(c), nbytes, reps)
            put(D2H_OWN, "cupy", gbs)
            check("cupy h2d + d2h own result", host)
            host = None
            gbs, host = _bandwidth(lambda: cupy_d2h_into(np.empty(n, np.float32)), nbytes, reps)
            put(D2H_FRESH, "cupy", gbs)
            check("cupy d2h fresh np.empty", host)
            host = None
            gbs, _ = _bandwidth(lambda: cupy_d2h_into(reused), nbytes, reps)
            put(D2H_REUSED, "cupy", gbs)
            check("cupy d2h reused", reused)
            c = None
            cp.get_default_memory_pool().free_all_blocks()

    out = list(rows.values())
    for r in out:
        pinned = "pinned" in r["case"]
        r["target_gbs"] = None if pinned else TARGET_TRANSFER_GBS
        if pinned:
            r["anchor_gbs"] = ANCHOR_PINNED_GBS
        for peer in ("torch", "cupy"):
            r[f"ratio_vs_{peer}"] = _ratio(r.get(f"{peer}_gbs"), r.get("ours_gbs"), True)
    _table(
        f"transfer: {nbytes / GiB:.3g} GiB float32, GB/s (wall clock incl. synchronize, "
        f"median of {reps})",
        [dict(r, target_gbs=r["target_gbs"] or f"anchor {ANCHOR_PINNED_GBS:g}") for r in out],
        [
            ("case", "case"),
            ("ours_gbs", "ours"),
            ("torch_gbs", "torch"),
            ("cupy_gbs", "cupy"),
            ("ratio_vs_torch", "ours/torch"),
            ("ratio_vs_cupy", "ours/cupy"),
            ("target_gbs", "target"),
        ],
    )
    if result_pinned:
        print(
            f"  note: gp.to_numpy(x) without out= returned pinned memory, so '{D2H_OWN}' is a "
            "DMA for ours; torch / CuPy return pageable arrays"
        )
    print(f"  correctness: {'all bit-exact' if all(checks.values()) else checks}")
    return {"bytes": nbytes, "results": out, "checks": checks, "ours_result_pinned": result_pinned}


# ---------------------------------------------------------------- (d) spill round trip


def bench_spill(dev, nbytes, reps):
    n = nbytes // 4
    src = np.random.default_rng(1).standard_normal(n, dtype=np.float32)
    x = gp.asarray(src, device=dev)
    gp.memory.set_evictable(x)
    gp.synchronize(dev)
    s0 = gp.memory.stats(dev)
    out_t, in_t = [], []
    first = None
    for i in range(reps + 1):  # the first round also allocates the pinned host copy
        gp.synchronize(dev)
        t0 = time.perf_counter()
        gp.memory.evict(x)
        t1 = time.perf_counter()
        if gp.memory.is_resident(x):
            raise RuntimeError("spill: x is still resident after gp.memory.evict(x)")
        t2 = time.perf_counter()
        y = x[:1] + 0  # pinning x for the add pages all of it back in
        gp.synchronize(dev)
        t3 = time.perf_counter()
        if not gp.memory.is_resident(x):
            raise RuntimeError("spill: x is not resident after use")
        if float(y.item()) != float(src[0]):
            raise RuntimeError(f"spill: x[0] is {y.item()} after page-in, expected {src[0]}")
        if i == 0:
            first = (t1 - t0, t3 - t2)
        else:
            out_t.append(t1 - t0)
            in_t.append(t3 - t2)
    s1 = gp.memory.stats(dev)
    ok = bool(np.array_equal(gp.to_numpy(x), src))
    gp.memory.set_evictable(x, False)
    x = y = None
    res = {
        "bytes": nbytes,
        "spill_gbs": nbytes / statistics.median(out_t) / 1e9,
        "page_in_gbs": nbytes / statistics.median(in_t) / 1e9,
        "round_trip_gbs": 2 * nbytes / (statistics.median(out_t) + statistics.median(in_t)) / 1e9,
        "first_spill_gbs": nbytes / first[0] / 1e9,
        "first_page_in_gbs": nbytes / first[1] / 1e9,
        "spills": s1["num_spills"] - s0["num_spills"],
        "page_ins": s1["num_page_ins"] - s0["num_page_ins"],
        "bit_exact": ok,
    }
    rows = [
        {"case": "spill (evict: device -> pinned host)", "gbs": res["spill_gbs"]},
        {"case": "page-in (x[:1] + 0, synchronize)", "gbs": res["page_in_gbs"]},
        {"case": "round trip (2 x bytes / both times)", "gbs": res["round_trip_gbs"]},
        {"case": "first spill (pinned copy allocated)", "gbs": res["first_spill_gbs"]},
        {"case": "first page-in", "gbs": res["first_page_in_gbs"]},
    ]
    _table(
        f"spill: {nbytes / GiB:.3g} GiB evictable array, GB/s (wall clock, median of {reps})",
        rows,
        [("case", "case"), ("gbs", "ours")],
    )
    print(
        f"  spills {res['spills']}, page-ins {res['page_ins']}, "
        f"data {'bit-exact' if ok else 'CORRUPTED'} after {reps + 1} round trips"
    )
    if not ok:
        print("  MISMATCH: the spilled array's data changed", file=sys.stderr)
    return res


# ---------------------------------------------------------------- main


def main():
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--device", default=None, help="cpu, cuda or cuda:N (default: the default)")
    p.add_argument("--quick", action="store_true", help="small sizes and few repeats")
    p.add_argument("--sections", default="alloc,frag,transfer,spill")
    p.add_argument("--out", default=None, help="JSON folder (default benchmarks/results on CUDA)")
    p.add_argument("--iters", type=int, default=None, help="calls per timing loop (alloc)")
    p.add_argument("--reps", type=int, default=None, help="repeats (median)")
    p.add_argument("--frag-ops", type=int, default=None)
    p.add_argument("--frag-cap-mib", type=int, default=None, help="live-bytes cap of the trace")
    p.add_argument("--frag-seed", type=int, default=1234)
    p.add_argument("--transfer-mib", type=int, default=None)
    args = p.parse_args()

    dev = gp.default_device() if args.device is None else gp.Device(args.device)
    quick = args.quick
    iters = args.iters or (2000 if quick else 20000)
    reps = args.reps or (3 if quick else 7)
    frag_ops = args.frag_ops or (2000 if quick else 20000)
    # The probe never touches its memory, so even on the CPU backend the full cap costs only
    # address space; --quick shrinks it.
    frag_cap = (args.frag_cap_mib or (256 if quick else 3072)) * MiB
    transfer_bytes = (args.transfer_mib or (64 if quick else 1024)) * MiB
    sections = args.sections.split(",")

    props = gp.device_properties(dev)
    peers = Peers(dev)
    print(f"pygpukit {gp.__version__} on {dev} ({props['name']})", flush=True)
    for name, why in peers.notes.items():
        print(f"  skipping {name}: {why}")

    result = {
        "device": str(dev),
        "gpu": props["name"],
        "sm": props["sm"],
        "driver": props["driver_version"],
        "pygpukit": gp.__version__,
        "numpy": np.__version__,
        "python": platform.python_version(),
        "host_cpus": os.cpu_count(),
        "quick": quick,
        "peers": peers.versions(),
        "skipped": peers.notes,
        "timing": "host wall clock (perf_counter); alloc: per call in a loop, median of repeats; "
        "transfers: blocking call + device synchronize, median after a warm-up",
    }
    if "alloc" in sections:
        result["alloc"] = bench_alloc(dev, peers, iters, reps)
    if "frag" in sections:
        # Log-uniform sizes (most allocations small, most bytes large) and uniform sizes.
        result["frag"] = {
            dist: bench_frag(dev, peers, frag_ops, frag_cap, args.frag_seed, dist)
            for dist in ("loguniform", "uniform")
        }
    if "transfer" in sections:
        result["transfer"] = bench_transfer(dev, peers, transfer_bytes, reps)
    if "spill" in sections:
        try:
            result["spill"] = bench_spill(dev, transfer_bytes, reps)
        except NotImplementedError as e:
            result["spill"] = None
            print(f"\n== spill: not available on {dev}: {e}")

    out = args.out
    if out is None and dev.type == "cuda":
        out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
    if out is None:
        print("\n(CPU run: no JSON written; pass --out DIR to write one)")
    else:
        name = props["name"].replace(" ", "-") if dev.type == "cuda" else "cpu"
        sm = f"-sm{props['sm']}" if dev.type == "cuda" else ""
        os.makedirs(out, exist_ok=True)
        path = os.path.join(out, f"{name}{sm}-memory{'-quick' if quick else ''}.json")
        with open(path, "w") as f:
            json.dump(result, f, indent=1)
        print(f"\nwrote {path}")
    bad = [k for k, v in result.get("transfer", {}).get("checks", {}).items() if not v]
    if bad or (result.get("spill") and not result["spill"]["bit_exact"]):
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The fragmentation probe of benchmarks/memory.py: one seeded trace of alloc/free ops replayed
on pygpukit (both pool policies), torch (plain and expandable segments) and CuPy; live / reserved
at the peak of live bytes."""

import functools
import gc
import math
import time

import numpy as np
from memory_common import TARGET_FRAG_RATIO, MiB, _table

import pygpukit as gp


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

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
import functools
import os
import platform
import statistics
import sys
import time

import numpy as np
from memory_common import (
    ANCHOR_PINNED_GBS,
    TARGET_EMPTY_US,
    TARGET_TRANSFER_GBS,
    GiB,
    MiB,
    Peers,
    _bandwidth,
    _batch_ns,
    _loop_ns,
    _ratio,
    _table,
)
from memory_frag import bench_frag
from results_file import write_result

import pygpukit as gp

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

    suffix = "-quick" if quick else ""
    write_result(result, args.out, props, "memory", cuda=dev.type == "cuda", suffix=suffix)
    bad = [k for k, v in result.get("transfer", {}).get("checks", {}).items() if not v]
    if bad or (result.get("spill") and not result["spill"]["bit_exact"]):
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

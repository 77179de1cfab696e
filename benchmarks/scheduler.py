"""Co-location benchmark of the GPU scheduler (issue 4).

A guaranteed tenant runs a latency-sensitive loop (a 1024^3 bf16 matmul and three elementwise
ops, synchronized every iteration) while a best-effort tenant saturates the GPU with 8192^3 bf16
matmuls. Reported, each for the same duration:

  alone           the guaranteed loop on the default stream, nothing else running (the
                  reference; alone_end repeats it after the other modes, to show host drift)
  be_alone        the best-effort load alone (its throughput is the 100% reference)
  plain           both on plain streams of equal priority, no scheduler
  plain_prio      plain streams, the loop's stream at the highest priority, no scheduler
  sched           the scheduler: guaranteed + best-effort tenants, defaults (best-effort runs on
                  a partition of 85% of the SMs, a green context, and keeps 2 kernels in
                  flight, 1 while guaranteed work runs)
  sched_smsN      the same with best_effort_sms=N (e.g. sched_sms104)
  sched_splitN    best-effort on N SMs and the guaranteed tenant on the others (its kernels
                  then planned for the SMs it has; the partitions are disjoint)
  sched_nopart    the scheduler without the partition (best_effort_sms=0): best-effort matmuls
                  are split into blocks of at most 2^37 FLOPs instead
  sched_inflight2 sched_nopart, best-effort keeps 2 kernels in flight while guaranteed runs
  sched_noslice   sched_nopart without splitting best-effort matmuls
  sched_hold      the scheduler with best_effort_inflight_while_guaranteed=0 (best-effort waits
                  while guaranteed work runs)
  sched_per_task  the scheduler, each loop iteration its own task (`with sched.task(...)` +
                  wait): adds the per-task overhead
  torch_*         the same loop and load in PyTorch on plain streams (torch_green: its load on
                  a green context of 85% of the SMs), when importable

Latency is host wall clock per iteration (launch to synchronize return), p50/p99 over all
iterations; best-effort throughput counts the matmuls that completed while the loop ran. The
Python switch interval is lowered to 50 us in every mode alike, so that GIL hand-offs between
the two threads do not dominate. CUDA results go to benchmarks/results/<gpu>-sm<XY>-scheduler.json.

    python benchmarks/scheduler.py [--duration 3] [--quick] [--modes alone,sched,...]
"""

import argparse
import contextlib
import os
import platform
import statistics
import sys
import threading
import time

import numpy as np
from results_file import write_result

import pygpukit as gp

MODES = (
    "alone",
    "be_alone",
    "plain",
    "plain_prio",
    "sched",
    "sched_sms104",
    "sched_sms120",
    "sched_split96",
    "sched_nopart",
    "sched_inflight2",
    "sched_noslice",
    "sched_hold",
    "sched_per_task",
    "alone_end",
    "torch_alone",
    "torch_plain_prio",
    "torch_green",
)
BEST_EFFORT_SHARE = 0.85  # the scheduler's automatic best-effort partition
TARGET_P99_INFLATION = 0.05
TARGET_BE_KEPT = 0.80


def percentile(v, p):
    s = sorted(v)
    return s[min(len(s) - 1, max(0, int(np.ceil(p / 100 * len(s))) - 1))]


def summarize(lat_ns):
    us = [x / 1e3 for x in lat_ns]
    return {
        "iterations": len(us),
        "p50_us": percentile(us, 50),
        "p90_us": percentile(us, 90),
        "p99_us": percentile(us, 99),
        "max_us": max(us),
        "mean_us": statistics.fmean(us),
    }


class Workload:
    """The arrays of both tenants (random bf16), made once on the default stream."""

    def __init__(self, dev, g_size, be_size, rng):
        def rand(shape, scale):
            a = (rng.standard_normal(shape) * scale).astype(np.float32)
            return gp.asarray(a, device=dev).astype(gp.bfloat16)

        self.dev = dev
        self.gx = rand((g_size, g_size), 1.0)
        self.gw = rand((g_size, g_size), g_size**-0.5)
        self.ga = rand((g_size, g_size), 1.0)
        self.bx = rand((be_size, be_size), 1.0)
        self.bw = rand((be_size, be_size), be_size**-0.5)
        gp.synchronize(dev)

    def g_step(self):
        y = self.gx @ self.gw
        y = y * 0.5
        y = y + self.ga
        return y - 1.0

    def be_step(self):
        return self.bx @ self.bw


def g_loop(w, duration, step=None):
    """Runs the guaranteed loop for `duration` s; returns per-iteration latencies (ns)."""
    step = step or (lambda: (w.g_step(), gp.synchronize(w.dev)))
    for _ in range(20):  # warm-up
        step()
    lat = []
    end = time.perf_counter() + duration
    while time.perf_counter() < end:
        t0 = time.perf_counter_ns()
        step()
        lat.append(time.perf_counter_ns() - t0)
    return lat


class BeLoad:
    """Best-effort load on its own thread: batches of `batch` matmuls, then a wait; records
    each batch's completion time so that the throughput inside any window can be counted."""

    def __init__(self, run_batch, batch):
        self.run_batch = run_batch
        self.batch = batch
        self.done = []  # completion times (perf_counter) of batches
        self.stop = threading.Event()
        self.error = None
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self):
        try:
            while not self.stop.is_set():
                self.run_batch()
                self.done.append(time.perf_counter())
        except BaseException as e:  # noqa: BLE001 - reported by the main thread
            self.error = e

    def __enter__(self):
        self.thread.start()
        time.sleep(0.3)  # let the load reach a steady state
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()
        if self.error is not None:
            raise self.error

    def rate(self, t0, t1):
        n = sum(1 for t in self.done if t0 <= t <= t1)
        return n * self.batch / (t1 - t0)


def plain_be(w, stream, batch):
    def run():
        with stream:
            for _ in range(batch):
                w.be_step()
        stream.synchronize()

    return run


def sched_be(sched, w, batch, outstanding=2):
    """Keeps `outstanding` best-effort tasks of `batch` matmuls submitted."""
    futs = []

    def task():
        for _ in range(batch):
            w.be_step()

    def run():
        while len(futs) < outstanding:
            futs.append(sched.submit("batch", task, memory=0))
        futs.pop(0).result(timeout=60)

    return run


def measure(name, w, duration, be=None, step=None, scope=contextlib.nullcontext):
    """Runs the guaranteed loop (inside `scope()`, opened after the load has started) for
    `duration` s beside the best-effort load `be`; step=False: the load alone."""
    if be is None:
        with scope():
            lat = g_loop(w, duration, step)
        return {"mode": name, **summarize(lat), "be_matmuls_per_s": None}
    with be:
        with scope():
            t0 = time.perf_counter()
            lat = g_loop(w, duration, step) if step is not False else time.sleep(duration)
            t1 = time.perf_counter()
        rate = be.rate(t0, t1)
    out = {"mode": name, "be_matmuls_per_s": rate}
    if lat:
        out.update(summarize(lat))
    return out


def run_torch(modes, args, g_size, be_size, duration, rng):
    import torch

    dev = torch.device("cuda")
    gx = torch.randn(g_size, g_size, device=dev).bfloat16()
    gw = (torch.randn(g_size, g_size, device=dev) * g_size**-0.5).bfloat16()
    ga = torch.randn(g_size, g_size, device=dev).bfloat16()
    bx = torch.randn(be_size, be_size, device=dev).bfloat16()
    bw = (torch.randn(be_size, be_size, device=dev) * be_size**-0.5).bfloat16()
    torch.cuda.synchronize()
    least, greatest = torch.cuda.Stream.priority_range()
    hi = torch.cuda.Stream(priority=greatest)
    lo = torch.cuda.Stream(priority=least)

    def step():
        with torch.cuda.stream(hi):
            y = gx @ gw
            y = y * 0.5
            y = y + ga
            y = y - 1.0
        hi.synchronize()

    def be_batch():
        with torch.cuda.stream(lo):
            for _ in range(args.batch):
                bx @ bw
        lo.synchronize()

    res = []

    class W:
        pass

    if "torch_alone" in modes:
        res.append(measure("torch_alone", W, duration, step=step))
    if "torch_plain_prio" in modes:
        res.append(measure("torch_plain_prio", W, duration, BeLoad(be_batch, args.batch), step))
    if "torch_green" in modes:
        from torch.cuda.green_contexts import GreenContext

        sms = int(torch.cuda.get_device_properties(dev).multi_processor_count * BEST_EFFORT_SHARE)
        ctx = GreenContext.create(num_sms=sms, device_id=dev.index or 0)  # kept alive below
        green = ctx.Stream()

        def green_batch():
            with torch.cuda.stream(green):
                for _ in range(args.batch):
                    bx @ bw
            green.synchronize()

        r = measure("torch_green", W, duration, BeLoad(green_batch, args.batch), step)
        r["be_sms"] = sms
        del green, ctx
        res.append(r)
    return res, torch.__version__


def main():
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--device", default=None)
    p.add_argument("--duration", type=float, default=None, help="seconds per mode")
    p.add_argument("--quick", action="store_true", help="1 s per mode, smaller CPU sizes")
    p.add_argument("--modes", default=",".join(MODES))
    p.add_argument("--batch", type=int, default=2, help="best-effort matmuls per task/batch")
    p.add_argument("--slice-flops", type=int, default=None, help="best_effort_slice_flops")
    p.add_argument("--out", default=None, help="JSON folder (default benchmarks/results on CUDA)")
    args = p.parse_args()

    dev = gp.default_device() if args.device is None else gp.Device(args.device)
    cuda = dev.type == "cuda"
    g_size, be_size = (1024, 8192) if cuda else (128, 512)
    duration = args.duration or (1.0 if args.quick else 3.0)
    modes = [m for m in args.modes.split(",") if m]
    sys.setswitchinterval(5e-5)
    rng = np.random.default_rng(0)
    props = gp.device_properties(dev)
    print(
        f"pygpukit {gp.__version__} on {dev} ({props['name']}); guaranteed {g_size}^3 bf16 "
        f"matmul + 3 elementwise; best-effort {be_size}^3 bf16 matmuls; {duration:g} s/mode",
        flush=True,
    )

    w = Workload(dev, g_size, be_size, rng)
    # Correctness of both workloads against NumPy (float64 of the same bf16 inputs).
    gx, gw, ga = (x.astype(gp.float32).get().astype(np.float64) for x in (w.gx, w.gw, w.ga))
    ref = (gx @ gw) * 0.5 + ga - 1.0
    got = w.g_step().astype(gp.float32).get()
    g_err = float(np.max(np.abs(got - ref)) / np.max(np.abs(ref)))

    results = []
    least, greatest = gp.stream_priority_range(dev)
    for mode in modes:
        if mode.startswith("torch"):
            continue
        if mode in ("alone", "alone_end"):
            r = measure(mode, w, duration)
        elif mode == "be_alone":
            s = gp.Stream(dev, priority=least)
            r = measure(mode, w, duration, BeLoad(plain_be(w, s, args.batch), args.batch), False)
        elif mode in ("plain", "plain_prio"):
            g_stream = gp.Stream(dev, priority=greatest if mode == "plain_prio" else least)
            be_stream = gp.Stream(dev, priority=least)

            def step(g_stream=g_stream):
                with g_stream:
                    w.g_step()
                g_stream.synchronize()

            r = measure(
                mode, w, duration, BeLoad(plain_be(w, be_stream, args.batch), args.batch), step
            )
        elif mode.startswith("sched"):
            nopart = {"best_effort_sms": 0}
            kw = {
                "sched_hold": {"best_effort_inflight_while_guaranteed": 0},
                "sched_nopart": nopart,
                "sched_inflight2": {**nopart, "best_effort_inflight_while_guaranteed": 2},
                "sched_noslice": {**nopart, "best_effort_slice_flops": 0},
            }.get(mode, {})
            g_sms = None
            if mode.startswith("sched_sms"):
                kw["best_effort_sms"] = int(mode[len("sched_sms") :])
            if mode.startswith("sched_split"):
                kw["best_effort_sms"] = int(mode[len("sched_split") :])
                g_sms = props["multiprocessors"] - kw["best_effort_sms"]
            if args.slice_flops is not None and mode != "sched_noslice":
                kw["best_effort_slice_flops"] = args.slice_flops
            with gp.scheduler.Scheduler(dev, **kw) as sched:
                sched.add_tenant("online", "guaranteed", memory_request=1 << 30, sms=g_sms)
                sched.add_tenant("batch", "best_effort")
                be = BeLoad(sched_be(sched, w, args.batch), args.batch)
                if mode == "sched_per_task":

                    def step():
                        with sched.task("online") as t:
                            w.g_step()
                            gp.synchronize(dev)
                        t.wait()

                    r = measure(mode, w, duration, be, step)
                else:

                    def step():
                        w.g_step()
                        gp.synchronize(dev)

                    # The whole loop is one guaranteed task.
                    r = measure(mode, w, duration, be, step, lambda: sched.task("online"))
                st = sched.stats()["tenants"]
                r["be_sms"] = st["batch"]["sms"]
                r["guaranteed_sms"] = st["online"]["sms"]
                r["batch_paced_waits"] = st["batch"]["paced_waits"]
                r["batch_max_inflight_seen"] = st["batch"]["max_inflight_seen"]
        else:
            raise SystemExit(f"unknown mode {mode!r} (choose from {', '.join(MODES)})")
        results.append(r)
        print(
            f"  {mode:15s} p50 {r.get('p50_us', float('nan')):8.1f} us  p99 "
            f"{r.get('p99_us', float('nan')):8.1f} us  best-effort "
            f"{r['be_matmuls_per_s'] or 0:7.1f} matmul/s",
            flush=True,
        )

    torch_version = None
    if cuda and any(m.startswith("torch") for m in modes):
        try:
            tr, torch_version = run_torch(modes, args, g_size, be_size, duration, rng)
            results += tr
            for r in tr:
                print(
                    f"  {r['mode']:15s} p50 {r['p50_us']:8.1f} us  p99 {r['p99_us']:8.1f} us  "
                    f"best-effort {r['be_matmuls_per_s'] or 0:7.1f} matmul/s",
                    flush=True,
                )
        except Exception as e:  # noqa: BLE001 - the peer is optional
            import traceback

            print(f"  torch skipped: {type(e).__name__}: {e}")
            traceback.print_exc(limit=-3)

    by = {r["mode"]: r for r in results}
    summary = {}
    alone = by.get("alone")
    be_alone = by.get("be_alone")
    be_flops = 2 * be_size**3
    for r in results:
        if alone and "p99_us" in r:
            r["p99_inflation"] = r["p99_us"] / alone["p99_us"] - 1
            r["p50_inflation"] = r["p50_us"] / alone["p50_us"] - 1
        if be_alone and r.get("be_matmuls_per_s") is not None:
            r["be_kept"] = r["be_matmuls_per_s"] / be_alone["be_matmuls_per_s"]
            r["be_tflops"] = r["be_matmuls_per_s"] * be_flops / 1e12
    print("\n== co-location (p99 inflation vs alone; best-effort throughput kept vs alone)")
    print(
        f"{'mode':16s} {'p50 us':>9s} {'p99 us':>9s} {'p99 infl':>9s} {'BE TFLOP/s':>11s} "
        f"{'BE kept':>8s}"
    )
    for r in results:

        def f(k, fmt, r=r):
            v = r.get(k)
            return format(v, fmt) if v is not None else "-"

        print(
            f"{r['mode']:16s} {f('p50_us', '9.1f')} {f('p99_us', '9.1f')} "
            f"{f('p99_inflation', '9.1%')} {f('be_tflops', '11.1f')} {f('be_kept', '8.1%')}"
        )
    for m in by:
        if m.startswith("sched") and "p99_inflation" in by[m] and "be_kept" in by[m]:
            summary[m] = {
                "p99_inflation": by[m]["p99_inflation"],
                "be_kept": by[m]["be_kept"],
                "meets_p99_target": by[m]["p99_inflation"] <= TARGET_P99_INFLATION,
                "meets_be_target": by[m]["be_kept"] >= TARGET_BE_KEPT,
            }

    result = {
        "device": str(dev),
        "gpu": props["name"],
        "sm": props["sm"],
        "driver": props["driver_version"],
        "pygpukit": gp.__version__,
        "python": platform.python_version(),
        "torch": torch_version,
        "host_cpus": os.cpu_count(),
        "guaranteed": f"{g_size}^3 bf16 matmul + 3 elementwise, synchronized per iteration",
        "best_effort": f"{be_size}^3 bf16 matmuls, {args.batch} per task/batch",
        "duration_s": duration,
        "guaranteed_max_rel_error": g_err,
        "targets": {"p99_inflation": TARGET_P99_INFLATION, "be_kept": TARGET_BE_KEPT},
        "timing": "host wall clock per iteration (launch to synchronize return); best-effort "
        "matmuls completed inside the loop's window",
        "results": results,
        "summary": summary,
    }
    suffix = "-quick" if args.quick else ""
    write_result(result, args.out, props, "scheduler", cuda=cuda, suffix=suffix)


if __name__ == "__main__":
    main()

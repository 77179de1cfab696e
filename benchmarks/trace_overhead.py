"""What always-on tracing costs: host time per op of loops of tiny ops with tracing on beside
tracing off (gp.profiler.set_enabled), in one process. Each round times one loop of --ops calls
per setting, cut into chunks of --chunk calls that take turns (on, off, off, on, ...), and the
overhead is the median over rounds of the ratio of a round's two loops: host speed drifts by up
to a third within a process on shared machines, and chunks a few ms apart see the same speed,
where the best or median loop of each setting alone would not. The GPU is idle at the start of
every chunk (a synchronization between chunks, outside the timing). The budget is 2% (issue 8).

Cases:
  10k tiny adds      x + x on 16 float32 values (alloc, launch, free: three records per op)
  10k adds, out=     gp.add(x, x, out=y) (one record per op: the launch alone)
  10k tiny sums      gp.sum(x) (a reduction's launches and its result's allocation)

Results: <out>/<gpu>-sm<XY>-trace-overhead.json (CUDA; the CPU backend writes only with --out).
"""

import argparse
import statistics
import time

from results_file import write_result

import pygpukit as gp

BUDGET = 0.02


def _quantile(values, q):
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--device", default=None, help="cpu, cuda or cuda:N (default: the default)")
    p.add_argument("--ops", type=int, default=10_000, help="ops per timed loop")
    p.add_argument("--chunk", type=int, default=1000, help="calls per chunk (divides --ops)")
    p.add_argument("--rounds", type=int, default=61, help="pairs of loops per case")
    p.add_argument("--quick", action="store_true", help="15 rounds")
    p.add_argument("--out", default=None, help="JSON folder (default benchmarks/results)")
    args = p.parse_args()
    if args.quick:
        args.rounds = 15
    if args.chunk <= 0 or args.ops % args.chunk != 0:
        p.error(f"--chunk {args.chunk} must be positive and divide --ops {args.ops}")
    dev = gp.Device(args.device) if args.device else gp.default_device()
    props = gp.device_properties(dev)
    x = gp.ones((16,), device=dev)
    y = gp.empty((16,), dtype=gp.float32, device=dev)
    cases = {
        "10k tiny adds": lambda: x + x,
        "10k adds, out=": lambda: gp.add(x, x, out=y),
        "10k tiny sums": lambda: gp.sum(x),
    }
    was_on = gp.profiler.enabled()
    rows = []
    try:
        for name, fn in cases.items():
            for _ in range(200):
                fn()
            gp.synchronize(dev)
            times = {True: [], False: []}
            for r in range(args.rounds):
                ns = {True: 0, False: 0}
                for c in range(args.ops // args.chunk):
                    # Alternate which setting goes first, so that a drift within a round cancels.
                    for on in (True, False) if (r + c) % 2 == 0 else (False, True):
                        gp.profiler.set_enabled(on)
                        t = time.perf_counter_ns()
                        for _ in range(args.chunk):
                            fn()
                        ns[on] += time.perf_counter_ns() - t
                        gp.synchronize(dev)
                for on in (True, False):
                    times[on].append(ns[on] / args.ops / 1e3)
            ratios = [a / b for a, b in zip(times[True], times[False])]
            overhead = statistics.median(ratios) - 1
            on, off = statistics.median(times[True]), statistics.median(times[False])
            rows.append(
                {
                    "case": name,
                    "overhead": overhead,
                    "on_us": on,
                    "off_us": off,
                    "overhead_p25": _quantile(ratios, 0.25) - 1,
                    "overhead_p75": _quantile(ratios, 0.75) - 1,
                    "rounds_on_us": times[True],
                    "rounds_off_us": times[False],
                }
            )
            print(
                f"{name:18s} tracing off {off:7.3f} us/op  on {on:7.3f} us/op (medians)  "
                f"overhead {100 * overhead:+.2f}% (quartiles {100 * rows[-1]['overhead_p25']:+.2f}"
                f"% .. {100 * rows[-1]['overhead_p75']:+.2f}%; budget {100 * BUDGET:.0f}%)"
            )
    finally:
        gp.profiler.set_enabled(was_on)
    result = {
        "gpu": props["name"],
        "sm": props.get("sm"),
        "device": str(dev),
        "budget": BUDGET,
        "ops_per_loop": args.ops,
        "ops_per_chunk": args.chunk,
        "cases": rows,
        "rounds": args.rounds,
        "timing": "host wall time per op of a loop of ops_per_loop calls; each round times one "
        "loop per setting in chunks of ops_per_chunk calls that take turns (which goes first "
        "alternating), the GPU synchronized between chunks outside the timing; overhead: the "
        "median over rounds of on/off - 1 (quartiles beside it); on_us / off_us: the medians of "
        "the loops",
    }
    write_result(result, args.out, props, "trace-overhead", cuda=dev.type == "cuda")


if __name__ == "__main__":
    main()

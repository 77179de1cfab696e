"""What always-on tracing costs: host time per op of loops of tiny ops with tracing on beside
tracing off (gp.profiler.set_enabled), in one process, the two settings taking turns over several
rounds; each keeps its best round (host speed drifts within a process on shared machines). The
budget is 2% (issue 8).

Cases:
  10k tiny adds      x + x on 16 float32 values (alloc, launch, free: three records per op)
  10k adds, out=     gp.add(x, x, out=y) (one record per op: the launch alone)
  10k tiny sums      gp.sum(x) (a reduction's launches and its result's allocation)

Results: <out>/<gpu>-sm<XY>-trace-overhead.json (CUDA; the CPU backend writes only with --out).
"""

import argparse

from peers import host_us_per_call
from results_file import write_result

import pygpukit as gp

BUDGET = 0.02


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--device", default=None, help="cpu, cuda or cuda:N (default: the default)")
    p.add_argument("--ops", type=int, default=10_000, help="ops per timed loop")
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--quick", action="store_true", help="3 rounds of 2 reps")
    p.add_argument("--out", default=None, help="JSON folder (default benchmarks/results)")
    args = p.parse_args()
    if args.quick:
        args.rounds, args.reps = 3, 2
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
                # Alternate which setting goes first, so that drifts within a round cancel.
                for on in (True, False) if r % 2 == 0 else (False, True):
                    gp.profiler.set_enabled(on)
                    times[on].append(host_us_per_call(fn, args.ops, args.reps))
                    gp.synchronize(dev)
            on, off = min(times[True]), min(times[False])
            rows.append(
                {
                    "case": name,
                    "on_us": on,
                    "off_us": off,
                    "overhead": on / off - 1,
                    "rounds_on_us": times[True],
                    "rounds_off_us": times[False],
                }
            )
            print(
                f"{name:18s} tracing off {off:7.3f} us/op  on {on:7.3f} us/op  "
                f"overhead {100 * (on / off - 1):+.2f}% (budget {100 * BUDGET:.0f}%)"
            )
    finally:
        gp.profiler.set_enabled(was_on)
    result = {
        "gpu": props["name"],
        "sm": props.get("sm"),
        "device": str(dev),
        "budget": BUDGET,
        "ops_per_loop": args.ops,
        "cases": rows,
        "timing": "host wall time per op, median of reps per round, best of the rounds per "
        "setting; the settings alternate within each round",
    }
    write_result(result, args.out, props, "trace-overhead", cuda=dev.type == "cuda")


if __name__ == "__main__":
    main()

"""Random-number benchmarks: gp.random's Philox4x64-10 generator beside torch's and CuPy's
default generators in the same process.

Cases (n = 2^log2n outputs, default 2^26): uniform float32 and float64 (`random`), normal
float32, int64 integers in [0, 1000), and a permutation of 2^24. Peers: torch.rand / randn /
randint / randperm (Philox4x32 on CUDA) and cupy.random's Generator (XORWOW by default).
GB/s counts the bytes written. Timing is interleaved (peers.interleaved_ms): each of `--reps`
rounds runs `--iters` back-to-back calls of every library in turn, each with its own CUDA events
after warm-up; the median per library, its spread (max / min round) beside it. The generators
differ (ours gives the same bits on the CPU and NumPy's Philox stream), so only the speed
compares.
Results go to <out>/<gpu>-sm<XY>-rng.json.
"""

import numpy as np
from peers import header, interleaved_ms, start
from results_file import write_result

import pygpukit as gp


def make_calls(lib, n, dev):
    """{case: (call, bytes written)} for one library."""
    if lib.name == "ours":
        g = gp.random.Generator(1, device=dev)
        return {
            "random f32": (lambda: g.random(n, dtype=gp.float32), 4 * n),
            "random f64": (lambda: g.random(n), 8 * n),
            "normal f32": (lambda: g.normal(size=n, dtype=gp.float32), 4 * n),
            "integers i64": (lambda: g.integers(0, 1000, size=n), 8 * n),
            "permutation": (lambda: g.permutation(1 << 24), 8 << 24),
        }
    m = lib.m
    if lib.name == "torch":
        return {
            "random f32": (lambda: m.rand(n, device="cuda"), 4 * n),
            "random f64": (lambda: m.rand(n, device="cuda", dtype=m.float64), 8 * n),
            "normal f32": (lambda: m.randn(n, device="cuda"), 4 * n),
            "integers i64": (lambda: m.randint(0, 1000, (n,), device="cuda"), 8 * n),
            "permutation": (lambda: m.randperm(1 << 24, device="cuda"), 8 << 24),
        }
    g = m.random.default_rng(1)
    return {
        "random f32": (lambda: g.random(n, dtype=np.float32), 4 * n),
        "random f64": (lambda: g.random(n), 8 * n),
        "normal f32": (lambda: g.standard_normal(n, dtype=np.float32), 4 * n),
        "integers i64": (lambda: g.integers(0, 1000, n), 8 * n),
        "permutation": (lambda: g.permutation(1 << 24), 8 << 24),
    }


def main():
    args, dev, props, libs, versions = start(__doc__, iters=10)
    n = 1 << (args.log2n if args.log2n != 28 else 26)
    rows = {}
    by_case = {}  # case -> library -> (lib, warmed-up call, bytes)
    for lib in libs:
        for case, (call, nbytes) in make_calls(lib, n, dev).items():
            try:
                for _ in range(2):
                    call()
                lib.sync()
                by_case.setdefault(case, {})[lib.name] = (lib, call, nbytes)
            except Exception as e:  # a peer without the function: recorded, not fatal
                rows.setdefault(case, {})[lib.name] = {"error": str(e).split("\n")[0]}
            lib.sync()
    for case, entries in by_case.items():
        calls = {name: (lib, call) for name, (lib, call, _) in entries.items()}
        for name, t in interleaved_ms(calls, args.iters, args.reps).items():
            if "error" in t:
                rows.setdefault(case, {})[name] = {"error": t["error"]}
                continue
            nbytes = entries[name][2]
            rows.setdefault(case, {})[name] = {
                "ms": t["ms"],
                "gbps": nbytes / t["ms"] / 1e6,
                "spread": t["spread"],
            }
    for case, by_lib in rows.items():
        cells = [
            f"{k} {v['ms']:7.3f} ms {v['gbps']:7.1f} GB/s" if "ms" in v else f"{k} n/a"
            for k, v in by_lib.items()
        ]
        ours = by_lib.get("ours", {}).get("ms")
        ratios = [
            f"ours/{k} {v['ms'] / ours:.2f}"
            for k, v in by_lib.items()
            if k != "ours" and "ms" in v and ours
        ]
        print(f"{case:13s} " + "  ".join(cells + ratios), flush=True)
    result = {
        **header(props, versions, args),
        "n": n,
        "cases": rows,
        "timing": "interleaved rounds: each library's batch of back-to-back calls in turn, its "
        "own CUDA events; median of the rounds, spread = max / min round; "
        "GB/s = bytes written / time; ours/peer = peer time / our time.",
    }
    write_result(result, args.out, props, "rng", cuda=dev.type == "cuda")


if __name__ == "__main__":
    main()

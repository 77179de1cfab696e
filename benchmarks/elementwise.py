"""Elementwise benchmarks: memory bandwidth of the JIT elementwise kernels on large arrays and the
per-call Python overhead on tiny ones, with torch and CuPy measured in the same process.

Bandwidth cases (n elements, default 2^28): copy, astype (float32 -> float16, bfloat16 ->
float32), add, mul, exp, sin, cos for float32 and bfloat16 (CuPy has no bfloat16), plus add with a
transposed operand (strided), with a row vector (broadcast) and with a column vector
(broadcast-column). GB/s counts the bytes each op must read and write once (a broadcast operand
once).
Timing is interleaved (peers.interleaved_ms): each of `--reps` rounds runs `--iters` back-to-back
calls of every library in turn, each timed with its own CUDA events after warm-up; the median per
library is reported, its spread (max / min round) beside it. Inputs are random. `--device cpu`:
a smoke run of ours alone.

Overhead: host wall time per call of `a + b` on 16-element float32 arrays in a loop (no
synchronization), median of repetitions.

Also reported: the first-call latency of a kernel never compiled before (NVRTC) and of one found
in the disk cache (a fresh process). Results go to <out>/<gpu>-sm<XY>-elementwise.json.
"""

import os
import statistics
import subprocess
import sys
import tempfile

import numpy as np
from peers import header, host_us_per_call, interleaved_ms, start
from results_file import write_result

import pygpukit as gp


def ew_fn(lib, op):
    """The library's function for elementwise case `op`."""
    if lib.name == "ours":
        return {
            "copy": lambda a: a.copy(),
            "astype": lambda a: a.astype(gp.float16 if a.dtype == gp.float32 else gp.float32),
            "add": lambda a, b: a + b,
            "mul": lambda a, b: a * b,
            "exp": gp.exp,
            "sin": gp.sin,
            "cos": gp.cos,
        }[op]
    m = lib.m
    if lib.name == "torch":
        astype = lambda a: a.to(m.float16 if a.dtype == m.float32 else m.float32)  # noqa: E731
    else:
        astype = lambda a: a.astype(m.float16)  # noqa: E731
    return {
        "copy": (lambda a: a.clone()) if lib.name == "torch" else (lambda a: a.copy()),
        "astype": astype,
        "add": lambda a, b: a + b,
        "mul": lambda a, b: a * b,
        "exp": m.exp,
        "sin": m.sin,
        "cos": m.cos,
    }[op]


def gelu_fns(lib):
    """(unfused, fused) tanh-GELU of the library (fused: gp.fuse / cupy.fuse; torch eager: none)."""
    if lib.name == "ours":
        t = gp.tanh
    else:
        t = lib.m.tanh

    def gelu(x):
        return 0.5 * x * (1 + t(0.7978845608 * (x + 0.044715 * x * x * x)))

    if lib.name == "ours":
        return gelu, gp.fuse(gelu)
    if lib.name == "cupy":
        return gelu, lib.m.fuse(gelu)
    return gelu, None


_HOST = {}


def host_data(rng, n, which):
    """Random float32 data of n elements, generated once per (n, which)."""
    if (n, which) not in _HOST:
        _HOST[(n, which)] = rng.standard_normal(n, dtype=np.float32)
    return _HOST[(n, which)]


def prepare(lib, op, layout, dtype, n, rng):
    """(warmed-up call, bytes it moves) of `op` on n elements (layout: contiguous, strided,
    broadcast)."""
    side = int(round(n**0.5))
    itemsize = 2 if dtype == "bfloat16" else 4
    if layout == "contiguous":
        a = lib.array(host_data(rng, n, "a"), dtype)
        b = lib.array(host_data(rng, n, "b"), dtype)
        elems = n
    else:
        elems = side * side
        a = lib.array(host_data(rng, elems, "a"), dtype).reshape(side, side)
        if layout == "strided":
            b = lib.array(host_data(rng, elems, "b"), dtype).reshape(side, side).T
        elif layout == "broadcast":
            b = lib.array(host_data(rng, side, "row"), dtype)
        else:
            b = lib.array(host_data(rng, side, "row"), dtype).reshape(side, 1)
    f = ew_fn(lib, op)
    arity = 1 if op in ("copy", "astype", "exp", "sin", "cos") else 2
    call = (lambda: f(a)) if arity == 1 else (lambda: f(a, b))
    bytes_moved = elems * itemsize * (arity + 1)
    if op == "astype":
        bytes_moved = elems * 6  # 4 + 2 bytes per element either way
    if layout.startswith("broadcast"):
        bytes_moved = elems * itemsize * 2 + side * itemsize
    for _ in range(3):
        call()
    lib.sync()
    return call, bytes_moved


def overhead_us(call, iters, reps, sync):
    # Synchronized at the end of each loop: our launch queue (and any library's) may still hold
    # launches when the last call returns.
    return host_us_per_call(call, iters, reps, warmup=100, sync=sync)


CHILD = r"""
import sys, time, pygpukit as gp
x = gp.ones((16,), dtype=gp.float64, device="cuda")
gp.synchronize("cuda")
t = time.perf_counter()
gp.%s(x)
gp.synchronize("cuda")
print(time.perf_counter() - t, gp.jit.cache_info()["disk_hits"])
"""


def first_call_ms(op, cache_dir):
    """First call of gp.<op> on float64 in a fresh process: (compile, disk hit) in ms."""
    env = dict(os.environ, PYGPUKIT_CACHE_DIR=cache_dir)
    out = []
    for _ in range(2):
        r = subprocess.run(
            [sys.executable, "-c", CHILD % op], env=env, capture_output=True, text=True, check=True
        )
        seconds, hits = r.stdout.split()
        out.append((float(seconds) * 1e3, int(hits)))
    assert out[0][1] == 0 and out[1][1] >= 1, out
    return out[0][0], out[1][0]


def main():
    def add_arguments(p):
        p.add_argument(
            "--overhead-rounds",
            type=int,
            default=15,
            help="rounds of the per-call overhead loops, taken in turn by the libraries",
        )

    args, dev, props, libs, versions = start(__doc__, iters=20, add_arguments=add_arguments)
    rng = np.random.default_rng(0)
    n = 1 << args.log2n

    # Per-call overhead first, before the large cases leave their memory and state behind. The
    # lent machines' host speed drifts by a third for seconds at a time (everything slows
    # together, the driver's own launch included), so the libraries take turns over
    # --overhead-rounds rounds spread over several seconds and each keeps its best round (the
    # least disturbed, as timeit advises); every round is in the JSON, and so is the median over
    # rounds of ours / each peer within a round (adjacent in time: the host's speed cancels).
    tiny = {"ours": gp.ones((16,), device=dev)}
    for lib in libs[1:]:
        tiny[lib.name] = lib.array(np.ones(16, np.float32), "float32")
    rounds = {name: [] for name in tiny}
    for _ in range(args.overhead_rounds):
        for lib in libs:
            t = tiny[lib.name]
            rounds[lib.name].append(overhead_us(lambda t=t: t + t, 5000, args.reps, lib.sync))
            lib.sync()
    overhead = {name: min(v) for name, v in rounds.items()}
    ratio = {
        name: statistics.median(o / p for o, p in zip(rounds["ours"], v))
        for name, v in rounds.items()
        if name != "ours"
    }
    print(
        "per-call overhead, 16-element add (us): "
        + ", ".join(f"{k} {v:.2f}" for k, v in overhead.items())
        + "; ours / peer within a round (median): "
        + ", ".join(f"{k} {v:.3f}" for k, v in ratio.items())
    )

    rows = []
    cases = [(op, "contiguous") for op in ("copy", "astype", "add", "mul", "exp", "sin", "cos")]
    cases += [("add", "strided"), ("add", "broadcast"), ("add", "broadcast-column")]
    for dtype in ("float32", "bfloat16"):
        for op, layout in cases:
            row = {"op": op, "layout": layout, "dtype": dtype, "n": n, "gbps": {}, "spread": {}}
            calls, nbytes = {}, {}
            for lib in libs:
                if lib.name == "cupy" and dtype == "bfloat16":
                    continue
                call, nbytes[lib.name] = prepare(lib, op, layout, dtype, n, rng)
                calls[lib.name] = (lib, call)
            for name, t in interleaved_ms(calls, args.iters, args.reps).items():
                row["gbps"][name] = nbytes[name] / (t["ms"] * 1e-3) / 1e9
                row["spread"][name] = t["spread"]
            rows.append(row)
            g = row["gbps"]
            print(
                f"{dtype:9s} {op:5s} {layout:10s} "
                + "  ".join(f"{k} {v:7.1f} GB/s" for k, v in g.items())
                + (f"  ours/torch {g['ours'] / g['torch']:.3f}" if "torch" in g else "")
            )

    fusion = {}
    fn_elems = n // 4
    calls = {}
    for lib in libs:
        x = lib.array(host_data(rng, fn_elems, "a"), "float32")
        for kind, f in zip(("unfused", "fused"), gelu_fns(lib)):
            if f is None:
                continue
            call = lambda f=f, x=x: f(x)  # noqa: E731
            for _ in range(3):
                call()
            lib.sync()
            calls[f"{lib.name} {kind}"] = (lib, call)
    for name, t in interleaved_ms(calls, args.iters, args.reps).items():
        fusion[name] = {"ms": t["ms"], "gbps": fn_elems * 8 / (t["ms"] * 1e-3) / 1e9}
        fusion[name]["spread"] = t["spread"]
    print(
        f"tanh-GELU on {fn_elems} float32 (GB/s of one read + one write): "
        + ", ".join(f"{k} {v['ms']:.3f} ms ({v['gbps']:.0f})" for k, v in fusion.items())
    )

    compile_ms = disk_ms = None
    if dev.type == "cuda":  # the NVRTC compile; a CPU smoke run skips it
        cache_dir = tempfile.mkdtemp(prefix="pgk-ew-bench-")
        compile_ms, disk_ms = first_call_ms("tanh", cache_dir)
        print(
            f"first call of a new kernel: compile {compile_ms:.1f} ms, disk hit {disk_ms:.1f} ms "
            "(fresh processes, including import-time JIT setup)"
        )

    result = {
        **header(props, versions, args),
        "bandwidth": rows,
        "overhead_us_per_call": overhead,
        "overhead_us_rounds": rounds,
        "overhead_ratio_to_peer": ratio,
        "gelu_fusion": fusion,
        "first_call_ms": {"compile": compile_ms, "disk_hit_fresh_process": disk_ms},
        "timing": "interleaved rounds: each library's batch of back-to-back calls in turn, its "
        "own CUDA events; median of the rounds, spread = max / min round; "
        "GB/s = bytes read + written once / time. Overhead: host wall time per call in a loop of "
        "5000 calls then a synchronize, median of reps per round, best of --overhead-rounds "
        "rounds taken in turn by the libraries; overhead_ratio_to_peer: median over rounds of "
        "ours / the peer's same round.",
    }
    write_result(result, args.out, props, "elementwise", cuda=dev.type == "cuda")


if __name__ == "__main__":
    main()

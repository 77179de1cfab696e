"""Sorting and search benchmarks: sort, argsort, unique, nonzero and searchsorted beside torch
and CuPy in the same process, each checked against NumPy on the same data.

Cases: sort and argsort of 1-D arrays of n elements (default n = 2^16, 2^20, 2^24; --sizes
takes a comma list of counts or powers, e.g. 2^18,1000000), float32 (random normal) and int32
(random over the full range); sort along the last axis of a (4096, 1024) float32 matrix (4096
independent rows); unique_values of 2^22 int32 values drawn from 2^16 distinct ones; nonzero
of 2^24 bools, about half of them True; searchsorted of 2^20 float32 queries into a sorted 2^24
float32 array. Peers: torch.sort / argsort (stable=True; torch.sort always returns the indices
too), torch.unique(sorted=True), torch.nonzero(as_tuple=True), torch.searchsorted, and CuPy's
sort / argsort / unique / nonzero / searchsorted. A peer that lacks an op or raises is null.

Metric: ms per call and Melem/s = n / time, where n is the input element count (the number of
queries for searchsorted); speedup = peer time / our time. unique and nonzero have
data-dependent output sizes, so every library reads a count back to the host inside the timed
loop. Timing is interleaved (peers.interleaved_ms): each of `--reps` rounds runs `--iters`
back-to-back calls of every library in turn, each with its own CUDA events after warm-up; the
median per library is reported, its spread (max / min round) beside it. `ok` says that our
result equals NumPy's exactly (argsort: np.argsort(kind="stable"); ours is always stable).
--log2n is not used.
Results go to <out>/<gpu>-sm<XY>-sorting.json; the exit status is 1 if any check fails.
"""

import argparse
import sys

import numpy as np
from peers import header, interleaved_ms, start
from results_file import write_result

import pygpukit as gp

DEFAULT_SIZES = "2^16,2^20,2^24"


def pop_sizes():
    """Takes --sizes out of sys.argv (the shared start() parser knows only the common options)."""
    if {"-h", "--help"} & set(sys.argv[1:]):
        print(f"sorting.py also takes --sizes N,... (1-D sort sizes; default {DEFAULT_SIZES})\n")
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument("--sizes", default=DEFAULT_SIZES)
    known, rest = p.parse_known_args()
    sys.argv[1:] = rest
    return [2 ** int(t.split("^")[1]) if "^" in t else int(t) for t in known.sizes.split(",")]


def op_fn(lib, op):
    """The library's f(*arrays) for `op`; a missing function raises when called."""
    if lib.name == "ours":
        return {
            "sort": lambda a: gp.sort(a, axis=-1, stable=True),
            "argsort": lambda a: gp.argsort(a, axis=-1, stable=True),
            "unique": gp.unique_values,
            "nonzero": gp.nonzero,
            "searchsorted": lambda a, v: gp.searchsorted(a, v, side="left"),
        }[op]
    m = lib.m
    if lib.name == "torch":
        return {
            "sort": lambda a: m.sort(a, dim=-1, stable=True),
            "argsort": lambda a: m.argsort(a, dim=-1, stable=True),
            "unique": lambda a: m.unique(a, sorted=True),
            "nonzero": lambda a: m.nonzero(a, as_tuple=True),
            "searchsorted": lambda a, v: m.searchsorted(a, v, side="left"),
        }[op]
    return {
        "sort": lambda a: m.sort(a, axis=-1),
        "argsort": lambda a: m.argsort(a, axis=-1),
        "unique": lambda a: m.unique(a),
        "nonzero": lambda a: m.nonzero(a),
        "searchsorted": lambda a, v: m.searchsorted(a, v, side="left"),
    }[op]


def reference(op, hosts):
    """NumPy's result for `op` on the host inputs."""
    if op == "sort":
        return np.sort(hosts[0], axis=-1)
    if op == "argsort":
        return np.argsort(hosts[0], axis=-1, kind="stable")
    if op == "unique":
        return np.unique(hosts[0])
    if op == "nonzero":
        return np.nonzero(hosts[0])
    return np.searchsorted(hosts[0], hosts[1], side="left")


def same(got, want):
    if isinstance(want, tuple):
        return (
            isinstance(got, tuple)
            and len(got) == len(want)
            and all(same(g, w) for g, w in zip(got, want))
        )
    got = gp.to_numpy(got)
    return got.shape == want.shape and bool(np.array_equal(got, want))


def cases(sizes, rng):
    """(op, dtype, hosts, n) per case; every library gets the same host data."""
    i32 = np.iinfo(np.int32)
    out = []
    for n in sizes:
        f32 = rng.standard_normal(n, dtype=np.float32)
        i = rng.integers(i32.min, i32.max, n, dtype=np.int32, endpoint=True)
        for op in ("sort", "argsort"):
            out += [(op, "float32", (f32,), n), (op, "int32", (i,), n)]
    batch = rng.standard_normal((4096, 1024), dtype=np.float32)
    out.append(("sort", "float32", (batch,), batch.size))
    few = rng.integers(0, 1 << 16, 1 << 22, dtype=np.int32)
    out.append(("unique", "int32", (few,), few.size))
    mask = rng.random(1 << 24) < 0.5
    out.append(("nonzero", "bool", (mask,), mask.size))
    haystack = np.sort(rng.standard_normal(1 << 24, dtype=np.float32))
    queries = rng.standard_normal(1 << 20, dtype=np.float32)
    out.append(("searchsorted", "float32", (haystack, queries), queries.size))
    return out


def prepare(lib, op, dtype, hosts):
    """(warmed-up call, its first result) of `op` in `lib`."""
    arrays = [lib.array(h, dtype) for h in hosts]
    f = op_fn(lib, op)
    call = lambda: f(*arrays)  # noqa: E731
    first = call()  # compiles / loads kernels before timing, and is what we check
    for _ in range(2):
        call()
    lib.sync()
    return call, first


def run_case(libs, case, args):
    op, dtype, hosts, n = case
    # shape: of the input, or of the queries for searchsorted (sorted_n: the array searched)
    row = {"op": op, "dtype": dtype, "shape": list(hosts[-1].shape), "n": n}
    if op == "searchsorted":
        row["sorted_n"] = hosts[0].size
    row.update(ms={}, errors={})
    ok = False
    calls = {}
    for lib in libs:
        try:
            call, first = prepare(lib, op, dtype, hosts)
            if lib.name == "ours":
                ok = same(first, reference(op, hosts))
            del first
            calls[lib.name] = (lib, call)
        except Exception as e:  # one library's failure (or missing op) must not end the run
            row["ms"][lib.name] = None
            row["errors"][lib.name] = f"{type(e).__name__}: {e}"
        lib.sync()
    row["spread"] = {}
    for name, t in interleaved_ms(calls, args.iters, args.reps).items():
        row["ms"][name] = t.get("ms")
        if "error" in t:
            row["errors"][name] = t["error"]
        else:
            row["spread"][name] = t["spread"]
    ms = {lib.name: row["ms"].get(lib.name) for lib in libs}  # in the libraries' order
    row["ms"] = ms
    row["melem_per_s"] = {k: None if v is None else n / v / 1e3 for k, v in ms.items()}
    row["speedup"] = {
        k: None if v is None or ms["ours"] is None else v / ms["ours"]
        for k, v in ms.items()
        if k != "ours"
    }
    row["ok"] = ok
    return row


def fmt(v, spec):
    return "n/a".rjust(len(format(1.0, spec))) if v is None else format(v, spec)


def show(row):
    shape = "x".join(str(s) for s in row["shape"])
    if "sorted_n" in row:
        shape += f" in {row['sorted_n']}"
    line = f"{row['op']:12s} {row['dtype']:7s} {shape:>19s} "
    line += "  ".join(
        f"{k} {fmt(v, '9.3f')} ms {fmt(row['melem_per_s'][k], '8.0f')} Melem/s"
        for k, v in row["ms"].items()
    )
    # as reduction.py: ours/peer is the throughput ratio, i.e. peer time / our time
    line += "".join(f"  ours/{k} {fmt(v, '7.2f')}" for k, v in row["speedup"].items())
    print(line + ("  ok" if row["ok"] else "  MISMATCH"), flush=True)
    for k, e in row["errors"].items():
        print(f"    {k}: {e.splitlines()[0] if e else e}", flush=True)


def main():
    sizes = pop_sizes()
    args, dev, props, libs, versions = start(__doc__, iters=10)
    rng = np.random.default_rng(0)
    rows = []
    for case in cases(sizes, rng):
        rows.append(run_case(libs, case, args))
        show(rows[-1])
    result = {
        **header(props, versions, args),
        "sizes": sizes,
        "cases": rows,
        "timing": "interleaved rounds: each library's batch of back-to-back calls in turn, its "
        "own CUDA events; median of the rounds, spread = max / min round; "
        "Melem/s = input elements (queries for searchsorted) / time; speedup = peer ms / our ms; "
        "ok = our result equals NumPy's exactly.",
    }
    write_result(result, args.out, props, "sorting", cuda=dev.type == "cuda")
    bad = [f"{r['op']} {r['dtype']} {r['shape']}" for r in rows if not r["ok"]]
    if bad:
        sys.exit("results differ from NumPy: " + "; ".join(bad))


if __name__ == "__main__":
    main()

"""Reduction and scan benchmarks: memory bandwidth of the JIT reductions on large arrays beside
torch and CuPy in the same process, and the accuracy of each library's float32 sum.

Cases (n elements, default 2^28 = 1 GiB of float32): sum / max / mean / argmax of everything
("full"), over the last axis of (2^14, 2^14) and of (2^20, 256) ("rows"), over the first axis
("columns"), over the last axis of a transposed view ("transposed") and of a broadcast row
("broadcast"), and cumulative_sum of a 1-D array; float32 and bfloat16 (CuPy has no bfloat16).
GB/s counts the bytes each op must read and write (for the broadcast case, the logical input:
the row itself is tiny and stays in cache). Timing is interleaved (peers.interleaved_ms): each
of `--reps` rounds runs `--iters` back-to-back calls of every library in turn, each timed with
its own CUDA events after warm-up; the median per library is reported, its spread (max / min
round) beside it. Inputs are random normal.

Accuracy: the relative error of the full float32 sum of each library against a float64 sum of
the same data on the host. Results go to <out>/<gpu>-sm<XY>-reduction.json.
"""

import numpy as np
from peers import header, interleaved_ms, start
from results_file import write_result

import pygpukit as gp


def red_fn(lib, op):
    """The library's f(x, axis) for reduction `op` (axis None: everything)."""
    if lib.name == "ours":
        return {
            "sum": lambda a, ax: gp.sum(a, axis=ax),
            "max": lambda a, ax: gp.max(a, axis=ax),
            "mean": lambda a, ax: gp.mean(a, axis=ax),
            "argmax": lambda a, ax: gp.argmax(a, axis=ax),
            "cumsum": lambda a, ax: gp.cumulative_sum(a, axis=ax),
        }[op]
    m = lib.m
    if lib.name == "torch":

        def full_or(f):
            return lambda a, ax: f(a) if ax is None else f(a, dim=ax)

        return {
            "sum": full_or(m.sum),
            "max": full_or(m.amax),
            "mean": full_or(m.mean),
            "argmax": full_or(m.argmax),
            "cumsum": lambda a, ax: m.cumsum(a, dim=ax),
        }[op]
    return {
        "sum": lambda a, ax: m.sum(a, axis=ax),
        "max": lambda a, ax: m.max(a, axis=ax),
        "mean": lambda a, ax: m.mean(a, axis=ax),
        "argmax": lambda a, ax: m.argmax(a, axis=ax),
        "cumsum": lambda a, ax: m.cumsum(a, axis=ax),
    }[op]


def transpose(lib, a):
    if lib.name == "ours":
        return gp.matrix_transpose(a)
    return a.T


def broadcast(lib, row, shape):
    if lib.name == "ours":
        return gp.broadcast_to(row, shape)
    if lib.name == "torch":
        return row.expand(*shape)
    return lib.m.broadcast_to(row, shape)


_HOST = {}


def host_data(rng, n):
    if n not in _HOST:
        _HOST[n] = rng.standard_normal(n, dtype=np.float32)
    return _HOST[n]


def case_input(lib, layout, dtype, n, rng):
    """(array, axis, elements read, outputs) for a layout."""
    side = 1 << (int(np.log2(n)) // 2)
    if layout == "full":
        return lib.array(host_data(rng, n), dtype), None, n, 1
    if layout == "rows":
        return (
            lib.array(host_data(rng, side * side), dtype).reshape(side, side),
            1,
            side * side,
            side,
        )
    if layout == "short-rows":
        rows = n // 256
        return lib.array(host_data(rng, n), dtype).reshape(rows, 256), 1, n, rows
    if layout == "columns":
        return (
            lib.array(host_data(rng, side * side), dtype).reshape(side, side),
            0,
            side * side,
            side,
        )
    if layout == "transposed":
        a = lib.array(host_data(rng, side * side), dtype).reshape(side, side)
        return transpose(lib, a), 1, side * side, side
    if layout == "broadcast":
        row = lib.array(host_data(rng, side), dtype)
        # The row is read from L2 over and over: count the logical input (side^2 elements).
        return broadcast(lib, row, (side, side)), 1, side * side, side
    raise ValueError(layout)


def prepare(lib, op, layout, dtype, n, rng):
    """(warmed-up call, bytes it moves) of `op` on `layout` in `lib`."""
    a, axis, elems_read, outputs = case_input(lib, layout, dtype, n, rng)
    itemsize = 2 if dtype == "bfloat16" else 4
    out_size = 8 if op == "argmax" else itemsize
    written = elems_read * itemsize if op == "cumsum" else outputs * out_size
    f = red_fn(lib, op)
    if op == "cumsum":
        axis = 0 if axis is None else axis
    call = lambda: f(a, axis)  # noqa: E731
    for _ in range(3):
        call()
    lib.sync()
    return call, elems_read * itemsize + written


def sum_errors(libs, n, rng):
    """Relative error of each library's float32 full sum against a float64 host sum."""
    host = host_data(rng, n) + np.float32(1.0)  # a nonzero mean, so the sum is well conditioned
    exact = float(np.sum(host, dtype=np.float64))
    errs = {}
    for lib in libs:
        a = lib.array(host, "float32")
        s = red_fn(lib, "sum")(a, None)
        got = float(gp.to_numpy(s)) if lib.name == "ours" else float(s.item())
        errs[lib.name] = abs(got - exact) / abs(exact)
    return errs


def main():
    args, dev, props, libs, versions = start(__doc__, iters=10)
    rng = np.random.default_rng(0)
    n = 1 << args.log2n

    cases = [(op, "full") for op in ("sum", "max", "mean", "argmax")]
    cases += [(op, "rows") for op in ("sum", "max", "mean")]
    cases += [("sum", "short-rows"), ("sum", "columns"), ("sum", "transposed")]
    cases += [("sum", "broadcast"), ("cumsum", "full")]
    rows = []
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
                lib.sync()
            rows.append(row)
            g = row["gbps"]
            print(
                f"{dtype:9s} {op:6s} {layout:10s} "
                + "  ".join(f"{k} {v:7.1f} GB/s" for k, v in g.items())
                + (f"  ours/torch {g['ours'] / g['torch']:.3f}" if "torch" in g else ""),
                flush=True,
            )
    errors = sum_errors(libs, n, rng)
    print(
        "float32 full-sum relative error vs float64: "
        + ", ".join(f"{k} {v:.2e}" for k, v in errors.items())
    )
    result = {
        **header(props, versions, args),
        "bandwidth": rows,
        "float32_sum_relative_error": errors,
        "timing": "interleaved rounds: each library's batch of back-to-back calls in turn, its "
        "own CUDA events; median of the rounds, spread = max / min round; "
        "GB/s = bytes read + written once / time.",
    }
    write_result(result, args.out, props, "reduction", cuda=dev.type == "cuda")


if __name__ == "__main__":
    main()

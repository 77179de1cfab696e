"""Matmul benchmark: pygpukit (cuBLASLt backend for now) beside torch.matmul, same process, same
inputs. Square sizes by default; writes benchmarks/results/<gpu>-sm<XY>-matmul.json.

Timing: after a warm-up, each library runs `iters` products back to back between two events
recorded on its own stream (gp.Event for pygpukit, torch.cuda.Event for torch); the median over
`reps` such batches, divided by `iters`, is the time per product. Host-side launch cost counts
only where it starves the GPU. Inputs are random normal; both libraries get the same values.
"""

import argparse
import json
import os
import statistics
import sys

import numpy as np

import pygpukit as gp


def _time(fn, event, iters, reps):
    """Median GPU time per call in seconds; `event()` makes a timing event of the library."""
    for _ in range(3):
        fn()
    samples = []
    for _ in range(reps):
        start, end = event(), event()
        start.record()
        for _ in range(iters):
            fn()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) / 1e3 / iters)
    return statistics.median(samples)


def _to_host_f64(x):
    if x.dtype == gp.bfloat16 or x.dtype == gp.float16:
        x = x.astype(gp.float32)
    return gp.to_numpy(x).astype(np.float64)


def run(sizes, dtypes, iters, reps):
    try:
        import torch
    except ImportError:
        torch = None
    rows = []
    for n in sizes:
        for name in dtypes:
            precision = "tf32" if name == "tf32" else "highest"
            dt = "float32" if name == "tf32" else name
            gdt = getattr(gp, dt)
            rng = np.random.default_rng(n)
            a32 = rng.standard_normal((n, n), dtype=np.float32)
            b32 = rng.standard_normal((n, n), dtype=np.float32)
            A = gp.asarray(a32).astype(gdt)
            B = gp.asarray(b32).astype(gdt)
            # Reference from the operands as the GPU sees them (after rounding to dt).
            a64, b64 = _to_host_f64(A), _to_host_f64(B)
            ref = a64 @ b64
            C = gp.matmul(A, B, precision=precision)
            err = np.abs(_to_host_f64(C) - ref)
            scale = np.abs(ref).max()
            ours = _time(
                lambda A=A, B=B, p=precision: gp.matmul(A, B, precision=p), gp.Event, iters, reps
            )
            flops = 2.0 * n**3
            row = {
                "op": "matmul",
                "dtype": name,
                "m": n,
                "n": n,
                "k": n,
                "ours_ms": ours * 1e3,
                "ours_tflops": flops / ours / 1e12,
                "max_rel_err": float(err.max() / scale),
                "mean_rel_err": float(err.mean() / scale),
            }
            if torch is not None and torch.cuda.is_available():
                tdt = {"bfloat16": torch.bfloat16, "float16": torch.float16}.get(dt, torch.float32)
                ta = torch.from_numpy(a64).cuda().to(tdt)
                tb = torch.from_numpy(b64).cuda().to(tdt)
                old = torch.backends.cuda.matmul.allow_tf32
                torch.backends.cuda.matmul.allow_tf32 = name == "tf32"
                tt = _time(
                    lambda ta=ta, tb=tb: torch.matmul(ta, tb),
                    lambda: torch.cuda.Event(enable_timing=True),
                    iters,
                    reps,
                )
                tc = torch.matmul(ta, tb).double().cpu().numpy()
                torch.backends.cuda.matmul.allow_tf32 = old
                terr = np.abs(tc - ref)
                row.update(
                    {
                        "torch_ms": tt * 1e3,
                        "torch_tflops": flops / tt / 1e12,
                        "ratio_vs_torch": tt / ours,
                        "torch_max_rel_err": float(terr.max() / scale),
                    }
                )
            rows.append(row)
            t = f"{row.get('torch_tflops', float('nan')):8.1f}"
            print(
                f"{name:>9} {n:>5}^3  ours {row['ours_tflops']:8.1f} TFLOP/s  torch {t} TFLOP/s"
                f"  ratio {row.get('ratio_vs_torch', float('nan')):5.2f}"
                f"  max rel err {row['max_rel_err']:.2e}",
                flush=True,
            )
    return rows


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--sizes", default="1024,2048,4096")
    p.add_argument("--dtypes", default="float16,bfloat16,float32,tf32")
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--reps", type=int, default=10)
    p.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results"))
    args = p.parse_args()
    dev = gp.default_device()
    if dev.type != "cuda":
        print("matmul benchmark: no CUDA device; nothing to measure", file=sys.stderr)
        return 1
    props = gp.device_properties(dev)
    rows = run(
        [int(s) for s in args.sizes.split(",")], args.dtypes.split(","), args.iters, args.reps
    )
    gpu = props["name"].replace(" ", "-")
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, f"{gpu}-sm{props['sm']}-matmul.json")
    with open(path, "w") as f:
        json.dump(
            {
                "gpu": props["name"],
                "sm": props["sm"],
                "driver": props["driver_version"],
                "pygpukit": gp.__version__,
                "backend": "cublaslt",
                "timing": "device events around batches of back-to-back calls, median per call",
                "results": rows,
            },
            f,
            indent=1,
        )
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

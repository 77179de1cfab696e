"""Fused GEMM epilogues: gp.gemm with a bias and an activation beside the same product forced
onto each kernel family (sm90, cuBLASLt with its own epilogues where it has them, else its plain
product plus our epilogue pass) and torch (F.linear / addmm, then the activation), same process,
same input values. Writes benchmarks/results/<gpu>-sm<XY>-gemm-epilogue[-quick].json.

Cases: bf16 / fp16, B = W.T (a linear layer's weight, "kk": both operands K-major) or B
row-major ("kn"); epilogues none, bias, bias + relu, bias + gelu (erf), bias + gelu_tanh,
bias + silu; shapes 2048^3 ... 8192^3 and 2048 x 14336 x 4096, or with --grid llm the LLM
projections (M 16 ... 8192 times (N, K) up to the 128k-vocabulary head; file suffix -llm), or
with --grid small products under 2048^3 MACs (file suffix -small).

Timing is interleaved (as in benchmarks/gemm.py): each round times one batch of
back-to-back calls of every candidate in turn between two device events, so clock and power
drift hit all alike; medians per call over the rounds, and each candidate's spread (max / min
batch time over the rounds) is reported beside it.

    python benchmarks/gemm_epilogue.py [--quick] [--dtypes bf16,fp16] [--layouts kk,kn]
    python benchmarks/gemm_epilogue.py --grid llm --layouts kk   # LLM projections, M 16 ... 8192
    python benchmarks/gemm_epilogue.py --device cpu     # tiny smoke run of the pipeline
"""

import argparse
import math

import numpy as np
from gemm import batch_seconds, kernel_counts, pilot
from peers import INTERLEAVED, interleaved_ms, open_gemm_device, product_result
from results_file import write_result

import pygpukit as gp

DTYPES = {"bf16": "bfloat16", "fp16": "float16"}
SHAPES = ((2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192), (2048, 14336, 4096))
# --grid llm: the LLM projections of benchmarks/gemm.py's llm section, as (M, N, K).
LLM_M = (16, 128, 2048, 8192)
LLM_NK = ((4096, 4096), (14336, 4096), (4096, 14336), (28672, 8192), (8192, 28672), (128256, 4096))
# --grid small: products under 2048^3 MACs, where the plain sm90 kernels lead cuBLASLt (squares,
# a 64-tile short-K product, a few-tile long-K one).
SMALL_SHAPES = (
    (512, 512, 512),
    (1024, 1024, 1024),
    (1024, 1024, 1536),
    (128, 8192, 1024),
    (256, 4096, 4096),
    (1024, 4096, 1024),
)
QUICK_SHAPES = ((2048, 2048, 2048), (4096, 4096, 4096), (2048, 14336, 4096))
SMOKE_SHAPES = ((33, 40, 24),)
EPILOGUES = {  # name -> (bias, activation)
    "none": (False, None),
    "bias": (True, None),
    "bias_relu": (True, "relu"),
    "bias_gelu": (True, "gelu"),
    "bias_gelu_tanh": (True, "gelu_tanh"),
    "bias_silu": (True, "silu"),
}
FAMILIES = ("auto", "sm90", "cublaslt")


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="three shapes")
    p.add_argument(
        "--grid",
        choices=("square", "llm", "small"),
        default="square",
        help="shapes (default square)",
    )
    p.add_argument("--llm-m", default=None, help="M values of --grid llm, e.g. 16,128")
    p.add_argument("--dtypes", default="bf16", help="comma list of bf16, fp16")
    p.add_argument("--layouts", default="kk,kn", help="comma list of kk (B = W.T), kn")
    p.add_argument("--epilogues", default=",".join(EPILOGUES))
    p.add_argument("--device", default=None)
    p.add_argument("--reps", type=int, default=None, help="interleaved rounds (default 7)")
    p.add_argument("--batch-ms", type=float, default=None, help="batch length (default 2 ms)")
    p.add_argument("--no-torch", action="store_true")
    p.add_argument("--out", default=None, help="output folder (default benchmarks/results)")
    p.add_argument("--seed", type=int, default=0)
    return p.parse_args()


class EventTimer:
    """peers.interleaved_ms's timer for a call timed with `event` (a factory of gp or torch
    events: torch's work is timed on its stream)."""

    def __init__(self, event):
        self.event = event

    def time_ms(self, call, iters):
        return batch_seconds(call, self.event, iters) * 1e3

    def sync(self):
        pass


def interleaved(cands, reps, batch_ms):
    """{key: (fn, event factory)} -> peers.interleaved_ms's result, plus each key's "iters"
    (sized so that a batch takes >= batch_ms)."""
    iters = {k: pilot(fn, ev, None, batch_ms) for k, (fn, ev) in cands.items()}
    calls = {k: (EventTimer(ev), fn) for k, (fn, ev) in cands.items()}
    out = interleaved_ms(calls, iters, reps)
    for k, t in out.items():
        t["iters"] = iters[k]
    return out


def time_candidates(args, dev, cands, row, errs):
    """Times `cands` ({key: (fn, event factory)}) interleaved into `row`: per key its us per
    call, TFLOP/s (of row["flops"]), spread, iters and max_rel_err (from `errs`); a key whose
    call failed gets "<key>_status" instead."""
    batch_ms = args.batch_ms or (0.2 if dev.type == "cpu" else 2.0)
    for key, t in interleaved(cands, args.reps or 7, batch_ms).items():
        if "error" in t:
            row[f"{key}_status"] = f"failed: {t['error'][:160]}"
            continue
        s = t["ms"] * 1e-3
        row[key] = {"us": s * 1e6, "tflops": row["flops"] / s / 1e12, "spread": t["spread"]}
        row[key]["iters"] = t["iters"]
        if key in errs:
            row[key]["max_rel_err"] = errs[key]


def torch_fn(torch, x, w_nk, b_kn, bias, act, layout):
    """torch's unfused form of the same product: F.linear / addmm (its cuBLASLt bias epilogue),
    then the activation as its own kernel."""
    F = torch.nn.functional
    acts = {
        None: lambda y: y,
        "relu": F.relu,
        "gelu": F.gelu,
        "gelu_tanh": lambda y: F.gelu(y, approximate="tanh"),
        "silu": F.silu,
    }
    a = acts[act]
    if layout == "kk":
        return lambda: a(F.linear(x, w_nk, bias))
    if bias is None:
        return lambda: a(torch.matmul(x, b_kn))
    return lambda: a(torch.addmm(bias, x, b_kn))


def max_rel_err(got, ref, bound):
    g = np.asarray(gp.to_numpy(got.astype(gp.float32)), np.float64)
    return float(np.max(np.abs(g - ref) / bound))


def measure(args, dev, torch, dt, layout, m, n, k, epi, host):
    storage = DTYPES[dt]
    x32, w32, bias32 = host
    bias_on, act = EPILOGUES[epi]
    gdt = getattr(gp, storage)
    x = gp.asarray(x32, device=dev).astype(gdt)
    w = gp.asarray(w32, device=dev).astype(gdt)  # (N, K)
    b = gp.matrix_transpose(w) if layout == "kk" else gp.matrix_transpose(w).copy()
    bias = gp.asarray(bias32, device=dev).astype(gdt) if bias_on else None
    # float64 reference of 16 rows, from the operands as stored
    rows = np.linspace(0, m - 1, min(m, 16)).astype(np.int64)
    xa = np.asarray(gp.to_numpy(x.astype(gp.float32)), np.float64)[rows]
    wb = np.asarray(gp.to_numpy(b.astype(gp.float32)), np.float64)
    pre = xa @ wb
    mag = np.abs(xa) @ np.abs(wb) + 1e-30
    if bias_on:
        bb = np.asarray(gp.to_numpy(bias.astype(gp.float32)), np.float64)
        pre, mag = pre + bb, mag + np.abs(bb)
    ref = {
        None: pre,
        "relu": np.maximum(pre, 0),
        "gelu": 0.5 * pre * (1 + np.vectorize(math.erf)(pre / math.sqrt(2))),
        "gelu_tanh": 0.5 * pre * (1 + np.tanh(math.sqrt(2 / math.pi) * (pre + 0.044715 * pre**3))),
        "silu": pre / (1 + np.exp(-pre)),
    }[act]
    row = {"dtype": dt, "layout": layout, "m": m, "n": n, "k": k, "epilogue": epi}
    row["flops"] = 2.0 * m * n * k
    cands, errs, kernels = {}, {}, {}
    for fam in FAMILIES:

        def run(fam=fam):
            return gp.gemm(x, b, bias=bias, activation=act, backend=fam)

        try:
            out = run()
        except NotImplementedError as e:
            row[f"{fam}_status"] = f"n/a: {str(e)[:160]}"
            continue
        kernels[fam] = list(kernel_counts(dev, run))
        errs[fam] = max_rel_err(out[rows], ref, mag)
        cands[fam] = (run, lambda: gp.Event(dev))
    if torch is not None:
        tdt = getattr(torch, storage)
        tx = torch.from_numpy(x32).to(tdt).cuda()
        tw = torch.from_numpy(w32).to(tdt).cuda()
        tb = tw.t().contiguous()
        tbias = torch.from_numpy(bias32).to(tdt).cuda() if bias_on else None
        cands["torch"] = (
            torch_fn(torch, tx, tw, tb, tbias, act, layout),
            lambda: torch.cuda.Event(enable_timing=True),
        )
    time_candidates(args, dev, cands, row, errs)
    for key, names in kernels.items():
        if key in row:
            row[key]["kernels"] = names
    best_peer = [row[k]["us"] for k in ("cublaslt", "torch") if k in row]
    if "auto" in row and best_peer:
        row["auto_vs_best_peer"] = min(best_peer) / row["auto"]["us"]
    return row


def main():
    args = parse_args()
    opened = open_gemm_device(args, "gemm_epilogue")
    if opened is None:
        return 1
    dev, torch, props = opened
    cpu = dev.type == "cpu"
    if cpu:
        shapes = SMOKE_SHAPES
    elif args.grid == "llm":
        ms = [int(v) for v in args.llm_m.split(",")] if args.llm_m else LLM_M
        shapes = [(m, n, k) for m in ms for n, k in LLM_NK]
    elif args.grid == "small":
        shapes = SMALL_SHAPES
    else:
        shapes = QUICK_SHAPES if args.quick else SHAPES
    epis = [e for e in args.epilogues.split(",") if e]
    cols = [*FAMILIES, "torch"]
    print(f"{'case':44s} " + " ".join(f"{c + ' us':>14s}" for c in cols) + "  auto/best")
    results = []
    for dt in args.dtypes.split(","):
        for m, n, k in shapes:
            rng = np.random.default_rng([args.seed, m, n, k])
            host = (
                rng.standard_normal((m, k), dtype=np.float32),
                rng.standard_normal((n, k), dtype=np.float32) / np.float32(math.sqrt(k)),
                rng.standard_normal((n,), dtype=np.float32),
            )
            for layout in args.layouts.split(","):
                for epi in epis:
                    r = measure(args, dev, torch, dt, layout, m, n, k, epi, host)
                    results.append(r)
                    name = f"{dt} {layout} {m}x{n}x{k} {epi}"
                    cells = []
                    for c in cols:
                        v = r.get(c)
                        cells.append(
                            f"{v['us']:9.1f} ±{(v['spread'] - 1) * 100:2.0f}%"
                            if v
                            else f"{'-':>14s}"
                        )
                    ratio = r.get("auto_vs_best_peer")
                    print(
                        f"{name:44s} " + " ".join(cells) + (f"  {ratio:5.2f}x" if ratio else ""),
                        flush=True,
                    )
    settings = {"quick": args.quick, "grid": args.grid, "reps": args.reps or 7, "seed": args.seed}
    result = product_result(props, dev, torch, INTERLEAVED, settings, results)
    write_result(
        result,
        args.out,
        props,
        "gemm-epilogue",
        cuda=not cpu,
        suffix=("" if args.grid == "square" else f"-{args.grid}")
        + (f"-m{args.llm_m.replace(',', '-')}" if args.grid == "llm" and args.llm_m else "")
        + ("-quick" if args.quick else ""),
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Grouped products (mixture-of-experts layers): gp.grouped_matmul (auto: one launch over every
group's tiles on Hopper where a loop would be launch-bound), the one launch forced
(backend="sm90"), the same groups as a loop of cuBLASLt calls (gp.grouped_matmul with
backend="cublaslt"), a loop of torch.mm calls into slices of one output, and torch._grouped_mm
where this torch has it; same operands, same process. Writes
benchmarks/results/<gpu>-sm<XY>-grouped-matmul[-quick].json.

Cases are the expert projections of published MoE models at a prefill batch (rows = tokens x
experts per token, spread over the experts unevenly: a multinomial draw over Dirichlet(4)
weights, so some experts get few rows) and one decode step; bf16, each expert's weight stored as
a linear layer's (N, K) matrix and read transposed (K-major B), as MoE layers keep them. Each row
also carries the largest error of a few rows per group against a float64 product, relative to
sum |a_ik b_kj|.

Timing is interleaved (peers.interleaved_ms through gemm_epilogue.time_candidates): each round
times one batch of back-to-back calls of every candidate in turn between its own device events;
medians per call, and each candidate's spread (max / min batch time over the rounds).

    python benchmarks/grouped_matmul.py [--quick]
    python benchmarks/grouped_matmul.py --device cpu     # tiny smoke run of the pipeline
"""

import argparse

import numpy as np
from gemm import kernel_counts
from gemm_epilogue import time_candidates
from peers import INTERLEAVED, open_gemm_device, product_result
from results_file import write_result

import pygpukit as gp

# (name, experts, rows, K, N): rows = tokens x experts per token.
CASES = (
    ("mixtral-8x7b w1 prefill", 8, 8192, 4096, 14336),
    ("mixtral-8x7b w2 prefill", 8, 8192, 14336, 4096),
    ("deepseek-v3 up, 32 local experts", 32, 8192, 7168, 4096),
    ("deepseek-v3 down, 32 local experts", 32, 8192, 2048, 7168),
    ("qwen-moe up, 64 experts", 64, 4096, 2048, 1536),
    ("qwen-moe down, 64 experts", 64, 4096, 768, 2048),
    ("mixtral-8x7b w1 decode 32 tokens", 8, 64, 4096, 14336),
    ("deepseek-v3 up decode 64 tokens", 32, 512, 7168, 4096),
)
QUICK = (CASES[0], CASES[2], CASES[4], CASES[6])
SMOKE = (("smoke", 5, 70, 64, 48),)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="four cases")
    p.add_argument("--device", default=None)
    p.add_argument("--reps", type=int, default=None, help="interleaved rounds (default 7)")
    p.add_argument("--batch-ms", type=float, default=None, help="batch length (default 2 ms)")
    p.add_argument("--no-torch", action="store_true")
    p.add_argument("--out", default=None, help="output folder (default benchmarks/results)")
    p.add_argument("--seed", type=int, default=0)
    return p.parse_args()


def group_sizes(rng, experts, rows):
    """Uneven rows per expert summing to `rows` (some may be 0)."""
    weights = rng.dirichlet(np.full(experts, 4.0))
    return [int(s) for s in rng.multinomial(rows, weights)]


def measure(args, dev, torch, case, rng):
    name, experts, rows, k, n = case
    sizes = group_sizes(rng, experts, rows)
    ends = [int(e) for e in np.cumsum(sizes)]
    a32 = rng.standard_normal((rows, k), dtype=np.float32)
    w32 = rng.standard_normal((experts, n, k), dtype=np.float32)  # (N, K) per expert
    ga = gp.asarray(a32, device=dev).astype(gp.bfloat16)
    gw = gp.asarray(w32, device=dev).astype(gp.bfloat16)
    gb = gp.permute_dims(gw, (0, 2, 1))  # (experts, K, N), K-major
    # Error reference: the bf16-rounded operands in float64, a few rows of every group.
    a64 = np.asarray(gp.to_numpy(ga.astype(gp.float32)), np.float64)
    w64 = np.asarray(gp.to_numpy(gw.astype(gp.float32)), np.float64)
    picks = []
    r0 = 0
    for g, r1 in enumerate(ends):
        for r in sorted({r0, (r0 + r1) // 2, r1 - 1}) if r1 > r0 else ():
            picks.append((g, r))
        r0 = r1
    ref = np.stack([a64[r] @ w64[g].T for g, r in picks]) if picks else np.zeros((0, n))
    mag = np.stack([np.abs(a64[r]) @ np.abs(w64[g]).T for g, r in picks]) if picks else ref
    rows_picked = [r for _, r in picks]

    def err(y):
        y = np.asarray(y, np.float64)[rows_picked]
        return float(np.max(np.abs(y - ref) / (mag + 1e-30))) if picks else 0.0

    row = {
        "case": name,
        "experts": experts,
        "rows": rows,
        "k": k,
        "n": n,
        "group_rows": sizes,
        "flops": 2.0 * rows * n * k,
    }

    def ours():
        return gp.grouped_matmul(ga, gb, ends)

    def loop():
        return gp.grouped_matmul(ga, gb, ends, backend="cublaslt")

    def one_launch():
        return gp.grouped_matmul(ga, gb, ends, backend="sm90")

    errs = {}
    cands = {}
    mine = [("ours", ours)]
    if dev.type == "cuda":
        mine += [("one_launch", one_launch), ("cublaslt_loop", loop)]
    for key, fn in mine:
        errs[key] = err(gp.to_numpy(fn().astype(gp.float32)))
        row[f"{key}_kernels"] = kernel_counts(dev, fn)
        cands[key] = (fn, lambda: gp.Event(dev))
    if torch is not None:
        ta = torch.from_numpy(a32).cuda().to(torch.bfloat16)
        tw = torch.from_numpy(w32).cuda().to(torch.bfloat16)
        tb = tw.transpose(-2, -1)
        out = torch.empty((rows, n), device="cuda", dtype=torch.bfloat16)
        bounds = [(g, r0, r1) for g, (r0, r1) in enumerate(zip([0, *ends[:-1]], ends)) if r1 > r0]

        def torch_loop():
            for g, r0, r1 in bounds:
                torch.mm(ta[r0:r1], tb[g], out=out[r0:r1])
            return out

        errs["torch_loop"] = err(torch_loop().float().cpu().numpy())
        cands["torch_loop"] = (torch_loop, lambda: torch.cuda.Event(enable_timing=True))
        if hasattr(torch, "_grouped_mm"):
            offs = torch.tensor(ends, device="cuda", dtype=torch.int32)

            def grouped():
                return torch._grouped_mm(ta, tb, offs=offs)

            try:
                errs["torch_grouped"] = err(grouped().float().cpu().numpy())
                cands["torch_grouped"] = (grouped, lambda: torch.cuda.Event(enable_timing=True))
            except Exception as e:  # noqa: BLE001 - a torch without it for these operands
                row["torch_grouped_status"] = f"n/a: {type(e).__name__}: {str(e)[:160]}"
        else:
            row["torch_grouped_status"] = "n/a: this torch has no torch._grouped_mm"
    time_candidates(args, dev, cands, row, errs)
    for peer in ("one_launch", "cublaslt_loop", "torch_loop", "torch_grouped"):
        if peer in row and "ours" in row:
            row[f"ours_vs_{peer}"] = row[peer]["us"] / row["ours"]["us"]
    return row


def main():
    args = parse_args()
    opened = open_gemm_device(args, "grouped_matmul")
    if opened is None:
        return 1
    dev, torch, props = opened
    cpu = dev.type == "cpu"
    cases = SMOKE if cpu else QUICK if args.quick else CASES
    cols = ("ours", "one_launch", "cublaslt_loop", "torch_loop", "torch_grouped")
    print(f"{'case':40s} " + " ".join(f"{c + ' TFLOP/s':>22s}" for c in cols))
    results = []
    for i, case in enumerate(cases):
        rng = np.random.default_rng([args.seed, i])
        r = measure(args, dev, torch, case, rng)
        results.append(r)
        cells = [
            f"{r[c]['tflops']:13.1f} ±{(r[c]['spread'] - 1) * 100:2.0f}%" if c in r else "-"
            for c in cols
        ]
        print(f"{case[0]:40s} " + " ".join(f"{c:>22s}" for c in cells), flush=True)
    result = product_result(
        props,
        dev,
        torch,
        INTERLEAVED,
        {"quick": args.quick, "reps": args.reps or 7, "seed": args.seed, "dtype": "bfloat16"},
        results,
    )
    write_result(
        result,
        args.out,
        props,
        "grouped-matmul",
        cuda=not cpu,
        suffix="-quick" if args.quick else "",
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""FP8 scaled products: gp.scaled_matmul (auto, and our sm90 wgmma kernels forced where they
apply) beside torch._scaled_mm (cuBLASLt's FP8 matmul) with the same operands and scales, and
the bf16 product of the same shape (torch.matmul) for scale, same process. Writes
benchmarks/results/<gpu>-sm<XY>-scaled-matmul[-quick].json.

Recipes: "tensor" (one scale per operand), "rowwise" (per row of A, per column of B) and
"deepseek" (1x128 groups of A, 128x128 blocks of B, the DeepSeek-V3 recipe); e4m3 operands, A
row-major and B = W.T (a linear layer's weight), bfloat16 results. Shapes: 4096^3, 8192^3 and
the LLM projections (M 2048 / 8192 x (N, K)); --quick three of them. Each row also carries the
largest error of 16 result rows against a float64 product of the dequantized operands, relative
to sum |a_ik b_kj| (ours and torch alike).

Timing is interleaved (peers.interleaved_ms): each round times one batch of back-to-back calls
of every candidate in turn between its own device events; medians per call, and each
candidate's spread (max / min batch time over the rounds).

    python benchmarks/scaled_matmul.py [--quick] [--recipes tensor,rowwise,deepseek]
    python benchmarks/scaled_matmul.py --device cpu     # tiny smoke run of the pipeline
"""

import argparse

import numpy as np
from gemm import kernel_counts
from gemm_epilogue import time_candidates
from peers import INTERLEAVED, open_gemm_device, product_result
from results_file import write_result

import pygpukit as gp

SHAPES = (
    (4096, 4096, 4096),
    (8192, 8192, 8192),
    (2048, 4096, 4096),
    (2048, 14336, 4096),
    (2048, 4096, 14336),
    (8192, 28672, 8192),
    (8192, 8192, 28672),
)
QUICK_SHAPES = ((4096, 4096, 4096), (8192, 8192, 8192), (2048, 14336, 4096))
SMOKE_SHAPES = ((40, 48, 256),)
RECIPES = ("tensor", "rowwise", "deepseek")


def cdiv(a, b):
    return -(-a // b)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="three shapes")
    p.add_argument("--recipes", default=",".join(RECIPES))
    p.add_argument("--device", default=None)
    p.add_argument("--reps", type=int, default=None, help="interleaved rounds (default 7)")
    p.add_argument("--batch-ms", type=float, default=None, help="batch length (default 2 ms)")
    p.add_argument("--no-torch", action="store_true")
    p.add_argument("--out", default=None, help="output folder (default benchmarks/results)")
    p.add_argument("--seed", type=int, default=0)
    return p.parse_args()


def scales(rng, recipe, m, n, k):
    """(scale_a, scale_b) as float32 NumPy arrays in the shapes gp.scaled_matmul documents."""
    if recipe == "tensor":
        return np.float32(rng.random() + 0.5), np.float32(rng.random() + 0.5)
    if recipe == "rowwise":
        return (rng.random((m, 1)) + 0.5).astype(np.float32), (rng.random((1, n)) + 0.5).astype(
            np.float32
        )
    kb = cdiv(k, 128)
    return (rng.random((m, kb)) + 0.5).astype(np.float32), (
        rng.random((kb, cdiv(n, 128))) + 0.5
    ).astype(np.float32)


def torch_scales(torch, recipe, sa, sb):
    """The same scales as torch._scaled_mm wants them (the block scales outer-dim-major)."""
    ta = torch.from_numpy(np.asarray(sa, np.float32)).cuda()
    tb = torch.from_numpy(np.asarray(sb, np.float32)).cuda()
    if recipe == "deepseek":
        ta = ta.t().contiguous().t()  # (M, K/128) with stride (1, M)
        tb = tb.t().contiguous().t()  # (K/128, N/128) with stride (1, K/128)
    return ta, tb


def expand(s, rows, cols):
    s = np.asarray(s, np.float64).reshape(np.shape(s) if np.ndim(s) == 2 else (1, 1))
    for d, extent in ((0, rows), (1, cols)):
        if s.shape[d] not in (1, extent):
            s = np.repeat(s, 128, axis=d)
            s = s[:rows] if d == 0 else s[:, :cols]
    return np.broadcast_to(s, (rows, cols))


def measure(args, dev, torch, recipe, m, n, k, rng):
    import ml_dtypes

    e4 = ml_dtypes.float8_e4m3fn
    x8 = (rng.standard_normal((m, k), dtype=np.float32) * 8).astype(e4)
    w8 = (rng.standard_normal((n, k), dtype=np.float32) * 8).astype(e4)  # (N, K)
    sa, sb = scales(rng, recipe, m, n, k)
    gx = gp.asarray(x8, device=dev)
    gw = gp.matrix_transpose(gp.asarray(w8, device=dev))  # (K, N), K-major
    gsa, gsb = gp.asarray(sa, device=dev), gp.asarray(sb, device=dev)
    if recipe == "deepseek":  # block scales outer-dim-major, as torch takes them: no copy per call
        gsa = gp.matrix_transpose(gp.asarray(np.ascontiguousarray(sa.T), device=dev))
        gsb = gp.matrix_transpose(gp.asarray(np.ascontiguousarray(sb.T), device=dev))
    rows = np.linspace(0, m - 1, min(m, 16)).astype(np.int64)
    A = x8[rows].astype(np.float64) * expand(sa, m, k)[rows]
    B = w8.T.astype(np.float64) * expand(sb, k, n)
    ref, mag = A @ B, np.abs(A) @ np.abs(B) + 1e-30

    def err(y):
        return float(np.max(np.abs(np.asarray(y, np.float64)[rows] - ref) / mag))

    row = {"recipe": recipe, "m": m, "n": n, "k": k, "flops": 2.0 * m * n * k}

    def ours():
        return gp.scaled_matmul(gx, gw, gsa, gsb, out_dtype=gp.bfloat16)

    y = ours()
    kernels = list(kernel_counts(dev, ours))  # before the error check's own cast
    errs = {"ours": err(gp.to_numpy(y.astype(gp.float32)))}
    cands = {"ours": (ours, lambda: gp.Event(dev))}
    if recipe != "deepseek" and dev.type == "cuda":
        # Our wgmma kernels forced (per-tensor and per-row / column scales only).

        def sm90():
            return gp.scaled_matmul(gx, gw, gsa, gsb, out_dtype=gp.bfloat16, backend="sm90")

        try:
            errs["sm90"] = err(gp.to_numpy(sm90().astype(gp.float32)))
            cands["sm90"] = (sm90, lambda: gp.Event(dev))
        except NotImplementedError as e:
            row["sm90_status"] = f"n/a: {str(e).splitlines()[0][:160]}"
    if torch is not None:
        tx = torch.from_numpy(x8.view(np.uint8)).cuda().view(torch.float8_e4m3fn)
        tw = torch.from_numpy(w8.view(np.uint8)).cuda().view(torch.float8_e4m3fn)
        ta, tb = torch_scales(torch, recipe, sa, sb)

        def peer():
            return torch._scaled_mm(tx, tw.t(), ta, tb, out_dtype=torch.bfloat16)

        try:
            errs["torch"] = err(peer().float().cpu().numpy())
            cands["torch"] = (peer, lambda: torch.cuda.Event(enable_timing=True))
        except Exception as e:  # noqa: BLE001 - a recipe this torch lacks is recorded
            row["torch_status"] = f"n/a: {type(e).__name__}: {str(e).splitlines()[0][:160]}"
        xb, wb = tx.to(torch.bfloat16), tw.to(torch.bfloat16)
        cands["torch_bf16"] = (
            lambda: torch.matmul(xb, wb.t()),
            lambda: torch.cuda.Event(enable_timing=True),
        )
    time_candidates(args, dev, cands, row, errs)
    row["ours"]["kernels"] = kernels
    if "torch" in row:
        row["ours_vs_torch"] = row["torch"]["us"] / row["ours"]["us"]
        if "sm90" in row:
            row["sm90_vs_torch"] = row["torch"]["us"] / row["sm90"]["us"]
    return row


def main():
    args = parse_args()
    opened = open_gemm_device(args, "scaled_matmul")
    if opened is None:
        return 1
    dev, torch, props = opened
    cpu = dev.type == "cpu"
    shapes = SMOKE_SHAPES if cpu else QUICK_SHAPES if args.quick else SHAPES
    cols = ("ours", "sm90", "torch", "torch_bf16")
    print(f"{'case':32s} " + " ".join(f"{c + ' TFLOP/s':>20s}" for c in cols) + "  ours/torch")
    results = []
    for recipe in args.recipes.split(","):
        for m, n, k in shapes:
            rng = np.random.default_rng([args.seed, m, n, k])
            r = measure(args, dev, torch, recipe, m, n, k, rng)
            results.append(r)
            cells = [
                f"{r[c]['tflops']:12.1f} ±{(r[c]['spread'] - 1) * 100:2.0f}%" if c in r else "-"
                for c in cols
            ]
            ratio = r.get("ours_vs_torch")
            print(
                f"{recipe + f' {m}x{n}x{k}':32s} "
                + " ".join(f"{c:>20s}" for c in cells)
                + (f"  {ratio:5.2f}x" if ratio else ""),
                flush=True,
            )
    result = product_result(
        props,
        dev,
        torch,
        INTERLEAVED,
        {"quick": args.quick, "reps": args.reps or 7, "seed": args.seed},
        results,
    )
    write_result(
        result,
        args.out,
        props,
        "scaled-matmul",
        cuda=not cpu,
        suffix="-quick" if args.quick else "",
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The issue's 4-layer MLP, h = h + linear(gelu(linear(h, w1)), w2) per layer, bf16, M 2048, d 4096,
hidden 4d: pygpukit (gp.linear with the activation, then gp.gemm adding the residual as its C
input) beside torch (F.linear, F.gelu, F.linear, +), same weights, same process. Writes
benchmarks/results/<gpu>-sm<XY>-mlp.json.

Timing is interleaved (peers.interleaved_ms): each round times one batch of whole forward
passes of each library in turn between its own device events; medians per pass and each one's
spread (max / min batch over the rounds). The JSON also carries the largest difference of the
two results relative to the largest |h|.

    python benchmarks/mlp.py [--m 2048] [--d 4096] [--layers 4] [--act gelu]
    python benchmarks/mlp.py --device cpu --m 8 --d 32     # smoke run of the pipeline
"""

import argparse

import numpy as np
from gemm import kernel_counts
from gemm_epilogue import interleaved
from peers import open_gemm_device, product_result
from results_file import write_result

import pygpukit as gp


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--m", type=int, default=2048)
    p.add_argument("--d", type=int, default=4096)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--act", default="gelu", choices=("gelu", "gelu_tanh", "relu", "silu"))
    p.add_argument("--device", default=None)
    p.add_argument("--reps", type=int, default=None, help="interleaved rounds (default 9)")
    p.add_argument("--batch-ms", type=float, default=None, help="batch length (default 20 ms)")
    p.add_argument("--no-torch", action="store_true")
    p.add_argument("--out", default=None, help="output folder (default benchmarks/results)")
    p.add_argument("--seed", type=int, default=0)
    return p.parse_args()


def main():
    args = parse_args()
    opened = open_gemm_device(args, "mlp")
    if opened is None:
        return 1
    dev, torch, props = opened
    cpu = dev.type == "cpu"
    m, d, h4 = args.m, args.d, 4 * args.d
    rng = np.random.default_rng(args.seed)
    x32 = rng.standard_normal((m, d), dtype=np.float32)
    ws = [
        (
            rng.standard_normal((h4, d), dtype=np.float32) / np.float32(np.sqrt(d)),
            rng.standard_normal((d, h4), dtype=np.float32) / np.float32(np.sqrt(h4) * args.layers),
        )
        for _ in range(args.layers)
    ]
    bf = gp.bfloat16
    gx = gp.asarray(x32, device=dev).astype(bf)
    gws = [
        (gp.asarray(a, device=dev).astype(bf), gp.asarray(b, device=dev).astype(bf)) for a, b in ws
    ]

    def ours():
        h = gx
        for w1, w2 in gws:
            u = gp.linear(h, w1, activation=args.act)
            h = gp.gemm(u, gp.matrix_transpose(w2), h)  # u @ w2.T + h: the residual as C
        return h

    cands = {"ours": (ours, lambda: gp.Event(dev))}
    row = {"m": m, "d": d, "hidden": h4, "layers": args.layers, "activation": args.act}
    row["flops"] = args.layers * 2 * (2.0 * m * d * h4)
    if torch is not None:
        F = torch.nn.functional
        act = {
            "gelu": F.gelu,
            "gelu_tanh": lambda y: F.gelu(y, approximate="tanh"),
            "relu": F.relu,
            "silu": F.silu,
        }[args.act]
        tx = torch.from_numpy(x32).cuda().to(torch.bfloat16)
        tws = [
            (
                torch.from_numpy(a).cuda().to(torch.bfloat16),
                torch.from_numpy(b).cuda().to(torch.bfloat16),
            )
            for a, b in ws
        ]

        def peer():
            h = tx
            for w1, w2 in tws:
                h = h + F.linear(act(F.linear(h, w1)), w2)
            return h

        cands["torch"] = (peer, lambda: torch.cuda.Event(enable_timing=True))
        a = np.asarray(gp.to_numpy(ours().astype(gp.float32)), np.float64)
        b = peer().float().cpu().numpy().astype(np.float64)
        row["max_diff_rel"] = float(np.max(np.abs(a - b)) / np.max(np.abs(b)))
    batch_ms = args.batch_ms or (0.5 if cpu else 20.0)
    times = interleaved(cands, args.reps or 9, batch_ms)
    for key, t in times.items():
        if "error" in t:
            row[f"{key}_status"] = f"failed: {t['error'][:160]}"
            continue
        s = t["ms"] * 1e-3
        row[key] = {"ms": t["ms"], "tflops": row["flops"] / s / 1e12, "spread": t["spread"]}
        row[key]["iters"] = t["iters"]
    row["ours"]["kernels"] = list(kernel_counts(dev, ours))
    if "torch" in row:
        row["ours_vs_torch"] = row["torch"]["ms"] / row["ours"]["ms"]
    for key in ("ours", "torch"):
        if key in row:
            v = row[key]
            spread = (v["spread"] - 1) * 100
            print(f"{key:6s} {v['ms']:8.3f} ms ±{spread:3.0f}%  {v['tflops']:6.1f} TFLOP/s")
    if "ours_vs_torch" in row:
        print(f"ours / torch: {row['ours_vs_torch']:.3f}x (max diff {row['max_diff_rel']:.2e})")
    print("kernels:", ", ".join(row["ours"]["kernels"]))
    timing = (
        "interleaved rounds: one batch of whole forward passes of each library in turn between "
        "device events; median per pass; spread = max / min batch over rounds"
    )
    result = product_result(
        props, dev, torch, timing, {"reps": args.reps or 9, "seed": args.seed}, [row]
    )
    write_result(result, args.out, props, "mlp", cuda=not cpu)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

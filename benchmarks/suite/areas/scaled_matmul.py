"""benchmarks/scaled_matmul.py: FP8 scaled products (gp.scaled_matmul) beside torch._scaled_mm,
with the bf16 product of the same shape.

One row per case "<recipe> MxNxK" (recipes: tensor, rowwise, deepseek = 1x128 groups of A with
128x128 blocks of B): time per call of ours, peers torch._scaled_mm (the baseline) and torch's
bf16 matmul, the max relative error of ours. flops place the row under the roofline."""

from ..registry import Adapter
from ..rows import make_row


def normalize(raw):
    rows = []
    for r in raw["results"]:
        ours = r.get("ours", {})
        peers = {
            "torch": r.get("torch", {}).get("us"),
            "torch bf16": r.get("torch_bf16", {}).get("us"),
            "sm90": r.get("sm90", {}).get("us"),
        }
        m, n, k = r["m"], r["n"], r["k"]
        rows.append(
            make_row(
                f"{r['recipe']} {m}x{n}x{k}",
                "time",
                "us",
                ours.get("us"),
                peers,
                prefer=("torch",),
                max_err=ours.get("max_rel_err"),
                dtype="fp8",
                flops=r["flops"],
                bytes=m * k + k * n + 2 * m * n,
            )
        )
    return rows


ADAPTER = Adapter(
    area="scaled-matmul",
    normalize=normalize,
    script="scaled_matmul.py",
    quick_args=("--quick",),
    cpu_args=("--device", "cpu", "--reps", "1", "--batch-ms", "0.05"),
    roofline="gemm",
    timeout=(1200.0, 600.0),
    order=12,
)

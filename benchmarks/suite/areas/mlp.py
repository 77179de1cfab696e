"""benchmarks/mlp.py: the 4-layer bf16 MLP (h = h + linear(gelu(linear(h, w1)), w2) per layer)
of gp.linear / gp.gemm beside torch (F.linear, F.gelu, F.linear, +).

One row per configuration "M x d, hidden, layers, activation": time per forward pass of ours and
torch (the baseline), the largest difference from torch relative to its magnitude. flops place
the row under the roofline."""

from ..registry import Adapter
from ..rows import make_row


def normalize(raw):
    rows = []
    for r in raw["results"]:
        ours = r.get("ours", {})
        m, d, hidden, layers = r["m"], r["d"], r["hidden"], r["layers"]
        rows.append(
            make_row(
                f"{m}x{d} hidden {hidden} x{layers} {r['activation']}",
                "time",
                "ms",
                ours.get("ms"),
                {"torch": r.get("torch", {}).get("ms")},
                prefer=("torch",),
                max_err=r.get("max_diff_rel"),
                dtype="bf16",
                flops=r["flops"],
                # weights once, each layer's input, hidden activation and output
                bytes=2 * layers * (2 * d * hidden + m * (2 * d + 2 * hidden)),
            )
        )
    return rows


ADAPTER = Adapter(
    area="mlp",
    normalize=normalize,
    script="mlp.py",
    cpu_args=(
        "--device",
        "cpu",
        "--m",
        "8",
        "--d",
        "16",
        "--layers",
        "2",
        "--reps",
        "1",
        "--batch-ms",
        "0.05",
    ),
    roofline="gemm",
    timeout=(900.0, 600.0),
    order=14,
)

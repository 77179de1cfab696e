"""benchmarks/nn.py: gp.nn's row ops (softmax, log_softmax, layer_norm, rms_norm with and without
the fused residual, swiglu, rotary) beside torch, in GB/s of the bytes each op must move.

One row per (op, dtype, rows x cols); the error is ours against float64."""

from ..registry import Adapter
from ..rows import make_row


def normalize(raw):
    rows = []
    for r in raw["results"]:
        ours, torch = r.get("ours", {}), r.get("torch", {})
        gbps = [None if v.get("tbps") is None else 1e3 * v["tbps"] for v in (ours, torch)]
        rows.append(
            make_row(
                f"{r['op']} {r['dtype']} {r['rows']}x{r['cols']}",
                "GB/s",
                "GB/s",
                gbps[0],
                {"torch": gbps[1]},
                max_err=ours.get("max_abs"),
                dtype=r["dtype"],
                bytes=r["bytes"],
            )
        )
    return rows


ADAPTER = Adapter(
    area="nn",
    normalize=normalize,
    script="nn.py",
    quick_args=("--log2n", "24", "--reps", "3"),
    cpu_args=(
        "--device",
        "cpu",
        "--log2n",
        "12",
        "--cols",
        "256",
        "--iters",
        "2",
        "--reps",
        "1",
    ),
    roofline="bandwidth",
    order=15,
)

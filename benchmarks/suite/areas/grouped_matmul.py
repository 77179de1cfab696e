"""benchmarks/grouped_matmul.py: grouped (mixture-of-experts) products of gp.grouped_matmul beside
the same groups as a loop of cuBLASLt calls, a torch loop and torch._grouped_mm.

One row per case (a model's expert projection at prefill or decode): time per call of auto
("ours"), peers torch._grouped_mm (the baseline where this torch has it), the torch loop, the
cuBLASLt loop and our one launch forced, the max relative error of ours. flops place the row
under the roofline."""

from ..registry import Adapter
from ..rows import make_row


def normalize(raw):
    rows = []
    for r in raw["results"]:
        ours = r.get("ours", {})
        peers = {
            name: r.get(key, {}).get("us")
            for name, key in (
                ("torch grouped", "torch_grouped"),
                ("torch loop", "torch_loop"),
                ("cuBLASLt loop", "cublaslt_loop"),
                ("one launch", "one_launch"),
            )
        }
        rows_, k, n, experts = r["rows"], r["k"], r["n"], r["experts"]
        rows.append(
            make_row(
                r["case"],
                "time",
                "us",
                ours.get("us"),
                peers,
                prefer=("torch grouped", "cuBLASLt loop"),
                max_err=ours.get("max_rel_err"),
                dtype="bf16",
                flops=r["flops"],
                bytes=2 * (rows_ * k + experts * k * n + rows_ * n),
            )
        )
    return rows


ADAPTER = Adapter(
    area="grouped-matmul",
    normalize=normalize,
    script="grouped_matmul.py",
    quick_args=("--quick",),
    cpu_args=("--device", "cpu", "--reps", "1", "--batch-ms", "0.05"),
    roofline="gemm",
    timeout=(1200.0, 600.0),
    order=13,
)

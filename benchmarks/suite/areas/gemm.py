"""benchmarks/gemm.py: TFLOP/s of gp.matmul beside cuBLASLt (our binding) and torch.matmul.

One row per result row of the script: case "<dtype> <section> <shape>" (shape "4096^3" for the
square section, "MxKxN" for the llm one; " B^T" for --b-layout t and " cold-L2" for --cold-l2
runs, which measure something else), metric TFLOP/s, baseline cuBLASLt (torch where cuBLASLt is
absent), the relative errors of ours and, for M <= 128, the effective weight bandwidth as
throughput (TB/s). flops / bytes (A, B and C once) place each row under the roofline."""

from ..registry import Adapter
from ..rows import make_row

ITEMSIZE = {"bf16": 2, "fp16": 2, "tf32": 4, "fp32": 4}  # bytes per element of A, B and C


def shape(r):
    return f"{r['m']}^3" if r["section"] == "square" else f"{r['m']}x{r['k']}x{r['n']}"


def normalize(raw):
    settings = raw.get("settings", {})
    variant = " B^T" if settings.get("b_layout") == "t" else ""
    variant += " cold-L2" if settings.get("l2") == "cold" else ""
    rows = []
    for r in raw["results"]:
        rows.append(
            make_row(
                f"{r['dtype']} {r['section']} {shape(r)}{variant}",
                "TFLOP/s",
                "TFLOP/s",
                r.get("ours_tflops"),
                {"cuBLASLt": r.get("cublaslt_tflops"), "torch": r.get("torch_tflops")},
                prefer=("cuBLASLt", "torch"),
                throughput=r.get("ours_weight_tbps"),
                throughput_unit="TB/s" if "ours_weight_tbps" in r else None,
                max_err=r.get("ours_max_rel_err"),
                mean_err=r.get("ours_mean_rel_err"),
                dtype=r["dtype"],
                flops=r["flops"],
                bytes=(r["m"] * r["k"] + r["k"] * r["n"] + r["m"] * r["n"]) * ITEMSIZE[r["dtype"]],
            )
        )
    return rows


ADAPTER = Adapter(
    area="gemm",
    normalize=normalize,
    script="gemm.py",
    quick_args=("--quick",),
    cpu_args=("--device", "cpu"),
    roofline="gemm",
    timeout=(5400.0, 1200.0),
    order=10,
)

"""benchmarks/gemm_epilogue.py: fused GEMM epilogues (bias, ReLU, both GELU forms) of gp.gemm
beside the same product forced onto sm90 and cuBLASLt and beside torch (F.linear / addmm, then
the activation).

One row per case "<dtype> <layout> MxNxK <epilogue>" (layout kk: B = W.T, kn: B row-major):
time per call of auto ("ours"), peers torch (the baseline, what users compare with), cuBLASLt
and sm90, the max relative error of ours. flops place the row under the roofline."""

from ..registry import Adapter
from ..rows import make_row

ITEMSIZE = {"bf16": 2, "fp16": 2}


def normalize(raw):
    rows = []
    for r in raw["results"]:
        ours = r.get("auto", {})
        peers = {
            name: r.get(key, {}).get("us")
            for name, key in (("torch", "torch"), ("cuBLASLt", "cublaslt"), ("sm90", "sm90"))
        }
        m, n, k = r["m"], r["n"], r["k"]
        rows.append(
            make_row(
                f"{r['dtype']} {r['layout']} {m}x{n}x{k} {r['epilogue']}",
                "time",
                "us",
                ours.get("us"),
                peers,
                prefer=("torch", "cuBLASLt"),
                max_err=ours.get("max_rel_err"),
                dtype=r["dtype"],
                flops=r["flops"],
                bytes=(m * k + k * n + m * n) * ITEMSIZE.get(r["dtype"], 2),
            )
        )
    return rows


ADAPTER = Adapter(
    area="gemm-epilogue",
    normalize=normalize,
    script="gemm_epilogue.py",
    quick_args=("--quick",),
    cpu_args=("--device", "cpu", "--reps", "1", "--batch-ms", "0.05"),
    roofline="gemm",
    timeout=(1800.0, 600.0),
    order=11,
)

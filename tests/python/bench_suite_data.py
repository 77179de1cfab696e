"""Shared pieces of the benchmark-suite tests: benchmarks/ on the path, synthetic per-area
JSON shaped like the scripts' output, and small helpers."""

import json
import os
import sys

BENCH = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks"))
sys.path.append(BENCH)

from suite import registry  # noqa: E402

RESULTS = os.path.join(BENCH, "results")
H100 = "NVIDIA-H100-80GB-HBM3-sm90"


def norm(area, raw):
    out = registry.by_area()[area].normalize(raw)
    for r in out:
        r["area"] = area
    return out


def by_case(rs, metric=None):
    return {r["case"]: r for r in rs if metric is None or r["metric"] == metric}


# ---------------------------------------------------------------- synthetic per-area JSON


def gemm_raw(b_layout="row", ours=700.0):
    return {
        "gpu": "NVIDIA H100 80GB HBM3",
        "sm": "90",
        "settings": {"b_layout": b_layout, "l2": "warm"},
        "results": [
            {
                "section": "square",
                "m": 4096,
                "k": 4096,
                "n": 4096,
                "dtype": "bf16",
                "flops": 2.0 * 4096**3,
                "ours_tflops": ours,
                "cublaslt_tflops": 800.0,
                "torch_tflops": 640.0,
                "ours_max_rel_err": 3e-4,
                "ours_mean_rel_err": 2e-5,
            },
            {
                "section": "llm",
                "m": 16,
                "k": 4096,
                "n": 8192,
                "dtype": "fp32",
                "flops": 2.0 * 16 * 4096 * 8192,
                "ours_tflops": 10.0,
                "torch_tflops": 8.0,
                "ours_weight_tbps": 2.5,
                "ours_max_rel_err": 1e-7,
                "ours_mean_rel_err": 1e-8,
            },
        ],
    }


def bandwidth_raw(**extra):
    return {
        "gpu": "NVIDIA H100 80GB HBM3",
        "sm": "90",
        "bandwidth": [
            {
                "op": "copy",
                "layout": "contiguous",
                "dtype": "float32",
                "n": 1 << 28,
                "gbps": {"ours": 3000.0, "torch": 2900.0, "cupy": 3100.0},
            },
            {
                "op": "sum",
                "layout": "full",
                "dtype": "float32",
                "n": 1 << 28,
                "gbps": {"ours": 2000.0, "torch": 2500.0, "cupy": 2400.0},
            },
            {
                "op": "add",
                "layout": "strided",
                "dtype": "bfloat16",
                "n": 1 << 28,
                "gbps": {"ours": 1500.0, "torch": 1000.0},
            },
        ],
        **extra,
    }


def write_json(folder, name, data, mtime=None):
    path = os.path.join(folder, name)
    with open(path, "w") as f:
        json.dump(data, f)
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path

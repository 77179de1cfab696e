"""Rooflines of the GPUs we measure on, keyed by the name the driver reports
(gp.device_properties()["name"]): dense tensor-core peaks per GEMM dtype (TFLOP/s, boost
clock, no sparsity; fp32 is the non-tensor FP32 rate) and HBM bandwidth (GB/s), from NVIDIA's
H100 / H200 datasheets (SXM parts). Other GPUs get no roofline chart."""

PEAKS = {
    "NVIDIA H100 80GB HBM3": {
        "label": "H100 SXM5",
        "tflops": {"bf16": 989.4, "fp16": 989.4, "tf32": 494.7, "fp32": 66.9},
        "hbm_gbps": 3350.0,
    },
    "NVIDIA H200": {
        "label": "H200 SXM",
        "tflops": {"bf16": 989.4, "fp16": 989.4, "tf32": 494.7, "fp32": 66.9},
        "hbm_gbps": 4800.0,
    },
}


def lookup(gpu):
    """The peaks of `gpu` (dashes read as spaces, case-insensitive), or None."""
    if not gpu:
        return None
    want = gpu.replace("-", " ").lower()
    return next((p for name, p in PEAKS.items() if name.lower() == want), None)

"""One sm90 GEMM launch per epilogue for Nsight Compute (run by scripts/gpu.sh profile-gemm):
bf16 4096^3, B = W.T, forced onto the sm90 kernels, plain and with a bias, after warm-up calls,
so that ncu's stall reasons and source counters compare the same kernel with and without the
fused epilogue.
    ncu --clock-control none -k regex:pgk_gemm_sm90 python3 scripts/gemm_profile.py
"""

import sys

import numpy as np

import pygpukit as gp


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 4096
    rng = np.random.default_rng(0)
    x = gp.asarray(rng.standard_normal((n, n), dtype=np.float32)).astype(gp.bfloat16)
    w = gp.asarray(rng.standard_normal((n, n), dtype=np.float32)).astype(gp.bfloat16)
    bias = gp.asarray(rng.standard_normal(n, dtype=np.float32)).astype(gp.bfloat16)
    for epi in ({}, {"bias": bias}):
        for _ in range(3):  # warm-up: the profiled launch is the last of each
            y = gp.gemm(x, w.mT, backend="sm90", **epi)
        gp.synchronize()
        print("epilogue", sorted(epi) or "none", float(gp.to_numpy(y[0, :4].astype(gp.float32))[0]))


if __name__ == "__main__":
    main()

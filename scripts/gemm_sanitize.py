"""Representative GEMM launches for compute-sanitizer (run by scripts/gpu.sh sanitize-gemm).

Each kernel family, both operand layouts, tails in M/N/K, batches and the fused epilogue (and,
for sm90, the plain product, which leaves through TMA stores, and split-K), with results checked
against NumPy so that a launch the sanitizer passes is also a correct one.
    compute-sanitizer --tool memcheck python3 scripts/gemm_sanitize.py
"""

import itertools
import sys

import numpy as np

import pygpukit as gp

CASES = [  # (backend, dtype, precision, batch, m, k, n): tails inside tiles, 8-aligned dims
    ("sm90", "bfloat16", "highest", 1, 296, 200, 520),
    ("sm90", "float16", "highest", 3, 136, 72, 136),
    ("sm90", "bfloat16", "highest", 1, 1096, 264, 600),  # enough tiles for 2-CTA clusters
    ("sm90", "bfloat16", "highest", 2, 200, 64, 1000),  # TMA-store epilogue with M / N tails
    ("sm90", "bfloat16", "highest", 1, 136, 64, 130),  # D rows not 16-byte aligned: no TMA store
    ("sm90", "float32", "tf32", 1, 200, 72, 136),  # K-major A and B only
    ("sm90", "bfloat16", "highest", 1, 65, 6000, 200),  # split-K: partial sums, tails
    ("sm90", "float32", "tf32", 2, 16, 3000, 72),  # split-K, batched, rows past M skipped
    ("sm80", "bfloat16", "highest", 2, 72, 40, 96),
    ("sm80", "float32", "tf32", 1, 132, 36, 68),
    ("simt", "float32", "highest", 2, 67, 33, 129),
    ("simt", "float64", "highest", 1, 65, 17, 31),
    ("cublaslt", "bfloat16", "highest", 1, 64, 64, 64),
]


def main():
    rng = np.random.default_rng(0)
    failures = 0
    for backend, dt, precision, batch, m, k, n in CASES:
        for ta, tb, fused in itertools.product(
            (False, True), (False, True), (True, False) if backend == "sm90" else (True,)
        ):
            a = rng.standard_normal((batch, k, m) if ta else (batch, m, k)).astype(np.float32)
            b = rng.standard_normal((batch, n, k) if tb else (batch, k, n)).astype(np.float32)
            bias = rng.standard_normal(n).astype(np.float32)
            ga = gp.asarray(a).astype(getattr(gp, dt))
            gb = gp.asarray(b).astype(getattr(gp, dt))
            if ta:
                ga = gp.matrix_transpose(ga)
            if tb:
                gb = gp.matrix_transpose(gb)
            gbias = gp.asarray(bias).astype(getattr(gp, dt))
            epi = dict(bias=gbias, activation="relu") if fused else {}
            try:
                out = gp.gemm(ga, gb, precision=precision, backend=backend, **epi)
            except NotImplementedError as e:
                print(f"{backend} {dt} ta={ta} tb={tb} fused={fused}: n/a ({e})")
                continue
            a64 = gp.to_numpy(ga.astype(gp.float64))
            b64 = gp.to_numpy(gb.astype(gp.float64))
            ref = a64 @ b64
            if fused:
                ref = np.maximum(ref + gp.to_numpy(gbias.astype(gp.float64)), 0)
            got = gp.to_numpy(out.astype(gp.float64))
            scale = np.abs(a64) @ np.abs(b64) + 1
            err = float(np.max(np.abs(got - ref) / scale))
            ok = err < 2e-2
            failures += not ok
            verdict = "ok" if ok else "FAIL"
            print(f"{backend} {dt} ta={ta} tb={tb} fused={fused}: err {err:.2e} {verdict}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()

"""Representative GEMM launches for compute-sanitizer (run by scripts/gpu.sh sanitize-gemm).

Each kernel family, both operand layouts, tails in M/N/K, batches and the fused epilogue (and,
for sm90, the plain product, which leaves through TMA stores, and split-K), the unfused epilogue
pass after cuBLASLt and the grouped product's single launch, with results checked
against NumPy so that a launch the sanitizer passes is also a correct one.
    compute-sanitizer --tool memcheck python3 scripts/gemm_sanitize.py
"""

import itertools
import math
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
    failures += epilogue_pass(rng) + grouped(rng) + scaled_sm90(rng)
    sys.exit(1 if failures else 0)


def report(name, got, ref, scale):
    err = float(np.max(np.abs(gp.to_numpy(got.astype(gp.float64)) - ref) / scale))
    ok = err < 2e-2
    print(f"{name}: err {err:.2e} {'ok' if ok else 'FAIL'}")
    return not ok


def epilogue_pass(rng):
    """GELU (erf) after cuBLASLt: the product into a float32 temporary, then the epilogue pass,
    four columns per vector (n % 4 == 0) or one (an odd n), with C and a bias."""
    failures = 0
    for n in (520, 131):
        a = gp.asarray(rng.standard_normal((72, 96)).astype(np.float32)).astype(gp.bfloat16)
        b = gp.asarray(rng.standard_normal((96, n)).astype(np.float32)).astype(gp.bfloat16)
        c = gp.asarray(rng.standard_normal((72, n)).astype(np.float32)).astype(gp.bfloat16)
        bias = gp.asarray(rng.standard_normal(n).astype(np.float32)).astype(gp.bfloat16)
        out = gp.gemm(a, b, c, beta=1.0, bias=bias, activation="gelu", backend="cublaslt")
        a64, b64 = (gp.to_numpy(x.astype(gp.float64)) for x in (a, b))
        x = a64 @ b64 + gp.to_numpy(c.astype(gp.float64)) + gp.to_numpy(bias.astype(gp.float64))
        ref = 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))
        failures += report(f"epilogue pass n={n}", out, ref, np.abs(a64) @ np.abs(b64) + 1)
    return failures


def grouped(rng):
    """gp.grouped_matmul's one launch over every group (tile rows straddling groups, an
    empty group, tails), B row-major and transposed."""
    failures = 0
    sizes = [5, 0, 127, 129, 300]
    ends = list(np.cumsum(sizes))
    for tb in (False, True):
        a = rng.standard_normal((sum(sizes), 200)).astype(np.float32)
        b = rng.standard_normal((5, 264, 200) if tb else (5, 200, 264)).astype(np.float32)
        ga = gp.asarray(a).astype(gp.bfloat16)
        gb = gp.asarray(b).astype(gp.bfloat16)
        if tb:
            gb = gp.permute_dims(gb, (0, 2, 1))
        out = gp.grouped_matmul(ga, gb, ends)
        a64, b64 = gp.to_numpy(ga.astype(gp.float64)), gp.to_numpy(gb.astype(gp.float64))
        g = np.repeat(np.arange(len(sizes)), sizes)
        ref = np.einsum("rk,rkn->rn", a64, b64[g])
        scale = np.einsum("rk,rkn->rn", np.abs(a64), np.abs(b64[g])) + 1
        failures += report(f"grouped tb={tb}", out, ref, scale)
    return failures


def scaled_sm90(rng):
    """gp.scaled_matmul on the sm90 e4m3 kernels (backend="sm90"): per-row / per-column scales
    with a bias, tails in M and N, bf16 (TMA stores) and float32 (register stores) results."""
    import ml_dtypes

    failures = 0
    m, k, n = 200, 272, 264
    a = (rng.standard_normal((m, k)) * 4).astype(np.float32).astype(ml_dtypes.float8_e4m3fn)
    w = (rng.standard_normal((n, k)) * 4).astype(np.float32).astype(ml_dtypes.float8_e4m3fn)
    sa = (rng.random((m, 1)) + 0.5).astype(np.float32)
    sb = (rng.random((1, n)) + 0.5).astype(np.float32)
    bias = rng.standard_normal(n).astype(np.float32)
    A = a.astype(np.float64) * sa
    B = w.T.astype(np.float64) * sb
    ref = A @ B + bias
    scale = np.abs(A) @ np.abs(B) + 1
    for out in (gp.bfloat16, gp.float32):
        try:
            y = gp.scaled_matmul(
                gp.asarray(a),
                gp.matrix_transpose(gp.asarray(w)),
                gp.asarray(sa),
                gp.asarray(sb),
                out_dtype=out,
                bias=gp.asarray(bias).astype(out),
                backend="sm90",
            )
        except NotImplementedError as e:
            print(f"scaled sm90 {out}: n/a ({e})")
            continue
        failures += report(f"scaled sm90 {out}", y, ref, scale)
    return failures


if __name__ == "__main__":
    main()

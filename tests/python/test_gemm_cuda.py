"""CUDA kernel families of gemm / matmul: each forced family (sm90, sm80, simt, cublaslt) and auto
selection on a grid of dtypes, tails, layouts (row-major, transposed A, transposed B), batches
and epilogues against the float64 reference (gemm_ref.py), plus which kernel auto selection
launches (gp.dispatch_stats). A forced family may refuse a problem with NotImplementedError only
outside its documented preconditions (ops/gemm/cuda/gemm_cuda.h, modelled by `documented_support`);
inside them a refusal fails the test. Needs a CUDA device: skipped where none exists."""

import threading

import numpy as np
import pytest
from gemm_ref import HALF, TF32_ROUNDOFF, check_gemm, check_values
from helpers import gpdt, host, rand

import pygpukit as gp

pytestmark = pytest.mark.gpu

KERNEL_PREFIX = {
    "sm90": "pgk_gemm_sm90_",
    "sm80": "pgk_gemm_sm80_",
    "simt": "pgk_gemm_simt_",
    "cublaslt": "matmul_cublaslt",
    "epilogue": "pgk_gemm_epilogue_",
}


def sm(device):
    return tuple(gp.device_properties(device)["compute_capability"])


def sm90_built():
    return "90a" in gp.runtime_info()["kernel_archs"]


def ran():
    """Kernel families launched since the last reset_dispatch_stats()."""
    keys = gp.dispatch_stats()["per_kernel"]
    return {f for f, p in KERNEL_PREFIX.items() if any(k.startswith(p) for k in keys)}


def randn(rng, shape, dtype, scale=1.0):
    return rand(rng, shape, dtype, scale=scale)


def operand(rng, layout, batch, rows, cols, dtype, device):
    """(NumPy operand, GPUArray operand): row-major ("n") or a transposed view ("t")."""
    bshape = () if batch is None else (batch,)
    if layout == "n":
        base = randn(rng, (*bshape, rows, cols), dtype)
        return base, gp.asarray(base, device=device)
    base = randn(rng, (*bshape, cols, rows), dtype)
    return np.swapaxes(base, -1, -2), gp.matrix_transpose(gp.asarray(base, device=device))


def _strides(rows, cols, layout):
    # Element strides of a fresh operand as the op layer hands it to a kernel (matmul.cc
    # Prepare: strides of size-1 dims normalized).
    row, col = (cols, 1) if layout == "n" else (1, rows)
    if cols == 1:
        col = 1
    if rows == 1:
        row = max(cols, 1)
    return row, col


def _aligned16(itemsize, *strides):
    return all(abs(s) <= 1 or abs(s) * itemsize % 16 == 0 for s in strides)


def cublaslt_fuses(dtype, out, la, lb, batch, m, k, n):
    """Whether cuBLASLt applies its own bias / ReLU epilogue (gemm_accepts.cc): only over
    16-byte aligned rows (fresh arrays: the strides decide), else it rounds before the epilogue
    and the product runs unfused."""
    a_row, a_col = _strides(m, k, la)
    b_row, b_col = _strides(k, n, lb)
    a_batch = 0 if batch is None else m * k
    b_batch = 0 if batch is None else k * n
    size = {"float16": 2, "bfloat16": 2, "float32": 4, "float64": 8}
    return _aligned16(size[dtype], a_row, a_col, a_batch, b_row, b_col, b_batch) and _aligned16(
        size[out], n, m * n
    )


def documented_support(family, device, dtype, precision, la, lb, batch, m, k, n):
    """True where the family documents that it serves the problem (gemm_cuda.h and the
    launchers' stated rules); False where it may refuse it."""
    if family in ("auto", "cublaslt"):
        return True
    if family == "simt":
        return dtype in ("float32", "float64")
    major = sm(device)[0]
    a_row, a_col = _strides(m, k, la)
    b_row, b_col = _strides(k, n, lb)
    a_batch = 0 if batch is None else m * k
    b_batch = 0 if batch is None else k * n
    if family == "sm90":  # Hopper, sm_90a build, 16-bit or TF32, unit-stride operands, 16-byte
        # strides; TF32 only with K-major A and B
        tf32 = dtype == "float32" and precision == "tf32"
        if major != 9 or not sm90_built() or not (dtype in HALF or tf32):
            return False
        if tf32 and (a_col != 1 or b_row != 1):
            return False
        elems = 4 if tf32 else 8
        a_ld = a_row if a_col == 1 else a_col if a_row == 1 else None
        b_ld = b_col if b_row == 1 else b_row if b_col == 1 else None
        strides = (a_ld, b_ld, a_batch, b_batch)
        return (
            None not in strides and a_ld > 0 and b_ld > 0 and all(s % elems == 0 for s in strides)
        )
    assert family == "sm80"  # SM 8.0+, 16-bit or TF32, row-major A, 16-byte strides
    if major < 8 or not (dtype in HALF or (dtype == "float32" and precision == "tf32")):
        return False
    elems = 8 if dtype in HALF else 4
    if batch is None:
        a_batch = b_batch = 0
    if m == 1:
        a_row = 0
    if k <= 1:
        a_col = 1
    if a_col != 1 or any(s % elems for s in (a_row, a_batch, b_batch)):
        return False
    tn = (b_row == 1 or k <= 1) and (0 if n == 1 else b_col) % elems == 0
    tt = (b_col == 1 or n == 1) and (0 if k <= 1 else b_row) % elems == 0
    return tn or tt


CASES = [
    ("sm90", "bfloat16", "highest"),
    ("sm90", "float16", "highest"),
    ("sm90", "float32", "tf32"),
    ("sm80", "bfloat16", "highest"),
    ("sm80", "float16", "highest"),
    ("sm80", "float32", "tf32"),
    ("simt", "float32", "highest"),
    ("simt", "float64", "highest"),
    ("cublaslt", "bfloat16", "highest"),
    ("cublaslt", "float16", "highest"),
    ("cublaslt", "float32", "highest"),
    ("cublaslt", "float32", "tf32"),
    ("cublaslt", "float64", "highest"),
    ("auto", "bfloat16", "highest"),
    ("auto", "float16", "highest"),
    ("auto", "float32", "highest"),
    ("auto", "float32", "tf32"),
    ("auto", "float64", "highest"),
]
# (batch, m, k, n): full tiles, M / N / K tails (M-major A needs M % 8 == 0, N-major B
# N % 8 == 0 for the tensor-core families), odd sizes, a single row, batches, several K blocks.
SHAPES = [
    (None, 128, 64, 128),
    (None, 257, 72, 136),
    (None, 136, 96, 200),
    (None, 200, 40, 257),
    (None, 33, 17, 9),
    (None, 1, 64, 64),
    (3, 129, 64, 72),
    (2, 72, 64, 136),
    (2, 65, 256, 40),
]


def run_case(rng, device, family, dtype, precision, shape, layout, epi):
    """Runs one grid case: (result or None, the NotImplementedError or None, NumPy a, NumPy b,
    reference epilogue kwargs, output dtype)."""
    batch, m, k, n = shape
    na, ga = operand(rng, layout[0], batch, m, k, dtype, device)
    nb, gb = operand(rng, layout[1], batch, k, n, dtype, device)
    out = "float32" if epi == "out32" else dtype
    kw, gkw = {}, {}
    if epi != "plain":
        s = np.sqrt(k)
        bias = randn(rng, (n,), out, s)
        kw = {"bias": bias, "activation": "gelu" if epi == "fused" else "relu"}
        gkw = {"bias": gp.asarray(bias, device=device), "activation": kw["activation"]}
        if epi == "fused":
            c = randn(rng, (*(() if batch is None else (batch,)), m, n), out, s)
            kw |= {"c": c, "alpha": 0.5, "beta": -1.0}
            gkw |= {"c": gp.asarray(c, device=device), "alpha": 0.5, "beta": -1.0}
        else:
            gkw["out_dtype"] = gpdt(out)
    opts = {"precision": precision, "backend": family}
    gp.synchronize(device)
    gp.reset_dispatch_stats()
    try:
        if epi == "plain":
            x = gp.matmul(ga, gb, **opts)
        else:
            x = gp.gemm(ga, gb, **gkw, **opts)
        gp.synchronize(device)
    except NotImplementedError as e:
        return None, e, na, nb, kw, out
    return x, None, na, nb, kw, out


@pytest.mark.parametrize("epi", ["plain", "fused", "out32"])
@pytest.mark.parametrize("layout", ["nn", "tn", "nt"])  # A then B: row-major or transposed view
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, (s[0] or 1, *s[1:]))))
@pytest.mark.parametrize("family, dtype, precision", CASES)
def test_family_grid(rng, cuda, family, dtype, precision, shape, layout, epi):
    if epi == "out32" and dtype not in HALF:
        pytest.skip("float32 output is for 16-bit operands")
    x, refused, na, nb, kw, out = run_case(rng, cuda, family, dtype, precision, shape, layout, epi)
    batch, m, k, n = shape
    supported = documented_support(family, cuda, dtype, precision, *layout, batch, m, k, n)
    if refused is not None:
        if supported:
            raise AssertionError(f"{family} refused a problem it documents: {refused}")
        pytest.skip(f"outside {family}'s documented preconditions: {refused}")
    extra = 2 * TF32_ROUNDOFF if precision == "tf32" else 0.0
    check_gemm(x, na, nb, dtype=dtype, out=out, extra=extra, **kw)
    launched = ran()
    if family in ("sm90", "sm80", "simt"):  # that family alone, its epilogue fused
        assert launched & {"sm90", "sm80", "simt", "cublaslt", "epilogue"} == {family}, launched
    elif family == "cublaslt":  # its own epilogues (bias + ReLU) fuse; GELU's erf form does not
        fuses = epi == "plain" or (
            epi == "out32" and cublaslt_fuses(dtype, out, *layout, batch, m, k, n)
        )
        want = {"cublaslt"} if fuses else {"cublaslt", "epilogue"}
        assert launched & {"sm90", "sm80", "simt", "cublaslt", "epilogue"} == want, launched


@pytest.mark.parametrize("family", ["sm90", "sm80", "simt", "cublaslt", "auto"])
def test_family_many_tiles(rng, cuda, family):
    # More output tiles than SMs: the persistent and grouped tile orders wrap around.
    dtype, precision = ("float32", "highest") if family == "simt" else ("bfloat16", "highest")
    m, k, n = 2304, 128, 2312
    a, b = randn(rng, (m, k), dtype), randn(rng, (k, n), dtype)
    bias = randn(rng, (n,), dtype, 10.0)
    try:
        x = gp.gemm(
            gp.asarray(a, device=cuda),
            gp.asarray(b, device=cuda),
            bias=gp.asarray(bias, device=cuda),
            activation="silu",
            backend=family,
            precision=precision,
        )
    except NotImplementedError as e:
        if documented_support(family, cuda, dtype, precision, "n", "n", None, m, k, n):
            raise
        pytest.skip(f"outside {family}'s documented preconditions: {e}")
    rows = np.r_[0:3, 127:130, 1000:1003, m - 3 : m]
    got = host(x)[rows]
    check_values(got, a[rows], b, dtype=dtype, out=dtype, bias=bias, activation="silu")


# ---- which kernel auto selection launches ----


def launched_by(f, device):
    gp.synchronize(device)
    gp.reset_dispatch_stats()
    out = f()
    gp.synchronize(device)
    return out, ran()


def problem(rng, device, dtype, m, k, n):
    """NumPy a (m, k), b (k, n), bias (n,) and their GPUArrays on `device`."""
    a, b = randn(rng, (m, k), dtype), randn(rng, (k, n), dtype)
    bias = randn(rng, (n,), dtype, np.sqrt(k))
    return (a, b, bias), tuple(gp.asarray(v, device=device) for v in (a, b, bias))


def spot_check(x, a, b, dtype, out=None, **kw):
    rows = np.r_[0:2, a.shape[0] // 2, a.shape[0] - 1]
    check_values(host(x)[rows], a[rows], b, dtype=dtype, out=out or dtype, **kw)


def test_auto_bf16_on_hopper_picks_by_measured_size(rng, cuda):
    if sm(cuda)[0] != 9:
        pytest.skip(f"SM 9.x expectation; this GPU is SM {sm(cuda)}")
    # Plain products: sm90 up to 1.5 * 1024^3 MACs (where it measured faster), cuBLASLt above.
    s, t = randn(rng, (1024, 1024), "bfloat16"), randn(rng, (1024, 1024), "bfloat16")
    gs, gt = gp.asarray(s, device=cuda), gp.asarray(t, device=cuda)
    x, launched = launched_by(lambda: gs @ gt, cuda)
    assert launched == ({"sm90"} if sm90_built() else {"cublaslt"}), launched
    spot_check(x, s, t, "bfloat16")
    a, b = randn(rng, (2048, 2048), "bfloat16"), randn(rng, (2048, 2048), "bfloat16")
    ga, gb = gp.asarray(a, device=cuda), gp.asarray(b, device=cuda)
    x, launched = launched_by(lambda: ga @ gb, cuda)
    assert launched == {"cublaslt"}, launched
    spot_check(x, a, b, "bfloat16")
    bias = randn(rng, (2048,), "float32", 40.0)
    gbias = gp.asarray(bias, device=cuda)
    y, launched = launched_by(
        lambda: gp.gemm(ga, gb, bias=gbias, activation="gelu", out_dtype=gp.float32), cuda
    )
    # From 2048^3 up a fused 16-bit epilogue goes to cuBLASLt: GELU's erf form is not one of its
    # own, so its plain product runs and our epilogue pass follows.
    want = {"cublaslt", "epilogue"} if sm90_built() else {"sm80"}
    assert launched == want, launched
    spot_check(y, a, b, "bfloat16", "float32", bias=bias, activation="gelu")


def test_auto_skinny_bf16_on_hopper_uses_cublaslt(rng, cuda):
    if sm(cuda)[0] != 9:
        pytest.skip(f"SM 9.x expectation; this GPU is SM {sm(cuda)}")
    a, b = randn(rng, (64, 1024), "bfloat16"), randn(rng, (1024, 512), "bfloat16")
    ga, gb = gp.asarray(a, device=cuda), gp.asarray(b, device=cuda)
    x, launched = launched_by(lambda: ga @ gb, cuda)
    assert launched == {"cublaslt"}, launched
    spot_check(x, a, b, "bfloat16")
    # Fused epilogues of few rows too (measured: cuBLASLt's epilogue ahead of the fused sm90 and
    # sm80 kernels at M 16 and 128): its bias epilogue, or its product and our pass for SiLU.
    bias = randn(rng, (512,), "bfloat16", 32.0)
    gbias = gp.asarray(bias, device=cuda)
    for act, want in ((None, {"cublaslt"}), ("silu", {"cublaslt", "epilogue"})):
        y, launched = launched_by(lambda a=act: gp.gemm(ga, gb, bias=gbias, activation=a), cuda)
        assert launched == (want if sm90_built() else {"sm80"}), (act, launched)
        spot_check(y, a, b, "bfloat16", bias=bias, activation=act)


def test_auto_fused_half_on_ampere_uses_sm80(rng, cuda):
    if sm(cuda)[0] != 8:
        pytest.skip(f"SM 8.x expectation; this GPU is SM {sm(cuda)}")
    (a, b, bias), (ga, gb, gbias) = problem(rng, cuda, "float16", 512, 256, 384)
    x, launched = launched_by(lambda: gp.gemm(ga, gb, bias=gbias, activation="relu"), cuda)
    assert launched == {"sm80"}, launched
    spot_check(x, a, b, "float16", bias=bias, activation="relu")
    _, launched = launched_by(lambda: ga @ gb, cuda)
    assert launched == {"cublaslt"}, launched


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_auto_exact_float_plain_uses_cublaslt_fused_uses_simt(rng, cuda, dtype):
    (a, b, bias), (ga, gb, gbias) = problem(rng, cuda, dtype, 300, 200, 100)
    x, launched = launched_by(lambda: ga @ gb, cuda)
    assert launched == {"cublaslt"}, launched
    spot_check(x, a, b, dtype)
    x, launched = launched_by(lambda: gp.gemm(ga, gb, bias=gbias), cuda)
    assert launched == {"simt"}, launched
    spot_check(x, a, b, dtype, bias=bias)
    # Forced simt ignores precision="tf32": it computes true FP32.
    x, launched = launched_by(
        lambda: gp.gemm(ga, gb, bias=gbias, backend="simt", precision="tf32"), cuda
    )
    assert launched == {"simt"}, launched
    spot_check(x, a, b, dtype, bias=bias)


def test_auto_fused_tf32_uses_sm80(rng, cuda):
    if sm(cuda)[0] < 8:
        pytest.skip(f"needs SM 8.0+; this GPU is SM {sm(cuda)}")
    (a, b, bias), (ga, gb, gbias) = problem(rng, cuda, "float32", 256, 512, 128)
    x, launched = launched_by(lambda: gp.gemm(ga, gb, bias=gbias, precision="tf32"), cuda)
    assert launched == {"sm80"}, launched
    spot_check(x, a, b, "float32", bias=bias, extra=2 * TF32_ROUNDOFF)


def test_auto_tf32_with_k_major_operands_uses_sm90_on_hopper(rng, cuda):
    if sm(cuda)[0] != 9 or not sm90_built():
        pytest.skip(f"needs an sm_90a build on SM 9.x; this GPU is SM {sm(cuda)}")
    # A linear layer: x (m, k) @ w.T with w (n, k), both K-major, as tf32 wgmma requires.
    x32, w32 = randn(rng, (256, 192), "float32"), randn(rng, (320, 192), "float32")
    bias = randn(rng, (320,), "float32", np.sqrt(192))
    gx, gw, gbias = (gp.asarray(v, device=cuda) for v in (x32, w32, bias))
    y, launched = launched_by(
        lambda: gp.linear(gx, gw, gbias, activation="gelu", precision="tf32"), cuda
    )
    assert launched == {"sm90"}, launched
    spot_check(y, x32, w32.T, "float32", bias=bias, activation="gelu", extra=2 * TF32_ROUNDOFF)
    # The plain product too (small enough for the sm90 size rule), but not an N-major B.
    y, launched = launched_by(
        lambda: gp.matmul(gx, gp.matrix_transpose(gw), precision="tf32"), cuda
    )
    assert launched == {"sm90"}, launched
    spot_check(y, x32, w32.T, "float32", extra=2 * TF32_ROUNDOFF)
    gb = gp.asarray(np.ascontiguousarray(w32.T), device=cuda)
    y, launched = launched_by(lambda: gp.matmul(gx, gb, precision="tf32"), cuda)
    assert launched == {"cublaslt"}, launched
    spot_check(y, x32, w32.T, "float32", extra=2 * TF32_ROUNDOFF)


def test_forced_sm80_bf16_uses_sm80(rng, cuda):
    if sm(cuda)[0] < 8:
        pytest.skip(f"needs SM 8.0+; this GPU is SM {sm(cuda)}")
    a, b = randn(rng, (256, 128), "bfloat16"), randn(rng, (128, 192), "bfloat16")
    ga, gb = gp.asarray(a, device=cuda), gp.asarray(b, device=cuda)
    x, launched = launched_by(lambda: gp.matmul(ga, gb, backend="sm80"), cuda)
    assert launched == {"sm80"}, launched
    spot_check(x, a, b, "bfloat16")


def test_forced_cublaslt_runs_unfused_epilogue(rng, cuda):
    (a, b, bias), (ga, gb, gbias) = problem(rng, cuda, "bfloat16", 100, 64, 80)
    x, launched = launched_by(
        lambda: gp.gemm(ga, gb, bias=gbias, activation="silu", backend="cublaslt"), cuda
    )
    assert launched == {"cublaslt", "epilogue"}, launched
    spot_check(x, a, b, "bfloat16", bias=bias, activation="silu")


# A few long rows: the pass splits each row's columns over the grid's y blocks (n 8200: four
# columns a vector, three chunks a row; n 4099: one column a lane, five chunks; several batches).
@pytest.mark.parametrize("m, k, n, batch", [(5, 64, 8200, 1), (3, 32, 4099, 1), (2, 16, 4100, 3)])
def test_unfused_epilogue_of_few_long_rows(rng, cuda, m, k, n, batch):
    a = randn(rng, (batch, m, k), "bfloat16")
    b = randn(rng, (batch, k, n), "bfloat16")
    bias = randn(rng, (n,), "bfloat16", np.sqrt(k))
    ga, gb, gbias = (gp.asarray(v, device=cuda) for v in (a, b, bias))
    x, launched = launched_by(
        lambda: gp.gemm(ga, gb, bias=gbias, activation="silu", backend="cublaslt"), cuda
    )
    assert launched == {"cublaslt", "epilogue"}, launched
    for i in range(batch):
        check_values(
            host(x)[i], a[i], b[i], dtype="bfloat16", out="bfloat16", bias=bias, activation="silu"
        )


CUBLASLT_EPILOGUES = {  # gemm keywords (NumPy values) -> whether cuBLASLt fuses them itself
    "bias": ({"bias": True}, True),
    "bias_relu": ({"bias": True, "activation": "relu"}, True),
    "bias_gelu_tanh": ({"bias": True, "activation": "gelu_tanh"}, True),
    "gelu_tanh": ({"activation": "gelu_tanh"}, True),
    "alpha_beta_c": ({"alpha": 0.5, "beta": -1.0, "c": "row"}, True),
    "all_tanh": (
        {"alpha": 2.0, "beta": 0.5, "c": "row", "bias": True, "activation": "gelu_tanh"},
        True,
    ),
    "c_column_major": ({"beta": 1.0, "c": "col"}, False),
    "c_broadcast_row": ({"beta": 1.0, "c": "bcast"}, False),
    "bias_gelu_erf": ({"bias": True, "activation": "gelu"}, False),
}


@pytest.mark.parametrize("out", ["same", "float32"])
@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32"])
@pytest.mark.parametrize("name", list(CUBLASLT_EPILOGUES))
def test_forced_cublaslt_fuses_its_own_epilogues(rng, cuda, name, dtype, out):
    if out == "float32" and dtype not in HALF:
        pytest.skip("float32 output is for 16-bit operands")
    spec, fused = CUBLASLT_EPILOGUES[name]
    out = dtype if out == "same" else out
    m, k, n = 96, 64, 80
    a, b = randn(rng, (m, k), dtype), randn(rng, (k, n), dtype)
    kw, gkw = {}, {"out_dtype": gpdt(out)}
    for key, v in spec.items():
        if key == "bias":
            kw["bias"] = randn(rng, (n,), out, np.sqrt(k))
            gkw["bias"] = gp.asarray(kw["bias"], device=cuda)
        elif key == "c":
            full = randn(rng, (m, n), out, np.sqrt(k))
            if v == "row":
                kw["c"], gkw["c"] = full, gp.asarray(full, device=cuda)
            elif v == "col":  # a transposed view: unit stride along M
                kw["c"], gkw["c"] = full, gp.asarray(np.ascontiguousarray(full.T), device=cuda).T
            else:  # one row broadcast over M: row stride 0
                kw["c"], gkw["c"] = (
                    np.broadcast_to(full[0], (m, n)),
                    gp.asarray(full[0], device=cuda),
                )
        else:
            kw[key] = gkw[key] = v
    ga, gb = gp.asarray(a, device=cuda), gp.asarray(b, device=cuda)
    x, launched = launched_by(lambda: gp.gemm(ga, gb, **gkw, backend="cublaslt"), cuda)
    assert launched == ({"cublaslt"} if fused else {"cublaslt", "epilogue"}), (name, launched)
    # float32 results tell GELU's two forms apart (bfloat16 rounding would hide the difference).
    check_values(host(x), a, b, dtype=dtype, out=out, **kw)


@pytest.mark.parametrize("backend", ["auto", "sm90", "sm80", "simt", "cublaslt"])
def test_k_zero_runs_only_the_epilogue(cuda, backend):
    bias = np.arange(-3, 4, dtype=np.float32)
    a, b = gp.zeros((5, 0), device=cuda), gp.zeros((0, 7), device=cuda)
    x, launched = launched_by(
        lambda: gp.gemm(
            a, b, bias=gp.asarray(bias, device=cuda), activation="relu", backend=backend
        ),
        cuda,
    )
    assert launched == {"epilogue"}, launched
    np.testing.assert_array_equal(host(x), np.broadcast_to(np.maximum(bias, 0), (5, 7)))


# ---- forced families refuse what they cannot serve ----


@pytest.mark.parametrize(
    "family, dtype, precision",
    [
        ("sm90", "float32", "highest"),
        ("sm90", "float64", "highest"),
        ("sm80", "float32", "highest"),  # exact float32 is not an sm80 problem
        ("sm80", "float64", "highest"),
        ("simt", "bfloat16", "highest"),
        ("simt", "float16", "highest"),
    ],
)
@pytest.mark.parametrize("fused", [False, True])
def test_forced_family_refuses_dtype(rng, cuda, family, dtype, precision, fused):
    a = gp.asarray(randn(rng, (128, 64), dtype), device=cuda)
    bias = gp.asarray(randn(rng, (128,), dtype), device=cuda) if fused else None
    with pytest.raises(NotImplementedError):
        gp.gemm(a, a.T, bias=bias, backend=family, precision=precision)


def test_forced_sm90_refuses_other_archs(rng, cuda):
    if sm(cuda)[0] == 9 and sm90_built():
        pytest.skip("this GPU runs the sm90 kernels")
    a = gp.asarray(randn(rng, (128, 64), "bfloat16"), device=cuda)
    with pytest.raises(NotImplementedError, match="sm90"):
        gp.matmul(a, a.T, backend="sm90")


def test_forced_sm80_refuses_column_major_a(rng, cuda):
    if sm(cuda)[0] < 8:
        pytest.skip(f"needs SM 8.0+; this GPU is SM {sm(cuda)}")
    a = gp.asarray(randn(rng, (64, 128), "bfloat16"), device=cuda)
    with pytest.raises(NotImplementedError, match="sm80"):
        gp.matmul(a.T, a, backend="sm80")
    check_gemm(gp.matmul(a.T, a), host(a).T, host(a))  # auto serves it


@pytest.mark.parametrize(
    "family, dtype",
    [
        ("sm90", "bfloat16"),
        ("sm80", "bfloat16"),
        ("cublaslt", "bfloat16"),
        ("simt", "float32"),
        ("auto", "bfloat16"),
    ],
)
def test_first_cuda_call_of_a_new_thread(rng, cuda, family, dtype):
    # A thread's first matmul may make no other driver call before the launcher's own (its
    # output comes from the pool's cache), so each launcher must make the context current.
    if family == "sm90" and not (sm(cuda)[0] == 9 and sm90_built()):
        pytest.skip("needs the sm90 kernels on an SM 9.x GPU")
    if family == "sm80" and sm(cuda)[0] < 8:
        pytest.skip("needs SM 8.0+")
    a, b = randn(rng, (256, 128), dtype), randn(rng, (128, 192), dtype)
    ga, gb = gp.asarray(a, device=cuda), gp.asarray(b, device=cuda)
    kw = {} if family == "auto" else {"backend": family}
    gp.matmul(ga, gb, **kw)  # warms the caches; its output block returns to the pool
    gp.synchronize(cuda)
    box = {}

    def run():
        try:
            box["out"] = gp.matmul(ga, gb, **kw)
            gp.synchronize(cuda)
        except BaseException as e:  # noqa: BLE001 - reported by the test thread
            box["error"] = e

    t = threading.Thread(target=run)
    t.start()
    t.join(timeout=60)
    assert not t.is_alive(), "the matmul thread hung"
    if "error" in box:
        raise box["error"]
    check_gemm(box["out"], a, b)

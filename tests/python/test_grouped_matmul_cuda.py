"""gp.grouped_matmul on CUDA: where the sm90 kernels serve the groups (SM 9.x, sm_90a build,
bf16 / fp16, or float32 as TF32) and the groups are small enough that one product per group
would be bound by its launches, one persistent launch covers every group's tiles, with tile
rows that straddle two groups, tails in M, N and K, empty groups, many groups, and the operand
layouts of an expert's weight (b[g] row-major or a transposed view of (N, K)); values against the
float64 per-group reference, the launch counted through gp.dispatch_stats, the result the same
bits run to run. A forced cuBLASLt runs one product per non-empty group. Needs a CUDA device."""

import numpy as np
import pytest
from helpers import host, rand
from test_grouped_matmul import grouped_reference_check

import pygpukit as gp

pytestmark = pytest.mark.gpu


def sm90_device(dev):
    cc = tuple(gp.device_properties(dev)["compute_capability"])
    return cc[0] == 9 and "90a" in gp.runtime_info()["kernel_archs"]


def launched():
    return dict(gp.dispatch_stats()["per_kernel"])


def operands(rng, sizes, k, n, dtype, layout, dev):
    """NumPy (a, b) and their GPUArrays: a (rows, K) row-major or a transposed view ("m"), b
    (groups, K, N) row-major ("n") or each matrix a transposed view of (N, K) ("k"). Leading
    dims are multiples of 16 bytes (what TMA needs): an M-major a is a view of the first rows of
    a wider matrix."""
    rows, groups = sum(sizes), len(sizes)
    if layout[0] == "k":
        a = rand(rng, (rows, k), dtype, scale=1.0)
        ga = gp.asarray(a, device=dev)
    else:
        at = rand(rng, (k, -(-rows // 8) * 8), dtype, scale=1.0)
        a, ga = at.T[:rows], gp.matrix_transpose(gp.asarray(at, device=dev))[:rows]
    if layout[1] == "n":
        b = rand(rng, (groups, k, n), dtype, scale=1.0)
        gb = gp.asarray(b, device=dev)
    else:
        w = rand(rng, (groups, n, k), dtype, scale=1.0)
        b, gb = w.transpose(0, 2, 1), gp.permute_dims(gp.asarray(w, device=dev), (0, 2, 1))
    return a, b, ga, gb


SIZES = {
    "straddling": [0, 1, 127, 128, 129, 300, 0, 513, 64, 65],
    "aligned starts": [0, 8, 120, 136, 0, 264, 72, 9],
    "one": [700],
    "many": "random 96",
}


def group_sizes(rng, name):
    s = SIZES[name]
    if isinstance(s, str):  # many small groups, a fifth of them empty
        g = int(s.split()[1])
        sizes = rng.integers(1, 90, size=g)
        sizes[rng.random(g) < 0.2] = 0
        return [int(x) for x in sizes]
    return s


@pytest.mark.parametrize("layout", ["kn", "kk", "mn", "mk"])
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("sizes", list(SIZES))
def test_one_launch_over_every_group(cuda, rng, dtype, layout, sizes):
    sizes = group_sizes(rng, sizes)
    k, n = 200, 296  # K and N tails past the 64-deep stages and 256-wide tiles
    a, b, ga, gb = operands(rng, sizes, k, n, dtype, layout, cuda)
    offsets = [int(x) for x in np.cumsum(sizes)]
    gp.synchronize(cuda)
    gp.reset_dispatch_stats()
    x = gp.grouped_matmul(ga, gb, offsets)
    kernels = launched()
    grouped_reference_check(x, a, b, offsets, dtype)
    if sm90_device(cuda):
        nonempty = len([s for s in sizes if s])
        # An M-major a with a group starting off a 16-byte boundary (TMA's innermost dim) is
        # copied row-major first: one copy, then the one launch.
        starts = [0, *offsets[:-1]]
        aligned = layout[0] == "k" or all(r % 8 == 0 for r, s in zip(starts, sizes) if s)
        copies = {name: c for name, c in kernels.items() if "copy" in name}
        assert sum(copies.values()) == (0 if aligned else 1), kernels
        products = {name: c for name, c in kernels.items() if name not in copies}
        assert sum(products.values()) == 1, kernels
        if nonempty > 1:  # (one group is one ordinary product)
            assert next(iter(products)).startswith("pgk_gemm_sm90_"), kernels
        # The same bits again: the tile order and each tile's sum do not depend on timing.
        y = gp.grouped_matmul(ga, gb, offsets)
        np.testing.assert_array_equal(host(y).view(np.uint16), host(x).view(np.uint16))


def test_tf32_groups(cuda, rng):
    sizes = [3, 250, 0, 129]
    a, b, ga, gb = operands(rng, sizes, 96, 136, "float32", "kk", cuda)
    offsets = [int(x) for x in np.cumsum(sizes)]
    gp.synchronize(cuda)
    gp.reset_dispatch_stats()
    x = gp.grouped_matmul(ga, gb, offsets, precision="tf32")
    kernels = launched()
    got, r0 = host(x), 0
    for g, r1 in enumerate(offsets):
        ref = a[r0:r1].astype(np.float64) @ b[g].astype(np.float64)
        # TF32 rounds each operand to 11 significant bits: each product within 2^-10 of its
        # magnitude, with float32 accumulation on top.
        tol = 2.0**-9 * (np.abs(a[r0:r1]).astype(np.float64) @ np.abs(b[g])) + 1e-6
        assert (np.abs(got[r0:r1] - ref) <= tol).all()
        r0 = r1
    if sm90_device(cuda):
        (name,) = kernels
        assert name.startswith("pgk_gemm_sm90_") and name.endswith("_kk_f4_f4"), kernels


def test_forced_cublaslt_runs_one_product_per_group(cuda, rng):
    sizes = [40, 0, 200, 1]
    a, b, ga, gb = operands(rng, sizes, 64, 72, "bfloat16", "kn", cuda)
    offsets = [int(x) for x in np.cumsum(sizes)]
    gp.synchronize(cuda)
    gp.reset_dispatch_stats()
    x = gp.grouped_matmul(ga, gb, offsets, backend="cublaslt")
    kernels = launched()
    grouped_reference_check(x, a, b, offsets, "bfloat16")
    assert sum(kernels.values()) == 3, kernels  # the three non-empty groups
    assert all(name.startswith("matmul_cublaslt") for name in kernels), kernels


def test_forced_sm90_matches_auto(cuda, rng):
    if not sm90_device(cuda):
        pytest.skip("needs an SM 9.x device and an sm_90a build")
    sizes = [130, 7, 0, 260]
    a, b, ga, gb = operands(rng, sizes, 128, 256, "bfloat16", "kk", cuda)
    offsets = [int(x) for x in np.cumsum(sizes)]
    x = gp.grouped_matmul(ga, gb, offsets)
    y = gp.grouped_matmul(ga, gb, offsets, backend="sm90")
    np.testing.assert_array_equal(host(y).view(np.uint16), host(x).view(np.uint16))

"""Split-K in the Hopper kernels (ops/gemm/gemm_sm90_plan.h): products whose tile grid would leave
SMs idle (skinny M, few tiles with long K) cut K across CTAs; the last CTA of each tile adds the
float32 partial sums in split order and runs the epilogue. Checked against the float64 reference
for tails, layouts, batches, every epilogue and TF32; results must not depend on which CTA
finishes last (bitwise-equal reruns). tests/cpp/gemm_sm90_plan_test.cc pins that these shapes
split on a 132-SM H100 / H200; forced split counts (uneven last split, one k-block per split) run
in a child process because PYGPUKIT_SM90_SPLITS is read once per process."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from gemm_ref import TF32_ROUNDOFF, check_values
from helpers import host
from test_gemm_cuda import (
    documented_support,
    launched_by,
    operand,
    randn,
    run_case,
    sm,
    sm90_built,
)

import pygpukit as gp

pytestmark = pytest.mark.gpu


@pytest.fixture
def hopper(cuda):
    if sm(cuda)[0] != 9 or not sm90_built():
        pytest.skip(f"needs an sm_90a build on SM 9.x; this GPU is SM {sm(cuda)}")
    return cuda


# (batch, m, k, n): each splits on a 132-SM GPU (gemm_sm90_plan_test SplitsTheTestShapes).
SPLIT_SHAPES = [
    (None, 1, 4096, 4096),
    (None, 65, 6000, 200),
    (None, 130, 8192, 136),
    (2, 16, 3000, 72),
]


@pytest.mark.parametrize("epi", ["plain", "fused", "out32"])
@pytest.mark.parametrize("layout", ["nn", "tn", "nt"])
@pytest.mark.parametrize(
    "shape", SPLIT_SHAPES, ids=lambda s: "x".join(map(str, (s[0] or 1, *s[1:])))
)
@pytest.mark.parametrize(
    "dtype, precision", [("bfloat16", "highest"), ("float16", "highest"), ("float32", "tf32")]
)
def test_split_k_matches_reference(rng, hopper, dtype, precision, shape, layout, epi):
    if epi == "out32" and dtype == "float32":
        pytest.skip("float32 output is for 16-bit operands")
    x, refused, na, nb, kw, out = run_case(
        rng, hopper, "sm90", dtype, precision, shape, layout, epi
    )
    if refused is not None:
        assert not documented_support("sm90", hopper, dtype, precision, *layout, *shape), refused
        pytest.skip(f"outside sm90's documented preconditions: {refused}")
    extra = 2 * TF32_ROUNDOFF if precision == "tf32" else 0.0
    check_values(host(x), na, nb, dtype=dtype, out=out, extra=extra, **kw)


def split_ran():
    return "gemm_sm90_split_counters" in gp.dispatch_stats()["per_kernel"]


def test_split_k_is_deterministic(rng, hopper):
    # Arrival order at the tile counters varies from run to run; the sum order must not. Float32
    # output, so that no rounding to 16 bits hides a different order.
    _, a = operand(rng, "n", None, 16, 8192, "bfloat16", hopper)
    _, b = operand(rng, "t", None, 8192, 1024, "bfloat16", hopper)
    f32 = {"backend": "sm90", "out_dtype": gp.float32}
    first = host(gp.gemm(a, b, **f32))
    for _ in range(10):
        assert np.array_equal(host(gp.gemm(a, b, **f32)), first)


def test_split_k_launches_one_sm90_kernel(rng, hopper):
    _, a = operand(rng, "n", None, 1, 4096, "bfloat16", hopper)
    _, b = operand(rng, "n", None, 4096, 4096, "bfloat16", hopper)
    _, launched = launched_by(lambda: gp.matmul(a, b, backend="sm90"), hopper)
    assert launched == {"sm90"}, launched
    if gp.device_properties(hopper)["multiprocessors"] == 132:  # the plan tests' SM count
        assert split_ran(), gp.dispatch_stats()["per_kernel"]


CHILD = textwrap.dedent(
    """
    import sys
    import numpy as np
    import pygpukit as gp
    from gemm_ref import check_values
    from helpers import host, rand

    rng = np.random.default_rng(7)
    # The last shape has 136 tiles of 128 x 256 on 132 SMs: one wave whole, 4 tiles split.
    for m, k, n in [(1, 640, 296), (100, 704, 136), (129, 1016, 8), (2176, 256, 2048)]:
        a = rand(rng, (m, k), "bfloat16")
        b = rand(rng, (k, n), "bfloat16")
        bias = rand(rng, (n,), "bfloat16", scale=float(np.sqrt(k)))
        ga, gb, gbias = (gp.asarray(v, device="cuda") for v in (a, b, bias))
        x = gp.gemm(ga, gb, bias=gbias, activation="relu", backend="sm90")
        check_values(host(x), a, b, dtype="bfloat16", out="bfloat16", bias=bias, activation="relu")
        y = gp.matmul(ga, gb, backend="sm90")
        check_values(host(y), a, b, dtype="bfloat16", out="bfloat16")
    print("ok")
    """
)


def run_child(script, **env):
    """Runs `script` in a fresh process on the GPU (helpers importable); its stdout."""
    here = Path(__file__).parent
    env = dict(os.environ, PYGPUKIT_DEVICE="cuda", **env)
    env["PYTHONPATH"] = os.pathsep.join([str(here), env.get("PYTHONPATH", "")])
    r = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert "ignoring PYGPUKIT_SM90_SPLITS" not in r.stderr
    return r.stdout.strip()


@pytest.mark.parametrize("splits", ["1", "3", "4", "16"])
def test_forced_split_counts(hopper, splits):
    # 10, 11 and 16 k-blocks: 3 and 4 splits leave a shorter last split, 16 one k-block each
    # (and 1 turns split-K off); the 4-k-block product splits only its last wave.
    assert run_child(CHILD, PYGPUKIT_SM90_SPLITS=splits) == "ok"


NO_ROOM = textwrap.dedent(
    """
    import numpy as np
    import pygpukit as gp
    from pygpukit import memory as mem
    from gemm_ref import check_values
    from helpers import host, rand

    rng = np.random.default_rng(3)
    a, b = rand(rng, (1, 4096), "bfloat16"), rand(rng, (4096, 4096), "bfloat16")
    ga, gb = gp.asarray(a, device="cuda"), gp.asarray(b, device="cuda")
    gp.synchronize("cuda")
    mem.empty_cache("cuda")
    s = mem.stats("cuda")
    if s["largest_free_block"] >= 8 << 20:
        print("skip: the pool holds a free block as large as the workspace")
        raise SystemExit(0)
    # Room for the 8 KiB result, not for the 8 MiB of partial sums.
    mem.set_limit(s["reserved_bytes"] + (3 << 20), device="cuda")
    gp.reset_dispatch_stats()
    x = gp.matmul(ga, gb, backend="sm90")
    gp.synchronize("cuda")
    split = "gemm_sm90_split_counters" in gp.dispatch_stats()["per_kernel"]
    mem.set_limit(None, device="cuda")
    check_values(host(x), a, b, dtype="bfloat16", out="bfloat16")
    print("split" if split else "ok")
    """
)


def test_split_k_without_memory_for_its_workspace_runs_unsplit(hopper):
    # A fresh process, so that no cached block of earlier tests can hold the workspace.
    out = run_child(NO_ROOM)
    if out.startswith("skip"):
        pytest.skip(out)
    assert out == "ok"


def test_split_and_unsplit_agree_within_rounding(rng, hopper):
    # The same product with 1-row and 128-row M: the first splits, the second (many tiles) does
    # not; row 0 must agree to float32 accumulation error before the bf16 rounding.
    a = randn(rng, (1, 4096), "bfloat16")
    big = randn(rng, (4096, 4096), "bfloat16")
    big[0] = a[0]
    b = randn(rng, (4096, 4096), "bfloat16")
    gb = gp.asarray(b, device=hopper)
    f32 = {"backend": "sm90", "out_dtype": gp.float32}
    one = host(gp.gemm(gp.asarray(a, device=hopper), gb, **f32))
    many = host(gp.gemm(gp.asarray(big, device=hopper), gb, **f32))
    np.testing.assert_allclose(one[0], many[0], rtol=1e-4, atol=1e-3)

"""Backend parity smoke check: runs each op on cuda and on the cpu backend (the oracle) and
compares. Used by scripts/gpu.sh before the full suites."""

import sys

import numpy as np

import pygpukit as gp

rng = np.random.default_rng(0)
fails = 0


def check(name, f):
    global fails
    try:
        g = f("cuda:0")
        c = f("cpu")
        g = gp.to_numpy(g.astype(gp.float32) if g.dtype == gp.bfloat16 else g)
        c = gp.to_numpy(c.astype(gp.float32) if c.dtype == gp.bfloat16 else c)
        ok = g.shape == c.shape and np.allclose(g, c, rtol=2e-2, atol=1e-3, equal_nan=True)
        print(f"{'ok  ' if ok else 'FAIL'} {name} {g.shape} {g.dtype}")
        if not ok:
            fails += 1
            print("  cuda:", g.ravel()[:8], "\n  cpu: ", c.ravel()[:8])
    except Exception as e:  # noqa: BLE001
        fails += 1
        print(f"ERR  {name}: {type(e).__name__}: {e}")


a = rng.standard_normal((33, 17)).astype(np.float32)
b = rng.standard_normal((17, 9)).astype(np.float32)
for dt in ["float16", "bfloat16", "float32", "float64", "complex64", "complex128"]:
    check(
        f"matmul {dt}",
        lambda d, dt=dt: gp.matmul(
            gp.asarray(a, device=d).astype(dt), gp.asarray(b, device=d).astype(dt)
        ),
    )
    check(
        f"matmul batched T {dt}",
        lambda d, dt=dt: (
            gp.asarray(np.stack([a, a * 2]), device=d).astype(dt).mT
            @ gp.asarray(a[None, :, :9], device=d).astype(dt)
        ),
    )
for dt in [
    "bool",
    "int8",
    "uint8",
    "int32",
    "int64",
    "uint64",
    "float16",
    "bfloat16",
    "float32",
    "float64",
    "complex64",
    "complex128",
]:
    check(
        f"astype+add {dt}",
        lambda d, dt=dt: (
            gp.asarray(a * 10, device=d).astype(dt) + gp.asarray(a[:1] * 3, device=d).astype(dt)
        ),
    )
    check(
        f"mul scalar {dt}", lambda d, dt=dt: gp.asarray(a * 10, device=d).astype(dt)[::2, ::-3] * 3
    )
    check(f"div {dt}", lambda d, dt=dt: gp.asarray(a, device=d).astype(dt) / 7)
    check(f"full {dt}", lambda d, dt=dt: gp.full((5, 3), 1, dtype=dt, device=d))
    if dt not in ("bool", "complex64", "complex128"):
        check(f"arange {dt}", lambda d, dt=dt: gp.arange(0, 50, 3, dtype=dt, device=d))
check("sub broadcast", lambda d: gp.asarray(a, device=d) - gp.asarray(a[:, :1], device=d))
check("reshape copy", lambda d: gp.asarray(a, device=d).T.reshape(-1))
check(
    "setitem",
    lambda d: (lambda x: (x.__setitem__((slice(1, None),), x[:-1]), x)[1])(gp.asarray(a, device=d)),
)
big = rng.standard_normal((3000, 1000)).astype(np.float32)
check("big add", lambda d: gp.asarray(big, device=d) + gp.asarray(big[:1], device=d))
print("dispatch:", {k: v for k, v in gp.dispatch_stats().items() if k != "per_kernel"})
print("memory cuda:", gp.memory_stats("cuda:0"))
print("SMOKE", "FAILED" if fails else "OK", fails)
sys.exit(1 if fails else 0)

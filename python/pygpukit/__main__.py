"""python -m pygpukit: what the runtime sees, plus a quick matmul self-check with timing."""

import time

import numpy as np

import pygpukit as gp


def main():
    info = gp.runtime_info()
    dev = gp.default_device()
    print(f"pygpukit {info['version']}")
    print(f"backend:        {dev.type} (default device {dev})")
    if info["forced_device"]:
        print(f"PYGPUKIT_DEVICE: {info['forced_device']}")
    print(
        f"CUDA:           {'available' if info['cuda_available'] else 'unavailable'}"
        f" ({info['cuda_status']})"
    )
    print(f"kernel archs:   {info['kernel_archs'] or '-'}")
    print(f"NVRTC:          {info['nvrtc_version']}")
    print(f"cuBLASLt:       {info['cublaslt_version']}")
    for d in gp.devices():
        p = gp.device_properties(d)
        line = f"device {d}: {p['name']}"
        if d.type == "cuda":
            line += (
                f", sm_{p['sm']}, {p['multiprocessors']} SMs, "
                f"{p['total_memory'] / 2**30:.1f} GiB, driver {p['driver_version']}"
            )
        else:
            line += f", {p['multiprocessors']} threads, {p['total_memory'] / 2**30:.1f} GiB"
        print(line)

    rng = np.random.default_rng(0)
    n = 1024 if dev.type == "cuda" else 256
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)
    A, B = gp.asarray(a), gp.asarray(b)
    C = A @ B
    gp.synchronize()
    reps = 10
    t0 = time.perf_counter()
    for _ in range(reps):
        C = A @ B
    gp.synchronize()
    dt = (time.perf_counter() - t0) / reps
    ref = a.astype(np.float64) @ b.astype(np.float64)
    err = np.abs(gp.to_numpy(C) - ref).max() / np.abs(ref).max()
    ok = err < 1e-4
    print(
        f"self-check: float32 {n}x{n}x{n} matmul on {dev}: {dt * 1e3:.3f} ms "
        f"({2 * n**3 / dt / 1e12:.3f} TFLOP/s), max rel err {err:.2e} -> "
        f"{'OK' if ok else 'FAILED'}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())

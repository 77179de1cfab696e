"""JIT benchmarks: what compiling CUDA C++ at run time costs, and the per-launch overhead of a
cached user kernel, with CuPy's RawKernel (and torch's add, for scale) in the same process.

Cases:
  compile       first launch of a kernel never seen before (NVRTC compile + disk write + load +
                launch): a fresh option per run defeats every cache.
  memory hit    first launch of a new RawKernel object with the same source, same process.
  disk hit      first launch in a fresh process after the in-memory cache is gone (a child
                process with the same cache directory).
  launch        per-call host wall time of a 16-element add launched in a loop (median of
                repeats), ours vs cupy.RawKernel with the same source vs torch's `a + b`.
The first three are single-shot and vary with the host and file system; each is the median of
`--reps` repetitions. Results go to <out>/<gpu>-sm<XY>-jit.json (CUDA only).
"""

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
from peers import host_us_per_call
from results_file import write_result

import pygpukit as gp

ADD = r"""
extern "C" __global__ void add(const float* x, const float* y, float* z, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) z[i] = x[i] + y[i];
}
"""

CHILD = r"""
import sys, time, pygpukit as gp
salt = sys.argv[1]
x = gp.ones((16,), device="cuda")
z = gp.empty((16,), dtype=gp.float32, device="cuda")
gp.synchronize("cuda")
t = time.perf_counter()
gp.RawKernel(sys.stdin.read(), "add", options=[salt])(1, 32, (x, x, z, 16))
gp.synchronize("cuda")
print(time.perf_counter() - t, gp.jit.cache_info()["disk_hits"])
"""


def first_launch_ms(salt, x, z):
    gp.synchronize(x.device)
    t = time.perf_counter()
    gp.RawKernel(ADD, "add", options=[salt])(1, 32, (x, x, z, 16))
    gp.synchronize(x.device)
    return (time.perf_counter() - t) * 1e3


def child_ms(salt, cache_dir):
    env = dict(os.environ, PYGPUKIT_CACHE_DIR=cache_dir)
    r = subprocess.run(
        [sys.executable, "-c", CHILD, salt],
        input=ADD,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    seconds, disk_hits = r.stdout.split()
    assert int(disk_hits) == 1, r.stdout
    return float(seconds) * 1e3


def loop_us(fn, iters, reps):
    return host_us_per_call(fn, iters, reps, warmup=50)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--iters", type=int, default=2000)
    p.add_argument("--out", default=None, help="JSON folder (default benchmarks/results)")
    args = p.parse_args()
    cache_dir = tempfile.mkdtemp(prefix="pgk-jit-bench-")
    os.environ["PYGPUKIT_CACHE_DIR"] = cache_dir  # read at the JIT's first use, just below
    info = gp.runtime_info()
    if not info["cuda_available"] or not gp.jit.cache_info()["nvrtc_available"]:
        sys.exit(f"needs a CUDA device and NVRTC: {info['cuda_status']}")
    assert gp.jit.cache_info()["directory"] == os.path.join(cache_dir, "jit")
    dev = gp.Device("cuda:0")
    props = gp.device_properties(dev)
    x = gp.ones((16,), device=dev)
    z = gp.empty((16,), dtype=gp.float32, device=dev)

    compile_ms, hit_ms, disk_ms = [], [], []
    for r in range(args.reps):
        salt = f"-DSALT_{os.getpid()}_{r}"
        compile_ms.append(first_launch_ms(salt, x, z))
        hit_ms.append(first_launch_ms(salt, x, z))
        disk_ms.append(child_ms(salt, cache_dir))
    np.testing.assert_array_equal(gp.to_numpy(z), np.full(16, 2, np.float32))

    k = gp.RawKernel(ADD, "add")
    n16 = np.int64(16)
    launch = {"ours": loop_us(lambda: k(1, 32, (x, x, z, n16)), args.iters, args.reps)}
    gp.synchronize(dev)
    versions = {"pygpukit": gp.__version__, "numpy": np.__version__}
    try:
        import cupy

        ck = cupy.RawKernel(ADD, "add")
        cx = cupy.ones(16, dtype=cupy.float32)
        cz = cupy.empty(16, dtype=cupy.float32)
        launch["cupy"] = loop_us(lambda: ck((1,), (32,), (cx, cx, cz, n16)), args.iters, args.reps)
        cupy.cuda.Device().synchronize()
        versions["cupy"] = cupy.__version__
    except ImportError:
        launch["cupy"] = None
    try:
        import torch

        ta = torch.ones(16, device="cuda")
        launch["torch_add"] = loop_us(lambda: ta + ta, args.iters, args.reps)
        torch.cuda.synchronize()
        versions["torch"] = torch.__version__
    except ImportError:
        launch["torch_add"] = None

    result = {
        "gpu": props["name"],
        "sm": props["sm"],
        "driver": props["driver_version"],
        "nvrtc": gp.jit.cache_info()["nvrtc_version"],
        "python": platform.python_version(),
        "versions": versions,
        "reps": args.reps,
        "first_launch_ms": {
            "compile": statistics.median(compile_ms),
            "memory_hit": statistics.median(hit_ms),
            "disk_hit_fresh_process": statistics.median(disk_ms),
        },
        "samples_ms": {"compile": compile_ms, "memory_hit": hit_ms, "disk_hit": disk_ms},
        "launch_us_per_call": launch,
        "timing": "host wall clock (perf_counter) around launch + synchronize (first launches) "
        "or per call over a loop without synchronization (launch), median of repetitions",
    }
    f = result["first_launch_ms"]
    print(
        f"first launch: compile {f['compile']:.1f} ms, memory hit {f['memory_hit']:.3f} ms, "
        f"disk hit (fresh process) {f['disk_hit_fresh_process']:.1f} ms"
    )
    print(
        "launch overhead per call (us): "
        + ", ".join(f"{k} {v:.2f}" if v is not None else f"{k} -" for k, v in launch.items())
    )
    write_result(result, args.out, props, "jit", cuda=True)


if __name__ == "__main__":
    main()

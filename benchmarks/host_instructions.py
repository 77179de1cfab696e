"""benchmarks/host_instructions.py: host instructions per call of tiny ops on the CUDA path, on a
machine with no GPU.

The CUDA backend runs against a null driver (benchmarks/tools/null_cuda_driver.cc: kernels do
nothing, device memory is host memory), so valgrind's callgrind can count what the Python
binding, the op layer, the JIT kernel cache, the pool, the tracer and the dispatcher execute per
call, the driver's own launch excluded. Each case runs in a child Python twice (0 and --calls
calls after the same warm-up); the difference over --calls is the count per call. NVRTC must be
present: kernels are compiled (and cached on disk) as on a GPU machine. An instruction count is
not a time: on the GPU hosts the driver's launch is most of a tiny op, and what the code around
it costs depends on caches the driver leaves cold. Use it to find and check cuts, then time
them on a GPU (benchmarks/elementwise.py, benchmarks/cpp/launch_bench.cc).

  PYTHONPATH=build/test/python python3 benchmarks/host_instructions.py [--top 20] [case ...]
"""

import argparse
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = {
    "add": "z = x + x",
    "add_out": "gp.add(x, x, out=y)",
    "sum": "z = gp.sum(x)",
}
CHILD = """
import sys
import pygpukit as gp
def main(n):
    x = gp.ones((16,), dtype=gp.float32, device="cuda")
    y = gp.empty((16,), dtype=gp.float32, device="cuda")
    for _ in range(200):
        {stmt}
    for _ in range(n):
        {stmt}
main(int(sys.argv[1]))
"""


def build_driver(work):
    cxx = os.environ.get("CXX", "g++")
    cuda = os.environ.get("CUDA_HOME", "/usr/local/cuda")
    lib = os.path.join(work, "libcuda.so.1")
    src = os.path.join(HERE, "tools", "null_cuda_driver.cc")
    cmd = [cxx, "-O2", "-shared", "-fPIC", f"-I{cuda}/include", "-o", lib, src]
    subprocess.run(cmd, check=True)
    return work


def per_function(out_file):
    """Self instructions by function, from callgrind_annotate."""
    text = subprocess.run(
        ["callgrind_annotate", "--threshold=100", out_file],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    counts = collections.Counter()
    for line in text.splitlines():
        m = re.match(r"\s*([\d,]+) \([^)]*\)\s+(.*)", line)
        if m and "PROGRAM TOTALS" not in line:
            counts[m.group(2)[:140]] += int(m.group(1).replace(",", ""))
    return counts


def count(case, calls, driver_dir, work, env):
    script = os.path.join(work, f"{case}.py")
    with open(script, "w") as f:
        f.write(CHILD.format(stmt=CASES[case]))
    runs = []
    for n in (0, calls):
        out = os.path.join(work, f"{case}_{n}.out")
        subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"]
            + [sys.executable, script, str(n)],
            env=env,
            check=True,
            capture_output=True,
        )
        runs.append(per_function(out))
    return {k: (runs[1][k] - runs[0][k]) / calls for k in set(runs[0]) | set(runs[1])}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("cases", nargs="*", help=f"of {', '.join(CASES)} (default: all)")
    p.add_argument("--calls", type=int, default=10000)
    p.add_argument("--top", type=int, default=0, help="also list the N costliest functions")
    args = p.parse_args()
    for case in args.cases:
        if case not in CASES:
            p.error(f"unknown case {case!r}; cases: {', '.join(CASES)}")
    for tool in ("valgrind", "callgrind_annotate"):
        if shutil.which(tool) is None:
            sys.exit(f"needs {tool} (apt-get install valgrind)")
    work = tempfile.mkdtemp(prefix="pgk-host-instr-")
    driver_dir = build_driver(work)  # the folder holding libcuda.so.1
    env = dict(os.environ, PYGPUKIT_DEVICE="cuda", OPENBLAS_NUM_THREADS="1")
    env["LD_LIBRARY_PATH"] = driver_dir + os.pathsep + env.get("LD_LIBRARY_PATH", "")
    for case in args.cases or list(CASES):
        diff = count(case, args.calls, driver_dir, work, env)
        print(f"{case:8s} ({CASES[case]}): {sum(diff.values()):.0f} instructions per call")
        for name, v in sorted(diff.items(), key=lambda kv: -abs(kv[1]))[: args.top]:
            print(f"  {v:8.1f}  {name}")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

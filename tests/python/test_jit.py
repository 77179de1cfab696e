"""gp.RawKernel and the JIT cache (gp.jit). Compilation needs NVRTC but no GPU, so compile,
error and cache tests run on the CPU machine too; launches need a CUDA device. Disk-cache tests
run in child processes, since the cache directory is read once per process."""

import json
import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest
from helpers import host, run_readme_example

import pygpukit as gp

ADD = r"""
extern "C" __global__ void add(const float* x, const float* y, float* z, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) z[i] = x[i] + y[i];
}
"""


def nvrtc():
    info = gp.jit.cache_info()
    if not info["nvrtc_available"]:
        pytest.skip(f"NVRTC unavailable: {info['nvrtc_version']}")


# ---- compiling (NVRTC, no GPU) ----


def test_compile_gives_a_cubin(device):
    nvrtc()
    k = gp.RawKernel(ADD, "add")
    assert (k.name, k.code, k.options) == ("add", ADD, [])
    assert repr(k) == "RawKernel(name='add')"
    image = k.compile(arch="sm_90")
    assert isinstance(image, bytes) and image[:4] == b"\x7fELF"
    assert k.compile(arch="sm_90") == image
    assert k.compile(arch="sm_80") != image
    assert gp.RawKernel(ADD, "add", options=["-DUNUSED=1"]).compile(arch="sm_90")[:4] == b"\x7fELF"


def test_compile_errors_carry_the_log_and_the_source_line(device):
    nvrtc()
    k = gp.RawKernel('extern "C" __global__ void f(int* p) {\n  p[0] = nope;\n}\n', "f")
    with pytest.raises(RuntimeError) as e:
        k.compile(arch="sm_90")
    msg = str(e.value)
    assert "f.cu(2)" in msg and "nope" in msg and ">    2 |   p[0] = nope;" in msg, msg
    with pytest.raises(RuntimeError, match="--bogus"):
        gp.RawKernel(ADD, "add", options=["--bogus"]).compile(arch="sm_90")


@pytest.mark.skipif(
    not any(
        os.path.exists(os.path.join(r, "include", "cuda_fp16.h"))
        for r in (
            os.environ.get("CUDA_PATH", ""),
            os.environ.get("CUDA_HOME", ""),
            "/usr/local/cuda",
        )
        if r
    ),
    reason="no CUDA toolkit headers found",
)
def test_toolkit_headers_are_on_the_include_path(device):
    nvrtc()
    src = """
    #include <cuda_fp16.h>
    #include <cuda_bf16.h>
    #include <cuda/std/cstdint>
    #include <cuda/std/type_traits>
    extern "C" __global__ void f(__half* h, __nv_bfloat16* b, cuda::std::int64_t* n) {
      static_assert(cuda::std::is_same_v<cuda::std::int64_t, long long> ||
                    cuda::std::is_same_v<cuda::std::int64_t, long>);
      h[0] = __float2half(1.f); b[0] = __float2bfloat16(2.f); n[0] = 3;
    }
    """
    assert gp.RawKernel(src, "f").compile(arch="sm_90")[:4] == b"\x7fELF"


def test_compile_refuses_bad_arches(device):
    k = gp.RawKernel(ADD, "add")
    for arch in ["compute_90", "sm90", "sm_", "sm_9x", "90"]:
        with pytest.raises(ValueError, match="arch"):
            k.compile(arch=arch)
    if not gp.runtime_info()["cuda_available"]:
        with pytest.raises(ValueError, match="no CUDA device"):
            k.compile()


def test_concurrent_compiles_of_one_kernel_compile_once(device):
    nvrtc()
    src = ADD.replace("add", "add_concurrent")
    before = gp.jit.cache_info()["compiles"]
    k = gp.RawKernel(src, "add_concurrent", options=[f"-DSALT={os.getpid()}"])
    out, errors = [], []

    def work():
        try:
            out.append(k.compile(arch="sm_90"))
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(out) == 8 and len(set(out)) == 1
    assert gp.jit.cache_info()["compiles"] - before <= 1  # 0 when a disk entry existed


def test_cache_info_and_clear(device):
    info = gp.jit.cache_info()
    keys = {
        "directory",
        "disk_usable",
        "disk_error",
        "memory_entries",
        "memory_hits",
        "disk_hits",
        "compiles",
        "disk_writes",
        "rejected_entries",
        "compile_seconds",
        "nvrtc_available",
        "nvrtc_version",
        "host_directory",
        "host_compiles",
        "host_disk_hits",
        "host_rejected_entries",
        "host_loaded",
        "host_compile_seconds",
    }
    assert set(info) == keys
    with pytest.raises(TypeError, match="disk"):
        gp.jit.clear_cache(disk="yes")
    gp.jit.clear_cache()
    assert gp.jit.cache_info()["memory_entries"] == 0


CHILD = textwrap.dedent(
    """
    import json, pygpukit as gp
    gp.RawKernel(open(0).read(), "add").compile(arch="sm_90")
    print(json.dumps(gp.jit.cache_info()))
    """
)


def child(tmp_path, env_extra=None):
    env = dict(os.environ, PYGPUKIT_CACHE_DIR=str(tmp_path), **(env_extra or {}))
    r = subprocess.run(
        [sys.executable, "-c", CHILD], input=ADD, env=env, capture_output=True, text=True
    )
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_disk_cache_across_processes(device, tmp_path):
    nvrtc()
    first = child(tmp_path)
    assert (first["compiles"], first["disk_writes"], first["disk_hits"]) == (1, 1, 0)
    assert first["directory"] == str(tmp_path / "jit")
    entries = list((tmp_path / "jit").iterdir())
    assert len(entries) == 1 and entries[0].name.startswith("jit-")
    second = child(tmp_path)
    assert (second["compiles"], second["disk_hits"]) == (0, 1)
    # A damaged entry is never trusted: recompiled and replaced.
    data = entries[0].read_bytes()
    entries[0].write_bytes(data[: len(data) // 2])
    third = child(tmp_path)
    assert (third["rejected_entries"], third["compiles"], third["disk_writes"]) == (1, 1, 1)
    assert child(tmp_path)["disk_hits"] == 1
    # An unusable directory costs only the disk cache.
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    fourth = child(blocker)
    assert fourth["compiles"] == 1 and fourth["disk_writes"] == 0 and fourth["disk_error"]


# ---- launch arguments (checked before any device work) ----


def test_bad_launch_arguments(device):
    k = gp.RawKernel(ADD, "add")
    x = gp.zeros((4,), dtype=gp.float32)
    bad = [(0, 32), ((1, 0), 32), (1, 2048), (1, (32, 32, 2)), (1, (1, 1, 65))]
    bad += [(1, (2**32, 2**32, 1)), (2**31, 32), ((1, 65536), 32), (2**70, 32)]
    for grid, block in bad:
        with pytest.raises(ValueError, match="RawKernel add"):
            k(grid, block, (x, x, x, 4))
    with pytest.raises(ValueError, match="dims"):
        k((1, 1, 1, 1), 32, (x, x, x, 4))
    with pytest.raises(TypeError, match="grid"):
        k("1", 32, (x, x, x, 4))
    with pytest.raises(TypeError, match="block"):
        k(1, 32.0, (x, x, x, 4))
    with pytest.raises(TypeError, match="args"):
        k(1, 32, x)
    with pytest.raises(TypeError, match="argument 3 of type str"):
        k(1, 32, (x, x, x, "4"))
    with pytest.raises(TypeError, match="argument 0 .*not a number"):
        k(1, 32, (np.str_("a"), x, x, 4))
    with pytest.raises(OverflowError, match="argument 3"):
        k(1, 32, (x, x, x, 2**70))
    with pytest.raises(ValueError, match="shared_mem"):
        k(1, 32, (x, x, x, 4), shared_mem=-1)
    with pytest.raises(TypeError, match="stream"):
        k(1, 32, (x, x, x, 4), stream="s")
    with pytest.raises(TypeError, match="grid"):
        k(1.0, 32, (x, x, x, 4))
    with pytest.raises(TypeError, match="grid"):
        k(True, 32, (x, x, x, 4))
    with pytest.raises(ValueError, match="stream on cpu but device=cuda:0"):
        k(np.int64(1), 32, (4,), stream=gp.Stream(device="cpu"), device="cuda:0")


def test_cpu_arrays_are_refused():
    cpu = gp.Device("cpu")
    x = gp.zeros((4,), dtype=gp.float32, device=cpu)
    with pytest.raises(NotImplementedError, match="CUDA devices, not cpu"):
        gp.RawKernel(ADD, "add")(1, 32, (x, x, x, 4))
    with pytest.raises(NotImplementedError, match="CUDA devices"):
        gp.RawKernel(ADD, "add")(1, 32, (4,), device="cpu")


# ---- launches (GPU) ----


@pytest.mark.gpu
def test_add_matches_numpy(rng, cuda):
    n = 100_003
    a, b = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    x, y = gp.asarray(a, device=cuda), gp.asarray(b, device=cuda)
    z = gp.empty((n,), dtype=gp.float32, device=cuda)
    gp.reset_dispatch_stats()
    gp.RawKernel(ADD, "add")(((n + 255) // 256,), (256,), (x, y, z, n))
    np.testing.assert_array_equal(host(z), a + b)
    assert gp.dispatch_stats()["per_kernel"]["raw:add"] == 1
    # A view passes the address of its first element.
    w = gp.zeros((n,), dtype=gp.float32, device=cuda)
    gp.RawKernel(ADD, "add")(((n + 255) // 256,), (256,), (x[1:], y[1:], w[1:], np.int64(n - 2)))
    expect = np.zeros(n, np.float32)
    expect[1:-1] = (a + b)[1:-1]
    np.testing.assert_array_equal(host(w), expect)


SCALARS = r"""
extern "C" __global__ void scalars(signed char i8, short i16, int i32, long long i64,
                                   unsigned char u8, float f32, double f64, bool flag,
                                   double re, double im, double* out) {
  out[0] = i8; out[1] = i16; out[2] = i32; out[3] = (double)i64; out[4] = u8; out[5] = f32;
  out[6] = f64; out[7] = flag; out[8] = re; out[9] = im;
}
"""


COMPLEX = r"""
struct c128 { double re, im; };
extern "C" __global__ void more(c128 c, unsigned short bf16_bits, double* out) {
  out[0] = c.re; out[1] = c.im; out[2] = __uint_as_float((unsigned)bf16_bits << 16);
}
"""


@pytest.mark.gpu
def test_complex_and_bfloat16_scalars(cuda):
    ml = pytest.importorskip("ml_dtypes")
    out = gp.zeros((3,), dtype=gp.float64, device=cuda)
    gp.RawKernel(COMPLEX, "more")(1, 1, (1.5 - 2j, np.array(0.75, ml.bfloat16)[()], out))
    np.testing.assert_array_equal(host(out), [1.5, -2.0, 0.75])


@pytest.mark.gpu
def test_scalar_arguments_pass_by_value(cuda):
    out = gp.zeros((10,), dtype=gp.float64, device=cuda)
    k = gp.RawKernel(SCALARS, "scalars")
    args = (np.int8(-3), np.int16(300), np.int32(-70000), 2**40 + 1, np.uint8(250))
    args += (np.float32(1.5), 2.25, True, np.float64(-0.5), np.float64(7.0), out)
    k(1, 1, args)
    np.testing.assert_array_equal(
        host(out), [-3, 300, -70000, 2**40 + 1, 250, 1.5, 2.25, 1, -0.5, 7.0]
    )


BLOCK_SUM = r"""
extern "C" __global__ void block_sum(const float* x, float* out, int width) {
  extern __shared__ float s[];
  const int row = blockIdx.y, t = threadIdx.x;
  float acc = 0.f;
  for (int i = t; i < width; i += blockDim.x) acc += x[row * width + i];
  s[t] = acc;
  __syncthreads();
  for (int k = blockDim.x / 2; k > 0; k /= 2) {
    if (t < k) s[t] += s[t + k];
    __syncthreads();
  }
  if (t == 0) out[row] = s[0];
}
"""


@pytest.mark.gpu
@pytest.mark.parametrize("threads", [128, 1024])
def test_dynamic_shared_memory_and_a_2d_grid(rng, cuda, threads):
    rows, width = 37, 1000
    a = rng.integers(-8, 8, (rows, width)).astype(np.float32)  # exact sums in float32
    x = gp.asarray(a, device=cuda)
    out = gp.empty((rows,), dtype=gp.float32, device=cuda)
    # Above 48 KiB of dynamic shared memory the launch raises the function's limit first.
    shared = max(threads * 4, 64 << 10)
    gp.RawKernel(BLOCK_SUM, "block_sum")(
        (1, rows), threads, (x, out, np.int32(width)), shared_mem=shared
    )
    np.testing.assert_array_equal(host(out), a.sum(axis=1))


@pytest.mark.gpu
def test_launch_on_a_stream(rng, cuda):
    n = 4096
    a = rng.standard_normal(n, dtype=np.float32)
    x = gp.asarray(a, device=cuda)
    z = gp.empty((n,), dtype=gp.float32, device=cuda)
    s = gp.Stream(device=cuda)
    args = [x, x, z, n]
    gp.RawKernel(ADD, "add")(n // 256, 256, args, stream=s)
    s.synchronize()
    np.testing.assert_array_equal(host(z), a + a)
    # The thread's stream is restored, also after a launch that fails.
    with pytest.raises(ValueError):
        gp.RawKernel(ADD, "sub")(1, 32, args, stream=s)
    gp.RawKernel(ADD, "add")(n // 256, 256, (z, z, x, n))
    gp.synchronize(cuda)
    np.testing.assert_array_equal(host(x), 4 * a)


@pytest.mark.gpu
def test_missing_kernel_and_launch_failures(cuda):
    x = gp.zeros((4,), dtype=gp.float32, device=cuda)
    with pytest.raises(ValueError, match="defines no kernel 'sub'"):
        gp.RawKernel(ADD, "sub")(1, 32, (x, x, x, 4))
    with pytest.raises(RuntimeError, match="f.cu"):
        gp.RawKernel('extern "C" __global__ void f() { undefined(); }', "f")(1, 1, ())
    # More shared memory than any GPU has fails at launch, naming the geometry.
    with pytest.raises(ValueError, match="shared_mem .* exceeds"):
        gp.RawKernel(ADD, "add")(1, 32, (x, x, x, 4), shared_mem=1 << 29)
    # A launch the driver refuses (too many registers for 1024 threads is hard to force; an
    # out-of-range cluster is not expressible) is a RuntimeError naming the geometry: a kernel
    # whose static shared memory plus the dynamic request exceed the limit.
    big = gp.RawKernel(
        'extern "C" __global__ void big(float* p) { __shared__ float s[12000]; '
        "s[threadIdx.x] = 1; __syncthreads(); p[0] = s[0]; }",
        "big",
    )
    limit = gp.device_properties(cuda)["max_shared_memory_per_block"]
    with pytest.raises(RuntimeError, match="big: launch with grid"):
        big(1, 32, (x,), shared_mem=limit)
    # The device stays usable.
    gp.RawKernel(ADD, "add")(1, 32, (x, x, x, 4))
    gp.synchronize(cuda)


@pytest.mark.gpu
def test_readme_example_runs(cuda, capsys):
    run_readme_example("## User kernels")
    assert capsys.readouterr().out.startswith("[3. 3. 3.]")


CAST = r"""
#include "ops/kernels/scalar_ops.h"
using namespace pygpukit;
extern "C" __global__ void cast(const double* x, float16* h, bfloat16* b, int* i32, long long n) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) {
    h[i] = kernels::Cast<float16>(x[i]);
    b[i] = kernels::Cast<bfloat16>(x[i]);
    i32[i] = kernels::Cast<int32_t>(x[i]);
  }
}
"""


@pytest.mark.gpu
def test_shared_scalar_semantics_match_the_cpu_backend(rng, cuda):
    # The JIT compiles the same Cast the CPU loops run: identical bits, special values included
    # (rounding ties, subnormals, overflow, NaN, out-of-range integers).
    special = [0.0, -0.0, np.inf, -np.inf, np.nan, 1 + 2**-11, 1 + 3 * 2**-11, 65520.0, 2**-25]
    special += [1 + 2**-8, 3.4e38, 1e10, -1e10, 2**31, -(2**31) - 1, 0.5, -1.5, 6e-8]
    x = np.concatenate([special, rng.standard_normal(4000) * 10.0 ** rng.integers(-8, 8, 4000)])
    n = x.size
    gx = gp.asarray(x, device=cuda)
    h = gp.empty((n,), dtype=gp.float16, device=cuda)
    b = gp.empty((n,), dtype=gp.bfloat16, device=cuda)
    i = gp.empty((n,), dtype=gp.int32, device=cuda)
    gp.RawKernel(CAST, "cast")((n + 127) // 128, 128, (gx, h, b, i, n))
    cpu = gp.asarray(x, device="cpu")
    for got, dt in [(h, gp.float16), (b, gp.bfloat16), (i, gp.int32)]:
        want = host(cpu.astype(dt))
        assert np.array_equal(host(got).view(np.uint8), want.view(np.uint8)), dt

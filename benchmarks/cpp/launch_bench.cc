// Where the per-call time of a tiny elementwise op goes, layer by layer, on the runtime's
// default device (PYGPUKIT_DEVICE=cuda for the GPU): the driver's launch alone (cuLaunchKernelEx
// of a JIT kernel with the add kernel's parameter list, through the CUDA backend), the same launch
// through the launch queue (made on the launcher thread), through the dispatcher, and the whole
// C++ op (ops::Binary add of 16 float32, with and without
// `out`). Python adds its binding on top (benchmarks/elementwise.py measures that, beside torch and
// CuPy). Host time per call: nothing synchronizes inside the timed loops (the driver's launch
// queue never fills: the GPU runs these kernels faster than they are launched; ours holds at most
// 128 launches, a negligible part of a run's iterations).
//   launch_bench --benchmark_out=launch_bench.json --benchmark_out_format=json
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "bench_util.h"
#include "core/cuda/cuda_backend.h"
#include "ops/ops.h"
#include "runtime/runtime.h"

namespace pygpukit {
namespace {

using bench::Check;
using bench::OrDie;

// A 16-element float32 add: the operands, and for the raw launches a kernel with the generated
// add kernel's parameters (count, output, two inputs).
struct Env {
  Device device;
  hal::Stream* stream = nullptr;
  GPUArray x, out;
  void* function = nullptr;  // null on the CPU backend
  long long n = 16;
  void* o = nullptr;
  void* a = nullptr;
  void* b = nullptr;
  void* params[4] = {&n, &o, &a, &b};
  hal::LaunchDims dims;
};

Env& GetEnv() {
  static Env* env = [] {
    Runtime& rt = Runtime::Get();
    auto* e = new Env;
    e->device = rt.default_device();
    e->stream = OrDie(rt.stream(e->device), "stream");
    const int64_t shape[] = {16};
    e->x = OrDie(ops::Ones(shape, DType::Float32, e->device), "ones");
    e->out = OrDie(ops::Empty(shape, DType::Float32, e->device), "empty");
    e->o = e->out.data();
    e->a = e->b = e->x.data();
    e->dims.block[0] = 128;
    if (e->device.is_cuda()) {
      JitSource src;
      src.name = "launch_floor";
      src.source =
          "extern \"C\" __global__ void launch_floor(long long n, float* o, const float* a,\n"
          "                                          const float* b) {\n"
          "  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;\n"
          "  if (i < n) o[i] = a[i] + b[i];\n"
          "}\n";
      e->function = OrDie(rt.jit().Function(src, "launch_floor", e->device.index), "jit");
    }
    return e;
  }();
  return *env;
}

void Finish(benchmark::State& state, const Env& e) {
  Check(Runtime::Get().Synchronize(e.device), "synchronize");
  state.SetItemsProcessed(state.iterations());
}

void BM_DriverLaunch(benchmark::State& state) {
  Env& e = GetEnv();
  if (e.function == nullptr) return state.SkipWithError("needs a CUDA device");
  cuda::CudaBackend* cuda = Runtime::Get().cuda_backend();
  for (auto _ : state) Check(cuda->Launch(e.function, e.dims, *e.stream, e.params), "launch");
  Finish(state, e);
}
BENCHMARK(BM_DriverLaunch)->UseRealTime();

// The same launches through the device's launch queue: a stream of them is made as fast as the
// launcher thread makes them (the caller only copies parameters), so this is the queue's rate.
void BM_QueuedLaunch(benchmark::State& state) {
  Env& e = GetEnv();
  if (e.function == nullptr) return state.SkipWithError("needs a CUDA device");
  cuda::CudaBackend* cuda = Runtime::Get().cuda_backend();
  for (auto _ : state) {
    Check(cuda->Launch(e.function, e.dims, *e.stream, e.params, /*queued=*/true), "launch");
  }
  Finish(state, e);
}
BENCHMARK(BM_QueuedLaunch)->UseRealTime();

void BM_DispatcherLaunch(benchmark::State& state) {
  Env& e = GetEnv();
  if (e.function == nullptr) return state.SkipWithError("needs a CUDA device");
  Dispatcher& d = Runtime::Get().dispatcher();
  for (auto _ : state) {
    Check(d.LaunchFunction(*e.stream, "launch_floor", e.function, e.dims, e.params), "launch");
  }
  Finish(state, e);
}
BENCHMARK(BM_DispatcherLaunch)->UseRealTime();

void BM_OpAdd(benchmark::State& state) {
  Env& e = GetEnv();
  const ops::EwOperand x(e.x);
  for (auto _ : state) {
    benchmark::DoNotOptimize(OrDie(ops::Binary(ops::ElementwiseOp::kAdd, x, x), "add"));
  }
  Finish(state, e);
}
BENCHMARK(BM_OpAdd)->UseRealTime();

void BM_OpAddOut(benchmark::State& state) {
  Env& e = GetEnv();
  const ops::EwOperand x(e.x);
  for (auto _ : state) {
    benchmark::DoNotOptimize(OrDie(ops::Binary(ops::ElementwiseOp::kAdd, x, x, &e.out), "add"));
  }
  Finish(state, e);
}
BENCHMARK(BM_OpAddOut)->UseRealTime();

}  // namespace
}  // namespace pygpukit

BENCHMARK_MAIN();

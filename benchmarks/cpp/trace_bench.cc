// What the always-on tracer costs per record, on the host: reading its clock, an always-on
// record (one clock read and the append to the thread's ring; on and off), and the two hot
// paths that record: a pool allocation
// with its free (two records) and a whole tiny op (16-element float32 add: allocation, launch,
// free) on the runtime's default device (PYGPUKIT_DEVICE=cuda for the GPU).
//   trace_bench --benchmark_out=trace_bench.json --benchmark_out_format=json
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "bench_util.h"
#include "ops/ops.h"
#include "runtime/runtime.h"
#include "runtime/trace/tracer.h"

namespace pygpukit {
namespace {

using bench::OrDie;

// Tracing on (arg 1) or off (arg 0) for one benchmark; restored after.
class TraceSetting {
 public:
  explicit TraceSetting(bool on) : was_(Tracer::Get().enabled()) { Tracer::Get().set_enabled(on); }
  ~TraceSetting() { Tracer::Get().set_enabled(was_); }

 private:
  bool was_;
};

void BM_Ticks(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(Tracer::Ticks());
}
BENCHMARK(BM_Ticks);

void BM_Record(benchmark::State& state) {
  TraceSetting setting(state.range(0) != 0);
  Tracer& t = Tracer::Get();
  TraceEntry e;
  e.name = t.Intern("bench");
  for (auto _ : state) {
    e.begin = Tracer::Ticks();
    benchmark::DoNotOptimize(t.Add(e));
  }
}
BENCHMARK(BM_Record)->ArgName("trace")->Arg(0)->Arg(1);

void BM_AllocFree(benchmark::State& state) {
  TraceSetting setting(state.range(0) != 0);
  Runtime& rt = Runtime::Get();
  const Device dev = rt.default_device();
  MemoryPool& pool = *OrDie(rt.pool(dev), "pool");
  hal::Stream& stream = *OrDie(rt.stream(dev), "stream");
  for (auto _ : state) benchmark::DoNotOptimize(OrDie(pool.Allocate(64, stream), "allocate"));
}
BENCHMARK(BM_AllocFree)->ArgName("trace")->Arg(0)->Arg(1);

void BM_TinyAdd(benchmark::State& state) {
  TraceSetting setting(state.range(0) != 0);
  Runtime& rt = Runtime::Get();
  const Device dev = rt.default_device();
  const int64_t shape[] = {16};
  const GPUArray x = OrDie(ops::Ones(shape, DType::Float32, dev), "ones");
  const ops::EwOperand a(x);
  for (auto _ : state) {
    benchmark::DoNotOptimize(OrDie(ops::Binary(ops::ElementwiseOp::kAdd, a, a), "add"));
  }
  bench::Check(rt.Synchronize(dev), "synchronize");
}
BENCHMARK(BM_TinyAdd)->ArgName("trace")->Arg(0)->Arg(1)->UseRealTime();

}  // namespace
}  // namespace pygpukit

BENCHMARK_MAIN();

// Microbenchmarks of the memory layer on the runtime's default device (PYGPUKIT_DEVICE=cuda for
// the GPU): pool allocate + free on a cache hit (one stream, several sizes, and 1-8 threads
// sharing the pool), the driver's raw allocation for scale, the pinned host pool, and the
// transfer engine's staged and direct copies. Allocation benchmarks time the host (the pool
// never synchronizes on a hit); transfer benchmarks time blocking copies by wall clock.
//   memory_bench --benchmark_out=memory_bench.json --benchmark_out_format=json
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "bench_util.h"
#include "runtime/runtime.h"

namespace pygpukit {
namespace {

// What every benchmark works on: the default device's pool, stream and transfer engine.
struct Env {
  Device device;
  hal::Backend* backend = nullptr;
  hal::Stream* stream = nullptr;
  MemoryPool* pool = nullptr;
  TransferEngine* transfer = nullptr;
  PinnedPool* pinned = nullptr;
  std::string name;
};

using bench::OrDie;

const Env& GetEnv() {
  static const Env env = [] {
    Runtime& rt = Runtime::Get();
    Env e;
    e.device = rt.default_device();
    e.backend = OrDie(rt.backend(e.device.type), "backend");
    e.stream = OrDie(rt.stream(e.device), "stream");
    e.pool = OrDie(rt.pool(e.device), "pool");
    e.transfer = OrDie(rt.transfer(e.device), "transfer");
    e.pinned = OrDie(rt.pinned_pool(e.device.type), "pinned_pool");
    e.name = OrDie(rt.properties(e.device), "properties").name;
    return e;
  }();
  return env;
}

// Reports the share of allocations served from the cache since `before`.
void CacheHitCounter(benchmark::State& state, const MemoryStats& before, const MemoryPool& pool) {
  MemoryStats after = pool.stats();
  int64_t allocs = after.num_allocations - before.num_allocations;
  int64_t hits = after.num_cache_hits - before.num_cache_hits;
  state.counters["cache_hit"] = allocs > 0 ? static_cast<double>(hits) / allocs : 0.0;
}

// ---- the device pool ----

// Allocate + free of one size on one stream; after the first round every request is a hit.
void BM_PoolAllocFree(benchmark::State& state) {
  const Env& env = GetEnv();
  const size_t bytes = static_cast<size_t>(state.range(0));
  { auto warm = env.pool->Allocate(bytes, *env.stream); }
  MemoryStats before = env.pool->stats();
  for (auto _ : state) {
    auto b = env.pool->Allocate(bytes, *env.stream);
    if (!b.ok()) {
      state.SkipWithError(std::string(b.status().message()).c_str());
      break;
    }
    benchmark::DoNotOptimize((*b)->data());
  }
  CacheHitCounter(state, before, *env.pool);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_PoolAllocFree)
    ->Arg(512)
    ->Arg(4 << 10)
    ->Arg(64 << 10)
    ->Arg(1 << 20)
    ->Arg(16 << 20)
    ->Arg(256 << 20);

// Sixteen live buffers of mixed sizes (512 B .. 8 MiB) allocated, then all freed: splitting and
// coalescing on every round. Time per buffer.
void BM_PoolAllocFreeMixed(benchmark::State& state) {
  const Env& env = GetEnv();
  static constexpr size_t kSizes[16] = {512,       3000,    4 << 10, 20000,   64 << 10, 100000,
                                        256 << 10, 700000,  1 << 20, 1500000, 2 << 20,  3000000,
                                        4 << 20,   5000000, 6 << 20, 8 << 20};
  std::vector<std::shared_ptr<Buffer>> live;
  live.reserve(16);
  MemoryStats before = env.pool->stats();
  for (auto _ : state) {
    for (size_t s : kSizes) {
      auto b = env.pool->Allocate(s, *env.stream);
      if (!b.ok()) {
        state.SkipWithError(std::string(b.status().message()).c_str());
        return;
      }
      live.push_back(*std::move(b));
    }
    live.clear();
  }
  CacheHitCounter(state, before, *env.pool);
  state.SetItemsProcessed(state.iterations() * 16);
}
BENCHMARK(BM_PoolAllocFreeMixed);

// Allocate + free of 1 MiB from several threads on the same stream: contention on the pool.
// items_per_second is the aggregate rate over all threads.
void BM_PoolAllocFreeThreads(benchmark::State& state) {
  const Env& env = GetEnv();
  constexpr size_t kBytes = 1 << 20;
  for (auto _ : state) {
    auto b = env.pool->Allocate(kBytes, *env.stream);
    if (!b.ok()) {
      state.SkipWithError(std::string(b.status().message()).c_str());
      break;
    }
    benchmark::DoNotOptimize((*b)->data());
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_PoolAllocFreeThreads)->Threads(1)->Threads(2)->Threads(4)->Threads(8)->UseRealTime();

// The backend's raw allocation (cuMemAlloc / cuMemFree on CUDA, aligned_alloc on the CPU): what
// the pool saves. Only allocators call RawAllocate; this baseline is the exception.
void BM_RawAllocFree(benchmark::State& state) {
  const Env& env = GetEnv();
  const size_t bytes = static_cast<size_t>(state.range(0));
  for (auto _ : state) {
    auto p = env.backend->RawAllocate(env.device.index, bytes);
    if (!p.ok()) {
      state.SkipWithError(std::string(p.status().message()).c_str());
      break;
    }
    benchmark::DoNotOptimize(*p);
    (void)env.backend->RawFree(env.device.index, *p);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_RawAllocFree)->Arg(1 << 20)->Arg(64 << 20);

// ---- the pinned host pool ----

void BM_PinnedAllocFree(benchmark::State& state) {
  const Env& env = GetEnv();
  const size_t bytes = static_cast<size_t>(state.range(0));
  {
    auto warm = env.pinned->Allocate(bytes);
    if (warm.ok()) (void)env.pinned->Free(*warm);
  }
  for (auto _ : state) {
    auto p = env.pinned->Allocate(bytes);
    if (!p.ok()) {
      state.SkipWithError(std::string(p.status().message()).c_str());
      break;
    }
    benchmark::DoNotOptimize(*p);
    (void)env.pinned->Free(*p);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_PinnedAllocFree)->Arg(4 << 10)->Arg(1 << 20)->Arg(64 << 20);

// ---- the transfer engine ----

constexpr size_t kTransferBytes = size_t{64} << 20;

// Host memory of `bytes`: pageable (touched once, so no page faults are timed) or pinned.
class HostBuffer {
 public:
  HostBuffer(size_t bytes, bool pinned) : pinned_(pinned) {
    if (pinned) {
      auto p = GetEnv().pinned->Allocate(bytes);
      ptr_ = p.ok() ? static_cast<char*>(*p) : nullptr;
      if (ptr_ == nullptr) status_ = p.status();
    } else {
      pageable_.assign(bytes, 1);
      ptr_ = pageable_.data();
    }
    if (ptr_ != nullptr) std::memset(ptr_, 1, bytes);
  }
  ~HostBuffer() {
    if (pinned_ && ptr_ != nullptr) (void)GetEnv().pinned->Free(ptr_);
  }
  char* data() const { return ptr_; }
  const absl::Status& status() const { return status_; }

 private:
  bool pinned_;
  std::vector<char> pageable_;
  char* ptr_ = nullptr;
  absl::Status status_;
};

// Blocking host -> device copies of 64 MiB; range(0): 1 = pinned source (direct DMA), 0 =
// pageable (staged through pinned chunks).
void BM_TransferH2D(benchmark::State& state) {
  const Env& env = GetEnv();
  const bool pinned = state.range(0) != 0;
  HostBuffer src(kTransferBytes, pinned);
  auto dst = env.pool->Allocate(kTransferBytes, *env.stream);
  if (src.data() == nullptr || !dst.ok()) {
    state.SkipWithError(!src.status().ok() ? std::string(src.status().message()).c_str()
                                           : std::string(dst.status().message()).c_str());
    return;
  }
  for (auto _ : state) {
    absl::Status s =
        env.transfer->ToDevice((*dst)->data(), src.data(), kTransferBytes, *env.stream, true);
    if (!s.ok()) {
      state.SkipWithError(std::string(s.message()).c_str());
      break;
    }
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kTransferBytes));
  state.SetLabel(pinned ? "pinned (direct DMA)" : "pageable (staged)");
}
BENCHMARK(BM_TransferH2D)->Arg(0)->Arg(1)->UseRealTime()->Unit(benchmark::kMillisecond);

// Blocking device -> host copies of 64 MiB; range(0): 0 = pageable reused destination, 1 =
// pinned destination, 2 = a fresh pageable destination per copy (its first-touch page faults,
// and its allocation and release, are timed: what to_numpy without `out` pays).
void BM_TransferD2H(benchmark::State& state) {
  const Env& env = GetEnv();
  const int mode = static_cast<int>(state.range(0));
  HostBuffer dst(mode == 2 ? 0 : kTransferBytes, mode == 1);
  auto src = env.pool->Allocate(kTransferBytes, *env.stream);
  if ((mode != 2 && dst.data() == nullptr) || !src.ok()) {
    state.SkipWithError(!dst.status().ok() ? std::string(dst.status().message()).c_str()
                                           : std::string(src.status().message()).c_str());
    return;
  }
  for (auto _ : state) {
    std::unique_ptr<char[]> fresh;
    char* out = dst.data();
    if (mode == 2) {
      fresh.reset(new char[kTransferBytes]);  // uninitialized: its pages are not mapped yet
      out = fresh.get();
    }
    absl::Status s = env.transfer->ToHost(out, (*src)->data(), kTransferBytes, *env.stream, true);
    if (!s.ok()) {
      state.SkipWithError(std::string(s.message()).c_str());
      break;
    }
    benchmark::DoNotOptimize(out);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kTransferBytes));
  state.SetLabel(mode == 0   ? "pageable reused (staged)"
                 : mode == 1 ? "pinned (direct DMA)"
                             : "pageable fresh (staged)");
}
BENCHMARK(BM_TransferD2H)->Arg(0)->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace pygpukit

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  const pygpukit::Env& env = pygpukit::GetEnv();
  benchmark::AddCustomContext("pygpukit_device", env.device.ToString());
  benchmark::AddCustomContext("pygpukit_device_name", env.name);
  benchmark::AddCustomContext("pygpukit_version", pygpukit::Version());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

// The GEMM autotuner: on a cache miss, every candidate configuration runs on the caller's
// stream into a scratch output and is timed with events; the fastest is cached, and the
// executor then runs it on the real operands. Timing on the caller's stream (not a private one)
// measures what the caller will get, including the launch overhead of each family's host code.
#include "ops/gemm/cuda/gemm_autotune_cuda.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "ops/gemm/cuda/gemm_cuda.h"
#include "ops/gemm/gemm_accepts.h"
#include "ops/gemm/gemm_kernels.h"
#include "ops/gemm/gemm_tune.h"
#include "runtime/blocking.h"
#include "runtime/runtime.h"

namespace pygpukit::ops::cuda_kernels {
namespace {

// Timed launches per candidate: enough to cover about 1 ms, at least 3 for a meaningful median,
// at most 20 so that tuning large problems stays short.
constexpr int kMinReps = 3, kMaxReps = 20;
constexpr double kTargetUs = 1000.0;
// The scratch output keeps the real output's address modulo this, so that kernels with
// alignment-dependent store paths take the same path while timed.
constexpr uintptr_t kAlignSpan = 256;

absl::Status WaitFor(hal::Backend& b, hal::Event& e) {
  BlockingRegion unlocked;  // no lock is held here; lets other Python threads run meanwhile
  return b.Synchronize(e);
}

// Median time of one launch in microseconds: a warm-up launch (module loading, cuBLASLt's
// heuristic, cold caches), a timed one to size the run, then back-to-back timed launches.
absl::StatusOr<double> TimeLaunches(hal::Backend& b, hal::Stream& s,
                                    const std::vector<std::unique_ptr<hal::Event>>& ev,
                                    const std::function<absl::Status()>& launch) {
  PGK_RETURN_IF_ERROR(launch());
  PGK_RETURN_IF_ERROR(b.Record(*ev[0], s));
  PGK_RETURN_IF_ERROR(launch());
  PGK_RETURN_IF_ERROR(b.Record(*ev[1], s));
  PGK_RETURN_IF_ERROR(WaitFor(b, *ev[1]));
  PGK_ASSIGN_OR_RETURN(float first_ms, b.ElapsedMs(*ev[0], *ev[1]));
  std::vector<double> us{std::max(1e3 * first_ms, 1e-3)};
  const int reps = std::clamp(static_cast<int>(std::ceil(kTargetUs / us[0])), kMinReps, kMaxReps);
  // The stream went idle during the wait: queue an untimed launch before the first timed
  // interval starts, so that no interval includes the host's wake-up and launch latency.
  PGK_RETURN_IF_ERROR(launch());
  PGK_RETURN_IF_ERROR(b.Record(*ev[1], s));
  for (int i = 1; i < reps; ++i) {
    PGK_RETURN_IF_ERROR(launch());
    PGK_RETURN_IF_ERROR(b.Record(*ev[i + 1], s));
  }
  PGK_RETURN_IF_ERROR(WaitFor(b, *ev[reps]));
  for (int i = 1; i < reps; ++i) {
    PGK_ASSIGN_OR_RETURN(float ms, b.ElapsedMs(*ev[i], *ev[i + 1]));
    us.push_back(1e3 * ms);
  }
  std::nth_element(us.begin(), us.begin() + us.size() / 2, us.end());
  return us[us.size() / 2];
}

// The fastest candidate for `p`, timed into a scratch output (the real one may alias C, and
// must not see the losers' results).
absl::StatusOr<TuneEntry> Tune(LaunchContext& ctx, const GemmProblem& p,
                               const std::vector<GemmChoice>& candidates) {
  Runtime& rt = Runtime::Get();
  hal::Stream& s = ctx.stream();
  const Device device = ctx.device();
  PGK_ASSIGN_OR_RETURN(MemoryPool * pool, rt.pool(device));
  PGK_ASSIGN_OR_RETURN(hal::Backend * backend, rt.backend(DeviceType::kCUDA));
  const int64_t plane = p.m * p.n;
  const size_t bytes = static_cast<size_t>(p.batch * plane * ItemSize(p.out)) + kAlignSpan;
  // Charged like any temporary of the op (it is as large as the output): a tenant's quota
  // bounds it, and a refusal means the problem is not tuned.
  PGK_ASSIGN_OR_RETURN(std::shared_ptr<Buffer> scratch, pool->Allocate(bytes, s));
  GemmProblem tp = p;
  tp.d = static_cast<char*>(scratch->data()) + reinterpret_cast<uintptr_t>(p.d) % kAlignSpan;
  tp.d_batch = plane;
  tp.d_row = p.n;
  std::vector<std::unique_ptr<hal::Event>> events;
  for (int i = 0; i <= kMaxReps; ++i) {
    PGK_ASSIGN_OR_RETURN(std::unique_ptr<hal::Event> e, backend->CreateEvent(device.index, true));
    events.push_back(std::move(e));
  }
  std::optional<TuneEntry> best;
  for (const GemmChoice& c : candidates) {
    absl::StatusOr<double> us =
        TimeLaunches(*backend, s, events, [&] { return GemmProductCuda(ctx, tp, c); });
    if (!us.ok()) continue;  // the candidate declined the problem (or failed): not a choice
    if (!best.has_value() || *us < best->us) best = TuneEntry{c, *us};
  }
  if (!best.has_value()) {
    return NotImplementedError("matmul: no autotuning candidate served the problem");
  }
  return *best;
}

}  // namespace

std::vector<GemmChoice> TuneCandidates(const GemmProblem& p, const GemmTarget& t,
                                       const hal::DeviceProperties& props) {
  std::vector<GemmChoice> c;
  const bool half = p.in == DType::BFloat16 || p.in == DType::Float16;
  if (GemmAccepts(GemmFamily::kSm90, p, t).ok()) {
    c.push_back({GemmFamily::kSm90, 128, 1});
    c.push_back({GemmFamily::kSm90, 256, 1});
    if (props.multiprocessors >= 2) c.push_back({GemmFamily::kSm90, 256, 2});
  }
  if (props.sm_major >= 8 && (half || p.tf32())) c.push_back({GemmFamily::kSm80, 0, 0});
  // simt computes true FP32 whatever the precision says; it competes only where exact FP32 is
  // asked for.
  if (((p.in == DType::Float32 && !p.tf32()) || p.in == DType::Float64) && p.out == p.in) {
    c.push_back({GemmFamily::kSimt, 0, 0});
  }
  if (GemmAccepts(GemmFamily::kCublasLt, p, t).ok()) c.push_back({GemmFamily::kCublasLt, 0, 0});
  return c;
}

namespace {

// The tuned choice for `p` (kGemmTuned): the cache's, or the fastest candidate timed now. None
// when there is nothing to choose (fewer than two candidates), no candidate served the problem
// or scratch memory was short; cache and timing failures never surface.
absl::StatusOr<std::optional<GemmChoice>> GemmTunedCuda(LaunchContext& ctx, const GemmProblem& p,
                                                        const GemmTarget& t) {
  PGK_ASSIGN_OR_RETURN(hal::DeviceProperties props, Runtime::Get().properties(ctx.device()));
  const std::vector<GemmChoice> candidates = TuneCandidates(p, t, props);
  if (candidates.size() < 2) return std::nullopt;
  absl::StatusOr<GemmTuneCache*> cache = GemmTuneCacheFor(ctx.device());
  if (!cache.ok()) return std::nullopt;
  const std::string key = TuneKeyText(TuneKeyOf(p));
  if (std::optional<TuneEntry> hit = (*cache)->Lookup(key)) return hit->choice;
  if ((*cache)->Untunable(key)) return std::nullopt;
  // Two threads missing the same key both tune it; the cache keeps the later result, and each
  // thread runs its own winner (both correct).
  absl::StatusOr<TuneEntry> best = Tune(ctx, p, candidates);
  if (!best.ok()) {
    // No scratch memory, or no candidate served it: the rules serve this key from now on,
    // instead of paying for a scratch allocation and every candidate on each call.
    (*cache)->MarkUntunable(key);
    return std::nullopt;
  }
  {
    BlockingRegion unlocked;  // file I/O: other Python threads run meanwhile (no lock held)
    (*cache)->Store(key, *best);
  }
  return best->choice;
}

}  // namespace

PGK_REGISTER_KERNEL(kGemmTuned, kCuda, GemmTunedCuda);

}  // namespace pygpukit::ops::cuda_kernels

// The GEMM autotuner: on a cache miss, every candidate configuration runs on the caller's
// stream into a scratch output and is timed with events; the fastest is cached and then runs on
// the real operands. Timing on the caller's stream (not a private one) measures what the caller
// will get, including the launch overhead of each family's host code.
#include "ops/cuda/gemm_autotune.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "ops/gemm_tune.h"
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
absl::StatusOr<TuneEntry> Tune(hal::Stream& s, const MatmulProblem& p, const GemmLaunch& g,
                               Device device, const std::vector<TuneChoice>& candidates) {
  Runtime& rt = Runtime::Get();
  PGK_ASSIGN_OR_RETURN(MemoryPool * pool, rt.pool(device));
  PGK_ASSIGN_OR_RETURN(hal::Backend * backend, rt.backend(DeviceType::kCUDA));
  const int64_t plane = p.m * p.n;
  const size_t bytes = static_cast<size_t>(p.batch * plane * ItemSize(p.epilogue.out)) + kAlignSpan;
  // Charged like any temporary of the op (it is as large as the output): a tenant's quota
  // bounds it, and a refusal means the problem is not tuned.
  PGK_ASSIGN_OR_RETURN(std::shared_ptr<Buffer> scratch, pool->Allocate(bytes, s));
  void* d = static_cast<char*>(scratch->data()) + reinterpret_cast<uintptr_t>(p.c) % kAlignSpan;
  MatmulProblem tp = p;
  tp.c = d;
  tp.c_batch = plane;
  tp.c_row = p.n;
  tp.c_col = 1;
  GemmLaunch tg = g;
  tg.params.d = d;
  tg.params.d_batch = tp.c_batch;
  tg.params.d_row = tp.c_row;
  std::vector<std::unique_ptr<hal::Event>> events;
  for (int i = 0; i <= kMaxReps; ++i) {
    PGK_ASSIGN_OR_RETURN(std::unique_ptr<hal::Event> e, backend->CreateEvent(device.index, true));
    events.push_back(std::move(e));
  }
  std::optional<TuneEntry> best;
  for (const TuneChoice& c : candidates) {
    absl::StatusOr<double> us =
        TimeLaunches(*backend, s, events, [&] { return LaunchTuneChoice(s, tp, tg, c, device); });
    if (!us.ok()) continue;  // the candidate declined the problem (or failed): not a choice
    if (!best.has_value() || *us < best->us) best = TuneEntry{c, *us};
  }
  if (!best.has_value()) {
    return NotImplementedError("matmul: no autotuning candidate served the problem");
  }
  return *best;
}

// True when `choice` ran on `p`; false when it declined the problem.
absl::StatusOr<bool> RunChoice(hal::Stream& s, const MatmulProblem& p, const GemmLaunch& g,
                               const TuneChoice& choice, Device device) {
  absl::Status st = LaunchTuneChoice(s, p, g, choice, device);
  if (st.ok()) return true;
  if (absl::IsUnimplemented(st)) return false;
  return st;
}

}  // namespace

TuneKey TuneKeyOf(const MatmulProblem& p, const GemmLaunch& g) {
  const MatmulEpilogue& e = p.epilogue;
  TuneKey k;
  k.in = p.dtype;
  k.out = e.out;
  k.tf32 = g.tf32;
  k.m = p.m;
  k.n = p.n;
  k.k = p.k;
  k.batch = p.batch;
  k.a = TuneLayoutOfA(p.a_row, p.a_col);
  k.b = TuneLayoutOfB(p.b_row, p.b_col);
  k.fused = !e.trivial() || e.out != p.dtype;
  const int in = ItemSize(p.dtype), out = ItemSize(e.out);
  k.aligned16 = Rows16Aligned(p.a, in, {p.a_batch, p.a_row, p.a_col}) &&
                Rows16Aligned(p.b, in, {p.b_batch, p.b_row, p.b_col}) &&
                Rows16Aligned(p.c, out, {p.c_batch, p.c_row, p.c_col}) &&
                (e.addend == nullptr ||
                 Rows16Aligned(e.addend, out, {e.addend_batch, e.addend_row, e.addend_col})) &&
                (e.bias == nullptr || Rows16Aligned(e.bias, out, {e.bias_batch}));
  return k;
}

std::vector<TuneChoice> TuneCandidates(const MatmulProblem& p, const GemmLaunch& g,
                                       const hal::DeviceProperties& props) {
  std::vector<TuneChoice> c;
  const bool half = g.in == DType::BFloat16 || g.in == DType::Float16;
  if (props.sm_major == 9 && Sm90KernelsBuilt() && Sm90Accepts(g)) {
    c.push_back({GemmFamily::kSm90, 128, 1});
    c.push_back({GemmFamily::kSm90, 256, 1});
    if (props.multiprocessors >= 2) c.push_back({GemmFamily::kSm90, 256, 2});
  }
  if (props.sm_major >= 8 && (half || (g.in == DType::Float32 && g.tf32))) {
    c.push_back({GemmFamily::kSm80, 0, 0});
  }
  // simt computes true FP32 whatever tf32 says; it competes only where exact FP32 is asked for.
  if (((g.in == DType::Float32 && !g.tf32) || g.in == DType::Float64) && g.out == g.in) {
    c.push_back({GemmFamily::kSimt, 0, 0});
  }
  if (p.epilogue.trivial()) c.push_back({GemmFamily::kCublasLt, 0, 0});
  return c;
}

absl::Status LaunchTuneChoice(hal::Stream& s, const MatmulProblem& p, const GemmLaunch& g,
                              const TuneChoice& choice, Device device) {
  switch (choice.family) {
    case GemmFamily::kSm90: {
      GemmLaunch l = g;
      l.sm90_bn = choice.sm90_bn;
      l.sm90_cluster = choice.sm90_cluster;
      return GemmSm90(s, l);
    }
    case GemmFamily::kSm80:
      return GemmSm80(s, g);
    case GemmFamily::kSimt:
      return GemmSimt(s, g);
    case GemmFamily::kCublasLt:
      return MatmulCublasLt(s, p, device);
  }
  return NotImplementedError(absl::StrCat("matmul: unknown tuned choice ", TuneChoiceText(choice)));
}

absl::StatusOr<bool> MatmulAutotuned(hal::Stream& s, const MatmulProblem& p, const GemmLaunch& g,
                                     Device device, const hal::DeviceProperties& props) {
  const std::vector<TuneChoice> candidates = TuneCandidates(p, g, props);
  if (candidates.size() < 2) return false;
  absl::StatusOr<GemmTuneCache*> cache = GemmTuneCacheFor(device);
  if (!cache.ok()) return false;
  const std::string key = TuneKeyText(TuneKeyOf(p, g));
  if (std::optional<TuneEntry> hit = (*cache)->Lookup(key)) {
    return RunChoice(s, p, g, hit->choice, device);
  }
  if ((*cache)->Untunable(key)) return false;
  // Two threads missing the same key both tune it; the cache keeps the later result, and each
  // thread runs its own winner (both correct).
  absl::StatusOr<TuneEntry> best = Tune(s, p, g, device, candidates);
  if (!best.ok()) {
    // No scratch memory, or no candidate served it: the rules serve this key from now on,
    // instead of paying for a scratch allocation and every candidate on each call.
    (*cache)->MarkUntunable(key);
    return false;
  }
  {
    BlockingRegion unlocked;  // file I/O: other Python threads run meanwhile (no lock held)
    (*cache)->Store(key, *best);
  }
  return RunChoice(s, p, g, best->choice, device);
}

}  // namespace pygpukit::ops::cuda_kernels

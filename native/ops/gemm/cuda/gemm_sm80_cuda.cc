// Host side of the SM80 tensor-core GEMM family (gemm_sm80.cu): takes the operands as
// ops/gemm/gemm_accepts.h normalizes them (its rules refuse what the kernels cannot serve),
// picks the tile, fills the tile counts and launches.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "ops/gemm/cuda/gemm_cuda.h"
#include "ops/gemm/gemm_accepts.h"
#include "runtime/runtime.h"

namespace pygpukit::ops::cuda_kernels {
namespace {

// Mirrors TileLarge / TileSmall of gemm_sm80.cu; the kernels trap when launched with less
// dynamic shared memory than they need, so a drift here fails loudly.
struct Sm80Tile {
  const char* name;
  int64_t bm, bn;
  unsigned threads;
  int stages;
};
constexpr Sm80Tile kLargeTile{"128x128", 128, 128, 256, 4};
constexpr Sm80Tile kSmallTile{"64x64", 64, 64, 128, 4};

// Every pipeline stage is 64-byte rows: BM rows of A and BN rows of B^T ("tn") or BK rows of
// BN elements of B ("tt", BK = 64 bytes / itemsize). The epilogue then reuses the same memory
// for the float accumulator tile, whose rows are padded by 8 floats.
unsigned SharedBytes(const Sm80Tile& t) {
  const int64_t pipeline = t.stages * 64 * (t.bm + t.bn);
  const int64_t accumulators = t.bm * (t.bn + 8) * 4;
  return static_cast<unsigned>(std::max(pipeline, accumulators));
}

constexpr int32_t kGroupM = 8;        // tile rows walked together (L2 reuse of B)
constexpr int64_t kMaxGridY = 65535;  // the kernels stride over further batches
constexpr int kFallbackSms = 132;     // if the device properties are unavailable

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

std::string Shape(const kernels::GemmParams& p) {
  return absl::StrCat("(batch ", p.batch, ", m ", p.m, ", n ", p.n, ", k ", p.k, ")");
}

}  // namespace

absl::Status GemmSm80(LaunchContext& ctx, const GemmProblem& g) {
  hal::Stream& s = ctx.stream();
  PGK_ASSIGN_OR_RETURN(Sm80Operands ops, Sm80Normalize(g));
  kernels::GemmParams p = ops.params;
  const char* layout = ops.layout;
  if (p.m <= 0 || p.n <= 0 || p.batch <= 0) return absl::OkStatus();  // empty output

  int sms = kFallbackSms;
  if (auto props = Runtime::Get().properties(s.device()); props.ok()) sms = StreamSms(s, *props);

  // The large tile needs about one CTA per SM to pay off (3/4 of the SMs busy); skinny problems
  // would leave half of each large tile empty.
  const int64_t grid_batches = std::min(p.batch, kMaxGridY);
  const int64_t large_ctas =
      CeilDiv(p.m, kLargeTile.bm) * CeilDiv(p.n, kLargeTile.bn) * grid_batches;
  const bool small = p.m <= kSmallTile.bm || p.n <= kSmallTile.bn || large_ctas * 4 < sms * 3;
  const Sm80Tile& t = small ? kSmallTile : kLargeTile;

  const int64_t tiles_m = CeilDiv(p.m, t.bm), tiles_n = CeilDiv(p.n, t.bn);
  if (tiles_m * tiles_n > std::numeric_limits<int32_t>::max()) {  // grid.x limit, 32-bit math
    return NotImplementedError(
        absl::StrCat("matmul: sm80 kernels need fewer than 2^31 output tiles; got ", Shape(p)));
  }
  p.tiles_m = static_cast<int32_t>(tiles_m);
  p.tiles_n = static_cast<int32_t>(tiles_n);
  p.group_m = static_cast<int32_t>(std::min<int64_t>(kGroupM, tiles_m));

  hal::LaunchDims dims;
  dims.grid[0] = static_cast<unsigned>(tiles_m * tiles_n);
  dims.grid[1] = static_cast<unsigned>(grid_batches);
  dims.block[0] = t.threads;
  dims.shared_bytes = SharedBytes(t);
  const std::string kernel = absl::StrCat("pgk_gemm_sm80_", t.name, "_", layout, "_",
                                          DTypeCode(g.in), "_", DTypeCode(g.out));
  void* args[] = {&p};
  return ctx.Kernel(kernel, dims, args, GemmCost(g));
}

}  // namespace pygpukit::ops::cuda_kernels

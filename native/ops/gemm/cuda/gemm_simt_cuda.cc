// Host side of the CUDA-core (SIMT) GEMM family for exact float32 and float64 (kernels in
// gemm_simt.cu): picks the tile configuration by problem size and each operand's load pattern by
// its strides, fills the tile counts of the parameter block and launches through the dispatcher.
// The kernels are correct for any strides; the choices here only decide how fast they run.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "ops/gemm/cuda/gemm_cuda.h"
#include "runtime/runtime.h"

namespace pygpukit::ops::cuda_kernels {
namespace {

// One tile configuration of gemm_simt.cu. These must match its TileConfig instances (block
// tile and thread count); the kernels size their shared memory statically, so no byte count is
// passed.
struct SimtTile {
  const char* name;  // symbol part
  int64_t bm, bn;
  unsigned threads;
  int64_t min_blocks_per_sm;  // large tiles: resident blocks per SM a full wave needs (Pick)
};

// float32: 128 x 128 (256 threads, 8 x 8 per thread, two blocks per SM) for large problems,
// 64 x 64 (128 threads, 8 x 4) when the big tiles would leave SMs idle.
constexpr SimtTile kF4Large{"128x128", 128, 128, 256, 2};
constexpr SimtTile kF4Small{"64x64", 64, 64, 128, 0};
// float64: 64 x 64 (64 threads, 8 x 8 doubles, about four blocks per SM by registers), else
// 32 x 32 (64 threads, 4 x 4).
constexpr SimtTile kF8Large{"64x64", 64, 64, 64, 4};
constexpr SimtTile kF8Small{"32x32", 32, 32, 64, 0};

constexpr int64_t kMaxGridX = std::numeric_limits<int32_t>::max();  // 2^31 - 1
constexpr int64_t kMaxGridYZ = 65535;
constexpr int64_t kGroupM = 8;  // tile rows walked together (L2 reuse), see LocateTile

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The large tile once it yields about one full wave (7/8 of its blocks-per-SM slots filled):
// below that the big tiles leave SMs idle and the small tile's extra parallelism wins.
const SimtTile& Pick(const SimtTile& large, const SimtTile& small, const kernels::GemmParams& p,
                     int sms) {
  const int64_t blocks = CeilDiv(p.m, large.bm) * CeilDiv(p.n, large.bn) * p.batch;
  return blocks * 8 >= int64_t{sms} * large.min_blocks_per_sm * 7 ? large : small;
}

// Load pattern of an operand with element strides (row, col) and extent rows x cols: 'r' when
// its column stride is the unit one, 'c' when its row stride is. The kernel vectorizes along
// the chosen direction when that stride is 1 and alignment allows, else falls back to scalar
// loads with full strides, so for other layouts this only picks the closer-to-contiguous walk.
char LoadPattern(int64_t row, int64_t col, int64_t rows, int64_t cols) {
  if (col == 1 && row == 1) return rows <= cols ? 'r' : 'c';  // a vector: walk its length
  if (col == 1) return 'r';
  if (row == 1) return 'c';
  return std::llabs(col) <= std::llabs(row) ? 'r' : 'c';
}

}  // namespace

absl::Status GemmSimt(LaunchContext& ctx, const GemmProblem& g) {
  hal::Stream& s = ctx.stream();
  // float32 runs as true FP32 here whatever the precision says: the caller picked this family
  // (whose dtype rules ops/gemm/gemm_accepts.h checks).
  kernels::GemmParams p = ParamsOf(g);
  if (p.m == 0 || p.n == 0 || p.batch == 0) return absl::OkStatus();

  PGK_ASSIGN_OR_RETURN(hal::DeviceProperties props, Runtime::Get().properties(s.device()));
  const int sms = StreamSms(s, props);
  const SimtTile& tile =
      g.in == DType::Float32 ? Pick(kF4Large, kF4Small, p, sms) : Pick(kF8Large, kF8Small, p, sms);

  const int64_t tiles_m = CeilDiv(p.m, tile.bm), tiles_n = CeilDiv(p.n, tile.bn);
  // The kernel walks k with 32-bit slice counters and the tiles of one matrix with one 32-bit
  // grid index; batches go over grid y and z.
  if (p.k > std::numeric_limits<int32_t>::max() || tiles_m > kMaxGridX / tiles_n ||
      p.batch > kMaxGridYZ * kMaxGridYZ) {
    return NotImplementedError(absl::StrCat("matmul: GEMM of m=", p.m, " n=", p.n, " k=", p.k,
                                            " batch=", p.batch,
                                            " exceeds the CUDA-core kernels' launch limits"));
  }
  p.tiles_m = static_cast<int32_t>(tiles_m);
  p.tiles_n = static_cast<int32_t>(tiles_n);
  p.group_m = static_cast<int32_t>(std::min(kGroupM, tiles_m));

  hal::LaunchDims dims;
  dims.block[0] = tile.threads;
  dims.grid[0] = static_cast<unsigned>(tiles_m * tiles_n);
  dims.grid[1] = static_cast<unsigned>(std::min(p.batch, kMaxGridYZ));
  dims.grid[2] = static_cast<unsigned>(CeilDiv(p.batch, dims.grid[1]));  // blocks past batch exit

  const char a_pattern = LoadPattern(p.a_row, p.a_col, p.m, p.k);
  const char b_pattern = LoadPattern(p.b_row, p.b_col, p.k, p.n);
  const std::string kernel = absl::StrCat("pgk_gemm_simt_", tile.name, "_",
                                          std::string{a_pattern, b_pattern}, "_", DTypeCode(g.in));
  void* args[] = {&p};
  return ctx.Kernel(kernel, dims, args, GemmCost(g));
}

}  // namespace pygpukit::ops::cuda_kernels

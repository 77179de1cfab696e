// Host side of the SM80 tensor-core GEMM family (gemm_sm80.cu): checks the kernels'
// preconditions, normalizes the strides of size-1 dimensions, picks the tile, fills the tile
// counts and launches through the dispatcher. Problems outside the preconditions get
// NotImplementedError, so the caller can copy operands into a supported layout or pick another
// family.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "ops/cuda/gemm_cuda.h"
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

bool Aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

std::string Shape(const kernels::GemmParams& p) {
  return absl::StrCat("(batch ", p.batch, ", m ", p.m, ", n ", p.n, ", k ", p.k, ")");
}

}  // namespace

absl::Status GemmSm80(hal::Stream& s, const GemmLaunch& g) {
  const bool half = g.in == DType::Float16 || g.in == DType::BFloat16;
  if (!half && !(g.in == DType::Float32 && g.tf32)) {
    return NotImplementedError(absl::StrCat(
        "matmul: sm80 kernels need float16 or bfloat16 inputs, or float32 with tf32 allowed; got ",
        DTypeName(g.in), g.in == DType::Float32 ? " without tf32" : ""));
  }
  if (g.out != g.in && !(half && g.out == DType::Float32)) {
    return NotImplementedError(absl::StrCat("matmul: sm80 kernels need the output dtype to be ",
                                            DTypeName(g.in), half ? " or float32" : "", "; got ",
                                            DTypeName(g.out)));
  }
  kernels::GemmParams p = g.params;
  if (p.m <= 0 || p.n <= 0 || p.batch <= 0) return absl::OkStatus();  // empty output
  if (p.k < 0 || p.k > std::numeric_limits<int32_t>::max()) {
    return NotImplementedError(
        absl::StrCat("matmul: sm80 kernels need 0 <= k < 2^31; got ", Shape(p)));
  }

  // A stride multiplies only index 0 of a size-1 dimension, so it can be anything there; zero
  // (or one for the unit-stride side) lets such operands pass the checks below.
  if (p.batch == 1) p.a_batch = p.b_batch = p.c_batch = p.d_batch = p.bias_batch = 0;
  if (p.m == 1) p.a_row = 0;
  if (p.k <= 1) p.a_col = 1;
  if (p.a_col != 1) {
    return NotImplementedError(
        absl::StrCat("matmul: sm80 kernels need a row-major A (unit column stride); got strides (",
                     p.a_row, ", ", p.a_col, ")"));
  }

  // Each cp.async moves 16 bytes, so bases, leading strides and batch strides must keep every
  // row start 16-byte aligned.
  const int64_t elems = 16 / ItemSize(g.in);
  auto multiple = [elems](int64_t stride) { return stride % elems == 0; };
  if (!Aligned16(p.a) || !Aligned16(p.b) || !multiple(p.a_row) || !multiple(p.a_batch) ||
      !multiple(p.b_batch)) {
    return NotImplementedError(absl::StrCat(
        "matmul: sm80 kernels need 16-byte aligned A and B with row and batch strides that are "
        "multiples of ",
        elems, " elements; got A strides (", p.a_batch, ", ", p.a_row, ", ", p.a_col,
        "), B strides (", p.b_batch, ", ", p.b_row, ", ", p.b_col, ")"));
  }
  // "tn": B^T row-major (unit K stride), leading stride b_col; "tt": B row-major, leading b_row.
  const int64_t tn_ld = p.n == 1 ? 0 : p.b_col;
  const int64_t tt_ld = p.k <= 1 ? 0 : p.b_row;
  const char* layout;
  if ((p.b_row == 1 || p.k <= 1) && multiple(tn_ld)) {
    layout = "tn";
    p.b_row = 1;
    p.b_col = tn_ld;
  } else if ((p.b_col == 1 || p.n == 1) && multiple(tt_ld)) {
    layout = "tt";
    p.b_row = tt_ld;
    p.b_col = 1;
  } else {
    return NotImplementedError(absl::StrCat(
        "matmul: sm80 kernels need B with a unit stride along k or n and the other stride a "
        "multiple of ",
        elems, " elements; got B strides (", p.b_row, ", ", p.b_col, ")"));
  }

  int sms = kFallbackSms;
  if (auto props = Runtime::Get().properties(s.device()); props.ok()) {
    if (props->sm_major < 8) {
      return NotImplementedError(
          absl::StrCat("matmul: sm80 kernels need compute capability 8.0 or newer; device has ",
                       props->sm_major, ".", props->sm_minor));
    }
    sms = StreamSms(s, *props);
  }

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
  return Runtime::Get().dispatcher().LaunchDevice(s, kernel, dims, args, g.cost);
}

}  // namespace pygpukit::ops::cuda_kernels

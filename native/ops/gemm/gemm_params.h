// Parameter block of the GEMM kernel families (SM90 wgmma, SM80 mma.sync, SIMT) and the CPU
// loop, shared by the host launchers (g++) and nvcc: a plain struct passed by value. It
// describes D = act(alpha * (A @ B) + beta * C + bias) for every batch index.
#pragma once

#include <cstdint>

#include "core/scalar_types.h"

namespace pygpukit::kernels {

/// Activation applied last in the GEMM epilogue.
enum GemmActivation : int32_t {
  kActNone = 0,
  kActRelu = 1,
  kActGelu = 2,  // exact erf form
  kActSilu = 3,
  kActGeluTanh = 4,  // tanh approximation (torch's approximate="tanh", cuBLASLt's GELU)
};

/// How a float32 scale of an 8-bit float operand covers it in GemmParams (scaled products on
/// the sm90 kernels): none, one value, one per row of A / column of B.
enum GemmScaleKind : int32_t { kScaleNone = 0, kScaleTensor = 1, kScaleOuter = 2 };

/// One (strided-batched) GEMM. Element (b, i, j) of an operand X lives at
/// x + b * x_batch + i * x_row + j * x_col (element strides; a zero batch stride broadcasts).
/// A is m x k and B is k x n in the input dtype; D (m x n, unit column stride), C and bias are
/// in the output dtype. Accumulation is float32 (float64 for float64 inputs).
struct GemmParams {
  int64_t m, n, k, batch;
  const void* a;
  int64_t a_batch, a_row, a_col;
  const void* b;
  int64_t b_batch, b_row, b_col;
  void* d;
  int64_t d_batch, d_row;
  const void* c;  // read only when beta != 0
  int64_t c_batch, c_row, c_col;
  const void* bias;  // length n per batch, or null
  int64_t bias_batch;
  double alpha, beta;
  int32_t activation;        // GemmActivation
  int32_t tiles_m, tiles_n;  // output tiles per matrix, filled by the host for tiled kernels
  int32_t group_m;           // rows of tiles walked together by persistent tile orders
  // Split-K (sm90): the first `dp_tiles` tiles (in tile order) run whole; the K of each later
  // tile is cut into `splits` ranges of `split_kblocks` k-blocks, run by different CTAs. Each
  // writes its float32 partial sums to `partials`; the last to arrive at the tile's counter
  // (`counters`, zeroed before the launch) adds them in split order and runs the epilogue.
  // splits <= 1: no split, dp_tiles and the two pointers unused.
  int32_t splits, split_kblocks;
  int64_t dp_tiles;
  float* partials;
  int32_t* counters;
  // Preemption (the sm90 "_p" kernels, whole tiles without clusters; null elsewhere): while
  // `*preempt` (device memory the host writes through the stream, PreemptSignal) is nonzero,
  // each CTA stops at its next k-block, saves its accumulators and its place to
  // `preempt_state` (PreemptStateBytes) and sets `*preempted` (host memory); a launch with
  // `resume` = 1 continues from there and adds the saved float32 sums at the end, so only
  // float32 rounding depends on where it stopped. A null `preempt` is never set.
  const uint32_t* preempt;
  uint32_t* preempted;
  uint8_t* preempt_state;
  int32_t resume;
  // Grouped products (sm90, GroupedTable): `groups` > 0 row groups of A and D, each against
  // its own B (B's batch index) and bias (bias_batch apart); tiles_m counts the tile rows of
  // every group together. 0: not grouped, group_table unused.
  int32_t groups;
  const int64_t* group_table;
  // Scaled (8-bit float) products on the sm90 kernels: the product of element (i, j) is
  // multiplied by scale_a[i or 0] * scale_b[j or 0] (GemmScaleKind) before the rest of the
  // epilogue. kScaleNone: no scale, pointer unused.
  const float* scale_a;
  const float* scale_b;
  int32_t scale_kind_a, scale_kind_b;
};

static_assert(sizeof(GemmParams) == 296, "GemmParams layout changed");

/// The device table of a grouped product with `groups` groups: entry g (0 <= g <= groups) is
/// the first 128-row tile row of group g (the last entry: all of them), entry groups + 1 + g the
/// group's first row of A and D (the last entry: the rows of A). Group g owns rows
/// [row(g), row(g + 1)) and tile rows [tile(g), tile(g + 1)).
PGK_HD constexpr int64_t GroupedTableSize(int64_t groups) { return 2 * (groups + 1); }

/// Bytes of GemmParams::preempt_state for a grid of `ctas` CTAs with tiles `bn` wide: a 16-byte
/// record per CTA (the unit it stopped in, its k-block, whether it holds partial sums), then the
/// accumulators of both consumer warpgroups (bn / 2 floats for each of 256 threads).
PGK_HD constexpr int64_t PreemptRecordBytes(int64_t ctas) { return (ctas * 16 + 255) / 256 * 256; }
PGK_HD constexpr int64_t PreemptStateBytes(int64_t ctas, int bn) {
  return PreemptRecordBytes(ctas) + ctas * 256 * (bn / 2) * 4;
}

}  // namespace pygpukit::kernels

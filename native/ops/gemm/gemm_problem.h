// The one description of a GEMM, from the op down to the kernel launchers:
// D = act(alpha * A @ B + beta * C + bias), batched, over element strides. The op layer
// (gemm_op.cc) builds it from pinned arrays; the planner, the tuner, the tune cache and every
// family's launcher read it; launchers turn it into the kernels' parameter block (ParamsOf).
#pragma once

#include <cstdint>
#include <optional>

#include "core/dtype.h"
#include "ops/gemm/gemm_params.h"
#include "ops/gemm/gemm_tune_cache.h"
#include "ops/ops.h"
#include "runtime/trace/tracer.h"

namespace pygpukit::ops {

/// A matrix operand: element (b, i, j) lives at ptr + b * batch + i * row + j * col (element
/// strides; batch 0 shares one matrix across the batch).
struct GemmOperand {
  const void* ptr = nullptr;
  int64_t batch = 0, row = 0, col = 0;
};

/// How a scale of a scaled product covers its operand: one value for the whole operand, one
/// per row of A / column of B (kOuter), one per 128 elements along K of each row of A / column
/// of B (kBlocks1x128), one per 128x128 block (kBlocks128x128).
enum class GemmScaleMode : uint8_t { kTensor, kOuter, kBlocks1x128, kBlocks128x128 };

/// The float32 scale of one operand of a scaled (8-bit float) product, in the layout cuBLASLt
/// reads (ops/gemm/scaled_matmul_op.cc lays it out).
struct GemmScale {
  const float* ptr = nullptr;
  GemmScaleMode mode = GemmScaleMode::kTensor;
};

/// One (batched) product. A and B have dtype `in` (B `in_b` when set); D, C and the bias have
/// dtype `out`.
struct GemmProblem {
  DType in = DType::Float32, out = DType::Float32;
  std::optional<DType> in_b;   // scaled products: the 8-bit floats may mix
  GemmScale scale_a, scale_b;  // scaled products: A @ B scaled as they say (ptrs set)
  MatmulOptions options;       // precision (TF32 for float32) and the kernel family asked for
  int64_t batch = 1, m = 0, n = 0, k = 0;
  GemmOperand a, b;
  void* d = nullptr;  // the output, unit column stride
  int64_t d_batch = 0, d_row = 0;
  GemmOperand c;               // the addend; ptr is null unless beta != 0
  const void* bias = nullptr;  // n values per batch (bias_batch apart), or null
  int64_t bias_batch = 0;
  double alpha = 1.0, beta = 0.0;
  kernels::GemmActivation act = kernels::kActNone;
  // Grouped (GroupedMatmul on the sm90 kernels): `groups` row groups of A, D and C, group g
  // against B's matrix g (b.batch apart) and bias g (bias_batch apart); batch is 1.
  // `group_table` is the device table (kernels::GroupedTableSize), `group_tiles_m` its tile-row
  // total. Only the sm90 family accepts grouped problems.
  int64_t groups = 0, group_tiles_m = 0;
  const int64_t* group_table = nullptr;

  /// B's dtype.
  DType b_dtype() const { return in_b.value_or(in); }
  /// A scaled product of 8-bit floats (scaled_matmul).
  bool scaled() const { return scale_a.ptr != nullptr; }
  /// float32 inputs may run as TF32 on tensor cores.
  bool tf32() const { return in == DType::Float32 && options.precision == MatmulPrecision::kTF32; }
  /// The epilogue only stores the product (alpha 1, no addend, bias or activation).
  bool plain() const {
    return alpha == 1.0 && beta == 0.0 && bias == nullptr && act == kernels::kActNone;
  }
  /// One launch over several row groups, each with its own B.
  bool grouped() const { return groups > 0; }
  /// Anything beyond storing the product in the inputs' dtype: what a family must fuse.
  bool fused() const { return !plain() || out != in; }
};

/// The kernels' parameter block of `p` (tile fields left zero).
kernels::GemmParams ParamsOf(const GemmProblem& p);
/// 2 m n k FLOPs per batch; A, B, D (and C, the bias) moved once.
LaunchCost GemmCost(const GemmProblem& p);
/// The unfused epilogue pass over a product of dtype `src`: D written, the product, C and the
/// bias read.
LaunchCost GemmEpilogueCost(const GemmProblem& p, DType src);
/// The tune key of `p` (selection and the tune cache see the same description).
TuneKey TuneKeyOf(const GemmProblem& p);
/// Rows [r0, r0 + rows) of `p`: A, D, C and a per-row scale of A offset, B and the bias shared.
GemmProblem RowSlice(const GemmProblem& p, int64_t r0, int64_t rows);
/// The plain product of `p` into `tmp` (dense, dtype `acc`): what runs before an unfused
/// epilogue pass.
GemmProblem PlainInto(const GemmProblem& p, void* tmp, DType acc);

}  // namespace pygpukit::ops

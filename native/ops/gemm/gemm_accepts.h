// Whether a kernel family can serve a GEMM problem, decided before anything is launched: the
// dtype, layout, alignment and size rules of each family (and the arch it needs), with the
// message a forced family reports when a rule fails. Pure, compiled in every build. The CUDA
// launchers derive their operands through the same helpers, so each rule exists once.
#pragma once

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ops/gemm/gemm_family.h"
#include "ops/gemm/gemm_params.h"
#include "ops/gemm/gemm_problem.h"
#include "ops/gemm/gemm_select.h"

namespace pygpukit::ops {

/// OK when `family` serves `p` on `t`; otherwise NotImplementedError saying which rule fails
/// (naming the problem). cuBLASLt serves plain products of every inexact dtype and, for 16- and
/// 32-bit real inputs with 16-byte aligned operands, its own epilogues: alpha, beta * C, bias,
/// ReLU and GELU's tanh form.
absl::Status GemmAccepts(GemmFamily family, const GemmProblem& p, const GemmTarget& t);

/// Whether the preemptible sm90 kernels serve `p` on `t` (16-bit inputs, an unpartitioned
/// stream, sm90 asked for or auto, and whatever GemmAccepts(kSm90) needs).
bool GemmPreemptibleAccepts(const GemmProblem& p, const GemmTarget& t);

/// One sm90 operand as TMA sees it: `inner` is the unit-stride dim, `outer` the other matrix
/// dim, `ld` the leading dim, in elements of `esize` bytes.
struct Sm90Operand {
  const void* ptr;
  int64_t inner, outer, ld, batch_stride, batch;
  bool kmajor;
  int esize;
};
/// Bytes per element the sm90 kernels read: 2 (bf16 / fp16) or 4 (float32 as TF32).
inline int Sm90ElemBytes(DType in) { return in == DType::Float32 ? 4 : IsFloat8(in) ? 1 : 2; }
/// Whether TMA can address rows at `ptr` with leading dim `ld` and `batch_stride` (elements of
/// `esize` bytes): 16-byte aligned base, strides multiples of 16 bytes below 2^40.
bool TmaFriendly(const void* ptr, int64_t ld, int64_t batch_stride, int esize);
/// A and B of `p` for the sm90 kernels (K-major or MN-major), or why they cannot be.
absl::StatusOr<std::pair<Sm90Operand, Sm90Operand>> Sm90Operands(const kernels::GemmParams& p,
                                                                 int esize);

/// The sm80 kernels' view of `p`: the parameter block with the strides of size-1 dims
/// normalized, and B's layout ("tn": B^T row-major, "tt": B row-major); or why it cannot be.
struct Sm80Operands {
  kernels::GemmParams params;
  const char* layout;
};
absl::StatusOr<Sm80Operands> Sm80Normalize(const GemmProblem& p);

}  // namespace pygpukit::ops

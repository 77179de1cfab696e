// Which GEMM kernel family serves a CUDA matmul. Pure logic over a problem summary and the
// device's arch, so the dispatch table is tested on machines without a GPU.
#pragma once

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/dtype.h"
#include "ops/ops.h"

namespace pygpukit::ops {

/// Kernel families of the CUDA backend.
enum class GemmFamily { kSm90, kSm80, kSimt, kCublasLt };

/// What selection looks at in a problem.
struct GemmSummary {
  DType in, out;
  bool tf32 = false;  // float32 inputs may use TF32 tensor cores
  int64_t m = 0, n = 0, k = 0, batch = 1;
  bool fused = false;    // a non-trivial epilogue (alpha, beta, bias, activation or out dtype)
  bool tma_ok = false;   // layouts and alignment the sm90 kernels accept
  bool sm80_ok = false;  // layouts and alignment the sm80 kernels accept
};

/// The device and the kernels built for it.
struct GemmTarget {
  int sm_major = 0, sm_minor = 0;
  bool sm90a_built = false;  // the embedded images hold sm_90a code
  bool partitioned = false;  // the stream is confined to an SM partition (shares the device)
};

/// The family `backend` asks for, or the one auto selection picks: our kernels where they are
/// measured to be at least as fast as cuBLASLt (benchmarks/gemm.py), cuBLASLt elsewhere.
/// A forced family is returned as is (its launcher checks what it can serve).
GemmFamily SelectGemm(const GemmSummary& s, const GemmTarget& t, MatmulBackend backend);

/// Lower-case name of a family ("sm90", "sm80", "simt", "cublaslt").
absl::string_view GemmFamilyName(GemmFamily f);

}  // namespace pygpukit::ops

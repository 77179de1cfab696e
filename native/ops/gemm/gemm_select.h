// Which GEMM kernel family auto selection picks for a CUDA product. Pure logic over the
// problem's tune key (ops/gemm/gemm_tune_cache.h) and the device's arch, so the dispatch table
// is tested on machines without a GPU. Whether the pick can serve the problem is the
// planner's question (ops/gemm/gemm_plan.h).
#pragma once

#include <optional>

#include "core/dtype.h"
#include "ops/gemm/gemm_family.h"
#include "ops/gemm/gemm_tune_cache.h"
#include "ops/ops.h"

namespace pygpukit::ops {

/// Which families' layout and alignment rules a problem meets (ops/gemm/gemm_accepts.h).
struct GemmFit {
  bool tma_ok = false;   // the sm90 kernels accept it
  bool sm80_ok = false;  // the sm80 kernels accept it
};

/// The device and the kernels built for it.
struct GemmTarget {
  int sm_major = 0, sm_minor = 0;
  bool sm90a_built = false;  // the embedded images hold sm_90a code
  bool partitioned = false;  // the stream is confined to an SM partition (shares the device)
};

/// The family a forced `backend` names; none for auto.
std::optional<GemmFamily> ForcedFamily(MatmulBackend backend);

/// The family `backend` asks for, or the one auto selection picks for the problem `key`: our
/// kernels where they are measured to be at least as fast as cuBLASLt (benchmarks/gemm.py),
/// cuBLASLt elsewhere. A forced family is returned as is.
GemmFamily SelectGemm(const TuneKey& key, const GemmFit& fit, const GemmTarget& t,
                      MatmulBackend backend);

}  // namespace pygpukit::ops

// cuBLASLt loaded at run time (dlopen), as a typed function table.
#pragma once

#include <cublasLt.h>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace pygpukit::cuda {

#define PGK_CUBLASLT_FUNCTIONS(X)         \
  X(cublasLtCreate)                       \
  X(cublasLtDestroy)                      \
  X(cublasLtGetVersion)                   \
  X(cublasLtGetStatusString)              \
  X(cublasLtMatmul)                       \
  X(cublasLtMatmulDescCreate)             \
  X(cublasLtMatmulDescDestroy)            \
  X(cublasLtMatmulDescSetAttribute)       \
  X(cublasLtMatrixLayoutCreate)           \
  X(cublasLtMatrixLayoutDestroy)          \
  X(cublasLtMatrixLayoutSetAttribute)     \
  X(cublasLtMatmulPreferenceCreate)       \
  X(cublasLtMatmulPreferenceDestroy)      \
  X(cublasLtMatmulPreferenceSetAttribute) \
  X(cublasLtMatmulAlgoGetHeuristic)

/// Resolved cuBLASLt entry points.
struct CublasLtApi {
#define PGK_LT_MEMBER(name) decltype(&::name) name = nullptr;
  PGK_CUBLASLT_FUNCTIONS(PGK_LT_MEMBER)
#undef PGK_LT_MEMBER
};

/// Loads libcublasLt (once per process).
absl::StatusOr<const CublasLtApi*> LoadCublasLt();

/// Status from a cuBLASLt result, naming `what`.
absl::Status CublasStatus(cublasStatus_t s, absl::string_view what);

}  // namespace pygpukit::cuda

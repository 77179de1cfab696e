#include "core/cuda/cublaslt_api.h"

#include "absl/strings/str_cat.h"
#include "core/cuda/dynlib.h"
#include "core/status.h"

namespace pygpukit::cuda {
namespace {

absl::StatusOr<const CublasLtApi*> Load() {
  PGK_ASSIGN_OR_RETURN(
      void* lib,
      OpenFirstLibrary("cuBLASLt", {"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"}));
  auto* api = new CublasLtApi();  // lives for the process
#define PGK_LT_RESOLVE(name) PGK_RETURN_IF_ERROR(Resolve(lib, "cuBLASLt", #name, api->name));
  PGK_CUBLASLT_FUNCTIONS(PGK_LT_RESOLVE)
#undef PGK_LT_RESOLVE
  return api;
}

}  // namespace

absl::StatusOr<const CublasLtApi*> LoadCublasLt() {
  static LazyLibrary<CublasLtApi> lib;
  return lib.Get(Load);
}

absl::Status CublasStatus(cublasStatus_t s, absl::string_view what) {
  if (s == CUBLAS_STATUS_SUCCESS) return absl::OkStatus();
  auto lt = LoadCublasLt();
  const char* str = lt.ok() ? (*lt)->cublasLtGetStatusString(s) : "";
  std::string msg = absl::StrCat(what, ": cuBLASLt error ", static_cast<int>(s), " ", str);
  if (s == CUBLAS_STATUS_ALLOC_FAILED) return MemoryError(msg);
  if (s == CUBLAS_STATUS_NOT_SUPPORTED) return NotImplementedError(msg);
  return RuntimeError(msg);
}

}  // namespace pygpukit::cuda

#include "core/cuda/driver_api.h"

#include <dlfcn.h>

#include "absl/strings/str_cat.h"
#include "core/cuda/dynlib.h"
#include "core/status.h"

namespace pygpukit::cuda {
namespace {

// cuGetProcAddress as exported since CUDA 12.5 (_v2 adds the symbol status out-parameter).
using GetProcV2 = CUresult (*)(const char*, void**, int, cuuint64_t,
                               CUdriverProcAddressQueryResult*);
using GetProcV1 = CUresult (*)(const char*, void**, int, cuuint64_t);

absl::StatusOr<const DriverApi*> Load() {
  PGK_ASSIGN_OR_RETURN(void* lib, OpenFirstLibrary("cuda: NVIDIA driver", {"libcuda.so.1"}));
  auto v2 = reinterpret_cast<GetProcV2>(dlsym(lib, "cuGetProcAddress_v2"));
  auto v1 = reinterpret_cast<GetProcV1>(dlsym(lib, "cuGetProcAddress"));
  if (v2 == nullptr && v1 == nullptr) {
    return NotImplementedError("cuda: libcuda.so.1 has no cuGetProcAddress (driver too old)");
  }
  auto* api = new DriverApi();  // lives for the process, like the driver itself
  auto resolve = [&](const char* name, void** fn) -> absl::Status {
    CUresult r;
    if (v2 != nullptr) {
      CUdriverProcAddressQueryResult q;
      r = v2(name, fn, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &q);
    } else {
      r = v1(name, fn, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT);
    }
    if (r != CUDA_SUCCESS || *fn == nullptr) {
      *fn = nullptr;
      return NotImplementedError(
          absl::StrCat("cuda: driver entry point ", name, " not available (driver too old?)"));
    }
    return absl::OkStatus();
  };
#define PGK_RESOLVE(name) PGK_RETURN_IF_ERROR(resolve(#name, reinterpret_cast<void**>(&api->name)));
  PGK_DRIVER_FUNCTIONS(PGK_RESOLVE)
#undef PGK_RESOLVE
#define PGK_RESOLVE_OPTIONAL(name) (void)resolve(#name, reinterpret_cast<void**>(&api->name));
  PGK_DRIVER_OPTIONAL_FUNCTIONS(PGK_RESOLVE_OPTIONAL)
#undef PGK_RESOLVE_OPTIONAL
  return api;
}

}  // namespace

absl::StatusOr<const DriverApi*> LoadDriverApi() {
  static LazyLibrary<DriverApi> lib;
  return lib.Get(Load);
}

absl::Status DriverStatus(CUresult r, absl::string_view what) {
  if (r == CUDA_SUCCESS) return absl::OkStatus();
  const char* name = "CUDA_ERROR_UNKNOWN";
  const char* desc = "";
  if (auto api = LoadDriverApi(); api.ok()) {
    (*api)->cuGetErrorName(r, &name);
    (*api)->cuGetErrorString(r, &desc);
  }
  std::string msg = absl::StrCat(what, ": ", name, " (", static_cast<int>(r), "): ", desc);
  if (r == CUDA_ERROR_OUT_OF_MEMORY) return MemoryError(msg);
  return RuntimeError(msg);
}

}  // namespace pygpukit::cuda

#include "core/cuda/nvrtc_api.h"

#include "core/cuda/dynlib.h"
#include "core/status.h"

namespace pygpukit::cuda {
namespace {

absl::StatusOr<const NvrtcApi*> Load() {
  PGK_ASSIGN_OR_RETURN(
      void* lib, OpenFirstLibrary("NVRTC", {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"}));
  auto* api = new NvrtcApi();  // lives for the process
#define PGK_NVRTC_RESOLVE(name) PGK_RETURN_IF_ERROR(Resolve(lib, "NVRTC", #name, api->name));
  PGK_NVRTC_FUNCTIONS(PGK_NVRTC_RESOLVE)
#undef PGK_NVRTC_RESOLVE
  api->nvrtcVersion(&api->major, &api->minor);
  return api;
}

}  // namespace

absl::StatusOr<const NvrtcApi*> LoadNvrtc() {
  static LazyLibrary<NvrtcApi> lib;
  return lib.Get(Load);
}

}  // namespace pygpukit::cuda

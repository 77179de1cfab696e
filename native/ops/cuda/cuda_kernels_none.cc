// Built without CUDA: the CUDA kernel entry points exist (kernel_launch.cc routes by device)
// but no CUDA device can be selected, so they only report that.
#include "core/status.h"
#include "ops/kernel_launch.h"

namespace pygpukit::ops::cuda_kernels {
namespace {
absl::Status NoCuda() {
  return NotImplementedError("cuda: pygpukit was built without CUDA support");
}
}  // namespace

absl::Status Matmul(hal::Stream&, const MatmulProblem&, Device) { return NoCuda(); }
absl::Status MatmulCublasLt(hal::Stream&, const MatmulProblem&, Device) { return NoCuda(); }
absl::StatusOr<int> MatmulPreemptible(hal::Stream&, const MatmulProblem&, Device,
                                      const PreemptSignal&, const std::function<void()>&) {
  return NoCuda();
}
absl::Status GemmEpilogueApply(hal::Stream&, const MatmulProblem&, const void*, DType) {
  return NoCuda();
}

}  // namespace pygpukit::ops::cuda_kernels

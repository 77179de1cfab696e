// Build without nvcc: no embedded kernels, so the CUDA backend reports itself unavailable.
#include "runtime/embedded_kernels.h"

namespace pygpukit {
absl::Span<const EmbeddedImage> EmbeddedKernelImages() { return {}; }
const char* EmbeddedKernelArchs() { return ""; }
}  // namespace pygpukit

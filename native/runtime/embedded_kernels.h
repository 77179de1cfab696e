// Kernel images (nvcc-built fatbins) embedded in the library at build time.
#pragma once

#include <cstddef>

#include "absl/types/span.h"

namespace pygpukit {

/// One embedded fatbin: the .cu file it came from and its bytes.
struct EmbeddedImage {
  const char* name;
  const unsigned char* data;
  size_t size;
};

/// All embedded images; empty when the library was built without nvcc.
absl::Span<const EmbeddedImage> EmbeddedKernelImages();
/// The CUDA archs the images were compiled for, e.g. "80;86;89;90a" ("" without nvcc).
const char* EmbeddedKernelArchs();

}  // namespace pygpukit

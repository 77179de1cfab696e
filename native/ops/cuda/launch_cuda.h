// The one way the precompiled CUDA kernels are launched: a parameter block passed by value
// through the dispatcher, on an explicit grid or on a grid-stride grid sized from the work.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include "core/hal/backend.h"
#include "runtime/runtime.h"

namespace pygpukit::ops::cuda_kernels {

/// `blocks` blocks of `threads` threads running `kernel(p)`.
template <typename Params>
absl::Status LaunchBlocks(hal::Stream& s, const std::string& kernel, int64_t blocks,
                          unsigned threads, const Params& p) {
  hal::LaunchDims dims;
  dims.grid[0] = static_cast<unsigned>(blocks);
  dims.block[0] = threads;
  void* args[] = {const_cast<Params*>(&p)};
  return Runtime::Get().dispatcher().LaunchDevice(s, kernel, dims, args);
}

/// `kernel(p)` over n work items with a grid-stride loop: 256 threads a block, one item per
/// thread up to 2^16 blocks (the loop covers the rest).
template <typename Params>
absl::Status LaunchGridStride(hal::Stream& s, const std::string& kernel, int64_t n,
                              const Params& p) {
  constexpr int64_t kBlock = 256, kMaxBlocks = 1 << 16;
  return LaunchBlocks(s, kernel, std::clamp<int64_t>((n + kBlock - 1) / kBlock, 1, kMaxBlocks),
                      kBlock, p);
}

}  // namespace pygpukit::ops::cuda_kernels

// The one way the precompiled CUDA kernels are launched: a parameter block passed by value
// through the launch context, on an explicit grid or on a grid-stride grid sized from the work.
#pragma once

#include <algorithm>
#include <cstdint>

#include "absl/strings/string_view.h"
#include "core/hal/backend.h"
#include "ops/launch/launch_context.h"

namespace pygpukit::ops {

/// SMs a kernel launched on `s` can count on: the stream's partition, else the whole device.
/// Grids sized by it (persistent GEMM tiles, split-KV attention) get no second, partial wave on
/// a partitioned stream.
inline int StreamSms(const hal::Stream& s, const hal::DeviceProperties& props) {
  return s.sm_count() > 0 ? s.sm_count() : std::max(1, props.multiprocessors);
}

/// `blocks` blocks of `threads` threads running the embedded `kernel(p)`.
template <typename Params>
absl::Status LaunchBlocks(LaunchContext& ctx, absl::string_view kernel, int64_t blocks,
                          unsigned threads, const Params& p, LaunchCost cost = {}) {
  hal::LaunchDims dims;
  dims.grid[0] = static_cast<unsigned>(blocks);
  dims.block[0] = threads;
  void* args[] = {const_cast<Params*>(&p)};
  return ctx.Kernel(kernel, dims, args, cost);
}

/// The embedded `kernel(p)` over n work items with a grid-stride loop: 256 threads a block, one
/// item per thread up to 2^16 blocks (the loop covers the rest).
template <typename Params>
absl::Status LaunchGridStride(LaunchContext& ctx, absl::string_view kernel, int64_t n,
                              const Params& p, LaunchCost cost = {}) {
  constexpr int64_t kBlock = 256, kMaxBlocks = 1 << 16;
  return LaunchBlocks(ctx, kernel, std::clamp<int64_t>((n + kBlock - 1) / kBlock, 1, kMaxBlocks),
                      kBlock, p, cost);
}

}  // namespace pygpukit::ops

// The Hopper attention kernel's launcher (cuda/attention_sm90_cuda.cc), called by the fused
// attention slot's CUDA implementation before it falls back to the SM80 kernel.
#pragma once

#include <cstdint>

#include "absl/status/statusor.h"
#include "core/dtype.h"
#include "core/hal/backend.h"
#include "ops/launch/launch_context.h"
#include "ops/nn/nn_attention.h"

namespace pygpukit::ops {

/// Launches the sm90 kernel for `p` (16-bit `dtype`, head dim 64 or 128) when it serves the
/// problem: an SM 9.0 device with the sm_90a kernels built, no mask, contiguous K and V, at
/// least 64 query rows, layouts a TMA tensor map describes, and PYGPUKIT_ATTENTION_KERNEL not
/// "sm80" ("sm90s": the serial variant). Returns false, launching nothing, where it does not.
absl::StatusOr<bool> AttentionSm90(LaunchContext& ctx, const hal::DeviceProperties& props,
                                   DType dtype, int64_t head_dim, const kernels::AttnParams& p);

}  // namespace pygpukit::ops

// The Hopper attention kernel's launcher (cuda/attention_sm90_cuda.cc), called by the fused
// attention slot's CUDA implementation before it falls back to the SM80 kernel.
#pragma once

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/dtype.h"
#include "core/hal/backend.h"
#include "ops/launch/launch_context.h"
#include "ops/nn/nn_attention.h"

namespace pygpukit::ops {

/// PYGPUKIT_ATTENTION_KERNEL, read per call (tests and measurements set it): "sm80" keeps
/// prefill on the SM80 kernel where the sm90 one would serve, "sm80s2" also holds the SM80
/// kernel to two stages, "sm90s" runs the sm90 kernel's serial variant and "sm90pp" its
/// ping-pong one (the consumers taking turns), "sm90np" launches the sm90 kernel with one CTA
/// per work item instead of one per SM; empty: the defaults.
absl::string_view AttentionKernelForced();

/// Launches the sm90 kernel for `p` (16-bit `dtype`, head dim 64 or 128) when it serves the
/// problem: an SM 9.0 device with the sm_90a kernels built, no mask, contiguous K and V, at
/// least 64 query rows, layouts a TMA tensor map describes, and no SM80 kernel forced
/// (`forced`: AttentionKernelForced(), read once by the caller). Returns false, launching
/// nothing, where it does not.
absl::StatusOr<bool> AttentionSm90(LaunchContext& ctx, const hal::DeviceProperties& props,
                                   DType dtype, int64_t head_dim, const kernels::AttnParams& p,
                                   absl::string_view forced);

}  // namespace pygpukit::ops

// The nn family's launches and kernel entry points (ops/launch/kernel_slot.h), implemented in
// cpu/ and cuda/.
#pragma once

#include "absl/status/status.h"
#include "core/dtype.h"
#include "ops/launch/kernel_slot.h"
#include "ops/nn/nn_attention.h"
#include "ops/nn/nn_rope.h"
#include "ops/nn/nn_rows.h"

namespace pygpukit::ops {

/// A row op (kernels::RowOp) over p.rows contiguous rows of `dtype` (p's pointers pinned by the
/// context).
inline constinit KernelSlot<absl::Status(LaunchContext&, DType, const kernels::RowsParams&)>
    kRowsKernel{"nn rows"};
/// Rotary embedding of p.rows rows of `dtype` (kernels::RopeItem over every work item).
inline constinit KernelSlot<absl::Status(LaunchContext&, DType, const kernels::RopeParams&)>
    kRopeKernel{"apply_rotary"};
/// Fused attention of 16-bit q, k, v with head dim `head_dim` (CUDA only: where no kernel
/// serves the problem, NotImplementedError and the op layer composes it instead).
inline constinit KernelSlot<absl::Status(LaunchContext&, DType, int64_t,
                                         const kernels::AttnParams&)>
    kAttentionKernel{"scaled_dot_product_attention"};

}  // namespace pygpukit::ops

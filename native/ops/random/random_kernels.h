// The random family's kernel entry points (ops/launch/kernel_slot.h): implemented in cpu/ and
// cuda/, reached through the slots.
#pragma once

#include "absl/status/status.h"
#include "core/dtype.h"
#include "ops/launch/kernel_slot.h"
#include "ops/random/philox.h"

namespace pygpukit::ops {

/// p.n outputs of p.kind into p.out (dense, of `dtype`, a real dtype): one Philox block per
/// work item.
inline constinit KernelSlot<absl::Status(LaunchContext&, DType, const kernels::RandomParams&)>
    kRandomKernel{"random"};

}  // namespace pygpukit::ops

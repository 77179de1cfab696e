// The elementwise family's launches (the functions of elementwise_table.h and the user kernels
// of gp.ElementwiseKernel / gp.fuse), the helpers both backends share, and the kernel entry
// points (ops/launch/kernel_slot.h): the CPU loops (cpu/) compute on inputs converted to their
// compute dtypes first, the CUDA JIT (cuda/) converts as it loads (the precompiled arithmetic
// kernels without NVRTC).
#pragma once

#include <array>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "ops/array.h"
#include "ops/elementwise/elementwise_codegen.h"
#include "ops/elementwise/elementwise_table.h"
#include "ops/launch/kernel_slot.h"

namespace pygpukit::ops {

/// One elementwise function application, checked and promoted by the op layer.
struct EwLaunch {
  ElementwiseOp op;
  absl::string_view name;
  DType compute;  // the dtype the function computes in
  DType result;   // its result dtype (the output array may have another: converted on store)
  struct Input {
    const GPUArray* array = nullptr;  // null: a scalar, encoded in `scalar`
    DType compute = DType::Float32;  // the dtype this operand converts to (where's condition: bool)
    alignas(16) unsigned char scalar[16] = {};
  };
  absl::InlinedVector<Input, 3> inputs;
};
/// out = op(inputs) elementwise: arrays broadcast to out's shape and convert to their compute
/// dtype, the result converts to out's dtype. `out` may overlap the inputs (an overlap other
/// than identical elements computes into a temporary first). CUDA: a JIT kernel specialized for
/// the dtypes and layout; without NVRTC, the precompiled add / subtract / multiply / divide /
/// negative kernels (other functions raise NotImplementedError saying why).
absl::Status LaunchElementwise(const EwLaunch& launch, const GPUArray& out);
/// A user elementwise kernel (gp.ElementwiseKernel), typed by the op layer: `spec` holds the
/// body, the parameter names and dtypes (its layout fields are set per launch); scalar inputs
/// are passed as their bytes in their dtype.
struct UserEwLaunch {
  EwKernelSpec spec;
  absl::InlinedVector<DType, 4> scalar_dtypes;  // per input (the dtype of a scalar input)
  absl::InlinedVector<std::array<unsigned char, 16>, 4> scalars;  // per input
};
/// outs (one or more, of one shape) = the user kernel over `inputs` (arrays of that shape,
/// broadcast views allowed; invalid entries stand for the scalars). An output overlapping an
/// input other than element for element is computed through a temporary; outputs sharing memory
/// are a ValueError. CPU: compiled by the host compiler; CUDA: by NVRTC.
absl::Status LaunchUserElementwise(const UserEwLaunch& l, absl::Span<const GPUArray> inputs,
                                   absl::Span<const GPUArray> outs);

// ---- shared by the implementations (elementwise_launch.cc) ----
/// Whether a and b may have a byte in common (interleaved views such as x[::2] and x[1::2] do
/// not).
bool MayShareMemory(const GPUArray& a, const GPUArray& b);
/// Whether writing `out` element by element could change what `in` reads later: they share
/// memory and element i of `in` is not exactly element i of `out`.
bool Conflicts(const GPUArray& out, const GPUArray& in);
/// The operands of a kernel that computes in one dtype: array inputs converted to their compute
/// dtypes and broadcast to out's shape (invalid arrays stand for scalars), and where the result
/// goes: `out`, or a temporary of the result dtype when out has another dtype or overlaps an
/// input other than element for element (`temporary`: copy it into out afterwards).
struct CastFirst {
  absl::InlinedVector<GPUArray, 3> inputs;
  GPUArray dst;
  bool temporary = false;
};
absl::StatusOr<CastFirst> ConvertInputs(const EwLaunch& l, const GPUArray& out);

// ---- kernel entry points ----
/// out = l's function of its inputs (a context on out's device, no arrays yet).
inline constinit KernelSlot<absl::Status(LaunchContext&, const EwLaunch&, const GPUArray&)>
    kElementwiseKernel{"elementwise"};
/// outs = the user kernel over `inputs` (the context holds them all; outputs overlap nothing).
inline constinit KernelSlot<absl::Status(LaunchContext&, const UserEwLaunch&,
                                         absl::Span<const GPUArray>, absl::Span<const GPUArray>)>
    kUserElementwiseKernel{"user elementwise"};

}  // namespace pygpukit::ops

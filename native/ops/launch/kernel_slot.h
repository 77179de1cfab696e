// Kernel slots: how a kernel family's op layer reaches its per-backend implementations without
// naming them. A family declares one slot per entry point in its own header, with the entry
// point's signature (a LaunchContext first):
//
//   inline constinit KernelSlot<absl::Status(LaunchContext&, DType, const RandomParams&)>
//       kRandomKernel{"random"};
//
// and each backend's file registers its implementation from the family's cpu/ or cuda/ folder:
//
//   PGK_REGISTER_KERNEL(kRandomKernel, kCpu, RandomCpu);
//
// The op calls kRandomKernel(ctx, dtype, p), which runs the implementation registered for the
// context's backend. A build without CUDA compiles no cuda/ files, so its CUDA slots stay empty
// and calling one is a NotImplementedError naming the op.
#pragma once

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "ops/launch/launch_context.h"

namespace pygpukit::ops {

template <typename Signature>
class KernelSlot;

/// One entry point of a kernel family, per backend (see the file comment). Registration
/// happens while the library loads (static initializers), before any call.
template <typename R, typename... Args>
class KernelSlot<R(LaunchContext&, Args...)> {
 public:
  using Fn = R (*)(LaunchContext&, Args...);

  constexpr explicit KernelSlot(const char* name) : name_(name) {}
  KernelSlot(const KernelSlot&) = delete;
  KernelSlot& operator=(const KernelSlot&) = delete;

  /// Runs the implementation of the context's backend.
  R operator()(LaunchContext& ctx, Args... args) const {
    Fn fn = impl_[static_cast<int>(ctx.backend())];
    if (fn == nullptr) {
      return NotImplementedError(absl::StrCat(ctx.op(), ": no ", name_, " kernel for ",
                                              BackendKindName(ctx.backend()),
                                              " devices in this build"));
    }
    return fn(ctx, std::forward<Args>(args)...);
  }
  /// Whether an implementation is registered for `kind`.
  bool has(BackendKind kind) const { return impl_[static_cast<int>(kind)] != nullptr; }
  /// Registers `fn` for `kind` (PGK_REGISTER_KERNEL); returns true.
  bool Register(BackendKind kind, Fn fn) {
    impl_[static_cast<int>(kind)] = fn;
    return true;
  }

 private:
  const char* name_;
  Fn impl_[kBackendKinds] = {};
};

#define PGK_KERNEL_CONCAT_INNER(a, b) a##b
#define PGK_KERNEL_CONCAT(a, b) PGK_KERNEL_CONCAT_INNER(a, b)
/// Registers `fn` as `slot`'s implementation for backend `kind` (kCpu or kCuda), at load time.
#define PGK_REGISTER_KERNEL(slot, kind, fn)                                         \
  [[maybe_unused]] static const bool PGK_KERNEL_CONCAT(pgk_registered_, __LINE__) = \
      (slot).Register(::pygpukit::ops::BackendKind::kind, (fn))

}  // namespace pygpukit::ops

#include "ops/raw_kernel/raw_kernel.h"

#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "core/status.h"
#include "ops/creation/new_array.h"
#include "ops/launch/launch_context.h"
#include "ops/launch/launch_cost.h"
#include "runtime/runtime.h"

namespace pygpukit::ops {
namespace {

absl::Status CheckDims(const KernelDims& d, absl::string_view what) {
  const auto text = [](const std::array<int64_t, 3>& v) {
    return absl::StrCat("(", absl::StrJoin(v, ", "), ")");
  };
  // The driver's limits for every CUDA GPU: grid x < 2^31, y and z < 2^16; 1024 threads.
  const bool grid_ok = d.grid[0] >= 1 && d.grid[0] <= 0x7fffffff && d.grid[1] >= 1 &&
                       d.grid[1] <= 65535 && d.grid[2] >= 1 && d.grid[2] <= 65535;
  if (!grid_ok) {
    return ValueError(absl::StrCat(what, ": grid ", text(d.grid),
                                   " must be >= 1 in each dim, x < 2^31, y and z <= 65535"));
  }
  const bool block_ok = d.block[0] >= 1 && d.block[1] >= 1 && d.block[2] >= 1 &&
                        d.block[0] <= 1024 && d.block[1] <= 1024 && d.block[2] <= 64 &&
                        d.block[0] * d.block[1] * d.block[2] <= 1024;
  if (!block_ok) {
    return ValueError(absl::StrCat(what, ": block ", text(d.block),
                                   " must be >= 1 in each dim, z <= 64, at most 1024 threads"));
  }
  if (d.shared_bytes < 0 || d.shared_bytes > (int64_t{1} << 30)) {
    return ValueError(
        absl::StrCat(what, ": shared_mem ", d.shared_bytes, " bytes is out of range"));
  }
  return absl::OkStatus();
}

// "sm_" + 2 or 3 digits + an optional "a" / "f" suffix: the targets NVRTC makes a cubin for.
bool IsRealArch(absl::string_view arch) {
  if (!absl::ConsumePrefix(&arch, "sm_")) return false;
  if (!arch.empty() && (arch.back() == 'a' || arch.back() == 'f')) arch.remove_suffix(1);
  if (arch.size() < 2 || arch.size() > 3) return false;
  for (char c : arch) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

}  // namespace

absl::Status LaunchRawKernel(const JitSource& src, absl::string_view kernel, const KernelDims& dims,
                             absl::Span<const KernelArg> args, std::optional<Device> device) {
  const std::string what = absl::StrCat("RawKernel ", kernel);
  PGK_RETURN_IF_ERROR(CheckDims(dims, what));
  std::vector<const GPUArray*> arrays;
  for (size_t i = 0; i < args.size(); ++i) {
    const KernelArg& a = args[i];
    if (a.array != nullptr) {
      if (!arrays.empty() && a.array->device() != arrays.front()->device()) {
        return ValueError(absl::StrCat(what, ": argument ", i, " is on ",
                                       a.array->device().ToString(), ", argument 0's array on ",
                                       arrays.front()->device().ToString()));
      }
      arrays.push_back(a.array);
    } else if (a.size < 1 || a.size > 16) {
      return ValueError(absl::StrCat(what, ": argument ", i, " is a scalar of ", a.size,
                                     " bytes (1 to 16 expected)"));
    }
  }
  Runtime& rt = Runtime::Get();
  const Device d = !arrays.empty()      ? arrays.front()->device()
                   : device.has_value() ? *device
                                        : rt.default_device();
  if (device.has_value() && *device != d) {
    return ValueError(
        absl::StrCat(what, ": arrays on ", d.ToString(), " but device=", device->ToString()));
  }
  if (!d.is_cuda()) {
    return NotImplementedError(
        absl::StrCat(what, ": CUDA C++ kernels run on CUDA devices, not ", d.ToString()));
  }
  PGK_RETURN_IF_ERROR(rt.CheckDevice(d));
  PGK_ASSIGN_OR_RETURN(hal::DeviceProperties props, rt.properties(d));
  if (dims.shared_bytes > props.max_shared_memory_per_block) {
    return ValueError(absl::StrCat(what, ": shared_mem ", dims.shared_bytes, " bytes exceeds ",
                                   d.ToString(), "'s ", props.max_shared_memory_per_block,
                                   " bytes per block"));
  }
  PGK_ASSIGN_OR_RETURN(void* fn, rt.jit().Function(src, kernel, d.index));
  PGK_ASSIGN_OR_RETURN(hal::Stream * stream, rt.stream(d));
  PGK_ASSIGN_OR_RETURN(ResidencyPin pin, Resident(absl::MakeConstSpan(arrays)));
  // Parameter storage: one slot per argument, 16-byte aligned, alive until the launch returns
  // (the driver copies parameters at launch).
  struct alignas(16) Slot {
    unsigned char bytes[16];
  };
  std::vector<Slot> slots(args.size());
  std::vector<void*> params(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i].array != nullptr) {
      void* p = args[i].array->data();
      std::memcpy(slots[i].bytes, &p, sizeof(p));
    } else {
      std::memcpy(slots[i].bytes, args[i].bytes.data(), static_cast<size_t>(args[i].size));
    }
    params[i] = slots[i].bytes;
  }
  hal::LaunchDims ld;
  for (int i = 0; i < 3; ++i) {
    ld.grid[i] = static_cast<unsigned>(dims.grid[i]);
    ld.block[i] = static_cast<unsigned>(dims.block[i]);
  }
  ld.shared_bytes = static_cast<unsigned>(dims.shared_bytes);
  absl::Status st =
      rt.dispatcher().LaunchFunction(*stream, absl::StrCat("raw:", kernel), fn, ld, params.data(),
                                     LaunchCost{}, LaunchMode::kImmediate);
  if (!st.ok() && ErrorTypeOf(st) != ErrorType::kMemory) {
    return RuntimeError(absl::StrCat(what, ": launch with grid (", absl::StrJoin(dims.grid, ", "),
                                     "), block (", absl::StrJoin(dims.block, ", "),
                                     "), shared_mem ", dims.shared_bytes,
                                     " failed: ", st.message()));
  }
  return st;
}

absl::StatusOr<std::string> CompileRawKernel(const JitSource& src,
                                             std::optional<std::string> arch) {
  Runtime& rt = Runtime::Get();
  if (!arch.has_value()) {
    // The default device when it is a GPU (PYGPUKIT_DEVICE=cuda:1 picks that one's arch).
    std::optional<Device> gpu;
    if (rt.default_device().is_cuda()) gpu = rt.default_device();
    for (const Device& d : rt.devices()) {
      if (!gpu.has_value() && d.is_cuda()) gpu = d;
    }
    if (!gpu.has_value()) {
      return ValueError(absl::StrCat("RawKernel ", JitProgramName(src.name),
                                     ".compile: no CUDA device; name the target arch, e.g. "
                                     "arch=\"sm_90\""));
    }
    PGK_ASSIGN_OR_RETURN(hal::DeviceProperties p, rt.properties(*gpu));
    arch = JitEngine::ArchOf(p.sm_major, p.sm_minor);
  } else if (!IsRealArch(*arch)) {
    return ValueError(absl::StrCat("RawKernel ", JitProgramName(src.name), ".compile: arch '",
                                   *arch, "' is not a GPU arch such as \"sm_90\" or \"sm_90a\""));
  }
  PGK_ASSIGN_OR_RETURN(std::shared_ptr<const std::string> image, rt.jit().Image(src, *arch));
  return *image;
}

}  // namespace pygpukit::ops

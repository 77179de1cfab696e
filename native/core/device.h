// Device identity.
#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace pygpukit {

/// Kind of backend a device belongs to.
enum class DeviceType : uint8_t { kCPU, kCUDA };

/// A device: backend type plus ordinal ("cpu", "cuda:0").
struct Device {
  DeviceType type = DeviceType::kCPU;
  int index = 0;

  bool operator==(const Device&) const = default;
  /// "cpu" or "cuda:N".
  std::string ToString() const;
  bool is_cuda() const { return type == DeviceType::kCUDA; }
  bool is_cpu() const { return type == DeviceType::kCPU; }
};

/// Parses "cpu", "cuda", "cuda:1", "gpu" (syntax only; availability is checked by the runtime).
absl::StatusOr<Device> ParseDevice(absl::string_view spec);

}  // namespace pygpukit

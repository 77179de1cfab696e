#include "core/device.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/status.h"

namespace pygpukit {

std::string Device::ToString() const {
  return type == DeviceType::kCPU ? std::string("cpu") : absl::StrCat("cuda:", index);
}

absl::StatusOr<Device> ParseDevice(absl::string_view spec) {
  absl::string_view kind = spec, idx;
  const bool has_index = spec.find(':') != absl::string_view::npos;
  if (has_index) {
    kind = spec.substr(0, spec.find(':'));
    idx = spec.substr(spec.find(':') + 1);
  }
  Device d;
  if (kind == "cpu") {
    d.type = DeviceType::kCPU;
  } else if (kind == "cuda" || kind == "gpu") {
    d.type = DeviceType::kCUDA;
  } else {
    return ValueError(
        absl::StrCat("device: unknown device '", spec, "' (expected 'cpu' or 'cuda[:N]')"));
  }
  if (has_index && (!absl::SimpleAtoi(idx, &d.index) || d.index < 0)) {
    return ValueError(absl::StrCat("device: bad device index in '", spec, "'"));
  }
  return d;
}

}  // namespace pygpukit

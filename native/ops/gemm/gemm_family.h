// The CUDA backend's GEMM kernel families and a choice among them (a family plus, for sm90, the
// tile configuration it forces). Pure: selection, the planner, the tuner and the tune cache all
// name families through these.
#pragma once

#include "absl/strings/string_view.h"

namespace pygpukit::ops {

/// Kernel families of the CUDA backend.
enum class GemmFamily { kSm90, kSm80, kSimt, kCublasLt };

/// Lower-case name of a family ("sm90", "sm80", "simt", "cublaslt").
absl::string_view GemmFamilyName(GemmFamily f);

/// A family to run a product with; for sm90 also the tile width and cluster size it forces
/// (0: chosen per problem by ops/gemm/gemm_sm90_plan.h).
struct GemmChoice {
  GemmFamily family = GemmFamily::kCublasLt;
  int sm90_bn = 0, sm90_cluster = 0;  // sm90 only: 128 or 256; 1, or 2 with 256
  bool operator==(const GemmChoice&) const = default;
};

}  // namespace pygpukit::ops

// Auto selection table. Each rule names the measurement it rests on; change a rule only with a
// benchmarks/gemm.py run that shows the new choice is at least as fast.
#include "ops/gemm/gemm_select.h"

#include <cmath>

namespace pygpukit::ops {

std::optional<GemmFamily> ForcedFamily(MatmulBackend backend) {
  switch (backend) {
    case MatmulBackend::kCublasLt:
      return GemmFamily::kCublasLt;
    case MatmulBackend::kSm90:
      return GemmFamily::kSm90;
    case MatmulBackend::kSm80:
      return GemmFamily::kSm80;
    case MatmulBackend::kSimt:
      return GemmFamily::kSimt;
    case MatmulBackend::kAuto:
      break;
  }
  return std::nullopt;
}

GemmFamily SelectGemm(const TuneKey& s, const GemmFit& fit, const GemmTarget& t,
                      MatmulBackend backend) {
  if (std::optional<GemmFamily> forced = ForcedFamily(backend)) return *forced;
  const bool half = s.in == DType::BFloat16 || s.in == DType::Float16;
  // TF32 with K-major operands (fit.tma_ok) follows the 16-bit rules on Hopper: H200,
  // benchmarks/results/NVIDIA-H200-sm90-gemm-bt.json, column sm90: 1.4-2.1x of cuBLASLt at
  // 256^3-1024^3, 0.98-1.0x on larger squares (0.96-1.12x on the LLM shapes).
  const bool tf32_kmajor = s.in == DType::Float32 && s.tf32 && fit.tma_ok;
  if (half || (tf32_kmajor && t.sm_major == 9 && t.sm90a_built && s.m > 64)) {
    // Hopper: the TMA + wgmma kernels where they are measured ahead of cuBLASLt (H100,
    // benchmarks/results/NVIDIA-H100-80GB-HBM3-sm90-gemm.json, column sm90): plain products up
    // to 1.5 * 1024^3 MACs that fill at least 64 128x128 tiles or have K <= 1024 (1.6-1.9x at
    // 256^3-1024^3). Larger plain products are 0.88x (2048^3) to 1.01x (8192^3) of cuBLASLt
    // (...-gemm-square.json), and few-tile long-K ones (128 x 4096 x 4096) 0.72x, so those stay
    // on cuBLASLt.
    const bool hopper = t.sm_major == 9 && t.sm90a_built && fit.tma_ok && s.m > 64;
    const double macs = static_cast<double>(s.m) * s.n * s.k * s.batch;
    const double tiles = std::ceil(s.m / 128.0) * std::ceil(s.n / 128.0) * s.batch;
    const bool ours_faster = macs <= 1.5 * 1024 * 1024 * 1024 && (tiles >= 64 || s.k <= 1024);
    // On an SM partition (a stream that shares the device with others) every plain 16-bit
    // product takes the persistent sm90 kernels: their CTAs hold their SMs to the end, while
    // cuBLASLt's grid of short-lived CTAs loses SMs to higher-priority streams' kernels between
    // CTAs (H200, 8192^3 bf16 on 112 SMs beside the scheduler benchmark's guaranteed loop: 377
    // matmul/s sm90 vs 140 cuBLASLt; alone 548 vs 576).
    // Fused epilogues of 16-bit products: cuBLASLt, with its own epilogue where it has one
    // (bias, ReLU, GELU-tanh) and otherwise its plain product plus our epilogue pass, except
    // where the plain sm90 kernels lead (ours_faster) with at least 512 rows. H200,
    // benchmarks/results/NVIDIA-H200-sm90-gemm-epilogue-quick.json (2048^3 and up: cuBLASLt's
    // epilogue 1.4-1.7x the sm90 fused kernels) and -gemm-epilogue-llm.json (M 16 and 128 of
    // every LLM projection: cuBLASLt's epilogue 1.0-3.7x the sm90 and sm80 fused kernels;
    // GELU-erf and SiLU unfused on cuBLASLt ahead too from 2048 rows) and -small.json (sm90
    // fused 1.0-1.5x cuBLASLt at 512^3-1024^3, behind at 128 x 8192 x 1024). Needs TMA-friendly
    // operands: cuBLASLt's epilogues take 16-byte aligned ones only; an SM partition keeps
    // the persistent kernels (see below).
    const bool sm90_leads = s.m >= 512 && ours_faster;
    if (t.sm_major == 9 && t.sm90a_built && fit.tma_ok && half && s.fused && !t.partitioned &&
        !sm90_leads) {
      return GemmFamily::kCublasLt;
    }
    if (hopper && (s.fused || ours_faster || (half && t.partitioned))) return GemmFamily::kSm90;
    // Ampere / Ada (or a Hopper problem TMA cannot take): mma.sync kernels only when an
    // epilogue must be fused; cuBLASLt is faster for plain products.
    if (s.fused && t.sm_major >= 8 && fit.sm80_ok) return GemmFamily::kSm80;
    if (s.fused && t.sm_major == 9 && t.sm90a_built && fit.tma_ok) return GemmFamily::kSm90;
    return GemmFamily::kCublasLt;
  }
  // float32 / float64: cuBLASLt (tensor-core TF32 and DMMA) is faster for plain products; the
  // SIMT kernels serve fused epilogues of exact float32 / float64.
  if (s.fused && (s.in == DType::Float32 || s.in == DType::Float64) && !s.tf32) {
    return GemmFamily::kSimt;
  }
  // Fused TF32 that the Hopper kernels do not take (an N-major B: tf32 wgmma has no transpose):
  // the mma.sync kernels.
  if (s.fused && s.in == DType::Float32 && s.tf32 && t.sm_major >= 8 && fit.sm80_ok) {
    return GemmFamily::kSm80;
  }
  return GemmFamily::kCublasLt;
}

absl::string_view GemmFamilyName(GemmFamily f) {
  switch (f) {
    case GemmFamily::kSm90:
      return "sm90";
    case GemmFamily::kSm80:
      return "sm80";
    case GemmFamily::kSimt:
      return "simt";
    case GemmFamily::kCublasLt:
      return "cublaslt";
  }
  return "?";
}

}  // namespace pygpukit::ops

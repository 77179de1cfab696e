// Preemptible Hopper GEMM kernels with 128 x 256 tiles, no clusters (see gemm_sm90_kernel.h):
// what best-effort matmuls run on, so that guaranteed work takes the SMs back within
// microseconds (GemmSm90Preemptible).
#include "ops/gemm/cuda/gemm_sm90_kernel.h"

PGK_SM90_TYPES16(256, 1, true, _p)

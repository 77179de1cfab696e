// Hopper GEMM kernels with 128 x 256 tiles in 2-CTA clusters sharing B (see gemm_sm90_kernel.h).
#include "ops/gemm/cuda/gemm_sm90_kernel.h"

PGK_SM90_TYPES(256, 2, _c2)

// Hopper GEMM kernels with 128 x 256 tiles, one CTA per cluster (see gemm_sm90_kernel.h).
#include "ops/gemm/cuda/gemm_sm90_kernel.h"

PGK_SM90_TYPES(256, 1, )

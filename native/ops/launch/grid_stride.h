// Device side of LaunchGridStride (ops/launch/cuda_launch.h): the loop a grid-stride kernel runs,
// one work item per thread per iteration, 64-bit indices.
#pragma once

#include <cstdint>

#define PGK_GRID_STRIDE_LOOP(i, n)                                                       \
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); \
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)

// Rotary position embeddings (gp.nn.apply_rotary): the parameter block and the per-pair body,
// shared by the CPU loop and the CUDA kernel (g++ and nvcc compile the same code).
#pragma once

#include <cstdint>

#include "ops/kernels/scalar_ops.h"
#include "ops/nn/nn_rows.h"

namespace pygpukit::kernels {

/// `rows` contiguous rows of `dim` elements of T (x and out, which may be the same array); the
/// first `rot` (even) columns are rotated by the angles of row r's position pos[r]: cos and sin
/// are tables of (positions, rot / 2) in the compute type (float, double for float64 rows); the
/// other columns are copied.
struct RopeParams {
  int64_t rows, dim, rot;
  const void* x;
  void* out;
  const void* cos;
  const void* sin;
  const int64_t* pos;
  int32_t interleaved;  // 1: GPT-J pairs (2j, 2j + 1); 0: GPT-NeoX halves (j, j + rot / 2)
  int32_t pad;
};

static_assert(sizeof(RopeParams) == 72, "RopeParams layout changed");

/// Work item i of rows * (dim - rot / 2): the pair j = i % (dim - rot / 2) of row r when j <
/// rot / 2 (both elements written), else the copied column rot / 2 + j of it.
template <typename T>
PGK_HD void RopeItem(const RopeParams& p, int64_t i) {
  const int64_t half = p.rot / 2, per_row = p.dim - half;
  const int64_t r = i / per_row, j = i % per_row;
  const T* x = static_cast<const T*>(p.x) + r * p.dim;
  T* out = static_cast<T*>(p.out) + r * p.dim;
  if (j >= half) {  // past the rotated columns: a copy
    const int64_t c = j + half;
    out[c] = x[c];
    return;
  }
  const int64_t i0 = p.interleaved ? 2 * j : j, i1 = p.interleaved ? 2 * j + 1 : j + half;
  using A = RowAcc<T>;
  const int64_t k = p.pos[r] * half + j;
  const A c = static_cast<const A*>(p.cos)[k], s = static_cast<const A*>(p.sin)[k];
  const A a = Cast<A>(x[i0]), b = Cast<A>(x[i1]);
  out[i0] = Cast<T>(a * c - b * s);
  out[i1] = Cast<T>(b * c + a * s);
}

}  // namespace pygpukit::kernels

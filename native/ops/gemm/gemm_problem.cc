#include "ops/gemm/gemm_problem.h"

namespace pygpukit::ops {

kernels::GemmParams ParamsOf(const GemmProblem& p) {
  kernels::GemmParams g{};
  g.m = p.m;
  g.n = p.n;
  g.k = p.k;
  g.batch = p.batch;
  g.a = p.a.ptr;
  g.a_batch = p.a.batch;
  g.a_row = p.a.row;
  g.a_col = p.a.col;
  g.b = p.b.ptr;
  g.b_batch = p.b.batch;
  g.b_row = p.b.row;
  g.b_col = p.b.col;
  g.d = p.d;
  g.d_batch = p.d_batch;
  g.d_row = p.d_row;
  g.c = p.c.ptr;
  g.c_batch = p.c.batch;
  g.c_row = p.c.row;
  g.c_col = p.c.col;
  g.bias = p.bias;
  g.bias_batch = p.bias_batch;
  g.alpha = p.alpha;
  g.beta = p.c.ptr != nullptr ? p.beta : 0.0;
  g.activation = p.act;
  g.groups = static_cast<int32_t>(p.groups);
  g.group_table = p.group_table;
  // The per-tensor and per-row / column scales as the sm90 kernels apply them (block scales:
  // cuBLASLt only, which reads GemmProblem's).
  auto kind = [](const GemmScale& s) {
    if (s.ptr == nullptr) return kernels::kScaleNone;
    return s.mode == GemmScaleMode::kTensor  ? kernels::kScaleTensor
           : s.mode == GemmScaleMode::kOuter ? kernels::kScaleOuter
                                             : static_cast<kernels::GemmScaleKind>(-1);
  };
  g.scale_a = p.scale_a.ptr;
  g.scale_b = p.scale_b.ptr;
  g.scale_kind_a = kind(p.scale_a);
  g.scale_kind_b = kind(p.scale_b);
  return g;
}

namespace {
// Operands with a zero batch stride are shared by the whole batch: read once.
int64_t Times(const GemmProblem& p, int64_t batch_stride) {
  return batch_stride != 0 ? p.batch : 1;
}
}  // namespace

LaunchCost GemmCost(const GemmProblem& p) {
  const int64_t in = ItemSize(p.in), out = ItemSize(p.out);
  LaunchCost c;
  c.flops = 2 * p.batch * p.m * p.n * p.k;
  // A grouped product reads one B (and bias) per group.
  const int64_t per_b = p.grouped() ? p.groups : 1;
  c.bytes = Times(p, p.a.batch) * p.m * p.k * in + per_b * Times(p, p.b.batch) * p.k * p.n * in +
            p.batch * p.m * p.n * out;
  if (p.beta != 0.0 && p.c.ptr != nullptr) c.bytes += Times(p, p.c.batch) * p.m * p.n * out;
  if (p.bias != nullptr) c.bytes += per_b * Times(p, p.bias_batch) * p.n * out;
  return c;
}

LaunchCost GemmEpilogueCost(const GemmProblem& p, DType src) {
  const int64_t n = p.batch * p.m * p.n, out = ItemSize(p.out);
  LaunchCost c{n, n * (ItemSize(src) + out)};
  if (p.beta != 0.0 && p.c.ptr != nullptr) c.bytes += n * out;
  if (p.bias != nullptr) c.bytes += Times(p, p.bias_batch) * p.n * out;
  return c;
}

TuneKey TuneKeyOf(const GemmProblem& p) {
  TuneKey k;
  k.in = p.in;
  k.out = p.out;
  k.tf32 = p.tf32();
  k.m = p.m;
  k.n = p.n;
  k.k = p.k;
  k.batch = p.batch;
  k.a = TuneLayoutOfA(p.a.row, p.a.col);
  k.b = TuneLayoutOfB(p.b.row, p.b.col);
  k.fused = p.fused();
  const int in = ItemSize(p.in), out = ItemSize(p.out);
  k.aligned16 =
      Rows16Aligned(p.a.ptr, in, {p.a.batch, p.a.row, p.a.col}) &&
      Rows16Aligned(p.b.ptr, in, {p.b.batch, p.b.row, p.b.col}) &&
      Rows16Aligned(p.d, out, {p.d_batch, p.d_row, 1}) &&
      (p.c.ptr == nullptr || Rows16Aligned(p.c.ptr, out, {p.c.batch, p.c.row, p.c.col})) &&
      (p.bias == nullptr || Rows16Aligned(p.bias, out, {p.bias_batch}));
  return k;
}

GemmProblem RowSlice(const GemmProblem& p, int64_t r0, int64_t rows) {
  GemmProblem s = p;
  s.m = rows;
  s.a.ptr = static_cast<const char*>(p.a.ptr) + r0 * p.a.row * ItemSize(p.in);
  s.d = static_cast<char*>(p.d) + r0 * p.d_row * ItemSize(p.out);
  if (p.c.ptr != nullptr) {
    s.c.ptr = static_cast<const char*>(p.c.ptr) + r0 * p.c.row * ItemSize(p.out);
  }
  // A per-row scale of A starts at the slice's first row (block scales are never sliced:
  // RowBlockRows).
  if (p.scaled() && p.scale_a.mode == GemmScaleMode::kOuter) s.scale_a.ptr = p.scale_a.ptr + r0;
  return s;
}

GemmProblem PlainInto(const GemmProblem& p, void* tmp, DType acc) {
  GemmProblem s = p;
  s.out = acc;
  s.d = tmp;
  s.d_batch = p.m * p.n;
  s.d_row = p.n;
  s.c = {};
  s.bias = nullptr;
  s.bias_batch = 0;
  s.alpha = 1.0;
  s.beta = 0.0;
  s.act = kernels::kActNone;
  return s;
}

}  // namespace pygpukit::ops

// scaled_dot_product_attention: validation, the fused kernels where they serve the problem
// (CUDA, 16-bit, head dim 64 / 128: nn_kernels.h kAttentionKernel), else the composed path (the
// reference on every backend): per chunk of query rows,
// scores = scale * q @ k^T + mask in float32 (one GEMM with the mask as its C), a softmax over
// keys that gives 0 for a row with no key left, then P (in the inputs' dtype) @ v. Grouped-query
// heads are a broadcast of the batched product (q split into (kv heads, group)), not a copy of
// k and v.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/shape.h"
#include "core/status.h"
#include "ops/nn/attention_fused.h"
#include "ops/nn/nn.h"
#include "ops/nn/nn_kernels.h"
#include "ops/ops.h"

namespace pygpukit::ops {
namespace {

constexpr absl::string_view kOp = "scaled_dot_product_attention";
// Float32 scores held at once (per chunk of query rows): 256 MiB.
constexpr int64_t kScoreBudget = int64_t{64} << 20;

bool AttentionDType(DType d) {
  return d == DType::Float16 || d == DType::BFloat16 || d == DType::Float32 || d == DType::Float64;
}

// `a` with a size-1 axis inserted at `axis` (negative from the end of the result).
absl::StatusOr<GPUArray> Insert(const GPUArray& a, int64_t axis) { return ExpandDims(a, axis); }

// The additive float mask (float32; float64 for float64 inputs) over (..., Hq, Sq, Sk) as given
// (any broadcastable shape): a boolean mask's False is -inf, True 0.
absl::StatusOr<GPUArray> AdditiveMask(const GPUArray& mask, DType acc) {
  if (mask.dtype() == DType::Bool) {
    PGK_ASSIGN_OR_RETURN(GPUArray zero, Full({}, Scalar::Float(0.0), acc, mask.device()));
    PGK_ASSIGN_OR_RETURN(
        GPUArray ninf,
        Full({}, Scalar::Float(-std::numeric_limits<double>::infinity()), acc, mask.device()));
    return Where(mask, zero, ninf);
  }
  return AsType(mask, acc, false);
}

// The additive causal mask of `rows` query rows over sk keys: -inf from diagonal `first` of
// each row on (row r's first masked key is r + first), 0 before.
absl::StatusOr<GPUArray> CausalMask(int64_t rows, int64_t sk, int64_t first, DType acc,
                                    Device device) {
  PGK_ASSIGN_OR_RETURN(
      GPUArray ninf,
      Full({rows, sk}, Scalar::Float(-std::numeric_limits<double>::infinity()), acc, device));
  return Triu(ninf, first);
}

// Float32 scores held at once per chunk of query rows (PYGPUKIT_ATTENTION_SCORES overrides,
// read once; tests use it to reach the chunked path with small problems).
int64_t ScoreBudget() {
  static const int64_t budget = [] {
    const char* env = std::getenv("PYGPUKIT_ATTENTION_SCORES");
    const int64_t v = env != nullptr ? std::atoll(env) : 0;
    return v > 0 ? v : kScoreBudget;
  }();
  return budget;
}

// Index items selecting rows [r0, r1) of axis -2 of an array of `ndim` dims.
std::vector<IndexItem> RowsOf(int ndim, int64_t r0, int64_t r1) {
  std::vector<IndexItem> items(static_cast<size_t>(ndim));
  for (IndexItem& it : items) it.kind = IndexItem::Kind::kSlice;
  items[ndim - 2].start = r0;
  items[ndim - 2].stop = r1;
  return items;
}

// Whether `a`'s rows suit the fused kernels' 16-byte copies: unit stride along the last dim,
// the other strides non-negative multiples of 8 elements (size-1 dims excepted), base aligned.
bool FusedLayout(const GPUArray& a) {
  const int n = a.ndim();
  if (a.strides()[n - 1] != 1 && a.shape()[n - 1] != 1) return false;
  for (int d = 0; d < n - 1; ++d) {
    if (a.shape()[d] != 1 && (a.strides()[d] < 0 || a.strides()[d] % 8 != 0)) return false;
  }
  return reinterpret_cast<uintptr_t>(a.data()) % 16 == 0;
}

}  // namespace

absl::StatusOr<std::optional<GPUArray>> FusedAttention(const GPUArray& q, const GPUArray& k,
                                                       const GPUArray& v, const GPUArray* mask,
                                                       bool causal, double scale,
                                                       const PagedKv* paged) {
  const int nd = q.ndim();
  const int64_t e = q.shape()[nd - 1];
  // (The kernels' head dims; their device is checked by the slot.)
  if (nd > 4 || (q.dtype() != DType::BFloat16 && q.dtype() != DType::Float16) ||
      (e != 64 && e != 128) || v.shape()[nd - 1] != e || !FusedLayout(q) || !FusedLayout(k) ||
      !FusedLayout(v)) {
    return std::nullopt;
  }
  kernels::AttnParams p{};
  auto strides = [nd](const GPUArray& a, int64_t& sb, int64_t& sh, int64_t& ss) {
    sb = nd == 4 ? a.strides()[0] : 0;
    sh = a.strides()[nd - 3];
    ss = a.strides()[nd - 2];
  };
  strides(q, p.q_b, p.q_h, p.q_s);
  strides(k, p.k_b, p.k_h, p.k_s);
  strides(v, p.v_b, p.v_h, p.v_s);
  p.batch = nd == 4 ? q.shape()[0] : 1;
  p.hq = q.shape()[nd - 3];
  p.hk = k.shape()[nd - 3];
  p.sq = q.shape()[nd - 2];
  p.sk = k.shape()[nd - 2];
  if (paged != nullptr) {  // k, v: (blocks, Hk, block size, D); k_b / v_b are block strides
    p.block_size = k.shape()[2];
    p.num_blocks = k.shape()[0];
    p.table_stride = paged->table.shape()[1];
    p.sk = p.table_stride * p.block_size;
  }
  p.scale_log2 = static_cast<float>(scale * 1.4426950408889634);
  p.causal = causal ? 1 : 0;
  PGK_ASSIGN_OR_RETURN(GPUArray out, Empty(q.shape(), q.dtype(), q.device()));
  p.o_s = e;
  p.o_h = p.sq * e;
  p.o_b = p.hq * p.sq * e;
  std::optional<GPUArray> m;
  if (mask != nullptr) {
    PGK_ASSIGN_OR_RETURN(GPUArray add, AdditiveMask(*mask, DType::Float32));
    Shape full(q.shape().begin(), q.shape().end() - 1);
    full.push_back(p.sk);
    PGK_ASSIGN_OR_RETURN(m, BroadcastTo(add, full));
    const Strides& st = m->strides();
    p.m_b = nd == 4 ? st[0] : 0;
    p.m_h = st[nd - 3];
    p.m_q = st[nd - 2];
    p.m_k = st[nd - 1];
  }
  PGK_ASSIGN_OR_RETURN(
      LaunchContext ctx,
      LaunchContext::Open(kOp, {&q, &k, &v, &out, m ? &*m : nullptr,
                                paged ? &paged->table : nullptr, paged ? &paged->lens : nullptr}));
  if (paged != nullptr) {
    p.block_table = static_cast<const int64_t*>(paged->table.data());
    p.seq_lens = static_cast<const int64_t*>(paged->lens.data());
  }
  p.q = q.data();
  p.k = k.data();
  p.v = v.data();
  p.o = out.data();
  p.mask = m ? static_cast<const float*>(m->data()) : nullptr;
  absl::Status st = kAttentionKernel(ctx, q.dtype(), e, p);
  if (absl::IsUnimplemented(st)) return std::nullopt;
  PGK_RETURN_IF_ERROR(st);
  return out;
}

absl::StatusOr<GPUArray> ScaledDotProductAttention(const GPUArray& q_in, const GPUArray& k_in,
                                                   const GPUArray& v_in, const GPUArray* mask,
                                                   bool is_causal, std::optional<double> scale,
                                                   bool enable_gqa) {
  for (const GPUArray* a : {&k_in, &v_in}) {
    if (a->device() != q_in.device()) {
      return ValueError(absl::StrCat(kOp, ": q, k and v are on different devices (",
                                     q_in.device().ToString(), " and ", a->device().ToString(),
                                     ")"));
    }
  }
  if (q_in.dtype() != k_in.dtype() || q_in.dtype() != v_in.dtype()) {
    return TypeError(absl::StrCat(kOp, ": q, k and v must have one dtype, got ",
                                  DTypeName(q_in.dtype()), ", ", DTypeName(k_in.dtype()), " and ",
                                  DTypeName(v_in.dtype())));
  }
  if (!AttentionDType(q_in.dtype())) {
    return TypeError(absl::StrCat(kOp, ": unsupported dtype ", DTypeName(q_in.dtype()),
                                  " (supported: float16, bfloat16, float32, float64)"));
  }
  const std::string shapes =
      absl::StrCat("q ", ShapeToString(q_in.shape()), ", k ", ShapeToString(k_in.shape()), ", v ",
                   ShapeToString(v_in.shape()));
  if (q_in.ndim() < 2 || k_in.ndim() != q_in.ndim() || v_in.ndim() != q_in.ndim()) {
    return ValueError(absl::StrCat(kOp,
                                   ": q, k and v must have one rank of at least 2 (..., "
                                   "heads, sequence, head dim); got ",
                                   shapes));
  }
  // Without a head axis: one head.
  GPUArray q = q_in, k = k_in, v = v_in;
  const bool headless = q_in.ndim() == 2;
  if (headless) {
    PGK_ASSIGN_OR_RETURN(q, Insert(q_in, 0));
    PGK_ASSIGN_OR_RETURN(k, Insert(k_in, 0));
    PGK_ASSIGN_OR_RETURN(v, Insert(v_in, 0));
  }
  const int nd = q.ndim();
  const int64_t e = q.shape()[nd - 1], sq = q.shape()[nd - 2], hq = q.shape()[nd - 3];
  const int64_t sk = k.shape()[nd - 2], hk = k.shape()[nd - 3], dv = v.shape()[nd - 1];
  if (k.shape()[nd - 1] != e || v.shape()[nd - 2] != sk || v.shape()[nd - 3] != hk) {
    return ValueError(absl::StrCat(kOp,
                                   ": k must be (..., kv heads, S, E) with q's head dim E and "
                                   "v (..., kv heads, S, Ev) with k's heads and length; got ",
                                   shapes));
  }
  for (int d = 0; d < nd - 3; ++d) {
    if (q.shape()[d] != k.shape()[d] || q.shape()[d] != v.shape()[d]) {
      return ValueError(
          absl::StrCat(kOp, ": q, k and v must have the same batch dims; got ", shapes));
    }
  }
  if (hq != hk && !(enable_gqa && hk > 0 && hq % hk == 0)) {
    return ValueError(absl::StrCat(kOp, ": ", hq, " query heads and ", hk, " key / value heads",
                                   enable_gqa ? " (grouped-query attention needs a multiple)"
                                              : " (enable_gqa=True for "
                                                "grouped-query attention)",
                                   "; got ", shapes));
  }
  if (mask != nullptr && is_causal) {
    return ValueError(absl::StrCat(kOp, ": give attn_mask or is_causal, not both"));
  }
  const double s = scale.value_or(1.0 / std::sqrt(static_cast<double>(std::max<int64_t>(e, 1))));
  const DType acc = q.dtype() == DType::Float64 ? DType::Float64 : DType::Float32;
  const Shape batch(q.shape().begin(), q.shape().end() - 3);
  const int64_t g = hk > 0 ? hq / hk : 1;
  // The scores' shape with the query heads split as (kv heads, group).
  auto split = [&](int64_t rows, int64_t cols) {
    Shape sh = batch;
    sh.insert(sh.end(), {hk, g, rows, cols});
    return sh;
  };
  Shape out_shape = batch;
  out_shape.insert(out_shape.end(), {hq, sq, dv});
  // The additive mask, its head axis split like the scores'.
  if (mask != nullptr) {
    if (mask->device() != q.device()) {
      return ValueError(absl::StrCat(kOp, ": attn_mask is on ", mask->device().ToString(),
                                     ", q on ", q.device().ToString()));
    }
    if (mask->dtype() != DType::Bool && !IsFloating(mask->dtype())) {
      return TypeError(absl::StrCat(kOp, ": attn_mask must be bool or floating, got ",
                                    DTypeName(mask->dtype())));
    }
    Shape full = batch;
    full.insert(full.end(), {hq, sq, sk});
    absl::StatusOr<Shape> b = BroadcastShapes(mask->shape(), full, kOp);
    if (mask->ndim() > static_cast<int>(full.size()) || !b.ok() || *b != full) {
      return ValueError(absl::StrCat(kOp, ": attn_mask of shape ", ShapeToString(mask->shape()),
                                     " does not broadcast to the scores' ", ShapeToString(full)));
    }
  }
  // The causal mask is built per chunk of query rows (below); with one query row it masks
  // nothing (that row sees keys 0 .. sk - 1).
  const bool causal = is_causal && sq > 1;
  // Empty problems: an empty result, or zeros when no key exists (softmax over nothing).
  int64_t out_size = 1;
  for (int64_t d : out_shape) out_size *= d;
  if (out_size == 0 || sk == 0) {
    PGK_ASSIGN_OR_RETURN(GPUArray z, Zeros(out_shape, q.dtype(), q.device()));
    if (headless) return Reshape(z, {sq, dv});
    return z;
  }
  PGK_ASSIGN_OR_RETURN(std::optional<GPUArray> fused, FusedAttention(q, k, v, mask, is_causal, s));
  if (fused) {
    if (headless) return Reshape(*fused, {sq, dv});
    return *fused;
  }
  // The composed path's additive mask, its head axis split like the scores' (kv heads, group).
  std::optional<GPUArray> addmask;
  if (mask != nullptr) {
    PGK_ASSIGN_OR_RETURN(GPUArray m, AdditiveMask(*mask, acc));
    Shape padded(q.ndim() - m.ndim(), 1);
    padded.insert(padded.end(), m.shape().begin(), m.shape().end());
    Shape grouped(padded.begin(), padded.end() - 3);
    if (padded[padded.size() - 3] == 1) {
      grouped.insert(grouped.end(), {1, 1});
    } else {
      grouped.insert(grouped.end(), {hk, g});
    }
    grouped.insert(grouped.end(), padded.end() - 2, padded.end());
    PGK_ASSIGN_OR_RETURN(addmask, Reshape(m, grouped));
  }
  // Without a mask the query heads of a group fold into the rows, q as (..., Hk, G * Sq, E)
  // against k and v as they are (equal batch dims: nothing broadcast, so nothing copied). With
  // one the heads split as (..., Hk, G, Sq, E) against k and v with a size-1 group axis, which
  // the mask's rows follow.
  const bool fold = !addmask && !causal;
  const int64_t rows_total = fold ? g * sq : sq;
  GPUArray qm, kt, vm;
  if (fold) {
    Shape folded = batch;
    folded.insert(folded.end(), {hk, g * sq, e});
    PGK_ASSIGN_OR_RETURN(qm, Reshape(q, folded));
    PGK_ASSIGN_OR_RETURN(kt, MatrixTranspose(k));
    vm = v;
  } else {
    PGK_ASSIGN_OR_RETURN(qm, Reshape(q, split(sq, e)));
    PGK_ASSIGN_OR_RETURN(GPUArray kg, Insert(k, -3));
    PGK_ASSIGN_OR_RETURN(kt, MatrixTranspose(kg));
    PGK_ASSIGN_OR_RETURN(vm, Insert(v, -3));
  }
  // Rows per chunk so that the float32 scores stay within the budget.
  const int64_t per_row = out_size / (sq * dv) * sk / (fold ? g : 1);
  const int64_t rows =
      std::clamp<int64_t>(ScoreBudget() / std::max<int64_t>(per_row, 1), 1, rows_total);
  std::vector<GPUArray> parts;
  for (int64_t r0 = 0; r0 < rows_total; r0 += rows) {
    const int64_t r1 = std::min(rows_total, r0 + rows);
    const bool whole = r0 == 0 && r1 == rows_total;
    GPUArray qc = qm;
    if (!whole) {
      PGK_ASSIGN_OR_RETURN(qc, Index(qm, RowsOf(qm.ndim(), r0, r1)));
    }
    GemmEpilogue epi;
    epi.alpha = s;
    epi.out_dtype = acc;
    std::optional<GPUArray> mc = addmask;
    if (mc && !whole && mc->shape()[mc->ndim() - 2] == sq && sq > 1) {
      PGK_ASSIGN_OR_RETURN(mc, Index(*mc, RowsOf(mc->ndim(), r0, r1)));
    }
    if (causal) {  // rows r0 .. r1 - 1: key j masked past r + sk - sq
      PGK_ASSIGN_OR_RETURN(mc, CausalMask(r1 - r0, sk, sk - sq + 1 + r0, acc, q.device()));
    }
    if (mc) {
      PGK_ASSIGN_OR_RETURN(epi.c, BroadcastTo(*mc, split(r1 - r0, sk)));
      epi.beta = 1.0;
    }
    PGK_ASSIGN_OR_RETURN(GPUArray scores, Gemm(qc, kt, epi));
    PGK_ASSIGN_OR_RETURN(GPUArray p, SoftmaxMasked(scores));
    PGK_ASSIGN_OR_RETURN(GPUArray pin, AsType(p, q.dtype(), false));
    PGK_ASSIGN_OR_RETURN(GPUArray o, Matmul(pin, vm));
    parts.push_back(std::move(o));
  }
  GPUArray out = parts.front();
  if (parts.size() > 1) {
    PGK_ASSIGN_OR_RETURN(out, Concat(parts, -2));
  }
  Shape final_shape = out_shape;
  if (headless) final_shape = {sq, dv};
  return Reshape(out, final_shape);
}

}  // namespace pygpukit::ops

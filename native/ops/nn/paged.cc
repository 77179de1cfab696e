// Paged KV caches (gp.nn.paged_kv_append, gp.nn.paged_attention): each sequence's keys and values
// live in fixed-size blocks of one shared cache, found through its row of a block table. Both
// ops compose the indexing ops (gather, scatter; bounds-checked) with the attention op: the
// reference and the path on every backend until a fused kernel reads the blocks in place.
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/shape.h"
#include "core/status.h"
#include "ops/nn/attention_fused.h"
#include "ops/nn/nn.h"
#include "ops/ops.h"

namespace pygpukit::ops {
namespace {

// The caches (blocks, Hk, block size, D) of one floating dtype and shape, and a 2-D integer table.
absl::Status CheckCache(const GPUArray& kc, const GPUArray& vc, const GPUArray& table,
                        absl::string_view op) {
  if (kc.ndim() != 4 || kc.shape() != vc.shape() || kc.dtype() != vc.dtype()) {
    return ValueError(absl::StrCat(op,
                                   ": k_cache and v_cache must be (blocks, kv heads, block "
                                   "size, head dim) arrays of one shape and dtype; got ",
                                   ShapeToString(kc.shape()), " ", DTypeName(kc.dtype()), " and ",
                                   ShapeToString(vc.shape()), " ", DTypeName(vc.dtype())));
  }
  if (table.ndim() != 2 || !IsInteger(table.dtype())) {
    return ValueError(absl::StrCat(op,
                                   ": block_table must be a 2-D integer array (sequences, "
                                   "blocks); got ",
                                   ShapeToString(table.shape()), " ", DTypeName(table.dtype())));
  }
  for (const GPUArray* a : {&vc, &table}) {
    if (a->device() != kc.device()) {
      return ValueError(absl::StrCat(op,
                                     ": the caches and the block table are on different "
                                     "devices (",
                                     kc.device().ToString(), " and ", a->device().ToString(), ")"));
    }
  }
  return absl::OkStatus();
}

// `lengths` (B,) integers on the caches' device, as int64 of shape `shape` (B, 1, ...).
absl::StatusOr<GPUArray> PerSequence(const GPUArray& lengths, int64_t batch,
                                     absl::Span<const int64_t> shape, absl::string_view what,
                                     absl::string_view op) {
  if (lengths.ndim() != 1 || lengths.shape()[0] != batch || !IsInteger(lengths.dtype())) {
    return ValueError(absl::StrCat(op, ": ", what, " must be 1-D integers, one per sequence (",
                                   batch, "); got ", ShapeToString(lengths.shape()), " ",
                                   DTypeName(lengths.dtype())));
  }
  PGK_ASSIGN_OR_RETURN(GPUArray wide, AsType(lengths, DType::Int64, false));
  return Reshape(wide, shape);
}

// The cache block and in-block offset of each position `pos` (B, n) int64 of the sequences of
// `table`: positions marked invalid read block 0 (masked later), so unused table entries are
// never followed.
absl::StatusOr<std::pair<GPUArray, GPUArray>> Locate(const GPUArray& table, const GPUArray& pos,
                                                     const GPUArray* valid, int64_t block) {
  const EwOperand bs{Scalar::Int(block)};
  PGK_ASSIGN_OR_RETURN(GPUArray col, Binary(ElementwiseOp::kFloorDivide, pos, bs));
  PGK_ASSIGN_OR_RETURN(GPUArray off, Binary(ElementwiseOp::kRemainder, pos, bs));
  if (valid != nullptr) {
    PGK_ASSIGN_OR_RETURN(col, Where(*valid, col, Scalar::Int(0)));
    PGK_ASSIGN_OR_RETURN(off, Where(*valid, off, Scalar::Int(0)));
  }
  PGK_ASSIGN_OR_RETURN(GPUArray blocks, TakeAlongAxis(table, col, 1));
  if (valid != nullptr) {
    PGK_ASSIGN_OR_RETURN(blocks, Where(*valid, blocks, Scalar::Int(0)));
  }
  return std::make_pair(blocks, off);
}

// Index items cache[blocks, :, offsets, :] (arrays 0 and 1).
std::vector<IndexItem> CacheItems() {
  std::vector<IndexItem> items(4);
  items[0].kind = IndexItem::Kind::kArray;
  items[0].array = 0;
  items[1].kind = IndexItem::Kind::kSlice;
  items[2].kind = IndexItem::Kind::kArray;
  items[2].array = 1;
  items[3].kind = IndexItem::Kind::kSlice;
  return items;
}

}  // namespace

absl::Status PagedKvAppend(const GPUArray& k_cache, const GPUArray& v_cache, const GPUArray& k,
                           const GPUArray& v, const GPUArray& block_table, const GPUArray& start) {
  constexpr absl::string_view op = "paged_kv_append";
  PGK_RETURN_IF_ERROR(CheckCache(k_cache, v_cache, block_table, op));
  const int64_t batch = block_table.shape()[0];
  const Shape& cs = k_cache.shape();
  if (k.ndim() != 4 || k.shape() != v.shape() || k.shape()[0] != batch || k.shape()[1] != cs[1] ||
      k.shape()[3] != cs[3]) {
    return ValueError(absl::StrCat(op, ": k and v must be (sequences ", batch, ", kv heads ", cs[1],
                                   ", tokens, head dim ", cs[3], "); got ",
                                   ShapeToString(k.shape()), " and ", ShapeToString(v.shape())));
  }
  const int64_t t = k.shape()[2];
  PGK_ASSIGN_OR_RETURN(GPUArray first, PerSequence(start, batch, {batch, 1}, "start", op));
  PGK_ASSIGN_OR_RETURN(GPUArray steps, ArangeInt(0, t, 1, DType::Int64, k.device()));
  PGK_ASSIGN_OR_RETURN(GPUArray pos, Binary(ElementwiseOp::kAdd, first, steps));  // (B, T)
  PGK_ASSIGN_OR_RETURN(auto where, Locate(block_table, pos, nullptr, cs[2]));
  const GPUArray arrays[] = {where.first, where.second};
  const std::vector<IndexItem> items = CacheItems();
  // cache[blocks, :, offsets, :] is (B, T, Hk, D): the arrays' shape first (NumPy's rule for
  // arrays apart), then the sliced dims.
  const int64_t perm[] = {0, 2, 1, 3};
  PGK_ASSIGN_OR_RETURN(GPUArray kt, PermuteDims(k, perm));
  PGK_ASSIGN_OR_RETURN(GPUArray vt, PermuteDims(v, perm));
  PGK_RETURN_IF_ERROR(AdvancedAssign(k_cache, items, arrays, &kt, nullptr));
  return AdvancedAssign(v_cache, items, arrays, &vt, nullptr);
}

absl::StatusOr<GPUArray> PagedAttention(const GPUArray& q, const GPUArray& k_cache,
                                        const GPUArray& v_cache, const GPUArray& block_table,
                                        const GPUArray& seq_lens, std::optional<double> scale,
                                        bool is_causal, bool check_table) {
  constexpr absl::string_view op = "paged_attention";
  PGK_RETURN_IF_ERROR(CheckCache(k_cache, v_cache, block_table, op));
  const int64_t batch = block_table.shape()[0];
  const Shape& cs = k_cache.shape();
  if (q.ndim() != 4 || q.shape()[0] != batch || q.shape()[3] != cs[3]) {
    return ValueError(absl::StrCat(op, ": q must be (sequences ", batch,
                                   ", heads, tokens, head dim ", cs[3], "); got ",
                                   ShapeToString(q.shape())));
  }
  if (q.shape()[1] % cs[1] != 0) {
    return ValueError(absl::StrCat(op, ": ", q.shape()[1],
                                   " query heads are not a multiple of the "
                                   "cache's ",
                                   cs[1], " kv heads"));
  }
  const int64_t sq = q.shape()[2], len = block_table.shape()[1] * cs[2];
  PGK_ASSIGN_OR_RETURN(GPUArray lens, PerSequence(seq_lens, batch, {batch, 1}, "seq_lens", op));
  // The fused kernel reads the blocks in place (its block ids clamped to the cache, so a bad
  // table cannot make it read past it; `check_table` turns that into an IndexError first).
  if (check_table) {
    PGK_ASSIGN_OR_RETURN(GPUArray cols,
                         ArangeInt(0, block_table.shape()[1], 1, DType::Int64, q.device()));
    PGK_ASSIGN_OR_RETURN(GPUArray first,
                         Binary(ElementwiseOp::kMultiply, cols, Scalar::Int(cs[2])));
    PGK_ASSIGN_OR_RETURN(GPUArray used, Binary(ElementwiseOp::kLess, first, lens));  // (B, n)
    PGK_ASSIGN_OR_RETURN(GPUArray ids, Where(used, block_table, Scalar::Int(0)));
    PGK_ASSIGN_OR_RETURN(GPUArray lo, Reduce(ReduceOp::kMin, ids));
    PGK_ASSIGN_OR_RETURN(GPUArray hi, Reduce(ReduceOp::kMax, ids));
    const GPUArray both[] = {lo, hi};
    PGK_ASSIGN_OR_RETURN(GPUArray pair, Stack(both, 0));
    PGK_ASSIGN_OR_RETURN(pair, AsType(pair, DType::Int64, false));
    int64_t host[2];
    PGK_RETURN_IF_ERROR(ToHost(pair, host));
    if (host[0] < 0 || host[1] >= cs[0]) {
      return IndexError(absl::StrCat(op, ": block id ", host[0] < 0 ? host[0] : host[1],
                                     " is out of range for a cache of ", cs[0], " blocks"));
    }
  }
  {
    PGK_ASSIGN_OR_RETURN(GPUArray table64, AsType(block_table, DType::Int64, false));
    PGK_ASSIGN_OR_RETURN(table64, Contiguous(table64));
    PGK_ASSIGN_OR_RETURN(GPUArray lens64, Reshape(lens, {batch}));
    PGK_ASSIGN_OR_RETURN(lens64, Contiguous(lens64));
    const PagedKv paged{table64, lens64};
    const double s = scale.value_or(1.0 / std::sqrt(static_cast<double>(cs[3])));
    PGK_ASSIGN_OR_RETURN(std::optional<GPUArray> fused,
                         FusedAttention(q, k_cache, v_cache, nullptr, is_causal, s, &paged));
    if (fused) return *fused;
  }
  PGK_ASSIGN_OR_RETURN(GPUArray j, ArangeInt(0, len, 1, DType::Int64, q.device()));
  PGK_ASSIGN_OR_RETURN(GPUArray valid, Binary(ElementwiseOp::kLess, j, lens));  // (B, L)
  PGK_ASSIGN_OR_RETURN(GPUArray pos, BroadcastTo(j, {batch, len}));
  PGK_ASSIGN_OR_RETURN(auto where, Locate(block_table, pos, &valid, cs[2]));
  const GPUArray arrays[] = {where.first, where.second};
  const std::vector<IndexItem> items = CacheItems();
  const int64_t perm[] = {0, 2, 1, 3};  // (B, L, Hk, D) -> (B, Hk, L, D)
  PGK_ASSIGN_OR_RETURN(GPUArray kg, AdvancedIndex(k_cache, items, arrays));
  PGK_ASSIGN_OR_RETURN(GPUArray vg, AdvancedIndex(v_cache, items, arrays));
  PGK_ASSIGN_OR_RETURN(kg, PermuteDims(kg, perm));
  PGK_ASSIGN_OR_RETURN(vg, PermuteDims(vg, perm));
  // Keys past each sequence's length are masked; causal: q's rows are the sequence's last sq
  // positions, row i sees keys j <= len - sq + i.
  PGK_ASSIGN_OR_RETURN(GPUArray mask, Reshape(valid, {batch, 1, 1, len}));
  if (is_causal) {
    PGK_ASSIGN_OR_RETURN(GPUArray lens4, Reshape(lens, {batch, 1, 1, 1}));
    PGK_ASSIGN_OR_RETURN(GPUArray rows, ArangeInt(-sq, 0, 1, DType::Int64, q.device()));
    PGK_ASSIGN_OR_RETURN(rows, Reshape(rows, {1, 1, sq, 1}));
    PGK_ASSIGN_OR_RETURN(GPUArray last, Binary(ElementwiseOp::kAdd, lens4, rows));  // len-sq+i
    PGK_ASSIGN_OR_RETURN(GPUArray j4, Reshape(j, {1, 1, 1, len}));
    PGK_ASSIGN_OR_RETURN(GPUArray seen, Binary(ElementwiseOp::kLessEqual, j4, last));
    PGK_ASSIGN_OR_RETURN(mask, Binary(ElementwiseOp::kLogicalAnd, mask, seen));
  }
  return ScaledDotProductAttention(q, kg, vg, &mask, false, scale, q.shape()[1] != cs[1]);
}

}  // namespace pygpukit::ops

// The fused attention kernels' parameter block (the op layer fills it, cuda/attention_sm80.cu
// reads it): q (B, Hq, Sq, D), k and v (B, Hk, Sk, D), o (B, Hq, Sq, D), each with its own
// batch / head / row strides in elements and a unit stride along D; an optional additive
// float32 mask with broadcast strides (0 where it is broadcast).
#pragma once

#include <cstdint>

namespace pygpukit::kernels {

struct AttnParams {
  const void* q;
  const void* k;
  const void* v;
  void* o;
  const float* mask;  // nullptr: none
  int64_t q_b, q_h, q_s;
  int64_t k_b, k_h, k_s;
  int64_t v_b, v_h, v_s;
  int64_t o_b, o_h, o_s;
  int64_t m_b, m_h, m_q, m_k;
  int64_t batch, hq, hk, sq, sk;
  float scale_log2;  // softmax scale times log2(e): scores go through exp2
  int32_t causal;    // query i sees keys j <= i + sk - sq
  // Split-KV (splits > 1, few CTAs for the GPU: decode of few long sequences): each of the
  // `splits` CTAs of a row block takes a share of its key tiles and writes its unnormalized
  // 64 x D output to `partial_o` and per row the running maximum and sum to `partial_ml`, at
  // unit ((b * hk + kv head) * row blocks + row block) * splits + split; a second kernel
  // (pgk_attn_combine_*) merges them.
  float* partial_o;
  float* partial_ml;
  int32_t splits;
  int32_t row_blocks;
  // Paged KV cache (block_table != nullptr): k and v are (blocks, Hk, block_size, D) with k_b /
  // v_b the block strides; key j of sequence b is row j % block_size of block
  // block_table[b * table_stride + j / block_size]; the sequence has seq_lens[b] keys (sk is
  // the most any has, the table's width in keys).
  const int64_t* block_table;
  const int64_t* seq_lens;
  int64_t table_stride;
  int64_t block_size;
  int64_t num_blocks;  // block ids are clamped to [0, num_blocks): never a read past the cache
};

static_assert(sizeof(AttnParams) == 280, "AttnParams layout changed");

/// Dynamic shared memory of the Hopper kernel (attention_sm90.cu) for head dim d (64 or 128):
/// Q (128 rows), kStages K and V tiles of 128 keys (3 stages for d 128, 4 for d 64), the
/// mbarriers, and 1 KiB to align the tiles to the swizzle atom.
constexpr uint32_t AttnSm90Stages(int64_t d) { return d == 128 ? 3 : 4; }
constexpr uint32_t AttnSm90SmemBytes(int64_t d) {
  return static_cast<uint32_t>(128 * d * 2 + 2 * AttnSm90Stages(d) * 128 * d * 2 +
                               (2 + 4 * AttnSm90Stages(d)) * 8 + 1024);
}

}  // namespace pygpukit::kernels

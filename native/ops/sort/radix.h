// The LSD radix sort shared by the CPU loops (g++) and the CUDA kernels (nvcc): the key
// transform that turns every orderable dtype into unsigned integers whose order is NumPy's sort
// order, the digit of a pass, and the tile geometry. One pass over `bits` digit bits is three
// launches: count (per-tile digit histograms), scan (per digit, across tiles) and scatter (each
// element moved to its digit's next free slot, stably).
#pragma once

#include <cstdint>

#include "core/scalar_types.h"

namespace pygpukit::kernels {

/// Elements one scatter/count tile covers: 256 threads x 16 items on CUDA, one loop on the CPU.
inline constexpr int kRadixThreads = 256;
inline constexpr int kRadixItems = 16;
inline constexpr int64_t kRadixTile = int64_t{kRadixThreads} * kRadixItems;
/// Most elements a radix sort or a compaction takes: slot offsets are uint32.
inline constexpr int64_t kRadixMaxElements = (int64_t{1} << 32) - kRadixTile;
/// Digit bits per pass (256 buckets).
inline constexpr int kRadixBits = 8;
inline constexpr int kRadixBuckets = 1 << kRadixBits;

/// How a dtype's bits map to an ordered unsigned key.
enum RadixKind : int32_t {
  kRadixUnsigned = 0,  // bool and unsigned integers: the bits are the key
  kRadixSigned = 1,    // signed integers: the sign bit flipped
  kRadixFloat = 2,     // IEEE formats: negative values complemented, others get the sign bit set
};

/// The key transform (from `src`, or in place when it is null; n elements of the key's width)
/// with the iota of int64 indices, and the finishing step: keys back to values, indices to
/// positions within rows.
struct RadixKeyParams {
  int64_t n;
  const void* src;     // transform: the contiguous values (null: keys holds them)
  void* keys;          // null: indices only
  int64_t* idx;        // null: keys only
  uint64_t magnitude;  // float kinds: the bits of +inf (NaN: magnitude bits above it)
  int64_t row_len;     // finish: idx[i] becomes idx[i] % row_len (reversed: counted from the end)
  int32_t kind;        // RadixKind
  int32_t canonical;   // 1: NaNs all equal (after every number) and -0.0 equal to 0.0
  int32_t reversed;
  int32_t pad;
};

static_assert(sizeof(RadixKeyParams) == 64, "RadixKeyParams layout changed");

/// One LSD pass over digit bits [shift, shift + bits) of the keys, or of each element's row
/// (idx / row_len) when `from_row` is set: that pass orders whole rows, so a batch of rows
/// sorted by key and then by row comes out row by row. The last pass also finishes (`finish`
/// with `key`'s transform): it writes values and positions within rows, and no keys at all
/// when `keys_out` is null.
struct RadixPassParams {
  int64_t n;        // elements
  int64_t row_len;  // elements per row (from_row passes)
  int64_t tiles;    // ceil(n / kRadixTile)
  int32_t shift;
  int32_t bits;  // <= kRadixBits
  int32_t from_row;
  int32_t finish;
  const void* keys_in;
  void* keys_out;
  const int64_t* idx_in;  // null: keys only
  int64_t* idx_out;
  // counts[d * tiles + t]: elements of tile t with digit d; the scan turns them into each
  // tile's offset within digit d and writes the digits' totals.
  uint32_t* counts;
  uint32_t* totals;  // [kRadixBuckets]
  RadixKeyParams key;
};

static_assert(sizeof(RadixPassParams) == 152, "RadixPassParams layout changed");

/// Stream compaction (nonzero) on the same tiles: count the true elements of each tile, scan
/// the counts (the radix scan, one digit), then every tile writes the positions of its true
/// elements, in order, from its offset on.
struct CompactParams {
  int64_t n;
  int64_t tiles;
  const uint8_t* mask;  // bool, contiguous
  int64_t* out;         // positions of the true elements
  uint32_t* counts;     // [tiles]
  uint32_t* totals;     // [1]
  int64_t limit;        // the write: the size of out
};

static_assert(sizeof(CompactParams) == 56, "CompactParams layout changed");

/// The ordered key of the value with bits `b` (K: the unsigned word of the dtype's size).
template <typename K>
PGK_HD K RadixKey(K b, const RadixKeyParams& p) {
  constexpr K sign = K{1} << (sizeof(K) * 8 - 1);
  if (p.kind == kRadixUnsigned) return b;
  if (p.kind == kRadixSigned) return static_cast<K>(b ^ sign);
  const K mag = static_cast<K>(b & static_cast<K>(~sign));
  if (mag > static_cast<K>(p.magnitude)) {
    // NaN: after every number. Canonical keys make all NaNs one value; otherwise the payload
    // is kept (the sign dropped) so the inverse gives the NaN back.
    return p.canonical ? static_cast<K>(~K{0}) : static_cast<K>(mag | sign);
  }
  if (p.canonical && mag == 0) return sign;  // -0.0 as 0.0
  return (b & sign) ? static_cast<K>(~b) : static_cast<K>(b | sign);
}

/// The bits of the value whose ordered key is `k` (canonical keys: NaN and 0.0 for NaNs and
/// zeros of either sign).
template <typename K>
PGK_HD K RadixUnkey(K k, const RadixKeyParams& p) {
  constexpr K sign = K{1} << (sizeof(K) * 8 - 1);
  if (p.kind == kRadixUnsigned) return k;
  if (p.kind == kRadixSigned) return static_cast<K>(k ^ sign);
  return (k & sign) ? static_cast<K>(k & static_cast<K>(~sign)) : static_cast<K>(~k);
}

/// Element i of the transform: its ordered key and its index.
template <typename K>
PGK_HD void RadixKeyElement(const RadixKeyParams& p, int64_t i) {
  if (p.keys != nullptr) {
    K* keys = static_cast<K*>(p.keys);
    keys[i] = RadixKey<K>(p.src != nullptr ? static_cast<const K*>(p.src)[i] : keys[i], p);
  }
  if (p.idx != nullptr) p.idx[i] = i;
}

/// The position within its row of the element at flat index `idx` (see RadixKeyParams).
PGK_HD int64_t RadixRowPosition(int64_t idx, const RadixKeyParams& p) {
  const int64_t pos = p.row_len == p.n ? idx : idx % p.row_len;
  return p.reversed ? p.row_len - 1 - pos : pos;
}

/// Element i of the finishing step.
template <typename K>
PGK_HD void RadixFinishElement(const RadixKeyParams& p, int64_t i) {
  if (p.keys != nullptr) {
    K* keys = static_cast<K*>(p.keys);
    keys[i] = RadixUnkey<K>(keys[i], p);
  }
  if (p.idx != nullptr) p.idx[i] = RadixRowPosition(p.idx[i], p);
}

/// The digit element i falls in for this pass: its key's bits, or its row's.
template <typename K>
PGK_HD uint32_t RadixDigit(K key, int64_t idx, const RadixPassParams& p) {
  const uint64_t v = p.from_row ? static_cast<uint64_t>(idx / p.row_len) : uint64_t{key};
  return static_cast<uint32_t>((v >> p.shift) & ((uint64_t{1} << p.bits) - 1));
}

}  // namespace pygpukit::kernels

// CUDA kernels of the LSD radix sort (ops/sort/radix.h), one pass = count, scan, scatter:
//   pgk_radix_count_<bytes>: one block per tile of 4096 elements (256 threads x 16, strided so
//     loads coalesce) builds the tile's 256-bucket digit histogram in shared memory.
//   pgk_radix_scan: one block per digit turns that digit's per-tile counts into exclusive
//     offsets (1024 threads, chunks of 1024 tiles with a carry) and writes the digit's total.
//   pgk_radix_scatter_<bytes>: one block per tile ranks every element among the tile's elements
//     of its digit, stably: each warp owns 512 consecutive elements, taken 32 at a time in order,
//     and ranks a step with __match_any_sync plus a per-warp running histogram. Elements are then
//     staged in shared memory in digit order, so the global writes of a digit's run are
//     consecutive addresses (keys first, then the int64 indices through the same stage).
// Plus the elementwise key transform and finishing kernels, pgk_radix_key_<bytes> and
// pgk_radix_finish_<bytes>, and the stream compaction of nonzero on the same tiles,
// pgk_compact_count and pgk_compact_write (ranks from warp ballots).
#include <cstdint>

#include "ops/launch/grid_stride.h"
#include "ops/sort/radix.h"

namespace pk = pygpukit::kernels;

namespace {

constexpr int kThreads = pk::kRadixThreads;
constexpr int kItems = pk::kRadixItems;
constexpr int kBuckets = pk::kRadixBuckets;
constexpr int kWarps = kThreads / 32;
constexpr int kWarpSpan = 32 * kItems;   // consecutive elements a warp ranks
constexpr uint32_t kNoDigit = kBuckets;  // past the tail
static_assert(kThreads == kBuckets, "one thread per bucket in the per-digit steps");

template <typename K>
__device__ __forceinline__ void Count(const pk::RadixPassParams& p) {
  __shared__ uint32_t hist[kBuckets];
  hist[threadIdx.x] = 0;
  __syncthreads();
  const K* keys = static_cast<const K*>(p.keys_in);
  const int64_t base = static_cast<int64_t>(blockIdx.x) * pk::kRadixTile;
  // All loads first (one batch in flight per thread), then the shared-memory atomics.
  uint32_t digit[kItems];
#pragma unroll
  for (int k = 0; k < kItems; ++k) {
    const int64_t i = base + k * kThreads + threadIdx.x;
    digit[k] = kNoDigit;
    if (i < p.n) {
      digit[k] =
          p.from_row ? pk::RadixDigit<K>(K{0}, p.idx_in[i], p) : pk::RadixDigit<K>(keys[i], 0, p);
    }
  }
#pragma unroll
  for (int k = 0; k < kItems; ++k) {
    if (digit[k] != kNoDigit) atomicAdd(&hist[digit[k]], 1u);
  }
  __syncthreads();
  p.counts[threadIdx.x * p.tiles + blockIdx.x] = hist[threadIdx.x];
}

// Inclusive sum over the warp.
__device__ __forceinline__ uint32_t WarpInclusive(uint32_t x, int lane) {
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const uint32_t y = __shfl_up_sync(0xffffffffu, x, o);
    if (lane >= o) x += y;
  }
  return x;
}

// Exclusive sums over the block of `v` (one value per thread, in thread order); `scratch` holds
// a warp total per warp. Every thread of the block must call it.
template <int kWarpsInBlock>
__device__ __forceinline__ uint32_t BlockExclusive(uint32_t v, uint32_t* scratch) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const uint32_t inc = WarpInclusive(v, lane);
  if (lane == 31) scratch[warp] = inc;
  __syncthreads();
  uint32_t before = 0;
#pragma unroll
  for (int w = 0; w < kWarpsInBlock; ++w) before += w < warp ? scratch[w] : 0;
  __syncthreads();  // scratch is reused by the caller's next call
  return before + inc - v;
}

constexpr int kScanThreads = 1024;

}  // namespace

extern "C" __global__ void __launch_bounds__(kScanThreads) pgk_radix_scan(pk::RadixPassParams p) {
  __shared__ uint32_t scratch[kScanThreads / 32];
  __shared__ uint32_t chunk_total;
  uint32_t* c = p.counts + static_cast<int64_t>(blockIdx.x) * p.tiles;
  uint32_t carry = 0;
  for (int64_t start = 0; start < p.tiles; start += kScanThreads) {
    const int64_t t = start + threadIdx.x;
    const uint32_t v = t < p.tiles ? c[t] : 0;
    const uint32_t excl = BlockExclusive<kScanThreads / 32>(v, scratch);
    if (t < p.tiles) c[t] = carry + excl;
    if (threadIdx.x == kScanThreads - 1) chunk_total = excl + v;
    __syncthreads();
    carry += chunk_total;
    __syncthreads();  // chunk_total is rewritten by the next chunk
  }
  if (threadIdx.x == 0) p.totals[blockIdx.x] = carry;
}

namespace {

template <typename K>
__device__ __forceinline__ void Scatter(const pk::RadixPassParams& p) {
  // The stage holds the tile's keys, then its indices, in digit order (32 KiB).
  __shared__ __align__(16) unsigned char stage[pk::kRadixTile * 8];
  __shared__ uint16_t warp_hist[kWarps][kBuckets];  // running, then each warp's offset
  __shared__ uint8_t digit_at[pk::kRadixTile];      // digit of the staged element
  __shared__ uint32_t tile_start[kBuckets];         // first staged slot of each digit
  __shared__ uint32_t out_base[kBuckets];           // global slot of staged slot 0, per digit
  __shared__ uint32_t scratch[kWarps];

  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  for (int w = 0; w < kWarps; ++w) warp_hist[w][threadIdx.x] = 0;
  __syncthreads();

  const K* keys_in = static_cast<const K*>(p.keys_in);
  const int64_t base = static_cast<int64_t>(blockIdx.x) * pk::kRadixTile;
  const int64_t wbase = base + warp * kWarpSpan;
  const unsigned lanes_before = (1u << lane) - 1;
  // Per element: its rank among the warp's elements of its digit (low 16 bits), digit above.
  // The warp's keys and digits are loaded in one batch before the ranking, whose steps
  // depend on each other through warp_hist: a load per step would serialize the latencies.
  K keys[kItems];
  uint32_t packed[kItems];
#pragma unroll
  for (int j = 0; j < kItems; ++j) {
    const int64_t i = wbase + j * 32 + lane;
    keys[j] = K{0};
    packed[j] = kNoDigit;
    if (i < p.n) {
      keys[j] = keys_in[i];
      packed[j] =
          p.from_row ? pk::RadixDigit<K>(K{0}, p.idx_in[i], p) : pk::RadixDigit<K>(keys[j], 0, p);
    }
  }
#pragma unroll
  for (int j = 0; j < kItems; ++j) {
    const uint32_t d = packed[j];
    const unsigned peers = __match_any_sync(0xffffffffu, d);
    const uint32_t before = __popc(peers & lanes_before);
    const uint32_t seen = d != kNoDigit ? warp_hist[warp][d] : 0;
    __syncwarp();
    if (d != kNoDigit && before == 0) warp_hist[warp][d] = seen + __popc(peers);
    __syncwarp();
    packed[j] = (seen + before) | (d << 16);
  }
  __syncthreads();

  // Thread d: each warp's offset within digit d, the tile's count of d, and where d's run
  // starts in the stage and in the output.
  const int d = threadIdx.x;
  uint32_t count = 0;
#pragma unroll
  for (int w = 0; w < kWarps; ++w) {
    const uint32_t c = warp_hist[w][d];
    warp_hist[w][d] = static_cast<uint16_t>(count);
    count += c;
  }
  const uint32_t start = BlockExclusive<kWarps>(count, scratch);
  const uint32_t digit_first = BlockExclusive<kWarps>(p.totals[d], scratch);
  tile_start[d] = start;
  out_base[d] = digit_first + p.counts[d * p.tiles + blockIdx.x] - start;
  __syncthreads();

  const int tile_n = static_cast<int>(p.n - base < pk::kRadixTile ? p.n - base : pk::kRadixTile);
  K* stage_keys = reinterpret_cast<K*>(stage);
#pragma unroll
  for (int j = 0; j < kItems; ++j) {
    const uint32_t dj = packed[j] >> 16;
    if (dj != kNoDigit) {
      const uint32_t slot = tile_start[dj] + warp_hist[warp][dj] + (packed[j] & 0xffffu);
      stage_keys[slot] = keys[j];
      digit_at[slot] = static_cast<uint8_t>(dj);
    }
  }
  __syncthreads();
  K* keys_out = static_cast<K*>(p.keys_out);
  if (keys_out != nullptr) {
#pragma unroll 4
    for (int k = 0; k < kItems; ++k) {
      const int slot = k * kThreads + threadIdx.x;
      if (slot < tile_n) {
        const K v = stage_keys[slot];
        keys_out[out_base[digit_at[slot]] + slot] = p.finish ? pk::RadixUnkey<K>(v, p.key) : v;
      }
    }
  }
  if (p.idx_out == nullptr) return;
  __syncthreads();
  int64_t* stage_idx = reinterpret_cast<int64_t*>(stage);
#pragma unroll
  for (int j = 0; j < kItems; ++j) {
    const uint32_t dj = packed[j] >> 16;
    if (dj != kNoDigit) {
      const uint32_t slot = tile_start[dj] + warp_hist[warp][dj] + (packed[j] & 0xffffu);
      stage_idx[slot] = p.idx_in[wbase + j * 32 + lane];
    }
  }
  __syncthreads();
#pragma unroll 4
  for (int k = 0; k < kItems; ++k) {
    const int slot = k * kThreads + threadIdx.x;
    if (slot < tile_n) {
      const int64_t v = stage_idx[slot];
      p.idx_out[out_base[digit_at[slot]] + slot] = p.finish ? pk::RadixRowPosition(v, p.key) : v;
    }
  }
}

// The tile's count of true elements.
__device__ __forceinline__ void CompactCount(const pk::CompactParams& p) {
  __shared__ uint32_t scratch[kWarps];
  const int64_t base = static_cast<int64_t>(blockIdx.x) * pk::kRadixTile;
  uint32_t c = 0;
#pragma unroll 4
  for (int k = 0; k < kItems; ++k) {
    const int64_t i = base + k * kThreads + threadIdx.x;
    c += i < p.n && p.mask[i] != 0;
  }
  const uint32_t before = BlockExclusive<kWarps>(c, scratch);
  if (threadIdx.x == kThreads - 1) p.counts[blockIdx.x] = before + c;
}

// Each warp owns 512 consecutive elements: one ballot per 32, kept for the write, gives every
// true element its rank; the warps' totals give each warp its start.
__device__ __forceinline__ void CompactWrite(const pk::CompactParams& p) {
  __shared__ uint32_t scratch[kWarps];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int64_t wbase = static_cast<int64_t>(blockIdx.x) * pk::kRadixTile + warp * kWarpSpan;
  unsigned ballots[kItems];
  uint32_t count = 0;
#pragma unroll
  for (int j = 0; j < kItems; ++j) {
    const int64_t i = wbase + j * 32 + lane;
    ballots[j] = __ballot_sync(0xffffffffu, i < p.n && p.mask[i] != 0);
    count += __popc(ballots[j]);
  }
  // The warp's start: the totals of the warps before it (each lane holds its warp's total).
  const uint32_t warp_start = BlockExclusive<kWarps>(lane == 0 ? count : 0, scratch);
  uint32_t at = p.counts[blockIdx.x] + __shfl_sync(0xffffffffu, warp_start, 0);
  const unsigned lanes_before = (1u << lane) - 1;
#pragma unroll
  for (int j = 0; j < kItems; ++j) {
    const int64_t slot = at + __popc(ballots[j] & lanes_before);
    if ((ballots[j] & (1u << lane)) && slot < p.limit) p.out[slot] = wbase + j * 32 + lane;
    at += __popc(ballots[j]);
  }
}

}  // namespace

#define PGK_DEFINE_RADIX(BYTES, K)                                            \
  extern "C" __global__ void __launch_bounds__(kThreads)                      \
      pgk_radix_count_##BYTES(pk::RadixPassParams p) {                        \
    Count<K>(p);                                                              \
  }                                                                           \
  extern "C" __global__ void __launch_bounds__(kThreads)                      \
      pgk_radix_scatter_##BYTES(pk::RadixPassParams p) {                      \
    Scatter<K>(p);                                                            \
  }                                                                           \
  extern "C" __global__ void pgk_radix_key_##BYTES(pk::RadixKeyParams p) {    \
    PGK_GRID_STRIDE_LOOP(i, p.n) pk::RadixKeyElement<K>(p, i);                \
  }                                                                           \
  extern "C" __global__ void pgk_radix_finish_##BYTES(pk::RadixKeyParams p) { \
    PGK_GRID_STRIDE_LOOP(i, p.n) pk::RadixFinishElement<K>(p, i);             \
  }
extern "C" __global__ void __launch_bounds__(kThreads) pgk_compact_count(pk::CompactParams p) {
  CompactCount(p);
}
extern "C" __global__ void __launch_bounds__(kThreads) pgk_compact_write(pk::CompactParams p) {
  CompactWrite(p);
}
PGK_DEFINE_RADIX(1, uint8_t)
PGK_DEFINE_RADIX(2, uint16_t)
PGK_DEFINE_RADIX(4, uint32_t)
PGK_DEFINE_RADIX(8, uint64_t)
#undef PGK_DEFINE_RADIX

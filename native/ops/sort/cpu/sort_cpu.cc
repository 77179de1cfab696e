// CPU side of the sort family: the radix sort (ops/sort/radix.h; the same three launches per
// pass as the CUDA kernels: per-tile digit counts, their scan per digit, the stable scatter),
// nonzero's stream compaction (counts, scan, write), the merge-sort pass and searchsorted
// (ops/sort/search.h), in parallel chunks on the host thread pool.
#include <algorithm>
#include <array>
#include <cstring>

#include "core/status.h"
#include "ops/launch/word.h"
#include "ops/sort/sort_kernels.h"

namespace pygpukit::ops {
namespace {

using kernels::kRadixBuckets;
using kernels::kRadixTile;
using kernels::RadixKeyParams;
using kernels::RadixPassParams;

template <typename K>
void CountTile(const RadixPassParams& p, int64_t t) {
  std::array<uint32_t, kRadixBuckets> hist{};
  const K* keys = static_cast<const K*>(p.keys_in);
  const int64_t end = std::min(p.n, (t + 1) * kRadixTile);
  for (int64_t i = t * kRadixTile; i < end; ++i) {
    ++hist[kernels::RadixDigit<K>(keys[i], p.from_row ? p.idx_in[i] : 0, p)];
  }
  for (int d = 0; d < kRadixBuckets; ++d) p.counts[d * p.tiles + t] = hist[d];
}

void ScanDigit(const RadixPassParams& p, int64_t d) {
  uint32_t* c = p.counts + d * p.tiles;
  uint32_t run = 0;
  for (int64_t t = 0; t < p.tiles; ++t) {
    const uint32_t v = c[t];
    c[t] = run;
    run += v;
  }
  p.totals[d] = run;
}

template <typename K>
void ScatterTile(const RadixPassParams& p, int64_t t) {
  std::array<uint32_t, kRadixBuckets> next;
  uint32_t run = 0;
  for (int d = 0; d < kRadixBuckets; ++d) {
    next[d] = run + p.counts[d * p.tiles + t];
    run += p.totals[d];
  }
  const K* in = static_cast<const K*>(p.keys_in);
  K* out = static_cast<K*>(p.keys_out);
  const int64_t end = std::min(p.n, (t + 1) * kRadixTile);
  for (int64_t i = t * kRadixTile; i < end; ++i) {
    const int64_t idx = p.idx_in != nullptr ? p.idx_in[i] : 0;
    const uint32_t o = next[kernels::RadixDigit<K>(in[i], idx, p)]++;
    if (out != nullptr) out[o] = p.finish ? kernels::RadixUnkey<K>(in[i], p.key) : in[i];
    if (p.idx_out != nullptr) p.idx_out[o] = p.finish ? kernels::RadixRowPosition(idx, p.key) : idx;
  }
}

void CompactCountTile(const kernels::CompactParams& p, int64_t t) {
  const int64_t end = std::min(p.n, (t + 1) * kRadixTile);
  uint32_t c = 0;
  for (int64_t i = t * kRadixTile; i < end; ++i) c += p.mask[i] != 0;
  p.counts[t] = c;
}

void CompactWriteTile(const kernels::CompactParams& p, int64_t t) {
  const int64_t end = std::min(p.n, (t + 1) * kRadixTile);
  uint32_t at = p.counts[t];
  for (int64_t i = t * kRadixTile; i < end; ++i) {
    if (p.mask[i] != 0 && at < p.limit) p.out[at++] = i;
  }
}

absl::Status CompactCountCpu(LaunchContext& ctx, const kernels::CompactParams& p) {
  PGK_RETURN_IF_ERROR(ctx.ForEach(
      "compact_count", p.tiles, [p](int64_t t) { CompactCountTile(p, t); }, 1));
  RadixPassParams scan{};
  scan.tiles = p.tiles;
  scan.counts = p.counts;
  scan.totals = p.totals;
  return ctx.HostTask("radix_scan", [scan] { ScanDigit(scan, 0); });
}

absl::Status CompactWriteCpu(LaunchContext& ctx, const kernels::CompactParams& p) {
  return ctx.ForEach(
      "compact_write", p.tiles, [p](int64_t t) { CompactWriteTile(p, t); }, 1);
}

absl::Status RadixKeyCpu(LaunchContext& ctx, int key_bytes, const RadixKeyParams& p, bool inverse) {
  return VisitWord(key_bytes, "sort", [&](auto word) -> absl::Status {
    using K = decltype(word);
    if constexpr (sizeof(K) > 8) {
      return NotImplementedError("sort: no radix key of 16 bytes");
    } else if (inverse) {
      return ctx.ForEach("radix_finish", p.n,
                         [p](int64_t i) { kernels::RadixFinishElement<K>(p, i); });
    } else {
      return ctx.ForEach("radix_key", p.n, [p](int64_t i) { kernels::RadixKeyElement<K>(p, i); });
    }
  });
}

absl::Status RadixPassCpu(LaunchContext& ctx, int key_bytes, const RadixPassParams& p) {
  return VisitWord(key_bytes, "sort", [&](auto word) -> absl::Status {
    using K = decltype(word);
    if constexpr (sizeof(K) > 8) {
      return NotImplementedError("sort: no radix key of 16 bytes");
    } else {
      PGK_RETURN_IF_ERROR(ctx.ForEach(
          "radix_count", p.tiles, [p](int64_t t) { CountTile<K>(p, t); }, 1));
      PGK_RETURN_IF_ERROR(ctx.ForEach(
          "radix_scan", kRadixBuckets, [p](int64_t d) { ScanDigit(p, d); }, 1));
      return ctx.ForEach(
          "radix_scatter", p.tiles, [p](int64_t t) { ScatterTile<K>(p, t); }, 1);
    }
  });
}

absl::Status SearchSortedCpu(LaunchContext& ctx, DType dtype, const kernels::SearchParams& p) {
  return VisitDType(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    return ctx.ForEach("searchsorted", p.n, [p](int64_t i) { kernels::SearchElement<T>(p, i); });
  });
}

absl::Status MergeCpu(LaunchContext& ctx, DType dtype, const kernels::MergeParams& p) {
  return VisitDType(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    return ctx.ForEach("merge", p.total, [p](int64_t i) { kernels::MergeElement<T>(p, i); });
  });
}

PGK_REGISTER_KERNEL(kCompactCountKernel, kCpu, CompactCountCpu);
PGK_REGISTER_KERNEL(kCompactWriteKernel, kCpu, CompactWriteCpu);
PGK_REGISTER_KERNEL(kRadixKeyKernel, kCpu, RadixKeyCpu);
PGK_REGISTER_KERNEL(kRadixPassKernel, kCpu, RadixPassCpu);
PGK_REGISTER_KERNEL(kSearchSortedKernel, kCpu, SearchSortedCpu);
PGK_REGISTER_KERNEL(kMergeKernel, kCpu, MergeCpu);

}  // namespace
}  // namespace pygpukit::ops

// CPU side of the radix sort (ops/kernels/radix.h): the same three launches per pass as the
// CUDA kernels, each tile walked in order by one host thread (which makes the scatter stable
// without the GPU's in-tile ranking), tiles and digits spread over the thread pool.
#include <algorithm>
#include <array>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "core/cpu/thread_pool.h"
#include "core/status.h"
#include "ops/kernel_launch.h"
#include "ops/kernels/radix.h"
#include "runtime/runtime.h"

namespace pygpukit::ops::cpu_kernels {
namespace {

using kernels::kRadixBuckets;
using kernels::kRadixTile;
using kernels::RadixKeyParams;
using kernels::RadixPassParams;

// Queues body(b, e) over [0, n) in chunks of `grain` on the stream.
template <typename Body>
absl::Status EnqueueChunks(hal::Stream& s, absl::string_view kernel, int64_t n, int64_t grain,
                           KeepAlive keep, Body body) {
  const int64_t held = HeldBytes(keep);
  return Runtime::Get().dispatcher().LaunchHost(
      s, kernel, [n, grain, body, keep = std::move(keep)] { cpu::ParallelFor(n, grain, body); }, {},
      held);
}

template <typename Fn>
absl::Status VisitKeyWord(int bytes, Fn fn) {
  switch (bytes) {
    case 1:
      return fn(uint8_t{});
    case 2:
      return fn(uint16_t{});
    case 4:
      return fn(uint32_t{});
    case 8:
      return fn(uint64_t{});
  }
  return NotImplementedError(absl::StrCat("sort: no radix key of ", bytes, " bytes"));
}

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

}  // namespace

absl::Status CompactCount(hal::Stream& s, const kernels::CompactParams& p, KeepAlive keep) {
  PGK_RETURN_IF_ERROR(
      EnqueueChunks(s, "compact_count", p.tiles, 1, keep, [p](int64_t b, int64_t e) {
        for (int64_t t = b; t < e; ++t) CompactCountTile(p, t);
      }));
  RadixPassParams scan{};
  scan.tiles = p.tiles;
  scan.counts = p.counts;
  scan.totals = p.totals;
  return EnqueueChunks(s, "radix_scan", 1, 1, std::move(keep),
                       [scan](int64_t, int64_t) { ScanDigit(scan, 0); });
}

absl::Status CompactWrite(hal::Stream& s, const kernels::CompactParams& p, KeepAlive keep) {
  return EnqueueChunks(s, "compact_write", p.tiles, 1, std::move(keep), [p](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) CompactWriteTile(p, t);
  });
}

absl::Status RadixKey(hal::Stream& s, int key_bytes, const RadixKeyParams& p, bool inverse,
                      KeepAlive keep) {
  return VisitKeyWord(key_bytes, [&](auto word) {
    using K = decltype(word);
    return EnqueueChunks(s, inverse ? "radix_finish" : "radix_key", p.n, 1 << 15, std::move(keep),
                         [p, inverse](int64_t b, int64_t e) {
                           for (int64_t i = b; i < e; ++i) {
                             if (inverse) {
                               kernels::RadixFinishElement<K>(p, i);
                             } else {
                               kernels::RadixKeyElement<K>(p, i);
                             }
                           }
                         });
  });
}

absl::Status RadixPass(hal::Stream& s, int key_bytes, const RadixPassParams& p, KeepAlive keep) {
  return VisitKeyWord(key_bytes, [&](auto word) -> absl::Status {
    using K = decltype(word);
    PGK_RETURN_IF_ERROR(
        EnqueueChunks(s, "radix_count", p.tiles, 1, keep, [p](int64_t b, int64_t e) {
          for (int64_t t = b; t < e; ++t) CountTile<K>(p, t);
        }));
    PGK_RETURN_IF_ERROR(
        EnqueueChunks(s, "radix_scan", kRadixBuckets, 1, keep, [p](int64_t b, int64_t e) {
          for (int64_t d = b; d < e; ++d) ScanDigit(p, d);
        }));
    return EnqueueChunks(s, "radix_scatter", p.tiles, 1, std::move(keep),
                         [p](int64_t b, int64_t e) {
                           for (int64_t t = b; t < e; ++t) ScatterTile<K>(p, t);
                         });
  });
}

}  // namespace pygpukit::ops::cpu_kernels

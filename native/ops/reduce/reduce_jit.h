// Device code of the JIT reductions and scans (NVRTC receives this header with each program; the
// generated source only instantiates these templates: ops/reduce/reduce_codegen.h). Every kernel
// runs 256-thread blocks and combines partial states in a fixed order, so a launch configuration
// (chosen from the shape, the strides, 16-byte alignment and the device) always produces the
// same bits: no atomics.
//
// Reduction (ReduceMain): a block is BX x BY threads. In the inner mode the BX threads of a row
// cooperate on one output (the reduced elements are the fast memory dimension: consecutive
// threads read consecutive elements, V per 16-byte access); in the outer mode the BX threads of
// a row take BX consecutive outputs, or BX runs of V outputs read as one 16-byte access each
// (the kept dims are fast), and the BY rows cooperate. Each
// thread folds its elements in order (U accesses issued before their folds), the block combines
// the G = BX or BY states of an output with a shared-memory tree, and grid.y splits the reduced
// range into slices (contiguous runs, or in the dense inner mode every slices-th block trip)
// whose states go to a workspace that ReduceFinal combines in slice order.
//
// Scan: the serial mode gives each thread one line (the lines are the fast dimension); the block
// mode scans chunks of a line with a whole block: tiles of 256 x K elements (16-byte accesses
// where the line is dense and aligned), a per-thread scan of K, a block scan of the thread
// totals (warp shuffles, then the 8 warp totals) and a running tile prefix. Lines longer than one
// chunk first reduce each chunk (ScanChunkTotals), turn the totals into exclusive prefixes
// (ScanChunkPrefixes), then scan each chunk from its prefix.
#pragma once

#include "ops/kernels/elementwise_jit.h"
#include "ops/reduce/reduce_ops.h"

namespace pygpukit::kernels {

/// Threads per block of every reduction and scan kernel.
constexpr int kReduceBlock = 256;

// Offset of linear index i over N dims (N fixed at compile time).
template <int N>
__device__ __forceinline__ long long OffsetN(long long i, const int64_t* shape,
                                             const int64_t* stride) {
  if constexpr (N == 1) {
    return i * stride[0];  // i < shape[0] by construction
  } else {
    long long off = 0;
#pragma unroll
    for (int d = N - 1; d >= 0; --d) {
      const long long e = shape[d];
      off += (i % e) * stride[d];
      i /= e;
    }
    return off;
  }
}

// Shared-memory tree over the G states of each output held at sm[self], sm[self + step],
// ..., sm[self + (G - 1) * step]; the result lands in the first.
template <class R, int G>
__device__ __forceinline__ void TreeCombine(typename R::Acc* sm, int self, int g, int step) {
#pragma unroll
  for (int s = G / 2; s > 0; s >>= 1) {
    if (g < s) sm[self] = R::Combine(sm[self], sm[self + s * step]);
    __syncthreads();
  }
}

template <class Acc>
__device__ __forceinline__ Acc* SharedStates() {
  __shared__ alignas(16) unsigned char raw[kReduceBlock * sizeof(Acc)];
  return reinterpret_cast<Acc*>(raw);
}

// Folds x[offset(r)] for r = first, first + G, ... below end into acc (V = 1 path), U loads ahead.
template <class R, class In, int NR, int U>
__device__ __forceinline__ void FoldStrided(typename R::Acc& acc, const In* x,
                                            const ReduceParams& p, long long r, long long end,
                                            int G) {
  using C = typename R::Compute;
  for (; r + (long long)(U - 1) * G < end; r += (long long)U * G) {
    In v[U];
#pragma unroll
    for (int u = 0; u < U; ++u) v[u] = x[OffsetN<NR>(r + u * G, p.red_shape, p.red_stride)];
#pragma unroll
    for (int u = 0; u < U; ++u) R::Update(acc, Cast<C>(v[u]), r + u * G);
  }
  for (; r < end; r += G) R::Update(acc, Cast<C>(x[OffsetN<NR>(r, p.red_shape, p.red_stride)]), r);
}

// Outer mode with V > 1: this thread's V consecutive outputs (one 16-byte access per reduced
// element), their states combined across the block one output at a time.
template <class R, class In, class Out, int NO, int NR, int BX, int V, int U>
__device__ __forceinline__ void ReduceOuterVec(const ReduceParams& p) {
  using C = typename R::Compute;
  using Acc = typename R::Acc;
  constexpr int G = kReduceBlock / BX;
  Acc* sm = SharedStates<Acc>();
  const int tx = threadIdx.x, g = threadIdx.y;
  const long long o = ((long long)blockIdx.x * BX + tx) * V;  // n_out % V == 0
  const long long begin = (long long)blockIdx.y * p.slice;
  const long long end = begin + p.slice < p.n_red ? begin + p.slice : p.n_red;
  Acc acc[V];
#pragma unroll
  for (int k = 0; k < V; ++k) acc[k] = R::Init();
  if (o < p.n_out) {
    const In* x = static_cast<const In*>(p.in) + OffsetN<NO>(o, p.out_shape, p.out_stride);
    long long r = begin + g;
    for (; r + (long long)(U - 1) * G < end; r += (long long)U * G) {
      Vec<V, In> v[U];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        v[u] = *reinterpret_cast<const Vec<V, In>*>(
            x + OffsetN<NR>(r + u * G, p.red_shape, p.red_stride));
      }
#pragma unroll
      for (int u = 0; u < U; ++u) {
#pragma unroll
        for (int k = 0; k < V; ++k) R::Update(acc[k], Cast<C>(v[u].v[k]), r + u * G);
      }
    }
    for (; r < end; r += G) {
      const Vec<V, In> v =
          *reinterpret_cast<const Vec<V, In>*>(x + OffsetN<NR>(r, p.red_shape, p.red_stride));
#pragma unroll
      for (int k = 0; k < V; ++k) R::Update(acc[k], Cast<C>(v.v[k]), r);
    }
  }
  const int self = g * BX + tx;
#pragma unroll
  for (int k = 0; k < V; ++k) {
    sm[self] = acc[k];
    __syncthreads();
    TreeCombine<R, G>(sm, self, g, BX);
    if (g == 0 && o < p.n_out) {
      if (p.slices == 1) {
        static_cast<Out*>(p.out)[o + k] =
            R::template Finalize<Out>(sm[self], p.n_red, p.correction);
      } else {
        static_cast<Acc*>(p.partial)[(o + k) * p.slices + blockIdx.y] = sm[self];
      }
    }
    __syncthreads();
  }
}

/// One slice of the reduction for the outputs of this block (see the file comment). NO / NR:
/// kept / reduced dims. V: inner mode, elements per access (NR is 1 and the reduced run dense
/// and aligned when V > 1); outer mode, consecutive outputs per thread (ReduceOuterVec).
template <class R, class In, class Out, int NO, int NR, bool kInner, int BX, int V, int U>
__device__ __forceinline__ void ReduceMain(const ReduceParams& p) {
  if constexpr (!kInner && V > 1) {
    ReduceOuterVec<R, In, Out, NO, NR, BX, V, U>(p);
    return;
  }
  using C = typename R::Compute;
  using Acc = typename R::Acc;
  constexpr int BY = kReduceBlock / BX;
  constexpr int G = kInner ? BX : BY;
  Acc* sm = SharedStates<Acc>();
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int g = kInner ? tx : ty;
  const long long o = (long long)blockIdx.x * (kInner ? BY : BX) + (kInner ? ty : tx);
  const long long begin = (long long)blockIdx.y * p.slice;
  const long long end = begin + p.slice < p.n_red ? begin + p.slice : p.n_red;
  Acc acc = R::Init();
  if (o < p.n_out) {
    const In* x = static_cast<const In*>(p.in) + OffsetN<NO>(o, p.out_shape, p.out_stride);
    if constexpr (V > 1) {
      // Two states (the even and the odd elements of each vector): two dependency chains of
      // folds per thread instead of one.
      Acc odd = R::Init();
      constexpr long long kTrip = (long long)U * G * V;
      // Contiguous slices: whole trips through [begin, end), then single vectors. Interleaved
      // ones: this slice's whole trips of the range, then single vectors of the range's last,
      // partial trip when it is this slice's (r then lies in it).
      const long long vend = p.interleave ? p.n_red / V * V : begin + (end - begin) / V * V;
      long long r = (p.interleave ? (long long)blockIdx.y * kTrip : begin) + (long long)g * V;
      const long long jump = p.interleave ? (long long)p.slices * kTrip : kTrip;
      for (; r + kTrip - G * V < vend; r += jump) {
        Vec<V, In> v[U];
#pragma unroll
        for (int u = 0; u < U; ++u) v[u] = *reinterpret_cast<const Vec<V, In>*>(x + r + u * G * V);
#pragma unroll
        for (int u = 0; u < U; ++u) {
#pragma unroll
          for (int k = 0; k < V; ++k) {
            R::Update(k % 2 ? odd : acc, Cast<C>(v[u].v[k]), r + u * G * V + k);
          }
        }
      }
      for (; r < vend; r += G * V) {
        const Vec<V, In> v = *reinterpret_cast<const Vec<V, In>*>(x + r);
#pragma unroll
        for (int k = 0; k < V; ++k) R::Update(k % 2 ? odd : acc, Cast<C>(v.v[k]), r + k);
      }
      if (!p.interleave || blockIdx.y == 0) {  // the elements past the last whole vector
        const long long tail_end = p.interleave ? p.n_red : end;
        for (long long e = vend + g; e < tail_end; e += G) R::Update(acc, Cast<C>(x[e]), e);
      }
      acc = R::Combine(acc, odd);
    } else {
      FoldStrided<R, In, NR, U>(acc, x, p, begin + g, end, G);
    }
  }
  const int self = ty * BX + tx;
  sm[self] = acc;
  __syncthreads();
  TreeCombine<R, G>(sm, self, g, kInner ? 1 : BX);
  if (g == 0 && o < p.n_out) {
    if (p.slices == 1) {
      static_cast<Out*>(p.out)[o] = R::template Finalize<Out>(sm[self], p.n_red, p.correction);
    } else {
      static_cast<Acc*>(p.partial)[o * p.slices + blockIdx.y] = sm[self];
    }
  }
}

/// Combines each output's slice states in slice order and writes the result. Block 32 x 8: one
/// row of 32 threads per output.
template <class R, class Out>
__device__ __forceinline__ void ReduceFinal(const ReduceParams& p) {
  using Acc = typename R::Acc;
  Acc* sm = SharedStates<Acc>();
  const int tx = threadIdx.x, ty = threadIdx.y;
  const long long o = (long long)blockIdx.x * 8 + ty;
  Acc acc = R::Init();
  if (o < p.n_out) {
    // Eight small states loaded before they are combined (in the same order as one at a time): a
    // full reduction has about a thousand slices, which one at a time cost 33 dependent L2
    // round trips per thread.
    constexpr int kAhead = sizeof(Acc) <= 8 ? 8 : sizeof(Acc) <= 24 ? 2 : 1;  // registers
    const Acc* part = static_cast<const Acc*>(p.partial) + o * p.slices;
    long long j = tx;
    for (; j + (kAhead - 1) * 32 < p.slices; j += kAhead * 32) {
      Acc t[kAhead];
#pragma unroll
      for (int k = 0; k < kAhead; ++k) t[k] = part[j + k * 32];
#pragma unroll
      for (int k = 0; k < kAhead; ++k) acc = R::Combine(acc, t[k]);
    }
    for (; j < p.slices; j += 32) acc = R::Combine(acc, part[j]);
  }
  const int self = ty * 32 + tx;
  sm[self] = acc;
  __syncthreads();
  TreeCombine<R, 32>(sm, self, tx, 1);
  if (tx == 0 && o < p.n_out) {
    static_cast<Out*>(p.out)[o] = R::template Finalize<Out>(sm[self], p.n_red, p.correction);
  }
}

/// Serial scan mode: thread t scans line t from start to end, U loads ahead.
template <class R, class In, class Out, int NL>
__device__ __forceinline__ void ScanSerial(const ScanParams& p) {
  using C = typename R::Compute;
  constexpr int U = 4;
  const long long line = (long long)blockIdx.x * kReduceBlock + threadIdx.x;
  if (line >= p.n_lines) return;
  const In* x = static_cast<const In*>(p.in) + OffsetN<NL>(line, p.line_shape, p.line_in_stride);
  Out* y = static_cast<Out*>(p.out) + OffsetN<NL>(line, p.line_shape, p.line_out_stride);
  typename R::Acc acc = R::Init();
  if (p.include_initial) {
    *y = R::template Finalize<Out>(acc, 0, 0.0);
    y += p.out_axis_stride;
  }
  long long i = 0;
  for (; i + U <= p.length; i += U) {
    In v[U];
#pragma unroll
    for (int u = 0; u < U; ++u) v[u] = x[(i + u) * p.in_axis_stride];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      R::Update(acc, Cast<C>(v[u]), i + u);
      y[(i + u) * p.out_axis_stride] = R::template Finalize<Out>(acc, i + u + 1, 0.0);
    }
  }
  for (; i < p.length; ++i) {
    R::Update(acc, Cast<C>(x[i * p.in_axis_stride]), i);
    y[i * p.out_axis_stride] = R::template Finalize<Out>(acc, i + 1, 0.0);
  }
}

// K elements from x[i * stride], i = first .. first + K - 1 (below end): 16-byte accesses
// when kVec (stride 1, aligned: the launcher checks) and the run is whole.
template <class In, int K, bool kVec>
__device__ __forceinline__ void LoadRun(In (&v)[K], const In* x, long long first, long long end,
                                        long long stride) {
  if constexpr (kVec) {
    constexpr int VL = K * sizeof(In) < 16 ? K : 16 / sizeof(In);
    if (first + K <= end) {
#pragma unroll
      for (int j = 0; j < K; j += VL) {
        const Vec<VL, In> w = *reinterpret_cast<const Vec<VL, In>*>(x + first + j);
#pragma unroll
        for (int k = 0; k < VL; ++k) v[j + k] = w.v[k];
      }
      return;
    }
  }
#pragma unroll
  for (int k = 0; k < K; ++k) {
    if (first + k < end) v[k] = x[(first + k) * stride];
  }
}

/// Block mode, several chunks per line: the state of chunk blockIdx.y of line blockIdx.x.
template <class R, class In, int NL, int K, bool kVecIn>
__device__ __forceinline__ void ScanChunkTotals(const ScanParams& p) {
  using C = typename R::Compute;
  using Acc = typename R::Acc;
  Acc* sm = SharedStates<Acc>();
  const long long line = blockIdx.x;
  const In* x = static_cast<const In*>(p.in) + OffsetN<NL>(line, p.line_shape, p.line_in_stride);
  const long long begin = (long long)blockIdx.y * p.chunk;
  const long long end = begin + p.chunk < p.length ? begin + p.chunk : p.length;
  Acc acc = R::Init();
  for (long long first = begin + (long long)threadIdx.x * K; first < end;
       first += (long long)kReduceBlock * K) {
    In v[K];
    LoadRun<In, K, kVecIn>(v, x, first, end, p.in_axis_stride);
#pragma unroll
    for (int k = 0; k < K; ++k) {
      if (first + k < end) R::Update(acc, Cast<C>(v[k]), first + k);
    }
  }
  sm[threadIdx.x] = acc;
  __syncthreads();
  TreeCombine<R, kReduceBlock>(sm, threadIdx.x, threadIdx.x, 1);
  if (threadIdx.x == 0) static_cast<Acc*>(p.partial)[line * p.chunks + blockIdx.y] = sm[0];
}

/// Block mode: the chunk states of each line become exclusive prefixes (one thread per line).
template <class R>
__device__ __forceinline__ void ScanChunkPrefixes(const ScanParams& p) {
  using Acc = typename R::Acc;
  const long long line = (long long)blockIdx.x * kReduceBlock + threadIdx.x;
  if (line >= p.n_lines) return;
  Acc* part = static_cast<Acc*>(p.partial) + line * p.chunks;
  Acc run = R::Init();
  for (long long j = 0; j < p.chunks; ++j) {
    const Acc t = part[j];
    part[j] = run;
    run = R::Combine(run, t);
  }
}

// A state from the lane d below (32-bit shuffles of its words).
template <class T>
__device__ __forceinline__ T ShflUp(const T& v, int d) {
  static_assert(sizeof(T) % 4 == 0, "shuffled states are whole 32-bit words");
  T r;
  const unsigned* src = reinterpret_cast<const unsigned*>(&v);
  unsigned* dst = reinterpret_cast<unsigned*>(&r);
#pragma unroll
  for (int i = 0; i < (int)(sizeof(T) / 4); ++i) dst[i] = __shfl_up_sync(0xffffffffu, src[i], d);
  return r;
}

/// Block mode: scans chunk blockIdx.y of line blockIdx.x from its prefix, in tiles of
/// kReduceBlock x K elements (thread t holds elements t*K .. t*K+K-1 of a tile): a serial scan of
/// its K, a warp scan of the thread totals (shuffles), the 8 warp totals from shared memory.
template <class R, class In, class Out, int NL, int K, bool kVecIn, bool kVecOut>
__device__ __forceinline__ void ScanBlock(const ScanParams& p) {
  using C = typename R::Compute;
  using Acc = typename R::Acc;
  constexpr int kWarps = kReduceBlock / 32;
  __shared__ alignas(16) unsigned char raw[kWarps * sizeof(Acc)];
  Acc* warp_totals = reinterpret_cast<Acc*>(raw);
  const int t = threadIdx.x, lane = t & 31, warp = t >> 5;
  const long long line = blockIdx.x;
  const In* x = static_cast<const In*>(p.in) + OffsetN<NL>(line, p.line_shape, p.line_in_stride);
  Out* y = static_cast<Out*>(p.out) + OffsetN<NL>(line, p.line_shape, p.line_out_stride);
  if (p.include_initial) {
    if (blockIdx.y == 0 && t == 0) *y = R::template Finalize<Out>(R::Init(), 0, 0.0);
    y += p.out_axis_stride;
  }
  const long long begin = (long long)blockIdx.y * p.chunk;
  const long long end = begin + p.chunk < p.length ? begin + p.chunk : p.length;
  Acc prefix =
      p.chunks > 1 ? static_cast<const Acc*>(p.partial)[line * p.chunks + blockIdx.y] : R::Init();
  for (long long tile = begin; tile < end; tile += (long long)kReduceBlock * K) {
    const long long first = tile + (long long)t * K;
    In v[K];
    LoadRun<In, K, kVecIn>(v, x, first, end, p.in_axis_stride);
    Acc local[K];
    Acc run = R::Init();
#pragma unroll
    for (int k = 0; k < K; ++k) {
      if (first + k < end) R::Update(run, Cast<C>(v[k]), first + k);
      local[k] = run;
    }
    // Inclusive scan of the thread totals within the warp.
    Acc incl = run;
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
      const Acc other = ShflUp(incl, d);
      if (lane >= d) incl = R::Combine(other, incl);
    }
    const Acc lane_excl = ShflUp(incl, 1);
    if (lane == 31) warp_totals[warp] = incl;
    __syncthreads();
    Acc before = prefix, tile_total = prefix;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) {
      if (w < warp) before = R::Combine(before, warp_totals[w]);
      tile_total = R::Combine(tile_total, warp_totals[w]);
    }
    if (lane > 0) before = R::Combine(before, lane_excl);
    Out o[K];
#pragma unroll
    for (int k = 0; k < K; ++k) {
      o[k] = R::template Finalize<Out>(R::Combine(before, local[k]), first + k + 1, 0.0);
    }
    if (kVecOut && first + K <= end) {
      constexpr int VL = K * sizeof(Out) < 16 ? K : 16 / sizeof(Out);
#pragma unroll
      for (int j = 0; j < K; j += VL) {
        Vec<VL, Out> w;
#pragma unroll
        for (int k = 0; k < VL; ++k) w.v[k] = o[j + k];
        *reinterpret_cast<Vec<VL, Out>*>(y + first + j) = w;
      }
    } else {
#pragma unroll
      for (int k = 0; k < K; ++k) {
        if (first + k < end) y[(first + k) * p.out_axis_stride] = o[k];
      }
    }
    prefix = tile_total;
    __syncthreads();  // warp_totals is rewritten by the next tile
  }
}

}  // namespace pygpukit::kernels

// Hopper (sm_90a) device primitives shared by the kernel families: shared-memory addresses and
// volatile accesses, mbarriers, TMA loads and stores, cluster barriers, wgmma shared-memory
// descriptors and the warpgroup's wgmma fence / commit / wait. Inline PTX only: no driver calls.
#pragma once

#include <cuda.h>  // CUtensorMap (a plain 128-byte struct)

#include <cstdint>

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define PGK_SM90A 1
#else
#define PGK_SM90A 0
#endif

namespace pygpukit::sm90 {

__device__ __forceinline__ uint32_t SmemAddr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// `p` rounded up to 1024 bytes: 128-byte swizzle atoms repeat every 1024 bytes, so tiles that
// TMA writes and wgmma reads swizzled must start on that boundary.
__device__ __forceinline__ uint8_t* AlignSwizzle(uint8_t* p) {
  return reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(p) + 1023) & ~uintptr_t(1023));
}

// Volatile shared-memory accesses in the shared state space (a generic volatile access would be
// a system-scope strong load or store, far slower).
__device__ __forceinline__ int32_t LdVolatileShared(const int32_t* p) {
  int32_t v;
  asm volatile("ld.volatile.shared.b32 %0, [%1];" : "=r"(v) : "r"(SmemAddr(p)) : "memory");
  return v;
}
__device__ __forceinline__ int64_t LdVolatileShared(const int64_t* p) {
  int64_t v;
  asm volatile("ld.volatile.shared.b64 %0, [%1];" : "=l"(v) : "r"(SmemAddr(p)) : "memory");
  return v;
}
__device__ __forceinline__ void StVolatileShared(int32_t* p, int32_t v) {
  asm volatile("st.volatile.shared.b32 [%0], %1;" ::"r"(SmemAddr(p)), "r"(v) : "memory");
}
__device__ __forceinline__ void StVolatileShared(int64_t* p, int64_t v) {
  asm volatile("st.volatile.shared.b64 [%0], %1;" ::"r"(SmemAddr(p)), "l"(v) : "memory");
}

// A GPU-scope relaxed load of a word in global memory, for flags other streams write (an L2
// read, never a stale L1 line).
__device__ __forceinline__ uint32_t LdRelaxedGpu(const uint32_t* p) {
  uint32_t v;
  asm volatile("ld.relaxed.gpu.global.b32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

__device__ __forceinline__ void MbarInit(uint64_t* bar, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(SmemAddr(bar)), "r"(count));
}

__device__ __forceinline__ void MbarExpectTx(uint64_t* bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(SmemAddr(bar)),
               "r"(bytes)
               : "memory");
}

__device__ __forceinline__ void MbarArrive(uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(SmemAddr(bar)) : "memory");
}

__device__ __forceinline__ void MbarWait(uint64_t* bar, uint32_t parity) {
  uint32_t done = 0;
  do {
    asm volatile(
        "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
        "selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(SmemAddr(bar)), "r"(parity)
        : "memory");
  } while (!done);
}

// 3-D tiled TMA load (inner coordinate first) completing on `bar`.
__device__ __forceinline__ void TmaLoad(void* dst, const CUtensorMap* map, uint64_t* bar, int c0,
                                        int c1, int c2) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4, %5}], [%2];" ::"r"(SmemAddr(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(SmemAddr(bar)), "r"(c0), "r"(c1), "r"(c2)
      : "memory");
}

// Multicast variant: the box lands at the same shared-memory offset in every CTA of `mask` and
// completes on each one's barrier at `bar`'s offset.
__device__ __forceinline__ void TmaLoadMulticast(void* dst, const CUtensorMap* map, uint64_t* bar,
                                                 int c0, int c1, int c2, uint16_t mask) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes"
      ".multicast::cluster [%0], [%1, {%3, %4, %5}], [%2], %6;" ::"r"(SmemAddr(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(SmemAddr(bar)), "r"(c0), "r"(c1), "r"(c2), "h"(mask)
      : "memory");
}

// Arrives on the mbarrier at `bar`'s offset in CTA `cta` of the cluster.
__device__ __forceinline__ void MbarArriveCluster(uint64_t* bar, uint32_t cta) {
  asm volatile(
      "{\n.reg .b32 remote;\nmapa.shared::cluster.u32 remote, %0, %1;\n"
      "mbarrier.arrive.shared::cluster.b64 _, [remote];\n}\n" ::"r"(SmemAddr(bar)),
      "r"(cta)
      : "memory");
}

// 3-D tiled TMA store of the box at `src` (committed as its own bulk group).
__device__ __forceinline__ void TmaStore(const CUtensorMap* map, const void* src, int c0, int c1,
                                         int c2) {
  asm volatile(
      "cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%2, %3, %4}], [%1];\n"
      "cp.async.bulk.commit_group;" ::"l"(reinterpret_cast<uint64_t>(map)),
      "r"(SmemAddr(src)), "r"(c0), "r"(c1), "r"(c2)
      : "memory");
}

// Named barrier over one warpgroup (id 0 is __syncthreads').
__device__ __forceinline__ void WarpgroupBarrier(int id) {
  asm volatile("bar.sync %0, 128;" ::"r"(id) : "memory");
}

// Named barrier `id` of `count` threads: wait for it (sync) or only count in (arrive), so that
// one group of threads can signal another.
__device__ __forceinline__ void NamedBarrierSync(int id, int count) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(count) : "memory");
}
__device__ __forceinline__ void NamedBarrierArrive(int id, int count) {
  asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(count) : "memory");
}

__device__ __forceinline__ void ClusterSync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::
                   : "memory");
}

__device__ __forceinline__ uint32_t ClusterRank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}

// wgmma shared-memory matrix descriptor for a 128-byte-swizzled operand. K-major: rows of 128
// bytes, 8-row groups 1024 bytes apart (SBO); LBO unused. MN-major: 64-element MN chunks
// `lbo` bytes apart, 8-row K groups 1024 bytes apart.
__device__ __forceinline__ uint64_t Desc(const void* smem, uint32_t lbo) {
  uint64_t addr = SmemAddr(smem);
  return ((addr & 0x3FFFF) >> 4) | (uint64_t((lbo >> 4) & 0x3FFF) << 16) |
         (uint64_t(1024 >> 4) << 32) | (uint64_t(1) << 62);
}

template <int N>
__device__ __forceinline__ void FenceAcc(float (&acc)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(acc[i])::"memory");
}

// 4-D tiled TMA load (inner coordinate first) completing on `bar`.
__device__ __forceinline__ void TmaLoad4(void* dst, const CUtensorMap* map, uint64_t* bar, int c0,
                                         int c1, int c2, int c3) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4, %5, %6}], [%2];" ::"r"(SmemAddr(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(SmemAddr(bar)), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
      : "memory");
}

// The warpgroup's wgmma ordering: fence before the first wgmma that reads registers written
// since, commit the issued ones as a group, wait until at most N groups are pending.
__device__ __forceinline__ void WgmmaFence() {
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
}
__device__ __forceinline__ void WgmmaCommit() {
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}
template <int N>
__device__ __forceinline__ void WgmmaWait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}

}  // namespace pygpukit::sm90

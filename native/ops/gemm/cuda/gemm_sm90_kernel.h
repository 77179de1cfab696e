// Hopper GEMM (sm_90a): D = epilogue(A @ B) for bf16 / fp16 inputs with fp32 accumulation, for
// float32 inputs read as TF32 and for e4m3 inputs with per-tensor or per-row / column scales
// (K-major A and B only: tf32 and 8-bit wgmma have no transpose).
//
// Design (one CTA per SM, persistent):
//   * Block tile 128 x BN x 64 (BN = 256 or 128; x 32 for tf32: the same 128 bytes of K).
//     384 threads = 3 warpgroups: warpgroup 0 is the
//     producer (one thread issues TMA copies; the group gives registers back with setmaxnreg),
//     warpgroups 1 and 2 are consumers, each owning 64 rows of the tile and issuing
//     wgmma.m64nBNk16 (k8 for tf32, k32 for e4m3) with both operands in shared memory
//     (accumulators: BN / 2 fp32 registers per thread).
//   * Pipeline: kStages shared-memory stages, each holding a 128 x 64 A tile and a BN x 64 B tile
//     (x 32 for tf32)
//     in the 128-byte-swizzled layout TMA writes and wgmma reads. Per stage, a `full` mbarrier
//     (TMA transaction bytes) and an `empty` mbarrier (one arrive per consumer warp once its
//     wgmmas have read the stage). Consumers keep one wgmma group in flight: a stage is
//     released when the next stage's group has been issued and the previous one retired.
//   * Tiles are walked in a grouped order (group_m tile rows at a time, column by column) so
//     that concurrently running CTAs share A rows and B columns in L2. The producer runs ahead
//     into the next tile while consumers run the epilogue.
//   * Operand layouts: A is K-major (row-major) or M-major (a transposed view); B is K-major
//     (B^T row-major, the linear-layer weight) or N-major (row-major). MN-major operands are
//     loaded as 64-element-wide boxes and read with wgmma's transpose bit, so no copy is made.
//   * Tails: TMA zero-fills out-of-bounds rows / columns / K, and the epilogue masks stores. A
//     consumer whose 64 rows lie wholly past M (skinny products) keeps the pipeline turning but
//     issues no wgmma and writes nothing.
//   * Split-K (p.splits > 1, where the last wave would leave SMs idle): the tiles of the full
//     waves run whole, then each later tile as (tile, split) units of split_kblocks k-blocks.
//     Each consumer writes its 64 x BN float32 partial block (rows past M skipped) to the
//     workspace and counts itself in at its tile half's counter; the last to arrive adds all
//     the splits' blocks in split order (so the bits do not depend on arrival order) and runs
//     the epilogue.
//   * Preemption (kPreempt, the "_p" kernels: whole tiles, no clusters): warp 1 of the producer
//     warpgroup polls the device word p.preempt; once it reads nonzero, the producer issues no
//     further k-block and instead completes the next stage's `full` barrier with no bytes (a
//     poison stage), recording where it stopped. Consumers drain the stages already loaded, meet
//     the poison, write their accumulators and the CTA's place (unit, k-block) to
//     p.preempt_state and set *p.preempted; a launch with p.resume = 1 goes on from that
//     k-block and adds the saved sums after its main loop (as split-K adds partials). So the SMs
//     are free within a few k-blocks (each about 0.6 us on an H100) plus one 128 KiB store per
//     CTA, nothing is recomputed, and a preempted product differs from an uninterrupted one by
//     float32 rounding only.
//   * Epilogue: 16-bit results in the inputs' dtype go through the shared GEMM epilogue (alpha,
//     beta * C, bias, activation) in registers when one is requested, are staged in shared
//     memory and leave through asynchronous TMA stores (EpilogueTma), so the consumers start
//     the next tile at once; float32 results and a D TMA cannot write go straight from the
//     accumulator registers (Epilogue).
//
// Kernels compiled for other archs keep an empty body; the host launches them only on SM 9.x
// devices from images built for sm_90a. gemm_sm90_128x256.cu and gemm_sm90_128x128.cu
// instantiate the kernels (two files so that they compile in parallel).
#pragma once

#include "ops/gemm/cuda/gemm_sm90_device.h"
#include "ops/gemm/cuda/gemm_sm90_epilogue.h"

namespace {

// Where a preemptible CTA stopped (shared memory): the producer writes it before the poison
// stage, consumers compare their place with it after each `full` wait. -1: not stopped.
struct PreemptSmem {
  int64_t stop_t;
  int32_t stop_kb;
  int32_t stop_req;  // the poller saw the signal set
  int32_t done;      // the producer ran out of work: the poller may leave
  int32_t pad;
};

// A CTA's record in p.preempt_state (PreemptRecordBytes): t >= the unit count when it finished.
struct PreemptRecord {
  int64_t t;
  int32_t kb;
  int32_t has_acc;
};

// The accumulators of consumer `consumer` of this CTA in p.preempt_state, register i of thread
// `lane128` at [i * 128 + lane128] (coalesced both ways, whatever the register layout).
template <int BN>
__device__ __forceinline__ float* PreemptAcc(const pk::GemmParams& p, int consumer) {
  return reinterpret_cast<float*>(p.preempt_state + pk::PreemptRecordBytes(gridDim.x)) +
         (int64_t(blockIdx.x) * 2 + consumer) * (BN / 2) * 128;
}

template <typename In, typename Out, int BN, int TA, int TB, int kCluster, bool kPreempt = false>
__device__ __forceinline__ void GemmBody(const CUtensorMap* tma_a, const CUtensorMap* tma_b,
                                         const CUtensorMap* tma_d, const pk::GemmParams& p,
                                         int tma_store) {
#if PGK_SM90A
  using Cfg = Config<BN>;
  constexpr int kStages = Cfg::kStages;
  extern __shared__ uint8_t smem_raw[];
  uint8_t* smem = AlignSwizzle(smem_raw);  // the stages start on a swizzle atom
  uint8_t* stage_a = smem;
  uint8_t* stage_b = smem + kStages * Cfg::kABytes;
  uint8_t* staging = smem + kStages * Cfg::kStageBytes;
  uint64_t* full = reinterpret_cast<uint64_t*>(staging + kEpilogueBytes);
  uint64_t* empty = full + kStages;
  int* last_arrival = reinterpret_cast<int*>(empty + kStages);         // per consumer (split-K)
  PreemptSmem* ps = reinterpret_cast<PreemptSmem*>(last_arrival + 4);  // volatile accesses
  static_assert(!kPreempt || kCluster == 1, "preemptible kernels run without clusters");

  if (threadIdx.x == 0) {
    if constexpr (kPreempt) {
      StVolatileShared(&ps->stop_t, int64_t{-1});
      StVolatileShared(&ps->stop_kb, -1);
      StVolatileShared(&ps->stop_req, 0);
      StVolatileShared(&ps->done, 0);
    }
    for (int s = 0; s < kStages; ++s) {
      MbarInit(&full[s], 1);
      // Every consumer warp of the cluster releases the stage: peers multicast into it.
      MbarInit(&empty[s], kConsumerWarps * kCluster);
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  if constexpr (kCluster > 1) ClusterSync();  // peers' barriers exist before anyone signals them
  const uint32_t rank = kCluster > 1 ? ClusterRank() : 0;
  int64_t first = blockIdx.x / kCluster;
  const int64_t step = gridDim.x / kCluster;
  // Resuming: this CTA's first unit and k-block (-1: the unit's first), and whether the
  // accumulators of that unit were saved.
  int kb_resume = -1;
  bool acc_saved = false;
  if constexpr (kPreempt) {
    if (p.resume) {
      const PreemptRecord* rec = reinterpret_cast<const PreemptRecord*>(p.preempt_state);
      first = rec[blockIdx.x].t;
      kb_resume = rec[blockIdx.x].kb;
      acc_saved = rec[blockIdx.x].has_acc != 0;
    }
  }

  // Work units (UnitOf): whole tiles, then (tile, split) pairs, the splits of a tile adjacent
  // so that they run together.
  const int64_t tiles = int64_t(p.tiles_m) * p.tiles_n * p.batch;
  const int64_t total = p.splits > 1 ? p.dp_tiles + (tiles - p.dp_tiles) * p.splits : tiles;
  constexpr int BK = kBK<In>;
  const int kblocks = static_cast<int>((p.k + BK - 1) / BK);
  const int warpgroup = threadIdx.x / 128;

  if (warpgroup == 0) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
    if (threadIdx.x == 0) {
      // The descriptors live in kernel parameter space: fetch them before the first copy needs
      // them.
      asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(tma_a)) : "memory");
      asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(tma_b)) : "memory");
      if (tma_store) {
        asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(tma_d))
                     : "memory");
      }
    }
    if constexpr (kPreempt) {
      // The poller: one thread of another warp reading the signal (in device memory: an L2
      // read; polling pinned host memory from every CTA made the kernel 30x slower on an
      // H200) until it is set or the producer runs out of work, so that the producer's loop
      // only checks shared memory.
      if (threadIdx.x == 32 && p.preempt != nullptr) {
        while (!LdVolatileShared(&ps->done)) {
          if (LdRelaxedGpu(p.preempt) != 0) {
            StVolatileShared(&ps->stop_req, 1);
            break;
          }
          __nanosleep(500);
        }
      }
    }
    int stage = 0;
    uint32_t phase = 0;
    bool stopped = false;
    for (int64_t t = first; threadIdx.x == 0 && t < total && !stopped; t += step) {
      const Unit unit = UnitOf(p, t, kblocks);
      const Tile tile = TileOf<kCluster>(p, unit.tile, BN, rank);
      const int ba = p.a_batch != 0 ? static_cast<int>(tile.batch) : 0;
      const int bb = p.b_batch != 0 ? static_cast<int>(tile.batch) : 0;
      const int kb_first = kPreempt && t == first && kb_resume >= 0 ? kb_resume : unit.kb_begin;
      for (int kb = kb_first; kb < unit.kb_end; ++kb) {
        MbarWait(&empty[stage], phase ^ 1);
        if constexpr (kPreempt) {
          if (LdVolatileShared(&ps->stop_req)) {
            // Consumers meet this stage after the loaded ones: it carries no bytes, only the
            // place to stop at (published by the arrive's release).
            StVolatileShared(&ps->stop_t, t);
            StVolatileShared(&ps->stop_kb, kb);
            MbarArrive(&full[stage]);
            stopped = true;
            break;
          }
        }
        MbarExpectTx(&full[stage], Cfg::kStageBytes);
        uint8_t* a = stage_a + stage * Cfg::kABytes;
        uint8_t* b = stage_b + stage * Cfg::kBBytes;
        const int k0 = kb * BK;
        if constexpr (TA == 0) {
          TmaLoad(a, tma_a, &full[stage], k0, tile.m0, ba);
        } else {
#pragma unroll
          for (int j = 0; j < kBM / 64; ++j) {
            TmaLoad(a + j * kBox, tma_a, &full[stage], tile.m0 + 64 * j, k0, ba);
          }
        }
        if constexpr (kCluster > 1) {
          // Each CTA fetches its share of the B tile and multicasts it to the whole cluster.
          constexpr uint16_t kAll = (1u << kCluster) - 1;
          if constexpr (TB == 0) {
            constexpr int kRows = BN / kCluster;
            TmaLoadMulticast(b + rank * kRows * 128, tma_b, &full[stage], k0,
                             tile.n0 + rank * kRows, bb, kAll);
          } else {
            constexpr int kBoxes = BN / 64 / kCluster;
#pragma unroll
            for (int j = rank * kBoxes; j < (rank + 1) * kBoxes; ++j) {
              TmaLoadMulticast(b + j * kBox, tma_b, &full[stage], tile.n0 + 64 * j, k0, bb, kAll);
            }
          }
        } else if constexpr (TB == 0) {
          TmaLoad(b, tma_b, &full[stage], k0, tile.n0, bb);
        } else {
#pragma unroll
          for (int j = 0; j < BN / 64; ++j) {
            TmaLoad(b + j * kBox, tma_b, &full[stage], tile.n0 + 64 * j, k0, bb);
          }
        }
        if (++stage == kStages) {
          stage = 0;
          phase ^= 1;
        }
      }
    }
    if constexpr (kPreempt) {
      if (threadIdx.x == 0) StVolatileShared(&ps->done, 1);
    }
  } else {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
    const int consumer = warpgroup - 1;
    const bool arrive = threadIdx.x % 32 == 0;
    // A: the consumer's 64 rows start 64 rows (K-major) or one 64-wide box (M-major) in.
    const uint32_t a_offset = consumer * (TA == 0 ? 64 * 128 : kBox);
    // Per-k16 step inside a stage: 32 bytes along a K-major row, 16 rows of an MN-major box.
    constexpr uint32_t kStepA = TA == 0 ? 32 : 16 * 128;
    constexpr uint32_t kStepB = TB == 0 ? 32 : 16 * 128;
    float acc[BN / 2];
    // 8-bit wgmma adds its products into the accumulator at reduced precision (low bits are
    // dropped, so the error grows with K); each k-block's sum is started fresh and promoted into
    // float32 `sums` instead, so a product's error is that of one 128-deep block. Only the
    // 128-wide tiles have the registers for both.
    constexpr bool kPromote = sizeof(In) == 1;
    static_assert(!kPromote || BN == 128, "8-bit kernels promote into a second accumulator");
    float sums[kPromote ? BN / 2 : 1];
    float(&res)[BN / 2] = *reinterpret_cast<float(*)[BN / 2]>(kPromote ? sums : acc);
    int stage = 0;
    uint32_t phase = 0;
    // Releases a stage to every producer that writes into it.
    auto release = [&](int s) {
      if (!arrive) return;
      if constexpr (kCluster > 1) {
#pragma unroll
        for (uint32_t cta = 0; cta < kCluster; ++cta) MbarArriveCluster(&empty[s], cta);
      } else {
        MbarArrive(&empty[s]);
      }
    };
    bool stopped = false;
    for (int64_t t = first; t < total; t += step) {
      const Unit unit = UnitOf(p, t, kblocks);
      const Tile tile = TileOf<kCluster>(p, unit.tile, BN, rank);
      // A half wholly past M: the pipeline still turns (the producer counts on every consumer
      // warp's release) but no wgmma is issued.
      const bool active = tile.m0 + consumer * 64 < tile.m_end;
      // A resumed unit starts from its saved k-block and accumulators.
      const bool resumed = kPreempt && t == first && kb_resume >= 0;
      const int kb_first = resumed ? kb_resume : unit.kb_begin;
      // The saved sums are added after the main loop, not loaded into the accumulators before it:
      // registers a wgmma accumulates into that other instructions define make ptxas serialize
      // every wgmma of the kernel (C7515).
      const bool reload = resumed && acc_saved;
      int prev = -1;
      int kb = kb_first;
      if constexpr (kPromote) {
#pragma unroll
        for (int i = 0; i < BN / 2; ++i) sums[i] = 0.0f;
      }
      for (; kb < unit.kb_end; ++kb) {
        MbarWait(&full[stage], phase);
        if constexpr (kPreempt) {
          if (LdVolatileShared(&ps->stop_kb) == kb && LdVolatileShared(&ps->stop_t) == t) {
            stopped = true;
            break;
          }
        }
        if (active) {
          const uint8_t* a = stage_a + stage * Cfg::kABytes + a_offset;
          const uint8_t* b = stage_b + stage * Cfg::kBBytes;
          FenceAcc(acc);
          asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
          for (int kk = 0; kk < 4; ++kk) {
            Mma<In, BN, TA, TB>(acc, Desc(a + kk * kStepA, kBox), Desc(b + kk * kStepB, kBox),
                                ((kb != kb_first) && !kPromote) | (kk != 0));
          }
          asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
          if constexpr (kPromote) {
            // The block's sum is read before the next block's first wgmma overwrites it; the
            // other consumer's wgmmas keep the tensor cores busy meanwhile.
            asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
            FenceAcc(acc);
#pragma unroll
            for (int i = 0; i < BN / 2; ++i) sums[i] += acc[i];
          } else {
            asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
            FenceAcc(acc);
          }
        }
        if (prev >= 0) release(prev);
        prev = stage;
        if (++stage == kStages) {
          stage = 0;
          phase ^= 1;
        }
      }
      asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
      FenceAcc(acc);
      release(prev);
      if constexpr (kPreempt) {
        // The sums of the k-blocks before the resume point, then those of this launch: a
        // preempted product differs from an uninterrupted one by float32 rounding only.
        const bool ran = kb != kb_first;  // else acc holds nothing of this launch
        if (reload && ran && active) {
          const float* saved = PreemptAcc<BN>(p, consumer);
#pragma unroll
          for (int i = 0; i < BN / 2; ++i) acc[i] += saved[i * 128 + threadIdx.x % 128];
        }
        if (stopped) {
          // Save what this unit has summed so far (a saved partial stays as it is when nothing
          // ran), and where to go on from.
          const bool has_acc = ran || reload;
          if (ran && active) {
            float* saved = PreemptAcc<BN>(p, consumer);
#pragma unroll
            for (int i = 0; i < BN / 2; ++i) saved[i * 128 + threadIdx.x % 128] = acc[i];
          }
          if (threadIdx.x == 128) {
            PreemptRecord* rec = reinterpret_cast<PreemptRecord*>(p.preempt_state);
            rec[blockIdx.x] = PreemptRecord{t, kb, has_acc ? 1 : 0};
            *p.preempted = 1;
          }
          break;
        }
      }
      if (!active) continue;
      if (p.splits > 1 && t >= p.dp_tiles) {
        // Recomputed here rather than kept live across the main loop (register pressure).
        const Unit u = UnitOf(p, t, kblocks);
        const int rows = tile.m_end - (tile.m0 + consumer * 64);
        if (!SplitReduce<BN>(p, res, (u.tile - p.dp_tiles) * 2 + consumer, u.split,
                             rows < 64 ? rows : 64, consumer, last_arrival + consumer)) {
          continue;
        }
      }
      if constexpr (sizeof(Out) == 2) {
        // A grouped tile's rows past its group belong to the next one: a TMA store (clipped at
        // the matrix only) would overwrite them, so such a half leaves through registers.
        if (tma_store && (p.groups == 0 || tile.m0 + consumer * 64 + 64 <= tile.m_end)) {
          EpilogueTma<Out, BN, sizeof(In) == 1>(p, tma_d, res, tile, consumer,
                                                staging + consumer * 2 * kSlab);
          continue;
        }
      }
      Epilogue<Out, BN, sizeof(In) == 1>(p, res, tile, consumer);
    }
    if constexpr (kPreempt) {
      if (!stopped && threadIdx.x == 128) {
        PreemptRecord* rec = reinterpret_cast<PreemptRecord*>(p.preempt_state);
        rec[blockIdx.x] = PreemptRecord{total, 0, 0};
      }
    }
    // Shared memory must outlive the reads of the last stores.
    if (tma_store && threadIdx.x % 128 == 0) {
      asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
    }
  }
  // Peers may still multicast into this CTA or arrive on its barriers until they are done.
  // (Warp 0 diverged around the producer loop: reconverge it for the aligned barrier.)
  __syncwarp();
  if constexpr (kCluster > 1) ClusterSync();
#else
  (void)tma_a;
  (void)tma_b;
  (void)tma_d;
  (void)p;
  (void)tma_store;
#endif
}

}  // namespace

// pgk_gemm_sm90_128x<BN>[_c2|_p]_<A layout><B layout>_<in>_<out>: _c2 runs in clusters of two
// CTAs (stacked along M) sharing each B tile through TMA multicast; _p is preemptible (PRE);
// A layout k (K-major) or m (M-major); B layout k (K-major, B^T row-major) or n (N-major,
// row-major). Float32 inputs (TF32) come in the kk layout only, and not preemptible.
#define PGK_SM90_KERNEL(BN, CL, PRE, SUFFIX, LA, LB, TA, TB, IN, INC, OUT, OUTC)                \
  extern "C" __global__ void __launch_bounds__(kThreads, 1)                                     \
      pgk_gemm_sm90_128x##BN##SUFFIX##_##LA##LB##_##INC##_##OUTC(                               \
          const __grid_constant__ CUtensorMap tma_a, const __grid_constant__ CUtensorMap tma_b, \
          const __grid_constant__ CUtensorMap tma_d, const pk::GemmParams p, int tma_store) {   \
    GemmBody<IN, OUT, BN, TA, TB, CL, PRE>(&tma_a, &tma_b, &tma_d, p, tma_store);               \
  }

#define PGK_SM90_LAYOUTS(BN, CL, PRE, SUFFIX, IN, INC, OUT, OUTC)      \
  PGK_SM90_KERNEL(BN, CL, PRE, SUFFIX, k, k, 0, 0, IN, INC, OUT, OUTC) \
  PGK_SM90_KERNEL(BN, CL, PRE, SUFFIX, k, n, 0, 1, IN, INC, OUT, OUTC) \
  PGK_SM90_KERNEL(BN, CL, PRE, SUFFIX, m, k, 1, 0, IN, INC, OUT, OUTC) \
  PGK_SM90_KERNEL(BN, CL, PRE, SUFFIX, m, n, 1, 1, IN, INC, OUT, OUTC)

// The 16-bit kernels of one tile shape.
#define PGK_SM90_TYPES16(BN, CL, PRE, SUFFIX)                                        \
  PGK_SM90_LAYOUTS(BN, CL, PRE, SUFFIX, __nv_bfloat16, bf2, pygpukit::bfloat16, bf2) \
  PGK_SM90_LAYOUTS(BN, CL, PRE, SUFFIX, __nv_bfloat16, bf2, float, f4)               \
  PGK_SM90_LAYOUTS(BN, CL, PRE, SUFFIX, __half, f2, pygpukit::float16, f2)           \
  PGK_SM90_LAYOUTS(BN, CL, PRE, SUFFIX, __half, f2, float, f4)

#define PGK_SM90_TYPES(BN, CL, SUFFIX)    \
  PGK_SM90_TYPES16(BN, CL, false, SUFFIX) \
  PGK_SM90_KERNEL(BN, CL, false, SUFFIX, k, k, 0, 0, float, f4, float, f4)

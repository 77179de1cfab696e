// CUDA reductions and scans through the JIT: picks the launch configuration from the shape, the
// layout and the device (ops/reduce/reduce_jit.h describes the modes), finds or compiles the
// program and launches its kernels through the dispatcher, with the slice workspace from the
// pool (stream-ordered, so it is reusable as soon as the launches are queued).
#include <algorithm>
#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "ops/creation/new_array.h"
#include "ops/kernels/complex_math.h"
#include "ops/launch/jit_kernel_cache.h"
#include "ops/launch/launch_context.h"
#include "ops/launch/launch_cost.h"
#include "ops/reduce/reduce_codegen.h"
#include "ops/reduce/reduce_kernels.h"
#include "runtime/runtime.h"

namespace pygpukit::ops {
namespace {

constexpr int kBlock = 256;  // kernels::kReduceBlock
// Blocks of kBlock threads resident per SM that the kernels' launch bounds guarantee (registers
// capped for it): a grid with fewer blocks is split along the reduction to fill one wave (a
// second, partial wave would idle most SMs; 2, 4 or 8 whole waves of shorter slices measured
// slower on an H100: float32 max of 2^28 2.93 TB/s in one wave, 2.87 / 2.74 / 2.49), and each
// thread keeps 4 16-byte loads in flight. Reductions fill the wave their compiled kernel really
// gets (cuOccupancy...: 6 blocks for kernels under 40 registers); PYGPUKIT_RED_BLOCKS_PER_SM (1..8)
// fixes it instead, and PYGPUKIT_RED_WAVES (1..16) sizes the slices for that many waves
// (measurement knobs, read once; with the key folds of max, 2 and 4 waves still measured no
// better: bfloat16 sum of 2^28 on an H100 2.96 TB/s, 2.94, 2.90). The slices, and so a float
// result's bits, follow the SM count and the compiled kernel (its registers: the NVRTC version),
// not the input alone.
constexpr int64_t kBlocksPerSm = 4;

// The measurement knobs above, read once; invalid values keep the defaults.
struct Tuning {
  int fixed_blocks_per_sm = 0;  // PYGPUKIT_RED_BLOCKS_PER_SM (1..8; 8 blocks of 256 fill an SM)
  int64_t waves = 1;            // PYGPUKIT_RED_WAVES (1..16)
  // Interleaved slices for the dense inner mode (ReduceParams::interleave): the blocks of a wave
  // read neighbouring memory (H100, 2^28 elements, same run: float32 sum 2.99 -> 3.07 TB/s,
  // bfloat16 sum 2.90 -> 3.00). PYGPUKIT_RED_INTERLEAVE=0 keeps contiguous slices.
  bool interleave = true;
};

const Tuning& Knobs() {
  static const Tuning t = [] {
    Tuning t;
    auto int_in = [](const char* name, int lo, int hi, int fallback) {
      const char* v = std::getenv(name);
      const int x = v != nullptr ? std::atoi(v) : 0;
      return x >= lo && x <= hi ? x : fallback;
    };
    t.fixed_blocks_per_sm = int_in("PYGPUKIT_RED_BLOCKS_PER_SM", 1, 8, 0);
    t.waves = int_in("PYGPUKIT_RED_WAVES", 1, 16, 1);
    if (const char* v = std::getenv("PYGPUKIT_RED_INTERLEAVE"))
      t.interleave = std::string(v) != "0";
    return t;
  }();
  return t;
}
// The largest reducer state (var / std of complex128); workspaces hold this much per slice.
constexpr int64_t kMaxAcc = 48;
static_assert(sizeof(kernels::StdReducer<complex128>::Acc) <= kMaxAcc);
static_assert(sizeof(kernels::ArgMaxReducer<double>::Acc) <= kMaxAcc);

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t RoundUp(int64_t a, int64_t b) { return CeilDiv(a, b) * b; }
int Pow2Floor(int64_t v) {
  int p = 1;
  while (p * 2 <= v && p < kBlock) p *= 2;
  return p;
}
int Pow2Ceil(int64_t v) {
  int p = 1;
  while (p < v && p < kBlock) p *= 2;
  return p;
}

// sizeof the reducer's state for compute dtype `compute`.
int64_t AccSize(ReduceOp op, DType compute) {
  return VisitDType(compute, [&](auto tag) -> int64_t {
    using T = typename decltype(tag)::type;
    switch (op) {
#define PGK_ACC_SIZE(E, name, R) \
  case ReduceOp::k##E:           \
    return sizeof(typename kernels::R<T>::Acc);
      PGK_FOR_EACH_REDUCE_OP(PGK_ACC_SIZE)
#undef PGK_ACC_SIZE
    }
    return kMaxAcc;
  });
}

absl::StatusOr<int64_t> Multiprocessors(Device d) {
  PGK_ASSIGN_OR_RETURN(hal::DeviceProperties props, Runtime::Get().properties(d));
  return std::max(1, props.multiprocessors);
}

// ---- reductions ----

// The kernel for `p`: inner or outer mode, the row width and the access width.
ReduceKernelSpec ReduceSpecOf(const ReduceLaunch& l, DType in, DType out,
                              const kernels::ReduceParams& p) {
  ReduceKernelSpec k;
  k.op = l.op;
  k.in = in;
  k.compute = l.compute;
  k.out = out;
  k.out_ndim = static_cast<int>(p.out_ndim);
  k.red_ndim = static_cast<int>(p.red_ndim);
  const int64_t last_red = p.red_ndim > 0 ? std::abs(p.red_stride[p.red_ndim - 1]) : INT64_MAX;
  const int64_t last_out = p.out_ndim > 0 ? std::abs(p.out_stride[p.out_ndim - 1]) : INT64_MAX;
  // Threads of a row walk the reduced elements when they are the faster memory dimension.
  // A broadcast reduced dim (stride 0) is not: the row would re-read one address.
  k.inner = p.red_ndim > 0 &&
            (p.out_ndim == 0 || (last_red <= last_out && (last_red > 0 || last_out == 0)));
  const int64_t itemsize = ItemSize(in);
  if (k.inner && p.red_ndim == 1 && p.red_stride[0] == 1) {
    // 16-byte accesses when every output's run starts 16-byte aligned.
    const int vec = static_cast<int>(16 / itemsize);
    bool aligned = reinterpret_cast<uintptr_t>(p.in) % 16 == 0 && p.n_red >= vec;
    for (int64_t d = 0; d < p.out_ndim; ++d) {
      aligned = aligned && (p.out_stride[d] * itemsize) % 16 == 0;
    }
    if (aligned) k.vec = vec;
  }
  if (k.inner) {
    k.bx = Pow2Floor(std::max<int64_t>(1, CeilDiv(p.n_red, k.vec) / k.unroll));
  } else {
    // Runs of V consecutive outputs per thread, read as one 16-byte access per reduced element,
    // when the last kept dim is dense and every run starts aligned; the thread's V states stay
    // within 64 bytes (registers).
    int vec = static_cast<int>(16 / itemsize);
    while (vec > 1 && vec * AccSize(l.op, l.compute) > 64) vec /= 2;
    const int64_t last = p.out_ndim - 1;
    bool ok = vec > 1 && last >= 0 && p.out_stride[last] == 1 && p.out_shape[last] % vec == 0 &&
              reinterpret_cast<uintptr_t>(p.in) % 16 == 0;
    for (int64_t d = 0; d < last; ++d) ok = ok && p.out_stride[d] % vec == 0;
    for (int64_t d = 0; d < p.red_ndim; ++d) ok = ok && p.red_stride[d] % vec == 0;
    if (ok) k.vec = vec;
    // Rows of 32 threads (a 128-byte line of float32 or 512 bytes of runs per warp access); a
    // row of 256 when there is (almost) nothing to reduce.
    k.bx = std::min(Pow2Ceil(CeilDiv(p.n_out, k.vec)), p.n_red <= 4 ? kBlock : 32);
  }
  return k;
}

// The grid of kernel `k` over `p`: blocks along the outputs (grid_x), and slices of the
// reduction when those are fewer than `target` (the blocks of one wave).
void PlanGrid(const ReduceKernelSpec& k, const kernels::ReduceParams& p, int64_t target,
              int64_t* grid_x, int64_t* slices, int64_t* slice) {
  const int64_t group = k.inner ? k.bx : kBlock / k.bx;  // threads per output
  const int64_t outputs_per_block = k.inner ? kBlock / group : int64_t{k.bx} * k.vec;
  *grid_x = CeilDiv(p.n_out, outputs_per_block);
  *slices = 1;
  *slice = std::max<int64_t>(p.n_red, 1);
  if (*grid_x < target) {
    const int64_t step = group * (k.inner ? k.vec : 1);           // slices start aligned
    const int64_t min_slice = step * k.unroll * 4;                // at least 4 trips per thread
    const int64_t want = std::max<int64_t>(1, target / *grid_x);  // one wave: at most target
    const int64_t s = std::max(min_slice, RoundUp(CeilDiv(p.n_red, want), step));
    if (s < p.n_red) {
      *slice = s;
      *slices = std::min<int64_t>(CeilDiv(p.n_red, s), 65535);
      *slice = RoundUp(CeilDiv(p.n_red, *slices), step);
      *slices = CeilDiv(p.n_red, *slice);
    }
  }
}

KernelKey ReduceKey(const ReduceKernelSpec& k, int device) {
  return PodKey('r', k.op, k.in, k.compute, k.out, k.out_ndim, k.red_ndim, k.inner, k.bx, k.vec,
                k.unroll, device);
}

struct ReduceEntry {
  void* main = nullptr;
  void* final = nullptr;
  int64_t blocks_per_sm = kBlocksPerSm;  // of `main`, resident at once
};

JitKernelCache<ReduceEntry>& ReduceCache() {
  static auto* cache = new JitKernelCache<ReduceEntry>;  // never destroyed
  return *cache;
}

// ---- scans ----

struct ScanEntry {
  void* serial = nullptr;
  void* totals = nullptr;
  void* prefixes = nullptr;
  void* block = nullptr;
};

JitKernelCache<ScanEntry>& ScanCache() {
  static auto* cache = new JitKernelCache<ScanEntry>;  // never destroyed
  return *cache;
}

// The JIT reduction `l` of p.in (of dtype `in`) into p.out (of dtype `out`); allocates the
// slice workspace it needs from the pool.
absl::Status ReduceJit(LaunchContext& ctx, const ReduceLaunch& l, DType in, DType out,
                       kernels::ReduceParams p) {
  Runtime& rt = Runtime::Get();
  const Device device = ctx.device();
  PGK_ASSIGN_OR_RETURN(int64_t sms, Multiprocessors(device));
  const ReduceKernelSpec spec = ReduceSpecOf(l, in, out, p);
  const KernelKey key = ReduceKey(spec, device.index);
  PGK_ASSIGN_OR_RETURN(
      ReduceEntry e, ReduceCache().Get(KeyView(key), [&]() -> absl::StatusOr<ReduceEntry> {
        const JitSource src = ReduceProgram(spec);
        ReduceEntry e;
        PGK_ASSIGN_OR_RETURN(e.main, rt.jit().Function(src, kReduceKernelName, device.index));
        PGK_ASSIGN_OR_RETURN(e.final, rt.jit().Function(src, kReduceFinalKernelName, device.index));
        if (Knobs().fixed_blocks_per_sm > 0) {
          e.blocks_per_sm = Knobs().fixed_blocks_per_sm;
        } else if (absl::StatusOr<int> b =
                       rt.dispatcher().ResidentBlocks(e.main, device.index, kBlock);
                   b.ok() && *b >= kBlocksPerSm) {
          e.blocks_per_sm = *b;  // at least the launch bounds' guarantee
        }
        return e;
      }));
  int64_t grid_x = 0;
  PlanGrid(spec, p, sms * e.blocks_per_sm * Knobs().waves, &grid_x, &p.slices, &p.slice);
  p.interleave = p.slices > 1 && spec.inner && spec.vec > 1 && Knobs().interleave ? 1 : 0;
  if (grid_x > INT32_MAX) {
    return NotImplementedError(absl::StrCat(l.name, ": ", p.n_out, " outputs need ", grid_x,
                                            " blocks; CUDA grids hold 2^31 - 1"));
  }
  GPUArray workspace;
  if (p.slices > 1) {
    PGK_ASSIGN_OR_RETURN(workspace,
                         NewArray({p.n_out * p.slices * kMaxAcc}, DType::UInt8, device, l.name));
    p.partial = workspace.data();
  }
  void* params[] = {&p};
  hal::LaunchDims dims;
  dims.block[0] = spec.bx;
  dims.block[1] = kBlock / spec.bx;
  dims.grid[0] = static_cast<unsigned>(grid_x);
  dims.grid[1] = static_cast<unsigned>(p.slices);
  PGK_RETURN_IF_ERROR(ctx.Function(l.name, e.main, dims, params, l.cost));
  if (p.slices == 1) return absl::OkStatus();
  hal::LaunchDims fin;
  fin.block[0] = 32;
  fin.block[1] = kBlock / 32;
  fin.grid[0] = static_cast<unsigned>(CeilDiv(p.n_out, kBlock / 32));
  return ctx.Function(l.name, e.final, fin, params);
}

// The JIT scan `l` of p.in (of dtype `in`) into p.out (of dtype `out`).
absl::Status ScanJit(LaunchContext& ctx, const ReduceLaunch& l, DType in, DType out,
                     kernels::ScanParams p) {
  Runtime& rt = Runtime::Get();
  const Device device = ctx.device();
  PGK_ASSIGN_OR_RETURN(int64_t sms, Multiprocessors(device));
  ScanKernelSpec spec;
  spec.op = l.op;
  spec.in = in;
  spec.compute = l.compute;
  spec.out = out;
  spec.line_ndim = static_cast<int>(p.line_ndim);
  // One thread per line for short lines, and for lines that are not the fast dimension when
  // there are enough of them to fill the GPU; otherwise blocks scan chunks of a line.
  spec.serial = p.length <= 64 || (std::abs(p.in_axis_stride) != 1 && p.n_lines >= sms * 512);
  if (!spec.serial) {
    spec.k = ItemSize(in) >= 8 ? 4 : 8;
    // 16-byte accesses where every line is dense and starts aligned (tiles are whole vectors).
    auto aligned = [&](const void* ptr, int64_t axis_stride, const int64_t* line_strides,
                       int64_t itemsize) {
      bool ok = axis_stride == 1 && reinterpret_cast<uintptr_t>(ptr) % 16 == 0;
      for (int64_t d = 0; d < p.line_ndim; ++d) ok = ok && (line_strides[d] * itemsize) % 16 == 0;
      return ok;
    };
    spec.vec_in = aligned(p.in, p.in_axis_stride, p.line_in_stride, ItemSize(in));
    spec.vec_out = aligned(static_cast<const char*>(p.out) + p.include_initial * ItemSize(out),
                           p.out_axis_stride, p.line_out_stride, ItemSize(out));
    const int64_t tile = int64_t{kBlock} * spec.k;
    const int64_t per_line = std::max<int64_t>(1, sms * kBlocksPerSm / p.n_lines);
    p.chunk = RoundUp(std::max<int64_t>(1, CeilDiv(p.length, per_line)), tile);
    p.chunks = CeilDiv(p.length, p.chunk);
  }
  const KernelKey key = PodKey('s', spec.op, in, spec.compute, out, spec.line_ndim, spec.serial,
                               spec.k, spec.vec_in, spec.vec_out, device.index);
  PGK_ASSIGN_OR_RETURN(
      ScanEntry e, ScanCache().Get(KeyView(key), [&]() -> absl::StatusOr<ScanEntry> {
        const JitSource src = ScanProgram(spec);
        ScanEntry e;
        if (spec.serial) {
          PGK_ASSIGN_OR_RETURN(e.serial,
                               rt.jit().Function(src, kScanSerialKernelName, device.index));
          return e;
        }
        PGK_ASSIGN_OR_RETURN(e.totals, rt.jit().Function(src, kScanTotalsKernelName, device.index));
        PGK_ASSIGN_OR_RETURN(e.prefixes,
                             rt.jit().Function(src, kScanPrefixesKernelName, device.index));
        PGK_ASSIGN_OR_RETURN(e.block, rt.jit().Function(src, kScanBlockKernelName, device.index));
        return e;
      }));
  void* params[] = {&p};
  hal::LaunchDims lines;  // one thread per line
  lines.block[0] = kBlock;
  lines.grid[0] = static_cast<unsigned>(CeilDiv(p.n_lines, kBlock));
  if (spec.serial) {
    return ctx.Function(l.name, e.serial, lines, params, l.cost);
  }
  if (p.n_lines > INT32_MAX) {
    return NotImplementedError(absl::StrCat(l.name, ": more than 2^31 - 1 lines"));
  }
  hal::LaunchDims chunks;  // one block per chunk of a line
  chunks.block[0] = kBlock;
  chunks.grid[0] = static_cast<unsigned>(p.n_lines);
  chunks.grid[1] = static_cast<unsigned>(p.chunks);
  GPUArray workspace;
  if (p.chunks > 1) {
    PGK_ASSIGN_OR_RETURN(workspace,
                         NewArray({p.n_lines * p.chunks * kMaxAcc}, DType::UInt8, device, l.name));
    p.partial = workspace.data();
    // The input is read twice in this mode (totals, then the block scan); the scan's operations
    // are declared once, by the block pass.
    PGK_RETURN_IF_ERROR(ctx.Function(l.name, e.totals, chunks, params,
                                     LaunchCost{0, p.n_lines * p.length * ItemSize(in)}));
    PGK_RETURN_IF_ERROR(ctx.Function(l.name, e.prefixes, lines, params));
  }
  return ctx.Function(l.name, e.block, chunks, params, l.cost);
}

// The kernels convert the input themselves; without NVRTC there are none.
absl::Status CheckJit(const ReduceLaunch& l, Device device) {
  if (absl::Status jit = Runtime::Get().jit().Available(); !jit.ok()) {
    return NotImplementedError(absl::StrCat(
        l.name, " on ", device.ToString(), " needs the NVRTC JIT, which is unavailable (",
        jit.message(), "); install the CUDA runtime compiler (libnvrtc) or use the CPU backend"));
  }
  return absl::OkStatus();
}

absl::Status ReduceCuda(LaunchContext& ctx, const ReduceLaunch& l, const GPUArray& a,
                        absl::Span<const bool> reduced, const GPUArray& out) {
  PGK_RETURN_IF_ERROR(CheckJit(l, ctx.device()));
  PGK_RETURN_IF_ERROR(ctx.Use(a));
  PGK_RETURN_IF_ERROR(ctx.Use(out));
  PGK_ASSIGN_OR_RETURN(kernels::ReduceParams p,
                       ReduceParamsOf(l.name, a, reduced, out, l.correction));
  ReduceLaunch lc = l;
  lc.cost = ReduceCost(a.size(), a.dtype(), out.size(), out.dtype());
  return ReduceJit(ctx, lc, a.dtype(), out.dtype(), p);
}

absl::Status ScanCuda(LaunchContext& ctx, const ReduceLaunch& l, const GPUArray& a, int axis,
                      bool include_initial, const GPUArray& out) {
  PGK_RETURN_IF_ERROR(CheckJit(l, ctx.device()));
  PGK_RETURN_IF_ERROR(ctx.Use(a));
  PGK_RETURN_IF_ERROR(ctx.Use(out));
  PGK_ASSIGN_OR_RETURN(kernels::ScanParams p, ScanParamsOf(l.name, a, axis, include_initial, out));
  ReduceLaunch lc = l;
  lc.cost = ReduceCost(a.size(), a.dtype(), out.size(), out.dtype());
  return ScanJit(ctx, lc, a.dtype(), out.dtype(), p);
}

PGK_REGISTER_KERNEL(kReduceKernel, kCuda, ReduceCuda);
PGK_REGISTER_KERNEL(kScanKernel, kCuda, ScanCuda);

}  // namespace
}  // namespace pygpukit::ops

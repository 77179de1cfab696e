// CUDA elementwise functions through the JIT: picks the layout (dense with 16-byte accesses,
// dense unaligned, or strided with 32- or 64-bit indexing), finds or generates and compiles the
// kernel for the operands' dtypes, and launches it through the dispatcher.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "ops/creation/new_array.h"
#include "ops/elementwise/cuda/elementwise_jit.h"
#include "ops/elementwise/elementwise_codegen.h"
#include "ops/kernels/params.h"
#include "ops/launch/jit_kernel_cache.h"
#include "ops/launch/launch_context.h"
#include "ops/launch/launch_cost.h"
#include "runtime/runtime.h"

namespace pygpukit::ops {
namespace {

// Launch shape, from an H100 sweep at 2^28 elements (.exp-style runs of benchmarks/elementwise.py
// cases): one loop trip per thread (an uncapped grid) beats grid-stride loops over a resident
// grid of 4 to 16 blocks per SM in every case (float32 add 3.05 vs 2.85-2.91 TB/s); dense
// kernels move one 16-byte vector per operand per thread (3.05 TB/s; 2 to 8 vectors: 3.00 to
// 3.03), strided ones 4 elements (add with a broadcast row 2.82 TB/s; 1 element: 1.45), and
// strided runs (broadcast rows / columns) one run (3.01 TB/s; 2 and 4 runs: 2.99, 2.96).
// Measurement knobs, read once: PYGPUKIT_EW_UNROLL (1, 2, 4 or 8, for every layout),
// PYGPUKIT_EW_BLOCKS_PER_SM (a cap on the grid, 0 = none) and PYGPUKIT_EW_FMAD=1 (table
// functions with multiply-add contraction). Invalid values keep the defaults.
// Dense kernels of math-library functions (sin, exp, atan2, ...: a long body per element) on
// 16-bit operands (8 elements per access) move 2 vectors per thread: with one, the threads'
// computing leaves too few loads in flight (H100, bfloat16 sin of 2^28: 2.78 TB/s; 2 vectors:
// 2.93, torch 2.99; cos 2.82 -> 2.96).
struct Tuning {
  bool unroll_fixed = false;  // PYGPUKIT_EW_UNROLL given: it applies to every kernel
  int unroll_contiguous = 1;
  int unroll_heavy16 = 2;
  int unroll_strided = 4;
  int unroll_runs = 1;  // strided with vec > 1: runs of 16 bytes, like dense accesses
  int blocks_per_sm = 0;
  bool contract = false;  // PYGPUKIT_EW_FMAD=1: table functions compile with --fmad=true
};

const Tuning& Knobs() {
  static const Tuning t = [] {
    Tuning t;
    if (const char* u = std::getenv("PYGPUKIT_EW_UNROLL")) {
      const int v = std::atoi(u);
      if (v == 1 || v == 2 || v == 4 || v == 8) {
        t.unroll_contiguous = t.unroll_heavy16 = t.unroll_strided = t.unroll_runs = v;
        t.unroll_fixed = true;
      }
    }
    if (const char* f = std::getenv("PYGPUKIT_EW_FMAD")) t.contract = std::string(f) == "1";
    if (const char* b = std::getenv("PYGPUKIT_EW_BLOCKS_PER_SM")) {
      const int v = std::atoi(b);
      if (v >= 0 && v <= 64) t.blocks_per_sm = v;
    }
    return t;
  }();
  return t;
}

// Everything the generated source depends on, as a short byte string: the kernel's own part
// (`head`), the operands' storage dtypes and the layout.
// Written in place into a key sized once: this runs on every launch.
KernelKey KeyOf(absl::string_view head, absl::Span<const GPUArray* const> outs,
                absl::Span<const GPUArray* const> inputs, absl::Span<const DType> scalar_dtypes,
                const EwLayout& layout, int device) {
  KernelKey k(head.size() + outs.size() + 5 + sizeof(uint32_t) + 2 * inputs.size());
  char* p = k.data();
  std::memcpy(p, head.data(), head.size());
  p += head.size();
  for (const GPUArray* o : outs) *p++ = static_cast<char>(o->dtype());
  *p++ = static_cast<char>(0x7f);  // the outputs' end
  *p++ = static_cast<char>(device);
  *p++ = static_cast<char>(layout.contiguous ? 0 : layout.ndim);
  *p++ = static_cast<char>(layout.vec);
  *p++ = static_cast<char>((layout.index32 ? 1 : 0) | layout.unroll << 1);
  std::memcpy(p, &layout.broadcast_inner, sizeof(uint32_t));
  p += sizeof(uint32_t);
  for (size_t i = 0; i < inputs.size(); ++i) {
    *p++ = static_cast<char>(inputs[i] != nullptr ? inputs[i]->dtype() : scalar_dtypes[i]);
    *p++ = inputs[i] != nullptr ? 1 : 0;
  }
  return k;
}

EwKernelSpec SpecOf(const EwLaunch& l, DType out, absl::Span<const GPUArray* const> inputs,
                    const EwLayout& layout) {
  absl::InlinedVector<EwInput, 3> in;
  absl::InlinedVector<DType, 3> compute;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const bool scalar = inputs[i] == nullptr;
    in.push_back(EwInput{scalar ? l.inputs[i].compute : inputs[i]->dtype(), scalar});
    compute.push_back(l.inputs[i].compute);
  }
  return OpKernelSpec(l.op, l.name, in, compute, out, layout);
}

struct Entry {
  void* function = nullptr;
  int64_t max_blocks = 0;  // grid cap (kernels loop over what a capped grid does not cover)
};

JitKernelCache<Entry>& Cache() {
  static auto* cache = new JitKernelCache<Entry>;  // never destroyed: used until process exit
  return *cache;
}

// Whether `p` is aligned to `bytes`, a power of two (a mask: this runs per operand and launch).
bool AlignedTo(const void* p, int64_t bytes) {
  return (reinterpret_cast<uintptr_t>(p) & static_cast<uintptr_t>(bytes - 1)) == 0;
}

// Whether the strided layout `c` can move runs of `v` elements along its last dimension: its
// extent divides by v; every operand has last stride 1 (then outer strides divisible by v and a
// pointer aligned to v elements) or, for inputs, 0 (flagged in `broadcast_inner`).
bool RunsOf(const CoalescedLayout& c, absl::Span<const GPUArray* const> arrays,
            absl::Span<const int> input_of, int v, uint32_t& broadcast_inner) {
  if (c.shape.empty() || c.shape.back() % v != 0) return false;
  uint32_t mask = 0;
  for (size_t k = 0; k < arrays.size(); ++k) {
    const auto& st = c.strides[k];
    if (input_of[k] >= 32) return false;  // the mask has 32 bits
    if (st.back() == 0 && input_of[k] >= 0) {
      mask |= 1u << input_of[k];
      continue;
    }
    if (st.back() != 1) return false;
    for (size_t d = 0; d + 1 < st.size(); ++d) {
      if (st[d] % v != 0) return false;
    }
    if (!AlignedTo(arrays[k]->data(), v * arrays[k]->itemsize())) {
      return false;
    }
  }
  broadcast_inner = mask;
  return true;
}

// A JIT elementwise kernel to launch: its name, the key part its source depends on beyond the
// operand dtypes and layout, its spec for a layout, and per input the dtype and bytes of a scalar
// (for inputs that are not arrays).
struct EwJitKernel {
  absl::string_view name;
  bool heavy;  // a math-library function: a long body per element (see Tuning)
  std::string head;
  absl::FunctionRef<EwKernelSpec(const EwLayout&)> spec;  // called on a cache miss only
  absl::Span<const DType> scalar_dtypes;
  absl::Span<const unsigned char* const> scalars;
};

// Launches `kernel` writing `outs` (one or more, of one shape) from `inputs` (broadcast to it;
// null entries stand for the scalars).
absl::Status LaunchEwJit(LaunchContext& ctx, const EwJitKernel& kernel,
                         absl::Span<const GPUArray* const> outs,
                         absl::Span<const GPUArray* const> inputs) {
  const GPUArray& out = *outs[0];
  absl::InlinedVector<const GPUArray*, 4> arrays;
  absl::InlinedVector<int, 4> input_of;  // per array operand: its input index (-1: an output)
  for (const GPUArray* o : outs) {
    arrays.push_back(o);
    input_of.push_back(-1);
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i] == nullptr) continue;
    arrays.push_back(inputs[i]);
    input_of.push_back(static_cast<int>(i));
  }
  for (const GPUArray* a : arrays) PGK_RETURN_IF_ERROR(ctx.Use(*a));
  // Every operand dense in C order (the common case, and the one whose host time matters: tiny
  // ops): one dimension, no coalescing to do.
  bool all_dense = true;
  for (const GPUArray* a : arrays) all_dense = all_dense && a->is_contiguous();
  EwLayout layout;
  CoalescedLayout coalesced;  // strided layouts only
  int ndim = 1;
  if (!all_dense) {
    absl::InlinedVector<absl::Span<const int64_t>, 4> strides;
    for (const GPUArray* a : arrays) strides.push_back(a->strides());
    coalesced = Coalesce(out.shape(), strides);
    ndim = static_cast<int>(coalesced.shape.size());
    if (ndim > kernels::kKernelMaxDims) {
      return NotImplementedError(absl::StrCat(kernel.name, ": operand layout has ", ndim,
                                              " non-mergeable dimensions; kernels support ",
                                              kernels::kKernelMaxDims));
    }
    for (const auto& st : coalesced.strides) {
      layout.contiguous = layout.contiguous && (ndim == 0 || (ndim == 1 && st[0] == 1));
    }
  }
  const int64_t n = out.size();
  int64_t widest = 1;
  for (const GPUArray* a : arrays) widest = std::max(widest, a->itemsize());
  if (layout.contiguous) {
    // 16 bytes per access for the widest operand when every pointer is aligned for it.
    layout.vec = static_cast<int>(std::max<int64_t>(1, 16 / widest));
    for (const GPUArray* a : arrays) {
      if (!AlignedTo(a->data(), layout.vec * a->itemsize())) {
        layout.vec = 1;
      }
    }
  } else {
    layout.ndim = ndim;
    int64_t reach = n;
    for (const auto& st : coalesced.strides) {
      int64_t r = 0;
      for (int d = 0; d < ndim; ++d) r += (coalesced.shape[d] - 1) * std::abs(st[d]);
      reach = std::max(reach, r + 1);
    }
    layout.index32 = reach <= INT32_MAX;
    // Runs of 16 bytes along a last dimension that every operand walks densely or (inputs) not
    // at all: broadcast rows and columns move as dense data does.
    for (int v = static_cast<int>(16 / widest); v > 1; v /= 2) {
      if (RunsOf(coalesced, arrays, input_of, v, layout.broadcast_inner)) {
        layout.vec = v;
        break;
      }
    }
    if (layout.vec > 1) {
      coalesced.shape.back() /= layout.vec;
      for (size_t k = 0; k < arrays.size(); ++k) {
        if (coalesced.strides[k].back() == 0) continue;  // element strides, one per run
        for (int64_t& st : coalesced.strides[k]) st /= layout.vec;
        coalesced.strides[k].back() = 1;
      }
    }
  }
  layout.unroll = layout.contiguous ? (kernel.heavy && layout.vec >= 8 ? Knobs().unroll_heavy16
                                                                       : Knobs().unroll_contiguous)
                  : layout.vec > 1  ? Knobs().unroll_runs
                                    : Knobs().unroll_strided;
  const KernelKey key =
      KeyOf(kernel.head, outs, inputs, kernel.scalar_dtypes, layout, out.device().index);
  PGK_ASSIGN_OR_RETURN(Entry e, Cache().Get(KeyView(key), [&]() -> absl::StatusOr<Entry> {
    Runtime& rt = Runtime::Get();
    const JitSource src = ElementwiseProgram(kernel.spec(layout));
    Entry e;
    PGK_ASSIGN_OR_RETURN(e.function, rt.jit().Function(src, kEwKernelName, out.device().index));
    PGK_ASSIGN_OR_RETURN(hal::DeviceProperties props, rt.properties(out.device()));
    const int per_sm = Knobs().blocks_per_sm;
    e.max_blocks = per_sm > 0 ? int64_t{props.multiprocessors} * per_sm : int64_t{1} << 31;
    return e;
  }));

  // Parameters in the generated signature's order (elementwise_codegen.h).
  long long n_param = layout.contiguous ? n : n / layout.vec;
  absl::InlinedVector<void*, 12> params = {&n_param};
  if (!layout.contiguous) params.push_back(const_cast<int64_t*>(coalesced.shape.data()));
  // Pointers by address: one slot per array operand (`arrays` order: outputs, then inputs).
  absl::InlinedVector<void*, 6> ptrs(arrays.size());
  size_t k = 0;
  auto push_array = [&](const GPUArray& a) {
    ptrs[k] = a.data();
    params.push_back(&ptrs[k]);
    if (!layout.contiguous) params.push_back(const_cast<int64_t*>(coalesced.strides[k].data()));
    ++k;
  };
  for (const GPUArray* o : outs) push_array(*o);
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i] != nullptr) {
      push_array(*inputs[i]);
    } else {
      params.push_back(const_cast<unsigned char*>(kernel.scalars[i]));
    }
  }
  const int64_t per_thread = layout.unroll * layout.vec;
  const int64_t units = std::max<int64_t>(1, (n + per_thread - 1) / per_thread);
  hal::LaunchDims dims;
  dims.block[0] = kEwBlock;
  dims.grid[0] = static_cast<unsigned>(std::clamp<int64_t>(
      (units + kEwBlock - 1) / kEwBlock, 1, std::min(e.max_blocks, int64_t{INT32_MAX})));
  return ctx.Function(kernel.name, e.function, dims, params.data(), ElementwiseCost(arrays, n));
}

// Whether the function's body calls the math library (a long body per element).
bool CallsMathLibrary(ElementwiseOp op) {
  switch (op) {
    case ElementwiseOp::kAtan2:
    case ElementwiseOp::kHypot:
    case ElementwiseOp::kLogaddexp:
    case ElementwiseOp::kPow:
    case ElementwiseOp::kGelu:  // the activations: erf, tanh or exp
    case ElementwiseOp::kGeluTanh:
    case ElementwiseOp::kSilu:
    case ElementwiseOp::kGeluMul:
    case ElementwiseOp::kGeluTanhMul:
    case ElementwiseOp::kSiluMul:
      return true;
    case ElementwiseOp::kReciprocal:  // one division
      return false;
    default:
      break;
  }
  // The other floating-point functions of one operand (sin, exp, log1p, ...).
  switch (op) {
#define PGK_EW_MATH(E, name, F, arity, domain, result) \
  case ElementwiseOp::k##E:                            \
    return arity == 1 && EwDomain::domain == EwDomain::kInexact;
    PGK_FOR_EACH_ELEMENTWISE_OP(PGK_EW_MATH)
#undef PGK_EW_MATH
  }
  return false;
}

}  // namespace

absl::Status ElementwiseJit(LaunchContext& ctx, const EwLaunch& l, const GPUArray& out,
                            absl::Span<const GPUArray* const> inputs) {
  std::string head = {static_cast<char>(l.op), static_cast<char>(l.compute)};
  absl::InlinedVector<DType, 3> scalar_dtypes;
  absl::InlinedVector<const unsigned char*, 3> scalars;
  for (const EwLaunch::Input& in : l.inputs) {
    head.push_back(static_cast<char>(in.compute));
    scalar_dtypes.push_back(in.compute);
    scalars.push_back(in.scalar);
  }
  // A named lambda: the FunctionRef in `kernel` refers to it. The knobs are read once, so the
  // cache key need not hold `contract`.
  auto spec = [&](const EwLayout& layout) {
    EwKernelSpec k = SpecOf(l, out.dtype(), inputs, layout);
    k.contract = Knobs().contract;
    return k;
  };
  EwJitKernel kernel{l.name, CallsMathLibrary(l.op), std::move(head), spec, scalar_dtypes, scalars};
  const GPUArray* const outs[] = {&out};
  return LaunchEwJit(ctx, kernel, outs, inputs);
}

absl::Status CopyJit(LaunchContext& ctx, const GPUArray& src, const GPUArray& dst) {
  auto spec = [&](const EwLayout& layout) {
    return CastKernelSpec(src.dtype(), dst.dtype(), layout);
  };
  const DType dtypes[] = {src.dtype()};
  const unsigned char* const no_scalars[] = {nullptr};
  EwJitKernel kernel{"copy", false, "cast", spec, dtypes, no_scalars};
  const GPUArray* const outs[] = {&dst};
  const GPUArray* const inputs[] = {&src};
  return LaunchEwJit(ctx, kernel, outs, inputs);
}

absl::Status UserElementwiseJit(LaunchContext& ctx, const UserEwLaunch& l,
                                absl::Span<const GPUArray> outs,
                                absl::Span<const GPUArray> inputs) {
  // The body, names and dtypes are part of the key (the spec is described once per call).
  std::string head = absl::StrCat("user\x01", EwSpecKey(l.spec));
  absl::InlinedVector<const unsigned char*, 4> scalars;
  for (const auto& b : l.scalars) scalars.push_back(b.data());
  auto spec = [&](const EwLayout& layout) {
    EwKernelSpec k = l.spec;
    k.layout = layout;
    return k;
  };
  EwJitKernel kernel{l.spec.name, false, std::move(head), spec, l.scalar_dtypes, scalars};
  auto addresses = [](absl::Span<const GPUArray> arrays) {
    absl::InlinedVector<const GPUArray*, 6> a;
    for (const GPUArray& x : arrays) a.push_back(x.valid() ? &x : nullptr);
    return a;
  };
  return LaunchEwJit(ctx, kernel, addresses(outs), addresses(inputs));
}

}  // namespace pygpukit::ops

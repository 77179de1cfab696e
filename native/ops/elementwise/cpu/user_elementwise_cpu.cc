// gp.ElementwiseKernel on the CPU backend: the user's body in a generated C++ loop (an odometer
// over the coalesced layout, like the table functions' loop), compiled by the host compiler
// (runtime/jit/host_jit.h) and run in parallel chunks on the thread pool.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/cpu/thread_pool.h"
#include "core/shape.h"
#include "core/status.h"
#include "ops/elementwise/elementwise_kernels.h"
#include "ops/kernels/params.h"
#include "runtime/jit/host_jit.h"

namespace pygpukit::ops {
namespace {

constexpr int64_t kGrain = 1 << 15;

// pgk_host(begin, end, ndim, shape, ptrs, strides): operands are the inputs then the outputs;
// strides are [operand][kKernelMaxDims] elements (0 for scalars, whose pointer is their bytes).
using HostFn = void (*)(long long, long long, int, const long long*, void* const*,
                        const long long*);

std::string HostSource(const EwKernelSpec& spec) {
  std::string s = "#include \"ops/kernels/math_ops.h\"\n";
  if (spec.needs_complex) absl::StrAppend(&s, "#include \"ops/kernels/complex_math.h\"\n");
  absl::StrAppend(&s, "using namespace ::pygpukit;\nusing namespace ::pygpukit::kernels;\n\n");
  AppendEwBody(spec, "static inline", s);
  const size_t nin = spec.inputs.size();
  const size_t nops = nin + spec.outputs.size();
  absl::StrAppend(&s, "extern \"C\" void pgk_host(long long begin, long long end, int ndim, ",
                  "const long long* shape, void* const* ptrs, const long long* strides) {\n",
                  "  constexpr int N = ", nops, ", D = ", kernels::kKernelMaxDims, ";\n",
                  "  long long idx[D] = {}, off[N] = {};\n  long long rem = begin;\n",
                  "  for (int d = ndim - 1; d >= 0; --d) {\n    idx[d] = rem % shape[d];\n",
                  "    rem /= shape[d];\n    for (int k = 0; k < N; ++k) off[k] += idx[d] * "
                  "strides[k * D + d];\n",
                  "  }\n  for (long long i = begin; i < end; ++i) {\n    pgk_body(");
  for (size_t k = 0; k < nops; ++k) {
    const bool in = k < nin;
    absl::StrAppend(&s, k > 0 ? ", " : "", "static_cast<", in ? "const " : "",
                    EwTypeName(in ? spec.inputs[k].storage : spec.outputs[k - nin]), "*>(ptrs[", k,
                    "])[off[", k, "]]");
  }
  absl::StrAppend(&s, spec.pass_index ? ", i" : "", ");\n",
                  "    for (int d = ndim - 1; d >= 0; --d) {\n",
                  "      for (int k = 0; k < N; ++k) off[k] += strides[k * D + d];\n",
                  "      if (++idx[d] < shape[d]) break;\n",
                  "      for (int k = 0; k < N; ++k) off[k] -= shape[d] * strides[k * D + d];\n",
                  "      idx[d] = 0;\n    }\n  }\n}\n");
  return s;
}

absl::Status UserElementwiseCpu(LaunchContext& ctx, const UserEwLaunch& l,
                                absl::Span<const GPUArray> outs,
                                absl::Span<const GPUArray> inputs) {
  absl::StatusOr<void*> sym = HostJitSymbol(
      EwSpecKey(l.spec), [&] { return HostSource(l.spec); }, "pgk_host");
  if (!sym.ok()) {
    return absl::Status(sym.status().code(),
                        absl::StrCat(l.spec.name, ": ", sym.status().message()));
  }
  const auto fn = reinterpret_cast<HostFn>(*sym);
  absl::InlinedVector<absl::Span<const int64_t>, 6> strides;
  for (const GPUArray& a : inputs) {
    if (a.valid()) strides.push_back(a.strides());
  }
  for (const GPUArray& o : outs) strides.push_back(o.strides());
  CoalescedLayout layout = Coalesce(outs[0].shape(), strides);
  if (layout.shape.size() > static_cast<size_t>(kernels::kKernelMaxDims)) {
    return NotImplementedError(absl::StrCat(l.spec.name, ": operand layout has ",
                                            layout.shape.size(), " non-mergeable dimensions"));
  }
  // Everything the task needs, by value: pointers, strides and the scalars' bytes.
  struct Task {
    int ndim;
    long long shape[kernels::kKernelMaxDims];
    std::vector<void*> ptrs;
    std::vector<long long> strides;
    UserEwLaunch launch;
  };
  auto task = std::make_shared<Task>();
  task->ndim = static_cast<int>(layout.shape.size());
  std::copy(layout.shape.begin(), layout.shape.end(), task->shape);
  task->launch = l;
  const size_t nops = inputs.size() + outs.size();
  task->strides.assign(nops * kernels::kKernelMaxDims, 0);
  task->ptrs.resize(nops);
  size_t k = 0;
  for (size_t i = 0; i < nops; ++i) {
    const bool is_out = i >= inputs.size();
    const GPUArray* a = is_out ? &outs[i - inputs.size()] : &inputs[i];
    if (!is_out && !a->valid()) {
      task->ptrs[i] = task->launch.scalars[i].data();
      continue;
    }
    task->ptrs[i] = a->data();
    std::copy(layout.strides[k].begin(), layout.strides[k].end(),
              task->strides.begin() + i * kernels::kKernelMaxDims);
    ++k;
  }
  const int64_t n = outs[0].size();
  return ctx.HostTask(l.spec.name, [task, fn, n] {
    cpu::ParallelFor(n, kGrain, [&](int64_t b, int64_t e) {
      fn(b, e, task->ndim, task->shape, task->ptrs.data(), task->strides.data());
    });
  });
}

PGK_REGISTER_KERNEL(kUserElementwiseKernel, kCpu, UserElementwiseCpu);

}  // namespace
}  // namespace pygpukit::ops

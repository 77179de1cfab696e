#include "ops/kernel_launch.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <numeric>
#include <optional>

#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "ops/kernels/scalar_ops.h"
#include "ops/launch/layout.h"
#include "runtime/runtime.h"

namespace pygpukit::ops {
namespace {

using kernels::ElementwiseParams;
using kernels::kKernelMaxDims;

template <typename T>
bool FitsInteger(int64_t v) {
  if constexpr (std::is_same_v<T, uint64_t>) {
    return v >= 0;
  } else {
    return v >= static_cast<int64_t>(std::numeric_limits<T>::min()) &&
           v <= static_cast<int64_t>(std::numeric_limits<T>::max());
  }
}

}  // namespace

KeepAlive Keep(std::initializer_list<const GPUArray*> arrays) {
  KeepAlive k;
  for (const GPUArray* a : arrays) {
    if (a != nullptr) k.push_back(a->buffer());
  }
  return k;
}

int64_t HeldBytes(const KeepAlive& keep) {
  int64_t bytes = 0;
  for (const auto& b : keep) {
    if (b != nullptr) bytes += static_cast<int64_t>(b->size());
  }
  return bytes;
}

absl::StatusOr<hal::Stream*> StreamOf(const GPUArray& a) {
  return Runtime::Get().stream(a.device());
}

absl::StatusOr<ResidencyPin> Resident(absl::Span<const GPUArray* const> arrays) {
  ResidencyPin pin;
  // The thread's current stream, looked up once per device (ops pass arrays of one device).
  std::optional<Device> stream_device;
  hal::Stream* s = nullptr;
  for (size_t k = 0; k < arrays.size(); ++k) {
    const GPUArray* a = arrays[k];
    if (a == nullptr) continue;
    // A buffer named twice (x + x, views of one array) is pinned and recorded once.
    bool seen = false;
    for (size_t j = 0; j < k && !seen; ++j) {
      seen = arrays[j] != nullptr && arrays[j]->buffer() == a->buffer();
    }
    if (seen) continue;
    if (stream_device != a->device()) {
      PGK_ASSIGN_OR_RETURN(s, Runtime::Get().stream(a->device()));
      stream_device = a->device();
    }
    PGK_RETURN_IF_ERROR(PinForStream(pin, a->buffer(), *s));
  }
  return pin;
}

absl::Status EncodeScalar(const Scalar& s, DType dtype, unsigned char* out16,
                          absl::string_view op) {
  std::memset(out16, 0, 16);
  return VisitDType(dtype, [&](auto tag) -> absl::Status {
    using T = typename decltype(tag)::type;
    T v{};
    switch (s.kind) {
      case ScalarKind::Bool:
        v = kernels::Cast<T>(s.b);
        break;
      case ScalarKind::Int:
        if (s.beyond_64_bits) {
          if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
            return OverflowError(absl::StrCat(op, ": Python integer (about ", s.f,
                                              ") out of bounds for ", DTypeName(dtype)));
          }
          v = kernels::Cast<T>(s.f);
          break;
        }
        if (s.above_int64) {
          if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool> &&
                        !std::is_same_v<T, uint64_t>) {
            return OverflowError(absl::StrCat(op, ": Python integer ", s.u, " out of bounds for ",
                                              DTypeName(dtype)));
          }
          v = kernels::Cast<T>(s.u);
          break;
        }
        if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
          if (!FitsInteger<T>(s.i)) {
            return OverflowError(absl::StrCat(op, ": Python integer ", s.i, " out of bounds for ",
                                              DTypeName(dtype)));
          }
        }
        v = kernels::Cast<T>(s.i);
        break;
      case ScalarKind::Float:
        v = kernels::Cast<T>(s.f);
        break;
      case ScalarKind::Complex:
        v = kernels::Cast<T>(complex128(s.c.real(), s.c.imag()));
        break;
    }
    std::memcpy(out16, &v, sizeof(T));
    return absl::OkStatus();
  });
}

absl::Status LaunchMatmul(const MatmulProblem& problem, Device device, KeepAlive keep) {
  PGK_ASSIGN_OR_RETURN(hal::Stream * s, Runtime::Get().stream(device));
  LaunchGate* gate = LaunchGateScope::Current();
  // A task whose work yields to more urgent work runs its matmul on preemptible kernels where
  // they serve it: they leave the SMs within microseconds when asked, so no splitting is needed.
  const PreemptSignal* signal = gate != nullptr ? gate->preempt_signal() : nullptr;
  if (signal != nullptr && device.is_cuda() && device == signal->on) {
    absl::StatusOr<int> preempted = cuda_kernels::MatmulPreemptible(
        *s, problem, device, *signal, [gate] { gate->AwaitResume(); });
    if (preempted.ok()) {
      gate->Preempted(*preempted);
      return absl::OkStatus();
    }
    if (!absl::IsUnimplemented(preempted.status())) return preempted.status();
  }
  // Otherwise a paced task's matmul is split into row blocks of at most the gate's FLOP budget
  // (multiples of 128 rows, to keep the GEMM tiles full), so that more urgent work queued
  // meanwhile waits for one block rather than the whole product.
  int64_t rows = problem.m;
  const int64_t budget = gate != nullptr ? gate->max_launch_flops() : 0;
  const int64_t per_row = 2 * problem.batch * problem.n * problem.k;
  const int64_t itemsize = ItemSize(problem.dtype);
  if (budget > 0 && per_row > 0 && problem.m > budget / per_row) {
    rows = std::max<int64_t>(1, budget / per_row);
    // Block starts keep 256-byte alignment (what cuBLASLt assumes): a multiple of the rows
    // after which both A's and C's offsets are; at least 128 rows when that many fit.
    auto period = [&](int64_t row_elems) {
      const int64_t bytes = std::abs(row_elems) * itemsize;
      return bytes == 0 ? int64_t{1} : 256 / std::gcd(int64_t{256}, bytes);
    };
    const int64_t pa = period(problem.a_row),
                  pc = period(problem.c_row * ItemSize(problem.epilogue.out) / itemsize);
    int64_t align = pa / std::gcd(pa, pc) * pc;
    if (rows >= 128) align = align / std::gcd(align, int64_t{128}) * 128;
    rows = std::max(align, rows - rows % align);
  }
  for (int64_t r0 = 0; r0 < problem.m; r0 += rows) {
    MatmulProblem p = problem;
    p.m = std::min(rows, problem.m - r0);
    p.a = static_cast<const char*>(problem.a) + r0 * problem.a_row * itemsize;
    p.c = static_cast<char*>(problem.c) + r0 * problem.c_row * ItemSize(problem.epilogue.out);
    if (problem.epilogue.addend != nullptr) {
      p.epilogue.addend = static_cast<const char*>(problem.epilogue.addend) +
                          r0 * problem.epilogue.addend_row * ItemSize(problem.epilogue.out);
    }
    if (device.is_cpu()) {
      PGK_RETURN_IF_ERROR(cpu_kernels::Matmul(*s, p, keep));
    } else {
      PGK_RETURN_IF_ERROR(cuda_kernels::Matmul(*s, p, device));
    }
  }
  return absl::OkStatus();
}

absl::Status LaunchGemmEpilogue(const MatmulProblem& problem, const GPUArray& src) {
  if (src.device().is_cpu()) {
    return RuntimeError("gemm: the unfused epilogue runs on CUDA devices only");
  }
  PGK_ASSIGN_OR_RETURN(hal::Stream * s, Runtime::Get().stream(src.device()));
  return cuda_kernels::GemmEpilogueApply(*s, problem, src.data(), src.dtype());
}

LaunchCost MatmulCost(const MatmulProblem& p) {
  // Operands with a zero batch stride are shared by the whole batch: read once.
  auto times = [&](int64_t batch_stride) { return batch_stride != 0 ? p.batch : 1; };
  const int64_t in = ItemSize(p.dtype), out = ItemSize(p.epilogue.out);
  LaunchCost c;
  c.flops = 2 * p.batch * p.m * p.n * p.k;
  c.bytes = times(p.a_batch) * p.m * p.k * in + times(p.b_batch) * p.k * p.n * in +
            p.batch * p.m * p.n * out;
  if (p.epilogue.beta != 0.0 && p.epilogue.addend != nullptr) {
    c.bytes += times(p.epilogue.addend_batch) * p.m * p.n * out;
  }
  if (p.epilogue.bias != nullptr) c.bytes += times(p.epilogue.bias_batch) * p.n * out;
  return c;
}

kernels::GemmParams GemmParamsOf(const MatmulProblem& p) {
  kernels::GemmParams g{};
  g.m = p.m;
  g.n = p.n;
  g.k = p.k;
  g.batch = p.batch;
  g.a = p.a;
  g.a_batch = p.a_batch;
  g.a_row = p.a_row;
  g.a_col = p.a_col;
  g.b = p.b;
  g.b_batch = p.b_batch;
  g.b_row = p.b_row;
  g.b_col = p.b_col;
  g.d = p.c;
  g.d_batch = p.c_batch;
  g.d_row = p.c_row;
  g.c = p.epilogue.addend;
  g.c_batch = p.epilogue.addend_batch;
  g.c_row = p.epilogue.addend_row;
  g.c_col = p.epilogue.addend_col;
  g.bias = p.epilogue.bias;
  g.bias_batch = p.epilogue.bias_batch;
  g.alpha = p.epilogue.alpha;
  g.beta = p.epilogue.addend != nullptr ? p.epilogue.beta : 0.0;
  g.activation = p.epilogue.activation;
  return g;
}

}  // namespace pygpukit::ops

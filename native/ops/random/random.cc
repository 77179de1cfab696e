// gp.random's ops: argument checks, the generator's counter, output allocation and the launch
// of the shared Philox kernels (ops/random/philox.h); permutations through ArgSort and Take.
#include "ops/random/random.h"

#include <cmath>
#include <random>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/status.h"
#include "ops/creation/new_array.h"
#include "ops/launch/launch_context.h"
#include "ops/launch/launch_cost.h"
#include "ops/ops.h"
#include "ops/random/random_kernels.h"

namespace pygpukit::ops {
namespace {

// Abseil's decimal formatting (StrCat takes no int128 in the Debian release). Not its
// operator<<: a stream instantiated in this library under a newer libstdc++ than Abseil was
// built with crashed there (GCC 13 build, Debian's GCC 12 Abseil).
std::string Int128String(absl::int128 v) { return absl::StrFormat("%d", v); }

// n outputs of `p.kind` into a new array: takes the blocks they need from `gen` and launches.
absl::StatusOr<GPUArray> Generate(PhiloxGenerator& gen, absl::Span<const int64_t> shape,
                                  DType dtype, Device device, kernels::RandomParams p,
                                  absl::string_view op) {
  PGK_ASSIGN_OR_RETURN(GPUArray out, NewArray(shape, dtype, device, op));
  p.n = out.size();
  if (p.n == 0) return out;
  const int64_t per = kernels::RandomPerBlock(p.kind, ItemSize(dtype));
  const std::array<uint64_t, 4> first = gen.Reserve(static_cast<uint64_t>((p.n + per - 1) / per));
  const std::array<uint64_t, 2> key = gen.key();
  for (int w = 0; w < 4; ++w) p.counter[w] = first[w];
  p.key[0] = key[0];
  p.key[1] = key[1];
  PGK_ASSIGN_OR_RETURN(LaunchContext ctx, LaunchContext::Open(op, {&out}));
  p.out = out.data();  // read while pinned
  PGK_RETURN_IF_ERROR(kRandomKernel(ctx, dtype, p));
  return out;
}

absl::Status CheckFloating(DType dtype, absl::string_view op) {
  // 8-bit floats have too few bits for uniform draws: draw in a wider dtype and cast.
  if (IsFloating(dtype) && !IsFloat8(dtype)) return absl::OkStatus();
  return TypeError(absl::StrCat(op, ": unsupported dtype ", DTypeName(dtype),
                                " (expected float16, bfloat16, float32 or float64)"));
}

absl::StatusOr<GPUArray> Uniform(PhiloxGenerator& gen, absl::Span<const int64_t> shape, DType dtype,
                                 double low, double high, Device device, absl::string_view op) {
  PGK_RETURN_IF_ERROR(CheckFloating(dtype, op));
  // NumPy's checks: a range that is not finite overflows; high below low is an error.
  const double range = high - low;
  if (!std::isfinite(range)) {
    return OverflowError(
        absl::StrCat(op, ": high - low is not finite (low=", low, ", high=", high, ")"));
  }
  if (range < 0) {
    return ValueError(absl::StrCat(op, ": high < low (low=", low, ", high=", high, ")"));
  }
  kernels::RandomParams p{};
  p.kind = kernels::kRandomUniform;
  p.a = low;
  p.b = range;
  return Generate(gen, shape, dtype, device, p, op);
}

// The inclusive range of an integer (or bool) dtype.
void IntegerBounds(DType dtype, absl::int128& lo, absl::int128& hi) {
  const int bits = 8 * ItemSize(dtype);
  if (dtype == DType::Bool) {
    lo = 0;
    hi = 1;
  } else if (KindOf(dtype) == DTypeKind::Unsigned) {
    lo = 0;
    hi = (absl::int128(1) << bits) - 1;
  } else {
    lo = -(absl::int128(1) << (bits - 1));
    hi = (absl::int128(1) << (bits - 1)) - 1;
  }
}

}  // namespace

std::array<uint64_t, 4> PhiloxGenerator::counter() const {
  std::lock_guard<std::mutex> l(mu_);
  return counter_;
}

void PhiloxGenerator::set_counter(const std::array<uint64_t, 4>& counter) {
  std::lock_guard<std::mutex> l(mu_);
  counter_ = counter;
}

std::array<uint64_t, 4> PhiloxGenerator::Reserve(uint64_t blocks) {
  std::array<uint64_t, 4> first, next;
  std::lock_guard<std::mutex> l(mu_);
  kernels::rnd::CounterAdd(counter_.data(), 1, first.data());
  kernels::rnd::CounterAdd(counter_.data(), blocks, next.data());
  counter_ = next;
  return first;
}

absl::StatusOr<std::array<uint64_t, 2>> EntropyKey() {
  // std::random_device reads the OS source (getrandom / /dev/urandom) and throws when it
  // cannot; nothing throws across this API.
  try {
    std::random_device dev;
    std::array<uint64_t, 2> key{};
    for (uint64_t& k : key) {
      for (int part = 0; part < 2; ++part) k = (k << 32) | static_cast<uint32_t>(dev());
    }
    return key;
  } catch (const std::exception& e) {
    return RuntimeError(absl::StrCat("random: no entropy source for a fresh seed: ", e.what()));
  }
}

absl::StatusOr<GPUArray> RandomRaw(PhiloxGenerator& gen, absl::Span<const int64_t> shape,
                                   Device device) {
  kernels::RandomParams p{};
  p.kind = kernels::kRandomIntegers;  // low 0, range 0: every word as it is
  return Generate(gen, shape, DType::UInt64, device, p, "random_raw");
}

absl::StatusOr<GPUArray> Random(PhiloxGenerator& gen, absl::Span<const int64_t> shape, DType dtype,
                                Device device) {
  return Uniform(gen, shape, dtype, 0.0, 1.0, device, "random");
}

absl::StatusOr<GPUArray> RandomUniform(PhiloxGenerator& gen, absl::Span<const int64_t> shape,
                                       DType dtype, double low, double high, Device device) {
  return Uniform(gen, shape, dtype, low, high, device, "uniform");
}

absl::StatusOr<GPUArray> RandomNormal(PhiloxGenerator& gen, absl::Span<const int64_t> shape,
                                      DType dtype, double loc, double scale, Device device) {
  PGK_RETURN_IF_ERROR(CheckFloating(dtype, "normal"));
  // NumPy's check: a negative sign (-0.0 included) fails, NaN passes.
  if (!std::isnan(scale) && std::signbit(scale)) {
    return ValueError(absl::StrCat("normal: scale < 0 (got ", scale, ")"));
  }
  kernels::RandomParams p{};
  p.kind = kernels::kRandomNormal;
  p.a = loc;
  p.b = scale;
  return Generate(gen, shape, dtype, device, p, "normal");
}

absl::StatusOr<GPUArray> RandomIntegers(PhiloxGenerator& gen, absl::Span<const int64_t> shape,
                                        DType dtype, absl::int128 low, absl::int128 high,
                                        bool endpoint, Device device) {
  if (!IsInteger(dtype) && dtype != DType::Bool) {
    return TypeError(absl::StrCat("integers: unsupported dtype ", DTypeName(dtype),
                                  " (expected bool or an integer dtype)"));
  }
  absl::int128 min, max;
  IntegerBounds(dtype, min, max);
  const absl::int128 last = endpoint ? high : high - 1;
  if (low < min) {
    return ValueError(absl::StrCat("integers: low ", Int128String(low), " is out of bounds for ",
                                   DTypeName(dtype), " (at least ", Int128String(min), ")"));
  }
  if (last > max) {
    return ValueError(absl::StrCat("integers: high ", Int128String(high), " is out of bounds for ",
                                   DTypeName(dtype), " (at most ",
                                   Int128String(endpoint ? max : max + 1),
                                   endpoint ? " with endpoint=True)" : ", exclusive)"));
  }
  if (low > last) {
    return ValueError(absl::StrCat("integers: ", endpoint ? "low > high" : "low >= high",
                                   " (low=", Int128String(low), ", high=", Int128String(high),
                                   "): the range is empty"));
  }
  kernels::RandomParams p{};
  p.kind = kernels::kRandomIntegers;
  p.low = static_cast<uint64_t>(low);               // two's complement
  p.range = static_cast<uint64_t>(last - low + 1);  // 2^64 wraps to 0, the whole word
  return Generate(gen, shape, dtype, device, p, "integers");
}

absl::StatusOr<GPUArray> RandomPermutation(PhiloxGenerator& gen, int64_t n, Device device) {
  if (n < 0) return ValueError(absl::StrCat("permutation: n must be non-negative, got ", n));
  kernels::RandomParams p{};
  p.kind = kernels::kRandomIntegers;
  const int64_t shape[] = {n};
  PGK_ASSIGN_OR_RETURN(GPUArray keys,
                       Generate(gen, shape, DType::UInt64, device, p, "permutation"));
  // Equal keys (probability about n^2 / 2^65) keep their order: still a permutation.
  return ArgSort(keys, 0);
}

absl::StatusOr<GPUArray> RandomPermutation(PhiloxGenerator& gen, const GPUArray& x) {
  if (x.ndim() == 0) {
    return ValueError("permutation: x must be an integer or an array of at least one dimension");
  }
  PGK_ASSIGN_OR_RETURN(GPUArray order, RandomPermutation(gen, x.shape()[0], x.device()));
  return Take(x, order, 0);
}

}  // namespace pygpukit::ops

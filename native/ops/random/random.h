// Random numbers (gp.random): a Philox4x64-10 generator whose outputs are a pure function of
// (key, counter, element index), computed by the same code on the CPU and on CUDA devices, so a
// seed gives the same numbers on every device. The raw stream is NumPy's
// np.random.Philox(key=...) bit for bit; ops/random/philox.h defines the transforms.
#pragma once

#include <array>
#include <cstdint>
#include <mutex>

#include "absl/numeric/int128.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "ops/array.h"

namespace pygpukit::ops {

/// A Philox4x64-10 key and 256-bit counter: the state of NumPy's
/// np.random.Philox(key=key[0] + key[1] * 2**64, counter=...). Every request takes whole
/// 4-word blocks, advancing the counter by the blocks it used, so a sequence of calls gives the
/// same numbers on any device. Thread-safe: concurrent requests get disjoint blocks (in an
/// unspecified order).
class PhiloxGenerator {
 public:
  /// Counter 0 (NumPy's initial state).
  PhiloxGenerator(uint64_t key0, uint64_t key1) : key_{key0, key1} {}

  /// The Philox key (low word first, as np.random.Philox(key=...)).
  std::array<uint64_t, 2> key() const { return key_; }
  /// The counter, little-endian words (NumPy's state['state']['counter']).
  std::array<uint64_t, 4> counter() const;
  void set_counter(const std::array<uint64_t, 4>& counter);
  /// Takes `blocks` blocks: returns the counter of the first (the current one + 1, since NumPy
  /// increments before each block) and advances the state by `blocks`.
  std::array<uint64_t, 4> Reserve(uint64_t blocks);

 private:
  const std::array<uint64_t, 2> key_;
  mutable std::mutex mu_;
  std::array<uint64_t, 4> counter_{};
};

/// 128 bits from the operating system's entropy source (a key for an unseeded generator).
absl::StatusOr<std::array<uint64_t, 2>> EntropyKey();

/// The raw 64-bit stream as uint64 (NumPy's Philox.random_raw).
absl::StatusOr<GPUArray> RandomRaw(PhiloxGenerator& gen, absl::Span<const int64_t> shape,
                                   Device device);
/// Floats uniform in [0, 1) (NumPy's Generator.random for float64 and float32).
absl::StatusOr<GPUArray> Random(PhiloxGenerator& gen, absl::Span<const int64_t> shape, DType dtype,
                                Device device);
/// low + (high - low) * u with u uniform in [0, 1) (NumPy's Generator.uniform / random for
/// float64 and float32), in a floating dtype. OverflowError when high - low is not finite,
/// ValueError when it is negative (NumPy's checks).
absl::StatusOr<GPUArray> RandomUniform(PhiloxGenerator& gen, absl::Span<const int64_t> shape,
                                       DType dtype, double low, double high, Device device);
/// loc + scale * z with z standard normal (Box-Muller), in a floating dtype. ValueError for a
/// negative scale (NaN passes, as in NumPy).
absl::StatusOr<GPUArray> RandomNormal(PhiloxGenerator& gen, absl::Span<const int64_t> shape,
                                      DType dtype, double loc, double scale, Device device);
/// Integers in [low, high) (`endpoint`: [low, high]) of a bool or integer dtype. ValueError for
/// an empty range or bounds outside the dtype; TypeError for other dtypes.
absl::StatusOr<GPUArray> RandomIntegers(PhiloxGenerator& gen, absl::Span<const int64_t> shape,
                                        DType dtype, absl::int128 low, absl::int128 high,
                                        bool endpoint, Device device);
/// A random permutation of 0 .. n-1 (int64): the stable argsort of n random words.
absl::StatusOr<GPUArray> RandomPermutation(PhiloxGenerator& gen, int64_t n, Device device);
/// x with its first axis permuted (a new array on x's device); ValueError for 0-d x.
absl::StatusOr<GPUArray> RandomPermutation(PhiloxGenerator& gen, const GPUArray& x);

}  // namespace pygpukit::ops

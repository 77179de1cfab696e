// Helpers shared by the C++ tests: status assertions, the default device and its backend, and
// host <-> array conversions.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/device.h"
#include "core/dtype.h"
#include "core/hal/backend.h"
#include "core/status.h"
#include "ops/ops.h"
#include "runtime/runtime.h"

#define PGK_TEST_CONCAT_INNER_(a, b) a##b
#define PGK_TEST_CONCAT_(a, b) PGK_TEST_CONCAT_INNER_(a, b)

/// Asserts that a Status / StatusOr is OK, printing the status otherwise.
#define ASSERT_OK(expr)                                                 \
  do {                                                                  \
    const ::absl::Status pgk_st_ = ::pygpukit::testing::ToStatus(expr); \
    ASSERT_TRUE(pgk_st_.ok()) << pgk_st_;                               \
  } while (0)
#define EXPECT_OK(expr)                                                 \
  do {                                                                  \
    const ::absl::Status pgk_st_ = ::pygpukit::testing::ToStatus(expr); \
    EXPECT_TRUE(pgk_st_.ok()) << pgk_st_;                               \
  } while (0)

/// `ASSERT_OK_AND_ASSIGN(auto x, F());` asserts F() is OK and moves its value into x.
#define ASSERT_OK_AND_ASSIGN(lhs, expr) \
  ASSERT_OK_AND_ASSIGN_IMPL_(PGK_TEST_CONCAT_(pgk_sor_, __LINE__), lhs, expr)
#define ASSERT_OK_AND_ASSIGN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                               \
  ASSERT_TRUE(tmp.ok()) << tmp.status();           \
  lhs = std::move(*tmp)

namespace pygpukit::testing {

inline absl::Status ToStatus(const absl::Status& s) { return s; }
template <typename T>
absl::Status ToStatus(const absl::StatusOr<T>& s) {
  return s.status();
}

/// The device tests run on (cuda:0 under PYGPUKIT_DEVICE=cuda on a GPU machine, else cpu).
inline Device TestDevice() { return Runtime::Get().default_device(); }

/// The backend of the test device.
inline hal::Backend* TestBackend() {
  auto b = Runtime::Get().backend(TestDevice().type);
  EXPECT_TRUE(b.ok()) << b.status();
  return b.ok() ? *b : nullptr;
}

/// Copies an array to a host vector of T (T must match the dtype's item size).
template <typename T>
absl::StatusOr<std::vector<T>> ToVector(const GPUArray& a) {
  if (static_cast<int64_t>(sizeof(T)) != a.itemsize()) {
    return absl::InvalidArgumentError("ToVector: element type does not match the dtype");
  }
  std::vector<T> out(static_cast<size_t>(a.size()));
  absl::Status s = ops::ToHost(a, out.data());
  if (!s.ok()) return s;
  return out;
}

/// An array of `dtype` holding `values` (T must be DType's scalar type).
template <typename T>
absl::StatusOr<GPUArray> FromVector(const std::vector<T>& values, absl::Span<const int64_t> shape,
                                    Device device = TestDevice()) {
  return ops::FromHost(values.data(), shape, DTypeOf<T>::value, device);
}

/// Uniformly random doubles in [lo, hi).
inline std::vector<double> RandomDoubles(size_t n, uint32_t seed, double lo = -1.0,
                                         double hi = 1.0) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> v(n);
  for (double& x : v) x = dist(rng);
  return v;
}

/// Uniformly random integers in [lo, hi].
template <typename T>
std::vector<T> RandomInts(size_t n, uint32_t seed, int64_t lo, int64_t hi) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> dist(lo, hi);
  std::vector<T> v(n);
  for (T& x : v) x = static_cast<T>(dist(rng));
  return v;
}

/// Row-major linear index -> multi-index.
inline std::vector<int64_t> Unravel(int64_t i, absl::Span<const int64_t> shape) {
  std::vector<int64_t> idx(shape.size());
  for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
    idx[d] = shape[d] == 0 ? 0 : i % shape[d];
    i = shape[d] == 0 ? 0 : i / shape[d];
  }
  return idx;
}

/// Multi-index -> row-major linear index.
inline int64_t Ravel(absl::Span<const int64_t> idx, absl::Span<const int64_t> shape) {
  int64_t i = 0;
  for (size_t d = 0; d < shape.size(); ++d) i = i * shape[d] + idx[d];
  return i;
}

/// Total launches the dispatcher has counted.
inline int64_t TotalLaunches() {
  DispatchStats s = Runtime::Get().dispatcher().stats();
  return s.host_tasks + s.device_kernels + s.library_calls + s.copies;
}

}  // namespace pygpukit::testing

// Consumer of the installed C++ API: C = A @ B on the default device, checked on the host.
#include <pygpukit/pygpukit.h>

#include <cmath>
#include <cstdio>
#include <vector>

int main() {
  using namespace pygpukit;
  Device dev = Runtime::Get().default_device();
  const int64_t m = 64, k = 48, n = 32;
  std::vector<float> a(m * k);
  for (int64_t i = 0; i < m * k; ++i) a[i] = static_cast<float>((i * 37) % 11) - 5.0f;
  auto A = ops::FromHost(a.data(), {m, k}, DType::Float32, dev);
  auto B = ops::Full({k, n}, Scalar::Float(0.5), DType::Float32, dev);
  if (!A.ok() || !B.ok()) {
    std::fprintf(stderr, "create failed: %s %s\n", A.status().ToString().c_str(),
                 B.status().ToString().c_str());
    return 1;
  }
  auto C = ops::Matmul(*A, *B);
  if (!C.ok()) {
    std::fprintf(stderr, "matmul failed: %s\n", C.status().ToString().c_str());
    return 1;
  }
  std::vector<float> c(m * n);
  if (auto s = ops::ToHost(*C, c.data()); !s.ok()) {
    std::fprintf(stderr, "to host failed: %s\n", s.ToString().c_str());
    return 1;
  }
  for (int64_t i = 0; i < m; ++i) {
    double want = 0;
    for (int64_t p = 0; p < k; ++p) want += 0.5 * a[i * k + p];
    for (int64_t j = 0; j < n; ++j) {
      if (std::fabs(c[i * n + j] - want) > 1e-3) {
        std::fprintf(stderr, "mismatch at (%ld, %ld): %f vs %f\n", static_cast<long>(i),
                     static_cast<long>(j), c[i * n + j], want);
        return 1;
      }
    }
  }
  // A bad shape comes back as a status, not a crash.
  auto bad = ops::Matmul(*A, *A);
  if (bad.ok() || bad.status().code() != absl::StatusCode::kInvalidArgument) {
    std::fprintf(stderr, "expected InvalidArgument for mismatched shapes\n");
    return 1;
  }
  std::printf("consumer: %ldx%ldx%ld matmul on %s OK\n", static_cast<long>(m), static_cast<long>(k),
              static_cast<long>(n), dev.ToString().c_str());
  return 0;
}

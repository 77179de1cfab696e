// gp.random's shared definitions (ops/random/philox.h): the Philox block against NumPy's
// stream, the accuracy of our log / sin / cos against long double references, and the ops on
// the test device against the host evaluation of the same blocks (under PYGPUKIT_DEVICE=cuda,
// the CUDA kernels against the host, bit for bit). Built with -ffp-contract=off, like the CPU
// kernels (tests/cpp/CMakeLists.txt).
#include "ops/random/random.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <thread>
#include <vector>

#include "ops/random/philox.h"
#include "test_util.h"

namespace pygpukit {
namespace {

using kernels::rnd::CounterAdd;
using kernels::rnd::Log;
using kernels::rnd::Philox4x64;
using kernels::rnd::SinCosTurns;
using testing::TestDevice;
using testing::ToVector;

// |got - ref| in units of the last place of ref rounded to double.
double Ulps(double got, long double ref) {
  const double r = std::fabs(static_cast<double>(ref));
  const double ulp = std::nextafter(r, INFINITY) - r;
  return static_cast<double>(std::fabs(static_cast<long double>(got) - ref) / ulp);
}

TEST(PhiloxTest, BlockMatchesNumpy) {
  // np.random.Philox(key=[123, 456]).random_raw(8): NumPy increments the counter first.
  const uint64_t zero[4] = {0, 0, 0, 0};
  uint64_t c[4], r[4];
  CounterAdd(zero, 1, c);
  Philox4x64(c, 123, 456, r);
  EXPECT_EQ(r[0], 0x182a33ef112a55c6ull);
  EXPECT_EQ(r[1], 0x7fa21420170db5b7ull);
  EXPECT_EQ(r[2], 0x3d065f703e33bef6ull);
  EXPECT_EQ(r[3], 0x29ec19a7d6e63a9aull);
  CounterAdd(zero, 2, c);
  Philox4x64(c, 123, 456, r);
  EXPECT_EQ(r[0], 0x280c361dcea8055eull);
  EXPECT_EQ(r[3], 0xdebe3ce8f8da523eull);
  // Carries run through all four words and wrap.
  const uint64_t top[4] = {~0ull, ~0ull, 5, ~0ull};
  CounterAdd(top, 1, c);
  EXPECT_EQ(c[0], 0u);
  EXPECT_EQ(c[1], 0u);
  EXPECT_EQ(c[2], 6u);
  EXPECT_EQ(c[3], ~0ull);
  const uint64_t all[4] = {~0ull, ~0ull, ~0ull, ~0ull};
  CounterAdd(all, 3, c);
  EXPECT_EQ(c[0], 2u);
  EXPECT_EQ(c[1] | c[2] | c[3], 0u);
}

TEST(PhiloxTest, LogWithinOneUlp) {
  std::mt19937_64 gen(1);
  double worst = 0.0;
  auto check = [&](double x) {
    const double e = Ulps(Log(x), logl(static_cast<long double>(x)));
    worst = std::max(worst, e);
    ASSERT_LT(e, 1.0) << "x = " << x;
  };
  for (double x : {1.0, 0x1p-53, 0.5, 0.75, 1.0 - 0x1p-53, 1.0 - 0x1p-20, 0x1.6a09e667f3bcdp-1,
                   0x1p-1022, 2.0, 10.0, 1e300}) {
    if (x != 1.0) check(x);
  }
  EXPECT_EQ(Log(1.0), 0.0);
  for (int i = 0; i < 1000000; ++i) {
    const uint64_t w = gen();
    double x = static_cast<double>((w >> 11) + 1) * 0x1p-53;  // Box-Muller's inputs
    if (i % 3 == 1) x = std::ldexp(x, -static_cast<int>(gen() % 900));
    if (i % 3 == 2) x = 1.0 - std::ldexp(static_cast<double>(gen() >> 11), -53 - int(gen() % 30));
    if (x != 1.0) check(x);
  }
  std::printf("log: max error %.3f ulp\n", worst);
}

// Reference sin / cos of 2 pi t / 2^53 in long double after the same exact reduction (an angle
// near a multiple of pi/2 computed directly in long double would lose its low bits).
void ReferenceSinCos(uint64_t t, long double& s, long double& c) {
  constexpr uint64_t kQuarter = uint64_t{1} << 51;
  uint64_t w = t & (kQuarter - 1);
  const bool mirror = w > kQuarter / 2;
  if (mirror) w = kQuarter - w;
  const long double phi = 1.57079632679489661923132169163975144L * static_cast<long double>(w) /
                          static_cast<long double>(kQuarter);
  long double ss = sinl(phi), cc = cosl(phi);
  if (mirror) std::swap(ss, cc);
  switch ((t >> 51) & 3) {
    case 0:
      s = ss, c = cc;
      break;
    case 1:
      s = cc, c = -ss;
      break;
    case 2:
      s = -ss, c = -cc;
      break;
    default:
      s = -cc, c = ss;
  }
}

TEST(PhiloxTest, SinCosWithinOneAndAHalfUlp) {
  std::mt19937_64 gen(2);
  double worst = 0.0;
  auto check = [&](uint64_t t) {
    double s, c;
    SinCosTurns(t, s, c);
    long double rs, rc;
    ReferenceSinCos(t, rs, rc);
    for (auto [got, ref] : {std::pair{s, rs}, std::pair{c, rc}}) {
      if (ref == 0) {
        ASSERT_EQ(got, 0.0) << "t = " << t;
        continue;
      }
      const double e = Ulps(got, ref);
      worst = std::max(worst, e);
      ASSERT_LT(e, 1.5) << "t = " << t;
    }
  };
  constexpr uint64_t q = uint64_t{1} << 51;
  for (uint64_t t : {uint64_t{0}, uint64_t{1}, uint64_t{12345}, q / 2 - 1, q / 2, q / 2 + 1, q - 1,
                     q, q + 1, 2 * q - 1, 2 * q, 3 * q, 4 * q - 1}) {
    check(t);
  }
  for (int i = 0; i < 1000000; ++i) check(gen() >> 11);
  std::printf("sin / cos: max error %.3f ulp\n", worst);
}

// The host evaluation of every block of `p` (what the CPU backend runs).
template <typename T>
std::vector<T> HostBlocks(kernels::RandomParams p, int64_t n, int itemsize) {
  std::vector<T> out(static_cast<size_t>(n));
  p.n = n;
  p.out = out.data();
  const int64_t per = kernels::RandomPerBlock(p.kind, itemsize);
  for (int64_t b = 0; b < (n + per - 1) / per; ++b) kernels::RandomBlock<T>(p, b);
  return out;
}

kernels::RandomParams ParamsAt(const ops::PhiloxGenerator& g, int kind, double a, double b) {
  kernels::RandomParams p{};
  const std::array<uint64_t, 2> key = g.key();
  const std::array<uint64_t, 4> c = g.counter();
  p.key[0] = key[0];
  p.key[1] = key[1];
  CounterAdd(c.data(), 1, p.counter);
  p.kind = kind;
  p.a = a;
  p.b = b;
  return p;
}

TEST(RandomOpsTest, DeviceMatchesHostBitForBit) {
  ops::PhiloxGenerator g(0x1234, 0x5678);
  g.set_counter({~0ull - 1, 0, 0, 0});  // a carry within the calls
  const Device d = TestDevice();
  const int64_t n = 1003;
  const int64_t shape[] = {n};

  auto p = ParamsAt(g, kernels::kRandomNormal, 0.5, 2.0);
  ASSERT_OK_AND_ASSIGN(GPUArray z, ops::RandomNormal(g, shape, DType::Float64, 0.5, 2.0, d));
  ASSERT_OK_AND_ASSIGN(auto zv, ToVector<uint64_t>(z));
  const std::vector<double> zh = HostBlocks<double>(p, n, 8);
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(zv[i], detail::DoubleBits(zh[i])) << i;

  p = ParamsAt(g, kernels::kRandomUniform, -1.0, 3.0);
  ASSERT_OK_AND_ASSIGN(GPUArray u, ops::RandomUniform(g, shape, DType::Float32, -1.0, 2.0, d));
  ASSERT_OK_AND_ASSIGN(auto uv, ToVector<float>(u));
  EXPECT_EQ(uv, HostBlocks<float>(p, n, 4));

  p = ParamsAt(g, kernels::kRandomIntegers, 0, 0);
  p.low = static_cast<uint64_t>(-5);
  p.range = 12;
  ASSERT_OK_AND_ASSIGN(GPUArray k, ops::RandomIntegers(g, shape, DType::Int16, -5, 7, false, d));
  ASSERT_OK_AND_ASSIGN(auto kv, ToVector<int16_t>(k));
  EXPECT_EQ(kv, HostBlocks<int16_t>(p, n, 2));
  for (int16_t v : kv) ASSERT_TRUE(v >= -5 && v < 7) << v;
  // 251 + 126 + 251 blocks from ~0 - 1: the counter wrapped into the second word.
  const std::array<uint64_t, 4> end = g.counter();
  EXPECT_EQ(end[0], uint64_t{251 + 126 + 251 - 2});
  EXPECT_EQ(end[1], 1u);
}

TEST(RandomOpsTest, ConcurrentReservationsAreDisjoint) {
  ops::PhiloxGenerator g(1, 2);
  std::vector<std::thread> threads;
  std::vector<std::vector<uint64_t>> firsts(4);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 1000; ++i) firsts[t].push_back(g.Reserve(3)[0]);
    });
  }
  for (std::thread& t : threads) t.join();
  std::vector<uint64_t> all;
  for (const auto& f : firsts) all.insert(all.end(), f.begin(), f.end());
  std::sort(all.begin(), all.end());
  for (size_t i = 0; i < all.size(); ++i) ASSERT_EQ(all[i], 1 + 3 * i);
  EXPECT_EQ(g.counter()[0], 12000u);
}

TEST(RandomOpsTest, Errors) {
  ops::PhiloxGenerator g(0, 0);
  const Device d = TestDevice();
  const int64_t shape[] = {4};
  const int64_t negative[] = {-1};
  auto message = [](const auto& r) { return std::string(r.status().message()); };
  EXPECT_EQ(message(ops::Random(g, shape, DType::Int32, d)),
            "random: unsupported dtype int32 (expected float16, bfloat16, float32 or float64)");
  EXPECT_EQ(message(ops::RandomIntegers(g, shape, DType::Int64, 3, 3, false, d)),
            "integers: low >= high (low=3, high=3): the range is empty");
  EXPECT_EQ(message(ops::RandomIntegers(g, shape, DType::UInt8, 0, 257, false, d)),
            "integers: high 257 is out of bounds for uint8 (at most 256, exclusive)");
  EXPECT_FALSE(ops::RandomNormal(g, shape, DType::Float32, 0, -1, d).ok());
  EXPECT_FALSE(ops::RandomUniform(g, shape, DType::Float64, 0, INFINITY, d).ok());
  EXPECT_FALSE(ops::RandomRaw(g, negative, d).ok());
  EXPECT_FALSE(ops::RandomPermutation(g, -1, d).ok());
  EXPECT_EQ(g.counter()[0], 0u);  // failed requests take no blocks
}

}  // namespace
}  // namespace pygpukit

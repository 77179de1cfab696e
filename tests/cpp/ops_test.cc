// The C++ op API on the test device (cpu, or cuda:0 under PYGPUKIT_DEVICE=cuda): values against
// host references on random data, views, and the statuses bad input must produce.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "test_util.h"

namespace pygpukit {
namespace {

using testing::FromVector;
using testing::RandomDoubles;
using testing::RandomInts;
using testing::TestDevice;
using testing::ToVector;

std::vector<float> ToFloat(const std::vector<double>& v) { return {v.begin(), v.end()}; }

bool Contains(const absl::Status& s, absl::string_view text) {
  return s.message().find(text) != absl::string_view::npos;
}

TEST(Ops, HostRoundTripKeepsEveryByte) {
  for (DType dt : {DType::Bool, DType::Int8, DType::UInt16, DType::Int32, DType::Float16,
                   DType::BFloat16, DType::Float64, DType::Complex128}) {
    SCOPED_TRACE(DTypeName(dt));
    const Shape shape = {3, 5, 7};
    std::vector<uint8_t> bytes = RandomInts<uint8_t>(105 * ItemSize(dt), 3, 0, 255);
    if (dt == DType::Bool) {
      for (auto& b : bytes) b &= 1;
    }
    ASSERT_OK_AND_ASSIGN(GPUArray a, ops::FromHost(bytes.data(), shape, dt, TestDevice()));
    EXPECT_EQ(a.dtype(), dt);
    EXPECT_EQ(a.shape(), shape);
    EXPECT_TRUE(a.is_contiguous());
    EXPECT_EQ(a.device(), TestDevice());
    std::vector<uint8_t> back(bytes.size());
    ASSERT_OK(ops::ToHost(a, back.data()));
    EXPECT_EQ(back, bytes);
  }
}

TEST(Ops, FullAndArange) {
  ASSERT_OK_AND_ASSIGN(GPUArray f,
                       ops::Full({4, 3}, Scalar::Float(-2.5), DType::Float32, TestDevice()));
  ASSERT_OK_AND_ASSIGN(auto fv, ToVector<float>(f));
  EXPECT_EQ(fv, std::vector<float>(12, -2.5f));
  ASSERT_OK_AND_ASSIGN(GPUArray r, ops::ArangeInt(-7, 20, 3, DType::Int16, TestDevice()));
  ASSERT_OK_AND_ASSIGN(auto rv, ToVector<int16_t>(r));
  EXPECT_EQ(rv, (std::vector<int16_t>{-7, -4, -1, 2, 5, 8, 11, 14, 17}));
  ASSERT_OK_AND_ASSIGN(GPUArray d, ops::Arange(1.0, 0.0, -0.25, DType::Float64, TestDevice()));
  ASSERT_OK_AND_ASSIGN(auto dv, ToVector<double>(d));
  EXPECT_EQ(dv, (std::vector<double>{1.0, 0.75, 0.5, 0.25}));
  auto bad = ops::Full({2}, Scalar::Int(300), DType::Int8, TestDevice());
  EXPECT_EQ(ErrorTypeOf(bad.status()), ErrorType::kOverflow) << bad.status();
}

TEST(Ops, BinaryBroadcastsAndPromotes) {
  // (3, 1) int32 + (4,) float32 -> (3, 4) float64 (Array API: int32 with float32 -> float64).
  std::vector<int32_t> a = RandomInts<int32_t>(3, 1, -1000, 1000);
  std::vector<double> bd = RandomDoubles(4, 2, -10, 10);
  std::vector<float> b = ToFloat(bd);
  ASSERT_OK_AND_ASSIGN(GPUArray A, FromVector(a, {3, 1}));
  ASSERT_OK_AND_ASSIGN(GPUArray B, FromVector(b, {4}));
  for (ops::ElementwiseOp op : {ops::ElementwiseOp::kAdd, ops::ElementwiseOp::kSubtract,
                                ops::ElementwiseOp::kMultiply, ops::ElementwiseOp::kDivide}) {
    SCOPED_TRACE(static_cast<int>(op));
    ASSERT_OK_AND_ASSIGN(GPUArray C, ops::Binary(op, A, B));
    EXPECT_EQ(C.dtype(), DType::Float64);
    EXPECT_EQ(C.shape(), (Shape{3, 4}));
    ASSERT_OK_AND_ASSIGN(auto c, ToVector<double>(C));
    for (int i = 0; i < 3; ++i) {
      for (int j = 0; j < 4; ++j) {
        double x = a[i], y = b[j],
               want = op == ops::ElementwiseOp::kAdd        ? x + y
                      : op == ops::ElementwiseOp::kSubtract ? x - y
                      : op == ops::ElementwiseOp::kMultiply ? x * y
                                                            : x / y;
        EXPECT_EQ(c[i * 4 + j], want) << i << "," << j;
      }
    }
  }
}

TEST(Ops, IntegerArithmeticWrapsAndDivisionByZeroIsFinite) {
  std::vector<int8_t> a = {127, -128, 100, 0}, b = {1, -1, 100, 0};
  ASSERT_OK_AND_ASSIGN(GPUArray A, FromVector(a, {4}));
  ASSERT_OK_AND_ASSIGN(GPUArray B, FromVector(b, {4}));
  ASSERT_OK_AND_ASSIGN(GPUArray S, ops::Add(A, B));
  ASSERT_OK_AND_ASSIGN(auto s, ToVector<int8_t>(S));
  EXPECT_EQ(s, (std::vector<int8_t>{-128, 127, -56, 0}));
  ASSERT_OK_AND_ASSIGN(GPUArray Q, ops::Divide(A, B));
  EXPECT_EQ(Q.dtype(), kDefaultFloat);
  ASSERT_OK_AND_ASSIGN(auto q, ToVector<float>(Q));
  EXPECT_EQ(q[0], 127.0f);
  EXPECT_TRUE(std::isnan(q[3]));  // 0 / 0
}

TEST(Ops, ScalarOperandsAreWeak) {
  std::vector<uint16_t> a = RandomInts<uint16_t>(6, 4, 0, 65535);
  ASSERT_OK_AND_ASSIGN(GPUArray A, FromVector(a, {2, 3}));
  ASSERT_OK_AND_ASSIGN(GPUArray R, ops::Binary(ops::ElementwiseOp::kSubtract, Scalar::Int(5), A));
  EXPECT_EQ(R.dtype(), DType::UInt16);
  ASSERT_OK_AND_ASSIGN(auto r, ToVector<uint16_t>(R));
  for (int i = 0; i < 6; ++i) EXPECT_EQ(r[i], static_cast<uint16_t>(5 - a[i]));
  ASSERT_OK_AND_ASSIGN(GPUArray F,
                       ops::Binary(ops::ElementwiseOp::kMultiply, A, Scalar::Float(0.5)));
  EXPECT_EQ(F.dtype(), kDefaultFloat);
  auto over = ops::Binary(ops::ElementwiseOp::kAdd, A, Scalar::Int(70000));
  EXPECT_EQ(ErrorTypeOf(over.status()), ErrorType::kOverflow) << over.status();
}

// Naive float64 reference of a batched row-major product.
std::vector<double> Reference(const std::vector<double>& a, const std::vector<double>& b,
                              int64_t batch, int64_t m, int64_t k, int64_t n) {
  std::vector<double> c(batch * m * n, 0.0);
  for (int64_t p = 0; p < batch; ++p) {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (int64_t q = 0; q < k; ++q) acc += a[(p * m + i) * k + q] * b[(p * k + q) * n + j];
        c[(p * m + i) * n + j] = acc;
      }
    }
  }
  return c;
}

TEST(Ops, MatmulMatchesAFloat64Reference) {
  struct Case {
    int64_t batch, m, k, n;
  };
  for (Case c :
       {Case{1, 1, 1, 1}, Case{1, 37, 65, 19}, Case{3, 64, 300, 70}, Case{2, 129, 7, 257}}) {
    SCOPED_TRACE(absl::StrCat(c.batch, "x", c.m, "x", c.k, "x", c.n));
    std::vector<double> a = RandomDoubles(c.batch * c.m * c.k, 10),
                        b = RandomDoubles(c.batch * c.k * c.n, 11);
    std::vector<double> want = Reference(a, b, c.batch, c.m, c.k, c.n);
    ASSERT_OK_AND_ASSIGN(GPUArray A, FromVector(a, {c.batch, c.m, c.k}));
    ASSERT_OK_AND_ASSIGN(GPUArray B, FromVector(b, {c.batch, c.k, c.n}));
    ASSERT_OK_AND_ASSIGN(GPUArray C, ops::Matmul(A, B));
    ASSERT_OK_AND_ASSIGN(auto got, ToVector<double>(C));
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_NEAR(got[i], want[i], 1e-12 * c.k) << i;
    }
    // float32: true FP32 accumulation (error within a few k * 2^-24 of sum |a||b| <= k).
    ASSERT_OK_AND_ASSIGN(GPUArray A32, ops::AsType(A, DType::Float32));
    ASSERT_OK_AND_ASSIGN(GPUArray B32, ops::AsType(B, DType::Float32));
    ASSERT_OK_AND_ASSIGN(GPUArray C32, ops::Matmul(A32, B32));
    EXPECT_EQ(C32.dtype(), DType::Float32);
    ASSERT_OK_AND_ASSIGN(auto got32, ToVector<float>(C32));
    std::vector<double> a32(a.size()), b32(b.size());
    for (size_t i = 0; i < a.size(); ++i) a32[i] = static_cast<float>(a[i]);
    for (size_t i = 0; i < b.size(); ++i) b32[i] = static_cast<float>(b[i]);
    std::vector<double> want32 = Reference(a32, b32, c.batch, c.m, c.k, c.n);
    for (size_t i = 0; i < want32.size(); ++i) {
      ASSERT_NEAR(got32[i], want32[i], 2.0 * c.k * std::ldexp(1.0, -24) * c.k) << i;
    }
  }
}

TEST(Ops, MatmulOfTransposedViewsNeedsNoCopyAndIsCorrect) {
  const int64_t m = 33, k = 17, n = 9;
  std::vector<double> at = RandomDoubles(k * m, 20), b = RandomDoubles(k * n, 21);
  ASSERT_OK_AND_ASSIGN(GPUArray AT, FromVector(at, {k, m}));
  ASSERT_OK_AND_ASSIGN(GPUArray A, ops::Transpose(AT));  // (m, k), column-major view
  EXPECT_FALSE(A.is_contiguous());
  EXPECT_EQ(A.buffer(), AT.buffer());
  ASSERT_OK_AND_ASSIGN(GPUArray B, FromVector(b, {k, n}));
  ASSERT_OK_AND_ASSIGN(GPUArray C, ops::Matmul(A, B));
  ASSERT_OK_AND_ASSIGN(auto got, ToVector<double>(C));
  std::vector<double> a(m * k);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t q = 0; q < k; ++q) a[i * k + q] = at[q * m + i];
  }
  std::vector<double> want = Reference(a, b, 1, m, k, n);
  for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-12) << i;
}

TEST(Ops, MatmulBadInputIsAStatusNamingTheShapes) {
  ASSERT_OK_AND_ASSIGN(GPUArray A, ops::Zeros({3, 4}, DType::Float32, TestDevice()));
  ASSERT_OK_AND_ASSIGN(GPUArray B, ops::Zeros({5, 2}, DType::Float32, TestDevice()));
  auto r = ops::Matmul(A, B);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(ErrorTypeOf(r.status()), ErrorType::kValue);
  EXPECT_TRUE(Contains(r.status(), "matmul")) << r.status();
  EXPECT_TRUE(Contains(r.status(), "(3, 4)")) << r.status();
  EXPECT_TRUE(Contains(r.status(), "(5, 2)")) << r.status();
  ASSERT_OK_AND_ASSIGN(GPUArray I, ops::Zeros({4, 2}, DType::Int32, TestDevice()));
  ASSERT_OK_AND_ASSIGN(GPUArray I2, ops::Zeros({2, 4}, DType::Int32, TestDevice()));
  auto t = ops::Matmul(I, I2);
  EXPECT_EQ(ErrorTypeOf(t.status()), ErrorType::kType) << t.status();
  EXPECT_TRUE(Contains(t.status(), "int32")) << t.status();
  ASSERT_OK_AND_ASSIGN(GPUArray S, ops::Zeros({}, DType::Float32, TestDevice()));
  EXPECT_EQ(ErrorTypeOf(ops::Matmul(S, A).status()), ErrorType::kValue);
}

TEST(Ops, ReshapeIsAViewWhenStridesAllowElseACopy) {
  std::vector<int64_t> v = RandomInts<int64_t>(24, 30, -100, 100);
  ASSERT_OK_AND_ASSIGN(GPUArray A, FromVector(v, {4, 6}));
  ASSERT_OK_AND_ASSIGN(GPUArray R, ops::Reshape(A, {2, -1, 3}));
  EXPECT_EQ(R.shape(), (Shape{2, 4, 3}));
  EXPECT_EQ(R.buffer(), A.buffer());
  ASSERT_OK_AND_ASSIGN(GPUArray T, ops::Transpose(A));
  ASSERT_OK_AND_ASSIGN(GPUArray F, ops::Reshape(T, {24}));
  EXPECT_NE(F.buffer(), A.buffer());  // a transposed array cannot be flattened in place
  ASSERT_OK_AND_ASSIGN(auto f, ToVector<int64_t>(F));
  for (int i = 0; i < 24; ++i) EXPECT_EQ(f[i], v[(i % 4) * 6 + i / 4]) << i;
  auto bad = ops::Reshape(A, {5, 5});
  EXPECT_EQ(ErrorTypeOf(bad.status()), ErrorType::kValue);
  EXPECT_TRUE(Contains(bad.status(), "(5, 5)")) << bad.status();
}

TEST(Ops, IndexWithNegativeStepsAndAssignThroughTheView) {
  std::vector<int32_t> v = RandomInts<int32_t>(30, 40, -1000, 1000);
  ASSERT_OK_AND_ASSIGN(GPUArray A, FromVector(v, {5, 6}));
  using K = ops::IndexItem::Kind;
  ops::IndexItem rows{K::kSlice, 0, std::nullopt, std::nullopt, -2};  // [::-2]
  ops::IndexItem cols{K::kSlice, 0, 1, 5, 3};                         // [1:5:3]
  ASSERT_OK_AND_ASSIGN(GPUArray V, ops::Index(A, {rows, cols}));
  EXPECT_EQ(V.shape(), (Shape{3, 2}));
  ASSERT_OK_AND_ASSIGN(auto got, ToVector<int32_t>(V));
  const int r[] = {4, 2, 0}, c[] = {1, 4};
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 2; ++j) EXPECT_EQ(got[i * 2 + j], v[r[i] * 6 + c[j]]);
  }
  ASSERT_OK_AND_ASSIGN(GPUArray seven, ops::Full({}, Scalar::Int(7), DType::Int32, TestDevice()));
  ASSERT_OK(ops::Assign(V, seven));
  ASSERT_OK_AND_ASSIGN(auto all, ToVector<int32_t>(A));
  for (int i = 0; i < 5; ++i) {
    for (int j = 0; j < 6; ++j) {
      bool hit = (i % 2 == 0) && (j == 1 || j == 4);
      EXPECT_EQ(all[i * 6 + j], hit ? 7 : v[i * 6 + j]) << i << "," << j;
    }
  }
  ops::IndexItem out_of_range{K::kInteger, 5};
  auto bad = ops::Index(A, {out_of_range});
  EXPECT_EQ(ErrorTypeOf(bad.status()), ErrorType::kIndex) << bad.status();
}

TEST(Ops, AsTypeRoundsHalfTypesToNearestEven) {
  // 1 + 2^-11 is halfway between float16 neighbours 1 and 1 + 2^-10: ties to even (1).
  std::vector<double> v = {1.0 + std::ldexp(1.0, -11), 1.0 + 3 * std::ldexp(1.0, -11), -0.0,
                           65520.0};
  ASSERT_OK_AND_ASSIGN(GPUArray A, FromVector(v, {4}));
  ASSERT_OK_AND_ASSIGN(GPUArray H, ops::AsType(A, DType::Float16));
  ASSERT_OK_AND_ASSIGN(auto h, ToVector<uint16_t>(H));
  EXPECT_EQ(h[0], 0x3C00);  // 1.0
  EXPECT_EQ(h[1], 0x3C02);  // 1 + 2^-9
  EXPECT_EQ(h[2], 0x8000);  // -0.0 keeps its sign
  EXPECT_EQ(h[3], 0x7C00);  // rounds to infinity
}

TEST(Ops, ToDeviceRoundTripsBetweenDevices) {
  std::vector<Device> devs = Runtime::Get().devices();
  std::vector<double> v = RandomDoubles(50, 50);
  ASSERT_OK_AND_ASSIGN(GPUArray A, FromVector(v, {5, 10}));
  for (Device d : devs) {
    SCOPED_TRACE(d.ToString());
    ASSERT_OK_AND_ASSIGN(GPUArray B, ops::ToDevice(A, d));
    EXPECT_EQ(B.device(), d);
    ASSERT_OK_AND_ASSIGN(GPUArray C, ops::ToDevice(B, TestDevice()));
    ASSERT_OK_AND_ASSIGN(auto back, ToVector<double>(C));
    EXPECT_EQ(back, v);
  }
  auto bad = ops::ToDevice(A, Device{DeviceType::kCUDA, 99});
  EXPECT_FALSE(bad.ok());
}

TEST(Ops, OperandsOnDifferentDevicesAreRejected) {
  std::vector<Device> devs = Runtime::Get().devices();
  if (devs.size() < 2) GTEST_SKIP() << "one device only";
  ASSERT_OK_AND_ASSIGN(GPUArray A, ops::Ones({2, 2}, DType::Float32, devs[0]));
  ASSERT_OK_AND_ASSIGN(GPUArray B, ops::Ones({2, 2}, DType::Float32, devs.back()));
  EXPECT_EQ(ErrorTypeOf(ops::Add(A, B).status()), ErrorType::kValue);
  EXPECT_EQ(ErrorTypeOf(ops::Matmul(A, B).status()), ErrorType::kValue);
}

TEST(Ops, EmptyAndHugeShapes) {
  ASSERT_OK_AND_ASSIGN(GPUArray E, ops::Ones({0, 5}, DType::Float64, TestDevice()));
  EXPECT_EQ(E.size(), 0);
  ASSERT_OK_AND_ASSIGN(GPUArray O, ops::Ones({5, 3}, DType::Float64, TestDevice()));
  ASSERT_OK_AND_ASSIGN(GPUArray M, ops::Matmul(E, O));
  EXPECT_EQ(M.shape(), (Shape{0, 3}));
  auto neg = ops::Empty({2, -1}, DType::Float32, TestDevice());
  EXPECT_EQ(ErrorTypeOf(neg.status()), ErrorType::kValue);
  auto huge = ops::Empty({int64_t{1} << 40, int64_t{1} << 30}, DType::Float32, TestDevice());
  EXPECT_EQ(ErrorTypeOf(huge.status()), ErrorType::kValue) << huge.status();
  // Valid shape, impossible size: MemoryError naming the request, not a crash.
  auto oom = ops::Empty({int64_t{1} << 50}, DType::UInt8, TestDevice());
  ASSERT_FALSE(oom.ok());
  EXPECT_EQ(ErrorTypeOf(oom.status()), ErrorType::kMemory) << oom.status();
  EXPECT_TRUE(Contains(oom.status(), absl::StrCat(int64_t{1} << 50))) << oom.status();
}

TEST(Ops, EveryOpLaunchesThroughTheDispatcher) {
  ASSERT_OK_AND_ASSIGN(GPUArray A, ops::Ones({8, 8}, DType::Float32, TestDevice()));
  int64_t before = testing::TotalLaunches();
  ASSERT_OK_AND_ASSIGN(GPUArray B, ops::Add(A, A));
  ASSERT_OK_AND_ASSIGN(GPUArray C, ops::Matmul(A, B));
  ASSERT_OK(ops::Synchronize(TestDevice()));
  EXPECT_GE(testing::TotalLaunches() - before, 2);
  DispatchStats s = Runtime::Get().dispatcher().stats();
  EXPECT_GT(s.per_kernel.size(), 0u);
}

TEST(Ops, NegativeKeepsSignedZerosWrapsIntegersAndNegatesComplexParts) {
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> f = {0.0, -0.0, 1.5, -inf};
  ASSERT_OK_AND_ASSIGN(GPUArray F, FromVector(f, {4}));
  ASSERT_OK_AND_ASSIGN(GPUArray NF, ops::Negative(F));
  ASSERT_OK_AND_ASSIGN(auto nf, ToVector<double>(NF));
  EXPECT_TRUE(std::signbit(nf[0]) && nf[0] == 0.0);
  EXPECT_TRUE(!std::signbit(nf[1]) && nf[1] == 0.0);
  EXPECT_EQ(nf[2], -1.5);
  EXPECT_EQ(nf[3], inf);
  std::vector<int8_t> i = {-128, 127, 0};
  ASSERT_OK_AND_ASSIGN(GPUArray I, FromVector(i, {3}));
  ASSERT_OK_AND_ASSIGN(GPUArray NI, ops::Negative(I));
  ASSERT_OK_AND_ASSIGN(auto ni, ToVector<int8_t>(NI));
  EXPECT_EQ(ni, (std::vector<int8_t>{-128, -127, 0}));
  std::vector<complex128> c = {complex128(inf, 1.0), complex128(0.0, 0.0)};
  ASSERT_OK_AND_ASSIGN(GPUArray C, FromVector(c, {2}));
  ASSERT_OK_AND_ASSIGN(GPUArray NC, ops::Negative(C));
  ASSERT_OK_AND_ASSIGN(auto nc, ToVector<complex128>(NC));
  EXPECT_EQ(nc[0].re, -inf);  // a multiply by -1 would give NaN parts here
  EXPECT_EQ(nc[0].im, -1.0);
  EXPECT_TRUE(std::signbit(nc[1].re) && std::signbit(nc[1].im));
  ASSERT_OK_AND_ASSIGN(GPUArray B, ops::Ones({2}, DType::Bool, TestDevice()));
  EXPECT_EQ(ErrorTypeOf(ops::Negative(B).status()), ErrorType::kType);
}

TEST(Ops, Uint64ScalarsAboveInt64) {
  const uint64_t big = (uint64_t{1} << 63) + 5;
  ASSERT_OK_AND_ASSIGN(GPUArray U, ops::Full({3}, Scalar::UInt(big), DType::UInt64, TestDevice()));
  ASSERT_OK_AND_ASSIGN(auto u, ToVector<uint64_t>(U));
  EXPECT_EQ(u, std::vector<uint64_t>(3, big));
  ASSERT_OK_AND_ASSIGN(Scalar s, ops::Item(*ops::Index(U, {ops::IndexItem{}})));
  EXPECT_TRUE(s.above_int64);
  EXPECT_EQ(s.u, big);
  auto over = ops::Full({3}, Scalar::UInt(big), DType::Int64, TestDevice());
  EXPECT_EQ(ErrorTypeOf(over.status()), ErrorType::kOverflow) << over.status();
  ASSERT_OK_AND_ASSIGN(GPUArray D, ops::Full({1}, Scalar::UInt(big), DType::Float64, TestDevice()));
  ASSERT_OK_AND_ASSIGN(auto d, ToVector<double>(D));
  EXPECT_EQ(d[0], 9223372036854775808.0);
}

}  // namespace
}  // namespace pygpukit

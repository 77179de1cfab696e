// DLPack export / import and foreign-memory views through the C++ API, and the manipulation and
// indexing ops a C++ service reaches without Python (concat, roll, tile, eye, tril, tensordot,
// take, take_along_axis, advanced indexing): values
// against host references on the test device, ownership (deleters run once, after the last
// view), and the errors bad tensors produce.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <numeric>
#include <thread>
#include <vector>

#include "ops/interop/dlpack.h"
#include "test_util.h"

namespace pygpukit {
namespace {

using testing::FromVector;
using testing::TestDevice;
using testing::ToVector;

TEST(DLPack, ExportDescribesTheArrayAndKeepsItAlive) {
  ASSERT_OK_AND_ASSIGN(GPUArray a, ops::ArangeInt(0, 12, 1, DType::Int32, TestDevice()));
  ASSERT_OK_AND_ASSIGN(a, ops::Reshape(a, {3, 4}));
  ASSERT_OK_AND_ASSIGN(GPUArray t, ops::MatrixTranspose(a));  // strides (1, 4)
  ASSERT_OK_AND_ASSIGN(DLManagedTensorVersioned * m, ops::ToDLPack(t));
  EXPECT_EQ(m->version.major, 1u);
  EXPECT_EQ(m->flags, 0u);
  const DLTensor& d = m->dl_tensor;
  EXPECT_EQ(d.ndim, 2);
  EXPECT_EQ(d.shape[0], 4);
  EXPECT_EQ(d.shape[1], 3);
  EXPECT_EQ(d.strides[0], 1);
  EXPECT_EQ(d.strides[1], 4);
  EXPECT_EQ(d.dtype.code, kDLInt);
  EXPECT_EQ(d.dtype.bits, 32);
  EXPECT_EQ(d.dtype.lanes, 1);
  EXPECT_EQ(d.device.device_type, TestDevice().is_cuda() ? kDLCUDA : kDLCPU);
  EXPECT_EQ(d.data, t.data());
  const std::weak_ptr<Buffer> weak = a.buffer();
  ASSERT_OK(ops::Synchronize(TestDevice()));  // queued CPU work holds its buffers until it runs
  a = GPUArray();
  t = GPUArray();
  EXPECT_FALSE(weak.expired());  // the managed tensor holds the memory
  m->deleter(m);
  EXPECT_TRUE(weak.expired());
}

TEST(DLPack, RoundTripSharesMemoryAndRunsTheDeleterOnce) {
  for (DType dt : {DType::Bool, DType::UInt8, DType::Int64, DType::Float16, DType::BFloat16,
                   DType::Float64, DType::Complex64}) {
    SCOPED_TRACE(DTypeName(dt));
    ASSERT_OK_AND_ASSIGN(GPUArray a, ops::Full({2, 5}, Scalar::Int(1), dt, TestDevice()));
    ASSERT_OK_AND_ASSIGN(DLManagedTensorVersioned * m, ops::ToDLPack(a));
    static std::atomic<int> deleted;
    deleted = 0;
    // Chain our counter in front of the exporter's deleter.
    static void (*inner)(DLManagedTensorVersioned*);
    inner = m->deleter;
    m->deleter = [](DLManagedTensorVersioned* self) {
      ++deleted;
      inner(self);
    };
    ASSERT_OK_AND_ASSIGN(GPUArray b, ops::FromDLPack(m));
    EXPECT_EQ(b.dtype(), dt);
    EXPECT_EQ(b.shape(), a.shape());
    EXPECT_EQ(b.data(), a.data());
    EXPECT_TRUE(b.buffer()->foreign());
    ASSERT_OK(ops::Assign(b, Scalar::Int(0)));  // writes through to a
    ASSERT_OK_AND_ASSIGN(GPUArray any, ops::Reduce(ops::ReduceOp::kAny, a));
    ASSERT_OK_AND_ASSIGN(Scalar s, ops::Item(any));
    EXPECT_FALSE(s.b);
    ASSERT_OK_AND_ASSIGN(GPUArray v, ops::Flip(b, std::nullopt));  // a second view
    b = GPUArray();
    ASSERT_OK(ops::Synchronize(TestDevice()));
    EXPECT_EQ(deleted.load(), 0);
    v = GPUArray();
    // The deleter runs on the watcher thread once the queued work is done.
    for (int i = 0; i < 2000 && deleted.load() == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    EXPECT_EQ(deleted.load(), 1);
  }
}

TEST(DLPack, LegacyTensorsAndForeignStrides) {
  ASSERT_OK_AND_ASSIGN(GPUArray a, ops::ArangeInt(0, 6, 1, DType::Int16, TestDevice()));
  ASSERT_OK_AND_ASSIGN(GPUArray f, ops::Flip(a, std::nullopt));  // stride -1
  ASSERT_OK_AND_ASSIGN(DLManagedTensor * m, ops::ToDLPackLegacy(f));
  EXPECT_EQ(m->dl_tensor.strides[0], -1);
  ASSERT_OK_AND_ASSIGN(GPUArray b, ops::FromDLPackLegacy(m));
  ASSERT_OK_AND_ASSIGN(auto v, ToVector<int16_t>(b));
  EXPECT_EQ(v, (std::vector<int16_t>{5, 4, 3, 2, 1, 0}));
}

TEST(DLPack, BadTensorsAreRefusedAndLeftToTheCaller) {
  ASSERT_OK_AND_ASSIGN(GPUArray a, ops::Zeros({4}, DType::Float32, TestDevice()));
  ASSERT_OK_AND_ASSIGN(DLManagedTensorVersioned * m, ops::ToDLPack(a));
  m->dl_tensor.dtype.lanes = 4;
  auto r = ops::FromDLPack(m);
  EXPECT_EQ(ErrorTypeOf(r.status()), ErrorType::kType) << r.status();
  m->dl_tensor.dtype.lanes = 1;
  m->dl_tensor.dtype.bits = 24;
  EXPECT_EQ(ErrorTypeOf(ops::FromDLPack(m).status()), ErrorType::kType);
  m->dl_tensor.dtype.bits = 32;
  m->flags |= DLPACK_FLAG_BITMASK_READ_ONLY;
  EXPECT_EQ(ErrorTypeOf(ops::FromDLPack(m).status()), ErrorType::kValue);
  m->flags = 0;
  m->version.major = 2;
  EXPECT_EQ(ErrorTypeOf(ops::FromDLPack(m).status()), ErrorType::kNotImplemented);
  m->version.major = 1;
  m->dl_tensor.device.device_type = kDLOpenCL;
  EXPECT_EQ(ErrorTypeOf(ops::FromDLPack(m).status()), ErrorType::kNotImplemented);
  m->dl_tensor.device.device_type = TestDevice().is_cuda() ? kDLCUDA : kDLCPU;
  m->dl_tensor.byte_offset = 2;  // misaligned float32
  EXPECT_EQ(ErrorTypeOf(ops::FromDLPack(m).status()), ErrorType::kValue);
  m->deleter(m);  // still ours after every refusal
}

TEST(ForeignMemory, ViewsHostMemoryOnTheCpuAndReleasesOnce) {
  std::vector<float> host(12);
  std::iota(host.begin(), host.end(), 0.0f);
  std::atomic<int> released{0};
  const int64_t strides[] = {1, 3};  // a Fortran-order 3 x 4 view
  ASSERT_OK_AND_ASSIGN(GPUArray v, ops::FromForeignMemory(host.data(), DType::Float32, {3, 4},
                                                          absl::MakeConstSpan(strides), Device{},
                                                          [&released] { ++released; }));
  ASSERT_OK_AND_ASSIGN(GPUArray c, ops::Copy(v));
  ASSERT_OK_AND_ASSIGN(auto got, ToVector<float>(c));
  EXPECT_EQ(got, (std::vector<float>{0, 3, 6, 9, 1, 4, 7, 10, 2, 5, 8, 11}));
  ASSERT_OK(ops::Assign(v, Scalar::Float(7)));
  ASSERT_OK(ops::Synchronize(Device{}));
  EXPECT_EQ(host[5], 7.0f);
  v = GPUArray();
  for (int i = 0; i < 2000 && released.load() == 0; ++i) {  // released on the watcher thread
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(released.load(), 1);
  const int64_t bad[] = {1};
  EXPECT_EQ(ErrorTypeOf(ops::FromForeignMemory(host.data(), DType::Float32, {3, 4},
                                               absl::MakeConstSpan(bad), Device{}, [] {})
                            .status()),
            ErrorType::kValue);
}

TEST(Manipulation, ConcatRollTileEyeTrilTensordot) {
  const Device d = TestDevice();
  ASSERT_OK_AND_ASSIGN(GPUArray a, ops::ArangeInt(0, 6, 1, DType::Int32, d));
  ASSERT_OK_AND_ASSIGN(a, ops::Reshape(a, {2, 3}));
  ASSERT_OK_AND_ASSIGN(GPUArray b, ops::Full({1, 3}, Scalar::Float(0.5), DType::Float32, d));
  const GPUArray parts[] = {a, b};
  ASSERT_OK_AND_ASSIGN(GPUArray c, ops::Concat(parts, 0));
  EXPECT_EQ(c.dtype(), DType::Float64);  // int32 and float32 promote to float64
  ASSERT_OK_AND_ASSIGN(auto cv, ToVector<double>(c));
  EXPECT_EQ(cv, (std::vector<double>{0, 1, 2, 3, 4, 5, 0.5, 0.5, 0.5}));
  const int64_t shifts[] = {1, -1}, axes[] = {0, 1};
  ASSERT_OK_AND_ASSIGN(GPUArray r, ops::Roll(a, shifts, absl::MakeConstSpan(axes)));
  ASSERT_OK_AND_ASSIGN(auto rv, ToVector<int32_t>(r));
  EXPECT_EQ(rv, (std::vector<int32_t>{4, 5, 3, 1, 2, 0}));
  const int64_t reps[] = {2, 1};
  ASSERT_OK_AND_ASSIGN(GPUArray t, ops::Tile(a, reps));
  EXPECT_EQ(t.shape(), (Shape{4, 3}));
  ASSERT_OK_AND_ASSIGN(auto tv, ToVector<int32_t>(t));
  EXPECT_EQ(tv, (std::vector<int32_t>{0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5}));
  ASSERT_OK_AND_ASSIGN(GPUArray e, ops::Eye(2, 3, 1, DType::Float32, d));
  ASSERT_OK_AND_ASSIGN(auto ev, ToVector<float>(e));
  EXPECT_EQ(ev, (std::vector<float>{0, 1, 0, 0, 0, 1}));
  ASSERT_OK_AND_ASSIGN(GPUArray l, ops::Tril(a, 0));
  ASSERT_OK_AND_ASSIGN(auto lv, ToVector<int32_t>(l));
  EXPECT_EQ(lv, (std::vector<int32_t>{0, 0, 0, 3, 4, 0}));
  ASSERT_OK_AND_ASSIGN(GPUArray x, ops::AsType(a, DType::Float32));
  const int64_t xa[] = {1}, ya[] = {1};
  ASSERT_OK_AND_ASSIGN(GPUArray g, ops::Tensordot(x, x, xa, ya));  // x @ x.T
  ASSERT_OK_AND_ASSIGN(auto gv, ToVector<float>(g));
  EXPECT_EQ(gv, (std::vector<float>{5, 14, 14, 50}));
  EXPECT_EQ(ErrorTypeOf(ops::Concat({}, 0).status()), ErrorType::kValue);
  const int64_t neg[] = {-1};
  EXPECT_EQ(ErrorTypeOf(ops::Tile(a, neg).status()), ErrorType::kValue);
}

TEST(Indexing, TakeTakeAlongAxisAndAdvancedIndex) {
  const Device d = TestDevice();
  ASSERT_OK_AND_ASSIGN(GPUArray a, ops::ArangeInt(0, 12, 1, DType::Float32, d));
  ASSERT_OK_AND_ASSIGN(a, ops::Reshape(a, {3, 4}));
  ASSERT_OK_AND_ASSIGN(GPUArray idx, FromVector<int64_t>({3, -4, 1}, {3}, d));
  ASSERT_OK_AND_ASSIGN(GPUArray t, ops::Take(a, idx, 1));
  ASSERT_OK_AND_ASSIGN(auto tv, ToVector<float>(t));
  EXPECT_EQ(tv, (std::vector<float>{3, 0, 1, 7, 4, 5, 11, 8, 9}));
  ASSERT_OK_AND_ASSIGN(GPUArray along, FromVector<int32_t>({2, 0, 3}, {3, 1}, d));
  ASSERT_OK_AND_ASSIGN(GPUArray ta, ops::TakeAlongAxis(a, along, 1));
  ASSERT_OK_AND_ASSIGN(auto tav, ToVector<float>(ta));
  EXPECT_EQ(tav, (std::vector<float>{2, 4, 11}));
  // a[[2, 0], 1:3]: the array's dimension first, then the slice's.
  ASSERT_OK_AND_ASSIGN(GPUArray rows, FromVector<int64_t>({2, 0}, {2}, d));
  ops::IndexItem arr, slice;
  arr.kind = ops::IndexItem::Kind::kArray;
  arr.array = 0;
  slice.kind = ops::IndexItem::Kind::kSlice;
  slice.start = 1;
  slice.stop = 3;
  const ops::IndexItem items[] = {arr, slice};
  const GPUArray arrays[] = {rows};
  ASSERT_OK_AND_ASSIGN(GPUArray g, ops::AdvancedIndex(a, items, arrays));
  EXPECT_EQ(g.shape(), (Shape{2, 2}));
  ASSERT_OK_AND_ASSIGN(auto gv, ToVector<float>(g));
  EXPECT_EQ(gv, (std::vector<float>{9, 10, 1, 2}));
  ASSERT_OK_AND_ASSIGN(GPUArray bad, FromVector<int64_t>({4}, {1}, d));
  EXPECT_EQ(ErrorTypeOf(ops::Take(a, bad, 0).status()), ErrorType::kIndex);
  EXPECT_EQ(ErrorTypeOf(ops::Take(a, a, 0).status()), ErrorType::kIndex);  // float indices
  EXPECT_EQ(ErrorTypeOf(ops::Index(a, items).status()), ErrorType::kValue);
}

}  // namespace
}  // namespace pygpukit

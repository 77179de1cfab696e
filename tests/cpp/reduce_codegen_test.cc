// The reduction / scan program generator: the source's shape, and every reducer of the table
// compiling under NVRTC for representative dtypes and each launch mode (no GPU needed).
#include "ops/reduce/reduce_codegen.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "file_test_util.h"
#include "ops/ops.h"
#include "runtime/jit/jit.h"

namespace pygpukit::ops {
namespace {

TEST(ReduceCodegen, ProgramInstantiatesTheReducer) {
  ReduceKernelSpec spec;
  spec.op = ReduceOp::kArgMax;
  spec.in = DType::BFloat16;
  spec.compute = DType::BFloat16;
  spec.out = DType::Int64;
  spec.out_ndim = 2;
  spec.vec = 8;
  spec.bx = 64;
  const JitSource src = ReduceProgram(spec);
  EXPECT_TRUE(absl::StrContains(src.source, "typedef ArgMaxReducer<::pygpukit::bfloat16> R;"))
      << src.source;
  EXPECT_TRUE(absl::StrContains(
      src.source, "ReduceMain<R, ::pygpukit::bfloat16, int64_t, 2, 1, true, 64, 8, 4>(p);"))
      << src.source;
  EXPECT_TRUE(absl::StrContains(src.source, kReduceFinalKernelName)) << src.source;
  EXPECT_EQ(src.name, "reduce_argmax");
  EXPECT_EQ(std::string(ReducerName(ReduceOp::kStd)), "StdReducer");
}

TEST(ReduceCodegen, ScanProgramsHaveTheirModesKernels) {
  ScanKernelSpec spec;
  spec.serial = true;
  JitSource src = ScanProgram(spec);
  EXPECT_TRUE(absl::StrContains(src.source, kScanSerialKernelName)) << src.source;
  EXPECT_FALSE(absl::StrContains(src.source, kScanBlockKernelName)) << src.source;
  spec.serial = false;
  src = ScanProgram(spec);
  for (const char* k : {kScanTotalsKernelName, kScanPrefixesKernelName, kScanBlockKernelName}) {
    EXPECT_TRUE(absl::StrContains(src.source, k)) << src.source;
  }
  EXPECT_EQ(src.name, "scan_sum");
}

// Compute dtypes each reduction accepts (representatives of every kind) and its result dtype.
std::vector<DType> ComputeDTypes(ReduceOp op) {
  using D = DType;
  switch (op) {
    case ReduceOp::kMean:
    case ReduceOp::kVar:
    case ReduceOp::kStd:
      return {D::Float16, D::BFloat16, D::Float32, D::Float64, D::Complex64, D::Complex128};
    case ReduceOp::kMax:
    case ReduceOp::kMin:
    case ReduceOp::kArgMax:
    case ReduceOp::kArgMin:
      return {D::Bool, D::Int8, D::UInt64, D::Float16, D::BFloat16, D::Float64};
    default:
      return {D::Bool, D::Int16, D::UInt64, D::Int64, D::Float16, D::Float32, D::Complex128};
  }
}

DType ResultOf(ReduceOp op, DType c) {
  switch (op) {
    case ReduceOp::kArgMax:
    case ReduceOp::kArgMin:
      return DType::Int64;
    case ReduceOp::kAll:
    case ReduceOp::kAny:
      return DType::Bool;
    case ReduceOp::kVar:
    case ReduceOp::kStd:
      return RealOf(c);
    default:
      return c;
  }
}

TEST(ReduceCodegen, EveryReducerCompilesUnderNvrtc) {
  const std::string dir = testing::FreshTestDir("pgk_reduce_codegen");
  setenv("PYGPUKIT_CACHE_DIR", dir.c_str(), 1);
  JitEngine jit(nullptr);
  if (!jit.info().nvrtc_available) GTEST_SKIP() << "NVRTC is not available here";
  std::vector<std::pair<std::string, JitSource>> cases;
  for (int i = 0; i <= static_cast<int>(ReduceOp::kStd); ++i) {
    const auto op = static_cast<ReduceOp>(i);
    int variant = 0;
    for (DType c : ComputeDTypes(op)) {
      // Modes in turn: dense inner with vectors, strided inner over 2 reduced dims, outer.
      ReduceKernelSpec spec;
      spec.op = op;
      spec.compute = c;
      spec.out = ResultOf(op, c);
      spec.in = (variant % 2 == 0 && !IsComplex(c)) ? DType::UInt8 : c;  // a fused conversion
      spec.out_ndim = variant % 3;
      spec.red_ndim = variant % 3 == 1 ? 2 : 1;
      spec.inner = variant % 3 != 2;
      // Vectors: along the reduction (inner), or runs of 2 outputs (outer).
      spec.vec = variant % 3 == 0 ? static_cast<int>(16 / ItemSize(spec.in))
                                  : (variant % 3 == 2 && ItemSize(c) <= 8 ? 2 : 1);
      spec.bx = variant % 3 == 2 ? 32 : 128;
      cases.push_back({absl::StrCat(ReduceOpName(op), " ", DTypeName(c), " variant ", variant),
                       ReduceProgram(spec)});
      ++variant;
    }
  }
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kProd}) {
    for (DType c : {DType::Int64, DType::Float32, DType::Complex64}) {
      for (bool serial : {false, true}) {
        ScanKernelSpec spec;
        spec.op = op;
        spec.in = c == DType::Int64 ? DType::Int8 : c;
        spec.compute = spec.out = c;
        spec.line_ndim = serial ? 2 : 1;
        spec.serial = serial;
        spec.vec_in = spec.vec_out = c != DType::Complex64;
        cases.push_back({absl::StrCat("scan ", ReduceOpName(op), " ", DTypeName(c), serial),
                         ScanProgram(spec)});
      }
    }
  }
  std::atomic<size_t> next{0};
  std::vector<std::string> failures(cases.size());
  auto work = [&] {
    for (size_t i = next++; i < cases.size(); i = next++) {
      auto image = jit.Image(cases[i].second, "sm_90");
      if (!image.ok()) failures[i] = std::string(image.status().message());
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) threads.emplace_back(work);
  for (auto& t : threads) t.join();
  for (size_t i = 0; i < cases.size(); ++i) EXPECT_EQ(failures[i], "") << cases[i].first;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace pygpukit::ops

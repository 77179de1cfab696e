// The elementwise kernel generator: the source's shape for each layout, and every function of
// the op table compiling under NVRTC for representative dtypes of its domain (no GPU needed).
#include "ops/elementwise/elementwise_codegen.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "file_test_util.h"
#include "runtime/jit/jit.h"

namespace pygpukit::ops {
namespace {

EwKernelSpec AddSpec(const EwLayout& layout, bool scalar_b = false) {
  const EwInput in[] = {{DType::BFloat16, false}, {DType::Float32, scalar_b}};
  const DType compute[] = {DType::Float32, DType::Float32};
  return OpKernelSpec(ElementwiseOp::kAdd, "add", in, compute, DType::Float32, layout);
}

TEST(ElementwiseCodegen, ContiguousSourceMovesVectors) {
  EwLayout layout;
  layout.vec = 4;
  const std::string src = GenerateElementwiseSource(AddSpec(layout));
  EXPECT_TRUE(absl::StrContains(src, "constexpr int V = 4")) << src;
  EXPECT_TRUE(absl::StrContains(src, "Vec<V, ::pygpukit::bfloat16>")) << src;
  EXPECT_TRUE(absl::StrContains(src,
                                "o0 = Cast<float>(AddOp::Apply(Cast<float>(i0), "
                                "Cast<float>(i1)));"))
      << src;
  EXPECT_TRUE(absl::StrContains(src, kEwKernelName)) << src;
  EXPECT_FALSE(absl::StrContains(src, "complex_math.h")) << src;
}

TEST(ElementwiseCodegen, HalfSinCosTestTheThreadsElementsOnceForTheFastBody) {
  EwLayout layout;
  layout.vec = 8;
  for (DType dt : {DType::BFloat16, DType::Float16, DType::Float32}) {
    const EwInput in[] = {{dt, false}};
    const DType compute[] = {dt};
    const EwKernelSpec spec = OpKernelSpec(ElementwiseOp::kCos, "cos", in, compute, dt, layout);
    const std::string src = GenerateElementwiseSource(spec);
    const bool half = dt != DType::Float32;
    EXPECT_EQ(absl::StrContains(src, "fast = fast & pgk_fast_ok(i0v[u].v[k])"), half) << src;
    EXPECT_EQ(absl::StrContains(src, "CosOp::ApplyFast("), half) << src;
    EXPECT_TRUE(absl::StrContains(src, "pgk_body(i0v[u].v[k], o0v[u].v[k])")) << src;
    // The exact body serves the tail (the n % V elements past the vectors) and strided
    // layouts, which get no fast variant.
    EXPECT_TRUE(absl::StrContains(src, "pgk_body(i0p[e], r0)")) << src;
    EwKernelSpec s2 = spec;
    s2.layout.contiguous = false;
    s2.layout.vec = 1;
    EXPECT_FALSE(absl::StrContains(GenerateElementwiseSource(s2), "pgk_fast_ok")) << src;
  }
  // The fast variant is part of the cache key.
  EwKernelSpec a = OpKernelSpec(ElementwiseOp::kSin, "sin", {{{DType::BFloat16, false}}},
                                {{DType::BFloat16}}, DType::BFloat16, layout);
  EwKernelSpec b = a;
  b.fast_body.clear();
  b.fast_check.clear();
  EXPECT_NE(EwSpecKey(a), EwSpecKey(b));
}

TEST(ElementwiseCodegen, ScalarsArePassedByValue) {
  const std::string src = GenerateElementwiseSource(AddSpec(EwLayout{}, /*scalar_b=*/true));
  EXPECT_TRUE(absl::StrContains(src, ", const float i1)")) << src;
  EXPECT_FALSE(absl::StrContains(src, "i1p")) << src;
}

TEST(ElementwiseCodegen, StridedSourceIndexesEachOperand) {
  EwLayout layout;
  layout.contiguous = false;
  layout.ndim = 3;
  layout.index32 = true;
  const std::string src = GenerateElementwiseSource(AddSpec(layout));
  EXPECT_TRUE(absl::StrContains(src, "const Dims<3> shape")) << src;
  EXPECT_TRUE(absl::StrContains(src, "typedef int I;")) << src;
  EXPECT_TRUE(absl::StrContains(src, "i1o[u] += idx * (I)i1s.v[d];")) << src;
  EXPECT_TRUE(absl::StrContains(src, "constexpr int U = 4, V = 1;")) << src;
  layout.index32 = false;
  EXPECT_TRUE(
      absl::StrContains(GenerateElementwiseSource(AddSpec(layout)), "typedef long long I;"));
}

TEST(ElementwiseCodegen, StridedRunsMoveVectorsAndReplicateBroadcastInputs) {
  EwLayout layout;
  layout.contiguous = false;
  layout.ndim = 2;
  layout.vec = 8;
  layout.unroll = 1;
  layout.broadcast_inner = 0b10;  // input 1 (a column) has last stride 0
  const std::string src = GenerateElementwiseSource(AddSpec(layout));
  EXPECT_TRUE(absl::StrContains(src, "constexpr int U = 1, V = 8;")) << src;
  EXPECT_TRUE(absl::StrContains(
      src, "i0v[u] = reinterpret_cast<const Vec<V, ::pygpukit::bfloat16>*>(i0p)[i0o[u]];"))
      << src;
  EXPECT_TRUE(absl::StrContains(src, "i1v[u] = i1p[i1o[u]];")) << src;
  EXPECT_TRUE(absl::StrContains(src, "pgk_body(i0v[u].v[k], i1v[u], o0v.v[k]);")) << src;
  EXPECT_TRUE(absl::StrContains(src, "reinterpret_cast<Vec<V, float>*>(o0p)[o0o[u]] = o0v;"))
      << src;
}

TEST(ElementwiseCodegen, OutputsAreLoadedOnlyWhenTheBodyMayReadThem) {
  EwKernelSpec spec;
  spec.inputs = {{DType::Float32, false}};
  spec.body = "o0 += i0;";
  spec.layout.vec = 4;
  EXPECT_FALSE(absl::StrContains(GenerateElementwiseSource(spec), "(o0p)[j];"));
  spec.read_outputs = true;
  std::string src = GenerateElementwiseSource(spec);
  EXPECT_TRUE(absl::StrContains(src, "o0v[u] = reinterpret_cast<const Vec<V, float>*>(o0p)[j];"))
      << src;
  EXPECT_TRUE(absl::StrContains(src, "float r0 = o0p[e];")) << src;
  spec.layout.contiguous = false;
  spec.layout.ndim = 2;
  src = GenerateElementwiseSource(spec);
  EXPECT_TRUE(absl::StrContains(src,
                                "Vec<V, float> o0v = reinterpret_cast<const Vec<V, float>*>("
                                "o0p)[o0o[u]];"))
      << src;
  EXPECT_NE(EwSpecKey(spec), [&] {
    EwKernelSpec w = spec;
    w.read_outputs = false;
    return EwSpecKey(w);
  }());
}

TEST(ElementwiseCodegen, TheElementIndexIsPassedInEveryLayout) {
  EwKernelSpec spec;
  spec.inputs = {{DType::Float32, false}};
  spec.body = "o0 = i0 + i;";
  spec.pass_index = true;
  spec.layout.vec = 4;
  std::string src = GenerateElementwiseSource(spec);
  EXPECT_TRUE(absl::StrContains(src, "float& o0, const long long i)")) << src;
  EXPECT_TRUE(absl::StrContains(src, "o0v[u].v[k], (base + u * step) * V + k);")) << src;
  EXPECT_TRUE(absl::StrContains(src, "pgk_body(i0p[e], r0, e);")) << src;
  spec.layout.contiguous = false;
  spec.layout.ndim = 2;
  EXPECT_TRUE(
      absl::StrContains(GenerateElementwiseSource(spec), "o0v.v[k], (base + u * step) * V + k);"));
  spec.layout.vec = 1;
  EXPECT_TRUE(absl::StrContains(GenerateElementwiseSource(spec), "o0p[o0o[u]], base + u * step);"));
}

TEST(ElementwiseCodegen, UserKernelsNameTheirParameters) {
  EwKernelSpec spec;
  spec.inputs = {{DType::Int32, false}};
  spec.outputs = {DType::Int32};
  spec.names = {"a", "b"};
  spec.body = "b = a + 1;";
  const std::string src = GenerateElementwiseSource(spec);
  EXPECT_TRUE(absl::StrContains(src, "void pgk_body(const int32_t a, int32_t& b) {\n  b = a + 1;"))
      << src;
}

TEST(ElementwiseCodegen, SeveralOutputsAreParametersAfterTheFirst) {
  EwKernelSpec spec;
  spec.inputs = {{DType::Float32, false}, {DType::Int8, true}};
  spec.outputs = {DType::Float32, DType::Bool};
  spec.body = "o0 = i0 * i1; o1 = i0 > 0;";
  spec.layout.vec = 4;
  std::string src = GenerateElementwiseSource(spec);
  EXPECT_TRUE(absl::StrContains(src, "float& o0, bool& o1)")) << src;
  EXPECT_TRUE(absl::StrContains(
      src,
      "(long long n, float* __restrict__ o0p, bool* __restrict__ o1p, const float* "
      "__restrict__ i0p, const int8_t i1)"))
      << src;
  EXPECT_TRUE(absl::StrContains(src, "reinterpret_cast<Vec<V, bool>*>(o1p)[j] = o1v[u];")) << src;
  EXPECT_TRUE(absl::StrContains(src, "o1p[e] = r1;")) << src;
  spec.layout.contiguous = false;
  spec.layout.ndim = 2;
  spec.layout.vec = 1;
  src = GenerateElementwiseSource(spec);
  EXPECT_TRUE(absl::StrContains(src, "bool* o1p, const Dims<2> o1s, const float* i0p")) << src;
  EXPECT_TRUE(absl::StrContains(src, "o1o[u] += idx * (I)o1s.v[d];")) << src;
  EXPECT_TRUE(absl::StrContains(src, "o0p[o0o[u]], o1p[o1o[u]]);")) << src;
}

TEST(ElementwiseCodegen, CastsConvertTheInput) {
  const EwKernelSpec spec = CastKernelSpec(DType::Float64, DType::BFloat16, EwLayout{});
  const std::string src = GenerateElementwiseSource(spec);
  EXPECT_TRUE(absl::StrContains(src, "o0 = Cast<::pygpukit::bfloat16>(i0);")) << src;
  EXPECT_FALSE(spec.needs_complex);
  EXPECT_TRUE(CastKernelSpec(DType::Complex64, DType::Float32, EwLayout{}).needs_complex);
}

TEST(ElementwiseCodegen, ComplexOperandsIncludeComplexMath) {
  const EwInput in[] = {{DType::Complex64, false}};
  const DType compute[] = {DType::Complex64};
  EwKernelSpec spec = OpKernelSpec(ElementwiseOp::kExp, "exp", in, compute, DType::Complex64, {});
  EXPECT_TRUE(absl::StrContains(GenerateElementwiseSource(spec), "complex_math.h"));
  EXPECT_EQ(ElementwiseProgram(spec).name, "ew_exp");
  // No multiply-add contraction unless asked (the CPU backend's bits).
  const std::vector<std::string> opts = ElementwiseProgram(spec).options;
  EXPECT_NE(std::find(opts.begin(), opts.end(), "--fmad=false"), opts.end());
  spec.contract = true;
  const std::vector<std::string> fused = ElementwiseProgram(spec).options;
  EXPECT_NE(std::find(fused.begin(), fused.end(), "--fmad=true"), fused.end());
}

// Representative compute dtypes of each domain: every kind it accepts, the narrowest and widest.
std::vector<DType> Representatives(EwDomain d) {
  using D = DType;
  switch (d) {
    case EwDomain::kAll:
      return {D::Bool, D::Int8, D::UInt64, D::Float16, D::BFloat16, D::Float64, D::Complex64};
    case EwDomain::kNumeric:
      return {D::Int16, D::UInt32, D::BFloat16, D::Float32, D::Complex128};
    case EwDomain::kReal:
      return {D::Int8, D::UInt64, D::Float16, D::Float64};
    case EwDomain::kRealOrBool:
      return {D::Bool, D::Int32, D::BFloat16, D::Float32};
    case EwDomain::kInexact:
      return {D::Float16, D::BFloat16, D::Float32, D::Float64, D::Complex64, D::Complex128};
    case EwDomain::kRealInexact:
      return {D::Float16, D::BFloat16, D::Float32, D::Float64};
    case EwDomain::kIntOrBool:
      return {D::Bool, D::Int8, D::UInt64};
    case EwDomain::kInt:
      return {D::Int8, D::Int64, D::UInt16};
    case EwDomain::kLogical:
      return {D::Bool};
  }
  return {};
}

DType ResultOf(EwResult r, DType compute) {
  return r == EwResult::kBool ? DType::Bool : r == EwResult::kReal ? RealOf(compute) : compute;
}

TEST(ElementwiseCodegen, EveryTableFunctionCompilesUnderNvrtc) {
  // A fresh cache directory: every program is really compiled.
  const std::string dir = testing::FreshTestDir("pgk_ew_codegen");
  setenv("PYGPUKIT_CACHE_DIR", dir.c_str(), 1);
  JitEngine jit(nullptr);
  if (!jit.info().nvrtc_available) GTEST_SKIP() << "NVRTC is not available here";
  struct Case {
    std::string what;
    EwKernelSpec spec;
  };
  std::vector<Case> cases;
  auto add = [&](ElementwiseOp op, const char* name, int arity, EwDomain domain, EwResult result) {
    for (DType c : Representatives(domain)) {
      std::vector<EwInput> in(arity, EwInput{c, false});
      std::vector<DType> compute(arity, c);
      if (op == ElementwiseOp::kWhere) {
        in[0] = {DType::UInt8, false};  // a condition of another dtype converts to bool
        compute[0] = DType::Bool;
      }
      if (arity >= 2) in[1].scalar = true;
      // Inputs stored in another dtype than they compute in (the conversion is fused).
      if (!IsComplex(c) && c != DType::Bool) in[0].storage = DType::Int16;
      EwLayout layout;
      layout.vec = static_cast<int>(16 / ItemSize(c));
      cases.push_back({absl::StrCat(name, " ", DTypeName(c)),
                       OpKernelSpec(op, name, in, compute, ResultOf(result, c), layout)});
    }
  };
#define PGK_EW_CASE(E, name, F, arity, domain, result) \
  add(ElementwiseOp::k##E, #name, arity, EwDomain::domain, EwResult::result);
  PGK_FOR_EACH_ELEMENTWISE_OP(PGK_EW_CASE)
#undef PGK_EW_CASE
  // Strided layouts with 32- and 64-bit indexing.
  EwLayout strided;
  strided.contiguous = false;
  strided.ndim = 4;
  cases.push_back({"add strided64", AddSpec(strided)});
  strided.index32 = true;
  cases.push_back({"add strided32", AddSpec(strided)});
  // Runs along the last dimension, one input broadcast along it.
  strided.vec = 4;
  strided.broadcast_inner = 0b01;
  cases.push_back({"add strided runs", AddSpec(strided)});
  // A user kernel (gp.ElementwiseKernel): named parameters, placeholder typedefs, a scalar.
  EwKernelSpec user;
  user.name = "axpb";
  user.inputs = {{DType::Float32, false}, {DType::Float64, true}};
  user.outputs = {DType::Float64};
  user.names = {"x", "y", "z"};
  user.body = "typedef double T; z = x * y + T(1);";
  user.layout.vec = 2;
  cases.push_back({"user kernel", user});
  user.layout.contiguous = false;
  user.layout.ndim = 2;
  cases.push_back({"user kernel strided", user});
  // Conversions (astype): across kinds, to and from the 16-bit and complex types.
  const std::pair<DType, DType> casts[] = {
      {DType::Bool, DType::Float16},     {DType::Complex128, DType::BFloat16},
      {DType::UInt64, DType::Complex64}, {DType::Float32, DType::Int8},
      {DType::BFloat16, DType::Float16}, {DType::Float64, DType::Bool},
      {DType::Int16, DType::UInt32}};
  for (const auto& [from, to] : casts) {
    EwLayout layout;
    layout.vec = static_cast<int>(16 / std::max(ItemSize(from), ItemSize(to)));
    cases.push_back({absl::StrCat("astype ", DTypeName(from), " -> ", DTypeName(to)),
                     CastKernelSpec(from, to, layout)});
  }
  // Two outputs of different dtypes (gp.fuse / several output parameters).
  user.outputs = {DType::Float64, DType::Int16};
  user.names = {"x", "y", "z", "w"};
  user.body = "z = x * y; w = (int16_t)x;";
  cases.push_back({"two outputs strided", user});
  user.layout.contiguous = true;
  cases.push_back({"two outputs", user});
  // Outputs the body reads (given outputs), dense and in runs along the last dimension.
  user.read_outputs = true;
  user.pass_index = true;
  user.body = "z += x * y + i; w += (int16_t)x;";
  cases.push_back({"reads outputs", user});
  user.layout.contiguous = false;
  cases.push_back({"reads outputs in runs", user});

  std::atomic<size_t> next{0};
  std::vector<std::string> failures(cases.size());
  auto work = [&] {
    for (size_t i = next++; i < cases.size(); i = next++) {
      auto image = jit.Image(ElementwiseProgram(cases[i].spec), "sm_90");
      if (!image.ok()) failures[i] = std::string(image.status().message());
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) threads.emplace_back(work);
  for (auto& t : threads) t.join();
  for (size_t i = 0; i < cases.size(); ++i) {
    EXPECT_EQ(failures[i], "") << cases[i].what;
  }
  EXPECT_EQ(jit.info().compiles, static_cast<int64_t>(cases.size()));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace pygpukit::ops

// scaled_matmul: products of 8-bit float matrices with float32 scales (per tensor, per row /
// column, per 1x128 group along K, per 128x128 block), a bias and an activation, accumulated in
// float32. On CUDA it is one GemmProblem with its scales laid out the way cuBLASLt's FP8 matmul
// reads them; a problem that path declines (another arch, layout or scale pairing), and every
// problem on the CPU, runs as the product of the dequantized operands in float32, which is the
// definition of the result.
#include <algorithm>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "ops/gemm/gemm_launch.h"
#include "ops/gemm/gemm_problem.h"
#include "ops/launch/launch_context.h"
#include "ops/ops.h"

namespace pygpukit::ops {
namespace {

constexpr absl::string_view kOp = "scaled_matmul";
constexpr int64_t kBlock = 128;

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// How a scale covers a 2-D operand: the scales along each dim (the scale's shape) and the
// elements each covers along it.
struct ScaleCover {
  int64_t grid[2] = {1, 1};
  int64_t block[2] = {1, 1};
};

// Elements per scale along a dim of `extent` elements that has `count` scales: all of them (one
// scale), one (per_element dims: a's rows, b's columns) or 128; nullopt for any other count.
std::optional<int64_t> BlockOf(int64_t count, int64_t extent, bool per_element) {
  if (count == 1) return std::max<int64_t>(extent, 1);
  if (per_element && count == extent) return 1;
  if (count == CeilDiv(extent, kBlock)) return kBlock;
  return std::nullopt;
}

// The cover of `scale` over `x` (a: (M, K), rows may have one scale each; b: (K, N), columns
// may), or ValueError listing the shapes that fit.
absl::StatusOr<ScaleCover> CoverOf(const GPUArray& scale, absl::string_view name, const GPUArray& x,
                                   absl::string_view xname, bool is_a) {
  const int64_t rows = x.shape()[0], cols = x.shape()[1];
  const int64_t k = is_a ? cols : rows, outer = is_a ? rows : cols;
  const int64_t kb = CeilDiv(k, kBlock), ob = CeilDiv(outer, kBlock);
  auto shape = [&](int64_t o, int64_t kk) {
    return is_a ? absl::StrCat("(", o, ", ", kk, ")") : absl::StrCat("(", kk, ", ", o, ")");
  };
  auto mismatch = [&] {
    return ValueError(absl::StrCat(
        kOp, ": ", name, " of shape ", ShapeToString(scale.shape()), " does not fit ", xname,
        " of shape ", ShapeToString(x.shape()), "; expected () or (1, 1) (one scale), ",
        shape(outer, 1), is_a ? " (per row), " : " (per column), ", shape(outer, kb),
        is_a ? " (1x128 groups)" : " (128x1 groups)", " or ", shape(ob, kb), " (128x128 blocks)"));
  };
  ScaleCover c;
  if (scale.size() == 1 && scale.ndim() <= 2) {
    c.block[0] = std::max<int64_t>(rows, 1);
    c.block[1] = std::max<int64_t>(cols, 1);
    return c;
  }
  if (scale.ndim() != 2) return mismatch();
  for (int d = 0; d < 2; ++d) {
    const bool per_element = (d == 0) == is_a;  // a's rows, b's columns
    std::optional<int64_t> b = BlockOf(scale.shape()[d], x.shape()[d], per_element);
    if (!b.has_value()) return mismatch();
    c.grid[d] = scale.shape()[d];
    c.block[d] = *b;
  }
  return c;
}

// The operand in float32 with each element multiplied by its scale (one scale per element
// after repeating each scale over its block).
absl::StatusOr<GPUArray> Dequantize(const GPUArray& x, const GPUArray& scale, const ScaleCover& c) {
  PGK_ASSIGN_OR_RETURN(GPUArray xf, AsType(x, DType::Float32));
  PGK_ASSIGN_OR_RETURN(GPUArray s, Reshape(scale, {c.grid[0], c.grid[1]}));
  for (int d = 0; d < 2; ++d) {
    if (c.grid[d] == 1 || c.block[d] == 1) continue;  // broadcasts, or one per element already
    PGK_ASSIGN_OR_RETURN(GPUArray idx, ArangeInt(0, x.shape()[d], 1, DType::Int64, x.device()));
    PGK_ASSIGN_OR_RETURN(idx, Binary(ElementwiseOp::kFloorDivide, idx, Scalar::Int(c.block[d])));
    PGK_ASSIGN_OR_RETURN(s, Take(s, idx, d));
  }
  return Multiply(xf, s);
}

// The definition: the dequantized product in float32 (bias and activation applied there), then
// rounded once to out_dtype.
absl::StatusOr<GPUArray> DequantizedProduct(const GPUArray& a, const GPUArray& b,
                                            const GPUArray& scale_a, const GPUArray& scale_b,
                                            const ScaleCover& ca, const ScaleCover& cb,
                                            const ScaledMatmulOptions& o) {
  PGK_ASSIGN_OR_RETURN(GPUArray af, Dequantize(a, scale_a, ca));
  PGK_ASSIGN_OR_RETURN(GPUArray bf, Dequantize(b, scale_b, cb));
  GemmEpilogue e;
  if (o.bias.has_value()) {
    PGK_ASSIGN_OR_RETURN(e.bias, AsType(*o.bias, DType::Float32, false));
  }
  e.activation = o.activation;
  PGK_ASSIGN_OR_RETURN(GPUArray y, Gemm(af, bf, e));
  return AsType(y, o.out_dtype, false);
}

// cuBLASLt's mode for a cover of an operand with `outer` rows of A / columns of B and K
// elements along K (covers that fit two modes get the simpler one; both mean the same).
std::optional<GemmScaleMode> ModeOf(const ScaleCover& c, bool is_a, int64_t outer, int64_t k) {
  const int od = is_a ? 0 : 1, kd = 1 - od;
  const int64_t go = c.grid[od], gk = c.grid[kd];
  const bool k_one = gk == 1, k_blocks = gk == CeilDiv(k, kBlock);
  if (k_one && go == 1) return GemmScaleMode::kTensor;
  if (k_one && go == outer) return GemmScaleMode::kOuter;
  if (k_blocks && go == outer && c.block[od] == 1) return GemmScaleMode::kBlocks1x128;
  if (k_blocks && go == CeilDiv(outer, kBlock)) return GemmScaleMode::kBlocks128x128;
  return std::nullopt;
}

// The scale in cuBLASLt's layout for `mode` (a float32 array kept alive by the caller): one
// value; the vector over the outer dim; 1x128 groups outer-dim fastest, (K blocks, outer);
// 128x128 blocks K-block fastest with the K blocks padded to a multiple of 4.
absl::StatusOr<GPUArray> CublasLtScale(const GPUArray& scale, const ScaleCover& c,
                                       GemmScaleMode mode, bool is_a, int64_t outer, int64_t k) {
  PGK_ASSIGN_OR_RETURN(GPUArray s, Reshape(scale, {c.grid[0], c.grid[1]}));
  // As (outer grid, K grid).
  if (!is_a) {
    PGK_ASSIGN_OR_RETURN(s, MatrixTranspose(s));
  }
  const int64_t kb = CeilDiv(k, kBlock);
  switch (mode) {
    case GemmScaleMode::kTensor:
      return Contiguous(s);
    case GemmScaleMode::kOuter: {
      PGK_ASSIGN_OR_RETURN(GPUArray v, BroadcastTo(s, {outer, 1}));
      return Contiguous(v);
    }
    case GemmScaleMode::kBlocks1x128: {
      PGK_ASSIGN_OR_RETURN(GPUArray full, BroadcastTo(s, {outer, kb}));
      PGK_ASSIGN_OR_RETURN(GPUArray t, MatrixTranspose(full));
      return Contiguous(t);
    }
    case GemmScaleMode::kBlocks128x128: {
      const int64_t ob = CeilDiv(outer, kBlock), kb4 = CeilDiv(kb, 4) * 4;
      PGK_ASSIGN_OR_RETURN(GPUArray full, BroadcastTo(s, {ob, kb}));
      if (kb4 == kb) return Contiguous(full);
      PGK_ASSIGN_OR_RETURN(GPUArray pad, Zeros({ob, kb4 - kb}, DType::Float32, scale.device()));
      return Concat({full, pad}, 1);
    }
  }
  return RuntimeError("scaled_matmul: unknown scale mode");
}

// The product on an 8-bit kernel family (cuBLASLt's FP8 matmul, or the sm90 kernels where
// forced), or NotImplementedError where it declines.
absl::StatusOr<GPUArray> FamilyProduct(const GPUArray& a_in, const GPUArray& b_in,
                                       const GPUArray& scale_a, const GPUArray& scale_b,
                                       const ScaleCover& ca, const ScaleCover& cb,
                                       const ScaledMatmulOptions& o) {
  const int64_t m = a_in.shape()[0], k = a_in.shape()[1], n = b_in.shape()[1];
  std::optional<GemmScaleMode> ma = ModeOf(ca, true, m, k), mb = ModeOf(cb, false, n, k);
  if (!ma.has_value() || !mb.has_value()) {
    return NotImplementedError("scaled_matmul: no kernel scale mode for these scales");
  }
  // One side per tensor and the other per row / column: both as vectors.
  if (*ma == GemmScaleMode::kTensor && *mb == GemmScaleMode::kOuter) ma = GemmScaleMode::kOuter;
  if (*mb == GemmScaleMode::kTensor && *ma == GemmScaleMode::kOuter) mb = GemmScaleMode::kOuter;
  // K-major operands: A row-major, B as the transpose of a row-major (N, K) matrix.
  PGK_ASSIGN_OR_RETURN(GPUArray a, Contiguous(a_in));
  PGK_ASSIGN_OR_RETURN(GPUArray bt_view, MatrixTranspose(b_in));
  PGK_ASSIGN_OR_RETURN(GPUArray bt, Contiguous(bt_view));
  PGK_ASSIGN_OR_RETURN(GPUArray sa, CublasLtScale(scale_a, ca, *ma, true, m, k));
  PGK_ASSIGN_OR_RETURN(GPUArray sb, CublasLtScale(scale_b, cb, *mb, false, n, k));
  std::optional<GPUArray> bias;
  if (o.bias.has_value()) {
    PGK_ASSIGN_OR_RETURN(GPUArray cast, AsType(*o.bias, o.out_dtype, false));
    PGK_ASSIGN_OR_RETURN(bias, Contiguous(cast));
  }
  PGK_ASSIGN_OR_RETURN(GPUArray d, Empty({m, n}, o.out_dtype, a.device()));
  PGK_ASSIGN_OR_RETURN(LaunchContext ctx,
                       LaunchContext::Open(kOp, {&a, &bt, &sa, &sb, &d, bias ? &*bias : nullptr}));
  GemmProblem p;
  p.in = a.dtype();
  p.in_b = bt.dtype();
  p.out = o.out_dtype;
  p.options.backend =
      o.backend == MatmulBackend::kSm90 ? MatmulBackend::kSm90 : MatmulBackend::kCublasLt;
  p.m = m;
  p.n = n;
  p.k = k;
  p.a = {a.data(), 0, k, 1};
  p.b = {bt.data(), 0, 1, k};
  p.d = d.data();
  p.d_batch = m * n;
  p.d_row = n;
  if (bias.has_value()) p.bias = bias->data();
  p.act = o.activation == Activation::kRelu       ? kernels::kActRelu
          : o.activation == Activation::kGelu     ? kernels::kActGelu
          : o.activation == Activation::kSilu     ? kernels::kActSilu
          : o.activation == Activation::kGeluTanh ? kernels::kActGeluTanh
                                                  : kernels::kActNone;
  p.scale_a = {static_cast<const float*>(sa.data()), *ma};
  p.scale_b = {static_cast<const float*>(sb.data()), *mb};
  PGK_RETURN_IF_ERROR(LaunchGemm(ctx, p));
  return d;
}

}  // namespace

absl::StatusOr<GPUArray> ScaledMatmul(const GPUArray& a, const GPUArray& b, const GPUArray& scale_a,
                                      const GPUArray& scale_b, const ScaledMatmulOptions& o) {
  for (const GPUArray* x : {&b, &scale_a, &scale_b}) {
    if (x->device() != a.device()) {
      return ValueError(absl::StrCat(kOp, ": operands are on different devices (",
                                     a.device().ToString(), " and ", x->device().ToString(), ")"));
    }
  }
  if (o.bias.has_value() && o.bias->device() != a.device()) {
    return ValueError(absl::StrCat(kOp, ": bias is on ", o.bias->device().ToString(),
                                   ", the operands on ", a.device().ToString()));
  }
  if (!IsFloat8(a.dtype()) || !IsFloat8(b.dtype())) {
    return TypeError(absl::StrCat(kOp, ": a and b must be float8_e4m3fn or float8_e5m2, got ",
                                  DTypeName(a.dtype()), " and ", DTypeName(b.dtype())));
  }
  if (a.ndim() != 2 || b.ndim() != 2) {
    return ValueError(absl::StrCat(kOp, ": a and b must be 2-D, got shapes ",
                                   ShapeToString(a.shape()), " and ", ShapeToString(b.shape())));
  }
  if (a.shape()[1] != b.shape()[0]) {
    return ValueError(absl::StrCat(kOp, ": shapes ", ShapeToString(a.shape()), " and ",
                                   ShapeToString(b.shape()), " are not aligned (K ", a.shape()[1],
                                   " and ", b.shape()[0], " differ)"));
  }
  for (const auto& [s, name] : {std::pair{&scale_a, "scale_a"}, std::pair{&scale_b, "scale_b"}}) {
    if (s->dtype() != DType::Float32) {
      return TypeError(
          absl::StrCat(kOp, ": ", name, " must be float32, got ", DTypeName(s->dtype())));
    }
  }
  if (o.out_dtype != DType::BFloat16 && o.out_dtype != DType::Float16 &&
      o.out_dtype != DType::Float32) {
    return TypeError(absl::StrCat(kOp, ": out_dtype must be bfloat16, float16 or float32, got ",
                                  DTypeName(o.out_dtype)));
  }
  const int64_t n = b.shape()[1];
  if (o.bias.has_value()) {
    if (o.bias->ndim() != 1 || o.bias->shape()[0] != n) {
      return ValueError(absl::StrCat(kOp, ": bias must be 1-D of length N = ", n, ", got shape ",
                                     ShapeToString(o.bias->shape())));
    }
    if (!IsFloating(o.bias->dtype())) {
      return TypeError(absl::StrCat(kOp, ": bias must be a real floating array, got ",
                                    DTypeName(o.bias->dtype())));
    }
  }
  PGK_ASSIGN_OR_RETURN(ScaleCover ca, CoverOf(scale_a, "scale_a", a, "a", true));
  PGK_ASSIGN_OR_RETURN(ScaleCover cb, CoverOf(scale_b, "scale_b", b, "b", false));
  const int64_t m = a.shape()[0], k = a.shape()[1];
  const bool forced = o.backend != MatmulBackend::kAuto;
  if (forced && (o.backend != MatmulBackend::kCublasLt && o.backend != MatmulBackend::kSm90)) {
    return NotImplementedError(
        absl::StrCat(kOp, ": backend must be 'auto', 'cublaslt' or 'sm90' (8-bit kernels)"));
  }
  if (forced && !a.device().is_cuda()) {
    return NotImplementedError(
        absl::StrCat(kOp, ": backend='", o.backend == MatmulBackend::kSm90 ? "sm90" : "cublaslt",
                     "' runs on CUDA devices only, not ", a.device().ToString()));
  }
  if (a.device().is_cuda() && m > 0 && n > 0 && k > 0) {
    absl::StatusOr<GPUArray> d = FamilyProduct(a, b, scale_a, scale_b, ca, cb, o);
    if (forced || !absl::IsUnimplemented(d.status())) return d;
  }
  return DequantizedProduct(a, b, scale_a, scale_b, ca, cb, o);
}

}  // namespace pygpukit::ops

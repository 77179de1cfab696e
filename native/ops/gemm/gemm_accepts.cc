#include "ops/gemm/gemm_accepts.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "runtime/embedded_kernels.h"

namespace pygpukit::ops {
namespace {

bool IsHalf(DType t) { return t == DType::Float16 || t == DType::BFloat16; }

// ---- sm90 (TMA + wgmma) ----

absl::Status Sm90ProblemCore(const GemmProblem& g, const kernels::GemmParams& p) {
  if (IsFloat8(g.in) || IsFloat8(g.b_dtype())) {
    if (g.in != DType::Float8E4M3Fn || g.b_dtype() != DType::Float8E4M3Fn) {
      return NotImplementedError(
          absl::StrCat("scaled_matmul: sm90 kernels take float8_e4m3fn operands, not ",
                       DTypeName(g.in), " and ", DTypeName(g.b_dtype())));
    }
    if (!g.scaled() || p.scale_kind_a < 0 || p.scale_kind_b < 0) {
      return NotImplementedError(
          "scaled_matmul: sm90 kernels take one scale per operand or per row of a / column of b "
          "(block scales run on cuBLASLt)");
    }
    if (p.a_col != 1 || p.b_row != 1) {
      return NotImplementedError(
          "scaled_matmul: sm90 kernels need K-major a and b (a row-major, b the transpose of a "
          "row-major (N, K) matrix)");
    }
    if (g.out != DType::BFloat16 && g.out != DType::Float16 && g.out != DType::Float32) {
      return NotImplementedError(
          absl::StrCat("scaled_matmul: sm90 kernels write bfloat16, float16 or float32, not ",
                       DTypeName(g.out)));
    }
  } else if (g.in == DType::Float32) {
    if (!g.tf32()) {
      return NotImplementedError(
          "matmul: sm90 kernels take float32 only as TF32 (precision=\"tf32\")");
    }
    if (g.out != DType::Float32) {
      return NotImplementedError(
          absl::StrCat("matmul: sm90 tf32 kernels write float32, not ", DTypeName(g.out)));
    }
  } else if (!IsHalf(g.in)) {
    return NotImplementedError(absl::StrCat(
        "matmul: sm90 kernels take bfloat16, float16 or float32 (as tf32), not ", DTypeName(g.in)));
  }
  if (g.out != g.in && g.out != DType::Float32 && !IsFloat8(g.in)) {
    return NotImplementedError(absl::StrCat("matmul: sm90 kernels write ", DTypeName(g.in),
                                            " or float32, not ", DTypeName(g.out)));
  }
  if (p.k <= 0 || p.m <= 0 || p.n <= 0 || p.batch <= 0) {
    return NotImplementedError("matmul: sm90 kernels need non-empty operands");
  }
  if (p.m > INT32_MAX || p.n > INT32_MAX || p.k > INT32_MAX || p.batch > INT32_MAX) {
    return NotImplementedError("matmul: sm90 kernels index dims with 32-bit TMA coordinates");
  }
  return Sm90Operands(p, Sm90ElemBytes(g.in)).status();
}

// The reason the sm90 kernels decline a problem, with the problem it was (messages name shapes).
absl::Status Sm90Problem(const GemmProblem& g) {
  const kernels::GemmParams p = ParamsOf(g);
  absl::Status st = Sm90ProblemCore(g, p);
  if (st.ok()) return st;
  return NotImplementedError(absl::StrCat(st.message(), " (", DTypeName(g.in), " batch ", p.batch,
                                          ", m ", p.m, ", n ", p.n, ", k ", p.k,
                                          "; element strides A (", p.a_row, ", ", p.a_col, "), B (",
                                          p.b_row, ", ", p.b_col, "))"));
}

absl::Status Sm90Accepts(const GemmProblem& p, const GemmTarget& t) {
  PGK_RETURN_IF_ERROR(Sm90Problem(p));
  if (!t.sm90a_built) {
    return NotImplementedError(absl::StrCat(
        "matmul: sm90 kernels need an sm_90a build (this one has ", EmbeddedKernelArchs(), ")"));
  }
  if (t.sm_major != 9) {
    return NotImplementedError(
        absl::StrCat("matmul: sm90 kernels need a compute capability 9.x GPU, this is ", t.sm_major,
                     ".", t.sm_minor));
  }
  return absl::OkStatus();
}

// ---- sm80 (mma.sync) ----

std::string ShapeText(const kernels::GemmParams& p) {
  return absl::StrCat("(batch ", p.batch, ", m ", p.m, ", n ", p.n, ", k ", p.k, ")");
}

bool Aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

absl::Status Sm80Accepts(const GemmProblem& p, const GemmTarget& t) {
  PGK_RETURN_IF_ERROR(Sm80Normalize(p).status());
  if (t.sm_major < 8) {
    return NotImplementedError(
        absl::StrCat("matmul: sm80 kernels need compute capability 8.0 or newer; device has ",
                     t.sm_major, ".", t.sm_minor));
  }
  return absl::OkStatus();
}

// ---- simt (CUDA cores) ----

absl::Status SimtAccepts(const GemmProblem& p) {
  if (p.in != p.out || (p.in != DType::Float32 && p.in != DType::Float64)) {
    return NotImplementedError(absl::StrCat(
        "matmul: the CUDA-core GEMM kernels take float32 or float64 operands with an output of "
        "the same dtype, got ",
        DTypeName(p.in), " operands and a ", DTypeName(p.out), " output"));
  }
  // The kernels walk k with 32-bit slice counters and batches over grid y and z (the tile
  // count's limit is checked at launch, where the tile is picked).
  constexpr int64_t kMaxGridYZ = 65535;
  if (p.k > std::numeric_limits<int32_t>::max() || p.batch > kMaxGridYZ * kMaxGridYZ) {
    return NotImplementedError(absl::StrCat("matmul: GEMM of m=", p.m, " n=", p.n, " k=", p.k,
                                            " batch=", p.batch,
                                            " exceeds the CUDA-core kernels' launch limits"));
  }
  return absl::OkStatus();
}

// ---- cuBLASLt ----

bool IsBlocks(GemmScaleMode m) {
  return m == GemmScaleMode::kBlocks1x128 || m == GemmScaleMode::kBlocks128x128;
}

// Scaled 8-bit float products (cuBLASLt's FP8 matmul): "TN" operands (A row-major, B a
// transposed row-major matrix, K contiguous in both, 16-byte aligned, K and N multiples of 16),
// one matrix, alpha 1 and no C; per-tensor scales on SM 8.9+, per-row / per-column and block
// scales (1x128 with 128x128 or 1x128, both e4m3fn) on SM 9.x; a bias in a 16-bit output's
// dtype, ReLU or GELU's tanh form.
absl::Status CublasLtScaledAccepts(const GemmProblem& p, const GemmTarget& t) {
  auto no = [&](absl::string_view why) {
    return NotImplementedError(absl::StrCat("scaled_matmul: cuBLASLt's FP8 matmul ", why, " (",
                                            DTypeName(p.in), " @ ", DTypeName(p.b_dtype()), ", m ",
                                            p.m, ", n ", p.n, ", k ", p.k, ")"));
  };
  const int sm = t.sm_major * 10 + t.sm_minor;
  if (sm < 89) return no("needs compute capability 8.9 or newer");
  if (!IsFloat8(p.in) || !IsFloat8(p.b_dtype())) return no("takes 8-bit floats");
  if (p.in == DType::Float8E5M2 && p.b_dtype() == DType::Float8E5M2) {
    return no("has no e5m2 x e5m2 product");
  }
  if (p.out != DType::BFloat16 && p.out != DType::Float16 && p.out != DType::Float32) {
    return no("writes bfloat16, float16 or float32");
  }
  const GemmScaleMode ma = p.scale_a.mode, mb = p.scale_b.mode;
  const bool blocks = IsBlocks(ma) || IsBlocks(mb);
  if (ma != mb && !blocks) return no("scales both operands per tensor or both per row / column");
  if (blocks) {
    const bool pair = (ma == GemmScaleMode::kBlocks1x128 && IsBlocks(mb)) ||
                      (mb == GemmScaleMode::kBlocks1x128 && IsBlocks(ma));
    if (!pair) return no("pairs block scales as 1x128 with 1x128 or 128x128");
    if (p.in != DType::Float8E4M3Fn || p.b_dtype() != DType::Float8E4M3Fn) {
      return no("takes block scales with e4m3fn operands only");
    }
  }
  if ((blocks || ma == GemmScaleMode::kOuter) && t.sm_major != 9) {
    return no("has per-row and block scales on SM 9.x only");
  }
  if (p.batch != 1 || p.a.col != 1 || p.b.row != 1 || p.k % 16 != 0 || p.n % 16 != 0 ||
      !TuneKeyOf(p).aligned16) {
    return no("needs K-major, 16-byte aligned A and B with K and N multiples of 16");
  }
  if (p.alpha != 1.0 || (p.c.ptr != nullptr && p.beta != 0.0)) return no("has no alpha or C");
  if (p.bias != nullptr && (p.out == DType::Float32 || blocks)) {
    return no("adds a bias to 16-bit results of per-tensor or per-row scales only");
  }
  if (p.act != kernels::kActNone && p.act != kernels::kActRelu && p.act != kernels::kActGeluTanh) {
    return no("fuses ReLU and GELU's tanh form only");
  }
  return absl::OkStatus();
}

absl::Status CublasLtAccepts(const GemmProblem& p, const GemmTarget& t) {
  if (p.scaled()) return CublasLtScaledAccepts(p, t);
  switch (p.in) {
    case DType::Float16:
    case DType::BFloat16:
    case DType::Float32:
    case DType::Float64:
    case DType::Complex64:
    case DType::Complex128:
      break;
    default:
      return NotImplementedError(absl::StrCat("matmul: unsupported dtype ", DTypeName(p.in)));
  }
  const absl::Status unfused =
      NotImplementedError("matmul: the cuBLASLt path does not fuse this epilogue");
  // cuBLASLt writes the inputs' dtype, or float32 for 16-bit inputs (their scale type).
  if (p.out != p.in && !(p.out == DType::Float32 && IsHalf(p.in))) return unfused;
  if (p.plain()) return absl::OkStatus();
  // Its own epilogues (real 16- and 32-bit inputs, 16-byte aligned operands): alpha, beta * C
  // with C laid out like a row-major matrix, a bias over N shared by the batch, then ReLU or
  // GELU's tanh form.
  if (!IsHalf(p.in) && p.in != DType::Float32) return unfused;
  if (p.act != kernels::kActNone && p.act != kernels::kActRelu && p.act != kernels::kActGeluTanh) {
    return unfused;
  }
  if (p.bias != nullptr && p.bias_batch != 0 && p.batch > 1) return unfused;
  // Unaligned operands take cuBLASLt kernels that round to the output dtype before the
  // epilogue (measured on H200: 16-bit results a few ulps off); aligned ones apply it in
  // float32 before one rounding, as our kernels do.
  if (!TuneKeyOf(p).aligned16) return unfused;
  if (p.c.ptr != nullptr && p.beta != 0.0) {
    const bool rows_ok = p.m == 1 || p.c.row >= std::max<int64_t>(p.n, 1);
    const bool batch_ok = p.batch == 1 || p.c.batch >= 0;
    if (p.c.col != 1 || !rows_ok || !batch_ok) return unfused;
  }
  return absl::OkStatus();
}

}  // namespace

bool TmaFriendly(const void* ptr, int64_t ld, int64_t batch_stride, int esize) {
  auto ok = [esize](int64_t s) {
    return s >= 0 && (s * esize) % 16 == 0 && s * esize < (int64_t{1} << 40);
  };
  return reinterpret_cast<uintptr_t>(ptr) % 16 == 0 && ld > 0 && ok(ld) && ok(batch_stride);
}

// Layouts: A K-major (a_col == 1) or M-major (a_row == 1); B K-major (b_row == 1) or N-major
// (b_col == 1). K-major wins when a dim of size 1 makes both true.
// TF32 (esize 4) reads K-major operands only.
absl::StatusOr<std::pair<Sm90Operand, Sm90Operand>> Sm90Operands(const kernels::GemmParams& p,
                                                                 int esize) {
  const bool a_kmajor = p.a_col == 1, b_kmajor = p.b_row == 1;
  if (esize == 4 && (!a_kmajor || !b_kmajor)) {
    return NotImplementedError(
        "matmul: sm90 tf32 kernels need K-major A and B (A row-major, B a transposed row-major "
        "matrix such as a linear layer's weight)");
  }
  if (!a_kmajor && p.a_row != 1) {
    return NotImplementedError("matmul: sm90 kernels need A with a unit stride");
  }
  if (!b_kmajor && p.b_col != 1) {
    return NotImplementedError("matmul: sm90 kernels need B with a unit stride");
  }
  Sm90Operand a = a_kmajor ? Sm90Operand{p.a, p.k, p.m, p.a_row, p.a_batch, p.batch, true, esize}
                           : Sm90Operand{p.a, p.m, p.k, p.a_col, p.a_batch, p.batch, false, esize};
  // A grouped product's B holds one matrix per group (its batch dim); A and D have one.
  const int64_t b_count = p.groups > 0 ? p.groups : p.batch;
  Sm90Operand b = b_kmajor ? Sm90Operand{p.b, p.k, p.n, p.b_col, p.b_batch, b_count, true, esize}
                           : Sm90Operand{p.b, p.n, p.k, p.b_row, p.b_batch, b_count, false, esize};
  if (!TmaFriendly(a.ptr, a.ld, a.batch_stride, esize) ||
      !TmaFriendly(b.ptr, b.ld, b.batch_stride, esize)) {
    return NotImplementedError(
        "matmul: sm90 kernels need 16-byte aligned operands with leading dimensions and batch "
        "strides that are multiples of 16 bytes");
  }
  return std::make_pair(a, b);
}

absl::StatusOr<Sm80Operands> Sm80Normalize(const GemmProblem& g) {
  const bool half = IsHalf(g.in);
  if (!half && !g.tf32()) {
    return NotImplementedError(absl::StrCat(
        "matmul: sm80 kernels need float16 or bfloat16 inputs, or float32 with tf32 allowed; got ",
        DTypeName(g.in), g.in == DType::Float32 ? " without tf32" : ""));
  }
  if (g.out != g.in && !(half && g.out == DType::Float32)) {
    return NotImplementedError(absl::StrCat("matmul: sm80 kernels need the output dtype to be ",
                                            DTypeName(g.in), half ? " or float32" : "", "; got ",
                                            DTypeName(g.out)));
  }
  kernels::GemmParams p = ParamsOf(g);
  if (p.m <= 0 || p.n <= 0 || p.batch <= 0) return Sm80Operands{p, "tn"};  // empty output
  if (p.k < 0 || p.k > std::numeric_limits<int32_t>::max()) {
    return NotImplementedError(
        absl::StrCat("matmul: sm80 kernels need 0 <= k < 2^31; got ", ShapeText(p)));
  }
  // A stride multiplies only index 0 of a size-1 dimension, so it can be anything there; zero
  // (or one for the unit-stride side) lets such operands pass the checks below.
  if (p.batch == 1) p.a_batch = p.b_batch = p.c_batch = p.d_batch = p.bias_batch = 0;
  if (p.m == 1) p.a_row = 0;
  if (p.k <= 1) p.a_col = 1;
  if (p.a_col != 1) {
    return NotImplementedError(
        absl::StrCat("matmul: sm80 kernels need a row-major A (unit column stride); got strides (",
                     p.a_row, ", ", p.a_col, ")"));
  }
  // Each cp.async moves 16 bytes, so bases, leading strides and batch strides must keep every
  // row start 16-byte aligned.
  const int64_t elems = 16 / ItemSize(g.in);
  auto multiple = [elems](int64_t stride) { return stride % elems == 0; };
  if (!Aligned16(p.a) || !Aligned16(p.b) || !multiple(p.a_row) || !multiple(p.a_batch) ||
      !multiple(p.b_batch)) {
    return NotImplementedError(absl::StrCat(
        "matmul: sm80 kernels need 16-byte aligned A and B with row and batch strides that are "
        "multiples of ",
        elems, " elements; got A strides (", p.a_batch, ", ", p.a_row, ", ", p.a_col,
        "), B strides (", p.b_batch, ", ", p.b_row, ", ", p.b_col, ")"));
  }
  // "tn": B^T row-major (unit K stride), leading stride b_col; "tt": B row-major, leading b_row.
  const int64_t tn_ld = p.n == 1 ? 0 : p.b_col;
  const int64_t tt_ld = p.k <= 1 ? 0 : p.b_row;
  const char* layout;
  if ((p.b_row == 1 || p.k <= 1) && multiple(tn_ld)) {
    layout = "tn";
    p.b_row = 1;
    p.b_col = tn_ld;
  } else if ((p.b_col == 1 || p.n == 1) && multiple(tt_ld)) {
    layout = "tt";
    p.b_row = tt_ld;
    p.b_col = 1;
  } else {
    return NotImplementedError(absl::StrCat(
        "matmul: sm80 kernels need B with a unit stride along k or n and the other stride a "
        "multiple of ",
        elems, " elements; got B strides (", p.b_row, ", ", p.b_col, ")"));
  }
  return Sm80Operands{p, layout};
}

absl::Status GemmAccepts(GemmFamily family, const GemmProblem& p, const GemmTarget& t) {
  if (p.grouped()) {
    if (family != GemmFamily::kSm90) {
      return NotImplementedError(
          absl::StrCat("grouped_matmul: one launch over all groups runs on "
                       "the sm90 kernels only, not ",
                       GemmFamilyName(family)));
    }
    // The kernel reads a tile's group as its batch index: A, D and C must be one matrix each.
    if (p.batch != 1 || p.scaled() || p.groups > INT32_MAX || p.a.batch != 0 || p.d_batch != 0 ||
        p.c.batch != 0) {
      return NotImplementedError(
          "grouped_matmul: the sm90 grouped launch takes one batch of unscaled 16-bit or TF32 "
          "operands, A, D and C without a batch stride");
    }
  }
  switch (family) {
    case GemmFamily::kSm90:
      return Sm90Accepts(p, t);
    case GemmFamily::kSm80:
      return Sm80Accepts(p, t);
    case GemmFamily::kSimt:
      return SimtAccepts(p);
    case GemmFamily::kCublasLt:
      return CublasLtAccepts(p, t);
  }
  return NotImplementedError("matmul: unknown kernel family");
}

bool GemmPreemptibleAccepts(const GemmProblem& p, const GemmTarget& t) {
  const MatmulBackend b = p.options.backend;
  return (b == MatmulBackend::kAuto || b == MatmulBackend::kSm90) && !t.partitioned &&
         !p.grouped() && IsHalf(p.in) && Sm90Accepts(p, t).ok();
}

}  // namespace pygpukit::ops

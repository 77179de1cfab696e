// GEMM on CUDA through cuBLASLt (loaded at run time). Row-major D = A @ B is issued as the
// column-major product D^T = B^T A^T. The op layer guarantees each operand has a unit stride in
// one of its two matrix dims (else it makes a copy) and that D is C-contiguous.
#include <map>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "core/cuda/cublaslt_api.h"
#include "core/cuda/cuda_backend.h"
#include "core/status.h"
#include "ops/gemm/cuda/gemm_cuda.h"
#include "ops/gemm/gemm_accepts.h"
#include "ops/gemm/gemm_launch.h"
#include "runtime/runtime.h"

namespace pygpukit::ops::cuda_kernels {
namespace {

using cuda::CublasStatus;

constexpr size_t kWorkspaceBytes = size_t{32} << 20;

struct TypeConfig {
  cudaDataType_t data;
  cudaDataType_t scale;
  cublasComputeType_t compute;
};

absl::StatusOr<TypeConfig> ConfigFor(DType dt, MatmulPrecision precision) {
  bool tf32 = precision == MatmulPrecision::kTF32;
  switch (dt) {
    case DType::Float16:
      return TypeConfig{CUDA_R_16F, CUDA_R_32F, CUBLAS_COMPUTE_32F};
    case DType::BFloat16:
      return TypeConfig{CUDA_R_16BF, CUDA_R_32F, CUBLAS_COMPUTE_32F};
    case DType::Float32:
      return TypeConfig{CUDA_R_32F, CUDA_R_32F,
                        tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F};
    case DType::Float64:
      return TypeConfig{CUDA_R_64F, CUDA_R_64F, CUBLAS_COMPUTE_64F};
    case DType::Complex64:
      return TypeConfig{CUDA_C_32F, CUDA_C_32F,
                        tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F};
    case DType::Complex128:
      return TypeConfig{CUDA_C_64F, CUDA_C_64F, CUBLAS_COMPUTE_64F};
    default:
      return TypeError(absl::StrCat("matmul: unsupported dtype ", DTypeName(dt)));
  }
}

cudaDataType_t Float8Type(DType dt) {
  return dt == DType::Float8E4M3Fn ? CUDA_R_8F_E4M3 : CUDA_R_8F_E5M2;
}

cudaDataType_t OutputType(DType dt) {
  return dt == DType::BFloat16 ? CUDA_R_16BF : dt == DType::Float16 ? CUDA_R_16F : CUDA_R_32F;
}

cublasLtMatmulMatrixScale_t ScaleModeOf(GemmScaleMode m) {
  switch (m) {
    case GemmScaleMode::kOuter:
      return CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F;
    case GemmScaleMode::kBlocks1x128:
      return CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F;
    case GemmScaleMode::kBlocks128x128:
      return CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F;
    case GemmScaleMode::kTensor:
      break;
  }
  return CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F;
}

absl::StatusOr<cublasLtHandle_t> HandleFor(const cuda::CublasLtApi* lt, int device) {
  static std::mutex mu;
  static std::map<int, cublasLtHandle_t> handles;  // process lifetime
  std::lock_guard<std::mutex> l(mu);
  if (auto it = handles.find(device); it != handles.end()) return it->second;
  cublasLtHandle_t h = nullptr;
  PGK_RETURN_IF_ERROR(CublasStatus(lt->cublasLtCreate(&h), "matmul: cublasLtCreate"));
  handles.emplace(device, h);
  return h;
}

// RAII owners of the cuBLASLt descriptors of one call.
struct Descriptors {
  const cuda::CublasLtApi* lt;
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatrixLayout_t addend = nullptr;  // the input C of beta * C (D's layout when none)
  cublasLtMatmulPreference_t pref = nullptr;
  ~Descriptors() {
    if (pref) lt->cublasLtMatmulPreferenceDestroy(pref);
    if (addend) lt->cublasLtMatrixLayoutDestroy(addend);
    if (c) lt->cublasLtMatrixLayoutDestroy(c);
    if (b) lt->cublasLtMatrixLayoutDestroy(b);
    if (a) lt->cublasLtMatrixLayoutDestroy(a);
    if (op) lt->cublasLtMatmulDescDestroy(op);
  }
};

// Column-major layout of one operand: (rows x cols, ld) plus whether it needs a transpose to
// serve as the wanted (want_rows x want_cols) matrix. `row`/`col` are the operand's element
// strides for the wanted orientation.
absl::Status MakeLayout(const cuda::CublasLtApi* lt, cudaDataType_t type, int64_t want_rows,
                        int64_t want_cols, int64_t row_stride, int64_t col_stride, int64_t batch,
                        int64_t batch_stride, cublasLtMatrixLayout_t* out, cublasOperation_t* op) {
  uint64_t rows, cols;
  int64_t ld;
  if (row_stride == 1) {  // column-major already
    rows = want_rows;
    cols = want_cols;
    ld = col_stride;
    *op = CUBLAS_OP_N;
  } else if (col_stride == 1) {  // row-major: its transpose is column-major
    rows = want_cols;
    cols = want_rows;
    ld = row_stride;
    *op = CUBLAS_OP_T;
  } else {
    return RuntimeError("matmul: operand without a unit stride reached cuBLASLt");
  }
  ld = std::max<int64_t>({ld, static_cast<int64_t>(rows), 1});
  PGK_RETURN_IF_ERROR(CublasStatus(lt->cublasLtMatrixLayoutCreate(out, type, rows, cols, ld),
                                   "matmul: cublasLtMatrixLayoutCreate"));
  if (batch > 1) {
    int32_t count = static_cast<int32_t>(batch);
    PGK_RETURN_IF_ERROR(
        CublasStatus(lt->cublasLtMatrixLayoutSetAttribute(*out, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                                                          &count, sizeof(count)),
                     "matmul: batch count"));
    PGK_RETURN_IF_ERROR(CublasStatus(
        lt->cublasLtMatrixLayoutSetAttribute(*out, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                             &batch_stride, sizeof(batch_stride)),
        "matmul: batch stride"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status GemmCublasLt(LaunchContext& ctx, const GemmProblem& p) {
  hal::Stream& s = ctx.stream();
  const Device device = ctx.device();
  // Scaled products' rules depend on the arch; the others' do not.
  GemmTarget target;
  if (p.scaled()) {
    PGK_ASSIGN_OR_RETURN(target, GemmTargetOf(ctx));
  }
  PGK_RETURN_IF_ERROR(GemmAccepts(GemmFamily::kCublasLt, p, target));
  PGK_ASSIGN_OR_RETURN(const cuda::CublasLtApi* lt, cuda::LoadCublasLt());
  TypeConfig cfg{}, cfg_b{};
  if (p.scaled()) {
    cfg = {Float8Type(p.in), CUDA_R_32F, CUBLAS_COMPUTE_32F};
    cfg_b = {Float8Type(p.b_dtype()), CUDA_R_32F, CUBLAS_COMPUTE_32F};
  } else {
    PGK_ASSIGN_OR_RETURN(cfg, ConfigFor(p.in, p.options.precision));
    cfg_b = cfg;
  }
  const cudaDataType_t out_type = p.scaled()      ? OutputType(p.out)
                                  : p.out == p.in ? cfg.data
                                                  : CUDA_R_32F;
  Runtime& rt = Runtime::Get();
  PGK_RETURN_IF_ERROR(rt.cuda_backend()->MakeCurrent(device.index));
  PGK_ASSIGN_OR_RETURN(cublasLtHandle_t handle, HandleFor(lt, device.index));
  if (p.batch > INT32_MAX) return ValueError("matmul: batch count exceeds 2^31-1");

  Descriptors d{lt};
  PGK_RETURN_IF_ERROR(CublasStatus(lt->cublasLtMatmulDescCreate(&d.op, cfg.compute, cfg.scale),
                                   "matmul: cublasLtMatmulDescCreate"));
  // Column-major problem: C^T (n x m) = B^T (n x k) * A^T (k x m).
  cublasOperation_t op_first, op_second, op_c;
  PGK_RETURN_IF_ERROR(
      MakeLayout(lt, cfg_b.data, p.n, p.k, p.b.col, p.b.row, p.batch, p.b.batch, &d.b, &op_first));
  PGK_RETURN_IF_ERROR(
      MakeLayout(lt, cfg.data, p.k, p.m, p.a.col, p.a.row, p.batch, p.a.batch, &d.a, &op_second));
  PGK_RETURN_IF_ERROR(
      MakeLayout(lt, out_type, p.n, p.m, 1, p.d_row, p.batch, p.d_batch, &d.c, &op_c));
  if (op_c != CUBLAS_OP_N) return RuntimeError("matmul: output must be C-contiguous");
  PGK_RETURN_IF_ERROR(
      CublasStatus(lt->cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_TRANSA, &op_first,
                                                      sizeof(op_first)),
                   "matmul: transa"));
  PGK_RETURN_IF_ERROR(
      CublasStatus(lt->cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_TRANSB, &op_second,
                                                      sizeof(op_second)),
                   "matmul: transb"));
  if (p.scaled()) {
    // cuBLASLt's A is our B (and its M our N): B's scale is its A scale, A's its B scale.
    const struct {
      cublasLtMatmulDescAttributes_t ptr_attr, mode_attr;
      const GemmScale& scale;
    } scales[] = {
        {CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, p.scale_b},
        {CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, p.scale_a},
    };
    for (const auto& sc : scales) {
      PGK_RETURN_IF_ERROR(CublasStatus(lt->cublasLtMatmulDescSetAttribute(
                                           d.op, sc.ptr_attr, &sc.scale.ptr, sizeof(sc.scale.ptr)),
                                       "scaled_matmul: scale pointer"));
      const cublasLtMatmulMatrixScale_t mode = ScaleModeOf(sc.scale.mode);
      if (mode != CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F) {
        PGK_RETURN_IF_ERROR(CublasStatus(
            lt->cublasLtMatmulDescSetAttribute(d.op, sc.mode_attr, &mode, sizeof(mode)),
            "scaled_matmul: scale mode"));
      }
    }
    if (p.bias != nullptr) {
      PGK_RETURN_IF_ERROR(
          CublasStatus(lt->cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE,
                                                          &out_type, sizeof(out_type)),
                       "scaled_matmul: bias dtype"));
    }
  }
  // The epilogue (GemmAccepts admits only what cuBLASLt has): the bias over N is a bias over
  // the rows of the column-major D^T; ReLU or GELU's tanh form after it.
  const bool has_c = p.c.ptr != nullptr && p.beta != 0.0;
  if (has_c) {
    cublasOperation_t op_addend;
    PGK_RETURN_IF_ERROR(MakeLayout(lt, out_type, p.n, p.m, p.c.col, p.c.row, p.batch, p.c.batch,
                                   &d.addend, &op_addend));
    if (op_addend != CUBLAS_OP_N) return RuntimeError("matmul: C must be row-major for cuBLASLt");
  }
  if (p.bias != nullptr || p.act != kernels::kActNone) {
    const bool bias = p.bias != nullptr;
    cublasLtEpilogue_t epilogue = bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
    if (p.act == kernels::kActRelu) {
      epilogue = bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU;
    } else if (p.act == kernels::kActGeluTanh) {
      epilogue = bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU;
    }
    PGK_RETURN_IF_ERROR(
        CublasStatus(lt->cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_EPILOGUE,
                                                        &epilogue, sizeof(epilogue)),
                     "matmul: epilogue"));
    if (bias) {
      PGK_RETURN_IF_ERROR(
          CublasStatus(lt->cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                                          &p.bias, sizeof(p.bias)),
                       "matmul: bias pointer"));
    }
  }
  if (s.sm_count() > 0) {  // a partitioned stream: plan for the SMs it has
    const int32_t sms = s.sm_count();
    PGK_RETURN_IF_ERROR(
        CublasStatus(lt->cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET,
                                                        &sms, sizeof(sms)),
                     "matmul: SM count target"));
  }

  PGK_ASSIGN_OR_RETURN(MemoryPool * alloc, rt.pool(device));
  // The workspace is the runtime's transient scratch, not the caller's data: it is not charged
  // to the tenant's quota (a small quota would otherwise refuse every matmul).
  std::shared_ptr<Buffer> workspace;
  {
    QuotaScope uncharged(nullptr);
    PGK_ASSIGN_OR_RETURN(workspace, alloc->Allocate(kWorkspaceBytes, s));
  }
  size_t ws_bytes = workspace->size();
  PGK_RETURN_IF_ERROR(CublasStatus(lt->cublasLtMatmulPreferenceCreate(&d.pref),
                                   "matmul: cublasLtMatmulPreferenceCreate"));
  PGK_RETURN_IF_ERROR(CublasStatus(
      lt->cublasLtMatmulPreferenceSetAttribute(d.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                               &ws_bytes, sizeof(ws_bytes)),
      "matmul: workspace preference"));
  cublasLtMatmulHeuristicResult_t heuristic{};
  int found = 0;
  PGK_RETURN_IF_ERROR(CublasStatus(
      lt->cublasLtMatmulAlgoGetHeuristic(handle, d.op, d.b, d.a, has_c ? d.addend : d.c, d.c,
                                         d.pref, 1, &heuristic, &found),
      "matmul: cublasLtMatmulAlgoGetHeuristic"));
  if (found == 0) {
    return NotImplementedError(absl::StrCat("matmul: cuBLASLt has no algorithm for ",
                                            DTypeName(p.in), " (", p.m, "x", p.k, ") @ (", p.k, "x",
                                            p.n, ")"));
  }
  // alpha and beta in the scale type (complex scale types take (alpha, 0); only plain products,
  // alpha 1 and beta 0, reach cuBLASLt with complex or float64 scales).
  const double beta_value = has_c ? p.beta : 0.0;
  double alpha64[2] = {p.alpha, 0.0}, beta64[2] = {beta_value, 0.0};
  float alpha32[2] = {static_cast<float>(p.alpha), 0.0f};
  float beta32[2] = {static_cast<float>(beta_value), 0.0f};
  bool dbl = cfg.scale == CUDA_R_64F || cfg.scale == CUDA_C_64F;
  const void* alpha = dbl ? static_cast<const void*>(alpha64) : alpha32;
  const void* beta = dbl ? static_cast<const void*>(beta64) : beta32;
  const void* addend = has_c ? p.c.ptr : p.d;
  auto stream = static_cast<cudaStream_t>(s.native_handle());
  return ctx.Library(
      "matmul_cublaslt",
      [&]() -> absl::Status {
        return CublasStatus(
            lt->cublasLtMatmul(handle, d.op, alpha, p.b.ptr, d.b, p.a.ptr, d.a, beta, addend,
                               has_c ? d.addend : d.c, p.d, d.c, &heuristic.algo, workspace->data(),
                               ws_bytes, stream),
            "matmul: cublasLtMatmul");
      },
      GemmCost(p));
}

}  // namespace pygpukit::ops::cuda_kernels

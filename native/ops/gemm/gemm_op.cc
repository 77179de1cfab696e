// matmul, gemm and linear: NumPy / Array API semantics (1-D operands promoted then squeezed,
// batch dims broadcast) over a backend GEMM with an optional fused epilogue. Operands are
// flattened to one batch stride when their layout allows and have a unit stride in one matrix dim
// (what every backend's kernels take); otherwise they are copied. The op builds one GemmProblem and
// hands it to LaunchGemm (gemm_launch.h), which decides how it runs.
#include <cmath>
#include <optional>

#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "ops/gemm/gemm_launch.h"
#include "ops/gemm/gemm_problem.h"
#include "ops/launch/launch_context.h"
#include "ops/ops.h"

namespace pygpukit::ops {
namespace {

struct Mat {
  GPUArray arr;  // batch dims + (rows, cols)
  int64_t batch_stride = 0, row = 0, col = 0;
};

// Single batch stride of `a`'s leading dims (already broadcast to `batch_shape`), if one exists.
std::optional<int64_t> BatchStride(const GPUArray& a, int nbatch) {
  int64_t stride = 0;
  bool have = false;
  for (int d = nbatch - 1; d >= 0; --d) {
    if (a.shape()[d] == 1) continue;
    int64_t inner = 1;
    for (int e = d + 1; e < nbatch; ++e) inner *= a.shape()[e];
    int64_t s = a.strides()[d];
    if (!have) {  // innermost non-unit dim: every dim inside it has size 1, so inner == 1
      stride = s;
      have = true;
    } else if (s != stride * inner) {
      return std::nullopt;
    }
  }
  return stride;
}

// True when the matrix dims suit cuBLASLt: one unit stride, the other a valid leading dim.
bool BlasFriendly(int64_t rows, int64_t cols, int64_t row, int64_t col) {
  return (col == 1 && row >= std::max<int64_t>(cols, 1)) ||
         (row == 1 && col >= std::max<int64_t>(rows, 1));
}

absl::StatusOr<Mat> Prepare(GPUArray a, int nbatch, bool need_blas_layout) {
  auto read = [&](const GPUArray& x, Mat& m) -> bool {
    int64_t rows = x.shape()[nbatch], cols = x.shape()[nbatch + 1];
    m.row = x.strides()[nbatch];
    m.col = x.strides()[nbatch + 1];
    // Strides of size-1 dims are arbitrary; give them values every backend accepts.
    if (cols == 1) m.col = 1;
    if (rows == 1) m.row = std::max<int64_t>(cols, 1);
    auto bs = BatchStride(x, nbatch);
    if (!bs) return false;
    m.batch_stride = *bs;
    // cuBLASLt rejects negative batch offsets for some types (complex64 on SM90).
    if (need_blas_layout && m.batch_stride < 0) return false;
    return !need_blas_layout || BlasFriendly(rows, cols, m.row, m.col);
  };
  Mat m;
  m.arr = a;
  if (read(a, m)) return m;
  PGK_ASSIGN_OR_RETURN(m.arr, Copy(a));
  read(m.arr, m);
  return m;
}

std::string DTypesOf(const GPUArray& a, const GPUArray& b) {
  return a.dtype() == b.dtype()
             ? absl::StrCat("dtype ", DTypeName(a.dtype()))
             : absl::StrCat("dtypes ", DTypeName(a.dtype()), " and ", DTypeName(b.dtype()));
}

// The operands of one product after validation: promoted, 1-D ones made 2-D, batch dims
// broadcast.
struct Product {
  DType dtype;
  GPUArray a, b;  // batch + (m, k) and batch + (k, n)
  Shape batch;
  int64_t m, n, k;
  bool a1, b1;  // 1-D operands, whose dims the result drops
  Shape out_shape() const {
    Shape s = batch;
    s.insert(s.end(), {m, n});
    return s;
  }
  // The result's shape after dropping the dims of 1-D operands.
  Shape final_shape() const {
    Shape s = batch;
    if (!a1) s.push_back(m);
    if (!b1) s.push_back(n);
    return s;
  }
};

absl::StatusOr<Product> Align(const GPUArray& a_in, const GPUArray& b_in, absl::string_view op,
                              bool real_only) {
  if (a_in.device() != b_in.device()) {
    return ValueError(absl::StrCat(op, ": operands are on different devices (",
                                   a_in.device().ToString(), " and ", b_in.device().ToString(),
                                   ")"));
  }
  if (a_in.ndim() == 0 || b_in.ndim() == 0) {
    return ValueError(absl::StrCat(op, ": operands must have at least 1 dimension, got shapes ",
                                   ShapeToString(a_in.shape()), " and ",
                                   ShapeToString(b_in.shape())));
  }
  if (IsFloat8(a_in.dtype()) || IsFloat8(b_in.dtype())) {
    return TypeError(absl::StrCat(op, ": unsupported ", DTypesOf(a_in, b_in),
                                  ": 8-bit float products need scales and a wider result; use "
                                  "scaled_matmul, or astype first"));
  }
  Product p;
  p.dtype = PromoteTypes(a_in.dtype(), b_in.dtype());
  if (!IsInexact(p.dtype) || (real_only && IsComplex(p.dtype))) {
    return TypeError(absl::StrCat(op, ": unsupported ", DTypesOf(a_in, b_in), " (supported: ",
                                  real_only ? "float16, bfloat16, float32, float64"
                                            : "float16, bfloat16, float32, float64, complex64, "
                                              "complex128",
                                  ")"));
  }
  p.a1 = a_in.ndim() == 1;
  p.b1 = b_in.ndim() == 1;
  PGK_ASSIGN_OR_RETURN(GPUArray a, AsType(a_in, p.dtype, false));
  PGK_ASSIGN_OR_RETURN(GPUArray b, AsType(b_in, p.dtype, false));
  if (p.a1) {
    PGK_ASSIGN_OR_RETURN(a, Reshape(a, {1, a.shape()[0]}));
  }
  if (p.b1) {
    PGK_ASSIGN_OR_RETURN(b, Reshape(b, {b.shape()[0], 1}));
  }
  p.m = a.shape()[a.ndim() - 2];
  p.k = a.shape()[a.ndim() - 1];
  p.n = b.shape()[b.ndim() - 1];
  if (b.shape()[b.ndim() - 2] != p.k) {
    return ValueError(absl::StrCat(op, ": shapes ", ShapeToString(a_in.shape()), " and ",
                                   ShapeToString(b_in.shape()),
                                   " are not aligned (contracted dimensions ", p.k, " and ",
                                   b.shape()[b.ndim() - 2], " differ)"));
  }
  absl::Span<const int64_t> abatch(a.shape().data(), a.ndim() - 2);
  absl::Span<const int64_t> bbatch(b.shape().data(), b.ndim() - 2);
  auto batch_or = BroadcastShapes(abatch, bbatch, op);
  if (!batch_or.ok()) {
    return ValueError(absl::StrCat(op, ": batch dimensions of shapes ", ShapeToString(a_in.shape()),
                                   " and ", ShapeToString(b_in.shape()),
                                   " cannot be broadcast together"));
  }
  p.batch = *std::move(batch_or);
  Shape ashape = p.batch, bshape = p.batch;
  ashape.insert(ashape.end(), {p.m, p.k});
  bshape.insert(bshape.end(), {p.k, p.n});
  PGK_ASSIGN_OR_RETURN(p.a, BroadcastTo(a, ashape));
  PGK_ASSIGN_OR_RETURN(p.b, BroadcastTo(b, bshape));
  return p;
}

// Runs `prod` into a new array of `out` dtype with the epilogue described by the remaining
// arguments (C and bias already validated and broadcast).
absl::StatusOr<GPUArray> RunProduct(const Product& prod, DType out, double alpha, double beta,
                                    const Mat* c, const GPUArray* bias, kernels::GemmActivation act,
                                    const MatmulOptions& options, absl::string_view op) {
  const Device device = prod.a.device();
  const Shape cshape = prod.out_shape();
  const int nb = static_cast<int>(prod.batch.size());
  const int64_t nbatch = NumElements(prod.batch);
  const bool trivial = alpha == 1.0 && beta == 0.0 && bias == nullptr && act == kernels::kActNone;
  GPUArray d;
  if (prod.k == 0 && trivial) {
    PGK_ASSIGN_OR_RETURN(d, Zeros(cshape, out, device));
    return d;
  }
  PGK_ASSIGN_OR_RETURN(d, Empty(cshape, out, device));
  if (prod.m == 0 || prod.n == 0 || nbatch == 0) return d;

  PGK_ASSIGN_OR_RETURN(Mat A, Prepare(prod.a, nb, true));
  PGK_ASSIGN_OR_RETURN(Mat B, Prepare(prod.b, nb, true));
  PGK_ASSIGN_OR_RETURN(LaunchContext ctx,
                       LaunchContext::Open(op, {&A.arr, &B.arr, &d, c ? &c->arr : nullptr, bias}));
  GemmProblem p;
  p.in = prod.dtype;
  p.out = out;
  p.options = options;
  p.batch = nbatch;
  p.m = prod.m;
  p.n = prod.n;
  p.k = prod.k;
  p.a = {A.arr.data(), A.batch_stride, A.row, A.col};
  p.b = {B.arr.data(), B.batch_stride, B.row, B.col};
  p.d = d.data();
  p.d_batch = prod.m * prod.n;
  p.d_row = prod.n;
  if (c != nullptr && beta != 0.0) p.c = {c->arr.data(), c->batch_stride, c->row, c->col};
  if (bias != nullptr) p.bias = bias->data();
  p.alpha = alpha;
  p.beta = beta;
  p.act = act;
  PGK_RETURN_IF_ERROR(LaunchGemm(ctx, p));
  return d;
}

kernels::GemmActivation ToKernel(Activation a) {
  switch (a) {
    case Activation::kRelu:
      return kernels::kActRelu;
    case Activation::kGelu:
      return kernels::kActGelu;
    case Activation::kSilu:
      return kernels::kActSilu;
    case Activation::kGeluTanh:
      return kernels::kActGeluTanh;
    case Activation::kNone:
      break;
  }
  return kernels::kActNone;
}

// A forced CUDA kernel family cannot serve arrays on the CPU: say so rather than ignore it.
absl::Status CheckBackend(const MatmulOptions& options, Device device, absl::string_view op) {
  if (options.backend == MatmulBackend::kAuto || !device.is_cpu()) return absl::OkStatus();
  const char* name = options.backend == MatmulBackend::kCublasLt ? "cublaslt"
                     : options.backend == MatmulBackend::kSm90   ? "sm90"
                     : options.backend == MatmulBackend::kSm80   ? "sm80"
                                                                 : "simt";
  return NotImplementedError(
      absl::StrCat(op, ": backend='", name, "' is a CUDA kernel family; arrays on ",
                   device.ToString(), " use the CPU kernel (backend='auto')"));
}

absl::StatusOr<GPUArray> GemmNamed(const GPUArray& a, const GPUArray& b, const GemmEpilogue& e,
                                   const MatmulOptions& options, absl::string_view op) {
  PGK_RETURN_IF_ERROR(CheckBackend(options, a.device(), op));
  PGK_ASSIGN_OR_RETURN(Product prod, Align(a, b, op, true));
  DType out = e.out_dtype.value_or(prod.dtype);
  const bool half = prod.dtype == DType::Float16 || prod.dtype == DType::BFloat16;
  if (out != prod.dtype && !(half && out == DType::Float32)) {
    return TypeError(absl::StrCat(op, ": out_dtype ", DTypeName(out), " is not supported for ",
                                  DTypeName(prod.dtype),
                                  " operands (the operands' dtype, or float32 for float16 / "
                                  "bfloat16)"));
  }
  if (!std::isfinite(e.alpha) || !std::isfinite(e.beta)) {
    return ValueError(
        absl::StrCat(op, ": alpha and beta must be finite, got ", e.alpha, " and ", e.beta));
  }
  if (e.beta != 0.0 && !e.c.has_value()) {
    return ValueError(absl::StrCat(op, ": beta = ", e.beta, " needs an input C"));
  }
  for (const auto* extra : {&e.c, &e.bias}) {
    if (extra->has_value() && IsComplex((*extra)->dtype())) {
      return TypeError(absl::StrCat(op, ": ", extra == &e.c ? "C" : "bias", " has dtype ",
                                    DTypeName((*extra)->dtype()),
                                    "; complex values are not supported"));
    }
  }
  const Shape cshape = prod.out_shape();
  std::optional<Mat> c;
  // C is validated whenever it is given; it is read only when beta != 0 (BLAS convention).
  if (e.c.has_value()) {
    if (e.c->device() != a.device()) {
      return ValueError(absl::StrCat(op, ": C is on ", e.c->device().ToString(),
                                     ", the operands on ", a.device().ToString()));
    }
    // C is given in the shape of the final result (1-D operands' dims dropped).
    const Shape final_shape = prod.final_shape();
    auto c_b = BroadcastTo(*e.c, final_shape);
    if (!c_b.ok()) {
      return ValueError(absl::StrCat(op, ": C of shape ", ShapeToString(e.c->shape()),
                                     " cannot be broadcast to the output shape ",
                                     ShapeToString(final_shape)));
    }
    if (e.beta != 0.0) {
      PGK_ASSIGN_OR_RETURN(GPUArray c_full, Reshape(*c_b, cshape));
      PGK_ASSIGN_OR_RETURN(GPUArray c_cast, AsType(c_full, out, false));
      PGK_ASSIGN_OR_RETURN(c, Prepare(c_cast, static_cast<int>(prod.batch.size()), false));
    }
  }
  std::optional<GPUArray> bias;
  if (e.bias.has_value()) {
    if (e.bias->device() != a.device()) {
      return ValueError(absl::StrCat(op, ": bias is on ", e.bias->device().ToString(),
                                     ", the operands on ", a.device().ToString()));
    }
    if (e.bias->ndim() != 1 || e.bias->shape()[0] != prod.n) {
      return ValueError(absl::StrCat(op, ": bias must be 1-D of length N = ", prod.n,
                                     ", got shape ", ShapeToString(e.bias->shape())));
    }
    PGK_ASSIGN_OR_RETURN(GPUArray cast, AsType(*e.bias, out, false));
    PGK_ASSIGN_OR_RETURN(bias, Contiguous(cast));
  }
  PGK_ASSIGN_OR_RETURN(
      GPUArray d, RunProduct(prod, out, e.alpha, e.beta, c ? &*c : nullptr, bias ? &*bias : nullptr,
                             ToKernel(e.activation), options, op));
  if (prod.a1 || prod.b1) return Reshape(d, prod.final_shape());
  return d;
}

}  // namespace

absl::StatusOr<GPUArray> Matmul(const GPUArray& a, const GPUArray& b,
                                const MatmulOptions& options) {
  PGK_RETURN_IF_ERROR(CheckBackend(options, a.device(), "matmul"));
  PGK_ASSIGN_OR_RETURN(Product prod, Align(a, b, "matmul", false));
  PGK_ASSIGN_OR_RETURN(GPUArray c, RunProduct(prod, prod.dtype, 1.0, 0.0, nullptr, nullptr,
                                              kernels::kActNone, options, "matmul"));
  if (prod.a1 || prod.b1) return Reshape(c, prod.final_shape());
  return c;
}

absl::StatusOr<GPUArray> Gemm(const GPUArray& a, const GPUArray& b, const GemmEpilogue& e,
                              const MatmulOptions& options) {
  return GemmNamed(a, b, e, options, "gemm");
}

absl::StatusOr<GPUArray> Linear(const GPUArray& x, const GPUArray& w,
                                const std::optional<GPUArray>& bias, Activation activation,
                                const MatmulOptions& options) {
  if (w.ndim() != 2) {
    return ValueError(
        absl::StrCat("linear: weight must be 2-D (out_features, in_features), got "
                     "shape ",
                     ShapeToString(w.shape())));
  }
  if (x.ndim() == 0) {
    return ValueError("linear: input must have at least 1 dimension, got a 0-d array");
  }
  if (x.shape().back() != w.shape()[1]) {
    return ValueError(absl::StrCat("linear: input shape ", ShapeToString(x.shape()),
                                   " does not end in in_features = ", w.shape()[1],
                                   " of weight shape ", ShapeToString(w.shape())));
  }
  if (bias.has_value() && (bias->ndim() != 1 || bias->shape()[0] != w.shape()[0])) {
    return ValueError(absl::StrCat("linear: bias must be 1-D of length out_features = ",
                                   w.shape()[0], ", got shape ", ShapeToString(bias->shape())));
  }
  PGK_ASSIGN_OR_RETURN(GPUArray wt, MatrixTranspose(w));
  GemmEpilogue e;
  e.bias = bias;
  e.activation = activation;
  // Leading dims of x fold into the rows of one 2-D product (when there are elements to fold).
  GPUArray x2 = x;
  const bool fold = x.ndim() > 2 && x.size() > 0;
  if (fold) {
    PGK_ASSIGN_OR_RETURN(x2, Reshape(x, {-1, x.shape().back()}));
  }
  PGK_ASSIGN_OR_RETURN(GPUArray y, GemmNamed(x2, wt, e, options, "linear"));
  if (fold) {
    Shape out(x.shape().begin(), x.shape().end() - 1);
    out.push_back(w.shape()[0]);
    return Reshape(y, out);
  }
  return y;
}

absl::StatusOr<GPUArray> GroupedMatmul(const GPUArray& a_in, const GPUArray& b_in,
                                       absl::Span<const int64_t> offsets,
                                       const MatmulOptions& options) {
  constexpr absl::string_view op = "grouped_matmul";
  PGK_RETURN_IF_ERROR(CheckBackend(options, a_in.device(), op));
  if (a_in.device() != b_in.device()) {
    return ValueError(absl::StrCat(op, ": operands are on different devices (",
                                   a_in.device().ToString(), " and ", b_in.device().ToString(),
                                   ")"));
  }
  if (a_in.ndim() != 2 || b_in.ndim() != 3) {
    return ValueError(absl::StrCat(op,
                                   ": a must be 2-D (rows, K) and b 3-D (groups, K, N), got "
                                   "shapes ",
                                   ShapeToString(a_in.shape()), " and ",
                                   ShapeToString(b_in.shape())));
  }
  const int64_t m = a_in.shape()[0], k = a_in.shape()[1];
  const int64_t groups = b_in.shape()[0], n = b_in.shape()[2];
  if (b_in.shape()[1] != k) {
    return ValueError(absl::StrCat(op, ": shapes ", ShapeToString(a_in.shape()), " and ",
                                   ShapeToString(b_in.shape()), " are not aligned (K ", k, " and ",
                                   b_in.shape()[1], " differ)"));
  }
  if (static_cast<int64_t>(offsets.size()) != groups) {
    return ValueError(absl::StrCat(op, ": ", offsets.size(), " offsets for ", groups,
                                   " groups (b of shape ", ShapeToString(b_in.shape()), ")"));
  }
  int64_t prev = 0;
  for (size_t g = 0; g < offsets.size(); ++g) {
    if (offsets[g] < prev || offsets[g] > m) {
      return ValueError(absl::StrCat(op, ": offsets must be non-decreasing group end rows in [0, ",
                                     m, "]; offsets[", g, "] = ", offsets[g], " after ", prev));
    }
    prev = offsets[g];
  }
  if (prev != m) {
    return ValueError(absl::StrCat(op, ": the groups cover rows [0, ", prev, ") of a, which has ",
                                   m, " rows (the last offset must be ", m, ")"));
  }
  const DType dtype = PromoteTypes(a_in.dtype(), b_in.dtype());
  if (!IsInexact(dtype) || IsFloat8(a_in.dtype()) || IsFloat8(b_in.dtype())) {
    return TypeError(absl::StrCat(op, ": unsupported ", DTypesOf(a_in, b_in),
                                  " (supported: floating and complex dtypes other than the 8-bit "
                                  "floats)"));
  }
  PGK_ASSIGN_OR_RETURN(GPUArray a, AsType(a_in, dtype, false));
  PGK_ASSIGN_OR_RETURN(GPUArray b, AsType(b_in, dtype, false));
  if (k == 0) return Zeros({m, n}, dtype, a.device());
  PGK_ASSIGN_OR_RETURN(GPUArray d, Empty({m, n}, dtype, a.device()));
  if (m == 0 || n == 0) return d;
  PGK_ASSIGN_OR_RETURN(Mat A, Prepare(a, 0, true));
  // An M-major a sliced at a group start off a 16-byte boundary is a matrix that neither the
  // one launch (TMA box starts) nor the per-group families read (cuBLASLt found no algorithm
  // for such a start on an H200): such an a is copied row-major once, an m x k pass beside the
  // m x n x k product.
  if (A.col != 1 && m > 1) {
    const int64_t align = 16 / ItemSize(dtype);
    bool misaligned = false;
    for (size_t g = 0; g + 1 < offsets.size(); ++g) {
      misaligned |= offsets[g] % align != 0 && offsets[g + 1] > offsets[g];
    }
    if (misaligned) {
      PGK_ASSIGN_OR_RETURN(GPUArray row_major, Copy(A.arr));
      PGK_ASSIGN_OR_RETURN(A, Prepare(row_major, 0, true));
    }
  }
  PGK_ASSIGN_OR_RETURN(Mat B, Prepare(b, 1, true));
  PGK_ASSIGN_OR_RETURN(LaunchContext ctx, LaunchContext::Open(op, {&A.arr, &B.arr, &d}));
  GemmProblem all;
  all.in = all.out = dtype;
  all.options = options;
  all.m = m;
  all.n = n;
  all.k = k;
  all.a = {A.arr.data(), 0, A.row, A.col};
  all.b = {B.arr.data(), 0, B.row, B.col};
  all.d = d.data();
  all.d_row = n;
  // One launch over every group's tiles where the sm90 kernels serve it: group g's rows against
  // b[g] (B's batch index).
  GemmProblem grouped = all;
  grouped.b.batch = B.batch_stride;
  absl::Status st = LaunchGroupedGemm(ctx, grouped, offsets);
  if (!absl::IsUnimplemented(st)) {
    PGK_RETURN_IF_ERROR(st);
    return d;
  }
  // Otherwise every row of a against b[0]; group g is its rows of that (RowSlice) against b[g],
  // one product per non-empty group, each planned on its own (its size picks its family).
  all.d_batch = m * n;
  for (size_t g = 0; g < offsets.size(); ++g) {
    const int64_t r0 = g == 0 ? 0 : offsets[g - 1], rows = offsets[g] - r0;
    if (rows == 0) continue;
    GemmProblem p = RowSlice(all, r0, rows);
    p.b.ptr = static_cast<const char*>(B.arr.data()) +
              static_cast<int64_t>(g) * B.batch_stride * ItemSize(dtype);
    PGK_RETURN_IF_ERROR(LaunchGemm(ctx, p));
  }
  return d;
}

}  // namespace pygpukit::ops

// matmul: NumPy / Array API semantics (1-D operands promoted then squeezed, batch dims
// broadcast) over a backend GEMM. Operands are flattened to one batch stride when their layout
// allows; otherwise they are copied, as they are when the CUDA backend needs a unit stride.
#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "ops/kernel_launch.h"
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

}  // namespace

absl::StatusOr<GPUArray> Matmul(const GPUArray& a_in, const GPUArray& b_in,
                                const MatmulOptions& options) {
  if (a_in.device() != b_in.device()) {
    return ValueError(absl::StrCat("matmul: operands are on different devices (",
                                   a_in.device().ToString(), " and ", b_in.device().ToString(),
                                   ")"));
  }
  if (a_in.ndim() == 0 || b_in.ndim() == 0) {
    return ValueError(absl::StrCat("matmul: operands must have at least 1 dimension, got shapes ",
                                   ShapeToString(a_in.shape()), " and ",
                                   ShapeToString(b_in.shape())));
  }
  DType dtype = PromoteTypes(a_in.dtype(), b_in.dtype());
  if (!IsInexact(dtype)) {
    std::string dtypes =
        a_in.dtype() == b_in.dtype()
            ? absl::StrCat("dtype ", DTypeName(dtype))
            : absl::StrCat("dtypes ", DTypeName(a_in.dtype()), " and ", DTypeName(b_in.dtype()));
    return TypeError(absl::StrCat("matmul: unsupported ", dtypes,
                                  " (supported: float16, bfloat16, float32, float64, complex64, "
                                  "complex128)"));
  }
  const bool a1 = a_in.ndim() == 1, b1 = b_in.ndim() == 1;
  PGK_ASSIGN_OR_RETURN(GPUArray a, AsType(a_in, dtype, false));
  PGK_ASSIGN_OR_RETURN(GPUArray b, AsType(b_in, dtype, false));
  if (a1) {
    PGK_ASSIGN_OR_RETURN(a, Reshape(a, {1, a.shape()[0]}));
  }
  if (b1) {
    PGK_ASSIGN_OR_RETURN(b, Reshape(b, {b.shape()[0], 1}));
  }
  const int64_t m = a.shape()[a.ndim() - 2], k = a.shape()[a.ndim() - 1];
  const int64_t n = b.shape()[b.ndim() - 1];
  if (b.shape()[b.ndim() - 2] != k) {
    return ValueError(absl::StrCat("matmul: shapes ", ShapeToString(a_in.shape()), " and ",
                                   ShapeToString(b_in.shape()),
                                   " are not aligned (contracted dimensions ", k, " and ",
                                   b.shape()[b.ndim() - 2], " differ)"));
  }
  absl::Span<const int64_t> abatch(a.shape().data(), a.ndim() - 2);
  absl::Span<const int64_t> bbatch(b.shape().data(), b.ndim() - 2);
  auto batch_or = BroadcastShapes(abatch, bbatch, "matmul");
  if (!batch_or.ok()) {
    return ValueError(absl::StrCat("matmul: batch dimensions of shapes ",
                                   ShapeToString(a_in.shape()), " and ",
                                   ShapeToString(b_in.shape()), " cannot be broadcast together"));
  }
  Shape batch = *std::move(batch_or);
  const int nb = static_cast<int>(batch.size());
  Shape ashape = batch, bshape = batch, cshape = batch;
  ashape.insert(ashape.end(), {m, k});
  bshape.insert(bshape.end(), {k, n});
  cshape.insert(cshape.end(), {m, n});
  PGK_ASSIGN_OR_RETURN(GPUArray ab, BroadcastTo(a, ashape));
  PGK_ASSIGN_OR_RETURN(GPUArray bb, BroadcastTo(b, bshape));

  GPUArray c;
  const int64_t nbatch = NumElements(batch);
  if (k == 0) {
    PGK_ASSIGN_OR_RETURN(c, Zeros(cshape, dtype, a.device()));
  } else {
    PGK_ASSIGN_OR_RETURN(c, Empty(cshape, dtype, a.device()));
  }
  if (k > 0 && m > 0 && n > 0 && nbatch > 0) {
    bool blas = a.device().is_cuda();
    PGK_ASSIGN_OR_RETURN(Mat A, Prepare(ab, nb, blas));
    PGK_ASSIGN_OR_RETURN(Mat B, Prepare(bb, nb, blas));
    PGK_ASSIGN_OR_RETURN(ResidencyPin pin, Resident({&A.arr, &B.arr, &c}));
    MatmulProblem p{dtype,
                    nbatch,
                    m,
                    n,
                    k,
                    A.arr.data(),
                    A.batch_stride,
                    A.row,
                    A.col,
                    B.arr.data(),
                    B.batch_stride,
                    B.row,
                    B.col,
                    c.data(),
                    m * n,
                    n,
                    1,
                    options};
    PGK_RETURN_IF_ERROR(LaunchMatmul(p, a.device(), {A.arr.buffer(), B.arr.buffer(), c.buffer()}));
  }
  if (a1 || b1) {
    Shape out = batch;
    if (!a1) out.push_back(m);
    if (!b1) out.push_back(n);
    return Reshape(c, out);
  }
  return c;
}

}  // namespace pygpukit::ops

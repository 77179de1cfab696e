// The array operations of the C++ API. Each validates its arguments, applies type promotion,
// allocates the output from the device's pool and launches through the dispatcher. Errors come
// back as statuses that name the op and the offending shapes / dtypes.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "ops/array.h"
#include "ops/elementwise/elementwise_table.h"
#include "ops/reduce/reduce_table.h"

namespace pygpukit::ops {

// ---- creation ----
/// Uninitialized array.
absl::StatusOr<GPUArray> Empty(absl::Span<const int64_t> shape, DType dtype, Device device);
/// Array filled with `value` cast to `dtype`.
absl::StatusOr<GPUArray> Full(absl::Span<const int64_t> shape, const Scalar& value, DType dtype,
                              Device device);
absl::StatusOr<GPUArray> Zeros(absl::Span<const int64_t> shape, DType dtype, Device device);
absl::StatusOr<GPUArray> Ones(absl::Span<const int64_t> shape, DType dtype, Device device);
/// Values start, start+step, ... below stop (above, for negative step). Real dtypes only.
absl::StatusOr<GPUArray> Arange(double start, double stop, double step, DType dtype, Device device);
/// Integer arange computed exactly in int64.
absl::StatusOr<GPUArray> ArangeInt(int64_t start, int64_t stop, int64_t step, DType dtype,
                                   Device device);
/// Identity-like matrix: ones on diagonal k (0 main, > 0 above, < 0 below), zeros elsewhere.
absl::StatusOr<GPUArray> Eye(int64_t n_rows, int64_t n_cols, int64_t k, DType dtype, Device device);
/// `num` evenly spaced values from start to stop (included when `endpoint`), computed as
/// start + i * step in double precision (complex128 for complex bounds) and cast to `dtype`, a
/// floating or complex dtype.
absl::StatusOr<GPUArray> Linspace(const Scalar& start, const Scalar& stop, int64_t num,
                                  bool endpoint, DType dtype, Device device);
/// Coordinate matrices of 1-D arrays (new arrays): `xy` (Cartesian) swaps the first two output
/// axes, otherwise matrix ("ij") indexing.
absl::StatusOr<std::vector<GPUArray>> Meshgrid(absl::Span<const GPUArray> arrays, bool xy);
/// Lower triangle of the last two axes: elements above diagonal k set to zero (a new array).
absl::StatusOr<GPUArray> Tril(const GPUArray& x, int64_t k = 0);
/// Upper triangle of the last two axes: elements below diagonal k set to zero (a new array).
absl::StatusOr<GPUArray> Triu(const GPUArray& x, int64_t k = 0);
/// Copies C-contiguous host data into a new array through the transfer engine. Returns once
/// `data` may be reused (pageable memory is staged); with `blocking` false the copy may still be
/// in flight, ordered before later work on the array. Pinned-pool `data` is copied directly and
/// must stay untouched until the copy completes.
absl::StatusOr<GPUArray> FromHost(const void* data, absl::Span<const int64_t> shape, DType dtype,
                                  Device device, bool blocking = true);

// ---- host transfer / copies ----
/// Copies `a` in C order into host `dst` (a.nbytes() bytes) through the transfer engine. Blocks
/// until the data is there, except with `blocking` false into pinned-pool memory: then the DMA
/// is ordered before later work on a's device stream (synchronize it before reading `dst`).
absl::Status ToHost(const GPUArray& a, void* dst, bool blocking = true);
/// A C-contiguous copy of `a` (same dtype), always new memory.
absl::StatusOr<GPUArray> Copy(const GPUArray& a);
/// `a` if it is already C-contiguous, else a contiguous copy.
absl::StatusOr<GPUArray> Contiguous(const GPUArray& a);
/// Cast to `dtype` (a copy; `a` itself when `copy` is false and the dtype already matches).
absl::StatusOr<GPUArray> AsType(const GPUArray& a, DType dtype, bool copy = true);
/// The same data on another device.
absl::StatusOr<GPUArray> ToDevice(const GPUArray& a, Device device);
/// Writes `src` (broadcast to dst's shape, cast to dst's dtype) into `dst` (NumPy setitem rules:
/// src may carry extra leading size-1 dimensions; overlapping src and dst are safe).
absl::Status Assign(const GPUArray& dst, const GPUArray& src);
/// Fills `dst` (any view) with `value` cast to dst's dtype; OverflowError for out-of-range ints.
absl::Status Assign(const GPUArray& dst, const Scalar& value);

// ---- views ----
/// Reshape; a view when the layout allows, else a copy. One -1 extent is inferred. `copy`
/// (the Array API's): true always copies; false never does (ValueError when the layout needs
/// one); unset copies only when needed.
absl::StatusOr<GPUArray> Reshape(const GPUArray& a, absl::Span<const int64_t> shape,
                                 std::optional<bool> copy = std::nullopt);
/// Permutes axes (negative axes allowed).
absl::StatusOr<GPUArray> PermuteDims(const GPUArray& a, absl::Span<const int64_t> axes);
/// Reverses all axes (NumPy's .T).
absl::StatusOr<GPUArray> Transpose(const GPUArray& a);
/// Swaps the last two axes (Array API .mT); needs ndim >= 2.
absl::StatusOr<GPUArray> MatrixTranspose(const GPUArray& a);
/// View broadcast to `shape`.
absl::StatusOr<GPUArray> BroadcastTo(const GPUArray& a, absl::Span<const int64_t> shape);

/// One component of an index: basic (integer, slice, None, Ellipsis) or an integer array.
struct IndexItem {
  enum class Kind { kInteger, kSlice, kNewAxis, kEllipsis, kArray, kMask } kind = Kind::kInteger;
  int64_t index = 0;
  std::optional<int64_t> start, stop;
  int64_t step = 1;
  int array = -1;  // kArray (integers) / kMask (bool): its position in AdvancedIndex's `arrays`
};
/// Basic indexing (integers, slices with steps, None, Ellipsis): always a view.
absl::StatusOr<GPUArray> Index(const GPUArray& a, absl::Span<const IndexItem> items);
/// NumPy indexing with integer arrays or boolean masks among the items (`arrays[item.array]`):
/// a mask stands for the integer arrays of its nonzero elements (its shape must match the axes
/// it covers); the arrays (and integers next to them) broadcast together, and their shape
/// replaces the indexed axes where those are adjacent, else comes first. A new array;
/// IndexError for out-of-bounds indices. A 0-d mask adds an axis of one element (True) or none
/// (False); None adds one, as a basic item. Without arrays, Index.
absl::StatusOr<GPUArray> AdvancedIndex(const GPUArray& a, absl::Span<const IndexItem> items,
                                       absl::Span<const GPUArray> arrays);
/// x[items] = value (an array, broadcast and cast to x's dtype, or a scalar when `value` is
/// null) with integer arrays or masks among the items, as AdvancedIndex selects them. An
/// element selected twice gets one of its values (NumPy gives no order either).
absl::Status AdvancedAssign(const GPUArray& a, absl::Span<const IndexItem> items,
                            absl::Span<const GPUArray> arrays, const GPUArray* value,
                            const Scalar* scalar);
/// Elements of `x` at `indices` (any integer dtype and shape; negative from the end) along
/// `axis` (of the flattened array when nullopt): x.shape[:axis] + indices.shape +
/// x.shape[axis+1:]. IndexError for out-of-bounds indices.
absl::StatusOr<GPUArray> Take(const GPUArray& x, const GPUArray& indices,
                              std::optional<int64_t> axis);
/// out[..., j, ...] = x[..., indices[..., j, ...], ...] along `axis`; x and indices have one
/// number of dimensions and broadcast along the others.
absl::StatusOr<GPUArray> TakeAlongAxis(const GPUArray& x, const GPUArray& indices, int64_t axis);
/// For each element of x2, where it would go in the sorted 1-D x1 (its order given by `sorter`,
/// indices into x1, when present) to keep x1 sorted: before equal elements, or after them with
/// `right`. NumPy's sort order (NaN last); both compare in their promoted dtype. int64, x2's
/// shape.
absl::StatusOr<GPUArray> SearchSorted(const GPUArray& x1, const GPUArray& x2, bool right,
                                      const std::optional<GPUArray>& sorter);
/// The indices of the nonzero elements (NaN counts), one int64 array per axis, in C order.
/// A GPU algorithm (a scan and a binary search per nonzero element); the count is read back to
/// size the result. ValueError for 0-d input.
absl::StatusOr<std::vector<GPUArray>> Nonzero(const GPUArray& x);
/// Each element repeated repeats[i] times along `axis` (of the flattened array when nullopt):
/// `repeats` is one integer per element or a single one; ValueError for negative counts.
absl::StatusOr<GPUArray> RepeatEach(const GPUArray& a, const GPUArray& repeats,
                                    std::optional<int64_t> axis);
/// x sorted along `axis` (a stable merge sort on the device; NumPy's order: NaN last, complex
/// by real then imaginary part). `descending` reverses the order, keeping equal elements in
/// their original order (NaN first). ValueError for 0-d input.
absl::StatusOr<GPUArray> Sort(const GPUArray& x, int64_t axis = -1, bool descending = false);
/// The int64 positions along `axis` that sort x (stable), as Sort orders it.
absl::StatusOr<GPUArray> ArgSort(const GPUArray& x, int64_t axis = -1, bool descending = false);
/// The Array API's unique_* results; fields not asked for stay invalid.
struct UniqueResult {
  GPUArray values;           // sorted distinct values (every NaN is distinct)
  GPUArray indices;          // int64 first occurrence of each value in the flattened x
  GPUArray inverse_indices;  // int64, x's shape: values[inverse_indices] reconstructs x
  GPUArray counts;           // int64 occurrences of each value
};
/// The distinct values of x (flattened), sorted, with the results asked for.
absl::StatusOr<UniqueResult> Unique(const GPUArray& x, bool indices, bool inverse, bool counts);
/// The number of nonzero elements (NaN counts; complex: either part) over `axes` (all when
/// nullopt), as int64.
absl::StatusOr<GPUArray> CountNonzero(const GPUArray& x,
                                      const std::optional<std::vector<int64_t>>& axes,
                                      bool keepdims);

// ---- manipulation (ops/shape/manipulation.cc; axes may be negative) ----
/// View with a size-1 axis inserted at `axis` of the result (-ndim-1 <= axis <= ndim).
absl::StatusOr<GPUArray> ExpandDims(const GPUArray& a, int64_t axis);
/// View without the size-1 axes `axes` (every size-1 axis when nullopt); ValueError for an axis
/// whose extent is not 1.
absl::StatusOr<GPUArray> Squeeze(const GPUArray& a, std::optional<absl::Span<const int64_t>> axes);
/// View with the element order reversed along `axes` (all axes when nullopt).
absl::StatusOr<GPUArray> Flip(const GPUArray& a, std::optional<absl::Span<const int64_t>> axes);
/// View with axes `source` moved to positions `destination`, the others in their order.
absl::StatusOr<GPUArray> MoveAxis(const GPUArray& a, absl::Span<const int64_t> source,
                                  absl::Span<const int64_t> destination);
/// Views of every array broadcast to their common shape.
absl::StatusOr<std::vector<GPUArray>> BroadcastArrays(absl::Span<const GPUArray> arrays);
/// Joins arrays (one device, one shape but along `axis`) along `axis`, or their flattened
/// contents when nullopt; the result has their promoted dtype.
absl::StatusOr<GPUArray> Concat(absl::Span<const GPUArray> arrays, std::optional<int64_t> axis);
/// Joins arrays of one shape along a new axis `axis` of the result.
absl::StatusOr<GPUArray> Stack(absl::Span<const GPUArray> arrays, int64_t axis);
/// Views of the slices of `a` along `axis`, in order.
absl::StatusOr<std::vector<GPUArray>> Unstack(const GPUArray& a, int64_t axis);
/// Elements shifted along `axes` (one shift per axis, or one for all; shifts of a repeated axis
/// add up), wrapping around; without axes, along the flattened array, keeping the shape.
absl::StatusOr<GPUArray> Roll(const GPUArray& a, absl::Span<const int64_t> shifts,
                              std::optional<absl::Span<const int64_t>> axes);
/// `a` repeated reps[i] times along each axis (shapes padded with leading 1s to one rank).
absl::StatusOr<GPUArray> Tile(const GPUArray& a, absl::Span<const int64_t> reps);
/// An array and one of its axes (normalized).
struct AxisOf {
  GPUArray array;
  int axis = 0;
};
/// `a` and `axis` normalized, or with no axis `a` flattened and axis 0 (the rule of take and
/// repeat); ValueError naming `op` for a 0-d array with an axis.
absl::StatusOr<AxisOf> AxisOrFlattened(const GPUArray& a, std::optional<int64_t> axis,
                                       absl::string_view op);
/// Each element repeated `repeats` times along `axis` (of the flattened array when nullopt).
absl::StatusOr<GPUArray> Repeat(const GPUArray& a, int64_t repeats, std::optional<int64_t> axis);
/// n-th discrete difference along `axis` (of prepend, x and append joined there); bool arrays
/// give not_equal of neighbours, as in NumPy.
absl::StatusOr<GPUArray> Diff(const GPUArray& x, int64_t axis, int64_t n,
                              const std::optional<GPUArray>& prepend,
                              const std::optional<GPUArray>& append);

// ---- elementwise functions (ops/elementwise/elementwise_table.h lists them) ----
/// An operand of an elementwise function: an array, or a weak Python scalar (NEP 50: it takes
/// the arrays' dtype unless it is of a higher kind).
struct EwOperand {
  const GPUArray* array = nullptr;
  Scalar scalar;
  EwOperand(const GPUArray& a) : array(&a) {}  // NOLINT(runtime/explicit): operands convert
  EwOperand(const Scalar& s) : scalar(s) {}    // NOLINT(runtime/explicit)
};
/// The Array API function `op` of its operands (the table's arity of them), broadcast
/// together and promoted. Into `out` when given: it must have the broadcast shape, and its dtype
/// the result's kind or a higher one (NumPy's same_kind rule); it may be one of the operands.
absl::StatusOr<GPUArray> Elementwise(ElementwiseOp op, absl::Span<const EwOperand> operands,
                                     const GPUArray* out = nullptr);
/// The dtypes Elementwise gives function `op`: per operand the dtype it converts to, and the
/// result dtype.
struct EwTyping {
  absl::InlinedVector<DType, 3> compute;
  DType result;
};
/// Typing of `op` for operands given as array dtypes, or as Python scalars of kinds[i] where
/// dtypes[i] is nullopt; TypeError as Elementwise would raise.
absl::StatusOr<EwTyping> TypeElementwise(ElementwiseOp op,
                                         absl::Span<const std::optional<DType>> dtypes,
                                         absl::Span<const ScalarKind> kinds);
/// The function's Array API name ("add", "sin", ...).
absl::string_view ElementwiseOpName(ElementwiseOp op);
/// Elementwise of one array.
absl::StatusOr<GPUArray> Unary(ElementwiseOp op, const GPUArray& a, const GPUArray* out = nullptr);
/// Elementwise of two operands (at least one an array).
absl::StatusOr<GPUArray> Binary(ElementwiseOp op, const EwOperand& a, const EwOperand& b,
                                const GPUArray* out = nullptr);
/// condition ? x : y elementwise; the condition is converted to bool, x and y promote together.
absl::StatusOr<GPUArray> Where(const EwOperand& condition, const EwOperand& x, const EwOperand& y,
                               const GPUArray* out = nullptr);
/// minimum(maximum(x, min), max) in x's dtype (absent bounds do not clip; NaN propagates; Python
/// integer bounds beyond an integer dtype's range clamp to it).
absl::StatusOr<GPUArray> Clip(const GPUArray& x, std::optional<EwOperand> min,
                              std::optional<EwOperand> max, const GPUArray* out = nullptr);
/// -a (integers wrap, signed zeros and complex infinities kept); TypeError for bool.
absl::StatusOr<GPUArray> Negative(const GPUArray& a);
/// +a: a copy of a numeric array; TypeError for bool (as NumPy 2).
absl::StatusOr<GPUArray> Positive(const GPUArray& a);
absl::StatusOr<GPUArray> Add(const GPUArray& a, const GPUArray& b);
absl::StatusOr<GPUArray> Subtract(const GPUArray& a, const GPUArray& b);
absl::StatusOr<GPUArray> Multiply(const GPUArray& a, const GPUArray& b);
absl::StatusOr<GPUArray> Divide(const GPUArray& a, const GPUArray& b);

// ---- user elementwise kernels (gp.ElementwiseKernel) ----
/// A parameter of a user kernel: its name and a dtype, or a type placeholder (any other
/// identifier, such as T) bound to the dtype of the first array passed for it.
struct UserParam {
  std::string name;
  std::optional<DType> dtype;
  std::string type_var;
};
/// A user elementwise kernel: per element, C++ statements `body` set the output parameters from
/// the input parameters (values of their dtypes' scalar types: bool, int32_t, float, double,
/// pygpukit::float16 / bfloat16 / complex64 / complex128, ...).
struct UserKernel {
  std::vector<UserParam> inputs;
  std::vector<UserParam> outputs;  // one or more
  std::string body;
  std::string name;
};
/// Parses "float32 x, T y" style parameter lists (at least one output) and checks the names.
absl::StatusOr<UserKernel> DefineUserKernel(absl::string_view in_params,
                                            absl::string_view out_params, absl::string_view body,
                                            absl::string_view name);
/// Runs `k`: arrays (exactly of their parameter's dtype) and Python scalars (converted to it)
/// broadcast together; the outputs are new, or `outs` (one per output parameter, of the
/// broadcast shape and the parameter's dtype, not sharing memory with each other; an output
/// overlapping an input goes through a temporary). CPU: compiled by the host C++ compiler;
/// CUDA: by NVRTC.
absl::StatusOr<std::vector<GPUArray>> RunUserKernel(const UserKernel& k,
                                                    absl::Span<const EwOperand> inputs,
                                                    absl::Span<const GPUArray> outs = {});

// ---- fused elementwise expressions (gp.fuse) ----
/// An operand of a fused node: a kernel input, an earlier node's value, or a constant.
struct FusedArg {
  enum class Kind { kInput, kNode, kConstant } kind = Kind::kInput;
  int index = 0;    // kInput / kNode
  Scalar constant;  // kConstant (a weak Python scalar)
};
/// One elementwise table function applied to earlier values.
struct FusedNode {
  ElementwiseOp op;
  std::vector<FusedArg> args;
};
/// A DAG of elementwise functions over `inputs` kernel inputs, with the nodes whose values are
/// the results.
struct FusedExpr {
  int inputs = 0;
  std::vector<FusedNode> nodes;
  std::vector<int> outputs;  // node indices, distinct (empty: the last node)
  std::string name = "fused";
  /// Nonzero: a unique id under which RunFused keeps the generated kernel per argument
  /// signature (the expression must not change afterwards).
  uint64_t id = 0;
};
/// A fresh id for FusedExpr::id.
uint64_t NewFusedExprId();
/// Evaluates `e` in one kernel: every node gets exactly the dtypes Elementwise would give it
/// (intermediates are kept in their result dtypes), so each result has the bits of evaluating
/// the nodes one by one. Inputs are arrays or Python scalars; those the results depend on
/// broadcast together (nodes no result depends on are not evaluated). One array per output.
absl::StatusOr<std::vector<GPUArray>> RunFused(const FusedExpr& e,
                                               absl::Span<const EwOperand> inputs);

// ---- reductions and scans (ops/reduce/reduce_table.h lists them) ----
/// Arguments of a reduction beyond its input.
struct ReduceOptions {
  /// The axes to reduce (negative counted from the end; distinct); nullopt: all of them.
  /// argmax / argmin take one axis or all.
  std::optional<std::vector<int64_t>> axes;
  /// Keep the reduced axes as extent-1 dimensions.
  bool keepdims = false;
  /// sum / prod: the dtype the input is cast to and the result has (default: bool and signed
  /// integers give int64, unsigned integers uint64, others their own dtype).
  std::optional<DType> dtype;
  /// var / std: the divisor is (number of elements - correction).
  double correction = 0.0;
};
/// The reduction `op` of `a` over the chosen axes, with the Array API's (and NumPy's) result
/// dtypes: mean / var / std of bool or integers are float32 (the default float dtype; computed
/// from exact float64 values); var / std of complex are real;
/// argmax / argmin give int64 indices (the first extreme; NaN counts as the extreme); all / any
/// give bool. Empty reductions give the identity (sum 0, prod 1, all true, any false) or NaN
/// (mean, var, std); max / min / argmax / argmin of none raise ValueError. Deterministic: the
/// same input (shape, strides and alignment) on the same device gives the same bits.
absl::StatusOr<GPUArray> Reduce(ReduceOp op, const GPUArray& a, const ReduceOptions& options = {});
/// The reduction's Array API name ("sum", "argmax", ...).
absl::string_view ReduceOpName(ReduceOp op);
/// cumulative_sum (op kSum) or cumulative_prod (kProd) along `axis` (required unless `a` is 1-D),
/// in the dtype sum / prod would give (or `dtype`); with `include_initial` the result starts
/// with the identity (one more element along the axis).
absl::StatusOr<GPUArray> CumulativeReduce(ReduceOp op, const GPUArray& a,
                                          std::optional<int64_t> axis,
                                          std::optional<DType> dtype = std::nullopt,
                                          bool include_initial = false);

// ---- linear algebra ----
/// Precision of float32 matrix products.
enum class MatmulPrecision {
  kHighest,  // true FP32 (default)
  kTF32,     // tensor-core TF32 inputs, FP32 accumulation (CUDA only; CPU stays FP32)
};
/// Which implementation serves a CUDA matmul: kAuto picks by arch, dtype, layout and shape
/// (ops/gemm/gemm_select.h); the others force one kernel family and fail with NotImplementedError
/// where it cannot serve the problem (always on the CPU backend, which has one kernel).
enum class MatmulBackend { kAuto, kCublasLt, kSm90, kSm80, kSimt };
struct MatmulOptions {
  MatmulPrecision precision = MatmulPrecision::kHighest;
  MatmulBackend backend = MatmulBackend::kAuto;
};
/// NumPy matmul semantics: 1-D operands promoted and squeezed, batch dims broadcast.
absl::StatusOr<GPUArray> Matmul(const GPUArray& a, const GPUArray& b,
                                const MatmulOptions& options = {});

/// Sum of products over axes a_axes of `a` paired with b_axes of `b` (one matmul; integer
/// operands: products summed, in the promoted dtype). Result: a's free axes, then b's.
absl::StatusOr<GPUArray> Tensordot(const GPUArray& a, const GPUArray& b,
                                   absl::Span<const int64_t> a_axes,
                                   absl::Span<const int64_t> b_axes);
/// sum(conj(x1) * x2) over `axis` of the broadcast shape (which both must have, with one
/// extent), in the promoted dtype.
absl::StatusOr<GPUArray> Vecdot(const GPUArray& x1, const GPUArray& x2, int64_t axis = -1);

/// Activation applied last by Gemm / Linear.
enum class Activation { kNone, kRelu, kGelu, kSilu, kGeluTanh };
/// The fused epilogue of Gemm: D = act(alpha * (A @ B) + beta * C + bias).
struct GemmEpilogue {
  double alpha = 1.0, beta = 0.0;
  std::optional<GPUArray> c;     // broadcast to D's shape; required when beta != 0
  std::optional<GPUArray> bias;  // 1-D of length N
  Activation activation = Activation::kNone;
  std::optional<DType> out_dtype;  // default: the operands' dtype; float32 allowed for 16-bit
};
/// Matmul (2-D or batched operands, NumPy broadcasting of batch dims) with a fused epilogue.
/// Real floating dtypes only.
absl::StatusOr<GPUArray> Gemm(const GPUArray& a, const GPUArray& b, const GemmEpilogue& epilogue,
                              const MatmulOptions& options = {});
/// Linear layer: x @ w^T + bias, then the activation; w is (out_features, in_features) and is
/// read through a transposed view (no copy).
absl::StatusOr<GPUArray> Linear(const GPUArray& x, const GPUArray& w,
                                const std::optional<GPUArray>& bias = std::nullopt,
                                Activation activation = Activation::kNone,
                                const MatmulOptions& options = {});
/// Grouped product (mixture-of-experts): rows [offsets[g-1], offsets[g]) of `a` (total_rows, K)
/// times `b[g]` (b is (groups, K, N)) into the same rows of the (total_rows, N) result.
/// `offsets` are the groups' end rows: non-decreasing, one per group, the last = total_rows.
absl::StatusOr<GPUArray> GroupedMatmul(const GPUArray& a, const GPUArray& b,
                                       absl::Span<const int64_t> offsets,
                                       const MatmulOptions& options = {});

/// Options of ScaledMatmul: the result's dtype and the fused bias and activation.
struct ScaledMatmulOptions {
  DType out_dtype = DType::BFloat16;  // bfloat16, float16 or float32
  std::optional<GPUArray> bias;       // 1-D of length N, any real float dtype
  Activation activation = Activation::kNone;
  /// kAuto: cuBLASLt's FP8 matmul where it serves the problem, else the dequantized float32
  /// product. kCublasLt / kSm90 force that family on CUDA (NotImplementedError where it cannot
  /// serve the problem, or on the CPU); others are NotImplementedError.
  MatmulBackend backend = MatmulBackend::kAuto;
};
/// The scaled product of 8-bit float matrices: act(dequant(a) @ dequant(b) + bias) in
/// out_dtype, products accumulated in float32. a is (M, K) and b (K, N), each float8_e4m3fn or
/// float8_e5m2; scale_a and scale_b are float32, and their shapes say how they cover the
/// operand: () or (1, 1) one scale for the whole operand; (M, 1) for scale_a / (1, N) for
/// scale_b one per row of a / column of b; (M, ceil(K / 128)) / (ceil(K / 128), N) one per 128
/// elements along K (1x128 groups of a, 128x1 of b); (ceil(M / 128), ceil(K / 128)) /
/// (ceil(K / 128), ceil(N / 128)) one per 128x128 block (the DeepSeek-V3 recipe pairs 1x128
/// for a with 128x128 for b). dequant(x) multiplies each element by its scale.
absl::StatusOr<GPUArray> ScaledMatmul(const GPUArray& a, const GPUArray& b, const GPUArray& scale_a,
                                      const GPUArray& scale_b,
                                      const ScaledMatmulOptions& options = {});

// ---- utilities ----
/// The scalar value of a one-element array (copied to the host).
absl::StatusOr<Scalar> Item(const GPUArray& a);
/// Waits for all work queued on the array's device.
absl::Status Synchronize(Device device);
/// Makes `reader` wait for the work queued on every stream that has used `a`'s memory (its own,
/// and those recorded when another stream used it), so that what is queued on `reader` next
/// sees every write to `a`, whatever stream queued it (a gp.Stream block's, a task's).
absl::Status AwaitUsers(const GPUArray& a, hal::Stream& reader);
/// Blocks the host until the work queued on every stream that has used `a` has finished:
/// before the host (or a consumer handed the memory) reads it.
absl::Status SynchronizeArray(const GPUArray& a);

}  // namespace pygpukit::ops

// Source generation for the JIT elementwise kernels (pure: unit-tested, and compiled by NVRTC in
// tests, without a GPU). A kernel is described by what changes its code: the element body, the
// operands' storage dtypes, which inputs are by-value scalars, and the launch layout.
//
// Layouts:
//  - contiguous: every array operand is dense in C order over the same n elements; each thread
//    moves `vec` elements per operand as one access (16 bytes for the widest operand when every
//    pointer is aligned for it, else 1), `unroll` such vectors per loop trip, all loads before
//    any store, in a grid-stride loop; the n % vec tail is done element by element.
//  - strided: `ndim` (coalesced) dimensions with per-operand element strides (negative and zero
//    included); each element's offsets come from its linear index by division, in 32-bit
//    arithmetic when every index and offset fits (`index32`), else 64-bit; `unroll` elements
//    per thread and trip, loads first.
//  - strided with `vec` > 1 (broadcasts along rows or columns): the last dimension is dense (or,
//    for inputs in `broadcast_inner`, of stride 0) and the unit is a run of `vec` elements along
//    it: one offset computation and one 16-byte access per run and operand (a broadcast input
//    reads one element per run).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "core/dtype.h"
#include "ops/elementwise/elementwise_table.h"
#include "runtime/jit/jit_cache.h"

namespace pygpukit::ops {

/// Default vectors (contiguous) or elements (strided) per thread and loop trip.
inline constexpr int kEwUnroll = 4;
/// Threads per block of every generated elementwise kernel.
inline constexpr int kEwBlock = 256;

/// How a generated kernel walks its operands (see the layouts above).
struct EwLayout {
  bool contiguous = true;
  int vec = 1;                   // elements per access (1, 2, 4, 8 or 16)
  int ndim = 1;                  // strided: dimensions (1 .. kernels::kKernelMaxDims)
  uint32_t broadcast_inner = 0;  // strided with vec > 1: bit i, input i has last stride 0
  bool index32 = false;          // strided: 32-bit index arithmetic
  int unroll = kEwUnroll;  // vectors (contiguous) or elements (strided) per thread and loop trip
};

/// One input of a generated kernel.
struct EwInput {
  DType storage;        // the dtype it is read as (for scalars: the dtype its bytes encode)
  bool scalar = false;  // passed by value instead of as an array
};

/// A generated elementwise kernel: (out0[i], out1[i], ...) = body(inputs at i).
struct EwKernelSpec {
  /// Statements computing `o0`, `o1`, ... (the outputs, of their dtypes) from `i0`, `i1`, ...
  /// (the inputs in their storage types). Names from pygpukit::kernels are visible unqualified.
  std::string body;
  std::vector<EwInput> inputs;
  std::vector<DType> outputs = {DType::Float32};  // one or more
  /// The body's names for the inputs, then the outputs (empty: i0, i1, ..., o0, o1, ...). User
  /// kernels (gp.ElementwiseKernel) name their parameters.
  std::vector<std::string> names;
  bool needs_complex = false;  // include ops/kernels/complex_math.h
  /// The outputs hold values the body may read (user kernels given their outputs: `y += x`);
  /// otherwise they are write-only (vector paths do not load them).
  bool read_outputs = false;
  /// The body sees `const long long i`, the element's index in C order (user kernels, as CuPy's).
  bool pass_index = false;
  /// Optional branch-free variant of `body` (statements) that is exact where `fast_check` (a
  /// bool expression of the inputs) holds: a contiguous kernel evaluates the check for every
  /// element a thread holds and, when it holds for all, runs `fast_body` on them instead of
  /// `body` (whose rare paths would branch per element). Both empty: `body` alone. Table
  /// functions only: ignored with `names` or `pass_index`, and in strided layouts.
  std::string fast_check, fast_body;
  /// Let NVRTC contract multiplies and adds into FMAs (a measurement knob: results then may
  /// differ from the CPU backend's bits).
  bool contract = false;
  EwLayout layout;
  /// Program name (NVRTC reports errors as "<name>.cu(line)").
  std::string name = "elementwise";
};

/// The generated kernel's extern "C" name.
inline constexpr const char* kEwKernelName = "pgk_ew";

/// The C++ spelling of a dtype's scalar type in generated code ("float", "::pygpukit::bfloat16").
const char* EwTypeName(DType dt);

/// The functor of table function `op` in ops/kernels/math_ops.h ("AddOp", ...).
const char* EwFunctorName(ElementwiseOp op);

/// The kernel of table function `op`: input i is read as inputs[i] and converted to compute[i]
/// (Cast), the functor applied, and its result converted to `out`.
EwKernelSpec OpKernelSpec(ElementwiseOp op, absl::string_view name,
                          absl::Span<const EwInput> inputs, absl::Span<const DType> compute,
                          DType out, const EwLayout& layout);

/// The kernel of a conversion (astype, copies, assignments): out = Cast<out>(in).
EwKernelSpec CastKernelSpec(DType in, DType out, const EwLayout& layout);

/// Everything `spec`'s source depends on but its layout, as a byte string (a cache key part).
std::string EwSpecKey(const EwKernelSpec& spec);

/// The program the JIT compiles for `spec` (generated source, name, NVRTC options).
JitSource ElementwiseProgram(const EwKernelSpec& spec);

/// Appends `qualifiers void pgk_body(const T0 i0, ..., To0& o0, ...) { body }` (the spec's
/// names).
void AppendEwBody(const EwKernelSpec& spec, absl::string_view qualifiers, std::string& s);

/// CUDA C++ source of the kernel `kEwKernelName`. Parameters, in order: `long long n`; for the
/// strided layout `Dims<ndim> shape`; per output its pointer (strided: then its `Dims<ndim>`
/// strides); per input its pointer (strided: then its strides) or its scalar value. Strided with
/// vec > 1: n, the last extent and the strides of vector operands count runs of vec elements.
std::string GenerateElementwiseSource(const EwKernelSpec& spec);

}  // namespace pygpukit::ops

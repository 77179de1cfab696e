#include "ops/reduce/reduce_codegen.h"

#include "absl/strings/str_cat.h"
#include "ops/elementwise/elementwise_codegen.h"
#include "ops/ops.h"

namespace pygpukit::ops {
namespace {

std::string Prologue(ReduceOp op, DType compute) {
  return absl::StrCat(
      "#include \"ops/reduce/reduce_jit.h\"\n"
      "using namespace ::pygpukit;\nusing namespace ::pygpukit::kernels;\n\n"
      "typedef ",
      ReducerName(op), "<", EwTypeName(compute), "> R;\n\n");
}

// Every kernel runs 256-thread blocks (kReduceBlock in reduce_jit.h), at most 64 registers
// per thread: 4 blocks per SM are resident, the grids the launcher sizes for one wave.
std::string Kernel(const char* name, const char* params, absl::string_view body) {
  return absl::StrCat("extern \"C\" __global__ void __launch_bounds__(256, 4) ", name, "(const ",
                      params, " p) {\n  ", body, "\n}\n\n");
}

// Options as for the elementwise programs: automatic precompiled headers, and no multiply-add
// contraction (the CPU loops compute the same formulas without it).
JitSource Program(std::string source, std::string name) {
  return JitSource{std::move(source), std::move(name), {"-pch", "--fmad=false"}};
}

}  // namespace

const char* ReducerName(ReduceOp op) {
  static constexpr const char* kNames[] = {
#define PGK_REDUCER_NAME(E, name, R) #R,
      PGK_FOR_EACH_REDUCE_OP(PGK_REDUCER_NAME)
#undef PGK_REDUCER_NAME
  };
  return kNames[static_cast<int>(op)];
}

JitSource ReduceProgram(const ReduceKernelSpec& spec) {
  const char* in = EwTypeName(spec.in);
  const char* out = EwTypeName(spec.out);
  std::string s = Prologue(spec.op, spec.compute);
  absl::StrAppend(
      &s, Kernel(kReduceKernelName, "ReduceParams",
                 absl::StrCat("ReduceMain<R, ", in, ", ", out, ", ", spec.out_ndim, ", ",
                              spec.red_ndim, ", ", spec.inner ? "true" : "false", ", ", spec.bx,
                              ", ", spec.vec, ", ", spec.unroll, ">(p);")));
  absl::StrAppend(&s, Kernel(kReduceFinalKernelName, "ReduceParams",
                             absl::StrCat("ReduceFinal<R, ", out, ">(p);")));
  return Program(std::move(s), absl::StrCat("reduce_", ReduceOpName(spec.op)));
}

JitSource ScanProgram(const ScanKernelSpec& spec) {
  const char* in = EwTypeName(spec.in);
  const char* out = EwTypeName(spec.out);
  std::string s = Prologue(spec.op, spec.compute);
  auto scan_kernel = [](const char* name, absl::string_view body) {
    return Kernel(name, "ScanParams", body);
  };
  if (spec.serial) {
    absl::StrAppend(
        &s, scan_kernel(kScanSerialKernelName, absl::StrCat("ScanSerial<R, ", in, ", ", out, ", ",
                                                            spec.line_ndim, ">(p);")));
  } else {
    absl::StrAppend(
        &s,
        scan_kernel(kScanTotalsKernelName,
                    absl::StrCat("ScanChunkTotals<R, ", in, ", ", spec.line_ndim, ", ", spec.k,
                                 ", ", spec.vec_in ? "true" : "false", ">(p);")),
        scan_kernel(kScanPrefixesKernelName, "ScanChunkPrefixes<R>(p);"),
        scan_kernel(kScanBlockKernelName,
                    absl::StrCat("ScanBlock<R, ", in, ", ", out, ", ", spec.line_ndim, ", ", spec.k,
                                 ", ", spec.vec_in ? "true" : "false", ", ",
                                 spec.vec_out ? "true" : "false", ">(p);")));
  }
  return Program(std::move(s), absl::StrCat("scan_", ReduceOpName(spec.op)));
}

}  // namespace pygpukit::ops

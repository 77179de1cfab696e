// Source generation for the JIT reductions and scans (pure: unit-tested, and compiled by NVRTC
// in tests without a GPU). The kernels themselves are templates in ops/reduce/reduce_jit.h; a
// program instantiates them for one reducer, the storage / compute / result dtypes and a launch
// configuration, all fixed at compile time.
#pragma once

#include <string>

#include "core/dtype.h"
#include "ops/reduce/reduce_table.h"
#include "runtime/jit/jit_cache.h"

namespace pygpukit::ops {

/// A reduction program: kernels kReduceKernelName (one slice per block row of outputs) and
/// kReduceFinalKernelName (combines the slices).
struct ReduceKernelSpec {
  ReduceOp op = ReduceOp::kSum;
  DType in = DType::Float32;       // storage dtype of the input
  DType compute = DType::Float32;  // the reducer's compute dtype (elements are cast to it)
  DType out = DType::Float32;      // result dtype
  int out_ndim = 0;                // kept dims (0 .. kernels::kKernelMaxDims)
  int red_ndim = 1;                // reduced dims (0 .. kernels::kKernelMaxDims)
  bool inner = true;               // threads of a block row share an output (else outputs)
  int bx = 256;                    // threads per block row: 1, 2, 4, ..., 256
  int vec = 1;                     // inner mode, one dense reduced dim: elements per access
  int unroll = 4;                  // accesses issued before their folds
};

inline constexpr const char* kReduceKernelName = "pgk_reduce";
inline constexpr const char* kReduceFinalKernelName = "pgk_reduce_final";

/// A scan program. Serial mode: kScanSerialKernelName. Block mode: kScanTotalsKernelName,
/// kScanPrefixesKernelName and kScanBlockKernelName.
struct ScanKernelSpec {
  ReduceOp op = ReduceOp::kSum;  // kSum or kProd
  DType in = DType::Float32, compute = DType::Float32, out = DType::Float32;
  int line_ndim = 0;     // dims other than the axis, coalesced
  bool serial = false;   // one thread per line (else blocks per chunk of a line)
  int k = 8;             // block mode: elements per thread per tile
  bool vec_in = false;   // block mode: the lines are dense and 16-byte aligned in the input
  bool vec_out = false;  // ... and in the output
};

inline constexpr const char* kScanSerialKernelName = "pgk_scan_serial";
inline constexpr const char* kScanTotalsKernelName = "pgk_scan_totals";
inline constexpr const char* kScanPrefixesKernelName = "pgk_scan_prefixes";
inline constexpr const char* kScanBlockKernelName = "pgk_scan_block";

/// The reducer template's name in ops/reduce/reduce_ops.h ("SumReducer", ...).
const char* ReducerName(ReduceOp op);

/// The program the JIT compiles for `spec`.
JitSource ReduceProgram(const ReduceKernelSpec& spec);
JitSource ScanProgram(const ScanKernelSpec& spec);

}  // namespace pygpukit::ops

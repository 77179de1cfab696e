#!/usr/bin/env bash
# The C++ suites and the fuzz targets' standalone runs under AddressSanitizer and
# UndefinedBehaviorSanitizer (CPU backend, no CUDA): out-of-bounds and use-after-free accesses,
# leaks of the tests' own allocations, signed overflow, misaligned and null accesses, bad shifts
# and casts all fail the test that hit them. About 3x slower; run it after changing native code
# (the Python suite's crash cases run in child processes and are covered by the fuzz module):
#   bash scripts/asan.sh [ctest -R regex]      (default: every C++ test and fuzz target)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${PYGPUKIT_ASAN_BUILD_DIR:-build/asan}
SAN="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPYGPUKIT_WITH_CUDA=OFF \
  -DPYGPUKIT_BUILD_PYTHON=OFF -DCMAKE_CXX_FLAGS="$SAN" -DCMAKE_EXE_LINKER_FLAGS="$SAN" \
  -DCMAKE_SHARED_LINKER_FLAGS="$SAN" >/dev/null
cmake --build "$BUILD" -j "${PYGPUKIT_JOBS:-$(nproc)}"
# allocator_may_return_null: tests of absurd sizes expect a failed allocation, not an abort.
# detect_leaks=0 in the consumer test only: it runs CMake, not our code.
export ASAN_OPTIONS="allocator_may_return_null=1 detect_stack_use_after_return=1 ${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1 halt_on_error=1 ${UBSAN_OPTIONS:-}"
ctest --test-dir "$BUILD" --output-on-failure -j "${PYGPUKIT_JOBS:-$(nproc)}" -L cpp \
  -E consumer ${1:+-R "$1"}

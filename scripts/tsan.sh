#!/usr/bin/env bash
# The C++ suites under ThreadSanitizer (CPU backend, no CUDA): the memory pool, pinned pool,
# transfer engine, CPU streams and thread pool are exercised by many threads at once, and TSAN
# reports any data race as a failure. Slow (about 10x); run it after changing those components:
#   bash scripts/tsan.sh [ctest -R regex]      (default: every C++ test)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${PYGPUKIT_TSAN_BUILD_DIR:-build/tsan}
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPYGPUKIT_WITH_CUDA=OFF \
  -DPYGPUKIT_BUILD_PYTHON=OFF -DCMAKE_CXX_FLAGS="-fsanitize=thread" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=thread" -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=thread" \
  >/dev/null
cmake --build "$BUILD" -j "${PYGPUKIT_JOBS:-$(nproc)}"
# halt_on_error: the first race fails the test that hit it. allocator_may_return_null: tests of
# absurd sizes expect a failed allocation, not the sanitizer aborting. tsan.supp: reports from
# uninstrumented system libraries (each explained there).
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 allocator_may_return_null=1 suppressions=$PWD/scripts/tsan.supp ${TSAN_OPTIONS:-}"
ctest --test-dir "$BUILD" --output-on-failure -j "${PYGPUKIT_JOBS:-$(nproc)}" -L cpp \
  -E consumer ${1:+-R "$1"}

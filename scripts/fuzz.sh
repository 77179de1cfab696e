#!/usr/bin/env bash
# Coverage-guided fuzzing of the parsers of outside bytes (tests/fuzz: DLPack import, JIT cache
# entries, the GEMM tune-cache file) with clang's libFuzzer, AddressSanitizer and
# UndefinedBehaviorSanitizer, on the CPU backend. CI runs the same targets briefly through the
# standalone driver (ctest -L fuzz); this is the long run, by hand:
#   bash scripts/fuzz.sh [seconds per target (default 60)] [target ...]
# New inputs that reach new code are kept in build/fuzz/corpus/<target>; a crash leaves its input
# in build/fuzz/ (crash-*), which the standalone driver replays: <target>_fuzz crash-<hash>.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
SECONDS_PER=${1:-60}
shift || true
TARGETS=${*:-jit_entry gemm_tune_cache dlpack_import}
BUILD=${PYGPUKIT_FUZZ_BUILD_DIR:-build/fuzz}
SAN="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
CC=clang CXX=clang++ cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DPYGPUKIT_WITH_CUDA=OFF -DPYGPUKIT_BUILD_PYTHON=OFF -DPYGPUKIT_BUILD_EXAMPLES=OFF \
  -DPYGPUKIT_LIBFUZZER=ON -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link $SAN" \
  -DCMAKE_EXE_LINKER_FLAGS="$SAN" -DCMAKE_SHARED_LINKER_FLAGS="$SAN" >/dev/null
cmake --build "$BUILD" -j "${PYGPUKIT_JOBS:-$(nproc)}" --target $(printf '%s_fuzz ' $TARGETS)
export ASAN_OPTIONS="allocator_may_return_null=1 detect_leaks=0 ${ASAN_OPTIONS:-}"
export PYGPUKIT_DEVICE=cpu
for t in $TARGETS; do
  mkdir -p "$BUILD/corpus/$t"
  echo "== $t: ${SECONDS_PER}s"
  (cd "$BUILD" && "tests/fuzz/${t}_fuzz" -max_total_time="$SECONDS_PER" -print_final_stats=1 \
    -max_len=4096 "corpus/$t" "$ROOT/tests/fuzz/corpus/$t" 2>&1 | tail -12)
done

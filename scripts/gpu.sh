#!/usr/bin/env bash
# One-call GPU run for the lent H100/H200 machines (see CONTRIBUTING.md): unpacks the carried
# Abseil / GoogleTest .debs (the machine has no network), builds for sm_90a with -j16, runs the
# C++ and Python suites (backend parity included) with PYGPUKIT_DEVICE=cuda, python -m pygpukit and the benchmarks.
#   steps: any of "build test test-gemm test-nn probe-attention sanitize-gemm profile-nn
#   profile-attention profile-gemm selfcheck bench bench-gemm bench-gemm-epilogue
#   bench-scaled-matmul bench-grouped bench-mlp bench-nn bench-attention bench-transformer bench-jit
#   bench-elementwise bench-sorting bench-rng bench-launch
#   bench-memory bench-scheduler bench-suite"
#   (default: build test selfcheck bench bench-memory bench-scheduler)
#   test-nn: gp.nn's Python tests (nn, attention, the llama example) and the C++ nn_test on the
#   GPU, then the Python ones under memcheck
#   bench-nn: benchmarks/nn.py (softmax / norms beside torch; JSON in $OUT); extra arguments in
#   NN_ARGS
#   bench-attention: benchmarks/attention.py (SDPA prefill and decode beside torch's backends;
#   JSON in $OUT); extra arguments in ATTN_ARGS
#   bench-transformer: benchmarks/transformer.py (the Llama-style stack beside torch; JSON in
#   $OUT); extra arguments in TRANSFORMER_ARGS
#   test-gemm: only the matmul / gemm Python tests (fast signal on kernel work; GEMM_K replaces
#   the -k expression, GEMM_PYTEST_ARGS adds pytest arguments)
#   sanitize-gemm: scripts/gemm_sanitize.py under compute-sanitizer memcheck
#   probe-attention: scripts/attention_probe.py (inputs that expose a wrong fragment or
#   descriptor layout of the fused attention kernels), one capped process per variant
#   (PROBE_VARIANTS, PROBE_LIMIT seconds; extra arguments in PROBE_ARGS)
#   profile-nn: Nsight Compute over scripts/nn_profile.py (the row kernels; logs in $OUT)
#   profile-attention: Nsight Compute over scripts/attention_profile.py (the Hopper attention
#   kernel's variants: pipe utilization, stalls; log in $OUT)
#   profile-gemm: Nsight Compute over scripts/gemm_profile.py (the sm90 kernel plain and with a
#   fused bias: stall reasons, source counters; logs in $OUT)
#   sanitize: compute-sanitizer memcheck over the C++ op tests and the kernel families' Python
#   suites, racecheck over reductions and sorting (each run capped at SANITIZE_LIMIT seconds;
#   the lists in SANITIZE_CPP, SANITIZE_PY, SANITIZE_RACE, SANITIZE_GEMM=0 skips the GEMM cases)
#   bench-gemm: benchmarks/gemm.py (JSON in $OUT); extra arguments in GEMM_ARGS
#   bench-gemm-epilogue: benchmarks/gemm_epilogue.py (fused epilogues per family beside torch;
#   JSON in $OUT); extra arguments in EPI_ARGS
#   bench-scaled-matmul: benchmarks/scaled_matmul.py (FP8 scaled products beside
#   torch._scaled_mm; JSON in $OUT); extra arguments in SCALED_ARGS
#   bench-grouped: benchmarks/grouped_matmul.py (mixture-of-experts groups beside a loop of
#   cuBLASLt calls, a torch loop and torch._grouped_mm; JSON in $OUT); extra arguments in
#   GROUPED_ARGS
#   bench-mlp: benchmarks/mlp.py (the 4-layer bf16 MLP beside torch; JSON in $OUT); extra
#   arguments in MLP_ARGS
#   bench-jit: benchmarks/jit.py (compile / cache-hit latency, launch overhead; JSON in $OUT)
#   bench-elementwise: benchmarks/elementwise.py (bandwidth, per-call overhead beside torch and
#   CuPy; JSON in $OUT); extra arguments in EW_ARGS
#   bench-reduction: benchmarks/reduction.py (reductions and scans beside torch and CuPy; JSON
#   in $OUT); extra arguments in RED_ARGS
#   bench-sorting: benchmarks/sorting.py (sort, argsort, unique, nonzero, searchsorted beside
#   torch and CuPy, checked against NumPy; JSON in $OUT); extra arguments in SORT_ARGS
#   bench-rng: benchmarks/rng.py (gp.random beside torch's and CuPy's generators; JSON in $OUT)
#   bench-memory: benchmarks/cpp/memory_bench (Google Benchmark, JSON in $OUT/memory_bench.json)
#   and benchmarks/memory.py (JSON in $OUT)
#   bench-launch: benchmarks/cpp/launch_bench (a tiny add's host time: the driver's launch alone,
#   through the dispatcher, the whole C++ op; JSON in $OUT/launch_bench.json)
#   bench-scheduler: benchmarks/cpp/scheduler_bench (admission decisions), the C++ example
#   service on the GPU, benchmarks/scheduler.py (co-location; JSON in $OUT; extra arguments in
#   SCHED_ARGS) and benchmarks/cpp/colocation (the same loop and load from C++, no Python;
#   $OUT/colocation_cpp.json; extra arguments in COLOC_ARGS)
#   bench-suite: benchmarks/run.py --quick (every area, tables, the combined
#   <gpu>-sm<XY>-quick.json in $OUT with every area's raw JSON; the scripts' own files and logs
#   in /tmp/pgk-suite, the failing ones' log tails in bench_suite.log; charts are drawn here from
#   the combined file: run.py --from-results FILE --out DIR); extra arguments in SUITE_ARGS
#   (e.g. "--compare benchmarks/results/<gpu>-sm90-quick.json --fail-on-regression")
set -uo pipefail
cd "$(dirname "$0")/.."
STEPS=${*:-build test selfcheck bench bench-memory bench-scheduler}
OUTDIR=${OUT:-/tmp/pgk-out}
mkdir -p "$OUTDIR"
DEPS=/tmp/pgk-deps
# Each .deb once (a stamp per package), so debs added later are unpacked on a warm machine too.
if [ -d .deps ]; then
  mkdir -p "$DEPS"
  for d in .deps/*.deb; do
    stamp="$DEPS/.unpacked-$(basename "$d")"
    [ -f "$stamp" ] || { dpkg -x "$d" "$DEPS" && touch "$stamp"; }
  done
fi
export CMAKE_PREFIX_PATH="$DEPS/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
export LD_LIBRARY_PATH="$DEPS/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PYTHONUNBUFFERED=1
BUILD=build/gpu
PY=$(command -v python3)
export PYTHONPATH="$PWD/$BUILD/python"
rc=0
has() { case " $STEPS " in *" $1 "*) return 0 ;; esac; return 1; }
if has build; then
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv || true
  cmake -S . -B $BUILD -G Ninja -DCMAKE_BUILD_TYPE=Release -DPYGPUKIT_CUDA_ARCHS=90a \
    -DPYGPUKIT_BUILD_BENCHMARKS=ON \
    -Dpybind11_DIR="$($PY -c 'import pybind11; print(pybind11.get_cmake_dir())')" \
    -DPython_EXECUTABLE="$PY" >"$OUTDIR/configure.log" 2>&1 || { tail -30 "$OUTDIR/configure.log"; exit 1; }
  cmake --build $BUILD -j16 >"$OUTDIR/build.log" 2>&1 || { grep -E "error|FAILED" "$OUTDIR/build.log" | head -40; exit 1; }
  echo "build OK"
fi
if has test; then
  PYGPUKIT_DEVICE=cuda ctest --test-dir $BUILD --output-on-failure -j8 >"$OUTDIR/ctest.log" 2>&1 || rc=1
  grep -E "tests passed|\*\*\*Failed|Exception" "$OUTDIR/ctest.log" | head -30
  # Timing-sensitive files (scheduler latency, memory limits, transfers) run alone first; the
  # rest, which mostly compile JIT kernels on first use (a few thousand of them on a fresh
  # machine), run as parallel pytest processes sharing one JIT disk cache.
  ALONE="test_scheduler.py test_memory.py test_quota.py test_transfer.py test_event.py"
  ALONE="$ALONE test_errors.py test_launch_queue.py"
  alone=() rest=()
  for f in tests/python/test_*.py; do
    case " $ALONE " in *" $(basename "$f") "*) alone+=("$f") ;; *) rest+=("$f") ;; esac
  done
  PYGPUKIT_DEVICE=cuda $PY -m pytest "${alone[@]}" -q -p no:cacheprovider -rf --maxfail=60 \
    >"$OUTDIR/pytest.log" 2>&1 || rc=1
  pids=()
  for i in "${!rest[@]}"; do
    PYGPUKIT_DEVICE=cuda $PY -m pytest "${rest[$i]}" -q -p no:cacheprovider -rf --maxfail=60 \
      >"$OUTDIR/pytest_$i.log" 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || rc=1; done
  for i in "${!rest[@]}"; do cat "$OUTDIR/pytest_$i.log" >>"$OUTDIR/pytest.log"; rm "$OUTDIR/pytest_$i.log"; done
  grep -E "^(FAILED|ERROR)" "$OUTDIR/pytest.log" | head -60
  grep -E "[0-9]+ (passed|failed)" "$OUTDIR/pytest.log"
fi
if has test-gemm; then
  PYGPUKIT_DEVICE=cuda $PY -m pytest tests/python -q -p no:cacheprovider -rf --maxfail=40 \
    -k "${GEMM_K:-matmul or gemm or linear}" ${GEMM_PYTEST_ARGS:-} >"$OUTDIR/pytest_gemm.log" 2>&1 || rc=1
  grep -E "^(FAILED|ERROR)" "$OUTDIR/pytest_gemm.log" | head -40
  tail -3 "$OUTDIR/pytest_gemm.log"
fi
if has test-nn; then
  # gp.nn's tests and its C++ test on the GPU, then under compute-sanitizer memcheck.
  NN_TESTS="tests/python/test_nn.py tests/python/test_attention.py tests/python/test_llama_example.py"
  # Capped (NN_LIMIT seconds per run): a kernel that hangs must not take the later steps with it.
  NN_LIMIT=${NN_LIMIT:-240}
  PYGPUKIT_DEVICE=cuda timeout "$NN_LIMIT" $PY -m pytest $NN_TESTS -q -p no:cacheprovider -rf \
    >"$OUTDIR/pytest_nn.log" 2>&1 || rc=1
  PYGPUKIT_DEVICE=cuda "$BUILD/tests/cpp/nn_test" >>"$OUTDIR/pytest_nn.log" 2>&1 || rc=1
  grep -E "^(FAILED|ERROR)|FAILED  \]" "$OUTDIR/pytest_nn.log" | head -40
  grep -E "[0-9]+ (passed|failed)|tests? ran" "$OUTDIR/pytest_nn.log"
  SAN=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
  if [ -n "$SAN" ]; then
    PYGPUKIT_DEVICE=cuda timeout "$NN_LIMIT" "$SAN" --tool memcheck --report-api-errors no \
      --error-exitcode 9 $PY -m pytest $NN_TESTS -x -q -p no:cacheprovider \
      >"$OUTDIR/sanitize_nn.log" 2>&1 || rc=1
    grep -E "ERROR SUMMARY" "$OUTDIR/sanitize_nn.log" | tail -1
  fi
fi
if has sanitize-gemm; then
  SAN=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
  if [ -n "$SAN" ]; then
    PYGPUKIT_DEVICE=cuda "$SAN" --tool memcheck --report-api-errors no --error-exitcode 9 $PY scripts/gemm_sanitize.py \
      >"$OUTDIR/sanitize_gemm.log" 2>&1 || rc=1
    grep -E "ERROR SUMMARY|FAIL|Invalid|Error" "$OUTDIR/sanitize_gemm.log" | head -20
  else
    echo "sanitize-gemm: compute-sanitizer not found"; rc=1
  fi
fi
if has probe-attention; then
  # Layout probes of the fused attention kernels (scripts/attention_probe.py): which (row,
  # column) positions of O go wrong, per kernel variant and head dim.
  # Each variant in its own capped process, so that one that hangs does not stop the others.
  for v in ${PROBE_VARIANTS:-default sm90s sm90pp sm80}; do
    [ "$v" = default ] && v=""
    PYGPUKIT_DEVICE=cuda timeout "${PROBE_LIMIT:-60}" $PY scripts/attention_probe.py \
      --variants "$v" ${PROBE_ARGS:-} 2>&1 | tee -a "$OUTDIR/probe_attention.log" || rc=1
  done
fi
if has profile-nn; then
  # Nsight Compute on the nn row kernels (scripts/nn_profile.py: softmax, rms_norm; bf16,
  # float32; 1024 and 4096 columns; three calls each): throughput, occupancy, stalls.
  NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
  if [ -n "$NCU" ]; then
    PYGPUKIT_DEVICE=cuda "$NCU" --clock-control none -k regex:pgk_nn_rows \
      --section SpeedOfLight --section WarpStateStats \
      --section SchedulerStats --section Occupancy --section LaunchStats \
      $PY scripts/nn_profile.py >"$OUTDIR/profile_nn.log" 2>&1 || rc=1
    grep -E "pgk_nn_rows|Duration|Memory Throughput|Achieved Occupancy|Registers|Stall|Issued Warp" \
      "$OUTDIR/profile_nn.log" | head -80
  else
    echo "profile-nn: ncu not found"; rc=1
  fi
fi
if has profile-attention; then
  NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
  if [ -n "$NCU" ]; then
    PYGPUKIT_DEVICE=cuda "$NCU" --clock-control none -k regex:pgk_attn_sm90 \
      --section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats \
      --section SchedulerStats --section MemoryWorkloadAnalysis --section InstructionStats \
      $PY scripts/attention_profile.py >"$OUTDIR/profile_attention.log" 2>&1 || rc=1
    grep -E "pgk_attn|Duration|Throughput|Pipe|Stall|Issued|Eligible|Executed Ipc|L2 Hit" \
      "$OUTDIR/profile_attention.log" | head -120
  else
    echo "profile-attention: ncu not found"; rc=1
  fi
fi
if has profile-gemm; then
  # Nsight Compute on the sm90 kernel plain and with a fused bias (scripts/gemm_profile.py): the
  # third (last) launch of each, speed of light, warp stall reasons and source-level counters.
  NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
  if [ -n "$NCU" ]; then
    PYGPUKIT_DEVICE=cuda "$NCU" --clock-control none -k regex:pgk_gemm_sm90 --launch-skip 2 \
      --launch-count 1 --section SpeedOfLight --section WarpStateStats --section SchedulerStats \
      --section MemoryWorkloadAnalysis --section LaunchStats --section Occupancy \
      $PY scripts/gemm_profile.py >"$OUTDIR/profile_gemm_plain.log" 2>&1 || rc=1
    PYGPUKIT_DEVICE=cuda "$NCU" --clock-control none -k regex:pgk_gemm_sm90 --launch-skip 5 \
      --launch-count 1 --section SpeedOfLight --section WarpStateStats --section SchedulerStats \
      --section MemoryWorkloadAnalysis --section SourceCounters \
      $PY scripts/gemm_profile.py >"$OUTDIR/profile_gemm_bias.log" 2>&1 || rc=1
    grep -E "Duration|Stall|stall|Throughput|Warp Cycles|Issued|Eligible" "$OUTDIR"/profile_gemm_*.log | head -60
  else
    echo "profile-gemm: ncu not found"; rc=1
  fi
fi
if has sanitize; then
  # compute-sanitizer over the kernel families the suites launch: memcheck (out-of-bounds and
  # misaligned accesses, leaks of device allocations) on the C++ op tests and the Python suites of
  # elementwise, reductions, sorting, indexing, random, JIT and user kernels, plus the GEMM cases;
  # racecheck (shared-memory hazards) on the reduction, scan and sort kernels. Each run is capped
  # (SANITIZE_LIMIT seconds); the log says which finished.
  SAN=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
  LIMIT=${SANITIZE_LIMIT:-150}
  san() {  # tool, label, command...
    local tool=$1 label=$2; shift 2
    PYGPUKIT_DEVICE=cuda timeout "$LIMIT" "$SAN" --tool "$tool" --error-exitcode 9 \
      --report-api-errors no "$@" >"$OUTDIR/sanitize_${tool}_$label.log" 2>&1
    local st=$?
    echo "sanitize $tool $label: exit $st ($( [ $st = 124 ] && echo 'time limit' || echo done))" \
      "$(grep -E 'ERROR SUMMARY' "$OUTDIR/sanitize_${tool}_$label.log" | tail -1)"
    [ $st = 9 ] && { rc=1; grep -E -m 10 "Invalid|Race|Hazard|ERROR" "$OUTDIR/sanitize_${tool}_$label.log"; }
  }
  if [ -n "$SAN" ]; then
    for t in ${SANITIZE_CPP-ops random}; do san memcheck "$t" "$BUILD/tests/cpp/${t}_test"; done
    [ "${SANITIZE_GEMM-1}" = 1 ] && san memcheck gemm $PY scripts/gemm_sanitize.py
    for f in ${SANITIZE_PY-reduction sorting indexing random user_kernel jit views manipulation}; do
      san memcheck "py_$f" $PY -m pytest "tests/python/test_$f.py" -x -q -p no:cacheprovider
    done
    for f in ${SANITIZE_RACE-reduction sorting}; do
      san racecheck "py_$f" $PY -m pytest "tests/python/test_$f.py" -x -q -p no:cacheprovider
    done
  else
    echo "sanitize: compute-sanitizer not found"; rc=1
  fi
fi
if has selfcheck; then
  PYGPUKIT_DEVICE=cuda $PY -m pygpukit 2>&1 | tee "$OUTDIR/selfcheck.log" || rc=1
  (cd /tmp && PYGPUKIT_DEVICE=cuda $PY "$OLDPWD/examples/demo.py") || rc=1
fi
if has bench; then
  # the quick GEMM table (ours, cuBLASLt, torch); bench-gemm runs the full one
  $PY benchmarks/gemm.py --quick --out "$OUTDIR" 2>&1 | tee "$OUTDIR/bench.log" || rc=1
fi
if has bench-gemm; then
  PYGPUKIT_DEVICE=cuda $PY benchmarks/gemm.py --out "$OUTDIR" ${GEMM_ARGS:-} 2>&1 |
    tee "$OUTDIR/bench_gemm.log" || rc=1
fi
if has bench-gemm-epilogue; then
  PYGPUKIT_DEVICE=cuda $PY benchmarks/gemm_epilogue.py --out "$OUTDIR" ${EPI_ARGS:-} 2>&1 |
    tee "$OUTDIR/bench_gemm_epilogue.log" || rc=1
fi
if has bench-scaled-matmul; then
  PYGPUKIT_DEVICE=cuda $PY benchmarks/scaled_matmul.py --out "$OUTDIR" ${SCALED_ARGS:-} 2>&1 |
    tee "$OUTDIR/bench_scaled_matmul.log" || rc=1
fi
if has bench-nn; then
  PYGPUKIT_DEVICE=cuda $PY benchmarks/nn.py --out "$OUTDIR" ${NN_ARGS:-} 2>&1 |
    tee "$OUTDIR/bench_nn.log" || rc=1
fi
if has bench-attention; then
  PYGPUKIT_DEVICE=cuda $PY benchmarks/attention.py --out "$OUTDIR" ${ATTN_ARGS:-} 2>&1 |
    tee "$OUTDIR/bench_attention.log" || rc=1
fi
if has bench-transformer; then
  PYGPUKIT_DEVICE=cuda $PY benchmarks/transformer.py --out "$OUTDIR" ${TRANSFORMER_ARGS:-} 2>&1 |
    tee "$OUTDIR/bench_transformer.log" || rc=1
fi
if has bench-grouped; then
  PYGPUKIT_DEVICE=cuda $PY benchmarks/grouped_matmul.py --out "$OUTDIR" ${GROUPED_ARGS:-} 2>&1 |
    tee "$OUTDIR/bench_grouped.log" || rc=1
fi
if has bench-mlp; then
  PYGPUKIT_DEVICE=cuda $PY benchmarks/mlp.py --out "$OUTDIR" ${MLP_ARGS:-} 2>&1 |
    tee "$OUTDIR/bench_mlp.log" || rc=1
fi
if has bench-jit; then
  PYGPUKIT_DEVICE=cuda $PY benchmarks/jit.py --out "$OUTDIR" 2>&1 | tee "$OUTDIR/bench_jit.log" || rc=1
fi
if has bench-elementwise; then
  PYGPUKIT_DEVICE=cuda $PY benchmarks/elementwise.py --out "$OUTDIR" ${EW_ARGS:-} 2>&1 |
    tee "$OUTDIR/bench_elementwise.log" || rc=1
fi
if has bench-reduction; then
  PYGPUKIT_DEVICE=cuda $PY benchmarks/reduction.py --out "$OUTDIR" ${RED_ARGS:-} 2>&1 |
    tee "$OUTDIR/bench_reduction.log" || rc=1
fi
if has bench-sorting; then
  PYGPUKIT_DEVICE=cuda $PY benchmarks/sorting.py --out "$OUTDIR" ${SORT_ARGS:-} 2>&1 |
    tee "$OUTDIR/bench_sorting.log" || rc=1
fi
if has bench-rng; then
  PYGPUKIT_DEVICE=cuda $PY benchmarks/rng.py --out "$OUTDIR" 2>&1 | tee "$OUTDIR/bench_rng.log" || rc=1
fi
if has bench-memory; then
  PYGPUKIT_DEVICE=cuda $BUILD/benchmarks/cpp/memory_bench --benchmark_out="$OUTDIR/memory_bench.json" \
    --benchmark_out_format=json 2>&1 | tee "$OUTDIR/memory_bench.log" || rc=1
  PYGPUKIT_DEVICE=cuda $PY benchmarks/memory.py --out "$OUTDIR" 2>&1 | tee "$OUTDIR/bench_memory.log" || rc=1
fi
if has bench-launch; then
  # Random interleaving of the repetitions: the machines' host noise hits every layer alike.
  PYGPUKIT_DEVICE=cuda $BUILD/benchmarks/cpp/launch_bench --benchmark_repetitions=10 \
    --benchmark_enable_random_interleaving=true --benchmark_report_aggregates_only=true \
    --benchmark_out="$OUTDIR/launch_bench.json" --benchmark_out_format=json 2>&1 |
    tee "$OUTDIR/launch_bench.log" || rc=1
fi
if has bench-scheduler; then
  PYGPUKIT_DEVICE=cuda $BUILD/benchmarks/cpp/scheduler_bench \
    --benchmark_out="$OUTDIR/scheduler_bench.json" --benchmark_out_format=json 2>&1 |
    tee "$OUTDIR/scheduler_bench.log" || rc=1
  PYGPUKIT_DEVICE=cuda $BUILD/examples/inference_service --size 1024 --requests 200 2>&1 |
    tee "$OUTDIR/inference_service.log" || rc=1
  PYGPUKIT_DEVICE=cuda $PY benchmarks/scheduler.py --out "$OUTDIR" ${SCHED_ARGS:-} 2>&1 |
    tee "$OUTDIR/bench_scheduler.log" || rc=1
  PYGPUKIT_DEVICE=cuda $BUILD/benchmarks/cpp/colocation --out "$OUTDIR/colocation_cpp.json" \
    ${COLOC_ARGS:-} 2>&1 | tee "$OUTDIR/colocation_cpp.log" || rc=1
fi
if has bench-suite; then
  PYGPUKIT_DEVICE=cuda $PY benchmarks/run.py --quick --out "$OUTDIR" --work-dir /tmp/pgk-suite \
    --build-dir $BUILD --no-charts ${SUITE_ARGS:-} 2>&1 | tee "$OUTDIR/bench_suite.log" || rc=1
fi
exit $rc

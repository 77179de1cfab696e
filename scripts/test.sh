#!/usr/bin/env bash
# README command 2 (and what .ci/run calls): builds the C++ runtime, CUDA kernels (one arch as a
# compile check unless PYGPUKIT_CUDA_ARCHS says otherwise), the Python extension and the tests,
# then runs every C++ test (CTest), the Python tests (pytest) and checks the wheel.
# On a GPU machine: PYGPUKIT_DEVICE=cuda bash scripts/test.sh runs the same suites on the GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
pgk_install_system_deps
python3 -m pip install -q numpy pytest hypothesis pybind11 scikit-build-core ml_dtypes
# torch for pygpukit.torch's tests and the interop tests with torch (its CPU path; about a minute
# to install from PyPI); where it cannot be installed those tests skip
python3 -m pip install -q torch || echo "test.sh: torch not installed; its tests will skip"
BUILD=${PYGPUKIT_BUILD_DIR:-build/test}
ARCHS=${PYGPUKIT_CUDA_ARCHS:-90a}
JOBS=${PYGPUKIT_JOBS:-$(nproc)}
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPYGPUKIT_CUDA_ARCHS="$ARCHS" \
  -Dpybind11_DIR="$(python3 -c 'import pybind11; print(pybind11.get_cmake_dir())')" \
  -DPython_EXECUTABLE="$(command -v python3)" ${PYGPUKIT_CMAKE_ARGS:-}
cmake --build "$BUILD" -j "$JOBS"
ctest --test-dir "$BUILD" --output-on-failure -j "$JOBS"
PYTHONPATH="$PWD/$BUILD/python" python3 -m pytest tests/python -q -p no:cacheprovider
if [ "${PYGPUKIT_SKIP_WHEEL:-0}" != 1 ]; then
  # The wheel `pip install .` would install, built and imported from a scratch directory.
  rm -rf "$BUILD/wheel"
  PYGPUKIT_CUDA_ARCHS="$ARCHS" python3 -m pip wheel -q --no-deps --no-build-isolation \
    -w "$BUILD/wheel" . -Cbuild-dir="$BUILD/wheel-build"
  (cd "$BUILD/wheel" && python3 -m zipfile -e pygpukit-*.whl site && \
    cd site && python3 -m pygpukit >/dev/null && echo "wheel: import + self-check OK")
fi

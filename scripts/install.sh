#!/usr/bin/env bash
# README command 1: installs what pygpukit needs (system packages, then the Python package with
# its C++ runtime and CUDA kernels when nvcc is found) and runs the demo.
#   PYGPUKIT_CUDA_ARCHS=90a bash scripts/install.sh   # build kernels for one arch only (faster)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
pgk_install_system_deps
python3 -m pip install --upgrade pip >/dev/null
python3 -m pip install .
cd /tmp  # import the installed package, not the source tree
python3 -m pygpukit
python3 "$OLDPWD/examples/demo.py"

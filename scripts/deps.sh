#!/usr/bin/env bash
# Installs the system packages pygpukit builds against (Debian / Ubuntu), when missing.
# Sourced by install.sh and test.sh; does nothing when everything is present.
pgk_install_system_deps() {
  local pkgs=(build-essential cmake ninja-build libabsl-dev libdlpack-dev libgtest-dev python3-dev python3-pip)
  local missing=()
  for p in "${pkgs[@]}"; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "pygpukit: please install: ${missing[*]} (needs Abseil, GoogleTest, CMake >= 3.24, a C++20 compiler)" >&2
    return 1
  fi
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  echo "pygpukit: installing system packages: ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
}

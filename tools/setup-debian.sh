#!/usr/bin/env bash
# Installs everything kiln needs on Debian 12 (run as root). Idempotent.
# The CUDA 13 toolkit is expected at /usr/local/cuda (not a Debian package).
set -euo pipefail
pkgs=(
  build-essential cmake ninja-build ccache git pkg-config clang libclang-rt-14-dev
  libmlir-19-dev mlir-19-tools llvm-19-dev llvm-19-tools
  libonnx-dev libonnx-testdata python3-onnx libprotobuf-dev protobuf-compiler
  python3-torch python3-torchvision python3-numpy
  libcli11-dev libyaml-cpp-dev libsqlite3-dev libgtest-dev nlohmann-json3-dev libre2-dev
  zlib1g-dev
)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -q
  $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
# Code generation needs the CUDA 13 toolkit's headers and NVRTC (not a Debian package).
[ -f /usr/local/cuda/include/nvrtc.h ] || { echo "error: CUDA 13 toolkit not found at /usr/local/cuda" >&2; exit 1; }
echo "setup: all dependencies present"

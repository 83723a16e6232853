#!/usr/bin/env bash
# Installs everything kiln needs on Debian 12 (run as root). Idempotent.
# The CUDA 13 toolkit is expected at /usr/local/cuda (not a Debian package).
set -euo pipefail
pkgs=(
  build-essential cmake ninja-build ccache git pkg-config clang clang-format libclang-rt-14-dev zsh fish
  libmlir-19-dev mlir-19-tools llvm-19-dev llvm-19-tools
  libonnx-dev libonnx-testdata python3-onnx libprotobuf-dev protobuf-compiler
  python3-torch python3-torchvision python3-numpy python3-venv
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
# onnxruntime (the references of the real-model corpus and the ort tests) is not a Debian package:
# a virtual environment from models/realmodels/requirements.txt. Without the registry the tests
# that need it skip; nothing else does.
venv=${KILN_VENV:-$HOME/.cache/kiln/venv}
req="$(dirname "$0")/../models/realmodels/requirements.txt"
if ! "$venv/bin/python" -c 'import onnxruntime, onnx, numpy' 2>/dev/null; then
  { python3 -m venv "$venv" && "$venv/bin/pip" install -q --disable-pip-version-check -r "$req"; } ||
    echo "setup: warning: could not install onnxruntime into $venv (registry unreachable?): the realmodels and ort tests will skip" >&2
fi
echo "setup: all dependencies present"

#!/usr/bin/env bash
# Configure (once) and build the sanitizer build in build-sanitize/: clang, AddressSanitizer and
# UndefinedBehaviorSanitizer on the runtime, the importer, npz, calibration, cache and support code
# and their tests, plus the libFuzzer targets (tools/fuzz). CMake option KILN_SANITIZE.
set -euo pipefail
cd "$(dirname "$0")/.."
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/kiln-ccache}
if [ ! -f build-sanitize/build.ninja ]; then
  CC=clang CXX=clang++ cmake -S . -B build-sanitize -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DKILN_SANITIZE=ON -DKILN_FUZZ=ON
fi
cmake --build build-sanitize -j "$(nproc)" "$@"

#!/usr/bin/env bash
# The test command (README, CI): set up, build, run every test. (GPU tests, once they exist,
# carry the ctest label `gpu` and skip where no GPU is present.)
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup-debian.sh
bash tools/build.sh
cd build
ctest --output-on-failure -j "$(nproc)" "$@"

#!/usr/bin/env bash
# The test command (README, CI): set up, build, run every test. GPU tests carry the ctest label
# `gpu` and skip where no GPU is present.
#   1. build/ (tools/build.sh) and its ctest: unit, IR, conformance, CLI, hostile input, zoo;
#   2. unless KILN_QUICK_TESTS=1: build-sanitize/ (tools/build-sanitize.sh: ASan + UBSan) and its
#      ctest, then each libFuzzer target for KILN_FUZZ_SECONDS (default 60) seconds.
# Extra arguments go to the first ctest and skip steps 2 (e.g. `-L zoo`, `-R lit`).
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup-debian.sh
bash tools/build.sh
(cd build && ctest --output-on-failure -j "$(nproc)" "$@")
if [ "${KILN_QUICK_TESTS:-0}" = 1 ] || [ $# -gt 0 ]; then
  exit 0
fi
start=$(date +%s)
bash tools/build-sanitize.sh
(cd build-sanitize && ctest --output-on-failure -j "$(nproc)")
echo "sanitizer build and tests: $(($(date +%s) - start)) s"
for target in importer engine npz route calibration; do
  bash tools/fuzz/run_fuzz.sh "${KILN_FUZZ_SECONDS:-60}" "$target"
done

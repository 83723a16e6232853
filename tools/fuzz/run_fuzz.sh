#!/usr/bin/env bash
# Bounded libFuzzer run over the ONNX importer (clang + ASan/UBSan in build-fuzz/).
#   bash tools/fuzz/run_fuzz.sh [SECONDS]      (default 300)
# Seeds: every tiny model and the ONNX node tests' models. Crashes are written to
# build-fuzz/crashes/; copy each without its format byte (tail -c +2 FILE) into
# tests/fuzz-regressions/, which the cli test replays.
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-300}
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/kiln-ccache}
if [ ! -f build-fuzz/build.ninja ]; then
  CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DKILN_FUZZ=ON -DKILN_BUILD_TESTS=OFF
fi
cmake --build build-fuzz --target kiln-fuzz-importer -j "$(nproc)"
corpus=build-fuzz/corpus
mkdir -p "$corpus" build-fuzz/crashes
# Seed files: a format byte (0 binary, 1 text) followed by the model.
for f in models/tiny/*.onnx models/tiny/bad/*.onnx; do
  { printf '\x00'; cat "$f"; } > "$corpus/bin_$(basename "$f")"
done
for f in models/tiny/*.onnxtxt models/tiny/bad/*.onnxtxt tests/lit/importer/*.onnxtxt; do
  { printf '\x01'; cat "$f"; } > "$corpus/txt_$(basename "$f")"
done
for d in /usr/share/libonnx-testdata/data/node/test_*; do
  [ -f "$d/model.onnx" ] && { printf '\x00'; cat "$d/model.onnx"; } > "$corpus/node_$(basename "$d")"
done
ASAN_OPTIONS=detect_leaks=0 build-fuzz/bin/kiln-fuzz-importer "$corpus" \
  -max_total_time="$secs" -timeout=10 -rss_limit_mb=4096 -max_len=65536 \
  -artifact_prefix=build-fuzz/crashes/ -print_final_stats=1

#!/usr/bin/env bash
# Bounded libFuzzer runs (clang + ASan/UBSan in build-fuzz/).
#   bash tools/fuzz/run_fuzz.sh [SECONDS] [importer|engine]     (default: 300 s, importer)
# importer: any bytes as a binary or text ONNX model (seeds: tiny models, lit inputs, ONNX node
#           tests); engine: any bytes as an engine file (seeds: the runtime's test engines).
# Crashes are written to build-fuzz/crashes/; copy an importer crash without its format byte
# (tail -c +2 FILE) into tests/fuzz-regressions/, which the cli test replays.
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-300}
target=${2:-importer}
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/kiln-ccache}
if [ ! -f build-fuzz/build.ninja ]; then
  CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DKILN_FUZZ=ON -DKILN_BUILD_TESTS=OFF
fi
corpus=build-fuzz/corpus-$target
mkdir -p "$corpus" build-fuzz/crashes
case $target in
  importer)
    cmake --build build-fuzz --target kiln-fuzz-importer -j "$(nproc)"
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
    ;;
  engine)
    cmake --build build-fuzz --target kiln-fuzz-engine -j "$(nproc)"
    # Seeds: a mode byte (odd: the fuzzer repairs the checksum) followed by an engine; the test
    # engine comes from the main build (tools/build.sh).
    build/bin/kiln-make-test-engine build-fuzz/seed.kiln > /dev/null
    { printf '\x00'; cat build-fuzz/seed.kiln; } > "$corpus/plain.kiln"
    { printf '\x01'; cat build-fuzz/seed.kiln; } > "$corpus/repaired.kiln"
    ;;
  *) echo "unknown fuzz target '$target' (importer or engine)" >&2; exit 2 ;;
esac
ASAN_OPTIONS=detect_leaks=0 "build-fuzz/bin/kiln-fuzz-$target" "$corpus" \
  -max_total_time="$secs" -timeout=10 -rss_limit_mb=4096 -max_len=65536 \
  -artifact_prefix=build-fuzz/crashes/ -print_final_stats=1

#!/usr/bin/env bash
# Bounded libFuzzer runs in the sanitizer build (build-sanitize/, tools/build-sanitize.sh: clang,
# ASan + UBSan + libFuzzer coverage on every kiln object; configured and built here if needed).
#   bash tools/fuzz/run_fuzz.sh [SECONDS] [importer|engine|npz|route|calibration]   (default: 300 s, importer)
# Seeds are made from the repository (tiny and lit models, ONNX node tests, the runtime's test
# engine, numpy-written npz files, route expressions, a calibration file); the corpus grows in
# build-sanitize/corpus-TARGET. Crashes go to build-sanitize/crashes/ and the exit code is
# non-zero; copy an importer crash without its format byte (tail -c +2 FILE) into
# tests/fuzz-regressions/, which the cli test and the sanitizer build replay. The last line says
# how many inputs ran: "fuzz TARGET: S s, N executions, ...".
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-300}
target=${2:-importer}
b=build-sanitize
bash tools/build-sanitize.sh --target "kiln-fuzz-$target" kiln-make-test-engine >/dev/null
corpus=$b/corpus-$target
mkdir -p "$corpus" $b/crashes
case $target in
  importer)
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
    # Seeds: a mode byte (odd: the fuzzer repairs the checksum) followed by the test engine.
    $b/bin/kiln-make-test-engine $b/seed.kiln > /dev/null
    { printf '\x00'; cat $b/seed.kiln; } > "$corpus/plain.kiln"
    { printf '\x01'; cat $b/seed.kiln; } > "$corpus/repaired.kiln"
    ;;
  npz)
    cp models/tiny/*.npz "$corpus/"
    ;;
  route)
    printf 'precision=fp16|bf16;gemm\\.tile=128x.*\nfc1\nconv\n' > "$corpus/a"
    printf 'node\\..*\\.tile=(64x64|128x128);fusion\\..*=.*\nlayer1/conv2\nfc\n' > "$corpus/b"
    printf 'precision=fp16;node.fc1.precision=fp32\nfc1\n' > "$corpus/c"
    ;;
  calibration)
    printf '{"format": "kiln-calibration", "version": 1, "kiln": "0.1.0", "model_hash": "0123456789abcdef",\n "method": "percentile", "percentile": 99.9, "batches": 2,\n "ranges": {"fc1:0": {"min": -1.5, "max": 2.0, "amax": 1.75}}}\n' > "$corpus/seed.calib"
    ;;
  *) echo "unknown fuzz target '$target' (importer, engine, npz, route or calibration)" >&2; exit 2 ;;
esac
log=$b/fuzz-$target.log
set +e
ASAN_OPTIONS=detect_leaks=0 "$b/bin/kiln-fuzz-$target" "$corpus" \
  -max_total_time="$secs" -timeout=10 -rss_limit_mb=4096 -max_len=65536 \
  -artifact_prefix=$b/crashes/ -print_final_stats=1 >"$log" 2>&1
rc=$?
set -e
runs=$(grep -Eo 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -Eo '[0-9]+$' || echo 0)
cov=$(grep -Eo 'cov: [0-9]+' "$log" | tail -n1 | grep -Eo '[0-9]+' || echo 0)
echo "fuzz $target: $secs s, $runs executions, coverage $cov, corpus $(ls "$corpus" | wc -l) files, exit $rc"
if [ $rc -ne 0 ]; then
  tail -n 40 "$log" >&2
  exit 1
fi

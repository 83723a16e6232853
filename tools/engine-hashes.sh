#!/usr/bin/env bash
# Compiles a fixed set of models and routes for sm_90 and prints one "sha256  model route" line
# per engine: a refactoring of the compiler that must not change engines is checked by diffing
# this output before and after.
#   bash tools/engine-hashes.sh [KILN_BINARY] > hashes.txt
# The zoo (build/models, made by the ctest fixture or models/make_zoo.py) is included when present.
set -uo pipefail
cd "$(dirname "$0")/.."
kiln=${1:-build/bin/kiln}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
routes=("" "precision=fp16" "precision=bf16" "precision=fp16;gemm.tactic=kiln" "layout.conv=nchw;gemm.tactic=kiln"
        "fusion.epilogue=off;fusion.elementwise=off" "precision=fp16;fusion.attention=off" "gemm.tf32=on")
models=(models/tiny/*.onnxtxt)
for m in resnet50 mobilenetv2_b32 vit_b16_b32 bert_base_b32_s128 gpt2_small_s512; do
  [ -f "build/models/$m.onnx" ] && models+=("build/models/$m.onnx")
done
for m in "${models[@]}"; do
  for r in "${routes[@]}"; do
    out="$tmp/e.kiln"
    rm -f "$out"
    if "$kiln" compile "$m" --arch sm_90 --route "$r" -o "$out" > "$tmp/log" 2>&1; then
      echo "$(sha256sum < "$out" | cut -c1-16)  $m  '$r'"
    else
      echo "failed            $m  '$r': $(grep -m1 error "$tmp/log")"
    fi
  done
done

#!/usr/bin/env bash
# int8 post-training quantization accuracy of all-MiniLM-L6-v2 (real weights) on the CPU
# evaluator: export, calibrate with each method on the 300 calibration sentences, then the
# cosine of the 100 held-out sentence embeddings with PyTorch's fp32 ones. ~10 min on 2 cores.
#   bash bench/minilm_int8.sh [OUT_DIR]      (default build/models)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-build/models}
kiln=${KILN:-build/bin/kiln}
model=$out/minilm_l6_b16_s64.onnx
[ -f "$model" ] || /usr/bin/python3 models/make_minilm.py --out "$out"
for m in minmax percentile entropy; do
  "$kiln" calibrate "$model" --data "$out/minilm_calib_b16_s64" --method "$m" -o "$out/minilm.$m.calib"
done
# FFN2's input (the GELU output, rare large values) is the most sensitive: also measured kept float.
/usr/bin/python3 bench/quant_accuracy.py "$kiln" "$model" "$out/minilm_heldout_b16_s64" --rows 100 \
  --calib "minmax=$out/minilm.minmax.calib" --calib "percentile=$out/minilm.percentile.calib" \
  --calib "entropy=$out/minilm.entropy.calib" --calib "minmax_ffn2_float=$out/minilm.minmax.calib@.*/dense_1/MatMul"

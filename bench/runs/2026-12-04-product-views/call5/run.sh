#!/usr/bin/env bash
# Session 2026-12-04c, call 5: after review -- one batch-stride rule (uniformBatchStride) for
# CanonicalizeLinear, kiln-product-views and tryLibraryGemm; productOf shared. quick, then ViT fp16
# (its classifier now reads the CLS row in place) vs onnxruntime.
set -u
export KILN_BIN=.carry/bin KILN_CASES=.carry/cases KILN_ONNX_DATA=$PWD/.carry/onnxnode
t0=$(date +%s)
( python3 models/make_zoo.py --out /tmp/zoo --no-check --only vit_b16_b32 && \
  python3 bench/ort_reference.py /tmp/zoo/vit_b16_b32.onnx /tmp/zoo/ref_vit_b16_b32 ) > /tmp/zoo_gen.log 2>&1 &
OUT=$OUT/quick timeout 420 bash bench/gpu_suite.sh quick
echo "quick $(( $(date +%s) - t0 )) s: $(grep -c 'rc=0' $OUT/quick/summary.txt) of $(wc -l < $OUT/quick/summary.txt) rc=0"
grep -v 'rc=0' $OUT/quick/summary.txt | cut -c1-300
grep -E '^(kernel_cases|gpu_conformance)' $OUT/quick/summary.txt | cut -c1-200
wait
for r in "precision=fp16" ""; do
  timeout 40 .carry/bin/kiln-gpu-check /tmp/zoo/vit_b16_b32.onnx --reference-dir /tmp/zoo/ref_vit_b16_b32 --route "$r" --iterations 50 > /tmp/v.log 2>&1
  echo "vit [$r] rc=$? $(grep -E 'built|rel_l2|median' /tmp/v.log | sed 's/  */ /g' | tr '\n' '|')"
done
echo "done $(( $(date +%s) - t0 )) s"
cd $OUT && tar czf quick_logs.tgz quick/logs && rm -rf quick/logs

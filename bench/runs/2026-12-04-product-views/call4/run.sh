#!/usr/bin/env bash
# Session 2026-12-04c, call 4: quick (13 routes) with product views (offsets fixed for cuBLASLt
# launches) and gemm.split=auto; GPT-2 small fp32 (packed c_attn heads read at offsets) vs onnxruntime.
set -u
export KILN_BIN=.carry/bin KILN_CASES=.carry/cases KILN_ONNX_DATA=$PWD/.carry/onnxnode
t0=$(date +%s)
( python3 models/make_zoo.py --out /tmp/zoo --no-check --only gpt2_small_s512 && \
  python3 bench/ort_reference.py /tmp/zoo/gpt2_small_s512.onnx /tmp/zoo/ref_gpt2_small_s512 ) > /tmp/zoo_gen.log 2>&1 &
OUT=$OUT/quick timeout 480 bash bench/gpu_suite.sh quick
echo "quick $(( $(date +%s) - t0 )) s: $(grep -c 'rc=0' $OUT/quick/summary.txt) of $(wc -l < $OUT/quick/summary.txt) rc=0"
grep -v 'rc=0' $OUT/quick/summary.txt | cut -c1-300
grep -E '^(kernel_cases|gpu_conformance)' $OUT/quick/summary.txt | cut -c1-200
wait
for r in "" "gemm.split=on"; do
  timeout 60 .carry/bin/kiln-gpu-check /tmp/zoo/gpt2_small_s512.onnx --reference-dir /tmp/zoo/ref_gpt2_small_s512 --route "$r" --iterations 100 > /tmp/g.log 2>&1
  echo "gpt2 [$r] rc=$? $(grep -E 'built|rel_l2|median' /tmp/g.log | sed 's/  */ /g' | tr '\n' '|')"
done
echo "done $(( $(date +%s) - t0 )) s"
cd $OUT && tar czf quick_logs.tgz quick/logs && rm -rf quick/logs

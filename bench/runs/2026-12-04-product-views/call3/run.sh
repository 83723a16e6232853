#!/usr/bin/env bash
# Session 2026-12-04c, call 3: products reading head views in place + gemm.split=auto (fp32).
# Node tests and case/tiny models over 7 routes vs the CPU evaluator; ViT-B/16 b32 fp32/TF32 vs
# onnxruntime with the split on (auto) and off.
set -u
export KILN_BIN=.carry/bin KILN_CASES=.carry/cases
t0=$(date +%s)
( python3 models/make_zoo.py --out /tmp/zoo --no-check --only vit_b16_b32 && \
  python3 bench/ort_reference.py /tmp/zoo/vit_b16_b32.onnx /tmp/zoo/ref_vit_b16_b32 ) > $OUT/zoo_gen.log 2>&1 &
zpid=$!
timeout 330 python3 tests/conformance/gpu_conformance.py .carry/bin/kiln --data $PWD/.carry/onnxnode --out $OUT/conformance_gpu.txt > $OUT/conf.log 2>&1 &
cpid=$!
mkdir -p $OUT/logs
for m in models/tiny/{mlp,conv_bn_relu,opset11_mix,shape_chain,seq_first_linear,pool_same,attention,views,einsum}.onnxtxt .carry/cases/*.onnx; do
  stem=$(basename $m); stem=${stem%%.*}
  for r in "" "gemm.tf32=on" "gemm.tactic=kiln" "precision=fp16" "precision=fp16;fusion.attention=off;gemm.split=on" \
           "precision=bf16;fusion.attention=off;gemm.split=on;gemm.tactic=kiln" "fusion.epilogue=off;fusion.elementwise=off"; do
    [ $(( $(date +%s) - t0 )) -gt 330 ] && break 2
    timeout 30 .carry/bin/kiln-gpu-check $m --route "$r" --iterations 3 > $OUT/logs/${stem}_${r//[^a-z0-9]/_}.log 2>&1
    echo "$stem [$r] rc=$? $(grep -E 'built in|rel_l2' $OUT/logs/${stem}_${r//[^a-z0-9]/_}.log | tr '\n' ' ' | sed 's/  */ /g' | cut -c1-200)"
  done
done > $OUT/models.txt
echo "models: $(grep -c 'rc=0' $OUT/models.txt) of $(wc -l < $OUT/models.txt) rc=0, $(( $(date +%s) - t0 )) s"; grep -v 'rc=0' $OUT/models.txt
wait $cpid; tail -2 $OUT/conformance_gpu.txt
wait $zpid; echo "zoo ready $(( $(date +%s) - t0 )) s"
for r in "" "gemm.split=off" "gemm.tf32=on" "gemm.tf32=on;gemm.split=off"; do
  timeout 60 .carry/bin/kiln-gpu-check /tmp/zoo/vit_b16_b32.onnx --reference-dir /tmp/zoo/ref_vit_b16_b32 --route "$r" --iterations 100 --profile > $OUT/logs/vit_${r//[^a-z0-9]/_}.log 2>&1
  echo "vit [$r] rc=$? $(head -9 $OUT/logs/vit_${r//[^a-z0-9]/_}.log | grep -E 'built|rel_l2|median|kiln_copy|cublasLt ' | sed 's/  */ /g' | tr '\n' '|')"
done
echo "done $(( $(date +%s) - t0 )) s"

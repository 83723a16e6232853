#!/usr/bin/env bash
# Everything that needs the GPU, in one call (the device time is short): the zoo is generated
# with the host's PyTorch, then every check writes its log under $OUT.
#   bash bench/gpu_suite.sh            (from the repo root, with build/bin carried)
set -u
OUT=${OUT:-/tmp/kiln-gpu-out}
mkdir -p "$OUT"
bin=build/bin
export PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader; git log -1 --format=%H 2>/dev/null; date -u; } > "$OUT/host.txt" 2>&1
python3 models/make_zoo.py --out /tmp/zoo --no-check > "$OUT/zoo.log" 2>&1 || echo "zoo generation failed" >> "$OUT/summary.txt"
run() {  # name, command...: log to $OUT/name.log, one summary line per check
  local name=$1; shift
  timeout 300 "$@" > "$OUT/$name.log" 2>&1
  echo "$name rc=$? | $(grep -E 'rel_l2|latency|skipped|failed|error|passed|FAIL|output' "$OUT/$name.log" | tr '\n' '|' | cut -c1-400)" >> "$OUT/summary.txt"
}
for m in mlp conv_bn_relu opset11_mix shape_chain; do run "tiny_$m" $bin/kiln-gpu-check models/tiny/$m.onnxtxt --iterations 20; done
# Every emitted kernel case against onnxruntime (NVRTC + driver through ctypes).
$bin/kiln-kernel-cases-dump > /tmp/cases.jsonl && run kernel_cases python3 tests/codegen/gpu_check.py /tmp/cases.jsonl
[ -x $bin/kiln-make-test-engine ] && $bin/kiln-make-test-engine /tmp/axpb.kiln > /dev/null 2>&1 && run c_api_test $bin/kiln-c-api-test /tmp/axpb.kiln
# The README's C example on an engine that `kiln compile` built here.
$bin/kiln compile /tmp/zoo/resnet18.onnx -o /tmp/resnet18.kiln > "$OUT/compile_resnet18.log" 2>&1 && run c_example $bin/kiln-example /tmp/resnet18.kiln
# fp32 accuracy against the CPU reference (double), then latency.
for m in resnet18 resnet50 mobilenetv2_b32; do run "zoo_$m" $bin/kiln-gpu-check /tmp/zoo/$m.onnx --iterations 30; done
# The larger models against onnxruntime (CPU, fp32; the CPU evaluator is too slow for them).
for m in resnet50_b32 vit_b16_b32 bert_base_b32_s128 gpt2_small_s512; do
  python3 bench/ort_reference.py /tmp/zoo/$m.onnx /tmp/ref_$m > "$OUT/ort_$m.log" 2>&1
  run "zoo_$m" $bin/kiln-gpu-check /tmp/zoo/$m.onnx --reference-dir /tmp/ref_$m --iterations 20
done
cat "$OUT/summary.txt"

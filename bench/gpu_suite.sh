#!/usr/bin/env bash
# Everything that needs the GPU, in as few device calls as possible (device time is short).
#
#   bash bench/gpu_suite.sh check   # correctness: kernel cases, tiny and case models over many
#                                   # routes, the zoo in fp32 and fp16 against onnxruntime, C API
#   bash bench/gpu_suite.sh quick   # correctness without the zoo, in one short call: the ONNX node
#                                   # tests, kernel cases, tiny/case/QDQ models over the main routes
#   bash bench/gpu_suite.sh bench   # side-by-side latency: kiln vs PyTorch (bench/torch_baselines.py;
#                                   # $KILN_TORCH_MODES: its modes, default all; fp16, or fp32 with
#                                   # KILN_TORCH_DTYPE=fp32 KILN_BENCH_ROUTE= , TF32 with
#                                   # KILN_TORCH_DTYPE=tf32 KILN_BENCH_ROUTE=gemm.tf32=on)
#   bash bench/gpu_suite.sh tune    # the tuner: fast/mixed searches on ResNet-50 b32 and BERT-base,
#                                   # a tight accuracy constraint, cache hits, interrupt + --resume
#   bash bench/gpu_suite.sh tune-quick  # the tuner on a small case model in a minute: cache answers,
#                                   # an onnxruntime --reference, two measuring workers (2+ GPUs)
#   bash bench/gpu_suite.sh conformance  # the ONNX node tests passing on the CPU evaluator, on the GPU
#   bash bench/gpu_suite.sh zoo     # zoo models ($KILN_ZOO_MODELS) over routes ($KILN_ROUTES, '|'-separated)
#                                   # against onnxruntime, 100 runs each, with per-launch profiles
#   bash bench/gpu_suite.sh int8    # int8/fp8: the 8-bit product kernel (exactness, speed), int8 and
#                                   # fp8 engines vs the CPU evaluator, host-compiled engines (MiniLM)
#                                   # on held-out batches
#   bash bench/gpu_suite.sh int8-zoo  # BERT-base and ResNet-50 int8 and fp8 vs fp16 vs fp32;
#                                     # ResNet-50 NCHW vs NHWC
#   bash bench/gpu_suite.sh engines   # only the host-compiled engines of $KILN_INT8_DIR
#   bash bench/gpu_suite.sh reliability  # the runtime under load (issue 21): contexts in 2 and 8
#                                   # threads (kiln-stress; $KILN_STRESS_OLD: the same test linked
#                                   # against an older runtime, for before/after), a soak of 1e5
#                                   # enqueues, 1,000 context create/destroy cycles, compute-sanitizer
#                                   # memcheck and racecheck on the zoo's fp16 engines
#   bash bench/gpu_suite.sh qdq     # onnxruntime QDQ models ($KILN_QDQ_DIR, bench/qdq_cnn.py) vs
#                                   # onnxruntime's int8 outputs; the tiny QDQ pool model
#   bash bench/gpu_suite.sh rnn     # LSTM/GRU/RNN (issue 23): engines of tests/recurrent/rnn_models.py
#                                   # (hidden 16..512, bidirectional, sequence_lens, layout 1, every
#                                   # activation; fp32, fp16, bf16) vs the CPU evaluator, the recurrent
#                                   # node tests vs their expected outputs, and a bidirectional 2-layer
#                                   # LSTM fp16 vs PyTorch's cuDNN LSTM (bench/lstm_vs_cudnn.py)
#   bash bench/gpu_suite.sh splitk  # split-K over clusters: kiln-gemm8-check, zoo CNNs fp16 with
#                                   # gemm.splitk=1 vs auto; one engine's weights shared by contexts
#   bash bench/gpu_suite.sh corpus  # the real-model corpus's fp32/fp16 engines vs onnxruntime (issue 23)
#   bash bench/gpu_suite.sh python  # the Python package with torch: outputs equal to kiln run's, latency
#   bash bench/gpu_suite.sh install # the README's C example built against an installed kiln ($KILN_PREFIX), run
#   bash bench/gpu_suite.sh runopts # kiln run --streams/--host-io/--duration/--trace/--device
#   bash bench/gpu_suite.sh eco     # check --mark/--ort, --io-dtype fp16, --streams 4, a BERT trace, NVTX (issue 27)
#   bash bench/gpu_suite.sh dynamic # engines with dynamic shapes (profiles) at built and padded shapes
#   bash bench/gpu_suite.sh dynamic-zoo  # ResNet-50 (and with KILN_DYN_BERT=1 BERT-base) dynamic vs static engines
#   bash bench/gpu_suite.sh ortq-bert  # HF BERT-base quantized by onnxruntime's quantize_dynamic vs the float model
#   bash bench/gpu_suite.sh dynamic-torch  # HF BERT-base and ResNet-50 from torch.export: one dynamic engine vs
#                                   # static engines vs PyTorch fp16 eager / CUDA graph at each shape
#   bash bench/gpu_suite.sh hopper  # the wgmma product kernel vs mma.sync and cuBLAS; exported SDPA attention;
#                                   # HF BERT/GPT-2 from torch.export beside the zoo's (launches, latency, PyTorch)
#   bash bench/gpu_suite.sh wgmma   # gemm.tactic=kiln_wgmma vs the default route on BERT-base, ViT-B/16, GPT-2 (and
#                                   # $KILN_WGMMA_MODELS): accuracy vs the fp32 engine, ABAB latency, profiles, PyTorch
#   bash bench/gpu_suite.sh nodes   # tune --search nodes on $KILN_NODES_MODELS (default resnet50_b32) vs plain fp16 (issue 26)
#   bash bench/gpu_suite.sh shards  # a full search unsharded and as 3 shards in separate processes, the
#                                   # shards' caches merged, the winner --from-cache vs the unsharded one (issue 26)
#   bash bench/gpu_suite.sh ab      # two kiln binaries ($KILN_OLD_BIN, $bin) on $KILN_AB_MODELS: launches, ABAB latency, outputs
#   bash bench/gpu_suite.sh latency # $KILN_LATENCY's engines (model, route, binary) timed side by side
#   bash bench/gpu_suite.sh ncu-int8  # Nsight Compute on the qops engines' 8-bit products (after qops)
#   bash bench/gpu_suite.sh qops    # onnxruntime's quantized ops ($KILN_QOPS_DIR: QOperator and dynamic
#                                   # models, the corpus's ORT-quantized models, one model per op) vs
#                                   # onnxruntime, timed against the float models' fp16 engines
#
# Binaries come from $KILN_BIN (default build/bin), the case models from $KILN_CASES (default
# build/models/cases, made by models/make_gpu_cases.py); the zoo is generated on the host with
# its PyTorch (models/make_zoo.py). Logs and a summary go to $OUT.
set -u
mode=${1:-check}
OUT=${OUT:-/tmp/kiln-gpu-out}
mkdir -p "$OUT"
# Several modes (one device call, e.g. `gpu_suite.sh quick rnn qops`): each in $OUT/MODE with at
# most $KILN_MODE_SECONDS_<mode> seconds (default 600), one summary, and every log in
# $OUT/logs.tgz (a device call returns few files).
if [ $# -gt 1 ]; then
  for m in "$@"; do
    limit_var="KILN_MODE_SECONDS_${m//-/_}"
    echo "== $m ($(date -u +%T))"
    OUT="$OUT/$m" timeout "${!limit_var:-600}" bash "$0" "$m" > "$OUT/$m.stdout" 2>&1
    echo "== $m rc=$? ($(date -u +%T))" >> "$OUT/$m.stdout"
    cat "$OUT/$m/summary.txt" 2>/dev/null | sed "s/^/$m: /" | cut -c1-400
  done
  tar czf "$OUT/logs.tgz" -C "$OUT" --exclude=logs.tgz . 2>/dev/null
  exit 0
fi
bin=${KILN_BIN:-build/bin}
cases=${KILN_CASES:-build/models/cases}
zoo=${KILN_ZOO:-/tmp/zoo}
export PYTHONUNBUFFERED=1
summary="$OUT/summary.txt"
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader; git log -1 --format=%H 2>/dev/null; date -u; } > "$OUT/host.txt" 2>&1

# One check: log to $OUT/logs/NAME.log, one summary line.
mkdir -p "$OUT/logs"
run() {
  local name=$1; shift
  timeout "${KILN_TIMEOUT:-300}" "$@" > "$OUT/logs/$name.log" 2>&1
  local rc=$?
  echo "$name rc=$rc | $(grep -E 'rel_l2|latency|skipped|FAIL|MISMATCH|error|passed|TOPS|on the GPU|^stress:|^create-destroy:|s in all|TFLOP|^torch' "$OUT/logs/$name.log" | sed 's/  */ /g' | tr '\n' '|' | cut -c1-500)" >> "$summary"
  return $rc
}

# One `kiln tune` of MODEL (a path) over $route: table to $OUT/NAME.txt, progress log to
# $OUT/logs/NAME.log, a summary line (candidates measured, answered from the cache, best).
tune() {  # NAME MODEL ARGS...
  local name=$1 model=$2; shift 2
  local t0=$(date +%s)
  "$bin/kiln" tune "$model" --route "$route" "$@" > "$OUT/$name.txt" 2> "$OUT/logs/$name.log"
  local rc=$?
  echo "$name rc=$rc $(( $(date +%s) - t0 )) s | measured $(grep -c '^tune: \[[0-9]*\] [a-z_]* *[0-9.]* ms' "$OUT/logs/$name.log") | cached $(grep -c '(cache)' "$OUT/logs/$name.log") | $(grep '^best' "$OUT/$name.txt")" >> "$summary"
}

# Engines compiled on the host ($KILN_INT8_DIR/*.kiln, e.g. MiniLM int8; or models there compiled
# here) on the held-out batches
# there ($KILN_INT8_DIR/heldout/*.npz): outputs to $OUT/outputs/ENGINE/ for cosines on the host
# (bench/quant_accuracy.py --outputs), and latency.
host_engines() {
  local int8dir=${KILN_INT8_DIR:-.carry/int8} e name b
  # Models (.onnx, too large a carry as engines) are compiled here with the default route.
  for m in "$int8dir"/*.onnx; do
    [ -f "$m" ] && "$bin/kiln" compile "$m" -o "/tmp/$(basename "$m" .onnx).kiln" > "$OUT/logs/compile_$(basename "$m" .onnx).log" 2>&1
  done
  for e in "$int8dir"/*.kiln /tmp/*.kiln; do
    [ -f "$e" ] || continue
    [[ $e == /tmp/* && ! -f "$int8dir/$(basename "$e" .kiln).onnx" ]] && continue
    name=$(basename "$e" .kiln)
    mkdir -p "$OUT/outputs/$name"
    for b in "$int8dir"/heldout/*.npz; do
      "$bin/kiln" run "$e" --inputs "$b" --outputs "$OUT/outputs/$name/$(basename "$b")" --warmup 1 --iterations 1 \
        > /dev/null 2>> "$OUT/logs/outputs_$name.log" || echo "outputs_$name failed on $b" >> "$summary"
    done
    run "latency_$name" "$bin/kiln" run "$e" --inputs "$(ls "$int8dir"/heldout/*.npz | head -1)" --iterations 200
  done
}

# The tiny models (models/tiny) that check and quick run over their routes, and the case models.
tiny_models=(mlp conv_bn_relu opset11_mix shape_chain qdq_matmul qdq_matmul_u8 qdq_conv_u8 qdq_pool qdq_matmul_fp8 seq_first_linear
             pool_same attention views einsum)
case_models() {
  for m in "${tiny_models[@]}"; do echo "models/tiny/$m.onnxtxt"; done
  ls "$cases"/*.onnx
}
# bf16 storage before a QuantizeLinear moves values across int8 steps: a QDQ model's bf16 graph is
# ~1e-2 from fp32 on the CPU evaluator itself (qdq_pool 9.6e-3), past the check's half-precision
# tolerance.
skip_route() { [[ $1 == qdq_* && $2 == *bf16* ]]; }  # STEM ROUTE

zoo_models=${KILN_ZOO_MODELS:-resnet50 resnet50_b32 mobilenetv2_b32 vit_b16_b32 bert_base_b32_s128 gpt2_small_s512}
make_zoo() {  # in the background while other checks run
  python3 models/make_zoo.py --out "$zoo" --no-check --skip-existing ${KILN_ZOO_MODELS:+--only "${KILN_ZOO_MODELS// /,}"} \
    > "$OUT/logs/zoo.log" 2>&1
  for m in $zoo_models; do  # (bench needs none: $KILN_ZOO_NO_REF)
    [ -n "${KILN_ZOO_NO_REF:-}" ] || [ -f "$zoo/ref_$m/output_0.bin" ] ||
      python3 bench/ort_reference.py "$zoo/$m.onnx" "$zoo/ref_$m" >> "$OUT/logs/zoo.log" 2>&1
  done
  touch "$zoo/.ready"
}

if [ "$mode" = check ]; then
  : > "$summary"
  mkdir -p "$zoo"; rm -f "$zoo/.ready"
  make_zoo &
  # Every case model over routes that exercise each kernel family, against the CPU evaluator.
  routes=("" "precision=fp16" "precision=bf16" "precision=fp16;gemm.tactic=kiln" "precision=fp16;layout.conv=nchw"
          "precision=fp16;conv.algo=implicit" "layout.conv=nhwc;conv.algo=im2col"
          "layout.conv=nhwc;gemm.tactic=cublaslt" "precision=fp16;gemm.tactic=kiln;gemm.tile=128x256;gemm.stages=2"
          "precision=fp16;gemm.tactic=kiln;gemm.tile=64x64;gemm.stages=4"
          "fusion.epilogue=off;fusion.elementwise=off;fusion.transpose=off" "precision=fp16;fusion.attention=off")
  for m in $(case_models); do
    stem=$(basename "$m"); stem=${stem%%.*}
    for r in "${routes[@]}"; do
      skip_route "$stem" "$r" && continue
      run "case_${stem}_${r//[^a-z0-9]/_}" "$bin/kiln-gpu-check" "$m" --route "$r" --iterations 3
    done
  done
  # The CLI on the GPU: run (random inputs, outputs written), check against the CPU evaluator and
  # against the written outputs.
  "$bin/kiln" compile "$cases/convnet.onnx" -o /tmp/convnet.kiln --precision fp16 > /dev/null 2>&1
  run cli_run "$bin/kiln" run /tmp/convnet.kiln --iterations 50 --outputs /tmp/convnet_out.npz --profile
  run cli_check_onnx "$bin/kiln" check /tmp/convnet.kiln --onnx "$cases/convnet.onnx"
  run cli_check_ref "$bin/kiln" check /tmp/convnet.kiln --reference /tmp/convnet_out.npz
  # The ONNX node tests that pass on the CPU evaluator, compiled to fp32 engines and checked on the GPU.
  KILN_TIMEOUT=900 run gpu_conformance python3 tests/conformance/gpu_conformance.py "$bin/kiln" \
    ${KILN_ONNX_DATA:+--data "$KILN_ONNX_DATA"} --out "$OUT/conformance_gpu.txt"
  # Every emitted kernel case against onnxruntime (NVRTC + the driver through ctypes).
  "$bin/kiln-kernel-cases-dump" > /tmp/cases.jsonl && run kernel_cases python3 tests/codegen/gpu_check.py /tmp/cases.jsonl
  run attention_kernel "$bin/kiln-attention-check"
  "$bin/kiln-make-test-engine" /tmp/axpb.kiln > /dev/null 2>&1 && run c_api_test "$bin/kiln-c-api-test" /tmp/axpb.kiln
  run gemm8 "$bin/kiln-gemm8-check" --iterations 50
  wait
  # The zoo: fp32 and fp16 against onnxruntime fp32 (fp16: rel L2 <= 1e-2, cos >= 0.999).
  for m in $zoo_models; do
    for r in "" "precision=fp16" "precision=fp16;gemm.tactic=kiln"; do
      run "zoo_${m}_${r//[^a-z0-9]/_}" "$bin/kiln-gpu-check" "$zoo/$m.onnx" --reference-dir "$zoo/ref_$m" --route "$r" \
        --iterations 20 ${KILN_PROFILE:+--profile}
    done
  done
  "$bin/kiln" compile "$zoo/resnet50.onnx" -o /tmp/resnet50.kiln --precision fp16 > "$OUT/logs/compile_resnet50.log" 2>&1 &&
    run c_example "$bin/kiln-example" /tmp/resnet50.kiln
fi

if [ "$mode" = zoo ]; then
  : > "$summary"
  make_zoo
  IFS='|' read -r -a routes <<< "${KILN_ROUTES:-precision=fp16}"
  for m in $zoo_models; do
    for r in "${routes[@]}"; do
      run "zoo_${m}_${r//[^a-z0-9]/_}" "$bin/kiln-gpu-check" "$zoo/$m.onnx" --reference-dir "$zoo/ref_$m" --route "$r" \
        --iterations 100 --profile
    done
  done
fi

if [ "$mode" = bench ]; then
  make_zoo  # (the models this call has not exported yet)
  python3 bench/torch_baselines.py --out "$OUT/torch_baselines.json" --time-budget "${TORCH_BUDGET:-420}" \
    ${KILN_TORCH_MODES:+--modes "$KILN_TORCH_MODES"} ${KILN_ZOO_MODELS:+--configs "${KILN_ZOO_MODELS// /,}"} \
    --dtype "${KILN_TORCH_DTYPE:-fp16}" \
    > "$OUT/logs/torch.log" 2>&1
  for m in $zoo_models; do
    run "bench_${m}" "$bin/kiln-gpu-check" "$zoo/$m.onnx" --no-reference --route "${KILN_BENCH_ROUTE-precision=fp16}" --iterations 200
  done
fi
# The tuners' SQLite caches: new for each call (a warm machine keeps /tmp), and outside $OUT, whose
# files come back from the device (kiln cache list writes what they hold there).
dbs=/tmp/kiln-gpu-suite-dbs
[[ $mode == tune* || $mode == nodes ]] && { rm -rf "$dbs"; mkdir -p "$dbs"; }

if [ "$mode" = tune-quick ]; then
  m="$cases/convnet.onnx"
  route='precision=.*;layout\.conv=.*;gemm\.tactic=.*;fusion\.(elementwise|epilogue)=.*'
  tune tq_default "$m" --cache "$dbs/tq.db"
  tune tq_again "$m" --cache "$dbs/tq.db"                          # everything from the cache
  python3 bench/ort_reference.py "$m" /tmp/ref_convnet > "$OUT/logs/ort_reference.log" 2>&1
  tune tq_reference "$m" --cache "$dbs/tq.db" --reference /tmp/ref_convnet/reference.npz  # a new key: measured again
  # Knobs that cannot change this engine (no attention in convnet): every candidate after the base
  # is the same engine, so none is measured again and the base route is kept.
  route='precision=fp16;attention\..*=.*'
  tune tq_same_engine "$m" --cache "$dbs/tq.db" --search fast
  echo "tq_same_engine: $(grep -c 'same engine' "$OUT/logs/tq_same_engine.log") same-engine lines" >> "$summary"
  # Two measuring workers, where the machine has two GPUs.
  if [ "$(nvidia-smi -L | wc -l)" -ge 2 ]; then
    tune tq_one_worker "$m" --cache "$dbs/tq1.db" --devices 0
    tune tq_two_workers "$m" --cache "$dbs/tq2.db" --devices 0,1
  fi
fi

# The nodes search (issue 26): per-node values from profiled sweeps (each launch timed alone),
# composed and confirmed end to end, beside the plain fp16 engine (ABAB, same inputs); a second
# tune on the same cache must measure nothing. $KILN_NODES_MODELS (zoo names, default
# resnet50_b32), $KILN_NODES_ROUTE.
if [ "$mode" = nodes ]; then
  : > "$summary"
  models=${KILN_NODES_MODELS:-resnet50_b32}
  python3 models/make_zoo.py --out "$zoo" --no-check --skip-existing --only "${models// /,}" > "$OUT/logs/zoo.log" 2>&1
  route=${KILN_NODES_ROUTE:-'precision=fp16;node\..*\.(tile|splitk)=.*'}
  for m in $models; do
    tune "nodes_$m" "$zoo/$m.onnx" --cache "$dbs/nodes.db" --search nodes -o "/tmp/nodes_$m.kiln"
    grep -h "nodes search:" "$OUT/logs/nodes_$m.log" | head -40 >> "$summary"
    tune "nodes_${m}_again" "$zoo/$m.onnx" --cache "$dbs/nodes.db" --search nodes
    "$bin/kiln" compile "$zoo/$m.onnx" -o "/tmp/plain_$m.kiln" --precision fp16 > "$OUT/logs/compile_plain_$m.log" 2>&1
    for round in 1 2; do
      run "plain_fp16_${m}_$round" "$bin/kiln" run "/tmp/plain_$m.kiln" --iterations 300
      [ -f "/tmp/nodes_$m.kiln" ] && run "nodes_winner_${m}_$round" "$bin/kiln" run "/tmp/nodes_$m.kiln" --iterations 300
    done
  done
fi

if [ "$mode" = tune ]; then
  python3 models/make_zoo.py --out "$zoo" --no-check --skip-existing --only resnet50_b32,bert_base_b32_s128 > "$OUT/logs/zoo.log" 2>&1
  cache="$dbs/tune-cache.db"
  # The fast-tier knobs; the base route is the default (fp32) route.
  route='precision=.*;layout\.conv=.*;gemm\.tactic=.*;fusion\.(elementwise|epilogue)=.*;runtime\.cuda_graph=.*'
  tune tune_resnet50_fast "$zoo/resnet50_b32.onnx" --cache "$cache" --search fast -o /tmp/resnet50_b32_best.kiln
  "$bin/kiln" inspect /tmp/resnet50_b32_best.kiln > "$OUT/tune_best_inspect.txt" 2>&1
  tune tune_bert_fast "$zoo/bert_base_b32_s128.onnx" --cache "$cache" --search fast
  tune tune_resnet50_mixed "$zoo/resnet50_b32.onnx" --cache "$cache" --search mixed --max-candidates 12       # its fast phase comes from the cache
  tune tune_bert_fast_again "$zoo/bert_base_b32_s128.onnx" --cache "$cache" --search fast     # everything from the cache
  tune tune_resnet50_tight "$zoo/resnet50_b32.onnx" --cache "$cache" --search fast --accuracy 'max_abs<=1e-6'  # half routes fail
  # Interrupted (SIGINT after 25 s) and resumed: the resumed run measures only what is missing.
  cache="$dbs/resume-cache.db"
  route='precision=fp16;gemm\.tile=.*;gemm\.tactic=kiln'
  "$bin/kiln" tune "$zoo/bert_base_b32_s128.onnx" --route "$route" --cache "$cache" > "$OUT/tune_interrupted.txt" 2> "$OUT/logs/tune_interrupted.log" &
  pid=$!; sleep 25; kill -INT $pid; wait $pid; echo "tune_interrupted rc=$? measured $(grep -c ' ms  ' "$OUT/logs/tune_interrupted.log")" >> "$summary"
  tune tune_resumed "$zoo/bert_base_b32_s128.onnx" --cache "$cache" --search fast --resume
  "$bin/kiln" cache list --cache "$dbs/tune-cache.db" > "$OUT/cache_list.txt" 2>&1
fi

if [ "$mode" = quick ]; then
  : > "$summary"
  # The attention kernel first, alone on the GPU: its timings are the ones RESULTS.md quotes
  # (52 kernels to compile and time: minutes; KILN_QUICK_NO_ATTENTION=1 skips it).
  # KILN_QUICK_ROUTES ('|'-separated) checks the case models over those routes only, without the
  # node tests and kernel cases (a change to one part of codegen, in a short call).
  [ -n "${KILN_QUICK_NO_ATTENTION:-}${KILN_QUICK_ROUTES:-}" ] || KILN_TIMEOUT=360 run attention_kernel "$bin/kiln-attention-check"
  if [ -z "${KILN_QUICK_ROUTES:-}" ]; then
    KILN_TIMEOUT=400 run gpu_conformance python3 tests/conformance/gpu_conformance.py "$bin/kiln" \
      ${KILN_ONNX_DATA:+--data "$KILN_ONNX_DATA"} --out "$OUT/conformance_gpu.txt" &
    "$bin/kiln-kernel-cases-dump" > /tmp/cases.jsonl && run kernel_cases python3 tests/codegen/gpu_check.py /tmp/cases.jsonl
  fi
  quick_routes=("" "precision=fp16" "precision=bf16" "precision=fp16;gemm.tactic=kiln" "fusion.epilogue=off;fusion.elementwise=off"
                "gemm.tactic=cublaslt" "precision=fp16;conv.algo=implicit" "layout.conv=nhwc;conv.algo=im2col"
                "precision=fp16;fusion.attention=off" "gemm.tf32=on" "layout.conv=nchw;gemm.tactic=kiln"
                "precision=fp16;runtime.gemm_search=on" "precision=fp16;fusion.attention=off;gemm.split=on"
                "gemm.batch_pointers=off")
  [ -n "${KILN_QUICK_ROUTES:-}" ] && IFS='|' read -r -a quick_routes <<< "$KILN_QUICK_ROUTES"
  for m in $(case_models); do
    stem=$(basename "$m"); stem=${stem%%.*}
    for r in "${quick_routes[@]}"; do
      skip_route "$stem" "$r" && continue
      run "case_${stem}_${r//[^a-z0-9]/_}" "$bin/kiln-gpu-check" "$m" --route "$r" --iterations 3
    done
  done
  wait
fi

if [ "$mode" = int8 ]; then
  : > "$summary"
  run gemm8 "$bin/kiln-gemm8-check" --iterations 50
  # int8 engines against the CPU evaluator's graph for the same route: a QDQ model (fp32 and fp16
  # elsewhere), a calibrated MLP (fc1 has no int8 kernel and stays float; int8 with fp16 elsewhere,
  # and fc2 alone int8 on an fp32 route).
  "$bin/kiln" calibrate models/tiny/mlp.onnxtxt --data models/tiny/mlp.npz --method minmax -o /tmp/mlp.calib > /dev/null
  # (On half routes the models' own QDQ products run as dequantized half products unless
  # quant.products=int8.)
  for r in "" "precision=fp16;quant.products=int8" "precision=fp16"; do
    run "int8_qdq_matmul_${r//[^a-z0-9]/_}" "$bin/kiln-gpu-check" models/tiny/qdq_matmul.onnxtxt --route "$r" --iterations 3
    run "int8_qdq_matmul_u8_${r//[^a-z0-9]/_}" "$bin/kiln-gpu-check" models/tiny/qdq_matmul_u8.onnxtxt --route "$r" --iterations 3
    run "int8_qdq_pool_${r//[^a-z0-9]/_}" "$bin/kiln-gpu-check" models/tiny/qdq_pool.onnxtxt --route "$r" --iterations 3
    run "int8_qdq_conv_u8_${r//[^a-z0-9]/_}" "$bin/kiln-gpu-check" models/tiny/qdq_conv_u8.onnxtxt --route "$r" --iterations 3
  done
  for r in "precision=int8" "node.fc2.precision=int8"; do
    run "int8_mlp_${r//[^a-z0-9]/_}" "$bin/kiln-gpu-check" models/tiny/mlp.onnxtxt --calib /tmp/mlp.calib --route "$r" --iterations 3
  done
  # int8 convolutions (NHWC implicit GEMM), with the ReLU + QuantizeLinear of the next one fused.
  "$bin/kiln" calibrate models/tiny/conv16.onnxtxt --data models/tiny/conv16.npz --method minmax -o /tmp/conv16.calib > /dev/null
  for r in "precision=int8" "node.conv2.precision=int8"; do
    run "int8_conv16_${r//[^a-z0-9]/_}" "$bin/kiln-gpu-check" models/tiny/conv16.onnxtxt --calib /tmp/conv16.calib --route "$r" --iterations 3
  done
  # fp8 e4m3: an fp8 QDQ model (cuBLASLt, and kiln's mma.sync kernel), calibrated fp8 products
  # (matrix and NHWC convolution).
  for r in "" "precision=fp16;quant.products=int8" "gemm.tactic=kiln" "precision=fp16;gemm.tactic=kiln;quant.products=int8"; do
    run "fp8_qdq_matmul_${r//[^a-z0-9]/_}" "$bin/kiln-gpu-check" models/tiny/qdq_matmul_fp8.onnxtxt --route "$r" --iterations 3
  done
  for r in "precision=fp8" "node.fc2.precision=fp8"; do
    run "fp8_mlp_${r//[^a-z0-9]/_}" "$bin/kiln-gpu-check" models/tiny/mlp.onnxtxt --calib /tmp/mlp.calib --route "$r" --iterations 3
  done
  for r in "precision=fp8" "node.conv2.precision=fp8"; do
    run "fp8_conv16_${r//[^a-z0-9]/_}" "$bin/kiln-gpu-check" models/tiny/conv16.onnxtxt --calib /tmp/conv16.calib --route "$r" --iterations 3
  done
  host_engines
fi

# int8 and fp8 next to fp16 and fp32 on zoo models generated here, calibrated on the CPU evaluator (one
# random batch), 16 batches checked against the fp32 engine: BERT-base 32x128 and ResNet-50 b32;
# and ResNet-50 b32 fp16 with NCHW and NHWC convolutions (latency, launches, transposes).
if [ "$mode" = int8-zoo ]; then
  : > "$summary"
  part=${KILN_ZOO_PART:-all}  # bert | resnet | all (one device call may not fit both)
  only=bert_base_b32_s128,resnet50_b32
  [ "$part" = bert ] && only=bert_base_b32_s128
  [ "$part" = resnet ] && only=resnet50_b32
  python3 models/make_zoo.py --out "$zoo" --no-check --skip-existing --only "$only" > "$OUT/logs/zoo.log" 2>&1
  # NAME MODEL: fp32, fp16, int8 and fp8 engines (8-bit ones calibrated on one random batch), 16
  # random batches checked against the fp32 engine (check_NAME_P_SEED.json), latency of each.
  quant=${KILN_QUANT:-int8 fp8}  # the 8-bit precisions to build
  quant_vs_fp16() {
    local name=$1 m=$2 s p
    "$bin/kiln" compile "$m" -o /tmp/${name}_fp32.kiln > "$OUT/logs/compile_${name}_fp32.log" 2>&1
    "$bin/kiln" compile "$m" -o /tmp/${name}_fp16.kiln --precision fp16 > "$OUT/logs/compile_${name}_fp16.log" 2>&1
    "$bin/kiln" run /tmp/${name}_fp32.kiln --seed 1000 --warmup 0 --iterations 1 --outputs /tmp/${name}_cal.npz > /dev/null 2>&1
    run "calibrate_$name" "$bin/kiln" calibrate "$m" --data /tmp/${name}_cal.npz --method minmax -o /tmp/$name.calib
    for p in $quant; do
      run "compile_${name}_$p" "$bin/kiln" compile "$m" -o /tmp/${name}_$p.kiln --precision $p --calib /tmp/$name.calib
      "$bin/kiln" inspect /tmp/${name}_$p.kiln > "$OUT/logs/inspect_${name}_$p.txt" 2>&1
    done
    for s in $(seq 1 16); do
      "$bin/kiln" run /tmp/${name}_fp32.kiln --seed "$s" --warmup 0 --iterations 1 --outputs /tmp/${name}_ref.npz > /dev/null 2>&1
      for p in fp16 $quant; do
        "$bin/kiln" check /tmp/${name}_$p.kiln --reference /tmp/${name}_ref.npz --json > "$OUT/logs/check_${name}_${p}_$s.json" 2>&1
      done
    done
    for p in fp32 fp16 $quant; do run "latency_${name}_$p" "$bin/kiln" run /tmp/${name}_$p.kiln --iterations 200; done
  }
  if [ "$part" != resnet ]; then
    m="$zoo/bert_base_b32_s128.onnx"
    quant_vs_fp16 bert "$m"
    # The tuner choosing between fp16, int8 and fp8 under an accuracy constraint.
    "$bin/kiln" tune "$m" --route "precision=fp16|${quant// /|}" --calib /tmp/bert.calib --accuracy 'cos>=0.99' \
      --cache /tmp/int8-tune.db > "$OUT/tune_bert_int8.txt" 2> "$OUT/logs/tune_bert_int8.log"
    echo "tune_bert_int8 rc=$? | $(grep '^best' "$OUT/tune_bert_int8.txt")" >> "$summary"
  fi
  if [ "$part" != bert ]; then
    m="$zoo/resnet50_b32.onnx"
    quant_vs_fp16 resnet "$m"  # 8-bit convolutions: all but the 3-channel stem; top-1 from kiln check
    for l in nchw nhwc; do
      "$bin/kiln" compile "$m" -o /tmp/resnet_$l.kiln --route "precision=fp16;layout.conv=$l" > "$OUT/logs/compile_resnet_$l.log" 2>&1
      "$bin/kiln" inspect /tmp/resnet_$l.kiln > "$OUT/logs/inspect_resnet_$l.txt" 2>&1
      run "latency_resnet50_b32_fp16_$l" "$bin/kiln" run /tmp/resnet_$l.kiln --iterations 200
    done
  fi
  host_engines
fi

# QDQ models quantized on the host by onnxruntime (bench/qdq_cnn.py: $KILN_QDQ_DIR/NAME.qdq.onnx
# with NAME.reference.npz, onnxruntime's int8 CPU outputs), compiled here with fp32 and fp16
# elsewhere, checked against onnxruntime and timed; and the tiny QDQ models against the evaluator.
if [ "$mode" = qdq ]; then
  : > "$summary"
  for r in "" "precision=fp16"; do
    run "qdq_pool_${r//[^a-z0-9]/_}" "$bin/kiln-gpu-check" models/tiny/qdq_pool.onnxtxt --route "$r" --iterations 3
  done
  for m in "${KILN_QDQ_DIR:-.carry/qdq}"/*.qdq.onnx; do
    [ -f "$m" ] || continue
    name=$(basename "$m" .qdq.onnx)
    for p in fp32 fp16; do
      run "compile_${name}_$p" "$bin/kiln" compile "$m" -o /tmp/${name}_qdq_$p.kiln --precision $p
      "$bin/kiln" inspect /tmp/${name}_qdq_$p.kiln > "$OUT/logs/inspect_${name}_qdq_$p.txt" 2>&1
      run "check_${name}_qdq_$p" "$bin/kiln" check /tmp/${name}_qdq_$p.kiln --reference "${m%.qdq.onnx}.reference.npz" --accuracy 'cos>=0.99'
      run "latency_${name}_qdq_$p" "$bin/kiln" run /tmp/${name}_qdq_$p.kiln --iterations 200
    done
  done
fi

# onnxruntime-quantized models, prepared on the host with the venv that has onnxruntime:
#   venv/bin/python bench/ort_quant_models.py .carry/qops --corpus /root/.cache/kiln-realmodels/out
#   venv/bin/python tests/quant/ort_qops_check.py build/bin/kiln build/bin/kiln-conformance --keep .carry/qops/ops
# (a CNN and an MLP quantized dynamically and statically (QOperator), the MLP as onnxruntime's
# optimizer fuses it, the corpus's t5_span_encoder_quant and ddddocr_common_old_quant, and one
# model per quantized op). Each model compiles fp32 and fp16 and is checked against onnxruntime's
# outputs on the same inputs (qops.tsv: the constraints), and timed next to the fp16 engine of
# the float model it was quantized from; each op model's engine against onnxruntime (cases.tsv).
if [ "$mode" = qops ]; then
  : > "$summary"
  dir=${KILN_QOPS_DIR:-.carry/qops}
  while IFS=$'\t' read -r name base acc32 acc16 flags; do
    [[ -z $name || $name == \#* ]] && continue
    # fp16i8: the fp16 route with the model's QDQ products on int8 tensor cores (quant.products).
    for p in fp32 fp16 fp16i8; do
      acc=$acc32; [ $p != fp32 ] && acc=$acc16
      route="precision=$p"; [ $p = fp16i8 ] && route="precision=fp16;quant.products=int8"
      e=/tmp/qops_${name}_$p.kiln
      # shellcheck disable=SC2086  # flags are words
      run "compile_${name}_$p" "$bin/kiln" compile "$dir/$name.onnx" -o "$e" --route "$route" $flags || continue
      "$bin/kiln" inspect "$e" > "$OUT/logs/inspect_${name}_$p.txt" 2>&1
      run "check_${name}_$p" "$bin/kiln" check "$e" --inputs "$dir/$name.inputs.npz" --reference "$dir/$name.ref.npz" --accuracy "$acc"
      run "latency_${name}_$p" "$bin/kiln" run "$e" --iterations 200 --profile
      # onnxruntime's outputs made on this machine's CPU too (8-bit sums depend on its ISA).
      if [[ $p = fp32 ]]; then
        run "devref_${name}" python3 bench/ort_outputs.py "$dir/$name.onnx" "$dir/$name.inputs.npz" /tmp/qops_devref_$name.npz
      fi
      [[ -f /tmp/qops_devref_$name.npz ]] && run "check_devref_${name}_$p" "$bin/kiln" check "$e" \
        --inputs "$dir/$name.inputs.npz" --reference /tmp/qops_devref_$name.npz --accuracy "$acc"
    done
    if [[ $base != - && ! -f /tmp/qops_float_${base}_fp16.kiln ]]; then
      run "compile_float_${base}_fp16" "$bin/kiln" compile "$dir/$base.onnx" -o /tmp/qops_float_${base}_fp16.kiln --precision fp16 &&
        run "latency_float_${base}_fp16" "$bin/kiln" run /tmp/qops_float_${base}_fp16.kiln --iterations 200 --profile
    fi
  done < "$dir/qops.tsv"
  while IFS=$'\t' read -r name acc; do
    for p in fp32 fp16 fp16i8; do
      # A float output stored in half is ~5e-4 from the fp32 reference (quantized outputs: exact).
      [[ $p != fp32 && $acc == rel_l2* ]] && acc="rel_l2<=1e-2"
      route="precision=$p"; [ $p = fp16i8 ] && route="precision=fp16;quant.products=int8"
      run "op_${name}_$p" "$bin/kiln" compile "$dir/ops/$name.onnx" -o /tmp/qops_op.kiln --route "$route" &&
        run "op_check_${name}_$p" "$bin/kiln" check /tmp/qops_op.kiln --inputs "$dir/ops/$name.inputs.npz" \
          --reference "$dir/ops/$name.ref.npz" --accuracy "$acc"
    done
  done < "$dir/ops/cases.tsv"
fi

# Nsight Compute on the small 8-bit products that keep the quantized models slower than their
# float fp16 engines (the qops engines; run qops first, same $OUT root): duration, achieved
# occupancy, warp stall reasons per kernel, against the float model's fp16 kernels. Clocks are
# left alone (--clock-control none).
if [ "$mode" = ncu-int8 ]; then
  : > "$summary"
  for e in /tmp/qops_mlp.qop_fp16i8.kiln /tmp/qops_cnn.qop_fp16i8.kiln /tmp/qops_float_mlp_fp16.kiln /tmp/qops_float_cnn_fp16.kiln; do
    [ -f "$e" ] || { echo "ncu $e missing (run qops first)" >> "$summary"; continue; }
    name=$(basename "$e" .kiln)
    run "ncu_$name" ncu --clock-control none --section SpeedOfLight --section LaunchStats --section Occupancy \
      --section WarpStateStats --launch-skip 0 --launch-count 40 "$bin/kiln" run "$e" --warmup 1 --iterations 1
    grep -E '^  kiln_|Duration|Achieved Occupancy|Registers Per|Block Limit|Stall|Warp Cycles Per Issued' \
      "$OUT/logs/ncu_$name.log" | sed 's/  */ /g' | head -120 > "$OUT/ncu_$name.txt"
  done
fi

# Side-by-side latencies in one call (A/B of a knob, two binaries): $KILN_LATENCY holds lines
# "NAME<TAB>MODEL<TAB>ROUTE[<TAB>KILN BINARY]"; each is compiled, checked against the CPU
# evaluator (kiln-gpu-check, 3 runs) and timed (200 runs, per-launch profile), in order, twice
# (ABAB: a drift of the clocks shows as a difference between the rounds).
# Two kiln binaries side by side ($KILN_OLD_BIN, default .carry/old/kiln, against $bin/kiln): each
# model of $KILN_AB_MODELS (zoo names, or paths with shapes as PATH@SHAPES) compiled fp16 by both,
# launches, latency in ABAB rounds, and the new engine's outputs against the old one's on the same
# inputs. Zoo models are made here; HF exports ($KILN_AB_HUB: export_hub names) in /tmp/hubbase.
if [ "$mode" = ab ]; then
  : > "$summary"
  old=${KILN_OLD_BIN:-.carry/old/kiln}
  models=${KILN_AB_MODELS:-mobilenetv2_b32 resnet50_b32}
  zoo_only=$(for m in $models; do [[ $m == */* ]] || echo "$m"; done | paste -sd,)
  [ -n "$zoo_only" ] && python3 models/make_zoo.py --out "$zoo" --no-check --skip-existing --only "$zoo_only" > "$OUT/logs/zoo.log" 2>&1
  [ -n "${KILN_AB_HUB:-}" ] && python3 models/export_hub.py --out /tmp/hubbase --size base --only "$KILN_AB_HUB" > "$OUT/logs/export.log" 2>&1
  for spec in $models; do
    model=${spec%@*}; shapes=; [[ $spec == *@* ]] && shapes=${spec#*@}
    [[ $model == */* ]] || model="$zoo/$model.onnx"
    name=$(basename "$model" .onnx)
    for side in old new; do
      k=$old; [ $side = new ] && k=$bin/kiln
      run "compile_${name}_$side" "$k" compile "$model" -o "/tmp/ab_${name}_$side.kiln" --precision fp16 ${shapes:+--shapes $shapes}
      "$k" inspect "/tmp/ab_${name}_$side.kiln" > "$OUT/logs/inspect_${name}_$side.txt" 2>&1
    done
    echo "$name: old $(grep -m1 -o '[0-9]* launches' "$OUT/logs/inspect_${name}_old.txt"), new $(grep -m1 -o '[0-9]* launches' "$OUT/logs/inspect_${name}_new.txt")" >> "$summary"
    for round in 1 2; do
      run "old_${name}_$round" "$old" run "/tmp/ab_${name}_old.kiln" --iterations 300
      run "new_${name}_$round" "$bin/kiln" run "/tmp/ab_${name}_new.kiln" --iterations 300
    done
    "$old" run "/tmp/ab_${name}_old.kiln" --iterations 1 --warmup 0 --outputs "/tmp/ab_${name}_old.npz" > /dev/null 2>&1
    "$bin/kiln" run "/tmp/ab_${name}_new.kiln" --iterations 1 --warmup 0 --inputs "/tmp/ab_${name}_old.npz" \
      --outputs "/tmp/ab_${name}_new.npz" > /dev/null 2>&1
    run "same_$name" python3 bench/npz_diff.py "/tmp/ab_${name}_old.npz" "/tmp/ab_${name}_new.npz" \
      --skip input,x,pixel_values,input_ids,attention_mask
  done
fi

if [ "$mode" = latency ]; then
  : > "$summary"
  for round in 1 2; do
    while IFS=$'\t' read -r name model route kiln; do
      [[ -z $name || $name == \#* ]] && continue
      kiln=${kiln:-$bin/kiln}
      e=/tmp/latency_$name.kiln
      if [ $round = 1 ]; then
        run "compile_$name" "$kiln" compile "$model" -o "$e" --route "$route" || continue
        run "check_$name" "$bin/kiln-gpu-check" "$model" --route "$route" --iterations 3
      fi
      [ -f "$e" ] && run "latency_${name}_$round" "$kiln" run "$e" --iterations 200 --profile
    done <<< "${KILN_LATENCY:-}"
  done
fi

# kiln run's trtexec-style options (issue 27) on the convnet and BERT case models in fp16: one
# stream against 4 at once, host latency (--host-io) against device latency, --duration, the
# Chrome trace (parsed back: one event per launch), a device that is not there.
if [ "$mode" = runopts ]; then
  : > "$summary"
  for m in convnet bert_small; do
    "$bin/kiln" compile "$cases/$m.onnx" -o /tmp/runopts_$m.kiln --precision fp16 > "$OUT/logs/compile_$m.log" 2>&1
    run "run_${m}_1" "$bin/kiln" run /tmp/runopts_$m.kiln --iterations 500
    run "run_${m}_streams4" "$bin/kiln" run /tmp/runopts_$m.kiln --iterations 500 --streams 4
    run "run_${m}_hostio" "$bin/kiln" run /tmp/runopts_$m.kiln --iterations 500 --host-io
    run "run_${m}_duration" "$bin/kiln" run /tmp/runopts_$m.kiln --iterations 10 --duration 2 --json
    run "run_${m}_trace" "$bin/kiln" run /tmp/runopts_$m.kiln --trace "$OUT/trace_$m.json"
    run "trace_${m}_parsed" python3 -c "import json,sys; d=json.load(open(sys.argv[1])); e=d['traceEvents']; \
print('trace events', len(e), 'passed' if e and all(x['ph'] == 'X' and x['dur'] > 0 for x in e) else 'FAIL')" "$OUT/trace_$m.json"
  done
  run run_no_device "$bin/kiln" run /tmp/runopts_convnet.kiln --device 99
fi

# Issue 27 on the GPU: `check --mark all` (CPU evaluator and --ort) on an fp16 engine made to
# overflow (fp16_overflow, precision.safety=off); --io-dtype fp16 against fp32 I/O on ResNet-50
# b32 and BERT-base 32x128 fp16 (launches, latency, outputs of the one against the other on the
# same inputs, float32 arrays rounded by `run --inputs`); --streams 4 on ResNet-50 b32; a Chrome
# trace of BERT-base; NVTX names under Nsight Systems (or Nsight Compute) when installed.
if [ "$mode" = eco ]; then
  : > "$summary"
  ov=models/tiny/fp16_overflow
  "$bin/kiln" compile $ov.onnxtxt -o /tmp/ov.kiln --route 'precision=fp16;precision.safety=off' > "$OUT/logs/compile_ov.log" 2>&1
  run mark_cpu "$bin/kiln" check /tmp/ov.kiln --onnx $ov.onnxtxt --inputs $ov.npz --mark all
  run mark_ort "$bin/kiln" check /tmp/ov.kiln --onnx $ov.onnxtxt --inputs $ov.npz --mark all --ort
  run mark_regex "$bin/kiln" check /tmp/ov.kiln --onnx $ov.onnxtxt --inputs $ov.npz --mark 'sum_sq|square' --json
  run ort_final "$bin/kiln" check /tmp/ov.kiln --onnx $ov.onnxtxt --inputs $ov.npz --ort
  python3 models/make_zoo.py --out "$zoo" --no-check --skip-existing --only resnet50_b32,bert_base_b32_s128 > "$OUT/logs/zoo.log" 2>&1
  for m in resnet50_b32 bert_base_b32_s128; do
    for io in fp32 fp16; do
      run "compile_${m}_$io" "$bin/kiln" compile "$zoo/$m.onnx" -o /tmp/${m}_$io.kiln --precision fp16 --io-dtype $io
      "$bin/kiln" inspect /tmp/${m}_$io.kiln > "$OUT/inspect_${m}_$io.txt" 2>&1
      echo "$m io $io: $(grep -m1 -o '[0-9]* launches' "$OUT/inspect_${m}_$io.txt")" >> "$summary"
      run "time_${m}_$io" "$bin/kiln" run /tmp/${m}_$io.kiln --iterations 300
    done
    "$bin/kiln" run /tmp/${m}_fp32.kiln --iterations 1 --warmup 0 --outputs /tmp/${m}_o32.npz > /dev/null 2>&1
    "$bin/kiln" run /tmp/${m}_fp16.kiln --iterations 1 --warmup 0 --inputs /tmp/${m}_o32.npz --outputs /tmp/${m}_o16.npz > "$OUT/logs/io16_$m.log" 2>&1
    run "io16_vs_io32_$m" python3 bench/npz_diff.py /tmp/${m}_o32.npz /tmp/${m}_o16.npz --skip input,input_ids,attention_mask
  done
  run streams1_resnet50_b32 "$bin/kiln" run /tmp/resnet50_b32_fp32.kiln --iterations 300
  run streams4_resnet50_b32 "$bin/kiln" run /tmp/resnet50_b32_fp32.kiln --iterations 300 --streams 4
  run trace_bert "$bin/kiln" run /tmp/bert_base_b32_s128_fp32.kiln --iterations 20 --trace "$OUT/trace_bert_base_fp16.json" --profile
  run report_bert "$bin/kiln" report "$OUT/trace_bert_base_fp16.json" -o "$OUT/report_bert_base_fp16.html"
  if command -v nsys > /dev/null; then
    run nsys_nvtx nsys profile -o /tmp/kiln_nvtx --force-overwrite true --trace=cuda,nvtx "$bin/kiln" run /tmp/bert_base_b32_s128_fp32.kiln --nvtx --iterations 3 --warmup 1
    run nsys_nvtx_sum bash -c "nsys stats --report nvtx_sum /tmp/kiln_nvtx.nsys-rep | head -30"
  elif command -v ncu > /dev/null; then
    run ncu_nvtx ncu --nvtx --print-nvtx-rename none --launch-count 4 --section LaunchStats "$bin/kiln" run /tmp/bert_base_b32_s128_fp32.kiln --nvtx --iterations 1 --warmup 0
    grep -m8 -iE 'nvtx|kiln' "$OUT/logs/ncu_nvtx.log" | sed 's/^/ncu: /' >> "$summary"
  else
    echo "nvtx: neither nsys nor ncu on this host" >> "$summary"
  fi
fi

# Dynamic shapes (issue 24): the tiny dynamic models compiled with a profile (batch 1..4, seq 4..8),
# checked against the CPU evaluator at shapes the engine was built for and at shapes between
# (padded), in fp32 and fp16; a seq that cannot be padded (dynamic_mix) and shapes outside the
# profile must be refused with a message.
if [ "$mode" = dynamic ]; then
  : > "$summary"
  profile=(--min-shapes batch=1,seq=4 --opt-shapes batch=2,seq=8 --max-shapes batch=4,seq=8)
  # ($KILN_DYN_PROFILES_ONLY: only the two-profile checks at the end)
  for m in $([ -z "${KILN_DYN_PROFILES_ONLY:-}" ] && echo dynamic dynamic_mix); do
    for p in fp32 fp16; do
      e=/tmp/${m}_$p.kiln
      run "compile_${m}_$p" "$bin/kiln" compile models/tiny/$m.onnxtxt -o $e --precision $p "${profile[@]}"
      for s in 2x8x8 1x4x8 4x8x8 3x8x8 3x4x8 1x5x8 3x7x8; do
        run "check_${m}_${p}_$s" "$bin/kiln" check $e --onnx models/tiny/$m.onnxtxt --shapes x:$s
      done
    done
  done
  if [ -z "${KILN_DYN_PROFILES_ONLY:-}" ]; then
    run refused_outside "$bin/kiln" run /tmp/dynamic_fp32.kiln --shapes x:5x8x8
    run refused_fixed_axis "$bin/kiln" run /tmp/dynamic_fp32.kiln --shapes x:2x8x9
    run timing_dynamic_opt "$bin/kiln" run /tmp/dynamic_fp16.kiln --shapes x:2x8x8 --iterations 200
    run timing_dynamic_padded "$bin/kiln" run /tmp/dynamic_fp16.kiln --shapes x:3x7x8 --iterations 200
  fi
  # Two profiles: shapes in either run (kiln check picks the profile that takes them), shapes in
  # neither are refused; the C API's set_profile on the hand-made two-profile engine, with and
  # without CUDA graphs.
  two=(--min-shapes batch=1,seq=4 --opt-shapes batch=2,seq=8 --max-shapes batch=2,seq=8
       --min-shapes batch=3,seq=8 --opt-shapes batch=4,seq=8 --max-shapes batch=4,seq=8)
  run compile_two_profiles "$bin/kiln" compile models/tiny/dynamic.onnxtxt -o /tmp/two.kiln --precision fp16 "${two[@]}"
  for s in 2x8x8 1x5x8 2x4x8 3x8x8 4x8x8; do
    run "check_two_profiles_$s" "$bin/kiln" check /tmp/two.kiln --onnx models/tiny/dynamic.onnxtxt --shapes x:$s
  done
  run refused_two_profiles "$bin/kiln" run /tmp/two.kiln --shapes x:3x4x8
  for g in "" --cuda-graph; do
    "$bin/kiln-make-test-engine" /tmp/axpb_profiles$g.kiln --profiles $g > /dev/null
    run "c_api_profiles$g" "$bin/kiln-c-api-test" /tmp/axpb_profiles$g.kiln --profiles
  done
  # The tuner weighing two shapes of one profile (tune --weigh-shapes): each candidate measured at
  # both, ranked by the weighted mean; the winner written for the whole profile.
  dbs=/tmp/kiln-dyn-dbs; rm -rf $dbs; mkdir -p $dbs
  route='precision=fp16|fp32;fusion\.elementwise=.*'
  tune weigh_shapes models/tiny/dynamic.onnxtxt --cache $dbs/w.db "${profile[@]}" \
    --weigh-shapes batch=1,seq=8@0.7 --weigh-shapes batch=4,seq=8@0.3 -o /tmp/weighed.kiln
  grep -h 'at the shapes' "$OUT/weigh_shapes.txt" | head -8 >> "$summary"
  run check_weighed "$bin/kiln" check /tmp/weighed.kiln --onnx models/tiny/dynamic.onnxtxt --shapes x:3x7x8
fi

# Dynamic shapes on the zoo (issue 24): ResNet-50 exported with a symbolic batch, one fp16 engine
# for batch 1..64 (opt 32), timed at batches 1, 7, 32, 64 against a static engine of each batch
# (ABAB rounds), outputs at batch 7 (padded to 8) against the static batch-7 engine's on the same
# inputs; with KILN_DYN_BERT=1 BERT-base with symbolic batch and sequence, 1x16..32x512 (opt 8x128),
# at 1x16, 1x128, 8x128, 32x128, 32x512 and 4x100 (padded) likewise.
if [ "$mode" = dynamic-zoo ]; then
  : > "$summary"
  pairs=()
  [ -z "${KILN_DYN_SKIP_R50:-}" ] && python3 models/make_zoo.py --out "$zoo" --no-check --skip-existing --only resnet50_dyn > "$OUT/logs/zoo.log" 2>&1
  [ -z "${KILN_DYN_SKIP_R50:-}" ] && for b in 1 7 32 64; do
    python3 models/make_zoo.py --out "$zoo" --no-check --skip-existing --only resnet50 --batch $b >> "$OUT/logs/zoo.log" 2>&1
  done
  if [ -z "${KILN_DYN_SKIP_R50:-}" ]; then
    run compile_r50_dyn "$bin/kiln" compile "$zoo/resnet50_dyn.onnx" -o /tmp/r50dyn.kiln --precision fp16 \
      --min-shapes batch=1 --opt-shapes batch=32 --max-shapes batch=64
    for b in 1 7 32 64; do
      stem=resnet50_b$b; [ $b = 1 ] && stem=resnet50
      run "compile_r50_b$b" "$bin/kiln" compile "$zoo/$stem.onnx" -o /tmp/r50_b$b.kiln --precision fp16
      pairs+=("r50 $b /tmp/r50_b$b.kiln input:${b}x3x224x224 /tmp/r50dyn.kiln")
    done
    ls -l /tmp/r50dyn.kiln /tmp/r50_b*.kiln >> "$summary"
  fi
  if [ -n "${KILN_DYN_BERT:-}" ]; then
    python3 models/make_zoo.py --out "$zoo" --no-check --skip-existing --only bert_base_dyn >> "$OUT/logs/zoo.log" 2>&1
    run compile_bert_dyn "$bin/kiln" compile "$zoo/bert_base_dyn.onnx" -o /tmp/bertdyn.kiln --precision fp16 \
      --min-shapes batch=1,sequence=16 --opt-shapes batch=8,sequence=128 --max-shapes batch=32,sequence=512
    for bs in 1x16 1x128 8x128 32x128 32x512 4x100; do
      run "compile_bert_$bs" "$bin/kiln" compile "$zoo/bert_base_dyn.onnx" -o /tmp/bert_$bs.kiln --precision fp16 \
        --shapes "input_ids:$bs,attention_mask:$bs"
      pairs+=("bert $bs /tmp/bert_$bs.kiln input_ids:$bs,attention_mask:$bs /tmp/bertdyn.kiln")
    done
    ls -l /tmp/bertdyn.kiln /tmp/bert_*.kiln >> "$summary"
  fi
  for round in 1 2; do
    for p in "${pairs[@]}"; do
      read -r m b static shapes dyn <<< "$p"
      run "static_${m}_${b}_$round" "$bin/kiln" run "$static" --iterations 200
      run "dynamic_${m}_${b}_$round" "$bin/kiln" run "$dyn" --shapes "$shapes" --iterations 200
    done
  done
  # Outputs on the same inputs: the dynamic engine against the static one.
  for p in "${pairs[@]}"; do
    read -r m b static shapes dyn <<< "$p"
    "$bin/kiln" run "$static" --iterations 1 --warmup 0 --outputs /tmp/static_$m$b.npz > /dev/null 2>&1
    "$bin/kiln" run "$dyn" --shapes "$shapes" --inputs /tmp/static_$m$b.npz --iterations 1 --warmup 0 \
      --outputs /tmp/dyn_$m$b.npz > /dev/null 2>&1
    run "same_${m}_$b" python3 bench/npz_diff.py /tmp/static_$m$b.npz /tmp/dyn_$m$b.npz --skip input,input_ids,attention_mask
  done
fi

# Dynamic shapes against PyTorch (issue 24): HF BERT-base (batch x sequence) and torchvision's
# ResNet-50 (batch), exported with symbolic dims by PyTorch's torch.export-based exporter
# (bench/dynamic_torch.py, which also times PyTorch fp16 eager and CUDA graph at each shape and
# writes inputs and fp32 outputs); one kiln fp16 engine per profile and one static engine per
# shape, ABAB on the same inputs, each against PyTorch's fp32 outputs. $KILN_DYN_TORCH: "bert",
# "resnet" or both (default).
if [ "$mode" = dynamic-torch ]; then
  : > "$summary"
  d=/tmp/dyntorch
  which=${KILN_DYN_TORCH:-bert resnet}
  bert_shapes=${KILN_DYN_BERT_SHAPES:-1x16 1x128 8x128 32x128 32x512}
  r50_batches=${KILN_DYN_R50_BATCHES:-1 7 32 64}
  [[ $which == *bert* ]] || bert_shapes=""
  [[ $which == *resnet* ]] || r50_batches=""
  run torch_side python3 bench/dynamic_torch.py --out $d --bert "$(echo $bert_shapes | tr ' ' ,)" \
    --resnet "$(echo $r50_batches | tr ' ' ,)"
  grep -h '^torch ' "$OUT/logs/torch_side.log" >> "$summary"
  pairs=()
  if [ -n "$bert_shapes" ]; then
    io() { echo "input_ids:$1,attention_mask:$1"; }
    run compile_bert_dyn "$bin/kiln" compile $d/bert_dynamo.onnx -o /tmp/dt_bert_dyn.kiln --precision fp16 \
      --min-shapes "$(io 1x16)" --opt-shapes "$(io 8x128)" --max-shapes "$(io 32x512)"
    for s in $bert_shapes; do
      run "compile_bert_$s" "$bin/kiln" compile $d/bert_dynamo.onnx -o "/tmp/dt_bert_$s.kiln" --precision fp16 --shapes "$(io $s)"
      pairs+=("bert_$s /tmp/dt_bert_$s.kiln $(io $s) /tmp/dt_bert_dyn.kiln")
    done
  fi
  if [ -n "$r50_batches" ]; then
    run compile_r50_dyn "$bin/kiln" compile $d/resnet50_dynamo.onnx -o /tmp/dt_r50_dyn.kiln --precision fp16 \
      --min-shapes input:1x3x224x224 --opt-shapes input:32x3x224x224 --max-shapes input:64x3x224x224
    for b in $r50_batches; do
      run "compile_r50_$b" "$bin/kiln" compile $d/resnet50_dynamo.onnx -o "/tmp/dt_r50_$b.kiln" --precision fp16 \
        --shapes "input:${b}x3x224x224"
      pairs+=("resnet50_$b /tmp/dt_r50_$b.kiln input:${b}x3x224x224 /tmp/dt_r50_dyn.kiln")
    done
  fi
  ls -l /tmp/dt_*.kiln >> "$summary" 2>&1
  for round in 1 2; do
    for p in "${pairs[@]}"; do
      read -r tag static shapes dyn <<< "$p"
      for side in static dynamic; do
        engine=$static; [ $side = dynamic ] && engine=$dyn
        run "${side}_${tag}_$round" "$bin/kiln" run "$engine" --shapes "$shapes" --inputs "$d/$tag.in.npz" \
          --outputs "/tmp/dt_${side}_$tag.npz" --iterations 200
      done
    done
  done
  for p in "${pairs[@]}"; do
    read -r tag _ <<< "$p"
    for side in static dynamic; do
      echo "$tag $side vs torch fp32: $(python3 bench/npz_diff.py "$d/$tag.ref.npz" "/tmp/dt_${side}_$tag.npz" | tr '\n' ' ')" >> "$summary"
    done
  done
fi

# onnxruntime's dynamic quantization on a real model (issue 23): HF BERT-base from torch.export
# (bench/dynamic_torch.py at 32x128, with PyTorch's fp32 outputs), quantized by onnxruntime's
# quantize_dynamic (int8 weights, MatMulInteger, DynamicQuantizeLinear), against the float model,
# both kiln fp16 engines: launches, ABAB latency, outputs against PyTorch fp32.
if [ "$mode" = ortq-bert ]; then
  : > "$summary"
  d=/tmp/dyntorch
  [ -z "${KILN_ORTQ_SMALL_ONLY:-}" ] && [ ! -f $d/bert_32x128.in.npz ] && run torch_side python3 bench/dynamic_torch.py --out $d --bert 32x128 --resnet ""
  grep -h '^torch ' "$OUT/logs/torch_side.log" >> "$summary" 2>/dev/null
  [ -z "${KILN_ORTQ_SMALL_ONLY:-}" ] && run quantize python3 -c "
from onnxruntime.quantization import quantize_dynamic, QuantType
quantize_dynamic('$d/bert_dynamo.onnx', '$d/bert_qdyn.onnx', weight_type=QuantType.QInt8)
print('quantized')"
  io=input_ids:32x128,attention_mask:32x128
  # Engines as TAG:BINARY:MODEL:ROUTE: the float model, the quantized one, with $KILN_ORTQ_PROLOGUE
  # the quantized one with its activations' quantization in the products' loads
  # (fusion.prologue=on), and with $KILN_OLD_BIN the quantized model by that kiln too.
  engines="bert_dynamo:$bin/kiln:bert_dynamo:precision=fp16 bert_qdyn:$bin/kiln:bert_qdyn:precision=fp16
    ${KILN_ORTQ_PROLOGUE:+bert_qdyn_prologue:$bin/kiln:bert_qdyn:precision=fp16;fusion.prologue=on}
    ${KILN_OLD_BIN:+bert_qdyn_old:$KILN_OLD_BIN:bert_qdyn:precision=fp16 bert_dynamo_old:$KILN_OLD_BIN:bert_dynamo:precision=fp16}"
  [ -n "${KILN_ORTQ_SMALL_ONLY:-}" ] && engines=""  # (only the small models and the kernel cases below)
  for e in $engines; do
    IFS=: read -r tag k m route <<< "$e"
    run "compile_$tag" "$k" compile $d/$m.onnx -o /tmp/oq_$tag.kiln --route "$route" --shapes $io
    "$k" inspect /tmp/oq_$tag.kiln > "$OUT/logs/inspect_$tag.txt" 2>&1
  done
  for round in 1 2; do
    for e in $engines; do
      IFS=: read -r tag k m route <<< "$e"
      run "time_${tag}_$round" "$bin/kiln" run /tmp/oq_$tag.kiln --inputs $d/bert_32x128.in.npz --outputs /tmp/oq_$tag.npz --iterations 200
    done
  done
  for e in $engines; do
    IFS=: read -r tag k m route <<< "$e"
    echo "$tag fp16 vs torch fp32: $(python3 bench/npz_diff.py $d/bert_32x128.ref.npz /tmp/oq_$tag.npz | tr '\n' ' ')" >> "$summary"
  done
  # Per-launch profiles: the quantized and the float engine (and the old binary's, if any).
  for tag in bert_qdyn bert_dynamo ${KILN_OLD_BIN:+bert_qdyn_old bert_dynamo_old}; do
    [ -n "$engines" ] && run "profile_$tag" "$bin/kiln" run /tmp/oq_$tag.kiln --iterations 50 --profile
  done
  # onnxruntime's small dynamically quantized models ($KILN_ORTQ_DIR: build/models/ortquant's
  # *.dyn.* files) against onnxruntime's outputs, and the reduction kernels' cases. Each model
  # over the routes of $KILN_ORTQ_VARIANTS (NAME:ROUTE ...; the float models they came from over
  # the same routes), timed in ABAB rounds; with $KILN_OLD_BIN the quantized ones by that kiln too.
  variants=${KILN_ORTQ_VARIANTS:-"fp16:precision=fp16 prologue:precision=fp16;fusion.prologue=on implicit:precision=fp16;conv.algo=implicit"}
  timed=()
  for m in $(ls ${KILN_ORTQ_DIR:-.carry/ortquant}/*.dyn*.onnx 2>/dev/null); do
    n=$(basename $m .onnx)
    "$bin/kiln" compile $m -o /tmp/oq_$n.fp32.kiln --precision fp32 > /dev/null 2>&1
    run "check_${n}_fp32" "$bin/kiln" check /tmp/oq_$n.fp32.kiln --inputs ${m%.onnx}.inputs.npz --reference ${m%.onnx}.ref.npz
    for v in $variants; do
      IFS=: read -r vn route <<< "$v"
      "$bin/kiln" compile $m -o /tmp/oq_$n.$vn.kiln --route "$route" > "$OUT/logs/compile_${n}_$vn.log" 2>&1
      "$bin/kiln" inspect /tmp/oq_$n.$vn.kiln > "$OUT/logs/inspect_${n}_$vn.txt" 2>&1
      run "check_${n}_$vn" "$bin/kiln" check /tmp/oq_$n.$vn.kiln --inputs ${m%.onnx}.inputs.npz --reference ${m%.onnx}.ref.npz
      timed+=("${n}_$vn /tmp/oq_$n.$vn.kiln")
    done
    [ -n "${KILN_OLD_BIN:-}" ] && "$KILN_OLD_BIN" compile $m -o /tmp/oq_${n}_old.kiln --precision fp16 > /dev/null 2>&1 &&
      timed+=("${n}_old /tmp/oq_${n}_old.kiln")
  done
  for m in $(ls ${KILN_ORTQ_DIR:-.carry/ortquant}/{mlp,cnn}.onnx 2>/dev/null); do  # the float models they came from
    n=$(basename $m .onnx)
    for v in $variants; do
      IFS=: read -r vn route <<< "$v"
      [ "$vn" = prologue ] && continue  # (no quantization to fuse)
      "$bin/kiln" compile $m -o /tmp/oq_float_$n.$vn.kiln --route "$route" > /dev/null 2>&1 &&
        timed+=("float_${n}_$vn /tmp/oq_float_$n.$vn.kiln")
    done
  done
  for round in 1 2; do
    for t in "${timed[@]}"; do
      read -r n e <<< "$t"
      run "latency_${n}_$round" "$bin/kiln" run $e --iterations 500
    done
  done
  "$bin/kiln-kernel-cases-dump" 2>/dev/null | grep -E '"op":"Reduce' > /tmp/reduce_cases.jsonl &&
    run reduce_kernel_cases python3 tests/codegen/gpu_check.py /tmp/reduce_cases.jsonl
fi

# Sharded tuning on one GPU (issue 26, docs/distributed-tuning.md): $KILN_SHARD_MODEL (default
# the case model bert_small) over $KILN_SHARD_ROUTE, a full search unsharded, then as 3 shards
# run one after another as separate processes (tools/tune-shard.sh, each its own cache), the
# caches merged with `kiln cache merge`, the winner picked with `--from-cache`; every step gets
# the same --reference. Summary: both winners, and whether they are the same route.
if [ "$mode" = shards ]; then
  : > "$summary"
  m=${KILN_SHARD_MODEL:-$cases/bert_small.onnx}
  route=${KILN_SHARD_ROUTE:-'precision=fp32|fp16;fusion\.epilogue=on|off;fusion\.attention=on|off'}
  d=/tmp/kiln-shards
  rm -rf $d && mkdir -p $d
  "$bin/kiln" compile "$m" -o $d/ref.kiln --precision fp32 > "$OUT/logs/shards_ref.log" 2>&1 &&
    "$bin/kiln" run $d/ref.kiln --outputs $d/ref.npz --warmup 1 --iterations 1 >> "$OUT/logs/shards_ref.log" 2>&1
  args=(--route "$route" --search "${KILN_SHARD_SEARCH:-full}" --reference $d/ref.npz --json)
  t0=$(date +%s)
  "$bin/kiln" tune "$m" "${args[@]}" --cache $d/whole.db > $d/whole.json 2> "$OUT/logs/shards_whole.log"
  echo "unsharded rc=$? $(( $(date +%s) - t0 )) s" >> "$summary"
  for k in 1 2 3; do
    t0=$(date +%s)
    SHARD=$k SHARDS=3 KILN="$bin/kiln" bash tools/tune-shard.sh $d "$m" "${args[@]}"
    echo "shard $k/3 rc=$? $(( $(date +%s) - t0 )) s" >> "$summary"
    cp $d/shard-$k.log "$OUT/logs/shards_$k.log"
  done
  cp $d/shard-1.db $d/all.db
  for k in 2 3; do "$bin/kiln" cache merge $d/shard-$k.db --cache $d/all.db >> "$OUT/logs/shards_merge.log" 2>&1; done
  "$bin/kiln" tune "$m" "${args[@]}" --cache $d/all.db --from-cache > $d/merged.json 2> "$OUT/logs/shards_merged.log"
  echo "from-cache rc=$?" >> "$summary"
  # The same unsharded tune over the merged cache measures nothing.
  "$bin/kiln" tune "$m" "${args[@]}" --cache $d/all.db > $d/again.json 2> "$OUT/logs/shards_again.log"
  echo "unsharded over the merged cache rc=$? measured $(grep -c '^tune: \[[0-9]*\] [a-z_]* *[0-9.]* ms' "$OUT/logs/shards_again.log")" >> "$summary"
  cp $d/*.json "$OUT/logs/" 2>/dev/null
  python3 - $d/whole.json $d/merged.json $d/again.json >> "$summary" <<'PY'
import json, sys
best = [json.load(open(p)).get("best") for p in sys.argv[1:]]
print("winners: unsharded %r | merged shards (--from-cache) %r | unsharded over merged cache %r" % tuple(best))
print("shards: merged winner %s the unsharded one" % ("EQUALS" if best[0] == best[1] else "DIFFERS FROM"))
PY
fi

# Hopper speed and exporters' patterns (issue 25): the wgmma product kernel against a double
# reference and beside mma.sync, cuBLAS at the same sizes (bench/hub_torch.py); attention as
# PyTorch's exporters write scaled_dot_product_attention (models/tiny/attention_sdpa, a fully
# masked sequence included) in fp16 and bf16 against its numpy reference; HF BERT-base and GPT-2
# exported by PyTorch's torch.export-based exporter (models/export_hub.py) beside the zoo's
# hand-written ones: launches, fused attentions, latency, and PyTorch eager / CUDA graph.
# KILN_HOPPER_MODELS_ONLY=1: the exported models alone (no kernel checks), and the small exports of
# HF BERT and GPT-2 (a few MB) in $OUT/hub_small.tgz for the host to read.
if [ "$mode" = hopper ]; then
  : > "$summary"
  if [ -z "${KILN_HOPPER_MODELS_ONLY:-}" ]; then
    run wgmma_check "$bin/kiln-wgmma-check" --iterations 30
    run cublas_gemm python3 bench/hub_torch.py --iterations 50 --only gemm
    for p in fp16 bf16; do
      "$bin/kiln" compile models/tiny/attention_sdpa.onnxtxt -o /tmp/sdpa_$p.kiln --precision $p > "$OUT/logs/sdpa_compile_$p.log" 2>&1
      run "sdpa_check_$p" "$bin/kiln" check /tmp/sdpa_$p.kiln --reference models/tiny/attention_sdpa.npz
    done
  else
    python3 models/export_hub.py --out /tmp/hubsmall --size small --only bert_dynamo,gpt2_dynamo > "$OUT/logs/export_small.log" 2>&1
    tar czf "$OUT/hub_small.tgz" -C /tmp hubsmall
  fi
  python3 models/export_hub.py --out /tmp/hubbase --size base --only bert_dynamo,gpt2_dynamo > "$OUT/logs/export.log" 2>&1
  python3 models/make_zoo.py --out "$zoo" --no-check --skip-existing --only bert_base_b32_s128,gpt2_small_s512 >> "$OUT/logs/export.log" 2>&1
  for e in "zoo_bert $zoo/bert_base_b32_s128.onnx" "hf_bert /tmp/hubbase/bert_dynamo.onnx input_ids:32x128,attention_mask:32x128" \
           "zoo_gpt2 $zoo/gpt2_small_s512.onnx" "hf_gpt2 /tmp/hubbase/gpt2_dynamo.onnx input_ids:1x512,attention_mask:1x512"; do
    read -r name model shapes <<< "$e"
    run "compile_$name" "$bin/kiln" compile "$model" -o /tmp/$name.kiln --precision fp16 ${shapes:+--shapes $shapes}
    "$bin/kiln" inspect /tmp/$name.kiln > "$OUT/inspect_$name.txt" 2>&1
    echo "$name: $(grep -c kiln_attn "$OUT/inspect_$name.txt") fused attention launches" >> "$summary"
    run "time_$name" "$bin/kiln" run /tmp/$name.kiln --iterations 200
  done
  run torch_hf python3 bench/hub_torch.py --iterations 100 --only bert,gpt2
fi

# The Hopper product kernel end to end (issue 25): each model's fp16 engine on the default route
# and with gemm.tactic=kiln_wgmma, both checked against the fp32 engine's outputs on the same
# inputs (kiln run --outputs), timed ABAB (300 runs, two rounds) and profiled per launch; the
# kernel check (kiln-wgmma-check --quick) and an fp8 QDQ product first; PyTorch eager and CUDA
# graph in the same call.
if [ "$mode" = wgmma ]; then
  : > "$summary"
  models=${KILN_WGMMA_MODELS:-bert_base_b32_s128 vit_b16_b32 gpt2_small_s512}
  python3 models/make_zoo.py --out "$zoo" --no-check --skip-existing --only "${models// /,}" > "$OUT/logs/zoo.log" 2>&1
  run wgmma_quick "$bin/kiln-wgmma-check" --quick --iterations 5
  # An fp8 QDQ product (per-column scales, ReLU epilogue) on both tactics against the CPU evaluator.
  for t in default wgmma; do
    r=""; [ $t = wgmma ] && r="gemm.tactic=kiln_wgmma"
    "$bin/kiln" compile tests/lit/lowering/wgmma_fp8.onnxtxt -o "/tmp/wgmma_fp8_$t.kiln" --shapes x:4096x64 --route "$r" \
      > "$OUT/logs/wgmma_fp8_$t.log" 2>&1
    run "check_fp8_$t" "$bin/kiln" check "/tmp/wgmma_fp8_$t.kiln" --onnx tests/lit/lowering/wgmma_fp8.onnxtxt --shapes x:4096x64
  done
  for m in $models; do
    "$bin/kiln" compile "$zoo/$m.onnx" -o "/tmp/$m.f32.kiln" > "$OUT/logs/${m}_f32.log" 2>&1
    "$bin/kiln" run "/tmp/$m.f32.kiln" --outputs "/tmp/$m.ref.npz" --warmup 0 --iterations 1 > /dev/null 2>&1
    for t in default wgmma; do
      r="precision=fp16"; [ $t = wgmma ] && r="precision=fp16;gemm.tactic=kiln_wgmma"
      "$bin/kiln" compile "$zoo/$m.onnx" -o "/tmp/$m.$t.kiln" --route "$r" > "$OUT/logs/${m}_$t.log" 2>&1
      echo "$m $t: $(tail -1 "$OUT/logs/${m}_$t.log" | cut -c1-200)" >> "$summary"
      run "check_${m}_$t" "$bin/kiln" check "/tmp/$m.$t.kiln" --reference "/tmp/$m.ref.npz"
      "$bin/kiln" run "/tmp/$m.$t.kiln" --profile --iterations 20 > "$OUT/logs/profile_${m}_$t.txt" 2>&1
    done
    for rep in 1 2; do
      for t in default wgmma; do run "time_${m}_${t}_$rep" "$bin/kiln" run "/tmp/$m.$t.kiln" --iterations 300; done
    done
  done
  python3 bench/torch_baselines.py --configs "${models// /,}" --modes eager,eager_cuda_graph --time-budget 180 \
    --out "$OUT/torch_baselines.json" > "$OUT/logs/torch.log" 2>&1
  tail -8 "$OUT/logs/torch.log" >> "$summary"
fi

# The Python package (runtime/python/kiln) with torch on the GPU: outputs equal to `kiln run`'s,
# latency from Python beside the CLI's (bench/python_check.py).
if [ "$mode" = python ]; then
  : > "$summary"
  python3 models/make_zoo.py --out "$zoo" --no-check --skip-existing --only resnet50_b32 > "$OUT/logs/zoo.log" 2>&1
  PYTHONPATH=runtime/python KILN_BIN="$bin/kiln" KILN_RUNTIME_LIB="${KILN_RUNTIME_LIB:-${KILN_PREFIX:-.carry/prefix}/lib/libkiln_runtime.so}" \
    run python_check python3 bench/python_check.py models/tiny/mlp.onnxtxt models/tiny/conv_bn_relu.onnxtxt \
    $(ls "$cases"/*.onnx 2>/dev/null | grep -E 'bert_small|convnet' | head -2) $(ls "$zoo/resnet50_b32.onnx" 2>/dev/null)
fi

# An installed kiln ($KILN_PREFIX: `cmake --install build --prefix P --strip`, carried): the README's
# C example built against it out of tree (find_package shared and static, pkg-config) and run.
if [ "$mode" = install ]; then
  : > "$summary"
  run install_example bash tests/install/test_install.sh --prefix="${KILN_PREFIX:-.carry/prefix}" .
fi

if [ "$mode" = reliability ]; then
  : > "$summary"
  part=${KILN_RELIABILITY_PART:-all}  # stress | sanitizer | all
  san_models=${KILN_SANITIZE_MODELS:-resnet50 mobilenetv2_b32 vit_b16_b32 bert_base_b32_s128 gpt2_small_s512}
  only=resnet50,bert_base_b32_s128
  [ "$part" != stress ] && only=$only,${san_models// /,}
  python3 models/make_zoo.py --out "$zoo" --no-check --skip-existing --only "$only" > "$OUT/logs/zoo.log" 2>&1
  # ResNet-50 b1 as the issue found it failing (fp32 and TF32 on cuBLASLt, fp16; graphs on and off)
  # and BERT-base fp16 (cuBLASLt products and the fused attention).
  declare -A stress_routes=([r50_fp32]="" [r50_tf32]="gemm.tf32=on" [r50_fp16]="precision=fp16"
                            [r50_fp16_nograph]="precision=fp16;runtime.cuda_graph=off" [r50_fp32_nograph]="runtime.cuda_graph=off")
  [ "$part" != sanitizer ] && for e in "${!stress_routes[@]}"; do
    "$bin/kiln" compile "$zoo/resnet50.onnx" -o /tmp/$e.kiln --route "${stress_routes[$e]}" > "$OUT/logs/compile_$e.log" 2>&1
  done
  if [ "$part" != sanitizer ]; then
    "$bin/kiln" compile "$zoo/bert_base_b32_s128.onnx" -o /tmp/bert_fp16.kiln --precision fp16 > "$OUT/logs/compile_bert_fp16.log" 2>&1
    for e in r50_fp32 r50_tf32 r50_fp16 r50_fp16_nograph r50_fp32_nograph bert_fp16; do
      for t in 2 8; do  # 10 runs of 2 threads (as the issue found it), 5 of 8
        runs=$(( t == 2 ? 10 : 5 ))
        [ -n "${KILN_STRESS_OLD:-}" ] && run "before_${e}_t$t" "$KILN_STRESS_OLD" /tmp/$e.kiln --threads $t --runs $runs --iterations 20 --check-every 5
        run "after_${e}_t$t" "$bin/kiln-stress" /tmp/$e.kiln --threads $t --runs $runs --iterations 20 --check-every 5
      done
      run "after_${e}_rebind" "$bin/kiln-stress" /tmp/$e.kiln --threads 4 --runs 2 --iterations 20 --check-every 1 --rebind
    done
    # Soak: 8 threads x 12,500 enqueues (1e5), outputs checked every 100; then 1,000 create/destroy.
    KILN_TIMEOUT=400 run soak_r50_fp16 "$bin/kiln-stress" /tmp/r50_fp16.kiln --threads 8 --iterations 12500 --check-every 100
    KILN_TIMEOUT=400 run create_destroy_r50_fp16 "$bin/kiln-stress" /tmp/r50_fp16.kiln --create-destroy 1000
  fi
  # compute-sanitizer on the zoo's fp16 engines: two enqueues (the direct one, then the graph).
  # racecheck looks at kiln's kernels only: on 2026-12-06 (H100) it reported hazards in every
  # cuBLASLt nvjet_sm90 kernel (TMA/mbarrier-synchronised code it does not model) and none in kiln's.
  cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  [ "$part" != stress ] && for m in $san_models; do
    "$bin/kiln" compile "$zoo/$m.onnx" -o /tmp/san_$m.kiln --precision fp16 > "$OUT/logs/compile_san_$m.log" 2>&1
    for tool in memcheck racecheck; do
      filter=(); [ $tool = racecheck ] && filter=(--kernel-name regex:kiln_)
      KILN_TIMEOUT=300 run "sanitizer_${tool}_$m" "$cs" --tool $tool "${filter[@]}" --error-exitcode 9 \
        "$bin/kiln" run /tmp/san_$m.kiln --warmup 0 --iterations 2
      grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$OUT/logs/sanitizer_${tool}_$m.log" | tail -1 | sed "s/^/sanitizer_${tool}_$m: /" >> "$summary"
    done
  done
fi

if [ "$mode" = engines ]; then  # only the host-compiled engines of $KILN_INT8_DIR
  : > "$summary"
  host_engines
fi

if [ "$mode" = rnn ]; then
  : > "$summary"
  # Recurrent engines against kiln's CPU evaluator on random inputs (kiln-gpu-check: outputs
  # poisoned first; rel L2 <= 1e-4 fp32, 1e-2 fp16/bf16), each timed.
  python3 tests/recurrent/rnn_models.py --out /tmp/rnn_gpu --set gpu > "$OUT/logs/rnn_models.log" 2>&1
  python3 tests/recurrent/rnn_models.py --out /tmp/rnn_cpu --set cpu >> "$OUT/logs/rnn_models.log" 2>&1
  for m in /tmp/rnn_gpu/*.onnx /tmp/rnn_cpu/*.onnx; do
    stem=$(basename "$m" .onnx)
    for r in "" "precision=fp16" "precision=bf16"; do
      run "rnn_${stem}_${r//[^a-z0-9]/_}" "$bin/kiln-gpu-check" "$m" --route "$r" --iterations 20
    done
  done
  # The ONNX node tests of LSTM/GRU/RNN as fp32 engines against their expected outputs.
  grep -E '^test_(lstm|gru|rnn|simple_rnn)' tests/conformance/passing.txt > /tmp/rnn_passing.txt
  run rnn_node_tests python3 tests/conformance/gpu_conformance.py "$bin/kiln" ${KILN_ONNX_DATA:+--data "$KILN_ONNX_DATA"} \
    --expect /tmp/rnn_passing.txt --out "$OUT/rnn_node_tests.txt"
  # kiln vs cuDNN: bidirectional 2-layer LSTM, hidden 256, sequence 64, batch 32, input 256, fp16.
  KILN_TIMEOUT=600 run lstm_vs_cudnn python3 bench/lstm_vs_cudnn.py --kiln "$bin/kiln" --iterations 200 \
    --json "$OUT/lstm_vs_cudnn.json"
  "$bin/kiln" compile /tmp/rnn_gpu/lstm_bidir_h256.onnx -o /tmp/rnn_h256_fp16.kiln --precision fp16 > /dev/null 2>&1 &&
    run rnn_profile_h256_fp16 "$bin/kiln" run /tmp/rnn_h256_fp16.kiln --iterations 50 --profile
  grep -hE "^(latency|accuracy|device|max abs)" "$OUT/logs/lstm_vs_cudnn.log" >> "$summary"
fi

# The real-model corpus (models/realmodels; its files from fetch.py, carried in $KILN_CORPUS_DIR,
# $KILN_CORPUS_ONLY: ids): fp32 and fp16 engines compiled here and run against onnxruntime's
# references (bounds 1e-4 / 1e-2); the table and corpus.json in $OUT.
if [ "$mode" = corpus ]; then
  : > "$summary"
  KILN_TIMEOUT=${KILN_TIMEOUT:-580} run corpus python3 models/realmodels/run_corpus.py --dir "${KILN_CORPUS_DIR:-.carry/corpus}" \
    --kiln "$bin/kiln" --gpu --no-eval --expect models/realmodels/expected.json --jobs "${KILN_CORPUS_JOBS:-4}" ${KILN_CORPUS_ONLY:+--only "$KILN_CORPUS_ONLY"} --json "$OUT/corpus.json"
  grep -vE '^\s*$' "$OUT/logs/corpus.log" >> "$summary"
fi

# Split-K over thread-block clusters (gemm.splitk): the 8-bit/fp8 product kernel split and unsplit
# against exact sums (kiln-gemm8-check), and the zoo's convolutional models in fp16 built with
# gemm.splitk=1 and auto (their implicit-GEMM convolutions are where auto splits), run on the
# same inputs: outputs compared, latency side by side. Then one engine's weights shared by its
# contexts (kiln-shared-weights-test: device memory per extra context, issue 24).
if [ "$mode" = splitk ]; then
  : > "$summary"
  run gemm8 "$bin/kiln-gemm8-check" --iterations 100
  grep -E "split" "$OUT/logs/gemm8.log" >> "$summary"
  run shared_weights "$bin/kiln-shared-weights-test"
  grep -E "context|PASS|FAIL" "$OUT/logs/shared_weights.log" >> "$summary"
  KILN_ZOO_NO_REF=1 make_zoo
  for m in ${KILN_SPLITK_MODELS:-resnet50 resnet50_b32 mobilenetv2_b32}; do
    for sk in 1 auto; do
      run "compile_${m}_splitk_$sk" "$bin/kiln" compile "$zoo/$m.onnx" -o "/tmp/${m}_sk$sk.kiln" --route "precision=fp16;gemm.splitk=$sk" || continue
      "$bin/kiln" inspect "/tmp/${m}_sk$sk.kiln" > "$OUT/logs/inspect_${m}_splitk_$sk.txt" 2>&1
      run "latency_${m}_splitk_$sk" "$bin/kiln" run "/tmp/${m}_sk$sk.kiln" --iterations 300 --profile --outputs "/tmp/${m}_sk$sk.npz"
    done
    python3 bench/npz_diff.py "/tmp/${m}_sk1.npz" "/tmp/${m}_skauto.npz" --skip input,x > "$OUT/logs/diff_${m}.log" 2>&1
    echo "$m: splitk=1 $(grep -h '^latency' "$OUT/logs/latency_${m}_splitk_1.log" | cut -c1-60) | auto $(grep -h '^latency' "$OUT/logs/latency_${m}_splitk_auto.log" | cut -c1-60) | $(tr '\n' ' ' < "$OUT/logs/diff_${m}.log")" >> "$summary"
  done
fi

if [ "$mode" = conformance ]; then
  # The host's onnx package may lack the node tests: $KILN_ONNX_DATA points at a carried copy.
  run gpu_conformance python3 tests/conformance/gpu_conformance.py "$bin/kiln" ${KILN_ONNX_DATA:+--data "$KILN_ONNX_DATA"} \
    --out "$OUT/conformance_gpu.txt"
fi
cat "$summary"

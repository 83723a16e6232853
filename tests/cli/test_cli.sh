#!/usr/bin/env bash
# Command-line behaviour: exit codes and messages of `kiln plan`/`kiln import` on good and bad
# models. Usage: test_cli.sh KILN_BINARY SOURCE_DIR
set -u
kiln=$1
src=$2
tiny=$src/models/tiny
passed=0
failed=0

# expect RC PATTERN -- ARGS...: runs kiln ARGS, checks the exit code and that stdout+stderr
# match the extended regex PATTERN.
expect() {
  local rc=$1 pattern=$2
  shift 3
  local out
  out=$(timeout 60 "$kiln" "$@" 2>&1)
  local got=$?
  if [[ $got -eq $rc ]] && grep -Eq -- "$pattern" <<<"$out"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "FAIL: kiln $* → exit $got (want $rc), output:"
    echo "$out" | head -5 | sed 's/^/    /'
    echo "    (wanted /$pattern/)"
  fi
}

# expect_eval_matches MODEL: `kiln eval` of a tiny model on the inputs of its .npz gives the
# outputs numpy computed there (every output, within 1e-6; the first is y).
expect_eval_matches() {  # MODEL [eval options]
  local m=$1 out="$tmp/$(basename "$1" .onnxtxt)_eval.npz"
  shift
  expect 0 "output y +float32" -- eval "$m" --inputs "${m%.onnxtxt}.npz" --outputs "$out" "$@"
  if /usr/bin/python3 -c "
import numpy as np, sys
got, want = np.load('$out'), np.load('${m%.onnxtxt}.npz')
sys.exit(0 if all(np.allclose(got[k], want[k], rtol=1e-6, atol=1e-6) for k in got.files) else 1)"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL: kiln eval of $m differs from the numpy reference"; fi
}

expect 0 "Conv +1 " -- plan "$tiny/conv_bn_relu.onnxtxt"
# Shell completion from the CLI's own definition: subcommands, options, nested subcommands.
if out=$(bash -c '
source <("$1" completion bash)
comp() { COMP_WORDS=("$@"); COMP_CWORD=$(( $# - 1 )); COMPREPLY=(); _kiln; echo "${COMPREPLY[*]}"; }
comp kiln com; comp kiln compile m.onnx --pre; comp kiln debug ""; comp kiln debug precision --tol' _ "$kiln" 2>&1) &&
   [ "$out" = $'compile completion\n--precision\nprecision --help -h\n--tolerance' ]; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL: kiln completion bash: $out"
fi
# zsh registers the bash function through bashcompinit; fish completes from its own lines.
if out=$(zsh -c 'autoload -U compinit && compinit -u && source <("$1" completion zsh) && echo ${_comps[kiln]}' _ "$kiln" 2>&1) &&
   [ "$out" = "_bash_complete -o filenames -F _kiln" ]; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL: kiln completion zsh (zsh from tools/setup-debian.sh): $out"
fi
if out=$(fish -c '"$argv[1]" completion fish | source; complete -C "kiln com"; complete -C "kiln compile m.onnx --io"; complete -C "kiln debug "; complete -C "kiln -"' "$kiln" 2>&1 | cut -f1 | tr '\n' ' ') &&
   [[ $out == "compile completion --io-dtype precision "*"--log-file "* ]]; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL: kiln completion fish (fish from tools/setup-debian.sh): $out"
fi
expect 2 "tcsh not in" -- completion tcsh
expect 0 '"total_flops"' -- plan "$tiny/mlp.onnxtxt" --json
expect 0 "output y +float32 +2x12" -- plan "$tiny/shape_chain.onnxtxt"
expect 0 "output y +float32 +2x3" -- plan "$tiny/external_data/model.onnx"
expect 1 "unsupported: 1 node" -- plan "$tiny/unsupported.onnxtxt"
expect 1 '"op_type": "Foo"' -- plan "$tiny/unsupported.onnxtxt" --json
expect 2 "not a valid ONNX protobuf" -- plan "$tiny/bad/truncated.onnx"
expect 2 "not a valid ONNX protobuf" -- plan "$tiny/bad/garbage.onnx"
expect 2 "cycle through node" -- plan "$tiny/bad/cycle.onnxtxt"
expect 2 "tensor 't' is produced by both" -- plan "$tiny/bad/duplicate_names.onnxtxt"
expect 2 "graph has no outputs" -- plan "$tiny/bad/empty_graph.onnxtxt"
expect 2 "opset 99" -- plan "$tiny/bad/unknown_opset.onnxtxt"
expect 2 "symbolic dimension 'batch'.*--shapes" -- plan "$tiny/bad/symbolic_dim.onnxtxt"
expect 0 "input +x +float32 +4x3" -- plan "$tiny/bad/symbolic_dim.onnxtxt" --shapes x:4x3
expect 2 "not a graph input" -- plan "$tiny/bad/symbolic_dim.onnxtxt" --shapes nope:4x3
expect 2 "bad dimension" -- plan "$tiny/bad/symbolic_dim.onnxtxt" --shapes x:4xq
# A symbolic dimension by name (issue 24's --shapes batch=8), alone or with an input's shape.
expect 2 "pass --shapes x:Nx3 or --shapes batch=N" -- plan "$tiny/bad/symbolic_dim.onnxtxt"
expect 0 "input +x +float32 +8x3" -- plan "$tiny/bad/symbolic_dim.onnxtxt" --shapes batch=8
expect 0 "input +x +float32 +8x3" -- plan "$tiny/bad/symbolic_dim.onnxtxt" --shapes "x:8x3;batch=8"
expect 2 "input 'x' dimension 0 \('batch'\) = 4 but also batch=8" -- plan "$tiny/bad/symbolic_dim.onnxtxt" --shapes x:4x3,batch=8
expect 2 "sets dimension 'seq', which no graph input has \(their named dimensions: batch\)" -- plan "$tiny/bad/symbolic_dim.onnxtxt" --shapes batch=2,seq=5
expect 2 "a symbolic dimension takes a positive size" -- plan "$tiny/bad/symbolic_dim.onnxtxt" --shapes batch=0
expect 2 "node 'add' \(Add\).*cannot be broadcast" -- plan "$tiny/bad/bad_shapes.onnxtxt"
expect 2 "cannot open external data file" -- plan "$tiny/bad/missing_external/model.onnx"
expect 2 "reads tensor 'nonexistent'" -- plan "$tiny/bad/undefined_input.onnxtxt"
expect 2 "cannot read model file" -- plan "$tiny/does_not_exist.onnx"
expect 1 "sv +StridedView: no kiln op for ai.onnx::StridedView" -- plan "$tiny/bad/internal_op.onnxtxt"
expect 2 "node 'if' \\(If\\): the condition must be a compile-time constant here: it is known only at run time and output 0 is float32 3 in the then branch but float32 6 in the else branch" -- plan "$tiny/bad/if_runtime_shapes.onnxtxt"
expect 2 "node 'loop' \\(Loop\\): the trip count M must be a compile-time constant" -- plan "$tiny/bad/loop_runtime_trips.onnxtxt"
# fp16 that stays right: what fp16 overflows is kept in fp32 and said so; without that, kiln debug
# precision names where the fp16 graph starts to drift.
ov="$tiny/fp16_overflow"
expect 0 "node 'square' \\(Pow\\) runs in fp32: a sum of squares" -- eval "$ov.onnxtxt" --inputs "$ov.npz" --precision fp16
expect 0 "node 'one_minus' \\(Sub\\) runs in fp32: 1 - p of a probability near 1" -- eval "$ov.onnxtxt" --inputs "$ov.npz" --precision fp16
expect 1 "first node that drifts: 'square' \\(Pow\\)" -- debug precision "$ov.onnxtxt" --inputs "$ov.npz" --route "precision=fp16;precision.safety=off"
expect 1 "drifts too, its inputs within 0.01: 'one_minus'" -- debug precision "$ov.onnxtxt" --inputs "$ov.npz" --route "precision=fp16;precision.safety=off"
expect 0 "no node drifts beyond 0.01" -- debug precision "$ov.onnxtxt" --inputs "$ov.npz" --precision fp16
expect 0 "node 'std' \\(Sqrt\\) runs in fp32: reads values that reach 4.57e\\+06 on the check inputs" -- eval "$ov.onnxtxt" --inputs "$ov.npz" --route "precision=fp16;precision.safety=off" --check-inputs "$ov.npz"
expect 0 "warning: graph output 'y' is declared with shape 1xseqlen but computes float32 2x3x4" -- plan "$tiny/quirks/exporter_quirks.onnxtxt" --shapes x:2x3x4
expect 0 "warning: graph output 's' is declared with shape 1 but computes float32 scalar" -- plan "$tiny/quirks/exporter_quirks.onnxtxt" --shapes x:2x3x4
expect 2 "graph input 'x' has symbolic dimension \\(declared -1\\) at axis 0.*--shapes x:Nx3x4" -- plan "$tiny/quirks/exporter_quirks.onnxtxt"
expect 2 "not a valid text-format ONNX model" -- plan "$tiny/bad/garbled_text.onnxtxt"
expect 2 "" -- frobnicate
expect 0 "kiln\.gemm" -- import "$tiny/mlp.onnxtxt"

# compile / inspect (NVRTC, no GPU needed) and a corrupt engine.
tmp=$(mktemp -d)
ov="$tiny/fp16_overflow"
# debug precision --bisect: nodes to keep in fp32 so that the outputs meet the tolerance; the route it prints is
# checked here on its own (the evaluator's outputs against the fp32 graph's).
expect 0 "alone: rel L2 inf; keeping 6 of 8 nodes in fp32: .* <= 0.01" -- debug precision "$ov.onnxtxt" --inputs "$ov.npz" --route "precision=fp16;precision.safety=off" --bisect
found=$("$kiln" debug precision "$ov.onnxtxt" --inputs "$ov.npz" --route "precision=fp16;precision.safety=off" --bisect --direction reverse --json 2>/dev/null |
  /usr/bin/python3 -c 'import json, sys; j = json.load(sys.stdin); print(j["route"] if j["found"] and j["rel_l2"] <= 0.01 else "")')
"$kiln" eval "$ov.onnxtxt" --inputs "$ov.npz" --outputs "$tmp/ov32.npz" > /dev/null 2>&1
"$kiln" eval "$ov.onnxtxt" --inputs "$ov.npz" --route "$found" --outputs "$tmp/ovfound.npz" > /dev/null 2>&1
if [ -n "$found" ] && /usr/bin/python3 -c '
import sys, numpy as np
a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
sys.exit(0 if all(np.linalg.norm(b[k] - a[k]) <= 1e-2 * np.linalg.norm(a[k]) for k in a.files) else 1)' "$tmp/ov32.npz" "$tmp/ovfound.npz"; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL: debug precision --bisect --direction reverse: route '$found' misses 1e-2"
fi
expect 0 "alone: rel L2 0.000.*; keeping 0 of 4 nodes" -- debug precision "$tiny/mlp.onnxtxt" --inputs "$tiny/mlp.npz" --bisect
expect 2 "--reference requires --bisect" -- debug precision "$tiny/mlp.onnxtxt" --inputs "$tiny/mlp.npz" --reference "$tiny/mlp.npz"
expect 2 "--direction: sideways not in" -- debug precision "$tiny/mlp.onnxtxt" --inputs "$tiny/mlp.npz" --bisect --direction sideways
# plan predicts compile: it lowers the model for --arch/--route (no NVRTC) and exits 1 naming
# every node the GPU cannot build; an output shape that depends on input values it does not have
# is an unsupported node naming the input; opsets 1-6 import the ops whose meaning is today's.
cat > "$tmp/convw.onnxtxt" <<'EOF'
ir_version: 8
opset_import { domain: "" version: 17 }
graph {
  name: "g"
  node { input: "x" input: "w" output: "y" name: "conv" op_type: "Conv" }
  input { name: "x" type { tensor_type { elem_type: 1 shape { dim { dim_value: 1 } dim { dim_value: 2 } dim { dim_value: 5 } dim { dim_value: 5 } } } } }
  input { name: "w" type { tensor_type { elem_type: 1 shape { dim { dim_value: 3 } dim { dim_value: 2 } dim { dim_value: 3 } dim { dim_value: 3 } } } } }
  output { name: "y" type { tensor_type { elem_type: 1 shape { dim { dim_value: 1 } dim { dim_value: 3 } dim { dim_value: 3 } dim { dim_value: 3 } } } } }
}
EOF
sed -e 's/"Conv"/"NonZero"/; s/ input: "w"//; s/elem_type: 1 shape { dim { dim_value: 1 } dim { dim_value: 3 } dim { dim_value: 3 } dim { dim_value: 3 } }/elem_type: 7/' \
    -e '/name: "w"/d' "$tmp/convw.onnxtxt" > "$tmp/nonzero.onnxtxt"
sed -e 's/version: 17/version: 6/; s/"Conv"/"Elu"/; s/ input: "w"//; s/dim { dim_value: 3 } dim { dim_value: 3 } dim { dim_value: 3 } }/dim { dim_value: 2 } dim { dim_value: 5 } dim { dim_value: 5 } }/' \
    -e '/name: "w"/d' "$tmp/convw.onnxtxt" > "$tmp/elu6.onnxtxt"
sed -e 's/"Elu"/"Sum"/' "$tmp/elu6.onnxtxt" > "$tmp/sum6.onnxtxt"
expect 0 "GPU sm_90, route '': every node builds \(6 launches\)" -- plan "$tiny/conv_bn_relu.onnxtxt"
expect 1 "node 'conv' \(ConvNhwc\): convolution weights must be constants" -- plan "$tmp/convw.onnxtxt"
expect 1 '"buildable": false' -- plan "$tmp/convw.onnxtxt" --json
expect 0 "every node builds \(1 launches\)" -- plan "$tmp/convw.onnxtxt" --route layout.conv=nchw
expect 1 "NonZero: the output shape depends on the values of input 'X', so it must be a compile-time constant" -- plan "$tmp/nonzero.onnxtxt"
expect 0 "Elu +1 " -- plan "$tmp/elu6.onnxtxt"
expect 1 "Sum: not supported at opset 6" -- plan "$tmp/sum6.onnxtxt"
expect 0 "wrote .*cbr.kiln .*for sm_90, route '': 5 launches" -- compile "$tiny/conv_bn_relu.onnxtxt" -o "$tmp/cbr.kiln" --compile-cache-dir "$tmp/cache"
expect 0 "4 from cache, 0 compiled" -- compile "$tiny/conv_bn_relu.onnxtxt" -o "$tmp/cbr2.kiln" --compile-cache-dir "$tmp/cache"
# Fusion knobs off: one launch per op again (Conv, BatchNorm, Relu, ...).
expect 0 "route 'fusion.batchnorm=off;fusion.elementwise=off;fusion.epilogue=off': 9 launches" -- compile "$tiny/conv_bn_relu.onnxtxt" -o "$tmp/cbr_unfused.kiln" --compile-cache-dir "$tmp/cache" --route 'fusion.epilogue=off;fusion.elementwise=off;fusion.batchnorm=off'
expect 0 "route 'precision=fp16'" -- compile "$tiny/conv_bn_relu.onnxtxt" -o "$tmp/cbr16.kiln" --compile-cache-dir "$tmp/cache" --precision fp16
expect 0 "route: +precision=fp16" -- inspect "$tmp/cbr16.kiln"
# Bad routes name the problem.
expect 2 "unknown knob 'no.such.knob'" -- compile "$tiny/conv_bn_relu.onnxtxt" -o "$tmp/x.kiln" --route 'no.such.knob=1'
expect 2 "knob 'precision' has no value 'fp64'" -- compile "$tiny/conv_bn_relu.onnxtxt" -o "$tmp/x.kiln" --route 'precision=fp64'
expect 2 "route sets knob 'precision' twice" -- compile "$tiny/conv_bn_relu.onnxtxt" -o "$tmp/x.kiln" --route 'precision=fp16;precision=bf16'
expect 2 "is not KNOB=VALUE" -- compile "$tiny/conv_bn_relu.onnxtxt" -o "$tmp/x.kiln" --route 'precision'
expect 2 "contradicts the route" -- compile "$tiny/conv_bn_relu.onnxtxt" -o "$tmp/x.kiln" --route 'precision=bf16' --precision fp16
if cmp -s "$tmp/cbr.kiln" "$tmp/cbr2.kiln"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL: rebuilt engine is not byte-identical"; fi
# runtime.gemm_search=auto: cuBLASLt algorithms timed for fp32 library products, not for fp16.
expect 0 "runtime: +CUDA graph on, cuBLASLt algorithms timed at context creation" -- inspect "$tmp/cbr.kiln"
expect 0 "runtime: +CUDA graph on, cuBLASLt algorithms the heuristic's first" -- inspect "$tmp/cbr16.kiln"
expect 0 "target: +sm_90" -- inspect "$tmp/cbr.kiln"
expect 0 '"arena_bytes"' -- inspect "$tmp/cbr.kiln" --json
# Every launch listed, in order: kind, node, kernel and launch shape, the buffers it touches.
if "$kiln" inspect "$tmp/cbr.kiln" --json | /usr/bin/python3 -c "
import json, sys
d = json.load(sys.stdin)
ls = d['launch_list']
ok = len(ls) == d['launches'] and all(l['kind'] in ('kernel', 'copy', 'cublaslt') and l['buffers'] for l in ls)
ok = ok and all(l['kernel'].startswith('kiln_') and len(l['grid']) == 3 for l in ls if l['kind'] == 'kernel')
ok = ok and any(b['space'] == 'io' and b['tensor'] == 'x' for b in ls[0]['buffers'])
sys.exit(0 if ok else 1)"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL: inspect --json launch_list"; fi
head -c 1000 "$tmp/cbr.kiln" > "$tmp/truncated.kiln"
expect 2 "truncated|size" -- inspect "$tmp/truncated.kiln"
cp "$tmp/cbr.kiln" "$tmp/flipped.kiln"; printf '\x55' | dd of="$tmp/flipped.kiln" bs=1 seek=5000 conv=notrunc 2>/dev/null
expect 2 "checksum" -- inspect "$tmp/flipped.kiln"
expect 2 "not a kiln engine" -- inspect "$tiny/mlp.onnx"
expect 2 "unsupported ops" -- compile "$tiny/unsupported.onnxtxt" -o "$tmp/u.kiln"
expect 2 "sm_42" -- compile "$tiny/mlp.onnxtxt" -o "$tmp/m.kiln" --arch sm_42
expect 0 "wrote" -- compile "$tiny/mlp.onnxtxt" -o "$tmp/m.kiln" --compile-cache-dir "$tmp/cache"
# On a terminal, compile says what it is doing from the start (import, passes), then counts kernels.
if out=$(script -qc "'$kiln' compile '$tiny/mlp.onnxtxt' -o '$tmp/m.kiln' --no-compile-cache" /dev/null 2>&1 | tr '\r' '\n') &&
   grep -q "^.*importing .*mlp.onnxtxt \.\.\.$" <<<"$out" && grep -q "running the compile pipeline (import: " <<<"$out" &&
   grep -q "generating code (passes: " <<<"$out" && grep -q "compiling kernels 1/1 in" <<<"$out"; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL: compile's terminal status: $out"
fi
# --io-dtype fp16: half-precision I/O, the boundary casts gone (mlp fp16: 5 launches → 3).
expect 0 "route 'precision=fp16': 5 launches" -- compile "$tiny/mlp.onnxtxt" -o "$tmp/m16.kiln" --precision fp16
expect 0 "route 'precision=fp16': 3 launches" -- compile "$tiny/mlp.onnxtxt" -o "$tmp/m16.kiln" --precision fp16 --io-dtype fp16
expect 0 "input +x +float16 +2x8" -- inspect "$tmp/m16.kiln"
expect 0 "output +y +float16 +2x4" -- inspect "$tmp/m16.kiln"
expect 0 "launch 0 'x': kiln_ew_.* io:x\\+0" -- compile "$tiny/mlp.onnxtxt" -o "$tmp/m16.kiln" --precision fp32 --io-dtype bf16 --emit launch-plan
expect 2 "--io-dtype: fp8 not in" -- compile "$tiny/mlp.onnxtxt" -o "$tmp/m16.kiln" --io-dtype fp8
# --log-file: stderr's messages appended, time-stamped; kiln's own files are never a log.
expect 0 "note: node 'square' \\(Pow\\) runs in fp32" -- --log-file "$tmp/kiln.log" eval "$tiny/fp16_overflow.onnxtxt" --inputs "$tiny/fp16_overflow.npz" --precision fp16
expect 0 "" -- compile "$tiny/mlp.onnxtxt" -o "$tmp/m16.kiln" --log-file "$tmp/kiln.log" -v
if grep -Eq "^20[0-9-]+T[0-9:]+Z kiln: note: node 'square' \(Pow\) runs in fp32" "$tmp/kiln.log" &&
   grep -Eq "^20[0-9-]+T[0-9:]+Z kiln: kernels" "$tmp/kiln.log"; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL: --log-file: $(head -3 "$tmp/kiln.log")"
fi
expect 2 "--log-file: '.*m.kiln' looks like one of kiln's inputs or outputs" -- --log-file "$tmp/m.kiln" plan "$tiny/mlp.onnxtxt"
cp "$tmp/m.kiln" "$tmp/engine.bin"
expect 2 "--log-file: '.*engine.bin' exists and is not a text file" -- --log-file "$tmp/engine.bin" plan "$tiny/mlp.onnxtxt"
cmp -s "$tmp/m.kiln" "$tmp/engine.bin" && passed=$((passed + 1)) || { failed=$((failed + 1)); echo "FAIL: --log-file changed a binary file"; }
mkfifo "$tmp/log.fifo"
expect 2 "--log-file: '.*log.fifo' is not a regular file" -- --log-file "$tmp/log.fifo" plan "$tiny/mlp.onnxtxt"
# fp32 products go to cuBLASLt by default, exact; gemm.tf32=on marks them TF32 (one per node too).
expect 0 "fc1\+relu +fp32 +cuBLASLt matmul" -- inspect "$tmp/m.kiln"
expect 0 "wrote" -- compile "$tiny/mlp.onnxtxt" -o "$tmp/mt.kiln" --compile-cache-dir "$tmp/cache" --route 'node.fc2.tf32=on'
expect 0 "fc2 +tf32 +cuBLASLt matmul" -- inspect "$tmp/mt.kiln"
expect 0 "fc1\+relu +fp32 +cuBLASLt matmul" -- inspect "$tmp/mt.kiln"
# --constant-inputs binds inputs at build time: they leave the I/O table (here everything folds).
if /usr/bin/python3 -c "import numpy" 2>/dev/null; then
  /usr/bin/python3 -c "
import numpy as np
np.savez('$tmp/cx.npz', x=np.full((2, 8), 0.5, np.float32))
np.savez('$tmp/cbad.npz', x=np.ones((2, 3)))
np.savez('$tmp/cname.npz', nope=np.ones((2, 8), np.float32))"
  expect 0 "0 launches" -- compile "$tiny/mlp.onnxtxt" -o "$tmp/mc.kiln" --constant-inputs "$tmp/cx.npz"
  expect 0 "^output +y" -- inspect "$tmp/mc.kiln"
  expect 2 "constant input 'x' is float64 \[2x3\], the graph declares float32 \[2x8\]" -- compile "$tiny/mlp.onnxtxt" -o "$tmp/mc.kiln" --constant-inputs "$tmp/cbad.npz"
  expect 2 "constant input 'nope' is not a graph input" -- compile "$tiny/mlp.onnxtxt" -o "$tmp/mc.kiln" --constant-inputs "$tmp/cname.npz"
  expect 2 "none.npz: no such file" -- compile "$tiny/mlp.onnxtxt" -o "$tmp/mc.kiln" --constant-inputs "$tmp/none.npz"
fi
# run/check need a GPU; without one they fail cleanly, and bad arguments are rejected first.
if [ ! -e /dev/nvidia0 ]; then
  expect 2 "no NVIDIA driver|no CUDA device" -- run "$tmp/m.kiln"
  expect 2 "no NVIDIA driver|no CUDA device" -- check "$tmp/m.kiln" --onnx "$tiny/mlp.onnxtxt"
fi
expect 2 "check needs --onnx MODEL or --reference FILE" -- check "$tmp/m.kiln"
expect 2 "--ort needs --onnx MODEL" -- check "$tmp/m.kiln" --reference b.npz --ort
expect 2 "--mark needs --onnx MODEL" -- check "$tmp/m.kiln" --reference b.npz --mark all
expect 2 "excludes" -- check "$tmp/m.kiln" --onnx a.onnx --reference b.npz
expect 2 "unknown metric 'coss'" -- check "$tmp/m.kiln" --onnx "$tiny/mlp.onnxtxt" --accuracy 'coss>=1'
expect 2 "is not a number" -- check "$tmp/m.kiln" --onnx "$tiny/mlp.onnxtxt" --accuracy 'cos>=high'
expect 2 "cannot read" -- run "$tmp/missing.kiln"
# trtexec-style options: checked before the engine is opened.
expect 2 "--host-io times one stream" -- run "$tmp/m.kiln" --streams 2 --host-io
expect 2 "--streams: Value 65 not in range 1 to 64" -- run "$tmp/m.kiln" --streams 65
expect 2 "--trace: will not write .*it is the input" -- run "$tmp/m.kiln" --trace "$tmp/m.kiln"
# kiln report: a trace as `run --trace` writes it (two launches, FLOPs and bytes) → one page.
cat > "$tmp/trace.json" <<'TRACE'
{"traceEvents": [
 {"name": "cublasLt_matmul", "cat": "cublasLt_matmul", "ph": "X", "ts": 0, "dur": 100, "pid": 1, "tid": 1,
  "args": {"node": "fc1+relu", "launch": 0, "flops": 20000000000, "traffic_bytes": 40000000}},
 {"name": "kiln_row_1234", "cat": "kiln_row", "ph": "X", "ts": 100, "dur": 25, "pid": 1, "tid": 1,
  "args": {"node": "softmax", "launch": 1, "flops": 5000000, "traffic_bytes": 8000000}}],
 "displayTimeUnit": "ns", "otherData": {"device": "NVIDIA H100 80GB HBM3", "engine": "m.kiln"}}
TRACE
expect 0 "wrote .*report.html: 2 launches from NVIDIA H100 80GB HBM3$" -- report "$tmp/trace.json" -o "$tmp/report.html"
# fc1+relu: 20 GFLOP in 100 us = 200 TFLOP/s at 500 FLOP/byte (compute-bound: 200 of 989 = 20 %);
# softmax: 8 MB in 25 us = 320 GB/s (memory-bound: 10 % of 3350 GB/s).
for want in "989 TFLOP/s, 3350 GB/s" "<td>fc1\+relu</td><td>cublasLt_matmul</td><td class=\"n\">100.0</td><td class=\"n\">80.0</td><td class=\"n\">20.000</td><td class=\"n\">40.00</td><td class=\"n\">200.00</td><td class=\"n\">400</td><td class=\"n\">20%</td>" \
            "<td>softmax</td>.*<td class=\"n\">320</td><td class=\"n\">10%</td>"; do
  if grep -Eq "$want" "$tmp/report.html"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL: kiln report lacks /$want/"; fi
done
sed 's/NVIDIA H100 80GB HBM3/Some GPU/' "$tmp/trace.json" > "$tmp/trace2.json"
expect 0 "no roofline ceilings: pass --peak-tflops and --peak-gbps" -- report "$tmp/trace2.json" -o "$tmp/report.html"
expect 0 "wrote .*2 launches from Some GPU$" -- report "$tmp/trace2.json" -o "$tmp/report.html" --peak-tflops 700 --peak-gbps 4000
expect 2 "is not a Chrome trace" -- report "$tmp/m16.kiln" -o "$tmp/report.html"
expect 2 "will not write .*it is the input" -- report "$tmp/trace.json" -o "$tmp/trace.json"
head -c 500 "$tmp/m.kiln" > "$tmp/short.kiln"
expect 2 "truncated|outside|smaller" -- run "$tmp/short.kiln"
# The tuner's CPU side: dry runs list candidates; bad expressions, models and settings fail
# with a message; without a GPU a real tune stops before measuring; the cache commands work.
expect 0 "4 candidates \(fast search\)" -- tune "$tiny/mlp.onnxtxt" --route 'precision=.*;fusion\.epilogue=.*' --dry-run
expect 0 '"count": 9' -- tune "$tiny/mlp.onnxtxt" --route 'node\..*\.tile=128x.*;precision=fp16' --search full --dry-run --json
expect 2 "more than --max-candidates 4" -- tune "$tiny/mlp.onnxtxt" --route 'node\..*\.tile=.*' --search full --dry-run --max-candidates 4
expect 2 "invalid regular expression" -- tune "$tiny/mlp.onnxtxt" --route 'gemm\.tile=(' --dry-run
# Shards (separate processes): disjoint slices whose union is the whole plan.
shard_route='precision=.*;fusion\..*=.*'
candidates() { "$kiln" tune "$tiny/mlp.onnxtxt" --route "$shard_route" --dry-run --json "$@" 2>/dev/null |
  /usr/bin/python3 -c "import json,sys; print('\n'.join(json.load(sys.stdin)['candidates']))"; }
all=$(candidates | sort)
union=$(for k in 1 2 3; do candidates --shard $k/3; done | sort)
if [ -n "$all" ] && [ "$all" = "$union" ] && [ -z "$(uniq -d <<<"$union")" ]; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL: tune --shard K/3 slices do not make the whole plan"; fi
if out=$("$kiln" -q tune "$tiny/mlp.onnxtxt" --route "$shard_route" --dry-run 2>&1 >/dev/null) && [ -z "$out" ]; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL: kiln -q tune printed log lines: $out"
fi
expect 2 "--shard '4/3': expected K/N with 1 <= K <= N" -- tune "$tiny/mlp.onnxtxt" --route "$shard_route" --dry-run --shard 4/3
expect 2 "--shard needs --search fast, full or nodes" -- tune "$tiny/mlp.onnxtxt" --route "$shard_route" --dry-run --shard 1/2 --search mixed
expect 2 "matches no knob" -- tune "$tiny/mlp.onnxtxt" --route 'nope=.*' --dry-run
expect 2 "leaves knob 'precision' no value" -- tune "$tiny/mlp.onnxtxt" --route 'precision=fp64' --dry-run
expect 2 "unknown metric" -- tune "$tiny/mlp.onnxtxt" --route 'precision=.*' --accuracy 'cosine>=1' --dry-run
expect 2 "unsupported ops" -- tune "$tiny/unsupported.onnxtxt" --route 'precision=.*' --dry-run
expect 2 "unknown search" -- tune "$tiny/mlp.onnxtxt" --route 'precision=.*' --search slow --dry-run
printf 'route: "precision=fp16|fp32"\nsearch: full\n' > "$tmp/tune.yaml"
expect 0 "2 candidates \(full search\)" -- tune "$tiny/mlp.onnxtxt" --config "$tmp/tune.yaml" --dry-run
printf 'rute: x\n' > "$tmp/bad.yaml"
expect 2 "unknown setting 'rute'" -- tune "$tiny/mlp.onnxtxt" --config "$tmp/bad.yaml" --dry-run
if [ ! -e /dev/nvidia0 ]; then
  # Said first (before the reference engine is built: no "building" line), with one prefix.
  expect 2 "^kiln: error: no GPU to measure on: [^k]" -- tune "$tiny/mlp.onnxtxt" --route 'precision=.*' --cache "$tmp/t.db"
fi
# An 8-bit precision the expression selects without --calib is left out with a note, not silently.
expect 0 "note: route term 'precision=fp16\|int8' selects int8 for 'precision': left out" -- tune "$tiny/mlp.onnxtxt" --route 'precision=fp16|int8' --dry-run
# --reference and --inputs files are checked against the model before any GPU work, also in a
# dry run: every output with its shape, nothing that is neither an input nor an output.
if /usr/bin/python3 -c "import numpy" 2>/dev/null; then
  /usr/bin/python3 -c "
import numpy as np
x = np.ones((2, 8), np.float32)
np.savez('$tmp/ref_name.npz', x=x, z=np.ones((2, 4), np.float32))
np.savez('$tmp/ref_shape.npz', x=x, y=np.ones((2, 5), np.float32))
np.savez('$tmp/ref_extra.npz', x=x, y=np.ones((2, 4), np.float32), w=np.ones(3, np.float32))
np.savez('$tmp/in_shape.npz', x=np.ones((2, 9), np.float32))"
  expect 2 "ref_name.npz: no array for output 'y' \(it holds: x, z\)" -- tune "$tiny/mlp.onnxtxt" --route 'precision=.*' --reference "$tmp/ref_name.npz" --cache "$tmp/t.db"
  expect 2 "output 'y' has shape 2x5, the model's is 2x4" -- tune "$tiny/mlp.onnxtxt" --route 'precision=.*' --reference "$tmp/ref_shape.npz" --cache "$tmp/t.db"
  expect 2 "array 'w' is neither an input nor an output" -- tune "$tiny/mlp.onnxtxt" --route 'precision=.*' --reference "$tmp/ref_extra.npz" --dry-run
  expect 2 "in_shape.npz: input 'x' has another dtype or shape than the model's" -- tune "$tiny/mlp.onnxtxt" --route 'precision=.*' --inputs "$tmp/in_shape.npz" --dry-run
fi
# --devices: one worker per GPU, indices counted within the caller's CUDA_VISIBLE_DEVICES.
expect 2 "device 0 is listed twice" -- tune "$tiny/mlp.onnxtxt" --route 'precision=.*' --devices 0,0 --cache "$tmp/t.db"
CUDA_VISIBLE_DEVICES=0,0 expect 2 "CUDA_VISIBLE_DEVICES='0,0' lists '0' twice, which leaves CUDA no device" -- \
  tune "$tiny/mlp.onnxtxt" --route 'precision=.*' --devices 0,1 --cache "$tmp/t.db"
CUDA_VISIBLE_DEVICES=3 expect 2 "CUDA_VISIBLE_DEVICES='3' leaves 1 device visible" -- \
  tune "$tiny/mlp.onnxtxt" --route 'precision=.*' --devices 0,1 --cache "$tmp/t.db"
expect 0 "0 measurements" -- cache list --cache "$tmp/t.db"
expect 0 '"count": 0' -- cache list --json --cache "$tmp/t.db"
expect 0 "exported 0 measurements" -- cache export "$tmp/t.jsonl" --cache "$tmp/t.db"
expect 0 "imported 0 measurements" -- cache import "$tmp/t.jsonl" --cache "$tmp/t.db"
# Measurements from two environments and two dates: list --env groups them, prune deletes by age
# and by environment.
for line in '2000-01-01T00:00:00Z|H100|' '2999-01-01T00:00:00Z|H100|precision=fp16' '2999-01-01T00:00:00Z|H200|'; do
  IFS='|' read -r when gpu route <<< "$line"
  echo "{\"model_hash\":\"aaaa\",\"shapes\":\"\",\"route\":\"$route\",\"environment\":\"gpu=$gpu;kiln=0.1.0;\",\"status\":\"ok\",\"reason\":\"\",\"median_ms\":1.0,\"p90_ms\":1.1,\"min_ms\":0.9,\"runs\":50,\"metrics\":\"\",\"created\":\"$when\"}"
done > "$tmp/envs.jsonl"
expect 0 "imported 3 measurements" -- cache import "$tmp/envs.jsonl" --cache "$tmp/envs.db"
expect 0 "3 measurements in 2 environments" -- cache list --env --cache "$tmp/envs.db"
expect 0 '"environments": \[' -- cache list --env --json --cache "$tmp/envs.db"
expect 0 "deleted 1 measurements" -- cache prune --older-than 3650 --cache "$tmp/envs.db"
expect 0 "deleted 1 measurements" -- cache prune --environment "gpu=H200;kiln=0.1.0;" --cache "$tmp/envs.db"
expect 0 ": 1 measurements" -- cache list --cache "$tmp/envs.db"
expect 2 "needs --older-than DAYS and/or --environment ENV" -- cache prune --cache "$tmp/envs.db"
expect 2 "--older-than and --environment are prune's" -- cache list --older-than 3 --cache "$tmp/envs.db"
echo "not a database at all, definitely not SQLite format 3 ..........................." > "$tmp/junk.db"
expect 2 "cache|database" -- cache list --cache "$tmp/junk.db"
rm -rf "$tmp"

# Inputs the importer fuzzer (tools/fuzz) once crashed on (stored without its format byte): each
# must now exit 0, 1 or 2 cleanly.
for f in "$src"/tests/fuzz-regressions/*; do
  [ -e "$f" ] || continue
  timeout 60 "$kiln" plan "$f" >/dev/null 2>&1
  got=$?
  if [[ $got -le 2 ]]; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL: fuzz regression $f → exit $got"; fi
done

# int8 calibration and evaluation on the CPU evaluator.
if /usr/bin/python3 -c "import numpy" 2>/dev/null; then
  mkdir -p "$tmp/cal"
  /usr/bin/python3 -c "
import numpy as np
rng = np.random.default_rng(0)
for i in range(3): np.savez('$tmp/cal/b%d.npz' % i, x=rng.standard_normal((2, 8)).astype(np.float32))
np.savez('$tmp/cal_bad.npz', x=np.ones((2, 3), np.float32))"
  expect 0 "2 activation ranges \(entropy\) from 3 batches" -- calibrate "$tiny/mlp.onnxtxt" --data "$tmp/cal" -o "$tmp/mlp.calib"
  expect 0 "2 activation ranges \(minmax\) from 1 batches" -- calibrate "$tiny/mlp.onnxtxt" --data "$tmp/cal/b0.npz" --method minmax -o "$tmp/mlp_mm.calib"
  expect 2 "unknown --method 'kl'" -- calibrate "$tiny/mlp.onnxtxt" --data "$tmp/cal" --method kl -o "$tmp/x.calib"
  mkdir -p "$tmp/empty"
  expect 2 "no .npz files" -- calibrate "$tiny/mlp.onnxtxt" --data "$tmp/empty" -o "$tmp/x.calib"
  expect 2 "input 'x' is float32 2x3, the model takes float32 2x8" -- calibrate "$tiny/mlp.onnxtxt" --data "$tmp/cal_bad.npz" -o "$tmp/x.calib"
  expect 0 "output y +float32 +2x4" -- eval "$tiny/mlp.onnxtxt" --inputs "$tmp/cal/b0.npz"
  # fc1 (K = 8) has no int8 kernel and stays float; fc2 (K = 16) is quantized.
  expect 0 "1 of 2 int8/fp8 convolutions/matrix products of the route quantized; 1 stay float: no 8-bit kernel .* \[fc1\]" -- eval "$tiny/mlp.onnxtxt" --inputs "$tmp/cal/b0.npz" --precision int8 --calib "$tmp/mlp.calib"
  expect 0 "0 of 2 int8/fp8 .*1 kept float \(keep-float\) \[fc2\]" -- eval "$tiny/mlp.onnxtxt" --inputs "$tmp/cal/b0.npz" --precision int8 --calib "$tmp/mlp.calib" --keep-float 'fc2'
  expect 2 "invalid regular expression" -- eval "$tiny/mlp.onnxtxt" --inputs "$tmp/cal/b0.npz" --precision int8 --calib "$tmp/mlp.calib" --keep-float '(('
  # AveragePool counting the auto pads (SAME_UPPER and SAME_LOWER, odd total padding).
  expect_eval_matches "$tiny/pool_same.onnxtxt"
  # BERT's attention heads: exact on the CPU; in fp16 one attention launch (head transposes,
  # scale and mask folded in) between the input casts and the output's.
  expect_eval_matches "$tiny/attention.onnxtxt"
  expect 0 "wrote .*6 launches" -- compile "$tiny/attention.onnxtxt" -o "$tmp/attn.kiln" --precision fp16
  expect 0 "qk\+softmax\+pv +fp16 +kiln_attn_f16_" -- inspect "$tmp/attn.kiln"
  # Unfused: the two products and the softmax; the output cast reads the head transpose in place.
  # The products read the batch-first heads in place on cuBLASLt's pointer-array batches (the
  # mask add after the scores then its own kernel); without them, on kiln's kernel.
  expect 0 "wrote .*8 launches" -- compile "$tiny/attention.onnxtxt" -o "$tmp/attn_off.kiln" --route 'precision=fp16;fusion.attention=off'
  expect 0 "qk\+mask\+scale\+mask_add +fp16 +cuBLASLt matmul 9x9x16 .* batch 4 \(address arrays, 2x2\)" -- inspect "$tmp/attn_off.kiln"
  expect 0 "wrote .*7 launches" -- compile "$tiny/attention.onnxtxt" -o "$tmp/attn_nop.kiln" \
    --route 'precision=fp16;fusion.attention=off;gemm.batch_pointers=off'
  # scaled_dot_product_attention as PyTorch's exporters write it (the scale's square roots on Q and
  # Kᵀ, a boolean mask made additive by Where, Where(IsNaN(p), 0, p)): exact on the CPU, a row with
  # every key masked 0; in fp16 one attention launch (7 launches against 9 unfused).
  expect_eval_matches "$tiny/attention_sdpa.onnxtxt"
  expect 0 "wrote .*7 launches" -- compile "$tiny/attention_sdpa.onnxtxt" -o "$tmp/sdpa.kiln" --precision fp16
  expect 0 "qk\+softmax\+pv +fp16 +kiln_attn_f16_" -- inspect "$tmp/sdpa.kiln"
  expect 0 "wrote .*9 launches" -- compile "$tiny/attention_sdpa.onnxtxt" -o "$tmp/sdpa_off.kiln" --route 'precision=fp16;fusion.attention=off'
  # torch's sequence-first output projection, then a column slice and a transpose read in place:
  # the compile pipeline's graph is exact on the CPU; the fp32 engine is the product (writing
  # batch-first, the residual in its epilogue) and two elementwise kernels, no copies.
  expect_eval_matches "$tiny/views.onnxtxt" --route ''
  expect 0 "wrote .*3 launches" -- compile "$tiny/views.onnxtxt" -o "$tmp/views.kiln"
  expect 0 "wrote .*5 launches" -- compile "$tiny/views.onnxtxt" -o "$tmp/views_off.kiln" --route fusion.views=off
  # Attention written with Einsum: exact on the CPU through the compile pipeline (the Einsums
  # lowered to products, reshapes and a strided slice); in fp16 the two attention Einsums and the
  # Softmax become one fused attention launch.
  expect_eval_matches "$tiny/einsum.onnxtxt" --route ''
  expect 0 "wrote .*5 launches" -- compile "$tiny/einsum.onnxtxt" -o "$tmp/einsum.kiln"
  expect 0 "wrote .*8 launches" -- compile "$tiny/einsum.onnxtxt" -o "$tmp/einsum16.kiln" --precision fp16
  expect 0 "pv +fp16 +kiln_attn_f16_" -- inspect "$tmp/einsum16.kiln"
  sed 's/"\.\.\.ii->\.\.\.i"/"...i1->...i"/' "$tiny/einsum.onnxtxt" > "$tmp/bad_einsum.onnxtxt"
  expect 2 "node 'diagonal' \(Einsum\): Einsum: '1' is not a label" -- compile "$tmp/bad_einsum.onnxtxt" -o "$tmp/bad_einsum.kiln"
  # An explicitly quantized (QDQ) model: evaluated exactly on the CPU, compiled to an int8 kernel.
  expect_eval_matches "$tiny/qdq_matmul.onnxtxt"
  expect 0 "wrote .*2 launches" -- compile "$tiny/qdq_matmul.onnxtxt" -o "$tmp/q.kiln"
  expect 0 "matmul +int8 +kiln_mma_s8_" -- inspect "$tmp/q.kiln"
  # QDQ around a MaxPool and a Reshape (onnxruntime's form): they run on the int8 data (the
  # convolution's epilogue stores int8, the pool reads it), Q/DQ pairs cancel; exact on the CPU.
  expect_eval_matches "$tiny/qdq_pool.onnxtxt"
  expect 0 "wrote .*6 launches" -- compile "$tiny/qdq_pool.onnxtxt" -o "$tmp/qpool.kiln"
  expect 0 "pool +kiln_pool_" -- inspect "$tmp/qpool.kiln"
  expect 0 "fc +int8 +kiln_mma_s8_" -- inspect "$tmp/qpool.kiln"
  # onnxruntime's default U8S8 form: uint8 activations with a zero point (mma .u8.s8, the zero
  # point subtracted per column).
  expect 0 "wrote .*2 launches" -- compile "$tiny/qdq_matmul_u8.onnxtxt" -o "$tmp/q8.kiln"
  expect 0 "matmul +int8 +kiln_mma_u8_" -- inspect "$tmp/q8.kiln"
  # ... and its convolutions: the uint8 image's padded taps hold the zero point (131).
  expect_eval_matches "$tiny/qdq_conv_u8.onnxtxt" --route 'precision=fp16;quant.products=int8'
  # On a half route a model's own QDQ products run as dequantized half products by default.
  expect 0 "1 QDQ matrix products/convolutions run as dequantized float products .*\\[conv\\]" -- compile "$tiny/qdq_conv_u8.onnxtxt" --precision fp16 -o "$tmp/qc16.kiln"
  expect 0 "conv +fp16 +cuBLASLt matmul" -- inspect "$tmp/qc16.kiln"
  # Log levels: -v times each phase (as it ends), -q leaves only errors (and the result line).
  for phase in import passes codegen kernels write; do
    expect 0 "^kiln: $phase: [0-9.]+ s$" -- compile "$tiny/qdq_conv_u8.onnxtxt" --precision fp16 -o "$tmp/qc16.kiln" -v
  done
  expect 0 '"phases": \{' -- compile "$tiny/qdq_conv_u8.onnxtxt" --precision fp16 -o "$tmp/qc16.kiln" --json
  if out=$("$kiln" -q compile "$tiny/qdq_conv_u8.onnxtxt" --precision fp16 -o "$tmp/qc16.kiln" 2>&1) && [[ $out == wrote* && $out != *note:* ]]; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1)); echo "FAIL: kiln -q compile printed more than its result: $out"
  fi
  expect 2 "--verbose excludes --quiet" -- -v -q plan "$tiny/mlp.onnxtxt"
  expect 0 "wrote .*4 launches" -- compile "$tiny/qdq_conv_u8.onnxtxt" -o "$tmp/qc8.kiln"
  expect 0 "conv +int8 +kiln_mma_u8_" -- inspect "$tmp/qc8.kiln"
  expect 2 "was made for another model" -- eval "$tiny/conv_bn_relu.onnxtxt" --inputs "$tmp/cal/b0.npz" --precision int8 --calib "$tmp/mlp.calib"
  # int8 per node on an fp32 route (fc2 is the product with an int8 kernel).
  expect 0 "1 of 1 int8/fp8" -- eval "$tiny/mlp.onnxtxt" --inputs "$tmp/cal/b0.npz" --calib "$tmp/mlp.calib" --route 'node.fc2.precision=int8'
  expect 2 "--calib applies to int8 and fp8" -- eval "$tiny/mlp.onnxtxt" --inputs "$tmp/cal/b0.npz" --calib "$tmp/mlp.calib" --route precision=fp16
  # Post-training int8 engines: precision=int8 = the calibrated int8 products, fp16 elsewhere.
  expect 0 "route 'precision=int8'" -- compile "$tiny/mlp.onnxtxt" --precision int8 --calib "$tmp/mlp.calib" -o "$tmp/mlp8.kiln"
  expect 0 "calibration = [0-9a-f]{16}" -- inspect "$tmp/mlp8.kiln"
  expect 0 "fc2 +int8 +kiln_mma_s8_" -- inspect "$tmp/mlp8.kiln"
  expect 0 '"int8": 1' -- inspect "$tmp/mlp8.kiln" --json
  expect 2 "precision int8/fp8 needs --calib" -- compile "$tiny/mlp.onnxtxt" --precision int8 -o "$tmp/x.kiln"
  expect 2 "precision int8/fp8 needs --calib" -- compile "$tiny/mlp.onnxtxt" --route 'node.fc1.precision=int8' -o "$tmp/x.kiln"
  expect 2 "--keep-float applies to --calib" -- compile "$tiny/mlp.onnxtxt" --keep-float fc2 -o "$tmp/x.kiln"
  expect 2 "was made for another model" -- compile "$tiny/conv_bn_relu.onnxtxt" --precision int8 --calib "$tmp/mlp.calib" -o "$tmp/x.kiln"
  expect 2 "leaves knob 'precision' only int8/fp8, which need --calib" -- tune "$tiny/mlp.onnxtxt" --route 'precision=int8' --dry-run
  expect 0 "^  precision=fp16$" -- tune "$tiny/mlp.onnxtxt" --route 'precision=fp16|int8' --dry-run
  expect 0 "precision=int8" -- tune "$tiny/mlp.onnxtxt" --route 'precision=fp16|int8' --calib "$tmp/mlp.calib" --dry-run
  # int8 convolutions (NHWC implicit GEMM; C % 16 == 0).
  expect 0 "wrote" -- calibrate "$tiny/conv16.onnxtxt" --data "$tiny/conv16.npz" -o "$tmp/conv16.calib"
  expect 0 "2 of 2 int8/fp8" -- compile "$tiny/conv16.onnxtxt" --precision int8 --calib "$tmp/conv16.calib" -o "$tmp/conv16.kiln"
  expect 0 "conv2 +int8 +kiln_mma_s8_" -- inspect "$tmp/conv16.kiln"
  # fp8 e4m3 (sm_89+): an explicit fp8 QDQ model (evaluated exactly, as numpy computed it) and
  # calibrated fp8 products, matrix and convolution, on the same 8-bit kernel with e4m3 operands.
  expect_eval_matches "$tiny/qdq_matmul_fp8.onnxtxt"
  # (fp8 products go to cuBLASLt, whose fp8 kernels use sm_90's fast path; kiln's own is mma.sync)
  expect 0 "wrote .*2 launches" -- compile "$tiny/qdq_matmul_fp8.onnxtxt" -o "$tmp/qf8.kiln"
  expect 0 "matmul +fp8 +cuBLASLt matmul 16x16x32" -- inspect "$tmp/qf8.kiln"
  expect 0 '"fp8": 1' -- inspect "$tmp/qf8.kiln" --json
  expect 0 "wrote" -- compile "$tiny/qdq_matmul_fp8.onnxtxt" --route gemm.tactic=kiln -o "$tmp/qf8k.kiln"
  expect 0 "matmul +fp8 +kiln_mma_e4m3_" -- inspect "$tmp/qf8k.kiln"
  expect 2 "node .matmul. \(QuantizedMatMul\): int8 tensor-core code \(mma.sync m16n8k32\) needs sm_80 or newer; the target is sm_75" -- compile "$tiny/qdq_matmul.onnxtxt" --arch sm_75 -o "$tmp/x.kiln"
  expect 2 "node .matmul. \(QuantizedMatMul\): fp8 e4m3 \(storage, conversions and products\) needs sm_89 or newer; the target is sm_80" -- compile "$tiny/qdq_matmul_fp8.onnxtxt" --arch sm_80 -o "$tmp/x.kiln"
  expect 0 "2 of 2 int8/fp8" -- compile "$tiny/conv16.onnxtxt" --precision fp8 --calib "$tmp/conv16.calib" -o "$tmp/conv16f8.kiln"
  expect 0 "conv2 +fp8 +kiln_mma_e4m3_" -- inspect "$tmp/conv16f8.kiln"
  expect 0 "1 of 1 int8/fp8" -- eval "$tiny/mlp.onnxtxt" --inputs "$tmp/cal/b0.npz" --calib "$tmp/mlp.calib" --route 'node.fc2.precision=fp8'
  expect 2 "precision int8/fp8 needs --calib" -- compile "$tiny/mlp.onnxtxt" --precision fp8 -o "$tmp/x.kiln"
  expect 0 "precision=fp8" -- tune "$tiny/mlp.onnxtxt" --route 'precision=fp16|int8|fp8' --calib "$tmp/mlp.calib" --dry-run
  echo '{"format": "kiln-calibration", "version": 7}' > "$tmp/new.calib"
  expect 2 "calibration format version 7" -- eval "$tiny/mlp.onnxtxt" --inputs "$tmp/cal/b0.npz" --precision int8 --calib "$tmp/new.calib"
fi

# A dim the model fixes cannot be overridden (as in onnxruntime); the error says how to free it.
expect 2 "fixes it to 2 \(onnxruntime refuses it too: .*update_inputs_outputs_dims" -- plan "$tiny/mlp.onnxtxt" --shapes x:3x16

# tune --from-cache: the winner from a cache's measurements (e.g. merged shards') without a GPU;
# measurements made elsewhere are imported as JSON lines under the keys this tune looks up.
fc=(tune "$tiny/mlp.onnxtxt" --route 'precision=fp16|fp32' --cache "$tmp/fc.db" --from-cache)
expect 2 "has no measurement of this model with these inputs" -- "${fc[@]}"
"$kiln" "${fc[@]}" --environment gpu-a --json > "$tmp/fc.json" 2>/dev/null
/usr/bin/python3 - "$tmp/fc.json" "$tmp/fc.jsonl" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
m = '{"y": {"max_abs": 0.001, "max_rel": 0.001, "l0": 0, "rel_l2": 0.00005, "cos": 0.99999, "top1": 1}}'
rows = [("gpu-a", "", 0.020, 0.019, 0.021), ("gpu-a", "precision=fp16", 0.010, 0.0095, 0.0105),
        ("gpu-b", "", 0.5, 0.49, 0.51)]
with open(sys.argv[2], "w") as f:
    for env, route, med, lo, p90 in rows:
        f.write(json.dumps({"model_hash": j["model_hash"], "shapes": j["inputs_key"], "route": route,
                            "environment": env, "status": "ok", "reason": "", "median_ms": med, "p90_ms": p90,
                            "min_ms": lo, "runs": 50, "metrics": m, "created": "2026-12-07T00:00:00Z"}) + "\n")
PY
expect 0 "imported 3" -- cache import "$tmp/fc.jsonl" --cache "$tmp/fc.db"
expect 2 "from 2 environments; choose one with --environment:" -- "${fc[@]}"
expect 0 "best: 'precision=fp16' 0.010 ms" -- "${fc[@]}" --environment gpu-a -o "$tmp/fc.kiln"
expect 0 "route: +precision=fp16" -- inspect "$tmp/fc.kiln"
# --report: one page with the plot (the default bounds drawn, the winner marked) and the table.
expect 0 "wrote .*fc.html" -- "${fc[@]}" --environment gpu-a --report "$tmp/fc.html"
if grep -q "<svg" "$tmp/fc.html" && grep -q "winner: precision=fp16" "$tmp/fc.html" && grep -q "fp16/bf16 default bound" "$tmp/fc.html" &&
  [ "$(grep -c "<circle" "$tmp/fc.html")" = 2 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL: tune --report page"; fi
expect 0 "1 candidate is not in the cache" -- "${fc[@]}" --environment gpu-b
expect 2 "--from-cache reads the cache" -- "${fc[@]}" --no-cache-read
expect 2 "requires --from-cache|--environment requires" -- tune "$tiny/mlp.onnxtxt" --route 'precision=fp16' --environment gpu-a --dry-run
# --search nodes: one sweep per per-node value, each launch timed alone (the measurements' launches);
# each node takes the value its own launches ran fastest under, with other kernels (fc1 fp16:
# 0.010 -> 0.004 ms; fc2's 1 % is under the 3 % margin), and the composed route is measured (here:
# found) end to end.
nd=(tune "$tiny/mlp.onnxtxt" --route 'node\..*\.precision=fp32|fp16' --search nodes --cache "$tmp/nd.db" --from-cache --environment gpu-a)
"$kiln" "${nd[@]}" --json > "$tmp/nd.json" 2>/dev/null
/usr/bin/python3 - "$tmp/nd.json" "$tmp/nd.jsonl" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
m = '{"y": {"max_abs": 0.001, "max_rel": 0.001, "l0": 0, "rel_l2": 0.00005, "cos": 0.99999, "top1": 1}}'
rows = [("", 0.030, 0.029, 0.031, [["fc1+relu", "mm_f32", 0.010], ["fc2", "mm_f32", 0.010]]),
        ("node.fc1.precision=fp16;node.fc2.precision=fp16", 0.026, 0.025, 0.027,
         [["fc1+relu", "mm_f16", 0.004], ["fc2", "mm_f16", 0.0099]]),
        ("node.fc1.precision=fp16", 0.020, 0.0195, 0.0205, [])]
with open(sys.argv[2], "w") as f:
    for route, med, lo, p90, launches in rows:
        row = {"model_hash": j["model_hash"], "shapes": j["inputs_key"], "route": route, "environment": "gpu-a",
               "status": "ok", "reason": "", "median_ms": med, "p90_ms": p90, "min_ms": lo, "runs": 50, "metrics": m,
               "created": "2026-12-07T00:00:00Z"}
        if launches:
            row["launches"] = json.dumps([{"node": n, "kernel": k, "ms": t} for n, k, t in launches])
        f.write(json.dumps(row) + "\n")
PY
expect 0 "imported 3" -- cache import "$tmp/nd.jsonl" --cache "$tmp/nd.db"
expect 0 "nodes search: node.fc1.precision=fp16  0.0100 -> 0.0040 ms" -- "${nd[@]}"
expect 0 "best: 'node.fc1.precision=fp16' 0.020 ms" -- "${nd[@]}"
expect 0 '"time_budget_seconds": 900' -- tune "$tiny/mlp.onnxtxt" --route 'precision=fp16|fp32' --budget 15m --dry-run --json
expect 2 "unit not recognized" -- tune "$tiny/mlp.onnxtxt" --route 'precision=fp16' --time-budget 2x --dry-run
# A nodes search's sweeps shard like a fast search's; the unsharded tune composes.
expect 0 "shard 2 of 2 \(of 2 in all; composed by the unsharded tune" -- tune "$tiny/mlp.onnxtxt" --route 'node\..*\.precision=fp32|fp16' --search nodes --shard 2/2 --dry-run

# Dynamic shapes: one engine for a profile (the dims named in the model), padding checked per
# dim on the evaluator, bad profiles named.
dyn=(--min-shapes batch=1,seq=4 --opt-shapes batch=2,seq=8 --max-shapes batch=4,seq=8)
expect 0 "profile: 6 specialisations" -- compile "$tiny/dynamic.onnxtxt" -o "$tmp/dyn.kiln" "${dyn[@]}"
expect 0 "seq +4\.\.8 \(opt 8\), values between padded" -- inspect "$tmp/dyn.kiln"
expect 0 '"profiles": \[' -- inspect "$tmp/dyn.kiln" --json
# An output axis that is half a dim (Slice with step 2 along seq): recorded as seq / 2, so seq is
# not padded; an odd seq (3 gives 2, like 4) is no fixed fraction and is refused naming the output.
expect 0 "seq 4\.\.8 \(opt 8\): built for 4, 8; values between are refused: output 'y' axis 1 is seq / 2" -- compile "$tiny/dynamic_stride.onnxtxt" -o "$tmp/dynstride.kiln" "${dyn[@]}"
expect 0 "dim +seq +4\.\.8 \(opt 8\), only the built values; y axis 1 = seq / 2" -- inspect "$tmp/dynstride.kiln"
expect 0 '"den": 2' -- inspect "$tmp/dynstride.kiln" --json
expect 2 "output 'y' axis 1 changes with the input shapes but is neither one of the profile's dims nor a fixed fraction" -- compile "$tiny/dynamic_stride.onnxtxt" -o "$tmp/x.kiln" --min-shapes batch=1,seq=3 --opt-shapes batch=2,seq=8 --max-shapes batch=4,seq=8
# Specialisations built three at a time and one at a time: the same engine, byte for byte.
expect 0 "building 6 specialisations, 3 at a time" -- compile "$tiny/dynamic.onnxtxt" -o "$tmp/dyn3.kiln" "${dyn[@]}" --jobs 3
expect 0 "specialisation 6/6: batch=4, seq=8" -- compile "$tiny/dynamic.onnxtxt" -o "$tmp/dyn1.kiln" "${dyn[@]}" --jobs 1
if cmp -s "$tmp/dyn3.kiln" "$tmp/dyn1.kiln"; then passed=$((passed + 1)); else echo "FAIL: specialisations built in parallel give another engine"; failed=$((failed + 1)); fi
expect 0 "seq 4\.\.8 \(opt 8\): built for 4, 8; values between are refused: output 'y' changes by" -- compile "$tiny/dynamic_mix.onnxtxt" -o "$tmp/dynmix.kiln" "${dyn[@]}"
expect 0 '"pad": true' -- compile "$tiny/dynamic_mix.onnxtxt" -o "$tmp/dynmix.kiln" "${dyn[@]}" --json
expect 0 "values between are refused: --no-pad" -- compile "$tiny/dynamic.onnxtxt" -o "$tmp/dyn.kiln" "${dyn[@]}" --no-pad
# gemm.tactic=kiln_wgmma takes the products of the larger specialisations only (the smaller stay
# on cuBLASLt): their sm_90a kernels make the whole engine arch-specific, whichever comes first.
expect 0 "for sm_90a" -- compile "$src/tests/lit/lowering/wgmma.onnxtxt" -o "$tmp/dynwg.kiln" --route 'precision=fp16;gemm.tactic=kiln_wgmma' --min-shapes x:128x64 --opt-shapes x:128x64 --max-shapes x:4096x64
expect 0 "target: +sm_90a" -- inspect "$tmp/dynwg.kiln"
expect 2 "input 'x' axis 1: min 9, opt 8, max 8 is not 1 <= min <= opt <= max" -- compile "$tiny/dynamic.onnxtxt" -o "$tmp/x.kiln" --min-shapes batch=1,seq=9 --opt-shapes batch=2,seq=8 --max-shapes batch=4,seq=8
expect 2 "needs all three of --min-shapes" -- compile "$tiny/dynamic.onnxtxt" -o "$tmp/x.kiln" --min-shapes batch=1,seq=4
expect 2 "needs 6 specialisations \(3 batch x 2 seq\), more than --max-specialisations 4" -- compile "$tiny/dynamic.onnxtxt" -o "$tmp/x.kiln" "${dyn[@]}" --max-specialisations 4
expect 2 "--shapes and --min/--opt/--max-shapes do not mix" -- compile "$tiny/dynamic.onnxtxt" -o "$tmp/x.kiln" "${dyn[@]}" --shapes batch=2,seq=8
expect 2 "--max-shapes names 'z', which is not a graph input" -- compile "$tiny/dynamic.onnxtxt" -o "$tmp/x.kiln" --min-shapes x:1x4x8 --opt-shapes x:2x8x8 --max-shapes z:4x8x8
expect 2 "--max-shapes sets dimension 'sequence', which no graph input has \(their named dimensions: batch, seq\)" -- compile "$tiny/dynamic.onnxtxt" -o "$tmp/x.kiln" --min-shapes batch=1,seq=4 --opt-shapes batch=2,seq=8 --max-shapes batch=4,sequence=8
expect 2 "min and max shapes are the same" -- compile "$tiny/dynamic.onnxtxt" -o "$tmp/x.kiln" --min-shapes x:2x8x8 --opt-shapes x:2x8x8 --max-shapes x:2x8x8
expect 2 "--shapes: give each input's whole shape" -- run "$tmp/dyn.kiln" --shapes batch=3
expect 0 "max +3.07 K +1.5 KiB" -- plan "$tiny/dynamic.onnxtxt" "${dyn[@]}"
expect 2 "a profile needs all three" -- plan "$tiny/dynamic.onnxtxt" --opt-shapes batch=2,seq=8
expect 0 "2 candidates" -- tune "$tiny/dynamic.onnxtxt" --route 'precision=fp16|fp32' --dry-run "${dyn[@]}" -o "$tmp/t.kiln"
expect 2 "a profile needs all three" -- tune "$tiny/dynamic.onnxtxt" --route 'precision=fp16' --opt-shapes batch=2,seq=8
# --weigh-shapes: each candidate measured at each shapes (its own cache keys), ranked by the
# weighted mean; here fp16 is faster at batch 1 and slower at batch 4 (measurements imported).
wt=(tune "$tiny/dynamic.onnxtxt" --route 'precision=fp16|fp32' --cache "$tmp/wt.db" --from-cache --environment gpu-a "${dyn[@]}")
for b in 1 4; do "$kiln" tune "$tiny/dynamic.onnxtxt" --route 'precision=fp16|fp32' --cache "$tmp/wt.db" --from-cache --environment gpu-a --shapes batch=$b,seq=8 --json > "$tmp/wt$b.json" 2>/dev/null; done
/usr/bin/python3 - "$tmp/wt1.json" "$tmp/wt4.json" "$tmp/wt.jsonl" <<'PY'
import json, sys
m = '{"y": {"max_abs": 0.001, "max_rel": 0.001, "l0": 0, "rel_l2": 0.00005, "cos": 0.99999, "top1": 1}}'
with open(sys.argv[3], "w") as f:
    for path, times in ((sys.argv[1], {"": 0.010, "precision=fp16": 0.008}), (sys.argv[2], {"": 0.020, "precision=fp16": 0.030})):
        j = json.load(open(path))
        for route, med in times.items():
            f.write(json.dumps({"model_hash": j["model_hash"], "shapes": j["inputs_key"], "route": route,
                                "environment": "gpu-a", "status": "ok", "reason": "", "median_ms": med,
                                "p90_ms": med * 1.001, "min_ms": med * 0.999, "runs": 50, "metrics": m,
                                "created": "2026-12-07T00:00:00Z"}) + "\n")
PY
expect 0 "imported 4" -- cache import "$tmp/wt.jsonl" --cache "$tmp/wt.db"
expect 0 "precision=fp16 .* at the shapes: 0.008 / 0.030  <- best" -- "${wt[@]}" --weigh-shapes batch=1,seq=8@0.9 --weigh-shapes batch=4,seq=8@0.1
expect 0 "best: '' 0.019 ms" -- "${wt[@]}" --weigh-shapes batch=1,seq=8@0.1 --weigh-shapes batch=4,seq=8@0.9
expect 0 "wrote .*wt.kiln \(the winning route for the profile: 6 specialisations\)" -- "${wt[@]}" --weigh-shapes batch=1,seq=8@0.9 --weigh-shapes batch=4,seq=8@0.1 -o "$tmp/wt.kiln"
expect 2 "--weigh-shapes needs a profile" -- tune "$tiny/dynamic.onnxtxt" --route 'precision=fp16' --shapes batch=2,seq=8 --weigh-shapes batch=1,seq=8@1 --dry-run
expect 2 "expected SHAPES@WEIGHT with a weight above 0" -- "${wt[@]}" --weigh-shapes batch=1,seq=8@0

# Several profiles (the three flags repeated): each its own ranges and specialisations, a
# combination two profiles share built once; plan gives each profile's bounds.
two=(--min-shapes batch=1,seq=4 --opt-shapes batch=2,seq=8 --max-shapes batch=2,seq=8
     --min-shapes batch=2,seq=8 --opt-shapes batch=4,seq=8 --max-shapes batch=4,seq=8)
expect 0 "profile: 5 specialisations" -- compile "$tiny/dynamic.onnxtxt" -o "$tmp/two.kiln" "${two[@]}"
expect 0 " profile 1:.*
  batch 2\.\.4 \(opt 4\): built for 2, 4" -- compile "$tiny/dynamic.onnxtxt" -o "$tmp/two.kiln" "${two[@]}"
expect 0 "profile 1: batch 2\.\.4 \(opt 4\), seq 8\.\.8 \(opt 8\); specialisations 1 5" -- inspect "$tmp/two.kiln"
if "$kiln" inspect "$tmp/two.kiln" --json | /usr/bin/python3 -c "
import json, sys
p = json.load(sys.stdin)['profiles']
sys.exit(0 if len(p) == 2 and p[1]['inputs']['x']['min'] == [2, 8, 8] and [s['index'] for s in p[1]['specialisations']] == [0, 4] else 1)"; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL: inspect --json of a two-profile engine"
fi
expect 2 "given 2, 2 and 1 times" -- compile "$tiny/dynamic.onnxtxt" -o "$tmp/x.kiln" "${two[@]:0:10}"
expect 2 "input 'x' axis 0 in profile 1: min 3, opt 2, max 4" -- compile "$tiny/dynamic.onnxtxt" -o "$tmp/x.kiln" "${two[@]:0:6}" --min-shapes batch=3,seq=8 --opt-shapes batch=2,seq=8 --max-shapes batch=4,seq=8
expect 0 "max/1 " -- plan "$tiny/dynamic.onnxtxt" "${two[@]}"
expect 2 "at the --opt-shapes: graph input 'x' has symbolic dimension 'seq' at axis 1 with no value" -- compile "$tiny/dynamic.onnxtxt" -o "$tmp/x.kiln" --min-shapes batch=1 --opt-shapes batch=2 --max-shapes batch=4

echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]

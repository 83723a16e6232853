#!/usr/bin/env bash
# The layering rules (docs/architecture.md) that includes could break without a link error: run
# by ctest. Dependencies point one way: tools -> tuner -> codegen/lowering -> passes -> compiler/
# (ir, ops, target, support); codegen/kernels and codegen/nvrtc use only compiler/target and
# compiler/support; the runtime
# uses nothing of the compiler, and nothing outside runtime/ includes runtime/src.
#   check_layering.sh SOURCE_DIR
set -u
cd "$1" || exit 2
failed=0
violation() {  # RULE, then the offending lines on stdin
  local lines
  lines=$(cat)
  [ -z "$lines" ] && return
  echo "layering: $1"
  echo "$lines" | sed 's/^/    /'
  failed=1
}
inc() { grep -rnE "#include \"($2)" $1 --include='*.h' --include='*.cpp' --include='*.c' 2>/dev/null; }
violation "runtime/src is included outside runtime/" < <(inc "compiler codegen passes tuner tools tests models bench" "runtime/src/")
violation "the runtime includes the compiler" < <(inc "runtime" "(compiler|codegen|passes|tuner|tools)/")
violation "passes include codegen, the tuner or tools" < <(inc "passes" "(codegen|tuner|tools)/")
violation "compiler/ includes a layer above it" < <(inc "compiler" "(codegen|passes|tuner|tools)/")
violation "compiler/target is not plain C++" < <(inc "compiler/target" "(compiler/(ir|ops|eval|importer|analysis|knobs|quant)|mlir|llvm)")
violation "compiler/support uses more than C++, POSIX, RE2 and LLVM Support" \
  < <(inc "compiler/support" "(compiler/(ir|ops|eval|importer|analysis|knobs|quant|target)|mlir|llvm/(ADT|IR)|onnx)")
violation "codegen/kernels and codegen/nvrtc use more than compiler/target and compiler/support" \
  < <(inc "codegen/kernels codegen/nvrtc codegen/KernelSpec.h" "(compiler/(ir|ops|eval|importer|analysis|knobs|quant)|passes|mlir|tuner|tools)")
violation "codegen/lowering dispatches on op-type strings (use the op classes)" \
  < <(grep -nE 'type == "|getOnnxOpType\(\) == "' codegen/lowering/*.cpp)
violation "a codegen/lowering file over 400 lines (split it by op family)" < <(
  for f in codegen/lowering/*.cpp codegen/lowering/*.h; do
    n=$(wc -l < "$f")
    [ "$n" -gt 400 ] && echo "$f: $n lines"
  done)
violation "a literal SM count outside compiler/target (ask the GpuTarget)" \
  < <(grep -rnE '\b132\b' codegen passes tools tuner --include='*.cpp' --include='*.h' | grep -vE ':[0-9]+: *//')
[ $failed = 0 ] && echo "layering: all rules hold"
exit $failed

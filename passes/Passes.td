#ifndef KILN_PASSES_TD
#define KILN_PASSES_TD

include "mlir/Pass/PassBase.td"

def FoldConstants : Pass<"kiln-fold-constants", "mlir::func::FuncOp"> {
  let summary = "Evaluate ops whose operands are all constants with the reference evaluator";
  let description = [{
    Replaces every kiln op whose operands are constants (or `none`) by constants computed with
    the CPU reference evaluator — the Shape→Gather→Concat→Reshape chains of exported
    transformers fold to a constant shape. `Shape` and `Size` fold from their operand's static
    type alone. Results with more than `max-elements` elements in total stay as ops, so folding
    never multiplies the size of large weights. Unused constants are erased.

    Before:
      %s = kiln.shape %x : (tensor<2x3xf32>) -> tensor<2xi64>
    After:
      %s = kiln.constant dense<[2, 3]> : tensor<2xi64>
  }];
  let options = [
    Option<"maxElements", "max-elements", "int64_t", /*default=*/"1 << 22",
           "Largest result (in elements) that is folded">,
  ];
  let dependentDialects = ["::kiln::KilnDialect"];
}

#endif

// The `kiln` dialect: a graph of tensor ops with ONNX semantics, static shapes and dense
// (resource) weights. One op per ONNX op kiln supports; `kiln.unsupported` holds the rest so a
// single import lists every problem.
#ifndef KILN_DIALECT_TD
#define KILN_DIALECT_TD

include "mlir/IR/OpBase.td"

def Kiln_Dialect : Dialect {
  let name = "kiln";
  let cppNamespace = "::kiln";
  let summary = "ONNX-level tensor graph ops for the kiln compiler";
  let description = [{
    Values are builtin ranked tensors (`tensor<1x3x224x224xf32>`); an absent optional ONNX input
    is a `none` value made by `kiln.none`, so operand positions keep their ONNX meaning.
    Attributes keep their ONNX names; their defaults live in the op semantics registry
    (compiler/ops), which also provides shape inference and the reference evaluator.
  }];
}

#endif

#ifndef KILN_INTERFACES_TD
#define KILN_INTERFACES_TD

include "mlir/IR/OpBase.td"

// Shape inference and verification from the op semantics registry (compiler/ops/OpSemantics.h).
def Kiln_ShapeInferenceOpInterface : OpInterface<"ShapeInferenceOpInterface"> {
  let cppNamespace = "::kiln";
  let description = [{
    Result element types and shapes of a kiln op follow from its operand types, attributes and
    the values of constant operands. The verifier checks the declared result types against them.
  }];
  let methods = [
    StaticInterfaceMethod<"The ONNX op type whose semantics this op has.",
      "::llvm::StringRef", "getOnnxOpType", (ins), [{}],
      [{ return ConcreteOp::getOnnxName(); }]>,
    InterfaceMethod<[{Infers the result types. On failure returns failure and sets `error`.}],
      "::mlir::LogicalResult", "inferResultTypes",
      (ins "::llvm::SmallVectorImpl<::mlir::Type> &":$types, "std::string &":$error), [{}],
      [{ return ::kiln::inferResultTypes($_op.getOperation(), ConcreteOp::getOnnxName(), types,
                                         error); }]>,
  ];
  let verify = [{ return ::kiln::verifyInferredTypes($_op, ConcreteOp::getOnnxName()); }];
}

#endif

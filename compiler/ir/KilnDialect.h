// The kiln dialect: ops with ONNX semantics over builtin tensors (see KilnOps.td).
#pragma once

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <string>
#include <vector>

namespace kiln {

// The reason of a kiln.unsupported that stands for control flow whose inputs come from an
// unsupported node: not a problem of its own, so `kiln plan` does not list it.
constexpr const char *kDownstreamOfUnsupported = "downstream of an unsupported node";
// Shape inference and verification through the op semantics registry (KilnDialect.cpp).
mlir::LogicalResult inferResultTypes(mlir::Operation *op, llvm::StringRef onnxName,
                                     llvm::SmallVectorImpl<mlir::Type> &types, std::string &error);
mlir::LogicalResult verifyInferredTypes(mlir::Operation *op, llvm::StringRef onnxName);
}  // namespace kiln

#include "compiler/ir/KilnDialect.h.inc"

namespace mlir::OpTrait {
// Marks kiln's own ops (Kiln_Internal in KilnOps.td): the importer never makes them.
template <typename ConcreteType> class KilnInternal : public TraitBase<ConcreteType, KilnInternal> {};
}  // namespace mlir::OpTrait
#include "compiler/ir/KilnInterfaces.h.inc"

#include "compiler/ir/KilnEnums.h.inc"

#define GET_OP_CLASSES
#include "compiler/ir/KilnOps.h.inc"

namespace kiln {
// The ONNX node name recorded in an op's location (NameLoc), or "" if none.
std::string nodeName(mlir::Operation *op);
// Every ONNX node an op stands for: the names in its location (a fused location names several:
// a Conv with the BatchNormalization folded into it, an attention's products and softmax) and in
// those of the ops in its regions, in order, each once.
std::vector<std::string> nodeNames(mlir::Operation *op);
// "node 'conv1' (Conv)" or "op kiln.conv" when the node has no name: for error messages.
std::string describeOp(mlir::Operation *op);
}  // namespace kiln

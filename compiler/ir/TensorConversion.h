// Conversions between MLIR's types/attributes and the plain tensors of the op semantics registry.
#pragma once

#include "compiler/ops/OpSemantics.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Operation.h"

#include <optional>

namespace kiln {

// Element type ⇄ DType. Signless integers are signed; `ui8` etc. are unsigned; i1 is Bool.
ops::DType dtypeOf(mlir::Type elementType);  // Undefined for anything else
mlir::Type elementTypeOf(ops::DType t, mlir::MLIRContext *ctx);
// Ranked tensor type ⇄ TensorType; `none` and unranked tensors give dtype Undefined.
ops::TensorType tensorTypeOf(mlir::Type t);
mlir::RankedTensorType rankedTypeOf(const ops::TensorType &t, mlir::MLIRContext *ctx);

// Constants with at most this many elements are inline dense attributes; larger ones are
// dense_resource blobs (raw bytes, shared, never copied element by element).
constexpr int64_t kInlineConstantLimit = 64;
// Shape functions are given the values of constant operands up to this size (shape inputs,
// axes, pads are tiny; weights are not needed to infer shapes).
constexpr int64_t kShapeValueLimit = 1 << 16;

ops::Tensor tensorFromAttr(mlir::ElementsAttr attr);
// Raw bytes of a constant without converting elements (for weights); empty if not a resource
// or dense attribute with a raw layout (i1 dense attributes are bit-packed and converted).
std::vector<uint8_t> bytesFromAttr(mlir::ElementsAttr attr);
mlir::ElementsAttr attrFromTensor(const ops::Tensor &t, mlir::MLIRContext *ctx);
// A constant of `type` from its raw little-endian bytes (a resource blob above the inline limit).
mlir::ElementsAttr attrFromBytes(mlir::RankedTensorType type, const std::vector<uint8_t> &bytes);
// A dense_resource attribute holding a copy of raw little-endian element bytes.
mlir::ElementsAttr resourceAttrFromBytes(mlir::RankedTensorType type, llvm::StringRef name, llvm::ArrayRef<char> bytes);

// The op's attributes as registry attributes (ints, floats, strings, arrays, tensors).
ops::Attrs attrsFromOp(mlir::Operation *op);
// The constant value behind `v` (kiln.constant), if it has at most `limit` elements.
std::optional<ops::Tensor> constantValue(mlir::Value v, int64_t limit = kShapeValueLimit);
bool isConstant(mlir::Value v);  // kiln.constant or kiln.none

// Builds the ShapeContext for an op's operands (values of small constants included).
struct OperandInfo {
  std::vector<ops::TensorType> types;
  std::vector<std::optional<ops::Tensor>> values;
  ops::Attrs attrs;
  ops::ShapeContext context(int numOutputs) const;
};
OperandInfo operandInfo(mlir::Operation *op);

}  // namespace kiln

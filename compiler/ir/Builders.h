// Building kiln ops from passes: result types come from the semantics registry, as the importer's.
#pragma once

#include "compiler/ops/Tensor.h"

#include "mlir/IR/Builders.h"

#include <string>

namespace kiln {

// Creates the op named `opName` ("kiln.transpose") with these operands and attributes and
// `numResults` results whose types are inferred. On failure erases it, sets `error` and returns
// nullptr.
mlir::Operation *createInferred(mlir::OpBuilder &b, mlir::Location loc, llvm::StringRef opName,
                                mlir::ValueRange operands, llvm::ArrayRef<mlir::NamedAttribute> attrs,
                                std::string *error, unsigned numResults = 1);

// The same for op class OpT (createInferred<TransposeOp>(b, loc, {x}, attrs, &err)): the name comes
// from the class, so a misspelt op is a compile error.
template <class OpT>
mlir::Operation *createInferred(mlir::OpBuilder &b, mlir::Location loc, mlir::ValueRange operands,
                                llvm::ArrayRef<mlir::NamedAttribute> attrs, std::string *error,
                                unsigned numResults = 1) {
  return createInferred(b, loc, OpT::getOperationName(), operands, attrs, error, numResults);
}

// Re-infers `op`'s result types in place (after its operands' types changed).
bool reinferResultTypes(mlir::Operation *op, std::string *error);

// A kiln.constant holding `t`.
mlir::Value createConstant(mlir::OpBuilder &b, mlir::Location loc, const ops::Tensor &t);

// `x` reshaped to `shape` (every dim given, none 0 or -1): a kiln.reshape whose operand 1 is a new
// i64 kiln.constant. On failure erases both, sets `error` and returns nullptr.
mlir::Operation *createReshape(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x, llvm::ArrayRef<int64_t> shape,
                               std::string *error);

}  // namespace kiln

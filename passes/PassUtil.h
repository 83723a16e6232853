// Helpers shared by kiln's passes.
#pragma once

#include "compiler/ir/KilnDialect.h"
#include "compiler/knobs/Knob.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Operation.h"

#include <optional>
#include <string>

namespace kiln {

// Parses a pass's `route` option; on a bad route emits an error at `op` and returns false.
inline bool readRoute(const std::string &text, mlir::Operation *op, knobs::Route &route) {
  std::string error;
  if (knobs::Route::parse(text, &route, &error)) return true;
  op->emitError("invalid route option: " + error);
  return false;
}

// The ONNX op type of a kiln op ("" for structural ops such as kiln.constant or kiln.fused).
inline std::string onnxTypeOf(mlir::Operation *op) {
  if (auto s = mlir::dyn_cast<ShapeInferenceOpInterface>(op)) return s.getOnnxOpType().str();
  return "";
}

// The products int8 quantization rewrites (and calibration therefore observes): Conv, MatMul,
// TransposedMatMul, operand 0 the activation, operand 1 the weight.
inline bool isInt8Product(mlir::Operation *op) {
  std::string t = onnxTypeOf(op);
  return t == "Conv" || t == "MatMul" || t == "TransposedMatMul";
}

// The storage axis of such a product's weight (rank `rank`) that indexes its output channels:
// Conv 0, MatMul rank − 1, TransposedMatMul perm_b[rank − 1]; nullopt for other ops.
inline std::optional<int64_t> weightChannelAxis(mlir::Operation *op, int64_t rank) {
  std::string type = onnxTypeOf(op);
  if (type == "Conv") return 0;
  if (rank < 2 || (type != "MatMul" && type != "TransposedMatMul")) return std::nullopt;
  if (auto perm = op->getAttrOfType<mlir::DenseI64ArrayAttr>("perm_b")) return perm.asArrayRef()[size_t(rank - 1)];
  return rank - 1;
}

}  // namespace kiln

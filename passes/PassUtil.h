// Helpers shared by kiln's passes.
#pragma once

#include "compiler/ir/KilnDialect.h"
#include "compiler/knobs/Knob.h"

#include "mlir/IR/Operation.h"

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

}  // namespace kiln

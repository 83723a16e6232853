// The CPU reference evaluator over kiln IR: runs each op's reference kernel from the semantics
// registry. Used for constant folding, as the oracle of pass and kernel tests, for the ONNX
// conformance suite and (later) `kiln check`. Clear, not fast.
#pragma once

#include "compiler/ops/OpSemantics.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Operation.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace kiln {

// Evaluates one kiln op; `operands` holds nullptr for `none` operands. Returns an error message
// naming the node on failure.
std::optional<std::string> evaluateOp(mlir::Operation *op, const std::vector<const ops::Tensor *> &operands,
                                      std::vector<ops::Tensor> &results);

// Sees each op (constants excepted, ops inside kiln.fused regions included) with its operand
// values (nullptr for `none`) just before it runs: calibration collects activation ranges so.
using OpObserver = std::function<void(mlir::Operation *, const std::vector<const ops::Tensor *> &)>;

// Sees each op's results just after it ran (constants excepted; a kiln.fused region's results,
// and those of the ops inside it): the fp16 range check and `kiln debug precision` compare them.
using ResultObserver = std::function<void(mlir::Operation *, const std::vector<ops::Tensor> &)>;

// Evaluates a function of kiln ops on `inputs` (in argument order); intermediate values are freed
// after their last use so large models fit in memory.
std::optional<std::string> evaluateFunction(mlir::func::FuncOp f, const std::vector<ops::Tensor> &inputs,
                                            std::vector<ops::Tensor> &outputs, const OpObserver &observe = nullptr,
                                            const ResultObserver &onResults = nullptr);

// If every operand of `op` is a constant and its results hold at most `maxElements` elements in
// all, evaluates it and returns new kiln.constant values (created before `op`) for its results.
// Returns std::nullopt when the op is not foldable; an error message when evaluation fails.
struct FoldResult {
  std::vector<mlir::Value> values;
  std::string error;
  bool folded() const { return !values.empty(); }
};
FoldResult foldWithEvaluator(mlir::Operation *op, mlir::OpBuilder &builder, int64_t maxElements);
constexpr int64_t kDefaultFoldLimit = 1 << 22;

}  // namespace kiln

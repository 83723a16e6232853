// What a model would build into: op histogram, unsupported nodes, FLOPs, weight and activation
// sizes, and a peak-activation estimate from liveness in program order.
#pragma once

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace kiln {

struct OpStats {
  int64_t count = 0;
  int64_t flops = 0;
};

struct UnsupportedNode {
  std::string name, opType, domain, reason;
};

struct TensorInfoRow {
  std::string name, dtype;
  std::vector<int64_t> shape;
  int64_t bytes = 0;
  bool known = true;  // false downstream of an unsupported op
};

struct ModelPlan {
  std::map<std::string, OpStats> ops;  // by ONNX op type
  std::vector<UnsupportedNode> unsupported;
  std::vector<TensorInfoRow> inputs, outputs;
  int64_t totalOps = 0, totalFlops = 0;
  int64_t weightCount = 0, weightBytes = 0;
  int64_t activationBytes = 0;      // every intermediate value, summed
  int64_t peakActivationBytes = 0;  // most bytes live at once in program order (inputs included)
  int64_t arenaBytes = 0;           // planned activation arena (intermediates only; I/O is bound)
  bool complete = true;             // false when unsupported ops hide sizes downstream
};

ModelPlan planFunction(mlir::func::FuncOp f);

// The FLOPs of `op` and of the ops in its regions (a kernel region's), by each op's ONNX
// semantics (ops::countFlops); ops without ranked results count 0.
int64_t opFlops(mlir::Operation *op);

}  // namespace kiln

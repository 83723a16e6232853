// The importer's table: (domain, ONNX op type, opset range) → kiln op, with the normalisation
// that brings each opset's form to the one kiln op (e.g. Squeeze's axes attribute vs input).
#pragma once

#include "compiler/ops/Tensor.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Value.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace onnx {
class NodeProto;
}

namespace kiln {

// One ONNX node on its way into the dialect. Normalisers edit operands and attributes.
struct NodeImport {
  const onnx::NodeProto &node;
  int64_t opset;
  mlir::OpBuilder &builder;
  mlir::Location loc;
  mlir::Value noneValue;
  std::vector<mlir::Value> operands;  // ONNX input order; `none` for absent optional inputs
  mlir::NamedAttrList attrs;
  std::string error;  // set by a normaliser that fails

  bool has(size_t k) const;  // operand k exists and is not none
  std::optional<std::vector<int64_t>> constInts(size_t k) const;
  mlir::Value constI64(const std::vector<int64_t> &vals, bool scalar = false);
  mlir::Value constScalarLike(mlir::Value like, double v);  // rank-0 of like's element type
  bool fail(const std::string &msg) {
    error = msg;
    return false;
  }
};

using Normalizer = std::function<bool(NodeImport &)>;

struct OpEntry {
  std::string domain;  // "" = ai.onnx
  std::string opType;
  int minOpset, maxOpset;
  std::string mnemonic;  // kiln op name without the "kiln." prefix
  Normalizer normalize;  // may be empty
};

// The entry for (domain, opType) at `opset`, or nullptr. `anyVersion` says whether the op type
// is known at some other opset (for a precise "unsupported" reason).
const OpEntry *findOpEntry(const std::string &domain, const std::string &opType, int64_t opset,
                           bool *anyVersion = nullptr);
const std::vector<OpEntry> &opTable();

constexpr int kMinOpset = 7, kMaxOpset = 21;

}  // namespace kiln

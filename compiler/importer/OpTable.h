// The importer's map from ONNX nodes to kiln ops. The op for an ONNX op type comes from the
// dialect (KilnOps.td names each op's ONNX type once); this table adds only what an op type needs
// beyond that: the opsets it is imported at, when not all of kMinOpset..kMaxOpset, and the
// normalisation that brings each opset's form to the one kiln op (e.g. Squeeze's axes attribute
// vs input).
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
  Normalizer normalize;  // may be empty
};

// The kiln op for an ONNX op type: an op of the dialect whose ONNX type it is and that is not one
// of kiln's own (Kiln_Internal); nullopt when there is none. Op types of other domains than the
// default one are written "domain::Op" (com.microsoft::QLinearAdd), as the dialect names them;
// `domainKnown` (optional) says whether the dialect has any op of that domain.
std::optional<mlir::OperationName> importableOp(mlir::MLIRContext &ctx, llvm::StringRef onnxType,
                                                bool *domainKnown = nullptr);

// The table's entry for (domain, opType) at `opset`, or nullptr. `anyVersion` says whether the
// table has the op type at all (at some other opset). Op types without entries are imported at
// every supported opset as they are.
const OpEntry *findOpEntry(const std::string &domain, const std::string &opType, int64_t opset,
                           bool *anyVersion = nullptr);
const std::vector<OpEntry> &opTable();

constexpr int kMinOpset = 7, kMaxOpset = 21;
// Models of opsets 1–6 are read too, but only ops the table lists at those opsets (ops whose
// meaning has not changed since) import there; any other op is unsupported at that opset.
constexpr int kOldestOpset = 1;

}  // namespace kiln

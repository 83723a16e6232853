// Intermediate tensors as extra function results (see Passes.td), for `kiln check --mark`.
#include "compiler/support/Pattern.h"
#include "passes/PassUtil.h"
#include "passes/Passes.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringSet.h"

#include <algorithm>

namespace kiln {
#define GEN_PASS_DEF_MARKOUTPUTS
#include "passes/Passes.h.inc"

namespace {

using namespace mlir;

struct MarkOutputsPass : impl::MarkOutputsBase<MarkOutputsPass> {
  using MarkOutputsBase::MarkOutputsBase;

  void runOnOperation() override {
    func::FuncOp f = getOperation();
    if (nodes.empty()) return;
    support::Pattern pattern;
    std::string error;
    if (nodes != "all" && !pattern.compile(nodes, error)) {
      f.emitError("mark '" + std::string(nodes).substr(0, 200) + "': " + error);
      return signalPassFailure();
    }
    Block &body = f.getBody().front();
    Operation *ret = body.getTerminator();
    llvm::DenseSet<Value> returned(ret->getOperands().begin(), ret->getOperands().end());
    llvm::StringSet<> seen;  // graph outputs keep their names; a node is marked once
    for (unsigned k = 0; k < f.getNumResults(); ++k)
      if (auto n = f.getResultAttrOfType<StringAttr>(k, "kiln.name")) seen.insert(n.getValue());
    // A node that became several ops (a Gemm's product and bias add, a decomposed norm) is
    // marked at its last one, the node's own result, which onnxruntime's reference also gives:
    // the ops are walked from the end, and the marks put back in program order.
    SmallVector<Value> marked;
    SmallVector<std::string> markedNames;
    for (Operation &op : llvm::reverse(body.without_terminator())) {
      if (isa<ConstantOp, NoneOp>(op)) continue;
      std::string name = nodeName(&op);
      if (name.empty() || seen.contains(name)) continue;
      if (nodes != "all" && !pattern.fullMatch(name, error)) {
        if (!error.empty()) {
          op.emitError(error);
          return signalPassFailure();
        }
        continue;
      }
      auto it = llvm::find_if(op.getResults(), [](Value r) {
        auto t = dyn_cast<RankedTensorType>(r.getType());
        return t && isa<FloatType>(t.getElementType());
      });
      if (it == op.getResults().end()) continue;
      seen.insert(name);
      if (!returned.contains(*it)) marked.push_back(*it), markedNames.push_back(name);
    }
    std::reverse(marked.begin(), marked.end());
    std::reverse(markedNames.begin(), markedNames.end());
    for (unsigned k = 0; k < marked.size(); ++k) {
      NamedAttribute name(StringAttr::get(&getContext(), "kiln.name"), StringAttr::get(&getContext(), markedNames[k]));
      f.insertResult(f.getNumResults(), marked[k].getType(), DictionaryAttr::get(&getContext(), {name}));
      ret->insertOperands(ret->getNumOperands(), marked[k]);
    }
  }
};

}  // namespace
}  // namespace kiln

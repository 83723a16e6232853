// Intermediate tensors as extra function results (see Passes.td), for `kiln check --mark`.
#include "compiler/support/Pattern.h"
#include "passes/PassUtil.h"
#include "passes/Passes.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringMap.h"
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
    llvm::StringSet<> taken;  // graph outputs keep their names
    for (unsigned k = 0; k < f.getNumResults(); ++k)
      if (auto n = f.getResultAttrOfType<StringAttr>(k, "kiln.name")) taken.insert(n.getValue());
    // A node that became several ops (a Gemm's product and bias add, a decomposed norm) is
    // marked at its last one, the node's own result, which onnxruntime's reference also gives.
    llvm::StringMap<std::pair<unsigned, Value>> last;  // node → (position, its last op's result)
    unsigned position = 0;
    for (Operation &op : body.without_terminator()) {
      ++position;
      if (isa<ConstantOp, NoneOp>(op)) continue;
      std::string name = nodeName(&op);
      if (name.empty() || taken.contains(name)) continue;
      if (nodes != "all") {
        if (!pattern.fullMatch(name, error)) {
          if (!error.empty()) {
            op.emitError(error);
            return signalPassFailure();
          }
          continue;
        }
      }
      auto it = llvm::find_if(op.getResults(), [](Value r) {
        auto t = dyn_cast<RankedTensorType>(r.getType());
        return t && isa<FloatType>(t.getElementType());
      });
      if (it != op.getResults().end()) last[name] = {position, *it};
    }
    std::vector<std::pair<unsigned, std::string>> order;  // program order of the marked values
    for (auto &entry : last)
      if (!returned.contains(entry.second.second)) order.push_back({entry.second.first, entry.first().str()});
    std::sort(order.begin(), order.end());
    SmallVector<Value> marked;
    SmallVector<std::string> markedNames;
    for (auto &[pos, name] : order) marked.push_back(last[name].second), markedNames.push_back(name);
    for (unsigned k = 0; k < marked.size(); ++k) {
      NamedAttribute name(StringAttr::get(&getContext(), "kiln.name"), StringAttr::get(&getContext(), markedNames[k]));
      f.insertResult(f.getNumResults(), marked[k].getType(), DictionaryAttr::get(&getContext(), {name}));
      ret->insertOperands(ret->getNumOperands(), marked[k]);
    }
  }
};

}  // namespace
}  // namespace kiln

#include "compiler/analysis/Plan.h"

#include "compiler/analysis/MemoryPlan.h"

#include "compiler/ir/KilnDialect.h"
#include "compiler/ir/TensorConversion.h"

#include "llvm/ADT/DenseMap.h"

using namespace mlir;

namespace kiln {

static int64_t bytesOf(Type t) {
  auto rt = dyn_cast<RankedTensorType>(t);
  if (!rt) return 0;
  return rt.getNumElements() * ops::byteSize(dtypeOf(rt.getElementType()));
}

static TensorInfoRow rowFor(Type t, std::string name) {
  ops::TensorType tt = tensorTypeOf(t);
  bool known = isa<RankedTensorType>(t);
  return {std::move(name), known ? ops::dtypeName(tt.dtype) : "unknown", tt.shape, bytesOf(t), known};
}

ModelPlan planFunction(func::FuncOp f) {
  ModelPlan plan;
  Block &body = f.getBody().front();
  for (unsigned k = 0; k < body.getNumArguments(); ++k) {
    auto name = f.getArgAttrOfType<StringAttr>(k, "kiln.name");
    plan.inputs.push_back(rowFor(body.getArgument(k).getType(), name ? name.str() : "arg" + std::to_string(k)));
  }
  for (unsigned k = 0; k < f.getNumResults(); ++k) {
    auto name = f.getResultAttrOfType<StringAttr>(k, "kiln.name");
    plan.outputs.push_back(rowFor(f.getResultTypes()[k], name ? name.str() : "out" + std::to_string(k)));
  }

  // Liveness in program order: a value is live from its definition to its last use.
  llvm::DenseMap<Value, Operation *> lastUse;
  Operation *terminator = body.getTerminator();
  for (Operation &op : body)
    for (Value v : op.getOperands()) lastUse[v] = &op;
  int64_t live = 0;
  for (BlockArgument a : body.getArguments()) live += bytesOf(a.getType());
  plan.peakActivationBytes = live;

  for (Operation &op : body) {
    if (&op == terminator) break;
    if (auto c = dyn_cast<ConstantOp>(op)) {
      ++plan.weightCount;
      plan.weightBytes += bytesOf(c.getType());
      continue;
    }
    if (isa<NoneOp>(op)) continue;
    ++plan.totalOps;
    if (auto u = dyn_cast<UnsupportedOp>(op)) {
      plan.complete = false;
      if (u.getReason() == kDownstreamOfUnsupported) continue;
      plan.unsupported.push_back({nodeName(&op), u.getOpType().str(), u.getDomain().str(), u.getReason().str()});
      plan.ops[(u.getDomain().empty() ? "" : u.getDomain().str() + "::") + u.getOpType().str()].count++;
    } else if (auto sem = dyn_cast<ShapeInferenceOpInterface>(op)) {
      OpStats &s = plan.ops[sem.getOnnxOpType().str()];
      ++s.count;
      bool ranked = true;
      for (Type t : op.getResultTypes()) ranked &= isa<RankedTensorType>(t);
      if (ranked) {
        int64_t fl = opFlops(&op);
        s.flops += fl;
        plan.totalFlops += fl;
      } else {
        plan.complete = false;
      }
    }
    for (Value r : op.getResults()) {
      int64_t b = bytesOf(r.getType());
      plan.activationBytes += b;
      live += b;
    }
    plan.peakActivationBytes = std::max(plan.peakActivationBytes, live);
    // Free what this op read for the last time (function results stay live to the end).
    for (Value v : op.getOperands()) {
      auto it = lastUse.find(v);
      if (it == lastUse.end() || it->second != &op) continue;
      if (!v.getDefiningOp<ConstantOp>()) live -= bytesOf(v.getType());
      lastUse.erase(it);  // an operand that appears twice is freed once
    }
    for (Value r : op.getResults())
      if (r.use_empty()) live -= bytesOf(r.getType());
  }
  // The arena: every intermediate value (not a constant, input or function result) gets an
  // offset; lifetimes are [defining op, last user] in program order.
  llvm::DenseMap<Operation *, int64_t> index;
  int64_t i = 0;
  for (Operation &op : body) index[&op] = i++;
  std::vector<BufferRequest> requests;
  for (Operation &op : body) {
    if (isa<ConstantOp, NoneOp>(op) || &op == terminator) continue;
    for (Value r : op.getResults()) {
      bool returned = false;
      int64_t last = index[&op];
      for (Operation *user : r.getUsers()) {
        returned |= user == terminator;
        last = std::max(last, index[user]);
      }
      if (!returned) requests.push_back({bytesOf(r.getType()), index[&op], last});
    }
  }
  plan.arenaBytes = planMemory(requests).arenaBytes;
  return plan;
}

int64_t opFlops(Operation *op) {
  int64_t total = 0;
  op->walk([&](Operation *o) {
    auto sem = dyn_cast<ShapeInferenceOpInterface>(o);
    if (!sem || !llvm::all_of(o->getResultTypes(), [](Type t) { return isa<RankedTensorType>(t); })) return;
    OperandInfo info = operandInfo(o);
    std::vector<ops::TensorType> outs;
    for (Type t : o->getResultTypes()) outs.push_back(tensorTypeOf(t));
    total += ops::countFlops(sem.getOnnxOpType().str(), info.context(o->getNumResults()), outs);
  });
  return total;
}

}  // namespace kiln

// Variadic Sum/Mean/Max/Min with more than three operands as a tree of three-operand ones (see
// Passes.td): the elementwise kernels take at most three.
#include "compiler/ir/Builders.h"
#include "compiler/ir/KilnDialect.h"
#include "compiler/ir/TensorConversion.h"
#include "passes/PassUtil.h"
#include "passes/Passes.h"

namespace kiln {
#define GEN_PASS_DEF_SPLITVARIADIC
#include "passes/Passes.h.inc"

namespace {

using namespace mlir;

constexpr unsigned kMaxOperands = 3;

// Folds `operands` with OpT, three at a time, level by level (a balanced tree: depth log3 n).
template <class OpT> Value tree(OpBuilder &b, Location loc, SmallVector<Value> operands, std::string &err) {
  while (operands.size() > kMaxOperands) {
    SmallVector<Value> next;
    for (size_t i = 0; i < operands.size(); i += kMaxOperands) {
      ValueRange group(ArrayRef<Value>(operands).slice(i, std::min<size_t>(kMaxOperands, operands.size() - i)));
      if (group.size() == 1) {
        next.push_back(group[0]);
        continue;
      }
      Operation *op = createInferred<OpT>(b, loc, group, {}, &err);
      if (!op) return {};
      next.push_back(op->getResult(0));
    }
    operands = std::move(next);
  }
  Operation *op = createInferred<OpT>(b, loc, operands, {}, &err);
  return op ? op->getResult(0) : Value();
}

struct SplitVariadicPass : impl::SplitVariadicBase<SplitVariadicPass> {
  void runOnOperation() override {
    SmallVector<Operation *> wide;
    getOperation().walk([&](Operation *op) {
      if (isa<SumOp, MeanOp, MaxOp, MinOp>(op) && op->getNumOperands() > kMaxOperands) wide.push_back(op);
    });
    for (Operation *op : wide) {
      OpBuilder b(op);
      Location loc = op->getLoc();
      SmallVector<Value> operands(op->getOperands());
      std::string err;
      Value r;
      if (isa<SumOp>(op))
        r = tree<SumOp>(b, loc, operands, err);
      else if (isa<MaxOp>(op))
        r = tree<MaxOp>(b, loc, operands, err);
      else if (isa<MinOp>(op))
        r = tree<MinOp>(b, loc, operands, err);
      else if (Value sum = tree<SumOp>(b, loc, operands, err)) {  // Mean: the sum over n
        ops::DType t = tensorTypeOf(sum.getType()).dtype;
        Value n = createConstant(b, loc, ops::Tensor::fromDoubles(t, {}, {double(operands.size())}));
        if (Operation *div = createInferred<DivOp>(b, loc, {sum, n}, {}, &err)) r = div->getResult(0);
      }
      if (!r) {
        op->emitError("cannot split into three-operand ops: " + err);
        return signalPassFailure();
      }
      op->getResult(0).replaceAllUsesWith(r);
      op->erase();
    }
  }
};

}  // namespace
}  // namespace kiln

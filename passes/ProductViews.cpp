// Matrix products read sliced and transposed operands in place (see Passes.td).
#include "passes/PassUtil.h"
#include "passes/Passes.h"
#include "passes/StridedViews.h"

namespace kiln {
#define GEN_PASS_DEF_PRODUCTVIEWS
#include "passes/Passes.h.inc"

namespace {

using namespace mlir;

struct ProductViewsPass : impl::ProductViewsBase<ProductViewsPass> {
  using ProductViewsBase::ProductViewsBase;

  void runOnOperation() override {
    knobs::Route r;
    if (!readRoute(route, getOperation(), r)) return signalPassFailure();
    if (r.get(*knobs::findKnob("fusion.transpose")) != "on") return;  // (CanonicalizeLinear's knob)
    const bool pointers = batchPointers(r);
    SmallVector<Operation *> ops;
    getOperation().walk([&](Operation *op) { ops.push_back(op); });
    OpBuilder b(&getContext());
    for (Operation *op : ops) {
      int operandOf[2];
      Operation *mm = productOf(op, operandOf);
      if (!mm) continue;
      for (unsigned k = 0; k < 2; ++k) {
        if (operandOf[k] < 0) continue;
        Value old = op->getOperand(unsigned(operandOf[k]));
        auto type = cast<RankedTensorType>(old.getType());
        Type et = type.getElementType();
        if (!et.isF32() && !et.isF16() && !et.isBF16()) continue;
        std::optional<StridedView> view = stridedViewOf(old);
        if (!view || !view->copies || !onlyThisChain(old, view->root) ||
            !productReadable(*view, intsAttr(mm, k == 0 ? "perm_a" : "perm_b"), et.getIntOrFloatBitWidth() / 8,
                             pointers && !isEngineIo(view->root) && !isEngineIo(op->getResult(0))))
          continue;
        b.setInsertionPoint(op);
        Value sv = createStridedView(b, op->getLoc(), *view, old.getType());
        if (!sv) continue;
        op->setOperand(unsigned(operandOf[k]), sv);
        eraseDeadViews(old);
      }
    }
  }
};

}  // namespace
}  // namespace kiln

// Elementwise kernels read sliced or transposed operands in place (see Passes.td).
#include "passes/ElementwiseUse.h"
#include "passes/PassUtil.h"
#include "passes/Passes.h"
#include "passes/StridedViews.h"

namespace kiln {
#define GEN_PASS_DEF_ELEMENTWISEVIEWS
#include "passes/Passes.h.inc"

KILN_KNOB(kElementwiseViews, {"fusion.views",
                              {"on", "off"},
                              "on",
                              "Elementwise kernels read operands that a Slice or Transpose made (rows kept "
                              "contiguous) in place instead of after a copy",
                              knobs::Tier::Mixed,
                              "passes/ElementwiseViews.cpp"});

namespace {

using namespace mlir;

// Whether every op of `readers` (elementwise ops) reads `v` at its own shape (not as a per-axis
// quantization parameter, whose broadcast shape differs).
bool readAtOwnShape(Value v, ArrayRef<Operation *> readers) {
  for (Operation *op : readers) {
    auto use = elementwiseUse(op);
    if (!use) return false;
    for (size_t k = 0; k < use->inputs.size(); ++k)
      if (use->inputs[k] == v && use->views[k] != shapeOf(v)) return false;
  }
  return true;
}

// Operand k of `op` (an elementwise region or op) as a strided view, when layout ops that copy
// made it and the view keeps its innermost dim contiguous (coalesced reads; a transpose that
// moves the last dim stays a copy, whose tiles read and write coalesced).
void readInPlace(Operation *op, unsigned k, OpBuilder &b) {
  Value old = op->getOperand(k);
  std::optional<StridedView> view = stridedViewOf(old);
  if (!view || !view->copies || view->shape.empty() || (view->shape.back() != 1 && view->strides.back() != 1) ||
      !onlyThisChain(old, view->root))
    return;
  SmallVector<Operation *> readers;
  if (auto f = dyn_cast<FusedOp>(op)) {
    Value arg = f.getBody().front().getArgument(k);
    for (Operation *u : arg.getUsers()) readers.push_back(u);
    if (!readAtOwnShape(arg, readers)) return;
  } else if (!readAtOwnShape(old, {op})) {
    return;
  }
  b.setInsertionPoint(op);
  Value sv = createStridedView(b, op->getLoc(), *view, old.getType());
  if (!sv) return;
  op->setOperand(k, sv);
  eraseDeadViews(old);
}

struct ElementwiseViewsPass : impl::ElementwiseViewsBase<ElementwiseViewsPass> {
  using ElementwiseViewsBase::ElementwiseViewsBase;

  void runOnOperation() override {
    knobs::Route r;
    if (!readRoute(route, getOperation(), r)) return signalPassFailure();
    if (r.get(kElementwiseViews) != "on") return;
    SmallVector<Operation *> ops;
    getOperation().walk([&](Operation *op) {
      auto f = dyn_cast<FusedOp>(op);
      if ((f && f.getKind() == FusedKind::Elementwise) ||
          (!f && !op->getParentOfType<FusedOp>() && isFusableElementwise(op)))
        ops.push_back(op);
    });
    OpBuilder b(&getContext());
    for (Operation *op : ops)
      for (unsigned k = 0; k < op->getNumOperands(); ++k) readInPlace(op, k, b);
  }
};

}  // namespace
}  // namespace kiln

#include "compiler/eval/Evaluator.h"
#include "passes/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

namespace kiln {
#define GEN_PASS_DEF_FOLDCONSTANTS
#include "passes/Passes.h.inc"

namespace {

struct FoldConstantsPass : impl::FoldConstantsBase<FoldConstantsPass> {
  using FoldConstantsBase::FoldConstantsBase;

  void runOnOperation() override {
    mlir::func::FuncOp f = getOperation();
    mlir::OpBuilder builder(&getContext());
    // Block order is a topological order, so folded results are constants for later users.
    llvm::SmallVector<mlir::Operation *> worklist;
    f.walk([&](ShapeInferenceOpInterface op) { worklist.push_back(op); });
    for (mlir::Operation *op : worklist) {
      if (!foldDequantize && mlir::isa<DequantizeLinearOp>(op)) continue;
      builder.setInsertionPoint(op);
      FoldResult r = foldWithEvaluator(op, builder, maxElements);
      if (!r.error.empty()) {
        op->emitError(r.error);
        return signalPassFailure();
      }
      if (!r.folded()) continue;
      for (unsigned k = 0; k < r.values.size(); ++k) op->getResult(k).replaceAllUsesWith(r.values[k]);
      op->erase();
    }
    // Drop constants nothing uses any more (the inputs of what was folded).
    llvm::SmallVector<mlir::Operation *> dead;
    f.walk([&](mlir::Operation *op) {
      if ((mlir::isa<ConstantOp>(op) || mlir::isa<NoneOp>(op)) && op->use_empty()) dead.push_back(op);
    });
    for (mlir::Operation *op : dead) op->erase();
  }
};

}  // namespace

void buildImportCleanupPipeline(mlir::OpPassManager &pm) {
  FoldConstantsOptions keepQuantizedWeights;
  keepQuantizedWeights.foldDequantize = false;
  pm.addNestedPass<mlir::func::FuncOp>(createFoldConstants(keepQuantizedWeights));
  pm.addPass(mlir::createCanonicalizerPass());
}

}  // namespace kiln

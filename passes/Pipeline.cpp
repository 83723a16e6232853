// The compile pipeline: what `kiln compile` runs between import and code generation.
#include "passes/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

namespace kiln {

void buildCalibrationPipeline(mlir::OpPassManager &pm, const std::string &route) {
  buildImportCleanupPipeline(pm);
  mlir::OpPassManager &f = pm.nest<mlir::func::FuncOp>();
  f.addPass(createFoldBatchNorm({route}));
  f.addPass(createCanonicalizeLinear({route}));
  f.addPass(createFoldConstants());  // beta · C of lowered Gemms, BN constants
}

void buildInt8Pipeline(mlir::OpPassManager &pm, const std::string &calibPath, const std::string &keepFloat) {
  buildCalibrationPipeline(pm, "");
  mlir::OpPassManager &f = pm.nest<mlir::func::FuncOp>();
  f.addPass(createQuantizeInt8({calibPath, keepFloat}));
  f.addPass(createLowerQdq());
  f.addPass(mlir::createCanonicalizerPass());  // the DequantizeLinear ops left without users
}

void buildCompilePipeline(mlir::OpPassManager &pm, const std::string &route) {
  buildCalibrationPipeline(pm, route);
  mlir::OpPassManager &f = pm.nest<mlir::func::FuncOp>();
  f.addPass(createPrecision({route}));
  f.addPass(createLayout({route}));
  f.addPass(createFoldConstants());  // constants transposed to NHWC, converted to half
  f.addPass(createSimplifyTransposes());
  f.addPass(mlir::createCanonicalizerPass());  // dead ops and constants
  // Elementwise regions first, so an epilogue can take a whole region (GELU's DAG uses the
  // product's result twice, which a chain of single uses would not reach).
  f.addPass(createFuseElementwise({route}));
  f.addPass(createFuseEpilogue({route}));
}

}  // namespace kiln

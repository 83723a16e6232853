// The compile pipeline: what `kiln compile` runs between import and code generation.
#include "passes/Passes.h"

#include "compiler/knobs/Knob.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

namespace kiln {

void buildCalibrationPipeline(mlir::OpPassManager &pm, const std::string &route, const target::GpuTarget &target) {
  buildImportCleanupPipeline(pm);
  mlir::OpPassManager &f = pm.nest<mlir::func::FuncOp>();
  f.addPass(createLowerEinsum());                        // its products then canonicalize like any other
  f.addPass(createSplitVariadic());                      // the elementwise kernels take three operands at most
  f.addPass(createFuseLayerNorm({route, target.arch}));  // written-out LayerNorm/RMSNorm: one row kernel
  f.addPass(createLowerQuantizedOps());                  // onnxruntime's QLinear/integer ops: Q/DQ and float products
  f.addPass(createSplitRecurrent());                     // input projections: products like any other
  f.addPass(createFoldBatchNorm({route, target.arch}));
  f.addPass(createCanonicalizeLinear({route, target.arch}));
  FoldConstantsOptions keepQuantizedWeights;  // beta · C of lowered Gemms, BN constants
  keepQuantizedWeights.foldDequantize = false;
  f.addPass(createFoldConstants(keepQuantizedWeights));
}

// Calibrated int8/fp8 Q/DQ for the route's int8/fp8 products, DequantizeLinear moved below
// layout-only ops (8-bit data through them), then every QDQ product to QuantizedMatMul/QuantizedConv; DequantizeLinear of constants left over (weights of products that stay
// float) folds to float weights.
static void addQuantizationPasses(mlir::OpPassManager &f, const std::string &route, const target::GpuTarget &target,
                                  const PipelineOptions &options) {
  f.addPass(createQuantizeProducts({options.calib, options.keepFloat, route, target.arch}));
  f.addPass(createPropagateQdq());
  f.addPass(createLowerQdq({route, target.arch}));
  f.addPass(createFoldConstants());
  f.addPass(mlir::createCSEPass());            // one QuantizeLinear per tensor and scale
  f.addPass(mlir::createCanonicalizerPass());  // the DequantizeLinear ops left without users
}

bool routeQuantizes(const knobs::Route &route) {
  for (auto &[knob, value] : route.values()) {
    std::string node;
    const knobs::KnobDef *def = nullptr;
    if ((value == "int8" || value == "fp8") &&
        (knob == "precision" || (knobs::parseNodeKnob(knob, &node, &def) && def->name == "precision")))
      return true;
  }
  return false;
}

void buildPrecisionPipeline(mlir::OpPassManager &pm, const std::string &route, const target::GpuTarget &target,
                            const PipelineOptions &options) {
  buildCalibrationPipeline(pm, route, target);
  mlir::OpPassManager &f = pm.nest<mlir::func::FuncOp>();
  if (!options.markOutputs.empty()) f.addPass(createMarkOutputs({options.markOutputs}));
  addQuantizationPasses(f, route, target, options);
  f.addPass(createHalfSafety({route, target.arch, options.checkInputs}));
  f.addPass(createPrecision({route, target.arch}));
}

void buildCompilePipeline(mlir::OpPassManager &pm, const std::string &route, const target::GpuTarget &target,
                          const PipelineOptions &options) {
  buildPrecisionPipeline(pm, route, target, options);
  mlir::OpPassManager &f = pm.nest<mlir::func::FuncOp>();
  f.addPass(createIoDtype({options.ioDtype}));
  f.addPass(createLayout({route, target.arch}));
  f.addPass(createFoldConstants());  // constants transposed to NHWC, converted to half
  f.addPass(createSimplifyTransposes());
  f.addPass(mlir::createCSEPass());                        // one transpose per value (the layout pass adds one per use)
  f.addPass(mlir::createCanonicalizerPass());              // dead ops and constants
  f.addPass(createSplitReductions({route, target.arch}));  // after layout: the rows are final
  f.addPass(createFuseAttention({route, target.arch}));    // before kernel regions hide the softmax's producers
  // Elementwise regions first, so an epilogue can take a whole region (GELU's DAG uses the
  // product's result twice, which a chain of single uses would not reach).
  f.addPass(createFuseElementwise({route, target.arch}));
  f.addPass(createFuseEpilogue({route, target.arch}));
  f.addPass(createElementwiseViews({route, target.arch}));  // after epilogues, which take contiguous inputs only
  f.addPass(createProductViews({route, target.arch}));
}

}  // namespace kiln

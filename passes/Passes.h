// kiln's MLIR passes (declared once in Passes.td).
#pragma once

#include "compiler/ir/KilnDialect.h"
#include "compiler/target/GpuTarget.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

#include <string>

namespace kiln {
namespace knobs {
class Route;
}

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

// The pipeline run after import: fold constants, then MLIR's canonicalizer (dead code,
// duplicate constants).
void buildImportCleanupPipeline(mlir::OpPassManager &pm);

// The graph as calibration observes it and int8 quantization rewrites it: cleanup, BatchNorm
// folding, canonical matrix products. Range keys name this graph's products.
void buildCalibrationPipeline(mlir::OpPassManager &pm, const std::string &route, const target::GpuTarget &target = {});
// What a compile takes besides the route: post-training quantization of the route's int8/fp8
// products (precision=int8|fp8, or per node) from a calibration file (`kiln calibrate`) with the
// node names (regex) of products kept float (QDQ models get their 8-bit products without
// either); the inputs on which kiln-half-safety checks fp16's range; the engine's I/O type.
struct PipelineOptions {
  std::string calib, keepFloat;
  std::string checkInputs;
  std::string ioDtype;      // float32 inputs and outputs stored as fp16 or bf16 (kiln-io-dtype); empty: as declared
  std::string markOutputs;  // nodes whose results become extra outputs (kiln-mark-outputs: regex or "all")
};
// Whether a route asks for int8 or fp8 anywhere: precision=int8|fp8 or
// node.<name>.precision=int8|fp8. Such routes need a calibration file.
bool routeQuantizes(const knobs::Route &route);
// The whole compile pipeline for a build route (canonical text): cleanup, BatchNorm folding,
// matrix-product canonicalisation, int8/fp8 Q/DQ from a calibration (kiln-quantize), every QDQ
// product lowered to QuantizedMatMul/QuantizedConv (kiln-lower-qdq), precision, the I/O type, layout, then kernel regions
// (fusion). `kiln eval` runs the same graph on the CPU evaluator.
// The compile pipeline up to precision (no layout or fusion, so every node keeps its result):
// what `kiln debug precision` compares with the fp32 graph node by node.
void buildPrecisionPipeline(mlir::OpPassManager &pm, const std::string &route, const target::GpuTarget &target = {},
                            const PipelineOptions &options = {});
// `target`: the GPU the engine is for; rewrites it cannot run are refused (attention fusion below
// sm_80, 8-bit products it has no instructions for).
void buildCompilePipeline(mlir::OpPassManager &pm, const std::string &route, const target::GpuTarget &target = {},
                          const PipelineOptions &options = {});

// Whether codegen computes `op` per element (has an elementwise kernel for its attributes): the
// ops fusion may put in a kernel region.
bool isFusableElementwise(mlir::Operation *op);

// A `kiln.fused epilogue` region's product: its first op that is neither a constant it holds nor
// one of its prologue's elementwise ops (null if the region holds nothing else).
mlir::Operation *epilogueProduct(FusedOp region);

}  // namespace kiln

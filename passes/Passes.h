// kiln's MLIR passes (declared once in Passes.td).
#pragma once

#include "compiler/ir/KilnDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

#include <string>

namespace kiln {

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

// The pipeline run after import: fold constants, then MLIR's canonicalizer (dead code,
// duplicate constants).
void buildImportCleanupPipeline(mlir::OpPassManager &pm);

// The graph as calibration observes it and int8 quantization rewrites it: cleanup, BatchNorm
// folding, canonical matrix products. Range keys name this graph's products.
void buildCalibrationPipeline(mlir::OpPassManager &pm, const std::string &route);
// That, then int8 Q/DQ from a calibration file (kiln-quantize-int8; products whose node name
// matches the keepFloat regex stay float) lowered to QuantizedMatMul (kiln-lower-qdq): the
// quantized graph that the CPU evaluator runs (`kiln eval --calib`) with the int8 kernel's
// arithmetic; engines do not use int8 kernels yet.
void buildInt8Pipeline(mlir::OpPassManager &pm, const std::string &calibPath, const std::string &keepFloat = "");
// The whole compile pipeline for a build route (canonical text): cleanup, BatchNorm folding,
// matrix-product canonicalisation, precision, layout, then kernel regions (fusion).
void buildCompilePipeline(mlir::OpPassManager &pm, const std::string &route);

// Whether codegen computes `op` per element (has an elementwise kernel for its attributes): the
// ops fusion may put in a kernel region.
bool isFusableElementwise(mlir::Operation *op);

}  // namespace kiln

// kiln's MLIR passes (declared once in Passes.td).
#pragma once

#include "compiler/ir/KilnDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

namespace kiln {

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

// The pipeline run after import: fold constants, then MLIR's canonicalizer (dead code,
// duplicate constants).
void buildImportCleanupPipeline(mlir::OpPassManager &pm);

}  // namespace kiln

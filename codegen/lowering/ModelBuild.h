// ONNX model → engine bytes for one build route: import, the compile pipeline (passes), code
// generation. The one path that `kiln compile`, `kiln tune` and the GPU checks build through.
#pragma once

#include <functional>

#include "codegen/lowering/EngineBuilder.h"
#include "compiler/importer/Importer.h"

#include "mlir/IR/MLIRContext.h"

namespace mlir {
class OpPassManager;
}

#include <string>
#include <vector>

namespace kiln::codegen {

struct ModelBuild {
  ImportResult import;               // the module after the pipeline ran
  std::vector<std::string> remarks;  // what passes report (e.g. nodes kept in fp32)
  std::string error;                 // non-empty on failure (import, pipeline or codegen)
  BuildResult engine;                // engine bytes and stats, when error is empty
  double seconds = 0;
  std::vector<std::pair<std::string, double>> phases;  // import, passes (and buildModel: codegen, kernels)
  bool ok() const { return error.empty(); }
};

// Imports `path` (with shape overrides), runs buildCompilePipeline for `options.route`, and
// builds the engine. Unsupported ops are an error listing every one of them.
ModelBuild buildModel(const std::string &path, const ImportOptions &importOptions, const BuildOptions &options,
                      mlir::MLIRContext &ctx);

// Import and pipeline only (for `kiln plan`, dry runs and pass tests): no code generation.
ModelBuild lowerModel(const std::string &path, const ImportOptions &importOptions, const knobs::Route &route,
                      mlir::MLIRContext &ctx, const target::GpuTarget &target = {},
                      const PipelineOptions &options = {});

// Import and a pipeline of the caller's (calibration, int8): no code generation.
// `options` (buildModel's): its onPhase and passTiming apply.
ModelBuild lowerModelWith(const std::string &path, const ImportOptions &importOptions, mlir::MLIRContext &ctx,
                          const std::function<void(mlir::OpPassManager &)> &pipeline, const BuildOptions &options = {});
// The nodes of an imported model (ONNX name and op type, in program order), for per-node knobs.
std::vector<knobs::NodeRef> modelNodes(mlir::ModuleOp module);

}  // namespace kiln::codegen

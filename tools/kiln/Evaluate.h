// Running an imported (and lowered) model on the CPU reference evaluator with named host
// tensors: `kiln check --onnx`, `kiln eval` and `kiln calibrate`.
#pragma once

#include "codegen/lowering/ModelBuild.h"
#include "compiler/eval/Evaluator.h"
#include "tools/kiln/Commands.h"
#include "tuner/EngineRunner.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <string>
#include <vector>

namespace kiln::cli {

// Binds `inputs` to f's arguments by their ONNX names (each must be present with the declared
// dtype and shape), evaluates, and names the outputs. `observe` sees every op as it runs, `onResults`
// its results.
bool evaluateModel(mlir::func::FuncOp f, const std::vector<tuner::HostTensor> &inputs,
                   std::vector<tuner::HostTensor> &outputs, std::string &error, const OpObserver &observe = nullptr,
                   const ResultObserver &onResults = nullptr);

// The names, dtypes and shapes of f's arguments (no data).
std::vector<tuner::HostTensor> modelInputs(mlir::func::FuncOp f);

// Imports the model of `opts` (with its --shapes) and runs `pipeline` on it: the function the
// evaluator is to run, or null after printing "kiln: error: ..." (the importer's warnings and the
// passes' remarks are printed as warnings and notes unless `notes` is false).
mlir::func::FuncOp lowerForEvaluation(const ModelOptions &opts, mlir::MLIRContext &ctx,
                                      const std::function<void(mlir::OpPassManager &)> &pipeline,
                                      codegen::ModelBuild &lowered, bool notes = true);

}  // namespace kiln::cli

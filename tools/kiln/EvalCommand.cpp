// `kiln eval MODEL --inputs x.npz [--outputs y.npz] [--route R] [--precision P] [--calib F [--keep-float RE]]`:
// the model's outputs by the CPU reference evaluator, on the graph as the compile pipeline for R
// (and int8 post-training quantization with F) leaves it — a reference for engines, with the
// int8 kernels' arithmetic.
#include "codegen/lowering/ModelBuild.h"
#include "compiler/support/Files.h"
#include "compiler/support/Text.h"
#include "passes/Passes.h"
#include "tools/kiln/Commands.h"
#include "tools/kiln/Evaluate.h"
#include "tools/kiln/ModelLoading.h"
#include "tuner/TensorFiles.h"

#include "mlir/Pass/PassManager.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <iostream>

namespace kiln::cli {

Runner addEvalCommand(CLI::App &app) {
  auto *cmd =
      app.add_subcommand("eval", "Run a model on the CPU reference evaluator (after a route's passes or int8 QDQ)");
  auto opts = std::make_shared<ModelOptions>();
  auto inputs = std::make_shared<std::string>(), outputs = std::make_shared<std::string>();
  auto routeText = std::make_shared<std::string>(), calib = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false), importOnly = std::make_shared<bool>(false);
  auto keepFloat = std::make_shared<std::string>(), precision = std::make_shared<std::string>();
  opts->add(*cmd);
  cmd->add_option("--inputs", *inputs, "Inputs (.npz, arrays named after the model's inputs)")->required();
  cmd->add_option("--outputs", *outputs, "Write the outputs here (.npz)");
  cmd->add_option("--route", *routeText, "Evaluate the graph the compile pipeline makes for this route");
  cmd->add_option("--precision", *precision, "Shorthand for the route's precision knob (as for compile)");
  cmd->add_option("--calib", *calib,
                  "Calibration file for the route's int8/fp8 products (kiln calibrate), as for compile");
  cmd->add_option("--keep-float", *keepFloat, "With --calib: products whose node name matches this regex stay float");
  auto checkInputs = std::make_shared<std::string>();
  cmd->add_option("--check-inputs", *checkInputs, "fp16 routes: the range check's inputs, as for compile");
  cmd->add_flag("--json", *json, "Print a JSON summary");
  cmd->add_flag("--import-only", *importOnly,
                "Evaluate the imported graph (constants folded) without the compile pipeline: every op with its own "
                "semantics (e.g. com.microsoft::DynamicQuantizeLSTM as onnxruntime computes it, which the pipeline "
                "turns into a float LSTM)")
      ->excludes("--route")
      ->excludes("--precision")
      ->excludes("--calib");
  return [=]() -> int {
    if (!*cmd) return -1;
    knobs::Route route;
    std::string error;
    if (!parseRoute(*routeText, *precision, route, error) ||
        !checkQuantFlags(route, *calib, *keepFloat, opts->model, error)) {
      std::cerr << "kiln: error: " << error << "\n";
      return 2;
    }
    const std::vector<std::string> files = {opts->model, *inputs, *calib};
    if (!outputs->empty())
      if (auto why = support::checkOutputPath(*outputs, files); !why.empty()) {
        std::cerr << "kiln: error: --outputs: " << why << "\n";
        return 2;
      }
    mlir::MLIRContext ctx;
    codegen::ModelBuild lowered;
    mlir::func::FuncOp f = lowerForEvaluation(
        *opts, ctx,
        [&](mlir::OpPassManager &pm) {
          if (*importOnly)
            buildImportCleanupPipeline(pm);
          else
            buildCompilePipeline(pm, route.canonical(), {}, {*calib, *keepFloat, *checkInputs});
        },
        lowered);
    if (!f) return 2;
    std::vector<tuner::HostTensor> in, out;
    if (!tuner::readTensors(*inputs, in, error)) {  // (the message names the file)
      std::cerr << "kiln: error: " << error << "\n";
      return 2;
    }
    if (!evaluateModel(f, in, out, error)) {
      std::cerr << "kiln: error: " << *inputs << ": " << error << "\n";
      return 2;
    }
    if (!outputs->empty() && !tuner::writeTensors(*outputs, out, error, files)) {
      std::cerr << "kiln: error: --outputs: " << error << "\n";
      return 2;
    }
    nlohmann::json j = nlohmann::json::array();
    for (const auto &t : out) {
      std::vector<double> head;
      for (int64_t i = 0; i < std::min<int64_t>(4, tuner::numElements(t.shape)); ++i)
        head.push_back(tuner::elementAsDouble(t, i));
      if (*json) {
        j.push_back({{"name", t.name}, {"dtype", tuner::dtypeName(t.dtype)}, {"shape", t.shape}, {"first", head}});
      } else {
        std::printf("output %-24s %-8s %s:", support::printableLine(t.name).c_str(), tuner::dtypeName(t.dtype).c_str(),
                    ops::shapeString(t.shape).c_str());
        for (double v : head) std::printf(" %g", v);
        std::printf(" ...\n");
      }
    }
    if (*json) std::cout << jsonText(nlohmann::json{{"outputs", j}}) << "\n";
    return 0;
  };
}

}  // namespace kiln::cli

// `kiln check model.kiln --onnx model.onnx | --reference ref.npz [--inputs in.npz]
// [--accuracy 'cos>=0.999,max_abs<=0.05'] [--json]`: the accuracy of an engine, like Polygraphy's
// comparisons. The reference is the model evaluated by kiln's CPU reference evaluator (double
// precision; slow on large models) or given outputs. Metrics per output: max_abs, max_rel, l0
// (fraction outside atol + rtol·|ref|), rel_l2, cos, top1 (classifier outputs). Exit 0 when
// every constraint holds, 1 when one fails, 2 on an error.
#include "compiler/eval/Evaluator.h"
#include "compiler/ir/TensorConversion.h"
#include "compiler/support/Text.h"
#include "tools/kiln/Commands.h"
#include "tools/kiln/Evaluate.h"
#include "tools/kiln/ModelLoading.h"
#include "tuner/Accuracy.h"
#include "tuner/TensorFiles.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <iostream>

namespace kiln::cli {

std::unique_ptr<tuner::EngineRunner> openEngine(const std::string &path, std::string &error, int device = 0,
                                                int streams = 1,
                                                const std::map<std::string, std::vector<int64_t>> &shapes = {});
bool loadInputs(tuner::EngineRunner &r, const std::string &path, uint32_t seed, std::vector<tuner::HostTensor> &inputs,
                std::string &error);

namespace {

// The model's outputs on `inputs` by the CPU evaluator.
bool evaluateReference(const ModelOptions &model, const std::vector<tuner::HostTensor> &inputs,
                       std::vector<tuner::HostTensor> &outputs, std::string &error) {
  mlir::MLIRContext ctx;
  LoadedModel m = loadModel(model, ctx);
  if (!m.ok()) {
    error = "cannot load the reference model";
    return false;
  }
  auto f = (*m.import.module).lookupSymbol<mlir::func::FuncOp>("main");
  if (!evaluateModel(f, inputs, outputs, error)) {
    error = "reference: " + error;
    return false;
  }
  return true;
}

}  // namespace

Runner addCheckCommand(CLI::App &app) {
  auto *cmd = app.add_subcommand("check", "Compare an engine's outputs with a reference");
  auto path = std::make_shared<std::string>();
  auto model = std::make_shared<ModelOptions>();
  auto ref = std::make_shared<std::string>(), in = std::make_shared<std::string>();
  auto accuracy = std::make_shared<std::string>();
  auto atol = std::make_shared<double>(1e-3), rtol = std::make_shared<double>(1e-3);
  auto seed = std::make_shared<uint32_t>(1);
  auto json = std::make_shared<bool>(false);
  cmd->add_option("engine", *path, "Engine file (.kiln)")->required();
  auto *onnx =
      cmd->add_option("--onnx", model->model, "Reference: this model on kiln's CPU evaluator (double precision)");
  auto *refOpt =
      cmd->add_option("--reference", *ref, "Reference outputs (.npz by output name; may hold the inputs too)");
  onnx->excludes(refOpt);
  cmd->add_option("--shapes", model->shapes, "Input shapes of the --onnx model, as for compile");
  model->addExternalFlag(*cmd);
  cmd->add_option("--inputs", *in, "Inputs (.npz by input name; default: the reference file's, else random)");
  cmd->add_option(
      "--accuracy", *accuracy,
      "Constraints, e.g. 'cos>=0.9995,max_abs<=0.05' or 'logits:top1>=1' (default by the engine's precision: "
      "fp32 rel_l2<=1e-4; fp16/bf16/TF32 rel_l2<=1e-2,cos>=0.999)");
  cmd->add_option("--atol", *atol, "Absolute tolerance of the l0 metric")->capture_default_str();
  cmd->add_option("--rtol", *rtol, "Relative tolerance of the l0 metric")->capture_default_str();
  cmd->add_option("--seed", *seed, "Seed of the random inputs")->capture_default_str();
  cmd->add_flag("--json", *json, "Print a JSON document");
  return [=]() -> int {
    if (!*cmd) return -1;
    std::string err;
    if (model->model.empty() && ref->empty()) {
      std::cerr << "kiln: error: check needs --onnx MODEL or --reference FILE\n";
      return 2;
    }
    std::vector<tuner::Constraint> constraints;
    if (!accuracy->empty() && !tuner::parseConstraints(*accuracy, constraints, err)) {
      std::cerr << "kiln: error: --accuracy: " << err << "\n";
      return 2;
    }
    // An engine with dynamic shapes runs at the --onnx model's input shapes (given whole).
    ImportOptions parsed;
    if (auto e = parseShapeOverrides(model->shapes, parsed); !e.empty()) {
      std::cerr << "kiln: error: --shapes: " << e << "\n";
      return 2;
    }
    auto r = openEngine(*path, err, 0, 1, parsed.shapes);
    if (!r) {
      std::cerr << "kiln: error: " << err << "\n";
      return 2;
    }
    std::vector<tuner::HostTensor> refTensors, inputs, outputs, want;
    if (!ref->empty() && !tuner::readTensors(*ref, refTensors, err)) {
      std::cerr << "kiln: error: " << err << "\n";
      return 2;
    }
    // Inputs: --inputs, else the reference file's arrays named like inputs, else random.
    std::string inputsFrom = *in;
    bool refHasInputs = !r->inputs().empty();
    for (const auto &t : r->inputs())
      refHasInputs =
          refHasInputs && std::any_of(refTensors.begin(), refTensors.end(), [&](auto &x) { return x.name == t.name; });
    if (inputsFrom.empty() && refHasInputs) inputsFrom = *ref;
    if (!ref->empty() && inputsFrom.empty() && !r->inputs().empty()) {
      std::cerr << "kiln: error: " << *ref
                << " holds no inputs: pass the inputs the reference was computed on with --inputs\n";
      return 2;
    }
    if (!loadInputs(*r, inputsFrom, *seed, inputs, err) || !r->run(outputs, err)) {
      std::cerr << "kiln: error: " << err << "\n";
      return 2;
    }
    if (!model->model.empty()) {
      if (!evaluateReference(*model, inputs, want, err)) {
        std::cerr << "kiln: error: " << err << "\n";
        return 2;
      }
    } else {
      want = refTensors;
    }
    std::string route = r->route();
    if (constraints.empty()) constraints = tuner::defaultConstraints(route);
    std::vector<std::pair<std::string, tuner::Metrics>> metrics;
    for (const auto &o : outputs) {
      auto it = std::find_if(want.begin(), want.end(), [&](auto &x) { return x.name == o.name; });
      if (it == want.end() || tuner::numElements(it->shape) != tuner::numElements(o.shape)) {
        std::cerr << "kiln: error: the reference has "
                  << (it == want.end() ? "no output" : "a different shape for output") << " '" << o.name << "'\n";
        return 2;
      }
      metrics.push_back({o.name, tuner::compare(o, *it, *atol, *rtol)});
    }
    std::vector<std::string> bad = tuner::violations(constraints, metrics);
    if (*json) {
      nlohmann::json j = {{"engine", *path},       {"device", r->deviceName()}, {"route", route},
                          {"passed", bad.empty()}, {"violations", bad},         {"outputs", nlohmann::json::object()}};
      for (auto &[name, m] : metrics)
        j["outputs"][name] = {
            {"max_abs", m.maxAbs}, {"max_rel", m.maxRel},          {"l0", m.l0}, {"rel_l2", m.relL2}, {"cos", m.cos},
            {"top1", m.top1},      {"nan_mismatch", m.nanMismatch}};
      std::cout << jsonText(j) << "\n";
    } else {
      std::printf("engine %s on %s, route '%s', reference: %s\n", support::printableLine(*path).c_str(),
                  support::printableLine(r->deviceName()).c_str(), support::printableLine(route).c_str(),
                  support::printableLine(model->model.empty() ? *ref : model->model + " (CPU evaluator)").c_str());
      std::printf("%-24s %11s %11s %9s %11s %10s %6s\n", "output", "max_abs", "max_rel", "l0", "rel_l2", "cos", "top1");
      for (auto &[name, m] : metrics)
        std::printf("%-24s %11.3e %11.3e %9.5f %11.3e %10.7f %6s\n", support::printableLine(name).c_str(), m.maxAbs,
                    m.maxRel, m.l0, m.relL2, m.cos, m.top1 < 0 ? "-" : std::to_string(m.top1).substr(0, 5).c_str());
      for (auto &b : bad) std::printf("FAIL %s\n", support::printableLine(b).c_str());
      std::printf("%s\n", bad.empty() ? "PASSED" : "FAILED");
    }
    return bad.empty() ? 0 : 1;
  };
}

}  // namespace kiln::cli

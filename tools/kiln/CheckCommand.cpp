// `kiln check model.kiln --onnx model.onnx [--ort] [--mark all|REGEX] | --reference ref.npz
// [--inputs in.npz] [--accuracy 'cos>=0.999,max_abs<=0.05'] [--json]`: the accuracy of an engine,
// like Polygraphy's comparisons. The reference is the model evaluated by kiln's CPU reference
// evaluator (double precision; slow on large models), by onnxruntime (--ort), or given outputs.
// Metrics per output: max_abs, max_rel, l0 (fraction outside atol + rtol·|ref|), rel_l2, cos, top1
// (classifier outputs). --mark rebuilds the engine (same route and arch) with the marked nodes'
// results as extra outputs and names the first node, in program order, whose error exceeds the
// bound. Exit 0 when every constraint holds on the engine's outputs, 1 when one fails, 2 on an error.
#include "codegen/lowering/ModelBuild.h"
#include "codegen/nvrtc/CompilePool.h"
#include "compiler/eval/Evaluator.h"
#include "compiler/ir/TensorConversion.h"
#include "compiler/support/Text.h"
#include "passes/Passes.h"
#include "tools/kiln/Commands.h"
#include "tools/kiln/Evaluate.h"
#include "tools/kiln/ModelLoading.h"
#include "tools/kiln/OrtReference.h"
#include "tuner/Accuracy.h"
#include "tuner/TensorFiles.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassManager.h"

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

// The model's outputs on `inputs` by the CPU evaluator. `mark`: the nodes whose results are
// outputs too, marked after the same passes as in the debug engine (`route`, `arch`: the engine's).
bool evaluateReference(const ModelOptions &model, const std::vector<tuner::HostTensor> &inputs, const std::string &mark,
                       const std::string &route, const std::string &arch, std::vector<tuner::HostTensor> &outputs,
                       std::string &error) {
  mlir::MLIRContext ctx;
  codegen::ModelBuild lowered;
  target::GpuTarget target;
  if (!mark.empty() && !(error = parseTarget(arch, target)).empty()) return false;
  mlir::func::FuncOp f = lowerForEvaluation(
      model, ctx,
      [&](mlir::OpPassManager &pm) {
        if (mark.empty()) return buildImportCleanupPipeline(pm);
        buildCalibrationPipeline(pm, route, target);
        pm.nest<mlir::func::FuncOp>().addPass(createMarkOutputs({mark}));
      },
      lowered);
  if (!f) {
    error = "cannot load the reference model";
    return false;
  }
  // An engine built with --io-dtype fp16|bf16 took its inputs in half precision; the model takes
  // them in its declared float type (exactly: half values are float32 values).
  if (!evaluateModel(f, tuner::convertFloatsLike(inputs, modelInputs(f)), outputs, error)) {
    error = "reference: " + error;
    return false;
  }
  return true;
}

// The engine rebuilt with `mark`'s nodes as extra outputs, run on `inputs`: its outputs, and the
// names of the marked ones (program order).
bool runMarked(const ModelOptions &model, const tuner::EngineRunner &engine, const std::string &mark,
               const std::string &calib, bool quiet, const std::vector<tuner::HostTensor> &inputs,
               std::vector<tuner::HostTensor> &outputs, std::vector<std::string> &marked, std::string &error) {
  codegen::BuildOptions bo;
  if (auto e = parseTarget(engine.arch(), bo.target); !e.empty()) {
    error = "--mark: the engine's architecture: " + e;
    return false;
  }
  if (!knobs::Route::parse(engine.route(), &bo.route, &error)) {
    error = "--mark: the engine's route: " + error;
    return false;
  }
  if (routeQuantizes(bo.route) && calib.empty()) {
    error = "--mark: the engine's route has int8/fp8 products: pass the calibration file it was built with (--calib)";
    return false;
  }
  bo.pipeline.calib = calib;
  bo.pipeline.markOutputs = mark;
  if (!quiet) bo.progress = codegen::terminalProgress(stderr, "building the marked engine");
  ImportOptions io;
  if (auto e = model.importOptions(io); !e.empty()) {
    error = e;
    return false;
  }
  mlir::MLIRContext ctx;
  codegen::ModelBuild b = codegen::buildModel(model.model, io, bo, ctx);
  if (!b.ok()) {
    error = "--mark: building the marked engine: " + b.error;
    return false;
  }
  auto debug = tuner::EngineRunner::open(b.engine.engine, error);
  if (!debug) return false;
  // (built with the declared I/O types: the original engine's may be --io-dtype fp16)
  if (!debug->setInputs(tuner::convertFloatsLike(inputs, debug->inputs()), error) || !debug->run(outputs, error))
    return false;
  for (const tuner::HostTensor &o : outputs)
    if (std::none_of(engine.outputs().begin(), engine.outputs().end(), [&](auto &x) { return x.name == o.name; }))
      marked.push_back(o.name);
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
  auto ort = std::make_shared<bool>(false);
  auto mark = std::make_shared<std::string>(), calib = std::make_shared<std::string>();
  cmd->add_flag("--ort", *ort,
                "With --onnx: the reference is onnxruntime's CPU provider (in Python: $KILN_PYTHON, kiln's venv or "
                "python3, with onnxruntime installed) instead of kiln's CPU evaluator");
  cmd->add_option("--mark", *mark,
                  "With --onnx: rebuild the engine (its route and arch) with these nodes' results as extra outputs "
                  "(all, or a regular expression of node names), compare each with the reference and name the first "
                  "node whose error exceeds the bound (Polygraphy's mark all)");
  cmd->add_option("--calib", *calib, "With --mark on an int8/fp8 engine: the calibration file it was built with");
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
    if (model->model.empty() && (*ort || !mark->empty())) {
      std::cerr << "kiln: error: " << (*ort ? "--ort" : "--mark") << " needs --onnx MODEL\n";
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
    std::string route = r->route();
    std::vector<tuner::HostTensor> markedOutputs;
    std::vector<std::string> marked;
    if (!mark->empty() &&
        !runMarked(*model, *r, *mark, *calib, *json || verbosity() < 0, inputs, markedOutputs, marked, err)) {
      std::cerr << "kiln: error: " << err << "\n";
      return 2;
    }
    bool referenced = true;
    if (*ort)
      referenced = ortOutputs(model->model, inputs, marked, want, err);
    else if (!model->model.empty())
      referenced = evaluateReference(*model, inputs, *mark, route, r->arch(), want, err);
    else
      want = refTensors;
    if (!referenced) {
      std::cerr << "kiln: error: " << err << "\n";
      return 2;
    }
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
    // Marked tensors in program order; the first past the bound is where the engine drifts.
    struct Marked {
      std::string node;
      tuner::Metrics m;
      bool within;
    };
    std::vector<Marked> markedMetrics;
    std::string firstDrift;
    for (const std::string &name : marked) {
      auto o = std::find_if(markedOutputs.begin(), markedOutputs.end(), [&](auto &x) { return x.name == name; });
      auto it = std::find_if(want.begin(), want.end(), [&](auto &x) { return x.name == name; });
      if (it == want.end() || tuner::numElements(it->shape) != tuner::numElements(o->shape)) continue;
      tuner::Metrics m = tuner::compare(*o, *it, *atol, *rtol);
      bool within = tuner::violations(constraints, {{name, m}}).empty();
      if (!within && firstDrift.empty()) firstDrift = name;
      markedMetrics.push_back({name, m, within});
    }
    auto metricsJson = [](const tuner::Metrics &m) {
      return nlohmann::json{
          {"max_abs", m.maxAbs}, {"max_rel", m.maxRel},          {"l0", m.l0}, {"rel_l2", m.relL2}, {"cos", m.cos},
          {"top1", m.top1},      {"nan_mismatch", m.nanMismatch}};
    };
    auto printRow = [](const std::string &name, const tuner::Metrics &m, const char *suffix) {
      std::printf("%-24s %11.3e %11.3e %9.5f %11.3e %10.7f %6s%s\n", support::printableLine(name).c_str(), m.maxAbs,
                  m.maxRel, m.l0, m.relL2, m.cos, m.top1 < 0 ? "-" : std::to_string(m.top1).substr(0, 5).c_str(),
                  suffix);
    };
    const std::string refName = model->model.empty() ? *ref
                                : *ort               ? model->model + " (onnxruntime)"
                                                     : model->model + " (CPU evaluator)";
    if (*json) {
      nlohmann::json j = {{"engine", *path},       {"device", r->deviceName()}, {"route", route},
                          {"passed", bad.empty()}, {"violations", bad},         {"outputs", nlohmann::json::object()}};
      for (auto &[name, m] : metrics) j["outputs"][name] = metricsJson(m);
      if (!mark->empty()) {
        j["marked"] = nlohmann::json::array();
        for (const Marked &x : markedMetrics) {
          nlohmann::json e = metricsJson(x.m);
          e["node"] = x.node;
          e["within"] = x.within;
          j["marked"].push_back(e);
        }
        j["first_drift"] = firstDrift.empty() ? nlohmann::json() : nlohmann::json(firstDrift);
      }
      std::cout << jsonText(j) << "\n";
    } else {
      std::printf("engine %s on %s, route '%s', reference: %s\n", support::printableLine(*path).c_str(),
                  support::printableLine(r->deviceName()).c_str(), support::printableLine(route).c_str(),
                  support::printableLine(refName).c_str());
      std::printf("%-24s %11s %11s %9s %11s %10s %6s\n", "output", "max_abs", "max_rel", "l0", "rel_l2", "cos", "top1");
      for (auto &[name, m] : metrics) printRow(name, m, "");
      if (!mark->empty()) {
        std::printf("\n%zu marked tensors (the engine rebuilt with them as outputs), in program order:\n",
                    markedMetrics.size());
        for (const Marked &x : markedMetrics) printRow(x.node, x.m, x.within ? "" : "  past the bound");
        if (firstDrift.empty())
          std::printf("every marked tensor is within the bound\n");
        else
          std::printf("first node past the bound: %s\n", support::printableLine(firstDrift).c_str());
      }
      for (auto &b : bad) std::printf("FAIL %s\n", support::printableLine(b).c_str());
      std::printf("%s\n", bad.empty() ? "PASSED" : "FAILED");
    }
    return bad.empty() ? 0 : 1;
  };
}

}  // namespace kiln::cli

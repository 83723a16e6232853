// `kiln plan model.onnx`: what would be built. Exits 1 when any op is unsupported or the GPU
// lowering refuses a node for the target (a CI gate: plan exiting 0 means compile works).
#include "codegen/lowering/ModelBuild.h"
#include "compiler/analysis/Plan.h"
#include "compiler/support/Text.h"
#include "tools/kiln/Commands.h"
#include "tools/kiln/ModelLoading.h"
#include "tools/kiln/Profiles.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <iostream>

namespace kiln::cli {

static nlohmann::json tensorsJson(const std::vector<TensorInfoRow> &rows) {
  nlohmann::json a = nlohmann::json::array();
  for (auto &r : rows) {
    nlohmann::json shape = r.known ? nlohmann::json(r.shape) : nlohmann::json(nullptr);
    a.push_back({{"name", r.name}, {"dtype", r.dtype}, {"shape", shape}, {"bytes", r.bytes}});
  }
  return a;
}

static std::string shapeText(const TensorInfoRow &row) {
  if (!row.known) return "unknown";
  const std::vector<int64_t> &s = row.shape;
  std::string r;
  for (size_t k = 0; k < s.size(); ++k) r += (k ? "x" : "") + std::to_string(s[k]);
  return r.empty() ? "scalar" : r;
}

// What the GPU lowering makes of the model for the target and route: the compile pipeline and the
// lowering in launch-plan mode (every launch placed, no kernel compiled), so it needs no NVRTC.
struct GpuCheck {
  bool ran = false;  // (not when the import already found unsupported nodes)
  std::string arch, route;
  size_t launches = 0;
  std::vector<std::pair<std::string, std::string>> refused;  // node, reason
  std::string error;                                         // a failure that names no node
};

static GpuCheck checkGpu(const ModelOptions &opts, const std::string &arch, const knobs::Route &route) {
  GpuCheck g;
  g.ran = true;
  g.arch = arch;
  g.route = route.canonical();
  std::string err;
  auto t = target::GpuTarget::parse(arch, err);
  if (!t) {
    g.error = err;
    return g;
  }
  codegen::BuildOptions bo;
  bo.target = *t;
  bo.route = route;
  bo.launchPlanOnly = true;
  ImportOptions io;
  if (auto e = opts.importOptions(io); !e.empty()) {
    g.error = e;
    return g;
  }
  mlir::MLIRContext ctx;
  codegen::ModelBuild m = codegen::buildModel(opts.model, io, bo, ctx);
  if (m.ok()) {
    g.launches = std::count(m.engine.launchPlan.begin(), m.engine.launchPlan.end(), '\n') - 1;
    return g;
  }
  // "cannot build:" then one "  node 'NAME' (Op): reason" line per node the lowering refuses.
  size_t at = 0;
  const std::string &e = m.error;
  bool perNode = e.rfind("cannot build:", 0) == 0;
  while (perNode && at < e.size()) {
    size_t end = e.find('\n', at);
    std::string line = e.substr(at, end == std::string::npos ? std::string::npos : end - at);
    at = end == std::string::npos ? e.size() : end + 1;
    if (line.rfind("  ", 0) != 0) continue;
    line = line.substr(2);
    size_t colon = line.find("): ");
    if (colon == std::string::npos)
      g.refused.push_back({line, ""});
    else
      g.refused.push_back({line.substr(0, colon + 1), line.substr(colon + 3)});
  }
  if (g.refused.empty()) g.error = e;
  return g;
}

// Names come from the model file: shown with control characters escaped (JSON keeps them exact).
static void printPlan(const std::string &model, const ModelPlan &p) {
  auto text = [](const std::string &s) { return support::printableLine(s); };
  std::printf("model: %s\n", text(model).c_str());
  for (auto &r : p.inputs)
    std::printf("  input  %-24s %-8s %s\n", text(r.name).c_str(), r.dtype.c_str(), shapeText(r).c_str());
  for (auto &r : p.outputs)
    std::printf("  output %-24s %-8s %s\n", text(r.name).c_str(), r.dtype.c_str(), shapeText(r).c_str());
  std::printf("\n%-28s %7s %14s %7s\n", "op", "count", "FLOPs", "share");
  for (auto &[name, s] : p.ops)
    std::printf("%-28s %7lld %14s %6.1f%%\n", text(name).c_str(), static_cast<long long>(s.count),
                humanCount(static_cast<double>(s.flops)).c_str(), p.totalFlops ? 100.0 * s.flops / p.totalFlops : 0.0);
  std::printf("%-28s %7lld %14s\n\n", "total", static_cast<long long>(p.totalOps),
              humanCount(static_cast<double>(p.totalFlops)).c_str());
  std::printf("weights:            %lld tensors, %s\n", static_cast<long long>(p.weightCount),
              humanBytes(p.weightBytes).c_str());
  std::printf("activations:        %s in all\n", humanBytes(p.activationBytes).c_str());
  std::printf("peak activations:   %s (program order, inputs and outputs included)\n",
              humanBytes(p.peakActivationBytes).c_str());
  std::printf("activation arena:   %s (planned: intermediates, liveness-based reuse)\n",
              humanBytes(p.arenaBytes).c_str());
  if (!p.unsupported.empty()) {
    std::printf("\nunsupported: %zu node(s)\n", p.unsupported.size());
    for (auto &u : p.unsupported)
      std::printf("  %-24s %s%s%s: %s\n", text(u.name).c_str(), text(u.domain).c_str(),
                  u.domain.empty() ? "" : "::", text(u.opType).c_str(), text(u.reason).c_str());
    if (!p.complete) std::printf("  (sizes and FLOPs downstream of these nodes are unknown)\n");
  }
}

Runner addPlanCommand(CLI::App &app) {
  auto *cmd = app.add_subcommand("plan", "What would be built: ops, FLOPs, weights, activations, unsupported ops");
  auto opts = std::make_shared<ModelOptions>();
  auto json = std::make_shared<bool>(false);
  auto arch = std::make_shared<std::string>("sm_90");
  auto routeText = std::make_shared<std::string>(), precision = std::make_shared<std::string>();
  opts->add(*cmd);
  cmd->add_flag("--json", *json, "Print a JSON document instead of tables");
  cmd->add_option("--arch", *arch, "Target GPU architecture whose kernels the GPU check lowers for (no NVRTC needed)")
      ->capture_default_str();
  cmd->add_option("--route", *routeText, "Build route the GPU check lowers (as compile's)");
  cmd->add_option("--precision", *precision, "Shorthand for the route's precision knob (as compile's)");
  auto bounds = std::make_shared<ProfileOptions>();
  bounds->add(*cmd, "the shapes the main plan is made at (min and max are planned too)");
  return [cmd, opts, json, arch, routeText, precision, bounds]() -> int {
    if (!*cmd) return -1;
    if (std::string e = bounds->problem(opts->shapes); !e.empty()) {
      std::cerr << "kiln: error: " << e << "\n";
      return 2;
    }
    const bool profile = bounds->any();
    if (profile) opts->shapes = bounds->optShapes[0];
    // FLOPs and memory at each profile's min, opt and max shapes (the first opt's plan is the
    // main one); with several profiles the rows are named "min/1", ...
    std::vector<std::pair<std::string, ModelPlan>> atBounds;
    for (size_t p = 0; profile && p < bounds->count(); ++p)
      for (auto [bound, shapes] : {std::pair{"min", &bounds->minShapes}, std::pair{"opt", &bounds->optShapes},
                                   std::pair{"max", &bounds->maxShapes}}) {
        ModelOptions at = *opts;
        at.shapes = (*shapes)[p];
        mlir::MLIRContext bctx;
        LoadedModel bm = loadModel(at, bctx);
        if (!bm.ok()) return 2;
        atBounds.push_back({std::string(bound) + (bounds->count() > 1 ? "/" + std::to_string(p) : ""),
                            planFunction((*bm.import.module).lookupSymbol<mlir::func::FuncOp>("main"))});
      }
    knobs::Route route;
    std::string err;
    if (!parseRoute(*routeText, *precision, route, err)) {
      std::cerr << "kiln: error: " << err << "\n";
      return 2;
    }
    mlir::MLIRContext ctx;
    LoadedModel m = loadModel(*opts, ctx);
    if (!m.ok()) return 2;
    auto f = (*m.import.module).lookupSymbol<mlir::func::FuncOp>("main");
    ModelPlan p = planFunction(f);
    GpuCheck gpu;
    if (p.unsupported.empty()) gpu = checkGpu(*opts, *arch, route);
    bool gpuOk = !gpu.ran || (gpu.refused.empty() && gpu.error.empty());
    if (*json) {
      nlohmann::json j;
      j["model"] = opts->model;
      j["inputs"] = tensorsJson(p.inputs);
      j["outputs"] = tensorsJson(p.outputs);
      nlohmann::json ops = nlohmann::json::object();
      for (auto &[name, s] : p.ops) ops[name] = {{"count", s.count}, {"flops", s.flops}};
      j["ops"] = ops;
      j["total_ops"] = p.totalOps;
      j["total_flops"] = p.totalFlops;
      j["weights"] = {{"count", p.weightCount}, {"bytes", p.weightBytes}};
      j["activation_bytes"] = p.activationBytes;
      j["peak_activation_bytes"] = p.peakActivationBytes;
      j["arena_bytes"] = p.arenaBytes;
      nlohmann::json un = nlohmann::json::array();
      for (auto &u : p.unsupported)
        un.push_back({{"name", u.name}, {"op_type", u.opType}, {"domain", u.domain}, {"reason", u.reason}});
      j["unsupported"] = un;
      j["complete"] = p.complete;
      for (auto &[bound, bp] : atBounds)
        j["profile"][bound] = {{"inputs", tensorsJson(bp.inputs)},
                               {"total_flops", bp.totalFlops},
                               {"activation_bytes", bp.activationBytes},
                               {"peak_activation_bytes", bp.peakActivationBytes},
                               {"arena_bytes", bp.arenaBytes}};
      if (gpu.ran) {
        nlohmann::json refused = nlohmann::json::array();
        for (auto &[node, reason] : gpu.refused) refused.push_back({{"node", node}, {"reason", reason}});
        j["gpu"] = {{"arch", gpu.arch},         {"route", gpu.route}, {"buildable", gpuOk},
                    {"launches", gpu.launches}, {"refused", refused}, {"error", gpu.error}};
      }
      std::cout << jsonText(j) << "\n";
    } else {
      printPlan(opts->model, p);
      if (!atBounds.empty()) std::printf("\n%-8s %14s %16s %16s\n", "profile", "FLOPs", "peak activations", "arena");
      for (auto &[bound, bp] : atBounds)
        std::printf("%-8s %14s %16s %16s\n", bound.c_str(), humanCount(double(bp.totalFlops)).c_str(),
                    humanBytes(bp.peakActivationBytes).c_str(), humanBytes(bp.arenaBytes).c_str());
      if (gpu.ran && gpuOk)
        std::printf("\nGPU %s, route '%s': every node builds (%zu launches)\n", gpu.arch.c_str(), gpu.route.c_str(),
                    gpu.launches);
      if (gpu.ran && !gpuOk) {
        std::printf("\nGPU %s, route '%s': cannot build\n", gpu.arch.c_str(), gpu.route.c_str());
        for (auto &[node, reason] : gpu.refused) std::printf("  %s: %s\n", node.c_str(), reason.c_str());
        if (!gpu.error.empty()) std::printf("  %s\n", gpu.error.c_str());
      }
    }
    return p.unsupported.empty() && gpuOk ? 0 : 1;
  };
}

}  // namespace kiln::cli

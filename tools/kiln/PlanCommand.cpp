// `kiln plan model.onnx`: what would be built. Exits 1 when any op is unsupported (a CI gate).
#include "compiler/analysis/Plan.h"
#include "compiler/support/Text.h"
#include "tools/kiln/Commands.h"
#include "tools/kiln/ModelLoading.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <nlohmann/json.hpp>

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

// Names come from the model file: shown with control characters escaped (JSON keeps them exact).
static void printPlan(const std::string &model, const ModelPlan &p) {
  auto text = [](const std::string &s) { return support::printableLine(s); };
  std::printf("model: %s\n", text(model).c_str());
  for (auto &r : p.inputs) std::printf("  input  %-24s %-5s %s\n", text(r.name).c_str(), r.dtype.c_str(), shapeText(r).c_str());
  for (auto &r : p.outputs) std::printf("  output %-24s %-5s %s\n", text(r.name).c_str(), r.dtype.c_str(), shapeText(r).c_str());
  std::printf("\n%-28s %7s %14s %7s\n", "op", "count", "FLOPs", "share");
  for (auto &[name, s] : p.ops)
    std::printf("%-28s %7lld %14s %6.1f%%\n", text(name).c_str(), static_cast<long long>(s.count),
                humanCount(static_cast<double>(s.flops)).c_str(),
                p.totalFlops ? 100.0 * s.flops / p.totalFlops : 0.0);
  std::printf("%-28s %7lld %14s\n\n", "total", static_cast<long long>(p.totalOps),
              humanCount(static_cast<double>(p.totalFlops)).c_str());
  std::printf("weights:            %lld tensors, %s\n", static_cast<long long>(p.weightCount), humanBytes(p.weightBytes).c_str());
  std::printf("activations:        %s in all\n", humanBytes(p.activationBytes).c_str());
  std::printf("peak activations:   %s (program order, inputs and outputs included)\n", humanBytes(p.peakActivationBytes).c_str());
  std::printf("activation arena:   %s (planned: intermediates, liveness-based reuse)\n", humanBytes(p.arenaBytes).c_str());
  if (!p.unsupported.empty()) {
    std::printf("\nunsupported: %zu node(s)\n", p.unsupported.size());
    for (auto &u : p.unsupported)
      std::printf("  %-24s %s%s%s: %s\n", text(u.name).c_str(), text(u.domain).c_str(), u.domain.empty() ? "" : "::",
                  text(u.opType).c_str(), text(u.reason).c_str());
    if (!p.complete) std::printf("  (sizes and FLOPs downstream of these nodes are unknown)\n");
  }
}

Runner addPlanCommand(CLI::App &app) {
  auto *cmd = app.add_subcommand("plan", "What would be built: ops, FLOPs, weights, activations, unsupported ops");
  auto opts = std::make_shared<ModelOptions>();
  auto json = std::make_shared<bool>(false);
  opts->add(*cmd);
  cmd->add_flag("--json", *json, "Print a JSON document instead of tables");
  return [cmd, opts, json]() -> int {
    if (!*cmd) return -1;
    mlir::MLIRContext ctx;
    LoadedModel m = loadModel(*opts, ctx);
    if (!m.ok()) return 2;
    auto f = (*m.import.module).lookupSymbol<mlir::func::FuncOp>("main");
    ModelPlan p = planFunction(f);
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
      std::cout << jsonText(j) << "\n";
    } else {
      printPlan(opts->model, p);
    }
    return p.unsupported.empty() ? 0 : 1;
  };
}

}  // namespace kiln::cli

// `kiln debug precision MODEL --inputs x.npz [--precision fp16|bf16] [--route R] [--tolerance T]`:
// finds where a half-precision graph drifts from fp32, Polygraphy-style but on the CPU evaluator
// (no GPU): the fp32 graph and the route's graph (the compile pipeline up to precision, so every
// node keeps its result) run on the same inputs, each node's result is compared, and the first
// node whose relative L2 error exceeds the tolerance while its inputs' producers stay within it is
// named, with the route that keeps it in fp32.
//
// With --bisect it searches instead for nodes to keep in fp32 so that the route's outputs are
// within the tolerance of the reference (the fp32 graph's, or --reference): the shortest run of
// nodes in program order, from the first (--direction forward) or from the last (reverse), that
// suffices, then chunks of it dropped, halving the chunk size, while the outputs stay within
// (Polygraphy's debug precision bisection; at most --max-evals evaluations of the whole graph).
#include "codegen/lowering/ModelBuild.h"
#include "passes/PassUtil.h"
#include "passes/Passes.h"
#include "tools/kiln/Commands.h"
#include "tools/kiln/Evaluate.h"
#include "tools/kiln/ModelLoading.h"
#include "tuner/Accuracy.h"
#include "tuner/TensorFiles.h"

#include "mlir/Pass/PassManager.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>

namespace kiln::cli {

namespace {

// A node's result as the evaluator computed it, kept as doubles.
struct NodeResult {
  std::string op;  // ONNX type
  std::vector<double> values;
  std::vector<std::string> inputs;  // the nodes that produced its operands
  bool movesOnly = false;           // it only moves elements (follows its neighbours' precision)
};

// Every node's first float result, by node name (ops the precision pass inserted, casts named
// after the node they serve, do not replace the node's own result); the graph's outputs go to
// `outputs`.
std::map<std::string, NodeResult> recordNodes(mlir::func::FuncOp f, const std::vector<tuner::HostTensor> &inputs,
                                              std::vector<std::string> &order, std::vector<tuner::HostTensor> &outputs,
                                              std::string &error) {
  std::map<std::string, NodeResult> nodes;
  auto onResults = [&](mlir::Operation *op, const std::vector<ops::Tensor> &results) {
    auto sem = mlir::dyn_cast<ShapeInferenceOpInterface>(op);
    std::string name = nodeName(op);
    if (!sem || name.empty() || results.empty() || !ops::isFloat(results[0].dtype)) return;
    std::string type = sem.getOnnxOpType().str();
    auto it = nodes.find(name);
    if (it != nodes.end() && (type == "Cast" || it->second.op != "Cast")) return;
    NodeResult r{type, results[0].f, {}, movesElementsOnly(op)};
    for (mlir::Value v : op->getOperands())
      if (mlir::Operation *d = v.getDefiningOp(); d && !mlir::isa<ConstantOp, NoneOp>(d))
        r.inputs.push_back(nodeName(d));
    if (it == nodes.end()) order.push_back(name);
    nodes[name] = std::move(r);
  };
  if (!evaluateModel(f, inputs, outputs, error, nullptr, onResults)) nodes.clear();
  return nodes;
}

double relL2(const std::vector<double> &got, const std::vector<double> &want) {
  if (got.size() != want.size()) return INFINITY;
  double num = 0, den = 0;
  for (size_t k = 0; k < got.size(); ++k) {
    if (std::isnan(got[k]) != std::isnan(want[k])) return INFINITY;
    if (std::isnan(want[k])) continue;
    if (std::isinf(got[k]) || std::isinf(want[k])) {
      if (got[k] != want[k]) return INFINITY;
      continue;
    }
    num += (got[k] - want[k]) * (got[k] - want[k]), den += want[k] * want[k];
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

struct Bisection {
  std::vector<std::string> kept;  // nodes kept in fp32, in program order
  std::string route;
  double err = 0, halfErr = 0, allErr = 0;  // with them; with none; with every candidate
  size_t candidates = 0;
  int evals = 0;
  bool found = false;
};

// The --bisect search (see the file comment). Errors are the worst rel L2 over the outputs.
bool bisectPrecision(const ModelOptions &opts, const knobs::Route &route, const std::vector<tuner::HostTensor> &in,
                     const std::vector<tuner::HostTensor> &ref, const std::vector<std::string> &order,
                     const std::map<std::string, NodeResult> &nodes, double tolerance, bool reverse, int maxEvals,
                     Bisection &b, std::string &error) {
  std::vector<std::string> cand;
  for (const std::string &n : order)
    if (!nodes.at(n).movesOnly && n.find_first_of(";=") == std::string::npos) cand.push_back(n);
  b.candidates = cand.size();
  auto routeOf = [&](const std::vector<std::string> &kept) {
    std::string r = route.canonical();
    for (const std::string &n : kept) r += ";node." + n + ".precision=fp32";
    return r;
  };
  auto errOf = [&](const std::vector<std::string> &kept, double &err) {
    mlir::MLIRContext ctx;
    codegen::ModelBuild lowered;
    std::string r = routeOf(kept);
    // (no notes: every evaluation would repeat one per node kept in fp32)
    mlir::func::FuncOp f = lowerForEvaluation(
        opts, ctx, [&](mlir::OpPassManager &pm) { buildPrecisionPipeline(pm, r); }, lowered, /*notes=*/false);
    if (!f) return error.clear(), false;  // (said)
    std::vector<tuner::HostTensor> out;
    if (!evaluateModel(f, in, out, error)) return false;
    err = 0;
    for (const tuner::HostTensor &want : ref) {
      auto got = std::find_if(out.begin(), out.end(), [&](const tuner::HostTensor &t) { return t.name == want.name; });
      if (got == out.end()) return error = "the reference has an output '" + want.name + "' the model has not", false;
      if (!ops::isFloat(ops::DType(want.dtype))) continue;
      tuner::Metrics m = tuner::compare(*got, want);
      err = std::max(err, m.nanMismatch ? INFINITY : m.relL2);
    }
    ++b.evals;
    info(0, "debug precision: evaluation " + std::to_string(b.evals) + ": " + std::to_string(kept.size()) +
                " nodes in fp32, rel L2 " + std::to_string(err));
    return true;
  };
  auto span = [&](size_t k) {  // the first k candidates (reverse: the last k)
    auto first = cand.begin() + long(reverse ? cand.size() - k : 0);
    return std::vector<std::string>(first, first + long(k));
  };
  if (!errOf({}, b.halfErr)) return false;
  if (b.halfErr <= tolerance) return b.found = true, b.err = b.halfErr, b.route = routeOf({}), true;
  if (!errOf(cand, b.allErr)) return false;
  if (b.allErr > tolerance) return b.route = routeOf(cand), true;  // (not found)
  // The shortest span that suffices (lo fails, hi holds), then chunks of it dropped.
  size_t lo = 0, hi = cand.size();
  double errHi = b.allErr;
  while (hi - lo > 1 && b.evals < maxEvals) {
    size_t mid = (lo + hi) / 2;
    double e;
    if (!errOf(span(mid), e)) return false;
    if (e <= tolerance)
      hi = mid, errHi = e;
    else
      lo = mid;
  }
  b.kept = span(hi), b.err = errHi;
  for (size_t chunk = b.kept.size() / 2; chunk >= 1 && b.evals < maxEvals; chunk /= 2) {
    for (size_t at = 0; at < b.kept.size() && b.evals < maxEvals;) {
      std::vector<std::string> fewer(b.kept.begin(), b.kept.begin() + long(at));
      fewer.insert(fewer.end(), b.kept.begin() + long(std::min(at + chunk, b.kept.size())), b.kept.end());
      double e;
      if (!errOf(fewer, e)) return false;
      if (e <= tolerance)
        b.kept = std::move(fewer), b.err = e;
      else
        at += chunk;
    }
  }
  b.found = true;
  b.route = routeOf(b.kept);
  return true;
}

}  // namespace

Runner addDebugCommand(CLI::App &app) {
  auto *debug = app.add_subcommand("debug", "Find where an engine's graph goes wrong");
  auto *cmd = debug->add_subcommand(
      "precision", "Compare a half-precision route's graph with fp32 node by node on the CPU evaluator and name the "
                   "first node that drifts");
  debug->require_subcommand(1);
  auto opts = std::make_shared<ModelOptions>();
  auto inputs = std::make_shared<std::string>(), routeText = std::make_shared<std::string>();
  auto precision = std::make_shared<std::string>("fp16");
  auto tolerance = std::make_shared<double>(1e-2);
  auto top = std::make_shared<int>(10);
  auto json = std::make_shared<bool>(false);
  opts->add(*cmd);
  cmd->add_option("--inputs", *inputs, "Inputs (.npz, arrays named after the model's inputs)")->required();
  cmd->add_option("--precision", *precision, "The route's precision (fp16, bf16)")->capture_default_str();
  cmd->add_option("--route", *routeText, "The route to check (its precision knob overrides --precision)");
  cmd->add_option("--tolerance", *tolerance, "Relative L2 error above which a node drifts")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--top", *top, "Nodes with the largest errors to list")->capture_default_str();
  cmd->add_flag("--json", *json, "Print a JSON document");
  auto bisect = std::make_shared<bool>(false);
  auto reference = std::make_shared<std::string>();
  auto direction = std::make_shared<std::string>("forward");
  auto maxEvals = std::make_shared<int>(40);
  CLI::Option *bisectFlag =
      cmd->add_flag("--bisect", *bisect,
                    "Find nodes to keep in fp32 so that the route's outputs are within --tolerance (rel L2) of the "
                    "reference: the shortest run of nodes in program order that suffices, then chunks of it dropped "
                    "while the outputs stay within; prints the route");
  cmd->add_option("--reference", *reference,
                  "With --bisect: reference outputs (.npz by output name, e.g. onnxruntime's; default: the fp32 "
                  "graph's on the CPU evaluator)")
      ->needs(bisectFlag);
  cmd->add_option("--direction", *direction,
                  "With --bisect: the run starts at the first node (forward) or ends at "
                  "the last (reverse)")
      ->check(CLI::IsMember({"forward", "reverse"}))
      ->capture_default_str()
      ->needs(bisectFlag);
  cmd->add_option("--max-evals", *maxEvals, "With --bisect: evaluations of the whole graph at most")
      ->capture_default_str()
      ->check(CLI::Range(3, 100000))
      ->needs(bisectFlag);
  return [=]() -> int {
    if (!*cmd) return -1;
    knobs::Route route;
    std::string error;
    if (!parseRoute(*routeText, routeText->find("precision=") == std::string::npos ? *precision : "", route, error)) {
      std::cerr << "kiln: error: " << error << "\n";
      return 2;
    }
    std::vector<tuner::HostTensor> in;
    if (!tuner::readTensors(*inputs, in, error)) {
      std::cerr << "kiln: error: " << *inputs << ": " << error << "\n";
      return 2;
    }
    // The two graphs: fp32 (the canonical graph the compile pipeline starts from) and the route's
    // (--bisect builds the route's graphs itself).
    mlir::MLIRContext ctxA, ctxB;
    codegen::ModelBuild loweredA, loweredB;
    mlir::func::FuncOp a = lowerForEvaluation(
        *opts, ctxA, [&](mlir::OpPassManager &pm) { buildPrecisionPipeline(pm, ""); }, loweredA);
    if (!a) return 2;
    std::vector<std::string> orderA, orderB;
    std::vector<tuner::HostTensor> outA, outB;
    auto ref = recordNodes(a, in, orderA, outA, error);
    if (ref.empty()) {
      std::cerr << "kiln: error: the fp32 graph: " << error << "\n";
      return 2;
    }
    if (*bisect) {
      if (!reference->empty() && !tuner::readTensors(*reference, outA, error)) {
        std::cerr << "kiln: error: " << *reference << ": " << error << "\n";
        return 2;
      }
      Bisection found;
      if (!bisectPrecision(*opts, route, in, outA, orderA, ref, *tolerance, *direction == "reverse", *maxEvals, found,
                           error)) {
        if (!error.empty()) std::cerr << "kiln: error: " << error << "\n";
        return 2;
      }
      if (*json) {
        nlohmann::json j = {{"route", found.route},         {"found", found.found},
                            {"tolerance", *tolerance},      {"rel_l2", found.found ? found.err : found.allErr},
                            {"rel_l2_half", found.halfErr}, {"candidates", found.candidates},
                            {"kept_fp32", found.kept},      {"evaluations", found.evals}};
        std::cout << j.dump(2) << "\n";
      } else if (!found.found) {
        std::printf("keeping all %zu nodes in fp32 still gives rel L2 %.3g > %.3g (%s route alone: %.3g)\n",
                    found.candidates, found.allErr, *tolerance, route.canonical().c_str(), found.halfErr);
      } else {
        std::printf("route '%s' alone: rel L2 %.3g; keeping %zu of %zu nodes in fp32: %.3g <= %.3g (%d evaluations)\n",
                    route.canonical().c_str(), found.halfErr, found.kept.size(), found.candidates, found.err,
                    *tolerance, found.evals);
        std::printf("--route '%s'\n", found.route.c_str());
      }
      return found.found ? 0 : 1;
    }
    mlir::func::FuncOp b = lowerForEvaluation(
        *opts, ctxB, [&](mlir::OpPassManager &pm) { buildPrecisionPipeline(pm, route.canonical()); }, loweredB);
    if (!b) return 2;
    auto half = recordNodes(b, in, orderB, outB, error);
    if (half.empty()) {
      std::cerr << "kiln: error: the " << route.canonical() << " graph: " << error << "\n";
      return 2;
    }
    struct Row {
      std::string node, op;
      double err;
      bool inputsOk;
    };
    std::vector<Row> rows;
    std::map<std::string, double> errOf;
    for (const std::string &name : orderA) {
      auto h = half.find(name);
      if (h == half.end()) continue;
      double e = relL2(h->second.values, ref.at(name).values);
      errOf[name] = e;
      bool inputsOk = true;
      for (const std::string &p : ref.at(name).inputs) {
        auto it = errOf.find(p);
        inputsOk = inputsOk && (it == errOf.end() || it->second <= *tolerance);
      }
      rows.push_back({name, ref.at(name).op, e, inputsOk});
    }
    // Where errors start: nodes that drift while their inputs' producers do not (the first is
    // where to look first; keeping every one in fp32 is the suggested route).
    std::vector<const Row *> roots;
    for (const Row &r : rows)
      if (r.err > *tolerance && r.inputsOk) roots.push_back(&r);
    const Row *first = roots.empty() ? nullptr : roots.front();
    std::vector<const Row *> worst;
    for (const Row &r : rows) worst.push_back(&r);
    std::stable_sort(worst.begin(), worst.end(), [](const Row *x, const Row *y) { return x->err > y->err; });
    if (worst.size() > size_t(std::max(0, *top))) worst.resize(size_t(std::max(0, *top)));
    std::string fix = route.canonical();
    for (const Row *r : roots) fix += ";node." + r->node + ".precision=fp32";
    if (*json) {
      nlohmann::json j = {{"route", route.canonical()}, {"tolerance", *tolerance}, {"nodes_compared", rows.size()}};
      j["first_drift"] = first ? nlohmann::json{{"node", first->node}, {"op", first->op}, {"rel_l2", first->err}}
                               : nlohmann::json(nullptr);
      nlohmann::json rs = nlohmann::json::array();
      for (const Row *r : roots) rs.push_back({{"node", r->node}, {"op", r->op}, {"rel_l2", r->err}});
      j["drift_starts"] = rs;
      if (first) j["suggested_route"] = fix;
      nlohmann::json w = nlohmann::json::array();
      for (const Row *r : worst) w.push_back({{"node", r->node}, {"op", r->op}, {"rel_l2", r->err}});
      j["largest_errors"] = w;
      std::cout << j.dump(2) << "\n";
    } else {
      std::printf("route '%s' against fp32 on the CPU evaluator: %zu nodes compared, tolerance %.3g (rel L2)\n",
                  route.canonical().c_str(), rows.size(), *tolerance);
      std::printf("\n%-48s %-20s %12s\n", "node (largest errors)", "op", "rel L2");
      for (const Row *r : worst) std::printf("%-48s %-20s %12.3g\n", r->node.c_str(), r->op.c_str(), r->err);
      if (first) {
        std::printf("\nfirst node that drifts: '%s' (%s), rel L2 %.3g, its inputs within %.3g\n", first->node.c_str(),
                    first->op.c_str(), first->err, *tolerance);
        for (size_t k = 1; k < roots.size(); ++k)
          std::printf("drifts too, its inputs within %.3g: '%s' (%s), rel L2 %.3g\n", *tolerance,
                      roots[k]->node.c_str(), roots[k]->op.c_str(), roots[k]->err);
        std::printf("keep %s in fp32: --route '%s'\n", roots.size() > 1 ? "them" : "it", fix.c_str());
      } else {
        std::printf("\nno node drifts beyond %.3g\n", *tolerance);
      }
    }
    return first ? 1 : 0;
  };
}

}  // namespace kiln::cli

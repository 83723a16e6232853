// `kiln tune model.onnx --route 'REGEX=REGEX;...' [--search fast|mixed|full|nodes] [--accuracy C]
// [--cache db] [--resume] [-o best.kiln] [--json] [--dry-run] [--config tune.yaml] ...`: search
// build routes for the fastest accurate engine (tuner/Tuner.h). `--dry-run` needs no GPU: it
// validates the model, the expression and the settings and lists the candidates (a CI gate).
// `kiln device` (hidden) prints the environment fingerprint the tuner keys its cache by.
#include "compiler/support/Files.h"
#include "compiler/support/Text.h"
#include "tools/kiln/Commands.h"
#include "tools/kiln/ModelLoading.h"
#include "tools/kiln/Profiles.h"
#include "tools/kiln/TuneReport.h"
#include "tuner/Environment.h"
#include "tuner/Space.h"
#include "tuner/Tuner.h"

#include <nlohmann/json.hpp>

#include <map>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <unistd.h>

namespace kiln::cli {

namespace {

std::atomic<bool> gStop{false};
void onInterrupt(int) { gStop = true; }

std::vector<int> parseDevices(const std::string &text, std::string &error) {
  std::vector<int> d;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    char *end = nullptr;
    long v = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end || v < 0) {
      error = "--devices: '" + item + "' is not a device index";
      return {};
    }
    if (std::find(d.begin(), d.end(), int(v)) != d.end()) {
      error = "--devices: device " + item + " is listed twice (one measuring worker per GPU)";
      return {};
    }
    d.push_back(int(v));
  }
  if (d.empty()) error = "--devices: no device";
  return d;
}

// Settings from a YAML file; flags given on the command line win (applied afterwards by CLI11's
// order: the config is read first, then only unset options take its values).
bool applyConfig(const std::string &path, tuner::TuneOptions &o, std::string &devices, std::vector<std::string> &weigh,
                 CLI::App &cmd, std::string &error) {
  std::string text;
  if (!support::readFile(path, text, error, "config file", uint64_t(1) << 20)) return false;
  try {
    YAML::Node y = YAML::Load(text);
    if (!y.IsMap()) {
      error = path + ": expected a mapping of settings";
      return false;
    }
    static const char *known[] = {"model",          "route",  "search",     "accuracy", "cache",       "reference",
                                  "inputs",         "output", "arch",       "calib",    "shapes",      "devices",
                                  "max_candidates", "warmup", "iterations", "timeout",  "time_budget", "weigh_shapes"};
    for (auto it = y.begin(); it != y.end(); ++it) {
      std::string k = it->first.as<std::string>();
      if (std::find(std::begin(known), std::end(known), k) == std::end(known)) {
        error = path + ": unknown setting '" + k + "'";
        return false;
      }
    }
    auto str = [&](const char *key, const char *flag, std::string &out) {
      if (y[key] && (!flag || cmd.count(flag) == 0)) out = y[key].as<std::string>();
    };
    str("model", nullptr, o.model);
    str("route", "--route", o.routeExpression);
    str("search", "--search", o.search);
    str("accuracy", "--accuracy", o.accuracy);
    str("cache", "--cache", o.cachePath);
    str("reference", "--reference", o.reference);
    str("inputs", "--inputs", o.inputs);
    str("output", "--output", o.output);
    str("arch", "--arch", o.arch);
    str("calib", "--calib", o.calib);
    str("shapes", "--shapes", o.shapes);
    str("devices", "--devices", devices);
    if (y["max_candidates"] && !cmd.count("--max-candidates")) o.maxCandidates = y["max_candidates"].as<int>();
    if (y["warmup"] && !cmd.count("--warmup")) o.warmup = y["warmup"].as<int>();
    if (y["iterations"] && !cmd.count("--iterations")) o.iterations = y["iterations"].as<int>();
    if (y["timeout"] && !cmd.count("--timeout")) o.timeoutSeconds = y["timeout"].as<double>();
    if (y["time_budget"] && !cmd.count("--time-budget")) o.timeBudgetSeconds = y["time_budget"].as<double>();
    // weigh_shapes: [{shapes: "batch=1", weight: 0.2}, ...] (or "batch=1@0.2" strings)
    if (y["weigh_shapes"] && !cmd.count("--weigh-shapes")) {
      if (!y["weigh_shapes"].IsSequence()) {
        error = path + ": weigh_shapes: expected a list of {shapes, weight}";
        return false;
      }
      for (const YAML::Node &w : y["weigh_shapes"])
        weigh.push_back(w.IsMap() ? w["shapes"].as<std::string>() + "@" + w["weight"].as<std::string>()
                                  : w.as<std::string>());
    }
  } catch (const YAML::Exception &e) {
    error = path + ": " + e.what();
    return false;
  }
  return true;
}

}  // namespace

Runner addTuneCommand(CLI::App &app) {
  auto *cmd =
      app.add_subcommand("tune", "Search build routes for the fastest engine that meets an accuracy constraint");
  auto o = std::make_shared<tuner::TuneOptions>();
  auto devices = std::make_shared<std::string>("0"), config = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false), resume = std::make_shared<bool>(false),
       noRead = std::make_shared<bool>(false);
  cmd->add_option("model", o->model, "ONNX model");
  cmd->add_option("--route", o->routeExpression, "Route expression: KNOB-REGEX=VALUE-REGEX;... (`kiln knobs MODEL`)");
  cmd->add_option("--search", o->search, "fast | mixed | full | nodes (per-node values, each launch timed alone)")
      ->capture_default_str();
  cmd->add_option("--accuracy", o->accuracy, "Constraints, e.g. 'cos>=0.9995,max_abs<=0.05' (default by precision)");
  cmd->add_option("--cache", o->cachePath, "SQLite cache (default $XDG_DATA_HOME/kiln/tune-cache.db)");
  cmd->add_option("--reference", o->reference, "Reference outputs (.npz; default: the fp32 default route on this GPU)");
  cmd->add_option("--inputs", o->inputs, "Inputs (.npz; default: the reference's, else random)");
  cmd->add_option("-o,--output", o->output, "Write the winning engine here");
  auto profile = std::make_shared<ProfileOptions>();
  profile->add(*cmd, "the shapes candidates are measured at (-o writes the winner built for the whole profile)");
  cmd->add_option("--arch", o->arch, "Target architecture")->capture_default_str();
  cmd->add_option("--calib", o->calib, "Calibration file (kiln calibrate) for candidates with int8/fp8 products");
  cmd->add_option("--shapes", o->shapes, "Input shapes, as for compile");
  cmd->add_flag("--allow-external-outside", o->allowExternalOutside,
                "Read the model's external data outside its folder too (as for compile)");
  cmd->add_option("--devices", *devices, "GPUs to measure on, one worker each (e.g. 0,1)")->capture_default_str();
  cmd->add_option("--max-candidates", o->maxCandidates, "Refuse a full search with more candidates")
      ->capture_default_str();
  cmd->add_option("--warmup", o->warmup, "Untimed runs per candidate")->capture_default_str();
  cmd->add_option("--iterations", o->iterations, "Timed runs per candidate")->capture_default_str();
  cmd->add_option("--timeout", o->timeoutSeconds, "Seconds a candidate's measurement may take")->capture_default_str();
  cmd->add_option("--time-budget,--budget", o->timeBudgetSeconds,
                  "Stop measuring new candidates after this long: seconds, or with a unit (90s, 15m, 2h)")
      ->transform(CLI::AsNumberWithUnit(std::map<std::string, double>{{"s", 1}, {"m", 60}, {"h", 3600}},
                                        CLI::AsNumberWithUnit::CASE_SENSITIVE));
  cmd->add_option("--config", *config, "YAML file with the same settings (flags override it)");
  cmd->add_flag("--resume", *resume, "Measure only what the cache lacks (the default; kept for scripts)");
  cmd->add_flag("--no-cache-read", *noRead, "Measure every candidate again (results are still stored)");
  cmd->add_flag("--dry-run", o->dryRun, "Plan only: validate and list the candidates; needs no GPU");
  auto *fromCache = cmd->add_flag("--from-cache", o->fromCache,
                                  "Measure nothing: choose the winner from the cache's measurements (e.g. merged "
                                  "shards'); needs no GPU, and -o builds the winner");
  cmd->add_option("--environment", o->environment,
                  "With --from-cache: whose measurements (as `kiln cache list --env` prints it; default: the "
                  "cache's only one for this model)")
      ->needs(fromCache);
  auto shard = std::make_shared<std::string>();
  cmd->add_option("--shard", *shard,
                  "K/N: measure only the K-th of N deterministic slices of the candidates (fast, full and nodes "
                  "searches; join the shards' caches with `kiln cache merge`)");
  auto weigh = std::make_shared<std::vector<std::string>>();
  cmd->add_option("--weigh-shapes", *weigh,
                  "With a profile: measure every candidate at these shapes too and rank by the weighted mean, "
                  "SHAPES@WEIGHT (batch=1@0.2; repeat it per shape), instead of at the opt shapes alone")
      ->allow_extra_args(false);
  cmd->add_flag("--json", *json, "Print a JSON document");
  auto reportPath = std::make_shared<std::string>();
  cmd->add_option("--report", *reportPath,
                  "Write an HTML page: every candidate's latency against its accuracy (the constraint drawn, the "
                  "winner marked) and the table");

  auto *device = app.add_subcommand("device", "Print this GPU's environment fingerprint (used by tune)");
  device->group("");  // hidden
  auto index = std::make_shared<int>(0);
  device->add_option("--index", *index, "CUDA device index");

  return [=]() -> int {
    if (*device) {
      std::string fp, err;
      if (!tuner::environmentFingerprint(*index, KILN_VERSION, fp, err)) {
        std::cerr << "kiln: error: " << err << "\n";
        return 2;
      }
      std::cout << fp << "\n";
      return 0;
    }
    if (!*cmd) return -1;
    std::string err;
    if (!config->empty() && !applyConfig(*config, *o, *devices, *weigh, *cmd, err)) {
      std::cerr << "kiln: error: --config: " << err << "\n";
      return 2;
    }
    if (o->model.empty() || o->routeExpression.empty()) {
      std::cerr << "kiln: error: tune needs a model and --route (on the command line or in --config)\n";
      return 2;
    }
    if (!o->calib.empty() && !checkCalibration(o->calib, o->model, err)) {
      std::cerr << "kiln: error: --calib " << err << "\n";
      return 2;
    }
    o->devices = parseDevices(*devices, err);
    if (!err.empty()) {
      std::cerr << "kiln: error: " << err << "\n";
      return 2;
    }
    if (!shard->empty()) {
      int k = 0, n = 0;
      char end = 0;
      if (std::sscanf(shard->c_str(), "%d/%d%c", &k, &n, &end) != 2 || n < 1 || k < 1 || k > n) {
        std::cerr << "kiln: error: --shard '" << *shard << "': expected K/N with 1 <= K <= N (e.g. 2/8)\n";
        return 2;
      }
      o->shard = k, o->shards = n;
    }
    if (o->fromCache && *noRead) {
      std::cerr << "kiln: error: --from-cache reads the cache; --no-cache-read would leave nothing to choose from\n";
      return 2;
    }
    o->readCache = !*noRead;
    o->kilnVersion = KILN_VERSION;
    // Progress on stderr: log lines, and on a terminal a bar under them (redrawn after each line).
    static std::string bar;
    static const bool terminal = isatty(STDERR_FILENO);
    o->log = [](const std::string &s) {
      if (verbosity() < 0) return;  // -q: errors only
      std::fprintf(stderr, terminal ? "\r\033[Ktune: %s\n%s" : "tune: %s\n%s", support::printable(s).c_str(),
                   terminal ? bar.c_str() : "");
      std::fflush(stderr);
    };
    if (terminal && verbosity() >= 0)
      o->progress = [](const tuner::Progress &p) {
        const int width = 24;
        int filled = p.total ? int(width * std::min(p.done, p.total) / p.total) : 0;
        char eta[32] = "?";
        if (p.etaSeconds >= 0)
          std::snprintf(eta, sizeof eta, "%d:%02d", int(p.etaSeconds) / 60, int(p.etaSeconds) % 60);
        char best[64] = "none yet";
        if (p.bestMs > 0) std::snprintf(best, sizeof best, "%.3f ms", p.bestMs);
        bar = "[" + std::string(size_t(filled), '#') + std::string(size_t(width - filled), '.') + "] " +
              std::to_string(p.done) + "/" + std::to_string(p.total) + "  failed " + std::to_string(p.failed) +
              "  best " + best +
              (p.bestRoute.empty() ? "" : " (" + support::printableLine(p.bestRoute.substr(0, 40)) + ")") + "  ETA " +
              eta;
        std::fprintf(stderr, "\r\033[K%s", bar.c_str());
        std::fflush(stderr);
      };
    // A profile: the candidates are measured at its opt shapes (static engines), and the winner is
    // then built for the whole profile.
    std::string profileOutput;
    if (std::string e = profile->problem(o->shapes); !e.empty()) {
      std::cerr << "kiln: error: " << e << "\n";
      return 2;
    }
    if (profile->any()) {
      o->shapes = profile->optShapes[0];  // (the first profile's)
      std::swap(profileOutput, o->output);
      if (auto why =
              profileOutput.empty() ? std::string() : support::checkOutputPath(profileOutput, {o->model, o->calib});
          !why.empty()) {
        std::cerr << "kiln: error: -o: " << why << "\n";
        return 2;
      }
    }
    // --weigh-shapes: SHAPES@WEIGHT each, inside the profile.
    std::vector<tuner::WeightedShapes> weighted;
    for (const std::string &w : *weigh) {
      size_t at = w.rfind('@');
      char *end = nullptr;
      double v = at == std::string::npos ? 0 : std::strtod(w.c_str() + at + 1, &end);
      if (at == std::string::npos || at == 0 || !end || *end || !(v > 0) || !std::isfinite(v)) {
        std::cerr << "kiln: error: --weigh-shapes '" << support::printableLine(w)
                  << "': expected SHAPES@WEIGHT with a weight above 0, e.g. batch=8@0.5\n";
        return 2;
      }
      weighted.push_back({w.substr(0, at), v});
    }
    if (!weighted.empty() && !profile->any()) {
      std::cerr << "kiln: error: --weigh-shapes needs a profile (--min-shapes/--opt-shapes/--max-shapes): the "
                   "winner is built for it\n";
      return 2;
    }
    std::signal(SIGINT, onInterrupt);
    tuner::TuneReport r = weighted.empty() ? tuner::tune(*o, gStop) : tuner::tuneWeighted(*o, weighted, gStop);
    if (r.error.empty() && !profileOutput.empty() && r.best >= 0 && !gStop) {
      codegen::BuildOptions bo;
      knobs::Route route;
      if (std::string e = parseTarget(o->arch, bo.target);
          !e.empty() || !parseRoute(r.results[size_t(r.best)].route, "", route, err)) {
        std::cerr << "kiln: error: " << (e.empty() ? err : e) << "\n";
        return 2;
      }
      bo.route = route;
      bo.pipeline.calib = o->calib;
      ModelOptions model;
      model.model = o->model;
      model.allowExternalOutside = o->allowExternalOutside;
      codegen::ModelBuild m;
      ProfileReport report;
      buildProfileEngine(model, *profile, bo, m, report);
      if (!m.ok() || !support::writeFileAtomically(profileOutput, m.engine.engine.data(), m.engine.engine.size(), err,
                                                   {o->model, o->calib})) {
        std::cerr << "kiln: error: the winner for the profile: " << (m.ok() ? err : m.error) << "\n";
        return 2;
      }
      info(0, "wrote " + profileOutput + " (the winning route for the profile: " +
                  std::to_string(report.specialisations) + " specialisations)");
    }
    std::signal(SIGINT, SIG_DFL);
    if (terminal && !bar.empty()) std::fprintf(stderr, "\r\033[K");
    if (!r.error.empty()) {
      std::cerr << "kiln: error: " << r.error << "\n";
      return 2;
    }
    if (o->dryRun) {
      if (*json) {
        std::cout << nlohmann::json{{"model", o->model},
                                    {"search", o->search},
                                    {"candidates", r.planned},
                                    {"count", r.planned.size()},
                                    {"note", r.plannedNote},
                                    {"estimated_seconds", r.estimatedSeconds},
                                    {"time_budget_seconds", o->timeBudgetSeconds},
                                    {"notes", r.notes}}
                         .dump(2)
                  << "\n";
      } else {
        std::printf("%zu candidates (%s), roughly %.0f s to measure:\n", r.planned.size(), r.plannedNote.c_str(),
                    r.estimatedSeconds);
        for (auto &p : r.planned)
          std::printf("  %s\n", p.empty() ? "(default route)" : support::printableLine(tuner::shortRoute(p)).c_str());
      }
      return 0;
    }
    double baseMs =
        r.base >= 0 && r.results[size_t(r.base)].m.status == "ok" ? r.results[size_t(r.base)].m.medianMs : 0;
    size_t notCached = 0;
    for (auto &c : r.results) notCached += c.m.status == "not_cached";
    if (!reportPath->empty()) {
      if (!support::writeFileAtomically(*reportPath, tuneReportHtml(*o, r, baseMs), err, {o->model, o->calib})) {
        std::cerr << "kiln: error: --report: " << err << "\n";
        return 2;
      }
      info(0, "wrote " + *reportPath);
    }
    if (*json) {
      nlohmann::json j = {{"model", o->model},    {"environment", r.environment},
                          {"search", o->search},  {"interrupted", r.interrupted},
                          {"seconds", r.seconds}, {"candidates", nlohmann::json::array()}};
      for (auto &c : r.results) {
        nlohmann::json m = c.m.metrics.empty() ? nlohmann::json() : nlohmann::json::parse(c.m.metrics, nullptr, false);
        j["candidates"].push_back({{"route", c.route},
                                   {"status", c.m.status},
                                   {"reason", c.m.reason},
                                   {"median_ms", c.m.medianMs},
                                   {"p90_ms", c.m.p90Ms},
                                   {"min_ms", c.m.minMs},
                                   {"speedup", baseMs > 0 && c.m.medianMs > 0 ? baseMs / c.m.medianMs : 0.0},
                                   {"from_cache", c.fromCache},
                                   {"shape_ms", c.shapeMs},
                                   {"same_engine_as", c.sameAs >= 0 ? nlohmann::json(r.results[size_t(c.sameAs)].route)
                                                                    : nlohmann::json(nullptr)},
                                   {"metrics", m}});
      }
      for (const tuner::WeightedShapes &w : weighted)
        j["weighted_shapes"].push_back({{"shapes", w.shapes}, {"weight", w.weight}});
      j["best"] = r.best >= 0 ? nlohmann::json(r.results[size_t(r.best)].route) : nlohmann::json(nullptr);
      j["duplicates"] = r.duplicates;
      if (o->fromCache) j["not_cached"] = notCached, j["model_hash"] = r.modelHash, j["inputs_key"] = r.inputsKey;
      j["not_significant"] =
          r.notSignificant >= 0 ? nlohmann::json(r.results[size_t(r.notSignificant)].route) : nlohmann::json(nullptr);
      std::cout << jsonText(j) << "\n";
    } else {
      std::printf("\n%-52s %-12s %10s %8s %10s %10s %10s\n", "route", "status", "median ms", "speedup", "worst l2",
                  "worst cos", "max abs");
      for (size_t i = 0; i < r.results.size(); ++i) {
        const auto &c = r.results[i];
        WorstMetrics w = worstMetrics(c.m);
        std::string route = c.route.empty() ? "(default route)" : tuner::shortRoute(c.route);
        std::string at;  // (--weigh-shapes: the median at each)
        for (size_t k = 0; k < c.shapeMs.size(); ++k) {
          char ms[32];
          std::snprintf(ms, sizeof ms, "%.3f", c.shapeMs[k]);
          at += (k ? " / " : "  at the shapes: ") + std::string(ms);
        }
        std::printf("%-52s %-12s %10.3f %7.2fx %10.2e %10.6f %10.2e%s%s%s\n", support::printableLine(route).c_str(),
                    support::printableLine(c.m.status).c_str(), c.m.medianMs,
                    baseMs > 0 && c.m.medianMs > 0 ? baseMs / c.m.medianMs : 0.0, w.relL2, w.cos, w.maxAbs,
                    c.sameAs >= 0 ? "  (same engine)"
                    : c.fromCache ? "  (cache)"
                                  : "",
                    at.c_str(), int(i) == r.best ? "  <- best" : "");
      }
      if (r.duplicates)
        std::printf("\n%zu candidate%s built the same engine as an earlier one (a knob that changes nothing here): "
                    "not measured again\n",
                    r.duplicates, r.duplicates == 1 ? "" : "s");
      if (notCached)
        std::printf("\n%zu candidate%s not in the cache (measure them, or merge the caches that did)\n", notCached,
                    notCached == 1 ? " is" : "s are");
      if (r.notSignificant >= 0)
        std::printf("\nno significant win: '%s' (%.3f ms) is within the base route's run-to-run spread\n",
                    support::printableLine(r.results[size_t(r.notSignificant)].route).c_str(),
                    r.results[size_t(r.notSignificant)].m.medianMs);
      if (r.best >= 0)
        std::printf("\nbest: '%s' %.3f ms\n", support::printableLine(r.results[size_t(r.best)].route).c_str(),
                    r.results[size_t(r.best)].m.medianMs);
      else
        std::printf("\nno candidate built, ran and met the accuracy constraint\n");
      if (r.interrupted) std::printf("interrupted: every result so far is in the cache; run again to continue\n");
    }
    return r.best >= 0 ? 0 : 1;
  };
}

}  // namespace kiln::cli

// `kiln compile model.onnx -o model.kiln [--arch sm_90] [--precision fp16|int8|fp8] [--route ROUTE]
// [--calib FILE [--keep-float REGEX]] [--io-dtype fp16]`: import, run the compile pipeline for the route, generate
// and compile the kernels with NVRTC and write the engine. Needs no GPU.
#include "codegen/lowering/ModelBuild.h"
#include "codegen/nvrtc/CompilePool.h"
#include "codegen/nvrtc/Nvrtc.h"
#include "compiler/support/Files.h"
#include "compiler/support/Text.h"
#include "tools/kiln/Commands.h"
#include "tools/kiln/ModelLoading.h"
#include "tools/kiln/Profiles.h"
#include "tuner/TensorFiles.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>

namespace kiln::cli {

// "passes: 0.123 s" (kiln compile -v).
static std::string phaseLine(const std::string &phase, double seconds) {
  char buf[64];
  std::snprintf(buf, sizeof buf, ": %.3f s", seconds);
  return phase + buf;
}

Runner addCompileCommand(CLI::App &app) {
  auto *cmd = app.add_subcommand("compile", "Compile an ONNX model into an engine file (no GPU needed)");
  auto opts = std::make_shared<ModelOptions>();
  auto out = std::make_shared<std::string>();
  auto arch = std::make_shared<std::string>("sm_90");
  auto noCache = std::make_shared<bool>(false);
  auto cacheDir = std::make_shared<std::string>();
  auto jobs = std::make_shared<unsigned>(0);
  auto json = std::make_shared<bool>(false);
  auto routeText = std::make_shared<std::string>();
  auto precision = std::make_shared<std::string>();
  auto calib = std::make_shared<std::string>(), keepFloat = std::make_shared<std::string>();
  opts->add(*cmd);
  cmd->add_option("--route", *routeText, "Build route: KNOB=VALUE;... (`kiln knobs` lists the knobs)");
  cmd->add_option("--precision", *precision,
                  "Shorthand for the route's precision knob (fp32, fp16, bf16; int8 / fp8: matrix products int8 / "
                  "fp8 e4m3, the rest fp16)");
  cmd->add_option("--calib", *calib,
                  "Calibration file (kiln calibrate) for the route's int8/fp8 products (per-channel weights, "
                  "per-tensor activations)");
  cmd->add_option("--keep-float", *keepFloat, "With --calib: products whose node name matches this regex stay float");
  auto checkInputs = std::make_shared<std::string>();
  cmd->add_option("--check-inputs", *checkInputs,
                  "fp16 routes: run the fp32 graph on these inputs (.npz) on the CPU evaluator and keep in fp32 every "
                  "node whose values there leave fp16's range");
  auto ioDtype = std::make_shared<std::string>("fp32");
  cmd->add_option("--io-dtype", *ioDtype,
                  "Storage type of the engine's float inputs and outputs: fp32 (as the model declares them), or "
                  "fp16 / bf16 (callers bind half-precision tensors; no cast kernels at the boundary)")
      ->check(CLI::IsMember({"fp32", "fp16", "bf16"}))
      ->capture_default_str();
  cmd->add_option("-o,--output", *out, "Engine file to write");
  auto emit = std::make_shared<std::string>("engine");
  cmd->add_option("--emit", *emit,
                  "What to produce: engine (the default), or launch-plan (the lowering's launches, buffers and "
                  "kernel names as text on stdout, without compiling a kernel)")
      ->check(CLI::IsMember({"engine", "launch-plan"}));
  cmd->add_option("--arch", *arch, "Target GPU architecture (sm_75 ... sm_121)")->capture_default_str();
  cmd->add_flag("--no-compile-cache", *noCache, "Compile every kernel, bypassing the on-disk NVRTC cache");
  cmd->add_option("--compile-cache-dir", *cacheDir, "NVRTC cache folder (default: $XDG_CACHE_HOME/kiln/nvrtc)");
  cmd->add_option("-j,--jobs", *jobs,
                  "Parallel NVRTC compiles, and dynamic-shape specialisations built at once (default: all cores)");
  cmd->add_flag("--json", *json, "Print a JSON summary");
  auto profile = std::make_shared<ProfileOptions>();
  profile->add(*cmd, "the shapes to build the engine's fastest for");
  cmd->add_option("--max-specialisations", profile->maxSpecialisations,
                  "Dynamic shapes: refuse a profile that needs more specialisations than this")
      ->capture_default_str();
  cmd->add_flag(
      "--no-pad", [profile](int64_t) { profile->pad = false; },
      "Dynamic shapes: run only the specialisations' own dim values, never padded ones");
  return [=]() -> int {
    if (!*cmd) return -1;
    if (out->empty() && *emit == "engine") {
      std::cerr << "kiln: error: compile needs -o ENGINE (or --emit launch-plan)\n";
      return 2;
    }
    auto t0 = std::chrono::steady_clock::now();
    codegen::BuildOptions bo;
    bo.launchPlanOnly = *emit == "launch-plan";
    if (std::string e = parseTarget(*arch, bo.target); !e.empty()) {
      std::cerr << "kiln: error: --arch: " << e << "\n";
      return 2;
    }
    std::string err;
    // Checked before the build too, so a bad -o fails at once rather than after minutes.
    const std::vector<std::string> inputs = {opts->model, *calib, opts->constantInputs, *checkInputs};
    if (auto why = out->empty() ? std::string() : support::checkOutputPath(*out, inputs); !why.empty()) {
      std::cerr << "kiln: error: -o: " << why << "\n";
      return 2;
    }
    if (!parseRoute(*routeText, *precision, bo.route, err) ||
        !checkQuantFlags(bo.route, *calib, *keepFloat, opts->model, err)) {
      std::cerr << "kiln: error: " << err << "\n";
      return 2;
    }
    bo.pipeline = {*calib, *keepFloat, *checkInputs, *ioDtype};
    bo.cache.disabled = *noCache;
    bo.cache.dir = *cacheDir;
    bo.jobs = *jobs;
    if (!*json && verbosity() >= 0) bo.progress = codegen::terminalProgress();
    // On a terminal, what the build is doing until the kernels' progress bar takes over.
    auto status =
        !*json && verbosity() == 0 && !profile->any() ? codegen::terminalStatus() : [](const std::string &) {};
    bo.onPhase = [status](const std::string &phase, double s) {
      info(1, phaseLine(phase, s));
      static const std::map<std::string, std::string> next = {{"import", "running the compile pipeline"},
                                                              {"passes", "generating code"}};
      if (auto it = next.find(phase); it != next.end()) status(it->second + " (" + phaseLine(phase, s) + ")");
    };
    bo.passTiming = verbosity() >= 2;
    ImportOptions io;
    if (auto e = opts->importOptions(io); !e.empty()) {
      std::cerr << "kiln: error: " << e << "\n";
      return 2;
    }
    mlir::MLIRContext ctx;
    codegen::ModelBuild m;
    ProfileReport report;
    if (profile->any()) {
      if (bo.launchPlanOnly) {
        std::cerr << "kiln: error: --emit launch-plan takes one shape (--shapes), not a profile\n";
        return 2;
      }
      buildProfileEngine(*opts, *profile, bo, m, report);
    } else {
      status("importing " + opts->model);
      m = codegen::buildModel(opts->model, io, bo, ctx);
      status("");
    }
    for (auto &w : m.import.warnings) warning(w);
    for (auto &r : m.remarks) note(r);
    if (!m.ok()) {
      std::cerr << "kiln: error: " << opts->model << ": " << m.error;
      if (m.error.back() != '\n') std::cerr << "\n";
      return 2;
    }
    const codegen::BuildResult &r = m.engine;
    if (bo.launchPlanOnly) {
      std::cout << r.launchPlan;
      return 0;
    }
    auto tw = std::chrono::steady_clock::now();
    if (!support::writeFileAtomically(*out, r.engine.data(), r.engine.size(), err, inputs)) {
      std::cerr << "kiln: error: -o: " << err << "\n";
      return 2;
    }
    m.phases.push_back({"write", std::chrono::duration<double>(std::chrono::steady_clock::now() - tw).count()});
    info(1, phaseLine("write", m.phases.back().second));
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const codegen::BuildStats &s = r.stats;
    if (*json) {
      nlohmann::json j = {{"engine", *out},
                          {"bytes", r.engine.size()},
                          {"arch", s.arch},
                          {"route", bo.route.canonical()},
                          {"launches", s.launches},
                          {"kernels", s.uniqueKernels},
                          {"cache_hits", s.cacheHits},
                          {"compiled", s.compiled},
                          {"arena_bytes", s.arenaBytes},
                          {"weights_bytes", s.weightsBytes},
                          {"compile_seconds", s.compileSeconds},
                          {"total_seconds", secs}};
      for (auto &[phase, seconds] : m.phases) j["phases"][phase] = seconds;
      if (!report.dims.empty()) {
        // (min/opt/max/buckets: the first profile's; "profiles": each profile's)
        j["profile"]["specialisations"] = report.specialisations;
        for (const ProfileReport::Dim &d : report.dims) {
          nlohmann::json ranges = nlohmann::json::array();
          for (const ProfileReport::Range &r : d.ranges)
            ranges.push_back({{"min", r.min}, {"opt", r.opt}, {"max", r.max}, {"buckets", r.buckets}});
          j["profile"]["dims"].push_back({{"name", d.name},
                                          {"min", d.ranges[0].min},
                                          {"opt", d.ranges[0].opt},
                                          {"max", d.ranges[0].max},
                                          {"buckets", d.ranges[0].buckets},
                                          {"profiles", ranges},
                                          {"pad", d.pad},
                                          {"no_pad_reason", d.noPad}});
        }
      }
      std::cout << jsonText(j) << "\n";
    } else {
      std::printf(
          "wrote %s (%s) for %s, route '%s': %zu launches, %zu kernels (%s%zu from cache, %zu compiled in %.1f s), "
          "arena %s, weights %s, %.1f s in all\n",
          support::printableLine(*out).c_str(), humanBytes(r.engine.size()).c_str(), s.arch.c_str(),
          support::printableLine(bo.route.canonical()).c_str(), s.launches, s.uniqueKernels,
          report.dims.empty() ? "" : "the specialisations' before merging: ", s.cacheHits, s.compiled, s.compileSeconds,
          humanBytes(s.arenaBytes).c_str(), humanBytes(s.weightsBytes).c_str(), secs);
      if (!report.dims.empty()) std::printf("profile: %zu specialisations\n", report.specialisations);
      const size_t profiles = report.dims.empty() ? 0 : report.dims[0].ranges.size();
      for (size_t p = 0; p < profiles; ++p) {
        if (profiles > 1) std::printf(" profile %zu:\n", p);
        for (const ProfileReport::Dim &d : report.dims) {
          const ProfileReport::Range &r = d.ranges[p];
          std::string buckets;
          for (int64_t b : r.buckets) buckets += (buckets.empty() ? "" : ", ") + std::to_string(b);
          std::printf("  %s %lld..%lld (opt %lld): built for %s; %s\n", support::printableLine(d.name).c_str(),
                      (long long)r.min, (long long)r.max, (long long)r.opt, buckets.c_str(),
                      d.pad ? "values between run padded to the next"
                            : ("values between are refused: " + d.noPad).c_str());
        }
      }
    }
    return 0;
  };
}

}  // namespace kiln::cli

// `kiln run model.kiln [--inputs in.npz] [--outputs run.npz] [--warmup N] [--iterations N]
// [--duration S] [--device N] [--streams N] [--host-io] [--profile] [--trace FILE] [--nvtx] [--json]`:
// execute and benchmark an engine, like trtexec. --outputs writes the inputs and outputs of one
// run. Inputs come from the file or are random (non-zero); latency is CUDA events around each run
// after warm-up: median, p90, min, max, mean, and throughput in samples/s (the first input's first
// dim is the batch). --streams N runs N contexts of the engine at once and reports their
// throughput; --trace writes the per-launch profile as a Chrome trace (Perfetto opens it).
#include "compiler/ops/Tensor.h"
#include "compiler/support/Files.h"
#include "compiler/support/Text.h"
#include "tools/kiln/Commands.h"
#include "tools/kiln/ModelLoading.h"
#include "tuner/EngineRunner.h"
#include "tuner/TensorFiles.h"

#include "compiler/importer/Importer.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>

namespace kiln::cli {

std::unique_ptr<tuner::EngineRunner> openEngine(const std::string &path, std::string &error, int device, int streams,
                                                const std::map<std::string, std::vector<int64_t>> &shapes) {
  std::vector<uint8_t> bytes;
  if (!support::readFile(path, bytes, error, "engine file")) return nullptr;
  auto r = tuner::EngineRunner::open(bytes, error, device, streams, shapes);
  if (!r) error = path + ": " + error;
  return r;
}

bool loadInputs(tuner::EngineRunner &r, const std::string &path, uint32_t seed, std::vector<tuner::HostTensor> &inputs,
                std::string &error) {
  if (path.empty()) {
    inputs = tuner::randomInputs(r.inputs(), seed);
  } else {
    std::vector<tuner::HostTensor> all;
    if (!tuner::readTensors(path, all, error)) return false;
    for (const auto &t : r.inputs()) {
      auto it = std::find_if(all.begin(), all.end(), [&](const tuner::HostTensor &x) { return x.name == t.name; });
      if (it == all.end()) {
        error = path + " has no array named '" + t.name + "' (an input of the engine)";
        return false;
      }
      inputs.push_back(*it);
      // float32 arrays bind to an engine built with --io-dtype fp16|bf16 (rounded as a cast would).
      if ((t.dtype == int32_t(ops::DType::F16) || t.dtype == int32_t(ops::DType::BF16)) &&
          it->dtype == int32_t(ops::DType::F32))
        tuner::convertFloat(inputs.back(), t.dtype);
    }
  }
  return r.setInputs(inputs, error);
}

// The inputs and outputs of one run in one .npz, so `kiln check --reference` can replay it
// (an output named like an input is stored under the output's name only).
static bool writeRunFile(const std::string &path, const std::vector<tuner::HostTensor> &inputs,
                         const std::vector<tuner::HostTensor> &outputs, const std::vector<std::string> &files,
                         std::string &error) {
  std::vector<tuner::HostTensor> all = outputs;
  for (const auto &t : inputs)
    if (std::none_of(outputs.begin(), outputs.end(), [&](auto &o) { return o.name == t.name; })) all.push_back(t);
  if (!tuner::writeTensors(path, all, error, files)) {
    error = "--outputs: " + error;
    return false;
  }
  return true;
}

static nlohmann::json latencyJson(const tuner::Timing &t) {
  return {{"median", t.median()}, {"p90", t.p90()}, {"min", t.min()}, {"max", t.max()}, {"mean", t.mean()}};
}

// The per-launch profile as a Chrome trace: one complete event per launch, end to end on one
// track in launch order (they were timed one by one), named by kernel, with the node(s).
static bool writeTrace(const std::string &path, const std::vector<tuner::LaunchTime> &launches,
                       const std::string &device, const std::string &engine, std::string &error) {
  nlohmann::json events = nlohmann::json::array();
  double ts = 0;
  for (size_t i = 0; i < launches.size(); ++i) {
    const auto &l = launches[i];
    double dur = double(l.ms) * 1e3;  // microseconds
    events.push_back(
        {{"name", l.kernel},
         {"cat", l.kernel.rfind("kiln_", 0) == 0 ? l.kernel.substr(0, l.kernel.rfind('_')) : l.kernel},
         {"ph", "X"},
         {"ts", ts},
         {"dur", dur},
         {"pid", 1},
         {"tid", 1},
         {"args", {{"node", l.node}, {"launch", i}, {"flops", l.flops}, {"traffic_bytes", l.trafficBytes}}}});
    ts += dur;
  }
  // (Perfetto ignores otherData; `kiln report` reads the device for its roofline.)
  nlohmann::json doc = {
      {"traceEvents", events}, {"displayTimeUnit", "ns"}, {"otherData", {{"device", device}, {"engine", engine}}}};
  if (!support::writeFileAtomically(path, doc.dump(1) + "\n", error)) {
    error = "--trace: " + error;
    return false;
  }
  return true;
}

Runner addRunCommand(CLI::App &app) {
  auto *cmd = app.add_subcommand("run", "Execute and benchmark an engine on the GPU");
  auto path = std::make_shared<std::string>();
  auto in = std::make_shared<std::string>(), out = std::make_shared<std::string>();
  auto warmup = std::make_shared<int>(10), iterations = std::make_shared<int>(100);
  auto seed = std::make_shared<uint32_t>(1);
  auto json = std::make_shared<bool>(false), profile = std::make_shared<bool>(false);
  auto hostIo = std::make_shared<bool>(false);
  auto duration = std::make_shared<double>(0);
  auto device = std::make_shared<int>(0), streams = std::make_shared<int>(1);
  auto trace = std::make_shared<std::string>(), shapes = std::make_shared<std::string>();
  cmd->add_option("engine", *path, "Engine file (.kiln)")->required();
  cmd->add_option("--shapes", *shapes,
                  "Input shapes inside the profile of an engine with dynamic shapes, e.g. ids:8x100,mask:8x100 "
                  "(default: its opt shapes)");
  cmd->add_option("--inputs", *in, "Inputs (.npz with one array per input name; default: random)");
  cmd->add_option("--outputs", *out,
                  "Write the inputs and outputs of one run here (.npz; `kiln check --reference` reads it)");
  cmd->add_option("--warmup", *warmup, "Untimed runs first")->capture_default_str()->check(CLI::NonNegativeNumber);
  cmd->add_option("--iterations", *iterations, "Timed runs")->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--seed", *seed, "Seed of the random inputs")->capture_default_str();
  cmd->add_option("--duration", *duration,
                  "Keep timing until this many seconds have passed (at least --iterations runs)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--device", *device, "CUDA device ordinal")->capture_default_str()->check(CLI::NonNegativeNumber);
  cmd->add_option("--streams", *streams,
                  "Run this many contexts of the engine at once, each on its own stream, and report their throughput")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  cmd->add_flag("--host-io", *hostIo,
                "Time each run with its input uploads and output downloads (page-locked host memory), like "
                "trtexec's host latency");
  cmd->add_flag("--profile", *profile, "Also time every launch (median of 5 profiled runs)");
  cmd->add_option("--trace", *trace,
                  "Write the per-launch profile as a Chrome trace (JSON; chrome://tracing or ui.perfetto.dev), "
                  "launches end to end as profiled one by one; implies --profile");
  auto nvtx = std::make_shared<bool>(false);
  cmd->add_flag("--nvtx", *nvtx,
                "Name every launch by its nodes with an NVTX range, for Nsight Systems (nsys profile kiln run "
                "--nvtx ...); launches go one by one, not as a CUDA graph (the same as KILN_NVTX=1)");
  cmd->add_flag("--json", *json, "Print a JSON document");
  return [=]() -> int {
    if (!*cmd) return -1;
    std::string err;
    if (*nvtx) setenv("KILN_NVTX", "1", 1);  // (read by the runtime as each context is created)
    const std::vector<std::string> files = {*path, *in};
    for (auto [flag, file] : {std::pair{"--outputs", out.get()}, std::pair{"--trace", trace.get()}})
      if (!file->empty())
        if (auto why = support::checkOutputPath(*file, files); !why.empty()) {
          std::cerr << "kiln: error: " << flag << ": " << why << "\n";
          return 2;
        }
    if (*streams > 1 && *hostIo) {
      std::cerr << "kiln: error: --host-io times one stream; leave out --streams\n";
      return 2;
    }
    *profile |= !trace->empty();
    ImportOptions parsed;
    if (auto e = parseShapeOverrides(*shapes, parsed); !e.empty() || !parsed.dims.empty()) {
      std::cerr << "kiln: error: --shapes: " << (e.empty() ? "give each input's whole shape (x:2x128)" : e) << "\n";
      return 2;
    }
    auto r = openEngine(*path, err, *device, *streams, parsed.shapes);
    std::vector<tuner::HostTensor> inputs, outputs;
    tuner::Timing t;
    tuner::Throughput many;
    std::vector<tuner::LaunchTime> launches;
    if (!r || !loadInputs(*r, *in, *seed, inputs, err) || !r->run(outputs, err) ||
        (!out->empty() && !writeRunFile(*out, inputs, outputs, files, err)) ||
        !r->time(*warmup, *iterations, t, err, *streams > 1 ? 0 : *duration, *hostIo) ||
        (*streams > 1 && !r->throughput(*warmup, *iterations, *duration, many, err)) ||
        (*profile && !r->profile(5, launches, err))) {
      std::cerr << "kiln: error: " << err << "\n";
      return 2;
    }
    if (*profile) {  // (the engine file again, for each launch's FLOPs and bytes)
      std::vector<uint8_t> bytes;
      if (support::readFile(*path, bytes, err, "engine file")) tuner::attachLaunchCosts(bytes, launches);
      if (!trace->empty() && !writeTrace(*trace, launches, r->deviceName(), *path, err)) {
        std::cerr << "kiln: error: " << err << "\n";
        return 2;
      }
    }
    int64_t batch = r->inputs().empty() || r->inputs()[0].shape.empty() ? 1 : r->inputs()[0].shape[0];
    double throughput = t.median() > 0 ? batch * 1000.0 / t.median() : 0;
    double manyThroughput = many.wallMs > 0 ? double(many.runs * batch) * 1000.0 / many.wallMs : 0;
    if (*json) {
      nlohmann::json j = {{"engine", *path},
                          {"device", r->deviceName()},
                          {"route", r->route()},
                          {"iterations", *iterations},
                          {"warmup", *warmup},
                          {"latency_ms", latencyJson(t)},
                          {"runs", t.ms.size()},
                          {"host_io", *hostIo},
                          {"throughput_per_s", throughput},
                          {"batch", batch}};
      if (*streams > 1)
        j["streams"] = {{"count", *streams},
                        {"runs", many.runs},
                        {"wall_ms", many.wallMs},
                        {"throughput_per_s", manyThroughput},
                        {"latency_ms", latencyJson(many.latency)}};
      if (!trace->empty()) j["trace"] = *trace;
      if (*profile) {
        nlohmann::json l = nlohmann::json::array();
        for (auto &x : launches)
          l.push_back({{"node", x.node},
                       {"kernel", x.kernel},
                       {"ms", x.ms},
                       {"flops", x.flops},
                       {"traffic_bytes", x.trafficBytes}});
        j["launches"] = l;
      }
      std::cout << jsonText(j) << "\n";
      return 0;
    }
    std::printf("engine:     %s on %s, route '%s'\n", support::printableLine(*path).c_str(),
                support::printableLine(r->deviceName()).c_str(), support::printableLine(r->route()).c_str());
    std::printf("latency:    median %.3f ms, p90 %.3f, min %.3f, max %.3f, mean %.3f (%zu runs after %d warm-up%s)\n",
                t.median(), t.p90(), t.min(), t.max(), t.mean(), t.ms.size(), *warmup,
                *hostIo ? ", with input uploads and output downloads" : "");
    std::printf("throughput: %.1f samples/s (batch %lld)\n", throughput, static_cast<long long>(batch));
    if (*streams > 1)
      std::printf("streams:    %d at once: %.1f samples/s (%lld runs in %.1f ms), latency median %.3f ms, p90 %.3f\n",
                  *streams, manyThroughput, static_cast<long long>(many.runs), many.wallMs, many.latency.median(),
                  many.latency.p90());
    if (!trace->empty()) std::printf("trace:      %s\n", support::printableLine(*trace).c_str());
    if (*profile) {
      float total = 0;
      std::map<std::string, std::pair<float, int>> byKind;
      for (auto &x : launches) {
        total += x.ms;
        std::string k = x.kernel.substr(0, x.kernel.rfind('_'));
        byKind[k].first += x.ms, byKind[k].second++;
      }
      std::printf("\nprofile: %zu launches, %.3f ms launched one by one\n", launches.size(), total);
      for (auto &[k, v] : byKind)
        std::printf("  %-20s %4d launches %9.3f ms %5.1f%%\n", support::printableLine(k).c_str(), v.second, v.first,
                    100 * v.first / total);
      std::vector<tuner::LaunchTime> top = launches;
      std::sort(top.begin(), top.end(), [](auto &a, auto &b) { return a.ms > b.ms; });
      std::printf("  %9s     %9s %9s  %-28s %s\n", "time", "TFLOP/s", "GB/s", "kernel", "node");
      for (size_t i = 0; i < top.size() && i < 15; ++i) {
        double s = top[i].ms * 1e-3;
        std::printf("  %9.3f ms  %9.2f %9.1f  %-28s %s\n", top[i].ms, s > 0 ? top[i].flops / s * 1e-12 : 0.0,
                    s > 0 ? top[i].trafficBytes / s * 1e-9 : 0.0, support::printableLine(top[i].kernel).c_str(),
                    support::printableLine(top[i].node).c_str());
      }
    }
    return 0;
  };
}

}  // namespace kiln::cli

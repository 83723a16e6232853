#include "tuner/Tuner.h"

#include "codegen/lowering/ModelBuild.h"
#include "compiler/ir/TensorConversion.h"
#include "compiler/ops/Tensor.h"
#include "compiler/support/Files.h"
#include "runtime/format/EngineFormat.h"
#include "tuner/Child.h"
#include "tuner/Space.h"
#include "tuner/TensorFiles.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

namespace kiln::tuner {

namespace {

using Clock = std::chrono::steady_clock;

// A node's value must cut its launches' time by more than this fraction to enter the composed
// route of a nodes search (profiled times are medians of 5 runs of each launch alone).
constexpr double kNodeMinGain = 0.03;

std::string hashOf(const std::vector<uint8_t> &bytes) { return rt::fnv1a64Hex(bytes.data(), bytes.size()); }

// A hash of what an engine computes and how: its metadata written again without the route it
// records, then its weights where they lie in the file (not copied: they can be hundreds of
// MiB); "" when the bytes do not parse.
std::string contentHash(const std::vector<uint8_t> &engine) {
  rt::EngineDesc desc;
  rt::ByteRange weights;
  std::string error;
  if (rt::parseEngine(engine.data(), engine.size(), desc, error, &weights) != rt::ParseStatus::Ok) return "";
  desc.route.clear();
  return hashOf(rt::writeEngine(desc)) + rt::fnv1a64Hex(engine.data() + weights.offset, weights.size);
}
std::string hashOf(const std::string &s) { return rt::fnv1a64Hex(s.data(), s.size()); }

bool readBytes(const std::string &path, std::vector<uint8_t> &out) {
  std::string ignored;
  return support::readFile(path, out, ignored);
}

bool writeBytes(const std::string &path, const std::vector<uint8_t> &bytes, std::string &error,
                const std::vector<std::string> &inputs = {}) {
  return support::writeFileAtomically(path, bytes.data(), bytes.size(), error, inputs);
}

// A model's inputs and outputs as imported (name, dtype, shape), as the engine's I/O table will
// list them (unnamed ones as the engine builder names them), without building it.
void moduleIo(mlir::ModuleOp m, std::vector<HostTensor> &ins, std::vector<HostTensor> &outs) {
  m.walk([&](mlir::func::FuncOp f) {
    auto add = [](std::vector<HostTensor> &v, mlir::Type type, mlir::StringAttr name, const std::string &fallback) {
      ops::TensorType t = tensorTypeOf(type);
      v.push_back({name ? name.str() : fallback, static_cast<int32_t>(t.dtype), t.shape, {}});
    };
    for (unsigned k = 0; k < f.getNumArguments(); ++k)
      add(ins, f.getArgument(k).getType(), f.getArgAttrOfType<mlir::StringAttr>(k, "kiln.name"),
          "input" + std::to_string(k));
    for (unsigned k = 0; k < f.getNumResults(); ++k)
      add(outs, f.getResultTypes()[k], f.getResultAttrOfType<mlir::StringAttr>(k, "kiln.name"),
          "output" + std::to_string(k));
  });
}

// The tensor called `name` in `v`, or nullptr.
const HostTensor *named(const std::vector<HostTensor> &v, const std::string &name) {
  auto it = std::find_if(v.begin(), v.end(), [&](const HostTensor &t) { return t.name == name; });
  return it == v.end() ? nullptr : &*it;
}

// A --reference file must hold every output of the model with its shape, and nothing else but
// inputs: a misspelt name would otherwise leave that output unchecked or fail every candidate.
bool checkReference(const std::string &path, const std::vector<HostTensor> &file, const std::vector<HostTensor> &inputs,
                    const std::vector<HostTensor> &outputs, std::string &error) {
  std::string names;
  for (const HostTensor &t : file) names += (names.empty() ? "" : ", ") + t.name;
  for (const HostTensor &o : outputs) {
    const HostTensor *it = named(file, o.name);
    if (!it) {
      error = path + ": no array for output '" + o.name + "' (it holds: " + (names.empty() ? "nothing" : names) + ")";
      return false;
    }
    if (it->shape != o.shape) {
      error = path + ": output '" + o.name + "' has shape " + ops::shapeString(it->shape) + ", the model's is " +
              ops::shapeString(o.shape);
      return false;
    }
  }
  for (const HostTensor &t : file)
    if (!named(inputs, t.name) && !named(outputs, t.name)) {
      error = path + ": array '" + t.name + "' is neither an input nor an output of the model";
      return false;
    }
  return true;
}

// What a measuring child's CUDA_VISIBLE_DEVICES must be for --devices index `index`: the
// index-th entry of this process's own CUDA_VISIBLE_DEVICES when that is set (so --devices counts
// the GPUs the caller left visible, as CUDA does), else the index itself.
bool visibleDevice(int index, std::string &value, std::string &error) {
  const char *env = std::getenv("CUDA_VISIBLE_DEVICES");
  if (!env || !*env) {
    value = std::to_string(index);
    return true;
  }
  std::vector<std::string> ids;
  std::stringstream ss(env);
  for (std::string id; std::getline(ss, id, ',');) {
    // CUDA shows no device at all when one is listed twice (checked on the H200: '0,0' → 0).
    if (std::find(ids.begin(), ids.end(), id) != ids.end()) {
      error = std::string("CUDA_VISIBLE_DEVICES='") + env + "' lists '" + id + "' twice, which leaves CUDA no device";
      return false;
    }
    ids.push_back(id);
  }
  if (size_t(index) >= ids.size()) {
    error = "--devices " + std::to_string(index) + ": CUDA_VISIBLE_DEVICES='" + env + "' leaves " +
            std::to_string(ids.size()) + " device" + (ids.size() == 1 ? "" : "s") + " visible (indices count those)";
    return false;
  }
  value = ids[size_t(index)];
  return true;
}

class Session {
 public:
  Session(const TuneOptions &o, const std::atomic<bool> &stop) : o_(o), stop_(stop) {}
  TuneReport run();

 private:
  void log(const std::string &s) {
    if (o_.log) o_.log(s);
  }
  void progress();
  bool buildEngine(const std::string &route, std::vector<uint8_t> &engine, std::string &error, double &seconds);
  // --inputs and --reference checked against the model's inputs and outputs (no GPU, also in a
  // dry run): fills givenInputs_ (empty: random inputs) and reference_.
  bool readTensorFiles(const std::vector<HostTensor> &ins, const std::vector<HostTensor> &outs, std::string &error);
  // The fp32 default route's engine, and the inputs file the candidates run on.
  bool prepareInputs(std::string &error);
  // Without --reference: the fp32 default route's outputs on the first device (cached on disk).
  bool computeReference(std::string &error);
  // The environment of every device (children probe them; all must agree): report_.environment.
  bool probeDevices(std::string &error);
  // --from-cache: the environment whose measurements to use (report_.environment).
  bool cachedEnvironment(std::string &error);
  // Measures `routes` (cache first), over the devices; appends to report_.results. `profile`: each
  // launch is also timed alone (kiln run --profile), kept in the measurement's `launches`.
  void measure(const std::vector<knobs::Route> &routes, bool profile = false);
  // --search nodes, after its first phase: the route that gives each node the value its launches
  // ran fastest under (Space::pickNodeValues), measured end to end.
  void composeNodeWinners(const SearchSpace &space);
  void finish(size_t result, int exitCode, bool timedOut, const std::string &outNpz, const Child &child);
  void judge(const std::string &route, Measurement &m) const;
  CacheKey key(const std::string &route) const { return {modelHash_, inputsKey_, route, report_.environment}; }
  // The files this tune reads, which -o must not replace.
  std::vector<std::string> inputFiles() const {
    std::string ignored;
    return {o_.model, o_.reference, o_.inputs, o_.calib,
            o_.cachePath.empty() ? defaultCachePath(ignored) : o_.cachePath};
  }
  double elapsed() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }
  bool outOfTime() const { return o_.timeBudgetSeconds > 0 && elapsed() > o_.timeBudgetSeconds; }

  const TuneOptions &o_;
  target::GpuTarget target_;  // o_.arch
  const std::atomic<bool> &stop_;
  TuneReport report_;
  Clock::time_point start_ = Clock::now();
  std::unique_ptr<Cache> cache_;
  std::string work_, modelHash_, shapes_, inputsNpz_;
  std::map<int, std::string> visible_;  // --devices index → the children's CUDA_VISIBLE_DEVICES
  // The cache key's input part: shape overrides, and hashes of the input data and the reference
  // the accuracy metrics were computed against.
  std::string inputsKey_;
  std::vector<HostTensor> reference_;
  std::vector<uint8_t> refEngine_;           // the fp32 default route's engine
  std::vector<HostTensor> modelInputs_;      // names, dtypes and shapes (no data)
  std::vector<HostTensor> givenInputs_;      // from --inputs or the reference file
  std::map<std::string, size_t> done_;       // route → result index
  std::map<std::string, size_t> byContent_;  // engine content hash (route aside) → result index
  size_t total_ = 0, measured_ = 0;          // candidates planned; results that were measured (not cached)
  double measuringSince_ = 0;                // elapsed() when measuring began
};

void Session::progress() {
  if (!o_.progress) return;
  Progress p;
  p.total = total_;
  for (const CandidateResult &r : report_.results) {
    if (r.m.status.empty()) continue;  // in flight
    ++p.done;
    if (r.m.status != "ok")
      ++p.failed;
    else if (p.bestMs == 0 || r.m.medianMs < p.bestMs)
      p.bestMs = r.m.medianMs, p.bestRoute = r.route;
  }
  if (measured_ > 0 && p.total >= p.done)
    p.etaSeconds = (elapsed() - measuringSince_) / double(measured_) * double(p.total - p.done);
  o_.progress(p);
}

bool Session::buildEngine(const std::string &route, std::vector<uint8_t> &engine, std::string &error, double &seconds) {
  codegen::BuildOptions bo;
  bo.target = target_;
  bo.pipeline.calib = o_.calib;
  if (!knobs::Route::parse(route, &bo.route, &error)) return false;
  ImportOptions io;
  io.allowExternalOutside = o_.allowExternalOutside;
  if (auto e = parseShapeOverrides(o_.shapes, io); !e.empty()) {
    error = e;
    return false;
  }
  mlir::MLIRContext ctx;
  codegen::ModelBuild b = codegen::buildModel(o_.model, io, bo, ctx);
  seconds = b.seconds;
  if (!b.ok()) {
    error = b.error;
    return false;
  }
  engine = std::move(b.engine.engine);
  return true;
}

bool Session::prepareInputs(std::string &error) {
  double secs = 0;
  log("building the fp32 default-route engine (reference and input shapes)");
  if (!buildEngine("", refEngine_, error, secs)) {
    error = "the default route does not build: " + error;
    return false;
  }
  std::vector<HostTensor> inputs = givenInputs_.empty() ? randomInputs(modelInputs_, 1) : givenInputs_;
  inputsNpz_ = work_ + "/inputs.npz";
  return writeTensors(inputsNpz_, inputs, error);
}

bool Session::readTensorFiles(const std::vector<HostTensor> &ins, const std::vector<HostTensor> &outs,
                              std::string &error) {
  std::vector<HostTensor> refFile;
  if (!o_.reference.empty() &&
      (!readTensors(o_.reference, refFile, error) || !checkReference(o_.reference, refFile, ins, outs, error)))
    return false;
  for (auto &t : refFile)
    if (!named(ins, t.name)) reference_.push_back(t);
  // Inputs: given, else the reference file's, else (none here) random.
  std::string from = o_.inputs;
  bool inReference =
      !refFile.empty() && std::all_of(ins.begin(), ins.end(), [&](auto &t) { return named(refFile, t.name); });
  if (from.empty() && inReference) from = o_.reference;
  if (from.empty()) {
    if (!o_.reference.empty()) {
      error = o_.reference + " holds no inputs: pass the inputs it was computed on with --inputs";
      return false;
    }
    return true;
  }
  std::vector<HostTensor> all;
  if (from == o_.reference)
    all = refFile;
  else if (!readTensors(from, all, error))
    return false;
  for (auto &t : ins) {
    const HostTensor *it = named(all, t.name);
    if (!it) {
      error = from + " has no array for input '" + t.name + "'";
      return false;
    }
    if (it->dtype != t.dtype || it->shape != t.shape) {
      error = from + ": input '" + t.name + "' has another dtype or shape than the model's";
      return false;
    }
    givenInputs_.push_back(*it);
  }
  return true;
}

bool Session::computeReference(std::string &error) {
  if (!o_.reference.empty()) return true;
  // The fp32 default route's outputs on this GPU, kept beside the cache.
  std::vector<uint8_t> inBytes;
  readBytes(inputsNpz_, inBytes);
  std::string dir = cache_->path();
  dir = dir.substr(0, dir.find_last_of('/') == std::string::npos ? 0 : dir.find_last_of('/'));
  std::string refPath = (dir.empty() ? "." : dir) + "/references/" + modelHash_ + "-" +
                        hashOf(shapes_ + report_.environment) + "-" + hashOf(inBytes) + ".npz";
  std::vector<HostTensor> cached;
  std::string ignore;
  if (readTensors(refPath, cached, ignore)) {
    log("reference outputs from " + refPath);
  } else {
    log("computing the reference outputs (fp32 default route)");
    std::string eng = work_ + "/reference.kiln";
    if (!writeBytes(eng, refEngine_, error)) return false;
    Child c;
    if (!spawn({selfExecutable(), "run", eng, "--inputs", inputsNpz_, "--outputs", work_ + "/reference.npz", "--warmup",
                "0", "--iterations", "1"},
               {{"CUDA_VISIBLE_DEVICES", visible_.at(o_.devices.front())}}, work_ + "/ref.out", work_ + "/ref.err",
               o_.timeoutSeconds, c, error))
      return false;
    int code;
    bool timedOut;
    wait(c, code, timedOut);
    if (timedOut || code != 0) {
      error =
          "the reference engine failed: " + (timedOut ? std::string("timeout") : readText(work_ + "/ref.err", 2000));
      return false;
    }
    if (!readTensors(work_ + "/reference.npz", cached, error)) return false;
    mkdir((dir + "/references").c_str(), 0755);
    std::string e2;
    std::vector<uint8_t> b;
    if (readBytes(work_ + "/reference.npz", b)) writeBytes(refPath, b, e2);  // best effort
  }
  for (auto &t : cached)
    if (!named(modelInputs_, t.name)) reference_.push_back(t);
  return true;
}

// ok or inaccurate, from the stored metrics and this tune's constraints (--accuracy, else the
// route's precision default). Cached results are judged again, so a stricter constraint never
// reuses an earlier verdict.
void Session::judge(const std::string &route, Measurement &m) const {
  std::vector<std::pair<std::string, Metrics>> metrics;
  if (!metricsFromJson(m.metrics, metrics)) {
    m.status = "run_failed", m.reason = "unreadable accuracy metrics";
    return;
  }
  std::vector<Constraint> c;
  std::string perr;
  if (!o_.accuracy.empty()) parseConstraints(o_.accuracy, c, perr);
  if (c.empty()) c = defaultConstraints(route);
  std::vector<std::string> bad = violations(c, metrics);
  m.status = bad.empty() ? "ok" : "inaccurate";
  m.reason.clear();
  for (auto &b : bad) m.reason += (m.reason.empty() ? "" : "; ") + b;
}

void Session::finish(size_t index, int exitCode, bool timedOut, const std::string &outNpz, const Child &child) {
  CandidateResult &r = report_.results[index];
  Measurement &m = r.m;
  if (timedOut) {
    m.status = "timeout";
    m.reason = "no result within " + std::to_string(int(o_.timeoutSeconds)) + " s";
  } else if (exitCode != 0) {
    m.status = "run_failed";
    std::string err = readText(child.errPath, 4000);
    while (!err.empty() && (err.back() == '\n' || err.back() == ' ')) err.pop_back();
    m.reason = "exit " + std::to_string(exitCode) + ": " + err;
  } else {
    std::vector<HostTensor> outs;
    std::string error;
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(readText(child.outPath));
    } catch (...) {}
    if (!j.contains("latency_ms") || !readTensors(outNpz, outs, error)) {
      m.status = "run_failed";
      m.reason = error.empty() ? "no timing in the child's output" : error;
    } else {
      m.medianMs = j["latency_ms"]["median"];
      m.p90Ms = j["latency_ms"]["p90"];
      m.minMs = j["latency_ms"]["min"];
      m.runs = j.value("iterations", 0);
      std::vector<std::pair<std::string, Metrics>> metrics;
      for (const HostTensor &ref : reference_) {
        const HostTensor *it = named(outs, ref.name);
        if (!it || numElements(it->shape) != numElements(ref.shape)) {
          m.status = "run_failed";
          m.reason = "output '" + ref.name + "' missing or of another size than the reference";
          break;
        }
        Metrics x = compare(*it, ref);
        metrics.push_back({ref.name, x});
      }
      m.metrics = metricsToJson(metrics);
      if (j.contains("launches")) {
        nlohmann::json l = nlohmann::json::array();
        for (auto &x : j["launches"])
          l.push_back({{"node", x.value("node", "")}, {"kernel", x.value("kernel", "")}, {"ms", x.value("ms", 0.0)}});
        m.launches = l.dump();
      }
      if (m.status.empty()) judge(r.route, m);
    }
  }
  std::string error;
  if (!cache_->store(key(r.route), m, error)) log("warning: " + error);
  char line[256];
  std::snprintf(line, sizeof line, "[%zu] %-11s %8.3f ms  %s", index + 1, m.status.c_str(), m.medianMs,
                r.route.empty() ? "(default route)" : shortRoute(r.route).c_str());
  log(line + (m.status == "ok" ? std::string() : "  — " + m.reason.substr(0, 160)));
  ++measured_;
  progress();
}

void Session::measure(const std::vector<knobs::Route> &routes, bool profile) {
  struct Running {
    Child child;
    size_t result;
    std::string outNpz;
  };
  std::map<int, Running> running;  // device → child
  size_t next = 0;
  auto reap = [&](bool block) {
    for (auto it = running.begin(); it != running.end();) {
      int code;
      bool timedOut;
      if (block)
        wait(it->second.child, code, timedOut);
      else if (!finished(it->second.child, code, timedOut)) {
        ++it;
        continue;
      }
      finish(it->second.result, code, timedOut, it->second.outNpz, it->second.child);
      it = running.erase(it);
    }
  };
  while (next < routes.size()) {
    if (stop_ || outOfTime()) {
      report_.interrupted = report_.interrupted || stop_;
      log(stop_ ? "interrupted: finishing the candidates in flight, measuring no more"
                : "time budget spent: measuring no more candidates");
      break;
    }
    std::string route = routes[next++].canonical();
    if (done_.count(route)) continue;
    CandidateResult r;
    r.route = route;
    done_[route] = report_.results.size();
    if (o_.readCache) {
      std::string error;
      if (cache_->lookup(key(route), r.m, error)) {
        r.fromCache = true;
        if (r.m.status == "ok" || r.m.status == "inaccurate") judge(route, r.m);
        report_.results.push_back(r);
        log("[" + std::to_string(report_.results.size()) + "] " + r.m.status + " (cache)  " +
            (route.empty() ? "(default route)" : shortRoute(route)));
        progress();
        continue;
      }
    }
    if (o_.fromCache) {  // (measuring nothing)
      r.m.status = "not_cached";
      r.m.reason = "no measurement in the cache";
      report_.results.push_back(r);
      log("[" + std::to_string(report_.results.size()) + "] not in the cache  " +
          (route.empty() ? "(default route)" : shortRoute(route)));
      progress();
      continue;
    }
    std::vector<uint8_t> engine;
    std::string error;
    size_t index = report_.results.size();
    report_.results.push_back(r);
    if (!buildEngine(route, engine, error, report_.results[index].buildSeconds)) {
      Measurement &m = report_.results[index].m;
      m.status = "build_failed";
      m.reason = error;
      std::string e2;
      if (!cache_->store(key(route), m, e2)) log("warning: " + e2);
      log("[" + std::to_string(index + 1) + "] build_failed  " + shortRoute(route) + "  — " + error.substr(0, 200));
      ++measured_;
      progress();
      continue;
    }
    // A knob that changes nothing here: the same engine as an earlier candidate's.
    if (std::string content = contentHash(engine); !content.empty()) {
      auto [it, fresh] = byContent_.emplace(content, index);
      if (!fresh) {
        report_.results[index].sameAs = int(it->second);
        ++report_.duplicates;
        log("[" + std::to_string(index + 1) + "] same engine as [" + std::to_string(it->second + 1) +
            "]: not measured  " + shortRoute(route));
        continue;
      }
    }
    // A free device (waiting for one when all are busy).
    int device = -1;
    while (device < 0) {
      reap(false);
      for (int d : o_.devices)
        if (!running.count(d)) {
          device = d;
          break;
        }
      if (device < 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    std::string stem = work_ + "/c" + std::to_string(index);
    if (!writeBytes(stem + ".kiln", engine, error)) {
      report_.results[index].m = {"run_failed", error};
      log("[" + std::to_string(index + 1) + "] run_failed  " + shortRoute(route) + "  — " + error);
      progress();
      continue;
    }
    Running run;
    run.result = index;
    run.outNpz = stem + ".npz";
    std::vector<std::string> args = {selfExecutable(), "run",
                                     stem + ".kiln",   "--inputs",
                                     inputsNpz_,       "--outputs",
                                     run.outNpz,       "--json",
                                     "--warmup",       std::to_string(o_.warmup),
                                     "--iterations",   std::to_string(o_.iterations)};
    if (profile) args.push_back("--profile");
    if (!spawn(args, {{"CUDA_VISIBLE_DEVICES", visible_.at(device)}}, stem + ".out", stem + ".err", o_.timeoutSeconds,
               run.child, error)) {
      report_.results[index].m = {"run_failed", error};
      log("[" + std::to_string(index + 1) + "] run_failed  " + shortRoute(route) + "  — " + error);
      progress();
      continue;
    }
    running[device] = run;
  }
  reap(true);
  // The duplicates get their originals' measurements (judged by their own routes' constraints).
  for (CandidateResult &r : report_.results) {
    if (r.sameAs < 0 || !r.m.status.empty()) continue;
    r.m = report_.results[size_t(r.sameAs)].m;
    if (r.m.status == "ok" || r.m.status == "inaccurate") judge(r.route, r.m);
    std::string error;
    if (!cache_->store(key(r.route), r.m, error)) log("warning: " + error);
    progress();
  }
}

void Session::composeNodeWinners(const SearchSpace &space) {
  // The base route's profile first, then every other profiled candidate that ran.
  std::vector<std::pair<knobs::Route, std::vector<NodeLaunch>>> profiles;
  const std::string base = space.base().canonical();
  for (int pass = 0; pass < 2; ++pass)
    for (const CandidateResult &r : report_.results) {
      if ((r.route == base) != (pass == 0) || r.m.launches.empty() ||
          (r.m.status != "ok" && r.m.status != "inaccurate"))
        continue;
      std::pair<knobs::Route, std::vector<NodeLaunch>> p;
      std::string err;
      if (!knobs::Route::parse(r.route, &p.first, &err)) continue;
      try {
        for (auto &x : nlohmann::json::parse(r.m.launches))
          p.second.push_back({x.value("node", ""), x.value("kernel", ""), x.value("ms", 0.0)});
      } catch (...) {
        continue;
      }
      profiles.push_back(std::move(p));
    }
  if (profiles.empty() || profiles.front().first.canonical() != base) {
    log("nodes search: no profile of the base route; composing nothing");
    return;
  }
  std::vector<NodeChoice> picks = space.pickNodeValues(profiles, kNodeMinGain);
  if (picks.empty()) {
    log("nodes search: no node ran more than " + std::to_string(int(kNodeMinGain * 100)) +
        "% faster under another value with other kernels");
    return;
  }
  knobs::Route composed = space.base();
  std::string err;
  for (const NodeChoice &c : picks) {
    composed.set(c.knob, c.value, &err);
    char line[512];
    std::snprintf(line, sizeof line, "nodes search: %s=%s  %.4f -> %.4f ms", c.knob.c_str(), c.value.c_str(), c.baseMs,
                  c.ms);
    log(line);
  }
  std::string what =
      "the composed route of " + std::to_string(picks.size()) + " node value" + (picks.size() == 1 ? "" : "s");
  if (done_.count(composed.canonical())) return log("nodes search: " + what + " was measured already");
  log("nodes search: measuring " + what);
  total_ += 1;
  measure({composed});
}

// The environment of every device, asked of children (that see their device as the measuring
// children do) so that this process never initialises CUDA (it forks NVRTC workers). A
// measurement is keyed by its GPU and driver, so every device of one tune must give the same.
bool Session::probeDevices(std::string &error) {
  for (int d : o_.devices)
    if (!visibleDevice(d, visible_[d], error)) return false;
  std::vector<Child> probes(o_.devices.size());
  for (size_t k = 0; k < o_.devices.size(); ++k) {
    int d = o_.devices[k];
    std::string stem = work_ + "/env" + std::to_string(d);
    if (!spawn({selfExecutable(), "device", "--index", "0"}, {{"CUDA_VISIBLE_DEVICES", visible_[d]}}, stem + ".out",
               stem + ".err", 60, probes[k], error))
      return false;
  }
  for (size_t k = 0; k < o_.devices.size(); ++k) {
    int code;
    bool timedOut;
    wait(probes[k], code, timedOut);
    std::string stem = work_ + "/env" + std::to_string(o_.devices[k]);
    std::string env = readText(stem + ".out");
    while (!env.empty() && env.back() == '\n') env.pop_back();
    if (!report_.error.empty()) continue;  // (still reaps every probe)
    if (code != 0 || env.empty()) {
      std::string which = o_.devices.size() > 1 ? " (device " + std::to_string(o_.devices[k]) + ")" : "";
      std::string why = readText(stem + ".err", 2000);
      for (const char *prefix : {"kiln: error: ", "kiln: "})  // (the child's own prefix: printed once)
        if (why.rfind(prefix, 0) == 0) why.erase(0, std::strlen(prefix));
      while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
      report_.error = "no GPU to measure on" + which + ": " + why;
    } else if (k == 0) {
      report_.environment = env;
    } else if (env != report_.environment) {
      report_.error = "devices " + std::to_string(o_.devices[0]) + " and " + std::to_string(o_.devices[k]) +
                      " differ (" + report_.environment + " vs " + env +
                      "); measurements are keyed by GPU and driver, so one tune measures on identical devices";
    }
  }
  if (!report_.error.empty()) return error = report_.error, false;
  log("environment: " + report_.environment);
  return true;
}

// --from-cache: the environment whose measurements to use: --environment, else the only one the
// cache has for this model and these inputs.
bool Session::cachedEnvironment(std::string &error) {
  std::vector<CacheRow> rows;
  if (!cache_->rows(rows, error, modelHash_)) return false;
  std::set<std::string> envs;
  for (const CacheRow &r : rows)
    if (r.key.modelHash == modelHash_ && r.key.shapes == inputsKey_) envs.insert(r.key.environment);
  if (!o_.environment.empty()) {
    report_.environment = o_.environment;
  } else if (envs.size() == 1) {
    report_.environment = *envs.begin();
  } else {
    std::string list;
    for (const std::string &e : envs) list += "\n  " + e;
    error = envs.empty() ? "the cache " + cache_->path() + " has no measurement of this model with these inputs"
                         : "the cache has measurements of this model from " + std::to_string(envs.size()) +
                               " environments; choose one with --environment:" + list;
    return false;
  }
  log("choosing from the cache's measurements, environment " + report_.environment);
  return true;
}

TuneReport Session::run() {
  // The target, the model and the route expression (no GPU).
  std::string targetError;
  if (auto t = target::GpuTarget::parse(o_.arch, targetError))
    target_ = *t;
  else
    return report_.error = "--arch: " + targetError, report_;
  if (!o_.output.empty())
    if (auto why = support::checkOutputPath(o_.output, inputFiles()); !why.empty())
      return report_.error = "-o: " + why, report_;
  if (o_.maxCandidates < 1 || uint64_t(o_.maxCandidates) > kMaxPlannedCandidates)
    return report_.error = "--max-candidates " + std::to_string(o_.maxCandidates) + " is " +
                           (o_.maxCandidates < 1 ? "not a positive count"
                                                 : "more than the " + std::to_string(kMaxPlannedCandidates) +
                                                       " candidates a search may plan") +
                           " (use --search fast or mixed, or narrow the expression)",
           report_;
  ImportOptions io;
  io.allowExternalOutside = o_.allowExternalOutside;
  if (auto e = parseShapeOverrides(o_.shapes, io); !e.empty()) return report_.error = e, report_;
  mlir::MLIRContext ctx;
  auto t0 = Clock::now();
  codegen::ModelBuild lowered = codegen::lowerModel(o_.model, io, knobs::Route(), ctx, target_);
  double lowerSeconds = std::chrono::duration<double>(Clock::now() - t0).count();
  if (!lowered.ok()) return report_.error = o_.model + ": " + lowered.error, report_;
  // Per-node knobs name the model's own nodes (as imported, before passes rewrite them).
  mlir::MLIRContext importCtx;
  ImportResult imported = importModelFile(o_.model, importCtx, io);
  SearchSpace space;
  if (!parseSpace(o_.routeExpression, codegen::modelNodes(*imported.module), space, report_.error, !o_.calib.empty()))
    return report_;
  report_.notes = space.notes;
  for (const std::string &n : space.notes) log("note: " + n);
  std::vector<knobs::Route> plan;
  if (o_.search == "nodes") {
    plan = space.nodeSweeps();
    report_.plannedNote =
        "nodes search, first phase (the base, global flips, one sweep per per-node knob value, every launch timed "
        "alone); then the route of each node's fastest value";
  } else if (o_.search == "fast" || o_.search == "mixed") {
    plan = space.fast();
    report_.plannedNote = o_.search == "fast"
                              ? "fast search"
                              : "mixed search, first phase (fast); then combinations of the knobs that helped";
  } else if (o_.search == "full") {
    if (space.fullCount() > uint64_t(o_.maxCandidates)) {
      char count[64];
      uint64_t n = space.fullCount();
      if (n == UINT64_MAX)
        std::snprintf(count, sizeof count, "%.3g", space.fullCountApprox());
      else
        std::snprintf(count, sizeof count, "%llu", (unsigned long long)n);
      return report_.error =
                 std::string("a full search of this route expression has ") + count +
                 " candidates, more than --max-candidates " + std::to_string(o_.maxCandidates) +
                 ": use --search fast or mixed, narrow the expression, or raise --max-candidates (at most " +
                 std::to_string(kMaxPlannedCandidates) + ")",
             report_;
    }
    plan = space.full();
    report_.plannedNote = "full search";
  } else {
    return report_.error = "unknown search '" + o_.search + "' (fast, mixed, full, nodes)", report_;
  }
  if (o_.shards > 1) {
    if (o_.shard < 1 || o_.shard > o_.shards)
      return report_.error = "--shard " + std::to_string(o_.shard) + "/" + std::to_string(o_.shards) +
                             ": K must be 1.." + std::to_string(o_.shards),
             report_;
    if (o_.search == "mixed")
      return report_.error = "--shard needs --search fast, full or nodes (a mixed search's second phase depends "
                             "on every first-phase result)",
             report_;
    std::vector<knobs::Route> mine;
    for (size_t i = 0; i < plan.size(); ++i)
      if (i % size_t(o_.shards) == size_t(o_.shard - 1)) mine.push_back(plan[i]);
    report_.plannedNote += ", shard " + std::to_string(o_.shard) + " of " + std::to_string(o_.shards) + " (of " +
                           std::to_string(plan.size()) + " in all" +
                           (o_.search == "nodes" ? "; composed by the unsharded tune on the merged caches)" : ")");
    plan = std::move(mine);
  }
  for (auto &r : plan) report_.planned.push_back(r.canonical());
  // A rough estimate: per candidate about three times the lowering (code generation and
  // compilation on a warm cache) plus a child's start, warm-up and runs (~5 s).
  report_.estimatedSeconds =
      double(plan.size()) * (3 * lowerSeconds + 5) / double(std::max<size_t>(o_.devices.size(), 1));
  if (!o_.accuracy.empty()) {
    std::vector<Constraint> c;
    if (!parseConstraints(o_.accuracy, c, report_.error)) return report_;
  }
  std::vector<HostTensor> outs;
  moduleIo(*imported.module, modelInputs_, outs);
  if (!readTensorFiles(modelInputs_, outs, report_.error)) return report_;
  if (o_.dryRun) return report_;

  std::vector<uint8_t> modelBytes;
  std::string error;
  if (!support::readFile(o_.model, modelBytes, error, "model file")) return report_.error = error, report_;
  modelHash_ = hashOf(modelBytes);
  shapes_ = o_.shapes;
  std::string cachePath = o_.cachePath.empty() ? defaultCachePath(error) : o_.cachePath;
  if (cachePath.empty() || !(cache_ = Cache::open(cachePath, error))) return report_.error = error, report_;
  char tmpl[] = "/tmp/kiln-tune-XXXXXX";
  if (!mkdtemp(tmpl)) return report_.error = "cannot create a work folder in /tmp", report_;
  work_ = tmpl;
  if (!o_.fromCache && !probeDevices(error)) return report_.error = error, report_;
  if (!prepareInputs(report_.error)) return report_;  // (builds the reference engine: after the GPU check)
  if (!o_.fromCache && !computeReference(report_.error)) return report_;
  std::vector<uint8_t> inBytes, refBytes;
  readBytes(inputsNpz_, inBytes);
  inputsKey_ = shapes_ + "|inputs=" + hashOf(inBytes) + "|reference=";
  if (o_.reference.empty())
    inputsKey_ += "fp32-default-route";
  else if (readBytes(o_.reference, refBytes))
    inputsKey_ += hashOf(refBytes);
  // int8 engines depend on the calibration file too.
  std::vector<uint8_t> calibBytes;
  if (!o_.calib.empty() && readBytes(o_.calib, calibBytes)) inputsKey_ += "|calib=" + hashOf(calibBytes);
  report_.modelHash = modelHash_, report_.inputsKey = inputsKey_;
  if (o_.fromCache && !cachedEnvironment(report_.error)) return report_;

  log((o_.fromCache ? "looking up " : "measuring ") + std::to_string(plan.size()) + " candidates (" +
      report_.plannedNote + ")");
  total_ = plan.size();
  measuringSince_ = elapsed();
  measure(plan, o_.search == "nodes");
  // (A shard measures its slice of the sweeps only: the same tune unsharded, on the merged caches,
  // then measures nothing but the composed route.)
  if (o_.search == "nodes" && o_.shards == 1 && !stop_ && !outOfTime()) composeNodeWinners(space);
  if (o_.search == "mixed" && !stop_ && !outOfTime()) {
    // Second phase: every combination of the knobs whose flips beat the base route.
    auto baseIt = done_.find(space.base().canonical());
    const Measurement *base = baseIt == done_.end() ? nullptr : &report_.results[baseIt->second].m;
    std::vector<size_t> helped;
    for (size_t d = 0; d < space.dims.size() && base && base->status == "ok"; ++d)
      for (const std::string &v : space.dims[d].values) {
        knobs::Route r = space.base();
        std::string e;
        r.set(space.dims[d].knob, v, &e);
        if (r.canonical() == space.base().canonical()) continue;
        auto it = done_.find(r.canonical());
        if (it != done_.end() && report_.results[it->second].m.status == "ok" &&
            report_.results[it->second].m.medianMs < base->medianMs) {
          helped.push_back(d);
          break;
        }
      }
    if (helped.size() > 1) {
      uint64_t count = space.combinationCount(helped);
      if (count > uint64_t(o_.maxCandidates))
        log("mixed search: " + (count == UINT64_MAX ? std::string("more than 2^64") : std::to_string(count)) +
            " combinations exceed --max-candidates; measuring the first " + std::to_string(o_.maxCandidates));
      std::vector<knobs::Route> combos = space.combinations(helped, uint64_t(o_.maxCandidates));
      log("mixed search: combining " + std::to_string(helped.size()) + " knobs that helped (" +
          std::to_string(combos.size()) + " routes)");
      total_ += combos.size();
      measure(combos);
    }
  }
  chooseWinner(report_, space.base().canonical(), o_.log);
  if (!o_.output.empty() && report_.best >= 0) {
    std::vector<uint8_t> engine;
    double secs;
    const std::string &route = report_.results[size_t(report_.best)].route;
    if (!buildEngine(route, engine, error, secs) || !writeBytes(o_.output, engine, error, inputFiles()))
      report_.error = "writing the winning engine: " + error;
    else
      log("wrote " + o_.output + " (route '" + route + "')");
  }
  report_.seconds = elapsed();
  return report_;
}

}  // namespace

void chooseWinner(TuneReport &report, const std::string &baseRoute,
                  const std::function<void(const std::string &)> &log) {
  // The winner: the fastest candidate that built, ran and was accurate.
  report.best = report.base = report.notSignificant = -1;
  for (size_t i = 0; i < report.results.size(); ++i) {
    const CandidateResult &r = report.results[i];
    if (r.route == baseRoute) report.base = int(i);
    if (r.m.status == "ok" && (report.best < 0 || r.m.medianMs < report.results[size_t(report.best)].m.medianMs))
      report.best = int(i);
  }
  // A win must leave the run-to-run spread: the winner's p90 below the base route's min.
  if (report.best >= 0 && report.base >= 0 && report.best != report.base) {
    const Measurement &b = report.results[size_t(report.base)].m, &w = report.results[size_t(report.best)].m;
    if (b.status == "ok" && !(w.p90Ms < b.minMs)) {
      report.notSignificant = report.best;
      report.best = report.base;
      char line[256];
      std::snprintf(line, sizeof line,
                    "no significant win: the fastest accurate candidate (%.4f ms, min..p90 %.4f..%.4f) overlaps the "
                    "base route (%.4f..%.4f); keeping the base route",
                    w.medianMs, w.minMs, w.p90Ms, b.minMs, b.p90Ms);
      if (log) log(line);
    }
  }
}

TuneReport tune(const TuneOptions &options, const std::atomic<bool> &stop) { return Session(options, stop).run(); }

TuneReport tuneWeighted(const TuneOptions &options, const std::vector<WeightedShapes> &shapes,
                        const std::atomic<bool> &stop) {
  if (shapes.size() < 2) {
    TuneOptions one = options;
    if (!shapes.empty()) one.shapes = shapes[0].shapes;
    return tune(one, stop);
  }
  std::vector<TuneReport> at;
  double weights = 0;
  for (const WeightedShapes &w : shapes) weights += w.weight;
  for (size_t i = 0; i < shapes.size(); ++i) {
    TuneOptions one = options;
    one.shapes = shapes[i].shapes, one.output.clear();
    if (options.timeBudgetSeconds > 0) one.timeBudgetSeconds = options.timeBudgetSeconds / double(shapes.size());
    if (options.log)
      one.log = [&options, &shapes, i](const std::string &line) { options.log("[" + shapes[i].shapes + "] " + line); };
    at.push_back(tune(one, stop));
    if (!at.back().error.empty()) {
      at.back().error = "at the shapes " + shapes[i].shapes + ": " + at.back().error;
      return at.back();
    }
    if (options.dryRun || at.back().interrupted) return at.back();
  }
  // Each route of the first shapes' tune, scored over all: accurate everywhere, or the first
  // shapes where it was not; times the weighted means.
  TuneReport r = at[0];
  r.results.clear();
  r.seconds = 0;
  for (const TuneReport &t : at) r.seconds += t.seconds, r.interrupted = r.interrupted || t.interrupted;
  std::string baseRoute = at[0].base >= 0 ? at[0].results[size_t(at[0].base)].route : std::string();
  for (const CandidateResult &first : at[0].results) {
    CandidateResult c = first;
    c.m.status = "ok", c.m.reason.clear();
    c.m.medianMs = c.m.p90Ms = c.m.minMs = 0;
    c.sameAs = -1;
    bool everywhere = true;
    for (size_t i = 0; i < at.size() && everywhere; ++i) {
      auto it = std::find_if(at[i].results.begin(), at[i].results.end(),
                             [&](const CandidateResult &x) { return x.route == first.route; });
      if (it == at[i].results.end()) {
        everywhere = false;  // (a composed or combined route of one shape's search only)
        break;
      }
      const Measurement &m = it->m;
      if (m.status != "ok" && c.m.status == "ok")
        c.m.status = m.status, c.m.reason = "at the shapes " + shapes[i].shapes + ": " + m.reason;
      const double w = shapes[i].weight / weights;
      c.m.medianMs += w * m.medianMs, c.m.p90Ms += w * m.p90Ms, c.m.minMs += w * m.minMs;
      c.shapeMs.push_back(m.medianMs);
      c.fromCache = c.fromCache && it->fromCache;
    }
    if (everywhere) r.results.push_back(std::move(c));
  }
  chooseWinner(r, baseRoute, options.log);
  return r;
}

}  // namespace kiln::tuner

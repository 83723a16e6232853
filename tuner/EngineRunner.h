// Running an engine from a tool: device buffers for every I/O tensor, inputs uploaded, outputs
// poisoned (NaN bytes) then downloaded, and timing with CUDA events (warm-up, then one event pair
// per run). Used by `kiln run`, `kiln check` and the tuner's measurements. Goes through the public
// C API for the engine and the runtime's driver table for memory, streams and events, so it needs
// no CUDA toolkit at run time either.
#pragma once

#include "kiln/kiln.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace kiln::tuner {

// A host tensor by name: ONNX dtype code, shape, raw little-endian bytes.
struct HostTensor {
  std::string name;
  int32_t dtype = 1;
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;
};

struct Timing {
  std::vector<float> ms;  // every timed run, sorted
  float median() const { return ms.empty() ? 0.f : ms[ms.size() / 2]; }
  float p90() const { return ms.empty() ? 0.f : ms[ms.size() * 9 / 10]; }
  float min() const { return ms.empty() ? 0.f : ms.front(); }
  float max() const { return ms.empty() ? 0.f : ms.back(); }
  double mean() const;
};

// Several contexts of one engine on their own streams, run concurrently (kiln run --streams).
struct Throughput {
  Timing latency;     // every run's own time (its stream's events), all streams together
  double wallMs = 0;  // first enqueue to the last run's end
  int64_t runs = 0;   // timed runs, all streams together
  int streams = 1;
};

struct LaunchTime {
  std::string node, kernel;
  float ms;
  uint64_t flops = 0, trafficBytes = 0;  // as the engine records them (attachLaunchCosts)
};

class EngineRunner {
 public:
  // Loads and verifies the engine bytes, creates `streams` contexts of it on device `device`'s
  // primary context, each with its own stream and one device buffer per I/O tensor. Null with
  // `error` on failure (an unknown device names the devices there are).
  // `shapes`: input shapes for an engine with dynamic shapes (kiln_context_set_input_shape); the
  // buffers and inputs()/outputs() then have those shapes (else the engine's opt shapes).
  static std::unique_ptr<EngineRunner> open(const std::vector<uint8_t> &engine, std::string &error, int device = 0,
                                            int streams = 1,
                                            const std::map<std::string, std::vector<int64_t>> &shapes = {});
  ~EngineRunner();

  // The I/O table as tensors without data (inputs first, in the engine's order).
  const std::vector<HostTensor> &inputs() const { return inputs_; }
  const std::vector<HostTensor> &outputs() const { return outputs_; }
  std::string deviceName() const;
  std::string route() const;
  std::string arch() const;  // the engine's target architecture ("sm_90")

  // Uploads inputs by name to every context (each must match the engine's dtype and shape, except
  // that a uint16 array may hold a bfloat16 input's bits; all must be given).
  bool setInputs(const std::vector<HostTensor> &values, std::string &error);
  // One execution (the first context): outputs poisoned first, then computed and downloaded.
  bool run(std::vector<HostTensor> &outputs, std::string &error);
  // Warm-up runs, then runs each between two CUDA events on the first context: `iterations` of
  // them, and more until `seconds` have passed. `hostIo`: each timed run also uploads the inputs
  // from and downloads the outputs to page-locked host memory (trtexec's host latency).
  bool time(int warmup, int iterations, Timing &timing, std::string &error, double seconds = 0, bool hostIo = false);
  // Every context at once: warm-up runs on each, then `iterations` runs per context (more until
  // `seconds` have passed), each between two events on its own stream.
  bool throughput(int warmup, int iterations, double seconds, Throughput &t, std::string &error);
  // Per-launch device times (median of `runs` profiled executions).
  bool profile(int runs, std::vector<LaunchTime> &out, std::string &error);

 private:
  EngineRunner() = default;
  std::vector<HostTensor *> tensors() {
    std::vector<HostTensor *> all;
    for (auto *list : {&inputs_, &outputs_})
      for (HostTensor &t : *list) all.push_back(&t);
    return all;
  }
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::vector<HostTensor> inputs_, outputs_;
};

// Random, non-zero inputs for every input of `io`: floats of both signs in ±[0.25, 1]; integer
// tensors whose name contains "mask" 1 except the last quarter of each row; other integers
// (token ids, indices) in [0, intHigh).
std::vector<HostTensor> randomInputs(const std::vector<HostTensor> &io, uint32_t seed, int64_t intHigh = 97);

// ops::dtypeName for an ONNX dtype code ("dtype N" for codes it does not know).
std::string dtypeName(int32_t dtype);
// Each profiled launch's FLOPs and bytes as `engine` (the bytes the runner was opened with)
// records them, from the specialisation whose launches these are (by count and nodes); left 0
// when none matches.
void attachLaunchCosts(const std::vector<uint8_t> &engine, std::vector<LaunchTime> &launches);
// Element i of a host tensor as double (float16/bfloat16 decoded; integers and bools converted).
double elementAsDouble(const HostTensor &t, int64_t i);
// `t`'s values rounded to the float type `dtype` (nearest-even, as a cast), for binding float32
// arrays to an engine with fp16/bf16 I/O and back; false (t unchanged) unless both types are float.
bool convertFloat(HostTensor &t, int32_t dtype);
// `values` with each float tensor converted (convertFloat) to the float type of the tensor named
// like it in `like` (a model's or an engine's inputs); the others as they are.
std::vector<HostTensor> convertFloatsLike(std::vector<HostTensor> values, const std::vector<HostTensor> &like);
int64_t numElements(const std::vector<int64_t> &shape);
size_t dtypeSize(int32_t dtype);

}  // namespace kiln::tuner

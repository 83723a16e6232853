// libFuzzer target: route expressions (kiln tune --route) and build routes (--route of compile)
// over a model's node names. Input: the expression, a newline, then one node name per line. Any
// input must parse or fail with a message in bounded time — RE2 patterns, no backtracking, no
// recursion — and a search plan is counted with saturation and built only up to a limit.
// Knobs are registered here as the compiler registers them (a global one, per-node ones).
#include "compiler/knobs/Knob.h"
#include "tuner/Space.h"

#include <cstdint>
#include <string>

KILN_KNOB(kPrecision, {"precision",
                       {"fp32", "fp16", "bf16", "int8", "fp8"},
                       "fp32",
                       "fuzz",
                       kiln::knobs::Tier::Fast,
                       "tools/fuzz",
                       "precision",
                       {"MatMul", "Conv", "Gemm"}});
KILN_KNOB(kTile, {"gemm.tile",
                  {"auto", "128x128", "64x128", "64x64"},
                  "auto",
                  "fuzz",
                  kiln::knobs::Tier::Mixed,
                  "tools/fuzz",
                  "tile",
                  {"MatMul", "Gemm"}});
KILN_KNOB(kEpilogue, {"fusion.epilogue", {"on", "off"}, "on", "fuzz", kiln::knobs::Tier::Fast, "tools/fuzz"});

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string text(reinterpret_cast<const char *>(data), size);
  size_t nl = text.find('\n');
  std::string expression = text.substr(0, nl);
  std::vector<kiln::knobs::NodeRef> nodes;
  static const char *const kOps[] = {"MatMul", "Conv", "Relu", "Gemm"};
  for (size_t pos = nl == std::string::npos ? text.size() : nl + 1, k = 0; pos < text.size() && nodes.size() < 64;
       ++k) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    nodes.push_back({text.substr(pos, end - pos), kOps[k % 4]});
    pos = end + 1;
  }
  kiln::tuner::SearchSpace space;
  std::string error;
  if (kiln::tuner::parseSpace(expression, nodes, space, error)) {
    (void)space.fullCount();
    (void)space.fast();
    (void)space.full(16);
  } else if (error.empty()) {
    __builtin_trap();
  }
  kiln::knobs::Route route;
  if (!kiln::knobs::Route::parse(expression, &route, &error) && error.empty()) __builtin_trap();
  (void)route.canonical();
  return 0;
}

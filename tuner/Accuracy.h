// Accuracy of an engine's outputs against reference outputs: the metrics of `kiln check` and
// the constraints (`--accuracy 'cos>=0.9995,max_abs<=0.05'`) that `kiln check` and `kiln tune`
// enforce.
#pragma once

#include "tuner/EngineRunner.h"

#include <map>
#include <string>
#include <vector>

namespace kiln::tuner {

struct Metrics {
  double maxAbs = 0;  // max |got − ref|
  double maxRel = 0;  // max |got − ref| / |ref| over elements with ref ≠ 0
  double l0 = 0;      // fraction of elements with |got − ref| > atol + rtol·|ref| (NaN mismatches count)
  double relL2 = 0;   // ‖got − ref‖ / ‖ref‖
  double cos = 1;     // cosine similarity
  double top1 = -1;   // fraction of rows whose argmax agrees ([rows, classes] outputs; else -1)
  // A NaN where the reference has none, or an infinity where the reference has another value
  // (fp16 overflow), or the reverse: always a violation (the other metrics skip such elements).
  bool nanMismatch = false;
  double get(const std::string &name) const;  // by the names constraints use
};

// Compares one output with its reference (same dtype-agnostic element count). atol/rtol are for l0.
Metrics compare(const HostTensor &got, const HostTensor &ref, double atol = 1e-3, double rtol = 1e-3);

// One constraint: METRIC OP VALUE, optionally for one output (`logits:cos>=0.999`).
struct Constraint {
  std::string output;  // "" = every output
  std::string metric;  // max_abs max_rel l0 rel_l2 cos top1
  std::string op;      // <= < >= >
  double value = 0;
  std::string text;
  bool holds(const Metrics &m) const;
};

// Per-output metrics as a JSON object {"out": {"max_abs": …, …}} (NaN as null) and back; the
// tuner cache stores them so that cached results can be judged again under new constraints.
std::string metricsToJson(const std::vector<std::pair<std::string, Metrics>> &metrics);
bool metricsFromJson(const std::string &text, std::vector<std::pair<std::string, Metrics>> &out);

// Parses "cos>=0.9995,max_abs<=0.05" (commas or semicolons). Unknown metrics and malformed
// terms are an error naming the term.
bool parseConstraints(const std::string &text, std::vector<Constraint> &out, std::string &error);

// Whether a route (its canonical text, as engines hold it) computes below fp32: half precisions
// (fp16/bf16, int8/fp8 with fp16 elsewhere) or TF32 products (gemm.tf32=on).
bool reducedPrecision(const std::string &route);

// The default constraint for a route: fp32 rel_l2<=1e-4; reducedPrecision routes rel_l2<=1e-2
// and cos>=0.999.
std::vector<Constraint> defaultConstraints(const std::string &route);

// Which constraints fail for which output (empty = all hold). A NaN mismatch always fails.
std::vector<std::string> violations(const std::vector<Constraint> &constraints,
                                    const std::vector<std::pair<std::string, Metrics>> &metrics);

}  // namespace kiln::tuner

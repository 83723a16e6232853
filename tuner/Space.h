// Route expressions and the candidate routes a search visits.
//
// A route expression (`kiln tune --route`) is `;`-separated terms KNOB-REGEX=VALUE-REGEX
// (ECMAScript regular expressions, matched against the whole name / value). Every knob instance
// — global knobs and the model's per-node instances — whose name matches a term is a dimension
// of the search, taking the values of its domain that match; knobs no term names keep their
// default. A malformed regex, a term that matches no knob, a knob two terms claim, or a knob
// left with no value is an error naming the term.
#pragma once

#include "compiler/knobs/Knob.h"

#include <string>
#include <vector>

namespace kiln::tuner {

struct Dimension {
  std::string knob;                 // instance name ("gemm.tile", "node.conv1.tile")
  std::vector<std::string> values;  // selected values, in domain order
  // The value in the base route: a global knob's default if selected, else its first selected
  // value; "" for a per-node instance (unset: it inherits the global value).
  std::string base;
};

struct SearchSpace {
  std::vector<Dimension> dims;
  // Routes: the base, and candidates as base + changes.
  knobs::Route base() const;
  // fast: the base, then each dimension's other values one at a time.
  std::vector<knobs::Route> fast() const;
  // Every combination (product of the dimensions' sizes; `count` without building them).
  double fullCount() const;
  std::vector<knobs::Route> full() const;
  // Every combination of the given dimensions' values, the others at their base value.
  std::vector<knobs::Route> combinations(const std::vector<size_t> &dims) const;
};

// `withCalibration` false (no calibration file): the precision knobs' int8 and fp8 values are not
// candidates (a term that leaves only those is an error that says so).
bool parseSpace(const std::string &expression, const std::vector<knobs::NodeRef> &nodes, SearchSpace &out,
                std::string &error, bool withCalibration = true);

}  // namespace kiln::tuner

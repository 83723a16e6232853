// Route expressions and the candidate routes a search visits.
//
// A route expression (`kiln tune --route`) is `;`-separated terms KNOB-REGEX=VALUE-REGEX
// (RE2 regular expressions, at most 4096 bytes each, matched against the whole name / value in
// linear time; ECMAScript's syntax but for backreferences and lookaround). Every knob instance
// — global knobs and the model's per-node instances — whose name matches a term is a dimension
// of the search, taking the values of its domain that match; knobs no term names keep their
// default. A malformed regex, a term that matches no knob, a knob two terms claim, or a knob
// left with no value is an error naming the term.
#pragma once

#include "compiler/knobs/Knob.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::tuner {

struct Dimension {
  std::string knob;                 // instance name ("gemm.tile", "node.conv1.tile")
  std::vector<std::string> values;  // selected values, in domain order
  // The value in the base route: a global knob's default if selected, else its first selected
  // value; "" for a per-node instance (unset: it inherits the global value).
  std::string base;
  // A per-node instance's node and knob ("conv1", "tile"); "" for a global knob.
  std::string node, kind;
};

// One launch of a profiled engine: the nodes it computes ("conv+bn+relu", as `kiln run --profile`
// names them) and its time, launched alone.
struct NodeLaunch {
  std::string nodes, kernel;  // kernel: the entry point (a library call: its kind)
  double ms = 0;
};

// A per-node value the nodes search picked: the node's launches took `ms` under it, `baseMs` in
// the base route.
struct NodeChoice {
  std::string knob, value;
  double baseMs = 0, ms = 0;
};

struct SearchSpace {
  std::vector<Dimension> dims;
  // What the expression selected but the space leaves out, one line each (int8/fp8 without a
  // calibration file): the tuner prints them, so nothing is dropped silently.
  std::vector<std::string> notes;
  // Routes: the base, and candidates as base + changes.
  knobs::Route base() const;
  // fast: the base, then each dimension's other values one at a time.
  std::vector<knobs::Route> fast() const;
  // nodes: the base, each global dimension's other values one at a time, then one sweep per
  // per-node knob and value: every node whose dimension of that knob offers the value set to it
  // at once, everything else at the base. Profiled launch by launch, one sweep times every node
  // under its value, so the search builds (knobs × values) engines, not (nodes × values).
  std::vector<knobs::Route> nodeSweeps() const;
  // From the profiles of the base route (`profiles[0]`) and of sweeps: for each per-node dimension,
  // the value under which the launches naming its node took least time in all, when that beats
  // the base route's time for them by more than `minGain` (a fraction) with other kernels than
  // the base's (the same kernels under another value: the knob changed nothing there, and the
  // difference is noise). Profiles of routes that differ from the base in a global knob are not
  // used.
  std::vector<NodeChoice> pickNodeValues(const std::vector<std::pair<knobs::Route, std::vector<NodeLaunch>>> &profiles,
                                         double minGain) const;
  // How many routes combinations() of these dimensions makes (the product of their sizes,
  // UINT64_MAX when it does not fit), and fullCount() of all of them — counted, not built.
  uint64_t combinationCount(const std::vector<size_t> &dims) const;
  uint64_t fullCount() const;
  // The same product as a double, for messages (spaces of 10^23 candidates exist).
  double fullCountApprox() const;
  // Every combination of the given dimensions' values (the first dimension varying slowest), the
  // others at their base value; at most `limit` of them (the first in that order), so that a
  // huge space is never materialised.
  std::vector<knobs::Route> combinations(const std::vector<size_t> &dims, uint64_t limit = UINT64_MAX) const;
  std::vector<knobs::Route> full(uint64_t limit = UINT64_MAX) const;
};

// A route as tables and progress lines show it: a per-node knob set to one value on 3 or more
// nodes (a nodes search's sweep) as `node.*.tile=64x64 (54 nodes)`, the other terms as they are.
std::string shortRoute(const std::string &canonical);

// The most candidates one search plans (--max-candidates may not exceed it): a million-candidate
// space is refused with its size, not enumerated into gigabytes of routes.
constexpr uint64_t kMaxPlannedCandidates = 100000;

// `withCalibration` false (no calibration file): the precision knobs' int8 and fp8 values are not
// candidates (a note in `out.notes` says so; a term that leaves only those is an error).
bool parseSpace(const std::string &expression, const std::vector<knobs::NodeRef> &nodes, SearchSpace &out,
                std::string &error, bool withCalibration = true);

}  // namespace kiln::tuner

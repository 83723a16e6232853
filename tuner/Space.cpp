#include "tuner/Space.h"

#include "compiler/support/Pattern.h"

#include <algorithm>
#include <map>

namespace kiln::tuner {

namespace {

// A term or knob name as messages quote it: whole up to 120 bytes, else its start and "...".
std::string quote(const std::string &s) { return "'" + (s.size() <= 120 ? s : s.substr(0, 100) + "...") + "'"; }

}  // namespace

bool parseSpace(const std::string &expression, const std::vector<knobs::NodeRef> &nodes, SearchSpace &out,
                std::string &error, bool withCalibration) {
  std::vector<knobs::KnobInstance> instances = knobs::knobInstances(nodes);
  std::map<std::string, std::string> claimedBy;  // knob → term
  size_t pos = 0;
  while (pos <= expression.size()) {
    size_t end = expression.find(';', pos);
    if (end == std::string::npos) end = expression.size();
    std::string term = expression.substr(pos, end - pos);
    pos = end + 1;
    term.erase(0, term.find_first_not_of(" \t"));
    term.erase(term.find_last_not_of(" \t") + 1);
    if (term.empty()) continue;
    // The knob regex ends at the first '=' (knob names have none; a value regex may).
    size_t eq = term.find('=');
    if (eq == std::string::npos || eq == 0) {
      error = "route term " + quote(term) + " is not KNOB-REGEX=VALUE-REGEX";
      return false;
    }
    // Linear-time matching (RE2): a route cannot make the tuner backtrack for hours or recurse
    // off its stack, whatever the pattern and however long the model's node names.
    support::Pattern knobRe, valueRe;
    std::string why;
    if (!knobRe.compile(term.substr(0, eq), why) || !valueRe.compile(term.substr(eq + 1), why)) {
      error = "route term " + quote(term) + ": " + why;
      return false;
    }
    bool any = false;
    for (const knobs::KnobInstance &k : instances) {
      if (!knobRe.fullMatch(k.name, why)) {
        if (!why.empty()) {
          error = "route term " + quote(term) + ": " + why + " (knob " + quote(k.name) + ")";
          return false;
        }
        continue;
      }
      any = true;
      if (claimedBy.count(k.name)) {
        error =
            "knob " + quote(k.name) + " is matched by route terms " + quote(claimedBy[k.name]) + " and " + quote(term);
        return false;
      }
      claimedBy[k.name] = term;
      Dimension d;
      d.knob = k.name;
      if (!k.node.empty()) d.node = k.node, d.kind = k.def->nodeSuffix;
      std::string dropped;  // int8/fp8 values left out for want of a calibration
      for (const std::string &v : k.def->domain) {
        if (!valueRe.fullMatch(v, why)) continue;
        if (!withCalibration && k.def->name == "precision" && (v == "int8" || v == "fp8"))
          dropped += (dropped.empty() ? "" : " and ") + v;
        else
          d.values.push_back(v);
      }
      bool quantizedDropped = !dropped.empty();
      if (quantizedDropped && !d.values.empty())
        out.notes.push_back("route term " + quote(term) + " selects " + dropped + " for " + quote(k.name) +
                            ": left out, 8-bit precisions need --calib FILE (kiln calibrate)");
      if (d.values.empty() && quantizedDropped) {
        error = "route term " + quote(term) + " leaves knob " + quote(k.name) +
                " only int8/fp8, which need --calib FILE (kiln calibrate)";
        return false;
      }
      if (d.values.empty()) {
        std::string dom;
        for (auto &v : k.def->domain) dom += (dom.empty() ? "" : "|") + v;
        error = "route term " + quote(term) + " leaves knob " + quote(k.name) + " no value (domain: " + dom + ")";
        return false;
      }
      // The base route: a global knob at its default when selected, else the first selected
      // value; a per-node instance unset (it inherits the global value).
      const std::string &dflt = k.def->defaultValue;
      if (k.node.empty())
        d.base = std::find(d.values.begin(), d.values.end(), dflt) != d.values.end() ? dflt : d.values.front();
      out.dims.push_back(d);
    }
    if (!any) {
      error = "route term " + quote(term) + " matches no knob (`kiln knobs MODEL` lists them)";
      return false;
    }
  }
  return true;
}

knobs::Route SearchSpace::base() const {
  knobs::Route r;
  std::string err;
  for (const Dimension &d : dims)
    if (!d.base.empty()) r.set(d.knob, d.base, &err);
  return r;
}

// The base with dimension `d` at each of its other values (not the base value, nor a node value
// the base inherits).
static void addFlips(const knobs::Route &b, const Dimension &d, std::vector<knobs::Route> &out) {
  std::string err;
  for (const std::string &v : d.values) {
    knobs::Route r = b;
    r.set(d.knob, v, &err);
    if (r.canonical() != b.canonical()) out.push_back(r);
  }
}

std::vector<knobs::Route> SearchSpace::fast() const {
  const knobs::Route b = base();
  std::vector<knobs::Route> out = {b};
  for (const Dimension &d : dims) addFlips(b, d, out);
  return out;
}

std::vector<knobs::Route> SearchSpace::nodeSweeps() const {
  const knobs::Route b = base();
  std::vector<knobs::Route> out = {b};
  std::string err;
  std::vector<std::pair<std::string, std::string>> sweeps;  // (kind, value), in first-seen order
  for (const Dimension &d : dims) {
    if (d.node.empty()) {
      addFlips(b, d, out);
      continue;
    }
    for (const std::string &v : d.values)
      if (std::find(sweeps.begin(), sweeps.end(), std::make_pair(d.kind, v)) == sweeps.end())
        sweeps.push_back({d.kind, v});
  }
  for (const auto &[kind, value] : sweeps) {
    knobs::Route r = b;
    for (const Dimension &d : dims)
      if (d.kind == kind && std::find(d.values.begin(), d.values.end(), value) != d.values.end())
        r.set(d.knob, value, &err);
    if (r.canonical() != b.canonical() &&
        std::none_of(out.begin(), out.end(), [&](const knobs::Route &o) { return o == r; }))
      out.push_back(r);
  }
  return out;
}

std::vector<NodeChoice>
SearchSpace::pickNodeValues(const std::vector<std::pair<knobs::Route, std::vector<NodeLaunch>>> &profiles,
                            double minGain) const {
  std::vector<NodeChoice> out;
  if (profiles.empty()) return out;
  const knobs::Route &b = profiles.front().first;
  auto sameGlobals = [&](const knobs::Route &r) {
    for (const Dimension &d : dims) {
      if (!d.node.empty()) continue;
      auto x = r.values().find(d.knob), y = b.values().find(d.knob);
      if ((x == r.values().end()) != (y == b.values().end()) || (x != r.values().end() && x->second != y->second))
        return false;
    }
    return true;
  };
  // The time of the launches that name `node` (one of the '+'-joined names), and their kernels.
  auto nodeTime = [](const std::vector<NodeLaunch> &launches, const std::string &node, std::string &kernels) {
    double t = 0;
    for (const NodeLaunch &l : launches) {
      size_t at = 0;
      while (at <= l.nodes.size()) {
        size_t end = l.nodes.find('+', at);
        if (end == std::string::npos) end = l.nodes.size();
        if (l.nodes.compare(at, end - at, node) == 0) {
          t += l.ms;
          kernels += l.kernel + ";";
          break;
        }
        at = end + 1;
      }
    }
    return t;
  };
  for (const Dimension &d : dims) {
    if (d.node.empty()) continue;
    std::string baseKernels;
    double baseMs = nodeTime(profiles.front().second, d.node, baseKernels);
    if (baseMs <= 0) continue;  // no launch names the node: nothing to time
    NodeChoice best{d.knob, "", baseMs, baseMs};
    for (size_t i = 1; i < profiles.size(); ++i) {
      const knobs::Route &r = profiles[i].first;
      auto v = r.values().find(d.knob);
      if (v == r.values().end() || !sameGlobals(r)) continue;
      std::string kernels;
      double t = nodeTime(profiles[i].second, d.node, kernels);
      if (t > 0 && t < best.ms && kernels != baseKernels) best.value = v->second, best.ms = t;
    }
    if (!best.value.empty() && best.ms < baseMs * (1 - minGain)) out.push_back(best);
  }
  return out;
}

std::string shortRoute(const std::string &canonical) {
  std::vector<std::string> terms;
  for (size_t at = 0; at < canonical.size();) {
    size_t end = canonical.find(';', at);
    if (end == std::string::npos) end = canonical.size();
    terms.push_back(canonical.substr(at, end - at));
    at = end + 1;
  }
  // node.<name>.<kind>=<value> → the group "kind=value" ("" for other terms).
  auto group = [](const std::string &t) -> std::string {
    size_t eq = t.find('=');
    const knobs::KnobDef *def = nullptr;
    if (eq == std::string::npos || !knobs::parseNodeKnob(t.substr(0, eq), nullptr, &def)) return "";
    return def->nodeSuffix + t.substr(eq);
  };
  std::map<std::string, size_t> count;
  for (const std::string &t : terms)
    if (std::string g = group(t); !g.empty()) ++count[g];
  std::string out;
  std::map<std::string, bool> shown;
  for (const std::string &t : terms) {
    std::string g = group(t), piece = t;
    if (!g.empty() && count[g] >= 3) {
      if (shown[g]) continue;
      shown[g] = true;
      piece = "node.*." + g + " (" + std::to_string(count[g]) + " nodes)";
    }
    out += (out.empty() ? "" : ";") + piece;
  }
  return out;
}

uint64_t SearchSpace::combinationCount(const std::vector<size_t> &which) const {
  uint64_t n = 1;
  for (size_t i : which)
    if (__builtin_mul_overflow(n, uint64_t(dims[i].values.size()), &n)) return UINT64_MAX;
  return n;
}

static std::vector<size_t> allDims(size_t n) {
  std::vector<size_t> all(n);
  for (size_t i = 0; i < n; ++i) all[i] = i;
  return all;
}

uint64_t SearchSpace::fullCount() const { return combinationCount(allDims(dims.size())); }

double SearchSpace::fullCountApprox() const {
  double n = 1;
  for (const Dimension &d : dims) n *= double(d.values.size());
  return n;
}

std::vector<knobs::Route> SearchSpace::combinations(const std::vector<size_t> &which, uint64_t limit) const {
  // An odometer over the dimensions' values, the last dimension turning fastest.
  std::vector<knobs::Route> out;
  std::vector<size_t> at(which.size(), 0);
  const knobs::Route b = base();
  std::string err;
  for (uint64_t n = 0; n < limit; ++n) {
    knobs::Route r = b;
    for (size_t k = 0; k < which.size(); ++k) r.set(dims[which[k]].knob, dims[which[k]].values[at[k]], &err);
    out.push_back(std::move(r));
    size_t k = which.size();
    while (k > 0 && ++at[k - 1] == dims[which[k - 1]].values.size()) at[--k] = 0;
    if (k == 0) break;  // every combination made
  }
  return out;
}

std::vector<knobs::Route> SearchSpace::full(uint64_t limit) const { return combinations(allDims(dims.size()), limit); }

}  // namespace kiln::tuner

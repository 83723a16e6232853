#include "tuner/Space.h"

#include <algorithm>
#include <map>
#include <regex>

namespace kiln::tuner {

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
      error = "route term '" + term + "' is not KNOB-REGEX=VALUE-REGEX";
      return false;
    }
    std::regex knobRe, valueRe;
    try {
      knobRe = std::regex(term.substr(0, eq), std::regex::ECMAScript);
      valueRe = std::regex(term.substr(eq + 1), std::regex::ECMAScript);
    } catch (const std::regex_error &e) {
      error = "route term '" + term + "': invalid regular expression (" + e.what() + ")";
      return false;
    }
    bool any = false;
    for (const knobs::KnobInstance &k : instances) {
      if (!std::regex_match(k.name, knobRe)) continue;
      any = true;
      if (claimedBy.count(k.name)) {
        error = "knob '" + k.name + "' is matched by route terms '" + claimedBy[k.name] + "' and '" + term + "'";
        return false;
      }
      claimedBy[k.name] = term;
      Dimension d;
      d.knob = k.name;
      bool quantizedDropped = false;  // int8/fp8 values left out for want of a calibration
      for (const std::string &v : k.def->domain) {
        if (!std::regex_match(v, valueRe)) continue;
        if (!withCalibration && k.def->name == "precision" && (v == "int8" || v == "fp8")) quantizedDropped = true;
        else d.values.push_back(v);
      }
      if (d.values.empty() && quantizedDropped) {
        error = "route term '" + term + "' leaves knob '" + k.name + "' only int8/fp8, which need --calib FILE (kiln calibrate)";
        return false;
      }
      if (d.values.empty()) {
        std::string dom;
        for (auto &v : k.def->domain) dom += (dom.empty() ? "" : "|") + v;
        error = "route term '" + term + "' leaves knob '" + k.name + "' no value (domain: " + dom + ")";
        return false;
      }
      // The base route: a global knob at its default when selected, else the first selected
      // value; a per-node instance unset (it inherits the global value).
      const std::string &dflt = k.def->defaultValue;
      if (k.node.empty()) d.base = std::find(d.values.begin(), d.values.end(), dflt) != d.values.end() ? dflt : d.values.front();
      out.dims.push_back(d);
    }
    if (!any) {
      error = "route term '" + term + "' matches no knob (`kiln knobs MODEL` lists them)";
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

std::vector<knobs::Route> SearchSpace::fast() const {
  const knobs::Route b = base();
  std::vector<knobs::Route> out = {b};
  std::string err;
  for (const Dimension &d : dims)
    for (const std::string &v : d.values) {
      knobs::Route r = b;
      r.set(d.knob, v, &err);
      if (r.canonical() == b.canonical()) continue;  // the base value, or a node value it inherits
      out.push_back(r);
    }
  return out;
}

double SearchSpace::fullCount() const {
  double n = 1;
  for (const Dimension &d : dims) n *= double(d.values.size());
  return n;
}

std::vector<knobs::Route> SearchSpace::combinations(const std::vector<size_t> &which) const {
  std::vector<knobs::Route> out = {base()};
  std::string err;
  for (size_t i : which) {
    std::vector<knobs::Route> next;
    for (const knobs::Route &r : out)
      for (const std::string &v : dims[i].values) {
        knobs::Route c = r;
        c.set(dims[i].knob, v, &err);
        next.push_back(c);
      }
    out = std::move(next);
  }
  return out;
}

std::vector<knobs::Route> SearchSpace::full() const {
  std::vector<size_t> all(dims.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  return combinations(all);
}

}  // namespace kiln::tuner

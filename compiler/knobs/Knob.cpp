#include "compiler/knobs/Knob.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <set>

namespace kiln::knobs {

namespace {

// Function-local so registration from any static initialiser finds it constructed.
std::map<std::string, std::unique_ptr<KnobDef>> &registry() {
  static std::map<std::string, std::unique_ptr<KnobDef>> r;
  return r;
}

[[noreturn]] void bug(const std::string &what) {
  std::fprintf(stderr, "kiln: internal error: %s\n", what.c_str());
  std::abort();
}

std::string trim(const std::string &s) {
  size_t b = s.find_first_not_of(" \t\n"), e = s.find_last_not_of(" \t\n");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

std::string domainText(const KnobDef &k) {
  std::string s;
  for (auto &v : k.domain) s += (s.empty() ? "" : "|") + v;
  return s;
}

}  // namespace

const char *tierName(Tier t) {
  switch (t) {
    case Tier::Fast: return "fast";
    case Tier::Mixed: return "mixed";
    case Tier::Full: return "full";
  }
  return "?";
}

const KnobDef &registerKnob(KnobDef def) {
  if (def.name.empty() || def.domain.empty()) bug("knob '" + def.name + "' needs a name and a domain");
  if (std::find(def.domain.begin(), def.domain.end(), def.defaultValue) == def.domain.end())
    bug("knob '" + def.name + "': default '" + def.defaultValue + "' is not in its domain");
  if (def.name.rfind("node.", 0) == 0) bug("knob names may not start with 'node.'");
  auto &r = registry();
  if (r.count(def.name)) bug("knob '" + def.name + "' is registered twice");
  auto owned = std::make_unique<KnobDef>(std::move(def));
  const KnobDef &ref = *owned;
  r[ref.name] = std::move(owned);
  return ref;
}

std::vector<const KnobDef *> allKnobs() {
  std::vector<const KnobDef *> v;
  for (auto &kv : registry()) v.push_back(kv.second.get());
  return v;
}

const KnobDef *findKnob(const std::string &name) {
  auto it = registry().find(name);
  return it == registry().end() ? nullptr : it->second.get();
}

std::vector<KnobInstance> knobInstances(const std::vector<NodeRef> &nodes) {
  std::vector<KnobInstance> out;
  for (const KnobDef *k : allKnobs()) out.push_back({k->name, k, ""});
  for (const NodeRef &n : nodes)
    for (const KnobDef *k : allKnobs()) {
      if (k->nodeSuffix.empty()) continue;
      if (std::find(k->nodeOps.begin(), k->nodeOps.end(), n.opType) == k->nodeOps.end()) continue;
      out.push_back({"node." + n.name + "." + k->nodeSuffix, k, n.name});
    }
  return out;
}

bool parseNodeKnob(const std::string &name, std::string *node, const KnobDef **def) {
  if (name.rfind("node.", 0) != 0) return false;
  const KnobDef *best = nullptr;
  for (const KnobDef *k : allKnobs()) {
    if (k->nodeSuffix.empty()) continue;
    const std::string tail = "." + k->nodeSuffix;
    // "node." + at least one character of node name + tail.
    if (name.size() > 5 + tail.size() && name.compare(name.size() - tail.size(), tail.size(), tail) == 0 &&
        (!best || k->nodeSuffix.size() > best->nodeSuffix.size()))
      best = k;
  }
  if (!best) return false;
  if (node) *node = name.substr(5, name.size() - 5 - best->nodeSuffix.size() - 1);
  if (def) *def = best;
  return true;
}

bool Route::parse(const std::string &text, Route *out, std::string *error) {
  Route r;
  std::set<std::string> seen;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find(';', pos);
    if (end == std::string::npos) end = text.size();
    std::string term = trim(text.substr(pos, end - pos));
    pos = end + 1;
    if (term.empty()) continue;
    size_t eq = term.find('=');
    if (eq == std::string::npos) {
      if (error) *error = "route term '" + term + "' is not KNOB=VALUE";
      return false;
    }
    std::string name = trim(term.substr(0, eq)), value = trim(term.substr(eq + 1));
    if (!seen.insert(name).second) {
      if (error) *error = "route sets knob '" + name + "' twice";
      return false;
    }
    if (!r.set(name, value, error)) return false;
  }
  *out = std::move(r);
  return true;
}

bool Route::set(const std::string &name, const std::string &value, std::string *error) {
  const KnobDef *def = findKnob(name);
  std::string node;
  if (!def && !parseNodeKnob(name, &node, &def)) {
    if (error) *error = "unknown knob '" + name + "' (`kiln knobs` lists them)";
    return false;
  }
  if (std::find(def->domain.begin(), def->domain.end(), value) == def->domain.end()) {
    if (error) *error = "knob '" + name + "' has no value '" + value + "' (domain: " + domainText(*def) + ")";
    return false;
  }
  if (node.empty() && value == def->defaultValue)
    values_.erase(name);
  else
    values_[name] = value;
  return true;
}

std::string Route::canonical() const {
  std::string s;
  for (auto &[k, v] : values_) {
    std::string node;
    const KnobDef *def = nullptr;
    // A node's value equal to the global one it would inherit says nothing.
    if (parseNodeKnob(k, &node, &def) && !findKnob(k) && v == get(*def)) continue;
    s += (s.empty() ? "" : ";") + k + "=" + v;
  }
  return s;
}

const std::string &Route::get(const KnobDef &knob) const {
  auto it = values_.find(knob.name);
  return it == values_.end() ? knob.defaultValue : it->second;
}

const std::string &Route::get(const KnobDef &knob, const std::string &node) const {
  if (!knob.nodeSuffix.empty() && !node.empty()) {
    auto it = values_.find("node." + node + "." + knob.nodeSuffix);
    if (it != values_.end()) return it->second;
  }
  return get(knob);
}

}  // namespace kiln::knobs

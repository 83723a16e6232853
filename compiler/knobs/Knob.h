// Knobs: the decisions the compiler can make differently, and build routes that choose them.
//
// A knob is registered (KILN_KNOB) in the file that reads it — a pass, a kernel emitter, the
// engine builder — never in a central list. Each has a name, a finite domain of string values,
// a default, a help line, the search tier it belongs to, and its owner (the reading file).
// A knob with `nodeSuffix` also has one instance per matching node of a model,
// `node.<onnx-node-name>.<nodeSuffix>`, whose value, when a route sets it, overrides the global
// knob for that node.
//
// A build route assigns values to knobs. Its canonical text is `k1=v1;k2=v2`, sorted by knob
// name, listing only values that differ from the default, so the empty text is the default
// route. The route is recorded in every engine; same model + route + target + kiln version ⇒
// byte-identical engine.
//
// This lives low (compiler/), so passes and codegen read knobs without depending on the tuner,
// which only enumerates, searches and measures. Plain C++: no MLIR.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace kiln::knobs {

// Search tiers: `fast` knobs are flipped by every search, `mixed` ones by mixed and full
// searches, `full` ones only by exhaustive searches.
enum class Tier { Fast, Mixed, Full };
const char *tierName(Tier t);

struct KnobDef {
  std::string name;                 // "precision", "fusion.epilogue", "gemm.tile"
  std::vector<std::string> domain;  // every value the knob may take
  std::string defaultValue;         // one of domain
  std::string help;
  Tier tier = Tier::Fast;
  std::string owner;  // the file that reads it ("passes/Precision.cpp")
  // Per-node instances: `node.<node>.<nodeSuffix>` for nodes whose ONNX op type is in nodeOps.
  std::string nodeSuffix;
  std::vector<std::string> nodeOps;
};

// Registers a knob (from a static initialiser) and returns it. Registering a name twice, an
// empty domain or a default outside the domain aborts the program at start-up: it is a bug.
const KnobDef &registerKnob(KnobDef def);

// In the file that reads the knob:  KILN_KNOB(kPrecision, {"precision", {...}, "fp32", ...});
#define KILN_KNOB(var, ...) static const ::kiln::knobs::KnobDef &var = ::kiln::knobs::registerKnob(__VA_ARGS__)

// Every registered knob, sorted by name.
std::vector<const KnobDef *> allKnobs();
const KnobDef *findKnob(const std::string &name);

// A node of a model, as per-node knobs see it.
struct NodeRef {
  std::string name;    // ONNX node name (or its first output's name when unnamed)
  std::string opType;  // ONNX op type
};

// One concrete knob of a model: a global knob, or a per-node instance of one.
struct KnobInstance {
  std::string name;  // "gemm.tile" or "node./layer1/conv2.tile"
  const KnobDef *def;
  std::string node;  // "" for a global knob
};

// Every knob instance for a model with these nodes (globals first, then per-node instances
// in node order), or the global knobs alone for an empty node list.
std::vector<KnobInstance> knobInstances(const std::vector<NodeRef> &nodes);

// Splits "node.<node>.<suffix>" into the node and the per-node knob it instantiates. False
// when `name` is not of that form (the node part may contain dots: the longest registered
// suffix that matches wins).
bool parseNodeKnob(const std::string &name, std::string *node, const KnobDef **def);

// A build route: knob name (global or per-node instance) → value, defaults omitted.
class Route {
 public:
  Route() = default;

  // Parses `k=v;k=v` (whitespace around names and values ignored, empty terms skipped). Every
  // name must be a registered knob or a per-node instance of one, every value in its domain,
  // no knob twice. On failure returns false and says which term is wrong.
  static bool parse(const std::string &text, Route *out, std::string *error);

  // Sets a value (checked as parse does); a default value removes the entry.
  bool set(const std::string &name, const std::string &value, std::string *error);

  // The canonical text: sorted `k=v` terms joined by `;`, defaults omitted.
  std::string canonical() const;

  // The knob's value on this route (its default when unset).
  const std::string &get(const KnobDef &knob) const;
  // The value for one node: the node's instance when set, else the global value.
  const std::string &get(const KnobDef &knob, const std::string &node) const;

  const std::map<std::string, std::string> &values() const { return values_; }
  bool operator==(const Route &o) const { return values_ == o.values_; }

 private:
  std::map<std::string, std::string> values_;
};

}  // namespace kiln::knobs

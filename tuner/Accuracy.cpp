#include "tuner/Accuracy.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace kiln::tuner {

double Metrics::get(const std::string &n) const {
  if (n == "max_abs") return maxAbs;
  if (n == "max_rel") return maxRel;
  if (n == "l0") return l0;
  if (n == "rel_l2") return relL2;
  if (n == "cos") return cos;
  if (n == "top1") return top1;
  return NAN;
}

Metrics compare(const HostTensor &got, const HostTensor &ref, double atol, double rtol) {
  Metrics m;
  int64_t n = numElements(ref.shape);
  double num = 0, den = 0, dot = 0, gg = 0;
  int64_t outside = 0;
  for (int64_t i = 0; i < n; ++i) {
    double g = elementAsDouble(got, i), r = elementAsDouble(ref, i);
    if (std::isnan(g) != std::isnan(r)) {
      m.nanMismatch = true;
      ++outside;
      continue;
    }
    if (std::isnan(r)) continue;
    double d = std::fabs(g - r);
    if (std::isinf(g) || std::isinf(r)) {
      d = g == r ? 0 : INFINITY;
      m.nanMismatch |= g != r;
    }
    m.maxAbs = std::max(m.maxAbs, d);
    if (r != 0) m.maxRel = std::max(m.maxRel, d / std::fabs(r));
    if (d > atol + rtol * std::fabs(r)) ++outside;
    if (std::isfinite(d)) num += d * d, den += r * r, dot += g * r, gg += g * g;
  }
  m.l0 = n ? double(outside) / double(n) : 0;
  m.relL2 = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
  m.cos = den > 0 && gg > 0 ? dot / std::sqrt(den * gg) : (num == 0 ? 1.0 : 0.0);
  if (ref.shape.size() == 2 && ref.shape[1] > 1) {
    int64_t rows = ref.shape[0], cols = ref.shape[1], agree = 0;
    for (int64_t r = 0; r < rows; ++r) {
      int64_t bg = 0, br = 0;
      for (int64_t c = 1; c < cols; ++c) {
        if (elementAsDouble(got, r * cols + c) > elementAsDouble(got, r * cols + bg)) bg = c;
        if (elementAsDouble(ref, r * cols + c) > elementAsDouble(ref, r * cols + br)) br = c;
      }
      agree += bg == br;
    }
    m.top1 = rows ? double(agree) / double(rows) : 1;
  }
  return m;
}

bool Constraint::holds(const Metrics &m) const {
  double v = m.get(metric);
  if (metric == "top1" && v < 0) return true;  // not a classifier output
  if (std::isnan(v)) return false;
  if (op == "<=") return v <= value;
  if (op == "<") return v < value;
  if (op == ">=") return v >= value;
  return v > value;
}

bool parseConstraints(const std::string &text, std::vector<Constraint> &out, std::string &error) {
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find_first_of(",;", pos);
    if (end == std::string::npos) end = text.size();
    std::string term = text.substr(pos, end - pos);
    pos = end + 1;
    term.erase(0, term.find_first_not_of(" \t"));
    term.erase(term.find_last_not_of(" \t") + 1);
    if (term.empty()) continue;
    Constraint c;
    c.text = term;
    size_t colon = term.find(':');
    std::string expr = term;
    if (colon != std::string::npos) c.output = term.substr(0, colon), expr = term.substr(colon + 1);
    size_t opAt = expr.find_first_of("<>");
    if (opAt == std::string::npos) {
      error = "accuracy term '" + term + "' is not METRIC<=VALUE or METRIC>=VALUE";
      return false;
    }
    c.metric = expr.substr(0, opAt);
    size_t valAt = opAt + 1;
    c.op = expr.substr(opAt, 1);
    if (valAt < expr.size() && expr[valAt] == '=') c.op += "=", ++valAt;
    static const char *metrics[] = {"max_abs", "max_rel", "l0", "rel_l2", "cos", "top1"};
    bool known = false;
    for (const char *m : metrics) known = known || c.metric == m;
    if (!known) {
      error =
          "accuracy term '" + term + "': unknown metric '" + c.metric + "' (max_abs, max_rel, l0, rel_l2, cos, top1)";
      return false;
    }
    std::string val = expr.substr(valAt);
    char *stop = nullptr;
    c.value = std::strtod(val.c_str(), &stop);
    if (val.empty() || !stop || *stop != '\0') {
      error = "accuracy term '" + term + "': '" + val + "' is not a number";
      return false;
    }
    out.push_back(c);
  }
  return true;
}

bool reducedPrecision(const std::string &route) {
  // The route's own terms (a canonical route: `k=v;k=v`, defaults omitted), not the knob
  // registry, whose knobs live in libraries a caller may not link.
  for (size_t begin = 0; begin <= route.size();) {
    size_t end = std::min(route.find(';', begin), route.size());
    std::string term = route.substr(begin, end - begin);
    if ((term.rfind("precision=", 0) == 0 && term != "precision=fp32") || term == "gemm.tf32=on") return true;
    begin = end + 1;
  }
  return false;
}

std::vector<Constraint> defaultConstraints(const std::string &route) {
  std::string error;
  std::vector<Constraint> c;
  parseConstraints(reducedPrecision(route) ? "rel_l2<=1e-2,cos>=0.999" : "rel_l2<=1e-4", c, error);
  return c;
}

std::vector<std::string> violations(const std::vector<Constraint> &constraints,
                                    const std::vector<std::pair<std::string, Metrics>> &metrics) {
  std::vector<std::string> v;
  for (auto &[name, m] : metrics) {
    if (m.nanMismatch) v.push_back(name + ": NaN or infinity where the reference has another value (or the reverse)");
    for (const Constraint &c : constraints)
      if ((c.output.empty() || c.output == name) && !c.holds(m))
        v.push_back(name + ": " + c.metric + " = " + std::to_string(m.get(c.metric)) + " fails " + c.metric + c.op +
                    std::to_string(c.value));
  }
  for (const Constraint &c : constraints) {
    bool found = c.output.empty();
    for (auto &[name, m] : metrics) found = found || name == c.output;
    if (!found) v.push_back("accuracy term '" + c.text + "' names no output");
  }
  return v;
}

std::string metricsToJson(const std::vector<std::pair<std::string, Metrics>> &metrics) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto &[name, x] : metrics)
    j[name] = {{"max_abs", x.maxAbs}, {"max_rel", x.maxRel},          {"l0", x.l0}, {"rel_l2", x.relL2}, {"cos", x.cos},
               {"top1", x.top1},      {"nan_mismatch", x.nanMismatch}};
  return j.dump();
}

bool metricsFromJson(const std::string &text, std::vector<std::pair<std::string, Metrics>> &out) {
  out.clear();
  try {
    const nlohmann::json all = nlohmann::json::parse(text);  // named: a temporary would die before the loop
    if (!all.is_object()) return false;
    for (const auto &item : all.items()) {
      const nlohmann::json &x = item.value();
      auto num = [&](const char *k) { return x.at(k).is_number() ? x.at(k).get<double>() : std::nan(""); };
      Metrics v;
      v.maxAbs = num("max_abs"), v.maxRel = num("max_rel"), v.l0 = num("l0");
      v.relL2 = num("rel_l2"), v.cos = num("cos"), v.top1 = num("top1");
      v.nanMismatch = x.value("nan_mismatch", false);
      out.push_back({item.key(), v});
    }
    return true;
  } catch (const nlohmann::json::exception &) {
    return false;
  }
}

}  // namespace kiln::tuner

#include "tools/kiln/TuneReport.h"
#include "tools/kiln/Html.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <regex>

namespace kiln::cli {

WorstMetrics worstMetrics(const tuner::Measurement &m) {
  WorstMetrics w;
  nlohmann::json j = m.metrics.empty() ? nlohmann::json() : nlohmann::json::parse(m.metrics, nullptr, false);
  if (!j.is_object()) return w;
  for (auto &[name, v] : j.items()) {
    if (!v.is_object()) continue;
    w.known = true;
    w.relL2 = std::max(w.relL2, v.value("rel_l2", 0.0)), w.cos = std::min(w.cos, v.value("cos", 1.0));
    w.maxAbs = std::max(w.maxAbs, v.value("max_abs", 0.0));
  }
  return w;
}

std::string tuneReportHtml(const tuner::TuneOptions &o, const tuner::TuneReport &r, double baseMs) {
  // The plot: candidates that ran (ok or inaccurate) at (median ms, worst rel L2, log scale).
  const double W = 760, H = 420, left = 70, right = 20, top = 20, bottom = 50;
  const double floorL2 = 1e-9;
  double xmax = 0, lmin = 0, lmax = -2;  // log10 range
  std::vector<std::pair<size_t, WorstMetrics>> points;
  for (size_t i = 0; i < r.results.size(); ++i) {
    const tuner::Measurement &m = r.results[i].m;
    if ((m.status != "ok" && m.status != "inaccurate") || m.medianMs <= 0) continue;
    WorstMetrics w = worstMetrics(m);
    points.push_back({i, w});
    xmax = std::max(xmax, m.medianMs);
    double l = std::log10(std::max(w.relL2, floorL2));
    lmin = std::min(lmin, std::floor(l)), lmax = std::max(lmax, std::ceil(l));
  }
  // The rel L2 bound drawn: the --accuracy one if it has one, else the defaults by precision.
  std::vector<std::pair<double, std::string>> bounds;
  std::smatch match;
  static const std::regex relL2(R"(rel_l2\s*<=?\s*([0-9.eE+-]+))");
  if (std::regex_search(o.accuracy, match, relL2))
    bounds.push_back({std::atof(match[1].str().c_str()), "--accuracy rel_l2 bound"});
  else if (o.accuracy.empty())
    bounds = {{1e-4, "fp32 default bound"}, {1e-2, "fp16/bf16 default bound"}};
  for (auto &[b, label] : bounds)
    if (b > 0) lmin = std::min(lmin, std::floor(std::log10(b))), lmax = std::max(lmax, std::ceil(std::log10(b)));
  if (lmin >= lmax) lmin = lmax - 1;
  xmax = xmax > 0 ? xmax * 1.1 : 1;
  auto X = [&](double ms) { return left + (W - left - right) * ms / xmax; };
  auto Y = [&](double l2) {
    double l = std::log10(std::max(l2, floorL2));
    return top + (H - top - bottom) * (lmax - l) / (lmax - lmin);
  };

  std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + fmt("%.0f", W) + "\" height=\"" +
                    fmt("%.0f", H) + "\" font-family=\"sans-serif\" font-size=\"11\">\n";
  svg += "<rect x=\"" + fmt("%.1f", left) + "\" y=\"" + fmt("%.1f", top) + "\" width=\"" +
         fmt("%.1f", W - left - right) + "\" height=\"" + fmt("%.1f", H - top - bottom) +
         "\" fill=\"none\" stroke=\"#888\"/>\n";
  for (int t = 0; t <= 5; ++t) {  // latency ticks
    double ms = xmax * t / 5;
    svg += "<text x=\"" + fmt("%.1f", X(ms)) + "\" y=\"" + fmt("%.1f", H - bottom + 16) + "\" text-anchor=\"middle\">" +
           fmt("%.3g", ms) + "</text>\n";
  }
  for (double l = lmin; l <= lmax; l += 1)  // accuracy ticks
    svg += "<text x=\"" + fmt("%.1f", left - 6) + "\" y=\"" + fmt("%.1f", Y(std::pow(10, l)) + 4) +
           "\" text-anchor=\"end\">1e" + fmt("%.0f", l) + "</text>\n";
  svg += "<text x=\"" + fmt("%.1f", (left + W - right) / 2) + "\" y=\"" + fmt("%.1f", H - 10) +
         "\" text-anchor=\"middle\">median latency (ms)</text>\n";
  svg += "<text transform=\"translate(14," + fmt("%.1f", (top + H - bottom) / 2) +
         ") rotate(-90)\" text-anchor=\"middle\">worst relative L2 error (log)</text>\n";
  for (auto &[b, label] : bounds)
    svg += "<line x1=\"" + fmt("%.1f", left) + "\" x2=\"" + fmt("%.1f", W - right) + "\" y1=\"" + fmt("%.1f", Y(b)) +
           "\" y2=\"" + fmt("%.1f", Y(b)) + "\" stroke=\"#c60\" stroke-dasharray=\"5,4\"/><text x=\"" +
           fmt("%.1f", W - right - 4) + "\" y=\"" + fmt("%.1f", Y(b) - 4) + "\" text-anchor=\"end\" fill=\"#c60\">" +
           htmlEscape(label) + " (" + fmt("%g", b) + ")</text>\n";
  for (auto &[i, w] : points) {
    const tuner::CandidateResult &c = r.results[i];
    bool best = int(i) == r.best;
    std::string route = c.route.empty() ? "(default route)" : c.route;
    svg += "<circle cx=\"" + fmt("%.1f", X(c.m.medianMs)) + "\" cy=\"" + fmt("%.1f", Y(w.relL2)) + "\" r=\"" +
           (best ? "7" : "4") + "\" fill=\"" + (c.m.status == "ok" ? "#2a9d3f" : "#d62828") + "\"" +
           (best ? " stroke=\"#000\" stroke-width=\"2\"" : "") + "><title>" + htmlEscape(route) + ": " +
           fmt("%.4f ms", c.m.medianMs) + ", rel L2 " + fmt("%.2e", w.relL2) + ", " + htmlEscape(c.m.status) +
           "</title></circle>\n";
    if (best) {  // (labelled to the left near the right edge)
      bool leftOf = X(c.m.medianMs) > left + 0.6 * (W - left - right);
      svg += "<text x=\"" + fmt("%.1f", X(c.m.medianMs) + (leftOf ? -10 : 10)) + "\" y=\"" +
             fmt("%.1f", Y(w.relL2) + 4) + "\" text-anchor=\"" + (leftOf ? "end" : "start") +
             "\" font-weight=\"bold\">winner: " + htmlEscape(route) + "</text>\n";
    }
  }
  svg += "</svg>\n";

  std::string html = "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>kiln tune: " + htmlEscape(o.model) +
                     "</title>\n<style>body{font-family:sans-serif;margin:24px}table{border-collapse:collapse}"
                     "td,th{border:1px solid #ccc;padding:3px 8px;font-size:13px}td.n{text-align:right}"
                     "tr.best{font-weight:bold;background:#eef8ee}</style></head><body>\n";
  html += "<h2>kiln tune: " + htmlEscape(o.model) + "</h2>\n<p>route expression <code>" +
          htmlEscape(o.routeExpression) + "</code>, " + htmlEscape(o.search) + " search" +
          (o.fromCache ? " (from the cache)" : "") + ", environment " + htmlEscape(r.environment) + ", accuracy " +
          (o.accuracy.empty() ? "by precision" : htmlEscape(o.accuracy)) + ", " + std::to_string(r.results.size()) +
          " candidates in " + fmt("%.0f s", r.seconds) + ".</p>\n";
  html += r.best >= 0 ? "<p>Winner: <code>" + htmlEscape(r.results[size_t(r.best)].route) + "</code> " +
                            fmt("%.4f ms", r.results[size_t(r.best)].m.medianMs) + ".</p>\n"
                      : "<p>No candidate built, ran and met the accuracy constraint.</p>\n";
  if (r.notSignificant >= 0)
    html += "<p>No significant win: <code>" + htmlEscape(r.results[size_t(r.notSignificant)].route) +
            "</code> is within the base route's run-to-run spread.</p>\n";
  html += svg;
  html += "<table>\n<tr><th>route</th><th>status</th><th>median ms</th><th>min ms</th><th>p90 ms</th><th>speedup</th>"
          "<th>worst rel L2</th><th>worst cos</th><th>note</th></tr>\n";
  for (size_t i = 0; i < r.results.size(); ++i) {
    const tuner::CandidateResult &c = r.results[i];
    WorstMetrics w = worstMetrics(c.m);
    std::string note = c.sameAs >= 0 ? "same engine as " + (r.results[size_t(c.sameAs)].route.empty()
                                                                ? std::string("(default route)")
                                                                : r.results[size_t(c.sameAs)].route)
                       : c.fromCache ? "cache"
                                     : c.m.reason;
    html += std::string("<tr") + (int(i) == r.best ? " class=\"best\"" : "") + "><td><code>" +
            htmlEscape(c.route.empty() ? "(default route)" : c.route) + "</code></td><td>" + htmlEscape(c.m.status) +
            "</td><td class=\"n\">" + fmt("%.4f", c.m.medianMs) + "</td><td class=\"n\">" + fmt("%.4f", c.m.minMs) +
            "</td><td class=\"n\">" + fmt("%.4f", c.m.p90Ms) + "</td><td class=\"n\">" +
            (baseMs > 0 && c.m.medianMs > 0 ? fmt("%.2fx", baseMs / c.m.medianMs) : std::string()) +
            "</td><td class=\"n\">" + (w.known ? fmt("%.2e", w.relL2) : std::string()) + "</td><td class=\"n\">" +
            (w.known ? fmt("%.6f", w.cos) : std::string()) + "</td><td>" + htmlEscape(note.substr(0, 300)) +
            "</td></tr>\n";
  }
  html += "</table>\n</body></html>\n";
  return html;
}

}  // namespace kiln::cli

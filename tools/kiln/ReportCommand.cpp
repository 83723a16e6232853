// `kiln report TRACE.json -o report.html [--peak-tflops T] [--peak-gbps B]`: the per-launch
// profile that `kiln run --trace` wrote, as one self-contained page (no scripts, no external
// files): where the time goes (launches by time, named by their nodes), each launch against the
// GPU's roofline (achieved FLOP/s over arithmetic intensity, from the FLOPs and bytes the engine
// records per launch), and the table. Needs no GPU: a trace from the GPU host is reported anywhere.
#include "compiler/support/Files.h"
#include "compiler/support/Text.h"
#include "tools/kiln/Commands.h"
#include "tools/kiln/Html.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <iostream>

namespace kiln::cli {

namespace {

struct TracedLaunch {
  std::string name, node;
  double us = 0, flops = 0, bytes = 0;
};

// Nominal dense fp16 tensor-core and memory peaks by device name (NVIDIA's datasheets); 0 when
// the device is not one of these (then --peak-tflops/--peak-gbps are needed).
std::pair<double, double> nominalPeaks(const std::string &device) {
  auto has = [&](const char *s) { return device.find(s) != std::string::npos; };
  if (has("H200")) return {989, 4800};
  if (has("H100") && has("PCIe")) return {756, 2000};
  if (has("H100") && has("NVL")) return {835, 3900};
  if (has("H100")) return {989, 3350};
  if (has("A100")) return {312, has("80GB") ? 2039 : 1555};
  return {0, 0};
}

std::string reportHtml(const std::string &tracePath, const std::string &device, const std::string &engine,
                       const std::vector<TracedLaunch> &launches, double peakTflops, double peakGbps) {
  double totalUs = 0, totalFlops = 0, totalBytes = 0;
  for (const TracedLaunch &l : launches) totalUs += l.us, totalFlops += l.flops, totalBytes += l.bytes;
  std::vector<size_t> byTime(launches.size());
  for (size_t i = 0; i < byTime.size(); ++i) byTime[i] = i;
  std::stable_sort(byTime.begin(), byTime.end(), [&](size_t a, size_t b) { return launches[a].us > launches[b].us; });

  // Where the time goes: the 30 slowest launches as bars.
  const size_t bars = std::min<size_t>(30, launches.size());
  const double W = 900, barH = 16, labelW = 330, barsH = 30 + bars * barH;
  double maxUs = bars ? launches[byTime[0]].us : 1;
  std::string timeSvg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + fmt("%.0f", W) + "\" height=\"" +
                        fmt("%.0f", barsH) + "\" font-family=\"sans-serif\" font-size=\"11\">\n";
  for (size_t k = 0; k < bars; ++k) {
    const TracedLaunch &l = launches[byTime[k]];
    double y = 10 + k * barH, w = (W - labelW - 120) * l.us / (maxUs > 0 ? maxUs : 1);
    std::string label = l.node.empty() ? l.name : l.node;
    if (label.size() > 52) label = label.substr(0, 49) + "...";
    timeSvg += "<text x=\"" + fmt("%.0f", labelW - 6) + "\" y=\"" + fmt("%.1f", y + 11) + "\" text-anchor=\"end\">" +
               htmlEscape(label) + "</text><rect x=\"" + fmt("%.0f", labelW) + "\" y=\"" + fmt("%.1f", y + 2) +
               "\" width=\"" + fmt("%.1f", std::max(w, 1.0)) + "\" height=\"" + fmt("%.0f", barH - 4) +
               "\" fill=\"#3a7bd5\"><title>" + htmlEscape(l.name) + "</title></rect><text x=\"" +
               fmt("%.1f", labelW + w + 6) + "\" y=\"" + fmt("%.1f", y + 11) + "\">" + fmt("%.1f us", l.us) + " (" +
               fmt("%.1f%%", totalUs > 0 ? 100 * l.us / totalUs : 0) + ")</text>\n";
  }
  timeSvg += "</svg>\n";

  // The roofline: log-log, arithmetic intensity (FLOP/byte) against achieved TFLOP/s; launches
  // that compute nothing (copies, layout) are left out of it (they are in the table).
  const double RW = 760, RH = 460, left = 70, right = 20, top = 20, bottom = 50;
  double xlo = -1, xhi = 3, ylo = -3, yhi = 3;  // log10 ranges
  if (peakTflops > 0) yhi = std::ceil(std::log10(peakTflops)) + 0.2;
  auto X = [&](double ai) { return left + (RW - left - right) * (std::log10(ai) - xlo) / (xhi - xlo); };
  auto Y = [&](double tf) { return top + (RH - top - bottom) * (yhi - std::log10(tf)) / (yhi - ylo); };
  auto clampX = [&](double ai) { return std::clamp(ai, std::pow(10, xlo), std::pow(10, xhi)); };
  auto clampY = [&](double tf) { return std::clamp(tf, std::pow(10, ylo), std::pow(10, yhi)); };
  std::string roof = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + fmt("%.0f", RW) + "\" height=\"" +
                     fmt("%.0f", RH) + "\" font-family=\"sans-serif\" font-size=\"11\">\n<rect x=\"" +
                     fmt("%.0f", left) + "\" y=\"" + fmt("%.0f", top) + "\" width=\"" + fmt("%.0f", RW - left - right) +
                     "\" height=\"" + fmt("%.0f", RH - top - bottom) + "\" fill=\"none\" stroke=\"#888\"/>\n";
  for (double e = xlo; e <= xhi + 1e-9; e += 1)
    roof += "<text x=\"" + fmt("%.1f", X(std::pow(10, e))) + "\" y=\"" + fmt("%.0f", RH - bottom + 16) +
            "\" text-anchor=\"middle\">" + fmt("%g", std::pow(10, e)) + "</text>\n";
  for (double e = ylo; e <= std::floor(yhi) + 1e-9; e += 1)
    roof += "<text x=\"" + fmt("%.0f", left - 6) + "\" y=\"" + fmt("%.1f", Y(std::pow(10, e)) + 4) +
            "\" text-anchor=\"end\">" + fmt("%g", std::pow(10, e)) + "</text>\n";
  roof +=
      "<text x=\"" + fmt("%.0f", (left + RW - right) / 2) + "\" y=\"" + fmt("%.0f", RH - 10) +
      "\" text-anchor=\"middle\">arithmetic intensity (FLOP per byte moved, log)</text>\n<text transform=\"translate("
      "14," +
      fmt("%.0f", (top + RH - bottom) / 2) + ") rotate(-90)\" text-anchor=\"middle\">achieved TFLOP/s (log)</text>\n";
  if (peakTflops > 0 && peakGbps > 0) {  // the ceilings: bandwidth · intensity, then the compute peak
    double ridge = peakTflops * 1e12 / (peakGbps * 1e9);
    double a0 = std::pow(10, xlo), a1 = std::pow(10, xhi);
    double y0 = a0 * peakGbps * 1e9 / 1e12;
    roof += "<polyline fill=\"none\" stroke=\"#c60\" stroke-width=\"2\" points=\"" + fmt("%.1f", X(a0)) + "," +
            fmt("%.1f", Y(clampY(y0))) + " " + fmt("%.1f", X(clampX(ridge))) + "," + fmt("%.1f", Y(peakTflops)) + " " +
            fmt("%.1f", X(a1)) + "," + fmt("%.1f", Y(peakTflops)) + "\"/>\n<text x=\"" + fmt("%.0f", RW - right - 4) +
            "\" y=\"" + fmt("%.1f", Y(peakTflops) - 6) + "\" text-anchor=\"end\" fill=\"#c60\">" +
            fmt("%.0f TFLOP/s", peakTflops) + ", " + fmt("%.0f GB/s", peakGbps) + "</text>\n";
  }
  for (size_t i = 0; i < launches.size(); ++i) {
    const TracedLaunch &l = launches[i];
    if (l.flops <= 0 || l.bytes <= 0 || l.us <= 0) continue;
    double ai = l.flops / l.bytes, tf = l.flops / (l.us * 1e-6) / 1e12;
    double r = 2.5 + 9 * std::sqrt(totalUs > 0 ? l.us / totalUs : 0);
    roof += "<circle cx=\"" + fmt("%.1f", X(clampX(ai))) + "\" cy=\"" + fmt("%.1f", Y(clampY(tf))) + "\" r=\"" +
            fmt("%.1f", r) + "\" fill=\"#3a7bd5\" fill-opacity=\"0.55\" stroke=\"#123\"><title>#" + std::to_string(i) +
            " " + htmlEscape(l.node.empty() ? l.name : l.node) + ": " + fmt("%.1f us", l.us) + ", " +
            fmt("%.2f TFLOP/s", tf) + ", " + fmt("%.0f GB/s", l.bytes / (l.us * 1e-6) / 1e9) + "</title></circle>\n";
  }
  roof += "</svg>\n";

  std::string html =
      "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>kiln report: " + htmlEscape(engine) +
      "</title>\n<style>body{font-family:sans-serif;margin:24px}table{border-collapse:collapse}"
      "td,th{border:1px solid #ccc;padding:3px 8px;font-size:13px}td.n{text-align:right}</style></head><body>\n";
  html += "<h2>kiln report: " + htmlEscape(engine.empty() ? tracePath : engine) + "</h2>\n<p>" +
          htmlEscape(device.empty() ? "unknown device" : device) + ", " + std::to_string(launches.size()) +
          " launches, " + fmt("%.3f ms", totalUs / 1e3) + " launched one by one (each timed with CUDA events), " +
          fmt("%.3g GFLOP", totalFlops / 1e9) + " and " + fmt("%.3g MB", totalBytes / 1e6) +
          " moved: " + fmt("%.1f TFLOP/s", totalUs > 0 ? totalFlops / (totalUs * 1e-6) / 1e12 : 0) + ", " +
          fmt("%.0f GB/s", totalUs > 0 ? totalBytes / (totalUs * 1e-6) / 1e9 : 0) +
          " on average. Trace: " + htmlEscape(tracePath) + ".</p>\n";
  html += "<h3>Where the time goes (the " + std::to_string(bars) + " slowest launches)</h3>\n" + timeSvg;
  html += "<h3>Each launch against the roofline</h3>\n<p>" +
          std::string(peakTflops > 0 ? "Ceilings: nominal dense fp16 tensor-core peak and memory bandwidth. "
                                     : "No ceilings (unknown device: pass --peak-tflops and --peak-gbps). ") +
          "Bytes are the distinct tensors a launch reads and writes, each counted whole (an estimate: a Gather of a "
          "few rows of a table shows above 100 %); a circle's area "
          "is its share of the time.</p>\n" +
          roof;
  html += "<h3>Launches</h3>\n<table>\n<tr><th>#</th><th>node(s)</th><th>kernel</th><th>us</th><th>% time</th>"
          "<th>GFLOP</th><th>MB</th><th>TFLOP/s</th><th>GB/s</th><th>% of roofline</th></tr>\n";
  for (size_t i = 0; i < launches.size(); ++i) {
    const TracedLaunch &l = launches[i];
    double s = l.us * 1e-6;
    double bound = peakTflops > 0 ? std::min(peakTflops * 1e12, l.bytes > 0 ? l.flops / l.bytes * peakGbps * 1e9 : 0)
                                  : 0;  // (FLOP/s the roofline allows at its intensity)
    double mem = peakGbps > 0 && s > 0 ? l.bytes / s / (peakGbps * 1e9) : 0;
    double ofRoof = l.flops > 0 && bound > 0 && s > 0 ? l.flops / s / bound : mem;
    html += "<tr><td class=\"n\">" + std::to_string(i) + "</td><td>" + htmlEscape(l.node) + "</td><td>" +
            htmlEscape(l.name) + "</td><td class=\"n\">" + fmt("%.1f", l.us) + "</td><td class=\"n\">" +
            fmt("%.1f", totalUs > 0 ? 100 * l.us / totalUs : 0) + "</td><td class=\"n\">" + fmt("%.3f", l.flops / 1e9) +
            "</td><td class=\"n\">" + fmt("%.2f", l.bytes / 1e6) + "</td><td class=\"n\">" +
            fmt("%.2f", s > 0 ? l.flops / s / 1e12 : 0) + "</td><td class=\"n\">" +
            fmt("%.0f", s > 0 ? l.bytes / s / 1e9 : 0) + "</td><td class=\"n\">" +
            (peakTflops > 0 ? fmt("%.0f%%", 100 * ofRoof) : std::string()) + "</td></tr>\n";
  }
  html += "</table>\n</body></html>\n";
  return html;
}

}  // namespace

Runner addReportCommand(CLI::App &app) {
  auto *cmd = app.add_subcommand("report", "Make a page (HTML) of a per-launch profile: time per launch, roofline");
  auto trace = std::make_shared<std::string>(), out = std::make_shared<std::string>();
  auto peakTflops = std::make_shared<double>(0), peakGbps = std::make_shared<double>(0);
  cmd->add_option("trace", *trace, "A trace from `kiln run --trace FILE.json`")->required();
  cmd->add_option("-o,--output", *out, "The page to write (.html)")->required();
  cmd->add_option("--peak-tflops", *peakTflops,
                  "The roofline's compute ceiling in TFLOP/s (default: the trace's GPU's nominal dense fp16 peak)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--peak-gbps", *peakGbps,
                  "The roofline's memory ceiling in GB/s (default: the trace's GPU's nominal bandwidth)")
      ->check(CLI::NonNegativeNumber);
  return [=]() -> int {
    if (!*cmd) return -1;
    std::string err, text;
    if (auto why = support::checkOutputPath(*out, {*trace}); !why.empty()) {
      std::cerr << "kiln: error: -o: " << why << "\n";
      return 2;
    }
    if (!support::readFile(*trace, text, err, "trace", 1ull << 30)) {
      std::cerr << "kiln: error: " << err << "\n";
      return 2;
    }
    nlohmann::json doc = nlohmann::json::parse(text, nullptr, false);
    const nlohmann::json *events = doc.is_object() && doc.contains("traceEvents") ? &doc["traceEvents"] : nullptr;
    if (!events || !events->is_array()) {
      std::cerr << "kiln: error: " << *trace << " is not a Chrome trace (no traceEvents array); make one with "
                << "`kiln run ENGINE --trace FILE.json`\n";
      return 2;
    }
    std::vector<TracedLaunch> launches;
    for (const auto &e : *events) {
      if (!e.is_object() || e.value("ph", "") != "X" || !e.contains("dur") || !e["dur"].is_number()) continue;
      TracedLaunch l;
      l.name = e.value("name", "");
      l.us = e["dur"].get<double>();
      if (e.contains("args") && e["args"].is_object()) {
        const auto &a = e["args"];
        l.node = a.value("node", "");
        l.flops = a.contains("flops") && a["flops"].is_number() ? a["flops"].get<double>() : 0;
        l.bytes = a.contains("traffic_bytes") && a["traffic_bytes"].is_number() ? a["traffic_bytes"].get<double>() : 0;
      }
      launches.push_back(l);
    }
    if (launches.empty()) {
      std::cerr << "kiln: error: " << *trace << " has no complete events (ph \"X\") to report\n";
      return 2;
    }
    std::string device, engine;
    if (doc.contains("otherData") && doc["otherData"].is_object())
      device = doc["otherData"].value("device", ""), engine = doc["otherData"].value("engine", "");
    auto [tf, gbps] = nominalPeaks(device);
    if (*peakTflops > 0) tf = *peakTflops;
    if (*peakGbps > 0) gbps = *peakGbps;
    if (!support::writeFileAtomically(*out, reportHtml(*trace, device, engine, launches, tf, gbps), err)) {
      std::cerr << "kiln: error: -o: " << err << "\n";
      return 2;
    }
    std::printf("wrote %s: %zu launches from %s%s\n", support::printableLine(*out).c_str(), launches.size(),
                support::printableLine(device.empty() ? *trace : device).c_str(),
                tf > 0 ? "" : " (no roofline ceilings: pass --peak-tflops and --peak-gbps)");
    return 0;
  };
}

}  // namespace kiln::cli

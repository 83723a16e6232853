#include "compiler/quant/Calibration.h"

#include "compiler/support/Files.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

namespace kiln::quant {

bool parseMethod(const std::string &text, Method &out) {
  if (text == "minmax")
    out = Method::MinMax;
  else if (text == "percentile")
    out = Method::Percentile;
  else if (text == "entropy")
    out = Method::Entropy;
  else
    return false;
  return true;
}

const char *methodName(Method m) {
  switch (m) {
    case Method::MinMax: return "minmax";
    case Method::Percentile: return "percentile";
    case Method::Entropy: return "entropy";
  }
  return "?";
}

double RangeCollector::absMax() const { return std::max(std::fabs(min_), std::fabs(max_)); }

// Doubles the histogram's range (merging adjacent bins) until it covers v.
void RangeCollector::grow(double v) {
  if (range_ == 0) {
    range_ = v > 0 ? v * (1 + 1e-9) : 1e-30;
    if (v <= 0) return;
  }
  while (v >= range_) {
    for (int i = 0; i < kBins / 2; ++i) hist_[size_t(i)] = hist_[size_t(2 * i)] + hist_[size_t(2 * i + 1)];
    std::fill(hist_.begin() + kBins / 2, hist_.end(), 0);
    range_ *= 2;
  }
}

void RangeCollector::add(const double *values, int64_t count) {
  for (int64_t i = 0; i < count; ++i) {
    double v = values[i];
    if (!std::isfinite(v)) continue;  // NaN/inf carry no range information
    if (count_ == 0) min_ = max_ = v;
    min_ = std::min(min_, v), max_ = std::max(max_, v);
    ++count_;
    double a = std::fabs(v);
    if (range_ == 0 || a >= range_) grow(a);
    int bin = std::min(kBins - 1, int(a / range_ * kBins));
    ++hist_[size_t(bin)];
  }
}

namespace {

// KL(P || Q) of two unnormalised histograms (bins where P is 0 contribute nothing; Q is 0 only
// where P is, by construction).
double klDivergence(const std::vector<double> &p, const std::vector<double> &q) {
  double ps = 0, qs = 0;
  for (double x : p) ps += x;
  for (double x : q) qs += x;
  if (ps == 0 || qs == 0) return std::numeric_limits<double>::infinity();
  double kl = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] == 0) continue;
    if (q[i] == 0) return std::numeric_limits<double>::infinity();
    kl += p[i] / ps * std::log((p[i] / ps) / (q[i] / qs));
  }
  return kl;
}

}  // namespace

double RangeCollector::amax(Method m, double percentile) const {
  double absmax = absMax();
  if (m == Method::MinMax || count_ == 0 || absmax == 0) return absmax;
  const double width = range_ / kBins;
  if (m == Method::Percentile) {
    uint64_t total = 0;
    for (uint64_t c : hist_) total += c;
    double want = double(total) * std::clamp(percentile, 0.0, 100.0) / 100.0;
    uint64_t seen = 0;
    for (int i = 0; i < kBins; ++i) {
      seen += hist_[size_t(i)];
      if (double(seen) >= want) return std::min(absmax, (i + 1) * width);
    }
    return absmax;
  }
  // Entropy (TensorRT's calibrator, as NVIDIA's pytorch-quantization implements it): for each
  // threshold at bin edge i = 128 … 2048, P = the first i bins with the tail folded into the
  // last; Q = the first i bins merged into 128 levels and spread back evenly over the non-empty
  // bins; the threshold with the smallest KL(P || Q) wins.
  const int levels = 128;
  int last = kBins;
  while (last > levels && hist_[size_t(last - 1)] == 0) --last;  // past the data nothing changes
  double bestKl = std::numeric_limits<double>::infinity();
  int best = last;
  for (int i = levels; i <= last; ++i) {
    std::vector<double> p(hist_.begin(), hist_.begin() + i);
    for (int j = i; j < kBins; ++j) p[size_t(i - 1)] += double(hist_[size_t(j)]);
    std::vector<double> q(size_t(i), 0.0);
    const int merged = i / levels;
    for (int l = 0; l < levels; ++l) {
      int b0 = l * merged, b1 = l == levels - 1 ? i : b0 + merged;
      double sum = 0;
      int nonzero = 0;
      for (int b = b0; b < b1; ++b) sum += double(hist_[size_t(b)]), nonzero += hist_[size_t(b)] != 0;
      for (int b = b0; b < b1 && nonzero; ++b)
        if (hist_[size_t(b)] != 0) q[size_t(b)] = sum / nonzero;
    }
    double kl = klDivergence(p, q);
    if (kl < bestKl) bestKl = kl, best = i;
  }
  return std::min(absmax, best * width);
}

std::string rangeKey(const std::string &node, unsigned operand) { return node + ":" + std::to_string(operand); }

std::string toJson(const CalibrationTable &t) {
  nlohmann::json j = {{"format", "kiln-calibration"}, {"version", CalibrationTable::kVersion},
                      {"kiln", t.kilnVersion},        {"model_hash", t.modelHash},
                      {"method", t.method},           {"batches", t.batches}};
  if (t.method == "percentile") j["percentile"] = t.percentile;
  nlohmann::json r = nlohmann::json::object();
  for (const auto &[k, v] : t.ranges) r[k] = {{"min", v.min}, {"max", v.max}, {"amax", v.amax}};
  j["ranges"] = r;
  return j.dump(1) + "\n";
}

bool fromJson(const std::string &text, CalibrationTable &out, std::string &error) {
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    if (!j.is_object() || j.value("format", "") != "kiln-calibration") {
      error = "not a kiln calibration file";
      return false;
    }
    // Integer fields must be JSON integers: converting a float such as 3.3e118 to an integer is
    // undefined behaviour (found by the calibration fuzzer).
    auto integer = [&](const char *key, int64_t &out) {
      const nlohmann::json &v = j.at(key);
      if (v.is_number_unsigned() && v.get<uint64_t>() <= uint64_t(std::numeric_limits<int64_t>::max()))
        out = int64_t(v.get<uint64_t>());
      else if (v.is_number_integer() && !v.is_number_unsigned())
        out = v.get<int64_t>();
      else
        return error = std::string("'") + key + "' is not an integer", false;
      return true;
    };
    int64_t version = 0;
    if (!integer("version", version)) return false;
    if (version != CalibrationTable::kVersion) {
      error = "calibration format version " + std::to_string(version) + " (this kiln reads version " +
              std::to_string(CalibrationTable::kVersion) + ")";
      return false;
    }
    out.kilnVersion = j.at("kiln").get<std::string>();
    out.modelHash = j.at("model_hash").get<std::string>();
    out.method = j.at("method").get<std::string>();
    Method method;
    if (!parseMethod(out.method, method)) {
      error = "unknown method '" + out.method + "'";
      return false;
    }
    out.percentile = j.value("percentile", 0.0);
    if (method == Method::Percentile && !(out.percentile > 0 && out.percentile <= 100)) {
      error = "percentile " + std::to_string(out.percentile) + " is not in (0, 100]";
      return false;
    }
    if (!integer("batches", out.batches)) return false;
    if (out.batches < 0) {
      error = "negative batch count";
      return false;
    }
    out.ranges.clear();
    for (const auto &item : j.at("ranges").items()) {
      const nlohmann::json &v = item.value();
      TensorRange r{v.at("min").get<double>(), v.at("max").get<double>(), v.at("amax").get<double>()};
      if (!(r.amax >= 0) || !std::isfinite(r.amax) || !std::isfinite(r.min) || !std::isfinite(r.max) || r.min > r.max) {
        error = "range '" + item.key() + "' has an invalid amax, min or max";
        return false;
      }
      out.ranges[item.key()] = r;
    }
    return true;
  } catch (const nlohmann::json::exception &e) {
    error = std::string("malformed calibration file: ") + e.what();
    return false;
  }
}

bool readCalibration(const std::string &path, CalibrationTable &out, std::string &error) {
  std::string text;
  if (!support::readFile(path, text, error, "calibration file", kMaxCalibrationBytes)) return false;
  if (!fromJson(text, out, error)) {
    error = path + ": " + error;
    return false;
  }
  return true;
}

}  // namespace kiln::quant

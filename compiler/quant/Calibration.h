// Post-training quantization ranges: per-tensor statistics of activations collected over
// calibration batches, the clipping threshold (amax) chosen from them, and the calibration file
// that `kiln calibrate` writes and `kiln compile --calib` reads. Plain C++ (no MLIR).
//
// Activations are quantized per tensor and symmetrically (int8 scale = amax / 127), so what is
// kept per tensor is the distribution of |x|: its maximum and a 2048-bin histogram whose range
// doubles (adjacent bins merged) whenever a larger value arrives, so one pass suffices.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace kiln::quant {

enum class Method { MinMax, Percentile, Entropy };
bool parseMethod(const std::string &text, Method &out);
const char *methodName(Method m);

class RangeCollector {
 public:
  static constexpr int kBins = 2048;
  void add(const double *values, int64_t count);
  double min() const { return min_; }
  double max() const { return max_; }
  double absMax() const;
  int64_t count() const { return count_; }
  // The clipping threshold: absMax (minmax); the |x| below which `percentile` % of values lie;
  // or the threshold minimising the KL divergence between the histogram and its 128-level
  // quantized form (entropy, as TensorRT's calibrator).
  double amax(Method m, double percentile = 99.99) const;

 private:
  void grow(double v);
  std::vector<uint64_t> hist_ = std::vector<uint64_t>(kBins, 0);
  double range_ = 0;  // the histogram covers [0, range_)
  double min_ = 0, max_ = 0;
  int64_t count_ = 0;
};

struct TensorRange {
  double min = 0, max = 0, amax = 0;
};

// What `kiln calibrate` writes: ranges keyed by "<node name>:<operand index>" of the matrix
// products and convolutions whose activation operands they describe.
struct CalibrationTable {
  static constexpr int kVersion = 1;
  std::string kilnVersion, modelHash, method;
  double percentile = 0;
  int64_t batches = 0;
  std::map<std::string, TensorRange> ranges;
};
std::string toJson(const CalibrationTable &t);
// Reads and validates (format, version, fields); the error names the problem.
bool fromJson(const std::string &text, CalibrationTable &out, std::string &error);
// A calibration file larger than this is refused unread (a real one has a few KiB per product).
constexpr uint64_t kMaxCalibrationBytes = uint64_t(256) << 20;
bool readCalibration(const std::string &path, CalibrationTable &out, std::string &error);

// The key of operand `operand` of node `node`.
std::string rangeKey(const std::string &node, unsigned operand);

}  // namespace kiln::quant

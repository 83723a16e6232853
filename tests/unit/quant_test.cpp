// Calibration ranges: the three threshold methods on distributions whose answer is known, the
// growing histogram, and the calibration file's validation.
#include "compiler/quant/Calibration.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

using namespace kiln::quant;

TEST(Calibration, MinMaxAndPercentile) {
  RangeCollector c;
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<double> v(100000);
  for (double &x : v) x = u(rng);
  v[123] = -100.0;  // one outlier
  c.add(v.data(), int64_t(v.size()));
  EXPECT_DOUBLE_EQ(c.min(), -100.0);
  EXPECT_DOUBLE_EQ(c.amax(Method::MinMax), 100.0);
  double p = c.amax(Method::Percentile, 99.9);  // |x| uniform on [0, 1): 99.9 % lie below ~0.999
  EXPECT_GT(p, 0.95);
  EXPECT_LT(p, 1.1);  // one bin of the grown histogram (128/2048) above 1 at most
}

TEST(Calibration, EntropyClipsOutliersOfAGaussian) {
  RangeCollector c;
  std::mt19937 rng(11);
  std::normal_distribution<double> n(0.0, 1.0);
  std::vector<double> v(200000);
  for (double &x : v) x = n(rng);
  for (int i = 0; i < 5; ++i) v[size_t(i)] = 40.0;  // rare large values
  // Added in pieces so the histogram grows (bins merge) as larger values arrive.
  for (size_t off = v.size(); off > 0; off -= 50000) c.add(v.data() + off - 50000, 50000);
  EXPECT_EQ(c.count(), 200000);
  double e = c.amax(Method::Entropy);
  EXPECT_GT(e, 2.0);   // keeps the bulk of N(0, 1)
  EXPECT_LT(e, 20.0);  // and clips the outliers at 40
}

TEST(Calibration, FileRoundTripAndErrors) {
  CalibrationTable t;
  t.kilnVersion = "0.1.0", t.modelHash = "abc", t.method = "percentile", t.percentile = 99.9, t.batches = 3;
  t.ranges[rangeKey("fc1", 0)] = {-1.5, 2.0, 1.9};
  CalibrationTable back;
  std::string err;
  ASSERT_TRUE(fromJson(toJson(t), back, err)) << err;
  EXPECT_EQ(back.modelHash, "abc");
  EXPECT_DOUBLE_EQ(back.ranges.at("fc1:0").amax, 1.9);
  EXPECT_FALSE(fromJson("{\"format\": \"other\"}", back, err));
  EXPECT_NE(err.find("not a kiln calibration file"), std::string::npos);
  std::string newer = toJson(t);
  newer.replace(newer.find("\"version\": 1"), 12, "\"version\": 9");
  EXPECT_FALSE(fromJson(newer, back, err));
  EXPECT_NE(err.find("version 9"), std::string::npos) << err;
  EXPECT_FALSE(fromJson("{\"format\": \"kiln-calibration\", \"version\": 1}", back, err));
  EXPECT_NE(err.find("malformed"), std::string::npos) << err;
  EXPECT_FALSE(readCalibration("/nonexistent.calib", back, err));
  // Found by the calibration fuzzer: a float where an integer belongs (converting 3.3e118 to an
  // integer was undefined behaviour), and the other fields' checks.
  std::string bad = toJson(t);
  bad.replace(bad.find("\"batches\": 3"), 12, "\"batches\": 3.3e118");
  EXPECT_FALSE(fromJson(bad, back, err));
  EXPECT_NE(err.find("'batches' is not an integer"), std::string::npos) << err;
  bad = toJson(t);
  bad.replace(bad.find("\"version\": 1"), 12, "\"version\": 1.5");
  EXPECT_FALSE(fromJson(bad, back, err));
  EXPECT_NE(err.find("'version' is not an integer"), std::string::npos) << err;
  bad = toJson(t);
  bad.replace(bad.find("\"percentile\": 99.9"), 18, "\"percentile\": -1");
  EXPECT_FALSE(fromJson(bad, back, err));
  EXPECT_NE(err.find("is not in (0, 100]"), std::string::npos) << err;
  Method m;
  EXPECT_FALSE(parseMethod("kl", m));
}

// What `kiln tune` shows of its candidates: the worst accuracy metrics over a candidate's outputs
// (the table's columns), and `--report FILE.html`, one self-contained page (no scripts, no
// external files) with every measured candidate's latency against its accuracy, the constraint
// drawn, the winner marked, and the table.
#pragma once

#include "tuner/Tuner.h"

#include <string>

namespace kiln::cli {

struct WorstMetrics {
  double relL2 = 0, cos = 1, maxAbs = 0;
  bool known = false;  // the measurement has metrics
};
WorstMetrics worstMetrics(const tuner::Measurement &m);

// The page for `report` (the tune of `options`). `baseMs`: the base route's median (0: none).
std::string tuneReportHtml(const tuner::TuneOptions &options, const tuner::TuneReport &report, double baseMs);

}  // namespace kiln::cli

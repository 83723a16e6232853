// The separable filter of a Resize or Upsample node, exactly as the CPU evaluator computes it
// (Resize.cpp): codegen turns it into tables for the GPU kernel, so both apply one filter.
#pragma once

#include "compiler/ops/OpSemantics.h"

#include <string>
#include <utility>
#include <vector>

namespace kiln::ops {

// The taps of one output coordinate along one axis.
struct ResizeTaps {
  bool extrapolate = false;  // tf_crop_and_resize outside the input: the element is extrapolation_value
  std::vector<std::pair<int64_t, double>> taps;  // (input index, weight)
};

struct ResizePlan {
  Shape in, out;
  double extrapolation = 0.0;
  std::vector<std::vector<ResizeTaps>> axes;  // [axis of X][output coordinate]
};

// The plan of a "Resize" or "Upsample" node; its scales/sizes (and roi) must be constants.
// Throws like shape inference on a bad node.
ResizePlan resizePlan(const std::string &opType, const ShapeContext &ctx);

}  // namespace kiln::ops

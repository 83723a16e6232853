// Resize / Upsample on emitIndexKernel: one thread per output element sums, over the cartesian
// product of its per-axis taps, weight products times input elements. The taps come from tables
// the compiler builds with the CPU evaluator's own filter arithmetic (compiler/ops/Resize.h), so
// every mode (nearest, linear, cubic, antialias, exclude_outside, each coordinate transform) is
// one kernel shape. Float data sums in fp32, other types in double.
//
// Kernel parameters: x, tapIndex (int32), tapWeight (float32), y.
#pragma once

#include "codegen/KernelSpec.h"

#include <cstdint>
#include <vector>

namespace kiln::codegen {

struct ResizeKernelSpec {
  std::vector<int64_t> inShape, outShape;
  // Per axis: the taps per output coordinate, 0 for an axis that passes its coordinate through.
  // The tables hold, for each axis with taps (in axis order), outShape[axis] * taps entries;
  // an index of -1 in a coordinate's first entry means "extrapolate" (the element is
  // `extrapolation`), a weight of 0 an unused slot.
  std::vector<int> taps;
  float extrapolation = 0.f;
  ElemType type = ElemType::F32;
};

KernelLaunch emitResize(const ResizeKernelSpec &spec);

}  // namespace kiln::codegen

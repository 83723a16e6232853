// What codegen needs from the evaluator's convolution geometry (Conv.cpp), so GPU kernels and
// the CPU reference resolve padding one way.
#pragma once

#include "compiler/ops/OpSemantics.h"

#include <utility>
#include <vector>

namespace kiln::ops {

// Conv's begin and end pads per spatial axis (x in NCHW), auto_pad resolved. Throws like shape
// inference on a bad node.
std::pair<std::vector<int64_t>, std::vector<int64_t>> convPads(const TensorType &x, const TensorType &w,
                                                               const Attrs &attrs);

// ConvTranspose's begin pads per spatial axis, with auto_pad, output_shape and output_padding
// resolved. Throws like shape inference on a bad node.
std::vector<int64_t> convTransposePadBegin(const TensorType &x, const TensorType &w, const Attrs &attrs);

}  // namespace kiln::ops

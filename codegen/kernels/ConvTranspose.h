// ConvTranspose over any number of spatial axes (NCHW-style layout), on emitIndexKernel: one
// thread per output element gathers the input elements that scatter into it,
//   y[n, m, o] = bias[m] + Σ_{c in m's group, k} x[n, c, (o + pad - k * dilation) / stride] · W[c, m', k]
// where the division is exact and inside the input. fp32 sums for float storage (f32/f16/bf16).
// A direct kernel: correct for every stride/dilation/group, not tuned (no tensor cores).
//
// Kernel parameters: x, w, [bias], y.
#pragma once

#include "codegen/KernelSpec.h"

#include <cstdint>
#include <vector>

namespace kiln::codegen {

struct ConvTransposeSpec {
  int64_t N = 1, C = 1, M = 1, group = 1;                              // M: output channels
  std::vector<int64_t> in, out, kernel, strides, dilations, padBegin;  // per spatial axis
  bool hasBias = false;
  ElemType type = ElemType::F32;
};

KernelLaunch emitConvTranspose(const ConvTransposeSpec &spec);

}  // namespace kiln::codegen

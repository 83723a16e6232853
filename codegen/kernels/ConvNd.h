// Direct convolution over any number of spatial axes (NC + spatial layout), for the ranks the 2-D
// kernels do not take (3-D convolutions; 1-D ones run as 2-D with H = 1): one thread per output
// element sums its window over the input channels of its group, fp32 arithmetic for f32/f16/bf16
// storage, and applies the epilogue (FusedProgram.h: `acc` is the convolution, bias included when
// the caller puts it there) as it stores. Correct for every stride, dilation, padding and group;
// not tuned (no tensor cores, no shared memory).
//
// Kernel parameters: x [N, C, in...], w [M, C / group, kernel...], epilogue inputs...,
// y [N, M, out...].
#pragma once

#include "codegen/KernelSpec.h"
#include "codegen/kernels/FusedProgram.h"

#include <cstdint>
#include <vector>

namespace kiln::codegen {

struct ConvNdSpec {
  int64_t N = 1, C = 1, M = 1, group = 1;
  std::vector<int64_t> in, out, kernel, strides, dilations, padBegin;  // per spatial axis
  ElemType type = ElemType::F32, outType = ElemType::F32;
  FusedProgram epilogue;  // result empty: y = acc
};

KernelLaunch emitConvNd(const ConvNdSpec &spec);

}  // namespace kiln::codegen

// Direct 2-D convolution, NCHW, fp32: groups (depthwise included), strides, pads, dilations,
// optional bias and fused ReLU. Output sizes are the caller's (ONNX auto_pad / pads already
// resolved; only the begin pads matter here, positions outside the input read as 0).
//
// One thread computes MPT output channels (1, 2, 4 or 8, dividing M / group) of one output pixel;
// a block covers 256 consecutive pixels of one image for one group of MPT channels, whose weights
// it stages in shared memory when they fit (<= 32 KB). Loads along the output row are coalesced.
//
// Kernel parameters: x [N, C, H, W], w [M, C / group, KH, KW], [bias [M]], y [N, M, OH, OW].
#pragma once

#include "codegen/KernelSpec.h"

#include <cstdint>

namespace kiln::codegen {

struct Conv2dSpec {
  int64_t N = 1, C = 1, H = 1, W = 1;  // input
  int64_t M = 1;                       // output channels
  int64_t KH = 1, KW = 1;
  int64_t group = 1;
  int64_t strideH = 1, strideW = 1;
  int64_t padTop = 0, padLeft = 0;
  int64_t dilationH = 1, dilationW = 1;
  int64_t OH = 0, OW = 0;  // 0: computed with padBottom/padRight
  int64_t padBottom = 0, padRight = 0;
  bool hasBias = false;
  bool relu = false;
  int channelsPerThread = 0;  // MPT; 0 = automatic
};

// Output size of one spatial axis: floor((in + pads - dilation * (k - 1) - 1) / stride) + 1.
int64_t convOutSize(int64_t in, int64_t k, int64_t stride, int64_t padBegin, int64_t padEnd, int64_t dilation);

KernelLaunch emitConv2d(const Conv2dSpec &spec);

}  // namespace kiln::codegen

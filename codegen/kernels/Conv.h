// Direct 2-D convolutions (the implicit-GEMM NHWC convolution is MatMul.h with ConvGeometry).
//
// NCHW (emitConv2d): groups (depthwise included), strides, pads, dilations. One thread computes
// MPT output channels (1, 2, 4 or 8, dividing M / group) of one output pixel; a block covers 256
// consecutive pixels of one image for one group of MPT channels, whose weights it stages in
// shared memory when they fit (<= 32 KB). Loads along the output row are coalesced.
// Kernel parameters: x [N, C, H, W], w [M, C / group, KH, KW], epilogue inputs..., y [N, M, OH, OW].
//
// NHWC (emitConv2dNhwc), for grouped and depthwise convolutions: one thread computes V
// consecutive output channels of one output pixel (V = 8 halves or 4 floats when a group has
// one input channel per output channel group and sizes allow 16-byte accesses, else 1).
// Kernel parameters: x [N, H, W, C], w as [KH, KW, C / group, M], epilogue inputs...,
// y [N, OH, OW, M].
//
// Both compute in fp32 whatever the storage (F32, F16, BF16) and apply the epilogue
// (FusedProgram.h: `acc` is the convolution, bias included when the caller puts it there; its
// inputs broadcast to the output shape) as they store. Output sizes are the caller's (ONNX
// auto_pad / pads already resolved; positions outside the input read as 0).
#pragma once

#include "codegen/KernelSpec.h"
#include "codegen/kernels/FusedProgram.h"

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
  ElemType type = ElemType::F32;  // x and w storage
  ElemType outType = ElemType::F32;
  FusedProgram epilogue;      // result empty: y = acc
  int channelsPerThread = 0;  // NCHW: MPT; 0 = automatic
};

// Output size of one spatial axis: floor((in + pads - dilation * (k - 1) - 1) / stride) + 1.
int64_t convOutSize(int64_t in, int64_t k, int64_t stride, int64_t padBegin, int64_t padEnd, int64_t dilation);

KernelLaunch emitConv2d(const Conv2dSpec &spec);
KernelLaunch emitConv2dNhwc(const Conv2dSpec &spec);

// The epilogue of ONNX Conv with an optional bias [M] (as an input of shape [M, 1, 1] for NCHW
// or [M] for NHWC) and an optional fused ReLU.
FusedProgram convBiasEpilogue(bool hasBias, int64_t M, bool nhwc, ElemType biasType, bool relu);

}  // namespace kiln::codegen

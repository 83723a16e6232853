// 2-D pooling, NCHW or NHWC, fp32 arithmetic on f32/f16/bf16 storage: MaxPool (dilations, optional int64 Indices output, row-major
// storage_order 0) and AveragePool (count_include_pad), with pads and strides; output sizes are
// the caller's (ceil_mode and auto_pad resolved there; windows that run past the end padding are
// clipped, as the CPU reference does). GlobalAveragePool / GlobalMaxPool are row reductions over
// [N * C, H * W] (Reduction.h), emitted through emitGlobalPool.
//
// One thread per output element, consecutive threads along the output row (NCHW) or along the
// channels (NHWC).
// Kernel parameters: MaxPool: x, y [, indices]; AveragePool: x, y; Global*: x, y.
#pragma once

#include "codegen/KernelSpec.h"

#include <cstdint>
#include <vector>

namespace kiln::codegen {

enum class PoolKind { Max, Average };

struct Pool2dSpec {
  PoolKind kind = PoolKind::Max;
  int64_t N = 1, C = 1, H = 1, W = 1;
  int64_t KH = 1, KW = 1;
  int64_t strideH = 1, strideW = 1;
  int64_t padTop = 0, padLeft = 0, padBottom = 0, padRight = 0;
  int64_t dilationH = 1, dilationW = 1;
  int64_t OH = 0, OW = 0;           // 0: floor mode from the pads
  bool countIncludePad = false;     // AveragePool
  bool indicesOutput = false;       // MaxPool's optional Indices (int64; NCHW only)
  bool columnMajorIndices = false;  // storage_order 1: the spatial offset in Indices is w * H + h
  ElemType type = ElemType::F32;    // x and y storage (arithmetic in fp32)
  bool nhwc = false;                // x [N, H, W, C], y [N, OH, OW, C]
};

KernelLaunch emitPool2d(const Pool2dSpec &spec);

// Pooling over 1, 3 or more spatial axes ([N, C, spatial...]), one thread per output element
// (emitIndexKernel): windows clipped to the input, and for AveragePool with count_include_pad to
// the padded input, as the CPU reference. Parameters: x, y.
struct PoolNdSpec {
  bool max = true;  // else average
  int64_t N = 1, C = 1;
  std::vector<int64_t> in, out, kernel, strides, dilations, padBegin, padEnd;  // per spatial axis
  bool countIncludePad = false;
  ElemType type = ElemType::F32;
};
KernelLaunch emitPoolNd(const PoolNdSpec &spec);

// GlobalAveragePool (max = false) or GlobalMaxPool over x [N, C, spatial...]: `planes` = N * C,
// `size` = product of the spatial dims.
KernelLaunch emitGlobalPool(bool max, int64_t planes, int64_t size, ElemType type = ElemType::F32);

}  // namespace kiln::codegen

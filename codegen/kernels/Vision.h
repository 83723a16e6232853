// Kernels of the vision and detection ops (compiler/ops/Vision.cpp holds their reference
// semantics), on emitIndexKernel (IndexKernel.h): one thread per output element, or per the
// independent part of a scatter. Correctness-first kernels for ops that are rare in inference
// graphs (no tiling, no shared memory); float storage (f32/f16/bf16) computes in float, float64
// in double. Indices out of range are clamped, never read or written out of bounds. Shapes are
// row-major; every element type a kernel stores is allowed where the op only moves data.
#pragma once

#include "codegen/KernelSpec.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::codegen {

// GatherND with `batchDims` leading batch dims: out[b, j, e] = data[b, indices[b, j, :], e].
// Parameters: data, indices (int64), y.
KernelLaunch emitGatherNd(const std::vector<int64_t> &dataShape, const std::vector<int64_t> &indicesShape,
                          int64_t batchDims, ElemType type);

// The copy of `data` into the output that a scatter starts from. Parameters: data, y.
KernelLaunch emitScatterCopy(int64_t elements, ElemType type);

// ScatterND after emitScatterCopy: y[indices[j, :], e] (op)= updates[j, e], `reduction` none,
// add, mul, max or min. "none" runs one thread per update element (duplicate indices: undefined,
// as ONNX says); a reduction runs one thread per slice element e, applying the index tuples in
// order (deterministic). Parameters: indices (int64), updates, y.
KernelLaunch emitScatterNd(const std::vector<int64_t> &dataShape, const std::vector<int64_t> &indicesShape,
                           const std::string &reduction, ElemType type);

// ScatterElements (and Scatter) after emitScatterCopy: y[c with c[axis] = indices[c]] (op)=
// updates[c]. One thread per coordinate of the indices without `axis`, walking `axis` in order
// (the last duplicate wins, reductions are deterministic). Parameters: indices, updates, y.
KernelLaunch emitScatterElements(const std::vector<int64_t> &dataShape, const std::vector<int64_t> &indicesShape,
                                 int axis, const std::string &reduction, ElemType indexType, ElemType type);

// GridSample of X [N, C, H, W] at grid [N, Ho, Wo, 2] (PyTorch's grid_sample: mode bilinear,
// nearest or bicubic; padding zeros, border or reflection). Parameters: x, grid, y.
struct GridSampleSpec {
  int64_t N = 1, C = 1, H = 1, W = 1, Ho = 1, Wo = 1;
  std::string mode = "bilinear", padding = "zeros";
  bool alignCorners = false;
  ElemType type = ElemType::F32, gridType = ElemType::F32;
};
KernelLaunch emitGridSample(const GridSampleSpec &spec);

// RoiAlign (onnxruntime's algorithm). Parameters: x [N, C, H, W], rois [R, 4], batch_indices [R], y.
struct RoiAlignSpec {
  int64_t N = 1, C = 1, H = 1, W = 1, R = 1, OH = 1, OW = 1;
  int64_t samplingRatio = 0;
  float spatialScale = 1.f;
  bool average = true, halfPixel = true;
  ElemType type = ElemType::F32, indexType = ElemType::I64, roisType = ElemType::F32;
};
KernelLaunch emitRoiAlign(const RoiAlignSpec &spec);

// MaxUnpool: emitFill(zero) of the output, then y[I[k]] = x[k]. Parameters: x, indices (int64), y.
KernelLaunch emitFillZero(int64_t elements, ElemType type);  // Parameters: y.
// (Indices are flat positions in `unpooled`, the shape of the attributes; each element keeps its
// coordinates in `outShape`, output_shape's, or is dropped outside it.)
KernelLaunch emitUnpoolScatter(int64_t inputElements, const std::vector<int64_t> &unpooled,
                               const std::vector<int64_t> &outShape, ElemType type);

// LRN across channels (dim 1) of `shape`. Parameters: x, y.
KernelLaunch emitLrn(const std::vector<int64_t> &shape, int64_t size, float alpha, float beta, float bias,
                     ElemType type);

// MeanVarianceNormalization over `axes`: one thread per group of elements that share their other
// coordinates, two passes over the group. Parameters: x, y.
KernelLaunch emitMeanVarianceNorm(const std::vector<int64_t> &shape, const std::vector<int64_t> &axes, ElemType type);

// ReverseSequence. Parameters: x, sequence_lens (int64), y.
KernelLaunch emitReverseSequence(const std::vector<int64_t> &shape, int batchAxis, int timeAxis, ElemType type);

}  // namespace kiln::codegen

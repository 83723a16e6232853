// Ops whose result element is a function of its coordinates, on emitIndexKernel (IndexKernel.h):
// one thread per output element. Shapes are row-major; element types any kernel storage type.
#pragma once

#include "codegen/KernelSpec.h"

#include <cstdint>
#include <vector>

namespace kiln::codegen {

// Trilu over the last two axes: keeps x[..., r, c] where c - r >= k (upper) or c - r <= k
// (lower), else 0. Parameters: x, y.
KernelLaunch emitTrilu(const std::vector<int64_t> &shape, int64_t k, bool upper, ElemType type);

// GatherElements: y[c] = data[c with c[axis] = indices[c]] (negative indices count from the end;
// out-of-range ones are clamped, never read out of bounds). Parameters: data, indices, y.
KernelLaunch emitGatherElements(const std::vector<int64_t> &dataShape, const std::vector<int64_t> &indicesShape,
                                int axis, ElemType indexType, ElemType type);

// EyeLike: y[r, c] = (c - r == k) of a 2-D shape. Parameters: y.
KernelLaunch emitEyeLike(const std::vector<int64_t> &shape, int64_t k, ElemType type);

// OneHot: y = values[1] where the output coordinate along `axis` equals the index (negative
// indices + depth) at the other coordinates, else values[0]. Parameters: indices, values[2], y.
KernelLaunch emitOneHot(const std::vector<int64_t> &indicesShape, int64_t depth, int axis, ElemType indexType,
                        ElemType type);

// Inference Dropout with its mask output: y = x, mask = true. Parameters: x, y, mask.
KernelLaunch emitDropoutWithMask(int64_t elements, ElemType type);

}  // namespace kiln::codegen

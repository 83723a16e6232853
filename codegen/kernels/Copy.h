// Generic N-D strided gather, out[outOffset + Σ c_d * outStride_d] = in[inOffset + Σ c_d * inStride_d]
// for every coordinate c of `dims`, any element type (copied as raw 1/2/4/8-byte words). Covers
// Transpose (permuted strides), Slice (offset + stepped strides, negative steps too), Concat (one
// launch per input writing into the result at an offset), Split, Expand (0 strides), Tile
// (each axis split into [repeat, dim] with the repeat's stride 0), and Gather on a constant axis
// (an int64/int32 indices tensor as a second input). Dims are coalesced, so rank is not limited.
// When the innermost coalesced dim is contiguous on both sides (slices of a last axis, transposes
// that keep it, concats), 16/8/4-byte words move several elements per thread if the pointers
// are aligned at run time (else the element loop runs).
//
// Kernel parameters: in, [indices], out.
#pragma once

#include "codegen/KernelSpec.h"

#include <cstdint>
#include <vector>

namespace kiln::codegen {

struct CopySpec {
  ElemType type = ElemType::F32;
  std::vector<int64_t> dims;       // the iteration space
  std::vector<int64_t> inStrides;  // per dim (elements; 0 = broadcast, negative allowed)
  int64_t inOffset = 0;
  std::vector<int64_t> outStrides;  // empty: row-major over `dims`
  int64_t outOffset = 0;
  // Gather: dims [gatherBegin, gatherBegin + gatherRank) walk a contiguous indices tensor; its
  // value v (negative counts from the end of an axis of gatherAxisSize; out-of-range values are
  // clamped, never read out of bounds) adds v * gatherStride to the input offset. Those dims'
  // inStrides are normally 0.
  bool gather = false;
  int gatherBegin = 0, gatherRank = 0;
  ElemType indexType = ElemType::I64;
  int64_t gatherAxisSize = 1, gatherStride = 0;
};

KernelLaunch emitCopy(const CopySpec &spec);

// Builders for the ops above (shapes row-major; every result is an ordinary CopySpec).
CopySpec transposeCopy(const std::vector<int64_t> &inShape, const std::vector<int64_t> &perm,
                       ElemType t = ElemType::F32);
// starts: resolved, in range; steps non-zero; outShape: the sliced sizes per axis.
CopySpec sliceCopy(const std::vector<int64_t> &inShape, const std::vector<int64_t> &starts,
                   const std::vector<int64_t> &steps, const std::vector<int64_t> &outShape, ElemType t = ElemType::F32);
// One Concat input of shape inShape written at `offset` along `axis` of the result outShape.
CopySpec concatCopy(const std::vector<int64_t> &inShape, const std::vector<int64_t> &outShape, int axis, int64_t offset,
                    ElemType t = ElemType::F32);
CopySpec expandCopy(const std::vector<int64_t> &inShape, const std::vector<int64_t> &outShape,
                    ElemType t = ElemType::F32);
CopySpec tileCopy(const std::vector<int64_t> &inShape, const std::vector<int64_t> &repeats, ElemType t = ElemType::F32);
// Gather(data, indices, axis): out = data[..., indices[...], ...].
CopySpec gatherCopy(const std::vector<int64_t> &dataShape, int axis, const std::vector<int64_t> &indicesShape,
                    ElemType indexType = ElemType::I64, ElemType t = ElemType::F32);

}  // namespace kiln::codegen

namespace kiln::codegen {

// Pad (ONNX): out[c] = in[c - before] where that is inside the input, else `value` (constant)
// or the edge / reflected / wrapped element of the kept region. Negative pads crop.
// Kernel parameters: in, out.
struct PadSpec {
  std::vector<int64_t> inShape, before, after;  // one pad pair per dim
  std::string mode = "constant";                // constant, edge, reflect, wrap
  double value = 0;                             // constant mode
  ElemType type = ElemType::F32;
};
KernelLaunch emitPad(const PadSpec &spec);

// Im2Col (a kiln-internal op): the patches of an NHWC image x[N, H, W, C] as the rows of
// out[N, OH, OW, KH·KW·C], zero where a tap falls in the padding. One thread per word of
// channels (16 bytes where C allows and the pointers are aligned).
// Kernel parameters: in, out.
struct Im2ColSpec {
  int64_t N = 1, H = 1, W = 1, C = 1, KH = 1, KW = 1, OH = 1, OW = 1;
  int64_t strideH = 1, strideW = 1, dilationH = 1, dilationW = 1, padTop = 0, padLeft = 0;
  ElemType type = ElemType::F32;
};
KernelLaunch emitIm2Col(const Im2ColSpec &spec);

}  // namespace kiln::codegen

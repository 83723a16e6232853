// Batched fp32 matrix products: C[b] = alpha * op(A[b]) * op(B[b]) (+ beta * bias) (ReLU?), which
// covers MatMul (numpy batch broadcasting, 1-D operands) and Gemm (transA/transB, alpha, beta, C
// broadcast to [M, N]). Shared-memory tiled SIMT: BM x BN tiles, BK = 16, TM x TN outputs per
// thread (128x128/8x8, 64x64/4x4, 32x32/2x2; 256 threads).
//
// Layouts (row-major, per batch): A is [M, K] ([K, M] when transA), B is [K, N] ([N, K] when
// transB), C is [M, N] and contiguous over the batch (batch index b is row-major over batchShape).
// Kernel parameters: A, B, [bias], C.
#pragma once

#include "codegen/KernelSpec.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::codegen {

struct MatMulSpec {
  int64_t M = 1, N = 1, K = 1;
  bool transA = false, transB = false;
  // Output batch dims; per dim, the element stride of A's, B's (and bias's) matrix in that dim
  // (0 = broadcast). Empty stride lists mean contiguous batches (M*K, K*N, M*N per batch).
  std::vector<int64_t> batchShape;
  std::vector<int64_t> batchStridesA, batchStridesB, batchStridesBias;
  float alpha = 1.f;
  float beta = 1.f;         // scales the bias
  bool hasBias = false;     // element (m, n) of batch b: bias[b-offset + m * biasStrideM + n * biasStrideN]
  int64_t biasStrideM = 0, biasStrideN = 1;
  bool relu = false;        // epilogue max(x, 0) (NaN passes)
  std::string tile;         // "128x128", "64x64", "32x32"; empty: chosen from the sizes
};

KernelLaunch emitMatMul(const MatMulSpec &spec);

// numpy.matmul of A and B shapes (1-D operands promoted and the added dims dropped from the
// result, batch dims broadcast). `outShape` (optional) receives the result's shape.
MatMulSpec matMulSpecFromShapes(const std::vector<int64_t> &aShape, const std::vector<int64_t> &bShape,
                                std::vector<int64_t> *outShape = nullptr);

// ONNX Gemm: A, B 2-D; `cShape` (empty vector with hasC=false: no C) broadcasts to [M, N].
MatMulSpec gemmSpecFromShapes(const std::vector<int64_t> &aShape, const std::vector<int64_t> &bShape,
                              bool hasC, const std::vector<int64_t> &cShape, bool transA, bool transB,
                              float alpha, float beta);

// The tiles the emitter has ("128x128", "64x64", "32x32"): the domain of a gemm.tile knob.
std::vector<std::string> matMulTiles();

}  // namespace kiln::codegen

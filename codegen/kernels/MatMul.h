// Batched matrix products with a fused epilogue: C[b] = epilogue(A[b] · B[b]), which covers
// MatMul (numpy batch broadcasting, 1-D operands), TransposedMatMul (operands read through any
// permutation whose innermost dims keep a unit stride or not), Gemm, and NHWC convolution as an
// implicit GEMM (A = the im2col view of the image, never materialised).
//
// Two kernel families share this spec:
//   - fp32 (type F32): shared-memory tiled SIMT, BK = 16, 256 threads, (BM/16) x (BN/16) outputs
//     per thread;
//   - fp16 / bf16: tensor cores (mma.sync m16n8k16, fp32 accumulation), BK = 32, a STAGES-deep
//     cp.async pipeline with 16-byte copies where an operand's contiguous dim allows (else
//     element loads into the same pipeline), ldmatrix (.trans for M- or N-contiguous operands).
//
// Operands are views: element (b, i, j) of the logical matrix (A: [M, K], B: [K, N]) is at
// base + Σ_d b_d · batchStrides[d] + i · rowStride + j · colStride. The result is written
// contiguous over [batch..., M, N]; the epilogue (FusedProgram.h, `acc` = the fp32 product)
// computes each stored element, its inputs broadcast to `outShape`.
//
// A prologue (FusedProgram.h, `acc` = an element of A as float) may replace each element of A as
// it is loaded: an elementwise function of A with one-element inputs (onnxruntime's dynamic
// quantization of an activation: its scale and zero point are computed at run time). Elements
// outside [M, K] and a convolution's padded taps stay 0 (the product pads the prologue's result).
//
// Kernel parameters: A (or the NHWC image), B, prologue inputs..., (int8: the column scales, [the
// zero-point offsets,]) epilogue inputs..., C.
#pragma once

#include "codegen/KernelSpec.h"
#include "compiler/target/GpuTarget.h"
#include "compiler/target/Products.h"
#include "codegen/kernels/FusedProgram.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kiln::codegen {

struct MatrixView {
  std::vector<int64_t> batchStrides;  // per batch dim of the output (0 = broadcast)
  int64_t rowStride = 0, colStride = 1;
};

using target::uniformBatchStride;

// A = im2col of an NHWC image x[N, H, W, C]: row m = (n, oh, ow), column k = (kh, kw, c), so
// M = N·OH·OW, K = KH·KW·C; taps outside the image read 0. B is then the weights as [K, N]
// (usually stored [Cout, KH, KW, C], i.e. rowStride 1, colStride K).
struct ConvGeometry {
  int64_t N = 1, H = 1, W = 1, C = 1, KH = 1, KW = 1;
  int64_t strideH = 1, strideW = 1, padTop = 0, padLeft = 0, dilationH = 1, dilationW = 1;
  int64_t OH = 1, OW = 1;
};

struct MatMulSpec {
  int64_t M = 1, N = 1, K = 1;
  std::vector<int64_t> batchShape;   // output batch dims
  MatrixView a, b;                   // rowStride 0: row-major contiguous ([M, K] / [K, N] per batch)
  std::optional<ConvGeometry> conv;  // A is the im2col view of an image (then `a` is unused)
  ElemType type = ElemType::F32;     // A and B storage: F32 → SIMT; F16/BF16 → tensor cores
  ElemType outType = ElemType::F32;  // a float type (F8E4M3 too), or I8/U8 after a QuantizeLinear epilogue
  FusedProgram epilogue;             // result empty: C = acc
  FusedProgram prologue;             // result empty: none; float kernels only, one-element inputs
  std::optional<ElemType> aType;     // with a prologue: A's storage type if not `type` (F32 into a half product)
  std::vector<int64_t> outShape;     // epilogue broadcast shape; empty: batchShape + [M, N]
  std::string tile;                  // "auto" or empty: chosen from the sizes; else one of matMulTiles()
  int smCount = target::GpuTarget().smCount;  // the target's SMs: auto tiles give it a full wave of blocks
  int stages = 0;                             // tensor-core pipeline depth (2..4); 0: automatic
  // Tensor-core products of one batch only: K split over a thread-block cluster of this many
  // blocks (2, 4 or 8), whose sums are added in the leader block through distributed shared memory
  // before its epilogue (one launch, no workspace). 0: automatic where `clusters` (as many as keep
  // the blocks within one wave, each with 2+ k-tiles); 1: off; batched products ignore it.
  int splitK = 0;
  bool clusters = target::GpuTarget().has(target::Feature::Clusters);
  // A and B hold 8-bit values: tensor cores (mma.sync m16n8k32 s8, int32 sums; or with `fp8`
  // e4m3, fp32 sums), `acc` = sum · scale[n] with scale an extra fp32 [N] kernel parameter after
  // B. `type` is ignored.
  bool int8 = false;
  bool fp8 = false;        // int8: A and B hold float8e4m3fn (sm_89+)
  bool aUnsigned = false;  // int8: A holds uint8 (mma .u8.s8); B is always int8
  // int8: A's zero point za (0: none). An int32 [N] parameter after the scales holds
  // za · Σ_k B[k][n], subtracted from the sums before scaling; a convolution's padded taps read za
  // (as onnxruntime pads a quantized image), so they add nothing to Σ (a - za)·b.
  int64_t aZeroPoint = 0;
};

KernelLaunch emitMatMul(const MatMulSpec &spec);

// numpy.matmul of A and B shapes (1-D operands promoted and the added dims dropped from the
// result, batch dims broadcast). `outShape` (optional) receives the result's shape.
MatMulSpec matMulSpecFromShapes(const std::vector<int64_t> &aShape, const std::vector<int64_t> &bShape,
                                std::vector<int64_t> *outShape = nullptr);

// MatMul(Transpose(A, permA), Transpose(B, permB)) for operands of rank >= 2 (empty perm:
// identity): the transposes become strides. An operand is row-major unless its element strides
// are given (`aStrides`, `bStrides`: a strided view read in place).
MatMulSpec transposedMatMulSpec(const std::vector<int64_t> &aShape, const std::vector<int64_t> &permA,
                                const std::vector<int64_t> &bShape, const std::vector<int64_t> &permB,
                                std::vector<int64_t> *outShape = nullptr,
                                const std::vector<int64_t> *aStrides = nullptr,
                                const std::vector<int64_t> *bStrides = nullptr);

// ONNX Gemm: A, B 2-D; C (hasC) broadcasts to [M, N]; alpha · A'B' + beta · C as the epilogue.
MatMulSpec gemmSpecFromShapes(const std::vector<int64_t> &aShape, const std::vector<int64_t> &bShape, bool hasC,
                              const std::vector<int64_t> &cShape, bool transA, bool transB, float alpha, float beta);

// The tiles ("BMxBN"): the domain of the gemm.tile knob. The fp32 kernels have no 256-wide
// tiles (they use 128x128 instead); the tensor-core kernels no 32x32 (they use 64x64).
std::vector<std::string> matMulTiles();

}  // namespace kiln::codegen

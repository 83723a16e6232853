// Hopper's warpgroup matrix product (wgmma) for fp16/bf16 with fp32 accumulation, sm_90a only
// (issue 25's first step; not yet a gemm.tactic). C[M, N] = A[M, K] · B[N, K]ᵀ: A row-major and
// B stored as the weights are ([N, K], K contiguous), C row-major in the operands' type.
//
// A block of two consumer warpgroups computes a BM = 128 × BN tile (each warpgroup 64 rows, one
// m64nBNk16 wgmma per 16 of K, accumulators in registers); every thread also loads: A and B
// tiles of 64 K go with cp.async into a ring of `stages` shared-memory buffers laid out in the
// 128-byte swizzle that wgmma's shared-memory descriptors read (16-byte chunk c of row r at
// chunk c ^ (r % 8)), so the products read them without ldmatrix. Edges in M, N and K read zeros
// and store nothing past the matrix; K must be a multiple of 8 (16-byte rows). An epilogue
// (FusedProgram.h, `acc` = the fp32 product) computes each stored element of C (row-major [M, N],
// i.e. element L = row · N + col of `outShape`), its inputs broadcast to `outShape`.
//
// With `tma` the block is warp-specialised and persistent instead (CUTLASS 3's sm90 "TMA warp-
// specialised" design, written anew): one producer thread issues TMA copies of the A and B tiles
// (tensor maps, 128-byte swizzle: the same layout) into the ring, each stage with a "full" mbarrier
// the copies complete and an "empty" one the consumers arrive at when their products have read
// it; two consumer warpgroups (setmaxnreg moves the producer's registers to them) keep one
// wgmma group in flight while the next stage's copies land. A grid of at most one block per SM
// walks the tiles (M fastest), so the producer loads the next tile while the consumers store
// this one. Parameters: A and B (tma: tensor maps over them, KernelLaunch::tensorMaps), the
// epilogue's inputs, then C.
#pragma once

#include "codegen/KernelSpec.h"
#include "codegen/kernels/FusedProgram.h"
#include "compiler/target/GpuTarget.h"

#include <optional>

namespace kiln::codegen {

struct WgmmaGemmSpec {
  int64_t M = 0, N = 0, K = 0;
  ElemType type = ElemType::F16;              // A and B: F16 or BF16
  std::optional<ElemType> outType;            // C's float type; unset: `type`
  FusedProgram epilogue;                      // result empty: C = acc
  std::vector<int64_t> outShape;              // the epilogue's broadcast shape ([M, N] in elements); empty: [M, N]
  int blockN = 128;                           // BN: 64, 128 or 256 (the wgmma's N)
  int stages = 4;                             // shared-memory buffers in the ring, 2..8
  bool tma = false;                           // TMA loads, warp specialisation, persistent blocks
  int smCount = target::GpuTarget().smCount;  // tma: the grid's blocks at most
};

// Empty when emitWgmmaGemm takes the spec, else why not.
std::string wgmmaUnsupported(const WgmmaGemmSpec &s);

// The kernel (parameters A, B, C) and its launch; compile it for sm_90a. Throws
// std::invalid_argument when wgmmaUnsupported says why.
KernelLaunch emitWgmmaGemm(const WgmmaGemmSpec &s);

}  // namespace kiln::codegen

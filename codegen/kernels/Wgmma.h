// Hopper's warpgroup matrix product (wgmma) for fp16/bf16 with fp32 accumulation, sm_90a only
// (issue 25's first step; not yet a gemm.tactic). C[M, N] = A[M, K] · B[N, K]ᵀ: A row-major and
// B stored as the weights are ([N, K], K contiguous), C row-major in the operands' type.
//
// A block of two consumer warpgroups computes a BM = 128 × BN tile (each warpgroup 64 rows, one
// m64nBNk16 wgmma per 16 of K, accumulators in registers); every thread also loads: A and B
// tiles of 64 K go with cp.async into a ring of `stages` shared-memory buffers laid out in the
// 128-byte swizzle that wgmma's shared-memory descriptors read (16-byte chunk c of row r at
// chunk c ^ (r % 8)), so the products read them without ldmatrix. Edges in M, N and K read zeros
// and store nothing past the matrix; K must be a multiple of 8 (16-byte rows).
#pragma once

#include "codegen/KernelSpec.h"

namespace kiln::codegen {

struct WgmmaGemmSpec {
  int64_t M = 0, N = 0, K = 0;
  ElemType type = ElemType::F16;  // A, B and C: F16 or BF16
  int blockN = 128;               // BN: 64, 128 or 256 (the wgmma's N)
  int stages = 4;                 // shared-memory buffers in the ring, 2..8
};

// Empty when emitWgmmaGemm takes the spec, else why not.
std::string wgmmaUnsupported(const WgmmaGemmSpec &s);

// The kernel (parameters A, B, C) and its launch; compile it for sm_90a. Throws
// std::invalid_argument when wgmmaUnsupported says why.
KernelLaunch emitWgmmaGemm(const WgmmaGemmSpec &s);

}  // namespace kiln::codegen

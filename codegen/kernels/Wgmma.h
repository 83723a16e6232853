// Hopper's warpgroup matrix product (wgmma) for fp16/bf16/fp8 e4m3 with fp32 accumulation, sm_90 only
// (compiled for sm_90a), gemm.tactic=kiln_wgmma. C[M, N] = epilogue(A[M, K] · B[N, K]ᵀ): A
// row-major and B stored as the weights are ([N, K], K contiguous); an epilogue (FusedProgram.h,
// `acc` = the fp32 product) computes each stored element of C (row-major [M, N], i.e. element
// L = row · N + col of `outShape`), its inputs broadcast to `outShape`.
//
// The block is warp-specialised and persistent (CUTLASS 3's sm90 "TMA warp-specialised" design,
// written anew). One producer thread issues TMA copies of A's and B's tiles of 128 bytes of K (64
// fp16 or 128 fp8 elements; tensor maps, 128-byte swizzle: 16-byte chunk c of row r at chunk
// c ^ (r % 8), the layout wgmma's shared-memory descriptors read) into a ring of `stages`
// buffers, each stage with a "full" mbarrier the copies complete and an "empty" one the consumers
// arrive at when their products have read it. Two consumer warpgroups (setmaxnreg moves the
// producer's registers to them) compute a BM = 128 x BN tile, 64 rows each with one wgmma per 32
// bytes of K (m64nBNk16, fp8 m64nBNk32), keeping one wgmma group in flight while the next
// stage's copies land. A grid of at most one block per SM walks the tiles (M fastest), so the
// producer loads the next tile while the consumers store this one. Edges in M, N and K read zeros
// and store nothing past the matrix; K's rows must be multiples of 16 bytes. Parameters: A and B
// (tensor maps over them, KernelLaunch::tensorMaps), [the column scales,] the epilogue's inputs,
// then C.
#pragma once

#include "codegen/KernelSpec.h"
#include "codegen/kernels/FusedProgram.h"
#include "compiler/target/GpuTarget.h"

#include <optional>

namespace kiln::codegen {

struct WgmmaGemmSpec {
  int64_t M = 0, N = 0, K = 0;
  ElemType type = ElemType::F16;              // A and B: F16, BF16 or F8E4M3
  std::optional<ElemType> outType;            // C's float type; unset: `type`
  FusedProgram epilogue;                      // result empty: C = acc
  std::vector<int64_t> outShape;              // the epilogue's broadcast shape ([M, N] in elements); empty: [M, N]
  int blockN = 128;                           // BN: 64, 128 or 256 (the wgmma's N)
  int stages = 4;                             // shared-memory buffers in the ring, 2..8
  int smCount = target::GpuTarget().smCount;  // the grid's blocks at most
  // Ping-pong: each consumer warpgroup takes every other tile, all 128 rows, so one stores while
  // the other computes (CUTLASS's "pingpong" schedule); else both share each tile, 64 rows each
  // ("cooperative"). Tile N at most 128.
  bool pingpong = false;
  // acc = the product · scale[col], an fp32 [N] parameter after B (an 8-bit product's per-column
  // dequantization, sa · sw[n]).
  bool columnScale = false;
};

// Empty when emitWgmmaGemm takes the spec, else why not.
std::string wgmmaUnsupported(const WgmmaGemmSpec &s);

// The kernel and its launch (KernelLaunch::archSpecific: compiled for sm_90a). Throws
// std::invalid_argument when wgmmaUnsupported says why.
KernelLaunch emitWgmmaGemm(const WgmmaGemmSpec &s);

}  // namespace kiln::codegen

// Fused attention (flash attention, FlashAttention-2's loop order) on tensor cores:
//
//   Y[b, i, :] = Σ_j softmax_j(scale · Q[b, i, :] · K[b, j, :] + mask[b, i, j]) · V[b, j, :]
//
// (causal: only keys j <= i + diagonal; a block stops at the last key tile any of its rows sees).
//
// for half-precision (fp16 / bf16) Q [.., Sq, D], K [.., Sk, D], V [.., Sk, Dv]. One block of four
// (or eight) warps takes 64 (128) query rows of one batch and walks the keys 64 at a time (K and V
// tiles double buffered with cp.async; with keySplit 2, twice the warps, each half taking every
// other key tile, merged at the end): S = Q·Kᵀ with mma.sync m16n8k16 and fp32 sums, the row
// maxima and sums kept online in registers, P rounded to the half type and multiplied into the
// fp32 output accumulators without leaving registers. The scores never reach memory, so attention costs one
// read of Q, K, V and one write of Y instead of four passes over [.., Sq, Sk].
//
// Operands are views with a unit stride along D (Dv): row (b, i) of Q starts at
// q.offset + Σ_d b_d · q.batchStrides[d] + i · q.rowStride, and likewise K, V and Y. D and Dv are
// multiples of 8 up to 128, every offset, row and batch stride of Q, K and V a multiple of 8
// (16-byte copies) and Y's even. The mask (optional) is any float tensor broadcasting to [batch..., Sq, Sk].
//
// Kernel parameters: Q, K, V, [mask], Y.
#pragma once

#include "codegen/KernelSpec.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::codegen {

struct AttentionSpec {
  struct View {
    std::vector<int64_t> batchStrides;  // per batch dim (0 = broadcast)
    int64_t rowStride = 0;
    int64_t offset = 0;
  };
  int64_t Sq = 1, Sk = 1, D = 8, Dv = 8;
  std::vector<int64_t> batchShape;
  View q, k, v, y;
  float scale = 1.f;
  ElemType type = ElemType::F16;  // Q, K, V and Y: F16 or BF16
  bool hasMask = false;
  std::vector<int64_t> maskShape;
  ElemType maskType = ElemType::F32;
  int rowsPerBlock = 64;  // query rows per block, 16 per warp: 64 or 128
  int keySplit = 1;       // 2: two groups of warps per block take alternate key tiles, then merge
  bool causal = false;    // keys j > i + diagonal masked (no memory read for it)
  int64_t diagonal = 0;   // >= 0
};

// An operand as the Attention op has it: a tensor of `shape` in memory at `offset` with
// `strides` (empty: contiguous; a kiln.strided_view), read through `perm` (empty: identity).
struct AttentionOperand {
  std::vector<int64_t> shape, strides, perm;
  int64_t offset = 0;
};

// The spec of Attention(Q, K, V) with its operands read through their permutations (the
// Attention op's perm_q, perm_k, perm_v: Q·K is Transpose(Q, perm_q) · Transpose(K, perm_k), so
// perm_k gives Kᵀ [.., D, Sk]) and its result stored as Transpose(result, perm_y) (empty:
// identity). Throws std::invalid_argument when the sizes do not form an attention.
AttentionSpec attentionSpec(const AttentionOperand &q, const AttentionOperand &k, const AttentionOperand &v,
                            const std::vector<int64_t> &permY);

// Empty when emitAttention takes the spec's sizes and strides, else why not.
std::string attentionUnsupported(const AttentionSpec &spec);

KernelLaunch emitAttention(const AttentionSpec &spec);

}  // namespace kiln::codegen

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
#include "compiler/target/Attention.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::codegen {

using target::AttentionOperand;
using target::AttentionSpec;
using target::attentionSpec;
using target::attentionUnsupported;

KernelLaunch emitAttention(const AttentionSpec &spec);

}  // namespace kiln::codegen

// The fused attention kernel's spec and what it takes (codegen/kernels/Attention.h emits it): the
// attention-fusion pass asks attentionUnsupported before it makes an Attention op, so a pattern the
// kernel cannot run stays unfused instead of failing at build time.
#pragma once

#include "compiler/target/Types.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::target {

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
  int rowsPerBlock = 64;        // query rows per block, 16 per warp: 64 or 128
  int keySplit = 1;             // 2: two groups of warps per block take alternate key tiles, then merge
  bool causal = false;          // keys j > i + diagonal masked (no memory read for it)
  int64_t diagonal = 0;         // >= 0
  bool zeroMaskedRows = false;  // a row whose keys are all masked stores 0 (else NaN, as Softmax gives)
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

}  // namespace kiln::target

// The fused attention op (kiln-fuse-attention) as one flash-attention kernel.
#include "codegen/lowering/Lowering.h"

#include "codegen/kernels/Attention.h"
#include "codegen/kernels/KernelUtil.h"
#include "passes/FuseAttention.h"

using namespace mlir;

namespace kiln::codegen {

KILN_KNOB(kAttentionRows, {"attention.rows",
                           {"auto", "64", "128"},
                           "auto",
                           "Query rows per block of the fused attention kernel (four or eight warps; auto: 128 where "
                           "that still makes 512 blocks, else 64)",
                           knobs::Tier::Mixed,
                           "codegen/lowering/Attention.cpp"});
KILN_KNOB(kAttentionSplit, {"attention.split",
                            {"auto", "1", "2"},
                            "auto",
                            "Groups of warps per fused attention block that take alternate key tiles of the same "
                            "rows (auto: 2 where the blocks are fewer than the target has SMs)",
                            knobs::Tier::Mixed,
                            "codegen/lowering/Attention.cpp"});

void Lowering::lowerAttention(AttentionOp attn) {
  Operation *op = attn;
  auto operands = attn->getOperands();
  Value out = attn->getResult(0);
  AttentionSpec s = attentionSpecOf(attn);
  // auto: eight warps share each K/V tile where 128-row blocks still number 512 or more
  // (measured on the H200: ViT-B/16 b32, 768 blocks, 3.239 -> 3.175 ms; with fewer blocks the
  // SMs idle: BERT-base 32x128, 384, 1.858 -> 1.882; GPT-2 1x512, 48, 0.888 -> 0.971).
  std::string rows = opts_.route.get(kAttentionRows);
  s.rowsPerBlock = rows != "auto"                                                              ? std::stoi(rows)
                   : kernels::numElementsOf(s.batchShape) * kernels::ceilDiv(s.Sq, 128) >= 512 ? 128
                                                                                               : 64;
  // auto: with fewer blocks than SMs each block's rows walk all their keys alone (GPT-2 1x512:
  // 96 blocks); two groups of warps halve that walk.
  std::string split = opts_.route.get(kAttentionSplit);
  s.keySplit = split != "auto" ? std::stoi(split)
               : kernels::numElementsOf(s.batchShape) * kernels::ceilDiv(s.Sq, s.rowsPerBlock) < opts_.target.smCount
                   ? 2
                   : 1;
  // Q, K, V: the tensors, or the memory their strided views read; then the mask and Y.
  std::vector<Value> params;
  for (int k = 0; k < 3; ++k) {
    auto view = operands[k].getDefiningOp<StridedViewOp>();
    params.push_back(view ? view.getX() : operands[k]);
  }
  if (s.hasMask) params.push_back(operands[3]);
  params.push_back(out);
  if (std::string why = opts_.target.missing(target::Feature::MmaHalf); !why.empty())
    throw std::invalid_argument("fused attention: " + why);
  addLaunch(op, emitAttention(s), params);
  return;
}

}  // namespace kiln::codegen

// What kiln-fuse-attention and the engine builder agree on: the attention kernel's spec for a
// kiln.attention op.
#pragma once

#include "compiler/target/Attention.h"
#include "compiler/ir/KilnDialect.h"

namespace kiln {

// Q, K and V (each the memory its kiln.strided_view reads, where it has one) through their
// permutations, the scale, the mask, the result's permutation; 64 rows per block. Throws
// std::invalid_argument when they do not form an attention or a type has no kernel.
target::AttentionSpec attentionSpecOf(AttentionOp op);

}  // namespace kiln

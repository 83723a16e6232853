// How an op maps onto the elementwise kernel table (compiler/target/ElementwiseTable.h): one
// answer shared by fusion (which ops may join a kernel region) and the engine builder (what the
// kernel computes), so the two cannot disagree.
#pragma once

#include "compiler/target/ElementwiseTable.h"

#include "mlir/IR/Operation.h"

#include <optional>
#include <vector>

namespace kiln {

// The kernel storage type of a tensor element type; nullopt for types without kernels (strings).
std::optional<target::ElemType> kernelElemType(mlir::Type elementType);
// The type an elementwise expression computes a value of storage type `t` in: F32 for every
// float storage, else `t` itself.
target::ElemType computeTypeOf(target::ElemType t);

struct ElementwiseUse {
  target::ElementwiseOp op;                 // the table entry
  std::vector<mlir::Value> inputs;          // the operands it reads, in the entry's order
  std::vector<std::vector<int64_t>> views;  // each input's broadcast shape: its own, or [C, 1, ...]
                                            // for per-axis quantization parameters
};

// The table entry for `op` (one result) and its inputs; nullopt when codegen has no elementwise
// kernel for it. Rewrites: Clip's constant bounds become attributes (non-constant bounds: none);
// CastLike is Cast to operand 1's type; Q/DQ take per-tensor or per-axis scale and zero point
// tensors (not blocked); Pow computes in its base's type, Where in X's.
std::optional<ElementwiseUse> elementwiseUse(mlir::Operation *op);

}  // namespace kiln

// Where a value's elements sit in the memory of a value further up, when the ops between only
// rearrange them: Reshape, Flatten, Squeeze, Unsqueeze and Identity (same bytes), Transpose,
// Slice (constant, positive steps), Gather of one constant index and Split (a copy each when run).
// kiln-fuse-attention and kiln-elementwise-views use it to read operands in place (kiln.strided_view).
#pragma once

#include "compiler/knobs/Knob.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Value.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace kiln {

struct StridedView {
  mlir::Value root;  // the value whose row-major memory is read
  int64_t offset = 0;
  std::vector<int64_t> shape, strides;  // per dim of the viewed value (elements)
  bool copies = false;                  // a Transpose, Slice, Gather or Split on the way
};

// Whether `op` only rearranges its operand 0's elements (one of the ops above).
bool isLayoutOp(mlir::Operation *op);

// The view of `v` through the ops above as far up as they go (`v` itself, contiguous, if its
// producer is none of them); none when a dim of `v` would walk that memory with two strides
// (in-between values may: ViT's heads, B·H, split from a packed [S, B, 3·H·D] projection).
// `rootRowLength` (0: the root's own) lays the root's rows out that many elements apart: where
// the elements would sit if only a slice of each row were stored (kiln-canonicalize-linear's
// gemm.split asks what a product below a column slice could read then).
std::optional<StridedView> stridedViewOf(mlir::Value v, int64_t rootRowLength = 0);

// `view` as a kiln.strided_view of its root (at `b`'s insertion point); null if it does not
// infer to `type`.
mlir::Value createStridedView(mlir::OpBuilder &b, mlir::Location loc, const StridedView &view, mlir::Type type);

// Whether cuBLASLt can read `view` as a matrix-product operand through the product's operand
// permutation `perm` (empty: none): one of the two matrix dims unit-stride with a leading
// dimension that spans the other, the first element 16-byte aligned, and the batch dims one
// uniform stride (as EngineBuilder's tryLibraryGemm requires), unless `anyBatchStrides`
// (gemm.batch_pointers: cuBLASLt's pointer-array batches take any).
bool productReadable(const StridedView &view, std::vector<int64_t> perm, int64_t elemBytes, bool anyBatchStrides);

// The gemm.batch_pointers knob: cuBLASLt's pointer-array batches for operands no single batch
// stride walks. Read by productReadable's callers (kiln-canonicalize-linear's transpose fold,
// kiln-product-views) and by EngineBuilder, which emits them.
bool batchPointers(const knobs::Route &route);

// Whether `v` is one of the function's arguments or results: an engine I/O tensor, whose
// address the runtime learns only at enqueue (too late for gemm.batch_pointers' address arrays).
bool isEngineIo(mlir::Value v);

// Whether the layout ops from `v` up to `root` are used by this chain alone (a copy that stays
// for another user is the faster, contiguous read, so reading `v` in place would gain nothing).
bool onlyThisChain(mlir::Value v, mlir::Value root);

// The matrix product that `op` runs (itself, or the head of its "epilogue" region; null if none)
// and which of op's operands it reads as A and B, in `operandOf` (-1: none, or an operand the
// region also reads elsewhere).
mlir::Operation *productOf(mlir::Operation *op, int operandOf[2]);

// Erases `v`'s producer and the layout ops above it that nothing else uses any more.
void eraseDeadViews(mlir::Value v);

}  // namespace kiln

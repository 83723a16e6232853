// Transpose algebra shared by the layout and transpose-simplification passes.
#pragma once

#include "compiler/ir/KilnDialect.h"

#include "mlir/IR/Builders.h"

#include <cstdint>
#include <vector>

namespace kiln {

using Perm = std::vector<int64_t>;

// The permutation of a kiln.transpose (ONNX's default: reversed dims).
Perm permOf(TransposeOp t);
bool isIdentity(const Perm &p);
// Transpose(Transpose(x, p), q) == Transpose(x, compose(p, q)).
Perm compose(const Perm &p, const Perm &q);
Perm inverse(const Perm &p);

// Transpose(x, p) in place of the matching kiln op; nullptr when inference fails.
mlir::Value createTranspose(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x, const Perm &p);

// One local simplification of `t`, if any applies: composes with a transpose feeding it, removes
// an identity, or turns a transpose that only moves size-1 dims into a reshape (no data moves,
// so no launch). Returns true when `t` was replaced (and erased).
bool simplifyTranspose(TransposeOp t, mlir::OpBuilder &b);

}  // namespace kiln

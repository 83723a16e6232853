#include "passes/Transposes.h"

#include "compiler/ir/Builders.h"
#include "compiler/ir/TensorConversion.h"
#include "passes/Passes.h"

namespace kiln {
#define GEN_PASS_DEF_SIMPLIFYTRANSPOSES
#include "passes/Passes.h.inc"

using namespace mlir;

Perm permOf(TransposeOp t) {
  int64_t rank = cast<RankedTensorType>(t.getX().getType()).getRank();
  if (auto a = t.getPermAttr()) return Perm(a.asArrayRef().begin(), a.asArrayRef().end());
  Perm p(rank);
  for (int64_t k = 0; k < rank; ++k) p[k] = rank - 1 - k;
  return p;
}

bool isIdentity(const Perm &p) {
  for (size_t k = 0; k < p.size(); ++k)
    if (p[k] != static_cast<int64_t>(k)) return false;
  return true;
}

Perm compose(const Perm &p, const Perm &q) {
  Perm r(q.size());
  for (size_t i = 0; i < q.size(); ++i) r[i] = p[q[i]];
  return r;
}

Perm inverse(const Perm &p) {
  Perm r(p.size());
  for (size_t i = 0; i < p.size(); ++i) r[p[i]] = static_cast<int64_t>(i);
  return r;
}

Value createTranspose(OpBuilder &b, Location loc, Value x, const Perm &p) {
  std::string err;
  Operation *op = createInferred<TransposeOp>(b, loc, {x}, {b.getNamedAttr("perm", b.getDenseI64ArrayAttr(p))}, &err);
  return op ? op->getResult(0) : Value();
}

bool simplifyTranspose(TransposeOp t, OpBuilder &b) {
  Perm p = permOf(t);
  Value x = t.getX();
  if (auto inner = x.getDefiningOp<TransposeOp>()) {
    b.setInsertionPoint(t);
    Value n = createTranspose(b, t.getLoc(), inner.getX(), compose(permOf(inner), p));
    if (!n) return false;
    t.getResult().replaceAllUsesWith(n);
    t->erase();
    if (inner->use_empty()) inner->erase();
    return true;
  }
  if (isIdentity(p)) {
    t.getResult().replaceAllUsesWith(x);
    t->erase();
    return true;
  }
  // Only size-1 dims move when the non-unit dims keep their order: the bytes are unchanged.
  auto in = cast<RankedTensorType>(x.getType());
  int64_t last = -1;
  for (int64_t d : p) {
    if (in.getDimSize(d) == 1) continue;
    if (d < last) return false;
    last = d;
  }
  auto out = cast<RankedTensorType>(t.getResult().getType());
  b.setInsertionPoint(t);
  std::string err;
  Operation *r = createReshape(b, t.getLoc(), x, out.getShape(), &err);  // same elements, same type
  if (!r) return false;
  t.getResult().replaceAllUsesWith(r->getResult(0));
  t->erase();
  return true;
}

namespace {

// Whether `op` is a Reduce* over every axis of its input (whose order then does not matter).
bool reducesEveryAxis(Operation *op) {
  if (!isa<ReduceSumOp, ReduceMeanOp, ReduceMaxOp, ReduceMinOp, ReduceProdOp, ReduceL1Op, ReduceL2Op, ReduceLogSumOp,
           ReduceLogSumExpOp, ReduceSumSquareOp>(op))
    return false;
  auto axes = op->getAttrOfType<DenseI64ArrayAttr>("axes");
  if (axes && !axes.empty())
    return int64_t(axes.size()) == cast<RankedTensorType>(op->getOperand(0).getType()).getRank();
  auto noop = op->getAttrOfType<IntegerAttr>("noop_with_empty_axes");
  return !(noop && noop.getInt());
}

struct SimplifyTransposesPass : impl::SimplifyTransposesBase<SimplifyTransposesPass> {
  void runOnOperation() override {
    OpBuilder b(&getContext());
    for (bool changed = true; changed;) {
      changed = false;
      getOperation().walk([&](Operation *op) {
        if (auto t = op->getNumOperands() ? op->getOperand(0).getDefiningOp<TransposeOp>() : TransposeOp();
            t && reducesEveryAxis(op)) {
          op->setOperand(0, t.getX());
          changed = true;
        }
      });
      SmallVector<TransposeOp> ts;
      getOperation().walk([&](TransposeOp t) { ts.push_back(t); });
      for (TransposeOp t : ts) {
        if (t->use_empty()) {
          t->erase();
          changed = true;
        } else if (simplifyTranspose(t, b)) {
          changed = true;
        }
      }
    }
  }
};

}  // namespace
}  // namespace kiln

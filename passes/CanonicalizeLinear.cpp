// One form for matrix products (see Passes.td): Gemm → TransposedMatMul + elementwise epilogue
// ops; transposes feeding a product folded into its operand permutations.
#include "compiler/ir/Builders.h"
#include "compiler/ir/TensorConversion.h"
#include "passes/PassUtil.h"
#include "passes/Passes.h"

namespace kiln {
#define GEN_PASS_DEF_CANONICALIZELINEAR
#include "passes/Passes.h.inc"

KILN_KNOB(kFuseTranspose, {"fusion.transpose", {"on", "off"}, "on",
                           "Read transposed matrix-product operands in place instead of copying them",
                           knobs::Tier::Mixed, "passes/CanonicalizeLinear.cpp"});

namespace {

using namespace mlir;

std::vector<int64_t> identityPerm(size_t n) {
  std::vector<int64_t> p(n);
  for (size_t k = 0; k < n; ++k) p[k] = static_cast<int64_t>(k);
  return p;
}

std::vector<int64_t> permAttr(Operation *op, StringRef name, size_t rank) {
  if (auto a = op->getAttrOfType<DenseI64ArrayAttr>(name)) return std::vector<int64_t>(a.asArrayRef().begin(), a.asArrayRef().end());
  return identityPerm(rank);
}

size_t rankOf(Value v) { return cast<RankedTensorType>(v.getType()).getRank(); }

// Gemm → TransposedMatMul (· alpha) (+ beta · C).
LogicalResult lowerGemm(GemmOp g, OpBuilder &b) {
  ops::Attrs a = attrsFromOp(g);
  Location loc = g.getLoc();
  b.setInsertionPoint(g);
  SmallVector<NamedAttribute> attrs;
  if (a.getInt("transA", 0)) attrs.push_back(b.getNamedAttr("perm_a", b.getDenseI64ArrayAttr({1, 0})));
  if (a.getInt("transB", 0)) attrs.push_back(b.getNamedAttr("perm_b", b.getDenseI64ArrayAttr({1, 0})));
  std::string err;
  Operation *mm = createInferred(b, loc, "kiln.transposed_matmul", {g.getA(), g.getB()}, attrs, &err);
  if (!mm) return g.emitError(err);
  Value y = mm->getResult(0);
  ops::DType dt = tensorTypeOf(y.getType()).dtype;
  auto scalar = [&](double v) {
    ops::Tensor t(dt, {});
    t.set(0, v);
    return createConstant(b, loc, t);
  };
  double alpha = a.getFloat("alpha", 1.0), beta = a.getFloat("beta", 1.0);
  if (alpha != 1.0) {
    Operation *mul = createInferred(b, loc, "kiln.mul", {y, scalar(alpha)}, {}, &err);
    if (!mul) return g.emitError(err);
    y = mul->getResult(0);
  }
  if (!isa<NoneType>(g.getC().getType()) && beta != 0.0) {
    Value c = g.getC();
    if (beta != 1.0) {
      Operation *mul = createInferred(b, loc, "kiln.mul", {c, scalar(beta)}, {}, &err);
      if (!mul) return g.emitError(err);
      c = mul->getResult(0);
    }
    Operation *add = createInferred(b, loc, "kiln.add", {y, c}, {}, &err);
    if (!add) return g.emitError(err);
    y = add->getResult(0);
  }
  if (y.getType() != g.getResult().getType())
    return g.emitError("internal: lowering Gemm changed its result type");
  g.getResult().replaceAllUsesWith(y);
  g->erase();
  return success();
}

// A product whose operand k is a single-use Transpose reads the transpose's input instead.
bool foldOperandTranspose(Operation *mm, unsigned k, OpBuilder &b) {
  auto t = mm->getOperand(k).getDefiningOp<TransposeOp>();
  if (!t || !t->hasOneUse()) return false;
  size_t rank = rankOf(t.getX());
  if (rank < 2) return false;
  std::vector<int64_t> p = permAttr(t, "perm", rank);
  if (p.size() != rank) return false;
  std::vector<int64_t> q = isa<TransposedMatMulOp>(mm) ? permAttr(mm, k == 0 ? "perm_a" : "perm_b", rank) : identityPerm(rank);
  std::vector<int64_t> r(rank);
  for (size_t i = 0; i < rank; ++i) r[i] = p[q[i]];
  if (isa<MatMulOp>(mm)) {
    // MatMul with rank >= 2 operands → TransposedMatMul with the permutation.
    if (rankOf(mm->getOperand(0)) < 2 || rankOf(mm->getOperand(1)) < 2) return false;
    b.setInsertionPoint(mm);
    SmallVector<NamedAttribute> attrs = {b.getNamedAttr(k == 0 ? "perm_a" : "perm_b", b.getDenseI64ArrayAttr(r))};
    SmallVector<Value> operands = {mm->getOperand(0), mm->getOperand(1)};
    operands[k] = t.getX();
    std::string err;
    Operation *n = createInferred(b, mm->getLoc(), "kiln.transposed_matmul", operands, attrs, &err);
    if (!n || n->getResult(0).getType() != mm->getResult(0).getType()) {
      if (n) n->erase();
      return false;
    }
    mm->getResult(0).replaceAllUsesWith(n->getResult(0));
    mm->erase();
  } else {
    mm->setAttr(k == 0 ? "perm_a" : "perm_b", b.getDenseI64ArrayAttr(r));
    mm->setOperand(k, t.getX());
  }
  t->erase();
  return true;
}

struct CanonicalizeLinearPass : impl::CanonicalizeLinearBase<CanonicalizeLinearPass> {
  using CanonicalizeLinearBase::CanonicalizeLinearBase;

  void runOnOperation() override {
    knobs::Route r;
    if (!readRoute(route, getOperation(), r)) return signalPassFailure();
    OpBuilder b(&getContext());
    SmallVector<GemmOp> gemms;
    getOperation().walk([&](GemmOp g) { gemms.push_back(g); });
    for (GemmOp g : gemms)
      if (failed(lowerGemm(g, b))) return signalPassFailure();
    if (r.get(kFuseTranspose) == "off") return;
    // Fold repeatedly: a MatMul becomes a TransposedMatMul, whose other operand may fold too,
    // and chains of transposes compose.
    for (bool changed = true; changed;) {
      changed = false;
      SmallVector<Operation *> products;
      getOperation().walk([&](Operation *op) {
        if (isa<MatMulOp, TransposedMatMulOp>(op)) products.push_back(op);
      });
      for (Operation *mm : products)
        for (unsigned k = 0; k < 2; ++k)
          if (foldOperandTranspose(mm, k, b)) {
            changed = true;
            break;  // mm may have been replaced
          }
    }
  }
};

}  // namespace
}  // namespace kiln

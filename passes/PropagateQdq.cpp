// DequantizeLinear moved below layout-only ops, and QuantizeLinear(DequantizeLinear(x)) with the
// same parameters cancelled (see Passes.td).
#include "compiler/ir/Builders.h"
#include "compiler/ir/TensorConversion.h"
#include "passes/PassUtil.h"
#include "passes/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln {
#define GEN_PASS_DEF_PROPAGATEQDQ
#include "passes/Passes.h.inc"

namespace {

using namespace mlir;

// A per-tensor QuantizeLinear or DequantizeLinear (operands x, scale, zero point): a
// one-element constant scale > 0 (max pooling commutes with a positive scale only), a
// one-element constant zero point or none.
struct PerTensorQdq {
  Operation *op = nullptr;
  double scale = 0, zeroPoint = 0;
  ops::DType zeroPointType = ops::DType::Undefined;  // Undefined: no zero point

  bool sameScaleAndZeroPoint(const PerTensorQdq &o) const {
    return scale == o.scale && zeroPoint == o.zeroPoint && zeroPointType == o.zeroPointType;
  }
};
std::optional<PerTensorQdq> perTensorQdq(Operation *op, StringRef type) {
  if (!op || onnxTypeOf(op) != type) return std::nullopt;
  auto s = constantValue(op->getOperand(1));
  if (!s || s->size() != 1 || !(s->get(0) > 0)) return std::nullopt;
  PerTensorQdq d{op, s->get(0)};
  if (op->getNumOperands() > 2 && !isa<NoneType>(op->getOperand(2).getType())) {
    auto zp = constantValue(op->getOperand(2));
    if (!zp || zp->size() != 1) return std::nullopt;
    d.zeroPoint = zp->get(0), d.zeroPointType = zp->dtype;
  }
  return d;
}
std::optional<PerTensorQdq> perTensorDq(Value v) { return perTensorQdq(v.getDefiningOp(), "DequantizeLinear"); }

// Ops that only move or select elements of their data operands (operand 0; Concat: all), so
// that L(DQ(x)) == DQ(L(x)); MaxPool too, as the scale is positive (the zero point shifts every
// value alike).
bool isLayoutOnly(Operation *op) {
  std::string t = onnxTypeOf(op);
  if (t == "MaxPool") return op->getNumResults() == 1;  // (not with Indices)
  return t == "Reshape" || t == "Transpose" || t == "Flatten" || t == "Squeeze" || t == "Unsqueeze" || t == "Slice" ||
         t == "Concat" || t == "Identity";
}

// L(DQ(x), rest) → DQ(L(x, rest)), when L's kiln op takes x's type (int8, uint8, fp8).
struct SinkDequantize : RewritePattern {
  explicit SinkDequantize(MLIRContext *ctx) : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, ctx) {}
  LogicalResult matchAndRewrite(Operation *op, PatternRewriter &rewriter) const override {
    if (!isLayoutOnly(op) || op->getNumOperands() == 0) return failure();
    const bool concat = onnxTypeOf(op) == "Concat";
    auto first = perTensorDq(op->getOperand(0));
    if (!first) return failure();
    SmallVector<Value> operands(op->getOperands());
    for (unsigned k = 0; k < (concat ? op->getNumOperands() : 1u); ++k) {
      auto d = perTensorDq(op->getOperand(k));
      if (!d || !d->sameScaleAndZeroPoint(*first) ||
          tensorTypeOf(d->op->getOperand(0).getType()).dtype != tensorTypeOf(first->op->getOperand(0).getType()).dtype)
        return failure();
      operands[k] = d->op->getOperand(0);
    }
    std::string error;
    Operation *moved = createInferred(rewriter, op->getLoc(), op->getName().getStringRef(), operands, op->getAttrs(),
                                      &error, op->getNumResults());
    if (!moved) return failure();  // (the op has no form for x's element type)
    SmallVector<Value> dqOperands(first->op->getOperands());
    dqOperands[0] = moved->getResult(0);
    Operation *dq = createInferred(rewriter, op->getLoc(), first->op->getName().getStringRef(), dqOperands,
                                   first->op->getAttrs(), &error);
    if (!dq || dq->getResult(0).getType() != op->getResult(0).getType()) {
      if (dq) rewriter.eraseOp(dq);
      rewriter.eraseOp(moved);
      return failure();
    }
    rewriter.replaceOp(op, dq->getResults());
    return success();
  }
};

// QuantizeLinear(DequantizeLinear(x, s, zp), s, zp) → x: dequantized 8-bit values (at most 255
// steps from the zero point) divide back exactly in float32 and round to themselves.
struct CancelRequantize : RewritePattern {
  explicit CancelRequantize(MLIRContext *ctx) : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/2, ctx) {}
  LogicalResult matchAndRewrite(Operation *op, PatternRewriter &rewriter) const override {
    auto q = perTensorQdq(op, "QuantizeLinear");
    auto d = q ? perTensorDq(op->getOperand(0)) : std::nullopt;
    if (!d || !q->sameScaleAndZeroPoint(*d)) return failure();
    Value x = d->op->getOperand(0);
    if (x.getType() != op->getResult(0).getType()) return failure();
    rewriter.replaceOp(op, x);
    return success();
  }
};

struct PropagateQdqPass : impl::PropagateQdqBase<PropagateQdqPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<SinkDequantize, CancelRequantize>(&getContext());
    if (failed(applyPatternsAndFoldGreedily(getOperation(), std::move(patterns)))) return signalPassFailure();
  }
};

}  // namespace
}  // namespace kiln

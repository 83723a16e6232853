// BatchNormalization folding (see Passes.td). Scale and shift are computed in double from the
// constants and rounded once, to the weights' dtype.
#include "compiler/ir/Builders.h"
#include "compiler/ir/TensorConversion.h"
#include "passes/PassUtil.h"
#include "passes/Passes.h"

#include <cmath>

namespace kiln {
#define GEN_PASS_DEF_FOLDBATCHNORM
#include "passes/Passes.h.inc"

KILN_KNOB(kFuseBatchNorm, {"fusion.batchnorm",
                           {"on", "off"},
                           "on",
                           "Fold inference BatchNormalization into the preceding Conv (else a scale-and-shift)",
                           knobs::Tier::Mixed,
                           "passes/FoldBatchNorm.cpp"});

namespace {

using namespace mlir;

struct BatchNormParams {
  std::vector<double> scale, shift;  // y = x * scale[c] + shift[c]
};

// The per-channel affine map of an inference BatchNormalization with constant parameters.
std::optional<BatchNormParams> affineOf(BatchNormalizationOp bn) {
  std::vector<ops::Tensor> p;
  for (unsigned k = 1; k <= 4; ++k) {
    auto c = constantValue(bn->getOperand(k), int64_t(1) << 24);
    if (!c || c->rank() != 1) return std::nullopt;
    p.push_back(*c);
  }
  int64_t C = p[0].size();
  for (auto &t : p)
    if (t.size() != C) return std::nullopt;
  double eps = attrsFromOp(bn).getFloat("epsilon", 1e-5);
  BatchNormParams r;
  for (int64_t c = 0; c < C; ++c) {
    double s = p[0].get(c) / std::sqrt(p[3].get(c) + eps);
    r.scale.push_back(s);
    r.shift.push_back(p[1].get(c) - p[2].get(c) * s);
  }
  return r;
}

// Conv(x, W, b) followed by the affine map → Conv(x, W·s, (b − 0)·s + t).
bool foldIntoConv(ConvOp conv, BatchNormalizationOp bn, const BatchNormParams &a, OpBuilder &b) {
  auto w = constantValue(conv.getW(), int64_t(1) << 30);
  if (!w || w->rank() < 3 || w->shape[0] != static_cast<int64_t>(a.scale.size())) return false;
  std::optional<ops::Tensor> bias;
  if (!isa<NoneType>(conv.getB().getType())) {
    bias = constantValue(conv.getB(), int64_t(1) << 24);
    if (!bias) return false;
  }
  int64_t M = w->shape[0], per = w->size() / M;
  ops::Tensor w2(w->dtype, w->shape), b2(w->dtype, {M});
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t k = 0; k < per; ++k) w2.set(m * per + k, w->get(m * per + k) * a.scale[m]);
    b2.set(m, (bias ? bias->get(m) : 0.0) * a.scale[m] + a.shift[m]);
  }
  b.setInsertionPoint(conv);
  conv->setOperand(1, createConstant(b, conv.getLoc(), w2));
  conv->setOperand(2, createConstant(b, conv.getLoc(), b2));
  bn.getResult().replaceAllUsesWith(conv.getResult());
  conv->setLoc(FusedLoc::get(conv.getContext(), {conv.getLoc(), bn.getLoc()}));
  bn->erase();
  return true;
}

// Any other inference BN → x * s + t with s, t of shape [C, 1, ..., 1].
bool lowerToAffine(BatchNormalizationOp bn, const BatchNormParams &a, OpBuilder &b) {
  ops::TensorType x = tensorTypeOf(bn.getX().getType());
  if (x.shape.size() < 2 || x.shape[1] != static_cast<int64_t>(a.scale.size())) return false;
  ops::Shape cshape(x.shape.size() - 1, 1);
  cshape[0] = x.shape[1];
  ops::Tensor s(x.dtype, cshape), t(x.dtype, cshape);
  for (size_t c = 0; c < a.scale.size(); ++c) s.set(c, a.scale[c]), t.set(c, a.shift[c]);
  b.setInsertionPoint(bn);
  std::string err;
  Operation *mul = createInferred<MulOp>(b, bn.getLoc(), {bn.getX(), createConstant(b, bn.getLoc(), s)}, {}, &err);
  if (!mul) return false;
  Operation *add =
      createInferred<AddOp>(b, bn.getLoc(), {mul->getResult(0), createConstant(b, bn.getLoc(), t)}, {}, &err);
  if (!add) return false;
  bn.getResult().replaceAllUsesWith(add->getResult(0));
  bn->erase();
  return true;
}

struct FoldBatchNormPass : impl::FoldBatchNormBase<FoldBatchNormPass> {
  using FoldBatchNormBase::FoldBatchNormBase;

  void runOnOperation() override {
    knobs::Route r;
    if (!readRoute(route, getOperation(), r)) return signalPassFailure();
    if (r.get(kFuseBatchNorm) == "off") return;
    SmallVector<BatchNormalizationOp> bns;
    getOperation().walk([&](BatchNormalizationOp bn) { bns.push_back(bn); });
    OpBuilder b(&getContext());
    for (BatchNormalizationOp bn : bns) {
      if (attrsFromOp(bn).getInt("training_mode", 0) != 0) continue;
      auto affine = affineOf(bn);
      if (!affine) continue;
      auto conv = bn.getX().getDefiningOp<ConvOp>();
      if (conv && conv->hasOneUse() && foldIntoConv(conv, bn, *affine, b)) continue;
      lowerToAffine(bn, *affine, b);
    }
  }
};

}  // namespace
}  // namespace kiln

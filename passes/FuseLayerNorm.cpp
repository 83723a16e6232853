// LayerNormalization as exporters decompose it, back to one op (see Passes.td).
#include "compiler/ir/Builders.h"
#include "compiler/ir/TensorConversion.h"
#include "compiler/knobs/Knob.h"
#include "passes/PassUtil.h"
#include "passes/Passes.h"

#include "llvm/ADT/DenseSet.h"

#include <algorithm>

namespace kiln {
#define GEN_PASS_DEF_FUSELAYERNORM
#include "passes/Passes.h.inc"

KILN_KNOB(kFuseLayerNorm, {"fusion.layernorm",
                           {"on", "off"},
                           "on",
                           "Recognize LayerNormalization written as ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div "
                           "(and scale, bias) — TorchScript before opset 17, Paddle2ONNX — as one row kernel",
                           knobs::Tier::Mixed,
                           "passes/FuseLayerNorm.cpp"});

namespace {

using namespace mlir;

// The value of a one-element constant.
std::optional<double> scalarOf(Value v) {
  auto t = constantValue(v, 1);
  if (!t || t->size() != 1) return std::nullopt;
  return t->get(0);
}

// Of a two-operand op that has `v` as an operand: the other one (v itself for op(v, v)).
Value otherOperand(Operation *op, Value v) { return op->getOperand(0) == v ? op->getOperand(1) : op->getOperand(0); }

// The only user of `v` if it has one use, of type OpT.
template <class OpT> OpT soleUser(Value v) { return v.hasOneUse() ? dyn_cast<OpT>(*v.getUsers().begin()) : OpT(); }

// The reduced axes of a ReduceMean that keeps its dims: sorted, non-negative; empty if it does
// not keep them or reduces nothing.
std::vector<int64_t> keptAxes(ReduceMeanOp op) {
  auto keep = op->getAttrOfType<IntegerAttr>("keepdims");
  auto noop = op->getAttrOfType<IntegerAttr>("noop_with_empty_axes");
  if ((keep && keep.getInt() != 1) || (noop && noop.getInt())) return {};
  int64_t r = cast<RankedTensorType>(op->getOperand(0).getType()).getRank();
  std::vector<int64_t> axes = intsAttr(op, "axes");
  if (axes.empty())
    for (int64_t a = 0; a < r; ++a) axes.push_back(a);
  for (auto &a : axes) a = a < 0 ? a + r : a;
  std::sort(axes.begin(), axes.end());
  return axes;
}

// `v` as a tensor of the normalized shape: its own shape with leading ones dropped must be it.
// Null when it is not.
Value asNormalized(OpBuilder &b, Location loc, Value v, ArrayRef<int64_t> normalized) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  if (!t) return {};
  ArrayRef<int64_t> s = t.getShape();
  while (s.size() > normalized.size() && s.front() == 1) s = s.drop_front();
  if (s != normalized) return {};
  if (t.getShape() == normalized) return v;
  std::string err;
  Operation *r = createReshape(b, loc, v, normalized, &err);
  return r ? r->getResult(0) : Value();
}

// Rewrites the LayerNorm that starts at `mean` = ReduceMean(x) into kiln.layer_normalization:
//   d = x - mean; var = ReduceMean(Pow(d, 2) | d * d); n = d / Sqrt(var + eps) | d * Reciprocal(..);
//   then optionally n * scale, + bias (either operand order). Every intermediate has no other
//   user. True when rewritten; the ops it erased are added to `erased`.
bool fuse(ReduceMeanOp mean, llvm::DenseSet<Operation *> &erased) {
  Value x = mean->getOperand(0);
  auto xt = cast<RankedTensorType>(x.getType());
  Type et = xt.getElementType();
  if (!xt.hasStaticShape() || !(et.isF32() || et.isF16() || et.isBF16())) return false;
  std::vector<int64_t> axes = keptAxes(mean);
  const int64_t r = xt.getRank();
  if (axes.empty() || axes.back() != r - 1) return false;  // (the normalized axes are the last ones)
  for (size_t k = 1; k < axes.size(); ++k)
    if (axes[k] != axes[k - 1] + 1) return false;
  auto sub = soleUser<SubOp>(mean->getResult(0));
  if (!sub || sub->getOperand(0) != x || sub->getOperand(1) != mean->getResult(0)) return false;
  Value d = sub->getResult(0);
  if (d.getType() != x.getType()) return false;

  // d's users: the square (Pow(d, 2) or d * d) and the division (d / std or d * (1 / std)).
  Operation *square = nullptr, *divide = nullptr;
  for (Operation *u : d.getUsers()) {
    bool isSquare = (isa<PowOp>(u) && u->getOperand(0) == d && scalarOf(u->getOperand(1)) == 2.0) ||
                    (isa<MulOp>(u) && u->getOperand(0) == d && u->getOperand(1) == d);
    if (isSquare && (!square || square == u))
      square = u;
    else if (isa<DivOp, MulOp>(u) && !divide && (!isa<DivOp>(u) || u->getOperand(0) == d))
      divide = u;
    else
      return false;
  }
  if (!square || !divide) return false;
  auto var = soleUser<ReduceMeanOp>(square->getResult(0));
  if (!var || keptAxes(var) != axes) return false;
  auto addEps = soleUser<AddOp>(var->getResult(0));
  if (!addEps) return false;
  std::optional<double> eps = scalarOf(otherOperand(addEps, var->getResult(0)));
  if (!eps || !(*eps >= 0) || addEps->getResult(0).getType() != var->getResult(0).getType()) return false;
  auto sqrt = soleUser<SqrtOp>(addEps->getResult(0));
  if (!sqrt) return false;
  SmallVector<Operation *> chain = {mean, sub, square, var, addEps, sqrt};
  Value denom = sqrt->getResult(0);
  if (isa<MulOp>(divide)) {  // d * Reciprocal(std)
    auto inv = soleUser<ReciprocalOp>(denom);
    if (!inv) return false;
    chain.push_back(inv);
    denom = inv->getResult(0);
  }
  if (otherOperand(divide, d) != denom || !denom.hasOneUse()) return false;
  chain.push_back(divide);
  Value y = divide->getResult(0);
  if (y.getType() != x.getType()) return false;

  OpBuilder b(divide);
  Location loc = divide->getLoc();
  ArrayRef<int64_t> normalized = xt.getShape().drop_front(axes.front());
  Value scale, bias;
  if (auto mul = soleUser<MulOp>(y); mul && mul->getResult(0).getType() == x.getType()) {
    b.setInsertionPoint(mul);
    if ((scale = asNormalized(b, loc, otherOperand(mul, y), normalized))) {
      chain.push_back(mul);
      y = mul->getResult(0);
    }
  }
  if (auto add = soleUser<AddOp>(y); add && add->getResult(0).getType() == x.getType()) {
    b.setInsertionPoint(add);
    if ((bias = asNormalized(b, loc, otherOperand(add, y), normalized))) {
      chain.push_back(add);
      y = add->getResult(0);
    }
  }
  Operation *last = chain.back();
  b.setInsertionPoint(last);
  if (!scale) {
    ops::Tensor ones(tensorTypeOf(x.getType()).dtype, std::vector<int64_t>(normalized.begin(), normalized.end()));
    for (int64_t k = 0; k < ones.size(); ++k) ones.set(k, 1.0);
    scale = createConstant(b, loc, ones);
  }
  if (!bias) bias = b.create<NoneOp>(loc).getResult();
  std::string err;
  SmallVector<Location> locs;
  for (Operation *op : chain) locs.push_back(op->getLoc());
  Operation *ln = createInferred<LayerNormalizationOp>(b, FusedLoc::get(b.getContext(), locs), {x, scale, bias},
                                                       {b.getNamedAttr("axis", b.getI64IntegerAttr(axes.front())),
                                                        b.getNamedAttr("epsilon", b.getF32FloatAttr(float(*eps)))},
                                                       &err);
  if (!ln || ln->getResult(0).getType() != y.getType()) {
    if (ln) ln->erase();
    return false;  // (a reshape or constant made above is left for the canonicalizer)
  }
  y.replaceAllUsesWith(ln->getResult(0));
  for (Operation *op : llvm::reverse(chain)) {
    erased.insert(op);
    op->erase();
  }
  return true;
}

struct FuseLayerNormPass : impl::FuseLayerNormBase<FuseLayerNormPass> {
  using FuseLayerNormBase::FuseLayerNormBase;

  void runOnOperation() override {
    knobs::Route r;
    if (!readRoute(route, getOperation(), r)) return signalPassFailure();
    if (r.get(kFuseLayerNorm) == "off") return;
    SmallVector<ReduceMeanOp> means;
    getOperation().walk([&](ReduceMeanOp op) { means.push_back(op); });
    llvm::DenseSet<Operation *> erased;  // (a variance's ReduceMean goes with its mean's match)
    for (ReduceMeanOp m : means)
      if (!erased.count(m)) fuse(m, erased);
  }
};

}  // namespace
}  // namespace kiln

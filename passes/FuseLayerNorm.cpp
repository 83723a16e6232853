// LayerNormalization and RMSNormalization as exporters write them out, back to one op (see Passes.td).
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
                           "(and scale, bias) — TorchScript before opset 17, Paddle2ONNX — and RMSNormalization "
                           "written as Pow, ReduceMean, Add, Sqrt, Reciprocal, Mul (T5, Llama) as one row kernel",
                           knobs::Tier::Mixed,
                           "passes/FuseLayerNorm.cpp"});

namespace {

using namespace mlir;

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

// Whether `op` squares `v`: Pow(v, 2) or v * v.
bool squares(Operation *op, Value v) {
  return (isa<PowOp>(op) && op->getOperand(0) == v && scalarValue(op->getOperand(1)) == 2.0) ||
         (isa<MulOp>(op) && op->getOperand(0) == v && op->getOperand(1) == v);
}

// Rewrites the norm whose first reduction is `first` into one op. LayerNorm, `first` =
// ReduceMean(x) and d = x - first; RMSNorm, `first` = ReduceMean(Pow(x, 2) | x * x) and d = x:
//   ms = ReduceMean(Pow(d, 2) | d * d); n = d / Sqrt(ms + eps) | d * Reciprocal(Sqrt(..)) (or 1 / ..),
//   then optionally n * scale, and for LayerNorm + bias (either operand order). Every intermediate
//   has no other user (x may have others). True when rewritten; the ops it erased are added to
//   `erased`.
bool fuse(ReduceMeanOp first, llvm::DenseSet<Operation *> &erased) {
  std::vector<int64_t> axes = keptAxes(first);
  auto sub = soleUser<SubOp>(first->getResult(0));
  const bool centered = sub && sub->getOperand(0) == first->getOperand(0) && sub->getOperand(1) == first->getResult(0);
  SmallVector<Operation *> chain;
  Operation *square = nullptr;
  Value x, d;
  ReduceMeanOp ms;
  if (centered) {
    x = first->getOperand(0), d = sub->getResult(0);
    chain = {first, sub};
    for (Operation *u : d.getUsers())  // (the square, and the division checked below)
      if (squares(u, d)) square = u;
    ms = square ? soleUser<ReduceMeanOp>(square->getResult(0)) : ReduceMeanOp();
  } else {
    square = first->getOperand(0).getDefiningOp();
    if (!square || !isa<PowOp, MulOp>(square) || !square->getResult(0).hasOneUse()) return false;
    x = d = square->getOperand(0);
    if (!squares(square, x)) return false;
    ms = first;
  }
  if (!square || !ms || keptAxes(ms) != axes) return false;
  auto xt = cast<RankedTensorType>(x.getType());
  Type et = xt.getElementType();
  if (!xt.hasStaticShape() || !(et.isF32() || et.isF16() || et.isBF16()) || d.getType() != x.getType()) return false;
  const int64_t r = xt.getRank();
  if (axes.empty() || axes.back() != r - 1) return false;  // (the normalized axes are the last ones)
  for (size_t k = 1; k < axes.size(); ++k)
    if (axes[k] != axes[k - 1] + 1) return false;
  auto addEps = soleUser<AddOp>(ms->getResult(0));
  if (!addEps) return false;
  std::optional<double> eps = scalarValue(otherOperand(addEps, ms->getResult(0)));
  if (!eps || !(*eps >= 0) || addEps->getResult(0).getType() != ms->getResult(0).getType()) return false;
  auto sqrt = soleUser<SqrtOp>(addEps->getResult(0));
  if (!sqrt) return false;
  chain.append({square, ms, addEps, sqrt});
  // d / std, or d * (1 / std) with Reciprocal(std) or Div(1, std).
  Value denom = sqrt->getResult(0);
  Operation *divide = denom.hasOneUse() ? *denom.getUsers().begin() : nullptr;
  if (divide && (isa<ReciprocalOp>(divide) ||
                 (isa<DivOp>(divide) && divide->getOperand(1) == denom && scalarValue(divide->getOperand(0)) == 1.0))) {
    chain.push_back(divide);
    denom = divide->getResult(0);
    divide = denom.hasOneUse() ? *denom.getUsers().begin() : nullptr;
    if (!divide || !isa<MulOp>(divide) || otherOperand(divide, denom) != d) return false;
  } else if (!divide || !isa<DivOp>(divide) || divide->getOperand(0) != d || divide->getOperand(1) != denom) {
    return false;
  }
  if (centered)  // (d is the norm's own: the square and the division are all its users)
    for (Operation *u : d.getUsers())
      if (u != square && u != divide) return false;
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
  if (auto add = soleUser<AddOp>(y); centered && add && add->getResult(0).getType() == x.getType()) {
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
  SmallVector<Value, 3> operands = {x, scale};
  if (centered) operands.push_back(bias ? bias : b.create<NoneOp>(loc).getResult());
  SmallVector<Location> locs;
  for (Operation *op : chain) locs.push_back(op->getLoc());
  std::string err;
  Operation *norm = createInferred(
      b, FusedLoc::get(b.getContext(), locs),
      centered ? LayerNormalizationOp::getOperationName() : RMSNormalizationOp::getOperationName(), operands,
      {b.getNamedAttr("axis", b.getI64IntegerAttr(axes.front())),
       b.getNamedAttr("epsilon", b.getF32FloatAttr(float(*eps)))},
      &err);
  if (!norm || norm->getResult(0).getType() != y.getType()) {
    if (norm) norm->erase();
    return false;  // (a reshape or constant made above is left for the canonicalizer)
  }
  y.replaceAllUsesWith(norm->getResult(0));
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

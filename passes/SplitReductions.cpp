// Long reductions over few rows in two stages, so that more than a handful of blocks read the
// input (see Passes.td).
#include "compiler/ir/Builders.h"
#include "compiler/ir/TensorConversion.h"
#include "compiler/knobs/Knob.h"
#include "passes/PassUtil.h"
#include "passes/Passes.h"

#include "llvm/ADT/TypeSwitch.h"

#include <numeric>

namespace kiln {
#define GEN_PASS_DEF_SPLITREDUCTIONS
#include "passes/Passes.h.inc"

KILN_KNOB(kReduceSplit, {"reduce.split",
                         {"auto", "off"},
                         "auto",
                         "Reductions of long rows over few rows (a whole tensor's min, max, sum or mean: "
                         "DynamicQuantizeLinear's range) in two stages: partial results of chunks by many "
                         "blocks, then the rows of partials, instead of one block per row reading everything",
                         knobs::Tier::Mixed,
                         "passes/SplitReductions.cpp"});

namespace {

using namespace mlir;

// Rows shorter than kMinRow take one block about as long as a second launch costs (H100: one
// block reads ~55 GB/s, so 256 KiB of float32 in ~5 us); stage one's chunks are kMinChunk
// elements or longer.
constexpr int64_t kMinRow = int64_t(1) << 16, kMinChunk = 2048;

// The op that reduces stage one's partial results: sums of squares and of magnitudes add up.
std::optional<StringRef> secondStageOf(Operation *op) {
  return TypeSwitch<Operation *, std::optional<StringRef>>(op)
      .Case([](ReduceSumOp) { return ReduceSumOp::getOperationName(); })
      .Case([](ReduceMeanOp) { return ReduceMeanOp::getOperationName(); })  // (equal chunks)
      .Case([](ReduceMaxOp) { return ReduceMaxOp::getOperationName(); })
      .Case([](ReduceMinOp) { return ReduceMinOp::getOperationName(); })
      .Case([](ReduceSumSquareOp) { return ReduceSumOp::getOperationName(); })
      .Case([](ReduceL1Op) { return ReduceSumOp::getOperationName(); })
      .Case([](ReduceMinMaxOp) { return ReduceMinMaxOp::getOperationName(); })  // (of the minima and maxima)
      .Default([](Operation *) { return std::nullopt; });
}

Value reshape(OpBuilder &b, Location loc, Value x, const std::vector<int64_t> &shape) {
  std::string err;
  Operation *r = createReshape(b, loc, x, shape, &err);
  return r ? r->getResult(0) : Value();
}

// The reduction `name` of `xs` (one operand; ReduceMinMax: two, and two results) over `axis`.
SmallVector<Value, 2> reduce(OpBuilder &b, Location loc, StringRef name, ValueRange xs, int64_t axis) {
  std::string err;
  Operation *r = createInferred(
      b, loc, name, xs,
      {b.getNamedAttr("axes", b.getDenseI64ArrayAttr({axis})), b.getNamedAttr("keepdims", b.getI64IntegerAttr(0))},
      &err, unsigned(xs.size()));
  return r ? SmallVector<Value, 2>(r->getResults()) : SmallVector<Value, 2>();
}

// Splits `op` (a reduction over trailing axes: rows × cols) when it has fewer rows than the
// target has SMs and long rows: x viewed as [rows, S, cols / S], stage one reduces the last axis
// ([rows, S]: rows · S blocks), stage two the S partials of each row. True when rewritten.
bool split(Operation *op, StringRef second, int smCount) {
  auto x = cast<RankedTensorType>(op->getOperand(0).getType());
  if (!x.hasStaticShape()) return false;
  std::vector<int64_t> shape(x.getShape().begin(), x.getShape().end());
  int64_t r = int64_t(shape.size());
  std::vector<int64_t> axes = intsAttr(op, "axes");
  auto noop = op->getAttrOfType<IntegerAttr>("noop_with_empty_axes");
  if (axes.empty()) {
    if (noop && noop.getInt()) return false;
    axes.resize(size_t(r));
    std::iota(axes.begin(), axes.end(), 0);
  }
  for (auto &a : axes) a = a < 0 ? a + r : a;
  std::sort(axes.begin(), axes.end());
  if (axes.empty() || axes.back() != r - 1) return false;  // (a strided reduction: not this form)
  for (size_t k = 1; k < axes.size(); ++k)
    if (axes[k] != axes[k - 1] + 1) return false;
  int64_t rows = 1, cols = 1;
  for (int64_t d = 0; d < r; ++d) (d < axes.front() ? rows : cols) *= shape[size_t(d)];
  if (rows >= smCount || cols < kMinRow) return false;
  // S: the most chunks (a divisor of cols, chunks of kMinChunk or more) up to two per SM in all.
  int64_t want = std::max<int64_t>(2, 2 * smCount / rows), S = 1;
  for (int64_t s = 2; s <= want && s * kMinChunk <= cols; ++s)
    if (cols % s == 0) S = s;
  if (S < 4) return false;
  OpBuilder b(op);
  Location loc = op->getLoc();
  SmallVector<Value, 2> views;
  for (Value x : op->getOperands()) {  // (ReduceMinMax of one tensor: one view)
    Value v = x == op->getOperand(0) && !views.empty() ? views[0] : reshape(b, loc, x, {rows, S, cols / S});
    if (!v) return false;
    views.push_back(v);
  }
  SmallVector<Value, 2> partial = reduce(b, loc, op->getName().getStringRef(), views, 2);
  SmallVector<Value, 2> whole = partial.empty() ? partial : reduce(b, loc, second, partial, 1);
  if (whole.size() != op->getNumResults()) return false;  // (leaves dead ops for the canonicalizer)
  SmallVector<Value, 2> ys;
  for (unsigned k = 0; k < op->getNumResults(); ++k) {
    auto outType = cast<RankedTensorType>(op->getResult(k).getType());
    Value y = reshape(b, loc, whole[k], std::vector<int64_t>(outType.getShape().begin(), outType.getShape().end()));
    if (!y || y.getType() != outType) return false;
    ys.push_back(y);
  }
  op->replaceAllUsesWith(ys);
  op->erase();
  return true;
}

// ReduceMin and ReduceMax of one tensor over the same axes (DynamicQuantizeLinear's range) as
// one ReduceMinMax: one kernel reads the tensor once for both.
void pairMinMax(func::FuncOp f) {
  std::vector<ReduceMinOp> mins;
  f.walk([&](ReduceMinOp op) { mins.push_back(op); });
  for (ReduceMinOp lo : mins) {
    Value x = lo->getOperand(0);
    auto noop = lo->getAttrOfType<IntegerAttr>("noop_with_empty_axes");
    if (noop && noop.getInt()) continue;
    ReduceMaxOp hi;
    for (Operation *u : x.getUsers())
      if (auto m = dyn_cast<ReduceMaxOp>(u);
          m && m->getBlock() == lo->getBlock() && !hi && intsAttr(m, "axes") == intsAttr(lo, "axes") &&
          m->getAttr("keepdims") == lo->getAttr("keepdims") && !m->getAttr("noop_with_empty_axes"))
        hi = m;
    if (!hi) continue;
    Operation *first = lo->isBeforeInBlock(hi) ? lo.getOperation() : hi.getOperation();
    OpBuilder b(first);
    SmallVector<NamedAttribute, 2> attrs;
    for (StringRef name : {"axes", "keepdims"})
      if (Attribute a = lo->getAttr(name)) attrs.push_back(b.getNamedAttr(name, a));
    std::string err;
    Operation *both = createInferred<ReduceMinMaxOp>(b, first->getLoc(), {x, x}, attrs, &err, 2);
    if (!both || both->getResult(0).getType() != lo.getType() || both->getResult(1).getType() != hi.getType()) {
      if (both) both->erase();
      continue;
    }
    lo->replaceAllUsesWith(ValueRange{both->getResult(0)});
    hi->replaceAllUsesWith(ValueRange{both->getResult(1)});
    lo->erase();
    hi->erase();
  }
}

// ReduceMin/ReduceMax of a half tensor widened to fp32 (the fp32 island a half route keeps for
// DynamicQuantizeLinear's range) reduce the half tensor itself and widen the result: the same
// values exactly (widening is exact and monotone), and the Cast kernel that wrote a whole fp32
// copy only for the reductions goes (its other users fuse the Cast into their own kernels).
// `op` is a ReduceMin or ReduceMax; it is left as it is when this does not apply.
void reduceHalfDirectly(Operation *op) {
  auto widen = op->getOperand(0).getDefiningOp<CastOp>();
  if (!widen || widen.getTo() != int64_t(ops::DType::F32)) return;
  Type from = cast<RankedTensorType>(widen->getOperand(0).getType()).getElementType();
  if (!from.isF16() && !from.isBF16()) return;
  OpBuilder b(op);
  std::string err;
  Operation *r =
      createInferred(b, op->getLoc(), op->getName().getStringRef(), {widen->getOperand(0)}, op->getAttrs(), &err);
  Operation *c = r ? createInferred<CastOp>(b, op->getLoc(), {r->getResult(0)},
                                            {b.getNamedAttr("to", b.getI64IntegerAttr(int64_t(ops::DType::F32)))}, &err)
                   : nullptr;
  if (!c || c->getResult(0).getType() != op->getResult(0).getType()) {
    if (c) c->erase();
    if (r) r->erase();
    return;
  }
  op->getResult(0).replaceAllUsesWith(c->getResult(0));
  op->erase();
  if (widen->use_empty()) widen->erase();
}

struct SplitReductionsPass : impl::SplitReductionsBase<SplitReductionsPass> {
  using SplitReductionsBase::SplitReductionsBase;

  void runOnOperation() override {
    knobs::Route r;
    target::GpuTarget t;
    if (!readRoute(route, getOperation(), r) || !readTarget(arch, getOperation(), t)) return signalPassFailure();
    std::vector<Operation *> halves;
    getOperation().walk([&](Operation *op) {
      if (isa<ReduceMinOp, ReduceMaxOp>(op)) halves.push_back(op);
    });
    for (Operation *op : halves) reduceHalfDirectly(op);
    pairMinMax(getOperation());
    if (r.get(kReduceSplit) == "off") return;
    std::vector<std::pair<Operation *, StringRef>> todo;
    getOperation().walk([&](Operation *op) {
      if (auto second = secondStageOf(op)) todo.push_back({op, *second});
    });
    for (auto &[op, second] : todo) split(op, second, t.smCount);
  }
};

}  // namespace
}  // namespace kiln

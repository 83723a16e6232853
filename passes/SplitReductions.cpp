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
      .Default([](Operation *) { return std::nullopt; });
}

Value reshape(OpBuilder &b, Location loc, Value x, const std::vector<int64_t> &shape) {
  std::string err;
  Operation *r = createReshape(b, loc, x, shape, &err);
  return r ? r->getResult(0) : Value();
}

Value reduce(OpBuilder &b, Location loc, StringRef name, Value x, int64_t axis) {
  std::string err;
  Operation *r = createInferred(
      b, loc, name, {x},
      {b.getNamedAttr("axes", b.getDenseI64ArrayAttr({axis})), b.getNamedAttr("keepdims", b.getI64IntegerAttr(0))},
      &err);
  return r ? r->getResult(0) : Value();
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
  Value view = reshape(b, loc, op->getOperand(0), {rows, S, cols / S});
  Value partial = view ? reduce(b, loc, op->getName().getStringRef(), view, 2) : Value();
  Value whole = partial ? reduce(b, loc, second, partial, 1) : Value();
  auto outType = cast<RankedTensorType>(op->getResult(0).getType());
  Value y = whole ? reshape(b, loc, whole, std::vector<int64_t>(outType.getShape().begin(), outType.getShape().end()))
                  : Value();
  if (!y || y.getType() != outType) return false;  // (leaves dead ops for the canonicalizer)
  op->getResult(0).replaceAllUsesWith(y);
  op->erase();
  return true;
}

// ReduceMin/ReduceMax of a half tensor widened to fp32 (the fp32 island a half route keeps for
// DynamicQuantizeLinear's range) reduce the half tensor itself and widen the result: the same
// values exactly (widening is exact and monotone), and the Cast kernel that wrote a whole fp32
// copy only for the reductions goes (its other users fuse the Cast into their own kernels).
// Returns the new reduction, or `op` when it does not apply.
Operation *reduceHalfDirectly(Operation *op) {
  if (!isa<ReduceMinOp, ReduceMaxOp>(op)) return op;
  auto widen = op->getOperand(0).getDefiningOp<CastOp>();
  if (!widen || widen.getTo() != int64_t(ops::DType::F32)) return op;
  Type from = cast<RankedTensorType>(widen->getOperand(0).getType()).getElementType();
  if (!from.isF16() && !from.isBF16()) return op;
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
    return op;
  }
  op->getResult(0).replaceAllUsesWith(c->getResult(0));
  op->erase();
  if (widen->use_empty()) widen->erase();
  return r;
}

struct SplitReductionsPass : impl::SplitReductionsBase<SplitReductionsPass> {
  using SplitReductionsBase::SplitReductionsBase;

  void runOnOperation() override {
    knobs::Route r;
    target::GpuTarget t;
    if (!readRoute(route, getOperation(), r) || !readTarget(arch, getOperation(), t)) return signalPassFailure();
    std::vector<std::pair<Operation *, StringRef>> todo;
    getOperation().walk([&](Operation *op) {
      if (auto second = secondStageOf(op)) todo.push_back({op, *second});
    });
    for (auto &[op, second] : todo) {
      op = reduceHalfDirectly(op);
      if (r.get(kReduceSplit) != "off") split(op, second, t.smCount);
    }
  }
};

}  // namespace
}  // namespace kiln

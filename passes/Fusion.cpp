// Kernel-region formation (see Passes.td): epilogue fusion into matrix products and
// convolutions, then elementwise fusion. Both build `kiln.fused` ops with one shared helper.
#include "compiler/ir/TensorConversion.h"
#include "passes/ElementwiseUse.h"
#include "passes/PassUtil.h"
#include "passes/Passes.h"

#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"

namespace kiln {
#define GEN_PASS_DEF_FUSEEPILOGUE
#define GEN_PASS_DEF_FUSEELEMENTWISE
#include "passes/Passes.h.inc"

KILN_KNOB(kFuseEpilogue, {"fusion.epilogue",
                          {"on", "off"},
                          "on",
                          "Apply bias, scale, activation and residual adds as a matrix product or "
                          "convolution stores its result",
                          knobs::Tier::Fast,
                          "passes/Fusion.cpp"});
KILN_KNOB(kFuseElementwise, {"fusion.elementwise",
                             {"on", "off"},
                             "on",
                             "Compute chains of elementwise ops in one kernel",
                             knobs::Tier::Fast,
                             "passes/Fusion.cpp"});

using namespace mlir;

bool isFusableElementwise(Operation *op) { return elementwiseUse(op).has_value(); }

namespace {

// A one-element constant, copied into regions instead of becoming an input (codegen makes it a
// literal).
bool isScalarConstant(Value v) {
  auto c = v.getDefiningOp<ConstantOp>();
  return c && cast<RankedTensorType>(c.getType()).getNumElements() == 1;
}

// Replaces `ops` (in program order; the last one's result is the region's result) by one
// kiln.fused op of `kind` placed at the last op.
void buildRegion(ArrayRef<Operation *> ops, FusedKind kind, OpBuilder &b) {
  llvm::DenseSet<Operation *> inRegion(ops.begin(), ops.end());
  llvm::SetVector<Value> inputs;
  for (Operation *op : ops)
    for (Value v : op->getOperands())
      if (!isa<NoneType>(v.getType()) && !inRegion.count(v.getDefiningOp()) && !isScalarConstant(v)) inputs.insert(v);
  Operation *last = ops.back();
  b.setInsertionPoint(last);
  SmallVector<Value> in(inputs.begin(), inputs.end());
  auto fused = b.create<FusedOp>(last->getLoc(), last->getResultTypes(), in, kind);
  Block *body = new Block();
  fused.getBody().push_back(body);
  IRMapping map;
  for (Value v : in) map.map(v, body->addArgument(v.getType(), v.getLoc()));
  OpBuilder inner = OpBuilder::atBlockBegin(body);
  Value none;
  for (Operation *op : ops) {
    for (Value v : op->getOperands()) {
      if (map.contains(v)) continue;
      if (isa<NoneType>(v.getType())) {
        if (!none) none = inner.create<NoneOp>(op->getLoc()).getResult();
        map.map(v, none);
      } else if (isScalarConstant(v)) {
        inner.clone(*v.getDefiningOp(), map);
      }
    }
    if (auto f = dyn_cast<FusedOp>(op)) {
      // An elementwise region absorbed into an epilogue: its body is inlined.
      Block &fb = f.getBody().front();
      for (unsigned k = 0; k < fb.getNumArguments(); ++k) map.map(fb.getArgument(k), map.lookup(f.getInputs()[k]));
      for (Operation &inOp : fb.without_terminator()) inner.clone(inOp, map);
      map.map(f.getResult(0), map.lookup(fb.getTerminator()->getOperand(0)));
      continue;
    }
    inner.clone(*op, map);
  }
  inner.create<YieldOp>(last->getLoc(), ValueRange{map.lookup(last->getResult(0))});
  last->getResult(0).replaceAllUsesWith(fused.getResult(0));
  for (Operation *op : llvm::reverse(ops)) op->erase();
}

bool isProduct(Operation *op) {
  return isa<MatMulOp, TransposedMatMulOp, QuantizedMatMulOp, ConvOp, ConvNhwcOp, QuantizedConvOp, QuantizedConvNhwcOp>(
      op);
}

struct FuseEpiloguePass : impl::FuseEpilogueBase<FuseEpiloguePass> {
  using FuseEpilogueBase::FuseEpilogueBase;

  void runOnOperation() override {
    knobs::Route r;
    if (!readRoute(route, getOperation(), r)) return signalPassFailure();
    if (r.get(kFuseEpilogue) == "off") return;
    SmallVector<Operation *> anchors;
    for (Operation &op : getOperation().getBody().front())
      if (isProduct(&op)) anchors.push_back(&op);
    OpBuilder b(&getContext());
    for (Operation *anchor : anchors) {
      auto outType = cast<RankedTensorType>(anchor->getResult(0).getType());
      SmallVector<Operation *> chain = {anchor};
      Value cur = anchor->getResult(0);
      while (cur.hasOneUse()) {
        Operation *u = *cur.getUsers().begin();
        auto region = dyn_cast<FusedOp>(u);
        bool elementwiseRegion = region && region.getKind() == FusedKind::Elementwise && region->getNumResults() == 1;
        if (u->getParentOp() != anchor->getParentOp() || !(isFusableElementwise(u) || elementwiseRegion)) break;
        auto ut = dyn_cast<RankedTensorType>(u->getResult(0).getType());
        if (!ut || ut.getShape() != outType.getShape()) break;
        // Products store float results, or 8-bit ones (QuantizeLinear: the next product's
        // input), which end the epilogue.
        bool quantized = ut.getElementType().isSignlessInteger(8) || ut.getElementType().isUnsignedInteger(8);
        if (!isa<FloatType>(ut.getElementType()) && !quantized) break;
        chain.push_back(u);
        cur = u->getResult(0);
        if (quantized) break;
      }
      if (chain.size() > 1) buildRegion(chain, FusedKind::Epilogue, b);
    }
  }
};

// A region that requantizes the results of two or more products (QDQ models: both branches of
// a residual block, then the add) can be absorbed by one product's epilogue only; the others
// would store their raw float sums for it. So each product's requantization head — the Casts
// and the QuantizeLinear right after it — stays out of the region, except the first product's:
// those products end their own epilogues in the QuantizeLinear and store 8-bit values instead.
void dropLaterRequantizeHeads(llvm::DenseSet<Operation *> &region, ArrayRef<Operation *> order) {
  struct Head {
    size_t productIndex;
    SmallVector<Operation *> ops;  // Casts, then the QuantizeLinear
  };
  SmallVector<Head> heads;
  for (Operation *op : region) {
    if (onnxTypeOf(op) != "QuantizeLinear") continue;
    Head h;
    h.ops.push_back(op);
    Value v = op->getOperand(0);
    while (v.getDefiningOp() && region.count(v.getDefiningOp()) && onnxTypeOf(v.getDefiningOp()) == "Cast" &&
           v.hasOneUse()) {
      h.ops.push_back(v.getDefiningOp());
      v = v.getDefiningOp()->getOperand(0);
    }
    Operation *p = v.getDefiningOp();
    if (!p || region.count(p) || !isProduct(p) || !v.hasOneUse()) continue;
    h.productIndex = size_t(llvm::find(order, p) - order.begin());
    heads.push_back(std::move(h));
  }
  if (heads.size() < 2) return;
  llvm::sort(heads, [](const Head &a, const Head &b) { return a.productIndex < b.productIndex; });
  for (const Head &h : ArrayRef<Head>(heads).drop_front())
    for (Operation *op : h.ops) region.erase(op);
}

struct FuseElementwisePass : impl::FuseElementwiseBase<FuseElementwisePass> {
  using FuseElementwiseBase::FuseElementwiseBase;

  static constexpr size_t kMaxOps = 32, kMaxInputs = 12;

  void runOnOperation() override {
    knobs::Route r;
    if (!readRoute(route, getOperation(), r)) return signalPassFailure();
    if (r.get(kFuseElementwise) == "off") return;
    Block &block = getOperation().getBody().front();
    SmallVector<Operation *> order;
    for (Operation &op : block.without_terminator()) order.push_back(&op);
    llvm::DenseSet<Operation *> taken;
    SmallVector<SmallVector<Operation *>> regions;
    for (Operation *root : llvm::reverse(order)) {
      if (taken.count(root) || !isFusableElementwise(root)) continue;
      llvm::DenseSet<Operation *> region = {root};
      for (bool grew = true; grew && region.size() < kMaxOps;) {
        grew = false;
        for (Operation *op : SmallVector<Operation *>(region.begin(), region.end()))
          for (Value v : op->getOperands()) {
            Operation *d = v.getDefiningOp();
            if (!d || region.count(d) || taken.count(d) || !isFusableElementwise(d)) continue;
            if (!llvm::all_of(d->getUsers(), [&](Operation *u) { return region.count(u) != 0; })) continue;
            region.insert(d);
            grew = true;
            if (region.size() >= kMaxOps) break;
          }
      }
      dropLaterRequantizeHeads(region, order);
      if (region.size() < 2) continue;
      // Program order, and a bound on distinct inputs (kernel parameters).
      SmallVector<Operation *> ops;
      for (Operation *op : order)
        if (region.count(op)) ops.push_back(op);
      llvm::DenseSet<Value> inputs;
      for (Operation *op : ops)
        for (Value v : op->getOperands())
          if (!isa<NoneType>(v.getType()) && !region.count(v.getDefiningOp()) && !isScalarConstant(v)) inputs.insert(v);
      if (inputs.size() > kMaxInputs) continue;
      for (Operation *op : ops) taken.insert(op);
      regions.push_back(ops);
    }
    OpBuilder b(&getContext());
    for (auto &ops : regions) buildRegion(ops, FusedKind::Elementwise, b);
  }
};

}  // namespace
}  // namespace kiln

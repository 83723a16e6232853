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
KILN_KNOB(kFusePrologue, {"fusion.prologue",
                          {"off", "on"},
                          "off",
                          "Apply an elementwise function of one tensor and one-element values (a dynamic "
                          "quantization, a cast of the input) to a matrix product's first operand as kiln's product "
                          "kernel loads it, which moves the product to kiln's kernel (off: measured slower than "
                          "cuBLASLt and a separate pass, bench/RESULTS.md 2026-12-07)",
                          knobs::Tier::Fast,
                          "passes/Fusion.cpp"});

using namespace mlir;

bool isFusableElementwise(Operation *op) { return elementwiseUse(op).has_value(); }

Operation *epilogueProduct(FusedOp region) {
  for (Operation &op : region.getBody().front())
    if (!isa<ConstantOp, NoneOp>(op) && !isFusableElementwise(&op)) return &op;
  return nullptr;
}

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

// Whether `anchor`'s kernel can apply a prologue to its A operand (codegen/kernels/MatMul.h):
// not 8-bit products, direct or grouped convolutions.
bool takesPrologue(Operation *anchor) {
  bool implicitGemm = false;
  if (auto c = dyn_cast<ConvNhwcOp>(anchor)) {
    auto group = c->getAttrOfType<IntegerAttr>("group");
    int64_t rank = cast<RankedTensorType>(c->getOperand(0).getType()).getRank();
    implicitGemm = (!group || group.getInt() == 1) && (rank == 3 || rank == 4);
  }
  return isa<MatMulOp, TransposedMatMulOp>(anchor) || implicitGemm;
}

// The elementwise op or region that computes a product's A operand from one tensor of A's shape
// and type and one-element values, for the product's kernel to apply to A's elements as it loads
// them. Where other products take the same A as their A (onnxruntime quantizes an activation once
// for the query, key and value products), this product gets its own copy of the op (it is cheap
// to compute again; A is then never stored). Null if there is none, or the target has no
// tensor-core kernel for a half product.
Operation *prologueOf(Operation *anchor, const target::GpuTarget &t, OpBuilder &b) {
  if (!takesPrologue(anchor)) return nullptr;
  Value a = anchor->getOperand(0);
  Operation *p = a.getDefiningOp();
  if (!p || p->getBlock() != anchor->getBlock()) return nullptr;
  for (OpOperand &use : a.getUses())
    if (use.getOperandNumber() != 0 || !takesPrologue(use.getOwner())) return nullptr;
  auto region = dyn_cast<FusedOp>(p);
  if (region ? region.getKind() != FusedKind::Elementwise || p->getNumResults() != 1 : !isFusableElementwise(p))
    return nullptr;
  auto at = cast<RankedTensorType>(a.getType());
  Type et = at.getElementType();
  if ((!et.isF16() && !et.isBF16() && !et.isF32()) || at.getNumElements() == 1) return nullptr;
  if (!et.isF32() && !t.has(target::Feature::MmaHalf)) return nullptr;
  Value x;
  for (Value v : region ? ValueRange(region.getInputs()) : ValueRange(p->getOperands())) {
    if (isa<NoneType>(v.getType()) || isScalarConstant(v)) continue;
    auto vt = dyn_cast<RankedTensorType>(v.getType());
    if (!vt) return nullptr;
    if (vt.getNumElements() == 1) continue;
    // (A's own type, or float32 read into a half product: the prologue converts)
    if (x || vt.getShape() != at.getShape() || (vt.getElementType() != et && !vt.getElementType().isF32()))
      return nullptr;
    x = v;
  }
  if (!x) return nullptr;
  if (!a.hasOneUse()) {
    b.setInsertionPointAfter(p);
    p = b.clone(*p);
    anchor->setOperand(0, p->getResult(0));
  }
  return p;
}

struct FuseEpiloguePass : impl::FuseEpilogueBase<FuseEpiloguePass> {
  using FuseEpilogueBase::FuseEpilogueBase;

  void runOnOperation() override {
    knobs::Route r;
    target::GpuTarget t;
    if (!readRoute(route, getOperation(), r) || !readTarget(arch, getOperation(), t)) return signalPassFailure();
    const bool epilogues = r.get(kFuseEpilogue) == "on", prologues = r.get(kFusePrologue) == "on";
    if (!epilogues && !prologues) return;
    SmallVector<Operation *> anchors;
    for (Operation &op : getOperation().getBody().front())
      if (isProduct(&op)) anchors.push_back(&op);
    OpBuilder b(&getContext());
    for (Operation *anchor : anchors) {
      auto outType = cast<RankedTensorType>(anchor->getResult(0).getType());
      SmallVector<Operation *> chain = {anchor};
      Operation *prologue = prologues ? prologueOf(anchor, t, b) : nullptr;
      if (prologue) chain.insert(chain.begin(), prologue);
      Value cur = anchor->getResult(0);
      while (epilogues && cur.hasOneUse()) {
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

// Attention as one op (see Passes.td): Softmax(scale · Q·Kᵀ + mask) · V in half precision, with
// the products' operand permutations, a constant scalar scale, an additive mask (or a Where with
// a constant condition, as GPT-2's causal mask) and a head transpose of the result folded in,
// becomes kiln.attention, which codegen runs as one flash-attention kernel. Operands that layout
// ops (head transposes, Q/K/V slices or gathers of a packed projection) made are then read in
// place through kiln.strided_view, so those copies go.
#include "passes/FuseAttention.h"

#include "compiler/ir/Builders.h"
#include "compiler/ir/TensorConversion.h"
#include "passes/ElementwiseUse.h"
#include "passes/PassUtil.h"
#include "passes/Passes.h"
#include "passes/StridedViews.h"

#include "llvm/ADT/SetVector.h"

#include <numeric>

namespace kiln {
#define GEN_PASS_DEF_FUSEATTENTION
#include "passes/Passes.h.inc"

KILN_KNOB(kFuseAttention, {"fusion.attention",
                           {"on", "off"},
                           "on",
                           "Run Softmax(scale · Q·Kᵀ + mask) · V (fp16/bf16, head sizes multiples of 8 up to "
                           "128) as one flash-attention kernel: the scores never reach memory",
                           knobs::Tier::Fast,
                           "passes/FuseAttention.cpp"});

KILN_KNOB(kMergeQkv, {"fusion.qkv",
                      {"on", "off"},
                      "on",
                      "Compute a fused attention's Q, K and V projections (one input, constant weights) as "
                      "one product with the weights side by side, whose columns the kernel reads in place",
                      knobs::Tier::Mixed,
                      "passes/FuseAttention.cpp"});

namespace {

using namespace mlir;

// MatMul or TransposedMatMul of rank >= 2 operands.
bool isProduct(Operation *op) {
  return op && isa<MatMulOp, TransposedMatMulOp>(op) && shapeOf(op->getOperand(0)).size() >= 2 &&
         shapeOf(op->getOperand(1)).size() >= 2;
}

// Whether the attention kernel takes `attn` as it now is.
bool kernelTakes(AttentionOp attn) {
  try {
    return target::attentionUnsupported(attentionSpecOf(attn)).empty();
  } catch (const std::invalid_argument &) {
    return false;
  }
}

// What feeds the softmax: the scores product, the scale and the mask found on the way.
struct Scores {
  Operation *product = nullptr;
  double scale = 1.0;
  Value mask;                            // additive, or null
  std::optional<ops::Tensor> whereMask;  // a Where's constant condition made additive (scores' type)
  std::optional<int64_t> causal;         // or, when that condition is causal, its diagonal
  SmallVector<Operation *> ops;          // the ops between the product and the softmax
};

// The diagonal d >= 0 of a causal condition: `cond` (broadcasting to `scores`) is true exactly
// where key j <= query i + d, the same for every leading index (GPT-2's tril).
std::optional<int64_t> causalDiagonal(const ops::Tensor &cond, ArrayRef<int64_t> scores) {
  if (cond.rank() < 2 || scores.size() < 2) return std::nullopt;
  int64_t sq = cond.shape[size_t(cond.rank() - 2)], sk = cond.shape.back();
  if (sq != scores[scores.size() - 2] || sk != scores.back() || sq * sk == 0) return std::nullopt;
  int64_t d = -1;
  while (d + 1 < sk && cond.get(d + 1) != 0) ++d;  // row 0: keys 0 .. d
  if (d < 0) return std::nullopt;
  for (int64_t e = 0; e < cond.size(); ++e)
    if ((cond.get(e) != 0) != (e % sk <= (e / sk) % sq + d)) return std::nullopt;
  return d;
}

// Walks from the softmax input up to the product: x·c, c·x, x/c (constant scalars), then at most
// one x + mask / mask + x or Where(constant condition, x, c ≤ -10⁴) (exp of the masked scores is
// 0 either way) nearer the softmax than every scale; each op's only use is the next.
std::optional<Scores> findScores(Value x) {
  Scores s;
  Type type = x.getType();
  auto chainOp = [&](Value v) {
    Operation *d = v.getDefiningOp();
    return v.getType() == type && v.hasOneUse() && d && (isProduct(d) || isa<MulOp, DivOp, WhereOp>(d));
  };
  bool masked = false;
  while (Operation *op = x.getDefiningOp()) {
    if (!x.hasOneUse() || op->getNumResults() != 1 || op->getResult(0).getType() != type) return std::nullopt;
    if (isProduct(op)) {
      s.product = op;
      return s;
    }
    if (isa<MulOp, DivOp>(op)) {
      unsigned xi = isa<MulOp>(op) && scalarValue(op->getOperand(0)) ? 1 : 0;
      auto c = scalarValue(op->getOperand(1 - xi));
      if (!c || (isa<DivOp>(op) && *c == 0.0)) return std::nullopt;
      s.scale *= isa<MulOp>(op) ? *c : 1.0 / *c;
      x = op->getOperand(xi);
    } else if (isa<AddOp>(op) && !masked && s.scale == 1.0) {
      bool first = chainOp(op->getOperand(0)), second = chainOp(op->getOperand(1));
      if (first == second) return std::nullopt;  // neither, or both: which is the mask?
      unsigned xi = first ? 0 : 1;
      s.mask = op->getOperand(1 - xi);
      masked = true;
      x = op->getOperand(xi);
    } else if (isa<WhereOp>(op) && !masked && s.scale == 1.0) {
      auto cond = constantValue(op->getOperand(0), int64_t(1) << 24);
      auto c = scalarValue(op->getOperand(2));
      if (!cond || !c || *c > -1e4) return std::nullopt;
      // Causal: computed in the kernel, whose blocks then skip the key tiles past the diagonal.
      s.causal = causalDiagonal(*cond, cast<RankedTensorType>(type).getShape());
      if (!s.causal) {
        ops::Tensor m(dtypeOf(cast<RankedTensorType>(type).getElementType()), cond->shape);
        for (int64_t i = 0; i < m.size(); ++i) m.set(i, cond->get(i) != 0 ? 0.0 : *c);
        s.whereMask = m;
      }
      masked = true;
      x = op->getOperand(1);
    } else {
      return std::nullopt;
    }
    s.ops.push_back(op);
  }
  return std::nullopt;
}

// Where(IsNaN(p), 0, p) when that is what p's only two users make (PyTorch's exported
// scaled_dot_product_attention: a query whose keys are all masked gets 0, not NaN), else null.
Operation *nanToZeroOf(Value p) {
  if (std::distance(p.getUsers().begin(), p.getUsers().end()) != 2) return nullptr;
  for (Operation *w : p.getUsers()) {
    auto isNan = isa<WhereOp>(w) ? w->getOperand(0).getDefiningOp<IsNaNOp>() : IsNaNOp();
    auto zero = isNan ? scalarValue(w->getOperand(1)) : std::nullopt;
    if (isNan && isNan->getOperand(0) == p && isNan->getResult(0).hasOneUse() && zero && *zero == 0.0 &&
        w->getOperand(2) == p && w->getResult(0).getType() == p.getType())
      return w;
  }
  return nullptr;
}

// Replaces the attention ending at `softmax` by one kiln.attention when the kernel takes it.
bool fuse(Operation *softmax, OpBuilder &b) {
  Value scores = softmax->getOperand(0);
  auto type = cast<RankedTensorType>(scores.getType());
  Type elem = type.getElementType();
  if (!(elem.isF16() || elem.isBF16()) || type.getRank() < 2) return false;
  int64_t axis =
      softmax->getAttrOfType<IntegerAttr>("axis") ? softmax->getAttrOfType<IntegerAttr>("axis").getInt() : -1;
  if (axis != -1 && axis != type.getRank() - 1) return false;
  Value p = softmax->getResult(0);
  Operation *nanToZero = nanToZeroOf(p);  // PyTorch's exporters: Where(IsNaN(p), 0, p)
  if (nanToZero) p = nanToZero->getResult(0);
  if (!p.hasOneUse()) return false;
  Operation *pv = *p.getUsers().begin();
  if (!isProduct(pv) || pv->getOperand(0) != p || !intsAttr(pv, "perm_a").empty()) return false;
  auto found = findScores(scores);
  if (!found) return false;
  Operation *qk = found->product;
  Value q = qk->getOperand(0), k = qk->getOperand(1), v = pv->getOperand(1);
  if (cast<RankedTensorType>(q.getType()).getElementType() != elem ||
      cast<RankedTensorType>(k.getType()).getElementType() != elem ||
      cast<RankedTensorType>(v.getType()).getElementType() != elem)
    return false;
  // The result's head transpose, when its last dim stays last, is where the kernel stores.
  Operation *transpose = nullptr;
  std::vector<int64_t> permY;
  Value out = pv->getResult(0);
  if (out.hasOneUse()) {
    Operation *t = *out.getUsers().begin();
    auto perm = isa<TransposeOp>(t) ? intsAttr(t, "perm") : std::vector<int64_t>{};
    if (!perm.empty() && perm.back() == int64_t(perm.size()) - 1) transpose = t, permY = perm;
  }

  b.setInsertionPoint(pv);
  Location loc = pv->getLoc();
  // An operand the product reads through an explicit Transpose (no permutation folded into the
  // product: torch.export's scaled_dot_product_attention scales K between its transposes, and
  // the scale moves past the product later) is read through that permutation instead; so is
  // one whose Transpose keeps axis 0 and is followed by a Reshape that only splits axis 0 (the
  // batch · heads of a 3-D bmm back into batch, heads): the reshape is made first.
  llvm::SmallSetVector<Operation *, 4> replacedViews;  // erased if the attention is made and they are unused
  SmallVector<Operation *> madeViews;                  // erased if it is not
  auto unfoldedPerm = [&](Value &operand, Operation *product, StringRef attr) -> std::vector<int64_t> {
    std::vector<int64_t> perm = intsAttr(product, attr);
    if (!perm.empty()) return perm;
    if (auto t = operand.getDefiningOp<TransposeOp>()) {
      replacedViews.insert(t);
      operand = t->getOperand(0);
      return intsAttr(t, "perm");
    }
    auto r = operand.getDefiningOp<ReshapeOp>();
    auto t = r ? r->getOperand(0).getDefiningOp<TransposeOp>() : TransposeOp();
    if (!t) return perm;
    std::vector<int64_t> tp = intsAttr(t, "perm"), in = shapeOf(t->getOperand(0)), mid = shapeOf(t->getResult(0)),
                         out = shapeOf(r->getResult(0));
    size_t split = out.size() - (mid.size() - 1);  // axis 0 becomes `split` axes
    if (tp.empty() || tp[0] != 0 || out.size() < mid.size() ||
        !std::equal(mid.begin() + 1, mid.end(), out.begin() + long(split)) ||
        std::accumulate(out.begin(), out.begin() + long(split), int64_t(1), std::multiplies<>()) != mid[0])
      return perm;
    std::vector<int64_t> to(out.begin(), out.begin() + long(split));  // [batch, heads, in[1:]...]
    to.insert(to.end(), in.begin() + 1, in.end());
    std::string err;
    Operation *early = createReshape(b, loc, t->getOperand(0), to, &err);
    if (!early) return perm;
    madeViews.push_back(early->getOperand(1).getDefiningOp());
    madeViews.push_back(early);
    replacedViews.insert(r), replacedViews.insert(t);
    operand = early->getResult(0);
    for (size_t i = 0; i < split; ++i) perm.push_back(int64_t(i));
    for (size_t i = 1; i < tp.size(); ++i) perm.push_back(tp[i] + int64_t(split) - 1);
    return perm;
  };
  std::vector<int64_t> permQ = unfoldedPerm(q, qk, "perm_a"), permK = unfoldedPerm(k, qk, "perm_b"),
                       permV = unfoldedPerm(v, pv, "perm_b");

  Value mask = found->mask;
  Operation *made = nullptr;  // the mask operand made here: a Where's additive mask, or none
  if (found->whereMask) {
    mask = createConstant(b, loc, *found->whereMask);
    made = mask.getDefiningOp();
  }
  if (!mask) made = b.create<NoneOp>(loc), mask = made->getResult(0);
  SmallVector<NamedAttribute> attrs = {b.getNamedAttr("scale", b.getF32FloatAttr(float(found->scale)))};
  for (auto [name, perm] : {std::pair{"perm_q", &permQ}, {"perm_k", &permK}, {"perm_v", &permV}})
    if (!perm->empty()) attrs.push_back(b.getNamedAttr(name, b.getDenseI64ArrayAttr(*perm)));
  if (transpose) attrs.push_back(b.getNamedAttr("perm_y", b.getDenseI64ArrayAttr(permY)));
  if (found->causal) attrs.push_back(b.getNamedAttr("causal_diagonal", b.getI64IntegerAttr(*found->causal)));
  if (nanToZero) attrs.push_back(b.getNamedAttr("zero_masked_rows", b.getI64IntegerAttr(1)));
  std::string err;
  // Named by the nodes it replaces (the launch lists them: kiln inspect, profiles).
  Location named = FusedLoc::get(b.getContext(), {qk->getLoc(), softmax->getLoc(), pv->getLoc()});
  Operation *attn = createInferred<AttentionOp>(b, named, {q, k, v, mask}, attrs, &err);
  Value replaced = transpose ? transpose->getResult(0) : out;
  if (!attn || attn->getResult(0).getType() != replaced.getType() || !kernelTakes(cast<AttentionOp>(attn))) {
    if (attn) attn->erase();
    if (made) made->erase();
    for (Operation *m : llvm::reverse(madeViews)) m->erase();
    return false;
  }
  replaced.replaceAllUsesWith(attn->getResult(0));
  if (transpose) transpose->erase();
  pv->erase();
  if (nanToZero) {
    Operation *isNan = nanToZero->getOperand(0).getDefiningOp();
    nanToZero->erase();
    isNan->erase();
  }
  softmax->erase();
  for (Operation *op : found->ops) op->erase();
  qk->erase();
  for (Operation *view : replacedViews)  // (a reshape before the transpose it reads)
    if (view->use_empty()) view->erase();
  return true;
}

// Reads attention operand k (Q, K or V) through a strided view of the memory it was copied
// from, when layout ops made it and the kernel takes the view's strides and offset.
void readInPlace(AttentionOp attn, unsigned k, OpBuilder &b) {
  Value old = attn->getOperand(k);
  std::optional<StridedView> found = stridedViewOf(old);
  if (!found || !found->copies) return;
  b.setInsertionPoint(attn);
  Value sv = createStridedView(b, attn->getLoc(), *found, old.getType());
  if (!sv) return;
  attn->setOperand(k, sv);
  if (!kernelTakes(attn)) {  // (an offset or stride the kernel cannot read)
    attn->setOperand(k, old);
    sv.getDefiningOp()->erase();
    return;
  }
  eraseDeadViews(old);
}

// A projection of attention operand Q, K or V: x·W with a constant 2-D W, optionally plus a
// constant bias of W's columns, then reshapes and transposes (heads split); each value used once.
struct Projection {
  Operation *product = nullptr, *biasAdd = nullptr;
  ops::Tensor w, bias;  // bias: none when dtype is Undefined
  Value out;            // what the reshapes read
};

std::optional<Projection> projectionOf(Value x) {
  // (Transposes too: torch.export's K, transposed for Q·Kᵀ before the product reads it.)
  while (isa_and_nonnull<ReshapeOp, TransposeOp>(x.getDefiningOp())) {
    if (!x.hasOneUse()) return std::nullopt;
    x = x.getDefiningOp()->getOperand(0);
  }
  Projection p;
  p.out = x;
  Operation *d = x.getDefiningOp();
  if (!x.hasOneUse() || !d) return std::nullopt;
  if (isa<AddOp>(d)) {
    unsigned pi = isProduct(d->getOperand(0).getDefiningOp()) ? 0 : 1;
    auto bias = constantValue(d->getOperand(1 - pi), int64_t(1) << 20);
    if (!bias || bias->rank() != 1 || !d->getOperand(pi).hasOneUse()) return std::nullopt;
    p.biasAdd = d, p.bias = *bias, d = d->getOperand(pi).getDefiningOp();
  }
  if (!isProduct(d)) return std::nullopt;
  auto w = constantValue(d->getOperand(1), int64_t(1) << 26);
  if (!w || w->rank() != 2 || (p.biasAdd && p.bias.size() != shapeOf(d->getResult(0)).back())) return std::nullopt;
  p.product = d, p.w = *w;
  return p;
}

// Q, K and V projected from one input by three products (same operand permutations, weights
// stored the same way) → one product of the weights side by side (and the biases), and a Slice of
// its columns for each; readInPlace then reads those slices in place. One wide GEMM instead of
// three narrow ones (BERT's separate query/key/value Linear layers).
void mergeProjections(AttentionOp attn, OpBuilder &b) {
  std::optional<Projection> qkv[3];
  for (unsigned k = 0; k < 3; ++k)
    if (!(qkv[k] = projectionOf(attn->getOperand(k)))) return;
  Operation *first = qkv[0]->product;
  bool stored = intsAttr(first, "perm_b") == std::vector<int64_t>{1, 0}, biased = qkv[0]->biasAdd;
  for (unsigned k = 1; k < 3; ++k) {
    Operation *op = qkv[k]->product;
    if (op == qkv[k - 1]->product || op == first || op->getOperand(0) != first->getOperand(0) ||
        op->getName() != first->getName() || op->getAttrDictionary() != first->getAttrDictionary() ||
        bool(qkv[k]->biasAdd) != biased || qkv[k]->w.dtype != qkv[0]->w.dtype ||
        qkv[k]->bias.dtype != qkv[0]->bias.dtype)
      return;
  }
  // W stored [N, K] (perm_b = [1, 0]) stacks rows; [K, N] stacks columns row by row.
  int64_t K = qkv[0]->w.shape[stored ? 1 : 0], N = 0;
  for (auto &p : qkv) {
    int64_t n = p->w.shape[stored ? 0 : 1];
    if (p->w.shape[stored ? 1 : 0] != K || n % 8) return;  // (8: the kernel's column offsets)
    N += n;
  }
  ops::Tensor w(qkv[0]->w.dtype, stored ? ops::Shape{N, K} : ops::Shape{K, N}),
      bias(biased ? qkv[0]->bias.dtype : w.dtype, {N});
  int64_t col = 0;
  for (auto &p : qkv) {
    int64_t n = p->w.shape[stored ? 0 : 1];
    for (int64_t r = 0; r < K; ++r)
      for (int64_t j = 0; j < n; ++j)
        w.f[stored ? (col + j) * K + r : r * N + col + j] = p->w.f[stored ? j * K + r : r * n + j];
    for (int64_t j = 0; j < n && biased; ++j) bias.f[col + j] = p->bias.f[j];
    col += n;
  }
  Location loc = first->getLoc();
  b.setInsertionPoint(attn);      // (after all three products and their shared input)
  SmallVector<Operation *> made;  // erased again if a step fails
  auto keep = [&](Operation *op) {
    if (op) made.push_back(op);
    return op ? op->getResult(0) : Value();
  };
  auto constant = [&](const ops::Tensor &t) { return keep(createConstant(b, loc, t).getDefiningOp()); };
  std::string err;
  Value y = keep(createInferred(b, loc, first->getName().getStringRef(), {first->getOperand(0), constant(w)},
                                first->getAttrs(), &err));
  if (y && biased) y = keep(createInferred<AddOp>(b, loc, {y, constant(bias)}, {}, &err));
  Value none = keep(b.create<NoneOp>(loc)), axis = constant(ops::Tensor::fromInts(ops::DType::I64, {1}, {-1}));
  Value slices[3];
  col = 0;
  for (unsigned k = 0; k < 3 && y; ++k) {
    int64_t n = qkv[k]->w.shape[stored ? 0 : 1];
    auto at = [&](int64_t v) { return constant(ops::Tensor::fromInts(ops::DType::I64, {1}, {v})); };
    slices[k] = keep(createInferred<SliceOp>(b, qkv[k]->out.getLoc(), {y, at(col), at(col + n), axis, none}, {}, &err));
    if (slices[k] && slices[k].getType() != qkv[k]->out.getType()) slices[k] = Value();
    if (!slices[k]) y = Value();
    col += n;
  }
  if (!y) {
    for (auto it = made.rbegin(); it != made.rend(); ++it) (*it)->erase();
    return;
  }
  for (unsigned k = 0; k < 3; ++k) {
    Projection &p = *qkv[k];
    // The reshapes between the projection and attention move below the new slice.
    for (Operation *r = *p.out.getUsers().begin(); r != attn.getOperation(); r = *r->getResult(0).getUsers().begin())
      r->moveBefore(attn);
    p.out.replaceAllUsesWith(slices[k]);
    if (p.biasAdd) p.biasAdd->erase();
    p.product->erase();
  }
}

struct FuseAttentionPass : impl::FuseAttentionBase<FuseAttentionPass> {
  using FuseAttentionBase::FuseAttentionBase;

  void runOnOperation() override {
    knobs::Route r;
    target::GpuTarget t;
    if (!readRoute(route, getOperation(), r) || !readTarget(arch, getOperation(), t)) return signalPassFailure();
    // The fused kernel is fp16/bf16 mma.sync: below sm_80 attention stays products and a softmax
    // (said once, when the graph has half-precision softmaxes that could have fused).
    if (r.get(kFuseAttention) != "on") return;
    if (std::string missing = t.missing(target::Feature::MmaHalf); !missing.empty()) {
      unsigned half = 0;
      getOperation().walk([&](SoftmaxOp s) {
        ops::DType d = tensorTypeOf(s.getType()).dtype;
        half += d == ops::DType::F16 || d == ops::DType::BF16;
      });
      if (half)
        getOperation().emitRemark("attention not fused (" + missing + "): " + std::to_string(half) +
                                  " half-precision softmaxes stay matrix products and a softmax");
      return;
    }
    SmallVector<Operation *> softmaxes;
    getOperation().walk([&](SoftmaxOp s) { softmaxes.push_back(s); });
    OpBuilder b(&getContext());
    for (Operation *s : softmaxes) fuse(s, b);
    SmallVector<AttentionOp> attns;
    getOperation().walk([&](AttentionOp a) { attns.push_back(a); });
    for (AttentionOp a : attns) {
      if (r.get(kMergeQkv) == "on") mergeProjections(a, b);
      for (unsigned k = 0; k < 3; ++k) readInPlace(a, k, b);
    }
  }
};

}  // namespace

target::AttentionSpec attentionSpecOf(AttentionOp op) {
  target::AttentionOperand qkv[3];
  const char *perms[] = {"perm_q", "perm_k", "perm_v"};
  for (unsigned k = 0; k < 3; ++k) {
    Value x = op->getOperand(k);
    qkv[k].shape = shapeOf(x), qkv[k].perm = intsAttr(op, perms[k]);
    if (auto sv = x.getDefiningOp<StridedViewOp>())
      qkv[k].strides = intsAttr(sv, "strides"), qkv[k].offset = sv.getOffset().value_or(0);
  }
  target::AttentionSpec s = target::attentionSpec(qkv[0], qkv[1], qkv[2], intsAttr(op, "perm_y"));
  auto typeOf = [](Value v) {
    auto t = kernelElemType(cast<RankedTensorType>(v.getType()).getElementType());
    if (!t) throw std::invalid_argument("attention: an operand type without kernels");
    return *t;
  };
  s.type = typeOf(op->getOperand(0));
  s.scale = op.getScale().has_value() ? op.getScale()->convertToFloat() : 1.f;
  Value mask = op->getOperand(3);
  if (!isa<NoneType>(mask.getType())) s.hasMask = true, s.maskShape = shapeOf(mask), s.maskType = typeOf(mask);
  if (auto d = op.getCausalDiagonal()) s.causal = true, s.diagonal = int64_t(*d);
  s.zeroMaskedRows = op.getZeroMaskedRows().value_or(0) != 0;
  return s;
}

}  // namespace kiln

// One form for matrix products (see Passes.td): Gemm → TransposedMatMul + elementwise epilogue
// ops; transposes feeding a product folded into its operand permutations; constant scalar
// scales of an operand moved to the product's result; large products with a constant B and an
// odd column count padded to a multiple of 8 columns; column slices of a product with a constant B
// computed as separate products.
#include "compiler/target/Types.h"
#include "compiler/ir/Builders.h"
#include "compiler/ir/TensorConversion.h"
#include "passes/PassUtil.h"
#include "passes/Passes.h"
#include "passes/StridedViews.h"
#include "passes/Transposes.h"

namespace kiln {
#define GEN_PASS_DEF_CANONICALIZELINEAR
#include "passes/Passes.h.inc"

KILN_KNOB(kFuseScale, {"fusion.scale",
                       {"on", "off"},
                       "on",
                       "Apply a constant scalar Mul/Div of a matrix-product operand to the product's result "
                       "instead (it then joins the product's epilogue; attention's 1/sqrt(d) on Q)",
                       knobs::Tier::Mixed,
                       "passes/CanonicalizeLinear.cpp"});
KILN_KNOB(kFuseTranspose, {"fusion.transpose",
                           {"on", "off"},
                           "on",
                           "Read transposed matrix-product operands in place instead of copying them (an fp32 "
                           "batched operand only where cuBLASLt can still take its batch strides)",
                           knobs::Tier::Mixed,
                           "passes/CanonicalizeLinear.cpp"});

KILN_KNOB(kGemmSplit, {"gemm.split",
                       {"auto", "on", "off"},
                       "auto",
                       "Compute column slices of a product with a constant B (a packed QKV projection) as one "
                       "product per slice instead of slicing copies out of one result; auto: for a product that "
                       "stays fp32 (half attention reads the packed result in place) where the products "
                       "below the slices can then read them in place but not the packed result",
                       knobs::Tier::Mixed,
                       "passes/CanonicalizeLinear.cpp"});
KILN_KNOB(kGemmPad, {"gemm.pad",
                     {"on", "off"},
                     "on",
                     "Pad the columns of a large matrix product with a constant B (at least 2^20 result "
                     "elements) to a multiple of 8, then slice the result: rows of an odd length (GPT-2's "
                     "50257-word head) keep cuBLASLt off its fast kernels",
                     knobs::Tier::Mixed,
                     "passes/CanonicalizeLinear.cpp"});

namespace {

using namespace mlir;

std::vector<int64_t> identityPerm(size_t n) {
  std::vector<int64_t> p(n);
  for (size_t k = 0; k < n; ++k) p[k] = static_cast<int64_t>(k);
  return p;
}

std::vector<int64_t> permAttr(Operation *op, StringRef name, size_t rank) {
  std::vector<int64_t> p = intsAttr(op, name);
  return p.empty() ? identityPerm(rank) : p;
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
  Operation *mm = createInferred<TransposedMatMulOp>(b, loc, {g.getA(), g.getB()}, attrs, &err);
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
    Operation *mul = createInferred<MulOp>(b, loc, {y, scalar(alpha)}, {}, &err);
    if (!mul) return g.emitError(err);
    y = mul->getResult(0);
  }
  if (!isa<NoneType>(g.getC().getType()) && beta != 0.0) {
    Value c = g.getC();
    if (beta != 1.0) {
      Operation *mul = createInferred<MulOp>(b, loc, {c, scalar(beta)}, {}, &err);
      if (!mul) return g.emitError(err);
      c = mul->getResult(0);
    }
    Operation *add = createInferred<AddOp>(b, loc, {y, c}, {}, &err);
    if (!add) return g.emitError(err);
    y = add->getResult(0);
  }
  if (y.getType() != g.getResult().getType()) return g.emitError("internal: lowering Gemm changed its result type");
  g.getResult().replaceAllUsesWith(y);
  g->erase();
  return success();
}

// A product whose operand k is a single-use Transpose reads the transpose's input instead.
// Except for a batched product that stays fp32 (`fp32`: the route's precision for it) when the
// fold would leave it batch strides cuBLASLt cannot take: it would fall back to kiln's SIMT
// kernel, several times slower than the copy plus cuBLASLt (gemm.tactic=kiln keeps the copy
// too). With `pointers` (gemm.batch_pointers) cuBLASLt takes any batch strides of operands
// that are not the engine's I/O (BERT's attention products).
bool foldOperandTranspose(Operation *mm, unsigned k, OpBuilder &b, bool fp32, bool pointers) {
  auto t = mm->getOperand(k).getDefiningOp<TransposeOp>();
  if (!t || !t->hasOneUse()) return false;
  size_t rank = rankOf(t.getX());
  if (rank < 2) return false;
  std::vector<int64_t> p = permAttr(t, "perm", rank);
  if (p.size() != rank) return false;
  std::vector<int64_t> q =
      isa<TransposedMatMulOp>(mm) ? permAttr(mm, k == 0 ? "perm_a" : "perm_b", rank) : identityPerm(rank);
  std::vector<int64_t> r(rank);
  for (size_t i = 0; i < rank; ++i) r[i] = p[q[i]];
  auto xType = cast<RankedTensorType>(t.getX().getType());
  std::vector<int64_t> shape = xType.getShape().vec();
  if (fp32 && rank > 2 && xType.getElementType().isF32() &&
      !productReadable(StridedView{t.getX(), 0, shape, target::contiguousStrides(shape), false}, r, 4,
                       pointers && !isEngineIo(t.getX()) && !isEngineIo(mm->getResult(0))))
    return false;
  if (isa<MatMulOp>(mm)) {
    // MatMul with rank >= 2 operands → TransposedMatMul with the permutation.
    if (rankOf(mm->getOperand(0)) < 2 || rankOf(mm->getOperand(1)) < 2) return false;
    b.setInsertionPoint(mm);
    SmallVector<NamedAttribute> attrs = {b.getNamedAttr(k == 0 ? "perm_a" : "perm_b", b.getDenseI64ArrayAttr(r))};
    SmallVector<Value> operands = {mm->getOperand(0), mm->getOperand(1)};
    operands[k] = t.getX();
    std::string err;
    Operation *n = createInferred<TransposedMatMulOp>(b, mm->getLoc(), operands, attrs, &err);
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

// Op(Reshape(chain(A·W)), x) for an Add/Sub/Mul/Div Op, where the reshape keeps the last axis
// (it regroups rows) and x is of the reshaped shape or varies along the last axis only: Op moves
// above the reshape (x given the product's shape: a view), so it joins the product's epilogue.
// torch.export writes a Linear of a 3-D input as Gemm of a 2-D view, reshaped back, and GPT-2's
// residual Add comes after that reshape.
bool sinkResultReshape(Operation *mm, OpBuilder &b) {
  auto binary = [](Operation *u) { return isa<AddOp, SubOp, MulOp, DivOp>(u); };
  Value v = mm->getResult(0);
  while (v.hasOneUse() && binary(*v.user_begin()) && (*v.user_begin())->getResult(0).getType() == v.getType())
    v = (*v.user_begin())->getResult(0);
  auto r = v.hasOneUse() ? dyn_cast<ReshapeOp>(*v.user_begin()) : ReshapeOp();
  if (!r || !r->getResult(0).hasOneUse()) return false;
  Value rv = r->getResult(0);
  std::vector<int64_t> from = shapeOf(v), to = shapeOf(rv);
  Operation *e = *rv.user_begin();
  if (from.empty() || to.empty() || from.back() != to.back() || !binary(e) ||
      e->getResult(0).getType() != rv.getType() || e->getOperand(0) == e->getOperand(1))
    return false;
  unsigned k = e->getOperand(0) == rv ? 0 : 1;
  Value x = e->getOperand(1 - k);
  std::vector<int64_t> xs = shapeOf(x);
  bool whole = xs == to,
       lastAxisOnly = std::all_of(xs.begin(), xs.empty() ? xs.end() : xs.end() - 1, [](int64_t d) { return d == 1; });
  if (!whole && !lastAxisOnly) return false;
  Location loc = e->getLoc();
  b.setInsertionPoint(e);
  std::string err;
  SmallVector<Operation *> made;           // erased again if a step fails
  if (whole || xs.size() > from.size()) {  // (a [1, 1, C] bias would raise the result's rank)
    Operation *view = createReshape(b, loc, x, whole ? from : std::vector<int64_t>{xs.empty() ? 1 : xs.back()}, &err);
    if (!view) return false;
    made.push_back(view->getOperand(1).getDefiningOp()), made.push_back(view);
    x = view->getResult(0);
  }
  SmallVector<Value> operands = {v, v};
  operands[1 - k] = x;
  Operation *moved = createInferred(b, loc, e->getName().getStringRef(), operands, e->getAttrs(), &err);
  Operation *back = moved ? createReshape(b, loc, moved->getResult(0), to, &err) : nullptr;
  if (!back || back->getResult(0).getType() != e->getResult(0).getType()) {
    if (back) back->erase();
    if (moved) moved->erase();
    for (auto it = made.rbegin(); it != made.rend(); ++it) (*it)->erase();
    return false;
  }
  e->getResult(0).replaceAllUsesWith(back->getResult(0));
  e->erase();
  Operation *shape = r->getOperand(1).getDefiningOp();
  r->erase();
  if (shape && shape->use_empty()) shape->erase();
  return true;
}

// Transpose(Reshape?(chain(A·W))) with a 2-D W, where the transpose keeps the last axis, the
// reshape only regroups rows, and each op of the chain is an Add/Sub/Mul/Div whose other operand
// varies along the last axis only (a bias, a scale): every row of the result depends on the same
// row of A alone, so the row permutation moves onto A, where it folds into perm_a. torch's
// sequence-first attention output projection then writes its result batch-first, and the
// residual Add after the transpose can join the product's epilogue.
bool hoistResultTranspose(Operation *mm, OpBuilder &b) {
  Value a = mm->getOperand(0), w = mm->getOperand(1);
  if (rankOf(w) != 2 || rankOf(a) < 2 || !intsAttr(mm, "perm_a").empty()) return false;
  SmallVector<Operation *> chain;
  Operation *reshape = nullptr;
  TransposeOp t;
  for (Value v = mm->getResult(0); !t && v.hasOneUse();) {
    Operation *u = *v.user_begin();
    if (isa<AddOp, SubOp, MulOp, DivOp>(u) && !reshape) {
      Value other = u->getOperand(0) == v ? u->getOperand(1) : u->getOperand(0);
      std::vector<int64_t> os = shapeOf(other);
      bool lastAxisOnly =
          other != v && u->getResult(0).getType() == v.getType() &&
          std::all_of(os.begin(), os.empty() ? os.end() : os.end() - 1, [](int64_t d) { return d == 1; });
      if (!lastAxisOnly || os.size() > 1) return false;  // ([1, N] would keep a rank the reshape drops)
      chain.push_back(u);
    } else if (isa<ReshapeOp>(u) && !reshape && rankOf(u->getResult(0)) > 0 &&
               shapeOf(u->getResult(0)).back() == shapeOf(v).back()) {
      reshape = u;
    } else if (!(t = dyn_cast<TransposeOp>(u))) {
      return false;
    }
    v = u->getResult(0);
  }
  if (!t) return false;
  Perm p = permOf(t);
  if (isIdentity(p) || p.back() != int64_t(p.size()) - 1) return false;
  // A regrouped like the transpose's input (its K in place of N), then permuted the same way.
  std::vector<int64_t> rows = shapeOf(t.getX());
  rows.back() = shapeOf(a).back();
  Location loc = t.getLoc();
  b.setInsertionPoint(t);
  std::string err;
  SmallVector<Operation *> made;  // erased again if the rewrite fails
  auto keep = [&](Operation *op) {
    if (op) made.push_back(op);
    return op ? op->getResult(0) : Value();
  };
  Operation *reshaped = createReshape(b, loc, a, rows, &err);
  if (reshaped) keep(reshaped->getOperand(1).getDefiningOp());
  Value ra = keep(reshaped);
  Value ta = ra ? createTranspose(b, loc, ra, p) : Value();
  ta = keep(ta ? ta.getDefiningOp() : nullptr);
  Value y =
      ta ? keep(createInferred(b, mm->getLoc(), mm->getName().getStringRef(), {ta, w}, mm->getAttrs(), &err)) : Value();
  Value old = mm->getResult(0);
  for (Operation *op : chain) {
    if (!y) break;
    SmallVector<Value> operands(op->getOperands());
    std::replace(operands.begin(), operands.end(), old, y);
    y = keep(createInferred(b, op->getLoc(), op->getName().getStringRef(), operands, op->getAttrs(), &err));
    old = op->getResult(0);
  }
  if (!y || y.getType() != t.getResult().getType()) {
    for (auto it = made.rbegin(); it != made.rend(); ++it) (*it)->erase();
    return false;
  }
  t.getResult().replaceAllUsesWith(y);
  t->erase();
  if (reshape) reshape->erase();
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) (*it)->erase();
  mm->erase();
  return true;
}

// A product whose operand k is a single-use x·c, c·x or x/c with a one-element constant c reads x
// and scales its result instead: (x·c)·B = (x·B)·c. The product's fp32 sums then carry the
// scale (as the epilogue or cuBLASLt's alpha), and a transpose under the scale can fold too.
bool foldOperandScale(Operation *mm, unsigned k, OpBuilder &b) {
  Operation *s = mm->getOperand(k).getDefiningOp();
  if (!s || !s->hasOneUse() || !isa<MulOp, DivOp>(s)) return false;
  auto scalar = [](Value v) {
    auto c = v.getDefiningOp<ConstantOp>();
    return c && cast<RankedTensorType>(c.getType()).getNumElements() == 1;
  };
  unsigned xi = isa<MulOp>(s) && scalar(s->getOperand(0)) ? 1 : 0;
  Value x = s->getOperand(xi), c = s->getOperand(1 - xi);
  if (!scalar(c) || x.getType() != s->getResult(0).getType()) return false;
  b.setInsertionPointAfter(mm);
  std::string err;
  Operation *scaled =
      createInferred(b, mm->getLoc(), isa<MulOp>(s) ? MulOp::getOperationName() : DivOp::getOperationName(),
                     {mm->getResult(0), c}, {}, &err);
  if (!scaled || scaled->getResult(0).getType() != mm->getResult(0).getType()) {
    if (scaled) scaled->erase();
    return false;
  }
  mm->getResult(0).replaceAllUsesExcept(scaled->getResult(0), scaled);
  mm->setOperand(k, x);
  s->erase();
  return true;
}

// The constant 2-D B of product `mm` (null if B is not one), and whether it is stored [N, K]
// (read through perm_b = [1, 0]) rather than [K, N].
std::optional<ops::Tensor> constantB(Operation *mm, bool &stored, int64_t limit) {
  auto bt = constantValue(mm->getOperand(1), limit);
  if (!bt || bt->rank() != 2) return std::nullopt;
  stored = isa<TransposedMatMulOp>(mm) && permAttr(mm, "perm_b", 2) == std::vector<int64_t>{1, 0};
  return bt;
}

// Columns [s, e) of a constant B (stored [K, N], or [N, K] when `stored`); columns past B's N
// are zero.
ops::Tensor columnsOf(const ops::Tensor &bt, bool stored, int64_t s, int64_t e) {
  int64_t K = bt.shape[stored ? 1 : 0], N = bt.shape[stored ? 0 : 1], n = e - s;
  ops::Tensor r(bt.dtype, stored ? ops::Shape{n, K} : ops::Shape{K, n});  // (zero-filled)
  for (int64_t k = 0; k < K; ++k)
    for (int64_t j = 0; j < n && s + j < N; ++j)
      r.f[stored ? j * K + k : k * n + j] = bt.f[stored ? (s + j) * K + k : k * N + s + j];
  return r;
}

// Whether `view` (of a value shaped `rootShape`, row-major) reads a contiguous column range [s, e)
// of every row, its other dims those of the root in order (size-1 dims aside): the same elements,
// in the same order, as a product computed with only those columns.
bool columnRange(const StridedView &view, const std::vector<int64_t> &rootShape, int64_t &s, int64_t &e) {
  int64_t N = rootShape.back();
  s = view.offset, e = -1;
  std::vector<std::pair<int64_t, int64_t>> got, want;  // (size, stride) of the non-unit dims
  for (size_t k = 0; k < view.shape.size(); ++k)
    if (view.shape[k] != 1) got.push_back({view.shape[k], view.strides[k]});
  int64_t stride = N;
  for (size_t k = rootShape.size() - 1; k-- > 0;) stride *= rootShape[k];
  for (size_t k = 0; k + 1 < rootShape.size(); ++k) {
    stride /= rootShape[k];
    if (rootShape[k] != 1) want.push_back({rootShape[k], stride});
  }
  if (got.size() != want.size() + 1 || !std::equal(want.begin(), want.end(), got.begin())) return false;
  e = s + got.back().first;
  return got.back().second == 1 && s >= 0 && e <= N && e - s < N;
}

// Whether a matrix product below column slice [s, e) of `packed` (through layout ops: the heads
// of Q, K or V) could read its operand in place from the slice computed alone but not from the
// packed result. ViT's sequence-first [S, B, 3·H·D] projection: head-major, (B, H) walk the packed
// rows with strides 3·H·D and D, but H·D and D once Q is its own [S, B, H·D]. (GPT-2's [1, S,
// 3·H·D] heads are readable either way: splitting would only add launches.)
bool splitHelps(Value slice, Value packed, int64_t s, int64_t e) {
  std::vector<Value> work = {slice};
  while (!work.empty()) {
    Value v = work.back();
    work.pop_back();
    for (OpOperand &use : v.getUses()) {
      Operation *u = use.getOwner();
      if (isLayoutOp(u) && use.getOperandNumber() == 0) {
        for (Value r : u->getResults()) work.push_back(r);
        continue;
      }
      if (!isa<MatMulOp, TransposedMatMulOp>(u) || use.getOperandNumber() > 1) continue;
      std::vector<int64_t> perm = intsAttr(u, use.getOperandNumber() == 0 ? "perm_a" : "perm_b");
      int64_t bytes = cast<RankedTensorType>(v.getType()).getElementTypeBitWidth() / 8;
      std::optional<StridedView> before = stridedViewOf(v), after = stridedViewOf(v, e - s);
      if (!after || after->root != packed) continue;
      after->offset -= s;  // (the slice's first column is its memory's first element)
      // (judged as strided batches: pointer-array ones read the packed heads too, but no faster)
      if (!(before && productReadable(*before, perm, bytes, false)) && productReadable(*after, perm, bytes, false))
        return true;
    }
  }
  return false;
}

// Column slices of one product with a constant B (a packed QKV projection, optionally plus a
// constant bias [N]) → one product per slice with B's columns (and the bias's elements) sliced
// at build time: each result is then contiguous, so no copy makes it, and the attention products
// can read its heads in place. A slice is any chain of layout ops (Slice, Split, Gather of one
// index, with reshapes and transposes between: torch 2.11's packed nn.MultiheadAttention
// projection, Reshape → Transpose → Gather) whose result reads whole columns of each row in
// order; every user of the product (or of its bias Add) must lead only to such slices.
bool splitColumnSlices(Operation *mm, OpBuilder &b, bool onlyWhereItHelps) {
  bool stored = false;
  auto bt = constantB(mm, stored, int64_t(1) << 26);
  if (!bt || mm->getResult(0).use_empty()) return false;
  Value top = mm->getResult(0);
  std::optional<ops::Tensor> bias;
  std::vector<int64_t> rootShape = shapeOf(top);
  int64_t N = rootShape.back();
  if (top.hasOneUse() && isa<AddOp>(*top.user_begin())) {
    Operation *add = *top.user_begin();
    Value other = add->getOperand(0) == top ? add->getOperand(1) : add->getOperand(0);
    bias = constantValue(other);
    if (!bias || bias->shape != ops::Shape{N} || add->getResult(0).getType() != top.getType()) return false;
    top = add->getResult(0);
  }
  struct Part {
    Value slice;
    int64_t s, e;
  };
  std::vector<Part> parts;
  std::vector<Operation *> layoutOps;  // every op between `top` and the parts, producers first
  std::vector<Value> work = {top};
  while (!work.empty()) {
    Value v = work.back();
    work.pop_back();
    for (Operation *u : v.getUsers()) {
      if (!isLayoutOp(u) || u->getOperand(0) != v) return false;
      layoutOps.push_back(u);
      for (Value r : u->getResults()) {
        std::optional<StridedView> view = stridedViewOf(r);
        int64_t s = 0, e = 0;
        if (view && view->root == top && columnRange(*view, rootShape, s, e))
          parts.push_back({r, s, e});
        else
          work.push_back(r);
      }
    }
  }
  if (parts.empty() || (onlyWhereItHelps && std::none_of(parts.begin(), parts.end(), [&](const Part &p) {
                          return splitHelps(p.slice, top, p.s, p.e);
                        })))
    return false;
  std::string err;
  SmallVector<Operation *> made;  // erased again if a part fails (all parts have the same form)
  SmallVector<std::pair<Value, Value>> replace;
  auto fail = [&] {
    for (auto it = made.rbegin(); it != made.rend(); ++it) (*it)->erase();
    return false;
  };
  for (const Part &p : parts) {
    b.setInsertionPointAfterValue(p.slice);
    Location loc = p.slice.getLoc();
    Operation *n = createInferred(b, mm->getLoc(), mm->getName().getStringRef(),
                                  {mm->getOperand(0), createConstant(b, loc, columnsOf(*bt, stored, p.s, p.e))},
                                  mm->getAttrs(), &err);
    if (!n) return fail();
    made.push_back(n);
    Value y = n->getResult(0);
    if (bias) {
      ops::Tensor c(bias->dtype, {p.e - p.s});
      for (int64_t j = p.s; j < p.e; ++j) c.f[j - p.s] = bias->f[j];
      Operation *add = createInferred<AddOp>(b, loc, {y, createConstant(b, loc, c)}, {}, &err);
      if (!add) return fail();
      made.push_back(add);
      y = add->getResult(0);
    }
    if (y.getType() != p.slice.getType()) {  // the same elements in the same order: a reshape
      Operation *r = createReshape(b, loc, y, shapeOf(p.slice), &err);
      if (!r) return fail();
      made.push_back(r->getOperand(1).getDefiningOp());
      made.push_back(r);
      y = r->getResult(0);
    }
    if (y.getType() != p.slice.getType()) return fail();
    replace.push_back({p.slice, y});
  }
  for (auto &[old, y] : replace) old.replaceAllUsesWith(y);
  for (auto it = layoutOps.rbegin(); it != layoutOps.rend(); ++it)
    if ((*it)->use_empty()) (*it)->erase();
  if (top.use_empty() && top != mm->getResult(0)) top.getDefiningOp()->erase();
  if (mm->use_empty()) mm->erase();
  return true;
}

// Y = A·B with a constant 2-D B of N columns, N not a multiple of 8, and at least 2^20 result
// elements → Slice(A·B', columns [0, N)) with B' = B and zero columns up to a multiple of 8: the
// product's rows are then 16-byte aligned, which cuBLASLt's fast kernels need; the slice costs
// one copy of the result.
bool padColumns(Operation *mm, OpBuilder &b) {
  bool stored = false;
  auto bt = constantB(mm, stored, int64_t(1) << 28);
  auto yType = cast<RankedTensorType>(mm->getResult(0).getType());
  if (!bt || yType.getRank() < 2) return false;
  int64_t N = yType.getShape().back(), N8 = (N + 7) / 8 * 8;
  if (N % 8 == 0 || yType.getNumElements() < (int64_t(1) << 20) || bt->shape[stored ? 0 : 1] != N) return false;
  Location loc = mm->getLoc();
  b.setInsertionPoint(mm);
  std::string err;
  Operation *wide =
      createInferred(b, loc, mm->getName().getStringRef(),
                     {mm->getOperand(0), createConstant(b, loc, columnsOf(*bt, stored, 0, N8))}, mm->getAttrs(), &err);
  if (!wide) return false;
  auto i64 = [&](int64_t v) {
    ops::Tensor t(ops::DType::I64, {1});
    t.setInt(0, v);
    return createConstant(b, loc, t);
  };
  Value none = b.create<NoneOp>(loc).getResult();
  Operation *slice = createInferred<SliceOp>(b, loc, {wide->getResult(0), i64(0), i64(N), i64(-1), none}, {}, &err);
  if (!slice || slice->getResult(0).getType() != mm->getResult(0).getType()) {
    if (slice) slice->erase();
    wide->erase();
    return false;
  }
  mm->getResult(0).replaceAllUsesWith(slice->getResult(0));
  mm->erase();
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
    bool scales = r.get(kFuseScale) == "on", transposes = r.get(kFuseTranspose) == "on";
    const knobs::KnobDef &precision = *knobs::findKnob("precision");  // (the Precision pass's, after this one)
    auto fp32 = [&](Operation *mm) { return r.get(precision, nodeName(mm)) == "fp32"; };
    const bool pointers = batchPointers(r);
    auto products = [&] {
      SmallVector<Operation *> list;
      getOperation().walk([&](Operation *op) {
        if (isa<MatMulOp, TransposedMatMulOp>(op)) list.push_back(op);
      });
      return list;
    };
    // Fold repeatedly: a MatMul becomes a TransposedMatMul, whose other operand may fold too,
    // chains of transposes compose, and a scale moved off an operand uncovers its transpose.
    for (bool changed = scales || transposes; changed;) {
      changed = false;
      for (Operation *mm : products()) {
        if (transposes && hoistResultTranspose(mm, b)) {
          changed = true;
          continue;  // mm was replaced
        }
        for (unsigned k = 0; k < 2; ++k)
          if ((scales && foldOperandScale(mm, k, b)) ||
              (transposes && foldOperandTranspose(mm, k, b, fp32(mm), pointers))) {
            changed = true;
            break;  // mm may have been replaced
          }
      }
    }
    if (r.get(*knobs::findKnob("fusion.epilogue")) == "on")  // (Fusion.cpp's knob: what the move is for)
      for (Operation *mm : products())
        while (sinkResultReshape(mm, b)) {}
    for (Operation *mm : products()) {
      const std::string &split = r.get(kGemmSplit);
      if (split == "on" || (split == "auto" && fp32(mm))) splitColumnSlices(mm, b, split == "auto");
    }
    if (r.get(kGemmPad) == "on")
      for (Operation *mm : products()) padColumns(mm, b);
  }
};

}  // namespace
}  // namespace kiln

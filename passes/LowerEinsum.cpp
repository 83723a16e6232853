// Einsum as the ops kiln has kernels for (see Passes.td).
#include "compiler/ir/Builders.h"
#include "compiler/ir/KilnDialect.h"
#include "compiler/ops/EinsumEquation.h"
#include "passes/PassUtil.h"
#include "passes/Passes.h"
#include "passes/Transposes.h"

#include <algorithm>

namespace kiln {
#define GEN_PASS_DEF_LOWEREINSUM
#include "passes/Passes.h.inc"

namespace {

using namespace mlir;

bool has(const std::vector<int> &labels, int l) { return std::find(labels.begin(), labels.end(), l) != labels.end(); }

// A value with a label per dim (a null value: a step failed).
struct Labelled {
  Value v;
  std::vector<int> labels;
};

class Lowering {
 public:
  Lowering(OpBuilder &b, Location loc) : b_(b), loc_(loc) {}

  // Ops made so far, in order; on failure the caller erases them.
  SmallVector<Operation *> made;

  Value constInts(const std::vector<int64_t> &v) {
    return keep(
        createConstant(b_, loc_, ops::Tensor::fromInts(ops::DType::I64, {int64_t(v.size())}, v)).getDefiningOp());
  }
  Value reshape(Value x, const std::vector<int64_t> &shape) {
    if (!x || shapeOf(x) == shape) return x;
    return keep(createInferred<ReshapeOp>(b_, loc_, {x, constInts(shape)}, {}, &err_));
  }
  // x's labels reordered to `order` (a permutation of them).
  Labelled transpose(const Labelled &x, const std::vector<int> &order) {
    Perm p;
    for (int l : order) p.push_back(std::find(x.labels.begin(), x.labels.end(), l) - x.labels.begin());
    if (!x.v || isIdentity(p)) return {x.v, order};
    Value t = createTranspose(b_, loc_, x.v, p);
    return {keep(t ? t.getDefiningOp() : nullptr), order};
  }
  // Sums the dims whose labels `keepLabel` rejects.
  template <typename F> Labelled sumOut(const Labelled &x, F keepLabel) {
    std::vector<int64_t> axes;
    std::vector<int> rest;
    for (size_t d = 0; d < x.labels.size(); ++d)
      if (keepLabel(x.labels[d]))
        rest.push_back(x.labels[d]);
      else
        axes.push_back(int64_t(d));
    if (!x.v || axes.empty()) return x;
    Value s = keep(createInferred<ReduceSumOp>(
        b_, loc_, {x.v},
        {b_.getNamedAttr("axes", b_.getDenseI64ArrayAttr(axes)), b_.getNamedAttr("keepdims", b_.getI64IntegerAttr(0))},
        &err_));
    return {s, rest};
  }
  // The diagonal of each label x has twice: both dims moved last (by position: transpose()
  // finds a label's first dim only), flattened, every (n+1)-th element sliced out.
  Labelled diagonals(Labelled x) {
    for (size_t d = 0; x.v && d < x.labels.size(); ++d) {
      size_t again = std::find(x.labels.begin() + d + 1, x.labels.end(), x.labels[d]) - x.labels.begin();
      if (again == x.labels.size()) continue;
      Perm p;
      std::vector<int> labels;
      for (size_t e = 0; e < x.labels.size(); ++e)
        if (e != d && e != again) p.push_back(int64_t(e)), labels.push_back(x.labels[e]);
      p.push_back(int64_t(d)), p.push_back(int64_t(again)), labels.push_back(x.labels[d]);
      Value t = x.v;
      if (!isIdentity(p)) {
        t = createTranspose(b_, loc_, x.v, p);
        if (!t) return {Value(), {}};
        keep(t.getDefiningOp());
      }
      std::vector<int64_t> shape = shapeOf(t);
      int64_t n = shape.back();
      shape.pop_back();
      shape.back() = n * n;
      Value flat = reshape(t, shape);
      Value sl = flat ? keep(createInferred<SliceOp>(
                            b_, loc_, {flat, constInts({0}), constInts({n * n}), constInts({-1}), constInts({n + 1})},
                            {}, &err_))
                      : Value();
      x = {sl, labels};
      d = size_t(-1);  // start over: the dims moved
    }
    return x;
  }
  // a·b over their shared labels: those `needed` later stay (batch dims), the rest are summed.
  Labelled contract(const Labelled &a, const Labelled &b, const std::vector<int> &needed) {
    std::vector<int> batch, left, right, inner;
    for (int l : a.labels) (has(b.labels, l) ? (has(needed, l) ? batch : inner) : left).push_back(l);
    for (int l : b.labels)
      if (!has(a.labels, l)) right.push_back(l);
    auto concat = [](std::vector<int> x, const std::vector<int> &y, const std::vector<int> &z) {
      x.insert(x.end(), y.begin(), y.end());
      x.insert(x.end(), z.begin(), z.end());
      return x;
    };
    auto sizes = [&](const Labelled &x, const std::vector<int> &ls) {
      std::vector<int64_t> s, shape = shapeOf(x.v);
      for (int l : ls) s.push_back(shape[size_t(std::find(x.labels.begin(), x.labels.end(), l) - x.labels.begin())]);
      return s;
    };
    auto product = [](const std::vector<int64_t> &s) {
      int64_t p = 1;
      for (int64_t n : s) p *= n;
      return p;
    };
    Labelled ta = transpose(a, concat(batch, left, inner)), tb = transpose(b, concat(batch, inner, right));
    if (!ta.v || !tb.v) return {Value(), {}};
    std::vector<int64_t> as = sizes(ta, batch), bs = sizes(tb, batch), ls = sizes(ta, left), is = sizes(ta, inner),
                         rs = sizes(tb, right);
    // Ellipsis dims may broadcast (1 against n): MatMul broadcasts batch dims the same way. (They
    // are always kept, never summed, so summed dims match: the verifier checked the labels.)
    if (is != sizes(tb, inner)) return {Value(), {}};
    std::vector<int64_t> outBatch = as;
    for (size_t d = 0; d < as.size(); ++d) {
      if (as[d] != bs[d] && as[d] != 1 && bs[d] != 1) return {Value(), {}};
      outBatch[d] = std::max(as[d], bs[d]);
    }
    // [batch..., rows, inner] × [batch..., inner, cols]: the batch dims stay as they are, so a
    // transpose that only swaps the last two dims (K's head dim in attention scores) folds into
    // the product, and the attention pattern stays visible to kiln-fuse-attention.
    auto dims = [](std::vector<int64_t> d, int64_t rows, int64_t cols) {
      d.push_back(rows), d.push_back(cols);
      return d;
    };
    Value ma = reshape(ta.v, dims(as, product(ls), product(is)));
    Value mb = reshape(tb.v, dims(bs, product(is), product(rs)));
    Value mm = ma && mb ? keep(createInferred<MatMulOp>(b_, loc_, {ma, mb}, {}, &err_)) : Value();
    std::vector<int64_t> shape = outBatch;
    shape.insert(shape.end(), ls.begin(), ls.end());
    shape.insert(shape.end(), rs.begin(), rs.end());
    return {reshape(mm, shape), concat(batch, left, right)};
  }

 private:
  Value keep(Operation *op) {
    if (!op) return Value();
    made.push_back(op);
    return op->getResult(0);
  }
  OpBuilder &b_;
  Location loc_;
  std::string err_;
};

bool lower(EinsumOp op, OpBuilder &b) {
  std::vector<int64_t> ranks;
  for (Value v : op->getOperands()) ranks.push_back(int64_t(shapeOf(v).size()));
  std::optional<ops::EinsumEquation> parsed = ops::tryParseEinsum(op.getEquation().str(), ranks, nullptr);
  if (!parsed) return false;  // (the verifier reports it)
  const ops::EinsumEquation &eq = *parsed;
  b.setInsertionPoint(op);
  Lowering lw(b, op.getLoc());
  // Labels needed after operand k: the output's and those of operands after k.
  auto neededAfter = [&](size_t k) {
    std::vector<int> n = eq.output;
    for (size_t j = k + 1; j < eq.inputs.size(); ++j) n.insert(n.end(), eq.inputs[j].begin(), eq.inputs[j].end());
    return n;
  };
  Labelled cur;
  for (size_t k = 0; k < eq.inputs.size(); ++k) {
    Labelled x = lw.diagonals({op->getOperand(unsigned(k)), eq.inputs[k]});
    // Labels only this operand has and nothing after needs: summed first.
    std::vector<int> needed = neededAfter(k);
    if (k > 0) needed.insert(needed.end(), cur.labels.begin(), cur.labels.end());
    x = lw.sumOut(x, [&](int l) { return has(needed, l); });
    if (k == 0) {
      cur = x;
      continue;
    }
    std::vector<int> later = neededAfter(k);
    cur = lw.sumOut(cur, [&](int l) { return has(later, l) || has(x.labels, l); });
    cur = lw.contract(cur, x, later);
    if (!cur.v) break;
  }
  if (cur.v) cur = lw.sumOut(cur, [&](int l) { return has(eq.output, l); });
  if (cur.v && cur.labels.size() == eq.output.size()) cur = lw.transpose(cur, eq.output);
  Value y = cur.v && cur.labels.size() == eq.output.size() ? cur.v : Value();
  if (!y || y.getType() != op.getResult().getType()) {
    for (auto it = lw.made.rbegin(); it != lw.made.rend(); ++it) (*it)->erase();
    return false;
  }
  op.getResult().replaceAllUsesWith(y);
  op->erase();
  return true;
}

struct LowerEinsumPass : impl::LowerEinsumBase<LowerEinsumPass> {
  void runOnOperation() override {
    OpBuilder b(&getContext());
    SmallVector<EinsumOp> ops;
    getOperation().walk([&](EinsumOp op) { ops.push_back(op); });
    for (EinsumOp op : ops) lower(op, b);
  }
};

}  // namespace
}  // namespace kiln

// LSTM, GRU and RNN layers as their input projection and their recurrence (see Passes.td).
#include "compiler/ir/Builders.h"
#include "compiler/ir/KilnDialect.h"
#include "compiler/ir/TensorConversion.h"
#include "compiler/ops/Recurrent.h"
#include "passes/PassUtil.h"
#include "passes/Passes.h"
#include "passes/Transposes.h"

#include <limits>

namespace kiln {
#define GEN_PASS_DEF_SPLITRECURRENT
#include "passes/Passes.h.inc"

namespace {

using namespace mlir;

class Splitter {
 public:
  Splitter(OpBuilder &b, Location loc) : b_(b), loc_(loc) {}

  SmallVector<Operation *> made;
  std::string err;

  Value keep(Operation *op) {
    if (!op) return {};
    made.push_back(op);
    return op->getResult(0);
  }
  Value keep(Value v) { return v ? keep(v.getDefiningOp()) : v; }
  Value constant(const ops::Tensor &t) { return keep(createConstant(b_, loc_, t)); }
  Value ints(const std::vector<int64_t> &v) {
    return constant(ops::Tensor::fromInts(ops::DType::I64, {int64_t(v.size())}, v));
  }
  Value reshape(Value x, const std::vector<int64_t> &shape) {
    if (!x || shapeOf(x) == shape) return x;
    return keep(createInferred<ReshapeOp>(b_, loc_, {x, ints(shape)}, {}, &err));
  }
  Value none() {
    if (!none_) none_ = keep(b_.create<NoneOp>(loc_).getOperation());
    return none_;
  }
  Value slice(Value x, int64_t axis, int64_t start, int64_t end) {
    if (!x) return x;
    return keep(createInferred<SliceOp>(b_, loc_, {x, ints({start}), ints({end}), ints({axis}), none()}, {}, &err));
  }
  template <class OpT> Value binary(Value a, Value c) {
    if (!a || !c) return {};
    return keep(createInferred<OpT>(b_, loc_, {a, c}, {}, &err));
  }
  Value transpose(Value x, const Perm &p) { return x ? keep(createTranspose(b_, loc_, x, p)) : x; }

 private:
  OpBuilder &b_;
  Location loc_;
  Value none_;
};

// A constant operand's value (of any size), or nullopt.
std::optional<ops::Tensor> constantOf(Value v) { return constantValue(v, std::numeric_limits<int64_t>::max()); }

// DynamicQuantizeLSTM's constant int8/uint8 weights [D, K, 4H] dequantized as float32: W as the
// projection's [K, D·4H] operand, R as [D, 4H, K]. Per-direction or per-column parameters.
ops::Tensor dequantized(const ops::Tensor &q, const ops::Tensor &scale, const ops::Tensor &zp, bool asProjection) {
  const int64_t D = q.shape[0], K = q.shape[1], N = q.shape[2];
  ops::Tensor out(ops::DType::F32, asProjection ? ops::Shape{K, D * N} : ops::Shape{D, N, K});
  for (int64_t d = 0; d < D; ++d)
    for (int64_t k = 0; k < K; ++k)
      for (int64_t n = 0; n < N; ++n) {
        int64_t p = scale.rank() == 1 ? d : d * N + n;
        double v = (double(q.i[(d * K + k) * N + n]) - double(zp.getInt(p))) * double(float(scale.f[p]));
        out.set(asProjection ? k * D * N + d * N + n : (d * N + n) * K + k, v);
      }
  return out;
}

// Rewrites one layer; false (nothing changed) when it cannot (DynamicQuantizeLSTM with weights
// that are not constants).
bool split(Operation *op, OpBuilder &b) {
  const bool quant = isa<DynamicQuantizeLSTMOp>(op);
  ops::RnnCell cell = isa<GRUOp>(op) ? ops::RnnCell::Gru : isa<RNNOp>(op) ? ops::RnnCell::Rnn : ops::RnnCell::Lstm;
  ops::Attrs attrs = attrsFromOp(op);
  ops::RnnConfig cfg;
  try {
    cfg = ops::rnnConfig(onnxTypeOf(op), cell, attrs);
  } catch (const ops::OpError &e) {
    op->emitError(e.what());
    return false;
  }
  auto operand = [&](unsigned k) { return k < op->getNumOperands() ? op->getOperand(k) : Value(); };
  auto present = [&](unsigned k) {
    Value v = operand(k);
    return v && !isa<NoneType>(v.getType());
  };
  Value x = op->getOperand(0), w = op->getOperand(1), r = op->getOperand(2);
  if (!isa<RankedTensorType>(x.getType())) return false;
  const int64_t D = cfg.numDirections, G = ops::rnnGates(cell);
  const ops::DType dt = tensorTypeOf(x.getType()).dtype;

  b.setInsertionPoint(op);
  Splitter s(b, op->getLoc());
  Value wt, rr;
  int64_t H;
  if (quant) {
    auto wq = constantOf(w), rq = constantOf(r), ws = constantOf(op->getOperand(8)), wz = constantOf(op->getOperand(9)),
         rs = constantOf(op->getOperand(10)), rz = constantOf(op->getOperand(11));
    if (!wq || !rq || !ws || !wz || !rs || !rz) return false;
    H = rq->shape[1];
    wt = s.constant(dequantized(*wq, *ws, *wz, true));
    rr = s.constant(dequantized(*rq, *rs, *rz, false));
  } else {
    H = shapeOf(r)[2];
    const int64_t I = shapeOf(w)[2];
    wt = s.transpose(s.reshape(w, {D * G * H, I}), {1, 0});
    rr = r;
  }
  const int64_t GH = G * H;
  Value xp = s.binary<MatMulOp>(x, wt);
  Value rb;
  if (present(3)) {
    Value bias = op->getOperand(3);
    Value bw = s.slice(bias, 1, 0, GH), br = s.slice(bias, 1, GH, 2 * GH);
    Value folded = br;
    if (cell == ops::RnnCell::Gru) {
      // z and r take their recurrent bias with the projection's; h's stays inside r ⊙ (...).
      std::vector<double> zr(size_t(GH), 0.0), hh(size_t(GH), 0.0);
      for (int64_t n = 0; n < GH; ++n) (n < 2 * H ? zr : hh)[size_t(n)] = 1.0;
      folded = s.binary<MulOp>(br, s.constant(ops::Tensor::fromDoubles(dt, {GH}, zr)));
      rb = s.binary<MulOp>(br, s.constant(ops::Tensor::fromDoubles(dt, {GH}, hh)));
    }
    xp = s.binary<AddOp>(xp, s.reshape(s.binary<AddOp>(bw, folded), {D * GH}));
  }
  if (!xp || (present(3) && cell == ops::RnnCell::Gru && !rb)) {
    op->emitError("kiln-split-recurrent: " + s.err);
    for (auto it = s.made.rbegin(); it != s.made.rend(); ++it) (*it)->erase();
    return false;
  }
  Value none = s.none();
  const bool lstm = cell == ops::RnnCell::Lstm;
  SmallVector<Value> operands = {xp,
                                 rr,
                                 rb ? rb : none,
                                 present(4) ? operand(4) : none,
                                 present(5) ? operand(5) : none,
                                 lstm && present(6) ? operand(6) : none,
                                 lstm && present(7) ? operand(7) : none};
  SmallVector<NamedAttribute> newAttrs = {b.getNamedAttr("cell", b.getStringAttr(ops::rnnCellName(cell)))};
  for (NamedAttribute a : op->getAttrs())
    if (a.getName() != "cell") newAttrs.push_back(a);
  std::string err;
  Operation *rec = createInferred<RecurrenceOp>(b, op->getLoc(), operands, newAttrs, &err, op->getNumResults());
  if (!rec) {
    op->emitError("kiln-split-recurrent: " + err);
    for (auto it = s.made.rbegin(); it != s.made.rend(); ++it) (*it)->erase();
    return false;
  }
  for (unsigned k = 0; k < op->getNumResults(); ++k) op->getResult(k).replaceAllUsesWith(rec->getResult(k));
  op->erase();
  return true;
}

struct SplitRecurrentPass : impl::SplitRecurrentBase<SplitRecurrentPass> {
  void runOnOperation() override {
    OpBuilder b(&getContext());
    SmallVector<Operation *> layers;
    getOperation().walk([&](Operation *op) {
      if (isa<LSTMOp, GRUOp, RNNOp, DynamicQuantizeLSTMOp>(op)) layers.push_back(op);
    });
    for (Operation *op : layers) split(op, b);
  }
};

}  // namespace
}  // namespace kiln

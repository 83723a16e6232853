// Row operations (softmax, LayerNorm, Reduce* over contiguous axes as [outer, cols, inner]),
// reductions over other axes, and inference BatchNormalization as a per-channel affine map.
#include "codegen/lowering/Lowering.h"

#include "codegen/kernels/Copy.h"
#include "codegen/kernels/Elementwise.h"
#include "codegen/kernels/Reduction.h"

#include "llvm/ADT/TypeSwitch.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <numeric>

using namespace mlir;

namespace kiln::codegen {

namespace {

// The row kernel's operation for `op`; nullopt when `op` is none of the row ops.
std::optional<RowOp> rowOpOf(Operation *op) {
  return llvm::TypeSwitch<Operation *, std::optional<RowOp>>(op)
      .Case([](SoftmaxOp) { return RowOp::Softmax; })
      .Case([](LogSoftmaxOp) { return RowOp::LogSoftmax; })
      .Case([](LayerNormalizationOp) { return RowOp::LayerNorm; })
      .Case([](RMSNormalizationOp) { return RowOp::RmsNorm; })
      .Case([](ReduceSumOp) { return RowOp::Sum; })
      .Case([](ReduceMeanOp) { return RowOp::Mean; })
      .Case([](ReduceMaxOp) { return RowOp::Max; })
      .Case([](ReduceMinOp) { return RowOp::Min; })
      .Case([](ReduceProdOp) { return RowOp::Prod; })
      .Case([](ReduceSumSquareOp) { return RowOp::SumSquare; })
      .Case([](ReduceL1Op) { return RowOp::L1; })
      .Case([](ReduceL2Op) { return RowOp::L2; })
      .Case([](ReduceLogSumOp) { return RowOp::LogSum; })
      .Case([](ReduceLogSumExpOp) { return RowOp::LogSumExp; })
      .Default([](Operation *) { return std::nullopt; });
}

// A reduction's axes of a rank-r operand, normalized and sorted (all of them when none are given).
std::vector<int64_t> sortedAxes(std::vector<int64_t> axes, int64_t r) {
  if (axes.empty()) {
    axes.resize(size_t(r));
    std::iota(axes.begin(), axes.end(), 0);
  }
  for (auto &a : axes) a = ops::normalizeAxis(a, r);
  std::sort(axes.begin(), axes.end());
  return axes;
}

bool adjacent(const std::vector<int64_t> &sorted) {
  for (size_t k = 1; k < sorted.size(); ++k)
    if (sorted[k] != sorted[k - 1] + 1) return false;
  return true;
}

// The row kernel's [outer, cols, inner] view of `x` reduced over adjacent sorted `axes`.
void setRowView(RowReductionSpec &s, const Shape &x, const std::vector<int64_t> &axes) {
  s.outer = product(x, 0, axes.front()), s.cols = product(x, axes.front(), axes.back() + 1);
  s.inner = product(x, axes.back() + 1, int64_t(x.size()));
}

}  // namespace

bool Lowering::lowerReduction(Operation *op) {
  if (auto bn = dyn_cast<BatchNormalizationOp>(op)) return lowerBatchNorm(bn), true;
  if (auto mm = dyn_cast<ReduceMinMaxOp>(op)) {
    // One row kernel for both results: the reduced axes must be contiguous (what
    // kiln-split-reductions pairs).
    Shape x = shapeOf(mm.getLoIn());
    std::vector<int64_t> axes = sortedAxes(attrsFromOp(op).getInts("axes", {}), int64_t(x.size()));
    if (!adjacent(axes)) throw std::invalid_argument("ReduceMinMax over non-adjacent axes");
    RowReductionSpec s;
    s.op = RowOp::MinMax;
    s.type = elemTypeOf(mm.getLoIn());
    s.outType = elemTypeOf(mm.getLo());
    if (elemTypeOf(mm.getHi()) != s.outType) throw std::invalid_argument("ReduceMinMax's results differ in type");
    s.sameInput = mm.getLoIn() == mm.getHiIn();
    setRowView(s, x, axes);
    addLaunch(op, emitRowReduction(s), {mm.getLoIn(), mm.getHiIn(), mm.getLo(), mm.getHi()});
    return true;
  }
  std::optional<RowOp> rowOp = rowOpOf(op);
  if (!rowOp) return false;
  ops::Attrs attrs = attrsFromOp(op);
  Value out = op->getResult(0);
  auto operands = op->getOperands();
  {
    Shape x = shapeOf(operands[0]);
    int64_t r = static_cast<int64_t>(x.size());
    RowReductionSpec s;
    s.op = *rowOp;
    s.type = elemTypeOf(operands[0]);
    s.outType = elemTypeOf(out);
    if (op->getNumResults() > 1) s.statsType = elemTypeOf(op->getResult(1));
    const bool norm = *rowOp == RowOp::LayerNorm || *rowOp == RowOp::RmsNorm;
    // (RMSNormalization has no bias operand)
    const bool hasBias = *rowOp == RowOp::LayerNorm && !isa<NoneType>(operands[2].getType());
    if (norm && (elemTypeOf(operands[1]) != s.type || (hasBias && elemTypeOf(operands[2]) != s.type)))
      throw std::invalid_argument("the scale and bias must have X's type");
    if (*rowOp == RowOp::Softmax || *rowOp == RowOp::LogSoftmax) {
      int64_t axis = ops::normalizeAxis(attrs.getInt("axis", -1), r);
      if (attrs.getInt("coerce_2d", 0)) {
        s.outer = product(x, 0, axis), s.cols = product(x, axis, r), s.inner = 1;
      } else {
        s.outer = product(x, 0, axis), s.cols = x[axis], s.inner = product(x, axis + 1, r);
      }
      addLaunch(op, emitRowReduction(s), {operands[0], out});
      return true;
    }
    if (norm) {
      int64_t axis = ops::normalizeAxis(attrs.getInt("axis", -1), r);
      s.outer = product(x, 0, axis), s.cols = product(x, axis, r);
      s.epsilon = attrs.getFloat("epsilon", 1e-5);
      s.hasBias = hasBias;
      s.statsOutputs = op->getNumResults() > 1;
      if (op->getNumResults() == 2) throw std::invalid_argument("LayerNormalization with only the Mean output");
      if (shapeOf(operands[1]) != Shape(x.begin() + axis, x.end()) ||
          (s.hasBias && shapeOf(operands[2]) != Shape(x.begin() + axis, x.end())))
        throw std::invalid_argument("the scale and bias must have the normalized shape");
      std::vector<Value> params = {operands[0], operands[1]};
      if (s.hasBias) params.push_back(operands[2]);
      params.push_back(out);
      if (s.statsOutputs) params.push_back(op->getResult(1)), params.push_back(op->getResult(2));
      addLaunch(op, emitRowReduction(s), params);
      return true;
    }
    // Reduce*: the reduced axes must be contiguous (one [outer, cols, inner] view).
    std::vector<int64_t> given = attrs.getInts("axes", {});
    if (given.empty() && attrs.getInt("noop_with_empty_axes", 0)) {  // the identity
      addLaunch(op, emitCopy(expandCopy(x, x, s.outType)), {operands[0], out});
      return true;
    }
    std::vector<int64_t> axes = sortedAxes(given, r);
    if (!adjacent(axes)) {
      addLaunch(op, emitReduceAxes(*rowOp, x, axes, s.type, s.outType), {operands[0], out});
      return true;
    }
    setRowView(s, x, axes);
    addLaunch(op, emitRowReduction(s), {operands[0], out});
    return true;
  }
}

void Lowering::lowerBatchNorm(BatchNormalizationOp op) {
  ops::Attrs attrs = attrsFromOp(op);
  Value out = op->getResult(0);
  Shape outShape = shapeOf(out);
  auto operands = op->getOperands();
  // Inference BN with constant statistics is y = x * a + b per channel; a and b are computed
  // here, once, in double.
  std::vector<ops::Tensor> p;
  for (int k = 1; k <= 4; ++k)
    if (auto c = constantValue(operands[k], 1 << 24)) p.push_back(*c);
  double eps = attrs.getFloat("epsilon", 1e-5);
  if (p.size() < 4) {
    // Statistics computed at run time (tf2onnx's LayerNorm as BatchNormalization): the formula
    // itself, per channel, in one elementwise kernel.
    Shape chan(shapeOf(operands[0]).size() - 1, 1);
    chan[0] = shapeOf(operands[1])[0];
    FusedProgram prog;
    ProgramBuilder pb(prog);
    std::string v[5];
    for (int k = 0; k < 5; ++k) v[k] = pb.input(k ? chan : shapeOf(operands[0]), elemTypeOf(operands[k]));
    prog.body.push_back("const auto bn = (" + v[0] + " - " + v[3] + ") / sqrt(" + v[4] + " + " +
                        ProgramBuilder::literal(eps, elemTypeOf(operands[0])) + ") * " + v[1] + " + " + v[2] + ";");
    prog.result = "bn";
    ElementwiseSpec spec;
    spec.program = prog;
    spec.outShape = outShape;
    spec.outType = elemTypeOf(out);
    addLaunch(op, emitElementwise(spec), {operands[0], operands[1], operands[2], operands[3], operands[4], out});
    return;
  }
  int64_t C = p[0].size();
  std::vector<float> a(C), b(C);
  for (int64_t c = 0; c < C; ++c) {
    double s = p[0].get(c) / std::sqrt(p[3].get(c) + eps);
    a[c] = static_cast<float>(s);
    b[c] = static_cast<float>(p[1].get(c) - p[2].get(c) * s);
  }
  Shape x = shapeOf(operands[0]);
  Shape chan(x.size() - 1, 1);
  chan[0] = C;
  Value av = addWeights(a, op), bv = addWeights(b, op);
  ElementwiseSpec spec;
  spec.expr = "a * b + c";
  spec.inputShapes = {x, chan, chan};
  spec.inputTypes = {elemTypeOf(operands[0]), ElemType::F32, ElemType::F32};
  spec.outShape = outShape;
  spec.outType = elemTypeOf(out);
  addLaunch(op, emitElementwise(spec), {operands[0], av, bv, out});
  return;
}

}  // namespace kiln::codegen

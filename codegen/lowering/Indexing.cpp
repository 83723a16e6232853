// Coordinate ops and row scans (codegen/kernels/Indexing.h, RowScan.h), ConvTranspose and
// Resize (tap tables computed at build time).
#include "codegen/lowering/Lowering.h"

#include "codegen/kernels/ConvTranspose.h"
#include "codegen/kernels/Copy.h"
#include "codegen/kernels/Indexing.h"
#include "codegen/kernels/Resize.h"
#include "codegen/kernels/RowScan.h"
#include "compiler/ops/Conv.h"
#include "compiler/ops/Resize.h"

using namespace mlir;

namespace kiln::codegen {

namespace {

// The Resize kernel's spec and its tap tables, as build-time constants.
struct ResizeTables {
  ResizeKernelSpec spec;
  Value index, weight;
};

ResizeTables resizeTables(Lowering &L, Operation *op, ElemType et) {
  ops::ResizePlan plan =
      ops::resizePlan(cast<ShapeInferenceOpInterface>(op).getOnnxOpType().str(), operandInfo(op).context(1));
  ResizeKernelSpec k;
  k.inShape = plan.in, k.outShape = plan.out, k.type = et;
  k.extrapolation = static_cast<float>(plan.extrapolation);
  std::vector<int32_t> index;
  std::vector<float> weight;
  for (size_t a = 0; a < plan.axes.size(); ++a) {
    const auto &axis = plan.axes[a];
    bool identity = plan.in[a] == plan.out[a];
    size_t taps = 1;
    for (size_t o = 0; o < axis.size(); ++o) {
      identity = identity && !axis[o].extrapolate && axis[o].taps.size() == 1 &&
                 axis[o].taps[0] == std::pair<int64_t, double>(int64_t(o), 1.0);
      taps = std::max(taps, axis[o].taps.size());
    }
    k.taps.push_back(identity ? 0 : int(taps));
    if (identity) continue;
    for (const auto &t : axis)
      for (size_t j = 0; j < taps; ++j) {
        bool used = !t.extrapolate && j < t.taps.size();
        index.push_back(t.extrapolate && j == 0 ? -1 : used ? int32_t(t.taps[j].first) : 0);
        weight.push_back(used ? float(t.taps[j].second) : 0.f);
      }
  }
  if (index.empty()) index.push_back(0), weight.push_back(0.f);  // (no axis resized: unused tables)
  ops::Tensor ti(ops::DType::I32, {int64_t(index.size())});
  for (size_t j = 0; j < index.size(); ++j) ti.setInt(int64_t(j), index[j]);
  return {k, L.addConstant(ti, op), L.addWeights(weight, op)};
}

}  // namespace

bool Lowering::lowerIndexing(Operation *op) {
  ops::Attrs attrs = attrsFromOp(op);
  if (op->getNumOperands() == 0 || !isa<RankedTensorType>(op->getOperand(0).getType())) return false;
  Value out = op->getResult(0);
  Shape outShape = shapeOf(out);
  auto operands = op->getOperands();
  ElemType et = elemTypeOf(out);
  Shape x = shapeOf(operands[0]);
  int64_t r = static_cast<int64_t>(x.size());
  auto present = [&](unsigned k) { return k < operands.size() && !isa<NoneType>(operands[k].getType()); };
  // An input the kernel needs at build time (Trilu's k, TopK's K, CumSum's axis, OneHot's depth).
  auto constantInt = [&](unsigned k, const char *what) {
    auto c = constantValue(operands[k]);
    if (!c || c->size() != 1) throw std::invalid_argument(std::string(what) + " must be a one-element constant");
    return c->getInt(0);
  };
  auto rowView = [&](int64_t axis) {
    return RowView{product(x, 0, size_t(axis)), x[size_t(axis)], product(x, size_t(axis) + 1, x.size())};
  };
  if (isa<TriluOp>(op)) {
    int64_t k = present(1) ? constantInt(1, "k") : 0;
    addLaunch(op, emitTrilu(x, k, attrs.getInt("upper", 1) != 0, et), {operands[0], out});
  } else if (isa<GatherElementsOp>(op)) {
    int axis = int(ops::normalizeAxis(attrs.getInt("axis", 0), r));
    addLaunch(op, emitGatherElements(x, shapeOf(operands[1]), axis, elemTypeOf(operands[1]), et),
              {operands[0], operands[1], out});
  } else if (isa<EyeLikeOp>(op)) {
    addLaunch(op, emitEyeLike(outShape, attrs.getInt("k", 0), et), {out});
  } else if (isa<OneHotOp>(op)) {
    int axis = int(ops::normalizeAxis(attrs.getInt("axis", -1), r + 1));
    addLaunch(op, emitOneHot(x, constantInt(1, "depth"), axis, elemTypeOf(operands[0]), et),
              {operands[0], operands[2], out});
  } else if (isa<DropoutOp>(op) && op->getNumResults() == 2) {
    // Inference (training_mode absent or false), or a ratio of 0: the identity, mask all true.
    bool training = present(2) && constantInt(2, "training_mode") != 0;
    auto ratio = present(1) ? constantValue(operands[1]) : std::nullopt;
    if (training && (!ratio || ratio->get(0) != 0.0))
      throw std::invalid_argument("Dropout in training mode with a non-zero ratio is random; no kernel");
    addLaunch(op, emitDropoutWithMask(product(x, 0, x.size()), et), {operands[0], out, op->getResult(1)});
  } else if (isa<ArgMaxOp, ArgMinOp>(op)) {
    addLaunch(op,
              emitArgExtreme(rowView(ops::normalizeAxis(attrs.getInt("axis", 0), r)), isa<ArgMaxOp>(op),
                             attrs.getInt("select_last_index", 0) != 0, elemTypeOf(operands[0])),
              {operands[0], out});
  } else if (isa<HardmaxOp>(op)) {
    int64_t axis = ops::normalizeAxis(attrs.getInt("axis", -1), r);
    RowView v = rowView(axis);
    if (attrs.getInt("coerce_2d", 0)) v = {product(x, 0, size_t(axis)), product(x, size_t(axis), x.size()), 1};
    addLaunch(op, emitHardmax(v, et), {operands[0], out});
  } else if (isa<TopKOp>(op)) {
    RowView v = rowView(ops::normalizeAxis(attrs.getInt("axis", -1), r));
    addLaunch(op, emitTopK(v, constantInt(1, "K"), attrs.getInt("largest", 1) != 0, et),
              {operands[0], out, op->getResult(1)});
  } else if (isa<CumSumOp>(op)) {
    RowView v = rowView(ops::normalizeAxis(constantInt(1, "axis"), r));
    addLaunch(op, emitCumSum(v, attrs.getInt("exclusive", 0) != 0, attrs.getInt("reverse", 0) != 0, et),
              {operands[0], out});
  } else if (isa<ConvTransposeOp>(op)) {
    Shape w = shapeOf(operands[1]);
    ConvTransposeSpec s;
    s.N = x[0], s.C = x[1], s.group = attrs.getInt("group", 1), s.M = w[1] * s.group;
    s.in.assign(x.begin() + 2, x.end());
    s.out.assign(outShape.begin() + 2, outShape.end());
    s.kernel.assign(w.begin() + 2, w.end());
    size_t n = s.in.size();
    s.strides = intsOr(attrs, "strides", Shape(n, 1)), s.dilations = intsOr(attrs, "dilations", Shape(n, 1));
    s.padBegin =
        ops::convTransposePadBegin(tensorTypeOf(operands[0].getType()), tensorTypeOf(operands[1].getType()), attrs);
    s.hasBias = present(2);
    s.type = et;
    std::vector<Value> params = {operands[0], operands[1]};
    if (s.hasBias) params.push_back(operands[2]);
    params.push_back(out);
    addLaunch(op, emitConvTranspose(s), params);
  } else if (isa<ResizeOp, UpsampleOp>(op)) {
    ResizeTables t = resizeTables(*this, op, et);
    addLaunch(op, emitResize(t.spec), {operands[0], t.index, t.weight, out});
  } else if (isa<DepthToSpaceOp, SpaceToDepthOp>(op)) {
    // Both are a transpose of a 6-D view of NCHW.
    int64_t b = attrs.getInt("blocksize"), N = x[0], C = x[1], H = x[2], W = x[3];
    Shape view, perm;
    if (isa<SpaceToDepthOp>(op))
      view = {N, C, H / b, b, W / b, b}, perm = {0, 3, 5, 1, 2, 4};
    else if (attrs.getString("mode", "DCR") == "CRD")
      view = {N, C / (b * b), b, b, H, W}, perm = {0, 1, 4, 2, 5, 3};
    else
      view = {N, b, b, C / (b * b), H, W}, perm = {0, 3, 4, 1, 5, 2};
    addLaunch(op, emitCopy(transposeCopy(view, perm, et)), {operands[0], out});
  } else {
    return false;
  }
  return true;
}
}  // namespace kiln::codegen

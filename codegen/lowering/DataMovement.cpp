// Ops that move data without arithmetic: Transpose, Im2Col, Concat, Slice, Split, Pad, Expand,
// Tile, Gather, DepthToSpace, SpaceToDepth (strided copies, codegen/kernels/Copy.h).
#include "codegen/lowering/Lowering.h"

#include "codegen/kernels/Copy.h"

#include <algorithm>

using namespace mlir;

namespace kiln::codegen {

bool Lowering::lowerDataMovement(Operation *op) {
  ops::Attrs attrs = attrsFromOp(op);
  Value out = op->getResult(0);
  Shape outShape = shapeOf(out);
  auto operands = op->getOperands();
  ElemType et = elemTypeOf(out);
  if (isa<TransposeOp>(op)) {
    Shape x = shapeOf(operands[0]);
    std::vector<int64_t> perm(x.size());
    for (size_t k = 0; k < perm.size(); ++k) perm[k] = perm.size() - 1 - k;
    perm = attrs.getInts("perm", perm);
    addLaunch(op, emitCopy(transposeCopy(x, perm, et)), {operands[0], out});
    return true;
  }
  if (isa<Im2ColOp>(op)) {
    Shape x = shapeOf(operands[0]);
    auto k = attrs.getInts("kernel_shape"), st = intsOr(attrs, "strides", {1, 1}),
         dl = intsOr(attrs, "dilations", {1, 1}), pads = intsOr(attrs, "pads", {0, 0, 0, 0});
    Im2ColSpec s;
    s.type = et;
    s.N = x[0], s.H = x[1], s.W = x[2], s.C = x[3], s.KH = k[0], s.KW = k[1], s.OH = outShape[1], s.OW = outShape[2];
    s.strideH = st[0], s.strideW = st[1], s.dilationH = dl[0], s.dilationW = dl[1], s.padTop = pads[0],
    s.padLeft = pads[1];
    addLaunch(op, emitIm2Col(s), {operands[0], out});
    return true;
  }
  if (isa<ConcatOp>(op)) {
    int64_t axis = ops::normalizeAxis(attrs.getInt("axis"), outShape.size());
    int64_t offset = 0;
    for (Value v : operands) {
      Shape s = shapeOf(v);
      if (s[axis] == 0) continue;
      addLaunch(op, emitCopy(concatCopy(s, outShape, axis, offset, et)), {v, out});
      offset += s[axis];
    }
    return true;
  }
  if (isa<SliceOp, SplitOp>(op)) {
    Shape x = shapeOf(operands[0]);
    int64_t r = x.size();
    if (isa<SplitOp>(op)) {
      int64_t axis = ops::normalizeAxis(attrs.getInt("axis", 0), r), offset = 0;
      for (Value res : op->getResults()) {
        Shape os = shapeOf(res);
        Shape starts(r, 0), steps(r, 1);
        starts[axis] = offset;
        addLaunch(op, emitCopy(sliceCopy(x, starts, steps, os, et)), {operands[0], res});
        offset += os[axis];
      }
      return true;
    }
    auto get = [&](int k) -> std::optional<std::vector<int64_t>> {
      if (isa<NoneType>(operands[k].getType())) return std::nullopt;
      auto c = constantValue(operands[k]);
      if (!c) throw std::invalid_argument("Slice parameters must be constants");
      return c->toInts();
    };
    auto starts = *get(1);
    auto axes = get(3);
    auto stepsIn = get(4);
    Shape st(r, 0), steps(r, 1);
    for (size_t k = 0; k < starts.size(); ++k) {
      int64_t a = axes ? ops::normalizeAxis((*axes)[k], r) : static_cast<int64_t>(k);
      int64_t step = stepsIn ? (*stepsIn)[k] : 1, d = x[a], s = starts[k];
      if (s < 0) s += d;
      s = step > 0 ? std::clamp<int64_t>(s, 0, d) : std::clamp<int64_t>(s, 0, d - 1);
      st[a] = s;
      steps[a] = step;
    }
    addLaunch(op, emitCopy(sliceCopy(x, st, steps, outShape, et)), {operands[0], out});
    return true;
  }
  if (isa<PadOp>(op)) {
    auto pads = constantValue(operands[1]);
    if (!pads) throw std::invalid_argument("Pad pads must be constants");
    Shape x = shapeOf(operands[0]);
    size_t r = x.size();
    std::vector<int64_t> axes;
    if (!isa<NoneType>(operands[3].getType())) {
      auto a = constantValue(operands[3]);
      if (!a) throw std::invalid_argument("Pad axes must be constants");
      for (int64_t v : a->toInts()) axes.push_back(ops::normalizeAxis(v, r));
    } else {
      for (size_t k = 0; k < r; ++k) axes.push_back(static_cast<int64_t>(k));
    }
    std::vector<int64_t> p = pads->toInts();
    PadSpec s;
    s.inShape = x;
    s.before.assign(r, 0);
    s.after.assign(r, 0);
    for (size_t k = 0; k < axes.size(); ++k) s.before[axes[k]] = p.at(k), s.after[axes[k]] = p.at(k + axes.size());
    s.mode = attrs.getString("mode", "constant");
    if (!isa<NoneType>(operands[2].getType())) {
      auto v = constantValue(operands[2]);
      if (!v) throw std::invalid_argument("Pad constant_value must be a constant");
      if (v->size() == 1) s.value = v->get(0);
    }
    s.type = et;
    addLaunch(op, emitPad(s), {operands[0], out});
    return true;
  }
  if (isa<ExpandOp>(op)) {
    addLaunch(op, emitCopy(expandCopy(shapeOf(operands[0]), outShape, et)), {operands[0], out});
    return true;
  }
  if (isa<TileOp>(op)) {
    auto reps = constantValue(operands[1]);
    if (!reps) throw std::invalid_argument("Tile repeats must be constants");
    addLaunch(op, emitCopy(tileCopy(shapeOf(operands[0]), reps->toInts(), et)), {operands[0], out});
    return true;
  }
  if (isa<GatherOp>(op)) {
    Shape data = shapeOf(operands[0]);
    int axis = static_cast<int>(ops::normalizeAxis(attrs.getInt("axis", 0), data.size()));
    addLaunch(op, emitCopy(gatherCopy(data, axis, shapeOf(operands[1]), elemTypeOf(operands[1]), et)),
              {operands[0], operands[1], out});
    return true;
  }
  return false;
}

}  // namespace kiln::codegen

// Max/Average pooling (2-D NCHW and NHWC kernels, the direct N-D kernel) and global pooling.
#include "codegen/lowering/Lowering.h"

#include "codegen/kernels/Pool.h"

using namespace mlir;

namespace kiln::codegen {

bool Lowering::lowerPooling(Operation *op) {
  if (isa<GlobalAveragePoolOp, GlobalMaxPoolOp>(op)) return lowerGlobalPool(op), true;
  if (!isa<MaxPoolOp, AveragePoolOp, MaxPoolNhwcOp, AveragePoolNhwcOp>(op)) return false;
  ops::Attrs attrs = attrsFromOp(op);
  Value out = op->getResult(0);
  Shape outShape = shapeOf(out);
  auto operands = op->getOperands();
  const bool max = isa<MaxPoolOp, MaxPoolNhwcOp>(op), nhwc = isa<MaxPoolNhwcOp, AveragePoolNhwcOp>(op);
  Shape x = shapeOf(operands[0]);
  if (nhwc && x.size() == 3) {
    // A 1-D channels-last pool ([N, L, C]) is a 2-D one of [N, 1, L, C]: a unit H axis first in
    // the shapes and the attributes.
    x.insert(x.begin() + 1, 1);
    outShape.insert(outShape.begin() + 1, 1);
    ops::Attrs a2 = attrs;
    for (const char *name : {"strides", "dilations", "kernel_shape"})
      if (attrs.has(name)) a2.set(name, std::vector<int64_t>{1, attrs.getInts(name).at(0)});
    if (attrs.has("pads")) {
      Shape p = attrs.getInts("pads");
      if (p.size() != 2) throw std::invalid_argument("a 1-D pool needs 2 pads");
      a2.set("pads", std::vector<int64_t>{0, p[0], 0, p[1]});
    }
    attrs = a2;
  }
  if (x.size() != 4) {  // 1-D, 3-D, ...: the direct N-D kernel (NCHW-style layout, no Indices)
    if (op->getNumResults() > 1 || nhwc)
      throw std::invalid_argument("only 2-D pooling has kernels with the Indices output or NHWC");
    PoolNdSpec s;
    s.max = max;
    s.N = x[0], s.C = x[1];
    s.in.assign(x.begin() + 2, x.end());
    s.out.assign(outShape.begin() + 2, outShape.end());
    s.kernel = attrs.getInts("kernel_shape");
    size_t n = s.in.size();
    s.strides = intsOr(attrs, "strides", Shape(n, 1)), s.dilations = intsOr(attrs, "dilations", Shape(n, 1));
    std::tie(s.padBegin, s.padEnd) = windowPads(attrs, s.in, s.out, s.kernel, s.strides, s.dilations);
    s.countIncludePad = attrs.getInt("count_include_pad", 0);
    s.type = elemTypeOf(out);
    addLaunch(op, emitPoolNd(s), {operands[0], out});
    return true;
  }
  auto ks = attrs.getInts("kernel_shape");
  auto st = intsOr(attrs, "strides", {1, 1}), dl = intsOr(attrs, "dilations", {1, 1});
  Pool2dSpec s;
  s.kind = max ? PoolKind::Max : PoolKind::Average;
  s.nhwc = nhwc;
  s.type = elemTypeOf(out);
  if (s.nhwc)
    s.N = x[0], s.H = x[1], s.W = x[2], s.C = x[3], s.OH = outShape[1], s.OW = outShape[2];
  else
    s.N = x[0], s.C = x[1], s.H = x[2], s.W = x[3], s.OH = outShape[2], s.OW = outShape[3];
  s.KH = ks[0], s.KW = ks[1];
  s.strideH = st[0], s.strideW = st[1], s.dilationH = dl[0], s.dilationW = dl[1];
  setPads2d(attrs, s);
  s.countIncludePad = attrs.getInt("count_include_pad", 0);
  s.indicesOutput = op->getNumResults() > 1;
  s.columnMajorIndices = attrs.getInt("storage_order", 0) == 1;
  std::vector<Value> params = {operands[0], out};
  if (s.indicesOutput) params.push_back(op->getResult(1));
  addLaunch(op, emitPool2d(s), params);
  return true;
}

void Lowering::lowerGlobalPool(Operation *op) {
  Value out = op->getResult(0);
  auto operands = op->getOperands();
  Shape x = shapeOf(operands[0]);
  addLaunch(op, emitGlobalPool(isa<GlobalMaxPoolOp>(op), x[0] * x[1], product(x, 2, x.size()), elemTypeOf(out)),
            {operands[0], out});
}

}  // namespace kiln::codegen

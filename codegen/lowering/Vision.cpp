// Vision, detection, loss and signal ops (codegen/kernels/Vision.h, Signal.h): GatherND, the
// scatters, GridSample, RoiAlign, MaxUnpool, InstanceNormalization (a row kernel), LRN,
// MeanVarianceNormalization, ReverseSequence, Compress with a constant condition (a gather),
// the two losses, DFT, STFT, Det; Clip with bounds computed at run time (a mel spectrogram's
// top-dB floor). The ops whose result shape depends on their data (NonZero,
// Unique, NonMaxSuppression, Compress's condition) have a type only when that data is known at
// build time, and then fold; one that reaches here says why it has no kernel.
#include "codegen/lowering/Lowering.h"

#include "codegen/kernels/Copy.h"
#include "codegen/kernels/Elementwise.h"
#include "codegen/kernels/Reduction.h"
#include "codegen/kernels/Signal.h"
#include "codegen/kernels/Vision.h"

using namespace mlir;

namespace kiln::codegen {

bool Lowering::lowerVision(Operation *op) {
  if (op->getNumOperands() == 0 || !isa<RankedTensorType>(op->getOperand(0).getType())) return false;
  ops::Attrs attrs = attrsFromOp(op);
  auto operands = op->getOperands();
  Value out = op->getResult(0);
  Shape x = shapeOf(operands[0]), outShape = shapeOf(out);
  ElemType et = elemTypeOf(out);
  auto present = [&](unsigned k) { return k < operands.size() && !isa<NoneType>(operands[k].getType()); };
  int64_t r = int64_t(x.size());

  if (isa<GatherNDOp>(op)) {
    addLaunch(op, emitGatherNd(x, shapeOf(operands[1]), attrs.getInt("batch_dims", 0), et),
              {operands[0], operands[1], out});
  } else if (isa<ScatterNDOp, ScatterElementsOp, ScatterOp>(op)) {
    // The data copied into the output, then the updates applied in place.
    addLaunch(op, emitScatterCopy(product(x, 0, x.size()), et), {operands[0], out});
    std::string red = attrs.getString("reduction", "none");
    if (isa<ScatterNDOp>(op))
      addLaunch(op, emitScatterNd(x, shapeOf(operands[1]), red, et), {operands[1], operands[2], out});
    else
      addLaunch(op,
                emitScatterElements(x, shapeOf(operands[1]), int(ops::normalizeAxis(attrs.getInt("axis", 0), r)), red,
                                    elemTypeOf(operands[1]), et),
                {operands[1], operands[2], out});
  } else if (isa<GridSampleOp>(op)) {
    Shape g = shapeOf(operands[1]);
    GridSampleSpec s;
    s.N = x[0], s.C = x[1], s.H = x[2], s.W = x[3], s.Ho = g[1], s.Wo = g[2];
    s.mode = attrs.getString("mode", "bilinear"), s.padding = attrs.getString("padding_mode", "zeros");
    s.alignCorners = attrs.getInt("align_corners", 0) != 0;
    s.type = et, s.gridType = elemTypeOf(operands[1]);
    addLaunch(op, emitGridSample(s), {operands[0], operands[1], out});
  } else if (isa<RoiAlignOp>(op)) {
    RoiAlignSpec s;
    s.N = x[0], s.C = x[1], s.H = x[2], s.W = x[3], s.R = outShape[0], s.OH = outShape[2], s.OW = outShape[3];
    s.samplingRatio = attrs.getInt("sampling_ratio", 0);
    s.spatialScale = float(attrs.getFloat("spatial_scale", 1.0));
    s.average = attrs.getString("mode", "avg") == "avg";
    s.halfPixel = attrs.getString("coordinate_transformation_mode", "half_pixel") == "half_pixel";
    s.type = et, s.indexType = elemTypeOf(operands[2]), s.roisType = elemTypeOf(operands[1]);
    addLaunch(op, emitRoiAlign(s), {operands[0], operands[1], operands[2], out});
  } else if (isa<MaxUnpoolOp>(op)) {
    // The unpooled shape the indices refer to: kernel_shape, strides and pads applied to X.
    Shape unpooled = {x[0], x[1]};
    Shape k = attrs.getInts("kernel_shape", {}), st = intsOr(attrs, "strides", Shape(x.size() - 2, 1));
    Shape pads = intsOr(attrs, "pads", Shape(2 * (x.size() - 2), 0));
    if (k.size() != x.size() - 2)
      throw std::invalid_argument("MaxUnpool: kernel_shape must have one value per spatial axis");
    for (size_t d = 0; d + 2 < x.size(); ++d)
      unpooled.push_back((x[d + 2] - 1) * st[d] + k[d] - pads[d] - pads[d + x.size() - 2]);
    addLaunch(op, emitFillZero(product(outShape, 0, outShape.size()), et), {out});
    addLaunch(op, emitUnpoolScatter(product(x, 0, x.size()), unpooled, outShape, et), {operands[0], operands[1], out});
  } else if (isa<InstanceNormalizationOp>(op)) {
    RowReductionSpec s;
    s.op = RowOp::InstanceNorm;
    s.outer = x[0] * x[1], s.cols = product(x, 2, x.size()), s.channels = x[1];
    s.epsilon = float(attrs.getFloat("epsilon", 1e-5));
    s.type = elemTypeOf(operands[0]), s.outType = et;
    if (elemTypeOf(operands[1]) != s.type || elemTypeOf(operands[2]) != s.type)
      throw std::invalid_argument("InstanceNormalization scale/bias must have the input's type");
    addLaunch(op, emitRowReduction(s), {operands[0], operands[1], operands[2], out});
  } else if (isa<LRNOp>(op)) {
    addLaunch(op,
              emitLrn(x, attrs.getInt("size"), float(attrs.getFloat("alpha", 1e-4)),
                      float(attrs.getFloat("beta", 0.75)), float(attrs.getFloat("bias", 1.0)), et),
              {operands[0], out});
  } else if (isa<MeanVarianceNormalizationOp>(op)) {
    std::vector<int64_t> axes = attrs.getInts("axes", {0, 2, 3});
    for (auto &a : axes) a = ops::normalizeAxis(a, r);
    addLaunch(op, emitMeanVarianceNorm(x, axes, et), {operands[0], out});
  } else if (isa<ReverseSequenceOp>(op)) {
    addLaunch(op, emitReverseSequence(x, int(attrs.getInt("batch_axis", 1)), int(attrs.getInt("time_axis", 0)), et),
              {operands[0], operands[1], out});
  } else if (isa<CompressOp>(op)) {
    // A constant condition (else the op had no type): a gather of the kept indices.
    auto cond = constantValue(operands[1]);
    if (!cond) throw std::invalid_argument("Compress: the condition must be a compile-time constant");
    std::vector<int64_t> kept;
    for (int64_t k = 0; k < cond->size(); ++k)
      if (cond->get(k) != 0) kept.push_back(k);
    ops::Tensor idx = ops::Tensor::fromInts(ops::DType::I64, {int64_t(kept.size())}, kept);
    bool axisGiven = attrs.has("axis");
    Shape data = axisGiven ? x : Shape{product(x, 0, x.size())};
    int axis = axisGiven ? int(ops::normalizeAxis(attrs.getInt("axis", 0), r)) : 0;
    addLaunch(op, emitCopy(gatherCopy(data, axis, {int64_t(kept.size())}, ElemType::I64, et)),
              {operands[0], addConstant(idx, op), out});
  } else if (isa<NegativeLogLikelihoodLossOp, SoftmaxCrossEntropyLossOp>(op)) {
    LossSpec s;
    s.softmax = isa<SoftmaxCrossEntropyLossOp>(op);
    s.N = x[0], s.C = x[1], s.D = product(x, 2, x.size());
    s.weight = present(2);
    s.hasIgnore = attrs.has("ignore_index");
    s.ignoreIndex = attrs.getInt("ignore_index", 0);
    std::string red = attrs.getString("reduction", "mean");
    s.reduction = red == "none" ? 0 : red == "sum" ? 1 : 2;
    s.logProbOutput = op->getNumResults() > 1;
    s.type = elemTypeOf(operands[0]), s.targetType = elemTypeOf(operands[1]);
    std::vector<Value> params = {operands[0], operands[1]};
    if (s.weight) params.push_back(operands[2]);
    params.push_back(out);
    if (s.logProbOutput) params.push_back(op->getResult(1));
    addLaunch(op, emitLoss(s), params);
  } else if (isa<DFTOp>(op)) {
    int64_t axis = attrs.getInt("axis", 1);
    if (axis < 0) axis += r;
    DftSpec s;
    s.outer = product(x, 0, size_t(axis)), s.len = x[size_t(axis)],
    s.inner = product(x, size_t(axis) + 1, x.size() - 1);
    s.channels = x.back(), s.outLen = outShape[size_t(axis)];
    s.n = s.len;
    if (present(1)) {
      auto c = constantValue(operands[1]);
      if (!c || c->size() != 1) throw std::invalid_argument("DFT: dft_length must be a one-element constant");
      s.n = c->getInt(0);
    }
    s.inverse = attrs.getInt("inverse", 0) != 0;
    s.type = et;
    addLaunch(op, emitDft(s), {operands[0], out});
  } else if (isa<STFTOp>(op)) {
    StftSpec s;
    s.batch = x[0], s.length = x[1], s.channels = x[2];
    s.frames = outShape[1], s.bins = outShape[2];
    auto step = constantValue(operands[1]);
    if (!step || step->size() != 1) throw std::invalid_argument("STFT: frame_step must be a one-element constant");
    s.step = step->getInt(0);
    s.window = present(2);
    if (s.window)
      s.frameLength = shapeOf(operands[2])[0];
    else if (auto fl = present(3) ? constantValue(operands[3]) : std::nullopt)
      s.frameLength = fl->getInt(0);
    else
      throw std::invalid_argument("STFT: frame_length must be a constant");
    s.type = et;
    std::vector<Value> params = {operands[0]};
    if (s.window) params.push_back(operands[2]);
    params.push_back(out);
    addLaunch(op, emitStft(s), params);
  } else if (isa<DetOp>(op)) {
    addLaunch(op, emitDet(product(outShape, 0, outShape.size()), x.back(), et), {operands[0], out});
  } else if (isa<ClipOp>(op)) {
    // Bounds computed at run time (constant ones make Clip an elementwise op of the table):
    // numpy.clip, max(x, min) then min(·, max), NaN passing through.
    ElementwiseSpec s;
    std::vector<Value> params = {operands[0]};
    s.inputShapes = {x}, s.inputTypes = {elemTypeOf(operands[0])};
    std::string e = "a";
    const char *names[] = {"a", "b", "c"};
    for (unsigned k : {1u, 2u}) {
      if (!present(k)) continue;
      std::string v = names[params.size()];
      e = k == 1 ? "(" + e + " < " + v + " ? " + v + " : " + e + ")"
                 : "(" + e + " > " + v + " ? " + v + " : " + e + ")";
      params.push_back(operands[k]);
      s.inputShapes.push_back(shapeOf(operands[k]));
      s.inputTypes.push_back(elemTypeOf(operands[k]));
    }
    s.expr = e, s.outShape = outShape, s.outType = et;
    params.push_back(out);
    addLaunch(op, emitElementwise(s), params);
  } else if (isa<NonZeroOp, UniqueOp, NonMaxSuppressionOp>(op)) {
    throw std::invalid_argument("the output shape depends on the input data; engines have static shapes, so this op "
                                "builds only when its inputs are compile-time constants (it then folds)");
  } else {
    return false;
  }
  return true;
}

}  // namespace kiln::codegen

// Post-training int8 quantization into ONNX's QDQ form (see Passes.td).
#include "compiler/ir/Builders.h"
#include "compiler/ir/TensorConversion.h"
#include "compiler/quant/Calibration.h"
#include "passes/PassUtil.h"
#include "passes/Passes.h"

#include <algorithm>
#include <cmath>
#include <regex>

namespace kiln {
#define GEN_PASS_DEF_QUANTIZEINT8
#include "passes/Passes.h.inc"

namespace {

using namespace mlir;

// Symmetric per-channel int8 weights: scale[c] = max|W[c,…]| / 127, q = round-half-even(W / scale)
// clamped to [-127, 127].
void quantizeWeights(const ops::Tensor &w, int64_t axis, ops::Tensor &q, ops::Tensor &scale) {
  int64_t channels = w.shape[size_t(axis)], inner = 1;
  for (size_t d = size_t(axis) + 1; d < w.shape.size(); ++d) inner *= w.shape[d];
  int64_t n = ops::numElements(w.shape);
  std::vector<double> amax(size_t(channels), 0.0);
  for (int64_t i = 0; i < n; ++i) {
    size_t c = size_t((i / inner) % channels);
    amax[c] = std::max(amax[c], std::fabs(w.f[size_t(i)]));
  }
  scale = ops::Tensor(ops::DType::F32, {channels});
  for (int64_t c = 0; c < channels; ++c)
    scale.set(c, amax[size_t(c)] > 0 ? float(amax[size_t(c)] / 127.0) : 1.0f);  // all-zero channel: any scale
  q = ops::Tensor(ops::DType::I8, w.shape);
  for (int64_t i = 0; i < n; ++i) {
    double s = scale.f[size_t((i / inner) % channels)];
    q.setInt(i, int64_t(std::clamp(std::nearbyint(w.f[size_t(i)] / s), -127.0, 127.0)));
  }
}

struct QuantizeInt8Pass : impl::QuantizeInt8Base<QuantizeInt8Pass> {
  using QuantizeInt8Base::QuantizeInt8Base;

  void runOnOperation() override {
    func::FuncOp f = getOperation();
    knobs::Route r;
    if (!readRoute(route, f, r)) return signalPassFailure();
    const knobs::KnobDef &precision = *knobs::findKnob("precision");
    std::vector<Operation *> products;
    f.walk([&](Operation *op) {
      if (isInt8Product(op) && r.get(precision, nodeName(op)) == "int8") products.push_back(op);
    });
    if (products.empty()) return;
    if (calib.empty()) {
      f.emitError("precision int8 needs a calibration file: make one with `kiln calibrate` and pass --calib");
      return signalPassFailure();
    }
    quant::CalibrationTable table;
    std::string error;
    if (!quant::readCalibration(calib, table, error)) {
      f.emitError(error);
      return signalPassFailure();
    }
    std::regex keep;
    try {
      keep = std::regex(keepFloat.empty() ? std::string("$^") : std::string(keepFloat), std::regex::ECMAScript);
    } catch (const std::regex_error &e) {
      f.emitError("keep-float: invalid regular expression '" + keepFloat + "': " + e.what());
      return signalPassFailure();
    }
    int quantized = 0, activationProducts = 0, noRange = 0, kept = 0, noKernel = 0;
    for (Operation *op : products) {
      if (!keepFloat.empty() && std::regex_match(nodeName(op), keep)) {
        ++kept;
        continue;
      }
      Value x = op->getOperand(0), w = op->getOperand(1);
      auto xt = dyn_cast<RankedTensorType>(x.getType());
      auto weight = constantValue(w, int64_t(1) << 30);
      if (!xt || !xt.getElementType().isF32() || !weight || weight->dtype != ops::DType::F32) {
        ++activationProducts;
        continue;
      }
      if (!int8KernelTakes(op, true)) {
        ++noKernel;
        continue;
      }
      auto it = table.ranges.find(quant::rangeKey(nodeName(op), 0));
      if (it == table.ranges.end() || !(it->second.amax > 0)) {
        ++noRange;
        continue;
      }
      auto axis = weightChannelAxis(op, int64_t(weight->shape.size()));
      if (!axis) continue;
      OpBuilder b(op);
      Location loc = op->getLoc();
      Value sa = createConstant(b, loc, ops::Tensor::scalar(ops::DType::F32, it->second.amax / 127.0));
      Value zp = createConstant(b, loc, ops::Tensor::scalar(ops::DType::I8, 0));
      Operation *q = createInferred(b, loc, "kiln.quantize_linear", {x, sa, zp}, {}, &error);
      Operation *dq = q ? createInferred(b, loc, "kiln.dequantize_linear", {q->getResult(0), sa, zp}, {}, &error) : nullptr;
      ops::Tensor wq, ws;
      quantizeWeights(*weight, *axis, wq, ws);
      Value wqv = createConstant(b, loc, wq), wsv = createConstant(b, loc, ws);
      Value noZeroPoint = b.create<NoneOp>(loc).getResult();
      Operation *wdq = dq ? createInferred(b, loc, "kiln.dequantize_linear", {wqv, wsv, noZeroPoint},
                                           {b.getNamedAttr("axis", b.getI64IntegerAttr(*axis))}, &error)
                          : nullptr;
      if (!wdq) {
        op->emitError("int8 quantization: " + error);
        return signalPassFailure();
      }
      op->setOperand(0, dq->getResult(0));
      op->setOperand(1, wdq->getResult(0));
      ++quantized;
    }
    std::string note = "int8: " + std::to_string(quantized) + " of " + std::to_string(products.size()) +
                       " int8 convolutions/matrix products of the route quantized";
    if (activationProducts) note += "; " + std::to_string(activationProducts) + " without a constant float weight stay float";
    if (noRange) note += "; " + std::to_string(noRange) + " without a calibrated range stay float";
    if (noKernel)
      note += "; " + std::to_string(noKernel) + " stay float: no int8 kernel (K or a convolution's C not a multiple of 16, grouped convolutions)";
    if (kept) note += "; " + std::to_string(kept) + " kept float (keep-float)";
    f.emitRemark(note);
  }
};

}  // namespace
}  // namespace kiln

// Post-training int8/fp8 quantization into ONNX's QDQ form (see Passes.td).
#include "compiler/ir/Builders.h"
#include "compiler/ir/TensorConversion.h"
#include "compiler/quant/Calibration.h"
#include "compiler/support/Pattern.h"
#include "passes/PassUtil.h"
#include "passes/Passes.h"

#include <algorithm>
#include <cmath>

namespace kiln {
#define GEN_PASS_DEF_QUANTIZEPRODUCTS
#include "passes/Passes.h.inc"

namespace {

using namespace mlir;

// The 8-bit formats a product can be quantized to: symmetric, scale = amax / qmax.
struct Format {
  const char *name;  // the precision knob's value
  ops::DType type;
  double qmax;  // int8: 127 (symmetric, -128 unused); float8e4m3fn: its largest finite value
};
constexpr Format kInt8{"int8", ops::DType::I8, 127.0}, kFp8{"fp8", ops::DType::F8E4M3, 448.0};

// Symmetric per-channel weights: scale[c] = max|W[c,…]| / qmax, q = W / scale rounded to the
// format (int8: half to even, clamped to ±127; fp8: nearest-even e4m3).
void quantizeWeights(const ops::Tensor &w, int64_t axis, const Format &fmt, ops::Tensor &q, ops::Tensor &scale) {
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
    scale.set(c, amax[size_t(c)] > 0 ? float(amax[size_t(c)] / fmt.qmax) : 1.0f);  // all-zero channel: any scale
  q = ops::Tensor(fmt.type, w.shape);
  for (int64_t i = 0; i < n; ++i) {
    double v = w.f[size_t(i)] / scale.f[size_t((i / inner) % channels)];
    if (fmt.type == ops::DType::I8)
      q.setInt(i, int64_t(std::clamp(std::nearbyint(v), -127.0, 127.0)));
    else
      q.set(i, v);  // (rounds to e4m3, saturating)
  }
}

struct QuantizeProductsPass : impl::QuantizeProductsBase<QuantizeProductsPass> {
  using QuantizeProductsBase::QuantizeProductsBase;

  void runOnOperation() override {
    func::FuncOp f = getOperation();
    knobs::Route r;
    target::GpuTarget t;
    if (!readRoute(route, f, r) || !readTarget(arch, f, t)) return signalPassFailure();
    const knobs::KnobDef &precision = *knobs::findKnob("precision");
    std::vector<std::pair<Operation *, const Format *>> products;
    f.walk([&](Operation *op) {
      if (!isQuantizableProduct(op)) return;
      std::string p = r.get(precision, nodeName(op));
      if (p == kInt8.name) products.push_back({op, &kInt8});
      if (p == kFp8.name) products.push_back({op, &kFp8});
    });
    if (products.empty()) return;
    // 8-bit products the target has no instructions for are refused up front, naming the node.
    bool refused = false;
    for (auto &[op, format] : products)
      if (std::string why = t.missing(format == &kInt8 ? target::Feature::MmaInt8 : target::Feature::Fp8);
          !why.empty()) {
        op->emitError(std::string("precision ") + format->name + ": " + why);
        refused = true;
      }
    if (refused) return signalPassFailure();
    if (calib.empty()) {
      f.emitError(std::string("precision ") + products[0].second->name +
                  " needs a calibration file: make one with `kiln calibrate` and pass --calib");
      return signalPassFailure();
    }
    quant::CalibrationTable table;
    std::string error;
    if (!quant::readCalibration(calib, table, error)) {
      f.emitError(error);
      return signalPassFailure();
    }
    // Linear-time matching (RE2): node names are the model's, the pattern the user's.
    support::Pattern keep;
    if (!keepFloat.empty() && !keep.compile(keepFloat, error)) {
      f.emitError("keep-float '" + std::string(keepFloat).substr(0, 200) + "': " + error);
      return signalPassFailure();
    }
    int quantized = 0;
    std::vector<std::string> activationProducts, noRange, kept, noKernel;  // node names
    for (auto [op, fmt] : products) {
      if (!keepFloat.empty() && keep.fullMatch(nodeName(op), error)) {
        kept.push_back(nodeName(op));
        continue;
      }
      if (!error.empty()) {
        f.emitError("keep-float: " + error + " (node '" + nodeName(op).substr(0, 60) + "...')");
        return signalPassFailure();
      }
      Value x = op->getOperand(0), w = op->getOperand(1);
      auto xt = dyn_cast<RankedTensorType>(x.getType());
      auto weight = constantValue(w, int64_t(1) << 30);
      if (!xt || !xt.getElementType().isF32() || !weight || weight->dtype != ops::DType::F32) {
        activationProducts.push_back(nodeName(op));
        continue;
      }
      if (!eightBitKernelTakes(op, true)) {
        noKernel.push_back(nodeName(op));
        continue;
      }
      auto it = table.ranges.find(quant::rangeKey(nodeName(op), 0));
      if (it == table.ranges.end() || !(it->second.amax > 0)) {
        noRange.push_back(nodeName(op));
        continue;
      }
      auto axis = weightChannelAxis(op, int64_t(weight->shape.size()));
      if (!axis) continue;
      OpBuilder b(op);
      Location loc = op->getLoc();
      Value sa = createConstant(b, loc, ops::Tensor::scalar(ops::DType::F32, it->second.amax / fmt->qmax));
      Value zp = createConstant(b, loc, ops::Tensor::scalar(fmt->type, 0));
      Operation *q = createInferred<QuantizeLinearOp>(b, loc, {x, sa, zp}, {}, &error);
      Operation *dq = q ? createInferred<DequantizeLinearOp>(b, loc, {q->getResult(0), sa, zp}, {}, &error) : nullptr;
      ops::Tensor wq, ws;
      quantizeWeights(*weight, *axis, *fmt, wq, ws);
      Value wqv = createConstant(b, loc, wq), wsv = createConstant(b, loc, ws);
      Value noZeroPoint = b.create<NoneOp>(loc).getResult();
      Operation *wdq =
          dq ? createInferred<DequantizeLinearOp>(b, loc, {wqv, wsv, noZeroPoint},
                                                  {b.getNamedAttr("axis", b.getI64IntegerAttr(*axis))}, &error)
             : nullptr;
      if (!wdq) {
        op->emitError(std::string(fmt->name) + " quantization: " + error);
        return signalPassFailure();
      }
      op->setOperand(0, dq->getResult(0));
      op->setOperand(1, wdq->getResult(0));
      ++quantized;
    }
    std::string note = std::to_string(quantized) + " of " + std::to_string(products.size()) +
                       " int8/fp8 convolutions/matrix products of the route quantized";
    auto count = [](const std::vector<std::string> &names) { return "; " + std::to_string(names.size()); };
    if (!activationProducts.empty())
      note += count(activationProducts) + " without a constant float weight stay float" + nameList(activationProducts);
    if (!noRange.empty()) note += count(noRange) + " without a calibrated range stay float" + nameList(noRange);
    if (!noKernel.empty())
      note += count(noKernel) +
              " stay float: no 8-bit kernel (K or a convolution's C not a multiple of 16, grouped "
              "convolutions)" +
              nameList(noKernel);
    if (!kept.empty()) note += count(kept) + " kept float (keep-float)" + nameList(kept);
    f.emitRemark(note);
  }
};

}  // namespace
}  // namespace kiln

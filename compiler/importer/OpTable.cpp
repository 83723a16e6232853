#include "compiler/importer/OpTable.h"

#include "compiler/ir/KilnDialect.h"
#include "compiler/ir/TensorConversion.h"

#include "onnx/onnx-ml.pb.h"

#include "llvm/ADT/StringMap.h"

using namespace mlir;

namespace kiln {

bool NodeImport::has(size_t k) const { return k < operands.size() && !isa<NoneType>(operands[k].getType()); }

std::optional<std::vector<int64_t>> NodeImport::constInts(size_t k) const {
  if (!has(k)) return std::nullopt;
  auto t = constantValue(operands[k]);
  if (!t) return std::nullopt;
  return t->toInts();
}

Value NodeImport::constI64(const std::vector<int64_t> &vals, bool scalar) {
  ops::Shape shape = scalar ? ops::Shape{} : ops::Shape{static_cast<int64_t>(vals.size())};
  auto t = ops::Tensor::fromInts(ops::DType::I64, shape, vals);
  return builder.create<ConstantOp>(loc, attrFromTensor(t, builder.getContext()));
}

Value NodeImport::constScalarLike(Value like, double v) {
  ops::DType dt = tensorTypeOf(like.getType()).dtype;
  if (dt == ops::DType::Undefined) dt = ops::DType::F32;
  return builder.create<ConstantOp>(loc, attrFromTensor(ops::Tensor::scalar(dt, v), builder.getContext()));
}

//===--- Normalisers -------------------------------------------------------------------------===//

// Moves constant input `k` (e.g. Squeeze's `axes` since opset 13) into attribute `name`.
static Normalizer inputToAttr(size_t k, const char *name) {
  return [k, name](NodeImport &n) {
    if (n.has(k)) {
      auto v = n.constInts(k);
      if (!v) return n.fail(std::string("input '") + name + "' must be a compile-time constant");
      n.attrs.set(name, n.builder.getDenseI64ArrayAttr(*v));
    }
    if (n.operands.size() > k) n.operands.resize(k);
    return true;
  };
}

static Normalizer dropAttrs(std::vector<std::string> names) {
  return [names](NodeImport &n) {
    for (auto &a : names) n.attrs.erase(a);
    return true;
  };
}

// Before opset 13 Softmax-like ops flatten to 2-D at `axis` (default 1).
static bool softmaxLegacy(NodeImport &n) {
  auto axis = n.attrs.get("axis");
  if (!axis) n.attrs.set("axis", n.builder.getI64IntegerAttr(1));
  n.attrs.set("coerce_2d", n.builder.getI64IntegerAttr(1));
  return true;
}

static std::optional<double> floatAttr(NodeImport &n, const char *name) {
  if (auto a = dyn_cast_or_null<FloatAttr>(n.attrs.get(name))) return a.getValueAsDouble();
  return std::nullopt;
}

// Clip before opset 11: min/max attributes → scalar inputs.
static bool clipLegacy(NodeImport &n) {
  Value x = n.operands[0];
  auto mn = floatAttr(n, "min"), mx = floatAttr(n, "max");
  n.operands = {x, mn ? n.constScalarLike(x, *mn) : n.noneValue, mx ? n.constScalarLike(x, *mx) : n.noneValue};
  n.attrs.erase("min");
  n.attrs.erase("max");
  return true;
}

// Pad before opset 11: pads/value attributes → inputs.
static bool padLegacy(NodeImport &n) {
  auto pads = dyn_cast_or_null<DenseI64ArrayAttr>(n.attrs.get("pads"));
  if (!pads) return n.fail("Pad needs a 'pads' attribute before opset 11");
  Value x = n.operands[0];
  double value = floatAttr(n, "value").value_or(0.0);
  std::vector<int64_t> p(pads.asArrayRef().begin(), pads.asArrayRef().end());
  n.operands = {x, n.constI64(p), n.constScalarLike(x, value), n.noneValue};
  n.attrs.erase("pads");
  n.attrs.erase("value");
  return true;
}

static bool padFill(NodeImport &n) {
  while (n.operands.size() < 4) n.operands.push_back(n.noneValue);
  return true;
}

static std::vector<int64_t> intsAttr(NodeImport &n, const char *name) {
  if (auto a = dyn_cast_or_null<DenseI64ArrayAttr>(n.attrs.get(name)))
    return std::vector<int64_t>(a.asArrayRef().begin(), a.asArrayRef().end());
  return {};
}

// Slice before opset 10: starts/ends/axes attributes → inputs.
static bool sliceLegacy(NodeImport &n) {
  Value x = n.operands[0];
  auto starts = intsAttr(n, "starts"), ends = intsAttr(n, "ends"), axes = intsAttr(n, "axes");
  n.operands = {x, n.constI64(starts), n.constI64(ends), axes.empty() ? n.noneValue : n.constI64(axes), n.noneValue};
  n.attrs.erase("starts");
  n.attrs.erase("ends");
  n.attrs.erase("axes");
  return true;
}

static bool fillOptional(NodeImport &n, size_t count) {
  while (n.operands.size() < count) n.operands.push_back(n.noneValue);
  return true;
}

// TopK before opset 10: k attribute → input.
static bool topkLegacy(NodeImport &n) {
  auto k = dyn_cast_or_null<IntegerAttr>(n.attrs.get("k"));
  if (!k) return n.fail("TopK needs a 'k' attribute before opset 10");
  n.operands.push_back(n.constI64({k.getInt()}));
  n.attrs.erase("k");
  return true;
}

static bool batchNorm(NodeImport &n) {
  int outputs = 0;
  for (auto &o : n.node.output()) outputs += !o.empty();
  if (outputs > 1) return n.fail("BatchNormalization in training mode (running statistics outputs) is not supported");
  n.attrs.erase("spatial");
  n.attrs.erase("is_test");
  n.attrs.erase("consumed_inputs");
  return true;
}

static Normalizer chain(std::vector<Normalizer> fs) {
  return [fs](NodeImport &n) {
    for (auto &f : fs)
      if (!f(n)) return false;
    return true;
  };
}

//===--- The table ---------------------------------------------------------------------------===//

const std::vector<OpEntry> &opTable() {
  static const std::vector<OpEntry> table = [] {
    std::vector<OpEntry> t;
    auto add = [&](const char *op, int lo, int hi, Normalizer f = {}) { t.push_back({"", op, lo, hi, std::move(f)}); };
    auto optional = [](size_t count) { return [count](NodeImport &n) { return fillOptional(n, count); }; };
    add("Gemm", kMinOpset, kMaxOpset, chain({dropAttrs({"broadcast"}), optional(3)}));
    add("Conv", kMinOpset, kMaxOpset, optional(3));
    add("ConvTranspose", kMinOpset, kMaxOpset, optional(3));
    add("LayerNormalization", 17, kMaxOpset, optional(3));
    add("Einsum", 12, kMaxOpset);
    add("QuantizeLinear", 10, kMaxOpset, optional(3));
    add("DequantizeLinear", 10, kMaxOpset, optional(3));
    add("Clip", kMinOpset, 10, clipLegacy);
    add("Clip", 11, kMaxOpset, optional(3));
    add("BatchNormalization", kMinOpset, kMaxOpset, batchNorm);
    for (const char *op : {"Softmax", "LogSoftmax", "Hardmax"}) {
      add(op, kMinOpset, 12, softmaxLegacy);
      add(op, 13, kMaxOpset);
    }
    // Reduce ops: axes became an input at opset 13 (ReduceSum) or 18 (the others).
    for (const char *op : {"ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSum",
                           "ReduceLogSumExp", "ReduceSumSquare"}) {
      add(op, kMinOpset, 17);
      add(op, 18, kMaxOpset, inputToAttr(1, "axes"));
    }
    add("ReduceSum", kMinOpset, 12);
    add("ReduceSum", 13, kMaxOpset, inputToAttr(1, "axes"));
    add("Squeeze", kMinOpset, 12);
    add("Squeeze", 13, kMaxOpset, inputToAttr(1, "axes"));
    add("Unsqueeze", kMinOpset, 12);
    add("Unsqueeze", 13, kMaxOpset, inputToAttr(1, "axes"));
    add("Split", kMinOpset, 12);
    add("Split", 13, kMaxOpset, inputToAttr(1, "split"));
    add("TopK", kMinOpset, 9, topkLegacy);
    add("TopK", 10, kMaxOpset);
    add("Slice", kMinOpset, 9, sliceLegacy);
    add("Slice", 10, kMaxOpset, optional(5));
    add("Pad", kMinOpset, 10, padLegacy);
    add("Pad", 11, kMaxOpset, padFill);
    add("Resize", 11, kMaxOpset, optional(4));
    add("Upsample", kMinOpset, 9, optional(2));
    add("Trilu", 14, kMaxOpset, optional(2));
    add("Dropout", kMinOpset, 11, chain({dropAttrs({"ratio", "is_test"}), optional(3)}));
    add("Dropout", 12, kMaxOpset, optional(3));
    // Vision, losses, signal processing: optional inputs filled; older defaults made explicit.
    add("Scatter", 9, 10);                       // (deprecated by ScatterElements at 11)
    add("RoiAlign", 10, 15, [](NodeImport &n) {  // opset 10's sampling grid has no half-pixel shift
      if (!n.attrs.get("coordinate_transformation_mode"))
        n.attrs.set("coordinate_transformation_mode", n.builder.getStringAttr("output_half_pixel"));
      return true;
    });
    add("RoiAlign", 16, kMaxOpset);
    add("MeanVarianceNormalization", 9, kMaxOpset);  // (opset 1's across_channels form: not supported)
    add("MaxUnpool", 9, kMaxOpset, optional(3));
    add("NonMaxSuppression", 10, kMaxOpset, optional(5));
    add("NegativeLogLikelihoodLoss", 12, kMaxOpset, optional(3));
    add("SoftmaxCrossEntropyLoss", 12, kMaxOpset, optional(3));
    add("DFT", 17, 19, optional(2));  // (opset 20 makes axis an input)
    add("STFT", 17, kMaxOpset, optional(4));
    // Opsets 1–6: ops whose meaning is today's, less the `consumed_inputs` attribute of opsets < 6
    // (a memory-reuse hint). Binary ops are not here: before opset 7 they broadcast by attribute.
    for (const char *op : {"Elu",           "Selu",
                           "HardSigmoid",   "Softplus",
                           "Softsign",      "Relu",
                           "LeakyRelu",     "Sigmoid",
                           "Tanh",          "Not",
                           "Abs",           "Neg",
                           "Exp",           "Log",
                           "Sqrt",          "Reciprocal",
                           "Floor",         "Ceil",
                           "Identity",      "GlobalAveragePool",
                           "GlobalMaxPool", "InstanceNormalization"}) {
      add(op, kOldestOpset, kMinOpset - 1, dropAttrs({"consumed_inputs"}));
      add(op, kMinOpset, kMaxOpset);
    }
    add("ReduceLogSum", kOldestOpset, kMinOpset - 1);  // (its other opsets: with the Reduce ops above)
    // Recurrent layers: every optional operand position present (none when absent).
    add("LSTM", kMinOpset, kMaxOpset, optional(8));
    add("GRU", kMinOpset, kMaxOpset, optional(6));
    add("RNN", kMinOpset, kMaxOpset, optional(6));
    // onnxruntime's quantized ops: the integer products' optional zero points; the contrib ops of
    // com.microsoft (opset 1) that its quantizer writes, with their optional operands.
    add("MatMulInteger", 10, kMaxOpset, optional(4));
    add("ConvInteger", 10, kMaxOpset, optional(4));
    add("QLinearConv", 10, kMaxOpset, optional(9));
    add("QLinearMatMul", 10, kMaxOpset);
    add("DynamicQuantizeLinear", 11, kMaxOpset);
    auto addMs = [&](const char *op, Normalizer f = {}) { t.push_back({"com.microsoft", op, 1, 1, std::move(f)}); };
    for (const char *op : {"QLinearAdd", "QLinearMul"}) addMs(op, optional(8));
    for (const char *op : {"QLinearSigmoid", "QLinearLeakyRelu", "QLinearAveragePool"}) addMs(op, optional(5));
    addMs("QLinearGlobalAveragePool");
    addMs("QLinearConcat");
    addMs("DynamicQuantizeMatMul", optional(5));
    addMs("MatMulIntegerToFloat", optional(7));
    addMs("QGemm", optional(9));
    addMs("DynamicQuantizeLSTM", optional(12));
    return t;
  }();
  return table;
}

std::optional<OperationName> importableOp(MLIRContext &ctx, StringRef onnxType, bool *domainKnown) {
  // The ONNX op types of the dialect's ops (ODS, Kiln_Op's `onnx`) → op names: the same for every
  // context, so read once from the first and kept as names (never as a context's objects: a
  // context made later may reuse a destroyed one's address, as the tuner's builds do).
  static const llvm::StringMap<std::string> names = [&] {
    llvm::StringMap<std::string> m;
    for (RegisteredOperationName op : ctx.getRegisteredOperations())
      if (op.getDialectNamespace() == KilnDialect::getDialectNamespace() && !op.hasTrait<OpTrait::KilnInternal>())
        if (auto *sem = op.getInterface<ShapeInferenceOpInterface>())
          m.try_emplace(sem->getOnnxOpType(), op.getStringRef().str());
    return m;
  }();
  if (domainKnown) {
    // "domain::Op": does the dialect have ops of that domain at all?
    size_t sep = onnxType.find("::");
    *domainKnown = sep == StringRef::npos;
    for (auto &entry : names)
      if (!*domainKnown && entry.getKey().starts_with(onnxType.substr(0, sep + 2))) *domainKnown = true;
  }
  auto found = names.find(onnxType);
  if (found == names.end()) return std::nullopt;
  if (std::optional<RegisteredOperationName> op = RegisteredOperationName::lookup(found->second, &ctx))
    return OperationName(*op);
  return std::nullopt;
}

const OpEntry *findOpEntry(const std::string &domain, const std::string &opType, int64_t opset, bool *anyVersion) {
  std::string d = domain == "ai.onnx" ? "" : domain;
  if (anyVersion) *anyVersion = false;
  for (const OpEntry &e : opTable()) {
    if (e.domain != d || e.opType != opType) continue;
    if (anyVersion) *anyVersion = true;
    if (opset >= e.minOpset && opset <= e.maxOpset) return &e;
  }
  return nullptr;
}

}  // namespace kiln

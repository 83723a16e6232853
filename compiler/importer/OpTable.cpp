#include "compiler/importer/OpTable.h"

#include "compiler/ir/KilnDialect.h"
#include "compiler/ir/TensorConversion.h"

#include "onnx/onnx-ml.pb.h"

using namespace mlir;

namespace kiln {

bool NodeImport::has(size_t k) const {
  return k < operands.size() && !isa<NoneType>(operands[k].getType());
}

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
      if (!v)
        return n.fail(std::string("input '") + name + "' must be a compile-time constant");
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
  n.operands = {x, mn ? n.constScalarLike(x, *mn) : n.noneValue,
                mx ? n.constScalarLike(x, *mx) : n.noneValue};
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
  n.operands = {x, n.constI64(starts), n.constI64(ends), axes.empty() ? n.noneValue : n.constI64(axes),
                n.noneValue};
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
    auto add = [&](const char *op, const char *mn, int lo = kMinOpset, int hi = kMaxOpset,
                   Normalizer f = {}) { t.push_back({"", op, lo, hi, mn, std::move(f)}); };
    // Same form at every supported opset.
    const std::pair<const char *, const char *> plain[] = {
        {"Sqrt", "sqrt"}, {"Exp", "exp"}, {"Log", "log"}, {"Neg", "neg"}, {"Abs", "abs"},
        {"Reciprocal", "reciprocal"}, {"Floor", "floor"}, {"Ceil", "ceil"}, {"Round", "round"},
        {"Sign", "sign"}, {"Sin", "sin"}, {"Cos", "cos"}, {"Tan", "tan"}, {"Asin", "asin"},
        {"Acos", "acos"}, {"Atan", "atan"}, {"Sinh", "sinh"}, {"Cosh", "cosh"},
        {"Asinh", "asinh"}, {"Acosh", "acosh"}, {"Atanh", "atanh"}, {"Erf", "erf"},
        {"IsNaN", "isnan"}, {"IsInf", "isinf"}, {"Not", "not"}, {"Relu", "relu"},
        {"Sigmoid", "sigmoid"}, {"Tanh", "tanh"}, {"Softsign", "softsign"},
        {"Softplus", "softplus"}, {"Mish", "mish"}, {"HardSwish", "hard_swish"},
        {"Identity", "identity"}, {"Size", "size"}, {"GlobalAveragePool", "global_average_pool"},
        {"GlobalMaxPool", "global_max_pool"}, {"LeakyRelu", "leaky_relu"}, {"Gelu", "gelu"},
        {"HardSigmoid", "hard_sigmoid"}, {"Elu", "elu"}, {"Selu", "selu"}, {"Celu", "celu"},
        {"ThresholdedRelu", "thresholded_relu"}, {"Shrink", "shrink"}, {"Cast", "cast"},
        {"Add", "add"}, {"Sub", "sub"}, {"Mul", "mul"}, {"Div", "div"}, {"Pow", "pow"},
        {"And", "and"}, {"Or", "or"}, {"Xor", "xor"}, {"Equal", "equal"}, {"Less", "less"},
        {"Greater", "greater"}, {"LessOrEqual", "less_or_equal"},
        {"GreaterOrEqual", "greater_or_equal"}, {"PRelu", "prelu"}, {"MatMul", "matmul"},
        {"CastLike", "cast_like"}, {"Expand", "expand"}, {"Tile", "tile"}, {"Mod", "mod"},
        {"BitShift", "bit_shift"}, {"Reshape", "reshape"}, {"Gather", "gather"},
        {"GatherElements", "gather_elements"}, {"Sum", "sum"}, {"Mean", "mean"}, {"Min", "min"},
        {"Max", "max"}, {"Concat", "concat"}, {"Where", "where"},
        {"InstanceNormalization", "instance_normalization"}, {"ArgMax", "argmax"},
        {"ArgMin", "argmin"}, {"CumSum", "cumsum"}, {"MaxPool", "max_pool"},
        {"AveragePool", "average_pool"}, {"LpPool", "lp_pool"}, {"Flatten", "flatten"},
        {"Transpose", "transpose"}, {"Shape", "shape"}, {"DepthToSpace", "depth_to_space"},
        {"SpaceToDepth", "space_to_depth"}, {"EyeLike", "eye_like"},
        {"ConstantOfShape", "constant_of_shape"}, {"Range", "range"}, {"OneHot", "one_hot"},
    };
    for (auto &[op, mn] : plain) add(op, mn);

    add("Gemm", "gemm", kMinOpset, kMaxOpset,
        chain({dropAttrs({"broadcast"}), [](NodeImport &n) { return fillOptional(n, 3); }}));
    auto optional3 = [](NodeImport &n) { return fillOptional(n, 3); };
    add("Conv", "conv", kMinOpset, kMaxOpset, optional3);
    add("ConvTranspose", "conv_transpose", kMinOpset, kMaxOpset, optional3);
    add("LayerNormalization", "layer_normalization", 17, kMaxOpset, optional3);
    add("Einsum", "einsum", 12, kMaxOpset);
    add("QuantizeLinear", "quantize_linear", 10, kMaxOpset, optional3);
    add("DequantizeLinear", "dequantize_linear", 10, kMaxOpset, optional3);
    add("Clip", "clip", kMinOpset, 10, clipLegacy);
    add("Clip", "clip", 11, kMaxOpset, [](NodeImport &n) { return fillOptional(n, 3); });
    add("BatchNormalization", "batch_normalization", kMinOpset, kMaxOpset, batchNorm);
    for (const char *op : {"Softmax", "LogSoftmax", "Hardmax"}) {
      std::string mn = op == std::string("Softmax") ? "softmax"
                       : op == std::string("LogSoftmax") ? "log_softmax" : "hardmax";
      add(op, mn.c_str(), kMinOpset, 12, softmaxLegacy);
      add(op, mn.c_str(), 13, kMaxOpset);
    }
    // Reduce ops: axes became an input at opset 13 (ReduceSum) or 18 (the others).
    const std::pair<const char *, const char *> reduces[] = {
        {"ReduceMean", "reduce_mean"}, {"ReduceMax", "reduce_max"}, {"ReduceMin", "reduce_min"},
        {"ReduceProd", "reduce_prod"}, {"ReduceL1", "reduce_l1"}, {"ReduceL2", "reduce_l2"},
        {"ReduceLogSum", "reduce_log_sum"}, {"ReduceLogSumExp", "reduce_log_sum_exp"},
        {"ReduceSumSquare", "reduce_sum_square"}};
    for (auto &[op, mn] : reduces) {
      add(op, mn, kMinOpset, 17);
      add(op, mn, 18, kMaxOpset, inputToAttr(1, "axes"));
    }
    add("ReduceSum", "reduce_sum", kMinOpset, 12);
    add("ReduceSum", "reduce_sum", 13, kMaxOpset, inputToAttr(1, "axes"));
    add("Squeeze", "squeeze", kMinOpset, 12);
    add("Squeeze", "squeeze", 13, kMaxOpset, inputToAttr(1, "axes"));
    add("Unsqueeze", "unsqueeze", kMinOpset, 12);
    add("Unsqueeze", "unsqueeze", 13, kMaxOpset, inputToAttr(1, "axes"));
    add("Split", "split", kMinOpset, 12);
    add("Split", "split", 13, kMaxOpset, inputToAttr(1, "split"));
    add("TopK", "topk", kMinOpset, 9, topkLegacy);
    add("TopK", "topk", 10, kMaxOpset);
    add("Slice", "slice", kMinOpset, 9, sliceLegacy);
    add("Slice", "slice", 10, kMaxOpset, [](NodeImport &n) { return fillOptional(n, 5); });
    add("Pad", "pad", kMinOpset, 10, padLegacy);
    add("Pad", "pad", 11, kMaxOpset, padFill);
    add("Resize", "resize", 11, kMaxOpset, [](NodeImport &n) { return fillOptional(n, 4); });
    add("Upsample", "upsample", kMinOpset, 9, [](NodeImport &n) { return fillOptional(n, 2); });
    add("Trilu", "trilu", 14, kMaxOpset, [](NodeImport &n) { return fillOptional(n, 2); });
    add("Dropout", "dropout", kMinOpset, 11,
        chain({dropAttrs({"ratio", "is_test"}), [](NodeImport &n) { return fillOptional(n, 3); }}));
    add("Dropout", "dropout", 12, kMaxOpset, [](NodeImport &n) { return fillOptional(n, 3); });
    return t;
  }();
  return table;
}

const OpEntry *findOpEntry(const std::string &domain, const std::string &opType, int64_t opset,
                           bool *anyVersion) {
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

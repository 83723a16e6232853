#include "compiler/eval/Evaluator.h"

#include "compiler/ir/KilnDialect.h"
#include "compiler/ir/TensorConversion.h"

#include "llvm/ADT/DenseMap.h"

using namespace mlir;

namespace kiln {

std::optional<std::string> evaluateOp(Operation *op, const std::vector<const ops::Tensor *> &operands,
                                      std::vector<ops::Tensor> &results) {
  if (auto u = dyn_cast<UnsupportedOp>(op)) return describeOp(op) + " is not supported: " + u.getReason().str();
  auto sem = dyn_cast<ShapeInferenceOpInterface>(op);
  if (!sem) return "cannot evaluate " + op->getName().getStringRef().str();
  ops::Attrs attrs = attrsFromOp(op);
  ops::EvalContext ctx{operands, attrs, static_cast<int>(op->getNumResults())};
  if (auto err = ops::evaluate(sem.getOnnxOpType().str(), ctx, results)) return describeOp(op) + ": " + *err;
  if (results.size() != op->getNumResults())
    return describeOp(op) + ": kernel produced " + std::to_string(results.size()) + " results, the op has " +
           std::to_string(op->getNumResults());
  for (unsigned k = 0; k < results.size(); ++k) {
    ops::TensorType want = tensorTypeOf(op->getResult(k).getType());
    if (want.dtype != ops::DType::Undefined && (want.dtype != results[k].dtype || want.shape != results[k].shape))
      return describeOp(op) + ": kernel result #" + std::to_string(k) + " is " + ops::dtypeName(results[k].dtype) +
             " " + ops::shapeString(results[k].shape) + " but the op's type says " + ops::dtypeName(want.dtype) + " " +
             ops::shapeString(want.shape);
  }
  return std::nullopt;
}

// Evaluates the ops of `body` with its arguments bound to `inputs`; `outputs` receives the
// terminator's operands. Kernel regions (kiln.fused) recurse into their bodies.
static std::optional<std::string> evaluateBlock(Block &body, const std::vector<ops::Tensor> &inputs,
                                                std::vector<ops::Tensor> &outputs, const OpObserver &observe,
                                                const ResultObserver &onResults) {
  if (inputs.size() != body.getNumArguments())
    return "function takes " + std::to_string(body.getNumArguments()) + " inputs, got " + std::to_string(inputs.size());
  llvm::DenseMap<Value, ops::Tensor> env;
  // Remaining uses per value, to free intermediates early.
  llvm::DenseMap<Value, int64_t> usesLeft;
  auto countUses = [&](Value v) {
    int64_t n = 0;
    for (auto &u : v.getUses()) (void)u, ++n;
    usesLeft[v] = n;
  };
  for (unsigned k = 0; k < inputs.size(); ++k) {
    Value a = body.getArgument(k);
    ops::TensorType t = tensorTypeOf(a.getType());
    if (t.dtype != inputs[k].dtype || t.shape != inputs[k].shape)
      return "input #" + std::to_string(k) + " is " + ops::dtypeName(inputs[k].dtype) + " " +
             ops::shapeString(inputs[k].shape) + ", expected " + ops::dtypeName(t.dtype) + " " +
             ops::shapeString(t.shape);
    env[a] = inputs[k];
    countUses(a);
  }
  for (Operation &op : body.without_terminator()) {
    std::vector<ops::Tensor> results;
    if (auto c = dyn_cast<ConstantOp>(op)) {
      results.push_back(tensorFromAttr(c.getValue()));
    } else if (isa<NoneOp>(op)) {
      continue;
    } else {
      std::vector<const ops::Tensor *> args;
      for (Value v : op.getOperands()) {
        if (isa<NoneType>(v.getType())) {
          args.push_back(nullptr);
          continue;
        }
        auto it = env.find(v);
        if (it == env.end()) return describeOp(&op) + ": operand has no value";
        args.push_back(&it->second);
      }
      if (observe) observe(&op, args);
      if (auto fused = dyn_cast<FusedOp>(op)) {
        std::vector<ops::Tensor> in;
        for (const ops::Tensor *t : args) in.push_back(*t);
        if (auto err = evaluateBlock(fused.getBody().front(), in, results, observe, onResults)) return err;
      } else if (auto err = evaluateOp(&op, args, results)) {
        return err;
      }
      if (onResults) onResults(&op, results);
      for (Value v : op.getOperands()) {
        auto it = usesLeft.find(v);
        if (it != usesLeft.end() && --it->second == 0) env.erase(v);
      }
    }
    for (unsigned k = 0; k < results.size(); ++k) {
      env[op.getResult(k)] = std::move(results[k]);
      countUses(op.getResult(k));
    }
  }
  outputs.clear();
  for (Value v : body.getTerminator()->getOperands()) {
    auto it = env.find(v);
    if (it == env.end()) return std::string("a result has no value");
    outputs.push_back(it->second);
  }
  return std::nullopt;
}

std::optional<std::string> evaluateFunction(func::FuncOp f, const std::vector<ops::Tensor> &inputs,
                                            std::vector<ops::Tensor> &outputs, const OpObserver &observe,
                                            const ResultObserver &onResults) {
  return evaluateBlock(f.getBody().front(), inputs, outputs, observe, onResults);
}

// ConstantOfShape of a constant shape is a splat, which the IR holds as one element whatever its
// size: folded up to this many elements (a 4096x9216 Gemm weight of a model with its weights
// stripped is 37.7M), so it needs no kernel. The engine stores what the model asks for.
constexpr int64_t kMaxSplatFoldElements = int64_t(1) << 30;
// The largest size-preserving fold above the caller's limit: 64M elements (the evaluator holds
// operands and result as doubles: ~1 GiB), beyond which the op stays a kernel.
constexpr int64_t kMaxSizePreservingFold = int64_t(1) << 26;

static FoldResult foldConstantOfShape(ConstantOfShapeOp op, OpBuilder &builder) {
  FoldResult r;
  auto rt = dyn_cast<RankedTensorType>(op.getType());
  if (!rt || !rt.hasStaticShape() || rt.getNumElements() > kMaxSplatFoldElements ||
      !op.getX().getDefiningOp<ConstantOp>())
    return r;
  Attribute element = builder.getZeroAttr(rt.getElementType());  // ONNX: float 0 by default
  if (auto v = op.getValueAttr()) {
    auto dense = dyn_cast<DenseElementsAttr>(v);
    if (!dense || dense.getNumElements() != 1 || dense.getElementType() != rt.getElementType()) return r;
    element = *dense.getValues<Attribute>().begin();
  }
  r.values.push_back(builder.create<ConstantOp>(op.getLoc(), DenseElementsAttr::get(rt, element)).getResult());
  return r;
}

FoldResult foldWithEvaluator(Operation *op, OpBuilder &builder, int64_t maxElements) {
  FoldResult r;
  if (auto cos = dyn_cast<ConstantOfShapeOp>(op)) return foldConstantOfShape(cos, builder);
  if (!isa<ShapeInferenceOpInterface>(op)) return r;
  int64_t total = 0;
  for (Type t : op->getResultTypes()) {
    auto rt = dyn_cast<RankedTensorType>(t);
    if (!rt || !rt.hasStaticShape()) return r;
    total += rt.getNumElements();
  }
  // Above the limit, an op folds when its result is no larger than a constant operand (a Cast and
  // scale of int8-stored weights, a Transpose): folding then never multiplies a model's size, and
  // the engine does not redo the same arithmetic on every run (all-MiniLM's 11.7M-element word
  // embedding dequantized in each inference).
  if (total > maxElements) {
    int64_t largest = 0;
    for (Value v : op->getOperands())
      if (auto rt = dyn_cast<RankedTensorType>(v.getType()); rt && rt.hasStaticShape() && v.getDefiningOp<ConstantOp>())
        largest = std::max(largest, rt.getNumElements());
    if (total > largest || total > kMaxSizePreservingFold) return r;
  }
  std::vector<ops::Tensor> storage;
  storage.reserve(op->getNumOperands());
  std::vector<const ops::Tensor *> args;
  // Shape and Size need only their operand's type: fold them without its value.
  bool typeOnly = isa<ShapeOp, SizeOp>(op);
  for (Value v : op->getOperands()) {
    if (isa<NoneType>(v.getType())) {
      args.push_back(nullptr);
      continue;
    }
    auto c = v.getDefiningOp<ConstantOp>();
    if (typeOnly && !c) {
      ops::TensorType t = tensorTypeOf(v.getType());
      if (t.dtype == ops::DType::Undefined) return r;
      storage.emplace_back(t.dtype, ops::Shape{});  // shape carried, no elements read
      storage.back().shape = t.shape;
    } else {
      if (!c) return r;
      storage.push_back(tensorFromAttr(c.getValue()));
    }
    args.push_back(&storage.back());
  }
  std::vector<ops::Tensor> results;
  if (auto err = evaluateOp(op, args, results)) {
    r.error = *err;
    return r;
  }
  for (auto &t : results) {
    auto c = builder.create<ConstantOp>(op->getLoc(), attrFromTensor(t, op->getContext()));
    r.values.push_back(c.getResult());
  }
  return r;
}

}  // namespace kiln

// Half-precision graphs (see Passes.td). Types are rewritten in program order: block arguments
// get entry casts, constants are converted where a converted op uses them, every op is
// re-inferred with its new operand types, and outputs are cast back to their declared types.
#include "compiler/ir/Builders.h"
#include "compiler/ir/TensorConversion.h"
#include "passes/PassUtil.h"
#include "passes/Passes.h"

#include "llvm/ADT/DenseMap.h"

#include <cmath>

namespace kiln {
#define GEN_PASS_DEF_PRECISION
#include "passes/Passes.h.inc"

KILN_KNOB(kPrecision, {"precision",
                       {"fp32", "fp16", "bf16", "int8", "fp8"},
                       "fp32",
                       "Storage precision of float tensors (matrix products, reductions and normalisations "
                       "accumulate in fp32); int8 / fp8: matrix products on int8 / fp8 e4m3 tensor cores "
                       "(sm_89+ for fp8) from a calibration (--calib), the rest fp16",
                       knobs::Tier::Fast,
                       "passes/Precision.cpp",
                       "precision",
                       {"Conv", "MatMul", "Gemm"}});

namespace {

using namespace mlir;

// Operands that ONNX requires to be float32 whatever the data type (parameters, not data).
bool keepsF32(Operation *op, unsigned operand) {
  std::string t = onnxTypeOf(op);
  return (t == "Resize" && (operand == 1 || operand == 2)) || (t == "Upsample" && operand == 1) ||
         (t == "QuantizeLinear" && operand == 1) || (t == "QuantizedMatMul" && operand == 2) ||
         ((t == "QuantizedConv" || t == "QuantizedConvNhwc") && operand >= 2) ||
         // Constant sampling coordinates (half precision moves a sample by up to half a pixel at 1000 px).
         ((t == "GridSample" || t == "RoiAlign") && operand == 1);
}

class Converter {
 public:
  Converter(func::FuncOp f, const std::string &precision, const knobs::Route &route)
      : f_(f),
        global_(precision),
        half_(precision == "fp16" ? ops::DType::F16 : ops::DType::BF16),
        route_(route),
        b_(f.getContext()) {}

  LogicalResult run() {
    Block &body = f_.getBody().front();
    b_.setInsertionPointToStart(&body);
    for (BlockArgument a : body.getArguments()) {
      if (!isF32Tensor(a.getType()) || a.use_empty()) continue;
      Value c = cast(a, half_, a.getLoc());
      a.replaceAllUsesExcept(c, c.getDefiningOp());
      wasF32_.insert(c);
      islandResults_[c] = a;  // (float32 islands read the input itself, not its half rounding)
    }
    SmallVector<Operation *> order;
    for (Operation &op : body.without_terminator()) order.push_back(&op);
    for (Operation *op : order) {
      if (isa<ConstantOp, NoneOp>(op) || isCast_(op)) continue;
      if (failed(convert(op))) return failure();
    }
    // Results keep the function's declared types.
    Operation *ret = body.getTerminator();
    b_.setInsertionPoint(ret);
    auto results = f_.getFunctionType().getResults();
    for (unsigned k = 0; k < ret->getNumOperands(); ++k) {
      Value v = ret->getOperand(k);
      if (v.getType() == results[k]) continue;
      ret->setOperand(k, cast(v, tensorTypeOf(results[k]).dtype, v.getLoc()));
    }
    // An input's half cast that only float32 islands read is left without users.
    SmallVector<Operation *> casts(inserted_.begin(), inserted_.end());
    for (bool again = true; again;) {
      again = false;
      for (Operation *&c : casts)
        if (c && c->use_empty()) c->erase(), c = nullptr, again = true;
    }
    return success();
  }

  std::vector<std::string> remarks;

 private:
  // A Cast this pass inserted (skipped when walking).
  bool isCast_(Operation *op) { return inserted_.count(op) != 0; }

  Value cast(Value v, ops::DType to, Location loc) {
    std::string err;
    Operation *c = createCast(b_, loc, v, to, &err);
    inserted_.insert(c);
    return c->getResult(0);
  }

  // The half-precision copy of an f32 constant (made once, next to the original).
  Value halfConstant(ConstantOp c) {
    auto it = halfConstants_.find(c);
    if (it != halfConstants_.end()) return it->second;
    // Rounded to nearest, finite values saturating (never overflowing to inf).
    std::vector<uint8_t> f32 = bytesFromAttr(c.getValue());
    if (int64_t(f32.size()) != c.getValue().getNumElements() * 4)
      f32 = ops::tensorToBytes(tensorFromAttr(c.getValue()));  // (bytes not held raw: through the tensor)
    std::vector<uint8_t> bytes =
        ops::halfBytesFromF32(half_, reinterpret_cast<const float *>(f32.data()), f32.size() / 4);
    auto type =
        RankedTensorType::get(mlir::cast<ShapedType>(c.getType()).getShape(), elementTypeOf(half_, b_.getContext()));
    OpBuilder::InsertionGuard g(b_);
    b_.setInsertionPointAfter(c);
    Value v = b_.create<ConstantOp>(c.getLoc(), attrFromBytes(type, bytes)).getResult();
    halfConstants_[c] = v;
    return v;
  }

  // Runs `op` in float32: casts its half operands up, its float results back down (`why`,
  // if any, becomes a remark).
  LogicalResult island(Operation *op, const std::string &why) {
    b_.setInsertionPoint(op);
    for (OpOperand &o : op->getOpOperands()) {
      auto t = tensorTypeOf(o.get().getType());
      // A float32 island's result (or a graph input) reaches the next island as it was, not through half.
      if (auto it = islandResults_.find(o.get()); it != islandResults_.end())
        o.set(it->second);
      else if (t.dtype == half_ && wasF32_.count(o.get()))
        o.set(cast(o.get(), ops::DType::F32, op->getLoc()));
    }
    std::string err;
    if (!reinferResultTypes(op, &err)) return op->emitError(err);
    b_.setInsertionPointAfter(op);
    for (Value r : op->getResults()) {
      // Users that also run in fp32 read the fp32 value (a chain of islands never goes through
      // fp16 between its ops); the others read it cast down.
      if (!isF32Tensor(r.getType()) || llvm::all_of(r.getUsers(), [&](Operation *u) { return runsInFp32(u); }))
        continue;
      Value c = cast(r, half_, op->getLoc());
      r.replaceUsesWithIf(
          c, [&](OpOperand &use) { return use.getOwner() != c.getDefiningOp() && !runsInFp32(use.getOwner()); });
      wasF32_.insert(c);
      islandResults_[c] = r;
    }
    if (!why.empty()) remarks.push_back(describeOp(op) + " runs in fp32: " + why);
    return success();
  }

  // Whether `op` will run in fp32 (the route says so, or kiln-half-safety marked it). The return
  // reads fp32 (the function's results keep their declared types). An op that only moves its
  // operand's elements (Identity, Reshape, ...) runs in fp32 when every user is an op that does
  // and it moves a float32 value: it never rounds a value between two float32 nodes (before the
  // return, or moving a half value, it stays half: the same values, half the bytes moved).
  bool runsInFp32(Operation *op) {
    if (isa<func::ReturnOp>(op)) return true;
    if (op->hasAttr(kKeepFp32Attr)) return true;
    if (movesElementsOnly(op) && !op->use_empty() &&
        !route_.values().count("node." + nodeName(op) + "." + kPrecision.nodeSuffix))
      return llvm::all_of(op->getUsers(), [&](Operation *u) { return !isa<func::ReturnOp>(u) && runsInFp32(u); });
    return route_.get(kPrecision, nodeName(op)) == "fp32";
  }

  LogicalResult convert(Operation *op) {
    std::string node = nodeName(op);
    std::string want = route_.get(kPrecision, node);
    // (A move of a half value stays half: the same values, and half the bytes.)
    Value moved = op->getNumOperands() ? op->getOperand(0) : Value();
    if (movesElementsOnly(op) && moved && (isF32Tensor(moved.getType()) || islandResults_.count(moved)) &&
        runsInFp32(op))
      return island(op, "");
    if (want == "int8" || want == "fp8") want = global_;  // (kiln-quantize took the products it can run)
    if (want == "fp32") return island(op, "node." + node + ".precision=fp32");
    if (Attribute mark = op->getAttr(kKeepFp32Attr)) {
      op->removeAttr(kKeepFp32Attr);
      // A reason: kiln-half-safety's (said in a remark); a unit mark: the quantization arithmetic
      // kiln-lower-quantized-ops made, which rounds as onnxruntime's only in fp32 (quiet).
      if (auto why = dyn_cast<StringAttr>(mark))
        return island(op, why.str() + " (node." + node + ".precision=fp16 overrides)");
      return island(op, "");
    }
    // An int8/fp8 product scales its sums (and adds a conv's bias) in fp32; its result is
    // stored in half precision.
    if (isa<QuantizedMatMulOp, QuantizedConvOp, QuantizedConvNhwcOp>(op)) return island(op, "");
    if (want != global_)
      return op->emitError("node." + node + ".precision=" + want + " on a " + global_ +
                           " route: fp16 and bf16 cannot be mixed in one engine");
    // Half-precision constants for float32 data operands.
    SmallVector<std::pair<unsigned, Value>> original;
    for (OpOperand &o : op->getOpOperands()) {
      auto c = o.get().getDefiningOp<ConstantOp>();
      if (!c || !isF32Tensor(c.getType()) || keepsF32(op, o.getOperandNumber())) continue;
      original.push_back({o.getOperandNumber(), o.get()});
      o.set(halfConstant(c));
      wasF32_.insert(o.get());
    }
    if (auto castOp = dyn_cast<CastOp>(op); castOp && castOp.getTo() == int64_t(ops::DType::F32))
      castOp.setTo(int64_t(half_));
    std::string err;
    if (!reinferResultTypes(op, &err)) {
      // The op has no half form: restore its constants and run it in float32.
      for (auto &[k, v] : original) op->setOperand(k, v);
      return island(op, err);
    }
    for (Value r : op->getResults())
      if (tensorTypeOf(r.getType()).dtype == half_) wasF32_.insert(r);
    return success();
  }

  func::FuncOp f_;
  std::string global_;
  ops::DType half_;
  const knobs::Route &route_;
  OpBuilder b_;
  llvm::DenseMap<Operation *, Value> halfConstants_;
  llvm::DenseSet<Operation *> inserted_;
  llvm::DenseSet<Value> wasF32_;                // half values standing for float32 ones of the original graph
  llvm::DenseMap<Value, Value> islandResults_;  // half cast of a float32 value (island result, input) → it
};

struct PrecisionPass : impl::PrecisionBase<PrecisionPass> {
  using PrecisionBase::PrecisionBase;

  void runOnOperation() override {
    knobs::Route r;
    if (!readRoute(route, getOperation(), r)) return signalPassFailure();
    // int8/fp8 products were chosen before this pass; such a route keeps the rest in fp16.
    std::string p = r.get(kPrecision) == "int8" || r.get(kPrecision) == "fp8" ? "fp16" : r.get(kPrecision);
    bool anyNodeHalf = false;
    for (auto &[k, v] : r.values())
      if (k.rfind("node.", 0) == 0 && (v == "fp16" || v == "bf16")) anyNodeHalf = true;
    if (p == "fp32" && !anyNodeHalf) return;
    if (p == "fp32") {
      getOperation().emitError("node.<name>.precision=fp16|bf16 on an fp32 route is not supported yet; "
                               "set precision=fp16|bf16 and mark fp32 nodes instead");
      return signalPassFailure();
    }
    Converter c(getOperation(), p, r);
    if (failed(c.run())) return signalPassFailure();
    for (auto &m : c.remarks) getOperation().emitRemark(m);
  }
};

}  // namespace
}  // namespace kiln

// QDQ around matrix products → QuantizedMatMul, around convolutions → QuantizedConv (see
// Passes.td).
#include "compiler/ir/Builders.h"
#include "compiler/ir/TensorConversion.h"
#include "compiler/knobs/Knob.h"
#include "passes/PassUtil.h"
#include "passes/Passes.h"

namespace kiln {
#define GEN_PASS_DEF_LOWERQDQ
#include "passes/Passes.h.inc"

KILN_KNOB(kQuantProducts, {"quant.products",
                           {"auto", "int8", "float"},
                           "auto",
                           "How a model's own QDQ matrix products and convolutions (onnxruntime's quantizer, "
                           "TensorRT-style QDQ exports) run: int8 (or fp8) tensor cores on the 8-bit data, or float "
                           "(dequantized operands, products in the route's precision); auto: float on fp16/bf16 "
                           "routes, where half tensor-core products are faster than kiln's int8 kernel on every "
                           "product measured so far, int8 elsewhere. Products a route quantizes itself "
                           "(precision=int8|fp8) are always 8-bit",
                           knobs::Tier::Fast,
                           "passes/LowerQdq.cpp",
                           "quant",
                           {"MatMul", "Gemm", "Conv"}});

namespace {

using namespace mlir;

// Whether the product `node` runs on 8-bit tensor cores under route `r` (quant.products).
bool eightBit(const knobs::Route &r, const std::string &node) {
  std::string p = r.get(*knobs::findKnob("precision"), node);  // (the Precision pass's knob)
  if (p == "int8" || p == "fp8") return true;
  std::string v = r.get(kQuantProducts, node);
  return v == "int8" || (v == "auto" && p != "fp16" && p != "bf16");
}

ops::DType elementDtype(Value v) { return tensorTypeOf(v.getType()).dtype; }

// A DequantizeLinear of int8 or float8e4m3fn data with a constant float32 scale and no (or an
// all-zero) zero point: its data, scale and axis. An int8 activation (`activation`) may also be
// uint8 or have a per-tensor zero point (the int8 kernel subtracts it per column).
struct Dequant {
  Value data;
  ops::Tensor scale;
  int64_t axis = 1;
  int64_t zeroPoint = 0;
};
std::optional<Dequant> dequantOf(Value v, bool activation = false) {
  Operation *dq = v.getDefiningOp();
  if (!dq || onnxTypeOf(dq) != "DequantizeLinear") return std::nullopt;
  ops::DType t = elementDtype(dq->getOperand(0));
  if (t != ops::DType::I8 && t != ops::DType::F8E4M3 && !(activation && t == ops::DType::U8)) return std::nullopt;
  auto scale = constantValue(dq->getOperand(1));
  if (!scale || scale->dtype != ops::DType::F32 || scale->shape.size() > 1) return std::nullopt;
  int64_t zeroPoint = 0;
  if (dq->getNumOperands() > 2 && !isa<NoneType>(dq->getOperand(2).getType())) {
    auto zp = constantValue(dq->getOperand(2));
    if (!zp) return std::nullopt;
    for (int64_t k = 0; k < zp->size(); ++k)
      if (zp->get(k) != 0 && !(activation && t != ops::DType::F8E4M3 && zp->size() == 1)) return std::nullopt;
    zeroPoint = zp->size() ? zp->getInt(0) : 0;
  }
  Dequant d{dq->getOperand(0), *scale, 1, zeroPoint};
  if (auto a = dq->getAttrOfType<IntegerAttr>("axis")) d.axis = a.getInt();
  int64_t rank = cast<RankedTensorType>(d.data.getType()).getRank();
  if (d.axis < 0) d.axis += rank;
  return d;
}

// The quantized op's per-channel scale sa · sw[c] for n channels, as a constant before `op`.
Value combinedScale(OpBuilder &builder, Operation *op, const Dequant &a, const Dequant &b, int64_t n) {
  ops::Tensor scale(ops::DType::F32, {n});
  for (int64_t j = 0; j < n; ++j)
    scale.set(j, double(float(a.scale.f[0]) * float(b.scale.f[size_t(b.scale.size() == 1 ? 0 : j)])));
  return createConstant(builder, op->getLoc(), scale);
}

// Replaces `op` by the quantized op `name`(operands) when it infers op's result type; otherwise
// (shapes or types the 8-bit form does not cover) leaves op as it is.
void replaceWithQuantized(OpBuilder &builder, Operation *op, StringRef name, ArrayRef<Value> operands,
                          ArrayRef<NamedAttribute> attrs) {
  std::string error;
  Operation *q = createInferred(builder, op->getLoc(), name, operands, attrs, &error);
  if (!q || q->getResult(0).getType() != op->getResult(0).getType()) {
    if (q) q->erase();
    return;
  }
  op->getResult(0).replaceAllUsesWith(q->getResult(0));
  op->erase();
}

// Conv(DQ(xq), DQ(wq), B) → QuantizedConv(xq, wq, sa · sw[m], B): weights per output channel
// (axis 0) or per tensor.
void lowerConv(Operation *op, const Dequant &a, const Dequant &b) {
  int64_t m = cast<RankedTensorType>(b.data.getType()).getDimSize(0);
  if (b.scale.size() != 1 && (b.axis != 0 || b.scale.size() != m)) return;
  OpBuilder builder(op);
  Value s = combinedScale(builder, op, a, b, m);
  SmallVector<NamedAttribute> attrs(op->getAttrs());
  if (a.zeroPoint != 0) attrs.push_back(builder.getNamedAttr("a_zero_point", builder.getI64IntegerAttr(a.zeroPoint)));
  replaceWithQuantized(builder, op, QuantizedConvOp::getOperationName(), {a.data, b.data, s, op->getOperand(2)}, attrs);
}

struct LowerQdqPass : impl::LowerQdqBase<LowerQdqPass> {
  using LowerQdqBase::LowerQdqBase;

  void runOnOperation() override {
    knobs::Route r;
    if (!readRoute(route, getOperation(), r)) return signalPassFailure();
    std::vector<Operation *> products;
    getOperation().walk([&](Operation *op) {
      std::string t = onnxTypeOf(op);
      if (t == "MatMul" || t == "TransposedMatMul" || t == "Conv") products.push_back(op);
    });
    std::vector<std::string> noKernel, notInt8Form, keptFloat;  // node names
    auto isDequantized = [](Value v) {
      return v.getDefiningOp() && onnxTypeOf(v.getDefiningOp()) == "DequantizeLinear";
    };
    for (Operation *op : products) {
      auto a = dequantOf(op->getOperand(0), true), b = dequantOf(op->getOperand(1));
      // int8 (A may be uint8) with int8, or fp8 with fp8.
      bool sameFamily =
          a && b && (elementDtype(a->data) == ops::DType::F8E4M3) == (elementDtype(b->data) == ops::DType::F8E4M3);
      if (!sameFamily || a->scale.size() != 1) {
        // (Dequantized weights that are uint8 or have zero points, per-axis activation scales,
        // or int8 mixed with fp8.)
        if (isDequantized(op->getOperand(0)) && isDequantized(op->getOperand(1))) notInt8Form.push_back(nodeName(op));
        continue;
      }
      if (!eightBit(r, nodeName(op))) {
        keptFloat.push_back(nodeName(op));
        continue;
      }
      if (!eightBitKernelTakes(op, b->data.getDefiningOp<ConstantOp>() != nullptr)) {
        noKernel.push_back(nodeName(op));
        continue;
      }
      if (onnxTypeOf(op) == "Conv") {
        lowerConv(op, *a, *b);
        continue;
      }
      auto bt = cast<RankedTensorType>(b->data.getType());
      auto nAxis = weightChannelAxis(op, bt.getRank());  // the dimension of B indexing the columns
      if (!nAxis || cast<RankedTensorType>(a->data.getType()).getRank() < 2) continue;
      int64_t n = bt.getDimSize(*nAxis);
      if (b->scale.size() != 1 && (b->axis != *nAxis || b->scale.size() != n)) continue;
      OpBuilder builder(op);
      SmallVector<NamedAttribute> attrs;
      for (const char *p : {"perm_a", "perm_b"})
        if (auto v = op->getAttr(p)) attrs.push_back(builder.getNamedAttr(p, v));
      if (a->zeroPoint != 0) {
        if (!b->data.getDefiningOp<ConstantOp>() || bt.getRank() != 2) continue;  // (offsets need constant B)
        attrs.push_back(builder.getNamedAttr("a_zero_point", builder.getI64IntegerAttr(a->zeroPoint)));
      }
      Value s = combinedScale(builder, op, *a, *b, n);
      replaceWithQuantized(builder, op, QuantizedMatMulOp::getOperationName(), {a->data, b->data, s}, attrs);
    }
    if (!notInt8Form.empty())
      getOperation().emitRemark(std::to_string(notInt8Form.size()) +
                                " QDQ matrix products/convolutions stay float (dequantized operands): the 8-bit "
                                "kernels take int8 (or both fp8 e4m3) weights without zero points and a "
                                "per-tensor activation scale" +
                                nameList(notInt8Form));
    if (!keptFloat.empty())
      getOperation().emitRemark(std::to_string(keptFloat.size()) +
                                " QDQ matrix products/convolutions run as dequantized float products "
                                "(quant.products; int8 puts them on 8-bit tensor cores)" +
                                nameList(keptFloat));
    if (!noKernel.empty())
      getOperation().emitRemark(std::to_string(noKernel.size()) +
                                " QDQ matrix products/convolutions stay float (dequantized operands): the 8-bit "
                                "kernel needs K % 16 == 0 and operands read along K (convolutions: 2-D, "
                                "ungrouped, C % 16 == 0)" +
                                nameList(noKernel));
  }
};

}  // namespace
}  // namespace kiln

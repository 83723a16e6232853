#include "compiler/ir/TensorConversion.h"

#include "compiler/ir/KilnDialect.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/BuiltinDialect.h"

using namespace mlir;

namespace kiln {

ops::DType dtypeOf(Type t) {
  if (t.isF32()) return ops::DType::F32;
  if (t.isF64()) return ops::DType::F64;
  if (t.isF16()) return ops::DType::F16;
  if (t.isBF16()) return ops::DType::BF16;
  if (t.isFloat8E4M3FN()) return ops::DType::F8E4M3;
  if (auto it = dyn_cast<IntegerType>(t)) {
    unsigned w = it.getWidth();
    if (w == 1) return ops::DType::Bool;
    bool u = it.isUnsigned();
    switch (w) {
      case 8: return u ? ops::DType::U8 : ops::DType::I8;
      case 16: return u ? ops::DType::U16 : ops::DType::I16;
      case 32: return u ? ops::DType::U32 : ops::DType::I32;
      case 64: return u ? ops::DType::U64 : ops::DType::I64;
      default: break;
    }
  }
  return ops::DType::Undefined;
}

Type elementTypeOf(ops::DType t, MLIRContext *ctx) {
  Builder b(ctx);
  auto u = [&](unsigned w) { return IntegerType::get(ctx, w, IntegerType::Unsigned); };
  switch (t) {
    case ops::DType::F32: return b.getF32Type();
    case ops::DType::F64: return b.getF64Type();
    case ops::DType::F16: return b.getF16Type();
    case ops::DType::BF16: return b.getBF16Type();
    case ops::DType::F8E4M3: return b.getFloat8E4M3FNType();
    case ops::DType::Bool: return b.getI1Type();
    case ops::DType::I8: return b.getIntegerType(8);
    case ops::DType::I16: return b.getIntegerType(16);
    case ops::DType::I32: return b.getIntegerType(32);
    case ops::DType::I64: return b.getIntegerType(64);
    case ops::DType::U8: return u(8);
    case ops::DType::U16: return u(16);
    case ops::DType::U32: return u(32);
    case ops::DType::U64: return u(64);
    default: return Type();
  }
}

ops::TensorType tensorTypeOf(Type t) {
  ops::TensorType r;
  if (auto rt = dyn_cast<RankedTensorType>(t)) {
    r.dtype = dtypeOf(rt.getElementType());
    r.shape.assign(rt.getShape().begin(), rt.getShape().end());
  }
  return r;
}

RankedTensorType rankedTypeOf(const ops::TensorType &t, MLIRContext *ctx) {
  Type et = elementTypeOf(t.dtype, ctx);
  if (!et) return {};
  return RankedTensorType::get(t.shape, et);
}

std::vector<uint8_t> bytesFromAttr(ElementsAttr attr) {
  if (auto res = dyn_cast<DenseResourceElementsAttr>(attr)) {
    AsmResourceBlob *blob = res.getRawHandle().getBlob();
    if (!blob) return {};
    ArrayRef<char> d = blob->getData();
    return std::vector<uint8_t>(d.begin(), d.end());
  }
  auto dense = dyn_cast<DenseElementsAttr>(attr);
  if (!dense || dense.getElementType().isInteger(1)) return {};
  if (dense.isSplat()) {
    ArrayRef<char> one = dense.getRawData();
    std::vector<uint8_t> out;
    out.reserve(one.size() * dense.getNumElements());
    for (int64_t k = 0; k < dense.getNumElements(); ++k) out.insert(out.end(), one.begin(), one.end());
    return out;
  }
  ArrayRef<char> d = dense.getRawData();
  return std::vector<uint8_t>(d.begin(), d.end());
}

ops::Tensor tensorFromAttr(ElementsAttr attr) {
  auto type = cast<ShapedType>(attr.getType());
  ops::DType dt = dtypeOf(type.getElementType());
  ops::Shape shape(type.getShape().begin(), type.getShape().end());
  if (auto dense = dyn_cast<DenseElementsAttr>(attr); dense && dt == ops::DType::Bool) {
    ops::Tensor t(dt, shape);
    int64_t k = 0;
    for (bool v : dense.getValues<bool>()) t.i[k++] = v;
    return t;
  }
  std::vector<uint8_t> bytes = bytesFromAttr(attr);
  return ops::tensorFromBytes(dt, shape, bytes.data(), bytes.size());
}

ElementsAttr resourceAttrFromBytes(RankedTensorType type, StringRef name, ArrayRef<char> bytes) {
  // 64-byte alignment so an engine writer can map weights without copying.
  AsmResourceBlob blob = HeapAsmResourceBlob::allocateAndCopyWithAlign(bytes, 64);
  return DenseResourceElementsAttr::get(type, name, std::move(blob));
}

ElementsAttr attrFromTensor(const ops::Tensor &t, MLIRContext *ctx) {
  RankedTensorType type = rankedTypeOf({t.dtype, t.shape}, ctx);
  if (t.dtype == ops::DType::Bool) {
    SmallVector<bool> vals(t.i.begin(), t.i.end());
    return DenseElementsAttr::get(type, vals);
  }
  return attrFromBytes(type, ops::tensorToBytes(t));
}

ElementsAttr attrFromBytes(RankedTensorType type, const std::vector<uint8_t> &bytes) {
  ArrayRef<char> raw(reinterpret_cast<const char *>(bytes.data()), bytes.size());
  if (type.getNumElements() > kInlineConstantLimit) return resourceAttrFromBytes(type, "folded", raw);
  return DenseElementsAttr::getFromRawBuffer(type, raw);
}

static ops::AttrValue convertAttr(Attribute a) {
  if (auto i = dyn_cast<IntegerAttr>(a)) return i.getValue().getSExtValue();
  if (auto f = dyn_cast<FloatAttr>(a)) return f.getValueAsDouble();
  if (auto s = dyn_cast<StringAttr>(a)) return s.getValue().str();
  if (auto ia = dyn_cast<DenseI64ArrayAttr>(a))
    return std::vector<int64_t>(ia.asArrayRef().begin(), ia.asArrayRef().end());
  if (auto fa = dyn_cast<DenseF32ArrayAttr>(a))
    return std::vector<double>(fa.asArrayRef().begin(), fa.asArrayRef().end());
  if (auto e = dyn_cast<ElementsAttr>(a)) return tensorFromAttr(e);
  if (auto arr = dyn_cast<ArrayAttr>(a)) {
    std::vector<std::string> strs;
    for (Attribute x : arr)
      if (auto s = dyn_cast<StringAttr>(x)) strs.push_back(s.getValue().str());
    return strs;
  }
  return std::string();
}

ops::Attrs attrsFromOp(Operation *op) {
  ops::Attrs attrs;
  for (NamedAttribute na : op->getAttrs()) attrs.set(na.getName().str(), convertAttr(na.getValue()));
  return attrs;
}

bool isConstant(Value v) {
  Operation *d = v.getDefiningOp();
  return d && (isa<ConstantOp>(d) || isa<NoneOp>(d));
}

std::optional<ops::Tensor> constantValue(Value v, int64_t limit) {
  auto c = v.getDefiningOp<ConstantOp>();
  if (!c) return std::nullopt;
  ElementsAttr attr = c.getValue();
  if (attr.getNumElements() > limit) return std::nullopt;
  return tensorFromAttr(attr);
}

ops::ShapeContext OperandInfo::context(int numOutputs) const {
  ops::ShapeContext ctx{types, {}, attrs, numOutputs};
  for (auto &v : values) ctx.values.push_back(v ? &*v : nullptr);
  return ctx;
}

OperandInfo operandInfo(Operation *op) {
  OperandInfo info;
  for (Value v : op->getOperands()) {
    info.types.push_back(tensorTypeOf(v.getType()));
    info.values.push_back(constantValue(v));
  }
  info.attrs = attrsFromOp(op);
  return info;
}

}  // namespace kiln

#include "passes/ElementwiseUse.h"

#include "compiler/ir/TensorConversion.h"
#include "compiler/ops/OpSemantics.h"
#include "compiler/target/Types.h"
#include "passes/PassUtil.h"

#include "mlir/IR/BuiltinTypes.h"

namespace kiln {

using namespace mlir;
using target::ElemType;

std::optional<ElemType> kernelElemType(Type e) {
  switch (dtypeOf(e)) {
    case ops::DType::F32: return ElemType::F32;
    case ops::DType::F16: return ElemType::F16;
    case ops::DType::BF16: return ElemType::BF16;
    case ops::DType::F8E4M3: return ElemType::F8E4M3;
    case ops::DType::F64: return ElemType::F64;
    case ops::DType::I64: return ElemType::I64;
    case ops::DType::I32: return ElemType::I32;
    case ops::DType::I16: return ElemType::I16;
    case ops::DType::I8: return ElemType::I8;
    case ops::DType::U64: return ElemType::U64;
    case ops::DType::U32: return ElemType::U32;
    case ops::DType::U16: return ElemType::U16;
    case ops::DType::U8: return ElemType::U8;
    case ops::DType::Bool: return ElemType::Bool;
    default: return std::nullopt;
  }
}

ElemType computeTypeOf(ElemType t) { return target::isFloatType(t) ? ElemType::F32 : t; }

namespace {

std::optional<ElemType> elemOf(Value v) { return kernelElemType(cast<RankedTensorType>(v.getType()).getElementType()); }

}  // namespace

std::optional<ElementwiseUse> elementwiseUse(Operation *op) {
  std::string type = onnxTypeOf(op);
  if (type.empty() || op->getNumResults() != 1) return std::nullopt;
  for (Value v : op->getOperands())
    if (!isa<NoneType>(v.getType()) && !isa<RankedTensorType>(v.getType())) return std::nullopt;
  target::ElementwiseAttrs ea;
  for (auto &[k, v] : attrsFromOp(op).values) {
    if (auto *i = std::get_if<int64_t>(&v))
      ea.ints[k] = *i;
    else if (auto *d = std::get_if<double>(&v))
      ea.floats[k] = *d;
    else if (auto *s = std::get_if<std::string>(&v))
      ea.strings[k] = *s;
  }
  ElementwiseUse use;
  // Operands up to the last present one; a missing one before it has no kernel form.
  std::vector<Value> operands(op->getOperands().begin(), op->getOperands().end());
  while (!operands.empty() && isa<NoneType>(operands.back().getType())) operands.pop_back();
  Value data = operands.empty() ? Value() : operands.back();  // the operand whose type the op computes in

  if (type == "Clip") {  // constant bounds become attributes
    for (size_t k = 1; k < operands.size(); ++k) {
      if (isa<NoneType>(operands[k].getType())) continue;
      auto c = constantValue(operands[k]);
      if (!c || c->size() != 1) return std::nullopt;
      ea.floats[k == 1 ? "min" : "max"] = c->get(0);
    }
    operands.resize(1);
    data = operands[0];
  } else if (type == "CastLike") {
    if (operands.size() != 2) return std::nullopt;
    type = "Cast";
    ea.ints["to"] = static_cast<int64_t>(dtypeOf(cast<RankedTensorType>(operands[1].getType()).getElementType()));
    operands.resize(1);
    data = operands[0];
  } else if (type == "QuantizeLinear" || type == "DequantizeLinear") {
    if (operands.size() < 2 || ea.getInt("block_size", 0) != 0) return std::nullopt;
    Value q = type == "QuantizeLinear" ? op->getResult(0) : operands[0];
    auto qt = elemOf(q);
    if (!qt || (*qt != ElemType::I8 && *qt != ElemType::U8 && *qt != ElemType::F8E4M3)) return std::nullopt;
    if (type == "QuantizeLinear") ea.ints["uint8"] = *qt == ElemType::U8;
    ea.ints["fp8"] = *qt == ElemType::F8E4M3;
    data = operands[0];
    // Per-axis parameters (1-D, C > 1) broadcast as [C, 1, ...] from `axis`.
    int64_t rank = static_cast<int64_t>(shapeOf(operands[0]).size());
    for (size_t k = 1; k < operands.size(); ++k) {
      if (isa<NoneType>(operands[k].getType())) return std::nullopt;
      std::vector<int64_t> s = shapeOf(operands[k]);
      int64_t n = 1;
      for (int64_t d : s) n *= d;
      if (n == 1) continue;
      if (s.size() != 1 || rank == 0) return std::nullopt;
      int64_t axis = ops::normalizeAxis(ea.getInt("axis", 1), rank);
      s.resize(size_t(rank - axis), 1);
      use.views.resize(operands.size());
      use.views[k] = s;
    }
  } else {
    for (Value v : operands)
      if (isa<NoneType>(v.getType())) return std::nullopt;
    if (type == "Pow") data = operands.empty() ? Value() : operands[0];
    if (type == "Where" && operands.size() == 3) data = operands[1];
  }
  if (!data) return std::nullopt;
  auto dataType = elemOf(data);
  if (!dataType) return std::nullopt;
  for (Value v : operands)
    if (!elemOf(v)) return std::nullopt;
  auto entry = target::lookupElementwiseOp(type, static_cast<int>(operands.size()), ea, computeTypeOf(*dataType));
  if (!entry) return std::nullopt;
  use.op = *entry;
  use.inputs = operands;
  use.views.resize(operands.size());
  for (size_t k = 0; k < operands.size(); ++k)
    if (use.views[k].empty()) use.views[k] = shapeOf(operands[k]);
  return use;
}

}  // namespace kiln

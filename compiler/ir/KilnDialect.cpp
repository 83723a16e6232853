#include "compiler/ir/KilnDialect.h"

#include "compiler/ir/TensorConversion.h"

#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;

#include "compiler/ir/KilnDialect.cpp.inc"
#include "compiler/ir/KilnEnums.cpp.inc"
#include "compiler/ir/KilnInterfaces.cpp.inc"

#define GET_OP_CLASSES
#include "compiler/ir/KilnOps.cpp.inc"

namespace kiln {

void KilnDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "compiler/ir/KilnOps.cpp.inc"
      >();
}

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }
OpFoldResult NoneOp::fold(FoldAdaptor) { return UnitAttr::get(getContext()); }

static std::string typeString(Type t) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << t;
  return os.str();
}

LogicalResult inferResultTypes(Operation *op, StringRef onnxName, SmallVectorImpl<Type> &types, std::string &error) {
  OperandInfo info = operandInfo(op);
  for (size_t k = 0; k < info.types.size(); ++k) {
    // Operands downstream of an unsupported op have no known type: nothing can be inferred.
    if (isa<UnrankedTensorType>(op->getOperand(k).getType())) {
      error = "operand #" + std::to_string(k) + " has an unknown shape";
      return failure();
    }
    if (info.types[k].dtype == ops::DType::Undefined && !isa<NoneType>(op->getOperand(k).getType())) {
      error =
          "operand #" + std::to_string(k) + " has unsupported element type " + typeString(op->getOperand(k).getType());
      return failure();
    }
  }
  std::vector<ops::TensorType> out;
  if (auto err = ops::inferTypes(onnxName.str(), info.context(op->getNumResults()), out)) {
    error = *err;
    return failure();
  }
  for (auto &t : out) {
    RankedTensorType rt = rankedTypeOf(t, op->getContext());
    if (!rt) {
      error = std::string("inferred an unsupported element type ") + ops::dtypeName(t.dtype);
      return failure();
    }
    types.push_back(rt);
  }
  return success();
}

LogicalResult verifyInferredTypes(Operation *op, StringRef onnxName) {
  for (Value v : op->getOperands())
    if (isa<UnrankedTensorType>(v.getType())) return success();  // downstream of unsupported
  SmallVector<Type> types;
  std::string error;
  if (failed(inferResultTypes(op, onnxName, types, error))) {
    // A shape that depends on a value not yet folded to a constant: trust the declared type.
    if (ops::needsConstant(error)) return success();
    return op->emitOpError(error);
  }
  if (types.size() != op->getNumResults())
    return op->emitOpError() << "has " << op->getNumResults() << " results but its operands imply " << types.size();
  for (unsigned k = 0; k < types.size(); ++k)
    if (types[k] != op->getResult(k).getType())
      return op->emitOpError() << "result #" << k << " has type " << op->getResult(k).getType()
                               << " but its operands and attributes imply " << types[k];
  return success();
}

LogicalResult FusedOp::verify() {
  Block &b = getBody().front();
  if (b.getNumArguments() != getInputs().size())
    return emitOpError() << "has " << getInputs().size() << " inputs but its body takes " << b.getNumArguments();
  for (unsigned k = 0; k < b.getNumArguments(); ++k)
    if (b.getArgument(k).getType() != getInputs()[k].getType())
      return emitOpError() << "input #" << k << " has type " << getInputs()[k].getType()
                           << " but the body argument has " << b.getArgument(k).getType();
  auto yield = b.empty() ? YieldOp() : dyn_cast<YieldOp>(b.back());
  if (!yield) return emitOpError("body must end with kiln.yield");
  if (yield.getValues().getTypes() != getResultTypes())
    return emitOpError("yielded types differ from the result types");
  return success();
}

}  // namespace kiln

namespace kiln {

static std::string nameIn(Location loc) {
  if (auto n = dyn_cast<NameLoc>(loc)) return n.getName().str();
  if (auto f = dyn_cast<FusedLoc>(loc))
    for (Location l : f.getLocations())
      if (auto s = nameIn(l); !s.empty()) return s;
  return "";
}

std::string nodeName(Operation *op) { return nameIn(op->getLoc()); }

static void namesIn(Location loc, std::vector<std::string> &out) {
  if (auto n = dyn_cast<NameLoc>(loc)) {
    if (std::string s = n.getName().str(); !s.empty() && !llvm::is_contained(out, s)) out.push_back(s);
  } else if (auto f = dyn_cast<FusedLoc>(loc)) {
    for (Location l : f.getLocations()) namesIn(l, out);
  }
}

std::vector<std::string> nodeNames(Operation *op) {
  std::vector<std::string> out;
  op->walk<WalkOrder::PostOrder>([&](Operation *o) { namesIn(o->getLoc(), out); });  // (a region's ops first)
  return out;
}

std::string describeOp(Operation *op) {
  std::string type = op->getName().getStringRef().str();
  if (auto s = dyn_cast<ShapeInferenceOpInterface>(op)) type = s.getOnnxOpType().str();
  if (auto u = dyn_cast<UnsupportedOp>(op)) type = u.getOpType().str();
  std::string name = nodeName(op);
  return name.empty() ? "op " + type : "node '" + name + "' (" + type + ")";
}

}  // namespace kiln

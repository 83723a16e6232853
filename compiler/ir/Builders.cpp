#include "compiler/ir/Builders.h"

#include "compiler/ir/KilnDialect.h"
#include "compiler/ir/TensorConversion.h"

using namespace mlir;

namespace kiln {

bool reinferResultTypes(Operation *op, std::string *error) {
  auto sem = dyn_cast<ShapeInferenceOpInterface>(op);
  if (!sem) {
    if (error) *error = "op " + op->getName().getStringRef().str() + " has no shape inference";
    return false;
  }
  SmallVector<Type> types;
  std::string err;
  if (failed(sem.inferResultTypes(types, err)) || types.size() != op->getNumResults()) {
    if (error) *error = describeOp(op) + ": " + (err.empty() ? "wrong number of results" : err);
    return false;
  }
  for (unsigned k = 0; k < types.size(); ++k) op->getResult(k).setType(types[k]);
  return true;
}

Operation *createInferred(OpBuilder &b, Location loc, StringRef opName, ValueRange operands,
                          ArrayRef<NamedAttribute> attrs, std::string *error, unsigned numResults) {
  OperationState state(loc, opName);
  state.addOperands(operands);
  state.addAttributes(attrs);
  state.addTypes(SmallVector<Type>(numResults, UnrankedTensorType::get(b.getF32Type())));
  Operation *op = b.create(state);
  if (!reinferResultTypes(op, error)) {
    op->erase();
    return nullptr;
  }
  return op;
}

Value createConstant(OpBuilder &b, Location loc, const ops::Tensor &t) {
  return b.create<ConstantOp>(loc, attrFromTensor(t, b.getContext())).getResult();
}

Operation *createReshape(OpBuilder &b, Location loc, Value x, ArrayRef<int64_t> shape, std::string *error) {
  Value c = createConstant(b, loc, ops::Tensor::fromInts(ops::DType::I64, {int64_t(shape.size())}, shape.vec()));
  Operation *r = createInferred<ReshapeOp>(b, loc, {x, c}, {}, error);
  if (!r) c.getDefiningOp()->erase();
  return r;
}

}  // namespace kiln

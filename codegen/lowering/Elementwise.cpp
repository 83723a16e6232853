// Elementwise ops and kernel regions: one fused program per region (kiln.fused kind
// elementwise), products with their epilogue chains (kind epilogue) go to lowerProduct.
#include "codegen/lowering/Lowering.h"

#include "codegen/kernels/Elementwise.h"
#include "codegen/kernels/KernelUtil.h"
#include "passes/ElementwiseUse.h"

#include "llvm/ADT/ScopeExit.h"

using namespace mlir;

namespace kiln::codegen {

void Lowering::appendOps(ProgramBuilder &pb, llvm::DenseMap<Value, std::string> &names, ArrayRef<Operation *> ops,
                         std::vector<Value> &params, std::vector<int64_t> *offsets) {
  for (Operation *op : ops) {
    auto use = elementwiseUse(op);
    if (!use) throw std::invalid_argument("no elementwise kernel for this op");
    std::vector<std::string> args;
    for (size_t k = 0; k < use->inputs.size(); ++k) {
      Value v = use->inputs[k];
      auto it = names.find(v);
      if (it != names.end()) {
        args.push_back(it->second);
        continue;
      }
      auto t = cast<RankedTensorType>(v.getType());
      if (t.getNumElements() == 1)
        if (auto c = constantValue(outer(v))) {
          args.push_back(ProgramBuilder::literal(c->get(0), computeTypeOf(elemTypeOf(v))));
          continue;
        }
      std::vector<int64_t> strides;
      int64_t offset = 0;
      if (auto view = outer(v).getDefiningOp<StridedViewOp>()) {
        if (!offsets || use->views[k] != shapeOf(v))
          throw std::invalid_argument("a strided view read by a product epilogue or a per-axis operand");
        strides.assign(view.getStrides()->begin(), view.getStrides()->end());
        offset = view.getOffset().value_or(0) * int64_t(kernels::elemSize(elemTypeOf(v)));
      }
      std::string name = pb.input(use->views[k], elemTypeOf(v), strides);
      params.push_back(outer(v));
      if (offsets) offsets->resize(params.size() - 1), offsets->push_back(offset);
      names[v] = name;
      args.push_back(name);
    }
    names[op->getResult(0)] = pb.apply(use->op, args);
  }
}

void Lowering::lowerElementwise(ArrayRef<Operation *> ops, Value result) {
  ElementwiseSpec spec;
  ProgramBuilder pb(spec.program);
  llvm::DenseMap<Value, std::string> names;
  std::vector<Value> params;
  std::vector<int64_t> offsets;
  appendOps(pb, names, ops, params, &offsets);
  spec.program.result = names.lookup(ops.back()->getResult(0));
  spec.outShape = shapeOf(result);
  spec.outType = elemTypeOf(result);
  if (spec.program.numInputs() == 0) spec.allowVectorized = false;
  params.push_back(result);
  addLaunch(ops.back(), emitElementwise(spec), params, offsets);
}

void Lowering::lowerFused(FusedOp f) {
  SmallVector<Operation *> body;
  for (Operation &op : f.getBody().front().without_terminator())
    if (!isa<NoneOp, ConstantOp>(op)) body.push_back(&op);
  if (body.empty()) throw std::invalid_argument("empty kernel region");
  fusedNodes_ = launchNodes(f);
  auto unname = llvm::make_scope_exit([&] { fusedNodes_.clear(); });  // (also when lowering throws)
  if (f.getKind() == FusedKind::Epilogue) {
    // The product, after the elementwise ops of its prologue, if any.
    ArrayRef<Operation *> ops(body);
    size_t anchor = size_t(llvm::find(body, epilogueProduct(f)) - body.begin());
    if (anchor == body.size()) throw std::invalid_argument("an epilogue region without a product");
    lowerProduct(body[anchor], ops.drop_front(anchor + 1), f.getResult(0), ops.take_front(anchor));
  } else
    lowerElementwise(body, f.getResult(0));
}
}  // namespace kiln::codegen

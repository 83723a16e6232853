// Half-precision engine inputs and outputs (see Passes.td): float32 function arguments and
// results become fp16 or bf16, the boundary casts kiln-precision made cancel.
#include "compiler/ir/TensorConversion.h"
#include "passes/PassUtil.h"
#include "passes/Passes.h"

namespace kiln {
#define GEN_PASS_DEF_IODTYPE
#include "passes/Passes.h.inc"

namespace {

using namespace mlir;

struct IoDtypePass : impl::IoDtypeBase<IoDtypePass> {
  using IoDtypeBase::IoDtypeBase;

  void runOnOperation() override {
    func::FuncOp f = getOperation();
    if (dtype.empty() || dtype == "fp32") return;
    if (dtype != "fp16" && dtype != "bf16") {
      f.emitError("kiln-io-dtype: dtype '" + dtype + "' is not fp16, bf16 or fp32");
      return signalPassFailure();
    }
    ops::DType io = dtype == "fp16" ? ops::DType::F16 : ops::DType::BF16;
    Type ioElement = elementTypeOf(io, &getContext());
    auto ioType = [&](Type t) { return RankedTensorType::get(cast<RankedTensorType>(t).getShape(), ioElement); };
    auto isCastTo = [](Operation *op, ops::DType to) {
      auto c = dyn_cast_or_null<CastOp>(op);
      return c && c.getTo() == int64_t(to);
    };
    OpBuilder b(&getContext());
    std::string err;
    auto castTo = [&](Value v, ops::DType to) -> Value {
      Operation *c = createCast(b, v.getLoc(), v, to, &err);
      return c ? c->getResult(0) : Value();
    };

    Block &body = f.getBody().front();
    for (BlockArgument a : body.getArguments()) {
      if (!isF32Tensor(a.getType())) continue;
      a.setType(ioType(a.getType()));
      Value up;  // the input cast to float32, made once for the users that need float32
      for (OpOperand &use : llvm::make_early_inc_range(a.getUses())) {
        Operation *user = use.getOwner();
        if (isCastTo(user, io)) {
          user->getResult(0).replaceAllUsesWith(a);
          user->erase();
          continue;
        }
        if (!up) {
          b.setInsertionPointToStart(&body);
          if (!(up = castTo(a, ops::DType::F32))) {
            f.emitError("kiln-io-dtype: " + err);
            return signalPassFailure();
          }
        }
        use.set(up);
      }
    }

    Operation *ret = body.getTerminator();
    b.setInsertionPoint(ret);
    for (OpOperand &o : ret->getOpOperands()) {
      Value v = o.get();
      if (!isF32Tensor(v.getType())) continue;
      Operation *def = v.getDefiningOp();
      if (isCastTo(def, ops::DType::F32) && tensorTypeOf(def->getOperand(0).getType()).dtype == io) {
        o.set(def->getOperand(0));  // (Cast(Cast(x, f32), io) is x)
        if (def->use_empty()) def->erase();
        continue;
      }
      Value down = castTo(v, io);
      if (!down) {
        f.emitError("kiln-io-dtype: " + err);
        return signalPassFailure();
      }
      o.set(down);
    }
    f.setType(FunctionType::get(&getContext(), body.getArgumentTypes(), ret->getOperandTypes()));
  }
};

}  // namespace
}  // namespace kiln

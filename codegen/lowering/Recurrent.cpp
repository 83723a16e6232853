// Recurrent layers: kiln.recurrence (what kiln-split-recurrent leaves of LSTM/GRU/RNN once their
// input projection is a matrix product) as one persistent kernel per layer (kernels/Recurrent.h).
#include "codegen/lowering/Lowering.h"

#include "codegen/kernels/Recurrent.h"
#include "compiler/ops/Recurrent.h"

using namespace mlir;

namespace kiln::codegen {

bool Lowering::lowerRecurrent(Operation *op) {
  if (isa<LSTMOp, GRUOp, RNNOp, DynamicQuantizeLSTMOp>(op))
    throw std::invalid_argument(
        "the layer was not split into its input projection and recurrence "
        "(kiln-split-recurrent; DynamicQuantizeLSTM needs constant weights and quantization parameters)");
  if (!isa<RecurrenceOp>(op)) return false;
  ops::Attrs attrs = attrsFromOp(op);
  ops::RnnCell cell = ops::rnnCellOf(attrs.getString("cell", ""));
  ops::RnnConfig cfg = ops::rnnConfig("Recurrence", cell, attrs);
  auto operands = op->getOperands();
  auto present = [&](unsigned k) { return !isa<NoneType>(operands[k].getType()); };
  Shape xp = shapeOf(operands[0]), r = shapeOf(operands[1]);
  RecurrenceSpec s;
  s.cell = cell;
  s.layout1 = cfg.layout == 1;
  s.T = s.layout1 ? xp[1] : xp[0], s.B = s.layout1 ? xp[0] : xp[1];
  s.H = r[2], s.D = cfg.numDirections;
  s.type = elemTypeOf(operands[0]);
  for (int64_t d = 0; d < s.D; ++d) {
    s.reverse[d] = cfg.reverse(d);
    for (size_t k = 0; k < cfg.activations[size_t(d)].size(); ++k) {
      const ops::RnnActivation &a = cfg.activations[size_t(d)][k];
      s.acts[d][k] = {a.kind, float(a.alpha), float(a.beta)};
    }
  }
  s.clip = cfg.clip > 0 ? float(cfg.clip) : -1.f;
  s.inputForget = cfg.inputForget, s.linearBeforeReset = cfg.linearBeforeReset;
  std::vector<Value> params = {operands[0], operands[1]};
  auto optional = [&](unsigned k, bool &flag) {
    flag = present(k);
    if (flag) params.push_back(operands[k]);
  };
  optional(2, s.hasRB);
  optional(3, s.hasSeqLens);
  if (s.hasSeqLens) {
    ops::DType t = tensorTypeOf(operands[3].getType()).dtype;
    if (t != ops::DType::I32 && t != ops::DType::I64)
      throw std::invalid_argument("sequence_lens must be int32 or int64 for the GPU kernel");
    s.seqLensI64 = t == ops::DType::I64;
  }
  optional(4, s.hasH0);
  optional(5, s.hasC0);
  optional(6, s.hasP);
  bool *writes[] = {&s.writeY, &s.writeYh, &s.writeYc};
  for (unsigned k = 0; k < op->getNumResults(); ++k) {
    *writes[k] = !op->getResult(k).use_empty();
    if (*writes[k]) params.push_back(op->getResult(k));
  }
  RecurrencePlan plan = planRecurrence(s, opts_.target);
  addLaunch(op, emitRecurrence(s, plan), params);
  return true;
}

}  // namespace kiln::codegen

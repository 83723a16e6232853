// The recurrent cells and the activation functions ONNX names for them (LSTM, GRU, RNN): one
// definition for the evaluator (compiler/ops/Recurrent.h) and the GPU kernel
// (codegen/kernels/Recurrent.h), which may not include each other.
#pragma once

namespace kiln::target {

enum class RnnCell { Lstm, Gru, Rnn };

enum class RnnActKind {
  Sigmoid,
  Tanh,
  Relu,
  HardSigmoid,
  Affine,
  LeakyRelu,
  ThresholdedRelu,
  ScaledTanh,
  Elu,
  Softsign,
  Softplus
};

}  // namespace kiln::target

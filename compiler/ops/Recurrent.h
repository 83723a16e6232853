// Recurrent ops (LSTM, GRU, RNN, onnxruntime's DynamicQuantizeLSTM and kiln's internal
// Recurrence): the attribute parsing that the reference kernels, the pass that splits a layer
// into its input projection and its recurrence, and the GPU lowering share, so an activation
// list or a default alpha is read in one place.
#pragma once

#include "compiler/ops/OpSemantics.h"
#include "compiler/target/Recurrent.h"

#include <string>
#include <vector>

namespace kiln::ops {

using target::RnnCell;

// Gates per cell (ONNX order): LSTM i, o, f, c; GRU z, r, h; RNN one.
inline int64_t rnnGates(RnnCell c) { return c == RnnCell::Lstm ? 4 : c == RnnCell::Gru ? 3 : 1; }
// Activation functions per direction: LSTM f, g, h; GRU f, g; RNN f.
inline int64_t rnnActivationsPerDirection(RnnCell c) { return c == RnnCell::Lstm ? 3 : c == RnnCell::Gru ? 2 : 1; }
const char *rnnCellName(RnnCell c);  // "LSTM", "GRU", "RNN"
// The cell of an op's name ("LSTM", "GRU", "RNN"); fails for anything else.
RnnCell rnnCellOf(const std::string &name);

// The activation functions ONNX names for recurrent ops.
using target::RnnActKind;
struct RnnActivation {
  RnnActKind kind = RnnActKind::Sigmoid;
  double alpha = 0, beta = 0;
};
double applyRnnActivation(const RnnActivation &a, double x);

// A recurrent layer's attributes, resolved: direction, hidden size, the activations of each
// direction (`activations`, names matched without regard to case, with
// `activation_alpha`/`activation_beta` consumed in order by the functions that take them, as
// onnxruntime does; defaults: LeakyRelu 0.01, ThresholdedRelu 1, HardSigmoid 0.2/0.5, Elu 1,
// Affine 1/0, ScaledTanh 1/1), clip (< 0: none), input_forget, linear_before_reset, layout.
struct RnnConfig {
  RnnCell cell = RnnCell::Lstm;
  std::string direction = "forward";  // forward, reverse, bidirectional
  int64_t numDirections = 1;
  int64_t hidden = 0;                                   // 0 until known (from hidden_size or R)
  std::vector<std::vector<RnnActivation>> activations;  // [direction][function]
  double clip = -1;
  bool inputForget = false;
  bool linearBeforeReset = false;
  int64_t layout = 0;
  // Whether direction `d` runs backwards in time (reverse, or the second of bidirectional).
  bool reverse(int64_t d) const { return direction == "reverse" || d == 1; }
};
// Parses and checks the attributes of `op` (its name in messages). Fails with a message naming
// the attribute.
RnnConfig rnnConfig(const std::string &op, RnnCell cell, const Attrs &attrs);

// The recurrence of a layer whose input projections are known: `xp` holds, for time t, batch row
// b, direction d and gate column n < G·H, X[t, b]·W[d, n]ᵀ + the bias of column n at
// ((t·B + b)·D + d)·G·H + n (time-major whatever the layout); R[d] is
// [G·H, H]; `rb` (may be null) a recurrent bias [D, G·H] added to h·R[d]ᵀ (GRU's Rb_h sits inside
// the reset gate's product), `seqLens` (may be null) int lengths [B], `h0`/`c0` (may be null) the
// initial states in the op's layout, `p` (may be null) LSTM's peepholes [D, 3H]. Computes in
// double; writes Y/Y_h/Y_c (each may be null: not wanted) in the op's layout and dtype. Rows
// beyond their sequence length produce zeros in Y and keep their state.
struct RnnOutputs {
  Tensor *y = nullptr, *yh = nullptr, *yc = nullptr;
};
void runRecurrence(const RnnConfig &cfg, int64_t T, int64_t B, const std::vector<double> &xp, const Tensor &R,
                   const Tensor *rb, const Tensor *seqLens, const Tensor *h0, const Tensor *c0, const Tensor *p,
                   RnnOutputs out);

}  // namespace kiln::ops

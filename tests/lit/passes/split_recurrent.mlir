// RUN: %kiln-opt %s -split-input-file -kiln-split-recurrent | FileCheck %s

// A bidirectional LSTM with layout 1, sequence_lens, initial states, peepholes and clip: one
// product [B, T, I] × [I, 2·4H] (W reshaped and transposed), Wb + Rb added to it, then the
// recurrence with every other operand as it was.
// CHECK-LABEL: func.func @lstm_bidir
// CHECK: %[[WT:.*]] = kiln.transpose %{{.*}} {perm = array<i64: 1, 0>} : (tensor<32x3xf32>) -> tensor<3x32xf32>
// CHECK: %[[P:.*]] = kiln.matmul %arg0, %[[WT]] : (tensor<2x5x3xf32>, tensor<3x32xf32>) -> tensor<2x5x32xf32>
// CHECK: %[[XP:.*]] = kiln.add %[[P]], %{{.*}} : (tensor<2x5x32xf32>, tensor<32xf32>) -> tensor<2x5x32xf32>
// CHECK: kiln.recurrence %[[XP]], %arg2, %{{.*}}, %[[SEQ:.*]], %arg4, %arg5, %arg6 {cell = "LSTM", clip = 2.500000e+00 : f32, direction = "bidirectional", hidden_size = 4 : i64, layout = 1 : i64}
// CHECK-NOT: kiln.lstm
func.func @lstm_bidir(%x: tensor<2x5x3xf32>, %w: tensor<2x16x3xf32>, %r: tensor<2x16x4xf32>, %b: tensor<2x32xf32>,
                      %h0: tensor<2x2x4xf32>, %c0: tensor<2x2x4xf32>, %p: tensor<2x12xf32>)
    -> (tensor<2x5x2x4xf32>, tensor<2x2x4xf32>, tensor<2x2x4xf32>) {
  %seq = kiln.constant dense<[5, 3]> : tensor<2xi32>
  %y:3 = kiln.lstm %x, %w, %r, %b, %seq, %h0, %c0, %p {direction = "bidirectional", hidden_size = 4 : i64, layout = 1 : i64, clip = 2.5 : f32} : (tensor<2x5x3xf32>, tensor<2x16x3xf32>, tensor<2x16x4xf32>, tensor<2x32xf32>, tensor<2xi32>, tensor<2x2x4xf32>, tensor<2x2x4xf32>, tensor<2x12xf32>) -> (tensor<2x5x2x4xf32>, tensor<2x2x4xf32>, tensor<2x2x4xf32>)
  return %y#0, %y#1, %y#2 : tensor<2x5x2x4xf32>, tensor<2x2x4xf32>, tensor<2x2x4xf32>
}

// -----

// A reverse LSTM without bias, input_forget and other activations; only Y_h is used.
// CHECK-LABEL: func.func @lstm_reverse
// CHECK: kiln.matmul
// CHECK-NOT: kiln.add
// CHECK: kiln.recurrence {{.*}} {activation_alpha = array<f32: 3.000000e-01, 5.000000e-02>, activation_beta = array<f32: 4.000000e-01>, activations = ["HardSigmoid", "LeakyRelu", "Softsign"], cell = "LSTM", direction = "reverse", hidden_size = 3 : i64, input_forget = 1 : i64}
func.func @lstm_reverse(%x: tensor<4x2x3xf32>, %w: tensor<1x12x3xf32>, %r: tensor<1x12x3xf32>) -> tensor<1x2x3xf32> {
  %none = kiln.none
  %y:2 = kiln.lstm %x, %w, %r, %none, %none, %none, %none, %none {direction = "reverse", hidden_size = 3 : i64, input_forget = 1 : i64, activations = ["HardSigmoid", "LeakyRelu", "Softsign"], activation_alpha = array<f32: 0.3, 0.05>, activation_beta = array<f32: 0.4>} : (tensor<4x2x3xf32>, tensor<1x12x3xf32>, tensor<1x12x3xf32>, none, none, none, none, none) -> (tensor<4x1x2x3xf32>, tensor<1x2x3xf32>)
  return %y#1 : tensor<1x2x3xf32>
}

// -----

// GRU: the projection takes Wb and the z, r parts of Rb; Rb_h becomes the recurrence's RB.
// CHECK-LABEL: func.func @gru_bidir
// CHECK: kiln.mul %{{.*}}, %{{.*}} : (tensor<2x15xf32>, tensor<15xf32>) -> tensor<2x15xf32>
// CHECK: %[[RB:.*]] = kiln.mul %{{.*}}, %{{.*}} : (tensor<2x15xf32>, tensor<15xf32>) -> tensor<2x15xf32>
// CHECK: %[[XP:.*]] = kiln.add %{{.*}}, %{{.*}} : (tensor<6x2x30xf32>, tensor<30xf32>) -> tensor<6x2x30xf32>
// CHECK: kiln.recurrence %[[XP]], %arg2, %[[RB]], {{.*}} {cell = "GRU", direction = "bidirectional", hidden_size = 5 : i64}
func.func @gru_bidir(%x: tensor<6x2x3xf32>, %w: tensor<2x15x3xf32>, %r: tensor<2x15x5xf32>, %b: tensor<2x30xf32>,
                     %h0: tensor<2x2x5xf32>) -> (tensor<6x2x2x5xf32>, tensor<2x2x5xf32>) {
  %seq = kiln.constant dense<[4, 6]> : tensor<2xi32>
  %y:2 = kiln.gru %x, %w, %r, %b, %seq, %h0 {direction = "bidirectional", hidden_size = 5 : i64} : (tensor<6x2x3xf32>, tensor<2x15x3xf32>, tensor<2x15x5xf32>, tensor<2x30xf32>, tensor<2xi32>, tensor<2x2x5xf32>) -> (tensor<6x2x2x5xf32>, tensor<2x2x5xf32>)
  return %y#0, %y#1 : tensor<6x2x2x5xf32>, tensor<2x2x5xf32>
}

// -----

// GRU with linear_before_reset and layout 1.
// CHECK-LABEL: func.func @gru_lbr
// CHECK: kiln.recurrence {{.*}} {cell = "GRU", clip = 1.500000e+00 : f32, hidden_size = 4 : i64, layout = 1 : i64, linear_before_reset = 1 : i64}
func.func @gru_lbr(%x: tensor<3x5x2xf32>, %w: tensor<1x12x2xf32>, %r: tensor<1x12x4xf32>, %b: tensor<1x24xf32>)
    -> (tensor<3x5x1x4xf32>, tensor<3x1x4xf32>) {
  %none = kiln.none
  %y:2 = kiln.gru %x, %w, %r, %b, %none, %none {hidden_size = 4 : i64, layout = 1 : i64, linear_before_reset = 1 : i64, clip = 1.5 : f32} : (tensor<3x5x2xf32>, tensor<1x12x2xf32>, tensor<1x12x4xf32>, tensor<1x24xf32>, none, none) -> (tensor<3x5x1x4xf32>, tensor<3x1x4xf32>)
  return %y#0, %y#1 : tensor<3x5x1x4xf32>, tensor<3x1x4xf32>
}

// -----

// RNN, bidirectional, with sequence_lens, initial_h, bias and its own activations.
// CHECK-LABEL: func.func @rnn_bidir
// CHECK: kiln.recurrence {{.*}} {activation_alpha = array<f32: 0.699999988>, activations = ["Relu", "Elu"], cell = "RNN", direction = "bidirectional", hidden_size = 6 : i64}
func.func @rnn_bidir(%x: tensor<5x3x4xf32>, %w: tensor<2x6x4xf32>, %r: tensor<2x6x6xf32>, %b: tensor<2x12xf32>,
                     %h0: tensor<2x3x6xf32>) -> (tensor<5x2x3x6xf32>, tensor<2x3x6xf32>) {
  %seq = kiln.constant dense<[5, 1, 3]> : tensor<3xi32>
  %y:2 = kiln.rnn %x, %w, %r, %b, %seq, %h0 {direction = "bidirectional", hidden_size = 6 : i64, activations = ["Relu", "Elu"], activation_alpha = array<f32: 0.7>} : (tensor<5x3x4xf32>, tensor<2x6x4xf32>, tensor<2x6x6xf32>, tensor<2x12xf32>, tensor<3xi32>, tensor<2x3x6xf32>) -> (tensor<5x2x3x6xf32>, tensor<2x3x6xf32>)
  return %y#0, %y#1 : tensor<5x2x3x6xf32>, tensor<2x3x6xf32>
}

// RUN: %kiln-opt %s -split-input-file -kiln-fuse-layernorm | FileCheck %s
// RUN: %kiln-opt %s -split-input-file -kiln-fuse-layernorm=route=fusion.layernorm=off | FileCheck %s --check-prefix=OFF

// Paddle2ONNX's and TorchScript's LayerNorm (Pow(d, 2), Div, then scale and bias): one op.
// CHECK-LABEL: func.func @paddle
// CHECK-NEXT: %[[S:.*]] = kiln.constant
// CHECK-NEXT: %[[B:.*]] = kiln.constant
// CHECK-NOT: kiln.reduce_mean
// CHECK: %[[Y:.*]] = kiln.layer_normalization %arg0, %[[S]], %[[B]] {axis = 2 : i64, epsilon = 9.99999974E-6 : f32} : (tensor<2x5x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x5x8xf32>
// CHECK-NEXT: return %[[Y]]
// OFF-LABEL: func.func @paddle
// OFF: kiln.reduce_mean
// OFF-NOT: kiln.layer_normalization
func.func @paddle(%x: tensor<2x5x8xf32>) -> tensor<2x5x8xf32> {
  %scale = kiln.constant dense<[0.5, 1.0, 1.5, 2.0, -1.0, 0.25, 3.0, 1.0]> : tensor<8xf32>
  %bias = kiln.constant dense<[0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, -0.8]> : tensor<8xf32>
  %two = kiln.constant dense<2.0> : tensor<f32>
  %eps = kiln.constant dense<1.0e-5> : tensor<f32>
  %m = kiln.reduce_mean %x {axes = array<i64: -1>} : (tensor<2x5x8xf32>) -> tensor<2x5x1xf32>
  %d = kiln.sub %x, %m : (tensor<2x5x8xf32>, tensor<2x5x1xf32>) -> tensor<2x5x8xf32>
  %q = kiln.pow %d, %two : (tensor<2x5x8xf32>, tensor<f32>) -> tensor<2x5x8xf32>
  %v = kiln.reduce_mean %q {axes = array<i64: -1>} : (tensor<2x5x8xf32>) -> tensor<2x5x1xf32>
  %e = kiln.add %v, %eps : (tensor<2x5x1xf32>, tensor<f32>) -> tensor<2x5x1xf32>
  %s = kiln.sqrt %e : (tensor<2x5x1xf32>) -> tensor<2x5x1xf32>
  %n = kiln.div %d, %s : (tensor<2x5x8xf32>, tensor<2x5x1xf32>) -> tensor<2x5x8xf32>
  %g = kiln.mul %n, %scale : (tensor<2x5x8xf32>, tensor<8xf32>) -> tensor<2x5x8xf32>
  %y = kiln.add %g, %bias : (tensor<2x5x8xf32>, tensor<8xf32>) -> tensor<2x5x8xf32>
  return %y : tensor<2x5x8xf32>
}

// -----

// d * d, the epsilon first, d * Reciprocal(std), operands swapped, a scale of shape 1x1x8 and
// no bias, over the last two axes: axis 1, scale reshaped to 4x8, no bias.
// CHECK-LABEL: func.func @variants
// CHECK: %[[S:.*]] = kiln.reshape %arg1
// CHECK: %[[N:.*]] = kiln.none
// CHECK-NEXT: %[[Y:.*]] = kiln.layer_normalization %arg0, %[[S]], %[[N]] {axis = 1 : i64, epsilon = 9.99999996E-13 : f32} : (tensor<3x4x8xf32>, tensor<4x8xf32>, none) -> tensor<3x4x8xf32>
// CHECK-NEXT: return %[[Y]]
func.func @variants(%x: tensor<3x4x8xf32>, %scale: tensor<1x4x8xf32>) -> tensor<3x4x8xf32> {
  %eps = kiln.constant dense<1.0e-12> : tensor<f32>
  %m = kiln.reduce_mean %x {axes = array<i64: 1, 2>, keepdims = 1 : i64} : (tensor<3x4x8xf32>) -> tensor<3x1x1xf32>
  %d = kiln.sub %x, %m : (tensor<3x4x8xf32>, tensor<3x1x1xf32>) -> tensor<3x4x8xf32>
  %q = kiln.mul %d, %d : (tensor<3x4x8xf32>, tensor<3x4x8xf32>) -> tensor<3x4x8xf32>
  %v = kiln.reduce_mean %q {axes = array<i64: -1, -2>} : (tensor<3x4x8xf32>) -> tensor<3x1x1xf32>
  %e = kiln.add %eps, %v : (tensor<f32>, tensor<3x1x1xf32>) -> tensor<3x1x1xf32>
  %s = kiln.sqrt %e : (tensor<3x1x1xf32>) -> tensor<3x1x1xf32>
  %r = kiln.reciprocal %s : (tensor<3x1x1xf32>) -> tensor<3x1x1xf32>
  %n = kiln.mul %r, %d : (tensor<3x1x1xf32>, tensor<3x4x8xf32>) -> tensor<3x4x8xf32>
  %y = kiln.mul %scale, %n : (tensor<1x4x8xf32>, tensor<3x4x8xf32>) -> tensor<3x4x8xf32>
  return %y : tensor<3x4x8xf32>
}

// -----

// Pow with an integer exponent (ONNX allows any numeric exponent type): the same LayerNorm.
// CHECK-LABEL: func.func @int_exponent
// CHECK-NOT: kiln.reduce_mean
// CHECK: kiln.layer_normalization %arg0
func.func @int_exponent(%x: tensor<4x6xf32>) -> tensor<4x6xf32> {
  %two = kiln.constant dense<2> : tensor<i64>
  %eps = kiln.constant dense<1.0e-5> : tensor<f32>
  %m = kiln.reduce_mean %x {axes = array<i64: 1>} : (tensor<4x6xf32>) -> tensor<4x1xf32>
  %d = kiln.sub %x, %m : (tensor<4x6xf32>, tensor<4x1xf32>) -> tensor<4x6xf32>
  %q = kiln.pow %d, %two : (tensor<4x6xf32>, tensor<i64>) -> tensor<4x6xf32>
  %v = kiln.reduce_mean %q {axes = array<i64: 1>} : (tensor<4x6xf32>) -> tensor<4x1xf32>
  %e = kiln.add %v, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %s = kiln.sqrt %e : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %n = kiln.div %d, %s : (tensor<4x6xf32>, tensor<4x1xf32>) -> tensor<4x6xf32>
  return %n : tensor<4x6xf32>
}

// -----

// No scale, no bias: a scale of ones.
// CHECK-LABEL: func.func @bare
// CHECK-NOT: kiln.reduce_mean
// CHECK: %[[S:.*]] = kiln.constant dense<1.000000e+00> : tensor<6xf32>
// CHECK-NEXT: %[[N:.*]] = kiln.none
// CHECK-NEXT: %[[Y:.*]] = kiln.layer_normalization %arg0, %[[S]], %[[N]] {axis = 1 : i64
// CHECK-NEXT: return %[[Y]]
func.func @bare(%x: tensor<4x6xf32>) -> tensor<4x6xf32> {
  %two = kiln.constant dense<2.0> : tensor<f32>
  %eps = kiln.constant dense<1.0e-5> : tensor<f32>
  %m = kiln.reduce_mean %x {axes = array<i64: 1>} : (tensor<4x6xf32>) -> tensor<4x1xf32>
  %d = kiln.sub %x, %m : (tensor<4x6xf32>, tensor<4x1xf32>) -> tensor<4x6xf32>
  %q = kiln.pow %d, %two : (tensor<4x6xf32>, tensor<f32>) -> tensor<4x6xf32>
  %v = kiln.reduce_mean %q {axes = array<i64: 1>} : (tensor<4x6xf32>) -> tensor<4x1xf32>
  %e = kiln.add %v, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %s = kiln.sqrt %e : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %y = kiln.div %d, %s : (tensor<4x6xf32>, tensor<4x1xf32>) -> tensor<4x6xf32>
  return %y : tensor<4x6xf32>
}

// -----

// Not a LayerNorm: the mean is used again (as an output), the reduction is over a middle axis,
// the exponent is 4: each stays as it is.
// CHECK-LABEL: func.func @not_layernorm
// CHECK-NOT: kiln.layer_normalization
// CHECK: return
func.func @not_layernorm(%x: tensor<4x6xf32>, %t: tensor<5x4x6xf32>) -> (tensor<4x6xf32>, tensor<4x1xf32>, tensor<5x1x6xf32>, tensor<4x6xf32>) {
  %two = kiln.constant dense<2.0> : tensor<f32>
  %four = kiln.constant dense<4.0> : tensor<f32>
  %eps = kiln.constant dense<1.0e-5> : tensor<f32>
  %m = kiln.reduce_mean %x {axes = array<i64: 1>} : (tensor<4x6xf32>) -> tensor<4x1xf32>
  %d = kiln.sub %x, %m : (tensor<4x6xf32>, tensor<4x1xf32>) -> tensor<4x6xf32>
  %q = kiln.pow %d, %two : (tensor<4x6xf32>, tensor<f32>) -> tensor<4x6xf32>
  %v = kiln.reduce_mean %q {axes = array<i64: 1>} : (tensor<4x6xf32>) -> tensor<4x1xf32>
  %e = kiln.add %v, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %s = kiln.sqrt %e : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %y = kiln.div %d, %s : (tensor<4x6xf32>, tensor<4x1xf32>) -> tensor<4x6xf32>
  %m2 = kiln.reduce_mean %t {axes = array<i64: 1>} : (tensor<5x4x6xf32>) -> tensor<5x1x6xf32>
  %d2 = kiln.sub %t, %m2 : (tensor<5x4x6xf32>, tensor<5x1x6xf32>) -> tensor<5x4x6xf32>
  %q2 = kiln.pow %d2, %two : (tensor<5x4x6xf32>, tensor<f32>) -> tensor<5x4x6xf32>
  %v2 = kiln.reduce_mean %q2 {axes = array<i64: 1>} : (tensor<5x4x6xf32>) -> tensor<5x1x6xf32>
  %e2 = kiln.add %v2, %eps : (tensor<5x1x6xf32>, tensor<f32>) -> tensor<5x1x6xf32>
  %s2 = kiln.sqrt %e2 : (tensor<5x1x6xf32>) -> tensor<5x1x6xf32>
  %y2 = kiln.div %d2, %s2 : (tensor<5x4x6xf32>, tensor<5x1x6xf32>) -> tensor<5x4x6xf32>
  %w = kiln.reduce_mean %y2 {axes = array<i64: 1>} : (tensor<5x4x6xf32>) -> tensor<5x1x6xf32>
  %m3 = kiln.reduce_mean %x {axes = array<i64: 1>} : (tensor<4x6xf32>) -> tensor<4x1xf32>
  %d3 = kiln.sub %x, %m3 : (tensor<4x6xf32>, tensor<4x1xf32>) -> tensor<4x6xf32>
  %q3 = kiln.pow %d3, %four : (tensor<4x6xf32>, tensor<f32>) -> tensor<4x6xf32>
  %v3 = kiln.reduce_mean %q3 {axes = array<i64: 1>} : (tensor<4x6xf32>) -> tensor<4x1xf32>
  %e3 = kiln.add %v3, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %s3 = kiln.sqrt %e3 : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %y3 = kiln.div %d3, %s3 : (tensor<4x6xf32>, tensor<4x1xf32>) -> tensor<4x6xf32>
  %z = kiln.add %y, %y3 : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
  return %z, %m, %w, %y3 : tensor<4x6xf32>, tensor<4x1xf32>, tensor<5x1x6xf32>, tensor<4x6xf32>
}

// -----

// A per-row scale (it broadcasts along the rows, not the normalized axis) stays a Mul after
// the LayerNorm.
// CHECK-LABEL: func.func @row_scale
// CHECK: %[[L:.*]] = kiln.layer_normalization %arg0
// CHECK-NEXT: %[[Y:.*]] = kiln.mul %[[L]], %arg1
// CHECK-NEXT: return %[[Y]]
func.func @row_scale(%x: tensor<4x6xf32>, %r: tensor<4x1xf32>) -> tensor<4x6xf32> {
  %two = kiln.constant dense<2.0> : tensor<f32>
  %eps = kiln.constant dense<1.0e-5> : tensor<f32>
  %m = kiln.reduce_mean %x {axes = array<i64: 1>} : (tensor<4x6xf32>) -> tensor<4x1xf32>
  %d = kiln.sub %x, %m : (tensor<4x6xf32>, tensor<4x1xf32>) -> tensor<4x6xf32>
  %q = kiln.pow %d, %two : (tensor<4x6xf32>, tensor<f32>) -> tensor<4x6xf32>
  %v = kiln.reduce_mean %q {axes = array<i64: 1>} : (tensor<4x6xf32>) -> tensor<4x1xf32>
  %e = kiln.add %v, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %s = kiln.sqrt %e : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %n = kiln.div %d, %s : (tensor<4x6xf32>, tensor<4x1xf32>) -> tensor<4x6xf32>
  %y = kiln.mul %n, %r : (tensor<4x6xf32>, tensor<4x1xf32>) -> tensor<4x6xf32>
  return %y : tensor<4x6xf32>
}

// -----

// T5's RMSNorm: x * Reciprocal(Sqrt(ReduceMean(Pow(x, 2)) + eps)), then the weight first; x is
// also the residual stream (another user): one rms_normalization.
// CHECK-LABEL: func.func @t5_rms
// CHECK-NOT: kiln.reduce_mean
// CHECK: %[[Y:.*]] = kiln.rms_normalization %arg0, %[[W:.*]] {axis = 1 : i64, epsilon = 9.99999997E-7 : f32} : (tensor<4x6xf32>, tensor<6xf32>) -> tensor<4x6xf32>
// CHECK-NEXT: %[[Z:.*]] = kiln.add %[[Y]], %arg0
// CHECK-NEXT: return %[[Z]]
// OFF-LABEL: func.func @t5_rms
// OFF-NOT: kiln.rms_normalization
func.func @t5_rms(%x: tensor<4x6xf32>) -> tensor<4x6xf32> {
  %w = kiln.constant dense<[0.5, 1.0, 1.5, 2.0, -1.0, 0.25]> : tensor<6xf32>
  %two = kiln.constant dense<2.0> : tensor<f32>
  %eps = kiln.constant dense<1.0e-6> : tensor<f32>
  %q = kiln.pow %x, %two : (tensor<4x6xf32>, tensor<f32>) -> tensor<4x6xf32>
  %v = kiln.reduce_mean %q {axes = array<i64: -1>} : (tensor<4x6xf32>) -> tensor<4x1xf32>
  %e = kiln.add %v, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %s = kiln.sqrt %e : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %r = kiln.reciprocal %s : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %n = kiln.mul %x, %r : (tensor<4x6xf32>, tensor<4x1xf32>) -> tensor<4x6xf32>
  %y = kiln.mul %w, %n : (tensor<6xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
  %z = kiln.add %y, %x : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
  return %z : tensor<4x6xf32>
}

// -----

// torch.rsqrt as TorchScript writes it (Div(1, Sqrt)), x * x, no weight: a scale of ones. An
// L2 normalization (ReduceSum) is not an RMSNorm and stays.
// CHECK-LABEL: func.func @rsqrt_rms
// CHECK: %[[S:.*]] = kiln.constant dense<1.000000e+00> : tensor<8xf32>
// CHECK: %[[Y:.*]] = kiln.rms_normalization %arg0, %[[S]] {axis = 2 : i64
// CHECK: kiln.reduce_sum
// CHECK: return %[[Y]]
func.func @rsqrt_rms(%x: tensor<2x3x8xf32>, %t: tensor<2x8xf32>) -> (tensor<2x3x8xf32>, tensor<2x8xf32>) {
  %one = kiln.constant dense<1.0> : tensor<f32>
  %eps = kiln.constant dense<1.0e-5> : tensor<f32>
  %q = kiln.mul %x, %x : (tensor<2x3x8xf32>, tensor<2x3x8xf32>) -> tensor<2x3x8xf32>
  %v = kiln.reduce_mean %q {axes = array<i64: 2>} : (tensor<2x3x8xf32>) -> tensor<2x3x1xf32>
  %e = kiln.add %v, %eps : (tensor<2x3x1xf32>, tensor<f32>) -> tensor<2x3x1xf32>
  %s = kiln.sqrt %e : (tensor<2x3x1xf32>) -> tensor<2x3x1xf32>
  %r = kiln.div %one, %s : (tensor<f32>, tensor<2x3x1xf32>) -> tensor<2x3x1xf32>
  %y = kiln.mul %x, %r : (tensor<2x3x8xf32>, tensor<2x3x1xf32>) -> tensor<2x3x8xf32>
  %two = kiln.constant dense<2.0> : tensor<f32>
  %epsf = kiln.constant dense<1.0e-5> : tensor<f32>
  %q2 = kiln.pow %t, %two : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %v2 = kiln.reduce_sum %q2 {axes = array<i64: 1>} : (tensor<2x8xf32>) -> tensor<2x1xf32>
  %e2 = kiln.add %v2, %epsf : (tensor<2x1xf32>, tensor<f32>) -> tensor<2x1xf32>
  %s2 = kiln.sqrt %e2 : (tensor<2x1xf32>) -> tensor<2x1xf32>
  %y2 = kiln.div %t, %s2 : (tensor<2x8xf32>, tensor<2x1xf32>) -> tensor<2x8xf32>
  return %y, %y2 : tensor<2x3x8xf32>, tensor<2x8xf32>
}

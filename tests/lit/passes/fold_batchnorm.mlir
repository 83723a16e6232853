// RUN: %kiln-opt %s -split-input-file -kiln-fold-batchnorm | FileCheck %s
// RUN: %kiln-opt %s -split-input-file -kiln-fold-batchnorm=route=fusion.batchnorm=off | FileCheck %s --check-prefix=OFF

// Conv → BatchNormalization: the BN disappears into new conv weights and bias.
// CHECK-LABEL: func.func @conv_bn
// W' = W·s, s = scale / sqrt(var + eps); b' = (b - mean)·s + B.
// CHECK: %[[W:.*]] = kiln.constant dense<{{\[\[\[\[}}0.530328751]]], {{\[\[\[}}-1.41419947]]]]> : tensor<2x1x1x1xf32>
// CHECK: %[[B:.*]] = kiln.constant dense<[0.0469671115, 0.0121299187]> : tensor<2xf32>
// CHECK: %[[Y:.*]] = kiln.conv %arg0, %[[W]], %[[B]]
// CHECK-NOT: kiln.batch_normalization
// CHECK: return %[[Y]]
// OFF-LABEL: func.func @conv_bn
// OFF: kiln.batch_normalization
func.func @conv_bn(%x: tensor<1x1x3x3xf32>) -> tensor<1x2x3x3xf32> {
  %w = kiln.constant dense<[[[[0.5]]], [[[-2.0]]]]> : tensor<2x1x1x1xf32>
  %b = kiln.constant dense<[0.25, 1.0]> : tensor<2xf32>
  %s = kiln.constant dense<[1.5, 0.5]> : tensor<2xf32>
  %t = kiln.constant dense<[0.1, -0.2]> : tensor<2xf32>
  %m = kiln.constant dense<[0.3, 0.7]> : tensor<2xf32>
  %v = kiln.constant dense<[2.0, 0.5]> : tensor<2xf32>
  %y = kiln.conv %x, %w, %b {kernel_shape = array<i64: 1, 1>} : (tensor<1x1x3x3xf32>, tensor<2x1x1x1xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
  %z = kiln.batch_normalization %y, %s, %t, %m, %v {epsilon = 1.0e-05 : f32} : (tensor<1x2x3x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
  return %z : tensor<1x2x3x3xf32>
}

// -----

// A BN whose input is not a single-use conv becomes a per-channel scale and shift.
// CHECK-LABEL: func.func @bn_alone
// CHECK: %[[S:.*]] = kiln.constant dense<{{\[\[\[}}1.0606575]], {{\[\[}}0.707099735]]]> : tensor<2x1x1xf32>
// CHECK: %[[M:.*]] = kiln.mul %arg0, %[[S]]
// CHECK: %[[T:.*]] = kiln.constant dense<{{\[\[\[}}-0.218197271]], {{\[\[}}-0.694969773]]]> : tensor<2x1x1xf32>
// CHECK: %[[A:.*]] = kiln.add %[[M]], %[[T]]
// CHECK: return %[[A]]
func.func @bn_alone(%x: tensor<3x2x4x5xf32>) -> tensor<3x2x4x5xf32> {
  %s = kiln.constant dense<[1.5, 0.5]> : tensor<2xf32>
  %t = kiln.constant dense<[0.1, -0.2]> : tensor<2xf32>
  %m = kiln.constant dense<[0.3, 0.7]> : tensor<2xf32>
  %v = kiln.constant dense<[2.0, 0.5]> : tensor<2xf32>
  %z = kiln.batch_normalization %x, %s, %t, %m, %v : (tensor<3x2x4x5xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<3x2x4x5xf32>
  return %z : tensor<3x2x4x5xf32>
}

// -----

// The conv's result is also returned: folding would change it, so the BN becomes scale/shift.
// CHECK-LABEL: func.func @conv_two_uses
// CHECK: %[[Y:.*]] = kiln.conv
// CHECK: kiln.mul %[[Y]]
// CHECK: kiln.add
func.func @conv_two_uses(%x: tensor<1x1x3x3xf32>) -> (tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>) {
  %w = kiln.constant dense<[[[[0.5]]], [[[-2.0]]]]> : tensor<2x1x1x1xf32>
  %none = kiln.none
  %s = kiln.constant dense<[1.5, 0.5]> : tensor<2xf32>
  %t = kiln.constant dense<[0.1, -0.2]> : tensor<2xf32>
  %m = kiln.constant dense<[0.3, 0.7]> : tensor<2xf32>
  %v = kiln.constant dense<[2.0, 0.5]> : tensor<2xf32>
  %y = kiln.conv %x, %w, %none {kernel_shape = array<i64: 1, 1>} : (tensor<1x1x3x3xf32>, tensor<2x1x1x1xf32>, none) -> tensor<1x2x3x3xf32>
  %z = kiln.batch_normalization %y, %s, %t, %m, %v : (tensor<1x2x3x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
  return %y, %z : tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>
}

// RUN: %kiln-opt %s -split-input-file -kiln-simplify-transposes | FileCheck %s

// Inverse transposes cancel; a transpose moving only size-1 dims becomes a reshape.
// CHECK-LABEL: func.func @cancel
// CHECK-NOT: kiln.transpose
// CHECK: return %arg0
func.func @cancel(%x: tensor<2x3x4x5xf32>) -> tensor<2x3x4x5xf32> {
  %a = kiln.transpose %x {perm = array<i64: 0, 2, 3, 1>} : (tensor<2x3x4x5xf32>) -> tensor<2x4x5x3xf32>
  %b = kiln.transpose %a {perm = array<i64: 0, 3, 1, 2>} : (tensor<2x4x5x3xf32>) -> tensor<2x3x4x5xf32>
  return %b : tensor<2x3x4x5xf32>
}

// -----

// CHECK-LABEL: func.func @compose
// CHECK: %[[T:.*]] = kiln.transpose %arg0 {perm = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
// CHECK-NEXT: return %[[T]]
func.func @compose(%x: tensor<2x3x4xf32>) -> tensor<4x2x3xf32> {
  %a = kiln.transpose %x {perm = array<i64: 1, 0, 2>} : (tensor<2x3x4xf32>) -> tensor<3x2x4xf32>
  %b = kiln.transpose %a {perm = array<i64: 2, 1, 0>} : (tensor<3x2x4xf32>) -> tensor<4x2x3xf32>
  return %b : tensor<4x2x3xf32>
}

// -----

// CHECK-LABEL: func.func @unit_dims
// CHECK: %[[S:.*]] = kiln.constant dense<[2, 8, 1, 1]> : tensor<4xi64>
// CHECK: %[[R:.*]] = kiln.reshape %arg0, %[[S]]
// CHECK-NOT: kiln.transpose
func.func @unit_dims(%x: tensor<2x1x1x8xf32>) -> tensor<2x8x1x1xf32> {
  %t = kiln.transpose %x {perm = array<i64: 0, 3, 1, 2>} : (tensor<2x1x1x8xf32>) -> tensor<2x8x1x1xf32>
  return %t : tensor<2x8x1x1xf32>
}

// -----

// A reduction over every axis reads the transpose's input (the transpose goes, if unused);
// one over some axes keeps it. (Max and min: the semantic check is bit-exact, and a sum in
// another order is not.)
// CHECK-LABEL: func.func @full_reduction
// CHECK-NOT: kiln.transpose
// CHECK: kiln.reduce_min %arg0 {keepdims = 0 : i64} : (tensor<2x3x4x5xf32>) -> tensor<f32>
// CHECK: kiln.reduce_max %arg0 {axes = array<i64: 0, 1, 2, 3>, keepdims = 1 : i64} : (tensor<2x3x4x5xf32>) -> tensor<1x1x1x1xf32>
func.func @full_reduction(%x: tensor<2x3x4x5xf32>) -> (tensor<f32>, tensor<1x1x1x1xf32>) {
  %t = kiln.transpose %x {perm = array<i64: 0, 2, 3, 1>} : (tensor<2x3x4x5xf32>) -> tensor<2x4x5x3xf32>
  %m = kiln.reduce_min %t {keepdims = 0 : i64} : (tensor<2x4x5x3xf32>) -> tensor<f32>
  %s = kiln.reduce_max %t {axes = array<i64: 0, 1, 2, 3>, keepdims = 1 : i64} : (tensor<2x4x5x3xf32>) -> tensor<1x1x1x1xf32>
  return %m, %s : tensor<f32>, tensor<1x1x1x1xf32>
}

// -----

// CHECK-LABEL: func.func @partial_reduction
// CHECK: %[[T:.*]] = kiln.transpose %arg0
// CHECK: kiln.reduce_max %[[T]] {axes = array<i64: 3>, keepdims = 0 : i64}
func.func @partial_reduction(%x: tensor<2x3x4x5xf32>) -> tensor<2x4x5xf32> {
  %t = kiln.transpose %x {perm = array<i64: 0, 2, 3, 1>} : (tensor<2x3x4x5xf32>) -> tensor<2x4x5x3xf32>
  %m = kiln.reduce_max %t {axes = array<i64: 3>, keepdims = 0 : i64} : (tensor<2x4x5x3xf32>) -> tensor<2x4x5xf32>
  return %m : tensor<2x4x5xf32>
}

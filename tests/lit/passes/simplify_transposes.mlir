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

// RUN: %kiln-opt %s -split-input-file -kiln-split-variadic | FileCheck %s

// Five operands: Sums of the first three and of the last two (which broadcast as before), then
// the Sum of those.
// CHECK-LABEL: func.func @sum5
// CHECK-NEXT: %[[S1:.*]] = kiln.sum %arg0, %arg1, %arg2 : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: %[[S2:.*]] = kiln.sum %arg3, %arg4 : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: %[[Y:.*]] = kiln.sum %[[S1]], %[[S2]] : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: return %[[Y]]
func.func @sum5(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>, %c: tensor<2x3xf32>, %d: tensor<2x3xf32>, %e: tensor<3xf32>) -> tensor<2x3xf32> {
  %y = kiln.sum %a, %b, %c, %d, %e : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

// Max of four with broadcasting: the first three, then the fourth (a row) alone beside it.
// CHECK-LABEL: func.func @max4
// CHECK-NEXT: %[[M:.*]] = kiln.max %arg0, %arg1, %arg2 : (tensor<4x1xf32>, tensor<4x5xf32>, tensor<1xf32>) -> tensor<4x5xf32>
// CHECK-NEXT: %[[Y:.*]] = kiln.max %[[M]], %arg3 : (tensor<4x5xf32>, tensor<5xf32>) -> tensor<4x5xf32>
// CHECK-NEXT: return %[[Y]]
func.func @max4(%a: tensor<4x1xf32>, %b: tensor<4x5xf32>, %c: tensor<1xf32>, %d: tensor<5xf32>) -> tensor<4x5xf32> {
  %y = kiln.max %a, %b, %c, %d : (tensor<4x1xf32>, tensor<4x5xf32>, tensor<1xf32>, tensor<5xf32>) -> tensor<4x5xf32>
  return %y : tensor<4x5xf32>
}

// -----

// Mean of seven: a Sum tree (3 + 3 + 1, then one Sum of those) divided by 7.
// CHECK-LABEL: func.func @mean7
// CHECK-NEXT: %[[S1:.*]] = kiln.sum %arg0, %arg1, %arg2
// CHECK-NEXT: %[[S2:.*]] = kiln.sum %arg3, %arg4, %arg5
// CHECK-NEXT: %[[S:.*]] = kiln.sum %[[S1]], %[[S2]], %arg6
// CHECK-NEXT: %[[N:.*]] = kiln.constant dense<7.000000e+00> : tensor<f32>
// CHECK-NEXT: %[[Y:.*]] = kiln.div %[[S]], %[[N]]
// CHECK-NEXT: return %[[Y]]
func.func @mean7(%a: tensor<6xf32>, %b: tensor<6xf32>, %c: tensor<6xf32>, %d: tensor<6xf32>, %e: tensor<6xf32>, %f: tensor<6xf32>, %g: tensor<6xf32>) -> tensor<6xf32> {
  %y = kiln.mean %a, %b, %c, %d, %e, %f, %g : (tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>) -> tensor<6xf32>
  return %y : tensor<6xf32>
}

// -----

// Three operands or fewer: unchanged.
// CHECK-LABEL: func.func @min3
// CHECK-NEXT: kiln.min %arg0, %arg1, %arg2
// CHECK-NEXT: return
func.func @min3(%a: tensor<2xf32>, %b: tensor<2xf32>, %c: tensor<2xf32>) -> tensor<2xf32> {
  %y = kiln.min %a, %b, %c : (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %y : tensor<2xf32>
}

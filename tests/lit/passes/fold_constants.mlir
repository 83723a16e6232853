// RUN: %kiln-opt %s -split-input-file -kiln-fold-constants | FileCheck %s
// RUN: %kiln-opt %s -split-input-file -kiln-fold-constants=max-elements=2 | FileCheck %s --check-prefix=LIMIT

// Shape folds from the static type alone; the Gather on the constant shape folds after it.
// CHECK-LABEL: func.func @shape_gather
// CHECK-NEXT: %[[C:.*]] = kiln.constant dense<3> : tensor<i64>
// CHECK-NEXT: return %[[C]]
func.func @shape_gather(%x: tensor<2x3x4xf32>) -> tensor<i64> {
  %s = kiln.shape %x : (tensor<2x3x4xf32>) -> tensor<3xi64>
  %i = kiln.constant dense<1> : tensor<i64>
  %g = kiln.gather %s, %i {axis = 0 : i64} : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  return %g : tensor<i64>
}

// -----

// Elementwise arithmetic on constants is evaluated; ops on arguments stay. Above max-elements it
// still folds, its result being no larger than its constant operands.
// CHECK-LABEL: func.func @arith
// CHECK: %[[C:.*]] = kiln.constant dense<[3.000000e+00, 5.000000e+00, 7.000000e+00]> : tensor<3xf32>
// CHECK: kiln.mul %arg0, %[[C]]
// LIMIT-LABEL: func.func @arith
// LIMIT-NOT: kiln.add
// LIMIT: kiln.mul
func.func @arith(%x: tensor<3xf32>) -> tensor<3xf32> {
  %a = kiln.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %b = kiln.constant dense<[2.0, 3.0, 4.0]> : tensor<3xf32>
  %c = kiln.add %a, %b : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %y = kiln.mul %x, %c : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %y : tensor<3xf32>
}

// -----

// A broadcast that makes a result larger than its constant operands stays an op above
// max-elements: folding would multiply the size.
// CHECK-LABEL: func.func @broadcast_limit
// CHECK-NOT: kiln.add
// LIMIT-LABEL: func.func @broadcast_limit
// LIMIT: kiln.add
func.func @broadcast_limit(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %a = kiln.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %b = kiln.constant dense<[[10.0], [20.0]]> : tensor<2x1xf32>
  %c = kiln.add %a, %b : (tensor<3xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>
  %y = kiln.mul %x, %c : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

// Concat → Reshape target: the shape chain of exported transformers.
// CHECK-LABEL: func.func @concat_reshape_target
// CHECK: %[[T:.*]] = kiln.constant dense<[2, 12]> : tensor<2xi64>
// CHECK: kiln.reshape %arg0, %[[T]]
func.func @concat_reshape_target(%x: tensor<2x3x4xf32>) -> tensor<2x12xf32> {
  %a = kiln.constant dense<[2]> : tensor<1xi64>
  %b = kiln.constant dense<[12]> : tensor<1xi64>
  %t = kiln.concat %a, %b {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>) -> tensor<2xi64>
  %y = kiln.reshape %x, %t : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<2x12xf32>
  return %y : tensor<2x12xf32>
}

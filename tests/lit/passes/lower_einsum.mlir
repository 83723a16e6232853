// RUN: %kiln-opt %s -split-input-file -kiln-lower-einsum | FileCheck %s

// A batched product already in [batch, rows, inner] × [batch, inner, cols] order: the product alone.
// CHECK-LABEL: func.func @batch_matmul
// CHECK-NEXT: %[[Y:.*]] = kiln.matmul %arg0, %arg1 : (tensor<5x2x3xf32>, tensor<5x3x4xf32>) -> tensor<5x2x4xf32>
// CHECK-NEXT: return %[[Y]]
func.func @batch_matmul(%a: tensor<5x2x3xf32>, %b: tensor<5x3x4xf32>) -> tensor<5x2x4xf32> {
  %y = kiln.einsum %a, %b {equation = "bij, bjk -> bik"} : (tensor<5x2x3xf32>, tensor<5x3x4xf32>) -> tensor<5x2x4xf32>
  return %y : tensor<5x2x4xf32>
}

// -----

// Attention scores: K's head dim moved before its keys; batch and heads stay batch dims, so the
// transpose can fold into the product (kiln-canonicalize-linear) and attention fuse.
// CHECK-LABEL: func.func @scores
// CHECK-NEXT: %[[KT:.*]] = kiln.transpose %arg1 {perm = array<i64: 0, 1, 3, 2>}
// CHECK-NEXT: %[[S:.*]] = kiln.matmul %arg0, %[[KT]] : (tensor<2x3x7x8xf32>, tensor<2x3x8x5xf32>) -> tensor<2x3x7x5xf32>
// CHECK-NEXT: return %[[S]]
func.func @scores(%q: tensor<2x3x7x8xf32>, %k: tensor<2x3x5x8xf32>) -> tensor<2x3x7x5xf32> {
  %y = kiln.einsum %q, %k {equation = "bhqd,bhkd->bhqk"} : (tensor<2x3x7x8xf32>, tensor<2x3x5x8xf32>) -> tensor<2x3x7x5xf32>
  return %y : tensor<2x3x7x5xf32>
}

// -----

// A repeated label: its two dims flattened, every sixth element sliced out.
// CHECK-LABEL: func.func @diagonal
// CHECK: %[[F:.*]] = kiln.reshape %arg0, %{{.*}} -> tensor<3x25xf32>
// CHECK: %[[STEP:.*]] = kiln.constant dense<6> : tensor<1xi64>
// CHECK: kiln.slice %[[F]], %{{.*}}, %{{.*}}, %{{.*}}, %[[STEP]] {{.*}} -> tensor<3x5xf32>
func.func @diagonal(%x: tensor<3x5x5xf32>) -> tensor<3x5xf32> {
  %y = kiln.einsum %x {equation = "...ii->...i"} : (tensor<3x5x5xf32>) -> tensor<3x5xf32>
  return %y : tensor<3x5xf32>
}

// -----

// An inner product: [1, 5] × [5, 1], then the scalar.
// CHECK-LABEL: func.func @inner
// CHECK: kiln.matmul %{{.*}}, %{{.*}} : (tensor<1x5xf32>, tensor<5x1xf32>) -> tensor<1x1xf32>
// CHECK: kiln.reshape %{{.*}} -> tensor<f32>
func.func @inner(%x: tensor<5xf32>, %z: tensor<5xf32>) -> tensor<f32> {
  %y = kiln.einsum %x, %z {equation = "i,i"} : (tensor<5xf32>, tensor<5xf32>) -> tensor<f32>
  return %y : tensor<f32>
}

// -----

// Three operands, contracted left to right; the output's order by a transpose.
// CHECK-LABEL: func.func @chain
// CHECK-NEXT: %[[AB:.*]] = kiln.matmul %arg0, %arg1
// CHECK-NEXT: %[[ABC:.*]] = kiln.matmul %[[AB]], %arg2
// CHECK-NEXT: kiln.transpose %[[ABC]] {perm = array<i64: 1, 0>} : (tensor<2x6xf32>) -> tensor<6x2xf32>
func.func @chain(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>, %c: tensor<4x6xf32>) -> tensor<6x2xf32> {
  %y = kiln.einsum %a, %b, %c {equation = "ij,jk,kl->li"} : (tensor<2x3xf32>, tensor<3x4xf32>, tensor<4x6xf32>) -> tensor<6x2xf32>
  return %y : tensor<6x2xf32>
}

// -----

// A label only one operand has, summed before the product (an outer product: inner size 1).
// CHECK-LABEL: func.func @sum_outer
// CHECK: kiln.reduce_sum %arg0 {axes = array<i64: 1>, keepdims = 0 : i64}
// CHECK: kiln.matmul %{{.*}}, %{{.*}} : (tensor<2x1xf32>, tensor<1x4xf32>) -> tensor<2x4xf32>
// CHECK: kiln.transpose
func.func @sum_outer(%a: tensor<2x3xf32>, %b: tensor<4xf32>) -> tensor<4x2xf32> {
  %y = kiln.einsum %a, %b {equation = "ij,k->ki"} : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<4x2xf32>
  return %y : tensor<4x2xf32>
}

// -----

// Ellipsis dims that broadcast (1 against 2): MatMul broadcasts them the same way.
// CHECK-LABEL: func.func @broadcast
// CHECK-NEXT: %[[Y:.*]] = kiln.matmul %arg0, %arg1 : (tensor<2x3x4xf32>, tensor<1x4x5xf32>) -> tensor<2x3x5xf32>
// CHECK-NEXT: return %[[Y]]
func.func @broadcast(%a: tensor<2x3x4xf32>, %b: tensor<1x4x5xf32>) -> tensor<2x3x5xf32> {
  %y = kiln.einsum %a, %b {equation = "...ij,...jk->...ik"} : (tensor<2x3x4xf32>, tensor<1x4x5xf32>) -> tensor<2x3x5xf32>
  return %y : tensor<2x3x5xf32>
}


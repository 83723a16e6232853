// RUN: %kiln-opt %s -split-input-file -kiln-fuse-attention | FileCheck %s
// RUN: %kiln-opt %s -split-input-file -kiln-fuse-attention=route=fusion.attention=off | FileCheck %s --check-prefix=OFF

// BERT's heads: Q, K, V read as [B, H, S, D] from [B, S, H, D], scores / sqrt(D) + padding mask,
// the result's head transpose stored in place.
// CHECK-LABEL: func.func @bert
// CHECK: %[[Y:.*]] = kiln.attention %arg0, %arg1, %arg2, %arg3 {perm_k = array<i64: 0, 2, 3, 1>, perm_q = array<i64: 0, 2, 1, 3>, perm_v = array<i64: 0, 2, 1, 3>, perm_y = array<i64: 0, 2, 1, 3>, scale = 0.35359{{[0-9]*}} : f32} : (tensor<2x9x3x8xf16>, tensor<2x9x3x8xf16>, tensor<2x9x3x8xf16>, tensor<2x1x1x9xf16>) -> tensor<2x9x3x8xf16>
// CHECK-NOT: kiln.softmax
// CHECK-NOT: kiln.transpose
// CHECK: return %[[Y]]
// OFF-LABEL: func.func @bert
// OFF-NOT: kiln.attention
// OFF: kiln.softmax
func.func @bert(%q: tensor<2x9x3x8xf16>, %k: tensor<2x9x3x8xf16>, %v: tensor<2x9x3x8xf16>, %mask: tensor<2x1x1x9xf16>) -> tensor<2x9x3x8xf16> {
  %c = kiln.constant dense<2.828125> : tensor<f16>
  %s = kiln.transposed_matmul %q, %k {perm_a = array<i64: 0, 2, 1, 3>, perm_b = array<i64: 0, 2, 3, 1>} : (tensor<2x9x3x8xf16>, tensor<2x9x3x8xf16>) -> tensor<2x3x9x9xf16>
  %d = kiln.div %s, %c : (tensor<2x3x9x9xf16>, tensor<f16>) -> tensor<2x3x9x9xf16>
  %m = kiln.add %d, %mask : (tensor<2x3x9x9xf16>, tensor<2x1x1x9xf16>) -> tensor<2x3x9x9xf16>
  %p = kiln.softmax %m {axis = -1 : i64} : (tensor<2x3x9x9xf16>) -> tensor<2x3x9x9xf16>
  %o = kiln.transposed_matmul %p, %v {perm_b = array<i64: 0, 2, 1, 3>} : (tensor<2x3x9x9xf16>, tensor<2x9x3x8xf16>) -> tensor<2x3x9x8xf16>
  %y = kiln.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x3x9x8xf16>) -> tensor<2x9x3x8xf16>
  return %y : tensor<2x9x3x8xf16>
}

// -----

// ViT's sequence-first heads ([S, B·H, D]), the scale as c · scores, no mask, bf16.
// CHECK-LABEL: func.func @seq_first
// CHECK: %[[N:.*]] = kiln.none
// CHECK: %[[Y:.*]] = kiln.attention %arg0, %arg1, %arg2, %[[N]] {perm_k = array<i64: 1, 2, 0>, perm_q = array<i64: 1, 0, 2>, perm_v = array<i64: 1, 0, 2>, perm_y = array<i64: 1, 0, 2>, scale = 2.500000e-01 : f32} : (tensor<7x6x16xbf16>, tensor<7x6x16xbf16>, tensor<7x6x16xbf16>, none) -> tensor<7x6x16xbf16>
// CHECK: return %[[Y]]
func.func @seq_first(%q: tensor<7x6x16xbf16>, %k: tensor<7x6x16xbf16>, %v: tensor<7x6x16xbf16>) -> tensor<7x6x16xbf16> {
  %c = kiln.constant dense<0.25> : tensor<bf16>
  %s = kiln.transposed_matmul %q, %k {perm_a = array<i64: 1, 0, 2>, perm_b = array<i64: 1, 2, 0>} : (tensor<7x6x16xbf16>, tensor<7x6x16xbf16>) -> tensor<6x7x7xbf16>
  %d = kiln.mul %c, %s : (tensor<bf16>, tensor<6x7x7xbf16>) -> tensor<6x7x7xbf16>
  %p = kiln.softmax %d {axis = 2 : i64} : (tensor<6x7x7xbf16>) -> tensor<6x7x7xbf16>
  %o = kiln.transposed_matmul %p, %v {perm_b = array<i64: 1, 0, 2>} : (tensor<6x7x7xbf16>, tensor<7x6x16xbf16>) -> tensor<6x7x16xbf16>
  %y = kiln.transpose %o {perm = array<i64: 1, 0, 2>} : (tensor<6x7x16xbf16>) -> tensor<7x6x16xbf16>
  return %y : tensor<7x6x16xbf16>
}

// -----

// GPT-2's causal Where(tril, scores, finfo.min) becomes an additive constant mask (0 or the
// fill value); P · V a plain MatMul; a result transpose that moves the last dim stays a transpose.
// CHECK-LABEL: func.func @causal
// CHECK: %[[M:.*]] = kiln.constant dense<{{.*}}> : tensor<1x1x5x5xf16>
// CHECK: %[[A:.*]] = kiln.attention %arg0, %arg1, %arg2, %[[M]] {perm_k = array<i64: 0, 1, 3, 2>, scale = 1.000000e+00 : f32} : (tensor<1x2x5x8xf16>, tensor<1x2x5x8xf16>, tensor<1x2x5x8xf16>, tensor<1x1x5x5xf16>) -> tensor<1x2x5x8xf16>
// CHECK: %[[Y:.*]] = kiln.transpose %[[A]] {perm = array<i64: 0, 1, 3, 2>}
// CHECK: return %[[Y]]
func.func @causal(%q: tensor<1x2x5x8xf16>, %k: tensor<1x2x5x8xf16>, %v: tensor<1x2x5x8xf16>) -> tensor<1x2x8x5xf16> {
  %tril = kiln.constant dense<[[[[true, false, false, false, false], [true, true, false, false, false], [true, true, true, false, false], [true, true, true, true, false], [true, true, true, true, true]]]]> : tensor<1x1x5x5xi1>
  %min = kiln.constant dense<-65504.0> : tensor<f16>
  %s = kiln.transposed_matmul %q, %k {perm_b = array<i64: 0, 1, 3, 2>} : (tensor<1x2x5x8xf16>, tensor<1x2x5x8xf16>) -> tensor<1x2x5x5xf16>
  %w = kiln.where %tril, %s, %min : (tensor<1x1x5x5xi1>, tensor<1x2x5x5xf16>, tensor<f16>) -> tensor<1x2x5x5xf16>
  %p = kiln.softmax %w {axis = -1 : i64} : (tensor<1x2x5x5xf16>) -> tensor<1x2x5x5xf16>
  %o = kiln.matmul %p, %v : (tensor<1x2x5x5xf16>, tensor<1x2x5x8xf16>) -> tensor<1x2x5x8xf16>
  %y = kiln.transpose %o {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x5x8xf16>) -> tensor<1x2x8x5xf16>
  return %y : tensor<1x2x8x5xf16>
}

// -----

// Not fused: float32 (the kernel is half only), a head size of 6, K stored as Kᵀ (the kernel
// reads K along the head dim), a mask added before the scale ((s + mask) · c would scale the
// mask too), probabilities used twice.
// CHECK-LABEL: func.func @fp32
// CHECK-NOT: kiln.attention
// CHECK-LABEL: func.func @odd_head
// CHECK-NOT: kiln.attention
// CHECK-LABEL: func.func @k_transposed
// CHECK-NOT: kiln.attention
// CHECK-LABEL: func.func @scaled_mask
// CHECK-NOT: kiln.attention
// CHECK-LABEL: func.func @two_uses
// CHECK-NOT: kiln.attention
func.func @fp32(%q: tensor<2x4x8xf32>, %k: tensor<2x4x8xf32>, %v: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %s = kiln.transposed_matmul %q, %k {perm_b = array<i64: 0, 2, 1>} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x4xf32>
  %p = kiln.softmax %s {axis = -1 : i64} : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %o = kiln.matmul %p, %v : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %o : tensor<2x4x8xf32>
}
func.func @odd_head(%q: tensor<2x4x6xf16>, %k: tensor<2x4x6xf16>, %v: tensor<2x4x6xf16>) -> tensor<2x4x6xf16> {
  %s = kiln.transposed_matmul %q, %k {perm_b = array<i64: 0, 2, 1>} : (tensor<2x4x6xf16>, tensor<2x4x6xf16>) -> tensor<2x4x4xf16>
  %p = kiln.softmax %s {axis = -1 : i64} : (tensor<2x4x4xf16>) -> tensor<2x4x4xf16>
  %o = kiln.matmul %p, %v : (tensor<2x4x4xf16>, tensor<2x4x6xf16>) -> tensor<2x4x6xf16>
  return %o : tensor<2x4x6xf16>
}
func.func @k_transposed(%q: tensor<2x4x8xf16>, %kt: tensor<2x8x4xf16>, %v: tensor<2x4x8xf16>) -> tensor<2x4x8xf16> {
  %s = kiln.matmul %q, %kt : (tensor<2x4x8xf16>, tensor<2x8x4xf16>) -> tensor<2x4x4xf16>
  %p = kiln.softmax %s {axis = -1 : i64} : (tensor<2x4x4xf16>) -> tensor<2x4x4xf16>
  %o = kiln.matmul %p, %v : (tensor<2x4x4xf16>, tensor<2x4x8xf16>) -> tensor<2x4x8xf16>
  return %o : tensor<2x4x8xf16>
}
func.func @scaled_mask(%q: tensor<2x4x8xf16>, %k: tensor<2x4x8xf16>, %v: tensor<2x4x8xf16>, %mask: tensor<2x4x4xf16>) -> tensor<2x4x8xf16> {
  %c = kiln.constant dense<0.5> : tensor<f16>
  %s = kiln.transposed_matmul %q, %k {perm_b = array<i64: 0, 2, 1>} : (tensor<2x4x8xf16>, tensor<2x4x8xf16>) -> tensor<2x4x4xf16>
  %m = kiln.add %s, %mask : (tensor<2x4x4xf16>, tensor<2x4x4xf16>) -> tensor<2x4x4xf16>
  %d = kiln.mul %m, %c : (tensor<2x4x4xf16>, tensor<f16>) -> tensor<2x4x4xf16>
  %p = kiln.softmax %d {axis = -1 : i64} : (tensor<2x4x4xf16>) -> tensor<2x4x4xf16>
  %o = kiln.matmul %p, %v : (tensor<2x4x4xf16>, tensor<2x4x8xf16>) -> tensor<2x4x8xf16>
  return %o : tensor<2x4x8xf16>
}
func.func @two_uses(%q: tensor<2x4x8xf16>, %k: tensor<2x4x8xf16>, %v: tensor<2x4x8xf16>) -> (tensor<2x4x8xf16>, tensor<2x4x4xf16>) {
  %s = kiln.transposed_matmul %q, %k {perm_b = array<i64: 0, 2, 1>} : (tensor<2x4x8xf16>, tensor<2x4x8xf16>) -> tensor<2x4x4xf16>
  %p = kiln.softmax %s {axis = -1 : i64} : (tensor<2x4x4xf16>) -> tensor<2x4x4xf16>
  %o = kiln.matmul %p, %v : (tensor<2x4x4xf16>, tensor<2x4x8xf16>) -> tensor<2x4x8xf16>
  return %o, %p : tensor<2x4x8xf16>, tensor<2x4x4xf16>
}

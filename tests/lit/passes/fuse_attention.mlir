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

// GPT-2's causal Where(tril, scores, finfo.min) becomes causal_diagonal 0 (computed in the
// kernel, no mask tensor); P · V a plain MatMul; a result transpose that moves the last dim stays
// a transpose.
// CHECK-LABEL: func.func @causal
// CHECK: %[[N:.*]] = kiln.none
// CHECK: %[[A:.*]] = kiln.attention %arg0, %arg1, %arg2, %[[N]] {causal_diagonal = 0 : i64, perm_k = array<i64: 0, 1, 3, 2>, scale = 1.000000e+00 : f32} : (tensor<1x2x5x8xf16>, tensor<1x2x5x8xf16>, tensor<1x2x5x8xf16>, none) -> tensor<1x2x5x8xf16>
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

// A Where condition that is not causal (a key hidden from every query; a diagonal of 1 that is
// causal too, but on a 5x4 condition that broadcasts over the heads) : an additive constant mask
// in the first function, causal_diagonal 1 in the second.
// CHECK-LABEL: func.func @where_not_causal
// CHECK: %[[M:.*]] = kiln.constant dense<{{.*}}> : tensor<1x1x5x5xf16>
// CHECK: kiln.attention %arg0, %arg1, %arg2, %[[M]] {perm_k = array<i64: 0, 1, 3, 2>, scale = 1.000000e+00 : f32}
// CHECK-LABEL: func.func @causal_diagonal_one
// CHECK: kiln.attention %arg0, %arg1, %arg2, %{{.*}} {causal_diagonal = 1 : i64, perm_k = array<i64: 0, 1, 3, 2>, scale = 1.000000e+00 : f32}
func.func @where_not_causal(%q: tensor<1x2x5x8xf16>, %k: tensor<1x2x5x8xf16>, %v: tensor<1x2x5x8xf16>) -> tensor<1x2x5x8xf16> {
  %cond = kiln.constant dense<[[[[true, false, true, true, true], [true, false, true, true, true], [true, false, true, true, true], [true, false, true, true, true], [true, false, true, true, true]]]]> : tensor<1x1x5x5xi1>
  %min = kiln.constant dense<-65504.0> : tensor<f16>
  %s = kiln.transposed_matmul %q, %k {perm_b = array<i64: 0, 1, 3, 2>} : (tensor<1x2x5x8xf16>, tensor<1x2x5x8xf16>) -> tensor<1x2x5x5xf16>
  %w = kiln.where %cond, %s, %min : (tensor<1x1x5x5xi1>, tensor<1x2x5x5xf16>, tensor<f16>) -> tensor<1x2x5x5xf16>
  %p = kiln.softmax %w {axis = -1 : i64} : (tensor<1x2x5x5xf16>) -> tensor<1x2x5x5xf16>
  %o = kiln.matmul %p, %v : (tensor<1x2x5x5xf16>, tensor<1x2x5x8xf16>) -> tensor<1x2x5x8xf16>
  return %o : tensor<1x2x5x8xf16>
}
func.func @causal_diagonal_one(%q: tensor<1x2x5x8xf16>, %k: tensor<1x2x4x8xf16>, %v: tensor<1x2x4x8xf16>) -> tensor<1x2x5x8xf16> {
  %cond = kiln.constant dense<[[true, true, false, false], [true, true, true, false], [true, true, true, true], [true, true, true, true], [true, true, true, true]]> : tensor<5x4xi1>
  %min = kiln.constant dense<-10000.0> : tensor<f16>
  %s = kiln.transposed_matmul %q, %k {perm_b = array<i64: 0, 1, 3, 2>} : (tensor<1x2x5x8xf16>, tensor<1x2x4x8xf16>) -> tensor<1x2x5x4xf16>
  %w = kiln.where %cond, %s, %min : (tensor<5x4xi1>, tensor<1x2x5x4xf16>, tensor<f16>) -> tensor<1x2x5x4xf16>
  %p = kiln.softmax %w {axis = -1 : i64} : (tensor<1x2x5x4xf16>) -> tensor<1x2x5x4xf16>
  %o = kiln.matmul %p, %v : (tensor<1x2x5x4xf16>, tensor<1x2x4x8xf16>) -> tensor<1x2x5x8xf16>
  return %o : tensor<1x2x5x8xf16>
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

// -----

// PyTorch's exported scaled_dot_product_attention (torch.onnx, after kiln-canonicalize-linear has
// moved the square roots of the scale from Q and Kᵀ to the scores): a runtime boolean mask made
// additive by Where(keep, 0, -inf), and Where(IsNaN(p), 0, p) after the Softmax, which becomes
// zero_masked_rows (the kernel stores 0 for a query whose keys are all masked).
// CHECK-LABEL: func.func @torch_sdpa
// CHECK: %[[M:.*]] = kiln.where %arg3
// CHECK: %[[Y:.*]] = kiln.attention %arg0, %arg1, %arg2, %[[M]] {perm_k = array<i64: 0, 1, 3, 2>, scale = 2.500000e-01 : f32, zero_masked_rows = 1 : i64}
// CHECK-NOT: kiln.isnan
// CHECK: return %[[Y]]
func.func @torch_sdpa(%q: tensor<3x2x9x16xf16>, %k: tensor<3x2x9x16xf16>, %v: tensor<3x2x9x16xf16>, %keep: tensor<3x1x1x9xi1>) -> tensor<3x2x9x16xf16> {
  %half = kiln.constant dense<5.000000e-01> : tensor<1xf16>
  %zero = kiln.constant dense<0.000000e+00> : tensor<f16>
  %ninf = kiln.constant dense<0xFC00> : tensor<f16>
  %s = kiln.transposed_matmul %q, %k {perm_b = array<i64: 0, 1, 3, 2>} : (tensor<3x2x9x16xf16>, tensor<3x2x9x16xf16>) -> tensor<3x2x9x9xf16>
  %s1 = kiln.mul %s, %half : (tensor<3x2x9x9xf16>, tensor<1xf16>) -> tensor<3x2x9x9xf16>
  %s2 = kiln.mul %s1, %half : (tensor<3x2x9x9xf16>, tensor<1xf16>) -> tensor<3x2x9x9xf16>
  %mask = kiln.where %keep, %zero, %ninf : (tensor<3x1x1x9xi1>, tensor<f16>, tensor<f16>) -> tensor<3x1x1x9xf16>
  %m = kiln.add %s2, %mask : (tensor<3x2x9x9xf16>, tensor<3x1x1x9xf16>) -> tensor<3x2x9x9xf16>
  %p = kiln.softmax %m {axis = -1 : i64} : (tensor<3x2x9x9xf16>) -> tensor<3x2x9x9xf16>
  %nan = kiln.isnan %p : (tensor<3x2x9x9xf16>) -> tensor<3x2x9x9xi1>
  %p0 = kiln.where %nan, %zero, %p : (tensor<3x2x9x9xi1>, tensor<f16>, tensor<3x2x9x9xf16>) -> tensor<3x2x9x9xf16>
  %y = kiln.matmul %p0, %v : (tensor<3x2x9x9xf16>, tensor<3x2x9x16xf16>) -> tensor<3x2x9x16xf16>
  return %y : tensor<3x2x9x16xf16>
}

// -----

// Not that Where: NaN probabilities set to 1 (not 0) are not what zero_masked_rows computes.
// CHECK-LABEL: func.func @nan_to_one
// CHECK-NOT: kiln.attention
func.func @nan_to_one(%q: tensor<2x4x8xf16>, %k: tensor<2x4x8xf16>, %v: tensor<2x4x8xf16>) -> tensor<2x4x8xf16> {
  %one = kiln.constant dense<1.0> : tensor<f16>
  %s = kiln.transposed_matmul %q, %k {perm_b = array<i64: 0, 2, 1>} : (tensor<2x4x8xf16>, tensor<2x4x8xf16>) -> tensor<2x4x4xf16>
  %p = kiln.softmax %s {axis = -1 : i64} : (tensor<2x4x4xf16>) -> tensor<2x4x4xf16>
  %nan = kiln.isnan %p : (tensor<2x4x4xf16>) -> tensor<2x4x4xi1>
  %p1 = kiln.where %nan, %one, %p : (tensor<2x4x4xi1>, tensor<f16>, tensor<2x4x4xf16>) -> tensor<2x4x4xf16>
  %o = kiln.matmul %p1, %v : (tensor<2x4x4xf16>, tensor<2x4x8xf16>) -> tensor<2x4x8xf16>
  return %o : tensor<2x4x8xf16>
}

// torch 2.11's ViT: the packed [S, B, 3·H·D] projection reshaped, transposed, gathered per
// Q/K/V, heads split and transposed to [B, H, S, D]: every operand is read in place from the
// projection (one stride per dim; offsets 0, H·D, 2·H·D) and the copies go.
// CHECK-LABEL: func.func @vit_packed
// CHECK-NOT: kiln.transpose
// CHECK-NOT: kiln.gather
// CHECK: %[[Q:.*]] = kiln.strided_view %arg0 {offset = 0 : i64, shape = array<i64: 2, 2, 5, 8>, strides = array<i64: 48, 8, 96, 1>}
// CHECK: %[[K:.*]] = kiln.strided_view %arg0 {offset = 16 : i64, shape = array<i64: 2, 2, 5, 8>, strides = array<i64: 48, 8, 96, 1>}
// CHECK: %[[V:.*]] = kiln.strided_view %arg0 {offset = 32 : i64, shape = array<i64: 2, 2, 5, 8>, strides = array<i64: 48, 8, 96, 1>}
// CHECK: kiln.attention %[[Q]], %[[K]], %[[V]]
// OFF-LABEL: func.func @vit_packed
// OFF-NOT: kiln.strided_view
func.func @vit_packed(%qkv: tensor<5x2x48xf16>) -> tensor<2x2x5x8xf16> {
  %s1 = kiln.constant dense<[5, 2, 3, 16]> : tensor<4xi64>
  %s2 = kiln.constant dense<[5, 4, 8]> : tensor<3xi64>
  %s3 = kiln.constant dense<[2, 2, 5, 8]> : tensor<4xi64>
  %i0 = kiln.constant dense<0> : tensor<i64>
  %i1 = kiln.constant dense<1> : tensor<i64>
  %i2 = kiln.constant dense<2> : tensor<i64>
  %c = kiln.constant dense<0.353515625> : tensor<f16>
  %r = kiln.reshape %qkv, %s1 : (tensor<5x2x48xf16>, tensor<4xi64>) -> tensor<5x2x3x16xf16>
  %u = kiln.unsqueeze %r {axes = array<i64: 0>} : (tensor<5x2x3x16xf16>) -> tensor<1x5x2x3x16xf16>
  %t = kiln.transpose %u {perm = array<i64: 3, 1, 2, 0, 4>} : (tensor<1x5x2x3x16xf16>) -> tensor<3x5x2x1x16xf16>
  %sq = kiln.squeeze %t {axes = array<i64: 3>} : (tensor<3x5x2x1x16xf16>) -> tensor<3x5x2x16xf16>
  %q0 = kiln.gather %sq, %i0 {axis = 0 : i64} : (tensor<3x5x2x16xf16>, tensor<i64>) -> tensor<5x2x16xf16>
  %k0 = kiln.gather %sq, %i1 {axis = 0 : i64} : (tensor<3x5x2x16xf16>, tensor<i64>) -> tensor<5x2x16xf16>
  %v0 = kiln.gather %sq, %i2 {axis = 0 : i64} : (tensor<3x5x2x16xf16>, tensor<i64>) -> tensor<5x2x16xf16>
  %q1 = kiln.reshape %q0, %s2 : (tensor<5x2x16xf16>, tensor<3xi64>) -> tensor<5x4x8xf16>
  %k1 = kiln.reshape %k0, %s2 : (tensor<5x2x16xf16>, tensor<3xi64>) -> tensor<5x4x8xf16>
  %v1 = kiln.reshape %v0, %s2 : (tensor<5x2x16xf16>, tensor<3xi64>) -> tensor<5x4x8xf16>
  %q2 = kiln.transpose %q1 {perm = array<i64: 1, 0, 2>} : (tensor<5x4x8xf16>) -> tensor<4x5x8xf16>
  %k2 = kiln.transpose %k1 {perm = array<i64: 1, 0, 2>} : (tensor<5x4x8xf16>) -> tensor<4x5x8xf16>
  %v2 = kiln.transpose %v1 {perm = array<i64: 1, 0, 2>} : (tensor<5x4x8xf16>) -> tensor<4x5x8xf16>
  %q = kiln.reshape %q2, %s3 : (tensor<4x5x8xf16>, tensor<4xi64>) -> tensor<2x2x5x8xf16>
  %k = kiln.reshape %k2, %s3 : (tensor<4x5x8xf16>, tensor<4xi64>) -> tensor<2x2x5x8xf16>
  %v = kiln.reshape %v2, %s3 : (tensor<4x5x8xf16>, tensor<4xi64>) -> tensor<2x2x5x8xf16>
  %sc = kiln.transposed_matmul %q, %k {perm_b = array<i64: 0, 1, 3, 2>} : (tensor<2x2x5x8xf16>, tensor<2x2x5x8xf16>) -> tensor<2x2x5x5xf16>
  %d = kiln.mul %sc, %c : (tensor<2x2x5x5xf16>, tensor<f16>) -> tensor<2x2x5x5xf16>
  %p = kiln.softmax %d {axis = -1 : i64} : (tensor<2x2x5x5xf16>) -> tensor<2x2x5x5xf16>
  %o = kiln.matmul %p, %v : (tensor<2x2x5x5xf16>, tensor<2x2x5x8xf16>) -> tensor<2x2x5x8xf16>
  return %o : tensor<2x2x5x8xf16>
}

// -----

// GPT-2's Split of the packed projection: each part a view at its column offset. torch 1.13's
// nn.MultiheadAttention slices [S, B, 3·E] and folds B and H into one dim of [S, B·H, D], which
// no single stride walks: those slices stay copies.
// CHECK-LABEL: func.func @split_packed
// CHECK-NOT: kiln.split
// CHECK: kiln.strided_view %arg0 {offset = 0 : i64, shape = array<i64: 1, 7, 2, 8>, strides = array<i64: 0, 48, 8, 1>}
// CHECK: kiln.strided_view %arg0 {offset = 16 : i64, shape = array<i64: 1, 7, 2, 8>, strides = array<i64: 0, 48, 8, 1>}
// CHECK: kiln.strided_view %arg0 {offset = 32 : i64, shape = array<i64: 1, 7, 2, 8>, strides = array<i64: 0, 48, 8, 1>}
// CHECK-LABEL: func.func @heads_in_batch
// CHECK-COUNT-3: kiln.slice
// CHECK-NOT: kiln.strided_view
// CHECK: kiln.attention
func.func @split_packed(%qkv: tensor<1x7x48xf16>) -> tensor<1x7x2x8xf16> {
  %s = kiln.constant dense<[1, 7, 2, 8]> : tensor<4xi64>
  %q0, %k0, %v0 = kiln.split %qkv {axis = 2 : i64, split = array<i64: 16, 16, 16>} : (tensor<1x7x48xf16>) -> (tensor<1x7x16xf16>, tensor<1x7x16xf16>, tensor<1x7x16xf16>)
  %q = kiln.reshape %q0, %s : (tensor<1x7x16xf16>, tensor<4xi64>) -> tensor<1x7x2x8xf16>
  %k = kiln.reshape %k0, %s : (tensor<1x7x16xf16>, tensor<4xi64>) -> tensor<1x7x2x8xf16>
  %v = kiln.reshape %v0, %s : (tensor<1x7x16xf16>, tensor<4xi64>) -> tensor<1x7x2x8xf16>
  %sc = kiln.transposed_matmul %q, %k {perm_a = array<i64: 0, 2, 1, 3>, perm_b = array<i64: 0, 2, 3, 1>} : (tensor<1x7x2x8xf16>, tensor<1x7x2x8xf16>) -> tensor<1x2x7x7xf16>
  %p = kiln.softmax %sc {axis = -1 : i64} : (tensor<1x2x7x7xf16>) -> tensor<1x2x7x7xf16>
  %o = kiln.transposed_matmul %p, %v {perm_b = array<i64: 0, 2, 1, 3>} : (tensor<1x2x7x7xf16>, tensor<1x7x2x8xf16>) -> tensor<1x2x7x8xf16>
  %y = kiln.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x7x8xf16>) -> tensor<1x7x2x8xf16>
  return %y : tensor<1x7x2x8xf16>
}
func.func @heads_in_batch(%qkv: tensor<7x2x48xf16>) -> tensor<4x7x8xf16> {
  %s = kiln.constant dense<[7, 4, 8]> : tensor<3xi64>
  %a = kiln.constant dense<-1> : tensor<1xi64>
  %b0 = kiln.constant dense<0> : tensor<1xi64>
  %b1 = kiln.constant dense<16> : tensor<1xi64>
  %b2 = kiln.constant dense<32> : tensor<1xi64>
  %b3 = kiln.constant dense<48> : tensor<1xi64>
  %none = kiln.none
  %q0 = kiln.slice %qkv, %b0, %b1, %a, %none : (tensor<7x2x48xf16>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, none) -> tensor<7x2x16xf16>
  %k0 = kiln.slice %qkv, %b1, %b2, %a, %none : (tensor<7x2x48xf16>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, none) -> tensor<7x2x16xf16>
  %v0 = kiln.slice %qkv, %b2, %b3, %a, %none : (tensor<7x2x48xf16>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, none) -> tensor<7x2x16xf16>
  %q = kiln.reshape %q0, %s : (tensor<7x2x16xf16>, tensor<3xi64>) -> tensor<7x4x8xf16>
  %k = kiln.reshape %k0, %s : (tensor<7x2x16xf16>, tensor<3xi64>) -> tensor<7x4x8xf16>
  %v = kiln.reshape %v0, %s : (tensor<7x2x16xf16>, tensor<3xi64>) -> tensor<7x4x8xf16>
  %sc = kiln.transposed_matmul %q, %k {perm_a = array<i64: 1, 0, 2>, perm_b = array<i64: 1, 2, 0>} : (tensor<7x4x8xf16>, tensor<7x4x8xf16>) -> tensor<4x7x7xf16>
  %p = kiln.softmax %sc {axis = -1 : i64} : (tensor<4x7x7xf16>) -> tensor<4x7x7xf16>
  %o = kiln.transposed_matmul %p, %v {perm_b = array<i64: 1, 0, 2>} : (tensor<4x7x7xf16>, tensor<7x4x8xf16>) -> tensor<4x7x8xf16>
  return %o : tensor<4x7x8xf16>
}

// -----

// BERT's separate query/key/value Linear layers on one input: one product of the three weights
// side by side (and their biases); Q, K and V are read as strided views of its columns.
// CHECK-LABEL: func.func @separate_projections
// CHECK: %[[P:.*]] = kiln.matmul %arg0, %{{.*}} : (tensor<2x9x16xf16>, tensor<16x48xf16>) -> tensor<2x9x48xf16>
// CHECK: %[[B:.*]] = kiln.add %[[P]], %{{.*}} : (tensor<2x9x48xf16>, tensor<48xf16>) -> tensor<2x9x48xf16>
// CHECK-DAG: %[[Q:.*]] = kiln.strided_view %[[B]] {offset = 0 : i64, shape = array<i64: 2, 9, 2, 8>, strides = array<i64: 432, 48, 8, 1>}
// CHECK-DAG: %[[K:.*]] = kiln.strided_view %[[B]] {offset = 16 : i64, shape = array<i64: 2, 9, 2, 8>, strides = array<i64: 432, 48, 8, 1>}
// CHECK-DAG: %[[V:.*]] = kiln.strided_view %[[B]] {offset = 32 : i64, shape = array<i64: 2, 9, 2, 8>, strides = array<i64: 432, 48, 8, 1>}
// CHECK: kiln.attention %[[Q]], %[[K]], %[[V]], %arg1
// CHECK-NOT: kiln.slice
// CHECK-NOT: kiln.matmul
// OFF-LABEL: func.func @separate_projections
// OFF-COUNT-3: kiln.matmul
func.func @separate_projections(%x: tensor<2x9x16xf16>, %mask: tensor<2x1x1x9xf16>) -> tensor<2x9x2x8xf16> {
  %wq = kiln.constant dense<[[0.3125, 0.1250, -0.2500, 0.1250, -0.1250, -0.8750, 0.1875, -0.1875, 0.1250, -0.5000, -0.8125, -0.5000, -0.3125, 0.8750, -0.2500, 0.3750], [-0.4375, 0.2500, -0.1250, -1.0000, 0.6875, 0.9375, 0.6250, -0.3750, -0.1875, 1.0000, 0.9375, 0.1875, -0.8750, -0.6875, -1.0000, 0.1250], [-0.6875, 0.7500, 0.9375, -0.1875, 1.0000, -0.1250, 0.9375, 0.8125, 0.0625, 0.7500, -0.2500, 0.1250, -0.6250, -0.5000, 0.8125, 0.1875], [-0.9375, 0.5625, -0.8750, 0.8750, 0.8125, -0.3125, -0.3750, -0.5000, -0.0625, 0.3750, 0.6250, -0.3125, 0.7500, 0.3125, -0.9375, 0.8125], [0.8125, -1.0000, 0.1250, -0.1875, -0.9375, -0.2500, 0.1250, -0.0625, -0.2500, 0.0625, -0.4375, 0.3125, 0.7500, 1.0000, -0.2500, 0.9375], [1.0000, 0.1875, -0.2500, 0.5625, 0.3750, -0.4375, 0.3125, -0.6250, -0.5625, 0.3750, 0.5000, 0.5000, -0.5000, 0.5000, -1.0000, 0.0625], [-0.5625, 0.5625, -0.7500, 0.7500, 0.1875, -0.2500, -1.0000, -0.6875, -1.0000, -1.0000, 0.1875, -0.8125, -1.0000, -0.8750, 0.1875, 0.9375], [0.1875, -0.3750, -0.0625, -0.9375, -1.0000, 0.3125, -0.0625, -0.2500, -0.8750, -0.4375, -0.5625, -0.6250, -0.6875, 0.8750, -0.1250, 0.9375], [0.3125, -0.0625, 0.3750, -0.3125, -0.3125, 0.2500, -0.6875, 0.2500, -0.5000, -0.5625, -0.2500, 0.0625, -0.9375, 0.4375, 0.9375, 0.5000], [0.4375, 0.3125, 0.2500, 0.9375, 0.1875, -0.8750, -0.4375, 0.2500, -0.7500, -0.5625, -0.9375, -0.2500, 1.0000, -0.5000, -0.8750, 0.6875], [0.4375, 0.6875, -0.7500, -0.6875, 0.9375, -0.8125, 0.6250, -0.2500, -0.2500, -0.5625, 0.1250, -0.5625, -0.8750, 0.8125, -1.0000, 0.1875], [0.1250, -0.8750, -0.5625, -0.1875, 0.1875, -0.1875, 0.2500, 0.0625, 0.8750, 0.3125, -0.5000, -0.3750, 0.1250, -0.4375, 0.6250, -0.6250], [0.3750, 0.7500, -0.5625, -0.0625, -0.4375, 0.5000, 0.2500, 1.0000, 0.6250, -0.5000, 0.4375, -0.8125, 0.1250, -0.0625, -0.5625, 0.3750], [-0.1875, 0.6250, -0.6250, -0.9375, -0.3750, 0.9375, -0.5625, 0.6875, 0.5000, -0.6250, -0.7500, -0.0625, 0.8125, -1.0000, 0.4375, -0.0625], [-0.5625, -0.3125, 0.1250, 0.0625, 0.6250, -0.1875, -0.8125, 1.0000, -0.6250, -0.1250, 0.3125, -0.5000, -0.0625, -0.3125, 0.2500, 0.9375], [-0.0625, -1.0000, 0.0625, 0.1875, -0.1875, 0.5625, -0.5625, -0.4375, -0.9375, 0.8125, -1.0000, 0.1250, -0.1875, -0.6875, 0.6250, -0.0625]]> : tensor<16x16xf16>
  %wk = kiln.constant dense<[[0.1250, 0.5625, -0.4375, 0.6250, 0.9375, 0.9375, -0.4375, 0.1875, 0.0625, 0.9375, -0.9375, 0.8125, -0.4375, -0.1875, -0.5625, 0.3125], [0.2500, 0.5000, 1.0000, 0.0625, -0.0625, 0.9375, 0.6250, -0.8750, 0.8125, 0.2500, 0.0625, 0.6875, 0.2500, -0.0625, 0.5625, 0.1875], [0.8125, -0.7500, 0.5625, -0.5625, -0.1250, 0.3125, -0.5625, 0.6875, -0.7500, 0.0625, 0.4375, -0.1250, 0.9375, -0.6250, 0.1250, -0.3750], [0.8750, 0.6250, 0.5625, 0.8125, -0.6250, 0.8125, -0.3750, -0.1875, -1.0000, -0.9375, 0.9375, 0.3125, -0.5000, -0.3750, 0.1875, 0.5000], [0.5625, -0.0625, 0.8125, 0.4375, 0.5625, 0.1250, 0.5625, 0.3125, -0.1875, 0.5000, 0.8125, 0.8750, 0.0625, -0.1250, 1.0000, 0.0625], [-0.8125, 0.9375, -0.2500, -0.3125, -0.2500, 0.1875, -0.0625, -0.5000, -0.6250, -0.5625, 0.2500, -0.1875, 0.4375, 0.5625, -0.0625, -0.6250], [0.5625, 0.5000, 0.5000, -0.0625, 0.6250, -0.0625, -1.0000, 0.1875, 0.5000, 0.7500, -1.0000, -0.6875, 0.7500, 0.4375, -0.6250, -0.4375], [0.4375, 0.4375, -0.9375, -0.5625, 0.2500, 0.3750, -1.0000, 0.1250, -0.8125, -0.4375, -0.3125, 0.1250, -0.3750, 0.9375, 0.2500, -0.3750], [0.4375, -0.9375, -0.6250, 0.7500, 0.9375, -0.2500, -0.1875, 0.1875, 0.8750, -0.4375, 0.7500, 0.8750, -0.1250, 0.4375, 0.9375, -0.6875], [1.0000, -0.8750, -0.8125, -0.8125, -0.9375, -0.1250, 0.4375, -0.6875, 0.5625, 0.1250, 0.6875, 0.6250, -0.1875, -0.5000, -1.0000, 0.8125], [0.8750, 0.3125, 0.3750, -0.6250, -0.5000, 0.6875, 0.7500, -0.4375, 0.3750, -0.8750, -0.1250, 0.6875, -0.8750, -0.1875, 0.1875, -0.2500], [1.0000, 0.3750, -0.3125, 0.9375, -0.2500, 0.6250, 0.5625, 0.5625, 0.4375, 0.5000, -0.5000, -0.3125, 0.4375, 0.1875, 0.5625, -0.5000], [-0.9375, -0.2500, -1.0000, -0.9375, 0.1250, 0.5000, -0.1250, -0.4375, -0.7500, -0.9375, 0.0625, -0.7500, -0.1250, 0.6875, -0.1250, -0.5625], [-0.4375, -0.6875, 0.7500, -0.6250, -0.4375, -1.0000, 0.1875, 0.2500, 0.3125, -0.3750, 0.5625, 0.6250, 0.8750, -0.6250, 0.8750, 0.0625], [0.4375, 0.8125, -0.0625, 0.3750, 0.2500, -0.8125, 0.9375, -0.3125, -0.1250, -0.8125, -0.7500, -0.3125, 0.6250, -0.3750, -0.2500, 1.0000], [-0.6250, -0.1250, 0.6875, -0.8125, -0.3750, -0.8125, -1.0000, -0.4375, -0.8125, -0.8125, 0.2500, -0.5000, -0.1250, -0.6875, -0.8125, 0.6250]]> : tensor<16x16xf16>
  %wv = kiln.constant dense<[[0.6250, -0.8750, 0.7500, 0.9375, -0.0625, -1.0000, 0.5000, 0.9375, -1.0000, 0.2500, -0.3125, 0.8750, 0.1875, 0.1250, -0.3125, -0.6875], [-0.1250, 0.3125, -0.1875, -0.4375, -1.0000, 0.3750, -0.1875, 0.5625, -0.6875, 0.9375, -0.5625, 0.4375, 0.5000, 0.7500, -0.4375, -0.8125], [-0.5625, 0.8125, -0.5625, -0.1250, 0.9375, -0.5625, 0.7500, 0.8125, 0.3125, 0.6875, -0.9375, -0.3750, -0.6250, 0.6250, 0.0625, -0.5000], [-0.6250, 0.8750, 0.1250, -1.0000, -0.1250, -0.1250, -0.7500, 0.2500, 0.5000, 0.6250, -0.4375, 1.0000, -0.3125, -0.5000, -0.9375, -0.1875], [-0.5625, 0.5625, -0.1250, 0.9375, 0.5000, -0.0625, -0.1250, -0.8125, -0.5000, -0.1250, -0.0625, -0.3125, 0.4375, 0.3750, 0.1875, 0.1250], [0.0625, 0.8750, 0.1875, 0.3750, -0.2500, 0.5000, -0.2500, 0.5625, -0.5625, 0.5625, 0.4375, -0.0625, -0.5625, -0.4375, -0.6875, -0.8125], [0.5000, 1.0000, 0.0625, -0.8750, -0.6250, -0.8125, -0.3750, -0.1250, -0.2500, -0.3750, 0.3125, -0.0625, -0.3125, -0.1875, -0.1875, 0.4375], [-0.8125, -0.5000, -0.4375, -0.1250, -0.1875, 1.0000, -0.3125, -0.4375, 0.6875, 0.8750, 0.0625, 0.5625, 0.1250, 0.6875, 0.6250, -0.8750], [-0.8750, -0.7500, 0.1250, -0.1875, 0.3750, 0.0625, -0.6250, -0.0625, 1.0000, -1.0000, -1.0000, 0.5625, -0.6250, -0.5000, 0.3750, -0.1875], [0.2500, 0.7500, -0.8125, 0.1875, 0.0625, 0.4375, 0.5625, 0.3750, 0.5000, 0.3125, -0.7500, 0.3125, 0.6875, -0.9375, 0.5625, -0.3125], [0.9375, -0.4375, 0.6250, -0.3125, -0.6875, 0.3750, -0.6875, -0.5625, -0.3750, -0.4375, 0.3125, -0.6250, 0.8750, 0.4375, -0.2500, 0.4375], [0.9375, -0.0625, 0.8750, -0.6250, 0.0625, -0.5625, 0.0625, -0.8750, 0.5000, -0.3750, -0.9375, 0.6875, 0.2500, 0.5000, 0.3750, 0.8750], [0.9375, -0.8750, -0.6875, -0.8125, 0.2500, -0.5625, -0.3750, -0.7500, -0.9375, -1.0000, -0.7500, 0.8750, 0.4375, -0.8125, -0.7500, -0.5625], [0.8125, 0.1250, -0.1875, 0.8750, 0.5625, -0.5000, 0.8125, -0.8125, 0.4375, -0.3125, -0.4375, 0.5000, -0.7500, 0.9375, 0.3125, 0.7500], [-0.5625, 0.5625, 0.3750, 0.0625, 0.7500, -0.6250, 1.0000, 0.8750, -0.7500, -0.6250, 0.1250, -0.6875, -0.7500, -0.0625, -0.1875, 0.5625], [-0.3125, -0.3750, 0.7500, -0.4375, 0.3750, -0.6250, -1.0000, -0.1875, 0.2500, -0.5625, 0.5000, -1.0000, 0.1250, 0.9375, -1.0000, -1.0000]]> : tensor<16x16xf16>
  %bq = kiln.constant dense<[-0.375, -1.000, -0.375, 0.250, 0.750, 0.875, 0.125, 0.750, 0.375, 0.625, 0.625, -0.750, -0.375, 0.375, -1.000, -1.000]> : tensor<16xf16>
  %bk = kiln.constant dense<[-0.875, 0.250, -0.625, 1.000, 0.875, 0.875, -0.500, -0.875, -0.250, 0.625, -0.500, 0.250, -0.625, 0.375, 0.250, 0.875]> : tensor<16xf16>
  %bv = kiln.constant dense<[1.000, -0.250, 0.125, 0.625, 0.250, 0.625, 0.000, -0.875, 0.125, 0.125, 0.375, 0.875, 0.500, 0.250, 1.000, 0.000]> : tensor<16xf16>
  %heads = kiln.constant dense<[2, 9, 2, 8]> : tensor<4xi64>
  %pq = kiln.matmul %x, %wq : (tensor<2x9x16xf16>, tensor<16x16xf16>) -> tensor<2x9x16xf16>
  %aq = kiln.add %bq, %pq : (tensor<16xf16>, tensor<2x9x16xf16>) -> tensor<2x9x16xf16>
  %q = kiln.reshape %aq, %heads : (tensor<2x9x16xf16>, tensor<4xi64>) -> tensor<2x9x2x8xf16>
  %pk = kiln.matmul %x, %wk : (tensor<2x9x16xf16>, tensor<16x16xf16>) -> tensor<2x9x16xf16>
  %ak = kiln.add %bk, %pk : (tensor<16xf16>, tensor<2x9x16xf16>) -> tensor<2x9x16xf16>
  %k = kiln.reshape %ak, %heads : (tensor<2x9x16xf16>, tensor<4xi64>) -> tensor<2x9x2x8xf16>
  %pv = kiln.matmul %x, %wv : (tensor<2x9x16xf16>, tensor<16x16xf16>) -> tensor<2x9x16xf16>
  %av = kiln.add %pv, %bv : (tensor<2x9x16xf16>, tensor<16xf16>) -> tensor<2x9x16xf16>
  %v = kiln.reshape %av, %heads : (tensor<2x9x16xf16>, tensor<4xi64>) -> tensor<2x9x2x8xf16>
  %c = kiln.constant dense<2.828125> : tensor<f16>
  %s = kiln.transposed_matmul %q, %k {perm_a = array<i64: 0, 2, 1, 3>, perm_b = array<i64: 0, 2, 3, 1>} : (tensor<2x9x2x8xf16>, tensor<2x9x2x8xf16>) -> tensor<2x2x9x9xf16>
  %d = kiln.div %s, %c : (tensor<2x2x9x9xf16>, tensor<f16>) -> tensor<2x2x9x9xf16>
  %m = kiln.add %d, %mask : (tensor<2x2x9x9xf16>, tensor<2x1x1x9xf16>) -> tensor<2x2x9x9xf16>
  %p = kiln.softmax %m {axis = -1 : i64} : (tensor<2x2x9x9xf16>) -> tensor<2x2x9x9xf16>
  %o = kiln.transposed_matmul %p, %v {perm_b = array<i64: 0, 2, 1, 3>} : (tensor<2x2x9x9xf16>, tensor<2x9x2x8xf16>) -> tensor<2x2x9x8xf16>
  %y = kiln.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x2x9x8xf16>) -> tensor<2x9x2x8xf16>
  return %y : tensor<2x9x2x8xf16>
}

// -----

// torch.export's K: transposed to heads-first by its own Transpose before the scores product reads
// it. The three projections still merge, and K's view reads the merged product through it.
// CHECK-LABEL: func.func @separate_projections_k_transposed
// CHECK: %[[P:.*]] = kiln.matmul %arg0, %{{.*}} : (tensor<2x9x16xf16>, tensor<16x48xf16>) -> tensor<2x9x48xf16>
// CHECK-DAG: %[[K:.*]] = kiln.strided_view %[[P]] {offset = 16 : i64
// CHECK: kiln.attention %{{.*}}, %[[K]], %{{.*}}, %arg1
// CHECK-NOT: kiln.matmul
func.func @separate_projections_k_transposed(%x: tensor<2x9x16xf16>, %mask: tensor<2x1x1x9xf16>) -> tensor<2x9x2x8xf16> {
  %wq = kiln.constant dense<0.25> : tensor<16x16xf16>
  %wk = kiln.constant dense<-0.5> : tensor<16x16xf16>
  %wv = kiln.constant dense<0.75> : tensor<16x16xf16>
  %heads = kiln.constant dense<[2, 9, 2, 8]> : tensor<4xi64>
  %pq = kiln.matmul %x, %wq : (tensor<2x9x16xf16>, tensor<16x16xf16>) -> tensor<2x9x16xf16>
  %q = kiln.reshape %pq, %heads : (tensor<2x9x16xf16>, tensor<4xi64>) -> tensor<2x9x2x8xf16>
  %pk = kiln.matmul %x, %wk : (tensor<2x9x16xf16>, tensor<16x16xf16>) -> tensor<2x9x16xf16>
  %kr = kiln.reshape %pk, %heads : (tensor<2x9x16xf16>, tensor<4xi64>) -> tensor<2x9x2x8xf16>
  %k = kiln.transpose %kr {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x9x2x8xf16>) -> tensor<2x2x9x8xf16>
  %pv = kiln.matmul %x, %wv : (tensor<2x9x16xf16>, tensor<16x16xf16>) -> tensor<2x9x16xf16>
  %v = kiln.reshape %pv, %heads : (tensor<2x9x16xf16>, tensor<4xi64>) -> tensor<2x9x2x8xf16>
  %c = kiln.constant dense<2.828125> : tensor<f16>
  %s = kiln.transposed_matmul %q, %k {perm_a = array<i64: 0, 2, 1, 3>, perm_b = array<i64: 0, 1, 3, 2>} : (tensor<2x9x2x8xf16>, tensor<2x2x9x8xf16>) -> tensor<2x2x9x9xf16>
  %d = kiln.div %s, %c : (tensor<2x2x9x9xf16>, tensor<f16>) -> tensor<2x2x9x9xf16>
  %m = kiln.add %d, %mask : (tensor<2x2x9x9xf16>, tensor<2x1x1x9xf16>) -> tensor<2x2x9x9xf16>
  %p = kiln.softmax %m {axis = -1 : i64} : (tensor<2x2x9x9xf16>) -> tensor<2x2x9x9xf16>
  %o = kiln.transposed_matmul %p, %v {perm_b = array<i64: 0, 2, 1, 3>} : (tensor<2x2x9x9xf16>, tensor<2x9x2x8xf16>) -> tensor<2x2x9x8xf16>
  %y = kiln.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x2x9x8xf16>) -> tensor<2x9x2x8xf16>
  return %y : tensor<2x9x2x8xf16>
}

// -----

// Weights stored [N, K] (Gemm's transB), no biases; Q's projection has a second user, so the
// products stay apart.
// CHECK-LABEL: func.func @stored_weights
// CHECK: %[[P:.*]] = kiln.transposed_matmul %arg0, %{{.*}} {perm_b = array<i64: 1, 0>} : (tensor<9x16xf16>, tensor<48x16xf16>) -> tensor<9x48xf16>
// CHECK: kiln.attention
// CHECK-LABEL: func.func @shared_query
// CHECK-COUNT-3: kiln.transposed_matmul %arg0
func.func @stored_weights(%x: tensor<9x16xf16>) -> tensor<9x2x8xf16> {
  %wq = kiln.constant dense<[[0.4375, 0.2500, 0.4375, 0.6250, -0.1875, -0.8125, 0.1250, 0.6250, -0.0625, -0.4375, 0.1250, 0.3125, -0.4375, -0.9375, -0.2500, -0.1250], [0.2500, -0.7500, -0.6250, 0.6250, -0.8750, -0.6875, -0.8750, -1.0000, -0.2500, 0.8125, 0.1875, -0.8125, -1.0000, 0.2500, -1.0000, -0.3125], [-0.8750, -0.0625, -0.1875, -0.2500, -1.0000, -0.5625, -0.9375, -0.1250, 0.3125, -0.6250, 0.9375, 0.1250, -0.0625, -0.0625, -0.8125, 0.6250], [-1.0000, -0.6875, 0.9375, 0.3750, -0.2500, 0.3750, 1.0000, 0.9375, 0.6875, 0.5625, -0.6875, -0.3125, 0.8750, -0.8125, 0.8125, -0.9375], [0.0625, 0.5625, 0.8750, -0.1250, 0.3125, -0.5625, 0.7500, -1.0000, 0.4375, -0.6250, -0.8125, 0.4375, 0.0625, 0.9375, -0.7500, -0.5000], [0.5625, 1.0000, -0.4375, -0.4375, -0.3750, 0.7500, 0.8125, -0.5000, -1.0000, 0.2500, 0.9375, -0.3125, 0.0625, 0.5625, -0.2500, -0.4375], [0.4375, 0.5625, 0.2500, 0.3125, 0.1250, 0.4375, -0.8125, -0.0625, -0.1250, 0.9375, 0.1875, 0.2500, -0.5625, 0.5000, -0.8125, -0.9375], [-0.7500, -0.5000, -0.1250, 0.7500, -0.0625, -0.5625, 0.1250, -0.3125, 0.0625, -0.6250, 0.2500, 0.6875, 0.5625, 0.2500, 1.0000, 0.3750], [0.5000, -0.0625, 0.4375, -0.3750, -0.1875, 0.3125, 0.2500, 0.0625, -0.9375, 0.6875, -1.0000, -0.7500, -0.6875, -0.1250, -0.9375, -0.9375], [-0.5625, 0.8750, -0.3125, -0.5625, 0.6875, -0.5625, 0.2500, 0.9375, 0.2500, -0.1250, -1.0000, 0.2500, 0.4375, 0.8750, 0.5000, -0.2500], [0.6250, 0.3750, -0.6250, -0.0625, 0.6875, -0.9375, -0.6250, -0.7500, 0.1250, 0.4375, 0.3750, -0.3750, -0.3750, -0.1875, -1.0000, 0.3750], [-0.3125, -0.6250, -0.0625, -0.8750, -0.7500, 0.6250, 0.1875, -0.8750, 0.3125, 0.5000, -0.7500, -0.3750, 0.0625, 0.9375, -0.2500, 0.5000], [0.8125, -0.6250, -1.0000, 0.0625, -0.0625, -0.1875, -0.3750, -0.2500, 0.5625, -0.0625, -0.4375, 0.0625, 0.5000, 0.2500, 0.2500, -0.1250], [0.2500, 1.0000, 0.2500, -0.2500, 0.3125, -0.5000, -0.9375, 0.3750, -0.8125, 0.1250, 0.1250, 0.6875, 0.5000, 0.8750, 0.8125, -0.6875], [-0.7500, -0.8750, -0.7500, -0.3750, -0.6875, 0.4375, -0.5000, -0.8750, 0.9375, -0.1250, -0.5625, 0.1250, -0.5625, -0.0625, 0.5000, -0.6250], [-0.6250, 0.3750, -0.1250, 0.1875, 0.3125, 0.2500, -0.6250, 0.6250, 0.5000, -0.6250, 0.5000, 0.4375, 0.9375, 1.0000, 0.6250, -0.5000]]> : tensor<16x16xf16>
  %wk = kiln.constant dense<[[0.5000, -0.8125, 0.0625, 0.3750, -0.6875, 1.0000, 0.6250, -0.6250, -0.0625, -0.1875, 0.9375, -0.8125, 0.7500, -0.5000, -0.8750, 0.7500], [-0.4375, 0.2500, 0.5625, -0.8750, -0.0625, 0.2500, 0.8125, -0.8750, 0.2500, 0.9375, 0.6250, 0.6250, 0.8125, 0.6875, -1.0000, 0.9375], [0.3750, 0.3125, 0.8125, -0.1875, 0.6875, -0.6875, -0.8750, -0.0625, -0.5625, 0.6250, 0.8750, 0.8125, 0.7500, -0.7500, 0.0625, -0.5000], [-0.8750, 0.8125, -0.4375, 1.0000, 0.9375, 0.1875, -0.7500, 0.7500, -0.6250, -0.2500, 0.6875, 0.3750, 0.4375, -0.8750, -0.1250, -0.7500], [-0.8750, -0.0625, 0.0625, 0.8125, -0.0625, -0.4375, -1.0000, 0.3125, -0.8750, -0.3125, -0.2500, -0.2500, -0.3750, 0.9375, 0.1250, -0.6875], [-0.5000, 0.5625, -0.1250, 0.2500, -0.7500, -0.9375, 0.0625, -0.5000, 0.1250, 0.1250, -0.5000, -0.1250, -0.3750, 0.0625, 0.6250, 0.5625], [0.1875, -0.8125, -0.8750, 0.8125, 0.0625, -0.1875, -0.3750, 0.8125, -0.0625, 0.8125, 0.2500, 0.8125, 0.8125, -0.2500, 0.7500, -0.8125], [-0.9375, 0.7500, -0.8750, -0.5625, -0.6875, -0.5000, -0.1875, -0.5625, -0.9375, 0.5000, -0.7500, 0.4375, 0.8125, -0.6250, 0.4375, -0.9375], [-0.5625, 0.7500, -0.8125, -0.3125, -0.1875, 0.8125, -0.3125, 0.0625, 0.1875, -0.5000, 0.4375, -0.1875, 0.6250, -0.1875, 0.1875, -0.6250], [-0.8125, 0.7500, 0.9375, -0.5625, -0.0625, 0.7500, 0.0625, 0.5000, 0.7500, -0.3750, 0.2500, 0.5000, -0.8125, -0.3750, 0.4375, 0.3125], [0.1250, 0.3750, -1.0000, 0.8750, 0.0625, -0.6250, -0.1250, -0.2500, -0.6875, -0.7500, -0.8750, 0.5000, 0.1875, 0.8750, 0.6875, 0.1250], [-0.8750, -1.0000, -0.1250, 0.3750, -0.5000, 0.5000, -0.3750, 0.7500, 0.1875, -0.6250, -0.3125, 1.0000, -0.5000, -0.9375, -0.7500, 0.3125], [-0.5000, 0.2500, 0.3750, -0.9375, 0.4375, -0.6250, -0.7500, 0.4375, -0.1250, 0.6250, -0.2500, 0.9375, -0.3750, 0.9375, 0.7500, 0.3750], [-0.1250, -0.9375, 0.1875, 0.5625, -1.0000, 1.0000, -0.6875, -0.7500, -0.6250, 0.5000, -0.3125, -0.0625, 0.3125, 0.7500, -0.3750, -0.6250], [0.8125, -0.7500, 0.5000, 0.3125, 0.5625, -0.1250, -0.2500, 0.1250, -1.0000, 1.0000, -0.6250, -0.3125, -0.3750, -0.9375, 0.1875, -0.9375], [0.4375, -0.7500, -0.1250, 0.3125, 0.1875, -0.8750, 0.1875, 0.0625, -0.3750, 0.6250, -0.9375, 0.4375, 0.1875, 0.9375, 0.3125, 0.1875]]> : tensor<16x16xf16>
  %wv = kiln.constant dense<[[-0.6875, 0.8750, 1.0000, -0.6250, 0.0625, -0.5000, 0.1875, -0.7500, 0.7500, -0.9375, 0.5625, -0.5000, -0.4375, -0.5000, 0.2500, -0.5625], [0.5000, 0.5000, -0.1875, 0.1875, 0.3125, -0.2500, 0.8125, -0.4375, 0.1875, -0.7500, -0.8125, -0.1250, 0.1250, -0.4375, 0.6250, -0.3125], [0.1875, -0.2500, 0.3750, 0.6875, -0.5625, -0.5000, 0.7500, 0.1250, 0.2500, 0.6875, -0.1250, -0.5625, 0.4375, 0.0625, 0.2500, -1.0000], [-0.1875, 0.3750, -0.6250, 0.3125, 0.5625, 0.0625, -0.6875, -1.0000, 0.1250, -0.1875, -0.8125, 0.3750, 0.8125, -0.1875, 0.6875, -0.6250], [-0.1250, -0.3750, 0.9375, 0.9375, 0.7500, 0.0625, 1.0000, 0.5000, -0.5000, 0.1250, -0.3125, 0.8125, 0.1875, 0.7500, -0.1250, -0.4375], [0.2500, 0.6250, -0.3125, -0.6250, 0.7500, -0.7500, 0.6875, -0.6875, 1.0000, 0.5000, -0.7500, -0.3125, -0.0625, 0.8125, 0.8125, 0.3750], [-0.3125, 0.6250, 0.6875, -0.4375, -0.3750, 0.7500, 0.7500, 0.1875, 0.6875, -0.5625, 0.0625, -0.5625, -0.0625, -0.1250, 0.9375, -0.6250], [-0.4375, -0.1250, -0.1250, -0.1875, 0.3125, -0.4375, 0.0625, 0.0625, -0.6875, 0.0625, 0.8125, 0.3750, -0.8750, -0.1875, 1.0000, 0.5625], [0.0625, -0.6875, 0.1250, 0.6875, -0.1875, -0.3125, -0.3125, -0.7500, 0.8750, 0.3125, 0.5000, 1.0000, -0.6250, 0.5625, 0.5625, -0.5625], [-1.0000, -0.7500, -0.5000, 0.1875, -0.3125, -0.1250, -0.3750, 0.7500, -0.3750, -0.0625, 0.5000, 1.0000, -0.7500, 0.9375, -0.6875, -0.2500], [-0.1875, 0.7500, -0.5000, 0.8750, 0.5000, -0.5625, -0.5625, 0.5000, -0.7500, -0.6875, 0.5625, 1.0000, -0.3750, 0.5625, -0.6250, 0.1875], [0.0625, 0.5000, -0.6875, 0.4375, -0.4375, 0.1250, 0.3750, 0.3125, 0.0625, -0.3125, -0.3125, 0.3125, 0.2500, -0.9375, 0.1875, 0.6875], [0.6875, -0.5000, -0.0625, -0.3125, -0.8750, -0.0625, -0.6875, -0.2500, -1.0000, -0.8750, -0.3750, -0.3125, -0.7500, 0.1875, 0.4375, -0.1875], [0.3750, -0.5625, 0.1875, -0.4375, -0.8750, 0.5625, -0.6875, -0.9375, 0.6875, 0.5625, 0.8750, 0.8750, 0.3125, 0.8125, 0.3125, -0.5000], [0.8125, -0.4375, -0.1875, -0.1250, 0.6875, 0.6875, 0.0625, 1.0000, 0.8125, -0.8125, 0.1875, 0.5625, 0.1875, -0.5625, 1.0000, 1.0000], [-0.3125, -0.7500, -0.3750, 0.5000, -0.3125, 0.3750, -0.6875, 0.7500, 0.2500, 0.3125, 0.8125, -0.7500, 0.6250, 0.1875, 0.8125, 0.9375]]> : tensor<16x16xf16>
  %heads = kiln.constant dense<[9, 2, 8]> : tensor<3xi64>
  %pq = kiln.transposed_matmul %x, %wq {perm_b = array<i64: 1, 0>} : (tensor<9x16xf16>, tensor<16x16xf16>) -> tensor<9x16xf16>
  %q = kiln.reshape %pq, %heads : (tensor<9x16xf16>, tensor<3xi64>) -> tensor<9x2x8xf16>
  %pk = kiln.transposed_matmul %x, %wk {perm_b = array<i64: 1, 0>} : (tensor<9x16xf16>, tensor<16x16xf16>) -> tensor<9x16xf16>
  %k = kiln.reshape %pk, %heads : (tensor<9x16xf16>, tensor<3xi64>) -> tensor<9x2x8xf16>
  %pv = kiln.transposed_matmul %x, %wv {perm_b = array<i64: 1, 0>} : (tensor<9x16xf16>, tensor<16x16xf16>) -> tensor<9x16xf16>
  %v = kiln.reshape %pv, %heads : (tensor<9x16xf16>, tensor<3xi64>) -> tensor<9x2x8xf16>
  %s = kiln.transposed_matmul %q, %k {perm_a = array<i64: 1, 0, 2>, perm_b = array<i64: 1, 2, 0>} : (tensor<9x2x8xf16>, tensor<9x2x8xf16>) -> tensor<2x9x9xf16>
  %p = kiln.softmax %s {axis = -1 : i64} : (tensor<2x9x9xf16>) -> tensor<2x9x9xf16>
  %o = kiln.transposed_matmul %p, %v {perm_b = array<i64: 1, 0, 2>} : (tensor<2x9x9xf16>, tensor<9x2x8xf16>) -> tensor<2x9x8xf16>
  %y = kiln.transpose %o {perm = array<i64: 1, 0, 2>} : (tensor<2x9x8xf16>) -> tensor<9x2x8xf16>
  return %y : tensor<9x2x8xf16>
}
func.func @shared_query(%x: tensor<9x16xf16>) -> (tensor<9x2x8xf16>, tensor<9x16xf16>) {
  %wq = kiln.constant dense<[[-0.9375, 0.3750, -0.0625, -0.7500, 0.5000, 0.6875, 0.5625, -0.4375, -0.5625, -0.3750, 0.5625, 0.5625, -0.5625, 0.1875, 0.1875, -0.3125], [0.6250, 0.1250, 0.8125, 0.1250, 0.8750, 0.5625, 0.5000, 0.3125, -0.7500, -0.4375, 0.1875, -0.9375, 0.8125, 1.0000, -0.2500, 0.9375], [0.8750, 0.3750, -0.9375, 1.0000, -0.0625, -0.4375, 0.1250, 0.6875, 0.9375, -0.1875, -0.1875, -0.2500, 0.1875, -0.9375, -0.4375, 1.0000], [-0.8750, -0.8750, -0.3125, 0.6875, -0.0625, -0.5625, 0.1875, 0.8125, 0.6250, 0.8750, -0.6250, 0.5000, 0.8750, 0.6250, -0.3125, -0.4375], [0.9375, 0.3125, 0.6875, -0.9375, -0.6875, -0.1875, 0.6875, -0.5625, -0.9375, 0.4375, -0.9375, 0.9375, -0.4375, -0.3750, 0.2500, -0.3125], [-1.0000, -0.0625, -1.0000, -0.6250, -0.3750, -0.4375, -0.9375, -0.4375, -0.1250, 0.5000, 0.9375, 0.3125, -0.3125, -0.3750, 0.6250, -0.6875], [-0.6250, 0.6875, -0.3125, -0.8125, -0.6875, 0.3125, 0.5000, -0.4375, 0.3125, -0.8750, 0.8125, -0.1250, 0.2500, -0.1875, 1.0000, 0.0625], [0.1875, -1.0000, 0.6250, -0.4375, -1.0000, 0.5000, 0.1250, -0.0625, 0.4375, -0.6250, -0.3750, 0.7500, 1.0000, -0.6875, 0.3750, -0.6250], [-0.9375, -0.2500, -0.8125, 0.1250, -0.1250, -0.8750, -0.8750, 0.1875, 0.3750, 0.3750, -0.6875, -1.0000, 0.3125, 0.2500, -0.5000, -0.3125], [0.5625, -0.6875, 0.5000, -0.1250, 0.7500, -0.6250, 0.4375, -0.5000, -0.2500, -0.2500, -1.0000, -0.5000, -0.3750, -0.5625, -0.8750, 0.2500], [0.2500, -0.4375, -0.5000, -0.5000, -0.6875, -0.1250, -0.3750, 0.6875, -0.9375, -0.0625, 0.8750, 0.1250, -0.5000, -0.3750, -0.7500, -0.4375], [-0.5000, 0.1875, -1.0000, -1.0000, 0.1875, -0.4375, -0.7500, 0.1875, 0.3750, 1.0000, -0.5625, 0.1250, 0.3750, 0.8125, 0.2500, -0.5625], [-0.5000, -0.9375, -1.0000, -0.8125, 0.6875, 0.8125, -0.5000, 0.8750, 0.0625, 1.0000, -0.2500, 0.8750, 0.6250, 0.3125, 0.4375, -0.7500], [0.9375, -0.6250, 0.1875, 0.3750, 0.8750, -0.2500, -0.1250, 0.3750, 0.5625, 0.3125, 0.3750, -0.7500, 0.6250, 0.6875, -0.3750, 0.0625], [-0.3750, -0.5000, 0.5625, 0.2500, 0.3125, 0.8750, -0.6875, 0.5625, 0.7500, 0.8125, -1.0000, 0.7500, -0.1250, -0.8125, 0.6250, -0.9375], [-0.6875, 0.3125, -0.5625, -0.4375, -0.8125, -0.5625, -0.6250, -0.8750, 0.1875, 1.0000, 0.5625, 0.3750, 0.1250, 0.3125, -0.1250, -0.6250]]> : tensor<16x16xf16>
  %wk = kiln.constant dense<[[-0.6250, -0.6250, 0.7500, -0.5625, 1.0000, -0.6875, 0.8125, -0.5625, 0.8125, 0.8125, 0.5625, -0.4375, 0.8750, -0.6875, -0.3125, 1.0000], [0.1875, 0.8125, 0.8125, 0.2500, 0.9375, -0.1250, 0.7500, 0.5625, -0.1875, -0.8750, -0.6250, -0.3750, -0.8125, 0.6875, 0.8125, 0.6875], [0.3750, -0.8750, 0.3125, -0.6875, -0.8750, -0.0625, -0.8750, 0.4375, 0.3125, -0.5000, -0.2500, 0.1250, 0.6250, -0.8125, 0.1875, 0.4375], [-0.6250, -0.7500, -0.7500, -0.1875, -0.6875, -0.0625, 0.3125, 0.5625, -0.9375, -0.1250, 0.2500, 0.5000, 0.6875, 0.5000, -0.4375, 0.0625], [-0.3750, -0.5625, 0.7500, -0.5625, -0.2500, 0.8125, 0.5000, -0.7500, 0.5625, -1.0000, -0.8750, 0.9375, -0.6875, -0.2500, 0.3750, 0.4375], [-0.0625, 0.4375, -0.5625, -0.6250, -0.0625, -0.7500, -0.8750, -0.5625, 0.3750, 0.7500, 0.2500, -0.3750, 0.8750, -0.9375, -0.6875, -0.3125], [1.0000, 0.1875, 0.6875, 0.3125, -0.5625, 0.4375, 0.5625, -0.4375, 0.8750, 0.3750, 0.3125, -0.0625, -0.4375, 0.0625, -0.1875, 0.1250], [-0.1875, 0.6875, 1.0000, -0.0625, -0.4375, 0.8125, -0.2500, -0.4375, 0.9375, 0.1875, -1.0000, -0.8125, -1.0000, 0.3125, -1.0000, 0.1875], [-0.5000, -0.8125, -0.1250, -0.2500, -0.0625, -0.9375, -0.8125, -0.5000, -0.8750, 0.1250, -0.9375, -1.0000, -0.2500, -0.3125, -0.6875, -0.8125], [-0.1875, -0.1875, -0.1250, 0.9375, 0.0625, -0.0625, -0.9375, -0.2500, -0.8750, -0.1875, 0.2500, -0.5000, -0.1875, 0.5625, 0.6250, 0.3125], [0.6875, -0.0625, -0.1875, -0.2500, -0.8125, 0.8750, -0.1875, -0.1250, -0.3125, 0.1250, -0.6250, 0.5625, -0.5625, 0.7500, -0.6875, 0.2500], [-0.9375, -1.0000, 0.5625, -0.0625, 0.0625, 0.5000, 0.6875, -0.5000, 0.1875, -0.2500, -0.6875, 0.6875, 0.1875, -0.9375, -0.4375, -0.5000], [0.1875, -0.4375, 0.0625, 0.8750, -0.3750, 0.3750, 0.8125, -0.6875, 0.0625, -0.4375, 0.3125, -0.1875, 0.6250, -0.1875, -0.0625, -0.7500], [-0.3125, -1.0000, 0.9375, -0.2500, 0.6250, 0.8750, -0.9375, -0.9375, 0.6875, -0.0625, 0.5000, -0.4375, 0.6875, 0.0625, -0.1875, -0.3750], [0.5625, -0.1250, -1.0000, -0.1250, 0.5625, -0.5000, -0.1875, 0.0625, 0.3125, 0.7500, -0.3125, 0.5625, 0.7500, -0.2500, -0.3750, 0.8125], [-0.5000, -0.5000, 0.7500, -1.0000, 0.0625, -0.2500, 0.7500, -0.6250, -1.0000, 1.0000, -0.2500, 1.0000, -0.8125, -1.0000, 0.3750, -0.8750]]> : tensor<16x16xf16>
  %wv = kiln.constant dense<[[0.1250, -0.4375, -0.5625, 0.9375, 0.5000, 0.1250, -0.5000, 0.4375, 0.2500, -0.8750, -0.5000, -0.6875, -0.2500, -1.0000, 0.9375, 0.3125], [-0.9375, 0.2500, -0.5625, 0.1875, -1.0000, 0.5625, -0.0625, -1.0000, -0.5000, 0.3125, 0.3125, 0.6875, -0.7500, -0.5000, -0.9375, -0.9375], [-0.1250, 0.9375, -0.4375, 0.6875, -0.1875, 0.0625, -0.0625, 1.0000, -0.1875, 0.7500, 0.4375, -0.4375, 0.4375, 0.9375, 0.5000, 0.1250], [0.3750, 0.8750, -0.7500, -0.5000, -0.3125, 0.9375, 0.8125, -0.5625, -0.2500, 0.8750, -0.3125, -0.6875, -0.3750, -0.8750, -0.1875, 0.8750], [0.5000, -0.5625, 0.2500, -0.8750, -0.0625, 0.1875, 0.3750, -0.8750, -0.8125, 0.2500, 0.5000, 0.7500, -0.8750, -0.5625, 0.3750, 0.5000], [0.7500, 0.1875, -1.0000, -0.6875, -0.9375, 0.6875, -0.9375, 0.5000, 0.1875, -0.8750, 0.3125, -0.7500, 0.8125, 0.7500, -0.5000, -0.5625], [-0.1250, -0.8125, 0.1875, 0.9375, 0.7500, 0.8750, 0.3750, 0.0625, -0.8125, 0.2500, 0.4375, -0.4375, 0.6250, 0.3750, -0.9375, -0.4375], [-0.8750, 0.0625, -0.0625, -0.1875, -0.0625, -0.5000, -0.5625, -0.0625, -0.2500, -0.1875, -0.3125, 0.6875, -0.7500, 0.6250, 1.0000, 0.6875], [-0.1875, 0.3750, 0.1875, -0.1250, 0.3125, 0.6875, 0.3125, -0.1250, -0.8750, 0.6250, -0.5000, 0.1875, 0.2500, -0.3125, -0.9375, 0.5000], [-1.0000, 0.3125, -0.4375, -0.2500, 0.5000, 0.8750, 0.1250, -0.5000, -0.5000, 0.4375, 0.4375, -0.4375, 0.5625, -0.3750, -0.5000, 0.6875], [0.8125, 0.6250, -0.6875, -0.6250, -0.6875, -0.3125, -0.5000, 0.0625, -0.6875, -0.7500, 0.6250, -0.2500, -0.8125, 1.0000, -0.5625, -0.9375], [1.0000, 0.7500, 0.6875, -0.2500, 0.1875, 0.3125, -0.3125, -0.9375, -0.6250, -0.6875, 0.1875, -0.8125, -0.1250, -0.6250, -0.2500, -0.6875], [-0.8750, -0.5000, -0.8125, 0.6875, 0.2500, -0.9375, -0.1875, 0.8125, 0.5000, -0.6250, 0.8125, -0.3125, -1.0000, -0.6875, -0.0625, 1.0000], [-0.6875, 0.3750, 0.4375, 0.1250, -0.5000, 0.0625, 0.1250, -0.6875, -0.6875, 0.7500, 0.7500, 0.8125, 0.6250, -0.5000, -0.8750, -0.1250], [-0.3125, 0.5625, 0.8125, 0.6250, -0.5000, 0.1250, 0.3750, 0.3125, -0.9375, 1.0000, 0.4375, 0.7500, -0.1875, -0.2500, 0.0625, -0.5000], [0.1875, -1.0000, -0.4375, 0.8125, 1.0000, 0.6250, 0.6875, 0.6250, 0.2500, -1.0000, 0.8750, -0.5000, -0.4375, 0.7500, -0.1250, 0.8750]]> : tensor<16x16xf16>
  %heads = kiln.constant dense<[9, 2, 8]> : tensor<3xi64>
  %pq = kiln.transposed_matmul %x, %wq {perm_b = array<i64: 1, 0>} : (tensor<9x16xf16>, tensor<16x16xf16>) -> tensor<9x16xf16>
  %q = kiln.reshape %pq, %heads : (tensor<9x16xf16>, tensor<3xi64>) -> tensor<9x2x8xf16>
  %pk = kiln.transposed_matmul %x, %wk {perm_b = array<i64: 1, 0>} : (tensor<9x16xf16>, tensor<16x16xf16>) -> tensor<9x16xf16>
  %k = kiln.reshape %pk, %heads : (tensor<9x16xf16>, tensor<3xi64>) -> tensor<9x2x8xf16>
  %pv = kiln.transposed_matmul %x, %wv {perm_b = array<i64: 1, 0>} : (tensor<9x16xf16>, tensor<16x16xf16>) -> tensor<9x16xf16>
  %v = kiln.reshape %pv, %heads : (tensor<9x16xf16>, tensor<3xi64>) -> tensor<9x2x8xf16>
  %s = kiln.transposed_matmul %q, %k {perm_a = array<i64: 1, 0, 2>, perm_b = array<i64: 1, 2, 0>} : (tensor<9x2x8xf16>, tensor<9x2x8xf16>) -> tensor<2x9x9xf16>
  %p = kiln.softmax %s {axis = -1 : i64} : (tensor<2x9x9xf16>) -> tensor<2x9x9xf16>
  %o = kiln.transposed_matmul %p, %v {perm_b = array<i64: 1, 0, 2>} : (tensor<2x9x9xf16>, tensor<9x2x8xf16>) -> tensor<2x9x8xf16>
  %y = kiln.transpose %o {perm = array<i64: 1, 0, 2>} : (tensor<2x9x8xf16>) -> tensor<9x2x8xf16>
  return %y, %pq : tensor<9x2x8xf16>, tensor<9x16xf16>
}

// -----

// torch.export's scaled_dot_product_attention after kiln's passes: K transposed explicitly as a
// 3-D bmm operand ([B·H, S, D] → [B·H, D, S]) and reshaped back to [B, H, D, S]; the scale applied
// twice after the product; Where(IsNaN(p), 0, p). The reshape moves before the transpose (it only
// splits axis 0) and the transpose becomes perm_k; both are gone.
// CHECK-LABEL: func.func @export_bmm
// CHECK: %[[K:.*]] = kiln.reshape %arg1, %{{.*}} : (tensor<6x9x8xf16>, tensor<4xi64>) -> tensor<2x3x9x8xf16>
// CHECK: %[[Y:.*]] = kiln.attention %arg0, %[[K]], %arg2, %arg3 {perm_k = array<i64: 0, 1, 3, 2>, scale = 0.3536{{[0-9]*}} : f32, zero_masked_rows = 1 : i64} : (tensor<2x3x9x8xf16>, tensor<2x3x9x8xf16>, tensor<2x3x9x8xf16>, tensor<2x1x9x9xf16>) -> tensor<2x3x9x8xf16>
// CHECK-NOT: kiln.transpose
// CHECK-NOT: kiln.softmax
// CHECK: return %[[Y]]
// Not when the reshape mixes the transposed axes (nothing to split off axis 0): left alone.
// CHECK-LABEL: func.func @export_mixed
// CHECK-NOT: kiln.attention
// CHECK: kiln.softmax
func.func @export_bmm(%q: tensor<2x3x9x8xf16>, %k3: tensor<6x9x8xf16>, %v: tensor<2x3x9x8xf16>, %mask: tensor<2x1x9x9xf16>) -> tensor<2x3x9x8xf16> {
  %c = kiln.constant dense<0.5947> : tensor<f16>
  %zero = kiln.constant dense<0.0> : tensor<f16>
  %shape = kiln.constant dense<[2, 3, 8, 9]> : tensor<4xi64>
  %kt = kiln.transpose %k3 {perm = array<i64: 0, 2, 1>} : (tensor<6x9x8xf16>) -> tensor<6x8x9xf16>
  %k = kiln.reshape %kt, %shape : (tensor<6x8x9xf16>, tensor<4xi64>) -> tensor<2x3x8x9xf16>
  %s = kiln.transposed_matmul %q, %k : (tensor<2x3x9x8xf16>, tensor<2x3x8x9xf16>) -> tensor<2x3x9x9xf16>
  %s1 = kiln.mul %s, %c : (tensor<2x3x9x9xf16>, tensor<f16>) -> tensor<2x3x9x9xf16>
  %s2 = kiln.mul %s1, %c : (tensor<2x3x9x9xf16>, tensor<f16>) -> tensor<2x3x9x9xf16>
  %m = kiln.add %s2, %mask : (tensor<2x3x9x9xf16>, tensor<2x1x9x9xf16>) -> tensor<2x3x9x9xf16>
  %p = kiln.softmax %m {axis = -1 : i64} : (tensor<2x3x9x9xf16>) -> tensor<2x3x9x9xf16>
  %nan = kiln.isnan %p : (tensor<2x3x9x9xf16>) -> tensor<2x3x9x9xi1>
  %pz = kiln.where %nan, %zero, %p : (tensor<2x3x9x9xi1>, tensor<f16>, tensor<2x3x9x9xf16>) -> tensor<2x3x9x9xf16>
  %o = kiln.transposed_matmul %pz, %v : (tensor<2x3x9x9xf16>, tensor<2x3x9x8xf16>) -> tensor<2x3x9x8xf16>
  return %o : tensor<2x3x9x8xf16>
}

func.func @export_mixed(%q: tensor<2x3x9x8xf16>, %k3: tensor<8x6x9xf16>, %v: tensor<2x3x9x8xf16>) -> tensor<2x3x9x8xf16> {
  %shape = kiln.constant dense<[2, 3, 8, 9]> : tensor<4xi64>
  %kt = kiln.transpose %k3 {perm = array<i64: 1, 0, 2>} : (tensor<8x6x9xf16>) -> tensor<6x8x9xf16>
  %k = kiln.reshape %kt, %shape : (tensor<6x8x9xf16>, tensor<4xi64>) -> tensor<2x3x8x9xf16>
  %s = kiln.transposed_matmul %q, %k : (tensor<2x3x9x8xf16>, tensor<2x3x8x9xf16>) -> tensor<2x3x9x9xf16>
  %p = kiln.softmax %s {axis = -1 : i64} : (tensor<2x3x9x9xf16>) -> tensor<2x3x9x9xf16>
  %o = kiln.transposed_matmul %p, %v : (tensor<2x3x9x9xf16>, tensor<2x3x9x8xf16>) -> tensor<2x3x9x8xf16>
  return %o : tensor<2x3x9x8xf16>
}

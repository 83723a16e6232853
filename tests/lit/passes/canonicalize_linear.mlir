// RUN: %kiln-opt %s -split-input-file -kiln-canonicalize-linear=route=gemm.split=on | FileCheck %s
// RUN: %kiln-opt %s -split-input-file '-kiln-canonicalize-linear=route=fusion.transpose=off;gemm.pad=off;gemm.split=off' | FileCheck %s --check-prefix=OFF
// RUN: %kiln-opt %s -split-input-file -kiln-canonicalize-linear | FileCheck %s --check-prefix=AUTO
// RUN: %kiln-opt %s -split-input-file -kiln-canonicalize-linear=route=precision=fp16 | FileCheck %s --check-prefix=HALF
// RUN: %kiln-opt %s -split-input-file -kiln-canonicalize-linear=route=gemm.batch_pointers=off | FileCheck %s --check-prefix=NOPTR
// RUN: %kiln-opt %s -split-input-file -kiln-canonicalize-linear=route=fusion.epilogue=off | FileCheck %s --check-prefix=NOEPI

// Gemm with transB, alpha and beta: a product, a scale, and beta·C added.
// CHECK-LABEL: func.func @gemm
// CHECK: %[[P:.*]] = kiln.transposed_matmul %arg0, %arg1 {perm_b = array<i64: 1, 0>} : (tensor<4x3xf32>, tensor<5x3xf32>) -> tensor<4x5xf32>
// CHECK: %[[S:.*]] = kiln.mul %[[P]], %{{.*}} : (tensor<4x5xf32>, tensor<f32>) -> tensor<4x5xf32>
// CHECK: %[[C:.*]] = kiln.mul %arg2, %{{.*}} : (tensor<5xf32>, tensor<f32>) -> tensor<5xf32>
// CHECK: %[[Y:.*]] = kiln.add %[[S]], %[[C]]
// CHECK-NOT: kiln.gemm
// CHECK: return %[[Y]]
func.func @gemm(%a: tensor<4x3xf32>, %b: tensor<5x3xf32>, %c: tensor<5xf32>) -> tensor<4x5xf32> {
  %y = kiln.gemm %a, %b, %c {alpha = 0.5 : f32, beta = 2.0 : f32, transB = 1 : i64} : (tensor<4x3xf32>, tensor<5x3xf32>, tensor<5xf32>) -> tensor<4x5xf32>
  return %y : tensor<4x5xf32>
}

// -----

// Gemm without C, transA only, alpha 1: just the product.
// CHECK-LABEL: func.func @gemm_plain
// CHECK: %[[P:.*]] = kiln.transposed_matmul %arg0, %arg1 {perm_a = array<i64: 1, 0>}
// CHECK-NEXT: return %[[P]]
func.func @gemm_plain(%a: tensor<3x4xf32>, %b: tensor<3x5xf32>) -> tensor<4x5xf32> {
  %none = kiln.none
  %y = kiln.gemm %a, %b, %none {transA = 1 : i64} : (tensor<3x4xf32>, tensor<3x5xf32>, none) -> tensor<4x5xf32>
  return %y : tensor<4x5xf32>
}

// -----

// Attention scores (fp16): K^T read in place; the head transposes of Q and K fold too (composed).
// CHECK-LABEL: func.func @attention_scores
// CHECK-NOT: kiln.transpose
// CHECK: kiln.transposed_matmul %arg0, %arg1 {perm_a = array<i64: 0, 2, 1, 3>, perm_b = array<i64: 0, 2, 3, 1>} : (tensor<2x7x3x4xf16>, tensor<2x7x3x4xf16>) -> tensor<2x3x7x7xf16>
// OFF-LABEL: func.func @attention_scores
// OFF-COUNT-3: kiln.transpose
// OFF: kiln.matmul
func.func @attention_scores(%q: tensor<2x7x3x4xf16>, %k: tensor<2x7x3x4xf16>) -> tensor<2x3x7x7xf16> {
  %qt = kiln.transpose %q {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x7x3x4xf16>) -> tensor<2x3x7x4xf16>
  %kt = kiln.transpose %k {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x7x3x4xf16>) -> tensor<2x3x7x4xf16>
  %ktt = kiln.transpose %kt {perm = array<i64: 0, 1, 3, 2>} : (tensor<2x3x7x4xf16>) -> tensor<2x3x4x7xf16>
  %s = kiln.matmul %qt, %ktt : (tensor<2x3x7x4xf16>, tensor<2x3x4x7xf16>) -> tensor<2x3x7x7xf16>
  return %s : tensor<2x3x7x7xf16>
}

// -----

// The same in fp32 on the engine's inputs: the head transposes stay copies, as read in place
// their (batch, head) strides are not one uniform batch stride, and cuBLASLt's pointer-array
// batches (gemm.batch_pointers) need addresses known when a context is created; K's
// last-two-axes swap folds.
// CHECK-LABEL: func.func @attention_scores_f32
// CHECK: %[[Q:.*]] = kiln.transpose %arg0 {perm = array<i64: 0, 2, 1, 3>}
// CHECK: %[[K:.*]] = kiln.transpose %arg1 {perm = array<i64: 0, 2, 1, 3>}
// CHECK-NOT: kiln.transpose
// CHECK: kiln.transposed_matmul %[[Q]], %[[K]] {perm_b = array<i64: 0, 1, 3, 2>}
func.func @attention_scores_f32(%q: tensor<2x7x3x4xf32>, %k: tensor<2x7x3x4xf32>) -> tensor<2x3x7x7xf32> {
  %qt = kiln.transpose %q {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x7x3x4xf32>) -> tensor<2x3x7x4xf32>
  %kt = kiln.transpose %k {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x7x3x4xf32>) -> tensor<2x3x7x4xf32>
  %ktt = kiln.transpose %kt {perm = array<i64: 0, 1, 3, 2>} : (tensor<2x3x7x4xf32>) -> tensor<2x3x4x7xf32>
  %s = kiln.matmul %qt, %ktt : (tensor<2x3x7x4xf32>, tensor<2x3x4x7xf32>) -> tensor<2x3x7x7xf32>
  return %s : tensor<2x3x7x7xf32>
}

// -----

// fp32 heads computed inside the engine (BERT's): read in place through pointer-array batches,
// the transposes fold as in fp16; with gemm.batch_pointers=off they stay copies.
// CHECK-LABEL: func.func @attention_scores_f32_inner
// CHECK-NOT: kiln.transpose
// CHECK: kiln.transposed_matmul %{{.*}}, %{{.*}} {perm_a = array<i64: 0, 2, 1, 3>, perm_b = array<i64: 0, 2, 3, 1>} : (tensor<2x7x3x4xf32>, tensor<2x7x3x4xf32>) -> tensor<2x3x7x7xf32>
// NOPTR-LABEL: func.func @attention_scores_f32_inner
// NOPTR-COUNT-2: kiln.transpose {{.*}} {perm = array<i64: 0, 2, 1, 3>}
// NOPTR: kiln.transposed_matmul
func.func @attention_scores_f32_inner(%q: tensor<2x7x3x4xf32>, %k: tensor<2x7x3x4xf32>) -> tensor<2x3x7x7xf32> {
  %qe = kiln.exp %q : (tensor<2x7x3x4xf32>) -> tensor<2x7x3x4xf32>
  %ke = kiln.exp %k : (tensor<2x7x3x4xf32>) -> tensor<2x7x3x4xf32>
  %qt = kiln.transpose %qe {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x7x3x4xf32>) -> tensor<2x3x7x4xf32>
  %kt = kiln.transpose %ke {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x7x3x4xf32>) -> tensor<2x3x7x4xf32>
  %ktt = kiln.transpose %kt {perm = array<i64: 0, 1, 3, 2>} : (tensor<2x3x7x4xf32>) -> tensor<2x3x4x7xf32>
  %s = kiln.matmul %qt, %ktt : (tensor<2x3x7x4xf32>, tensor<2x3x4x7xf32>) -> tensor<2x3x7x7xf32>
  %y = kiln.exp %s : (tensor<2x3x7x7xf32>) -> tensor<2x3x7x7xf32>
  return %y : tensor<2x3x7x7xf32>
}

// -----

// A transpose with another user stays (copying it once is cheaper than reading it strided twice).
// CHECK-LABEL: func.func @shared_transpose
// CHECK: %[[T:.*]] = kiln.transpose %arg1
// CHECK: kiln.matmul %arg0, %[[T]]
func.func @shared_transpose(%a: tensor<4x3xf32>, %b: tensor<5x3xf32>) -> (tensor<4x5xf32>, tensor<3x5xf32>) {
  %bt = kiln.transpose %b {perm = array<i64: 1, 0>} : (tensor<5x3xf32>) -> tensor<3x5xf32>
  %y = kiln.matmul %a, %bt : (tensor<4x3xf32>, tensor<3x5xf32>) -> tensor<4x5xf32>
  return %y, %bt : tensor<4x5xf32>, tensor<3x5xf32>
}

// -----

// 1-D operands keep MatMul (numpy's vector rules).
// CHECK-LABEL: func.func @vector
// CHECK: kiln.transpose
// CHECK: kiln.matmul
func.func @vector(%v: tensor<3xf32>, %b: tensor<5x3xf32>) -> tensor<5xf32> {
  %bt = kiln.transpose %b {perm = array<i64: 1, 0>} : (tensor<5x3xf32>) -> tensor<3x5xf32>
  %y = kiln.matmul %v, %bt : (tensor<3xf32>, tensor<3x5xf32>) -> tensor<5xf32>
  return %y : tensor<5xf32>
}

// -----

// Attention's 1/sqrt(d) on Q moves to the scores, (Q/c)·Kᵀ = (Q·Kᵀ)/c, which uncovers Q's
// transpose: it folds into perm_a. A scale by a non-constant, or with another user, stays.
// CHECK-LABEL: func.func @scaled_query
// CHECK-NOT: kiln.transpose
// CHECK: %[[S:.*]] = kiln.transposed_matmul %arg0, %arg1 {perm_a = array<i64: 1, 0, 2>, perm_b = array<i64: 1, 2, 0>}
// CHECK-NEXT: %[[D:.*]] = kiln.div %[[S]], %{{.*}} : (tensor<6x5x5xf32>, tensor<f32>)
// CHECK-NEXT: %[[M:.*]] = kiln.mul %arg0, %arg2
// CHECK-NEXT: %[[P:.*]] = kiln.matmul %[[M]], %arg3
// CHECK-NEXT: return %[[D]], %[[P]], %[[M]]
// OFF-LABEL: func.func @scaled_query
// OFF: kiln.transpose
// OFF: kiln.div %{{.*}}, %{{.*}} : (tensor<6x5x5xf32>, tensor<f32>)
func.func @scaled_query(%q: tensor<5x6x4xf32>, %k: tensor<5x6x4xf32>, %s: tensor<f32>, %w: tensor<4x3xf32>) -> (tensor<6x5x5xf32>, tensor<5x6x3xf32>, tensor<5x6x4xf32>) {
  %c = kiln.constant dense<2.0> : tensor<f32>
  %qt = kiln.transpose %q {perm = array<i64: 1, 0, 2>} : (tensor<5x6x4xf32>) -> tensor<6x5x4xf32>
  %qs = kiln.div %qt, %c : (tensor<6x5x4xf32>, tensor<f32>) -> tensor<6x5x4xf32>
  %kt = kiln.transpose %k {perm = array<i64: 1, 2, 0>} : (tensor<5x6x4xf32>) -> tensor<6x4x5xf32>
  %scores = kiln.matmul %qs, %kt : (tensor<6x5x4xf32>, tensor<6x4x5xf32>) -> tensor<6x5x5xf32>
  %m = kiln.mul %q, %s : (tensor<5x6x4xf32>, tensor<f32>) -> tensor<5x6x4xf32>
  %p = kiln.matmul %m, %w : (tensor<5x6x4xf32>, tensor<4x3xf32>) -> tensor<5x6x3xf32>
  return %scores, %p, %m : tensor<6x5x5xf32>, tensor<5x6x3xf32>, tensor<5x6x4xf32>
}

// -----

// A large product (2^20 result elements or more) with a constant B of an odd column count: B is
// padded with zero columns to a multiple of 8 and the result sliced back (gemm.pad). B stored
// [N, K] (read transposed) pads rows; a product already a multiple of 8 wide, or small, stays.
// CHECK-LABEL: func.func @pad_columns
// CHECK: %[[W:.*]] = kiln.constant {{.*}} : tensor<4x1032xf32>
// CHECK: %[[Y:.*]] = kiln.matmul %arg0, %[[W]] : (tensor<1024x4xf32>, tensor<4x1032xf32>) -> tensor<1024x1032xf32>
// CHECK: kiln.slice %[[Y]], {{.*}} -> tensor<1024x1025xf32>
// CHECK: %[[WT:.*]] = kiln.constant {{.*}} : tensor<1032x4xf32>
// CHECK: %[[YT:.*]] = kiln.transposed_matmul %arg0, %[[WT]] {perm_b = array<i64: 1, 0>} : (tensor<1024x4xf32>, tensor<1032x4xf32>) -> tensor<1024x1032xf32>
// CHECK: kiln.slice %[[YT]], {{.*}} -> tensor<1024x1025xf32>
// CHECK: kiln.matmul %arg0, %{{.*}} : (tensor<1024x4xf32>, tensor<4x1024xf32>) -> tensor<1024x1024xf32>
// CHECK: kiln.matmul %arg1, %{{.*}} : (tensor<8x4xf32>, tensor<4x1025xf32>) -> tensor<8x1025xf32>
// OFF-LABEL: func.func @pad_columns
// OFF-NOT: tensor<4x1032xf32>
func.func @pad_columns(%x: tensor<1024x4xf32>, %s: tensor<8x4xf32>) -> (tensor<1024x1025xf32>, tensor<1024x1025xf32>, tensor<1024x1024xf32>, tensor<8x1025xf32>) {
  %w = kiln.constant dense<0.5> : tensor<4x1025xf32>
  %wt = kiln.constant dense<0.25> : tensor<1025x4xf32>
  %w8 = kiln.constant dense<0.125> : tensor<4x1024xf32>
  %y = kiln.matmul %x, %w : (tensor<1024x4xf32>, tensor<4x1025xf32>) -> tensor<1024x1025xf32>
  %yt = kiln.transposed_matmul %x, %wt {perm_b = array<i64: 1, 0>} : (tensor<1024x4xf32>, tensor<1025x4xf32>) -> tensor<1024x1025xf32>
  %y8 = kiln.matmul %x, %w8 : (tensor<1024x4xf32>, tensor<4x1024xf32>) -> tensor<1024x1024xf32>
  %ys = kiln.matmul %s, %w : (tensor<8x4xf32>, tensor<4x1025xf32>) -> tensor<8x1025xf32>
  return %y, %yt, %y8, %ys : tensor<1024x1025xf32>, tensor<1024x1025xf32>, tensor<1024x1024xf32>, tensor<8x1025xf32>
}

// -----

// A packed QKV projection (product, bias, three column slices): one product and bias per slice,
// B's columns and the bias's elements sliced at build time (gemm.split). A slice of a product
// with another user, or along another axis, stays.
// CHECK-LABEL: func.func @split_qkv
// CHECK: %[[Q:.*]] = kiln.transposed_matmul %arg0, %{{.*}} {perm_b = array<i64: 1, 0>} : (tensor<2x5x4xf32>, tensor<3x4xf32>) -> tensor<2x5x3xf32>
// CHECK: kiln.add %[[Q]], %{{.*}} : (tensor<2x5x3xf32>, tensor<3xf32>) -> tensor<2x5x3xf32>
// CHECK: kiln.transposed_matmul %arg0, %{{.*}} : (tensor<2x5x4xf32>, tensor<3x4xf32>) -> tensor<2x5x3xf32>
// CHECK: kiln.transposed_matmul %arg0, %{{.*}} : (tensor<2x5x4xf32>, tensor<3x4xf32>) -> tensor<2x5x3xf32>
// CHECK-NOT: kiln.slice
// CHECK: kiln.matmul %arg0, %{{.*}} : (tensor<2x5x4xf32>, tensor<4x9xf32>) -> tensor<2x5x9xf32>
// CHECK: kiln.slice
// CHECK: return
// OFF-LABEL: func.func @split_qkv
// OFF-COUNT-3: kiln.slice
func.func @split_qkv(%x: tensor<2x5x4xf32>) -> (tensor<2x5x3xf32>, tensor<2x5x3xf32>, tensor<2x5x3xf32>, tensor<2x5x9xf32>, tensor<2x5x3xf32>) {
  %w = kiln.constant dense<[[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0], [9.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0], [8.0, 9.0, 1.0, 2.0], [3.0, 4.0, 5.0, 6.0], [7.0, 8.0, 9.0, 1.0], [2.0, 3.0, 4.0, 5.0], [6.0, 7.0, 8.0, 9.0]]> : tensor<9x4xf32>
  %wt = kiln.transpose %w {perm = array<i64: 1, 0>} : (tensor<9x4xf32>) -> tensor<4x9xf32>
  %p = kiln.matmul %x, %wt : (tensor<2x5x4xf32>, tensor<4x9xf32>) -> tensor<2x5x9xf32>
  %bias = kiln.constant dense<[0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5, 8.5]> : tensor<9xf32>
  %y = kiln.add %bias, %p : (tensor<9xf32>, tensor<2x5x9xf32>) -> tensor<2x5x9xf32>
  %axis = kiln.constant dense<-1> : tensor<1xi64>
  %s0 = kiln.constant dense<0> : tensor<1xi64>
  %s1 = kiln.constant dense<3> : tensor<1xi64>
  %s2 = kiln.constant dense<6> : tensor<1xi64>
  %s3 = kiln.constant dense<9> : tensor<1xi64>
  %none = kiln.none
  %q = kiln.slice %y, %s0, %s1, %axis, %none : (tensor<2x5x9xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, none) -> tensor<2x5x3xf32>
  %k = kiln.slice %y, %s1, %s2, %axis, %none : (tensor<2x5x9xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, none) -> tensor<2x5x3xf32>
  %v = kiln.slice %y, %s2, %s3, %axis, %none : (tensor<2x5x9xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, none) -> tensor<2x5x3xf32>
  %w2 = kiln.constant dense<0.25> : tensor<4x9xf32>
  %p2 = kiln.matmul %x, %w2 : (tensor<2x5x4xf32>, tensor<4x9xf32>) -> tensor<2x5x9xf32>
  %o = kiln.slice %p2, %s0, %s1, %axis, %none : (tensor<2x5x9xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, none) -> tensor<2x5x3xf32>
  return %q, %k, %v, %p2, %o : tensor<2x5x3xf32>, tensor<2x5x3xf32>, tensor<2x5x3xf32>, tensor<2x5x9xf32>, tensor<2x5x3xf32>
}

// -----

// torch's sequence-first output projection: Gemm, regroup rows [S·B, E] → [S, B, E], then
// transpose to batch-first. The row permutation moves onto the product's A (each output row
// depends on its own input row; the bias varies along the last axis only) and folds into perm_a:
// the product writes [B, S, E] itself.
// CHECK-LABEL: func.func @sequence_first_output
// CHECK: %[[A:.*]] = kiln.reshape %arg0, %{{.*}} : (tensor<6x4xf32>, tensor<3xi64>) -> tensor<3x2x4xf32>
// CHECK: %[[P:.*]] = kiln.transposed_matmul %[[A]], %arg1 {perm_a = array<i64: 1, 0, 2>, perm_b = array<i64: 1, 0>} : (tensor<3x2x4xf32>, tensor<5x4xf32>) -> tensor<2x3x5xf32>
// CHECK: %[[S:.*]] = kiln.mul %[[P]], %{{.*}} : (tensor<2x3x5xf32>, tensor<f32>) -> tensor<2x3x5xf32>
// CHECK: %[[Y:.*]] = kiln.add %[[S]], %arg2 : (tensor<2x3x5xf32>, tensor<5xf32>) -> tensor<2x3x5xf32>
// CHECK-NOT: kiln.transpose
// CHECK: return %[[Y]]
// OFF-LABEL: func.func @sequence_first_output
// OFF: kiln.reshape
// OFF: kiln.transpose
func.func @sequence_first_output(%x: tensor<6x4xf32>, %w: tensor<5x4xf32>, %bias: tensor<5xf32>) -> tensor<2x3x5xf32> {
  %y = kiln.gemm %x, %w, %bias {alpha = 0.5 : f32, transB = 1 : i64} : (tensor<6x4xf32>, tensor<5x4xf32>, tensor<5xf32>) -> tensor<6x5xf32>
  %shape = kiln.constant dense<[3, 2, 5]> : tensor<3xi64>
  %r = kiln.reshape %y, %shape : (tensor<6x5xf32>, tensor<3xi64>) -> tensor<3x2x5xf32>
  %t = kiln.transpose %r {perm = array<i64: 1, 0, 2>} : (tensor<3x2x5xf32>) -> tensor<2x3x5xf32>
  return %t : tensor<2x3x5xf32>
}

// -----

// Not hoisted: the transpose moves the last axis, a reshape splits the last axis (a head split),
// or an added operand varies along rows.
// CHECK-LABEL: func.func @rows_not_independent
// CHECK-COUNT-3: kiln.transpose
// CHECK: return
func.func @rows_not_independent(%x: tensor<6x4xf32>, %w: tensor<4x6xf32>, %c: tensor<6x6xf32>) -> (tensor<6x6xf32>, tensor<3x6x2xf32>, tensor<6x6xf32>) {
  %p0 = kiln.matmul %x, %w : (tensor<6x4xf32>, tensor<4x6xf32>) -> tensor<6x6xf32>
  %t0 = kiln.transpose %p0 {perm = array<i64: 1, 0>} : (tensor<6x6xf32>) -> tensor<6x6xf32>
  %p1 = kiln.matmul %x, %w : (tensor<6x4xf32>, tensor<4x6xf32>) -> tensor<6x6xf32>
  %shape = kiln.constant dense<[6, 3, 2]> : tensor<3xi64>
  %r1 = kiln.reshape %p1, %shape : (tensor<6x6xf32>, tensor<3xi64>) -> tensor<6x3x2xf32>
  %t1 = kiln.transpose %r1 {perm = array<i64: 1, 0, 2>} : (tensor<6x3x2xf32>) -> tensor<3x6x2xf32>
  %p2 = kiln.matmul %x, %w : (tensor<6x4xf32>, tensor<4x6xf32>) -> tensor<6x6xf32>
  %a2 = kiln.add %p2, %c : (tensor<6x6xf32>, tensor<6x6xf32>) -> tensor<6x6xf32>
  %shape2 = kiln.constant dense<[2, 3, 6]> : tensor<3xi64>
  %r2 = kiln.reshape %a2, %shape2 : (tensor<6x6xf32>, tensor<3xi64>) -> tensor<2x3x6xf32>
  %t2 = kiln.transpose %r2 {perm = array<i64: 1, 0, 2>} : (tensor<2x3x6xf32>) -> tensor<3x2x6xf32>
  %shape3 = kiln.constant dense<[6, 6]> : tensor<2xi64>
  %r3 = kiln.reshape %t2, %shape3 : (tensor<3x2x6xf32>, tensor<2xi64>) -> tensor<6x6xf32>
  return %t0, %t1, %r3 : tensor<6x6xf32>, tensor<3x6x2xf32>, tensor<6x6xf32>
}

// -----

// A product reshaped to a scalar (Einsum's inner product) is left alone (this once crashed:
// the scalar has no last axis to compare).
// CHECK-LABEL: func.func @product_to_scalar
// CHECK: kiln.matmul
// CHECK: kiln.reshape
// OFF-LABEL: func.func @product_to_scalar
func.func @product_to_scalar(%x: tensor<1x5xf32>, %w: tensor<5x1xf32>) -> tensor<f32> {
  %p = kiln.matmul %x, %w : (tensor<1x5xf32>, tensor<5x1xf32>) -> tensor<1x1xf32>
  %shape = kiln.constant dense<> : tensor<0xi64>
  %r = kiln.reshape %p, %shape : (tensor<1x1xf32>, tensor<0xi64>) -> tensor<f32>
  return %r : tensor<f32>
}

// -----

// torch 2.11's packed sequence-first projection (nn.MultiheadAttention): product and bias, then
// Reshape → Unsqueeze → Transpose → Squeeze → Gather of each third. Every Gather reads whole
// column ranges of each row in order: one product per range, no copies left (gemm.split). The
// heads of Q and K [S, B·H, D] then walk their memory with one stride each (B·H: D), as the
// attention product below needs, which in the packed result they do not (B: 3·H·D, H: D).
// CHECK-LABEL: func.func @split_packed_gathers
// CHECK: %[[Q:.*]] = kiln.matmul %arg0, %{{.*}} : (tensor<3x2x4xf32>, tensor<4x4xf32>) -> tensor<3x2x4xf32>
// CHECK: kiln.add %[[Q]], %{{.*}} : (tensor<3x2x4xf32>, tensor<4xf32>) -> tensor<3x2x4xf32>
// CHECK-COUNT-2: kiln.matmul %arg0, %{{.*}} : (tensor<3x2x4xf32>, tensor<4x4xf32>) -> tensor<3x2x4xf32>
// CHECK-NOT: kiln.gather
// CHECK: return
// OFF-LABEL: func.func @split_packed_gathers
// OFF-COUNT-3: kiln.gather
// gemm.split=auto splits products that stay fp32 only (half attention reads the packed result).
// AUTO-LABEL: func.func @split_packed_gathers
// AUTO-NOT: kiln.gather
// AUTO: return
// HALF-LABEL: func.func @split_packed_gathers
// HALF-COUNT-3: kiln.gather
func.func @split_packed_gathers(%x: tensor<3x2x4xf32>) -> (tensor<4x3x3xf32>, tensor<3x2x4xf32>) {
  %w = kiln.constant dense<[[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0], [7.0, 8.0, 9.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0], [2.0, 4.0, 6.0, 8.0, 1.0, 3.0, 5.0, 7.0, 9.0, 2.0, 4.0, 6.0]]> : tensor<4x12xf32>
  %p = kiln.matmul %x, %w : (tensor<3x2x4xf32>, tensor<4x12xf32>) -> tensor<3x2x12xf32>
  %bias = kiln.constant dense<[0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5, 8.5, 9.5, 10.5, 11.5]> : tensor<12xf32>
  %y = kiln.add %bias, %p : (tensor<12xf32>, tensor<3x2x12xf32>) -> tensor<3x2x12xf32>
  %shape = kiln.constant dense<[3, 2, 3, 4]> : tensor<4xi64>
  %r = kiln.reshape %y, %shape : (tensor<3x2x12xf32>, tensor<4xi64>) -> tensor<3x2x3x4xf32>
  %u = kiln.unsqueeze %r {axes = array<i64: 0>} : (tensor<3x2x3x4xf32>) -> tensor<1x3x2x3x4xf32>
  %t = kiln.transpose %u {perm = array<i64: 3, 1, 2, 0, 4>} : (tensor<1x3x2x3x4xf32>) -> tensor<3x3x2x1x4xf32>
  %s = kiln.squeeze %t {axes = array<i64: 3>} : (tensor<3x3x2x1x4xf32>) -> tensor<3x3x2x4xf32>
  %i0 = kiln.constant dense<0> : tensor<i64>
  %i1 = kiln.constant dense<1> : tensor<i64>
  %i2 = kiln.constant dense<2> : tensor<i64>
  %q = kiln.gather %s, %i0 {axis = 0 : i64} : (tensor<3x3x2x4xf32>, tensor<i64>) -> tensor<3x2x4xf32>
  %k = kiln.gather %s, %i1 {axis = 0 : i64} : (tensor<3x3x2x4xf32>, tensor<i64>) -> tensor<3x2x4xf32>
  %v = kiln.gather %s, %i2 {axis = 0 : i64} : (tensor<3x3x2x4xf32>, tensor<i64>) -> tensor<3x2x4xf32>
  %heads = kiln.constant dense<[3, 4, 2]> : tensor<3xi64>
  %qr = kiln.reshape %q, %heads : (tensor<3x2x4xf32>, tensor<3xi64>) -> tensor<3x4x2xf32>
  %qt = kiln.transpose %qr {perm = array<i64: 1, 0, 2>} : (tensor<3x4x2xf32>) -> tensor<4x3x2xf32>
  %kr = kiln.reshape %k, %heads : (tensor<3x2x4xf32>, tensor<3xi64>) -> tensor<3x4x2xf32>
  %kt = kiln.transpose %kr {perm = array<i64: 1, 2, 0>} : (tensor<3x4x2xf32>) -> tensor<4x2x3xf32>
  %scores = kiln.matmul %qt, %kt : (tensor<4x3x2xf32>, tensor<4x2x3xf32>) -> tensor<4x3x3xf32>
  return %scores, %v : tensor<4x3x3xf32>, tensor<3x2x4xf32>
}

// -----

// torch.export's Linear of a 3-D input: a Gemm of a 2-D view, reshaped back, then GPT-2's residual
// Add. The Add moves above the reshape (the residual viewed as the product's rows), where epilogue
// fusion takes it; a [1, 1, C] operand becomes [C]. With fusion.epilogue=off nothing moves.
// CHECK-LABEL: func.func @residual_after_view
// CHECK: %[[P:.*]] = kiln.transposed_matmul %{{.*}} : (tensor<6x4xf32>, tensor<8x4xf32>) -> tensor<6x8xf32>
// CHECK: %[[B:.*]] = kiln.add %[[P]], %{{.*}} : (tensor<6x8xf32>, tensor<8xf32>) -> tensor<6x8xf32>
// CHECK: %[[RV:.*]] = kiln.reshape %arg1, %{{.*}} : (tensor<2x3x8xf32>, tensor<2xi64>) -> tensor<6x8xf32>
// CHECK: %[[A:.*]] = kiln.add %[[B]], %[[RV]] : (tensor<6x8xf32>, tensor<6x8xf32>) -> tensor<6x8xf32>
// CHECK: %[[SV:.*]] = kiln.reshape %arg2, %{{.*}} : (tensor<1x1x8xf32>, tensor<1xi64>) -> tensor<8xf32>
// CHECK: %[[M:.*]] = kiln.mul %[[SV]], %[[A]] : (tensor<8xf32>, tensor<6x8xf32>) -> tensor<6x8xf32>
// CHECK: %[[Y:.*]] = kiln.reshape %[[M]], %{{.*}} : (tensor<6x8xf32>, tensor<3xi64>) -> tensor<2x3x8xf32>
// CHECK: return %[[Y]]
// NOEPI-LABEL: func.func @residual_after_view
// NOEPI: kiln.add %{{.*}}, %arg1 : (tensor<2x3x8xf32>, tensor<2x3x8xf32>)
func.func @residual_after_view(%x: tensor<2x3x4xf32>, %res: tensor<2x3x8xf32>, %scale: tensor<1x1x8xf32>) -> tensor<2x3x8xf32> {
  %s1 = kiln.constant dense<[6, 4]> : tensor<2xi64>
  %x2 = kiln.reshape %x, %s1 : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<6x4xf32>
  %w = kiln.constant dense<[[0.5, -1.0, 1.5, 2.0], [1.0, 0.25, -0.5, 0.75], [-1.5, 2.0, 0.5, 1.0], [0.125, -0.25, 1.0, 0.5], [2.0, 1.0, -1.0, 0.5], [0.75, 0.5, 0.25, -2.0], [1.0, 1.0, -1.5, 0.25], [-0.5, 0.5, 2.0, 1.5]]> : tensor<8x4xf32>
  %b = kiln.constant dense<[0.5, -0.5, 1.0, 0.25, -1.0, 2.0, 0.125, 1.5]> : tensor<8xf32>
  %g = kiln.gemm %x2, %w, %b {transB = 1 : i64} : (tensor<6x4xf32>, tensor<8x4xf32>, tensor<8xf32>) -> tensor<6x8xf32>
  %s2 = kiln.constant dense<[2, 3, 8]> : tensor<3xi64>
  %y = kiln.reshape %g, %s2 : (tensor<6x8xf32>, tensor<3xi64>) -> tensor<2x3x8xf32>
  %r = kiln.add %y, %res : (tensor<2x3x8xf32>, tensor<2x3x8xf32>) -> tensor<2x3x8xf32>
  %m = kiln.mul %scale, %r : (tensor<1x1x8xf32>, tensor<2x3x8xf32>) -> tensor<2x3x8xf32>
  return %m : tensor<2x3x8xf32>
}

// RUN: %kiln-opt %s -split-input-file -kiln-product-views | FileCheck %s
// RUN: %kiln-opt %s -split-input-file -kiln-product-views=route=fusion.transpose=off | FileCheck %s --check-prefix=OFF
// RUN: %kiln-opt %s -split-input-file -kiln-product-views=route=gemm.batch_pointers=off | FileCheck %s --check-prefix=NOPTR

// Heads of sequence-first Q, K and V [S, B, H·D] (a split packed projection) read head-major,
// [B, H, S, D]: the batch dims (B, H) walk memory with one stride (D), so both products read
// their operands in place, one of them heading an epilogue region. A head transpose that also
// feeds another op stays a copy (read contiguously by both).
// CHECK-LABEL: func.func @sequence_first_heads
// CHECK-DAG: %[[Q:.*]] = kiln.strided_view %arg0 {offset = 0 : i64, shape = array<i64: 2, 2, 3, 4>, strides = array<i64: 8, 4, 16, 1>} : (tensor<3x2x8xf32>) -> tensor<2x2x3x4xf32>
// CHECK-DAG: %[[K:.*]] = kiln.strided_view %arg1 {offset = 0 : i64, shape = array<i64: 2, 2, 3, 4>, strides = array<i64: 8, 4, 16, 1>} : (tensor<3x2x8xf32>) -> tensor<2x2x3x4xf32>
// CHECK: kiln.fused epilogue(%[[Q]], %[[K]])
// CHECK: %[[V:.*]] = kiln.strided_view %arg2 {offset = 0 : i64, shape = array<i64: 2, 2, 3, 4>, strides = array<i64: 8, 4, 16, 1>}
// CHECK: kiln.matmul %{{.*}}, %[[V]]
// CHECK: %[[T:.*]] = kiln.transpose %{{.*}} {perm = array<i64: 1, 0, 2>} : (tensor<3x4x4xf32>) -> tensor<4x3x4xf32>
// CHECK: kiln.matmul %{{.*}}, %{{.*}} : (tensor<2x2x3x3xf32>, tensor<2x2x3x4xf32>)
// CHECK: kiln.exp
// OFF-LABEL: func.func @sequence_first_heads
// OFF-COUNT-4: kiln.transpose
// OFF-NOT: kiln.strided_view
func.func @sequence_first_heads(%q: tensor<3x2x8xf32>, %k: tensor<3x2x8xf32>, %v: tensor<3x2x8xf32>, %w: tensor<3x2x8xf32>, %p: tensor<2x2x3x3xf32>) -> (tensor<2x2x3x3xf32>, tensor<2x2x3x4xf32>, tensor<2x2x3x4xf32>, tensor<4x3x4xf32>) {
  %s1 = kiln.constant dense<[3, 4, 4]> : tensor<3xi64>
  %s2 = kiln.constant dense<[2, 2, 3, 4]> : tensor<4xi64>
  %qr = kiln.reshape %q, %s1 : (tensor<3x2x8xf32>, tensor<3xi64>) -> tensor<3x4x4xf32>
  %qt = kiln.transpose %qr {perm = array<i64: 1, 0, 2>} : (tensor<3x4x4xf32>) -> tensor<4x3x4xf32>
  %qh = kiln.reshape %qt, %s2 : (tensor<4x3x4xf32>, tensor<4xi64>) -> tensor<2x2x3x4xf32>
  %kr = kiln.reshape %k, %s1 : (tensor<3x2x8xf32>, tensor<3xi64>) -> tensor<3x4x4xf32>
  %kt = kiln.transpose %kr {perm = array<i64: 1, 0, 2>} : (tensor<3x4x4xf32>) -> tensor<4x3x4xf32>
  %kh = kiln.reshape %kt, %s2 : (tensor<4x3x4xf32>, tensor<4xi64>) -> tensor<2x2x3x4xf32>
  %sc = kiln.fused epilogue(%qh, %kh) : (tensor<2x2x3x4xf32>, tensor<2x2x3x4xf32>) -> tensor<2x2x3x3xf32> {
  ^bb0(%a: tensor<2x2x3x4xf32>, %b: tensor<2x2x3x4xf32>):
    %m = kiln.transposed_matmul %a, %b {perm_b = array<i64: 0, 1, 3, 2>} : (tensor<2x2x3x4xf32>, tensor<2x2x3x4xf32>) -> tensor<2x2x3x3xf32>
    %c = kiln.constant dense<0.5> : tensor<1xf32>
    %y = kiln.mul %m, %c : (tensor<2x2x3x3xf32>, tensor<1xf32>) -> tensor<2x2x3x3xf32>
    kiln.yield %y : tensor<2x2x3x3xf32>
  }
  %vr = kiln.reshape %v, %s1 : (tensor<3x2x8xf32>, tensor<3xi64>) -> tensor<3x4x4xf32>
  %vt = kiln.transpose %vr {perm = array<i64: 1, 0, 2>} : (tensor<3x4x4xf32>) -> tensor<4x3x4xf32>
  %vh = kiln.reshape %vt, %s2 : (tensor<4x3x4xf32>, tensor<4xi64>) -> tensor<2x2x3x4xf32>
  %o = kiln.matmul %p, %vh : (tensor<2x2x3x3xf32>, tensor<2x2x3x4xf32>) -> tensor<2x2x3x4xf32>
  %wr = kiln.reshape %w, %s1 : (tensor<3x2x8xf32>, tensor<3xi64>) -> tensor<3x4x4xf32>
  %wt = kiln.transpose %wr {perm = array<i64: 1, 0, 2>} : (tensor<3x4x4xf32>) -> tensor<4x3x4xf32>
  %wh = kiln.reshape %wt, %s2 : (tensor<4x3x4xf32>, tensor<4xi64>) -> tensor<2x2x3x4xf32>
  %o2 = kiln.matmul %p, %wh : (tensor<2x2x3x3xf32>, tensor<2x2x3x4xf32>) -> tensor<2x2x3x4xf32>
  %e = kiln.exp %wt : (tensor<4x3x4xf32>) -> tensor<4x3x4xf32>
  return %sc, %o, %o2, %e : tensor<2x2x3x3xf32>, tensor<2x2x3x4xf32>, tensor<2x2x3x4xf32>, tensor<4x3x4xf32>
}

// -----

// Batch-first heads [B, S, H·D] read as [B, H, S, D]: B and H have strides S·H·D and D, which
// no single batch stride walks: read in place through cuBLASLt's pointer-array batches
// (gemm.batch_pointers), the product's result an intermediate too.
// CHECK-LABEL: func.func @batch_first_heads
// CHECK: %[[Q:.*]] = kiln.strided_view %{{.*}} {offset = 0 : i64, shape = array<i64: 2, 2, 3, 4>, strides = array<i64: 24, 4, 8, 1>}
// CHECK: kiln.matmul %[[Q]], %arg1
// NOPTR-LABEL: func.func @batch_first_heads
// NOPTR: kiln.transpose
// NOPTR-NOT: kiln.strided_view
func.func @batch_first_heads(%x: tensor<2x3x8xf32>, %k: tensor<2x2x4x3xf32>) -> tensor<2x2x3x3xf32> {
  %s = kiln.constant dense<[2, 3, 2, 4]> : tensor<4xi64>
  %q = kiln.exp %x : (tensor<2x3x8xf32>) -> tensor<2x3x8xf32>
  %qr = kiln.reshape %q, %s : (tensor<2x3x8xf32>, tensor<4xi64>) -> tensor<2x3x2x4xf32>
  %qt = kiln.transpose %qr {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x3x2x4xf32>) -> tensor<2x2x3x4xf32>
  %y = kiln.matmul %qt, %k : (tensor<2x2x3x4xf32>, tensor<2x2x4x3xf32>) -> tensor<2x2x3x3xf32>
  %z = kiln.exp %y : (tensor<2x2x3x3xf32>) -> tensor<2x2x3x3xf32>
  return %z : tensor<2x2x3x3xf32>
}

// -----

// The same heads of an engine input stay a copy: pointer-array batches take addresses known
// when a context is created, not at enqueue. So does a column slice starting 4 bytes into its
// rows (cuBLASLt wants 16-byte aligned operands), and an fp64 product.
// CHECK-LABEL: func.func @stays_copies
// CHECK-NOT: kiln.strided_view
// CHECK: return
func.func @stays_copies(%q: tensor<2x3x8xf32>, %k: tensor<2x2x4x3xf32>, %x: tensor<3x9xf32>, %w: tensor<8x2xf32>, %d: tensor<3x2x8xf64>, %dw: tensor<8x2xf64>) -> (tensor<2x2x3x3xf32>, tensor<3x2xf32>, tensor<2x3x2xf64>) {
  %s = kiln.constant dense<[2, 3, 2, 4]> : tensor<4xi64>
  %qr = kiln.reshape %q, %s : (tensor<2x3x8xf32>, tensor<4xi64>) -> tensor<2x3x2x4xf32>
  %qt = kiln.transpose %qr {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x3x2x4xf32>) -> tensor<2x2x3x4xf32>
  %y = kiln.matmul %qt, %k : (tensor<2x2x3x4xf32>, tensor<2x2x4x3xf32>) -> tensor<2x2x3x3xf32>
  %b = kiln.constant dense<1> : tensor<1xi64>
  %e = kiln.constant dense<9> : tensor<1xi64>
  %a = kiln.constant dense<-1> : tensor<1xi64>
  %none = kiln.none
  %xs = kiln.slice %x, %b, %e, %a, %none : (tensor<3x9xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, none) -> tensor<3x8xf32>
  %z = kiln.matmul %xs, %w : (tensor<3x8xf32>, tensor<8x2xf32>) -> tensor<3x2xf32>
  %dt = kiln.transpose %d {perm = array<i64: 1, 0, 2>} : (tensor<3x2x8xf64>) -> tensor<2x3x8xf64>
  %dz = kiln.matmul %dt, %dw : (tensor<2x3x8xf64>, tensor<8x2xf64>) -> tensor<2x3x2xf64>
  return %y, %z, %dz : tensor<2x2x3x3xf32>, tensor<3x2xf32>, tensor<2x3x2xf64>
}

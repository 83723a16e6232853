// RUN: %kiln-opt %s -split-input-file -kiln-split-reductions | FileCheck %s
// RUN: %kiln-opt %s -split-input-file -kiln-split-reductions="route=reduce.split=off" | FileCheck %s --check-prefix=OFF
// OFF-NOT: kiln.reshape

// A whole tensor's min (DynamicQuantizeLinear's range): 262144 elements as 128 chunks of 2048
// (two blocks per SM of sm_90's 132 at most), then the 128 partial minima.
// CHECK-LABEL: func.func @whole_min
// CHECK: %[[S:.*]] = kiln.constant dense<[1, 128, 2048]> : tensor<3xi64>
// CHECK: %[[V:.*]] = kiln.reshape %arg0, %[[S]] : (tensor<8x32x32x32xf32>, tensor<3xi64>) -> tensor<1x128x2048xf32>
// CHECK: %[[P:.*]] = kiln.reduce_min %[[V]] {axes = array<i64: 2>, keepdims = 0 : i64} : (tensor<1x128x2048xf32>) -> tensor<1x128xf32>
// CHECK: %[[Q:.*]] = kiln.reduce_min %[[P]] {axes = array<i64: 1>, keepdims = 0 : i64} : (tensor<1x128xf32>) -> tensor<1xf32>
// CHECK: %[[R:.*]] = kiln.reshape %[[Q]], %{{.*}} : (tensor<1xf32>, tensor<0xi64>) -> tensor<f32>
// CHECK: return %[[R]]
func.func @whole_min(%x: tensor<8x32x32x32xf32>) -> tensor<f32> {
  %m = kiln.reduce_min %x {keepdims = 0 : i64} : (tensor<8x32x32x32xf32>) -> tensor<f32>
  return %m : tensor<f32>
}

// -----

// Four rows of 65536 (trailing axes, keepdims): 66 chunks per row at most, 64 divides the row.
// A sum of squares adds its partial sums up.
// CHECK-LABEL: func.func @rows_sum_square
// CHECK: kiln.reduce_sum_square %{{.*}} {axes = array<i64: 2>, keepdims = 0 : i64} : (tensor<4x32x2048xf32>) -> tensor<4x32xf32>
// CHECK: kiln.reduce_sum %{{.*}} {axes = array<i64: 1>, keepdims = 0 : i64} : (tensor<4x32xf32>) -> tensor<4xf32>
// CHECK: kiln.reshape %{{.*}} -> tensor<4x1x1xf32>
func.func @rows_sum_square(%x: tensor<4x256x256xf32>) -> tensor<4x1x1xf32> {
  %m = kiln.reduce_sum_square %x {axes = array<i64: 1, 2>, keepdims = 1 : i64} : (tensor<4x256x256xf32>) -> tensor<4x1x1xf32>
  return %m : tensor<4x1x1xf32>
}

// -----

// Left alone: short rows, many rows, a strided (non-trailing) reduction, ReduceProd.
// CHECK-LABEL: func.func @kept
// CHECK-NOT: kiln.reshape
// CHECK: kiln.reduce_max %arg0 {axes = array<i64: 1>
// CHECK: kiln.reduce_mean %arg1 {axes = array<i64: 1>
// CHECK: kiln.reduce_sum %arg2 {axes = array<i64: 0>
// CHECK: kiln.reduce_prod %arg2 {keepdims = 0 : i64}
func.func @kept(%a: tensor<4x32768xf32>, %b: tensor<256x65536xf32>, %c: tensor<65536x2xf32>)
    -> (tensor<4xf32>, tensor<256xf32>, tensor<2xf32>, tensor<f32>) {
  %0 = kiln.reduce_max %a {axes = array<i64: 1>, keepdims = 0 : i64} : (tensor<4x32768xf32>) -> tensor<4xf32>
  %1 = kiln.reduce_mean %b {axes = array<i64: 1>, keepdims = 0 : i64} : (tensor<256x65536xf32>) -> tensor<256xf32>
  %2 = kiln.reduce_sum %c {axes = array<i64: 0>, keepdims = 0 : i64} : (tensor<65536x2xf32>) -> tensor<2xf32>
  %3 = kiln.reduce_prod %c {keepdims = 0 : i64} : (tensor<65536x2xf32>) -> tensor<f32>
  return %0, %1, %2, %3 : tensor<4xf32>, tensor<256xf32>, tensor<2xf32>, tensor<f32>
}

// -----

// A half route's fp32 island: the min and max of a half tensor widened to fp32 reduce the half
// tensor and widen the results (what the knob leaves on too), both in one ReduceMinMax; the
// widened copy stays for its other user. The pair then splits as above (fp16 rows): stage two
// reduces the partial minima and maxima.
// CHECK-LABEL: func.func @half_min_max
// CHECK-DAG: %[[W:.*]] = kiln.cast %arg0 {to = 1 : i64} : (tensor<512x256xf16>) -> tensor<512x256xf32>
// CHECK-DAG: %[[V:.*]] = kiln.reshape %arg0, %{{.*}} -> tensor<1x64x2048xf16>
// CHECK: %[[L:.*]], %[[H:.*]] = kiln.reduce_min_max %[[V]], %[[V]] {axes = array<i64: 2>, keepdims = 0 : i64} : (tensor<1x64x2048xf16>, tensor<1x64x2048xf16>) -> (tensor<1x64xf16>, tensor<1x64xf16>)
// CHECK: kiln.reduce_min_max %[[L]], %[[H]] {axes = array<i64: 1>, keepdims = 0 : i64} : (tensor<1x64xf16>, tensor<1x64xf16>) -> (tensor<1xf16>, tensor<1xf16>)
// CHECK-DAG: kiln.cast %{{.*}} {to = 1 : i64} : (tensor<f16>) -> tensor<f32>
// CHECK-NOT: kiln.reduce_min %[[W]]
// OFF-LABEL: func.func @half_min_max
// OFF: kiln.reduce_min_max %arg0, %arg0 {keepdims = 0 : i64} : (tensor<512x256xf16>, tensor<512x256xf16>) -> (tensor<f16>, tensor<f16>)
func.func @half_min_max(%h: tensor<512x256xf16>) -> (tensor<f32>, tensor<f32>, tensor<512x256xf32>) {
  %w = kiln.cast %h {to = 1 : i64} : (tensor<512x256xf16>) -> tensor<512x256xf32>
  %lo = kiln.reduce_min %w {keepdims = 0 : i64} : (tensor<512x256xf32>) -> tensor<f32>
  %hi = kiln.reduce_max %w {keepdims = 0 : i64} : (tensor<512x256xf32>) -> tensor<f32>
  return %lo, %hi, %w : tensor<f32>, tensor<f32>, tensor<512x256xf32>
}

// -----

// A widened fp32 tensor that is not a half's, and a sum (not exact in half), are left alone.
// CHECK-LABEL: func.func @not_half
// CHECK: kiln.reduce_min %{{.*}} : (tensor<64x32xf32>) -> tensor<f32>
// CHECK: kiln.reduce_sum %{{.*}} : (tensor<64x32xf32>) -> tensor<f32>
func.func @not_half(%i: tensor<64x32xi32>, %h: tensor<64x32xf16>) -> (tensor<f32>, tensor<f32>) {
  %w = kiln.cast %i {to = 1 : i64} : (tensor<64x32xi32>) -> tensor<64x32xf32>
  %lo = kiln.reduce_min %w {keepdims = 0 : i64} : (tensor<64x32xf32>) -> tensor<f32>
  %v = kiln.cast %h {to = 1 : i64} : (tensor<64x32xf16>) -> tensor<64x32xf32>
  %s = kiln.reduce_sum %v {keepdims = 0 : i64} : (tensor<64x32xf32>) -> tensor<f32>
  return %lo, %s : tensor<f32>, tensor<f32>
}

// -----

// Pairs only the min and max of one tensor over the same axes: another axis, another tensor, or
// a ReduceMin alone stay as they are.
// CHECK-LABEL: func.func @pairs
// CHECK: kiln.reduce_min_max %arg0, %arg0 {axes = array<i64: 1>, keepdims = 1 : i64} : (tensor<4x8xf32>, tensor<4x8xf32>) -> (tensor<4x1xf32>, tensor<4x1xf32>)
// CHECK: kiln.reduce_max %arg0 {axes = array<i64: 0>
// CHECK: kiln.reduce_min %arg1
func.func @pairs(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> (tensor<4x1xf32>, tensor<4x1xf32>, tensor<1x8xf32>, tensor<4x1xf32>) {
  %lo = kiln.reduce_min %x {axes = array<i64: 1>, keepdims = 1 : i64} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %hi = kiln.reduce_max %x {axes = array<i64: 1>, keepdims = 1 : i64} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %c = kiln.reduce_max %x {axes = array<i64: 0>, keepdims = 1 : i64} : (tensor<4x8xf32>) -> tensor<1x8xf32>
  %o = kiln.reduce_min %y {axes = array<i64: 1>, keepdims = 1 : i64} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  return %lo, %hi, %c, %o : tensor<4x1xf32>, tensor<4x1xf32>, tensor<1x8xf32>, tensor<4x1xf32>
}

// RUN: %kiln-opt %s -split-input-file '-kiln-layout=route=layout.conv=nhwc;conv.algo=implicit' | FileCheck %s
// RUN: %kiln-opt %s -split-input-file -kiln-layout | FileCheck %s --check-prefix=AUTO
// RUN: %kiln-opt %s -split-input-file '-kiln-layout=route=layout.conv=nhwc;conv.algo=im2col' | FileCheck %s --check-prefix=IM2COL

// Conv → bias-free ReLU → Conv → residual Add → MaxPool → GlobalAveragePool: one transpose in,
// and the result of the global pool needs none out (only size-1 dims move: a reshape).
// CHECK-LABEL: func.func @chain
// CHECK: %[[X:.*]] = kiln.transpose %arg0 {perm = array<i64: 0, 2, 3, 1>}
// CHECK: %[[C1:.*]] = kiln.conv_nhwc %[[X]]
// CHECK: %[[R:.*]] = kiln.relu %[[C1]] : (tensor<2x6x5x8xf32>)
// CHECK: %[[C2:.*]] = kiln.conv_nhwc %[[R]]
// CHECK: %[[A:.*]] = kiln.add %[[C2]], %[[R]] : (tensor<2x6x5x8xf32>, tensor<2x6x5x8xf32>)
// CHECK: %[[B:.*]] = kiln.add %[[A]], %{{.*}} : (tensor<2x6x5x8xf32>, tensor<1x1x1x8xf32>)
// CHECK: %[[P:.*]] = kiln.max_pool_nhwc %[[B]]
// CHECK: %[[G:.*]] = kiln.reduce_mean %[[P]] {axes = array<i64: 1, 2>, keepdims = 1 : i64}
// CHECK-NOT: kiln.transpose
// CHECK: %[[S:.*]] = kiln.reshape %[[G]]
// CHECK: return %[[S]] : tensor<2x8x1x1xf32>
// auto: NHWC for fp32 too, the 3x3 convolution as patches times weights (cuBLASLt's fp32 product).
// AUTO-LABEL: func.func @chain
// AUTO: kiln.im2col {{.*}} -> tensor<2x6x5x27xf32>
// AUTO: kiln.conv_nhwc
// The 3x3 convolution as patches times weights; the 1x1 one is a plain product already.
// IM2COL-LABEL: func.func @chain
// IM2COL: %[[X:.*]] = kiln.transpose %arg0 {perm = array<i64: 0, 2, 3, 1>}
// IM2COL: %[[C:.*]] = kiln.im2col %[[X]] {dilations = array<i64: 1, 1>, kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<2x6x5x3xf32>) -> tensor<2x6x5x27xf32>
// IM2COL: %[[W:.*]] = kiln.constant {{.*}} : tensor<27x8xf32>
// IM2COL: %[[M:.*]] = kiln.matmul %[[C]], %[[W]] : (tensor<2x6x5x27xf32>, tensor<27x8xf32>) -> tensor<2x6x5x8xf32>
// IM2COL: kiln.relu %[[M]]
// IM2COL: kiln.conv_nhwc
func.func @chain(%x: tensor<2x3x6x5xf32>) -> tensor<2x8x1x1xf32> {
  %w1 = kiln.constant dense<0.5> : tensor<8x3x3x3xf32>
  %w2 = kiln.constant dense<0.25> : tensor<8x8x1x1xf32>
  %bias = kiln.constant dense<[[[1.0]], [[2.0]], [[3.0]], [[4.0]], [[5.0]], [[6.0]], [[7.0]], [[8.0]]]> : tensor<8x1x1xf32>
  %none = kiln.none
  %c1 = kiln.conv %x, %w1, %none {pads = array<i64: 1, 1, 1, 1>} : (tensor<2x3x6x5xf32>, tensor<8x3x3x3xf32>, none) -> tensor<2x8x6x5xf32>
  %r = kiln.relu %c1 : (tensor<2x8x6x5xf32>) -> tensor<2x8x6x5xf32>
  %c2 = kiln.conv %r, %w2, %none : (tensor<2x8x6x5xf32>, tensor<8x8x1x1xf32>, none) -> tensor<2x8x6x5xf32>
  %a = kiln.add %c2, %r : (tensor<2x8x6x5xf32>, tensor<2x8x6x5xf32>) -> tensor<2x8x6x5xf32>
  %b = kiln.add %a, %bias : (tensor<2x8x6x5xf32>, tensor<8x1x1xf32>) -> tensor<2x8x6x5xf32>
  %p = kiln.max_pool %b {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<2x8x6x5xf32>) -> tensor<2x8x3x2xf32>
  %g = kiln.global_average_pool %p : (tensor<2x8x3x2xf32>) -> tensor<2x8x1x1xf32>
  return %g : tensor<2x8x1x1xf32>
}

// -----

// A conv whose result leaves through an op with no NHWC form keeps a transpose back to NCHW there.
// CHECK-LABEL: func.func @boundary
// CHECK: kiln.conv_nhwc
// CHECK: %[[T:.*]] = kiln.transpose %{{.*}} {perm = array<i64: 0, 3, 1, 2>}
// CHECK: kiln.softmax %[[T]] {axis = 1 : i64}
// AUTO-LABEL: func.func @boundary
// AUTO: kiln.conv_nhwc
func.func @boundary(%x: tensor<1x4x5x5xf16>) -> tensor<1x4x5x5xf16> {
  %w = kiln.constant dense<0.5> : tensor<4x4x1x1xf16>
  %none = kiln.none
  %c = kiln.conv %x, %w, %none : (tensor<1x4x5x5xf16>, tensor<4x4x1x1xf16>, none) -> tensor<1x4x5x5xf16>
  %s = kiln.softmax %c {axis = 1 : i64} : (tensor<1x4x5x5xf16>) -> tensor<1x4x5x5xf16>
  return %s : tensor<1x4x5x5xf16>
}

// -----

// fp16 with 3 input channels: input and weights are zero-padded to 8 channels, so the
// tensor-core convolution reads 16-byte channel groups.
// CHECK-LABEL: func.func @rgb_stem
// CHECK: %[[T:.*]] = kiln.transpose %arg0 {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x3x9x9xf16>) -> tensor<1x9x9x3xf16>
// CHECK: %[[P:.*]] = kiln.pad %[[T]], {{.*}} : (tensor<1x9x9x3xf16>, tensor<8xi64>, none, none) -> tensor<1x9x9x8xf16>
// CHECK: kiln.conv_nhwc %[[P]], %{{.*}} : (tensor<1x9x9x8xf16>, tensor<4x8x3x3xf16>, none) -> tensor<1x9x9x4xf16>
// In half precision a small patch matrix is written out by default (conv.algo auto).
// AUTO-LABEL: func.func @rgb_stem
// AUTO: %[[P:.*]] = kiln.pad {{.*}} -> tensor<1x9x9x8xf16>
// AUTO: kiln.im2col %[[P]] {{.*}} -> tensor<1x9x9x72xf16>
// AUTO: kiln.matmul {{.*}} : (tensor<1x9x9x72xf16>, tensor<72x4xf16>) -> tensor<1x9x9x4xf16>
func.func @rgb_stem(%x: tensor<1x3x9x9xf16>) -> tensor<1x4x9x9xf16> {
  %w = kiln.constant dense<0.5> : tensor<4x3x3x3xf16>
  %none = kiln.none
  %c = kiln.conv %x, %w, %none {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x3x9x9xf16>, tensor<4x3x3x3xf16>, none) -> tensor<1x4x9x9xf16>
  return %c : tensor<1x4x9x9xf16>
}

// -----

// Per-tensor Q/DQ between convolutions (a QDQ model) computes per element: the layout passes
// through it. A per-axis DequantizeLinear (scale along axis 1) does not: the transpose back to
// NCHW stays in front of it (on int8 data).
// CHECK-LABEL: func.func @qdq
// CHECK: kiln.conv_nhwc
// CHECK-NEXT: kiln.quantize_linear {{.*}} : (tensor<1x4x4x8xf32>
// CHECK-NEXT: kiln.dequantize_linear {{.*}} : (tensor<1x4x4x8xi8>
// CHECK-NEXT: kiln.conv_nhwc
// CHECK: kiln.quantize_linear {{.*}} -> tensor<1x4x4x8xi8>
// CHECK-NEXT: %[[T:.*]] = kiln.transpose %{{.*}} {perm = array<i64: 0, 3, 1, 2>} : (tensor<1x4x4x8xi8>)
// CHECK-NEXT: kiln.dequantize_linear %[[T]], {{.*}} {axis = 1 : i64}
func.func @qdq(%x: tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32> {
  %w = kiln.constant dense<0.125> : tensor<8x8x1x1xf32>
  %none = kiln.none
  %s = kiln.constant dense<0.05> : tensor<f32>
  %z = kiln.constant dense<0> : tensor<i8>
  %c1 = kiln.conv %x, %w, %none : (tensor<1x8x4x4xf32>, tensor<8x8x1x1xf32>, none) -> tensor<1x8x4x4xf32>
  %q1 = kiln.quantize_linear %c1, %s, %z : (tensor<1x8x4x4xf32>, tensor<f32>, tensor<i8>) -> tensor<1x8x4x4xi8>
  %d1 = kiln.dequantize_linear %q1, %s, %z : (tensor<1x8x4x4xi8>, tensor<f32>, tensor<i8>) -> tensor<1x8x4x4xf32>
  %c2 = kiln.conv %d1, %w, %none : (tensor<1x8x4x4xf32>, tensor<8x8x1x1xf32>, none) -> tensor<1x8x4x4xf32>
  %sc = kiln.constant dense<[0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8]> : tensor<8xf32>
  %zc = kiln.constant dense<0> : tensor<8xi8>
  %q2 = kiln.quantize_linear %c2, %s, %z : (tensor<1x8x4x4xf32>, tensor<f32>, tensor<i8>) -> tensor<1x8x4x4xi8>
  %d2 = kiln.dequantize_linear %q2, %sc, %zc {axis = 1 : i64} : (tensor<1x8x4x4xi8>, tensor<8xf32>, tensor<8xi8>) -> tensor<1x8x4x4xf32>
  return %d2 : tensor<1x8x4x4xf32>
}

// -----

// int8 convolutions run NHWC whatever layout.conv says (the NCHW run below too).
// CHECK-LABEL: func.func @int8_conv
// CHECK: kiln.transpose %{{.*}} {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x16x3x3xi8>)
// CHECK: kiln.quantized_conv_nhwc {{.*}} -> tensor<1x3x3x2xf32>
// AUTO-LABEL: func.func @int8_conv
// AUTO: kiln.quantized_conv_nhwc
func.func @int8_conv(%x: tensor<1x16x3x3xi8>) -> tensor<1x2x3x3xf32> {
  %w = kiln.constant dense<-7> : tensor<2x16x3x3xi8>
  %s = kiln.constant dense<[3.93700786E-4, 7.87401571E-4]> : tensor<2xf32>
  %b = kiln.constant dense<[0.5, -0.25]> : tensor<2xf32>
  %y = kiln.quantized_conv %x, %w, %s, %b {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x16x3x3xi8>, tensor<2x16x3x3xi8>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
  return %y : tensor<1x2x3x3xf32>
}

// -----

// Stride 2, SAME_UPPER padding (odd: one row and column at the end), a bias: the bias is an Add
// after the product.
// IM2COL-LABEL: func.func @strided_bias
// IM2COL: kiln.im2col {{.*}} {dilations = array<i64: 1, 1>, kernel_shape = array<i64: 3, 3>, pads = array<i64: 0, 0, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x8x8x4xf32>) -> tensor<1x4x4x36xf32>
// IM2COL: %[[M:.*]] = kiln.matmul {{.*}} -> tensor<1x4x4x6xf32>
// IM2COL: kiln.add %[[M]], %{{.*}} : (tensor<1x4x4x6xf32>, tensor<6xf32>) -> tensor<1x4x4x6xf32>
func.func @strided_bias(%x: tensor<1x4x8x8xf32>) -> tensor<1x6x4x4xf32> {
  %w = kiln.constant dense<0.5> : tensor<6x4x3x3xf32>
  %b = kiln.constant dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]> : tensor<6xf32>
  %c = kiln.conv %x, %w, %b {auto_pad = "SAME_UPPER", strides = array<i64: 2, 2>} : (tensor<1x4x8x8xf32>, tensor<6x4x3x3xf32>, tensor<6xf32>) -> tensor<1x6x4x4xf32>
  return %c : tensor<1x6x4x4xf32>
}

// -----

// Other types (no NHWC product kernels for them) stay NCHW under auto.
// AUTO-LABEL: func.func @f64_stays_nchw
// AUTO-NOT: nhwc
// AUTO: kiln.conv %arg0
func.func @f64_stays_nchw(%x: tensor<1x2x4x4xf64>) -> tensor<1x2x4x4xf64> {
  %w = kiln.constant dense<0.5> : tensor<2x2x3x3xf64>
  %none = kiln.none
  %y = kiln.conv %x, %w, %none {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x2x4x4xf64>, tensor<2x2x3x3xf64>, none) -> tensor<1x2x4x4xf64>
  return %y : tensor<1x2x4x4xf64>
}

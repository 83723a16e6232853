// RUN: %kiln-opt %s -split-input-file -kiln-lower-quantized-ops | FileCheck %s
// (tests/unit/passes_test.cpp runs each function before and after on random inputs.)

// onnxruntime's dynamic QOperator MatMul: DynamicQuantizeLinear becomes reductions and
// elementwise ops (kiln.keep_fp32), the integer product a float product of the dequantized
// activation (its scale computed at run time) and the dequantized weights.
// CHECK-LABEL: func.func @dynamic_matmul
// CHECK-NOT: kiln.dynamic_quantize_linear
// CHECK-DAG: kiln.reduce_min %arg0 {keepdims = 0 : i64, kiln.keep_fp32}
// CHECK-DAG: kiln.reduce_max %arg0
// CHECK: %[[W:.*]] = kiln.dequantize_linear %{{.*}} : (tensor<16x8xi8>, tensor<f32>, tensor<i8>) -> tensor<16x8xf32>
// CHECK: %[[Y:.*]] = kiln.matmul %{{.*}}, %[[W]] : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
// CHECK-NOT: kiln.matmul_integer
// CHECK: return %[[Y]]
func.func @dynamic_matmul(%x: tensor<4x16xf32>) -> tensor<4x8xf32> {
  %q, %s, %z = kiln.dynamic_quantize_linear %x : (tensor<4x16xf32>) -> (tensor<4x16xui8>, tensor<f32>, tensor<ui8>)
  %w = kiln.constant dense<[[  44,   78, -122,   79,   -8,    4,   33,  -55], [ 122, -114,  -57,  -30,   18,  -23,  -94, -116], [-127, -115,  -90,  127,  -79,   39,   64,  -68], [ -56,  -17,  -60,  121,  -82,  101,   76,   88], [ -98,  -27,   33,   -2,   42,   45,   42, -112], [ 117,   14,  103,  -58,  -35,   97,  -80, -111], [ -32,   46,  -96,   94,  -41,  -70,   11,  101], [  98,   95,  -49, -123,   71,   53,   69, -127], [-118,    1,  -42,  -16,  110,  -76,    7,  -45], [ -52,   78,  -88,  -47,  -97,  -89,  -56,   51], [  20,  -13,  -84,   76,   76,  -67, -112,  -46], [ -90,   76,    5,    2,  -53,    2,  119,  -67], [  68, -124,  -47,  110,   95, -106,   87,   88], [ -12,  -34,  122,  115,   45,  -26,  -74,  111], [ -59,   14,   45,  -66,  -47,   62,  -77,   44], [ 113,   47,   37,   -9,  119,  -71,  -37,   36]]> : tensor<16x8xi8>
  %wz = kiln.constant dense<0> : tensor<i8>
  %p = kiln.matmul_integer %q, %w, %z, %wz : (tensor<4x16xui8>, tensor<16x8xi8>, tensor<ui8>, tensor<i8>) -> tensor<4x8xi32>
  %f = kiln.cast %p {to = 1 : i64} : (tensor<4x8xi32>) -> tensor<4x8xf32>
  %ws = kiln.constant dense<0.0125> : tensor<f32>
  %sc = kiln.mul %s, %ws : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %y = kiln.mul %f, %sc : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// onnxruntime's older dynamic ConvInteger: uint8 weights with a zero point, an int32 bias added
// to the sums before the Cast, per-tensor scales: Conv of the dequantized operands + bias · S.
// CHECK-LABEL: func.func @conv_integer_bias
// CHECK: %[[C:.*]] = kiln.conv %{{.*}}, %{{.*}}, %{{.*}} {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x2x5x5xf32>, tensor<4x2x3x3xf32>, none) -> tensor<1x4x5x5xf32>
// CHECK: kiln.add %[[C]]
// CHECK-NOT: kiln.conv_integer
func.func @conv_integer_bias(%x: tensor<1x2x5x5xf32>) -> tensor<1x4x5x5xf32> {
  %q, %s, %z = kiln.dynamic_quantize_linear %x : (tensor<1x2x5x5xf32>) -> (tensor<1x2x5x5xui8>, tensor<f32>, tensor<ui8>)
  %w = kiln.constant dense<[[[[165, 110, 116],   [169, 184, 163],   [193, 137, 132]],  [[179, 104, 119],   [119, 139, 115],   [179, 184, 138]]], [[[102, 171, 110],   [161, 117, 194],   [167, 199, 161]],  [[172, 137, 180],   [111, 115, 136],   [171, 148, 184]]], [[[194, 140, 142],   [155, 164, 147],   [160, 195, 173]],  [[131, 142, 140],   [115, 100, 179],   [142, 135, 163]]], [[[156, 193, 161],   [192, 157, 132],   [132, 198, 158]],  [[118, 183, 182],   [101, 115, 169],   [140, 134, 107]]]]> : tensor<4x2x3x3xui8>
  %wz = kiln.constant dense<150> : tensor<ui8>
  %p = kiln.conv_integer %q, %w, %z, %wz {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x2x5x5xui8>, tensor<4x2x3x3xui8>, tensor<ui8>, tensor<ui8>) -> tensor<1x4x5x5xi32>
  %b = kiln.constant dense<[[[[1000]], [[-2000]], [[30]], [[0]]]]> : tensor<1x4x1x1xi32>
  %pb = kiln.add %p, %b : (tensor<1x4x5x5xi32>, tensor<1x4x1x1xi32>) -> tensor<1x4x5x5xi32>
  %f = kiln.cast %pb {to = 1 : i64} : (tensor<1x4x5x5xi32>) -> tensor<1x4x5x5xf32>
  %ws = kiln.constant dense<0.003> : tensor<f32>
  %sc = kiln.mul %s, %ws : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %y = kiln.mul %f, %sc : (tensor<1x4x5x5xf32>, tensor<f32>) -> tensor<1x4x5x5xf32>
  return %y : tensor<1x4x5x5xf32>
}

// -----

// Static QOperator convolution (per-channel int8 weights, int32 bias): Q(Conv(DQ, DQ, DQ(bias))).
// CHECK-LABEL: func.func @qlinear_conv
// CHECK: %[[X:.*]] = kiln.dequantize_linear %arg0
// CHECK: %[[W:.*]] = kiln.dequantize_linear %{{.*}} {axis = 0 : i64} : (tensor<4x2x3x3xi8>, tensor<4xf32>, tensor<4xi8>) -> tensor<4x2x3x3xf32>
// CHECK: %[[B:.*]] = kiln.dequantize_linear %{{.*}} {axis = 0 : i64} : (tensor<4xi32>, tensor<4xf32>, none) -> tensor<4xf32>
// CHECK: %[[C:.*]] = kiln.conv %[[X]], %[[W]], %[[B]]
// CHECK: kiln.quantize_linear %[[C]]
func.func @qlinear_conv(%x: tensor<1x2x6x6xui8>) -> tensor<1x4x6x6xui8> {
  %sx = kiln.constant dense<0.02> : tensor<f32>
  %zx = kiln.constant dense<128> : tensor<ui8>
  %w = kiln.constant dense<[[[[ -79,   91,   85],   [  84,   18,  -92],   [ -45,    7,  126]],  [[ -62,   12,   -2],   [   1,   14,   52],   [-100,  123,   93]]], [[[  68,  -56,  -15],   [ -13,  -49, -113],   [  62, -127,   67]],  [[ -78,   36,  -40],   [ -67,  109,   -6],   [  99,  -79,   -5]]], [[[ -39,  -12, -124],   [  43,  -40,   91],   [ -73,  -41, -116]],  [[  75,    9,  -26],   [ 106,   24,  118],   [  61,   22,    0]]], [[[ -76,   49,   74],   [  50,  -22, -126],   [  60, -118,   77]],  [[ -89,  -49,  -73],   [  10,  -76,  -62],   [-115,  123,  -72]]]]> : tensor<4x2x3x3xi8>
  %sw = kiln.constant dense<[0.01, 0.02, 0.005, 0.015]> : tensor<4xf32>
  %zw = kiln.constant dense<0> : tensor<4xi8>
  %sy = kiln.constant dense<0.25> : tensor<f32>
  %zy = kiln.constant dense<120> : tensor<ui8>
  %b = kiln.constant dense<[500, -700, 0, 2000]> : tensor<4xi32>
  %y = kiln.qlinear_conv %x, %sx, %zx, %w, %sw, %zw, %sy, %zy, %b {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x2x6x6xui8>, tensor<f32>, tensor<ui8>, tensor<4x2x3x3xi8>, tensor<4xf32>, tensor<4xi8>, tensor<f32>, tensor<ui8>, tensor<4xi32>) -> tensor<1x4x6x6xui8>
  return %y : tensor<1x4x6x6xui8>
}

// -----

// com.microsoft elementwise ops: Q(op(DQ(a), DQ(b))); an absent zero point is 0 of the data's type.
// CHECK-LABEL: func.func @qlinear_elementwise
// CHECK: %[[A:.*]] = kiln.add
// CHECK: kiln.quantize_linear %[[A]]
// CHECK: kiln.sigmoid
// CHECK: kiln.leaky_relu {{.*}} {alpha = 2.000000e-01 : f32}
// CHECK: kiln.mul
// CHECK-NOT: kiln.qlinear
func.func @qlinear_elementwise(%a: tensor<3x8xi8>, %b: tensor<8xi8>) -> tensor<3x8xi8> {
  %sa = kiln.constant dense<0.05> : tensor<f32>
  %za = kiln.constant dense<-3> : tensor<i8>
  %sb = kiln.constant dense<0.04> : tensor<f32>
  %sc = kiln.constant dense<0.08> : tensor<f32>
  %zc = kiln.constant dense<5> : tensor<i8>
  %n = kiln.none
  %add = kiln.qlinear_add %a, %sa, %za, %b, %sb, %n, %sc, %zc : (tensor<3x8xi8>, tensor<f32>, tensor<i8>, tensor<8xi8>, tensor<f32>, none, tensor<f32>, tensor<i8>) -> tensor<3x8xi8>
  %ss = kiln.constant dense<0.00390625> : tensor<f32>
  %sig = kiln.qlinear_sigmoid %add, %sc, %zc, %ss, %n : (tensor<3x8xi8>, tensor<f32>, tensor<i8>, tensor<f32>, none) -> tensor<3x8xi8>
  %lr = kiln.qlinear_leaky_relu %add, %sc, %zc, %sc, %zc {alpha = 2.000000e-01 : f32} : (tensor<3x8xi8>, tensor<f32>, tensor<i8>, tensor<f32>, tensor<i8>) -> tensor<3x8xi8>
  %sm = kiln.constant dense<0.001> : tensor<f32>
  %y = kiln.qlinear_mul %sig, %ss, %n, %lr, %sc, %zc, %sm, %za : (tensor<3x8xi8>, tensor<f32>, none, tensor<3x8xi8>, tensor<f32>, tensor<i8>, tensor<f32>, tensor<i8>) -> tensor<3x8xi8>
  return %y : tensor<3x8xi8>
}

// -----

// Pools (NHWC ones through ReduceMean / transposes) and a concat whose second input already has
// the output's scale and zero point (joins as it is).
// CHECK-LABEL: func.func @qlinear_pools
// CHECK: kiln.reduce_mean {{.*}} {axes = array<i64: 1, 2>, keepdims = 1 : i64}
// CHECK: kiln.average_pool
// CHECK: kiln.concat
// CHECK-NOT: kiln.qlinear
func.func @qlinear_pools(%x: tensor<1x4x4x3xui8>, %y: tensor<1x1x1x3xui8>) -> tensor<1x2x1x3xui8> {
  %sx = kiln.constant dense<0.1> : tensor<f32>
  %zx = kiln.constant dense<100> : tensor<ui8>
  %sy = kiln.constant dense<0.05> : tensor<f32>
  %zy = kiln.constant dense<110> : tensor<ui8>
  %g = kiln.qlinear_global_average_pool %x, %sx, %zx, %sy, %zy {channels_last = 1 : i64} : (tensor<1x4x4x3xui8>, tensor<f32>, tensor<ui8>, tensor<f32>, tensor<ui8>) -> tensor<1x1x1x3xui8>
  %p = kiln.qlinear_average_pool %y, %sy, %zy, %sy, %zy {channels_last = 1 : i64, kernel_shape = array<i64: 1, 1>} : (tensor<1x1x1x3xui8>, tensor<f32>, tensor<ui8>, tensor<f32>, tensor<ui8>) -> tensor<1x1x1x3xui8>
  %c = kiln.qlinear_concat %sy, %zy, %g, %sx, %zx, %p, %sy, %zy {axis = 1 : i64} : (tensor<f32>, tensor<ui8>, tensor<1x1x1x3xui8>, tensor<f32>, tensor<ui8>, tensor<1x1x1x3xui8>, tensor<f32>, tensor<ui8>) -> tensor<1x2x1x3xui8>
  return %c : tensor<1x2x1x3xui8>
}

// -----

// QGemm with a float result, and DynamicQuantizeMatMul (onnxruntime's fusion of the dynamic form).
// CHECK-LABEL: func.func @qgemm_and_dynamic_matmul
// CHECK: kiln.gemm
// CHECK: kiln.matmul
// CHECK-NOT: kiln.qgemm
// CHECK-NOT: kiln.dynamic_quantize_matmul
func.func @qgemm_and_dynamic_matmul(%a: tensor<2x16xui8>, %x: tensor<4x16xf32>) -> (tensor<2x6xf32>, tensor<4x6xf32>) {
  %sa = kiln.constant dense<0.02> : tensor<f32>
  %za = kiln.constant dense<130> : tensor<ui8>
  %w = kiln.constant dense<[[ -79,   26,  -91,   98,   72,  -38,  -25,  -34,   60,  -21,  -55,   46,  -92,   73,  -19,  112], [ -61,  -32,   95,   53, -117,  -40, -123,   83,  -21,  -69,   58,   95, -101,    1,  -34,   57], [ 110,    9,   64,  -47,   20,   -1,   59, -115,  -67, -117,  122,    8,   -3,   -6, -119,   85], [  88, -122,   31,   15,  -30,   -2,   97,   25,   -3,   59,   49,    6,   84,   16,   30,   -2], [  23,   29,  102,  -64,  -35,   13,  -41,   44,   83,  -79, -113,  125,    2,   63,   66,  116], [-119,  -53,  123,  -14,  -26,  -61, -122, -116,  121, -123,  -92,  -65,  -55,   92,  -45,  -86]]> : tensor<6x16xi8>
  %sw = kiln.constant dense<[0.01, 0.02, 0.005, 0.015, 0.01, 0.03]> : tensor<6xf32>
  %zw = kiln.constant dense<0> : tensor<6xi8>
  %c = kiln.constant dense<[100, -100, 0, 7, 8, 9]> : tensor<6xi32>
  %n = kiln.none
  %g = kiln.qgemm %a, %sa, %za, %w, %sw, %zw, %c, %n, %n {alpha = 5.000000e-01 : f32, transB = 1 : i64} : (tensor<2x16xui8>, tensor<f32>, tensor<ui8>, tensor<6x16xi8>, tensor<6xf32>, tensor<6xi8>, tensor<6xi32>, none, none) -> tensor<2x6xf32>
  %wt = kiln.transpose %w {perm = array<i64: 1, 0>} : (tensor<6x16xi8>) -> tensor<16x6xi8>
  %bias = kiln.constant dense<[0.5, -0.5, 1.0, 0.0, 0.25, 2.0]> : tensor<6xf32>
  %m = kiln.dynamic_quantize_matmul %x, %wt, %sw, %zw, %bias : (tensor<4x16xf32>, tensor<16x6xi8>, tensor<6xf32>, tensor<6xi8>, tensor<6xf32>) -> tensor<4x6xf32>
  return %g, %m : tensor<2x6xf32>, tensor<4x6xf32>
}

// -----

// An integer product whose int32 sums are used as integers: Cast<i32> of the float product, exact
// in one piece here (|a| <= 128 times the weights' largest |w| = 127, 16 terms: far below 2^24).
// CHECK-LABEL: func.func @integer_use
// CHECK-NOT: kiln.slice
// CHECK: %[[P:.*]] = kiln.matmul %{{.*}}, %{{.*}} {kiln.keep_fp32} : (tensor<2x16xf32>, tensor<16x8xf32>) -> tensor<2x8xf32>
// CHECK: %[[Y:.*]] = kiln.cast %[[P]] {kiln.keep_fp32, to = 6 : i64}
// CHECK-NOT: kiln.matmul_integer
// CHECK: return %[[Y]]
func.func @integer_use(%a: tensor<2x16xi8>) -> tensor<2x8xi32> {
  %w = kiln.constant dense<[[  44,   78, -122,   79,   -8,    4,   33,  -55], [ 122, -114,  -57,  -30,   18,  -23,  -94, -116], [-127, -115,  -90,  127,  -79,   39,   64,  -68], [ -56,  -17,  -60,  121,  -82,  101,   76,   88], [ -98,  -27,   33,   -2,   42,   45,   42, -112], [ 117,   14,  103,  -58,  -35,   97,  -80, -111], [ -32,   46,  -96,   94,  -41,  -70,   11,  101], [  98,   95,  -49, -123,   71,   53,   69, -127], [-118,    1,  -42,  -16,  110,  -76,    7,  -45], [ -52,   78,  -88,  -47,  -97,  -89,  -56,   51], [  20,  -13,  -84,   76,   76,  -67, -112,  -46], [ -90,   76,    5,    2,  -53,    2,  119,  -67], [  68, -124,  -47,  110,   95, -106,   87,   88], [ -12,  -34,  122,  115,   45,  -26,  -74,  111], [ -59,   14,   45,  -66,  -47,   62,  -77,   44], [ 113,   47,   37,   -9,  119,  -71,  -37,   36]]> : tensor<16x8xi8>
  %n = kiln.none
  %p = kiln.matmul_integer %a, %w, %n, %n : (tensor<2x16xi8>, tensor<16x8xi8>, none, none) -> tensor<2x8xi32>
  return %p : tensor<2x8xi32>
}

// -----

// Both operands known only at run time, uint8 with a run-time zero point on A: each term may be
// 255 · 255, so at most 258 terms per float product: K = 600 in chunks of 258, 258 and 84, whose
// int32 results are added.
// CHECK-LABEL: func.func @integer_use_chunked
// CHECK-COUNT-3: kiln.matmul %{{.*}} : (tensor<2x{{258|84}}xf32>, tensor<{{258|84}}x4xf32>) -> tensor<2x4xf32>
// CHECK: %[[Y:.*]] = kiln.add %{{.*}} : (tensor<2x4xi32>, tensor<2x4xi32>) -> tensor<2x4xi32>
// CHECK-NOT: kiln.matmul_integer
// CHECK: return %[[Y]]
func.func @integer_use_chunked(%a: tensor<2x600xui8>, %b: tensor<600x4xui8>, %za: tensor<ui8>) -> tensor<2x4xi32> {
  %n = kiln.none
  %p = kiln.matmul_integer %a, %b, %za, %n : (tensor<2x600xui8>, tensor<600x4xui8>, tensor<ui8>, none) -> tensor<2x4xi32>
  return %p : tensor<2x4xi32>
}

// -----

// ConvInteger with padding (the padded taps are x's zero point, 0 after the subtraction) and a
// per-output-channel zero point on w; and one whose 40 input channels of 3x3 taps are cut into
// 28 + 12 (258 terms of 255 · 255 at most per float product).
// CHECK-LABEL: func.func @conv_integer_use
// CHECK-NOT: kiln.slice
// CHECK: kiln.conv %{{.*}} : (tensor<1x3x5x5xf32>, tensor<2x3x3x3xf32>, none) -> tensor<1x2x5x5xf32>
// CHECK: kiln.cast
// CHECK-LABEL: func.func @conv_integer_chunked
// CHECK-COUNT-2: kiln.conv %{{.*}} : (tensor<1x{{28|12}}x4x4xf32>, tensor<2x{{28|12}}x3x3xf32>, none) -> tensor<1x2x2x2xf32>
// CHECK-NOT: kiln.conv_integer
func.func @conv_integer_use(%x: tensor<1x3x5x5xui8>, %w: tensor<2x3x3x3xui8>) -> tensor<1x2x5x5xi32> {
  %zx = kiln.constant dense<10> : tensor<ui8>
  %zw = kiln.constant dense<[3, 200]> : tensor<2xui8>
  %y = kiln.conv_integer %x, %w, %zx, %zw {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x3x5x5xui8>, tensor<2x3x3x3xui8>, tensor<ui8>, tensor<2xui8>) -> tensor<1x2x5x5xi32>
  return %y : tensor<1x2x5x5xi32>
}
func.func @conv_integer_chunked(%x: tensor<1x40x4x4xui8>, %w: tensor<2x40x3x3xui8>) -> tensor<1x2x2x2xi32> {
  %n = kiln.none
  %y = kiln.conv_integer %x, %w, %n, %n : (tensor<1x40x4x4xui8>, tensor<2x40x3x3xui8>, none, none) -> tensor<1x2x2x2xi32>
  return %y : tensor<1x2x2x2xi32>
}

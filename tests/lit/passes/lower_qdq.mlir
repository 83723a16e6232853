// RUN: %kiln-opt %s -split-input-file -kiln-lower-qdq | FileCheck %s

// Activation per tensor (2/127), weights per column (axis 1 of [K, N]): one QuantizedMatMul
// with the combined scale sa · sw[n].
// CHECK-LABEL: func.func @matmul
// CHECK: %[[Q:.*]] = kiln.quantize_linear %arg0
// CHECK: %[[S:.*]] = kiln.constant dense<[6.20001229E-5, 4.960010e-04]> : tensor<2xf32>
// CHECK: %[[Y:.*]] = kiln.quantized_matmul %[[Q]], %{{.*}}, %[[S]] : (tensor<2x16xi8>, tensor<16x2xi8>, tensor<2xf32>) -> tensor<2x2xf32>
// CHECK: return %[[Y]]
func.func @matmul(%x: tensor<2x16xf32>) -> tensor<2x2xf32> {
  %sa = kiln.constant dense<0.0157480314> : tensor<f32>
  %zp = kiln.constant dense<0> : tensor<i8>
  %q = kiln.quantize_linear %x, %sa, %zp : (tensor<2x16xf32>, tensor<f32>, tensor<i8>) -> tensor<2x16xi8>
  %xd = kiln.dequantize_linear %q, %sa, %zp : (tensor<2x16xi8>, tensor<f32>, tensor<i8>) -> tensor<2x16xf32>
  %wq = kiln.constant dense<[[127, -127], [-64, 32], [0, 127], [5, -5], [17, 3], [-100, 99], [1, 2], [3, 4],
                             [-1, -2], [-3, -4], [60, -60], [7, 77], [-77, 7], [126, -126], [0, 0], [9, -9]]> : tensor<16x2xi8>
  %ws = kiln.constant dense<[0.00393700786, 0.0314960629]> : tensor<2xf32>
  %n = kiln.none
  %wd = kiln.dequantize_linear %wq, %ws, %n {axis = 1 : i64} : (tensor<16x2xi8>, tensor<2xf32>, none) -> tensor<16x2xf32>
  %y = kiln.matmul %xd, %wd : (tensor<2x16xf32>, tensor<16x2xf32>) -> tensor<2x2xf32>
  return %y : tensor<2x2xf32>
}

// -----

// Weights stored [N, K] and read through perm_b: their per-channel axis is 0.
// CHECK-LABEL: func.func @transposed
// CHECK: kiln.quantized_matmul {{.*}} {perm_b = array<i64: 1, 0>} : (tensor<2x16xi8>, tensor<3x16xi8>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NOT: kiln.transposed_matmul
func.func @transposed(%a: tensor<2x16xf32>) -> tensor<2x3xf32> {
  %sa = kiln.constant dense<0.00787401571> : tensor<f32>
  %zp = kiln.constant dense<0> : tensor<i8>
  %q = kiln.quantize_linear %a, %sa, %zp : (tensor<2x16xf32>, tensor<f32>, tensor<i8>) -> tensor<2x16xi8>
  %ad = kiln.dequantize_linear %q, %sa, %zp : (tensor<2x16xi8>, tensor<f32>, tensor<i8>) -> tensor<2x16xf32>
  %wq = kiln.constant dense<[[32, 64, 95, 127, -1, 2, -3, 4, -5, 6, -7, 8, -9, 10, -11, 12],
                             [-127, 64, 32, 16, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3],
                             [127, -127, 16, 0, 50, -50, 25, -25, 12, -12, 6, -6, 3, -3, 1, -1]]> : tensor<3x16xi8>
  %ws = kiln.constant dense<[0.0314960629, 0.00787401571, 0.0629921257]> : tensor<3xf32>
  %n = kiln.none
  %wd = kiln.dequantize_linear %wq, %ws, %n {axis = 0 : i64} : (tensor<3x16xi8>, tensor<3xf32>, none) -> tensor<3x16xf32>
  %y = kiln.transposed_matmul %ad, %wd {perm_b = array<i64: 1, 0>} : (tensor<2x16xf32>, tensor<3x16xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

// The int8 form, but no int8 kernel for it: K = 3 is not a multiple of 16; stays float.
// CHECK-LABEL: func.func @no_kernel
// CHECK-NOT: quantized_matmul
// CHECK: kiln.matmul
func.func @no_kernel(%x: tensor<2x3xf32>) -> tensor<2x2xf32> {
  %sa = kiln.constant dense<0.0157480314> : tensor<f32>
  %zp = kiln.constant dense<0> : tensor<i8>
  %q = kiln.quantize_linear %x, %sa, %zp : (tensor<2x3xf32>, tensor<f32>, tensor<i8>) -> tensor<2x3xi8>
  %xd = kiln.dequantize_linear %q, %sa, %zp : (tensor<2x3xi8>, tensor<f32>, tensor<i8>) -> tensor<2x3xf32>
  %wq = kiln.constant dense<[[127, -127], [-64, 32], [0, 127]]> : tensor<3x2xi8>
  %ws = kiln.constant dense<[0.00393700786, 0.0314960629]> : tensor<2xf32>
  %n = kiln.none
  %wd = kiln.dequantize_linear %wq, %ws, %n {axis = 1 : i64} : (tensor<3x2xi8>, tensor<2xf32>, none) -> tensor<3x2xf32>
  %y = kiln.matmul %xd, %wd : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
  return %y : tensor<2x2xf32>
}

// -----

// Not the int8 form: a non-zero zero point, and a weight scale along the wrong axis.
// CHECK-LABEL: func.func @untouched
// CHECK-NOT: quantized_matmul
// CHECK: return
func.func @untouched(%x: tensor<2x3xf32>) -> (tensor<2x2xf32>, tensor<2x2xf32>) {
  %sa = kiln.constant dense<0.0157480314> : tensor<f32>
  %zp = kiln.constant dense<3> : tensor<i8>
  %q = kiln.quantize_linear %x, %sa, %zp : (tensor<2x3xf32>, tensor<f32>, tensor<i8>) -> tensor<2x3xi8>
  %xd = kiln.dequantize_linear %q, %sa, %zp : (tensor<2x3xi8>, tensor<f32>, tensor<i8>) -> tensor<2x3xf32>
  %wq = kiln.constant dense<[[127, -127], [-64, 32], [0, 127]]> : tensor<3x2xi8>
  %ws = kiln.constant dense<[0.5, 0.25, 0.125]> : tensor<3xf32>
  %n = kiln.none
  %wd = kiln.dequantize_linear %wq, %ws, %n {axis = 0 : i64} : (tensor<3x2xi8>, tensor<3xf32>, none) -> tensor<3x2xf32>
  %y = kiln.matmul %xd, %wd : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
  %z0 = kiln.constant dense<0> : tensor<i8>
  %xd2 = kiln.dequantize_linear %q, %sa, %z0 : (tensor<2x3xi8>, tensor<f32>, tensor<i8>) -> tensor<2x3xf32>
  %y2 = kiln.matmul %xd2, %wd : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
  return %y, %y2 : tensor<2x2xf32>, tensor<2x2xf32>
}

// -----

// A 2-D convolution between an int8 activation and int8 weights per output channel (axis 0):
// QuantizedConv with the combined scale per output channel; the float bias stays an operand.
// CHECK-LABEL: func.func @conv
// CHECK: %[[S:.*]] = kiln.constant dense<[3.93700786E-4, 7.87401571E-4]> : tensor<2xf32>
// CHECK: kiln.quantized_conv %{{.*}}, %{{.*}}, %[[S]], %{{.*}} {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x16x3x3xi8>, tensor<2x16x3x3xi8>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
// CHECK-NOT: kiln.conv
func.func @conv(%x: tensor<1x16x3x3xf32>) -> tensor<1x2x3x3xf32> {
  %sa = kiln.constant dense<0.0393700786> : tensor<f32>
  %zp = kiln.constant dense<0> : tensor<i8>
  %q = kiln.quantize_linear %x, %sa, %zp : (tensor<1x16x3x3xf32>, tensor<f32>, tensor<i8>) -> tensor<1x16x3x3xi8>
  %xd = kiln.dequantize_linear %q, %sa, %zp : (tensor<1x16x3x3xi8>, tensor<f32>, tensor<i8>) -> tensor<1x16x3x3xf32>
  %wb = kiln.constant dense<-7> : tensor<2x16x3x3xi8>
  %ws = kiln.constant dense<[0.01, 0.02]> : tensor<2xf32>
  %n = kiln.none
  %wd = kiln.dequantize_linear %wb, %ws, %n {axis = 0 : i64} : (tensor<2x16x3x3xi8>, tensor<2xf32>, none) -> tensor<2x16x3x3xf32>
  %b = kiln.constant dense<[0.5, -0.25]> : tensor<2xf32>
  %y = kiln.conv %xd, %wd, %b {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x16x3x3xf32>, tensor<2x16x3x3xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
  return %y : tensor<1x2x3x3xf32>
}

// -----

// onnxruntime's default activations: uint8 with a zero point. The product keeps uint8 A and
// records the zero point (the kernel subtracts za · Σ_k B[k][n] per column).
// CHECK-LABEL: func.func @uint8_activation
// CHECK: kiln.quantized_matmul {{.*}} {a_zero_point = 100 : i64} : (tensor<2x16xui8>, tensor<16x2xi8>, tensor<2xf32>) -> tensor<2x2xf32>
func.func @uint8_activation(%x: tensor<2x16xf32>) -> tensor<2x2xf32> {
  %sa = kiln.constant dense<0.03125> : tensor<f32>
  %zp = kiln.constant dense<100> : tensor<ui8>
  %q = kiln.quantize_linear %x, %sa, %zp : (tensor<2x16xf32>, tensor<f32>, tensor<ui8>) -> tensor<2x16xui8>
  %xd = kiln.dequantize_linear %q, %sa, %zp : (tensor<2x16xui8>, tensor<f32>, tensor<ui8>) -> tensor<2x16xf32>
  %wq = kiln.constant dense<[[127, -127], [-64, 32], [0, 127], [5, -5], [17, 3], [-100, 99], [1, 2], [3, 4],
                             [-1, -2], [-3, -4], [60, -60], [7, 77], [-77, 7], [126, -126], [0, 0], [9, -9]]> : tensor<16x2xi8>
  %ws = kiln.constant dense<0.0078125> : tensor<f32>
  %n = kiln.none
  %wd = kiln.dequantize_linear %wq, %ws, %n : (tensor<16x2xi8>, tensor<f32>, none) -> tensor<16x2xf32>
  %y = kiln.matmul %xd, %wd : (tensor<2x16xf32>, tensor<16x2xf32>) -> tensor<2x2xf32>
  return %y : tensor<2x2xf32>
}

// -----

// float8e4m3fn on both sides (an explicit fp8 QDQ model, or precision=fp8): QuantizedMatMul of
// the fp8 data, the scales combined as for int8.
// CHECK-LABEL: func.func @fp8_matmul
// CHECK: %[[S:.*]] = kiln.constant dense<[1.250000e-01, 2.500000e-01]> : tensor<2xf32>
// CHECK: kiln.quantized_matmul %{{.*}}, %{{.*}}, %[[S]] : (tensor<2x16xf8E4M3FN>, tensor<16x2xf8E4M3FN>, tensor<2xf32>) -> tensor<2x2xf32>
func.func @fp8_matmul(%x: tensor<2x16xf32>) -> tensor<2x2xf32> {
  %sa = kiln.constant dense<0.5> : tensor<f32>
  %zp = kiln.constant dense<0.0> : tensor<f8E4M3FN>
  %q = kiln.quantize_linear %x, %sa, %zp : (tensor<2x16xf32>, tensor<f32>, tensor<f8E4M3FN>) -> tensor<2x16xf8E4M3FN>
  %xd = kiln.dequantize_linear %q, %sa, %zp : (tensor<2x16xf8E4M3FN>, tensor<f32>, tensor<f8E4M3FN>) -> tensor<2x16xf32>
  %wq = kiln.constant dense<[[448.0, -448.0], [-0.5, 3.25], [0.0, 1.0], [5.0, -5.0], [17.0, 3.0], [-96.0, 104.0], [1.0, 2.0], [3.0, 4.0],
                             [-1.0, -2.0], [-3.0, -4.0], [60.0, -60.0], [7.0, 0.125], [-0.0625, 7.0], [240.0, -256.0], [0.0, 0.0], [9.0, -9.0]]> : tensor<16x2xf8E4M3FN>
  %ws = kiln.constant dense<[0.25, 0.5]> : tensor<2xf32>
  %n = kiln.none
  %wd = kiln.dequantize_linear %wq, %ws, %n {axis = 1 : i64} : (tensor<16x2xf8E4M3FN>, tensor<2xf32>, none) -> tensor<16x2xf32>
  %y = kiln.matmul %xd, %wd : (tensor<2x16xf32>, tensor<16x2xf32>) -> tensor<2x2xf32>
  return %y : tensor<2x2xf32>
}

// -----

// An fp8 convolution becomes QuantizedConv of fp8 data; an int8 activation times fp8 weights
// has no 8-bit kernel and stays float.
// CHECK-LABEL: func.func @fp8_conv_and_mixed
// CHECK: kiln.quantized_conv {{.*}} : (tensor<1x16x3x3xf8E4M3FN>, tensor<2x16x3x3xf8E4M3FN>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
// CHECK: kiln.matmul
// CHECK-NOT: quantized_matmul
func.func @fp8_conv_and_mixed(%x: tensor<1x16x3x3xf32>, %a: tensor<2x16xf32>) -> (tensor<1x2x3x3xf32>, tensor<2x2xf32>) {
  %sa = kiln.constant dense<0.0625> : tensor<f32>
  %zp = kiln.constant dense<0.0> : tensor<f8E4M3FN>
  %q = kiln.quantize_linear %x, %sa, %zp : (tensor<1x16x3x3xf32>, tensor<f32>, tensor<f8E4M3FN>) -> tensor<1x16x3x3xf8E4M3FN>
  %xd = kiln.dequantize_linear %q, %sa, %zp : (tensor<1x16x3x3xf8E4M3FN>, tensor<f32>, tensor<f8E4M3FN>) -> tensor<1x16x3x3xf32>
  %wb = kiln.constant dense<-1.75> : tensor<2x16x3x3xf8E4M3FN>
  %ws = kiln.constant dense<[0.01, 0.02]> : tensor<2xf32>
  %n = kiln.none
  %wd = kiln.dequantize_linear %wb, %ws, %n {axis = 0 : i64} : (tensor<2x16x3x3xf8E4M3FN>, tensor<2xf32>, none) -> tensor<2x16x3x3xf32>
  %b = kiln.constant dense<[0.5, -0.25]> : tensor<2xf32>
  %y = kiln.conv %xd, %wd, %b {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x16x3x3xf32>, tensor<2x16x3x3xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
  %si = kiln.constant dense<0.0157480314> : tensor<f32>
  %zi = kiln.constant dense<0> : tensor<i8>
  %qa = kiln.quantize_linear %a, %si, %zi : (tensor<2x16xf32>, tensor<f32>, tensor<i8>) -> tensor<2x16xi8>
  %ad = kiln.dequantize_linear %qa, %si, %zi : (tensor<2x16xi8>, tensor<f32>, tensor<i8>) -> tensor<2x16xf32>
  %w8 = kiln.constant dense<3.0> : tensor<16x2xf8E4M3FN>
  %ws2 = kiln.constant dense<0.5> : tensor<f32>
  %wd2 = kiln.dequantize_linear %w8, %ws2, %n : (tensor<16x2xf8E4M3FN>, tensor<f32>, none) -> tensor<16x2xf32>
  %z = kiln.matmul %ad, %wd2 : (tensor<2x16xf32>, tensor<16x2xf32>) -> tensor<2x2xf32>
  return %y, %z : tensor<1x2x3x3xf32>, tensor<2x2xf32>
}

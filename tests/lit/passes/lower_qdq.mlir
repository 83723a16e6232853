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

// onnxruntime's static quantizer: a uint8 image with a zero point (128), padded. QuantizedConv keeps
// uint8 X and records the zero point: padding reads it, as onnxruntime's QLinearConv pads, so
// padded taps add nothing (the semantic test compares before and after on random images).
// CHECK-LABEL: func.func @conv_uint8_zero_point
// CHECK: kiln.quantized_conv {{.*}} {a_zero_point = 128 : i64, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x16x4x4xui8>, tensor<3x16x3x3xi8>, tensor<3xf32>, none) -> tensor<1x3x4x4xf32>
// CHECK-NOT: kiln.conv
func.func @conv_uint8_zero_point(%x: tensor<1x16x4x4xf32>) -> tensor<1x3x4x4xf32> {
  %sa = kiln.constant dense<0.0078125> : tensor<f32>
  %zp = kiln.constant dense<128> : tensor<ui8>
  %q = kiln.quantize_linear %x, %sa, %zp : (tensor<1x16x4x4xf32>, tensor<f32>, tensor<ui8>) -> tensor<1x16x4x4xui8>
  %xd = kiln.dequantize_linear %q, %sa, %zp : (tensor<1x16x4x4xui8>, tensor<f32>, tensor<ui8>) -> tensor<1x16x4x4xf32>
  %wt = kiln.constant dense<[[[[-45, 115, -89], [-26, 39, -115], [-109, 83, 10]], [[-103, -34, 22], [-113, 105, 2], [-73, -118, -105]], [[-16, -20, -110], [-66, -104, 14], [-19, -112, 84]], [[17, -96, 115], [-70, 34, 33], [22, 115, -112]], [[20, 22, -26], [-115, 122, -71], [-116, 15, 92]], [[-93, -53, -20], [-91, 11, -97], [19, -49, 16]], [[81, 47, -81], [-101, 21, 19], [36, -79, -32]], [[-103, 13, 55], [-111, 17, -112], [31, -75, 0]], [[47, 9, -18], [71, -47, -8], [22, 109, -11]], [[-35, -51, -64], [76, -81, 51], [72, -65, -107]], [[20, -51, 7], [-1, 97, -40], [59, -13, -54]], [[28, 123, -109], [-97, 4, -20], [-85, 66, -40]], [[-89, 111, -2], [-20, -117, 119], [44, -108, 68]], [[15, 19, 75], [97, 82, -47], [-40, 50, -38]], [[25, 0, 21], [77, -11, -110], [88, -104, 114]], [[-58, -6, 51], [43, -111, -112], [60, 52, -48]]], [[[38, 20, 127], [47, 83, -13], [-55, 56, -29]], [[100, 44, -39], [-122, 113, -9], [-37, -84, 29]], [[-98, -1, -112], [-72, 69, -54], [-94, 62, -64]], [[-26, -27, 107], [96, 0, -107], [-85, -13, -25]], [[13, -56, 99], [-92, 82, -17], [94, 13, -56]], [[53, -21, 125], [-36, 47, 99], [-30, 118, -68]], [[-89, -106, -82], [-89, -68, 41], [-68, -124, -3]], [[85, 23, -81], [-60, -55, -126], [-90, -20, 9]], [[-33, 29, 17], [-46, 116, -95], [49, 92, 4]], [[116, 31, 40], [46, 62, -114], [-11, 103, 95]], [[72, 116, 96], [47, 77, 16], [-27, -26, -25]], [[-27, -101, -4], [35, -25, -112], [-79, -110, 125]], [[-74, -15, -86], [-99, -40, 26], [-114, -101, -127]], [[18, -89, 10], [-102, 115, -34], [30, -121, -109]], [[96, -74, 30], [-31, -89, 35], [-63, 117, -39]], [[27, -34, -6], [-96, -98, 90], [-3, 127, 123]]], [[[-8, -5, -4], [-48, -106, -91], [-101, 64, -40]], [[62, -60, -5], [85, 50, -86], [5, -122, -75]], [[116, 116, 8], [-35, -90, 49], [12, 107, -121]], [[67, 8, -51], [123, 37, 94], [-104, 51, 89]], [[-61, 5, -34], [105, -85, -36], [70, -70, 9]], [[11, 72, 1], [-43, 35, -70], [29, 80, 74]], [[125, 67, 91], [-78, 79, -66], [82, -25, 62]], [[78, -69, -76], [5, -1, -36], [60, -120, 126]], [[-120, 75, -56], [-7, -61, -78], [50, 27, 117]], [[-39, -13, 79], [112, 58, 125], [-38, 117, 122]], [[-34, -107, -71], [-101, -69, -7], [-77, -41, -75]], [[-4, 32, 125], [103, 29, 88], [-127, -5, 105]], [[40, -39, 77], [37, -106, 86], [42, -97, 105]], [[-28, 73, 55], [65, -76, -5], [100, -82, -16]], [[75, 35, -42], [-105, 78, 115], [121, 57, -26]], [[-9, -25, 63], [115, -106, 58], [-87, -84, 127]]]]> : tensor<3x16x3x3xi8>
  %ws = kiln.constant dense<[0.01, 0.02, 0.005]> : tensor<3xf32>
  %n = kiln.none
  %wd = kiln.dequantize_linear %wt, %ws, %n {axis = 0 : i64} : (tensor<3x16x3x3xi8>, tensor<3xf32>, none) -> tensor<3x16x3x3xf32>
  %y = kiln.conv %xd, %wd, %n {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x16x4x4xf32>, tensor<3x16x3x3xf32>, none) -> tensor<1x3x4x4xf32>
  return %y : tensor<1x3x4x4xf32>
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

// RUN: %kiln-opt %s -split-input-file -kiln-quantize="calib=%S/Inputs/quantize_products.calib route=precision=int8" | FileCheck %s
// RUN: %kiln-opt %s -split-input-file -kiln-quantize="calib=%S/Inputs/quantize_products.calib keep-float=mm|conv route=precision=int8" | FileCheck %s --check-prefix=KEEP
// RUN: %kiln-opt %s -split-input-file -kiln-quantize="calib=%S/Inputs/quantize_products.calib route=node.tmm.precision=int8" | FileCheck %s --check-prefix=NODE
// RUN: %kiln-opt %s -split-input-file -kiln-quantize="calib=%S/Inputs/quantize_products.calib" | FileCheck %s --check-prefix=FP32
// RUN: %kiln-opt %s -split-input-file -kiln-quantize="calib=%S/Inputs/quantize_products.calib route=precision=fp8" | FileCheck %s --check-prefix=FP8

// fp8: the same Q/DQ with float8e4m3fn values, scales amax/448 (x: 2/448; W columns 0.5/448 and
// 4/448), weights rounded to nearest-even e4m3 (0.4375/s = 392 → 384; 0.375/s = 336, a tie → 320).
// FP8-LABEL: func.func @matmul
// FP8-DAG: %[[SA:.*]] = kiln.constant dense<0.00446428591> : tensor<f32>
// FP8-DAG: %[[ZP:.*]] = kiln.constant dense<0.000000e+00> : tensor<f8E4M3FN>
// FP8: %[[Q:.*]] = kiln.quantize_linear %arg0, %[[SA]], %[[ZP]] {{.*}} -> tensor<2x16xf8E4M3FN>
// FP8: %[[XD:.*]] = kiln.dequantize_linear %[[Q]], %[[SA]], %[[ZP]]
// FP8-DAG: kiln.constant dense<{{\[\[}}4.480000e+02, -4.480000e+02], [3.840000e+02, -2.240000e+02], [3.200000e+02, 0.000000e+00], {{.*}}> : tensor<16x2xf8E4M3FN>
// FP8-DAG: kiln.constant dense<[0.00111607148, 0.00892857183]> : tensor<2xf32>
// FP8: kiln.matmul %[[XD]]

// Only the products whose precision is int8 in the route: all of them (precision=int8), one
// node (node.tmm.precision=int8), or none on the default fp32 route.
// NODE-LABEL: func.func @matmul
// NODE-NOT: quantize_linear
// NODE-LABEL: func.func @conv_and_transposed
// NODE: kiln.dequantize_linear {{.*}} : (tensor<3x16xi8>
// FP32-NOT: quantize_linear

// keep-float: the products it names stay float, the others are quantized.
// KEEP-LABEL: func.func @matmul
// KEEP-NOT: quantize_linear
// KEEP-LABEL: func.func @conv_and_transposed
// KEEP-NOT: tensor<2x1x1x1xi8>
// KEEP: kiln.dequantize_linear {{.*}} : (tensor<3x16xi8>

// MatMul with a constant weight: activation Q/DQ per tensor (scale amax/127 = 2/127), weight
// int8 per output channel (axis 1 of [K, N]): column 0 max 0.5 → scale 0.5/127, column 1 max 4.
// CHECK-LABEL: func.func @matmul
// CHECK-DAG: %[[SA:.*]] = kiln.constant dense<0.0157480314> : tensor<f32>
// CHECK-DAG: %[[ZP:.*]] = kiln.constant dense<0> : tensor<i8>
// CHECK: %[[Q:.*]] = kiln.quantize_linear %arg0, %[[SA]], %[[ZP]] {{.*}} -> tensor<2x16xi8>
// CHECK: %[[XD:.*]] = kiln.dequantize_linear %[[Q]], %[[SA]], %[[ZP]] {{.*}} -> tensor<2x16xf32>
// CHECK-DAG: %[[WQ:.*]] = kiln.constant dense<{{\[\[}}127, -127], [111, -64], [95, 0], {{.*}}> : tensor<16x2xi8>
// CHECK-DAG: %[[WS:.*]] = kiln.constant dense<[0.00393700786, 0.0314960629]> : tensor<2xf32>
// CHECK: %[[WD:.*]] = kiln.dequantize_linear %[[WQ]], %[[WS]], %{{.*}} {axis = 1 : i64}
// CHECK: kiln.matmul %[[XD]], %[[WD]]
func.func @matmul(%x: tensor<2x16xf32>) -> tensor<2x2xf32> {
  %w = kiln.constant dense<[[0.5, -4.0], [0.4375, -2.0], [0.375, 0.0], [0.3125, 2.0], [0.25, 4.0], [0.1875, -4.0], [0.125, -2.0], [0.0625, 0.0], [0.0, 2.0], [-0.0625, 4.0], [-0.125, -4.0], [-0.1875, -2.0], [-0.25, 0.0], [-0.3125, 2.0], [-0.375, 4.0], [-0.4375, -4.0]]> : tensor<16x2xf32>
  %y = kiln.matmul %x, %w : (tensor<2x16xf32>, tensor<16x2xf32>) -> tensor<2x2xf32> loc("mm")
  return %y : tensor<2x2xf32>
}

// -----

// TransposedMatMul with perm_b [1, 0] stores W as [N, K], so its channel axis is 0. The
// convolution stays float: kiln has no int8 convolution kernel (nor products with K % 16 != 0).
// CHECK-LABEL: func.func @conv_and_transposed
// CHECK-NOT: tensor<2x1x1x1xi8>
// CHECK: kiln.conv
// CHECK: kiln.dequantize_linear {{.*}} {axis = 0 : i64} : (tensor<3x16xi8>
// CHECK: kiln.transposed_matmul
func.func @conv_and_transposed(%x: tensor<1x1x2x2xf32>, %a: tensor<2x16xf32>) -> (tensor<1x2x2x2xf32>, tensor<2x3xf32>) {
  %w = kiln.constant dense<[[[[0.5]]], [[[-2.0]]]]> : tensor<2x1x1x1xf32>
  %n = kiln.none
  %y = kiln.conv %x, %w, %n : (tensor<1x1x2x2xf32>, tensor<2x1x1x1xf32>, none) -> tensor<1x2x2x2xf32> loc("conv")
  %b = kiln.constant dense<[[-1.0, 0.75, 0.25, -0.25, -0.75, 1.0, 0.5, 0.0, -0.5, -1.0, 0.75, 0.25, -0.25, -0.75, 1.0, 0.5], [-0.25, -0.75, 1.0, 0.5, 0.0, -0.5, -1.0, 0.75, 0.25, -0.25, -0.75, 1.0, 0.5, 0.0, -0.5, -1.0], [0.5, 0.0, -0.5, -1.0, 0.75, 0.25, -0.25, -0.75, 1.0, 0.5, 0.0, -0.5, -1.0, 0.75, 0.25, -0.25]]> : tensor<3x16xf32>
  %z = kiln.transposed_matmul %a, %b {perm_b = array<i64: 1, 0>} : (tensor<2x16xf32>, tensor<3x16xf32>) -> tensor<2x3xf32> loc("tmm")
  return %y, %z : tensor<1x2x2x2xf32>, tensor<2x3xf32>
}

// -----

// A product of two activations (attention) and a node without a range stay float.
// CHECK-LABEL: func.func @untouched
// CHECK-NOT: quantize_linear
// CHECK: return
func.func @untouched(%a: tensor<2x3xf32>, %b: tensor<3x2xf32>) -> (tensor<2x2xf32>, tensor<2x2xf32>) {
  %y = kiln.matmul %a, %b : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32> loc("act")
  %w = kiln.constant dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]> : tensor<3x2xf32>
  %z = kiln.matmul %a, %w : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32> loc("no_range")
  return %y, %z : tensor<2x2xf32>, tensor<2x2xf32>
}

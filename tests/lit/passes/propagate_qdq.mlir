// RUN: %kiln-opt %s -split-input-file -kiln-propagate-qdq | FileCheck %s

// onnxruntime's QDQ around a MaxPool and a Reshape between two quantized tensors: the pool and
// the reshape run on the int8 data, and the Q/DQ pairs with equal parameters cancel, so the
// consumer's DequantizeLinear reads the first QuantizeLinear's int8 output through them.
// CHECK-LABEL: func.func @pool_reshape
// CHECK: %[[Q:.*]] = kiln.quantize_linear %arg0
// CHECK: %[[P:.*]] = kiln.max_pool %[[Q]] {{.*}} : (tensor<1x16x4x4xi8>) -> tensor<1x16x2x2xi8>
// CHECK: %[[R:.*]] = kiln.reshape %[[P]], %{{.*}} : (tensor<1x16x2x2xi8>, tensor<2xi64>) -> tensor<1x64xi8>
// CHECK-NOT: kiln.quantize_linear
// CHECK: %[[D:.*]] = kiln.dequantize_linear %[[R]]
// CHECK: kiln.matmul %[[D]]
func.func @pool_reshape(%x: tensor<1x16x4x4xf32>, %w: tensor<64x8xf32>) -> tensor<1x8xf32> {
  %s = kiln.constant dense<0.05> : tensor<f32>
  %zp = kiln.constant dense<0> : tensor<i8>
  %q = kiln.quantize_linear %x, %s, %zp : (tensor<1x16x4x4xf32>, tensor<f32>, tensor<i8>) -> tensor<1x16x4x4xi8>
  %d = kiln.dequantize_linear %q, %s, %zp : (tensor<1x16x4x4xi8>, tensor<f32>, tensor<i8>) -> tensor<1x16x4x4xf32>
  %p = kiln.max_pool %d {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x16x4x4xf32>) -> tensor<1x16x2x2xf32>
  %q2 = kiln.quantize_linear %p, %s, %zp : (tensor<1x16x2x2xf32>, tensor<f32>, tensor<i8>) -> tensor<1x16x2x2xi8>
  %d2 = kiln.dequantize_linear %q2, %s, %zp : (tensor<1x16x2x2xi8>, tensor<f32>, tensor<i8>) -> tensor<1x16x2x2xf32>
  %shape = kiln.constant dense<[1, 64]> : tensor<2xi64>
  %r = kiln.reshape %d2, %shape : (tensor<1x16x2x2xf32>, tensor<2xi64>) -> tensor<1x64xf32>
  %y = kiln.matmul %r, %w : (tensor<1x64xf32>, tensor<64x8xf32>) -> tensor<1x8xf32>
  return %y : tensor<1x8xf32>
}

// -----

// Concat of inputs quantized alike moves below the DequantizeLinear; with different scales it
// stays float. A Transpose of fp8 data; a negative scale is not moved across MaxPool.
// CHECK-LABEL: func.func @concat_transpose
// CHECK: %[[C:.*]] = kiln.concat {{.*}} : (tensor<2x3xi8>, tensor<2x3xi8>) -> tensor<4x3xi8>
// CHECK: kiln.dequantize_linear %[[C]]
// CHECK: kiln.concat {{.*}} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
// CHECK: %[[T:.*]] = kiln.transpose {{.*}} : (tensor<2x3xf8E4M3FN>) -> tensor<3x2xf8E4M3FN>
// CHECK: kiln.dequantize_linear %[[T]]
// CHECK: kiln.max_pool {{.*}} : (tensor<1x1x2x2xf32>) -> tensor<1x1x1x1xf32>
func.func @concat_transpose(%a: tensor<2x3xi8>, %b: tensor<2x3xi8>, %f: tensor<2x3xf8E4M3FN>, %m: tensor<1x1x2x2xi8>)
    -> (tensor<4x3xf32>, tensor<4x3xf32>, tensor<3x2xf32>, tensor<1x1x1x1xf32>) {
  %s = kiln.constant dense<0.25> : tensor<f32>
  %s2 = kiln.constant dense<0.5> : tensor<f32>
  %neg = kiln.constant dense<-0.5> : tensor<f32>
  %zp = kiln.constant dense<3> : tensor<i8>
  %n = kiln.none
  %da = kiln.dequantize_linear %a, %s, %zp : (tensor<2x3xi8>, tensor<f32>, tensor<i8>) -> tensor<2x3xf32>
  %db = kiln.dequantize_linear %b, %s, %zp : (tensor<2x3xi8>, tensor<f32>, tensor<i8>) -> tensor<2x3xf32>
  %db2 = kiln.dequantize_linear %b, %s2, %zp : (tensor<2x3xi8>, tensor<f32>, tensor<i8>) -> tensor<2x3xf32>
  %c = kiln.concat %da, %db {axis = 0 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
  %c2 = kiln.concat %da, %db2 {axis = 0 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
  %df = kiln.dequantize_linear %f, %s, %n : (tensor<2x3xf8E4M3FN>, tensor<f32>, none) -> tensor<2x3xf32>
  %t = kiln.transpose %df {perm = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %dm = kiln.dequantize_linear %m, %neg, %zp : (tensor<1x1x2x2xi8>, tensor<f32>, tensor<i8>) -> tensor<1x1x2x2xf32>
  %p = kiln.max_pool %dm {kernel_shape = array<i64: 2, 2>} : (tensor<1x1x2x2xf32>) -> tensor<1x1x1x1xf32>
  return %c, %c2, %t, %p : tensor<4x3xf32>, tensor<4x3xf32>, tensor<3x2xf32>, tensor<1x1x1x1xf32>
}

// RUN: %kiln-opt %s -kiln-half-safety="route=precision=fp16" | FileCheck %s
// RUN: %kiln-opt %s -kiln-half-safety="route=precision=fp16;precision.safety=off" | FileCheck %s --check-prefix=OFF
// RUN: %kiln-opt %s -kiln-half-safety="route=precision=bf16" | FileCheck %s --check-prefix=BF16
// RUN: %kiln-opt %s -kiln-half-safety="route=precision=fp16;node.var.precision=fp16" | FileCheck %s --check-prefix=NODE

// A LayerNorm written out: the square, its mean, + eps and the square root are marked; the
// centring and the normalising division are not (their values stay in range).
// CHECK-LABEL: func.func @layernorm
// CHECK: kiln.sub %arg0, %{{.*}} : (
// CHECK: kiln.pow {{.*}}kiln.keep_fp32 = "a sum of squares
// CHECK: kiln.reduce_mean {{.*}}kiln.keep_fp32 = "a sum of squares
// CHECK: kiln.add {{.*}}kiln.keep_fp32 = "a sum of squares
// CHECK: kiln.sqrt {{.*}}kiln.keep_fp32 = "a sum of squares
// CHECK: kiln.div %{{[0-9]+}}, %{{[0-9]+}} : (
// OFF-NOT: kiln.keep_fp32
// BF16-LABEL: func.func @layernorm
// BF16-NOT: kiln.keep_fp32
// BF16-LABEL: func.func @one_minus
// NODE: kiln.pow {{.*}}kiln.keep_fp32
// NODE: kiln.reduce_mean %{{[0-9]+}} {axes = array<i64: -1>} : (
func.func @layernorm(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %two = kiln.constant dense<2.0> : tensor<f32>
  %eps = kiln.constant dense<1.0e-05> : tensor<f32>
  %m = kiln.reduce_mean %x {axes = array<i64: -1>} : (tensor<2x8xf32>) -> tensor<2x1xf32>
  %d = kiln.sub %x, %m : (tensor<2x8xf32>, tensor<2x1xf32>) -> tensor<2x8xf32>
  %s = kiln.pow %d, %two : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %v = kiln.reduce_mean %s {axes = array<i64: -1>} : (tensor<2x8xf32>) -> tensor<2x1xf32> loc("var")
  %e = kiln.add %v, %eps : (tensor<2x1xf32>, tensor<f32>) -> tensor<2x1xf32>
  %r = kiln.sqrt %e : (tensor<2x1xf32>) -> tensor<2x1xf32>
  %y = kiln.div %d, %r : (tensor<2x8xf32>, tensor<2x1xf32>) -> tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}

// log(1 - sigmoid(z)): the sigmoid, the subtraction and the log (fp16 and bf16 alike).
// CHECK-LABEL: func.func @one_minus
// CHECK: kiln.sigmoid {{.*}}kiln.keep_fp32 = "1 - p
// CHECK: kiln.sub {{.*}}kiln.keep_fp32 = "1 - p
// CHECK: kiln.log {{.*}}kiln.keep_fp32 = "1 - p
// BF16: kiln.sigmoid {{.*}}kiln.keep_fp32 = "1 - p
func.func @one_minus(%z: tensor<4xf32>) -> tensor<4xf32> {
  %one = kiln.constant dense<1.0> : tensor<f32>
  %p = kiln.sigmoid %z : (tensor<4xf32>) -> tensor<4xf32>
  %q = kiln.sub %one, %p : (tensor<f32>, tensor<4xf32>) -> tensor<4xf32>
  %l = kiln.log %q : (tensor<4xf32>) -> tensor<4xf32>
  return %l : tensor<4xf32>
}

// x² alone (no reduction, no log after it) stays half.
// CHECK-LABEL: func.func @square_activation
// CHECK-NOT: kiln.keep_fp32
func.func @square_activation(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = kiln.mul %x, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %z = kiln.relu %y : (tensor<4xf32>) -> tensor<4xf32>
  return %z : tensor<4xf32>
}

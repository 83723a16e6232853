// RUN: %kiln-opt %s -split-input-file -kiln-mark-outputs=nodes=all | FileCheck %s
// RUN: %kiln-opt %s -split-input-file -kiln-mark-outputs='nodes=a.*' | FileCheck %s --check-prefix=REGEX
// RUN: %kiln-opt %s -split-input-file -kiln-mark-outputs | FileCheck %s --check-prefix=NONE
// RUN: not %kiln-opt %s -split-input-file -kiln-mark-outputs='nodes=(' 2>&1 | FileCheck %s --check-prefix=BAD

// Every node's float result after the graph's own outputs, in program order, named by its node;
// constants, integer results and the returned value are not marked again.
// CHECK-LABEL: func.func @chain
// CHECK-SAME: -> (tensor<4xf32> {kiln.name = "y"}, tensor<4xf32> {kiln.name = "act"}, tensor<4xf32> {kiln.name = "scaled"})
// CHECK: %[[R:.*]] = kiln.relu
// CHECK: %[[S:.*]] = kiln.mul
// CHECK: %[[Y:.*]] = kiln.neg
// CHECK: return %[[Y]], %[[R]], %[[S]]
// REGEX-LABEL: func.func @chain
// REGEX-SAME: -> (tensor<4xf32> {kiln.name = "y"}, tensor<4xf32> {kiln.name = "act"})
// NONE-LABEL: func.func @chain
// NONE-SAME: -> (tensor<4xf32> {kiln.name = "y"})
// BAD: mark '(': invalid regular expression
func.func @chain(%x: tensor<4xf32>) -> (tensor<4xf32> {kiln.name = "y"}) {
  %c = kiln.constant dense<2.0> : tensor<f32> loc("two")
  %r = kiln.relu %x : (tensor<4xf32>) -> tensor<4xf32> loc("act")
  %s = kiln.mul %r, %c : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32> loc("scaled")
  %shape = kiln.shape %s : (tensor<4xf32>) -> tensor<1xi64> loc("shape")
  %y = kiln.neg %s : (tensor<4xf32>) -> tensor<4xf32> loc("out")
  return %y : tensor<4xf32>
}

// -----

// A node imported as two ops (a Gemm's product and its bias add) is marked at the second, the
// node's own result.
// CHECK-LABEL: func.func @gemm
// CHECK-SAME: -> (tensor<2x3xf32> {kiln.name = "y"}, tensor<2x3xf32> {kiln.name = "fc"})
// CHECK: %[[P:.*]] = kiln.matmul
// CHECK: %[[B:.*]] = kiln.add %[[P]]
// CHECK: return %{{.*}}, %[[B]]
func.func @gemm(%x: tensor<2x4xf32>, %w: tensor<4x3xf32>, %b: tensor<3xf32>) -> (tensor<2x3xf32> {kiln.name = "y"}) {
  %p = kiln.matmul %x, %w : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32> loc("fc")
  %a = kiln.add %p, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32> loc("fc")
  %y = kiln.relu %a : (tensor<2x3xf32>) -> tensor<2x3xf32> loc("act")
  return %y : tensor<2x3xf32>
}

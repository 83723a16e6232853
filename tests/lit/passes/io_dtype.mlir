// RUN: %kiln-opt %s -split-input-file -kiln-precision=route=precision=fp16 -kiln-io-dtype=dtype=fp16 | FileCheck %s
// RUN: %kiln-opt %s -split-input-file -kiln-io-dtype=dtype=fp16 | FileCheck %s --check-prefix=FP32
// RUN: %kiln-opt %s -split-input-file -kiln-precision=route=precision=bf16 -kiln-io-dtype=dtype=bf16 | FileCheck %s --check-prefix=BF16
// RUN: %kiln-opt %s -split-input-file -kiln-precision="route=precision=fp16;node.fc2.precision=fp32" -kiln-io-dtype=dtype=fp16 | FileCheck %s --check-prefix=ISLAND
// RUN: %kiln-opt %s -split-input-file -kiln-precision=route=precision=fp16 -kiln-io-dtype | FileCheck %s --check-prefix=DECLARED
// RUN: not %kiln-opt %s -split-input-file -kiln-io-dtype=dtype=fp8 2>&1 | FileCheck %s --check-prefix=BAD

// An fp16 graph: the entry and exit casts cancel, the function takes and returns f16.
// CHECK-LABEL: func.func @mlp(%arg0: tensor<2x3xf16>, %arg1: tensor<2xi64>) -> (tensor<2x2xf16>, tensor<2xi64>)
// CHECK-NOT: kiln.cast
// CHECK: %[[H:.*]] = kiln.matmul %arg0, %{{.*}} : (tensor<2x3xf16>, tensor<3x4xf16>) -> tensor<2x4xf16>
// CHECK: %[[Y:.*]] = kiln.matmul {{.*}} : (tensor<2x4xf16>, tensor<4x2xf16>) -> tensor<2x2xf16>
// CHECK-NOT: kiln.cast
// CHECK: return %[[Y]], %arg1 : tensor<2x2xf16>, tensor<2xi64>
// An fp32 graph with fp16 I/O: cast up on entry, down on exit.
// FP32-LABEL: func.func @mlp(%arg0: tensor<2x3xf16>, %arg1: tensor<2xi64>) -> (tensor<2x2xf16>, tensor<2xi64>)
// FP32: %[[U:.*]] = kiln.cast %arg0 {to = 1 : i64} : (tensor<2x3xf16>) -> tensor<2x3xf32>
// FP32: kiln.matmul %[[U]], %{{.*}} : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
// FP32: %[[Y:.*]] = kiln.matmul {{.*}} -> tensor<2x2xf32>
// FP32: %[[D:.*]] = kiln.cast %[[Y]] {to = 10 : i64} : (tensor<2x2xf32>) -> tensor<2x2xf16>
// FP32: return %[[D]], %arg1
// BF16-LABEL: func.func @mlp(%arg0: tensor<2x3xbf16>, %arg1: tensor<2xi64>) -> (tensor<2x2xbf16>, tensor<2xi64>)
// BF16-NOT: kiln.cast
// The last product runs in fp32: its result is cast down once, at the exit.
// ISLAND-LABEL: func.func @mlp(%arg0: tensor<2x3xf16>, %arg1: tensor<2xi64>) -> (tensor<2x2xf16>, tensor<2xi64>)
// ISLAND: %[[F:.*]] = kiln.matmul %{{.*}}, %{{.*}} : (tensor<2x4xf32>, tensor<4x2xf32>) -> tensor<2x2xf32>
// ISLAND: %[[D:.*]] = kiln.cast %[[F]] {to = 10 : i64} : (tensor<2x2xf32>) -> tensor<2x2xf16>
// ISLAND: return %[[D]], %arg1
// DECLARED-LABEL: func.func @mlp(%arg0: tensor<2x3xf32>, %arg1: tensor<2xi64>) -> (tensor<2x2xf32>, tensor<2xi64>)
// BAD: dtype 'fp8' is not fp16, bf16 or fp32
func.func @mlp(%x: tensor<2x3xf32>, %ids: tensor<2xi64>) -> (tensor<2x2xf32>, tensor<2xi64>) {
  %w1 = kiln.constant dense<[[0.5, -1.0, 2.0, 0.25], [1.5, 0.5, -0.5, 1.0], [-2.0, 1.0, 0.75, 0.5]]> : tensor<3x4xf32>
  %w2 = kiln.constant dense<[[1.0, -1.0], [0.5, 0.25], [-0.75, 2.0], [1.25, 0.5]]> : tensor<4x2xf32>
  %h = kiln.matmul %x, %w1 {} : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32> loc("fc1")
  %y = kiln.matmul %h, %w2 : (tensor<2x4xf32>, tensor<4x2xf32>) -> tensor<2x2xf32> loc("fc2")
  return %y, %ids : tensor<2x2xf32>, tensor<2xi64>
}

// -----

// An input that an fp32 island reads directly (kiln-precision keeps graph inputs as given for
// islands) and that is also returned as it is: one cast up for the island, none for the return.
// ISLAND-LABEL: func.func @passthrough(%arg0: tensor<4xf16>) -> (tensor<4xf16>, tensor<4xf16>)
// ISLAND: %[[U:.*]] = kiln.cast %arg0 {to = 1 : i64} : (tensor<4xf16>) -> tensor<4xf32>
// ISLAND: kiln.matmul %[[U]]
// ISLAND: return %arg0, %{{.*}}
func.func @passthrough(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %w = kiln.constant dense<[[1.0, 2.0, 3.0, 4.0], [0.5, 0.5, 0.5, 0.5], [1.0, 0.0, -1.0, 0.0], [2.0, 1.0, 0.0, -1.0]]> : tensor<4x4xf32>
  %y = kiln.matmul %x, %w : (tensor<4xf32>, tensor<4x4xf32>) -> tensor<4xf32> loc("fc2")
  return %x, %y : tensor<4xf32>, tensor<4xf32>
}

// RUN: %kiln-opt %s -split-input-file -kiln-precision=route=precision=fp16 | FileCheck %s
// RUN: %kiln-opt %s -split-input-file -kiln-precision=route=precision=bf16 | FileCheck %s --check-prefix=BF16
// RUN: %kiln-opt %s -split-input-file -kiln-precision | FileCheck %s --check-prefix=FP32
// RUN: %kiln-opt %s -split-input-file -kiln-precision="route=precision=fp16;node.fc2.precision=fp32" | FileCheck %s --check-prefix=ISLAND
// RUN: %kiln-opt %s -split-input-file -kiln-precision="route=precision=fp16;node.fc1.precision=fp32;node.fc2.precision=fp32" | FileCheck %s --check-prefix=MOVES
// (An fp32 node's result that the function returns stays fp32: the return reads fp32.)

// A small MLP: inputs cast on entry, weights converted, output cast back to f32.
// CHECK-LABEL: func.func @mlp
// CHECK: %[[X:.*]] = kiln.cast %arg0 {to = 10 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf16>
// CHECK: kiln.matmul %[[X]], %{{.*}} : (tensor<2x3xf16>, tensor<3x4xf16>) -> tensor<2x4xf16>
// CHECK: kiln.add {{.*}} : (tensor<2x4xf16>, tensor<4xf16>) -> tensor<2x4xf16>
// CHECK: kiln.relu {{.*}} : (tensor<2x4xf16>) -> tensor<2x4xf16>
// CHECK: %[[Y:.*]] = kiln.matmul {{.*}} : (tensor<2x4xf16>, tensor<4x2xf16>) -> tensor<2x2xf16>
// CHECK: %[[O:.*]] = kiln.cast %[[Y]] {to = 1 : i64} : (tensor<2x2xf16>) -> tensor<2x2xf32>
// CHECK: return %[[O]]
// BF16-LABEL: func.func @mlp
// BF16: kiln.matmul {{.*}} : (tensor<2x3xbf16>, tensor<3x4xbf16>) -> tensor<2x4xbf16>
// FP32-LABEL: func.func @mlp
// FP32-NOT: kiln.cast
// ISLAND-LABEL: func.func @mlp
// ISLAND: kiln.relu {{.*}} : (tensor<2x4xf16>) -> tensor<2x4xf16>
// ISLAND: %[[U:.*]] = kiln.cast %{{.*}} {to = 1 : i64} : (tensor<2x4xf16>) -> tensor<2x4xf32>
// ISLAND: %[[F:.*]] = kiln.matmul %[[U]], %{{.*}} : (tensor<2x4xf32>, tensor<4x2xf32>) -> tensor<2x2xf32>
// ISLAND: return %[[F]]
func.func @mlp(%x: tensor<2x3xf32>) -> tensor<2x2xf32> {
  %w1 = kiln.constant dense<[[0.5, -1.0, 2.0, 0.25], [1.5, 0.5, -0.5, 1.0], [-2.0, 1.0, 0.75, 0.5]]> : tensor<3x4xf32>
  %b1 = kiln.constant dense<[0.1, 0.2, -0.3, 0.4]> : tensor<4xf32>
  %w2 = kiln.constant dense<[[1.0, -1.0], [0.5, 0.25], [-0.75, 2.0], [1.25, 0.5]]> : tensor<4x2xf32>
  %h = kiln.matmul %x, %w1 {} : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32> loc("fc1")
  %hb = kiln.add %h, %b1 : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %r = kiln.relu %hb : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %y = kiln.matmul %r, %w2 : (tensor<2x4xf32>, tensor<4x2xf32>) -> tensor<2x2xf32> loc("fc2")
  return %y : tensor<2x2xf32>
}

// -----

// Cast(to=float) is retargeted; finfo.min saturates to fp16's lowest finite value instead of
// becoming -inf (a mask of 0 · -inf would be NaN); int64 inputs stay int64.
// CHECK-LABEL: func.func @mask
// CHECK: kiln.constant dense<-6.550400e+04> : tensor<f16>
// CHECK: %[[M:.*]] = kiln.cast %arg1 {to = 10 : i64} : (tensor<2x5xi64>) -> tensor<2x5xf16>
// CHECK: kiln.sub {{.*}} : (tensor<f16>, tensor<2x5xf16>) -> tensor<2x5xf16>
// BF16-LABEL: func.func @mask
// FP32-LABEL: func.func @mask
// BF16: kiln.constant dense<-3.389530e+38> : tensor<bf16>
func.func @mask(%x: tensor<2x5xf32>, %m: tensor<2x5xi64>) -> tensor<2x5xf32> {
  %one = kiln.constant dense<1.0> : tensor<f32>
  %min = kiln.constant dense<-3.40282347e+38> : tensor<f32>
  %mf = kiln.cast %m {to = 1 : i64} : (tensor<2x5xi64>) -> tensor<2x5xf32>
  %inv = kiln.sub %one, %mf : (tensor<f32>, tensor<2x5xf32>) -> tensor<2x5xf32>
  %add = kiln.mul %inv, %min : (tensor<2x5xf32>, tensor<f32>) -> tensor<2x5xf32>
  %y = kiln.add %x, %add : (tensor<2x5xf32>, tensor<2x5xf32>) -> tensor<2x5xf32>
  %s = kiln.softmax %y {axis = -1 : i64} : (tensor<2x5xf32>) -> tensor<2x5xf32>
  return %s : tensor<2x5xf32>
}

// -----

// A float32 island that reads a graph input reads it as given, not rounded through fp16 and cast
// back (onnxruntime's dynamic quantization of an input, kept in fp32, saw fp16 steps before); an
// input that only islands read keeps no fp16 cast.
// ISLAND-LABEL: func.func @input_island
// ISLAND: %[[H:.*]] = kiln.cast %arg0 {to = 10 : i64} : (tensor<2x4xf32>) -> tensor<2x4xf16>
// ISLAND: kiln.relu %[[H]]
// ISLAND: kiln.matmul %arg0, %{{.*}} : (tensor<2x4xf32>, tensor<4x2xf32>) -> tensor<2x2xf32>
// ISLAND-LABEL: func.func @only_island
// ISLAND-NOT: kiln.cast %arg0
// ISLAND: kiln.matmul %arg0, %{{.*}} : (tensor<2x4xf32>, tensor<4x2xf32>) -> tensor<2x2xf32>
func.func @input_island(%x: tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x2xf32>) {
  %w2 = kiln.constant dense<[[1.0, -1.0], [0.5, 0.25], [-0.75, 2.0], [1.25, 0.5]]> : tensor<4x2xf32>
  %r = kiln.relu %x : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %y = kiln.matmul %x, %w2 : (tensor<2x4xf32>, tensor<4x2xf32>) -> tensor<2x2xf32> loc("fc2")
  return %r, %y : tensor<2x4xf32>, tensor<2x2xf32>
}
func.func @only_island(%x: tensor<2x4xf32>) -> tensor<2x2xf32> {
  %w2 = kiln.constant dense<[[1.0, -1.0], [0.5, 0.25], [-0.75, 2.0], [1.25, 0.5]]> : tensor<4x2xf32>
  %y = kiln.matmul %x, %w2 : (tensor<2x4xf32>, tensor<4x2xf32>) -> tensor<2x2xf32> loc("fc2")
  return %y : tensor<2x2xf32>
}

// -----

// Ops that only move elements (Identity, Reshape, ...) between two float32 nodes stay float32:
// no rounding to half between fc1 and fc2 (Paddle2ONNX writes an Identity after most nodes). One
// that a half node reads (the relu) is half as before.
// MOVES-LABEL: func.func @moves_between_islands
// MOVES: %[[A:.*]] = kiln.matmul %arg0, %{{.*}} : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
// MOVES: %[[H:.*]] = kiln.cast %[[A]] {to = 10 : i64} : (tensor<2x4xf32>) -> tensor<2x4xf16>
// MOVES: %[[I:.*]] = kiln.identity %[[A]] : (tensor<2x4xf32>) -> tensor<2x4xf32>
// MOVES: %[[R:.*]] = kiln.reshape %[[I]], %{{.*}} : (tensor<2x4xf32>, tensor<2xi64>) -> tensor<2x4xf32>
// MOVES: kiln.matmul %[[R]], %{{.*}} : (tensor<2x4xf32>, tensor<4x2xf32>) -> tensor<2x2xf32>
// MOVES: %[[J:.*]] = kiln.identity %[[H]] : (tensor<2x4xf16>) -> tensor<2x4xf16>
// MOVES: kiln.relu %[[J]]
// MOVES-LABEL: func.func @half_move_into_island
// MOVES: %[[T:.*]] = kiln.transpose %{{.*}} {perm = array<i64: 1, 0>} : (tensor<2x4xf16>) -> tensor<4x2xf16>
// MOVES: %[[U:.*]] = kiln.cast %[[T]] {to = 1 : i64} : (tensor<4x2xf16>) -> tensor<4x2xf32>
// MOVES: kiln.matmul %[[U]]
func.func @moves_between_islands(%x: tensor<2x4xf32>) -> (tensor<2x2xf32>, tensor<2x4xf32>) {
  %w1 = kiln.constant dense<0.5> : tensor<4x4xf32>
  %w2 = kiln.constant dense<0.25> : tensor<4x2xf32>
  %s = kiln.constant dense<[2, 4]> : tensor<2xi64>
  %a = kiln.matmul %x, %w1 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32> loc("fc1")
  %i = kiln.identity %a : (tensor<2x4xf32>) -> tensor<2x4xf32> loc("id1")
  %r = kiln.reshape %i, %s : (tensor<2x4xf32>, tensor<2xi64>) -> tensor<2x4xf32> loc("rs")
  %y = kiln.matmul %r, %w2 : (tensor<2x4xf32>, tensor<4x2xf32>) -> tensor<2x2xf32> loc("fc2")
  %j = kiln.identity %a : (tensor<2x4xf32>) -> tensor<2x4xf32> loc("id2")
  %z = kiln.relu %j : (tensor<2x4xf32>) -> tensor<2x4xf32> loc("act")
  return %y, %z : tensor<2x2xf32>, tensor<2x4xf32>
}

// A half value moved into a float32 node is moved in half, then cast (not cast, then moved).
func.func @half_move_into_island(%x: tensor<2x4xf32>) -> tensor<4x4xf32> {
  %w = kiln.constant dense<0.5> : tensor<2x4xf32>
  %r = kiln.relu %x : (tensor<2x4xf32>) -> tensor<2x4xf32> loc("act")
  %t = kiln.transpose %r {perm = array<i64: 1, 0>} : (tensor<2x4xf32>) -> tensor<4x2xf32> loc("tr")
  %y = kiln.matmul %t, %w : (tensor<4x2xf32>, tensor<2x4xf32>) -> tensor<4x4xf32> loc("fc1")
  return %y : tensor<4x4xf32>
}

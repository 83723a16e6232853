// RUN: %kiln-opt %s -split-input-file -kiln-fuse-elementwise -kiln-fuse-epilogue | FileCheck %s
// RUN: %kiln-opt %s -split-input-file -kiln-fuse-epilogue="route=fusion.epilogue=off;fusion.prologue=off" -kiln-fuse-elementwise="route=fusion.elementwise=off" | FileCheck %s --check-prefix=OFF
// RUN: %kiln-opt %s -split-input-file -kiln-fuse-epilogue="route=fusion.epilogue=off;fusion.prologue=off" -kiln-fuse-elementwise | FileCheck %s --check-prefix=EWONLY
// RUN: %kiln-opt %s -split-input-file -kiln-fuse-elementwise -kiln-fuse-epilogue="route=fusion.prologue=on" | FileCheck %s --check-prefix=PRO

// Linear layer: bias add, GELU (erf form) and a residual add run in the product's store.
// CHECK-LABEL: func.func @linear_gelu_residual
// CHECK: %[[F:.*]] = kiln.fused epilogue(%arg0, %{{.*}}, %{{.*}}, %arg1)
// CHECK-NEXT: ^bb0(
// CHECK-NEXT: %[[P:.*]] = kiln.transposed_matmul
// CHECK-NEXT: kiln.add %[[P]]
// CHECK-NEXT: kiln.gelu
// CHECK-NEXT: kiln.add
// CHECK-NEXT: kiln.yield
// CHECK: return %[[F]]
// OFF-LABEL: func.func @linear_gelu_residual
// OFF-NOT: kiln.fused
// EWONLY-LABEL: func.func @linear_gelu_residual
// EWONLY: kiln.transposed_matmul
// EWONLY: kiln.fused elementwise
func.func @linear_gelu_residual(%x: tensor<4x6xf32>, %res: tensor<4x5xf32>) -> tensor<4x5xf32> {
  %w = kiln.constant dense<0.125> : tensor<5x6xf32>
  %b = kiln.constant dense<[0.5, -0.5, 1.0, -1.0, 0.0]> : tensor<5xf32>
  %p = kiln.transposed_matmul %x, %w {perm_b = array<i64: 1, 0>} : (tensor<4x6xf32>, tensor<5x6xf32>) -> tensor<4x5xf32>
  %a = kiln.add %p, %b : (tensor<4x5xf32>, tensor<5xf32>) -> tensor<4x5xf32>
  %g = kiln.gelu %a : (tensor<4x5xf32>) -> tensor<4x5xf32>
  %y = kiln.add %g, %res : (tensor<4x5xf32>, tensor<4x5xf32>) -> tensor<4x5xf32>
  return %y : tensor<4x5xf32>
}

// -----

// A conv whose result is used twice keeps its own store; a chain stops at a broadcast that
// would change the stored shape.
// CHECK-LABEL: func.func @conv_two_uses
// CHECK: %[[C:.*]] = kiln.conv
// CHECK-NOT: kiln.fused epilogue
// CHECK: return
func.func @conv_two_uses(%x: tensor<1x2x4x4xf32>) -> (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) {
  %w = kiln.constant dense<0.5> : tensor<2x2x1x1xf32>
  %none = kiln.none
  %c = kiln.conv %x, %w, %none : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>, none) -> tensor<1x2x4x4xf32>
  %r = kiln.relu %c : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  return %c, %r : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>
}

// -----

// GELU written out (tanh form, as GPT-2 exports it): one elementwise region; x feeds it twice;
// the scalar constants are copied into the region.
// CHECK-LABEL: func.func @gelu_tanh
// CHECK: %[[F:.*]] = kiln.fused elementwise(%arg0) : (tensor<3x7xf32>) -> tensor<3x7xf32>
// CHECK: kiln.constant dense<3.000000e+00>
// CHECK-NEXT: kiln.pow %arg1
// CHECK: kiln.tanh
// CHECK: kiln.mul %arg1
// CHECK-NEXT: %[[Y:.*]] = kiln.mul
// CHECK-NEXT: kiln.yield %[[Y]]
// CHECK: return %[[F]]
// OFF-LABEL: func.func @gelu_tanh
// OFF-NOT: kiln.fused
func.func @gelu_tanh(%x: tensor<3x7xf32>) -> tensor<3x7xf32> {
  %half = kiln.constant dense<0.5> : tensor<f32>
  %three = kiln.constant dense<3.0> : tensor<f32>
  %k = kiln.constant dense<0.044715> : tensor<f32>
  %s = kiln.constant dense<0.797884583> : tensor<f32>
  %one = kiln.constant dense<1.0> : tensor<f32>
  %x3 = kiln.pow %x, %three : (tensor<3x7xf32>, tensor<f32>) -> tensor<3x7xf32>
  %kx3 = kiln.mul %x3, %k : (tensor<3x7xf32>, tensor<f32>) -> tensor<3x7xf32>
  %in = kiln.add %x, %kx3 : (tensor<3x7xf32>, tensor<3x7xf32>) -> tensor<3x7xf32>
  %sc = kiln.mul %in, %s : (tensor<3x7xf32>, tensor<f32>) -> tensor<3x7xf32>
  %t = kiln.tanh %sc : (tensor<3x7xf32>) -> tensor<3x7xf32>
  %t1 = kiln.add %t, %one : (tensor<3x7xf32>, tensor<f32>) -> tensor<3x7xf32>
  %hx = kiln.mul %x, %half : (tensor<3x7xf32>, tensor<f32>) -> tensor<3x7xf32>
  %y = kiln.mul %hx, %t1 : (tensor<3x7xf32>, tensor<3x7xf32>) -> tensor<3x7xf32>
  return %y : tensor<3x7xf32>
}

// -----

// A value used outside the region ends it: the Exp result is returned, so Exp and the
// Add after it are separate kernels, while Add → Abs fuse.
// CHECK-LABEL: func.func @escape
// CHECK: %[[E:.*]] = kiln.exp %arg0
// CHECK: %[[F:.*]] = kiln.fused elementwise(%[[E]], %arg1)
// CHECK: return %[[E]], %[[F]]
func.func @escape(%x: tensor<8xf32>, %y: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %e = kiln.exp %x : (tensor<8xf32>) -> tensor<8xf32>
  %a = kiln.add %e, %y : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %s = kiln.abs %a : (tensor<8xf32>) -> tensor<8xf32>
  return %e, %s : tensor<8xf32>, tensor<8xf32>
}

// -----

// After elementwise fusion, an epilogue takes a whole region: GELU (erf form) reads the
// product's biased result twice, so no single-use chain reaches it.
// CHECK-LABEL: func.func @linear_gelu_erf
// CHECK: %[[F:.*]] = kiln.fused epilogue
// CHECK: kiln.matmul
// CHECK: kiln.erf
// CHECK: kiln.yield
// CHECK-NOT: kiln.fused
// CHECK: return %[[F]]
func.func @linear_gelu_erf(%x: tensor<4x6xf32>) -> tensor<4x5xf32> {
  %w = kiln.constant dense<0.125> : tensor<6x5xf32>
  %b = kiln.constant dense<[0.5, -0.5, 1.0, -1.0, 0.0]> : tensor<5xf32>
  %sqrt2 = kiln.constant dense<1.41421354> : tensor<f32>
  %one = kiln.constant dense<1.0> : tensor<f32>
  %half = kiln.constant dense<0.5> : tensor<f32>
  %p = kiln.matmul %x, %w : (tensor<4x6xf32>, tensor<6x5xf32>) -> tensor<4x5xf32>
  %a = kiln.add %p, %b : (tensor<4x5xf32>, tensor<5xf32>) -> tensor<4x5xf32>
  %d = kiln.div %a, %sqrt2 : (tensor<4x5xf32>, tensor<f32>) -> tensor<4x5xf32>
  %e = kiln.erf %d : (tensor<4x5xf32>) -> tensor<4x5xf32>
  %e1 = kiln.add %e, %one : (tensor<4x5xf32>, tensor<f32>) -> tensor<4x5xf32>
  %m = kiln.mul %a, %e1 : (tensor<4x5xf32>, tensor<4x5xf32>) -> tensor<4x5xf32>
  %y = kiln.mul %m, %half : (tensor<4x5xf32>, tensor<f32>) -> tensor<4x5xf32>
  return %y : tensor<4x5xf32>
}

// -----

// An int8 product's epilogue may end in QuantizeLinear (the next int8 product's input): the
// region stores int8.
// CHECK-LABEL: func.func @int8_chain
// CHECK: kiln.fused epilogue
// CHECK-NEXT: ^bb0(
// CHECK-NEXT: kiln.quantized_matmul
// CHECK: kiln.gelu
// CHECK: kiln.quantize_linear
// CHECK-NEXT: kiln.yield {{.*}} : tensor<4x32xi8>
func.func @int8_chain(%x: tensor<4x16xi8>) -> tensor<4x32xi8> {
  %w = kiln.constant dense<3> : tensor<16x32xi8>
  %s = kiln.constant dense<0.01> : tensor<32xf32>
  %b = kiln.constant dense<0.5> : tensor<32xf32>
  %p = kiln.quantized_matmul %x, %w, %s : (tensor<4x16xi8>, tensor<16x32xi8>, tensor<32xf32>) -> tensor<4x32xf32>
  %a = kiln.add %p, %b : (tensor<4x32xf32>, tensor<32xf32>) -> tensor<4x32xf32>
  %g = kiln.gelu %a : (tensor<4x32xf32>) -> tensor<4x32xf32>
  %sa = kiln.constant dense<0.05> : tensor<f32>
  %zp = kiln.constant dense<0> : tensor<i8>
  %q = kiln.quantize_linear %g, %sa, %zp : (tensor<4x32xf32>, tensor<f32>, tensor<i8>) -> tensor<4x32xi8>
  return %q : tensor<4x32xi8>
}

// -----

// QDQ residual join of two products (onnxruntime's downsample blocks): the region requantizing
// both results and adding them goes to the first product's epilogue; the second keeps its own
// QuantizeLinear and stores int8 for it, instead of its raw fp32 sums.
// CHECK-LABEL: func.func @two_products_requantized
// CHECK: %[[B:.*]] = kiln.fused epilogue
// CHECK-NEXT: ^bb0(
// CHECK-NEXT: kiln.matmul
// CHECK-NOT: kiln.add
// CHECK: kiln.quantize_linear
// CHECK-NEXT: kiln.yield {{.*}} : tensor<4x8xi8>
// CHECK: kiln.fused epilogue({{.*}}%[[B]]) : ({{.*}}tensor<4x8xi8>) -> tensor<4x8xi8>
// CHECK-NEXT: ^bb0(
// CHECK-NEXT: kiln.matmul
// CHECK: kiln.add
// CHECK: kiln.yield {{.*}} : tensor<4x8xi8>
func.func @two_products_requantized(%x: tensor<4x16xf32>, %y: tensor<4x16xf32>) -> tensor<4x8xi8> {
  %w1 = kiln.constant dense<0.25> : tensor<16x8xf32>
  %w2 = kiln.constant dense<-0.5> : tensor<16x8xf32>
  %s = kiln.constant dense<0.125> : tensor<f32>
  %zp = kiln.constant dense<0> : tensor<i8>
  %a = kiln.matmul %x, %w1 : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  %b = kiln.matmul %y, %w2 : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  %qa = kiln.quantize_linear %a, %s, %zp : (tensor<4x8xf32>, tensor<f32>, tensor<i8>) -> tensor<4x8xi8>
  %qb = kiln.quantize_linear %b, %s, %zp : (tensor<4x8xf32>, tensor<f32>, tensor<i8>) -> tensor<4x8xi8>
  %da = kiln.dequantize_linear %qa, %s, %zp : (tensor<4x8xi8>, tensor<f32>, tensor<i8>) -> tensor<4x8xf32>
  %db = kiln.dequantize_linear %qb, %s, %zp : (tensor<4x8xi8>, tensor<f32>, tensor<i8>) -> tensor<4x8xf32>
  %sum = kiln.add %da, %db : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %q = kiln.quantize_linear %sum, %s, %zp : (tensor<4x8xf32>, tensor<f32>, tensor<i8>) -> tensor<4x8xi8>
  return %q : tensor<4x8xi8>
}

// -----

// Ops the kernel table takes once rewritten: CastLike is a Cast to its second operand's type,
// a per-axis DequantizeLinear reads its scale as a [C, 1, 1] view; both join one region with
// integer arithmetic (uint8 adds wrap on store).
// CHECK-LABEL: func.func @castlike_per_axis_dq_uint8
// CHECK: kiln.fused elementwise
// CHECK-NEXT: ^bb0(
// CHECK-NEXT: kiln.dequantize_linear
// CHECK-NEXT: kiln.cast_like
// CHECK-NEXT: kiln.yield
// CHECK: kiln.fused elementwise
// CHECK-NEXT: ^bb0(
// CHECK-NEXT: kiln.add
// CHECK-NEXT: kiln.mul
// CHECK-NEXT: kiln.yield
func.func @castlike_per_axis_dq_uint8(%q: tensor<2x3x4x4xi8>, %like: tensor<1xf16>, %a: tensor<5xui8>, %b: tensor<5xui8>) -> (tensor<2x3x4x4xf16>, tensor<5xui8>) {
  %s = kiln.constant dense<[0.5, 0.25, 0.125]> : tensor<3xf32>
  %zp = kiln.constant dense<[0, 1, -1]> : tensor<3xi8>
  %d = kiln.dequantize_linear %q, %s, %zp {axis = 1 : i64} : (tensor<2x3x4x4xi8>, tensor<3xf32>, tensor<3xi8>) -> tensor<2x3x4x4xf32>
  %h = kiln.cast_like %d, %like : (tensor<2x3x4x4xf32>, tensor<1xf16>) -> tensor<2x3x4x4xf16>
  %s8 = kiln.add %a, %b : (tensor<5xui8>, tensor<5xui8>) -> tensor<5xui8>
  %m8 = kiln.mul %s8, %b : (tensor<5xui8>, tensor<5xui8>) -> tensor<5xui8>
  return %h, %m8 : tensor<2x3x4x4xf16>, tensor<5xui8>
}

// -----

// A prologue: A computed from one tensor of its shape and one-element values (a dynamic
// quantization: x / s rounded, times s), used by the product only, joins the region before it.
// PRO-LABEL: func.func @prologue_fake_quant
// PRO: %[[F:.*]] = kiln.fused epilogue(%arg1, %arg0, %{{.*}})
// PRO-NEXT: ^bb0(
// PRO-NEXT: kiln.cast
// PRO-NEXT: kiln.div
// PRO-NEXT: kiln.round
// PRO-NEXT: kiln.mul
// PRO-NEXT: %[[P:.*]] = kiln.matmul
// PRO-NEXT: kiln.relu %[[P]]
// PRO-NEXT: kiln.yield
// PRO: return %[[F]]
// CHECK-LABEL: func.func @prologue_fake_quant
// CHECK: kiln.fused elementwise
// CHECK: kiln.fused epilogue
// CHECK-NEXT: ^bb0(
// CHECK-NEXT: kiln.matmul
func.func @prologue_fake_quant(%x: tensor<8x16xf16>, %s: tensor<f32>) -> tensor<8x4xf16> {
  %w = kiln.constant dense<0.125> : tensor<16x4xf16>
  %sh = kiln.cast %s {to = 10 : i64} : (tensor<f32>) -> tensor<f16>
  %d = kiln.div %x, %sh : (tensor<8x16xf16>, tensor<f16>) -> tensor<8x16xf16>
  %r = kiln.round %d : (tensor<8x16xf16>) -> tensor<8x16xf16>
  %q = kiln.mul %r, %sh : (tensor<8x16xf16>, tensor<f16>) -> tensor<8x16xf16>
  %p = kiln.matmul %q, %w : (tensor<8x16xf16>, tensor<16x4xf16>) -> tensor<8x4xf16>
  %y = kiln.relu %p : (tensor<8x4xf16>) -> tensor<8x4xf16>
  return %y : tensor<8x4xf16>
}

// -----

// A float32 tensor read into a half product by its prologue (the input's cast: one kernel less);
// an A that two products read as their A is computed again in each product's load.
// PRO-LABEL: func.func @prologue_f32_input_shared
// PRO: kiln.fused epilogue(%arg0, %{{.*}})
// PRO-NEXT: ^bb0(
// PRO-NEXT: kiln.cast
// PRO-NEXT: kiln.matmul
// PRO-NEXT: kiln.yield
// PRO: kiln.fused epilogue(%arg0, %{{.*}})
// PRO-NEXT: ^bb0(
// PRO-NEXT: kiln.cast
// PRO-NEXT: kiln.matmul
// PRO-NEXT: kiln.relu
// PRO-NEXT: kiln.yield
// PRO-NOT: kiln.cast
// PRO: return
func.func @prologue_f32_input_shared(%x: tensor<8x16xf32>) -> (tensor<8x4xf16>, tensor<8x4xf16>) {
  %w = kiln.constant dense<0.125> : tensor<16x4xf16>
  %w2 = kiln.constant dense<0.25> : tensor<16x4xf16>
  %h = kiln.cast %x {to = 10 : i64} : (tensor<8x16xf32>) -> tensor<8x16xf16>
  %p = kiln.matmul %h, %w : (tensor<8x16xf16>, tensor<16x4xf16>) -> tensor<8x4xf16>
  %p2 = kiln.matmul %h, %w2 : (tensor<8x16xf16>, tensor<16x4xf16>) -> tensor<8x4xf16>
  %y = kiln.relu %p2 : (tensor<8x4xf16>) -> tensor<8x4xf16>
  return %p, %y : tensor<8x4xf16>, tensor<8x4xf16>
}

// -----

// No prologue where A is used elsewhere too, where it reads two tensors of A's shape, or where
// it reads a half tensor into a float32 product (the kernel reads A as stored, or float32 into half).
// PRO-LABEL: func.func @no_prologue
// PRO-COUNT-3: kiln.fused elementwise
// PRO-NOT: kiln.fused epilogue
// PRO: return
func.func @no_prologue(%x: tensor<8x16xf16>, %z: tensor<8x16xf16>, %x16: tensor<8x16xf16>, %s: tensor<f16>)
    -> (tensor<8x4xf16>, tensor<8x16xf16>, tensor<8x4xf16>, tensor<8x4xf32>) {
  %w = kiln.constant dense<0.125> : tensor<16x4xf16>
  %w32 = kiln.constant dense<0.125> : tensor<16x4xf32>
  %a = kiln.mul %x, %s : (tensor<8x16xf16>, tensor<f16>) -> tensor<8x16xf16>
  %a2 = kiln.round %a : (tensor<8x16xf16>) -> tensor<8x16xf16>
  %p = kiln.matmul %a2, %w : (tensor<8x16xf16>, tensor<16x4xf16>) -> tensor<8x4xf16>
  %b = kiln.add %x, %z : (tensor<8x16xf16>, tensor<8x16xf16>) -> tensor<8x16xf16>
  %b2 = kiln.mul %b, %s : (tensor<8x16xf16>, tensor<f16>) -> tensor<8x16xf16>
  %p2 = kiln.matmul %b2, %w : (tensor<8x16xf16>, tensor<16x4xf16>) -> tensor<8x4xf16>
  %c = kiln.cast %x16 {to = 1 : i64} : (tensor<8x16xf16>) -> tensor<8x16xf32>
  %c2 = kiln.relu %c : (tensor<8x16xf32>) -> tensor<8x16xf32>
  %p3 = kiln.matmul %c2, %w32 : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
  return %p, %a2, %p2, %p3 : tensor<8x4xf16>, tensor<8x16xf16>, tensor<8x4xf16>, tensor<8x4xf32>
}

// RUN: %kiln-opt %s -split-input-file -kiln-fuse-elementwise -kiln-fuse-epilogue | FileCheck %s
// RUN: %kiln-opt %s -split-input-file -kiln-fuse-elementwise="route=fusion.scalar_reduce=off" | FileCheck %s --check-prefix=OFF

// DynamicQuantizeLinear's range after a split reduction: stage two (the 32 partial minima and
// maxima) and its reshapes join the quantizing kernel, which reads the partials whole.
// CHECK-LABEL: func.func @split_range
// CHECK: %[[LO:.*]], %[[HI:.*]] = kiln.reduce_min_max %{{.*}}, %{{.*}} {axes = array<i64: 2>
// CHECK: kiln.fused elementwise(%[[LO]], %[[HI]], %arg0)
// CHECK-NEXT: ^bb0(
// CHECK-NEXT: kiln.reduce_min_max %{{.*}} {axes = array<i64: 1>
// CHECK: kiln.reshape
// CHECK: kiln.reshape
// CHECK: kiln.sub
// CHECK: kiln.div
// CHECK: kiln.yield
// OFF-LABEL: func.func @split_range
// OFF: kiln.reduce_min_max %{{.*}} {axes = array<i64: 1>
// OFF: kiln.fused elementwise(%{{.*}}, %{{.*}}, %arg0)
func.func @split_range(%x: tensor<64x1024xf16>) -> tensor<64x1024xf16> {
  %s = kiln.constant dense<[1, 32, 2048]> : tensor<3xi64>
  %v = kiln.reshape %x, %s : (tensor<64x1024xf16>, tensor<3xi64>) -> tensor<1x32x2048xf16>
  %plo, %phi = kiln.reduce_min_max %v, %v {axes = array<i64: 2>, keepdims = 0 : i64} : (tensor<1x32x2048xf16>, tensor<1x32x2048xf16>) -> (tensor<1x32xf16>, tensor<1x32xf16>)
  %lo1, %hi1 = kiln.reduce_min_max %plo, %phi {axes = array<i64: 1>, keepdims = 0 : i64} : (tensor<1x32xf16>, tensor<1x32xf16>) -> (tensor<1xf16>, tensor<1xf16>)
  %e = kiln.constant dense<> : tensor<0xi64>
  %lo = kiln.reshape %lo1, %e : (tensor<1xf16>, tensor<0xi64>) -> tensor<f16>
  %hi = kiln.reshape %hi1, %e : (tensor<1xf16>, tensor<0xi64>) -> tensor<f16>
  %r = kiln.sub %hi, %lo : (tensor<f16>, tensor<f16>) -> tensor<f16>
  %d = kiln.sub %x, %lo : (tensor<64x1024xf16>, tensor<f16>) -> tensor<64x1024xf16>
  %y = kiln.div %d, %r : (tensor<64x1024xf16>, tensor<f16>) -> tensor<64x1024xf16>
  return %y : tensor<64x1024xf16>
}

// -----

// A product's small result, reduced whole and scaled by its range: the region holds the
// reduction, so the product keeps a plain store (an epilogue cannot reduce its own result).
// CHECK-LABEL: func.func @product_range
// CHECK: %[[P:.*]] = kiln.transposed_matmul
// CHECK: kiln.fused elementwise(%[[P]])
// CHECK-NEXT: ^bb0(%[[A:.*]]: tensor<4x5xf32>):
// CHECK-NEXT: kiln.reduce_min_max %[[A]], %[[A]]
// CHECK-NOT: kiln.fused epilogue
func.func @product_range(%x: tensor<4x6xf32>) -> tensor<4x5xf32> {
  %w = kiln.constant dense<0.125> : tensor<5x6xf32>
  %p = kiln.transposed_matmul %x, %w {perm_b = array<i64: 1, 0>} : (tensor<4x6xf32>, tensor<5x6xf32>) -> tensor<4x5xf32>
  %lo, %hi = kiln.reduce_min_max %p, %p {keepdims = 0 : i64} : (tensor<4x5xf32>, tensor<4x5xf32>) -> (tensor<f32>, tensor<f32>)
  %r = kiln.sub %hi, %lo : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %y = kiln.div %p, %r : (tensor<4x5xf32>, tensor<f32>) -> tensor<4x5xf32>
  return %y : tensor<4x5xf32>
}

// -----

// Not taken: a reduction of more than 16384 elements (each block would read it all), one whose
// result is used outside the region too, and a float64 one.
// CHECK-LABEL: func.func @not_taken
// CHECK: %[[M:.*]] = kiln.reduce_max %arg0
// CHECK: %[[N:.*]] = kiln.reduce_min %arg1
// CHECK: %[[D:.*]] = kiln.reduce_max %arg2
// CHECK: kiln.fused elementwise
// CHECK-NOT: kiln.reduce_
// CHECK: kiln.yield
// CHECK: return %{{.*}}, %[[N]]
func.func @not_taken(%x: tensor<16385xf32>, %z: tensor<8xf32>, %w: tensor<8xf64>) -> (tensor<16385xf32>, tensor<f32>) {
  %m = kiln.reduce_max %x {keepdims = 0 : i64} : (tensor<16385xf32>) -> tensor<f32>
  %n = kiln.reduce_min %z {keepdims = 0 : i64} : (tensor<8xf32>) -> tensor<f32>
  %dm = kiln.reduce_max %w {keepdims = 0 : i64} : (tensor<8xf64>) -> tensor<f64>
  %c = kiln.cast %dm {to = 1 : i64} : (tensor<f64>) -> tensor<f32>
  %a = kiln.div %x, %m : (tensor<16385xf32>, tensor<f32>) -> tensor<16385xf32>
  %b = kiln.sub %a, %n : (tensor<16385xf32>, tensor<f32>) -> tensor<16385xf32>
  %y = kiln.mul %b, %c : (tensor<16385xf32>, tensor<f32>) -> tensor<16385xf32>
  return %y, %n : tensor<16385xf32>, tensor<f32>
}

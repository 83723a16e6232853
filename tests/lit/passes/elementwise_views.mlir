// RUN: %kiln-opt %s -split-input-file -kiln-elementwise-views | FileCheck %s
// RUN: %kiln-opt %s -split-input-file -kiln-elementwise-views=route=fusion.views=off | FileCheck %s --check-prefix=OFF

// A lone Cast of a column slice (GPT-2's padded vocabulary head) reads the slice in place.
// CHECK-LABEL: func.func @slice_cast
// CHECK: %[[V:.*]] = kiln.strided_view %arg0 {offset = 0 : i64, shape = array<i64: 2, 5>, strides = array<i64: 8, 1>} : (tensor<2x8xf16>) -> tensor<2x5xf16>
// CHECK: kiln.cast %[[V]]
// CHECK-NOT: kiln.slice
// OFF-LABEL: func.func @slice_cast
// OFF: kiln.slice
// OFF-NOT: kiln.strided_view
func.func @slice_cast(%x: tensor<2x8xf16>) -> tensor<2x5xf32> {
  %s = kiln.constant dense<0> : tensor<1xi64>
  %e = kiln.constant dense<5> : tensor<1xi64>
  %a = kiln.constant dense<-1> : tensor<1xi64>
  %none = kiln.none
  %c = kiln.slice %x, %s, %e, %a, %none : (tensor<2x8xf16>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, none) -> tensor<2x5xf16>
  %y = kiln.cast %c {to = 1 : i64} : (tensor<2x5xf16>) -> tensor<2x5xf32>
  return %y : tensor<2x5xf32>
}

// -----

// An elementwise region's input transposed with its last axis kept, at an offset of a slice of
// rows: one view; the region's other (broadcast) input stays as it is.
// CHECK-LABEL: func.func @region_transpose
// CHECK: %[[V:.*]] = kiln.strided_view %arg0 {offset = 12 : i64, shape = array<i64: 3, 2, 4>, strides = array<i64: 4, 12, 1>} : (tensor<3x3x4xf32>) -> tensor<3x2x4xf32>
// CHECK: kiln.fused elementwise(%[[V]], %arg1)
// CHECK-NOT: kiln.transpose
func.func @region_transpose(%x: tensor<3x3x4xf32>, %b: tensor<4xf32>) -> tensor<3x2x4xf32> {
  %s = kiln.constant dense<1> : tensor<1xi64>
  %e = kiln.constant dense<3> : tensor<1xi64>
  %a = kiln.constant dense<0> : tensor<1xi64>
  %none = kiln.none
  %rows = kiln.slice %x, %s, %e, %a, %none : (tensor<3x3x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, none) -> tensor<2x3x4xf32>
  %t = kiln.transpose %rows {perm = array<i64: 1, 0, 2>} : (tensor<2x3x4xf32>) -> tensor<3x2x4xf32>
  %y = kiln.fused elementwise(%t, %b) : (tensor<3x2x4xf32>, tensor<4xf32>) -> tensor<3x2x4xf32> {
  ^bb0(%t1: tensor<3x2x4xf32>, %b1: tensor<4xf32>):
    %m = kiln.mul %t1, %b1 : (tensor<3x2x4xf32>, tensor<4xf32>) -> tensor<3x2x4xf32>
    %r = kiln.relu %m : (tensor<3x2x4xf32>) -> tensor<3x2x4xf32>
    kiln.yield %r : tensor<3x2x4xf32>
  }
  return %y : tensor<3x2x4xf32>
}

// -----

// Not read in place: a transpose that moves the last axis (uncoalesced reads), a slice with
// another user, and an epilogue's input.
// CHECK-LABEL: func.func @stay_copies
// CHECK-NOT: kiln.strided_view
// CHECK: return
func.func @stay_copies(%x: tensor<4x6xf32>, %w: tensor<6x6xf32>) -> (tensor<6x4xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x6xf32>) {
  %t = kiln.transpose %x {perm = array<i64: 1, 0>} : (tensor<4x6xf32>) -> tensor<6x4xf32>
  %n = kiln.neg %t : (tensor<6x4xf32>) -> tensor<6x4xf32>
  %s = kiln.constant dense<0> : tensor<1xi64>
  %e = kiln.constant dense<3> : tensor<1xi64>
  %a = kiln.constant dense<-1> : tensor<1xi64>
  %none = kiln.none
  %c = kiln.slice %x, %s, %e, %a, %none : (tensor<4x6xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, none) -> tensor<4x3xf32>
  %r = kiln.relu %c : (tensor<4x3xf32>) -> tensor<4x3xf32>
  %xt = kiln.transpose %x {perm = array<i64: 0, 1>} : (tensor<4x6xf32>) -> tensor<4x6xf32>
  %p = kiln.fused epilogue(%x, %w, %xt) : (tensor<4x6xf32>, tensor<6x6xf32>, tensor<4x6xf32>) -> tensor<4x6xf32> {
  ^bb0(%x1: tensor<4x6xf32>, %w1: tensor<6x6xf32>, %r1: tensor<4x6xf32>):
    %mm = kiln.matmul %x1, %w1 : (tensor<4x6xf32>, tensor<6x6xf32>) -> tensor<4x6xf32>
    %sum = kiln.add %mm, %r1 : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
    kiln.yield %sum : tensor<4x6xf32>
  }
  return %n, %r, %c, %p : tensor<6x4xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x6xf32>
}

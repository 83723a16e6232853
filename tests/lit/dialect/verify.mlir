// RUN: %kiln-opt %s -split-input-file -verify-diagnostics

// The verifier checks declared result types against shape inference.
func.func @wrong_result(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{result #0 has type 'tensor<2x4xf32>' but its operands and attributes imply 'tensor<2x3xf32>'}}
  %c = kiln.add %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x4xf32>
  return %c : tensor<2x4xf32>
}

// -----

func.func @no_broadcast(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{cannot be broadcast}}
  %c = kiln.add %a, %b : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x3xf32>
  return %c : tensor<2x3xf32>
}

// -----

func.func @conv_channels(%x: tensor<1x3x8x8xf32>, %w: tensor<4x2x3x3xf32>) -> tensor<1x4x6x6xf32> {
  %none = kiln.none
  // expected-error @+1 {{'kiln.conv' op}}
  %y = kiln.conv %x, %w, %none : (tensor<1x3x8x8xf32>, tensor<4x2x3x3xf32>, none) -> tensor<1x4x6x6xf32>
  return %y : tensor<1x4x6x6xf32>
}

// -----

// A kernel region's kind is an enum: elementwise or epilogue.
func.func @fused_kind(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{expected string or keyword containing one of the following enum values for attribute 'kind' [elementwise, epilogue]}}
  %y = kiln.fused reduction(%a) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%x: tensor<4xf32>):
    kiln.yield %x : tensor<4xf32>
  }
  return %y : tensor<4xf32>
}

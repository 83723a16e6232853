// Elementwise kernels: one output = f(inputs) with numpy broadcasting (any rank; dims are
// coalesced, so rank is not limited), plus the table from ONNX/kiln op types to f. f is either a
// simple expression over a, b, c (1-3 inputs) or a fused program (FusedProgram.h: any number of
// inputs and statements — one kernel for a chain of ops).
//
// Kernel parameters: `const T0* in0, ..., TO* out`. Inputs are loaded in their compute types
// (float for every float storage, double for F64, int for 8/16-bit integers, the type itself for
// wider ones and Bool); the result is
// stored in the output's storage type (half types rounded to nearest even). Where every input is
// full-size or a single element, 16 bytes are loaded and stored per thread.
#pragma once

#include "codegen/KernelSpec.h"
#include "codegen/kernels/FusedProgram.h"
#include "compiler/target/ElementwiseTable.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kiln::codegen {

using target::ElementwiseAttrs;
using target::ElementwiseOp;
using target::elementwiseOpTypes;
using target::lookupElementwiseOp;

struct ElementwiseSpec {
  // Simple form: a CUDA expression over a, b, c (1..3 inputs, loaded in their compute types).
  std::string expr;
  std::vector<std::vector<int64_t>> inputShapes;  // 1..3 inputs
  std::vector<ElemType> inputTypes;               // storage types; empty: all F32
  // General form (used when program.result is set): any number of inputs and statements
  // (FusedProgram.h); expr, inputShapes and inputTypes are then ignored.
  FusedProgram program;
  std::vector<int64_t> outShape;  // empty: the broadcast of the inputs
  ElemType outType = ElemType::F32;
  bool allowVectorized = true;  // 16-byte path when every input is full-size or a scalar
};

// Throws std::invalid_argument on bad specs (arity, shapes that do not broadcast).
KernelLaunch emitElementwise(const ElementwiseSpec &spec);

// Convenience: lookup + emit. Throws std::invalid_argument for an unknown op.
KernelLaunch emitElementwiseOp(const std::string &opType, const std::vector<std::vector<int64_t>> &inputShapes,
                               const ElementwiseAttrs &attrs = {}, ElemType dataType = ElemType::F32);

}  // namespace kiln::codegen

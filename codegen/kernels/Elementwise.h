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

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kiln::codegen {

struct ElementwiseSpec {
  // Simple form: a CUDA expression over a, b, c (1..3 inputs, loaded in their compute types).
  std::string expr;
  std::vector<std::vector<int64_t>> inputShapes;  // 1..3 inputs
  std::vector<ElemType> inputTypes;               // storage types; empty: all F32
  // General form (used when program.result is set): any number of inputs and statements
  // (FusedProgram.h); expr, inputShapes and inputTypes are then ignored.
  FusedProgram program;
  std::vector<int64_t> outShape;                  // empty: the broadcast of the inputs
  ElemType outType = ElemType::F32;
  bool allowVectorized = true;                    // 16-byte path when every input is full-size or a scalar
};

// Throws std::invalid_argument on bad specs (arity, shapes that do not broadcast).
KernelLaunch emitElementwise(const ElementwiseSpec &spec);

// Attributes of an elementwise op, already read from the node (floats, ints and strings).
struct ElementwiseAttrs {
  std::map<std::string, double> floats;
  std::map<std::string, int64_t> ints;
  std::map<std::string, std::string> strings;
  double getFloat(const std::string &k, double d) const {
    auto it = floats.find(k);
    return it == floats.end() ? d : it->second;
  }
  int64_t getInt(const std::string &k, int64_t d) const {
    auto it = ints.find(k);
    return it == ints.end() ? d : it->second;
  }
  std::string getString(const std::string &k, const std::string &d) const {
    auto it = strings.find(k);
    return it == strings.end() ? d : it->second;
  }
};

// The kernel for one op type, as table data.
struct ElementwiseOp {
  std::string expr;
  ElemType outType = ElemType::F32;       // Bool for comparisons, the data type otherwise
  std::vector<ElemType> inputTypes;       // per input
};

// Looks up `opType` (Add Sub Mul Div Pow Mod Max Min Sum Mean Relu LeakyRelu PRelu Sigmoid Tanh
// Erf Exp Log Sqrt Neg Abs Sign Reciprocal Floor Ceil Round Sin Cos ... Elu Selu Celu HardSigmoid
// HardSwish Gelu Softplus Softsign Mish ThresholdedRelu Shrink Clip Where Equal Less Greater
// LessOrEqual GreaterOrEqual Not And Or Xor IsNaN IsInf Identity Cast ...) for `numInputs` inputs
// of data computed as `dataType` (F32 for every float storage, f16 and bf16 included; arithmetic,
// Mod, Pow, Max/Min/Sum, Clip, comparisons, Where and Cast also take F64 and integer data, BitShift
// integers only, And/Or/Xor/Not bool). Types in the result are compute types
// (Cast to f16/bf16 gives F16/BF16: a float value rounded to that precision). Clip's bounds
// come from the attributes `min`/`max` when given (as constants), else from inputs 2 and 3
// (numInputs 3; a missing bound must then be passed as a constant attribute). Cast: attribute
// `to` is the ONNX TensorProto dtype. Returns nullopt for an op type the table does not know.
std::optional<ElementwiseOp> lookupElementwiseOp(const std::string &opType, int numInputs,
                                                 const ElementwiseAttrs &attrs = {},
                                                 ElemType dataType = ElemType::F32);

// Every op type lookupElementwiseOp knows (for `kiln plan`, knobs and tests).
std::vector<std::string> elementwiseOpTypes();

// Convenience: lookup + emit. Throws std::invalid_argument for an unknown op.
KernelLaunch emitElementwiseOp(const std::string &opType,
                               const std::vector<std::vector<int64_t>> &inputShapes,
                               const ElementwiseAttrs &attrs = {}, ElemType dataType = ElemType::F32);

}  // namespace kiln::codegen

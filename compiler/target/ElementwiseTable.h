// The elementwise op table: for each ONNX/kiln op type that kiln runs as an elementwise kernel, the
// CUDA expression over the inputs a, b, c and the types it computes in. Passes ask it whether an
// op can join an elementwise kernel (fusion, layout); the emitters write its expressions
// (codegen/kernels/Elementwise.h). One table, so no op's name is written twice.
#pragma once

#include "compiler/target/Types.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kiln::target {

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
  ElemType outType = ElemType::F32;  // Bool for comparisons, the data type otherwise
  std::vector<ElemType> inputTypes;  // per input
  // Div of floats: a / b, which a division by a one-element b may compute as a corrected
  // reciprocal (kiln_div_by, codegen/kernels/FusedProgram.cpp).
  bool floatQuotient = false;
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
                                                 const ElementwiseAttrs &attrs = {}, ElemType dataType = ElemType::F32);

// Every op type lookupElementwiseOp knows (for `kiln plan`, knobs and tests).
std::vector<std::string> elementwiseOpTypes();

}  // namespace kiln::target

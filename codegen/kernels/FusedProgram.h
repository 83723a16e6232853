// A fused elementwise computation: what an elementwise kernel computes per output element, and
// what a matrix product or convolution applies to each accumulator as it stores it (epilogue).
//
// Inputs are kernel parameters, each broadcast (numpy rules) to the output shape and loaded into
// `x<k>` in its compute type (float for every float storage). The body is statements over the
// inputs, earlier temporaries and — in epilogues — `acc`, the product's float value; `result`
// is the expression stored (converted to the output's storage type).
#pragma once

#include "codegen/KernelSpec.h"
#include "compiler/target/ElementwiseTable.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::codegen {

using target::ElementwiseOp;

struct FusedProgram {
  std::vector<std::vector<int64_t>> inputShapes;
  std::vector<ElemType> inputTypes;  // storage types
  // Per input, when it is read in place from a larger buffer (a slice or a transpose of it): the
  // element strides of its dims. Empty (or an empty entry): row-major. Elementwise kernels only;
  // product and convolution epilogues refuse them.
  std::vector<std::vector<int64_t>> inputStrides;
  std::vector<std::string> body;
  // Per statement of `body`: whether it depends on one-element inputs and literals only, so that a
  // kernel may compute it once rather than per element (ProgramBuilder's statements; statements
  // added otherwise, and missing entries, are not).
  std::vector<bool> uniform;
  std::string result;
  size_t numInputs() const { return inputShapes.size(); }
};

// Appends statements to a program: inputs, literals and op applications.
class ProgramBuilder {
 public:
  explicit ProgramBuilder(FusedProgram &p) : p_(p) {}
  // A new input parameter (read with `strides`, if given); returns its variable ("x3").
  std::string input(const std::vector<int64_t> &shape, ElemType storage, const std::vector<int64_t> &strides = {});
  // A compile-time constant of compute type `t`, as a literal.
  static std::string literal(double v, ElemType t);
  // `op` applied to variables `args` (in op-input order); returns the new temporary ("t5"). A
  // division by a uniform value multiplies by its reciprocal, corrected to the IEEE quotient
  // (kiln_div_by), the reciprocal then a uniform statement of its own.
  std::string apply(const ElementwiseOp &op, const std::vector<std::string> &args);

 private:
  // Whether `arg` is uniform: a literal (anything but an identifier) or a uniform variable.
  bool isUniform(const std::string &arg) const;
  void push(std::string statement, bool uniform);
  FusedProgram &p_;
  int temps_ = 0;
  std::vector<std::string> uniformNames_;
};

// CUDA statements for one output element with linear index `linear` (type `idx`) of
// `outShape`: loads of every input from parameters `<param>0, <param>1, …` at their broadcast
// offsets, the body, and the store `<outRef> = result` in `outType`.
std::string programElementCode(const FusedProgram &p, const std::vector<int64_t> &outShape, ElemType outType,
                               const std::string &idx, const std::string &linear, const std::string &param,
                               const std::string &outRef);

// CUDA statements that store VE = 16 / sizeof(outType) consecutive elements of a row-major
// [rows, N] result (the flattening of `outShape`, whose last dim is N) with one 16-byte store:
// the fp32 values `cs[0..VE)` run through the program at row `row` (type IDX) and columns
// `gn` .. `gn` + VE - 1 of output `C` (of storage type OT), inputs read from `e0, e1, …` as
// vectors, once per row (broadcast along it), or element by element. False (and `code` empty)
// when an input's last dim is neither contiguous nor broadcast, or N is not a multiple of VE.
bool programVectorCode(const FusedProgram &p, const std::vector<int64_t> &outShape, ElemType outType, int64_t N,
                       std::string &code);

// The kernel parameter declarations of the inputs ("const kiln_half* __restrict__ e0, ...",
// each followed by ", ").
std::string programParams(const FusedProgram &p, const std::string &param);

// Throws std::invalid_argument if an input does not broadcast to `outShape`, or if it has
// strides and `allowStrides` is false (epilogues).
void checkProgram(const FusedProgram &p, const std::vector<int64_t> &outShape, bool allowStrides = false);

// Whether any input is read through strides.
bool hasStridedInputs(const FusedProgram &p);

}  // namespace kiln::codegen

// An Einsum equation ("bij,bjk->bik", "...ii->...i", "i,i") resolved against its inputs' ranks:
// one label per dim of each input and of the output. Letters a–z and A–Z are labels 0–51; the
// dims an ellipsis stands for get labels from 52 up, right-aligned across inputs (numpy
// broadcasting), so dims that broadcast together share a label. Without "->" the output is the
// ellipsis dims, then the letters that appear once in character order, A–Z before a–z (the
// implicit form, as numpy).
// Shared by the evaluator (compiler/ops/Einsum.cpp) and the lowering pass (passes/LowerEinsum.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kiln::ops {

struct EinsumEquation {
  std::vector<std::vector<int>> inputs;  // labels of each input's dims
  std::vector<int> output;               // labels of the output's dims
  int numLabels = 0;                     // labels are 0 .. numLabels - 1
};

// Throws OpError naming the problem (a character that is no label, two ellipses, a term count or
// length that does not match the inputs, an output label no input has).
EinsumEquation parseEinsum(const std::string &equation, const std::vector<int64_t> &inputRanks);
// The same for code built without exceptions (passes): std::nullopt and `error` set instead.
std::optional<EinsumEquation> tryParseEinsum(const std::string &equation, const std::vector<int64_t> &inputRanks,
                                             std::string *error);

}  // namespace kiln::ops

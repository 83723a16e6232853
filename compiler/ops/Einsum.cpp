// Einsum: sums of products over labelled dims (ONNX opset 12). Floating-point sums accumulate in
// double and round once per output element; integer sums wrap as in MatMul. The compile pipeline
// rewrites it into transposes, reshapes, ReduceSum and MatMul (passes/LowerEinsum.cpp).
#include "compiler/ops/EinsumEquation.h"
#include "compiler/ops/OpSemantics.h"
#include "compiler/ops/OpUtil.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <utility>

namespace kiln::ops {

namespace {

constexpr int kLetters = 52;

int letterLabel(char c) { return std::islower(static_cast<unsigned char>(c)) ? c - 'a' : c - 'A' + 26; }

// One term's letters (label per dim) with the position of its ellipsis (-1: none).
struct Term {
  std::vector<int> letters;
  int ellipsisAt = -1;
};

Term parseTerm(const std::string &t, const std::string &equation) {
  Term term;
  for (size_t k = 0; k < t.size(); ++k) {
    if (t.compare(k, 3, "...") == 0) {
      check(term.ellipsisAt < 0, "Einsum: two ellipses in one term of '" + equation + "'");
      term.ellipsisAt = static_cast<int>(term.letters.size());
      k += 2;
    } else {
      check(std::isalpha(static_cast<unsigned char>(t[k])) != 0,
            std::string("Einsum: '") + t[k] + "' is not a label (a-z, A-Z or ...) in '" + equation + "'");
      term.letters.push_back(letterLabel(t[k]));
    }
  }
  return term;
}

}  // namespace

EinsumEquation parseEinsum(const std::string &equation, const std::vector<int64_t> &inputRanks) {
  std::string eq;
  for (char c : equation)
    if (c != ' ') eq += c;
  size_t arrow = eq.find("->");
  std::string lhs = eq.substr(0, arrow);
  std::vector<Term> terms;
  for (size_t start = 0;;) {
    size_t comma = lhs.find(',', start);
    terms.push_back(parseTerm(lhs.substr(start, comma - start), equation));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  check(terms.size() == inputRanks.size(), "Einsum: '" + equation + "' has " + std::to_string(terms.size()) +
                                               " input terms for " + std::to_string(inputRanks.size()) + " inputs");
  // Dims each ellipsis stands for; the widest sets how many ellipsis labels there are.
  int64_t ellipsisRank = 0;
  std::vector<int64_t> covered(terms.size(), 0);
  for (size_t k = 0; k < terms.size(); ++k) {
    int64_t letters = static_cast<int64_t>(terms[k].letters.size());
    check(terms[k].ellipsisAt < 0 ? letters == inputRanks[k] : letters <= inputRanks[k],
          "Einsum: term " + std::to_string(k) + " of '" + equation + "' has " + std::to_string(letters) +
              " labels for an input of rank " + std::to_string(inputRanks[k]));
    covered[k] = terms[k].ellipsisAt < 0 ? 0 : inputRanks[k] - letters;
    ellipsisRank = std::max(ellipsisRank, covered[k]);
  }
  EinsumEquation r;
  r.numLabels = kLetters + static_cast<int>(ellipsisRank);
  auto expand = [&](const Term &t, int64_t n) {
    std::vector<int> labels(t.letters.begin(), t.letters.end());
    if (t.ellipsisAt >= 0) {
      std::vector<int> ell;
      for (int64_t j = 0; j < n; ++j) ell.push_back(kLetters + static_cast<int>(ellipsisRank - n + j));
      labels.insert(labels.begin() + t.ellipsisAt, ell.begin(), ell.end());
    }
    return labels;
  };
  std::vector<int> count(static_cast<size_t>(kLetters), 0);
  for (size_t k = 0; k < terms.size(); ++k) {
    r.inputs.push_back(expand(terms[k], covered[k]));
    for (int l : terms[k].letters) ++count[static_cast<size_t>(l)];
  }
  if (arrow != std::string::npos) {
    Term out = parseTerm(eq.substr(arrow + 2), equation);
    for (size_t j = 0; j < out.letters.size(); ++j) {
      int l = out.letters[j];
      check(count[static_cast<size_t>(l)] > 0,
            "Einsum: output label '" + eq.substr(arrow + 2) + "' of '" + equation + "' names a label no input has");
      check(std::count(out.letters.begin(), out.letters.end(), l) == 1,
            "Einsum: a label appears twice in the output of '" + equation + "'");
    }
    check(out.ellipsisAt >= 0 || ellipsisRank == 0,
          "Einsum: the inputs of '" + equation + "' have an ellipsis but its output does not");
    r.output = expand(out, ellipsisRank);
  } else {
    r.output = expand(Term{{}, 0}, ellipsisRank);
    for (int c = 0; c < kLetters; ++c) {  // character order: A-Z, then a-z
      int l = (c + 26) % kLetters;
      if (count[static_cast<size_t>(l)] == 1) r.output.push_back(l);
    }
  }
  return r;
}

std::optional<EinsumEquation> tryParseEinsum(const std::string &equation, const std::vector<int64_t> &inputRanks,
                                             std::string *error) {
  try {
    return parseEinsum(equation, inputRanks);
  } catch (const OpError &e) {
    if (error) *error = e.what();
    return std::nullopt;
  }
}

namespace {

// Each label's size: letters must agree; ellipsis labels broadcast (1 against n).
std::vector<int64_t> labelSizes(const EinsumEquation &eq, const std::vector<TensorType> &in) {
  std::vector<int64_t> size(static_cast<size_t>(eq.numLabels), -1);
  for (size_t k = 0; k < in.size(); ++k)
    for (size_t d = 0; d < eq.inputs[k].size(); ++d) {
      int l = eq.inputs[k][d];
      int64_t &s = size[static_cast<size_t>(l)], n = in[k].shape[d];
      if (s < 0 || (l >= kLetters && s == 1))
        s = n;
      else
        check(n == s || (l >= kLetters && n == 1), "Einsum: a label is " + std::to_string(s) +
                                                       " long in one input and " + std::to_string(n) + " in input " +
                                                       std::to_string(k));
    }
  return size;
}

// The equation against the inputs: its labels, each label's size (-1: in no input) and the
// output shape; fails on anything invalid.
struct Resolved {
  EinsumEquation eq;
  std::vector<int64_t> size;
  Shape out;
};
Resolved resolve(const std::vector<TensorType> &inputs, const Attrs &attrs) {
  check(!inputs.empty(), "Einsum: at least one input is required");
  std::vector<int64_t> ranks;
  for (size_t k = 0; k < inputs.size(); ++k) {
    const TensorType &t = inputs[k];
    check(t.dtype != DType::Undefined, "Einsum: input " + std::to_string(k) + " is missing");
    check(isFloat(t.dtype) || isInteger(t.dtype),
          std::string("Einsum: inputs must be numeric, got ") + dtypeName(t.dtype));
    check(t.dtype == inputs[0].dtype, "Einsum: every input must have the same dtype");
    ranks.push_back(static_cast<int64_t>(t.shape.size()));
  }
  check(attrs.has("equation"), "Einsum: attribute 'equation' is required");
  Resolved r{parseEinsum(attrs.getString("equation", ""), ranks), {}, {}};
  r.size = labelSizes(r.eq, inputs);
  for (int l : r.eq.output) r.out.push_back(r.size[static_cast<size_t>(l)]);
  return r;
}

std::vector<TensorType> einsumShape(const ShapeContext &ctx) {
  return {{ctx.inputs.empty() ? DType::Undefined : ctx.inputs[0].dtype, resolve(ctx.inputs, ctx.attrs).out}};
}

std::vector<Tensor> einsumEval(const EvalContext &ctx) {
  std::vector<TensorType> types;
  for (size_t k = 0; k < ctx.inputs.size(); ++k) types.push_back({ctx.in(k).dtype, ctx.in(k).shape});
  const Resolved r = resolve(types, ctx.attrs);
  const EinsumEquation &eq = r.eq;
  const std::vector<int64_t> &size = r.size;
  const Shape &outShape = r.out;
  // The summed labels: in some input, not in the output.
  std::vector<int> summed;
  for (int l = 0; l < eq.numLabels; ++l)
    if (size[static_cast<size_t>(l)] >= 0 && std::find(eq.output.begin(), eq.output.end(), l) == eq.output.end())
      summed.push_back(l);
  int64_t inner = 1;
  for (int l : summed) inner *= size[static_cast<size_t>(l)];
  // Per input: (label, element stride) of each dim it moves along (broadcast dims of 1 do not;
  // a repeated label appears once per dim, so its strides add up: a diagonal).
  std::vector<std::vector<std::pair<int, int64_t>>> walks(ctx.inputs.size());
  for (size_t k = 0; k < ctx.inputs.size(); ++k) {
    const Tensor &x = ctx.in(k);
    int64_t s = 1;
    for (int64_t d = x.rank() - 1; d >= 0; --d) {
      if (x.shape[static_cast<size_t>(d)] != 1) walks[k].push_back({eq.inputs[k][static_cast<size_t>(d)], s});
      s *= x.shape[static_cast<size_t>(d)];
    }
  }
  Tensor y(ctx.in(0).dtype, outShape);
  const bool floating = y.isFloating();
  std::vector<int64_t> at(static_cast<size_t>(eq.numLabels), 0);
  for (int64_t o = 0; o < y.size(); ++o) {
    for (int64_t r = o, d = static_cast<int64_t>(eq.output.size()) - 1; d >= 0; --d) {
      int64_t n = outShape[static_cast<size_t>(d)];
      at[static_cast<size_t>(eq.output[static_cast<size_t>(d)])] = r % n, r /= n;
    }
    double facc = 0;
    uint64_t iacc = 0;
    for (int64_t e = 0; e < inner; ++e) {
      for (int64_t r = e, j = static_cast<int64_t>(summed.size()) - 1; j >= 0; --j) {
        int64_t n = size[static_cast<size_t>(summed[static_cast<size_t>(j)])];
        at[static_cast<size_t>(summed[static_cast<size_t>(j)])] = r % n, r /= n;
      }
      double fp = 1;
      uint64_t ip = 1;
      for (size_t k = 0; k < ctx.inputs.size(); ++k) {
        int64_t idx = 0;
        for (auto [l, st] : walks[k]) idx += at[static_cast<size_t>(l)] * st;
        if (floating)
          fp *= ctx.in(k).f[static_cast<size_t>(idx)];
        else
          ip *= static_cast<uint64_t>(ctx.in(k).i[static_cast<size_t>(idx)]);
      }
      facc += fp, iacc += ip;
    }
    if (floating)
      y.set(o, facc);
    else
      y.setInt(o, static_cast<int64_t>(iacc));
  }
  return {y};
}

// A multiply-add per input beyond the first, per point of the whole label space.
int64_t einsumFlops(const ShapeContext &ctx, const std::vector<TensorType> &) {
  int64_t points = 1;
  for (int64_t s : resolve(ctx.inputs, ctx.attrs).size)
    if (s >= 0) points *= s;
  return 2 * points * std::max<int64_t>(1, static_cast<int64_t>(ctx.inputs.size()) - 1);
}

}  // namespace

KILN_REGISTER_OP({"Einsum", einsumShape, einsumEval, einsumFlops});

}  // namespace kiln::ops

#include "codegen/kernels/FusedProgram.h"

#include "codegen/kernels/Elementwise.h"
#include "codegen/kernels/KernelUtil.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace kiln::codegen {

using namespace kernels;

std::string ProgramBuilder::input(const std::vector<int64_t> &shape, ElemType storage,
                                  const std::vector<int64_t> &strides) {
  p_.inputShapes.push_back(shape);
  p_.inputTypes.push_back(storage);
  if (!strides.empty() || !p_.inputStrides.empty()) {
    p_.inputStrides.resize(p_.inputShapes.size() - 1);
    p_.inputStrides.push_back(strides);
  }
  std::string name = "x" + std::to_string(p_.inputShapes.size() - 1);
  if (numElementsOf(shape) == 1) uniformNames_.push_back(name);
  return name;
}

bool ProgramBuilder::isUniform(const std::string &arg) const {
  bool identifier = !arg.empty() && (std::isalpha((unsigned char)arg[0]) || arg[0] == '_');
  for (char c : arg) identifier = identifier && (std::isalnum((unsigned char)c) || c == '_');
  if (arg == "true" || arg == "false") identifier = false;
  return !identifier || std::find(uniformNames_.begin(), uniformNames_.end(), arg) != uniformNames_.end();
}

void ProgramBuilder::push(std::string statement, bool uniform) {
  p_.uniform.resize(p_.body.size(), false);  // (statements added without the builder: not uniform)
  p_.body.push_back(std::move(statement));
  p_.uniform.push_back(uniform);
}

std::string ProgramBuilder::literal(double v, ElemType t) { return target::typedLiteral(v, t); }

std::string ProgramBuilder::apply(const ElementwiseOp &op, const std::vector<std::string> &args) {
  if (args.size() != op.inputTypes.size())
    throw std::invalid_argument("fused program: op takes " + std::to_string(op.inputTypes.size()) + " inputs, got " +
                                std::to_string(args.size()));
  static const char *vars[] = {"a", "b", "c"};
  if (args.size() > 3) throw std::invalid_argument("fused program: ops take at most 3 inputs");
  bool uniform = std::all_of(args.begin(), args.end(), [&](const std::string &a) { return isUniform(a); });
  std::string expr = op.expr;
  if (op.floatQuotient && !uniform && isUniform(args[1])) {
    std::string r = "t" + std::to_string(temps_++);
    push("const float " + r + " = 1.f / (float)(" + args[1] + ");", true);
    uniformNames_.push_back(r);
    expr = "kiln_div_by(a, b, " + r + ")";
  }
  std::string t = "t" + std::to_string(temps_++);
  std::string ct = computeTypeName(op.outType);
  std::string s = ct + " " + t + "; { ";
  for (size_t k = 0; k < args.size(); ++k)
    s += std::string("const ") + computeTypeName(op.inputTypes[k]) + " " + vars[k] + " = " + args[k] + "; ";
  s += t + " = (" + ct + ")(" + expr + "); }";
  push(s, uniform);
  if (uniform) uniformNames_.push_back(t);
  p_.result = t;
  return t;
}

bool hasStridedInputs(const FusedProgram &p) {
  for (auto &s : p.inputStrides)
    if (!s.empty()) return true;
  return false;
}

// Input k's memory strides ({}: row-major).
static const std::vector<int64_t> &stridesOf(const FusedProgram &p, size_t k) {
  static const std::vector<int64_t> none;
  return k < p.inputStrides.size() ? p.inputStrides[k] : none;
}

void checkProgram(const FusedProgram &p, const std::vector<int64_t> &outShape, bool allowStrides) {
  if (p.inputTypes.size() != p.inputShapes.size()) throw std::invalid_argument("fused program: one type per input");
  if (p.inputStrides.size() > p.inputShapes.size()) throw std::invalid_argument("fused program: strides of no input");
  if (!allowStrides && hasStridedInputs(p)) throw std::invalid_argument("fused program: strided inputs in an epilogue");
  for (size_t k = 0; k < p.numInputs(); ++k) (void)broadcastStrides(p.inputShapes[k], outShape, stridesOf(p, k));
  if (p.result.empty()) throw std::invalid_argument("fused program: no result");
}

std::string programParams(const FusedProgram &p, const std::string &param) {
  std::string s;
  for (size_t k = 0; k < p.numInputs(); ++k)
    s +=
        std::string("const ") + storageTypeName(p.inputTypes[k]) + "* __restrict__ " + param + std::to_string(k) + ", ";
  return s;
}

std::string programElementCode(const FusedProgram &p, const std::vector<int64_t> &outShape, ElemType outType,
                               const std::string &idx, const std::string &linear, const std::string &param,
                               const std::string &outRef) {
  std::string code;
  if (p.numInputs()) {
    StridedSpace space;
    space.dims = outShape;
    for (size_t k = 0; k < p.numInputs(); ++k)
      space.strides.push_back(broadcastStrides(p.inputShapes[k], outShape, stridesOf(p, k)));
    space = coalesce(space);
    std::vector<std::string> names;
    for (size_t k = 0; k < p.numInputs(); ++k) names.push_back("o" + std::to_string(k));
    code += offsetCode(space, names, idx, linear);
    for (size_t k = 0; k < p.numInputs(); ++k)
      code += std::string("    const ") + computeTypeName(p.inputTypes[k]) + " x" + std::to_string(k) + " = kiln_ld(" +
              param + std::to_string(k) + "[o" + std::to_string(k) + "]);\n";
  }
  for (auto &s : p.body) code += "    " + s + "\n";
  code += "    " + outRef + " = " + storeExpr(outType, p.result) + ";\n";
  return code;
}

bool programVectorCode(const FusedProgram &epi, const std::vector<int64_t> &outShape, ElemType outType, int64_t N,
                       std::string &vec) {
  vec.clear();
  const int ve = static_cast<int>(16 / elemSize(outType));
  // Per input: its stride along the output's columns (the last dim) decides how it is read.
  if (outShape.empty() || outShape.back() != N || N % ve) return false;
  StridedSpace rows;
  rows.dims.assign(outShape.begin(), outShape.end() - 1);
  std::vector<int> kind(epi.numInputs());  // 0: broadcast along the row, 1: contiguous vector, 2: contiguous elements
  for (size_t k = 0; k < epi.numInputs(); ++k) {
    std::vector<int64_t> st = broadcastStrides(epi.inputShapes[k], outShape);
    int64_t last = st.back();
    std::vector<int64_t> rs(st.begin(), st.end() - 1);
    if (last != 0 && last != 1) return false;
    bool aligned = true;
    for (int64_t x : rs) aligned = aligned && x % ve == 0;
    kind[k] = last == 0 ? 0 : (aligned && elemSize(epi.inputTypes[k]) * ve <= 16 ? 1 : 2);
    rows.strides.push_back(rs);
  }
  std::vector<std::string> names;
  for (size_t k = 0; k < epi.numInputs(); ++k) names.push_back("rb" + std::to_string(k));
  if (!names.empty()) vec += offsetCode(coalesce(rows), names, "IDX", "row");
  const std::string w = std::to_string(ve);
  for (size_t k = 0; k < epi.numInputs(); ++k) {
    std::string K = std::to_string(k), T = storageTypeName(epi.inputTypes[k]);
    if (kind[k] == 0)
      vec += std::string("            const ") + computeTypeName(epi.inputTypes[k]) + " s" + K + " = kiln_ld(e" + K +
             "[rb" + K + "]);\n";
    if (kind[k] == 1)
      vec += "            const kiln_vec<" + T + ", " + w + "> v" + K + " = *reinterpret_cast<const kiln_vec<" + T +
             ", " + w + ">*>(e" + K + " + rb" + K + " + (IDX)gn);\n";
  }
  vec +=
      "            kiln_vec<OT, " + w + "> res;\n#pragma unroll\n            for (int e = 0; e < " + w + "; ++e) {\n";
  vec += "              const float acc = cs[e];\n";
  for (size_t k = 0; k < epi.numInputs(); ++k) {
    std::string K = std::to_string(k);
    std::string v = kind[k] == 0   ? "s" + K
                    : kind[k] == 1 ? "kiln_ld(v" + K + ".v[e])"
                                   : "kiln_ld(e" + K + "[rb" + K + " + (IDX)gn + e])";
    vec += std::string("              const ") + computeTypeName(epi.inputTypes[k]) + " x" + K + " = " + v + ";\n";
  }
  for (auto &st : epi.body) vec += "              " + st + "\n";
  vec += "              res.v[e] = " + storeExpr(outType, epi.result) + ";\n            }\n";
  vec += "            *reinterpret_cast<kiln_vec<OT, " + w + ">*>(C + row * (IDX)N + (IDX)gn) = res;\n";
  return true;
}

}  // namespace kiln::codegen

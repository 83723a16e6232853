#include "codegen/kernels/Elementwise.h"

#include "codegen/kernels/FusedProgram.h"
#include "codegen/kernels/KernelUtil.h"

#include <algorithm>
#include <functional>
#include <stdexcept>

namespace kiln::codegen {

using namespace kernels;

namespace {

constexpr int kBlock = 256;
constexpr int kScalarUnroll = 4;  // elements per thread per pass of the scalar loop

// The simple form (expr over a, b, c) as a program: a, b, c alias the loaded inputs.
FusedProgram programOf(const ElementwiseSpec &s) {
  if (!s.program.result.empty()) return s.program;
  size_t n = s.inputShapes.size();
  if (n < 1 || n > 3) throw std::invalid_argument("elementwise: needs 1 to 3 inputs, got " + std::to_string(n));
  if (s.expr.empty()) throw std::invalid_argument("elementwise: empty expression");
  std::vector<ElemType> types = s.inputTypes.empty() ? std::vector<ElemType>(n, ElemType::F32) : s.inputTypes;
  if (types.size() != n) throw std::invalid_argument("elementwise: inputTypes does not match inputs");
  FusedProgram p;
  static const char *vars[] = {"a", "b", "c"};
  for (size_t k = 0; k < n; ++k) {
    p.inputShapes.push_back(s.inputShapes[k]);
    p.inputTypes.push_back(types[k]);
    p.body.push_back(std::string("const ") + computeTypeName(types[k]) + " " + vars[k] + " = x" + std::to_string(k) +
                     ";");
  }
  p.result = "(" + s.expr + ")";
  return p;
}

}  // namespace

KernelLaunch emitElementwise(const ElementwiseSpec &spec) {
  FusedProgram p = programOf(spec);
  size_t n = p.numInputs();
  std::vector<int64_t> out;
  if (n) out = broadcastShapes(p.inputShapes);
  if (!spec.outShape.empty() || out.empty()) {
    // An explicit output shape must be what the inputs broadcast to (or a scalar's []).
    if (!spec.outShape.empty() && broadcastShapes({out, spec.outShape}) != spec.outShape)
      throw std::invalid_argument("elementwise: inputs do not broadcast to the output shape");
    if (!spec.outShape.empty()) out = spec.outShape;
  }
  checkProgram(p, out, /*allowStrides=*/true);
  const int64_t total = numElementsOf(out);
  int64_t maxBlocks = 8192;
  std::string idx = indexType(total + maxBlocks * kBlock * 8);

  // Vector path: float or 8-bit integer storage everywhere, every input full-size (contiguous) or one element.
  // W elements per thread = 16 bytes of the widest type.
  size_t widest = elemSize(spec.outType);
  auto vectorType = [](ElemType t) { return isFloatType(t) || t == ElemType::I8 || t == ElemType::U8; };
  bool vec = spec.allowVectorized && total > 0 && vectorType(spec.outType) && !hasStridedInputs(p);
  std::vector<bool> scalarIn(n);
  for (size_t k = 0; k < n; ++k) {
    int64_t size = numElementsOf(p.inputShapes[k]);
    scalarIn[k] = size == 1;
    vec = vec && vectorType(p.inputTypes[k]) && (size == 1 || size == total);
    if (size != 1) widest = std::max(widest, elemSize(p.inputTypes[k]));
  }
  const int W = static_cast<int>(16 / widest);
  vec = vec && total % W == 0;

  std::string src = "// kiln elementwise: " + std::to_string(n) + " inputs, " + std::to_string(p.body.size()) +
                    " statements, out " + storageTypeName(spec.outType) + "\n";
  src += kDevicePrelude;
  src += "\nextern \"C\" __global__ void __launch_bounds__(" + std::to_string(kBlock) + ") KILN_ENTRY(" +
         programParams(p, "in") + storageTypeName(spec.outType) + "* __restrict__ out) {\n";
  src += "  const " + idx + " n = " + std::to_string(total) + ";\n";
  src += "  const " + idx + " step = (" + idx + ")gridDim.x * blockDim.x;\n";
  src += "  " + idx + " first = (" + idx + ")blockIdx.x * blockDim.x + threadIdx.x;\n";
  if (vec) {
    std::string w = std::to_string(W);
    std::string aligned = "(((unsigned long long)out";
    for (size_t k = 0; k < n; ++k)
      if (!scalarIn[k]) aligned += " | (unsigned long long)in" + std::to_string(k);
    aligned += ") & 15) == 0";
    src += "  if (" + aligned + ") {\n";
    // One-element inputs, and the statements that depend on nothing else, once per thread.
    for (size_t k = 0; k < n; ++k)
      if (scalarIn[k])
        src += std::string("    const ") + computeTypeName(p.inputTypes[k]) + " x" + std::to_string(k) +
               " = kiln_ld(in" + std::to_string(k) + "[0]);\n";
    auto uniform = [&](size_t s) { return s < p.uniform.size() && p.uniform[s]; };
    for (size_t s = 0; s < p.body.size(); ++s)
      if (uniform(s)) src += "    " + p.body[s] + "\n";
    src += "    for (" + idx + " i = first; i < n / " + w + "; i += step) {\n";
    for (size_t k = 0; k < n; ++k)
      if (!scalarIn[k])
        src += std::string("      const kiln_vec<") + storageTypeName(p.inputTypes[k]) + ", " + w + "> v" +
               std::to_string(k) + " = reinterpret_cast<const kiln_vec<" + storageTypeName(p.inputTypes[k]) + ", " + w +
               ">*>(in" + std::to_string(k) + ")[i];\n";
    src += std::string("      kiln_vec<") + storageTypeName(spec.outType) + ", " + w + "> r;\n";
    src += "#pragma unroll\n      for (int l = 0; l < " + w + "; ++l) {\n";
    for (size_t k = 0; k < n; ++k)
      if (!scalarIn[k])
        src += std::string("        const ") + computeTypeName(p.inputTypes[k]) + " x" + std::to_string(k) +
               " = kiln_ld(v" + std::to_string(k) + ".v[l]);\n";
    for (size_t s = 0; s < p.body.size(); ++s)
      if (!uniform(s)) src += "        " + p.body[s] + "\n";
    src += "        r.v[l] = " + storeExpr(spec.outType, p.result) + ";\n      }\n";
    src += "      reinterpret_cast<kiln_vec<" + std::string(storageTypeName(spec.outType)) + ", " + w +
           ">*>(out)[i] = r;\n";
    src += "    }\n    return;\n  }\n";
  }
  // Scalar path: four elements per thread per pass while all four exist, their loads issued
  // together (one 2-byte load per thread at a time is too few bytes in flight for the memory's
  // rate), then one at a time.
  const std::string U = std::to_string(kScalarUnroll);
  src += "  " + idx + " i = first;\n";
  src += "  for (; i + (" + U + " - 1) * step < n; i += " + U + " * step) {\n";
  src += std::string("    ") + storageTypeName(spec.outType) + " r_[" + U + "];\n";
  src += "#pragma unroll\n    for (int u = 0; u < " + U + "; ++u) {\n      const " + idx + " j = i + u * step;\n";
  src += programElementCode(p, out, spec.outType, idx, "j", "in", "r_[u]");
  src += "    }\n#pragma unroll\n    for (int u = 0; u < " + U + "; ++u) out[i + u * step] = r_[u];\n  }\n";
  src += "  for (; i < n; i += step) {\n";
  src += programElementCode(p, out, spec.outType, idx, "i", "in", "out[i]");
  src += "  }\n}\n";

  KernelLaunch k = finalizeKernel("ew", src);
  k.block = {kBlock, 1, 1};
  k.grid = {gridStrideBlocks(vec ? total / W : total, kBlock, maxBlocks), 1, 1};
  k.numParams = static_cast<int>(n) + 1;
  return k;
}

KernelLaunch emitElementwiseOp(const std::string &opType, const std::vector<std::vector<int64_t>> &inputShapes,
                               const ElementwiseAttrs &attrs, ElemType dataType) {
  auto op = lookupElementwiseOp(opType, static_cast<int>(inputShapes.size()), attrs, dataType);
  if (!op)
    throw std::invalid_argument("elementwise: no kernel for " + opType + " with " + std::to_string(inputShapes.size()) +
                                " inputs");
  ElementwiseSpec s;
  s.expr = op->expr;
  s.inputShapes = inputShapes;
  s.inputTypes = op->inputTypes;
  s.outType = op->outType;
  return emitElementwise(s);
}

}  // namespace kiln::codegen

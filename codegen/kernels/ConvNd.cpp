#include "codegen/kernels/ConvNd.h"

#include "codegen/kernels/KernelUtil.h"

#include <stdexcept>
#include <string>

namespace kiln::codegen {

using namespace kernels;

KernelLaunch emitConvNd(const ConvNdSpec &s) {
  const size_t n = s.in.size();
  if (n == 0 || s.out.size() != n || s.kernel.size() != n || s.strides.size() != n || s.dilations.size() != n ||
      s.padBegin.size() != n)
    throw std::invalid_argument("conv: spatial attributes of different lengths");
  if (s.group < 1 || s.C % s.group != 0 || s.M % s.group != 0)
    throw std::invalid_argument("conv: C and M must be multiples of group");
  if (s.type == ElemType::F8E4M3 || !isFloatType(s.type))
    throw std::invalid_argument("conv: needs f32, f16 or bf16 data");
  for (size_t d = 0; d < n; ++d)
    if (s.kernel[d] < 1 || s.strides[d] < 1 || s.dilations[d] < 1 || s.padBegin[d] < 0 || s.out[d] < 0)
      throw std::invalid_argument("conv: bad geometry");
  FusedProgram epi = s.epilogue;
  if (epi.result.empty()) epi.result = "acc";
  std::vector<int64_t> outShape = {s.N, s.M};
  outShape.insert(outShape.end(), s.out.begin(), s.out.end());
  checkProgram(epi, outShape);
  const int64_t total = numElementsOf(outShape);
  const int64_t cg = s.C / s.group, mg = s.M / s.group;
  std::vector<int64_t> inShape = {s.N, s.C};
  inShape.insert(inShape.end(), s.in.begin(), s.in.end());
  std::vector<int64_t> wShape = {s.M, cg};
  wShape.insert(wShape.end(), s.kernel.begin(), s.kernel.end());
  std::vector<int64_t> xst = contiguousStrides(inShape), wst = contiguousStrides(wShape);

  std::string src = "// kiln conv" + std::to_string(n) + "d: x" + std::to_string(s.N) + "x" + std::to_string(s.C);
  for (int64_t v : s.in) src += "x" + std::to_string(v);
  src += " M " + std::to_string(s.M) + " group " + std::to_string(s.group) + ", epilogue of " +
         std::to_string(epi.numInputs()) + " inputs\n";
  src += kDevicePrelude;
  src += std::string("typedef ") + storageTypeName(s.type) + " T;\ntypedef " + storageTypeName(s.outType) + " OT;\n";
  src += "extern \"C\" __global__ void __launch_bounds__(256) KILN_ENTRY(const T* __restrict__ x, const T* "
         "__restrict__ w, " +
         programParams(epi, "e") + "OT* __restrict__ y) {\n";
  src += "  for (long long L = (long long)blockIdx.x * blockDim.x + threadIdx.x; L < " + intLiteral(total) +
         "; L += (long long)gridDim.x * blockDim.x) {\n";
  src += "    long long r_ = L;\n";
  for (size_t d = n; d-- > 0;)
    src += "    const long long o" + std::to_string(d) + " = r_ % " + intLiteral(s.out[d]) +
           "; r_ /= " + intLiteral(s.out[d]) + ";\n";
  src += "    const long long m = r_ % " + intLiteral(s.M) + ", b = r_ / " + intLiteral(s.M) + ";\n";
  src += "    const long long g = m / " + intLiteral(mg) + ";\n";
  src += "    float accum = 0.f;\n";
  src += "    for (long long c = 0; c < " + intLiteral(cg) + "; ++c) {\n";
  src += "      const T* xc = x + b * " + intLiteral(xst[0]) + " + (g * " + intLiteral(cg) + " + c) * " +
         intLiteral(xst[1]) + ";\n";
  src += "      const T* wc = w + m * " + intLiteral(wst[0]) + " + c * " + intLiteral(wst[1]) + ";\n";
  std::string indent = "      ";
  for (size_t d = 0; d < n; ++d) {
    std::string D = std::to_string(d);
    src += indent + "for (int k" + D + " = 0; k" + D + " < " + std::to_string(s.kernel[d]) + "; ++k" + D + ") {\n";
    indent += "  ";
    src += indent + "const long long i" + D + " = o" + D + " * " + intLiteral(s.strides[d]) + " - " +
           intLiteral(s.padBegin[d]) + " + k" + D + " * " + intLiteral(s.dilations[d]) + ";\n";
    src += indent + "if (i" + D + " < 0 || i" + D + " >= " + intLiteral(s.in[d]) + ") continue;\n";
  }
  std::string xo = "0LL", wo = "0LL";
  for (size_t d = 0; d < n; ++d) {
    xo += " + i" + std::to_string(d) + " * " + intLiteral(xst[d + 2]);
    wo += " + k" + std::to_string(d) + " * " + intLiteral(wst[d + 2]);
  }
  src += indent + "accum = fmaf(kiln_ld(xc[" + xo + "]), kiln_ld(wc[" + wo + "]), accum);\n";
  for (size_t d = n; d-- > 0;) {
    indent.resize(indent.size() - 2);
    src += indent + "}\n";
  }
  src += "    }\n    const float acc = accum;\n    {\n";
  src += programElementCode(epi, outShape, s.outType, "long long", "L", "e", "y[L]");
  src += "    }\n  }\n}\n";
  KernelLaunch k = finalizeKernel(std::string("convnd_") + typeTag(s.type), src);
  k.block = {256, 1, 1};
  k.grid = {gridStrideBlocks(total, 256), 1, 1};
  k.numParams = 3 + static_cast<int>(epi.numInputs());
  return k;
}

}  // namespace kiln::codegen

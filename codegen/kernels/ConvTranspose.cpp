#include "codegen/kernels/ConvTranspose.h"

#include "codegen/kernels/IndexKernel.h"
#include "codegen/kernels/KernelUtil.h"

#include <stdexcept>
#include <string>

namespace kiln::codegen {

using namespace kernels;

KernelLaunch emitConvTranspose(const ConvTransposeSpec &s) {
  size_t n = s.in.size();
  if (n == 0 || s.out.size() != n || s.kernel.size() != n || s.strides.size() != n || s.dilations.size() != n ||
      s.padBegin.size() != n)
    throw std::invalid_argument("ConvTranspose: one size, stride, dilation and pad per spatial axis");
  if (s.group < 1 || s.C % s.group || s.M % s.group) throw std::invalid_argument("ConvTranspose: bad group");
  if (!isFloatType(s.type)) throw std::invalid_argument("ConvTranspose: float types only");
  IndexKernelSpec k;
  k.kind = "convt";
  k.comment = "ConvTranspose, " + std::to_string(n) + " spatial axes, group " + std::to_string(s.group);
  k.space = {s.N, s.M};
  k.space.insert(k.space.end(), s.out.begin(), s.out.end());
  k.params = {{"x", s.type}, {"w", s.type}};
  if (s.hasBias) k.params.push_back({"bias", s.type});
  k.params.push_back({"y", s.type, true});
  const int64_t cpg = s.C / s.group, mpg = s.M / s.group;
  std::string &b = k.body;
  b += "    const long long grp = c1 / " + intLiteral(mpg) + ", mm = c1 % " + intLiteral(mpg) + ";\n";
  b += "    float acc = 0.f;\n";
  b += "    for (long long cc = 0; cc < " + intLiteral(cpg) + "; ++cc) {\n";
  b += "      const long long c = grp * " + intLiteral(cpg) + " + cc;\n";
  std::string xo = "c0 * " + intLiteral(s.C) + " + c", wo = "c * " + intLiteral(mpg) + " + mm", indent = "      ";
  for (size_t d = 0; d < n; ++d) {
    std::string D = std::to_string(d), o = "c" + std::to_string(d + 2);
    b += indent + "for (long long k" + D + " = 0; k" + D + " < " + intLiteral(s.kernel[d]) + "; ++k" + D + ") {\n";
    indent += "  ";
    // t = o + pad - k·dilation: the input tap is t / stride when t is a non-negative multiple.
    std::string t = "t" + D, stride = intLiteral(s.strides[d]);
    b += indent + "const long long " + t + " = " + o + " + " + intLiteral(s.padBegin[d]) + " - k" + D + " * " +
         intLiteral(s.dilations[d]) + ";\n";
    b += indent + "if (" + t + " < 0 || " + t + " % " + stride + " != 0 || " + t + " / " + stride +
         " >= " + intLiteral(s.in[d]) + ") continue;\n";
    xo = "(" + xo + ") * " + intLiteral(s.in[d]) + " + t" + D + " / " + intLiteral(s.strides[d]);
    wo = "(" + wo + ") * " + intLiteral(s.kernel[d]) + " + k" + D;
  }
  b += indent + "acc += kiln_ld(x[" + xo + "]) * kiln_ld(w[" + wo + "]);\n";
  for (size_t d = 0; d < n; ++d) {
    indent.resize(indent.size() - 2);
    b += indent + "}\n";
  }
  b += "    }\n";
  b += "    y[i] = " + storeExpr(s.type, s.hasBias ? "acc + kiln_ld(bias[c1])" : "acc") + ";\n";
  return emitIndexKernel(k);
}

}  // namespace kiln::codegen

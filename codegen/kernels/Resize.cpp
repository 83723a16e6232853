#include "codegen/kernels/Resize.h"

#include "codegen/kernels/IndexKernel.h"
#include "codegen/kernels/KernelUtil.h"

#include <stdexcept>
#include <string>

namespace kiln::codegen {

using namespace kernels;

KernelLaunch emitResize(const ResizeKernelSpec &s) {
  size_t r = s.inShape.size();
  if (s.outShape.size() != r || s.taps.size() != r) throw std::invalid_argument("Resize: one tap count per axis");
  std::vector<int64_t> xs = contiguousStrides(s.inShape);
  IndexKernelSpec k;
  k.kind = "resize";
  k.comment = "Resize, taps per axis:";
  for (int t : s.taps) k.comment += " " + std::to_string(t);
  k.space = s.outShape;
  k.params = {{"x", s.type}, {"tap_index", ElemType::I32}, {"tap_weight", ElemType::F32}, {"y", s.type, true}};
  k.prologue = std::string("typedef ") + (isFloatType(s.type) ? "float" : "double") + " AT;\n";
  std::string &b = k.body;
  // Each tapped axis a: its entries start at off[a]; e<a> is the coordinate's first entry.
  std::string offset = "0LL";
  int64_t off = 0;
  std::vector<int> tapped;
  for (size_t a = 0; a < r; ++a) {
    std::string A = std::to_string(a);
    if (s.taps[a] == 0) {
      if (s.inShape[a] != s.outShape[a]) throw std::invalid_argument("Resize: a pass-through axis must keep its size");
      offset += " + c" + A + " * " + std::to_string(xs[a]) + "LL";
      continue;
    }
    tapped.push_back(int(a));
    b += "    const long long e" + A + " = " + std::to_string(off) + "LL + c" + A + " * " + std::to_string(s.taps[a]) +
         "LL;\n";
    off += s.outShape[a] * s.taps[a];
  }
  b += "    bool ext = false;\n";
  for (int a : tapped) b += "    ext = ext || tap_index[e" + std::to_string(a) + "] < 0;\n";
  b += "    if (ext) { y[i] = " + storeExpr(s.type, floatLiteral(s.extrapolation)) + "; continue; }\n";
  b += "    AT acc = 0;\n";
  std::string indent = "    ", weight = "(AT)1";
  for (int a : tapped) {
    std::string A = std::to_string(a);
    b += indent + "for (int t" + A + " = 0; t" + A + " < " + std::to_string(s.taps[size_t(a)]) + "; ++t" + A + ") {\n";
    indent += "  ";
    b += indent + "const AT w" + A + " = tap_weight[e" + A + " + t" + A + "];\n";
    b += indent + "if (w" + A + " == 0) continue;\n";
    weight += " * w" + A;
    offset += " + (long long)tap_index[e" + A + " + t" + A + "] * " + std::to_string(xs[size_t(a)]) + "LL";
  }
  b += indent + "acc += " + weight + " * (AT)kiln_ld(x[" + offset + "]);\n";
  for (size_t k2 = 0; k2 < tapped.size(); ++k2) {
    indent.resize(indent.size() - 2);
    b += indent + "}\n";
  }
  b += "    y[i] = " + storeExpr(s.type, "acc") + ";\n";
  return emitIndexKernel(k);
}

}  // namespace kiln::codegen

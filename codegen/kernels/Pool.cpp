#include "codegen/kernels/Pool.h"

#include "codegen/kernels/Conv.h"
#include "codegen/kernels/IndexKernel.h"
#include "codegen/kernels/KernelUtil.h"
#include "codegen/kernels/Reduction.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace kiln::codegen {

using namespace kernels;

namespace {

const char *kPoolBody = R"CUDA(
constexpr long long TOTAL = N * C * OH * OW;

extern "C" __global__ void __launch_bounds__(256) KILN_ENTRY(const T* __restrict__ x,
    T* __restrict__ y KILN_INDEX_PARAM) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < TOTAL;
       i += (long long)gridDim.x * blockDim.x) {
#if KILN_NHWC
    // i = ((n * OH + oh) * OW + ow) * C + c; element (ih, iw) of the plane at XS * (ih * W + iw).
    const long long c = i % C, pix = i / C;
    const int ow = (int)(pix % OW);
    const int oh = (int)((pix / OW) % OH);
    const long long plane = pix / (OH * OW);
    const T* xp = x + plane * (H * W) * C + c;
    constexpr long long XS = C;
#else
    const int ow = (int)(i % OW);
    const int oh = (int)((i / OW) % OH);
    const long long plane = i / (OH * OW);
    const T* xp = x + plane * (H * W);
    constexpr long long XS = 1;
#endif
    const int ih0 = oh * SH - PT, iw0 = ow * SW - PL;
#if KILN_MAX
    // First maximum wins; NaNs never replace a value (a leading NaN is skipped), as the reference.
    float best = -kiln_inf();  // a window with no tap inside the input gives -inf, as the reference
    long long bestOff = -1;
#pragma unroll
    for (int kh = 0; kh < KH; ++kh) {
      const int ih = ih0 + kh * DH;
      if (ih < 0 || ih >= H) continue;
#pragma unroll
      for (int kw = 0; kw < KW; ++kw) {
        const int iw = iw0 + kw * DW;
        if (iw < 0 || iw >= W) continue;
        const float v = kiln_ld(xp[(ih * W + iw) * XS]);
        if (bestOff < 0 ? !(v != v) : v > best) { best = v; bestOff = ih * W + iw; }
      }
    }
    y[i] = kiln_st<T>(best);
#if KILN_INDICES
#if KILN_COL_MAJOR
    indices[i] = bestOff < 0 ? -1 : plane * (H * W) + (bestOff % W) * H + bestOff / W;
#else
    indices[i] = bestOff < 0 ? -1 : plane * (H * W) + bestOff;
#endif
#endif
#else
    float sum = 0.f;
    int taps = 0;
#pragma unroll
    for (int kh = 0; kh < KH; ++kh) {
      const int ih = ih0 + kh * DH;
      if (ih < 0 || ih >= H) continue;
#pragma unroll
      for (int kw = 0; kw < KW; ++kw) {
        const int iw = iw0 + kw * DW;
        if (iw < 0 || iw >= W) continue;
        sum += kiln_ld(xp[(ih * W + iw) * XS]);
        ++taps;
      }
    }
#if KILN_INCLUDE_PAD
    // Taps inside the padded input [-PT, H + PB) x [-PL, W + PR).
    int th = 0, tw = 0;
    for (int kh = 0; kh < KH; ++kh) { const int ih = ih0 + kh * DH; th += ih >= -PT && ih < H + PB; }
    for (int kw = 0; kw < KW; ++kw) { const int iw = iw0 + kw * DW; tw += iw >= -PL && iw < W + PR; }
    taps = th * tw;
#endif
    y[i] = kiln_st<T>(sum / (float)taps);
#endif
  }
}
)CUDA";

}  // namespace

KernelLaunch emitPool2d(const Pool2dSpec &in) {
  Pool2dSpec s = in;
  if (s.N < 0 || s.C < 0 || s.H < 0 || s.W < 0 || s.KH < 1 || s.KW < 1 || s.strideH < 1 || s.strideW < 1 ||
      s.dilationH < 1 || s.dilationW < 1 || s.padTop < 0 || s.padLeft < 0 || s.padBottom < 0 || s.padRight < 0)
    throw std::invalid_argument("pool: bad geometry");
  if (s.kind == PoolKind::Average && s.indicesOutput) throw std::invalid_argument("pool: Indices is MaxPool's");
  if (s.nhwc && s.indicesOutput) throw std::invalid_argument("pool: Indices needs NCHW");
  if (s.OH == 0) s.OH = convOutSize(s.H, s.KH, s.strideH, s.padTop, s.padBottom, s.dilationH);
  if (s.OW == 0) s.OW = convOutSize(s.W, s.KW, s.strideW, s.padLeft, s.padRight, s.dilationW);
  if (s.H * s.W >= (int64_t(1) << 31)) throw std::invalid_argument("pool: image too large");
  bool isMax = s.kind == PoolKind::Max;
  std::string src = std::string("// kiln pool2d: ") + (isMax ? "max" : "average") + " x[" + std::to_string(s.N) + "," +
                    std::to_string(s.C) + "," + std::to_string(s.H) + "," + std::to_string(s.W) + "] k " +
                    std::to_string(s.KH) + "x" + std::to_string(s.KW) + "\n";
  src += kDevicePrelude;
  src += std::string("typedef ") + storageTypeName(s.type) + " T;\n";
  src += std::string("#define KILN_NHWC ") + (s.nhwc ? "1" : "0") + "\n";
  src += "constexpr long long N = " + intLiteral(s.N) + ", C = " + intLiteral(s.C) + ", OH = " + intLiteral(s.OH) +
         ", OW = " + intLiteral(s.OW) + ";\n";
  src += "constexpr int H = " + std::to_string(s.H) + ", W = " + std::to_string(s.W) +
         ", KH = " + std::to_string(s.KH) + ", KW = " + std::to_string(s.KW) + ", SH = " + std::to_string(s.strideH) +
         ", SW = " + std::to_string(s.strideW) + ", PT = " + std::to_string(s.padTop) +
         ", PL = " + std::to_string(s.padLeft) + ", PB = " + std::to_string(s.padBottom) +
         ", PR = " + std::to_string(s.padRight) + ", DH = " + std::to_string(s.dilationH) +
         ", DW = " + std::to_string(s.dilationW) + ";\n";
  src += std::string("#define KILN_MAX ") + (isMax ? "1" : "0") + "\n";
  src += std::string("#define KILN_INDICES ") + (s.indicesOutput ? "1" : "0") + "\n";
  src += std::string("#define KILN_COL_MAJOR ") + (s.columnMajorIndices ? "1" : "0") + "\n";
  src += std::string("#define KILN_INCLUDE_PAD ") + (s.countIncludePad ? "1" : "0") + "\n";
  std::string body = kPoolBody;
  const std::string key = "KILN_INDEX_PARAM";
  body.replace(body.find(key), key.size(), s.indicesOutput ? ", long long* __restrict__ indices" : "");
  src += body;
  KernelLaunch k = finalizeKernel("pool", src);
  k.block = {256, 1, 1};
  k.grid = {gridStrideBlocks(s.N * s.C * s.OH * s.OW, 256), 1, 1};
  k.numParams = s.indicesOutput ? 3 : 2;
  return k;
}

KernelLaunch emitPoolNd(const PoolNdSpec &s) {
  size_t n = s.in.size();
  if (s.out.size() != n || s.kernel.size() != n || s.strides.size() != n || s.dilations.size() != n ||
      s.padBegin.size() != n || s.padEnd.size() != n)
    throw std::invalid_argument("pool: one size, kernel, stride, dilation and pad pair per spatial axis");
  if (!isFloatType(s.type)) throw std::invalid_argument("pool: float types only");
  IndexKernelSpec k;
  k.kind = "poolnd";
  k.comment = std::string(s.max ? "MaxPool" : "AveragePool") + " over " + std::to_string(n) + " spatial axes";
  k.space = {s.N, s.C};
  k.space.insert(k.space.end(), s.out.begin(), s.out.end());
  k.params = {{"x", s.type}, {"y", s.type, true}};
  std::string &b = k.body;
  // As the 2-D kernel: the first maximum wins and a NaN never replaces a value; averages divide by
  // the taps inside the input (count_include_pad: inside the padded input).
  b += s.max ? "    float best = -kiln_inf();\n    bool any = false;\n"
             : "    float sum = 0.f;\n    long long taps = 0;\n";
  std::string off = "c0 * " + intLiteral(s.C) + " + c1", indent = "    ", inside = "true";
  for (size_t d = 0; d < n; ++d) {
    std::string D = std::to_string(d);
    b += indent + "for (long long k" + D + " = 0; k" + D + " < " + intLiteral(s.kernel[d]) + "; ++k" + D + ") {\n";
    indent += "  ";
    b += indent + "const long long p" + D + " = c" + std::to_string(d + 2) + " * " + intLiteral(s.strides[d]) + " - " +
         intLiteral(s.padBegin[d]) + " + k" + D + " * " + intLiteral(s.dilations[d]) + ";\n";
    if (s.countIncludePad && !s.max)
      b += indent + "if (p" + D + " < -" + intLiteral(s.padBegin[d]) + " || p" + D +
           " >= " + intLiteral(s.in[d] + s.padEnd[d]) + ") continue;\n";
    else
      b += indent + "if (p" + D + " < 0 || p" + D + " >= " + intLiteral(s.in[d]) + ") continue;\n";
    inside += " && p" + D + " >= 0 && p" + D + " < " + intLiteral(s.in[d]);
    off = "(" + off + ") * " + intLiteral(s.in[d]) + " + p" + D;
  }
  if (s.max) {
    b += indent + "const float v = kiln_ld(x[" + off + "]);\n";
    b += indent + "if (!any ? !(v != v) : v > best) { best = v; any = true; }\n";
  } else {
    b += indent + "++taps;\n" + indent + "if (" + inside + ") sum += kiln_ld(x[" + off + "]);\n";
  }
  for (size_t d = 0; d < n; ++d) {
    indent.resize(indent.size() - 2);
    b += indent + "}\n";
  }
  b += "    y[i] = " + storeExpr(s.type, s.max ? "best" : "sum / (float)taps") + ";\n";
  return emitIndexKernel(k);
}

KernelLaunch emitGlobalPool(bool max, int64_t planes, int64_t size, ElemType type) {
  RowReductionSpec r;
  r.op = max ? RowOp::Max : RowOp::Mean;
  r.outer = planes;
  r.cols = size;
  r.type = r.outType = type;
  return emitRowReduction(r);
}

}  // namespace kiln::codegen

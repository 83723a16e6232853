#include "codegen/kernels/Conv.h"

#include "codegen/kernels/KernelUtil.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace kiln::codegen {

using namespace kernels;

namespace {

const char *kConvBody = R"CUDA(
constexpr long long CG = C / GROUP, MG = M / GROUP;   // channels per group (in, out)
constexpr long long PIX = OH * OW;
constexpr long long WPER = CG * KH * KW;              // weights per output channel
constexpr int BLOCK = 256;

extern "C" __global__ void __launch_bounds__(BLOCK) KILN_ENTRY(const float* __restrict__ x,
    const float* __restrict__ w, KILN_BIAS_PARAM float* __restrict__ y) {
  // Block: pixels [blockIdx.x * BLOCK, +BLOCK) of image blockIdx.z, channels m0 .. m0 + MPT.
  const long long n = blockIdx.z;
  const long long m0 = (long long)blockIdx.y * MPT;
  const long long g = m0 / MG;
  const float* wg = w + m0 * WPER;
#if KILN_SMEM_WEIGHTS
  __shared__ float ws[MPT * WPER];
  for (int l = threadIdx.x; l < MPT * WPER; l += BLOCK) ws[l] = wg[l];
  __syncthreads();
  const float* wt = ws;
#else
  const float* wt = wg;
#endif
  const long long pix = (long long)blockIdx.x * BLOCK + threadIdx.x;
  if (pix >= PIX) return;
  const int oh = (int)(pix / OW), ow = (int)(pix % OW);
  const int ih0 = oh * SH - PT, iw0 = ow * SW - PL;
  float acc[MPT];
#pragma unroll
  for (int q = 0; q < MPT; ++q) acc[q] = 0.f;
  const float* xg = x + (n * C + g * CG) * (H * W);
  for (int c = 0; c < CG; ++c) {
    const float* xc = xg + (long long)c * (H * W);
#pragma unroll
    for (int kh = 0; kh < KH; ++kh) {
      const int ih = ih0 + kh * DH;
      if (ih < 0 || ih >= H) continue;
#pragma unroll
      for (int kw = 0; kw < KW; ++kw) {
        const int iw = iw0 + kw * DW;
        if (iw < 0 || iw >= W) continue;
        const float xv = xc[ih * W + iw];
#pragma unroll
        for (int q = 0; q < MPT; ++q) acc[q] = fmaf(xv, wt[q * WPER + (c * KH + kh) * KW + kw], acc[q]);
      }
    }
  }
  float* yn = y + (n * M + m0) * PIX + pix;
#pragma unroll
  for (int q = 0; q < MPT; ++q) {
    float v = acc[q];
    KILN_EPILOGUE
    yn[q * PIX] = v;
  }
}
)CUDA";

std::string replaceAll(std::string s, const std::string &from, const std::string &to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

}  // namespace

int64_t convOutSize(int64_t in, int64_t k, int64_t stride, int64_t padBegin, int64_t padEnd, int64_t dilation) {
  int64_t span = in + padBegin + padEnd - dilation * (k - 1) - 1;
  return span < 0 ? 0 : span / stride + 1;
}

KernelLaunch emitConv2d(const Conv2dSpec &in) {
  Conv2dSpec s = in;
  if (s.group < 1 || s.C % s.group != 0 || s.M % s.group != 0)
    throw std::invalid_argument("conv: C and M must be multiples of group");
  if (s.N < 1 || s.C < 1 || s.M < 1 || s.KH < 1 || s.KW < 1 || s.strideH < 1 || s.strideW < 1 ||
      s.dilationH < 1 || s.dilationW < 1 || s.padTop < 0 || s.padLeft < 0 || s.H < 0 || s.W < 0)
    throw std::invalid_argument("conv: bad geometry");
  if (s.OH == 0) s.OH = convOutSize(s.H, s.KH, s.strideH, s.padTop, s.padBottom, s.dilationH);
  if (s.OW == 0) s.OW = convOutSize(s.W, s.KW, s.strideW, s.padLeft, s.padRight, s.dilationW);
  if (s.N > 65535) throw std::invalid_argument("conv: batch > 65535");
  if (s.H * s.W >= (int64_t(1) << 31) || s.OH * s.OW >= (int64_t(1) << 31))
    throw std::invalid_argument("conv: image too large");
  int64_t mg = s.M / s.group;
  int mpt = s.channelsPerThread;
  if (mpt == 0) {
    mpt = 1;
    for (int c : {8, 4, 2})
      if (mg % c == 0) { mpt = c; break; }
  }
  if (mpt < 1 || mg % mpt != 0) throw std::invalid_argument("conv: channelsPerThread must divide M / group");
  int64_t wper = (s.C / s.group) * s.KH * s.KW;
  bool smem = mpt * wper * 4 <= 32 * 1024;

  auto L = [](int64_t v) { return std::to_string(v) + "LL"; };
  std::string src = "// kiln conv2d: x[" + std::to_string(s.N) + "," + std::to_string(s.C) + "," +
                    std::to_string(s.H) + "," + std::to_string(s.W) + "] w[" + std::to_string(s.M) + "," +
                    std::to_string(s.C / s.group) + "," + std::to_string(s.KH) + "," + std::to_string(s.KW) +
                    "] group " + std::to_string(s.group) + (s.hasBias ? " +bias" : "") + (s.relu ? " relu" : "") + "\n";
  src += kDevicePrelude;
  src += "constexpr long long N = " + L(s.N) + ", C = " + L(s.C) + ", H = " + L(s.H) + ", W = " + L(s.W) +
         ", M = " + L(s.M) + ", GROUP = " + L(s.group) + ";\n";
  src += "constexpr int KH = " + std::to_string(s.KH) + ", KW = " + std::to_string(s.KW) +
         ", SH = " + std::to_string(s.strideH) + ", SW = " + std::to_string(s.strideW) +
         ", PT = " + std::to_string(s.padTop) + ", PL = " + std::to_string(s.padLeft) +
         ", DH = " + std::to_string(s.dilationH) + ", DW = " + std::to_string(s.dilationW) + ";\n";
  src += "constexpr long long OH = " + L(s.OH) + ", OW = " + L(s.OW) + ";\n";
  src += "constexpr int MPT = " + std::to_string(mpt) + ";\n";
  src += std::string("#define KILN_SMEM_WEIGHTS ") + (smem ? "1" : "0") + "\n";
  std::string epi;
  if (s.hasBias) epi += "v += bias[m0 + q];";
  if (s.relu) epi += " v = v < 0.f ? 0.f : v;";
  std::string body = replaceAll(kConvBody, "KILN_BIAS_PARAM", s.hasBias ? "const float* __restrict__ bias," : "");
  src += replaceAll(body, "KILN_EPILOGUE", epi);

  KernelLaunch k = finalizeKernel("conv", src);
  k.block = {256, 1, 1};
  int64_t gy = s.M / mpt;
  if (gy > 65535) throw std::invalid_argument("conv: too many output channels for grid.y");
  k.grid = {static_cast<uint32_t>(std::max<int64_t>(1, ceilDiv(s.OH * s.OW, 256))), static_cast<uint32_t>(gy),
            static_cast<uint32_t>(s.N)};
  k.sharedBytes = 0;  // static shared memory only
  k.numParams = s.hasBias ? 4 : 3;
  return k;
}

}  // namespace kiln::codegen

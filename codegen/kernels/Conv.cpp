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

extern "C" __global__ void __launch_bounds__(BLOCK) KILN_ENTRY(const T* __restrict__ x,
    const T* __restrict__ w, KILN_EPILOGUE_PARAMS OT* __restrict__ y) {
  // Block: pixels [blockIdx.x * BLOCK, +BLOCK) of image blockIdx.z, channels m0 .. m0 + MPT.
  const long long n = blockIdx.z;
  const long long m0 = (long long)blockIdx.y * MPT;
  const long long g = m0 / MG;
  const T* wg = w + m0 * WPER;
#if KILN_SMEM_WEIGHTS
  __shared__ float ws[MPT * WPER];
  for (int l = threadIdx.x; l < MPT * WPER; l += BLOCK) ws[l] = kiln_ld(wg[l]);
  __syncthreads();
#define WT(i) ws[i]
#else
#define WT(i) kiln_ld(wg[i])
#endif
  const long long pix = (long long)blockIdx.x * BLOCK + threadIdx.x;
  if (pix >= PIX) return;
  const int oh = (int)(pix / OW), ow = (int)(pix % OW);
  const int ih0 = oh * SH - PT, iw0 = ow * SW - PL;
  float accum[MPT];
#pragma unroll
  for (int q = 0; q < MPT; ++q) accum[q] = 0.f;
  const T* xg = x + (n * C + g * CG) * (H * W);
  for (int c = 0; c < CG; ++c) {
    const T* xc = xg + (long long)c * (H * W);
#pragma unroll
    for (int kh = 0; kh < KH; ++kh) {
      const int ih = ih0 + kh * DH;
      if (ih < 0 || ih >= H) continue;
#pragma unroll
      for (int kw = 0; kw < KW; ++kw) {
        const int iw = iw0 + kw * DW;
        if (iw < 0 || iw >= W) continue;
        const float xv = kiln_ld(xc[ih * W + iw]);
#pragma unroll
        for (int q = 0; q < MPT; ++q) accum[q] = fmaf(xv, WT(q * WPER + (c * KH + kh) * KW + kw), accum[q]);
      }
    }
  }
#pragma unroll
  for (int q = 0; q < MPT; ++q) {
    const float acc = accum[q];
    const long long L = (n * M + m0 + q) * PIX + pix;
    {
KILN_EPILOGUE
    }
  }
}
)CUDA";

// NHWC: thread = (output pixel, V consecutive output channels). Weights as [KH][KW][CG][M].
const char *kConvNhwcBody = R"CUDA(
constexpr long long CG = C / GROUP, MG = M / GROUP, MV = M / V;
constexpr long long TOTAL = N * OH * OW * MV;
template <class U, int W_> struct __align__(sizeof(U) * W_) vec_t { U v[W_]; };

extern "C" __global__ void __launch_bounds__(256) KILN_ENTRY(const T* __restrict__ x,
    const T* __restrict__ w, KILN_EPILOGUE_PARAMS OT* __restrict__ y) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < TOTAL; i += (long long)gridDim.x * blockDim.x) {
    const long long mv = i % MV, pix = i / MV;
    const long long m0 = mv * V;
    const long long ow = pix % OW, t = pix / OW, oh = t % OH, n = t / OH;
    const long long g = m0 / MG;
    float accum[V];
#pragma unroll
    for (int q = 0; q < V; ++q) accum[q] = 0.f;
#pragma unroll
    for (int kh = 0; kh < KH; ++kh) {
      const long long ih = oh * SH - PT + kh * DH;
      if (ih < 0 || ih >= H) continue;
#pragma unroll
      for (int kw = 0; kw < KW; ++kw) {
        const long long iw = ow * SW - PL + kw * DW;
        if (iw < 0 || iw >= W) continue;
        const T* xp = x + ((n * H + ih) * W + iw) * C + g * CG;
        const T* wp = w + ((long long)(kh * KW + kw) * CG) * M + m0;
#if DEPTHWISE_VEC
        // One input channel per group, M == C: channels m0.. read x channels m0.. (16 bytes).
        const vec_t<T, V> xv = *reinterpret_cast<const vec_t<T, V>*>(x + ((n * H + ih) * W + iw) * C + m0);
        const vec_t<T, V> wv = *reinterpret_cast<const vec_t<T, V>*>(wp);
#pragma unroll
        for (int q = 0; q < V; ++q) accum[q] = fmaf(kiln_ld(xv.v[q]), kiln_ld(wv.v[q]), accum[q]);
#else
        for (long long c = 0; c < CG; ++c) {
          const float xs = kiln_ld(xp[c]);
#pragma unroll
          for (int q = 0; q < V; ++q) accum[q] = fmaf(xs, kiln_ld(wp[c * M + q]), accum[q]);
        }
#endif
      }
    }
#pragma unroll
    for (int q = 0; q < V; ++q) {
      const float acc = accum[q];
      const long long L = pix * M + m0 + q;
      {
KILN_EPILOGUE
      }
    }
  }
}
)CUDA";

}  // namespace

int64_t convOutSize(int64_t in, int64_t k, int64_t stride, int64_t padBegin, int64_t padEnd, int64_t dilation) {
  int64_t span = in + padBegin + padEnd - dilation * (k - 1) - 1;
  return span < 0 ? 0 : span / stride + 1;
}

KernelLaunch emitConv2d(const Conv2dSpec &in) {
  Conv2dSpec s = in;
  if (s.group < 1 || s.C % s.group != 0 || s.M % s.group != 0)
    throw std::invalid_argument("conv: C and M must be multiples of group");
  if (s.N < 1 || s.C < 1 || s.M < 1 || s.KH < 1 || s.KW < 1 || s.strideH < 1 || s.strideW < 1 || s.dilationH < 1 ||
      s.dilationW < 1 || s.padTop < 0 || s.padLeft < 0 || s.H < 0 || s.W < 0)
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
      if (mg % c == 0) {
        mpt = c;
        break;
      }
  }
  if (mpt < 1 || mg % mpt != 0) throw std::invalid_argument("conv: channelsPerThread must divide M / group");
  int64_t wper = (s.C / s.group) * s.KH * s.KW;
  bool smem = mpt * wper * 4 <= 32 * 1024;

  FusedProgram epi = s.epilogue;
  if (epi.result.empty()) epi.result = "acc";
  std::vector<int64_t> outShape = {s.N, s.M, s.OH, s.OW};
  checkProgram(epi, outShape);
  auto L = [](int64_t v) { return std::to_string(v) + "LL"; };
  std::string src = "// kiln conv2d: x[" + std::to_string(s.N) + "," + std::to_string(s.C) + "," + std::to_string(s.H) +
                    "," + std::to_string(s.W) + "] w[" + std::to_string(s.M) + "," + std::to_string(s.C / s.group) +
                    "," + std::to_string(s.KH) + "," + std::to_string(s.KW) + "] group " + std::to_string(s.group) +
                    ", epilogue of " + std::to_string(epi.numInputs()) + " inputs\n";
  src += kDevicePrelude;
  src += std::string("typedef ") + storageTypeName(s.type) + " T;\ntypedef " + storageTypeName(s.outType) + " OT;\n";
  src += "constexpr long long N = " + L(s.N) + ", C = " + L(s.C) + ", H = " + L(s.H) + ", W = " + L(s.W) +
         ", M = " + L(s.M) + ", GROUP = " + L(s.group) + ";\n";
  src += "constexpr int KH = " + std::to_string(s.KH) + ", KW = " + std::to_string(s.KW) +
         ", SH = " + std::to_string(s.strideH) + ", SW = " + std::to_string(s.strideW) +
         ", PT = " + std::to_string(s.padTop) + ", PL = " + std::to_string(s.padLeft) +
         ", DH = " + std::to_string(s.dilationH) + ", DW = " + std::to_string(s.dilationW) + ";\n";
  src += "constexpr long long OH = " + L(s.OH) + ", OW = " + L(s.OW) + ";\n";
  src += "constexpr int MPT = " + std::to_string(mpt) + ";\n";
  src += std::string("#define KILN_SMEM_WEIGHTS ") + (smem ? "1" : "0") + "\n";
  std::string body = replaceAll(kConvBody, "KILN_EPILOGUE_PARAMS", programParams(epi, "e"));
  src += replaceAll(body, "KILN_EPILOGUE", programElementCode(epi, outShape, s.outType, "long long", "L", "e", "y[L]"));

  KernelLaunch k = finalizeKernel(std::string("conv_") + typeTag(s.type), src);
  k.block = {256, 1, 1};
  int64_t gy = s.M / mpt;
  if (gy > 65535) throw std::invalid_argument("conv: too many output channels for grid.y");
  k.grid = {static_cast<uint32_t>(std::max<int64_t>(1, ceilDiv(s.OH * s.OW, 256))), static_cast<uint32_t>(gy),
            static_cast<uint32_t>(s.N)};
  k.sharedBytes = 0;  // static shared memory only
  k.numParams = 3 + static_cast<int>(epi.numInputs());
  return k;
}

KernelLaunch emitConv2dNhwc(const Conv2dSpec &in) {
  Conv2dSpec s = in;
  if (s.group < 1 || s.C % s.group != 0 || s.M % s.group != 0)
    throw std::invalid_argument("conv: C and M must be multiples of group");
  if (s.N < 1 || s.C < 1 || s.M < 1 || s.KH < 1 || s.KW < 1 || s.strideH < 1 || s.strideW < 1 || s.dilationH < 1 ||
      s.dilationW < 1 || s.padTop < 0 || s.padLeft < 0 || s.H < 0 || s.W < 0)
    throw std::invalid_argument("conv: bad geometry");
  if (s.OH == 0) s.OH = convOutSize(s.H, s.KH, s.strideH, s.padTop, s.padBottom, s.dilationH);
  if (s.OW == 0) s.OW = convOutSize(s.W, s.KW, s.strideW, s.padLeft, s.padRight, s.dilationW);
  FusedProgram epi = s.epilogue;
  if (epi.result.empty()) epi.result = "acc";
  std::vector<int64_t> outShape = {s.N, s.OH, s.OW, s.M};
  checkProgram(epi, outShape);
  // Depthwise with one output per input channel: 16-byte loads of V channels.
  const int vmax = static_cast<int>(16 / elemSize(s.type));
  const bool depthwise = s.group == s.C && s.M == s.C;
  int v = depthwise && s.C % vmax == 0 ? vmax : 1;
  auto L = [](int64_t x) { return std::to_string(x) + "LL"; };
  std::string src = "// kiln conv2d nhwc: x[" + std::to_string(s.N) + "," + std::to_string(s.H) + "," +
                    std::to_string(s.W) + "," + std::to_string(s.C) + "] M " + std::to_string(s.M) + " k " +
                    std::to_string(s.KH) + "x" + std::to_string(s.KW) + " group " + std::to_string(s.group) + "\n";
  src += kDevicePrelude;
  src += std::string("typedef ") + storageTypeName(s.type) + " T;\ntypedef " + storageTypeName(s.outType) + " OT;\n";
  src += "constexpr long long N = " + L(s.N) + ", C = " + L(s.C) + ", H = " + L(s.H) + ", W = " + L(s.W) +
         ", M = " + L(s.M) + ", GROUP = " + L(s.group) + ", OH = " + L(s.OH) + ", OW = " + L(s.OW) + ";\n";
  src += "constexpr int KH = " + std::to_string(s.KH) + ", KW = " + std::to_string(s.KW) +
         ", SH = " + std::to_string(s.strideH) + ", SW = " + std::to_string(s.strideW) +
         ", PT = " + std::to_string(s.padTop) + ", PL = " + std::to_string(s.padLeft) +
         ", DH = " + std::to_string(s.dilationH) + ", DW = " + std::to_string(s.dilationW) +
         ", V = " + std::to_string(v) + ";\n";
  src += std::string("#define DEPTHWISE_VEC ") + (v > 1 ? "1" : "0") + "\n";
  std::string body = replaceAll(kConvNhwcBody, "KILN_EPILOGUE_PARAMS", programParams(epi, "e"));
  src += replaceAll(body, "KILN_EPILOGUE", programElementCode(epi, outShape, s.outType, "long long", "L", "e", "y[L]"));
  KernelLaunch k = finalizeKernel(std::string("convnhwc_") + typeTag(s.type), src);
  k.block = {256, 1, 1};
  k.grid = {gridStrideBlocks(s.N * s.OH * s.OW * (s.M / v), 256, 65535), 1, 1};
  k.numParams = 3 + static_cast<int>(epi.numInputs());
  return k;
}

FusedProgram convBiasEpilogue(bool hasBias, int64_t M, bool nhwc, ElemType biasType, bool relu) {
  FusedProgram p;
  std::string v = "acc";
  if (hasBias) {
    p.inputShapes.push_back(nhwc ? std::vector<int64_t>{M} : std::vector<int64_t>{M, 1, 1});
    p.inputTypes.push_back(biasType);
    v = "(acc + x0)";
  }
  p.result = relu ? "(" + v + " < 0.f ? 0.f : " + v + ")" : v;
  return p;
}

}  // namespace kiln::codegen

#include "codegen/kernels/MatMul.h"

#include "codegen/kernels/KernelUtil.h"

#include <algorithm>
#include <stdexcept>

namespace kiln::codegen {

using namespace kernels;

namespace {

const char *kMatMulBody = R"CUDA(
constexpr int WN = BN / TN, WM = BM / TM;    // threads along n and m
constexpr int THREADS = WN * WM;
constexpr bool EVEN_M = M % BM == 0, EVEN_N = N % BN == 0, EVEN_K = K % BK == 0;

extern "C" __global__ void __launch_bounds__(THREADS) KILN_ENTRY(const float* __restrict__ A,
    const float* __restrict__ B, KILN_BIAS_PARAM float* __restrict__ C) {
  __shared__ float As[BK][BM + 4];
  __shared__ float Bs[BK][BN + 4];
  const int tid = threadIdx.x;
  const int tx = tid % WN, ty = tid / WN;
  const long long m0 = (long long)blockIdx.y * BM, n0 = (long long)blockIdx.x * BN;
  for (long long bz = blockIdx.z; bz < NBATCH; bz += gridDim.z) {
    long long offA = 0, offB = 0, offBias = 0;
    {
      long long r = bz;
#pragma unroll
      for (int d = BRANK - 1; d >= 0; --d) {
        const long long c = r % BDIMS[d];
        r /= BDIMS[d];
        offA += c * BSA[d];
        offB += c * BSB[d];
        offBias += c * BSBIAS[d];
      }
    }
    const float* Ab = A + offA;
    const float* Bb = B + offB;
    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
      for (int j = 0; j < TN; ++j) acc[i][j] = 0.f;

    for (long long k0 = 0; k0 < K; k0 += BK) {
      // A tile (BM x BK), read along A's contiguous dim.
#pragma unroll
      for (int l = tid; l < BM * BK; l += THREADS) {
        const int r = TRANS_A ? l % BM : l / BK;
        const int kk = TRANS_A ? l / BM : l % BK;
        const long long gm = m0 + r, gk = k0 + kk;
        float v = 0.f;
        if ((EVEN_M || gm < M) && (EVEN_K || gk < K)) v = TRANS_A ? Ab[gk * M + gm] : Ab[gm * K + gk];
        As[kk][r] = v;
      }
      // B tile (BK x BN).
#pragma unroll
      for (int l = tid; l < BK * BN; l += THREADS) {
        const int c = TRANS_B ? l / BK : l % BN;
        const int kk = TRANS_B ? l % BK : l / BN;
        const long long gn = n0 + c, gk = k0 + kk;
        float v = 0.f;
        if ((EVEN_N || gn < N) && (EVEN_K || gk < K)) v = TRANS_B ? Bb[gn * K + gk] : Bb[gk * N + gn];
        Bs[kk][c] = v;
      }
      __syncthreads();
#pragma unroll
      for (int kk = 0; kk < BK; ++kk) {
        float a[TM], b[TN];
#pragma unroll
        for (int i = 0; i < TM; ++i) a[i] = As[kk][ty + i * WM];
#pragma unroll
        for (int j = 0; j < TN; ++j) b[j] = Bs[kk][tx + j * WN];
#pragma unroll
        for (int i = 0; i < TM; ++i)
#pragma unroll
          for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
      }
      __syncthreads();
    }
    float* Cb = C + bz * (M * N);
#pragma unroll
    for (int i = 0; i < TM; ++i) {
      const long long gm = m0 + ty + i * WM;
      if (!EVEN_M && gm >= M) continue;
#pragma unroll
      for (int j = 0; j < TN; ++j) {
        const long long gn = n0 + tx + j * WN;
        if (!EVEN_N && gn >= N) continue;
        float v = ALPHA * acc[i][j];
        KILN_EPILOGUE
        Cb[gm * N + gn] = v;
      }
    }
  }
}
)CUDA";

std::string arrayLit(const std::vector<int64_t> &v) {
  std::string s = "{";
  for (size_t k = 0; k < v.size(); ++k) s += (k ? ", " : "") + std::to_string(v[k]) + "LL";
  return s + "}";
}

std::string replaceAll(std::string s, const std::string &from, const std::string &to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

}  // namespace

std::vector<std::string> matMulTiles() { return {"128x128", "64x64", "32x32"}; }

KernelLaunch emitMatMul(const MatMulSpec &s) {
  if (s.M < 0 || s.N < 0 || s.K < 0) throw std::invalid_argument("matmul: negative size");
  size_t br = s.batchShape.size();
  auto checkStrides = [&](const std::vector<int64_t> &v, const char *what) {
    if (!v.empty() && v.size() != br)
      throw std::invalid_argument(std::string("matmul: ") + what + " must have one stride per batch dim");
  };
  checkStrides(s.batchStridesA, "batchStridesA");
  checkStrides(s.batchStridesB, "batchStridesB");
  checkStrides(s.batchStridesBias, "batchStridesBias");
  std::vector<int64_t> bdims = s.batchShape, sa = s.batchStridesA, sb = s.batchStridesB, sbias = s.batchStridesBias;
  std::vector<int64_t> cont = contiguousStrides(bdims);
  if (sa.empty()) for (int64_t c : cont) sa.push_back(c * s.M * s.K);
  if (sb.empty()) for (int64_t c : cont) sb.push_back(c * s.K * s.N);
  if (sbias.empty()) sbias.assign(br, 0);
  int64_t nbatch = numElementsOf(bdims);
  if (br == 0) { bdims = {1}; sa = {0}; sb = {0}; sbias = {0}; }

  std::string tile = s.tile;
  if (tile.empty()) {
    auto blocks = [&](int64_t t) { return ceilDiv(s.M, t) * ceilDiv(s.N, t) * nbatch; };
    if (s.M >= 128 && s.N >= 128 && blocks(128) >= 132) tile = "128x128";
    else if (s.M >= 48 && s.N >= 48) tile = "64x64";
    else if (s.M >= 64 || s.N >= 64) tile = blocks(64) >= 132 ? "64x64" : "32x32";
    else tile = "32x32";
  }
  int bm, tm;
  if (tile == "128x128") { bm = 128; tm = 8; }
  else if (tile == "64x64") { bm = 64; tm = 4; }
  else if (tile == "32x32") { bm = 32; tm = 2; }
  else throw std::invalid_argument("matmul: unknown tile '" + tile + "' (128x128, 64x64, 32x32)");

  std::string src = "// kiln matmul: [" + std::to_string(nbatch) + "] " + std::to_string(s.M) + "x" +
                    std::to_string(s.N) + "x" + std::to_string(s.K) + (s.transA ? " A^T" : "") +
                    (s.transB ? " B^T" : "") + (s.hasBias ? " +bias" : "") + (s.relu ? " relu" : "") +
                    " tile " + tile + "\n";
  src += kDevicePrelude;
  src += "constexpr long long M = " + std::to_string(s.M) + "LL, N = " + std::to_string(s.N) +
         "LL, K = " + std::to_string(s.K) + "LL, NBATCH = " + std::to_string(nbatch) + "LL;\n";
  src += "constexpr int BM = " + std::to_string(bm) + ", BN = " + std::to_string(bm) + ", BK = 16, TM = " +
         std::to_string(tm) + ", TN = " + std::to_string(tm) + ";\n";
  src += std::string("constexpr bool TRANS_A = ") + (s.transA ? "true" : "false") + ", TRANS_B = " +
         (s.transB ? "true" : "false") + ";\n";
  src += "constexpr int BRANK = " + std::to_string(bdims.size()) + ";\n";
  src += "__device__ constexpr long long BDIMS[] = " + arrayLit(bdims) + ";\n";
  src += "__device__ constexpr long long BSA[] = " + arrayLit(sa) + ";\n";
  src += "__device__ constexpr long long BSB[] = " + arrayLit(sb) + ";\n";
  src += "__device__ constexpr long long BSBIAS[] = " + arrayLit(sbias) + ";\n";
  src += "constexpr float ALPHA = " + floatLiteral(s.alpha) + ";\n";
  std::string epi;
  if (s.hasBias)
    epi += "v += " + floatLiteral(s.beta) + " * bias[offBias + gm * (" + std::to_string(s.biasStrideM) +
           "LL) + gn * (" + std::to_string(s.biasStrideN) + "LL)];";
  if (s.relu) epi += " v = v < 0.f ? 0.f : v;";
  std::string body = replaceAll(kMatMulBody, "KILN_BIAS_PARAM", s.hasBias ? "const float* __restrict__ bias," : "");
  body = replaceAll(body, "KILN_EPILOGUE", epi);
  src += body;

  KernelLaunch k = finalizeKernel("mm", src);
  k.block = {256, 1, 1};
  k.grid = {static_cast<uint32_t>(std::max<int64_t>(1, ceilDiv(s.N, bm))),
            static_cast<uint32_t>(std::max<int64_t>(1, ceilDiv(s.M, bm))),
            static_cast<uint32_t>(std::clamp<int64_t>(nbatch, 1, 65535))};
  if (ceilDiv(s.M, bm) > 65535) throw std::invalid_argument("matmul: M too large for grid.y");
  k.numParams = s.hasBias ? 4 : 3;
  return k;
}

MatMulSpec matMulSpecFromShapes(const std::vector<int64_t> &aShape, const std::vector<int64_t> &bShape,
                                std::vector<int64_t> *outShape) {
  if (aShape.empty() || bShape.empty()) throw std::invalid_argument("matmul: operands must have rank >= 1");
  std::vector<int64_t> a = aShape, b = bShape;
  bool aVec = a.size() == 1, bVec = b.size() == 1;
  if (aVec) a.insert(a.begin(), 1);
  if (bVec) b.push_back(1);
  MatMulSpec s;
  s.M = a[a.size() - 2];
  s.K = a.back();
  s.N = b.back();
  if (b[b.size() - 2] != s.K) throw std::invalid_argument("matmul: inner dims differ");
  std::vector<int64_t> ab(a.begin(), a.end() - 2), bb(b.begin(), b.end() - 2);
  s.batchShape = broadcastShapes({ab, bb});
  std::vector<int64_t> sa = broadcastStrides(ab, s.batchShape), sb = broadcastStrides(bb, s.batchShape);
  for (int64_t &x : sa) x *= s.M * s.K;
  for (int64_t &x : sb) x *= s.K * s.N;
  s.batchStridesA = sa;
  s.batchStridesB = sb;
  if (outShape) {
    *outShape = s.batchShape;
    if (!aVec) outShape->push_back(s.M);
    if (!bVec) outShape->push_back(s.N);
  }
  return s;
}

MatMulSpec gemmSpecFromShapes(const std::vector<int64_t> &aShape, const std::vector<int64_t> &bShape,
                              bool hasC, const std::vector<int64_t> &cShape, bool transA, bool transB,
                              float alpha, float beta) {
  if (aShape.size() != 2 || bShape.size() != 2) throw std::invalid_argument("gemm: A and B must be 2-D");
  MatMulSpec s;
  s.transA = transA;
  s.transB = transB;
  s.M = transA ? aShape[1] : aShape[0];
  s.K = transA ? aShape[0] : aShape[1];
  s.N = transB ? bShape[0] : bShape[1];
  if ((transB ? bShape[1] : bShape[0]) != s.K) throw std::invalid_argument("gemm: inner dims differ");
  s.alpha = alpha;
  s.beta = beta;
  if (hasC && beta != 0.f) {
    std::vector<int64_t> st = broadcastStrides(cShape, {s.M, s.N});
    s.hasBias = true;
    s.biasStrideM = st[0];
    s.biasStrideN = st[1];
  }
  return s;
}

}  // namespace kiln::codegen

#include "codegen/kernels/Attention.h"

#include "codegen/kernels/KernelUtil.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace kiln::codegen {

using namespace kernels;

namespace {

// Per warp: 16 query rows; a thread holds rows g and g + 8 of each m16n8 tile (g = lane / 4) at
// columns 2·(lane % 4) and + 1. Softmax runs in the log2 domain (exp2f), scale and mask folded in.
const char *kAttentionBody = R"CUDA(
constexpr int BM = KILN_BM, BN = 64, SPLIT = KILN_SPLIT;
constexpr int GT = BM * 2, THREADS = GT * SPLIT;  // a warp per 16 query rows, per group of keys
constexpr int QC = DP + 8, KC = DP + 8, VC = DVP + 8;  // smem rows padded by 16 bytes (ldmatrix banks)
constexpr int NT = (int)((SK + BN - 1) / BN);
constexpr float LOG2E = 1.4426950408889634f;

KILN_DEV unsigned pack2(float lo, float hi) {
  unsigned r;
  asm("cvt.rn.PACK_TYPE.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}

// A barrier for the GT threads of key group gp: named barrier 1 + gp, its id a constant (a
// register id makes ptxas reserve all 16 barriers per block); the whole block without a split.
KILN_DEV void group_sync(int gp) {
  if (SPLIT == 1) __syncthreads();
  else if (gp == 0) asm volatile("bar.sync 1, %0;" ::"n"(GT) : "memory");
  else asm volatile("bar.sync 2, %0;" ::"n"(GT) : "memory");
}

// K and V rows j0 .. j0 + BN into one stage, by the group's GT threads; rows past SK and
// columns past D / DV read zeros.
KILN_DEV void load_kv(T* ks, T* vs, const T* __restrict__ Kb, const T* __restrict__ Vb, LI j0, int gtid) {
#pragma unroll
  for (int c = gtid; c < BN * (DP / 8); c += GT) {
    const int r = c / (DP / 8), dc = (c % (DP / 8)) * 8;
    const bool valid = j0 + r < SK && dc < D;
    cp_async16(ks + r * KC + dc, valid ? Kb + (j0 + r) * RSK + dc : Kb, valid);
  }
#pragma unroll
  for (int c = gtid; c < BN * (DVP / 8); c += GT) {
    const int r = c / (DVP / 8), dc = (c % (DVP / 8)) * 8;
    const bool valid = j0 + r < SK && dc < DV;
    cp_async16(vs + r * VC + dc, valid ? Vb + (j0 + r) * RSV + dc : Vb, valid);
  }
}

// With SPLIT = 2 the block's two groups of warps take alternate key tiles of the same query rows
// (twice the warps per row: rows with few blocks finish sooner); group 1 then hands its row maxima,
// sums and partial outputs to group 0 through shared memory, which merges and stores them.
extern "C" __global__ void __launch_bounds__(THREADS) KILN_ENTRY(const T* __restrict__ Q, const T* __restrict__ K,
    const T* __restrict__ V, KILN_MASK_PARAM T* __restrict__ Y) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* Qs = reinterpret_cast<T*>(smem_raw);
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g = lane >> 2, t4 = lane & 3;
  // Key group, warp row and thread within the group; plain constants and tid without a split
  // (the compiler cannot tell that tid < GT: BERT's heads took 166 registers instead of 134, ViT's
  // spilled).
  const int gp = SPLIT == 1 ? 0 : warp / (BM / 16), wr = SPLIT == 1 ? warp : warp % (BM / 16),
            gtid = SPLIT == 1 ? tid : tid % GT;
  T* Ks = Qs + BM * QC + gp * 2 * BN * KC;                   // this group's two K stages
  T* Vs = Qs + BM * QC + SPLIT * 2 * BN * KC + gp * 2 * BN * VC;  // and V stages
  const LI m0 = (LI)blockIdx.x * BM;
#if CAUSAL
  // The key tiles any row of this block sees: up to key (last row) + DIAG.
  const int NTB = (int)min((LI)NT, (min(m0 + BM, SQ) - 1 + DIAG) / BN + 1);
#else
  const int NTB = NT;
#endif
  for (LI bz = blockIdx.y; bz < NBATCH; bz += gridDim.y) {
    LI offQ = OFFQ, offK = OFFK, offV = OFFV, offY = OFFY, offM = 0;
    {
      LI r = bz;
#pragma unroll
      for (int d = BRANK - 1; d >= 0; --d) {
        const LI c = r % BDIMS[d];
        r /= BDIMS[d];
        offQ += c * BSQ[d], offK += c * BSK[d], offV += c * BSV[d], offY += c * BSY[d], offM += c * BSM[d];
      }
    }
    const T* Qb = Q + offQ;
    const T* Kb = K + offK;
    const T* Vb = V + offV;
    // Q and each group's first tile, then its second tile; Q into registers once the first landed.
#pragma unroll
    for (int c = tid; c < BM * (DP / 8); c += THREADS) {
      const int r = c / (DP / 8), dc = (c % (DP / 8)) * 8;
      const bool valid = m0 + r < SQ && dc < D;
      cp_async16(Qs + r * QC + dc, valid ? Qb + (m0 + r) * RSQ + dc : Qb, valid);
    }
    if (gp < NTB) load_kv(Ks, Vs, Kb, Vb, (LI)gp * BN, gtid);
    cp_async_commit();
    if (gp + SPLIT < NTB) load_kv(Ks + BN * KC, Vs + BN * VC, Kb, Vb, (LI)(gp + SPLIT) * BN, gtid);
    cp_async_commit();
    cp_async_wait<1>();
    __syncthreads();
    unsigned qf[DP / 16][4];
#pragma unroll
    for (int kk = 0; kk < DP / 16; ++kk)
      ldsm_x4(qf[kk], Qs + (wr * 16 + (lane & 15)) * QC + kk * 16 + (lane >> 4) * 8);

    float o[DVP / 8][4];
#pragma unroll
    for (int j = 0; j < DVP / 8; ++j) o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.f;
    float mrow[2] = {-kiln_inf(), -kiln_inf()}, lrow[2] = {0.f, 0.f};
    for (int kt = gp, it = 0; kt < NTB; kt += SPLIT, ++it) {
      const T* ks = Ks + (it & 1) * BN * KC;
      const T* vs = Vs + (it & 1) * BN * VC;
      // S = Q·Kᵀ for this warp's 16 rows and the tile's 64 keys.
      float s[BN / 8][4];
#pragma unroll
      for (int n = 0; n < BN / 8; ++n) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.f;
#pragma unroll
      for (int kk = 0; kk < DP / 16; ++kk) {
#pragma unroll
        for (int p = 0; p < BN / 16; ++p) {
          unsigned b[4];
          ldsm_x4(b, ks + (p * 16 + (lane & 7) + (lane >> 4) * 8) * KC + kk * 16 + ((lane >> 3) & 1) * 8);
          mma_step(s[2 * p], qf[kk], b[0], b[1]);
          mma_step(s[2 * p + 1], qf[kk], b[2], b[3]);
        }
      }
      // Scale and mask (log2 domain), keys past SK at -inf; the new row maxima over the quad.
      const LI j0 = (LI)kt * BN;
      float mnew[2] = {mrow[0], mrow[1]};
#pragma unroll
      for (int n = 0; n < BN / 8; ++n) {
#pragma unroll
        for (int q = 0; q < 4; ++q) {
          const LI col = j0 + n * 8 + 2 * t4 + (q & 1);
          float x = s[n][q] * (SCALE * LOG2E);
          const LI row = m0 + wr * 16 + g + (q >> 1) * 8;
#if HAS_MASK
          if (col < SK && row < SQ) x += kiln_ld(MASK[offM + row * MRS + col * MCS]) * LOG2E;
#endif
          if (col >= SK || (CAUSAL && col > row + DIAG)) x = -kiln_inf();
          s[n][q] = x;
          mnew[q >> 1] = fmaxf(mnew[q >> 1], x);
        }
      }
      float base[2];
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        mnew[h] = fmaxf(mnew[h], __shfl_xor_sync(0xffffffffu, mnew[h], 1));
        mnew[h] = fmaxf(mnew[h], __shfl_xor_sync(0xffffffffu, mnew[h], 2));
        base[h] = mnew[h] == -kiln_inf() ? 0.f : mnew[h];  // a row masked so far: exp2(-inf) = 0
        const float alpha = exp2f(mrow[h] - base[h]);
        mrow[h] = mnew[h];
        lrow[h] *= alpha;
#pragma unroll
        for (int j = 0; j < DVP / 8; ++j) o[j][2 * h] *= alpha, o[j][2 * h + 1] *= alpha;
      }
#pragma unroll
      for (int n = 0; n < BN / 8; ++n) {
#pragma unroll
        for (int q = 0; q < 4; ++q) {
          const float p = exp2f(s[n][q] - base[q >> 1]);
          s[n][q] = p;
          lrow[q >> 1] += p;
        }
      }
      // O += P·V: two adjacent m16n8 tiles of P are one m16n8k16 A fragment.
#pragma unroll
      for (int kk = 0; kk < BN / 16; ++kk) {
        const unsigned a[4] = {pack2(s[2 * kk][0], s[2 * kk][1]), pack2(s[2 * kk][2], s[2 * kk][3]),
                               pack2(s[2 * kk + 1][0], s[2 * kk + 1][1]), pack2(s[2 * kk + 1][2], s[2 * kk + 1][3])};
#pragma unroll
        for (int p = 0; p < DVP / 16; ++p) {
          unsigned b[4];
          ldsm_x4_trans(b, vs + (kk * 16 + (lane & 7) + ((lane >> 3) & 1) * 8) * VC + p * 16 + (lane >> 4) * 8);
          mma_step(o[2 * p], a, b[0], b[1]);
          mma_step(o[2 * p + 1], a, b[2], b[3]);
        }
      }
      cp_async_wait<0>();  // the next tile (issued an iteration ago; or nothing)
      group_sync(gp);      // visible to the whole group, and this stage is free again
      if (kt + 2 * SPLIT < NTB)
        load_kv(Ks + (it & 1) * BN * KC, Vs + (it & 1) * BN * VC, Kb, Vb, (LI)(kt + 2 * SPLIT) * BN, gtid);
      cp_async_commit();
    }
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      lrow[h] += __shfl_xor_sync(0xffffffffu, lrow[h], 1);
      lrow[h] += __shfl_xor_sync(0xffffffffu, lrow[h], 2);
    }
#if KILN_SPLIT > 1
    // Group 1's partial rows through shared memory (over the K/V stages, once all are done).
    float* part = reinterpret_cast<float*>(Qs + BM * QC);
    constexpr int PW = DVP / 2 + 4;  // floats per thread: o, then mrow and lrow
    __syncthreads();
    if (gp == 1) {
      float* mine = part + gtid * PW;
#pragma unroll
      for (int j = 0; j < DVP / 8; ++j)
#pragma unroll
        for (int q = 0; q < 4; ++q) mine[j * 4 + q] = o[j][q];
      mine[DVP / 2] = mrow[0], mine[DVP / 2 + 1] = mrow[1], mine[DVP / 2 + 2] = lrow[0], mine[DVP / 2 + 3] = lrow[1];
    }
    __syncthreads();
    if (gp == 0) {
      const float* other = part + gtid * PW;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const float m1 = other[DVP / 2 + h], m = fmaxf(mrow[h], m1), base = m == -kiln_inf() ? 0.f : m;
        const float a0 = exp2f(mrow[h] - base), a1 = exp2f(m1 - base);
        lrow[h] = lrow[h] * a0 + other[DVP / 2 + 2 + h] * a1;
#pragma unroll
        for (int j = 0; j < DVP / 8; ++j)
          o[j][2 * h] = o[j][2 * h] * a0 + other[j * 4 + 2 * h] * a1,
          o[j][2 * h + 1] = o[j][2 * h + 1] * a0 + other[j * 4 + 2 * h + 1] * a1;
      }
    }
#endif
    if (gp == 0) {
      float inv[2];
#pragma unroll
      for (int h = 0; h < 2; ++h)  // a fully masked row (-inf everywhere): NaN, as Softmax gives, or 0
        inv[h] = ZERO_MASKED_ROWS && lrow[h] == 0.f ? 0.f : 1.f / lrow[h];
#pragma unroll
      for (int j = 0; j < DVP / 8; ++j) {
        const int col = j * 8 + 2 * t4;
        if (col >= DV) continue;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const LI row = m0 + wr * 16 + g + h * 8;
          if (row < SQ)
            *reinterpret_cast<unsigned*>(Y + offY + row * RSY + col) = pack2(o[j][2 * h] * inv[h], o[j][2 * h + 1] * inv[h]);
        }
      }
    }
    __syncthreads();  // Q and the stages are reused by the next batch
  }
}
)CUDA";

}  // namespace

KernelLaunch emitAttention(const AttentionSpec &s) {
  if (std::string why = attentionUnsupported(s); !why.empty()) throw std::invalid_argument("attention: " + why);
  std::vector<int64_t> bdims = s.batchShape, bq = s.q.batchStrides, bk = s.k.batchStrides, bv = s.v.batchStrides,
                       by = s.y.batchStrides, bm(bdims.size(), 0);
  int64_t mrs = 0, mcs = 0;
  if (s.hasMask) {
    std::vector<int64_t> full = bdims;
    full.push_back(s.Sq);
    full.push_back(s.Sk);
    std::vector<int64_t> ms = broadcastStrides(s.maskShape, full);
    bm.assign(ms.begin(), ms.end() - 2);
    mrs = ms[ms.size() - 2], mcs = ms.back();
  }
  if (bdims.empty()) bdims = {1}, bq = bk = bv = by = bm = {0};
  int64_t nbatch = numElementsOf(bdims);
  auto extent = [&](const std::vector<int64_t> &bs, int64_t rows, int64_t rowStride, int64_t cols, int64_t offset = 0) {
    int64_t e = offset + (rows - 1) * std::abs(rowStride) + cols;
    for (size_t d = 0; d < bs.size(); ++d) e += (bdims[d] - 1) * std::abs(bs[d]);
    return e;
  };
  int64_t bound =
      std::max({extent(bq, s.Sq, s.q.rowStride, s.D, s.q.offset), extent(bk, s.Sk, s.k.rowStride, s.D, s.k.offset),
                extent(bv, s.Sk, s.v.rowStride, s.Dv, s.v.offset), extent(by, s.Sq, s.y.rowStride, s.Dv, s.y.offset),
                s.hasMask ? extent(bm, s.Sq, mrs, s.Sk * std::max<int64_t>(mcs, 1)) : 0});
  const int64_t dp = (s.D + 15) / 16 * 16, dvp = (s.Dv + 15) / 16 * 16;
  auto L = [](int64_t v) { return std::to_string(v) + "LL"; };
  std::string src = "// kiln attention: [" + std::to_string(nbatch) + "] Sq " + std::to_string(s.Sq) + ", Sk " +
                    std::to_string(s.Sk) + ", D " + std::to_string(s.D) + ", Dv " + std::to_string(s.Dv) +
                    (s.hasMask ? ", masked" : "") +
                    (s.causal ? ", causal (diagonal " + std::to_string(s.diagonal) + ")" : "") + "\n";
  src += kDevicePrelude;
  src += "#define KILN_INT8 0\n#define KILN_FP8 0\n";
  src += mmaHelpers(s.type);
  src += std::string("typedef ") + storageTypeName(s.type) + " T;\n";
  src += "typedef " + indexType(bound + (int64_t(1) << 20)) + " LI;\n";
  src += "constexpr LI SQ = " + L(s.Sq) + ", SK = " + L(s.Sk) + ", D = " + L(s.D) + ", DV = " + L(s.Dv) +
         ", NBATCH = " + L(nbatch) + ";\n";
  src += "constexpr int DP = " + std::to_string(dp) + ", DVP = " + std::to_string(dvp) + ";\n";
  src += "constexpr LI RSQ = " + L(s.q.rowStride) + ", RSK = " + L(s.k.rowStride) + ", RSV = " + L(s.v.rowStride) +
         ", RSY = " + L(s.y.rowStride) + ", MRS = " + L(mrs) + ", MCS = " + L(mcs) + ";\n";
  src += "constexpr LI OFFQ = " + L(s.q.offset) + ", OFFK = " + L(s.k.offset) + ", OFFV = " + L(s.v.offset) +
         ", OFFY = " + L(s.y.offset) + ";\n";
  src += "constexpr float SCALE = " + floatLiteral(s.scale) + ";\n";
  src += "constexpr int BRANK = " + std::to_string(bdims.size()) + ";\n";
  src += "__device__ constexpr LI BDIMS[] = " + arrayLit(bdims) + ";\n";
  src += "__device__ constexpr LI BSQ[] = " + arrayLit(bq) + ";\n";
  src += "__device__ constexpr LI BSK[] = " + arrayLit(bk) + ";\n";
  src += "__device__ constexpr LI BSV[] = " + arrayLit(bv) + ";\n";
  src += "__device__ constexpr LI BSY[] = " + arrayLit(by) + ";\n";
  src += "__device__ constexpr LI BSM[] = " + arrayLit(bm) + ";\n";
  src += std::string("#define HAS_MASK ") + (s.hasMask ? "1" : "0") + "\n";
  src += std::string("#define CAUSAL ") + (s.causal ? "1" : "0") + "\nconstexpr LI DIAG = " + L(s.diagonal) + ";\n";
  src += std::string("#define ZERO_MASKED_ROWS ") + (s.zeroMaskedRows ? "1" : "0") + "\n";
  src +=
      "#define KILN_BM " + std::to_string(s.rowsPerBlock) + "\n#define KILN_SPLIT " + std::to_string(s.keySplit) + "\n";
  std::string body = replaceAll(kAttentionBody, "PACK_TYPE", s.type == ElemType::BF16 ? "bf16x2" : "f16x2");
  body = replaceAll(body, "KILN_MASK_PARAM",
                    s.hasMask ? std::string("const ") + storageTypeName(s.maskType) + "* __restrict__ MASK," : "");
  src += body;
  KernelLaunch out = finalizeKernel(std::string("attn_") + typeTag(s.type), src);
  const int64_t rows = s.rowsPerBlock;
  out.block = {static_cast<uint32_t>(rows * 2 * s.keySplit), 1, 1};
  out.grid = {static_cast<uint32_t>(ceilDiv(s.Sq, rows)), static_cast<uint32_t>(std::min<int64_t>(nbatch, 65535)), 1};
  out.sharedBytes = static_cast<uint32_t>((rows * (dp + 8) + s.keySplit * 2 * 64 * (dp + 8 + dvp + 8)) * 2);
  out.numParams = s.hasMask ? 5 : 4;
  return out;
}

}  // namespace kiln::codegen

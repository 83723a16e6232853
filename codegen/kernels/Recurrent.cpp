#include "codegen/kernels/Recurrent.h"

#include "codegen/kernels/KernelUtil.h"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

namespace kiln::codegen {

using namespace kernels;

namespace {

// The kernel. The emitter defines: T_, B_, H_, D_, G_ (gates), CELL (0 LSTM, 1 GRU, 2 RNN), LBR,
// INPUT_FORGET, HAS_CLIP/CLIP_V, REV0/REV1, LAYOUT1, HAS_RB/HAS_SEQ/SEQ_T/HAS_H0/HAS_C0/HAS_P,
// WRITE_Y/WRITE_YH/WRITE_YC, CLUSTER, HS (hidden units per CTA), NL (its gate columns), BC (batch
// rows per cluster), NCHUNK, MP (rows of the product, BC rounded up), KP (reduction length,
// padded), KS / RKS (row strides of the h operand and of R in shared memory), MMA, R_SMEM, NG
// (n-tiles per warp item), NTHREADS, STYPE (storage), ATYPE (product operand type), the shared
// memory offsets OFF_*, SMEM_BYTES, and act_<d>_<slot>(x).
const char *kRecurrenceBody = R"CUDA(
#define GH_ (G_ * H_)
#define DGH_ (D_ * GH_)
#define NWARPS (NTHREADS / 32)
#define ITEMS ((BC * HS + NTHREADS - 1) / NTHREADS)

// <kiln-asm> Everything written in PTX: the host emulation of this kernel
// (tests/codegen/recurrent_emulation_test.cpp) replaces this region with C++ equivalents.
KILN_DEV unsigned kiln_saddr(const void *p) {
  unsigned r;
  asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(r) : "l"(p));
  return r;
}
#if CLUSTER > 1
KILN_DEV unsigned kiln_cluster_rank() { unsigned r; asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r)); return r; }
KILN_DEV void kiln_step_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
// The address of the same shared-memory spot in CTA `rank` of the cluster, and stores there.
KILN_DEV unsigned kiln_map(unsigned addr, unsigned rank) {
  unsigned r;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(addr), "r"(rank));
  return r;
}
KILN_DEV void kiln_st_remote16(unsigned a, const unsigned *v) {
  asm volatile("st.shared::cluster.v4.u32 [%0], {%1, %2, %3, %4};" :: "r"(a), "r"(v[0]), "r"(v[1]), "r"(v[2]), "r"(v[3]) : "memory");
}
KILN_DEV void kiln_st_remote4(unsigned a, unsigned v) { asm volatile("st.shared::cluster.u32 [%0], %1;" :: "r"(a), "r"(v) : "memory"); }
KILN_DEV void kiln_st_remote2(unsigned a, unsigned short v) {
  asm volatile("st.shared::cluster.u16 [%0], %1;" :: "r"(a), "h"(v) : "memory");
}
#else
KILN_DEV unsigned kiln_cluster_rank() { return 0; }
KILN_DEV void kiln_step_sync() { __syncthreads(); }
#endif
#if MMA
// D += A·B, m16n8k16, fp32 accumulation (fragments as PTX's mma.m16n8k16 defines them).
KILN_DEV void kiln_mma(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32." MMA_TYPE "." MMA_TYPE ".f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
#endif
// </kiln-asm>

// This CTA's new slice (stg, [BC][HS]) into columns [rank·HS, (rank+1)·HS) of dst ([MP][KS]) in
// every CTA of the cluster, in 16-, 4- or 2-byte words.
KILN_DEV void kiln_exchange(const ATYPE *stg, ATYPE *dst, unsigned rank) {
  constexpr int ROWB = HS * (int)sizeof(ATYPE);
  constexpr int WB = ROWB % 16 == 0 ? 16 : ROWB % 4 == 0 ? 4 : 2;
  constexpr int WPR = ROWB / WB;
  constexpr int N = BC * WPR * CLUSTER;
  for (int k = threadIdx.x; k < N; k += NTHREADS) {
    const int peer = k / (BC * WPR), rem = k % (BC * WPR), b = rem / WPR, w = rem % WPR;
    const unsigned char *src = (const unsigned char *)(stg + b * HS) + w * WB;
    unsigned char *dl = (unsigned char *)(dst + b * KS + rank * HS) + w * WB;
#if CLUSTER > 1
    const unsigned a = kiln_map(kiln_saddr(dl), (unsigned)peer);
    if (WB == 16) kiln_st_remote16(a, (const unsigned *)src);
    else if (WB == 4) kiln_st_remote4(a, *(const unsigned *)src);
    else kiln_st_remote2(a, *(const unsigned short *)src);
#else
    (void)peer;
    if (WB == 16) {
      const unsigned *v = (const unsigned *)src;
      unsigned *o = (unsigned *)dl;
      o[0] = v[0], o[1] = v[1], o[2] = v[2], o[3] = v[3];
    } else if (WB == 4) {
      *(unsigned *)dl = *(const unsigned *)src;
    } else {
      *(unsigned short *)dl = *(const unsigned short *)src;
    }
#endif
  }
}

#if R_SMEM
typedef ATYPE RROW_T;
#else
typedef STYPE RROW_T;
#endif

// Row n of this CTA's R slice: gate n / HS of hidden unit rank·HS + n % HS.
KILN_DEV const RROW_T *kiln_rrow(const RROW_T *rs, const STYPE *rg, unsigned rank, int n) {
#if R_SMEM
  (void)rg; (void)rank;
  return rs + n * RKS;
#else
  (void)rs;
  return rg + ((n / HS) * H_ + rank * HS + n % HS) * H_;
#endif
}

// gs[row][n] = Σ_k A[row][k] · R[n][k] for gate columns n in [n0, n1) of the slice.
#if MMA
#define LD32(p) (*(const unsigned *)(p))
KILN_DEV void kiln_products(const ATYPE *A, const RROW_T *rs, const STYPE *rg, unsigned rank, float *gs, int n0, int n1) {
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, q = lane & 3;
  const int groups = (n1 - n0) / (8 * NG);
  for (int item = warp; item < (MP / 16) * groups; item += NWARPS) {
    const int mt = item / groups, ng = item % groups;
    float acc[NG][4];
    const RROW_T *rr[NG];
#pragma unroll
    for (int i = 0; i < NG; ++i) {
      acc[i][0] = acc[i][1] = acc[i][2] = acc[i][3] = 0.f;
      rr[i] = kiln_rrow(rs, rg, rank, n0 + (ng * NG + i) * 8 + g) + 2 * q;
    }
    const ATYPE *a0 = A + (mt * 16 + g) * KS + 2 * q, *a1 = a0 + 8 * KS;
#pragma unroll 4
    for (int k = 0; k < KP; k += 16) {
      const unsigned a[4] = {LD32(a0 + k), LD32(a1 + k), LD32(a0 + k + 8), LD32(a1 + k + 8)};
#pragma unroll
      for (int i = 0; i < NG; ++i) kiln_mma(acc[i], a, LD32(rr[i] + k), LD32(rr[i] + k + 8));
    }
#pragma unroll
    for (int i = 0; i < NG; ++i) {
      const int col = n0 + (ng * NG + i) * 8 + 2 * q, row = mt * 16 + g;
      gs[row * NL + col] = acc[i][0];
      gs[row * NL + col + 1] = acc[i][1];
      gs[(row + 8) * NL + col] = acc[i][2];
      gs[(row + 8) * NL + col + 1] = acc[i][3];
    }
  }
}
#else
KILN_DEV void kiln_products(const ATYPE *A, const RROW_T *rs, const STYPE *rg, unsigned rank, float *gs, int n0, int n1) {
  const int cols = n1 - n0;
  for (int item = threadIdx.x; item < cols * (MP / 8); item += NTHREADS) {
    const int n = n0 + item % cols, r0 = (item / cols) * 8;
    const RROW_T *rr = kiln_rrow(rs, rg, rank, n);
    float acc[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
    for (int k = 0; k < H_; ++k) {
      const float r = kiln_ld(rr[k]);
#pragma unroll
      for (int i = 0; i < 8; ++i) acc[i] += A[(r0 + i) * KS + k] * r;
    }
#pragma unroll
    for (int i = 0; i < 8; ++i) gs[(r0 + i) * NL + n] = acc[i];
  }
}
#endif

#if HAS_CLIP
#define CLIPF(x) fminf(fmaxf((x), -CLIP_V), CLIP_V)
#else
#define CLIPF(x) (x)
#endif
#define ACT(slot, x) (d == 0 ? act_0_##slot(x) : act_1_##slot(x))
#define REV(d) ((d) == 0 ? REV0 : REV1)
#if LAYOUT1
#define XP_ROW(t, row) (((long long)(row) * T_ + (t)) * DGH_)
#define Y_IDX(t, row, hj) ((((long long)(row) * T_ + (t)) * D_ + d) * H_ + (hj))
#define S_IDX(row, hj) (((long long)(row) * D_ + d) * H_ + (hj))
#else
#define XP_ROW(t, row) (((long long)(t) * B_ + (row)) * DGH_)
#define Y_IDX(t, row, hj) ((((long long)(t) * D_ + d) * B_ + (row)) * H_ + (hj))
#define S_IDX(row, hj) (((long long)d * B_ + (row)) * H_ + (hj))
#endif
#define PREFETCH (ITEMS * G_ <= 32)
#if PREFETCH
#define ITEM_LOOP _Pragma("unroll") for (int i = 0; i < ITEMS; ++i)
#define XPV(gate) xpv[i][gate]
#else
#define ITEM_LOOP for (int i = 0; i < ITEMS; ++i)
#define XPV(gate) kiln_ld(xr[(gate) * H_])
#endif
#if HAS_RB
#define RBV(gate) kiln_ld(rb[d * GH_ + (gate) * H_ + hj])
#else
#define RBV(gate) 0.f
#endif

extern "C" __global__ void __launch_bounds__(NTHREADS, 1) KILN_CLUSTER_DIMS KILN_ENTRY(KILN_PARAMS) {
  extern __shared__ __attribute__((aligned(16))) unsigned char smem[];
  ATYPE *hA0 = (ATYPE *)(smem + OFF_HA0), *hA1 = (ATYPE *)(smem + OFF_HA1);
  ATYPE *stg = (ATYPE *)(smem + OFF_STG);
  float *gs = (float *)(smem + OFF_GS), *hown = (float *)(smem + OFF_HOWN), *cown = (float *)(smem + OFF_COWN);
  int *lens = (int *)(smem + OFF_LENS);
#if R_SMEM
  RROW_T *rs = (RROW_T *)(smem + OFF_RS);
#else
  const RROW_T *rs = 0;
#endif
#if CELL == 1 && !LBR
  ATYPE *rA = (ATYPE *)(smem + OFF_RA);
#endif
  const unsigned rank = kiln_cluster_rank();
  const int cl = blockIdx.x / CLUSTER, d = cl / NCHUNK, chunk = cl % NCHUNK;
  const STYPE *rg = R + (long long)d * GH_ * H_;

  for (int k = threadIdx.x; k < SMEM_BYTES / 4; k += NTHREADS) ((unsigned *)smem)[k] = 0u;
  __syncthreads();
#if R_SMEM
  for (int k = threadIdx.x; k < NL * H_; k += NTHREADS) {
    const int n = k / H_, c = k % H_;
    rs[n * RKS + c] = kiln_st<ATYPE>(kiln_ld(rg[((n / HS) * H_ + rank * HS + n % HS) * H_ + c]));
  }
#endif
  for (int k = threadIdx.x; k < BC * H_; k += NTHREADS) {
    const int b = k / H_, hj = k % H_, row = chunk * BC + b;
#if HAS_H0
    if (row < B_) hA0[b * KS + hj] = kiln_st<ATYPE>(kiln_ld(h0[S_IDX(row, hj)]));
#endif
    (void)row; (void)hj; (void)b;
  }
  for (int k = threadIdx.x; k < BC * HS; k += NTHREADS) {
    const int b = k / HS, j = k % HS, row = chunk * BC + b, hj = rank * HS + j;
    if (row >= B_) continue;
#if HAS_H0
    hown[k] = kiln_ld(h0[S_IDX(row, hj)]);
#endif
#if HAS_C0
    cown[k] = kiln_ld(c0[S_IDX(row, hj)]);
#endif
    (void)hj;
  }
  for (int b = threadIdx.x; b < BC; b += NTHREADS) {
    const int row = chunk * BC + b;
#if HAS_SEQ
    const long long l = row < B_ ? (long long)seq[row] : 0;
    lens[b] = l < 0 ? 0 : l > T_ ? T_ : (int)l;
#else
    lens[b] = row < B_ ? T_ : 0;
#endif
  }
  kiln_step_sync();  // every CTA of the cluster runs and is initialised before peers write to it

  for (int s = 0; s < T_; ++s) {
    const ATYPE *hcur = (s & 1) ? hA1 : hA0;
    ATYPE *hnext = (s & 1) ? hA0 : hA1;
#if PREFETCH
    // This step's projections of this thread's units, loaded before the products so their
    // latency hides behind them.
    float xpv[ITEMS][G_];
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
      const int it = threadIdx.x + i * NTHREADS, b = it / HS, row = chunk * BC + b, hj = rank * HS + it % HS;
      const int len = it < BC * HS && row < B_ ? lens[b] : 0;
      if (s < len) {
        const STYPE *xr = XP + XP_ROW(REV(d) ? len - 1 - s : s, row) + d * GH_ + hj;
#pragma unroll
        for (int g = 0; g < G_; ++g) xpv[i][g] = kiln_ld(xr[g * H_]);
      }
    }
#endif
#if CELL == 1 && !LBR
    // Phase 1: z and r; r ⊙ h(t-1) to every CTA.
    kiln_products(hcur, rs, rg, rank, gs, 0, 2 * HS);
    __syncthreads();
    ITEM_LOOP {
      const int it = threadIdx.x + i * NTHREADS;
      if (it >= BC * HS) break;
      const int b = it / HS, j = it % HS, row = chunk * BC + b, hj = rank * HS + j;
      if (row >= B_) continue;
      const int len = lens[b];
      float rh = 0.f;
      if (s < len) {
        const int t = REV(d) ? len - 1 - s : s;
        const STYPE *xr = XP + XP_ROW(t, row) + d * GH_ + hj;
        const float z = ACT(f, CLIPF(gs[b * NL + j] + XPV(0) + RBV(0)));
        const float r = ACT(f, CLIPF(gs[b * NL + HS + j] + XPV(1) + RBV(1)));
        cown[it] = z;  // (GRU has no cell state: the slot holds z until phase 2)
        rh = r * hown[it];
      }
      stg[it] = kiln_st<ATYPE>(rh);
    }
    __syncthreads();
    kiln_exchange(stg, rA, rank);
    kiln_step_sync();
    // Phase 2: (r ⊙ h)·R_hᵀ.
    kiln_products(rA, rs, rg, rank, gs, 2 * HS, 3 * HS);
#else
    kiln_products(hcur, rs, rg, rank, gs, 0, NL);
#endif
    __syncthreads();
    ITEM_LOOP {
      const int it = threadIdx.x + i * NTHREADS;
      if (it >= BC * HS) break;
      const int b = it / HS, j = it % HS, row = chunk * BC + b, hj = rank * HS + j;
      if (row >= B_) continue;
      const int len = lens[b];
      float h = hown[it];
      if (s < len) {
        const int t = REV(d) ? len - 1 - s : s;
        const STYPE *xr = XP + XP_ROW(t, row) + d * GH_ + hj;
        const float *gr = gs + b * NL + j;
#if CELL == 0
        float c = cown[it];
        float pi = gr[0] + XPV(0) + RBV(0), po = gr[HS] + XPV(1) + RBV(1);
        float pf = gr[2 * HS] + XPV(2) + RBV(2), pc = gr[3 * HS] + XPV(3) + RBV(3);
#if HAS_P
        const STYPE *pp = P + d * 3 * H_;
        pi += kiln_ld(pp[hj]) * c;
        pf += kiln_ld(pp[2 * H_ + hj]) * c;
#endif
        const float ig = ACT(f, CLIPF(pi));
#if INPUT_FORGET
        const float fg = 1.f - ig;
#else
        const float fg = ACT(f, CLIPF(pf));
#endif
        const float cg = ACT(g, CLIPF(pc));
        c = fg * c + ig * cg;
#if HAS_P
        po += kiln_ld(pp[H_ + hj]) * c;
#endif
        const float og = ACT(f, CLIPF(po));
        h = og * ACT(h, c);
        cown[it] = c;
#elif CELL == 1
#if LBR
        const float z = ACT(f, CLIPF(gr[0] + XPV(0) + RBV(0)));
        const float r = ACT(f, CLIPF(gr[HS] + XPV(1) + RBV(1)));
        const float hh = ACT(g, CLIPF(XPV(2) + r * (gr[2 * HS] + RBV(2))));
#else
        const float z = cown[it];
        const float hh = ACT(g, CLIPF(XPV(2) + gr[2 * HS] + RBV(2)));
#endif
        h = (1.f - z) * hh + z * h;
#else
        h = ACT(f, CLIPF(gr[0] + XPV(0) + RBV(0)));
#endif
        hown[it] = h;
#if WRITE_Y
        Y[Y_IDX(t, row, hj)] = kiln_st<STYPE>(h);
#endif
      } else {
#if WRITE_Y
        Y[Y_IDX(s, row, hj)] = kiln_st<STYPE>(0.f);
#endif
      }
      stg[it] = kiln_st<ATYPE>(h);
    }
    __syncthreads();
    kiln_exchange(stg, hnext, rank);
    kiln_step_sync();
  }
  for (int it = threadIdx.x; it < BC * HS; it += NTHREADS) {
    const int b = it / HS, j = it % HS, row = chunk * BC + b, hj = rank * HS + j;
    if (row >= B_) continue;
#if WRITE_YH
    Yh[S_IDX(row, hj)] = kiln_st<STYPE>(hown[it]);
#endif
#if WRITE_YC
    Yc[S_IDX(row, hj)] = kiln_st<STYPE>(cown[it]);
#endif
    (void)hj;
  }
}
)CUDA";

int64_t roundUp(int64_t v, int64_t m) { return (v + m - 1) / m * m; }
int64_t gates(RecurrentCell c) { return c == RecurrentCell::Lstm ? 4 : c == RecurrentCell::Gru ? 3 : 1; }

// Shared-memory layout of a plan (byte offsets, 16-byte aligned).
struct Layout {
  int64_t HS, NL, BC, MP, KP, KS, RKS, nchunk;
  int64_t rs, ha0, ha1, ra, stg, gs, hown, cown, lens, total;
};

Layout layoutOf(const RecurrenceSpec &s, const RecurrencePlan &p) {
  Layout l;
  l.HS = s.H / p.cluster;
  l.NL = gates(s.cell) * l.HS;
  l.BC = std::min<int64_t>(p.batchChunk, s.B);
  l.nchunk = (s.B + l.BC - 1) / l.BC;
  const int64_t ab = p.tensorCores ? 2 : 4;  // operand bytes
  if (p.tensorCores) {
    l.MP = roundUp(l.BC, 16), l.KP = roundUp(s.H, 16), l.KS = l.KP + 8, l.RKS = l.KP + 8;
  } else {
    l.MP = roundUp(l.BC, 8), l.KP = s.H, l.KS = roundUp(s.H, 4), l.RKS = s.H + 1;
  }
  int64_t at = 0;
  auto take = [&](int64_t bytes) {
    int64_t o = at;
    at = roundUp(at + bytes, 16);
    return o;
  };
  l.rs = p.weightsInShared ? take(l.NL * l.RKS * ab) : 0;
  l.ha0 = take(l.MP * l.KS * ab);
  l.ha1 = take(l.MP * l.KS * ab);
  l.ra = s.cell == RecurrentCell::Gru && !s.linearBeforeReset ? take(l.MP * l.KS * ab) : 0;
  l.stg = take(l.BC * l.HS * ab);
  l.gs = take(l.MP * l.NL * 4);
  l.hown = take(l.BC * l.HS * 4);
  l.cown = take(l.BC * l.HS * 4);
  l.lens = take(l.BC * 4);
  l.total = at;
  return l;
}

void checkSpec(const RecurrenceSpec &s) {
  if (s.T < 1 || s.B < 1 || s.H < 1 || (s.D != 1 && s.D != 2))
    throw std::invalid_argument("recurrence: sizes must be positive and directions 1 or 2");
  if (s.type != ElemType::F32 && s.type != ElemType::F16 && s.type != ElemType::BF16)
    throw std::invalid_argument("recurrence: storage must be f32, f16 or bf16");
  if (s.cell != RecurrentCell::Lstm && (s.hasC0 || s.hasP || s.writeYc || s.inputForget))
    throw std::invalid_argument("recurrence: initial_c, P, Y_c and input_forget belong to LSTM");
}

std::string actExpr(const RecurrentActivation &a) {
  std::string al = floatLiteral(a.alpha), be = floatLiteral(a.beta);
  switch (a.kind) {
    case RecurrentAct::Sigmoid: return "kiln_sigmoid(x)";
    case RecurrentAct::Tanh: return "tanhf(x)";
    case RecurrentAct::Relu: return "fmaxf(x, 0.f)";
    case RecurrentAct::HardSigmoid: return "fminf(fmaxf(" + al + " * x + " + be + ", 0.f), 1.f)";
    case RecurrentAct::Affine: return al + " * x + " + be;
    case RecurrentAct::LeakyRelu: return "(x >= 0.f ? x : " + al + " * x)";
    case RecurrentAct::ThresholdedRelu: return "(x > " + al + " ? x : 0.f)";
    case RecurrentAct::ScaledTanh: return al + " * tanhf(" + be + " * x)";
    case RecurrentAct::Elu: return "(x >= 0.f ? x : " + al + " * (expf(x) - 1.f))";
    case RecurrentAct::Softsign: return "(x / (1.f + fabsf(x)))";
    case RecurrentAct::Softplus: return "kiln_softplus(x)";
  }
  return "x";
}

}  // namespace

std::string RecurrencePlan::describe() const {
  char buf[160];
  std::snprintf(buf, sizeof buf, "cluster %d, %lld rows, %s, R in %s (%u KiB shared)", cluster,
                static_cast<long long>(batchChunk), tensorCores ? "tensor cores" : "fp32 FMA",
                weightsInShared ? "shared memory" : "global memory", (sharedBytes + 1023) / 1024);
  return buf;
}

uint32_t recurrenceSharedBytes(const RecurrenceSpec &s, const RecurrencePlan &p) {
  return static_cast<uint32_t>(layoutOf(s, p).total);
}

RecurrencePlan planRecurrence(const RecurrenceSpec &s, const target::GpuTarget &t) {
  checkSpec(s);
  RecurrencePlan p;
  p.tensorCores = s.type != ElemType::F32 && s.H % 16 == 0 && t.has(target::Feature::MmaHalf);
  p.batchChunk = std::min<int64_t>(s.B, 16);
  const bool clusters = t.has(target::Feature::Tma);
  std::vector<int> valid;
  for (int c : {1, 2, 4, 8}) {
    if (c > 1 && !clusters) break;
    if (s.H % c != 0 || (p.tensorCores && (s.H / c) % 8 != 0)) continue;
    valid.push_back(c);
  }
  auto fits = [&](int c, bool inShared) {
    RecurrencePlan q = p;
    q.cluster = c, q.weightsInShared = inShared;
    return recurrenceSharedBytes(s, q) <= uint32_t(t.maxSharedPerBlock);
  };
  int chosen = 0;
  for (int c : valid)
    if (fits(c, true) && gates(s.cell) * (s.H / c) <= 128) {
      chosen = c;
      break;
    }
  if (!chosen)
    for (int c : valid)
      if (fits(c, true)) {
        chosen = c;
        break;
      }
  if (chosen) {
    p.cluster = chosen;
  } else {
    p.cluster = valid.back();
    p.weightsInShared = false;
    if (!fits(p.cluster, false))
      throw std::invalid_argument("recurrence: hidden size " + std::to_string(s.H) +
                                  " needs more shared memory than the target has, even with R in global memory");
  }
  p.sharedBytes = recurrenceSharedBytes(s, p);
  return p;
}

KernelLaunch emitRecurrence(const RecurrenceSpec &s, const RecurrencePlan &p) {
  checkSpec(s);
  if (s.H % p.cluster != 0 || (p.tensorCores && ((s.H / p.cluster) % 8 != 0 || s.H % 16 != 0)) ||
      (p.tensorCores && s.type == ElemType::F32))
    throw std::invalid_argument("recurrence: the plan does not fit the spec");
  const Layout l = layoutOf(s, p);
  const char *stype = storageTypeName(s.type);
  const char *atype = p.tensorCores ? stype : "float";
  std::string src = kDevicePrelude;
  auto def = [&](const std::string &name, int64_t v) { src += "#define " + name + " " + std::to_string(v) + "\n"; };
  def("T_", s.T), def("B_", s.B), def("H_", s.H), def("D_", s.D), def("G_", gates(s.cell));
  def("CELL", int64_t(s.cell));
  def("LBR", s.linearBeforeReset), def("INPUT_FORGET", s.inputForget);
  def("HAS_CLIP", s.clip > 0);
  if (s.clip > 0) src += "#define CLIP_V " + floatLiteral(s.clip) + "\n";
  def("REV0", s.reverse[0]), def("REV1", s.reverse[1]), def("LAYOUT1", s.layout1);
  def("HAS_RB", s.hasRB), def("HAS_SEQ", s.hasSeqLens), def("HAS_H0", s.hasH0), def("HAS_C0", s.hasC0);
  def("HAS_P", s.hasP), def("WRITE_Y", s.writeY), def("WRITE_YH", s.writeYh), def("WRITE_YC", s.writeYc);
  def("CLUSTER", p.cluster), def("HS", l.HS), def("NL", l.NL), def("BC", l.BC), def("NCHUNK", l.nchunk);
  def("MP", l.MP), def("KP", l.KP), def("KS", l.KS), def("RKS", l.RKS);
  def("MMA", p.tensorCores), def("R_SMEM", p.weightsInShared), def("NTHREADS", p.threads);
  // n-tiles per warp item: as many as still give every warp an item (more reuse of the A
  // fragments per k step), dividing one gate's tiles (GRU's phases take gate ranges).
  const int64_t tiles = l.HS / 8, warps = p.threads / 32;
  int64_t ng = 1;
  for (int64_t c : {4, 2})
    if (p.tensorCores && tiles % c == 0 && (l.MP / 16) * (gates(s.cell) * tiles / c) >= warps) {
      ng = c;
      break;
    }
  def("NG", ng);
  def("OFF_RS", l.rs), def("OFF_HA0", l.ha0), def("OFF_HA1", l.ha1), def("OFF_RA", l.ra), def("OFF_STG", l.stg);
  def("OFF_GS", l.gs), def("OFF_HOWN", l.hown), def("OFF_COWN", l.cown), def("OFF_LENS", l.lens);
  def("SMEM_BYTES", l.total);
  src += std::string("#define STYPE ") + stype + "\n#define ATYPE " + atype + "\n";
  src += std::string("#define MMA_TYPE \"") + (s.type == ElemType::BF16 ? "bf16" : "f16") + "\"\n";
  src += p.cluster > 1 ? "#define KILN_CLUSTER_DIMS __cluster_dims__(" + std::to_string(p.cluster) + ", 1, 1)\n"
                       : "#define KILN_CLUSTER_DIMS\n";
  const char *slots[] = {"f", "g", "h"};
  for (int d = 0; d < 2; ++d)
    for (int k = 0; k < 3; ++k) {
      const RecurrentActivation &a = s.acts[d < s.D ? d : 0][k];
      src += std::string("KILN_DEV float act_") + std::to_string(d) + "_" + slots[k] + "(float x) { return " +
             actExpr(a) + "; }\n";
    }
  std::string params = std::string("const ") + stype + " *__restrict__ XP, const " + stype + " *__restrict__ R";
  auto param = [&](bool on, const std::string &text) {
    if (on) params += ", " + text;
  };
  param(s.hasRB, std::string("const ") + stype + " *__restrict__ rb");
  param(s.hasSeqLens, std::string("const ") + (s.seqLensI64 ? "long long" : "int") + " *__restrict__ seq");
  param(s.hasH0, std::string("const ") + stype + " *__restrict__ h0");
  param(s.hasC0, std::string("const ") + stype + " *__restrict__ c0");
  param(s.hasP, std::string("const ") + stype + " *__restrict__ P");
  param(s.writeY, std::string(stype) + " *__restrict__ Y");
  param(s.writeYh, std::string(stype) + " *__restrict__ Yh");
  param(s.writeYc, std::string(stype) + " *__restrict__ Yc");
  src += "#define KILN_PARAMS " + params + "\n";
  src += kRecurrenceBody;
  const char *cell = s.cell == RecurrentCell::Lstm ? "lstm" : s.cell == RecurrentCell::Gru ? "gru" : "rnn";
  KernelLaunch k = finalizeKernel(std::string(cell) + "_" + typeTag(s.type), src);
  k.grid = {static_cast<uint32_t>(s.D * l.nchunk * p.cluster), 1, 1};
  k.block = {static_cast<uint32_t>(p.threads), 1, 1};
  k.sharedBytes = static_cast<uint32_t>(l.total);
  k.numParams = 2 + s.hasRB + s.hasSeqLens + s.hasH0 + s.hasC0 + s.hasP + s.writeY + s.writeYh + s.writeYc;
  return k;
}

}  // namespace kiln::codegen

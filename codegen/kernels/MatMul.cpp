#include "codegen/kernels/MatMul.h"

#include "codegen/kernels/KernelUtil.h"

#include <algorithm>
#include <cstdlib>
#include <stdexcept>

namespace kiln::codegen {

using namespace kernels;

namespace {

// Batch offsets of A and B for batch index bz (BDIMS, BSA, BSB are emitted constants).
const char *kBatchOffsets = R"CUDA(
    LI offA = 0, offB = 0;
    {
      LI r = bz;
#pragma unroll
      for (int d = BRANK - 1; d >= 0; --d) {
        const LI c = r % BDIMS[d];
        r /= BDIMS[d];
        offA += c * BSA[d];
        offB += c * BSB[d];
      }
    }
)CUDA";

// Element (gm, gk) of A in ACC (float; double for f64 products), the prologue applied, 0 outside
// [M, K] (and outside the image for im2col).
const char *kLoadAElement = R"CUDA(
KILN_DEV ACC load_a(KILN_PRO_PARAMS const TA* __restrict__ A, LI gm, LI gk) {
  if (gm >= M || gk >= K) return ACC(0);
#if KILN_CONV
  const LI ow = gm % OW, t = gm / OW, oh = t % OH, img = t / OH;
  const LI c = gk % CC, tap = gk / CC, kw = tap % KW, kh = tap / KW;
  const LI ih = oh * SH - PT + kh * DH, iw = ow * SW - PL + kw * DW;
  if (ih < 0 || ih >= IH || iw < 0 || iw >= IW) return ACC(0);
  return kiln_ld(KILN_PRO_APPLY(A[((img * IH + ih) * IW + iw) * CC + c]));
#else
  return kiln_ld(KILN_PRO_APPLY(A[gm * RSA + gk * CSA]));
#endif
}
)CUDA";

// ---- fp32 / fp64 SIMT (ACC: the operands' type) ---------------------------------------------------------------------------------

const char *kSimtBody = R"CUDA(
constexpr int BK = 16, TM = BM / 16, TN = BN / 16, THREADS = 256;
constexpr bool EVEN_M = M % BM == 0, EVEN_N = N % BN == 0;

extern "C" __global__ void __launch_bounds__(THREADS) KILN_ENTRY(const TA* __restrict__ A,
    const T* __restrict__ B, KILN_PRO_PARAMS KILN_EPILOGUE_PARAMS OT* __restrict__ C) {
  __shared__ ACC As[BK][BM + 4];
  __shared__ ACC Bs[BK][BN + 4];
  const int tid = threadIdx.x;
  const int tx = tid % 16, ty = tid / 16;
  const LI m0 = (LI)blockIdx.y * BM, n0 = (LI)blockIdx.x * BN;
  for (LI bz = blockIdx.z; bz < NBATCH; bz += gridDim.z) {
KILN_BATCH_OFFSETS
    const TA* Ab = A + offA;
    const T* Bb = B + offB;
    ACC accum[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
      for (int j = 0; j < TN; ++j) accum[i][j] = ACC(0);

    for (LI k0 = 0; k0 < K; k0 += BK) {
      // A tile (BM x BK), consecutive threads along A's contiguous dim.
#pragma unroll
      for (int l = tid; l < BM * BK; l += THREADS) {
        const int r = A_MCONTIG ? l % BM : l / BK;
        const int kk = A_MCONTIG ? l / BM : l % BK;
        As[kk][r] = load_a(KILN_PRO_ARGS Ab, m0 + r, k0 + kk);
      }
      // B tile (BK x BN).
#pragma unroll
      for (int l = tid; l < BK * BN; l += THREADS) {
        const int c = B_KCONTIG ? l / BK : l % BN;
        const int kk = B_KCONTIG ? l % BK : l / BN;
        const LI gn = n0 + c, gk = k0 + kk;
        Bs[kk][c] = (gn < N && gk < K) ? kiln_ld(Bb[gk * RSB + gn * CSB]) : ACC(0);
      }
      __syncthreads();
#pragma unroll
      for (int kk = 0; kk < BK; ++kk) {
        ACC a[TM], b[TN];
#pragma unroll
        for (int i = 0; i < TM; ++i) a[i] = As[kk][ty + i * 16];
#pragma unroll
        for (int j = 0; j < TN; ++j) b[j] = Bs[kk][tx + j * 16];
#pragma unroll
        for (int i = 0; i < TM; ++i)
#pragma unroll
          for (int j = 0; j < TN; ++j) accum[i][j] = fma(a[i], b[j], accum[i][j]);
      }
      __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < TM; ++i) {
      const LI gm = m0 + ty + i * 16;
      if (!EVEN_M && gm >= M) continue;
#pragma unroll
      for (int j = 0; j < TN; ++j) {
        const LI gn = n0 + tx + j * 16;
        if (!EVEN_N && gn >= N) continue;
        const ACC acc = accum[i][j];
        const LI L = bz * (M * N) + gm * N + gn;
        {
KILN_EPILOGUE
        }
      }
    }
  }
}
)CUDA";

// ---- Tensor cores (fp16 / bf16) -----------------------------------------------------------------

const char *kMmaHelpers = R"CUDA(
KILN_DEV unsigned smem_addr(const void* p) {
  unsigned r;
  asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(r) : "l"(p));
  return r;
}
KILN_DEV void cp_async16(void* dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" :: "r"(smem_addr(dst)), "l"(src), "r"(valid ? 16 : 0));
}
KILN_DEV void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> KILN_DEV void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" :: "n"(N)); }
KILN_DEV void ldsm_x4(unsigned (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem_addr(p)));
}
KILN_DEV void ldsm_x4_trans(unsigned (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem_addr(p)));
}
#if KILN_FP8
// fp8 e4m3: m16n8k32, fp32 accumulation; fragments laid out as int8's (below).
typedef float ACC_T;
KILN_DEV void mma_step(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  asm volatile("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
#define ACC_SCALE(v, col) ((v) * ((col) < N ? QSCALE[col] : 0.f))
#elif KILN_INT8
// int8: m16n8k32, int32 accumulation. Its fragments hold the same bytes at the same places as
// m16n8k16 fp16 fragments, so the tiles (int8 pairs as 16-bit elements) are loaded unchanged.
typedef int ACC_T;
KILN_DEV void mma_step(int (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  asm volatile("mma.sync.aligned.m16n8k32.row.col.s32." KILN_A8 ".s8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
               : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
#if KILN_QOFFSET  // A's zero point: Σ (a - za)·b = Σ a·b - za·Σ b, QOFF[col] = za·Σ_k B[k][col]
#define ACC_SCALE(v, col) ((col) < N ? (float)((v) - QOFF[col]) * QSCALE[col] : 0.f)
#else
#define ACC_SCALE(v, col) ((float)(v) * ((col) < N ? QSCALE[col] : 0.f))
#endif
#else
typedef float ACC_T;
KILN_DEV void mma_step(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.MMA_TYPE.MMA_TYPE.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
#define ACC_SCALE(v, col) (v)
#endif
)CUDA";

const char *kMmaBody = R"CUDA(
constexpr int BK = 32, PAD = 8;
constexpr int NWARPS = WM * WN, THREADS = NWARPS * 32;
constexpr int WTM = BM / WM, WTN = BN / WN, MI = WTM / 16, NI = WTN / 8;
// Shared tiles: A as [BM][BK] (k contiguous) or [BK][BM]; B as [BN][BK] or [BK][BN]; rows padded
// by 16 bytes so ldmatrix's eight row reads hit distinct banks.
constexpr int A_COLS = (A_MCONTIG ? BM : BK) + PAD, A_STAGE = (A_MCONTIG ? BK : BM) * A_COLS;
constexpr int B_COLS = (B_KCONTIG ? BK : BN) + PAD, B_STAGE = (B_KCONTIG ? BN : BK) * B_COLS;

// 8 elements of A into shared memory (zeros where !valid): cp.async, or with a prologue loads (A
// may be stored in a wider type), the prologue on each element, and a store.
KILN_DEV void copy_a16(KILN_PRO_PARAMS void* dst, const TA* src, bool valid) {
#if KILN_PROLOGUE
  uint4 u = make_uint4(0u, 0u, 0u, 0u);
  if (valid) {
    constexpr int WORDS = (int)sizeof(TA) / 2;  // 16-byte loads of 8 elements
    uint4 w[WORDS];
#pragma unroll
    for (int i = 0; i < WORDS; ++i) w[i] = reinterpret_cast<const uint4*>(src)[i];
    const TA* in = reinterpret_cast<const TA*>(w);
    T* e = reinterpret_cast<T*>(&u);
#pragma unroll
    for (int i = 0; i < 8; ++i) e[i] = kiln_prologue(KILN_PRO_ARGS in[i]);
  }
  *reinterpret_cast<uint4*>(dst) = u;
#else
  cp_async16(dst, src, valid);
#endif
}

// Copies the k-tile starting at k0 into one pipeline stage.
KILN_DEV void load_tile(KILN_PRO_PARAMS T* as, T* bs, const TA* __restrict__ Ab, const T* __restrict__ Bb,
                        LI m0, LI n0, LI k0, int tid) {
#if VEC_A && !A_MCONTIG
  // 16-byte chunks of 8 k-values per row.
#pragma unroll
  for (int c = tid; c < BM * (BK / 8); c += THREADS) {
    const int r = c / (BK / 8), kc = (c % (BK / 8)) * 8;
    const LI gm = m0 + r, gk = k0 + kc;
    bool valid = gm < M && gk < K;
#if KILN_CONV
    const TA* src = Ab;
    if (valid) {
      const LI ow = gm % OW, t = gm / OW, oh = t % OH, img = t / OH;
      const LI ch = gk % CC, tap = gk / CC, kw = tap % KW, kh = tap / KW;
      const LI ih = oh * SH - PT + kh * DH, iw = ow * SW - PL + kw * DW;
      const bool inside = ih >= 0 && ih < IH && iw >= 0 && iw < IW;
#if KILN_QOFFSET
      if (!inside) {  // a padded tap holds the zero point
        *reinterpret_cast<uint4*>(as + r * A_COLS + kc) = make_uint4(KILN_ZA4, KILN_ZA4, KILN_ZA4, KILN_ZA4);
        continue;
      }
#endif
      valid = inside;
      if (valid) src = Ab + ((img * IH + ih) * IW + iw) * CC + ch;
    }
    copy_a16(KILN_PRO_ARGS as + r * A_COLS + kc, src, valid);
#else
    copy_a16(KILN_PRO_ARGS as + r * A_COLS + kc, valid ? Ab + gm * RSA + gk : Ab, valid);
#endif
  }
#elif VEC_A
  // A_MCONTIG: 16-byte chunks of 8 m-values per k-row.
#pragma unroll
  for (int c = tid; c < BK * (BM / 8); c += THREADS) {
    const int kr = c / (BM / 8), mc = (c % (BM / 8)) * 8;
    const LI gm = m0 + mc, gk = k0 + kr;
    const bool valid = gm < M && gk < K;
    copy_a16(KILN_PRO_ARGS as + kr * A_COLS + mc, valid ? Ab + gk * CSA + gm : Ab, valid);
  }
#else
  for (int l = tid; l < BM * BK; l += THREADS) {
    const int r = A_ELEM_MFAST ? l % BM : l / BK, kk = A_ELEM_MFAST ? l / BM : l % BK;
    as[r * A_COLS + kk] = kiln_st<T>(load_a(KILN_PRO_ARGS Ab, m0 + r, k0 + kk));
  }
#endif
#if VEC_B && B_KCONTIG
#pragma unroll
  for (int c = tid; c < BN * (BK / 8); c += THREADS) {
    const int r = c / (BK / 8), kc = (c % (BK / 8)) * 8;
    const LI gn = n0 + r, gk = k0 + kc;
    const bool valid = gn < N && gk < K;
    cp_async16(bs + r * B_COLS + kc, valid ? Bb + gn * CSB + gk : Bb, valid);
  }
#elif VEC_B
#pragma unroll
  for (int c = tid; c < BK * (BN / 8); c += THREADS) {
    const int kr = c / (BN / 8), nc = (c % (BN / 8)) * 8;
    const LI gn = n0 + nc, gk = k0 + kr;
    const bool valid = gn < N && gk < K;
    cp_async16(bs + kr * B_COLS + nc, valid ? Bb + gk * RSB + gn : Bb, valid);
  }
#else
  for (int l = tid; l < BN * BK; l += THREADS) {
    const int r = B_ELEM_NFAST ? l % BN : l / BK, kk = B_ELEM_NFAST ? l / BN : l % BK;
    const LI gn = n0 + r, gk = k0 + kk;
    T v = kiln_st<T>(0.f);
    if (gn < N && gk < K) v = Bb[gk * RSB + gn * CSB];
    bs[r * B_COLS + kk] = v;
  }
#endif
}

// The A and B fragments of one 16-deep step at column kk of the staged tiles.
KILN_DEV void load_frags(unsigned (&af)[MI][4], unsigned (&bf)[NI][2], const T* as, const T* bs, int kk, int lane,
                         int wm, int wn) {
  const int i8 = lane >> 3, j8 = lane & 7;
#pragma unroll
  for (int mi = 0; mi < MI; ++mi) {
    const int mrow = wm * WTM + mi * 16;
#if A_MCONTIG
    ldsm_x4_trans(af[mi], as + (kk + (i8 >> 1) * 8 + j8) * A_COLS + mrow + (i8 & 1) * 8);
#else
    ldsm_x4(af[mi], as + (mrow + (lane & 15)) * A_COLS + kk + (lane >> 4) * 8);
#endif
  }
#pragma unroll
  for (int ni = 0; ni < NI; ni += 2) {
    const int ncol = wn * WTN + ni * 8;
    unsigned r[4];
#if B_KCONTIG
    ldsm_x4(r, bs + (ncol + (i8 >> 1) * 8 + j8) * B_COLS + kk + (i8 & 1) * 8);
#else
    ldsm_x4_trans(r, bs + (kk + (i8 & 1) * 8 + j8) * B_COLS + ncol + (i8 >> 1) * 8);
#endif
    bf[ni][0] = r[0]; bf[ni][1] = r[1]; bf[ni + 1][0] = r[2]; bf[ni + 1][1] = r[3];
  }
}

#if SPLITK > 1
// Thread-block clusters (sm_90): the blocks of one cluster split K; their sums meet in the
// leader's registers through distributed shared memory.
KILN_DEV unsigned cluster_rank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
KILN_DEV void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
// The 32-bit word at `local` (a shared address of this block) in the shared memory of block `rank`.
KILN_DEV unsigned cluster_load(const void* local, unsigned rank) {
  unsigned addr = (unsigned)__cvta_generic_to_shared(local), remote, v;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(addr), "r"(rank));
  asm volatile("ld.shared::cluster.u32 %0, [%1];" : "=r"(v) : "r"(remote) : "memory");
  return v;
}
KILN_DEV float from_bits(unsigned b, float) { return __uint_as_float(b); }
KILN_DEV int from_bits(unsigned b, int) { return (int)b; }
#define KILN_CLUSTER __cluster_dims__(1, 1, SPLITK)
#else
#define KILN_CLUSTER
#endif

// Warp tiles up to 64x32 fit about 128-170 registers: ask for 2 (256 threads) or 3 (128 threads)
// resident blocks so they overlap; 64x64 warp tiles need more registers and get one block.
constexpr int MIN_BLOCKS = WTM * WTN <= 64 * 32 ? (THREADS >= 256 ? 2 : 3) : 1;
extern "C" __global__ void KILN_CLUSTER __launch_bounds__(THREADS, MIN_BLOCKS) KILN_ENTRY(const TA* __restrict__ A,
    const T* __restrict__ B, KILN_PRO_PARAMS KILN_QSCALE_PARAM KILN_EPILOGUE_PARAMS OT* __restrict__ C) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* As = reinterpret_cast<T*>(smem_raw);
  T* Bs = As + STAGES * A_STAGE;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int wm = warp / WN, wn = warp % WN;
  const LI m0 = (LI)blockIdx.y * BM, n0 = (LI)blockIdx.x * BN;
#if SPLITK > 1
  // This block's k-tiles: cluster rank r (blockIdx.z; one batch) takes the r-th of SPLITK ranges.
  constexpr int KT_ALL = (int)((K + BK - 1) / BK), KT_PER = (KT_ALL + SPLITK - 1) / SPLITK;
  const unsigned crank = cluster_rank();
  const int KT0 = (int)crank * KT_PER, KT = max(0, min(KT_ALL - KT0, KT_PER));
  for (LI bz = 0; bz < 1; ++bz) {
#else
  constexpr int KT0 = 0, KT = (int)((K + BK - 1) / BK);
  for (LI bz = blockIdx.z; bz < NBATCH; bz += gridDim.z) {
#endif
KILN_BATCH_OFFSETS
    const TA* Ab = A + offA;
    const T* Bb = B + offB;
    ACC_T acc_raw[MI][NI][4];
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
      for (int j = 0; j < NI; ++j)
#pragma unroll
        for (int q = 0; q < 4; ++q) acc_raw[i][j][q] = 0;

#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
      if (s < KT) load_tile(KILN_PRO_ARGS As + s * A_STAGE, Bs + s * B_STAGE, Ab, Bb, m0, n0, (LI)(KT0 + s) * BK, tid);
      cp_async_commit();
    }
#pragma unroll 1
    for (int kt = 0; kt < KT; ++kt) {
      cp_async_wait<STAGES - 2>();
      __syncthreads();  // tile kt is in shared memory; every warp is done with tile kt - 1
      const int nk = kt + STAGES - 1;
      if (nk < KT) load_tile(KILN_PRO_ARGS As + (nk % STAGES) * A_STAGE, Bs + (nk % STAGES) * B_STAGE, Ab, Bb, m0, n0,
                             (LI)(KT0 + nk) * BK, tid);
      cp_async_commit();
      const T* as = As + (kt % STAGES) * A_STAGE;
      const T* bs = Bs + (kt % STAGES) * B_STAGE;
      // Fragments double-buffered in registers: the loads of step s + 1 are issued before the
      // matrix instructions of step s, so shared-memory latency hides behind them.
      unsigned af[2][MI][4], bf[2][NI][2];
      load_frags(af[0], bf[0], as, bs, 0, lane, wm, wn);
#pragma unroll
      for (int step = 0; step < BK / 16; ++step) {
        if (step + 1 < BK / 16) load_frags(af[(step + 1) & 1], bf[(step + 1) & 1], as, bs, (step + 1) * 16, lane, wm, wn);
#pragma unroll
        for (int mi = 0; mi < MI; ++mi)
#pragma unroll
          for (int ni = 0; ni < NI; ++ni) mma_step(acc_raw[mi][ni], af[step & 1][mi], bf[step & 1][ni][0], bf[step & 1][ni][1]);
      }
    }
    cp_async_wait<0>();
    __syncthreads();  // every warp is done with the stages: they hold the result now
#if SPLITK > 1
    {
      // The other blocks leave their raw sums in their shared memory (thread-major, so the
      // leader's reads of one slot are consecutive words); the leader adds them to its own.
      ACC_T* red = reinterpret_cast<ACC_T*>(smem_raw);
      if (crank != 0) {
#pragma unroll
        for (int i = 0; i < MI; ++i)
#pragma unroll
          for (int j = 0; j < NI; ++j)
#pragma unroll
            for (int q = 0; q < 4; ++q) red[((i * NI + j) * 4 + q) * THREADS + tid] = acc_raw[i][j][q];
      }
      cluster_sync();
      if (crank == 0) {
#pragma unroll 1
        for (unsigned r = 1; r < SPLITK; ++r)
#pragma unroll
          for (int i = 0; i < MI; ++i)
#pragma unroll
            for (int j = 0; j < NI; ++j)
#pragma unroll
              for (int q = 0; q < 4; ++q)
                acc_raw[i][j][q] += from_bits(cluster_load(red + ((i * NI + j) * 4 + q) * THREADS + tid, r), acc_raw[i][j][q]);
      }
      // (The other blocks' shared memory stays until the leader has read it: the store's first
      // cluster barrier comes after.)
    }
#endif
    // fp32 values for the store (int8: the integer sums times the column's scale).
    float accum[MI][NI][4];
#pragma unroll
    for (int mi = 0; mi < MI; ++mi)
#pragma unroll
      for (int ni = 0; ni < NI; ++ni)
#pragma unroll
        for (int q = 0; q < 4; ++q) {
          const LI col = n0 + wn * WTN + ni * 8 + (lane & 3) * 2 + (q & 1);
          (void)col;
          accum[mi][ni][q] = ACC_SCALE(acc_raw[mi][ni][q], col);
        }
KILN_STORE
  }
}
)CUDA";

// The tensor-core kernel's store: the tile goes through shared memory (fp32) whole where it fits
// the pipeline's (split K: in the leader, read by every block of the cluster), else one band of
// warp rows at a time; then every thread stores VE consecutive columns of a row with 16-byte accesses,
// loading the epilogue's inputs once per row (broadcast along the row) or as vectors (contiguous
// along it). Rows whose columns do not fit the vector path, and inputs read with another stride,
// take the element path.
const char *kStagedStore = R"CUDA(
    {
      float* Cs = reinterpret_cast<float*>(smem_raw);
      constexpr int CS_LD = BN + 4;
#if SPLITK > 1
      // Split K: the leader stages its whole tile, then every block of the cluster stores its
      // share of the items, reading the tile from the leader's shared memory: the epilogue runs
      // on SPLITK blocks, not one.
      constexpr int NBANDS = 1, BAND_ROWS = BM;
      const int item0 = (int)crank * THREADS + tid, step = SPLITK * THREADS, r0 = wm * WTM;
      const bool stager = crank == 0;
#define KILN_STAGED(off) from_bits(cluster_load(Cs + (off), 0), 0.f)
#define KILN_STAGE_SYNC() cluster_sync()
#elif STAGE_WHOLE
      // The whole tile fits the pipeline's shared memory: staged at once, every thread stores.
      constexpr int NBANDS = 1, BAND_ROWS = BM;
      const int item0 = tid, step = THREADS, r0 = wm * WTM;
      const bool stager = true;
#define KILN_STAGED(off) Cs[off]
#define KILN_STAGE_SYNC() __syncthreads()
#else
      // One band of warp rows at a time.
      constexpr int NBANDS = WM, BAND_ROWS = WTM;
      const int item0 = tid, step = THREADS, r0 = 0;
      const bool stager = false;  // (the band's warps stage)
#define KILN_STAGED(off) Cs[off]
#define KILN_STAGE_SYNC() __syncthreads()
#endif
#pragma unroll 1
      for (int band = 0; band < NBANDS; ++band) {
        if (NBANDS == 1 ? stager : wm == band) {
#pragma unroll
          for (int mi = 0; mi < MI; ++mi)
#pragma unroll
            for (int ni = 0; ni < NI; ++ni)
#pragma unroll
              for (int h = 0; h < 2; ++h) {
                const int r = r0 + mi * 16 + (lane >> 2) + h * 8, c = wn * WTN + ni * 8 + (lane & 3) * 2;
                *reinterpret_cast<float2*>(Cs + r * CS_LD + c) = make_float2(accum[mi][ni][2 * h], accum[mi][ni][2 * h + 1]);
              }
        }
        KILN_STAGE_SYNC();
        if (FAST_N) {
          // VE consecutive columns per thread: 16-byte loads and stores.
          for (int it = item0; it < BAND_ROWS * (BN / VE); it += step) {
            const int r = it / (BN / VE), c = (it % (BN / VE)) * VE;
            const LI gm = m0 + (LI)band * BAND_ROWS + r, gn = n0 + c;
            if (gm >= M || gn >= N) continue;  // N % VE == 0: a started vector is whole
            const IDX row = (IDX)(bz * M + gm);
            float cs[VE];
#pragma unroll
            for (int e = 0; e < VE; ++e) cs[e] = KILN_STAGED(r * CS_LD + c + e);
KILN_VECTOR_ITEM
          }
        } else {
          // One element per thread, consecutive threads on consecutive columns.
          for (int it = item0; it < BAND_ROWS * BN; it += step) {
            const int r = it / BN, c = it % BN;
            const LI gm = m0 + (LI)band * BAND_ROWS + r, gn = n0 + c;
            if (gm >= M || gn >= N) continue;
            const float acc = KILN_STAGED(r * CS_LD + c);
            const IDX L = (IDX)(bz * M + gm) * (IDX)N + (IDX)gn;
            {
KILN_ELEMENT
            }
          }
        }
        KILN_STAGE_SYNC();  // (split K: the leader's tile stays until every block has read it)
      }
#undef KILN_STAGED
#undef KILN_STAGE_SYNC
    }
)CUDA";

struct Tile {
  int bm, bn, wm, wn;
};

Tile mmaTile(const std::string &t) {
  if (t == "256x128") return {256, 128, 4, 2};
  if (t == "128x256") return {128, 256, 2, 4};
  if (t == "128x128") return {128, 128, 2, 4};
  if (t == "128x64") return {128, 64, 2, 2};
  if (t == "64x128") return {64, 128, 2, 2};
  if (t == "64x64" || t == "32x32") return {64, 64, 2, 2};
  throw std::invalid_argument("matmul: unknown tile '" + t + "'");
}

Tile simtTile(const std::string &t) {
  if (t == "256x128" || t == "128x256" || t == "128x128") return {128, 128, 0, 0};
  if (t == "128x64") return {128, 64, 0, 0};
  if (t == "64x128") return {64, 128, 0, 0};
  if (t == "64x64") return {64, 64, 0, 0};
  if (t == "32x32") return {32, 32, 0, 0};
  throw std::invalid_argument("matmul: unknown tile '" + t + "'");
}

// The largest tile that still gives the GPU (s.smCount SMs) a full wave of blocks.
std::string autoTile(const MatMulSpec &s, int64_t nbatch, bool mma) {
  const int64_t sms = s.smCount;
  auto blocks = [&](int bm, int bn) { return ceilDiv(s.M, bm) * ceilDiv(s.N, bn) * nbatch; };
  if (mma) {
    // 64x64 warp tiles (the 256-wide tiles) measured fastest on large products (H200, 4096^3:
    // 0.81 ms against 0.95 for 128x128); narrower tiles when they would leave SMs idle.
    if (s.N >= 256 && s.M >= 128 && blocks(128, 256) >= sms) return "128x256";
    if (s.M >= 256 && s.N >= 128 && blocks(256, 128) >= sms) return "256x128";
    if (s.M >= 128 && s.N >= 128 && blocks(128, 128) >= sms) return "128x128";
    if (s.M >= 128 && s.N <= 64 && blocks(128, 64) >= sms) return "128x64";
    if (s.N >= 128 && blocks(64, 128) >= sms) return "64x128";
    if (s.M >= 128 && blocks(128, 64) >= sms) return "128x64";
    return "64x64";
  }
  if (s.M >= 128 && s.N >= 128 && blocks(128, 128) >= sms) return "128x128";
  if (s.M >= 48 && s.N >= 48) return "64x64";
  if (s.M >= 64 || s.N >= 64) return blocks(64, 64) >= sms ? "64x64" : "32x32";
  return "32x32";
}

// The cluster size that splits K (MatMulSpec::splitK) for a tensor-core product of `blocks`
// blocks and `kTiles` k-tiles of 32.
int chooseSplitK(const MatMulSpec &s, int64_t nbatch, int64_t blocks, int64_t kTiles) {
  if (nbatch != 1 || !s.clusters) return 1;
  if (s.splitK != 0) return s.splitK;
  int split = 1;
  while (split < 8 && blocks * split * 2 <= s.smCount && kTiles / (split * 2) >= 2) split *= 2;
  return split;
}

bool all8(const std::vector<int64_t> &v) {
  for (int64_t x : v)
    if (x % 8) return false;
  return true;
}

}  // namespace

namespace {

// The staged store's code for this epilogue (kStagedStore with its placeholders filled).
std::string stagedStore(const FusedProgram &epi, const std::vector<int64_t> &outShape, const MatMulSpec &s,
                        int64_t nbatch) {
  const int ve = static_cast<int>(16 / elemSize(s.outType));
  int64_t extent = nbatch * s.M * s.N;
  for (auto &in : epi.inputShapes) extent = std::max(extent, numElementsOf(in));
  const std::string idx = indexType(extent + 1024);
  std::string vec;
  const bool fast = programVectorCode(epi, outShape, s.outType, s.N, vec);
  std::string code = std::string("    typedef ") + idx + " IDX;\n    constexpr int VE = " + std::to_string(ve) +
                     ";\n    constexpr bool FAST_N = " + (fast ? "true" : "false") + ";\n" + kStagedStore;
  code = replaceAll(code, "KILN_VECTOR_ITEM", fast ? vec : "");
  return replaceAll(code, "KILN_ELEMENT", programElementCode(epi, outShape, s.outType, "IDX", "L", "e", "C[L]"));
}

}  // namespace

std::vector<std::string> matMulTiles() {
  return {"256x128", "128x256", "128x128", "128x64", "64x128", "64x64", "32x32"};
}

// 8-bit operands as pairs of bytes along K: the fp16 kernel's tiles, 16-byte copies and ldmatrix
// then move int8/fp8 data unchanged. Needs K-contiguous A (or an NHWC image with C % 16 == 0) and
// K-contiguous B, K % 16 == 0 and even strides.
void packInt8Pairs(MatMulSpec &s) {
  auto even = [](const std::vector<int64_t> &v) {
    return std::all_of(v.begin(), v.end(), [](int64_t x) { return x % 2 == 0; });
  };
  bool aOk = s.conv ? s.conv->C % 16 == 0 : s.a.colStride == 1 && s.a.rowStride % 2 == 0 && even(s.a.batchStrides);
  bool bOk = s.b.rowStride == 1 && s.b.colStride % 2 == 0 && even(s.b.batchStrides);
  if (!aOk || !bOk || s.K % 16 != 0)
    throw std::invalid_argument(
        "8-bit matmul: needs K-contiguous operands (NHWC with C % 16 == 0 for convolutions) and K % 16 == 0");
  s.K /= 2;
  if (s.conv)
    s.conv->C /= 2;
  else
    s.a.rowStride /= 2;
  s.b.colStride /= 2;
  for (int64_t &x : s.a.batchStrides) x /= 2;
  for (int64_t &x : s.b.batchStrides) x /= 2;
}

KernelLaunch emitMatMul(const MatMulSpec &in) {
  MatMulSpec s = in;
  if (s.M < 0 || s.N < 0 || s.K < 0) throw std::invalid_argument("matmul: negative size");
  if (s.int8) s.type = ElemType::F16;  // 8-bit pairs travel as 16-bit elements (packInt8Pairs)
  if (s.splitK != 0 && s.splitK != 1 && s.splitK != 2 && s.splitK != 4 && s.splitK != 8)
    throw std::invalid_argument("matmul: splitK must be 0 (automatic), 1, 2, 4 or 8");
  if (s.fp8 && (!s.int8 || s.aUnsigned || s.aZeroPoint))
    throw std::invalid_argument("matmul: fp8 takes two e4m3 operands (int8 = true, no zero point)");
  const bool mma = s.type == ElemType::F16 || s.type == ElemType::BF16;
  const bool f64 = s.type == ElemType::F64;
  if (!mma && s.type != ElemType::F32 && !f64)
    throw std::invalid_argument("matmul: operands must be f32, f64, f16 or bf16");
  if (f64 != (s.outType == ElemType::F64))
    throw std::invalid_argument("matmul: f64 operands take an f64 result (and only they)");
  if (!isFloatType(s.outType) && !f64 && s.outType != ElemType::I8 && s.outType != ElemType::U8)
    throw std::invalid_argument("matmul: the result must be a float type or 8-bit (a quantizing epilogue)");
  size_t br = s.batchShape.size();
  for (const MatrixView *v : {&s.a, &s.b})
    if (!v->batchStrides.empty() && v->batchStrides.size() != br)
      throw std::invalid_argument("matmul: one batch stride per batch dim");
  // Defaults: row-major contiguous operands, batches back to back.
  std::vector<int64_t> cont = contiguousStrides(s.batchShape);
  if (s.a.rowStride == 0 && s.a.colStride == 1) s.a.rowStride = s.K;
  if (s.b.rowStride == 0 && s.b.colStride == 1) s.b.rowStride = s.N;
  if (s.a.batchStrides.empty())
    for (int64_t c : cont) s.a.batchStrides.push_back(c * s.M * s.K);
  if (s.b.batchStrides.empty())
    for (int64_t c : cont) s.b.batchStrides.push_back(c * s.K * s.N);
  if (s.conv) {
    const ConvGeometry &g = *s.conv;
    if (s.M != g.N * g.OH * g.OW || s.K != g.KH * g.KW * g.C || br != 0)
      throw std::invalid_argument("matmul: im2col sizes do not match M and K");
  }
  if (s.int8) packInt8Pairs(s);
  int64_t nbatch = numElementsOf(s.batchShape);
  std::vector<int64_t> bdims = s.batchShape, sa = s.a.batchStrides, sb = s.b.batchStrides;
  if (br == 0) bdims = {1}, sa = {0}, sb = {0};
  std::vector<int64_t> outShape = s.outShape;
  if (outShape.empty()) {
    outShape = s.batchShape;
    outShape.push_back(s.M);
    outShape.push_back(s.N);
  }
  if (numElementsOf(outShape) != nbatch * s.M * s.N) throw std::invalid_argument("matmul: outShape has the wrong size");
  FusedProgram epi = s.epilogue;
  if (epi.result.empty()) epi.result = "acc";
  checkProgram(epi, outShape);
  const FusedProgram &pro = s.prologue;
  const bool hasPrologue = !pro.result.empty();
  if (hasPrologue) {
    if (s.int8) throw std::invalid_argument("matmul: 8-bit products take no prologue");
    for (const auto &shape : pro.inputShapes)
      if (numElementsOf(shape) != 1) throw std::invalid_argument("matmul: a prologue's inputs must have one element");
    checkProgram(pro, {});
  }
  if (s.aType && *s.aType != s.type && (!hasPrologue || *s.aType != ElemType::F32 || !mma))
    throw std::invalid_argument("matmul: A stored in another type than the product's needs a prologue, float32 A "
                                "and half operands");

  std::string tile = s.tile.empty() || s.tile == "auto" ? autoTile(s, nbatch, mma) : s.tile;
  std::string src = "// kiln matmul (" +
                    std::string(s.int8 ? (s.fp8 ? "fp8 e4m3 tensor cores, K in pairs" : "int8 tensor cores, K in pairs")
                                : mma  ? "tensor cores"
                                       : "simt") +
                    "): [" + std::to_string(nbatch) + "] " + std::to_string(s.M) + "x" + std::to_string(s.N) + "x" +
                    std::to_string(s.K) + (s.conv ? " im2col" : "") + " tile " + tile + ", epilogue of " +
                    std::to_string(epi.numInputs()) + " inputs\n";
  src += kDevicePrelude;
  src += std::string("typedef ") + storageTypeName(s.type) + " T;\ntypedef " + storageTypeName(s.outType) + " OT;\n";
  src += std::string("typedef ") + storageTypeName(s.aType.value_or(s.type)) + " TA;\n";
  src += std::string("typedef ") + (f64 ? "double" : "float") + " ACC;\n";  // (fma: float and double overloads)
  // 32-bit index arithmetic when every offset fits (fewer registers, cheaper division).
  auto extent = [&](const MatrixView &v, const std::vector<int64_t> &bs, int64_t rows, int64_t cols) {
    int64_t e = 1 + std::abs((rows - 1) * v.rowStride) + std::abs((cols - 1) * v.colStride);
    for (size_t d = 0; d < bs.size(); ++d) e += std::abs((bdims[d] - 1) * bs[d]);
    return e;
  };
  int64_t bound =
      std::max({nbatch * s.M * s.N, extent(s.a, sa, s.M, s.K), extent(s.b, sb, s.K, s.N), s.M * s.K, s.K * s.N});
  if (s.conv) bound = std::max(bound, s.conv->N * s.conv->H * s.conv->W * s.conv->C);
  for (auto &in : epi.inputShapes) bound = std::max(bound, numElementsOf(in));
  src += "typedef " + indexType(bound + (int64_t(1) << 20)) + " LI;\n";
  src += "constexpr LI M = " + std::to_string(s.M) + "LL, N = " + std::to_string(s.N) +
         "LL, K = " + std::to_string(s.K) + "LL, NBATCH = " + std::to_string(nbatch) + "LL;\n";
  src += "constexpr LI RSA = " + std::to_string(s.a.rowStride) + "LL, CSA = " + std::to_string(s.a.colStride) +
         "LL, RSB = " + std::to_string(s.b.rowStride) + "LL, CSB = " + std::to_string(s.b.colStride) + "LL;\n";
  src += "constexpr int BRANK = " + std::to_string(bdims.size()) + ";\n";
  src += "__device__ constexpr LI BDIMS[] = " + arrayLit(bdims) + ";\n";
  src += "__device__ constexpr LI BSA[] = " + arrayLit(sa) + ";\n";
  src += "__device__ constexpr LI BSB[] = " + arrayLit(sb) + ";\n";
  src += std::string("#define KILN_CONV ") + (s.conv ? "1" : "0") + "\n";
  src += std::string("#define KILN_INT8 ") + (s.int8 ? "1" : "0") + "\n";
  if (s.int8) src += std::string("#define KILN_A8 \"") + (s.aUnsigned ? "u8" : "s8") + "\"\n";
  src += std::string("#define KILN_FP8 ") + (s.fp8 ? "1" : "0") + "\n";
  src += std::string("#define KILN_QOFFSET ") + (s.int8 && s.aZeroPoint ? "1" : "0") + "\n";
  if (s.int8 && s.aZeroPoint) {
    if (s.aZeroPoint < (s.aUnsigned ? 0 : -128) || s.aZeroPoint > (s.aUnsigned ? 255 : 127))
      throw std::invalid_argument("matmul: A's zero point " + std::to_string(s.aZeroPoint) +
                                  " is not a value of A's type");
    // (four copies of its byte: what a padded convolution tap holds)
    src += "#define KILN_ZA4 " + std::to_string(uint32_t(uint8_t(s.aZeroPoint)) * 0x01010101u) + "u\n";
  }
  if (s.conv) {
    const ConvGeometry &g = *s.conv;
    auto L = [](int64_t v) { return std::to_string(v) + "LL"; };
    src += "constexpr LI IH = " + L(g.H) + ", IW = " + L(g.W) + ", CC = " + L(g.C) + ", KH = " + L(g.KH) +
           ", KW = " + L(g.KW) + ", SH = " + L(g.strideH) + ", SW = " + L(g.strideW) + ", PT = " + L(g.padTop) +
           ", PL = " + L(g.padLeft) + ", DH = " + L(g.dilationH) + ", DW = " + L(g.dilationW) + ", OH = " + L(g.OH) +
           ", OW = " + L(g.OW) + ";\n";
  }
  // The prologue: a function of one element of A, its inputs read from parameters pa0, pa1, ...
  std::string proArgs;
  for (size_t k = 0; k < pro.numInputs(); ++k) proArgs += "pa" + std::to_string(k) + ", ";
  src += std::string("#define KILN_PROLOGUE ") + (hasPrologue ? "1" : "0") + "\n#define KILN_PRO_PARAMS " +
         programParams(pro, "pa") + "\n#define KILN_PRO_ARGS " + proArgs + "\n";
  if (hasPrologue)
    src +=
        "#define KILN_PRO_APPLY(x) kiln_prologue(KILN_PRO_ARGS x)\nKILN_DEV T kiln_prologue(KILN_PRO_PARAMS TA in) {\n"
        "    const float acc = kiln_ld(in);\n    T r;\n" +
        programElementCode(pro, {}, s.type, "LI", "0", "pa", "r") + "    return r;\n}\n";
  else
    src += "#define KILN_PRO_APPLY(x) (x)\n";
  // Which of A's / B's dims is contiguous decides how tiles are read.
  const bool aMContig = !s.conv && s.a.rowStride == 1 && s.a.colStride != 1;
  const bool bKContig = s.b.rowStride == 1 && s.b.colStride != 1;
  src += kLoadAElement;
  std::string body;
  KernelLaunch k;
  int split = 1;
  if (!mma) {
    Tile t = simtTile(tile);
    src += "constexpr int BM = " + std::to_string(t.bm) + ", BN = " + std::to_string(t.bn) + ";\n";
    src += std::string("#define A_MCONTIG ") + (aMContig ? "1" : "0") + "\n#define B_KCONTIG " +
           (bKContig ? "1" : "0") + "\n";
    body = kSimtBody;
    k.block = {256, 1, 1};
    k.grid = {static_cast<uint32_t>(std::max<int64_t>(1, ceilDiv(s.N, t.bn))),
              static_cast<uint32_t>(std::max<int64_t>(1, ceilDiv(s.M, t.bm))), 0};
  } else {
    Tile t = mmaTile(tile);
    bool vecA, vecB;
    if (s.conv)
      vecA = s.conv->C % 8 == 0;
    else if (aMContig)
      vecA = s.a.colStride % 8 == 0 && all8(sa) && s.M % 8 == 0;
    else
      vecA = s.a.colStride == 1 && s.a.rowStride % 8 == 0 && all8(sa) && s.K % 8 == 0;
    if (bKContig)
      vecB = s.b.colStride % 8 == 0 && all8(sb) && s.K % 8 == 0;
    else
      vecB = s.b.colStride == 1 && s.b.rowStride % 8 == 0 && all8(sb) && s.N % 8 == 0;
    const bool aSmemM = vecA && aMContig, bSmemK = !vecB || bKContig;
    int stages = s.stages ? s.stages : (t.bm * t.bn >= 128 * 128 ? 3 : 4);
    if (stages < 2 || stages > 4) throw std::invalid_argument("matmul: stages must be 2, 3 or 4");
    const int pad = 8, bk = 32;
    int64_t aStage = (aSmemM ? bk : t.bm) * ((aSmemM ? t.bm : bk) + pad);
    int64_t bStage = (bSmemK ? t.bn : bk) * ((bSmemK ? bk : t.bn) + pad);
    int64_t smem = stages * (aStage + bStage) * 2;
    if (smem > 227 * 1024) throw std::invalid_argument("matmul: tile and stages need too much shared memory");
    src += "constexpr int BM = " + std::to_string(t.bm) + ", BN = " + std::to_string(t.bn) +
           ", WM = " + std::to_string(t.wm) + ", WN = " + std::to_string(t.wn) +
           ", STAGES = " + std::to_string(stages) + ";\n";
    src += std::string("#define VEC_A ") + (vecA ? "1" : "0") + "\n#define VEC_B " + (vecB ? "1" : "0") +
           "\n#define A_MCONTIG " + (aSmemM ? "1" : "0") + "\n#define B_KCONTIG " + (bSmemK ? "1" : "0") +
           "\n#define A_ELEM_MFAST " + (aMContig ? "1" : "0") + "\n#define B_ELEM_NFAST " +
           (s.b.colStride == 1 ? "1" : "0") + "\n";
    src += mmaHelpers(s.type);
    body = replaceAll(kMmaBody, "KILN_STORE", stagedStore(epi, outShape, s, nbatch));
    int64_t band = int64_t(t.bm / t.wm) * (t.bn + 4) * 4;
    smem = std::max(smem, band);
    k.block = {static_cast<uint32_t>(t.wm * t.wn * 32), 1, 1};
    k.grid = {static_cast<uint32_t>(std::max<int64_t>(1, ceilDiv(s.N, t.bn))),
              static_cast<uint32_t>(std::max<int64_t>(1, ceilDiv(s.M, t.bm))), 0};
    split = chooseSplitK(s, nbatch, int64_t(k.grid[0]) * k.grid[1], ceilDiv(s.K, bk));
    if (split > 1) smem = std::max(smem, int64_t(t.bm) * (t.bn + 4) * 4);  // the sums; the leader's staged tile
    // The store stages the whole tile at once where the pipeline's shared memory holds it (every
    // thread then runs the epilogue), else band by band.
    src += std::string("#define STAGE_WHOLE ") + (int64_t(t.bm) * (t.bn + 4) * 4 <= smem ? "1" : "0") + "\n";
    src += "#define SPLITK " + std::to_string(split) + "\n";
    k.sharedBytes = static_cast<uint32_t>(smem);
  }
  body = replaceAll(body, "KILN_BATCH_OFFSETS", kBatchOffsets);
  body = replaceAll(body, "KILN_EPILOGUE_PARAMS", programParams(epi, "e"));
  body = replaceAll(body, "KILN_QSCALE_PARAM",
                    !s.int8        ? ""
                    : s.aZeroPoint ? "const float* __restrict__ QSCALE, const int* __restrict__ QOFF,"
                                   : "const float* __restrict__ QSCALE,");
  body = replaceAll(body, "KILN_EPILOGUE", programElementCode(epi, outShape, s.outType, "LI", "L", "e", "C[L]"));
  src += body;
  if (ceilDiv(s.M, mma ? mmaTile(tile).bm : simtTile(tile).bm) > 65535)
    throw std::invalid_argument("matmul: M too large for grid.y");
  KernelLaunch out = finalizeKernel(std::string(mma ? "mma_" : "mm_") + typeTag(!in.int8       ? s.type
                                                                                : in.fp8       ? ElemType::F8E4M3
                                                                                : in.aUnsigned ? ElemType::U8
                                                                                               : ElemType::I8),
                                    src);
  out.block = k.block;
  out.grid = {k.grid[0], k.grid[1], static_cast<uint32_t>(split > 1 ? split : std::clamp<int64_t>(nbatch, 1, 65535))};
  out.sharedBytes = k.sharedBytes;
  out.numParams = 3 + (s.int8 ? 1 : 0) + (s.int8 && s.aZeroPoint ? 1 : 0) + static_cast<int>(pro.numInputs()) +
                  static_cast<int>(epi.numInputs());
  return out;
}

namespace {

std::vector<int64_t> permuted(const std::vector<int64_t> &v, const std::vector<int64_t> &perm) {
  std::vector<int64_t> r(perm.size());
  for (size_t k = 0; k < perm.size(); ++k) r[k] = v.at(perm[k]);
  return r;
}

}  // namespace

std::string kernels::mmaHelpers(ElemType type) {
  return replaceAll(kMmaHelpers, "MMA_TYPE", type == ElemType::BF16 ? "bf16" : "f16");
}

MatMulSpec transposedMatMulSpec(const std::vector<int64_t> &aShape, const std::vector<int64_t> &permA,
                                const std::vector<int64_t> &bShape, const std::vector<int64_t> &permB,
                                std::vector<int64_t> *outShape, const std::vector<int64_t> *aStrides,
                                const std::vector<int64_t> *bStrides) {
  if (aShape.size() < 2 || bShape.size() < 2) throw std::invalid_argument("matmul: operands must have rank >= 2");
  if ((aStrides && aStrides->size() != aShape.size()) || (bStrides && bStrides->size() != bShape.size()))
    throw std::invalid_argument("matmul: strides of another rank than the operand");
  auto identity = [](size_t n) {
    std::vector<int64_t> p(n);
    for (size_t k = 0; k < n; ++k) p[k] = static_cast<int64_t>(k);
    return p;
  };
  std::vector<int64_t> pa = permA.empty() ? identity(aShape.size()) : permA;
  std::vector<int64_t> pb = permB.empty() ? identity(bShape.size()) : permB;
  if (pa.size() != aShape.size() || pb.size() != bShape.size()) throw std::invalid_argument("matmul: bad permutation");
  // Logical operands and, per logical dim, the element stride in memory.
  std::vector<int64_t> a = permuted(aShape, pa), as = permuted(aStrides ? *aStrides : contiguousStrides(aShape), pa);
  std::vector<int64_t> b = permuted(bShape, pb), bs = permuted(bStrides ? *bStrides : contiguousStrides(bShape), pb);
  MatMulSpec s;
  s.M = a[a.size() - 2];
  s.K = a.back();
  s.N = b.back();
  if (b[b.size() - 2] != s.K) throw std::invalid_argument("matmul: inner dims differ");
  s.a.rowStride = as[as.size() - 2];
  s.a.colStride = as.back();
  s.b.rowStride = bs[bs.size() - 2];
  s.b.colStride = bs.back();
  std::vector<int64_t> ab(a.begin(), a.end() - 2), bb(b.begin(), b.end() - 2);
  s.batchShape = broadcastShapes({ab, bb});
  // Batch strides: the operand's memory stride where its dim matches, 0 where it broadcasts.
  auto batchStrides = [&](const std::vector<int64_t> &dims, const std::vector<int64_t> &strides) {
    std::vector<int64_t> r(s.batchShape.size(), 0);
    size_t off = s.batchShape.size() - dims.size();
    for (size_t d = 0; d < dims.size(); ++d)
      if (dims[d] != 1) r[off + d] = strides[d];
    return r;
  };
  s.a.batchStrides = batchStrides(ab, std::vector<int64_t>(as.begin(), as.end() - 2));
  s.b.batchStrides = batchStrides(bb, std::vector<int64_t>(bs.begin(), bs.end() - 2));
  if (outShape) {
    *outShape = s.batchShape;
    outShape->push_back(s.M);
    outShape->push_back(s.N);
  }
  // A batch of row blocks times one shared B (a linear layer on [batch, seq, features]) is one
  // taller product: the rows of consecutive batches are consecutive in A and in the result.
  bool shared = !s.batchShape.empty();
  for (int64_t st : s.b.batchStrides) shared = shared && st == 0;
  if (shared && s.a.colStride == 1) {
    int64_t span = s.M * s.a.rowStride;
    for (size_t d = s.batchShape.size(); d-- > 0 && shared;) {
      shared = s.batchShape[d] == 1 || s.a.batchStrides[d] == span;
      span *= s.batchShape[d];
    }
    if (shared) {
      s.M *= numElementsOf(s.batchShape);
      s.batchShape.clear();
      s.a.batchStrides.clear();
      s.b.batchStrides.clear();
    }
  }
  return s;
}

MatMulSpec matMulSpecFromShapes(const std::vector<int64_t> &aShape, const std::vector<int64_t> &bShape,
                                std::vector<int64_t> *outShape) {
  if (aShape.empty() || bShape.empty()) throw std::invalid_argument("matmul: operands must have rank >= 1");
  std::vector<int64_t> a = aShape, b = bShape;
  bool aVec = a.size() == 1, bVec = b.size() == 1;
  if (aVec) a.insert(a.begin(), 1);
  if (bVec) b.push_back(1);
  std::vector<int64_t> full;
  MatMulSpec s = transposedMatMulSpec(a, {}, b, {}, &full);
  if (outShape) {
    *outShape = s.batchShape;
    if (!aVec) outShape->push_back(s.M);
    if (!bVec) outShape->push_back(s.N);
  }
  return s;
}

MatMulSpec gemmSpecFromShapes(const std::vector<int64_t> &aShape, const std::vector<int64_t> &bShape, bool hasC,
                              const std::vector<int64_t> &cShape, bool transA, bool transB, float alpha, float beta) {
  if (aShape.size() != 2 || bShape.size() != 2) throw std::invalid_argument("gemm: A and B must be 2-D");
  MatMulSpec s = transposedMatMulSpec(aShape, transA ? std::vector<int64_t>{1, 0} : std::vector<int64_t>{}, bShape,
                                      transB ? std::vector<int64_t>{1, 0} : std::vector<int64_t>{});
  std::string v = alpha == 1.f ? "acc" : floatLiteral(alpha) + " * acc";
  if (hasC && beta != 0.f) {
    (void)broadcastStrides(cShape, {s.M, s.N});
    s.epilogue.inputShapes.push_back(cShape);
    s.epilogue.inputTypes.push_back(ElemType::F32);
    v += beta == 1.f ? " + x0" : " + " + floatLiteral(beta) + " * x0";
  }
  s.epilogue.result = v;
  return s;
}

}  // namespace kiln::codegen

#include "codegen/kernels/Wgmma.h"

#include "codegen/kernels/KernelUtil.h"

#include <algorithm>
#include <stdexcept>

namespace kiln::codegen {

using namespace kernels;

namespace {

// The emitter defines T, OT, LI, M, N, K, KILN_BN, KILN_STAGES, KILN_BK and wgmma_step (the
// instruction for the operand type) before this; store_tile (storeTile) and the kernel follow.
const char *kWgmmaCommon = R"CUDA(
constexpr int BM = 128, BN = KILN_BN, BK = KILN_BK, STAGES = KILN_STAGES;  // (BK: 128 bytes of K)
constexpr int A_BYTES = BM * 128, B_BYTES = BN * 128, STAGE_BYTES = A_BYTES + B_BYTES;
constexpr int KT = (int)((K + BK - 1) / BK);

KILN_DEV unsigned smem_u32(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }

// A shared-memory matrix descriptor: K-major rows of 128 bytes in the 128-byte swizzle, 8-row
// groups 1024 bytes apart (stride byte offset), the leading byte offset unused (1).
KILN_DEV unsigned long long smem_desc(unsigned addr) {
  return (unsigned long long)((addr & 0x3FFFF) >> 4) | (1ull << 16) | (64ull << 32) | (1ull << 62);
}

)CUDA";

// Warpgroup 0 is the producer (one thread issues the TMA copies), warpgroups 1 and 2 compute.
// Stage s's barriers: full[s] at bars + 8 s (one arrival, the producer's, plus the copies' bytes),
// empty[s] at bars + 8 (STAGES + s) (one arrival per thread that reads the stage). `it` counts the k-tiles a
// role has passed over all of the block's tiles: use u = it / STAGES of stage it % STAGES waits
// for phase u of full (parity u & 1) and, for u >= 1, phase u - 1 of empty.
const char *kWgmmaBody = R"CUDA(
constexpr int THREADS = 384, CONSUMERS = PINGPONG ? 128 : 256;  // (threads that read each stage)
constexpr LI M_TILES = (M + BM - 1) / BM, TILES = M_TILES * ((N + BN - 1) / BN);

struct alignas(64) TensorMap { unsigned long long opaque[16]; };

KILN_DEV void mbar_init(unsigned bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" :: "r"(bar), "r"(count) : "memory");
}
KILN_DEV void mbar_wait(unsigned bar, unsigned parity) {
  asm volatile("{\n.reg .pred p;\nKILN_WAIT:\nmbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
               "@p bra KILN_DONE;\nbra KILN_WAIT;\nKILN_DONE:\n}\n" :: "r"(bar), "r"(parity) : "memory");
}
KILN_DEV void mbar_arrive(unsigned bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" :: "r"(bar) : "memory");
}
KILN_DEV void mbar_expect_tx(unsigned bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" :: "r"(bar), "r"(bytes) : "memory");
}
// The box at (k, row) of a 2-D tensor map into shared memory; its bytes complete on `bar`.
KILN_DEV void tma_load(unsigned dst, const TensorMap* map, unsigned bar, int k, int row) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n"
               :: "r"(dst), "l"(reinterpret_cast<unsigned long long>(map)), "r"(k), "r"(row), "r"(bar) : "memory");
}

extern "C" __global__ void __launch_bounds__(THREADS, 1) KILN_ENTRY(const __grid_constant__ TensorMap tmA,
                                                                     const __grid_constant__ TensorMap tmB,
                                                                     KILN_SCALE_PARAM KILN_EPILOGUE_PARAMS OT* __restrict__ C) {
  extern __shared__ unsigned char smem_raw[];
  const unsigned base = (smem_u32(smem_raw) + 1023u) & ~1023u;  // (the swizzle repeats every 1024 bytes)
  const unsigned bars = base + STAGES * STAGE_BYTES;
  const int tid = threadIdx.x, wg = tid / 128;
  if (tid == 0) {
    for (int s = 0; s < STAGES; ++s) mbar_init(bars + 8 * s, 1), mbar_init(bars + 8 * (STAGES + s), CONSUMERS);
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();
  if (wg == 0) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
    if (tid != 0) return;
    asm volatile("prefetch.tensormap [%0];\n" :: "l"(reinterpret_cast<unsigned long long>(&tmA)) : "memory");
    asm volatile("prefetch.tensormap [%0];\n" :: "l"(reinterpret_cast<unsigned long long>(&tmB)) : "memory");
    int it = 0;
    for (LI tile = blockIdx.x; tile < TILES; tile += gridDim.x) {
      const int m0 = (int)(tile % M_TILES) * BM, n0 = (int)(tile / M_TILES) * BN;
      for (int kt = 0; kt < KT; ++kt, ++it) {
        const int s = it % STAGES;
        if (it >= STAGES) mbar_wait(bars + 8 * (STAGES + s), ((it / STAGES) - 1) & 1);
        const unsigned full = bars + 8 * s, dst = base + s * STAGE_BYTES;
        mbar_expect_tx(full, STAGE_BYTES);
        tma_load(dst, &tmA, full, kt * BK, m0);
        tma_load(dst + A_BYTES, &tmB, full, kt * BK, n0);
      }
    }
    return;
  }
  asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
  const int cw = wg - 1;
  // (each consumer warp's staging for the store: after the barriers)
  float* stage = reinterpret_cast<float*>(smem_raw + (base - smem_u32(smem_raw)) + STAGES * STAGE_BYTES + 16 * STAGES) +
                 (tid / 32 - 4) * 16 * SLD;
  // The block's j-th tile is blockIdx.x + j · gridDim.x, its k-tiles the ring's j · KT .. on.
  // Cooperative: both warpgroups take every tile, 64 rows each; ping-pong: warpgroup cw the tiles
  // j = cw, cw + 2, ..., all 128 rows (two accumulator sets), so one's store runs while the other
  // computes (the ring hands out their stages in turn).
  for (LI j = PINGPONG ? cw : 0; blockIdx.x + j * gridDim.x < TILES; j += PINGPONG ? 2 : 1) {
    const LI tile = blockIdx.x + j * gridDim.x;
    const LI m0 = (tile % M_TILES) * BM, n0 = (tile / M_TILES) * BN;
    int it = (int)j * KT;
    float d[BN / 2];
#if PINGPONG
    float d1[BN / 2];
#endif
#pragma unroll
    for (int i = 0; i < BN / 2; ++i) {
      d[i] = 0.f;
#if PINGPONG
      d1[i] = 0.f;
#endif
    }
    for (int kt = 0; kt < KT; ++kt, ++it) {
      const int s = it % STAGES;
      mbar_wait(bars + 8 * s, (it / STAGES) & 1);
      const unsigned sa = base + s * STAGE_BYTES + (PINGPONG ? 0 : cw * 64 * 128), sb = base + s * STAGE_BYTES + A_BYTES;
      asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
      for (int kk = 0; kk < 4; ++kk) {
        wgmma_step(d, smem_desc(sa + kk * 32), smem_desc(sb + kk * 32));
#if PINGPONG
        wgmma_step(d1, smem_desc(sa + 64 * 128 + kk * 32), smem_desc(sb + kk * 32));
#endif
      }
      asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
      // The previous k-tile's products are done: its stage may be loaded again.
      asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
      if (kt > 0) mbar_arrive(bars + 8 * (STAGES + (it - 1) % STAGES));
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    mbar_arrive(bars + 8 * (STAGES + (it - 1) % STAGES));
    store_tile(KILN_SCALE_ARG KILN_EPILOGUE_ARGS C, d, m0 + (PINGPONG ? 0 : cw * 64), n0, stage);
#if PINGPONG
    store_tile(KILN_SCALE_ARG KILN_EPILOGUE_ARGS C, d1, m0 + 64, n0, stage);
#endif
  }
}
)CUDA";

// One wgmma over 32 bytes of K (m64nBNk16 for fp16/bf16, m64nBNk32 for fp8) with fp32
// accumulators d[BN / 2], both operands K-major from shared memory.
std::string wgmmaStep(const WgmmaGemmSpec &s) {
  const int regs = s.blockN / 2;
  const bool fp8 = s.type == ElemType::F8E4M3;
  const char *ab = fp8 ? "e4m3" : s.type == ElemType::BF16 ? "bf16" : "f16";
  std::string list, outs;
  for (int i = 0; i < regs; ++i) {
    list += (i ? ", %" : "%") + std::to_string(i);
    outs += std::string(i ? ", " : "") + "\"+f\"(d[" + std::to_string(i) + "])";
  }
  const std::string a = std::to_string(regs), b = std::to_string(regs + 1), one = std::to_string(regs + 2);
  // (scale-d p, A and B unnegated; fp16/bf16 also take the operands' transposes: none)
  return "KILN_DEV void wgmma_step(float (&d)[" + std::to_string(regs) +
         "], unsigned long long da, unsigned long long db) {\n"
         "  asm volatile(\"{\\n.reg .pred p;\\nsetp.ne.b32 p, %" +
         one + ", 0;\\nwgmma.mma_async.sync.aligned.m64n" + std::to_string(s.blockN) + (fp8 ? "k32" : "k16") + ".f32." +
         ab + "." + ab + " {" + list + "}, %" + a + ", %" + b + (fp8 ? ", p, 1, 1" : ", p, 1, 1, 0, 0") +
         ";\\n}\\n\"\n    : " + outs + "\n    : \"l\"(da), \"l\"(db), \"r\"(1));\n}\n";
}

// The spec's epilogue, C = acc when it has no result.
FusedProgram epilogueOf(const WgmmaGemmSpec &s) {
  FusedProgram epi = s.epilogue;
  if (epi.result.empty()) epi.result = "acc";
  return epi;
}

// One warpgroup's 64 x BN accumulators, as m16n8 fragments (warp w holds rows 16w .. 16w + 15, a
// thread rows lane / 4 and + 8 at columns 2 (lane % 4) and + 1 of every 8), stored at rows m0 ..
// m0 + 63 and columns n0 .. n0 + BN - 1 of C through the epilogue, nothing past the matrix. Each
// warp stages 16 x 32 of its values at a time in its own shared memory (`stage`, 16 rows of SLD
// floats), then stores them coalesced: VE consecutive columns a thread as one 16-byte store, the
// epilogue's inputs read as vectors (programVectorCode), or, where the epilogue cannot go by
// vectors, one element a thread across the row.
std::string storeTile(const WgmmaGemmSpec &s, ElemType outType, const std::vector<int64_t> &outShape) {
  const FusedProgram epi = epilogueOf(s);
  std::string vec, chunk;
  if (programVectorCode(epi, outShape, outType, s.N, vec)) {
    chunk = R"CUDA(    constexpr int VE = )CUDA" + std::to_string(16 / elemSize(outType)) +
            R"CUDA(, VPR = 32 / VE;  // (vectors a row of the chunk)
#pragma unroll
    for (int i = 0; i < 16 * VPR / 32; ++i) {
      const int v = lane + 32 * i, r = v / VPR, c = (v % VPR) * VE;
      const IDX row = (IDX)(mw + r), gn = (IDX)(n0 + jc * 32 + c);
      if (row >= M || gn >= N) continue;  // (N % VE == 0: a started vector is whole)
      float cs[VE];
#pragma unroll
      for (int e = 0; e < VE; ++e) cs[e] = stage[r * SLD + c + e]KILN_SCALE_VEC;
)CUDA" + vec +
            "    }\n";
  } else {
    chunk = R"CUDA(#pragma unroll 4
    for (int r = 0; r < 16; ++r) {
      const IDX row = (IDX)(mw + r), col = (IDX)(n0 + jc * 32 + lane);
      if (row >= M || col >= N) continue;
      const float acc = stage[r * SLD + lane]KILN_SCALE_ACC;
      const IDX L = row * N + col;
)CUDA" + programElementCode(epi, outShape, outType, "IDX", "L", "e", "C[L]") +
            "    }\n";
  }
  std::string code =
      R"CUDA(constexpr int SLD = 36;  // (a staged row of 32 floats, padded)
KILN_DEV void store_tile(KILN_SCALE_PARAM KILN_EPILOGUE_PARAMS OT* __restrict__ C, const float (&d)[BN / 2], LI m0, LI n0, float* stage) {
  typedef LI IDX;
  const int lane = threadIdx.x % 32, w = (threadIdx.x % 128) / 32;
  const LI mw = m0 + w * 16;  // (this warp's rows)
#pragma unroll
  for (int jc = 0; jc < BN / 32; ++jc) {
    __syncwarp();  // (the previous chunk is read)
#pragma unroll
    for (int jj = 0; jj < 4; ++jj)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int j = jc * 4 + jj;
        *reinterpret_cast<float2*>(stage + (lane / 4 + h * 8) * SLD + jj * 8 + (lane % 4) * 2) =
            make_float2(d[j * 4 + h * 2], d[j * 4 + h * 2 + 1]);
      }
    __syncwarp();
KILN_CHUNK  }
}
)CUDA";
  return replaceAll(code, "KILN_CHUNK", chunk);
}

// The tensor maps of A and B: the operand in boxes of 128 bytes of K by the tile's rows, 128-byte
// swizzle.
std::map<int, rt::TensorMap> tensorMaps(const WgmmaGemmSpec &s) {
  const int32_t dtype = s.type == ElemType::BF16 ? 16 : s.type == ElemType::F8E4M3 ? 17 : 10;
  const uint64_t size = uint64_t(elemSize(s.type));
  auto map = [&](int64_t rows, uint32_t boxRows) {
    rt::TensorMap m;
    m.dtype = dtype;
    m.dims = {uint64_t(s.K), uint64_t(rows)};
    m.strides = {uint64_t(s.K) * size};
    m.box = {uint32_t(128 / size), boxRows};
    m.swizzle = 128;
    return m;
  };
  return {{0, map(s.M, 128)}, {1, map(s.N, uint32_t(s.blockN))}};
}

// The ring (a 1024-byte alignment slack), two mbarriers a stage after it, then 16 x 36 floats
// for each of the 8 consumer warps to stage its stores.
uint32_t sharedBytes(const WgmmaGemmSpec &s) {
  return uint32_t(s.stages * (128 + s.blockN) * 128 + 1024 + 16 * s.stages + 8 * 16 * 36 * 4);
}

}  // namespace

std::string wgmmaUnsupported(const WgmmaGemmSpec &s) {
  if (s.type != ElemType::F16 && s.type != ElemType::BF16 && s.type != ElemType::F8E4M3)
    return "operands other than fp16, bf16 and fp8 e4m3";
  if (s.M < 1 || s.N < 1 || s.K < 1) return "an empty product";
  if (s.K * elemSize(s.type) % 16) return "rows of K that are no multiple of 16 bytes";
  if (s.blockN != 64 && s.blockN != 128 && s.blockN != 256) return "a tile N other than 64, 128 or 256";
  if (s.pingpong && s.blockN > 128) return "a ping-pong tile N over 128 (two accumulator sets a thread)";
  if (s.stages < 2 || s.stages > 8) return "stages outside 2..8";
  if (sharedBytes(s) > 227 * 1024) return "more shared memory than a block has";
  if (s.M >= (int64_t(1) << 31) || s.N >= (int64_t(1) << 31) || s.K >= (int64_t(1) << 31))
    return "a dim of 2^31 or more (TMA coordinates are 32-bit)";
  if (s.smCount < 1) return "no SMs";
  if (s.outType && !isFloatType(*s.outType)) return "a result of a type other than float";
  try {
    checkProgram(epilogueOf(s), s.outShape.empty() ? std::vector<int64_t>{s.M, s.N} : s.outShape);
  } catch (const std::invalid_argument &e) {
    return std::string("its epilogue: ") + e.what();
  }
  if (!s.outShape.empty() && numElementsOf(s.outShape) != s.M * s.N)
    return "an epilogue shape of other than M x N elements";
  return "";
}

KernelLaunch emitWgmmaGemm(const WgmmaGemmSpec &s) {
  if (std::string why = wgmmaUnsupported(s); !why.empty()) throw std::invalid_argument("wgmma gemm: " + why);
  auto L = [](int64_t v) { return std::to_string(v) + "LL"; };
  std::string src = "// kiln wgmma gemm: C[" + std::to_string(s.M) + ", " + std::to_string(s.N) + "] = A[" +
                    std::to_string(s.M) + ", " + std::to_string(s.K) + "] B[" + std::to_string(s.N) + ", " +
                    std::to_string(s.K) + "]^T, tile 128x" + std::to_string(s.blockN) + "x" +
                    std::to_string(128 / elemSize(s.type)) + ", " + std::to_string(s.stages) +
                    " stages, TMA, warp-specialised (" + (s.pingpong ? "ping-pong" : "cooperative") + "), persistent\n";
  src += kDevicePrelude;
  const ElemType outType = s.outType.value_or(s.type);
  const std::vector<int64_t> outShape = s.outShape.empty() ? std::vector<int64_t>{s.M, s.N} : s.outShape;
  src += std::string("typedef ") + storageTypeName(s.type) + " T;\n";
  src += std::string("typedef ") + storageTypeName(outType) + " OT;\n";
  int64_t extent = s.M * s.K + s.N * s.K + s.M * s.N;
  for (const auto &in : s.epilogue.inputShapes) extent = std::max(extent, numElementsOf(in));
  src += "typedef " + indexType(extent) + " LI;\n";
  src += "constexpr LI M = " + L(s.M) + ", N = " + L(s.N) + ", K = " + L(s.K) + ";\n";
  src += "#define KILN_BN " + std::to_string(s.blockN) + "\n#define KILN_STAGES " + std::to_string(s.stages) +
         "\n#define KILN_BK " + std::to_string(128 / elemSize(s.type)) + "\n#define PINGPONG " +
         (s.pingpong ? "1" : "0") + "\n";
  src += wgmmaStep(s);
  src += kWgmmaCommon;
  src += storeTile(s, outType, outShape);
  src += kWgmmaBody;
  std::string args;
  for (size_t k = 0; k < s.epilogue.numInputs(); ++k) args += "e" + std::to_string(k) + ", ";
  src = replaceAll(replaceAll(src, "KILN_EPILOGUE_PARAMS", programParams(s.epilogue, "e")), "KILN_EPILOGUE_ARGS", args);
  src = replaceAll(src, "KILN_SCALE_PARAM", s.columnScale ? "const float* __restrict__ colScale," : "");
  src = replaceAll(src, "KILN_SCALE_ARG", s.columnScale ? "colScale," : "");
  src = replaceAll(src, "KILN_SCALE_ACC", s.columnScale ? " * colScale[col]" : "");
  src = replaceAll(src, "KILN_SCALE_VEC", s.columnScale ? " * colScale[gn + e]" : "");
  KernelLaunch out = finalizeKernel(std::string("wgmma_tma_") + typeTag(s.type), src);
  const int64_t rowTiles = ceilDiv(s.M, 128), colTiles = ceilDiv(s.N, s.blockN);
  out.block = {384, 1, 1};
  out.grid = {static_cast<uint32_t>(std::min<int64_t>(rowTiles * colTiles, s.smCount)), 1, 1};
  out.sharedBytes = sharedBytes(s);
  out.numParams = int(3 + s.columnScale + s.epilogue.numInputs());
  out.tensorMaps = tensorMaps(s);
  out.archSpecific = true;
  return out;
}

}  // namespace kiln::codegen

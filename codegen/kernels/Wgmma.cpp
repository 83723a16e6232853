#include "codegen/kernels/Wgmma.h"

#include "codegen/kernels/KernelUtil.h"

#include <stdexcept>

namespace kiln::codegen {

using namespace kernels;

namespace {

// The kernel; the emitter defines T, LI, M, N, K, KILN_BN, KILN_STAGES and wgmma_step (the
// m64nBNk16 instruction for the operand type).
const char *kWgmmaBody = R"CUDA(
constexpr int BM = 128, BN = KILN_BN, BK = 64, STAGES = KILN_STAGES, THREADS = 256;
constexpr int A_BYTES = BM * 128, B_BYTES = BN * 128, STAGE_BYTES = A_BYTES + B_BYTES;

KILN_DEV unsigned smem_u32(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }
KILN_DEV void cp16(unsigned dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" :: "r"(dst), "l"(src), "r"(valid ? 16 : 0));
}
KILN_DEV void cp_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> KILN_DEV void cp_wait() { asm volatile("cp.async.wait_group %0;\n" :: "n"(N)); }

// A shared-memory matrix descriptor: K-major rows of 128 bytes in the 128-byte swizzle, 8-row
// groups 1024 bytes apart (stride byte offset), the leading byte offset unused (1).
KILN_DEV unsigned long long smem_desc(unsigned addr) {
  return (unsigned long long)((addr & 0x3FFFF) >> 4) | (1ull << 16) | (64ull << 32) | (1ull << 62);
}

// Rows of a tile (64 elements of K each, 8 chunks of 16 bytes) into the swizzled layout: chunk c
// of row r at chunk c ^ (r % 8). Rows past `rows` and chunks past K read zeros.
KILN_DEV void load_tile(unsigned dst, const T* __restrict__ src, LI r0, LI rows, LI k0, int count, int tid) {
  for (int c = tid; c < count * 8; c += THREADS) {
    const int r = c >> 3, ch = c & 7;
    const LI row = r0 + r, k = k0 + ch * 8;
    const bool valid = row < rows && k < K;
    cp16(dst + r * 128 + ((ch ^ (r & 7)) << 4), valid ? src + row * K + k : src, valid);
  }
}

extern "C" __global__ void __launch_bounds__(THREADS, 1) KILN_ENTRY(const T* __restrict__ A, const T* __restrict__ B,
                                                                     T* __restrict__ C) {
  extern __shared__ unsigned char smem_raw[];
  const unsigned base = (smem_u32(smem_raw) + 1023u) & ~1023u;  // (the swizzle repeats every 1024 bytes)
  const int tid = threadIdx.x, wg = tid / 128, lt = tid % 128;
  const LI m0 = (LI)blockIdx.y * BM, n0 = (LI)blockIdx.x * BN;
  const int KT = (int)((K + BK - 1) / BK);
  float d[BN / 2];
#pragma unroll
  for (int i = 0; i < BN / 2; ++i) d[i] = 0.f;
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < KT) {
      load_tile(base + s * STAGE_BYTES, A, m0, M, (LI)s * BK, BM, tid);
      load_tile(base + s * STAGE_BYTES + A_BYTES, B, n0, N, (LI)s * BK, BN, tid);
    }
    cp_commit();
  }
  for (int kt = 0; kt < KT; ++kt) {
    cp_wait<STAGES - 2>();
    // cp.async wrote through the generic proxy; wgmma reads through the async proxy.
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    __syncthreads();  // tile kt is in for every thread, and every warpgroup is done with kt - 1
    const int nk = kt + STAGES - 1;
    if (nk < KT) {
      const unsigned s = base + (nk % STAGES) * STAGE_BYTES;
      load_tile(s, A, m0, M, (LI)nk * BK, BM, tid);
      load_tile(s + A_BYTES, B, n0, N, (LI)nk * BK, BN, tid);
    }
    cp_commit();
    const unsigned sa = base + (kt % STAGES) * STAGE_BYTES + wg * 64 * 128, sb = base + (kt % STAGES) * STAGE_BYTES + A_BYTES;
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
    for (int kk = 0; kk < BK / 16; ++kk) wgmma_step(d, smem_desc(sa + kk * 32), smem_desc(sb + kk * 32));
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
  }
  // Accumulators as m16n8 fragments: warp w of the warpgroup holds rows 16w .. 16w + 15, a thread
  // rows lane / 4 and + 8 at columns 2 (lane % 4) and + 1 of every 8.
  const int w = lt / 32, lane = lt % 32;
  const LI row0 = m0 + wg * 64 + w * 16 + lane / 4;
#pragma unroll
  for (int j = 0; j < BN / 8; ++j) {
    const LI col = n0 + j * 8 + (lane % 4) * 2;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const LI row = row0 + h * 8;
      if (row >= M || col >= N) continue;
      T* c = C + row * N + col;
      if (N % 2 == 0) {
        *reinterpret_cast<unsigned*>(c) = pack2(d[j * 4 + h * 2], d[j * 4 + h * 2 + 1]);
      } else {
        c[0] = kiln_st<T>(d[j * 4 + h * 2]);
        if (col + 1 < N) c[1] = kiln_st<T>(d[j * 4 + h * 2 + 1]);
      }
    }
  }
}
)CUDA";

// The m64nBNk16 wgmma with fp32 accumulators d[BN / 2], both operands K-major from shared memory.
std::string wgmmaStep(const WgmmaGemmSpec &s) {
  const int regs = s.blockN / 2;
  const char *ab = s.type == ElemType::BF16 ? "bf16" : "f16";
  std::string list, outs;
  for (int i = 0; i < regs; ++i) {
    list += (i ? ", %" : "%") + std::to_string(i);
    outs += std::string(i ? ", " : "") + "\"+f\"(d[" + std::to_string(i) + "])";
  }
  const std::string a = std::to_string(regs), b = std::to_string(regs + 1), one = std::to_string(regs + 2);
  return "KILN_DEV void wgmma_step(float (&d)[" + std::to_string(regs) +
         "], unsigned long long da, unsigned long long db) {\n"
         "  asm volatile(\"{\\n.reg .pred p;\\nsetp.ne.b32 p, %" +
         one + ", 0;\\nwgmma.mma_async.sync.aligned.m64n" + std::to_string(s.blockN) + "k16.f32." + ab + "." + ab +
         " {" + list + "}, %" + a + ", %" + b + ", p, 1, 1, 0, 0;\\n}\\n\"\n    : " + outs +
         "\n    : \"l\"(da), \"l\"(db), \"r\"(1));\n}\n";
}

}  // namespace

std::string wgmmaUnsupported(const WgmmaGemmSpec &s) {
  if (s.type != ElemType::F16 && s.type != ElemType::BF16) return "operands other than fp16 and bf16";
  if (s.M < 1 || s.N < 1 || s.K < 1) return "an empty product";
  if (s.K % 8) return "K not a multiple of 8 (rows of 16 bytes)";
  if (s.blockN != 64 && s.blockN != 128 && s.blockN != 256) return "a tile N other than 64, 128 or 256";
  if (s.stages < 2 || s.stages > 8) return "stages outside 2..8";
  if (s.stages * (128 + s.blockN) * 128 + 1024 > 227 * 1024) return "more shared memory than a block has";
  return "";
}

KernelLaunch emitWgmmaGemm(const WgmmaGemmSpec &s) {
  if (std::string why = wgmmaUnsupported(s); !why.empty()) throw std::invalid_argument("wgmma gemm: " + why);
  const bool bf = s.type == ElemType::BF16;
  auto L = [](int64_t v) { return std::to_string(v) + "LL"; };
  std::string src = "// kiln wgmma gemm: C[" + std::to_string(s.M) + ", " + std::to_string(s.N) + "] = A[" +
                    std::to_string(s.M) + ", " + std::to_string(s.K) + "] B[" + std::to_string(s.N) + ", " +
                    std::to_string(s.K) + "]^T, tile 128x" + std::to_string(s.blockN) + "x64, " +
                    std::to_string(s.stages) + " stages\n";
  src += kDevicePrelude;
  src += std::string("typedef ") + storageTypeName(s.type) + " T;\n";
  src += std::string("KILN_DEV unsigned pack2(float lo, float hi) {\n  unsigned r;\n  asm(\"cvt.rn.") +
         (bf ? "bf16x2" : "f16x2") + ".f32 %0, %1, %2;\" : \"=r\"(r) : \"f\"(hi), \"f\"(lo));\n  return r;\n}\n";
  src += "typedef " + indexType(s.M * s.K + s.N * s.K + s.M * s.N) + " LI;\n";
  src += "constexpr LI M = " + L(s.M) + ", N = " + L(s.N) + ", K = " + L(s.K) + ";\n";
  src += "#define KILN_BN " + std::to_string(s.blockN) + "\n#define KILN_STAGES " + std::to_string(s.stages) + "\n";
  src += wgmmaStep(s);
  src += kWgmmaBody;
  KernelLaunch out = finalizeKernel(std::string("wgmma_") + typeTag(s.type), src);
  out.block = {256, 1, 1};
  out.grid = {static_cast<uint32_t>(ceilDiv(s.N, s.blockN)), static_cast<uint32_t>(ceilDiv(s.M, 128)), 1};
  out.sharedBytes = static_cast<uint32_t>(s.stages * (128 + s.blockN) * 128 + 1024);
  out.numParams = 3;
  return out;
}

}  // namespace kiln::codegen

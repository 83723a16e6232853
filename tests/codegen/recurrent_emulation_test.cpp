// The recurrence kernel (codegen/kernels/Recurrent.h) run on the host, without a GPU: its emitted
// source is compiled as C++ (the host compiler) with an emulation of the CUDA it uses — one
// std::thread per GPU thread, __syncthreads and the cluster barrier as barriers, each CTA's
// shared memory, distributed shared memory stores into the cluster's other CTAs, and mma.sync
// m16n8k16 (bf16) computed from its 32 lanes' fragments as PTX defines them — and its outputs
// are compared with a double-precision reference written here from the ONNX equations (the
// product operand rounded to bf16 where the kernel's is). What this cannot see (timing, real
// memory ordering, ptxas) is the GPU suite's (bench/gpu_suite.sh rnn); what it does check is the
// kernel's logic: indexing, layouts, directions, sequence_lens, the cluster exchange, the MMA
// fragments and the gate arithmetic of every cell.
#include "codegen/kernels/Recurrent.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace kiln::codegen {
namespace {

// CUDA builtins and the device prelude's helpers the kernel uses, for the host.
const char *kHostPrelude = R"EMU(
#include <cmath>
#include <cstdint>
#include <cstring>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>
#define __global__
#define __device__
#define __forceinline__ inline
#define __restrict__
#define __launch_bounds__(...)
#define __cluster_dims__(...)
#define KILN_DEV static inline
struct EmuDim { unsigned x = 0, y = 0, z = 0; };
thread_local EmuDim threadIdx, blockIdx;
struct EmuBarrier {
  std::mutex m; std::condition_variable cv; int n = 0, waiting = 0; long gen = 0;
  void wait() {
    std::unique_lock<std::mutex> l(m);
    long g = gen;
    if (++waiting == n) { waiting = 0; ++gen; cv.notify_all(); return; }
    cv.wait(l, [&] { return gen != g; });
  }
};
struct EmuWarp {
  EmuBarrier bar;
  unsigned a[32][4], b[32][2];
};
struct EmuCta {
  std::vector<unsigned char> smem;
  EmuBarrier bar;
  std::vector<EmuWarp> warps;
};
struct EmuCluster { std::vector<EmuCta> *ctas; EmuBarrier bar; };
thread_local EmuCta *emu_cta;
thread_local EmuCluster *emu_cluster;
thread_local unsigned emu_rank;
static void __syncthreads() { emu_cta->bar.wait(); }
static float __uint_as_float(unsigned u) { float f; std::memcpy(&f, &u, 4); return f; }
static unsigned __float_as_uint(float f) { unsigned u; std::memcpy(&u, &f, 4); return u; }
struct kiln_bf16 { unsigned short x; };
KILN_DEV float kiln_ld(float v) { return v; }
KILN_DEV float kiln_ld(kiln_bf16 h) { return __uint_as_float(((unsigned)h.x) << 16); }
KILN_DEV int kiln_ld(int v) { return v; }
KILN_DEV long long kiln_ld(long long v) { return v; }
template <class T> static inline T kiln_st(float v) { return (T)v; }
template <> inline kiln_bf16 kiln_st<kiln_bf16>(float v) {
  unsigned u = __float_as_uint(v);
  kiln_bf16 h;
  h.x = (unsigned short)((u & 0x7fffffffu) > 0x7f800000u ? 0x7fc0u : (u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
  return h;
}
KILN_DEV float kiln_sigmoid(float x) { return x >= 0.f ? 1.f / (1.f + expf(-x)) : expf(x) / (1.f + expf(x)); }
KILN_DEV float kiln_softplus(float x) { return x > 0.f ? x + log1pf(expf(-x)) : log1pf(expf(x)); }
)EMU";

// The kernel's PTX region, in C++.
const char *kHostAsm = R"EMU(
KILN_DEV unsigned kiln_saddr(const void *p) { return (unsigned)((const unsigned char *)p - emu_cta->smem.data()); }
KILN_DEV unsigned kiln_cluster_rank() { return emu_rank; }
KILN_DEV void kiln_step_sync() { emu_cluster->bar.wait(); }
KILN_DEV unsigned kiln_map(unsigned addr, unsigned rank) { return (rank << 24) | addr; }
KILN_DEV unsigned char *emu_remote(unsigned a) {
  unsigned base = (unsigned)(emu_cta - emu_cluster->ctas->data()) / CLUSTER * CLUSTER;
  return (*emu_cluster->ctas)[base + (a >> 24)].smem.data() + (a & 0xffffffu);
}
KILN_DEV void kiln_st_remote16(unsigned a, const unsigned *v) { std::memcpy(emu_remote(a), v, 16); }
KILN_DEV void kiln_st_remote4(unsigned a, unsigned v) { std::memcpy(emu_remote(a), &v, 4); }
KILN_DEV void kiln_st_remote2(unsigned a, unsigned short v) { std::memcpy(emu_remote(a), &v, 2); }
#if MMA
// bf16 element `half` (0 low, 1 high) of a 32-bit fragment register.
KILN_DEV float emu_bf16(unsigned r, int half) { return __uint_as_float((half ? r >> 16 : r & 0xffffu) << 16); }
KILN_DEV void kiln_mma(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  const int lane = threadIdx.x & 31;
  EmuWarp &w = emu_cta->warps[threadIdx.x >> 5];
  for (int k = 0; k < 4; ++k) w.a[lane][k] = a[k];
  w.b[lane][0] = b0, w.b[lane][1] = b1;
  w.bar.wait();
  // A[r][k]: lane (r % 8)·4 + (k % 8)/2, register (r < 8 ? 0 : 1) + (k < 8 ? 0 : 2), element k % 2.
  // B[k][n]: lane n·4 + (k % 8)/2, register k < 8 ? 0 : 1, element k % 2.
  auto A = [&](int r, int k) { return emu_bf16(w.a[(r % 8) * 4 + (k % 8) / 2][(r < 8 ? 0 : 1) + (k < 8 ? 0 : 2)], k % 2); };
  auto B = [&](int k, int n) { return emu_bf16(w.b[n * 4 + (k % 8) / 2][k < 8 ? 0 : 1], k % 2); };
  const int g = lane >> 2, q = lane & 3;
  for (int i = 0; i < 4; ++i) {
    const int r = g + (i >= 2 ? 8 : 0), n = 2 * q + (i & 1);
    float s = d[i];
    for (int k = 0; k < 16; ++k) s += A(r, k) * B(k, n);
    d[i] = s;
  }
  w.bar.wait();
}
#endif
)EMU";

// main(): reads the parameters, runs the grid (each cluster's CTAs side by side, one thread per
// GPU thread), writes the parameters back.
const char *kDriver = R"EMU(
#include <cstdio>
#include <utility>
template <class... A, size_t... I> void emu_call(void (*f)(A...), void **p, std::index_sequence<I...>) { f(static_cast<A>(p[I])...); }
template <class... A> void emu_call(void (*f)(A...), void **p) { emu_call(f, p, std::index_sequence_for<A...>{}); }
int main(int argc, char **argv) {
  FILE *in = std::fopen(argv[1], "rb");
  unsigned n = 0;
  if (!in || std::fread(&n, 4, 1, in) != 1) return 2;
  std::vector<std::vector<unsigned char>> bufs(n);
  std::vector<void *> ptrs(n);
  for (unsigned k = 0; k < n; ++k) {
    unsigned long long bytes = 0;
    if (std::fread(&bytes, 8, 1, in) != 1) return 2;
    bufs[k].resize(bytes + 16);
    if (bytes && std::fread(bufs[k].data(), 1, bytes, in) != bytes) return 2;
    ptrs[k] = bufs[k].data();
  }
  std::fclose(in);
  std::vector<EmuCta> ctas(EMU_GRID);
  for (auto &c : ctas) {
    c.smem.assign(SMEM_BYTES + 16, 0xAB);  // (garbage: the kernel must initialise what it reads)
    c.bar.n = NTHREADS;
    c.warps = std::vector<EmuWarp>(NTHREADS / 32);
    for (auto &w : c.warps) w.bar.n = 32;
  }
  for (unsigned first = 0; first < EMU_GRID; first += CLUSTER) {
    EmuCluster cl;
    cl.ctas = &ctas;
    cl.bar.n = CLUSTER * NTHREADS;
    std::vector<std::thread> threads;
    for (unsigned r = 0; r < CLUSTER; ++r)
      for (unsigned t = 0; t < NTHREADS; ++t)
        threads.emplace_back([&, r, t] {
          threadIdx.x = t, blockIdx.x = first + r;
          emu_cta = &ctas[first + r], emu_cluster = &cl, emu_rank = r;
          emu_call(&EMU_ENTRY, ptrs.data());
        });
    for (auto &th : threads) th.join();
  }
  FILE *out = std::fopen(argv[2], "wb");
  for (unsigned k = 0; k < n; ++k) std::fwrite(bufs[k].data(), 1, bufs[k].size() - 16, out);
  std::fclose(out);
  return 0;
}
)EMU";

std::string replaceOnce(std::string s, const std::string &from, const std::string &to) {
  size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) s.replace(at, from.size(), to);
  return s;
}

// The kernel's source as a host program.
std::string hostProgram(const KernelLaunch &k) {
  std::string src = k.source.substr(k.source.find("#define T_ "));
  size_t a = src.find("// <kiln-asm>"), b = src.find("// </kiln-asm>");
  src = src.substr(0, a) + kHostAsm + src.substr(b);
  src = replaceOnce(src, "extern __shared__ __attribute__((aligned(16))) unsigned char smem[];",
                    "unsigned char *smem = emu_cta->smem.data();");
  return std::string(kHostPrelude) + src + "\n#define EMU_GRID " + std::to_string(k.grid[0]) + "u\n#define EMU_ENTRY " +
         k.entry + "\n" + kDriver;
}

float roundBf16(float v) {
  uint32_t u;
  std::memcpy(&u, &v, 4);
  u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
  std::memcpy(&v, &u, 4);
  return v;
}

double act(const RecurrentActivation &a, double x) {
  switch (a.kind) {
    case RecurrentAct::Sigmoid: return 1 / (1 + std::exp(-x));
    case RecurrentAct::Tanh: return std::tanh(x);
    case RecurrentAct::Relu: return x > 0 ? x : 0;
    case RecurrentAct::ScaledTanh: return a.alpha * std::tanh(a.beta * x);
    case RecurrentAct::LeakyRelu: return x >= 0 ? x : a.alpha * x;
    default: ADD_FAILURE() << "activation not in the reference";
  }
  return x;
}

struct Case {
  std::string name;
  RecurrenceSpec s;
  int cluster;  // the plan's cluster (forced)
};

// Runs one case: random operands (values as the storage type holds them), the emulated kernel,
// and the reference; returns max over outputs of ‖kernel − ref‖ / ‖ref‖.
double runCase(const Case &c, const std::string &work) {
  const RecurrenceSpec &s = c.s;
  RecurrencePlan p;
  p.cluster = c.cluster;
  p.batchChunk = std::min<int64_t>(s.B, 16);
  p.tensorCores = s.type == ElemType::BF16;
  p.weightsInShared = true;
  KernelLaunch k = emitRecurrence(s, p);
  const int64_t T = s.T, B = s.B, H = s.H, D = s.D,
                G = s.cell == RecurrentCell::Lstm  ? 4
                    : s.cell == RecurrentCell::Gru ? 3
                                                   : 1;
  const bool bf = s.type == ElemType::BF16;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  auto make = [&](int64_t n, float scale) {
    std::vector<float> v(static_cast<size_t>(n));
    for (float &x : v) x = bf ? roundBf16(u(rng) * scale) : u(rng) * scale;
    return v;
  };
  std::vector<float> xp = make(T * B * D * G * H, 1.f), r = make(D * G * H * H, 1.f / std::sqrt(float(H))),
                     rb = make(D * G * H, 0.3f), h0 = make(D * B * H, 1.f), c0 = make(D * B * H, 1.f),
                     pp = make(D * 3 * H, 0.5f);
  std::vector<int32_t> lens(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; ++b) lens[b] = int32_t(b == 0 ? T : 1 + rng() % T);
  // Parameters in the kernel's order, bytes in its storage type.
  auto bytesOf = [&](const std::vector<float> &v) {
    std::vector<unsigned char> out(v.size() * (bf ? 2 : 4));
    for (size_t i = 0; i < v.size(); ++i) {
      if (bf) {
        uint32_t w;
        std::memcpy(&w, &v[i], 4);
        uint16_t h = uint16_t(w >> 16);
        std::memcpy(&out[2 * i], &h, 2);
      } else {
        std::memcpy(&out[4 * i], &v[i], 4);
      }
    }
    return out;
  };
  std::vector<std::vector<unsigned char>> params = {bytesOf(xp), bytesOf(r)};
  if (s.hasRB) params.push_back(bytesOf(rb));
  if (s.hasSeqLens) params.emplace_back((unsigned char *)lens.data(), (unsigned char *)(lens.data() + B));
  if (s.hasH0) params.push_back(bytesOf(h0));
  if (s.hasC0) params.push_back(bytesOf(c0));
  if (s.hasP) params.push_back(bytesOf(pp));
  size_t firstOut = params.size();
  const int64_t yElems = T * D * B * H, sElems = D * B * H;
  std::vector<std::pair<std::string, int64_t>> outs;
  if (s.writeY) outs.push_back({"Y", yElems});
  if (s.writeYh) outs.push_back({"Y_h", sElems});
  if (s.writeYc) outs.push_back({"Y_c", sElems});
  for (auto &o : outs) params.emplace_back(size_t(o.second * (bf ? 2 : 4)), (unsigned char)0xff);  // NaN poison
  EXPECT_EQ(int(params.size()), k.numParams);

  std::string cpp = work + "/" + c.name + ".cpp", exe = work + "/" + c.name, in = work + "/" + c.name + ".in",
              outFile = work + "/" + c.name + ".out";
  std::ofstream(cpp) << hostProgram(k);
  std::string cmd = "c++ -std=c++17 -O1 -w -pthread -o " + exe + " " + cpp + " 2> " + exe + ".log";
  if (std::system(cmd.c_str()) != 0) {
    std::ifstream log(exe + ".log");
    std::stringstream ss;
    ss << log.rdbuf();
    ADD_FAILURE() << "host compile failed: " << ss.str().substr(0, 3000);
    return 1e9;
  }
  {
    std::ofstream f(in, std::ios::binary);
    uint32_t n = uint32_t(params.size());
    f.write((const char *)&n, 4);
    for (auto &pv : params) {
      uint64_t bytes = pv.size();
      f.write((const char *)&bytes, 8);
      f.write((const char *)pv.data(), std::streamsize(pv.size()));
    }
  }
  if (std::system((exe + " " + in + " " + outFile).c_str()) != 0) {
    ADD_FAILURE() << "emulated kernel failed";
    return 1e9;
  }
  std::ifstream f(outFile, std::ios::binary);
  std::vector<std::vector<float>> got;
  for (size_t kp = 0; kp < params.size(); ++kp) {
    std::vector<unsigned char> bytes(params[kp].size());
    f.read((char *)bytes.data(), std::streamsize(bytes.size()));
    if (kp < firstOut) continue;
    std::vector<float> v(bytes.size() / (bf ? 2 : 4));
    for (size_t i = 0; i < v.size(); ++i) {
      if (bf) {
        uint16_t h;
        std::memcpy(&h, &bytes[2 * i], 2);
        uint32_t w = uint32_t(h) << 16;
        std::memcpy(&v[i], &w, 4);
      } else {
        std::memcpy(&v[i], &bytes[4 * i], 4);
      }
    }
    got.push_back(v);
  }

  // Reference (double; the product's h operand rounded to bf16 where the kernel's is).
  const bool l1 = s.layout1;
  auto op = [&](double v) { return bf ? double(roundBf16(float(v))) : v; };
  auto clip = [&](double v) { return s.clip > 0 ? std::max(-double(s.clip), std::min(double(s.clip), v)) : v; };
  auto sIdx = [&](int64_t d, int64_t b, int64_t j) { return (l1 ? b * D + d : d * B + b) * H + j; };
  auto yIdx = [&](int64_t t, int64_t d, int64_t b, int64_t j) {
    return (l1 ? (b * T + t) * D + d : (t * D + d) * B + b) * H + j;
  };
  auto xIdx = [&](int64_t t, int64_t b, int64_t d, int64_t n) {
    return (l1 ? b * T + t : t * B + b) * D * G * H + d * G * H + n;
  };
  std::vector<double> Y(static_cast<size_t>(yElems), 0.0), Yh(static_cast<size_t>(sElems)), Yc(Yh);
  for (int64_t d = 0; d < D; ++d)
    for (int64_t b = 0; b < B; ++b) {
      std::vector<double> h(static_cast<size_t>(H)), cc(h), g(static_cast<size_t>(G * H)), hn(h);
      for (int64_t j = 0; j < H; ++j) h[j] = s.hasH0 ? h0[sIdx(d, b, j)] : 0, cc[j] = s.hasC0 ? c0[sIdx(d, b, j)] : 0;
      const int64_t len = s.hasSeqLens ? lens[b] : T;
      for (int64_t st = 0; st < len; ++st) {
        const int64_t t = s.reverse[d] ? len - 1 - st : st;
        auto rowDot = [&](int64_t n, const std::vector<double> &v) {
          double acc = 0;
          for (int64_t kk = 0; kk < H; ++kk) acc += op(v[kk]) * r[(d * G * H + n) * H + kk];
          return acc;
        };
        auto RB = [&](int64_t n) { return s.hasRB ? double(rb[d * G * H + n]) : 0.0; };
        auto XP = [&](int64_t n) { return double(xp[xIdx(t, b, d, n)]); };
        const RecurrentActivation *a = s.acts[d];
        for (int64_t j = 0; j < H; ++j) {
          if (s.cell == RecurrentCell::Rnn) {
            hn[j] = act(a[0], clip(XP(j) + rowDot(j, h) + RB(j)));
          } else if (s.cell == RecurrentCell::Lstm) {
            double P[3] = {0, 0, 0};
            if (s.hasP)
              for (int i = 0; i < 3; ++i) P[i] = pp[d * 3 * H + i * H + j];
            double ig = act(a[0], clip(XP(j) + rowDot(j, h) + RB(j) + P[0] * cc[j]));
            double fg = s.inputForget
                            ? 1 - ig
                            : act(a[0], clip(XP(2 * H + j) + rowDot(2 * H + j, h) + RB(2 * H + j) + P[2] * cc[j]));
            double cg = act(a[1], clip(XP(3 * H + j) + rowDot(3 * H + j, h) + RB(3 * H + j)));
            g[j] = fg * cc[j] + ig * cg;  // new c
            double og = act(a[0], clip(XP(H + j) + rowDot(H + j, h) + RB(H + j) + P[1] * g[j]));
            hn[j] = og * act(a[2], g[j]);
          }
        }
        if (s.cell == RecurrentCell::Lstm)
          for (int64_t j = 0; j < H; ++j) cc[j] = g[j];
        if (s.cell == RecurrentCell::Gru) {
          std::vector<double> z(h), rr(h), rh(h);
          for (int64_t j = 0; j < H; ++j) {
            z[j] = act(a[0], clip(XP(j) + rowDot(j, h) + RB(j)));
            rr[j] = act(a[0], clip(XP(H + j) + rowDot(H + j, h) + RB(H + j)));
            rh[j] = rr[j] * h[j];
          }
          for (int64_t j = 0; j < H; ++j) {
            double hh = s.linearBeforeReset
                            ? act(a[1], clip(XP(2 * H + j) + rr[j] * (rowDot(2 * H + j, h) + RB(2 * H + j))))
                            : act(a[1], clip(XP(2 * H + j) + rowDot(2 * H + j, rh) + RB(2 * H + j)));
            hn[j] = (1 - z[j]) * hh + z[j] * h[j];
          }
        }
        h = hn;
        for (int64_t j = 0; j < H; ++j) Y[yIdx(t, d, b, j)] = h[j];
      }
      for (int64_t j = 0; j < H; ++j) Yh[sIdx(d, b, j)] = h[j], Yc[sIdx(d, b, j)] = cc[j];
    }
  double worst = 0;
  for (size_t o = 0; o < outs.size(); ++o) {
    const std::vector<double> &want = outs[o].first == "Y" ? Y : outs[o].first == "Y_h" ? Yh : Yc;
    double num = 0, den = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      double dlt =
          double(got[o][i]) - (bf ? double(roundBf16(float(want[i]))) : want[i]);  // (outputs are stored as bf16)
      if (std::isnan(got[o][i])) dlt = 1e30;
      num += dlt * dlt, den += want[i] * want[i];
    }
    double e = std::sqrt(num / std::max(den, 1e-300));
    std::printf("[emulation] %-34s %-4s rel L2 %.2e\n", c.name.c_str(), outs[o].first.c_str(), e);
    worst = std::max(worst, e);
  }
  return worst;
}

RecurrenceSpec baseSpec(RecurrentCell cell, int64_t T, int64_t B, int64_t H, int64_t D, ElemType type) {
  RecurrenceSpec s;
  s.cell = cell, s.T = T, s.B = B, s.H = H, s.D = D, s.type = type;
  for (auto &d : s.acts) {
    d[0] = {RecurrentAct::Sigmoid, 0, 0};
    d[1] = {RecurrentAct::Tanh, 0, 0};
    d[2] = {RecurrentAct::Tanh, 0, 0};
  }
  s.writeY = s.writeYh = true;
  s.writeYc = cell == RecurrentCell::Lstm;
  return s;
}

TEST(RecurrenceEmulation, KernelMatchesReferenceOnTheHost) {
  if (std::system("c++ --version > /dev/null 2>&1") != 0) GTEST_SKIP() << "no host C++ compiler";
  char tmpl[] = "/tmp/kiln-rec-emu-XXXXXX";
  const char *dir = mkdtemp(tmpl);
  ASSERT_NE(dir, nullptr);
  std::vector<Case> cases;
  {
    // Tensor cores (bf16), a cluster of 2 exchanging h, both directions, sequence_lens, layout 1,
    // every LSTM operand, clip and a second direction with other activations.
    RecurrenceSpec s = baseSpec(RecurrentCell::Lstm, 5, 3, 32, 2, ElemType::BF16);
    s.layout1 = true, s.hasRB = s.hasSeqLens = s.hasH0 = s.hasC0 = s.hasP = true, s.clip = 2.5f;
    s.acts[1][1] = {RecurrentAct::ScaledTanh, 0.8f, 1.2f};
    cases.push_back({"lstm_bf16_cluster2_layout1", s, 2});
  }
  {
    RecurrenceSpec s = baseSpec(RecurrentCell::Lstm, 4, 18, 16, 1, ElemType::F32);  // two batch chunks
    s.reverse[0] = true, s.inputForget = true, s.hasH0 = true;
    s.writeY = false;
    cases.push_back({"lstm_f32_reverse_chunks", s, 1});
  }
  {
    RecurrenceSpec s = baseSpec(RecurrentCell::Gru, 4, 3, 32, 2, ElemType::BF16);  // two phases per step
    s.hasRB = s.hasSeqLens = s.hasH0 = true;
    cases.push_back({"gru_bf16_cluster2", s, 2});
  }
  {
    RecurrenceSpec s = baseSpec(RecurrentCell::Gru, 4, 2, 12, 2, ElemType::F32);
    s.linearBeforeReset = true, s.hasRB = s.hasH0 = true, s.layout1 = true;
    cases.push_back({"gru_lbr_f32_cluster2", s, 2});
  }
  {
    RecurrenceSpec s = baseSpec(RecurrentCell::Rnn, 5, 2, 16, 2, ElemType::BF16);
    s.hasSeqLens = s.hasH0 = true, s.clip = 1.5f;
    s.acts[0][0] = {RecurrentAct::Relu, 0, 0};
    s.acts[1][0] = {RecurrentAct::LeakyRelu, 0.1f, 0};
    cases.push_back({"rnn_bf16", s, 1});
  }
  for (const Case &c : cases) {
    SCOPED_TRACE(c.name);
    double e = runCase(c, dir);
    // fp32: summation order only; bf16: also the rare h whose fp32 and double values round to
    // different bf16 neighbours.
    EXPECT_LE(e, c.s.type == ElemType::F32 ? 1e-5 : 2e-4);
  }
}

}  // namespace
}  // namespace kiln::codegen

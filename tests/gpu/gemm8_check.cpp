// The int8 tensor-core product kernel (MatMulSpec::int8) on a GPU, against an exact CPU
// reference, and timed: for each size, random int8 A [M, K] and weights B [N, K] (values in
// ±[1, 127], never zero), per-column fp32 scales, C = (A · Bᵀ) · scale computed by the kernel
// and by int64 sums on the CPU; also uint8 A (0..255) with zero point 100. Output poisoned (NaN) before the run. Exit 0 when every size
// agrees (relative error ≤ 1e-6), 1 when one does not, 77 without a GPU (skipped).
//   kiln-int8-gemm-check [--iterations N]
#include "codegen/kernels/MatMul.h"
#include "codegen/nvrtc/Nvrtc.h"
#include "runtime/src/EngineFormat.h"
#include "tuner/EngineRunner.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>

using namespace kiln;

namespace {

// One engine holding one launch of the kernel: inputs a, b, scale (, offset); output c.
std::vector<uint8_t> engineFor(const codegen::KernelLaunch &k, const codegen::CompileOutput &bin, int64_t M, int64_t N,
                               int64_t K, bool u8) {
  rt::EngineDesc d;
  d.kilnVersion = "int8-check";
  d.io = {{"a", u8 ? 2 : 3, {M, K}, true}, {"b", 3, {N, K}, true}, {"scale", 1, {N}, true}};
  if (u8) d.io.push_back({"offset", 6, {N}, true});
  d.io.push_back({"c", 1, {M, N}, false});
  rt::ModuleDesc m;
  m.cubin.assign(bin.cubin.begin(), bin.cubin.end());
  m.ptx = bin.ptx;
  d.modules.push_back(m);
  d.kernels.push_back({0, k.entry, "int8 gemm"});
  rt::Launch l;
  l.kernel = 0;
  for (int i = 0; i < 3; ++i) l.grid[i] = k.grid[i], l.block[i] = k.block[i];
  l.sharedBytes = k.sharedBytes;
  l.node = "int8 gemm";
  for (int i = 0; i < int(d.io.size()); ++i) l.args.push_back(rt::LaunchArg::buf({rt::BufferRef::Space::Io, 0, i}));
  d.launches.push_back(l);
  std::string problem = rt::checkEngineDesc(d);
  if (!problem.empty()) std::fprintf(stderr, "invalid engine: %s\n", problem.c_str());
  return rt::writeEngine(d);
}

}  // namespace

int main(int argc, char **argv) {
  int iterations = 50;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--iterations") == 0) iterations = std::atoi(argv[++i]);
  // u8: uint8 A with zero point 100 (mma .u8.s8, offsets 100·Σ_k B[n][k] subtracted per column).
  struct Size { int64_t m, n, k; bool u8 = false; };
  const Size sizes[] = {{100, 40, 48}, {4096, 3072, 768}, {4096, 768, 3072}, {4096, 4096, 4096}, {100, 40, 48, true},
                        {4096, 3072, 768, true}};
  const int64_t zp = 100;
  bool allOk = true;
  std::mt19937 rng(5);
  for (const Size &z : sizes) {
    codegen::MatMulSpec s = codegen::transposedMatMulSpec({z.m, z.k}, {}, {z.n, z.k}, {1, 0});
    s.int8 = true;
    s.aUnsigned = s.aOffset = z.u8;
    s.outType = codegen::ElemType::F32;
    codegen::KernelLaunch k = codegen::emitMatMul(s);
    codegen::CompileOutput bin = codegen::compileKernel(k.source, k.entry, "sm_90");
    if (!bin.ok()) {
      std::fprintf(stderr, "%s\n", bin.error.c_str());
      return 1;
    }
    std::string error;
    auto runner = tuner::EngineRunner::open(engineFor(k, bin, z.m, z.n, z.k, z.u8), error);
    if (!runner) {
      std::printf("skipped: %s\n", error.c_str());
      return 77;
    }
    tuner::HostTensor a{"a", 3, {z.m, z.k}, {}}, b{"b", 3, {z.n, z.k}, {}}, sc{"scale", 1, {z.n}, {}};
    std::uniform_int_distribution<int> mag(1, 127), sign(0, 1);
    auto fill = [&](tuner::HostTensor &t, int64_t n) {
      t.data.resize(size_t(n));
      for (auto &v : t.data) v = uint8_t(int8_t((sign(rng) ? 1 : -1) * mag(rng)));
    };
    fill(a, z.m * z.k);
    fill(b, z.n * z.k);
    if (z.u8) {
      a.dtype = 2;
      std::uniform_int_distribution<int> byte(0, 255);
      for (auto &v : a.data) v = uint8_t(byte(rng));
    }
    tuner::HostTensor off{"offset", 6, {z.n}, std::vector<uint8_t>(size_t(z.n) * 4)};
    for (int64_t j = 0; j < z.n && z.u8; ++j) {
      int64_t sum = 0;
      for (int64_t q = 0; q < z.k; ++q) sum += int8_t(b.data[size_t(j * z.k + q)]);
      int32_t o = int32_t(zp * sum);
      std::memcpy(&off.data[size_t(j) * 4], &o, 4);
    }
    std::vector<float> scale(size_t(z.n));
    std::uniform_real_distribution<float> u(1e-5f, 2e-4f);
    for (float &x : scale) x = u(rng);
    sc.data.resize(scale.size() * 4);
    std::memcpy(sc.data.data(), scale.data(), sc.data.size());
    std::vector<tuner::HostTensor> out;
    std::vector<tuner::HostTensor> ins = {a, b, sc};
    if (z.u8) ins.push_back(off);
    if (!runner->setInputs(ins, error) || !runner->run(out, error)) {
      std::fprintf(stderr, "run failed: %s\n", error.c_str());
      return 1;
    }
    const float *c = reinterpret_cast<const float *>(out[0].data.data());
    const int8_t *A = reinterpret_cast<const int8_t *>(a.data.data()), *B = reinterpret_cast<const int8_t *>(b.data.data());
    // Every element of the small size; for large ones, 2000 sampled elements (rows and columns
    // at the tile edges included).
    double worst = 0;
    int64_t checked = 0, bad = 0;
    auto check = [&](int64_t i, int64_t j) {
      int64_t acc = 0;
      for (int64_t q = 0; q < z.k; ++q)
        acc += (z.u8 ? int64_t(uint8_t(A[i * z.k + q])) - zp : int64_t(A[i * z.k + q])) * int64_t(B[j * z.k + q]);
      double want = double(float(acc) * scale[size_t(j)]), got = c[i * z.n + j];
      double rel = std::fabs(got - want) / std::max(1e-30, std::fabs(want));
      if (!(rel <= 1e-6) && std::fabs(got - want) > 1e-12) ++bad;
      worst = std::max(worst, std::isnan(got) ? INFINITY : rel);
      ++checked;
    };
    if (z.m * z.n <= 100000) {
      for (int64_t i = 0; i < z.m; ++i)
        for (int64_t j = 0; j < z.n; ++j) check(i, j);
    } else {
      std::uniform_int_distribution<int64_t> ri(0, z.m - 1), rj(0, z.n - 1);
      for (int t = 0; t < 2000; ++t) check(ri(rng), rj(rng));
      check(z.m - 1, z.n - 1), check(0, z.n - 1), check(z.m - 1, 0), check(127, 127), check(128, 128);
    }
    tuner::Timing timing;
    if (!runner->time(10, iterations, timing, error)) {
      std::fprintf(stderr, "timing failed: %s\n", error.c_str());
      return 1;
    }
    double tops = 2.0 * double(z.m) * double(z.n) * double(z.k) / (timing.median() * 1e-3) / 1e12;
    std::printf("%s %5lldx%5lldx%5lld  %s  %lld checked, %lld bad, worst rel %.2e   median %.4f ms (min %.4f p90 %.4f, %d runs)  %.0f TOPS\n",
                z.u8 ? "u8s8" : "int8", (long long)z.m, (long long)z.n, (long long)z.k, bad ? "MISMATCH" : "ok", (long long)checked, (long long)bad,
                worst, timing.median(), timing.min(), timing.p90(), iterations, tops);
    allOk = allOk && bad == 0;
  }
  return allOk ? 0 : 1;
}

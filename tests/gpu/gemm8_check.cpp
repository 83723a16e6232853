// The 8-bit tensor-core product kernel (MatMulSpec::int8) on a GPU, against a CPU reference,
// and timed: for each size, random A [M, K] and weights B [N, K], per-column fp32 scales,
// C = (A · Bᵀ) · scale computed by the kernel and on the CPU. Output poisoned (NaN) first.
//   int8: values in ±[1, 127] (never zero), exact int64 sums: relative error ≤ 1e-6 per element;
//   u8s8: uint8 A (0..255) with zero point 100, likewise exact;
//   fp8:  e4m3 values of every finite magnitude (never zero) and sign; the tensor cores sum in
//         (reduced-precision) fp32, so the error is measured against Σ|a·b|·scale (exact double
//         sums) and must stay ≤ 1e-5 of it.
// Small products of one batch run with K split over a thread-block cluster (MatMulSpec::splitK):
// the sizes below check it automatic, forced and off ("split" = the cluster size launched).
// Exit 0 when every size agrees, 1 when one does not, 77 without a GPU (skipped).
//   kiln-gemm8-check [--iterations N]
#include "codegen/kernels/MatMul.h"
#include "codegen/nvrtc/Nvrtc.h"
#include "compiler/ops/Tensor.h"
#include "runtime/format/EngineFormat.h"
#include "tests/gpu/OneLaunchEngine.h"
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
                               int64_t K, int aType, int bType, bool u8) {
  std::vector<rt::IoTensor> io = {{"a", aType, {M, K}, true}, {"b", bType, {N, K}, true}, {"scale", 1, {N}, true}};
  if (u8) io.push_back({"offset", 6, {N}, true});
  io.push_back({"c", 1, {M, N}, false});
  return testing::oneLaunchEngine(k, bin, io, "gemm8");
}

}  // namespace

int main(int argc, char **argv) {
  int iterations = 50;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--iterations") == 0) iterations = std::atoi(argv[++i]);
  // u8: uint8 A with zero point 100 (mma .u8.s8, offsets 100·Σ_k B[n][k] subtracted per column).
  enum class Kind { Int8, U8S8, Fp8 };
  struct Size {
    int64_t m, n, k;
    Kind kind = Kind::Int8;
    int split = 0;  // MatMulSpec::splitK: 0 automatic (small grids of one batch split K), 1 off
  };
  const Size sizes[] = {{100, 40, 48},
                        {4096, 3072, 768},
                        {4096, 768, 3072},
                        {4096, 4096, 4096},
                        {100, 40, 48, Kind::U8S8},
                        {4096, 3072, 768, Kind::U8S8},
                        {100, 40, 48, Kind::Fp8},
                        {4096, 3072, 768, Kind::Fp8},
                        {4096, 768, 3072, Kind::Fp8},
                        {4096, 4096, 4096, Kind::Fp8},
                        // K split over thread-block clusters (small grids: automatic, or forced
                        // with k-tiles that do not divide evenly), and the same sizes unsplit.
                        {64, 256, 1024, Kind::U8S8},
                        {64, 256, 1024, Kind::U8S8, 1},
                        {64, 1024, 256, Kind::U8S8},
                        {100, 40, 4800, Kind::Int8, 8},
                        {100, 40, 4800, Kind::Int8, 1},
                        {200, 136, 1008, Kind::Int8, 2},
                        {33, 72, 2000, Kind::Fp8, 4},
                        {256, 512, 4096, Kind::Fp8}};
  const int64_t zp = 100;
  bool allOk = true;
  std::mt19937 rng(5);
  for (const Size &z : sizes) {
    const bool u8 = z.kind == Kind::U8S8, fp8 = z.kind == Kind::Fp8;
    const int aType = u8 ? 2 : fp8 ? 17 : 3, bType = fp8 ? 17 : 3;  // ONNX dtypes
    codegen::MatMulSpec s = codegen::transposedMatMulSpec({z.m, z.k}, {}, {z.n, z.k}, {1, 0});
    s.int8 = true;
    s.fp8 = fp8;
    s.aUnsigned = u8;
    s.aZeroPoint = u8 ? zp : 0;
    s.outType = codegen::ElemType::F32;
    s.splitK = z.split;
    codegen::KernelLaunch k = codegen::emitMatMul(s);
    codegen::CompileOutput bin = codegen::compileKernel(k.source, k.entry, "sm_90");
    if (!bin.ok()) {
      std::fprintf(stderr, "%s\n", bin.error.c_str());
      return 1;
    }
    std::string error;
    auto runner = tuner::EngineRunner::open(engineFor(k, bin, z.m, z.n, z.k, aType, bType, u8), error);
    if (!runner) {
      std::printf("skipped: %s\n", error.c_str());
      return 77;
    }
    tuner::HostTensor a{"a", aType, {z.m, z.k}, {}}, b{"b", bType, {z.n, z.k}, {}}, sc{"scale", 1, {z.n}, {}};
    std::uniform_int_distribution<int> mag(1, 127), sign(0, 1), f8mag(1, 0x7e);
    auto fill = [&](tuner::HostTensor &t, int64_t n) {
      t.data.resize(size_t(n));
      for (auto &v : t.data)
        v = fp8 ? uint8_t((sign(rng) ? 0x80 : 0) | f8mag(rng)) : uint8_t(int8_t((sign(rng) ? 1 : -1) * mag(rng)));
    };
    fill(a, z.m * z.k);
    fill(b, z.n * z.k);
    if (u8) {
      std::uniform_int_distribution<int> byte(0, 255);
      for (auto &v : a.data) v = uint8_t(byte(rng));
    }
    tuner::HostTensor off{"offset", 6, {z.n}, std::vector<uint8_t>(size_t(z.n) * 4)};
    for (int64_t j = 0; j < z.n && u8; ++j) {
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
    if (u8) ins.push_back(off);
    if (!runner->setInputs(ins, error) || !runner->run(out, error)) {
      std::fprintf(stderr, "run failed: %s\n", error.c_str());
      return 1;
    }
    const float *c = reinterpret_cast<const float *>(out[0].data.data());
    const uint8_t *A = a.data.data(), *B = b.data.data();
    auto value = [&](uint8_t v, bool isA) -> double {
      if (fp8) return kiln::ops::e4m3FromBits(v);
      return isA && u8 ? double(v) - double(zp) : double(int8_t(v));
    };
    // Every element of the small size; for large ones, 2000 sampled elements (rows and columns
    // at the tile edges included).
    double worst = 0;
    int64_t checked = 0, bad = 0;
    auto check = [&](int64_t i, int64_t j) {
      double acc = 0, absAcc = 0;  // exact: int8 sums, and fp8 products of 8 significant bits
      for (int64_t q = 0; q < z.k; ++q) {
        double p = value(A[i * z.k + q], true) * value(B[j * z.k + q], false);
        acc += p, absAcc += std::fabs(p);
      }
      double sj = scale[size_t(j)], got = c[i * z.n + j];
      double want = fp8 ? acc * sj : double(float(acc) * float(sj));
      double err = fp8 ? std::fabs(got - want) / std::max(1e-30, absAcc * sj)
                       : std::fabs(got - want) / std::max(1e-30, std::fabs(want));
      bool ok = err <= (fp8 ? 1e-5 : 1e-6) || (!fp8 && std::fabs(got - want) <= 1e-12);
      if (!ok) ++bad;
      worst = std::max(worst, std::isnan(got) ? INFINITY : err);
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
    std::printf("%s %5lldx%5lldx%5lld  split %u  %s  %lld checked, %lld bad, worst %s %.2e   median %.4f ms (min %.4f "
                "p90 %.4f, "
                "%d runs)  %.0f TOPS\n",
                u8    ? "u8s8"
                : fp8 ? "fp8 "
                      : "int8",
                (long long)z.m, (long long)z.n, (long long)z.k, k.grid[2], bad ? "MISMATCH" : "ok", (long long)checked,
                (long long)bad, fp8 ? "err/sum|ab|" : "rel", worst, timing.median(), timing.min(), timing.p90(),
                iterations, tops);
    allOk = allOk && bad == 0;
  }
  return allOk ? 0 : 1;
}

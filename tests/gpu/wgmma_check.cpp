// The wgmma product kernel (codegen/kernels/Wgmma.h, sm_90a: TMA, warp-specialised, at tiles
// 128x128 and 128x256) on a GPU, against a double-precision reference, and timed beside kiln's
// mma.sync product kernel (MatMulSpec) at the same sizes: random A [M, K] and weights B [N, K] of
// fp16 (bf16, fp8 e4m3 for the rows marked so) values in ±[1/64, 1] (never zero), C = A · Bᵀ in
// the operand type (fp8: fp16), poisoned (NaN) first. For each size, 2000 sampled elements (the
// tile edges included) must agree within 1e-3 of the value (bf16: 4e-3; the output's rounding)
// plus 1e-4 of Σ|a·b| (fp32 sums in another order; fp8: 4e-4). One fp16 size also runs an
// epilogue (0.5 · acc + bias[col]). cuBLASLt's time for each fp16/bf16 product is taken in the
// same harness (a one-launch engine of the runtime's cuBLASLt call).
// Exit 0 when every size agrees, 1 when one does not, 77 without a GPU (skipped).
//   kiln-wgmma-check [--iterations N] [--quick] [--only MxNxK,...]
#include "codegen/kernels/MatMul.h"
#include "codegen/kernels/Wgmma.h"
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

struct Result {
  bool ok = false;
  double ms = 0, worst = 0;
  int64_t bad = 0;
  std::string error;
};

// cuBLASLt's time for the same fp16/bf16 product in the same harness: an engine of one library
// GEMM launch (the runtime's cuBLASLt call, its heuristic's algorithm), C = A · Bᵀ as the
// column-major Cᵀ = op(B) · Aᵀ (engine-format.md).
double cublasLtMs(int64_t M, int64_t N, int64_t K, int dtype, int iterations) {
  rt::EngineDesc d;
  d.kilnVersion = "wgmma-check";
  d.io = {{"a", dtype, {M, K}, true}, {"b", dtype, {N, K}, true}, {"c", dtype, {M, N}, false}};
  rt::Launch l;
  l.kind = rt::Launch::Kind::Gemm;
  l.node = "cublaslt";
  rt::GemmCall &g = l.gemm;
  g.abType = g.cdType = dtype;
  g.m = N, g.n = M, g.k = K, g.transA = true, g.lda = K, g.ldb = K, g.ldc = N;
  g.a = {rt::BufferRef::Space::Io, 0, 1}, g.b = {rt::BufferRef::Space::Io, 0, 0},
  g.d = {rt::BufferRef::Space::Io, 0, 2};
  d.launches.push_back(l);
  std::string error;
  auto runner = tuner::EngineRunner::open(rt::writeEngine(d), error);
  tuner::Timing timing;
  std::vector<tuner::HostTensor> outputs;
  if (!runner || !runner->run(outputs, error) || !runner->time(10, iterations, timing, error)) {
    std::printf("  cuBLASLt error: %s\n", error.c_str());
    return 0;
  }
  return timing.median();
}

// `values` as the bytes of an operand of type `t`.
std::vector<uint8_t> bytesOf(ops::DType t, const std::vector<float> &values) {
  ops::Tensor x(t, {int64_t(values.size())});
  for (size_t i = 0; i < values.size(); ++i) x.f[i] = values[i];
  return ops::tensorToBytes(x);
}

// Runs kernel `k` (parameters a, b, [bias,] c) once against the reference and times it: A and B
// of type `in`, C (and the bias) of type `out`. With a bias the kernel's epilogue computes
// 0.5 · acc + bias[col].
Result runKernel(const codegen::KernelLaunch &k, const std::string &arch, int64_t M, int64_t N, int64_t K,
                 ops::DType in, ops::DType out, const std::vector<float> &a, const std::vector<float> &b,
                 int iterations, bool skipMissing, const std::vector<float> &bias = {}) {
  Result r;
  codegen::CompileOutput bin = codegen::compileKernel(k.source, k.entry, arch);
  if (!bin.ok()) {
    r.error = "compile: " + bin.error;
    return r;
  }
  const int inType = int(in), outType = int(out);  // (ONNX codes)
  std::vector<rt::IoTensor> io = {
      {"a", inType, {M, K}, true}, {"b", inType, {N, K}, true}, {"c", outType, {M, N}, false}};
  if (!bias.empty()) io.insert(io.begin() + 2, {"bias", outType, {N}, true});
  auto runner = tuner::EngineRunner::open(testing::oneLaunchEngine(k, bin, io, "wgmma"), r.error);
  if (!runner) {
    if (skipMissing) std::printf("skipped: %s\n", r.error.c_str()), std::exit(77);
    return r;
  }
  std::vector<tuner::HostTensor> outputs,
      inputs = {{"a", inType, {M, K}, bytesOf(in, a)}, {"b", inType, {N, K}, bytesOf(in, b)}};
  if (!bias.empty()) inputs.push_back({"bias", outType, {N}, bytesOf(out, bias)});
  if (!runner->setInputs(inputs, r.error) || !runner->run(outputs, r.error)) return r;
  ops::Tensor c = ops::tensorFromBytes(out, {M, N}, outputs[0].data.data(), outputs[0].data.size());
  std::mt19937 rng(11);
  std::uniform_int_distribution<int64_t> ri(0, M - 1), rj(0, N - 1);
  auto check = [&](int64_t i, int64_t j) {
    double want = 0, mag = 0;
    for (int64_t q = 0; q < K; ++q) {
      double p = double(a[size_t(i * K + q)]) * double(b[size_t(j * K + q)]);
      want += p, mag += std::fabs(p);
    }
    if (!bias.empty()) want = 0.5 * want + bias[size_t(j)], mag = 0.5 * mag + std::fabs(bias[size_t(j)]);
    double got = c.f[size_t(i * N + j)], err = std::fabs(got - want);
    // The result's own rounding (bf16 keeps 8 significant bits: 2^-9 relative) and fp32 sums.
    // (Hopper's fp8 wgmma adds its products keeping fewer bits than fp32 — about 14, DeepSeek-V3
    // §3.3.2 — so fp8 sums get 4e-4 of Σ|a·b|.)
    double tol =
        (out == ops::DType::BF16 ? 4e-3 : 1e-3) * std::fabs(want) + (in == ops::DType::F8E4M3 ? 4e-4 : 1e-4) * mag;
    if (!(err <= tol)) ++r.bad;
    r.worst = std::max(r.worst, std::isnan(got) ? INFINITY : err / std::max(tol, 1e-30));
  };
  for (int t = 0; t < 2000; ++t) check(ri(rng), rj(rng));
  for (int64_t i : {int64_t(0), M - 1, std::min<int64_t>(127, M - 1), std::min<int64_t>(128, M - 1)})
    for (int64_t j : {int64_t(0), N - 1, std::min<int64_t>(127, N - 1), std::min<int64_t>(128, N - 1)}) check(i, j);
  tuner::Timing timing;
  if (!runner->time(10, iterations, timing, r.error)) return r;
  r.ms = timing.median();
  r.ok = r.bad == 0;
  return r;
}

}  // namespace

int main(int argc, char **argv) {
  int iterations = 50;
  bool quick = false;
  std::string only;  // sizes "MxNxK,..." (fp16) to run, of the list below
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--iterations") == 0 && i + 1 < argc) iterations = std::atoi(argv[++i]);
    if (std::strcmp(argv[i], "--quick") == 0) quick = true;
    if (std::strcmp(argv[i], "--only") == 0 && i + 1 < argc) only = argv[++i];
  }
  struct Size {
    int64_t m, n, k;
    ops::DType type = ops::DType::F16;
  };
  // Edges in every dim; BERT-base 32x128 (QKV, attention output, FFN up and down); ViT-B/16 b32
  // (6304 rows); a large square; fp8 at BERT's FFN sizes and the square.
  constexpr ops::DType bf16 = ops::DType::BF16, fp8 = ops::DType::F8E4M3;
  std::vector<Size> sizes = {{200, 136, 72},         {1000, 1000, 1000, bf16}, {4096, 2304, 768},
                             {4096, 768, 768},       {4096, 3072, 768},        {4096, 768, 3072},
                             {6304, 2304, 768},      {8192, 8192, 8192},       {4096, 3072, 768, fp8},
                             {4096, 768, 3072, fp8}, {8192, 8192, 8192, fp8}};
  if (quick) sizes = {sizes[0], sizes[1], {200, 136, 80, fp8}};
  if (!only.empty()) {
    std::vector<Size> chosen;
    for (const Size &z : sizes)
      if (z.type == ops::DType::F16 && ("," + only + ",")
                                               .find("," + std::to_string(z.m) + "x" + std::to_string(z.n) + "x" +
                                                     std::to_string(z.k) + ",") != std::string::npos)
        chosen.push_back(z);
    sizes = chosen;
  }
  std::mt19937 rng(5);
  bool allOk = true;
  for (const Size &z : sizes) {
    std::uniform_real_distribution<float> mag(1.f / 64, 1.f);
    std::bernoulli_distribution sign(0.5);
    // Values of type `t` (the reference sums those the kernels see).
    auto fill = [&](int64_t n, ops::DType t) {
      std::vector<float> v(static_cast<size_t>(n));
      for (float &x : v) x = float(ops::roundTo(t, (sign(rng) ? 1.f : -1.f) * mag(rng)));
      return v;
    };
    const ops::DType out = z.type == fp8 ? ops::DType::F16 : z.type;
    auto elemType = [](ops::DType t) {
      return t == ops::DType::BF16 ? codegen::ElemType::BF16
             : t == fp8            ? codegen::ElemType::F8E4M3
                                   : codegen::ElemType::F16;
    };
    const codegen::ElemType inType = elemType(z.type), outType = elemType(out);
    std::vector<float> a = fill(z.m * z.k, z.type), b = fill(z.n * z.k, z.type);
    double flop = 2.0 * double(z.m) * double(z.n) * double(z.k);
    auto tf = [&](const Result &r) { return r.ms > 0 ? flop / (r.ms * 1e-3) / 1e12 : 0.0; };
    std::printf("%s %5lldx%5lldx%5lld\n", ops::dtypeName(z.type), (long long)z.m, (long long)z.n, (long long)z.k);
    Result old;
    if (z.type != fp8) {  // (kiln's fp8 products are the 8-bit kernel's, with scales: not this check's)
      codegen::MatMulSpec ms = codegen::transposedMatMulSpec({z.m, z.k}, {}, {z.n, z.k}, {1, 0});
      ms.type = ms.outType = inType;
      old = runKernel(codegen::emitMatMul(ms), "sm_90", z.m, z.n, z.k, z.type, out, a, b, iterations, false);
      std::printf("  mma.sync: %s %.4f ms %.0f TFLOP/s\n", old.ok ? "ok" : "MISMATCH", old.ms, tf(old));
      if (!old.error.empty()) std::printf("  mma.sync error: %s\n", old.error.substr(0, 500).c_str());
    }
    double lt = z.type == fp8 ? 0 : cublasLtMs(z.m, z.n, z.k, int(z.type), iterations);
    if (lt > 0) std::printf("  cuBLASLt: %.4f ms %.0f TFLOP/s\n", lt, flop / (lt * 1e-3) / 1e12);
    // Tiles 128x128 (6 stages) and 128x256 (4), cooperative; 128x128 ping-pong.
    struct Variant {
      int blockN, stages;
      bool pingpong;
    };
    for (Variant v : {Variant{128, 6, false}, Variant{256, 4, false}, Variant{128, 6, true}}) {
      codegen::WgmmaGemmSpec ws;
      ws.M = z.m, ws.N = z.n, ws.K = z.k, ws.blockN = v.blockN, ws.stages = v.stages, ws.pingpong = v.pingpong;
      ws.type = inType, ws.outType = outType;
      Result w = runKernel(codegen::emitWgmmaGemm(ws), "sm_90a", z.m, z.n, z.k, z.type, out, a, b, iterations, true);
      std::printf("  wgmma tile 128x%-3d %d stages %-11s: %s %lld bad, worst %.2f of tol, %.4f ms %.0f TFLOP/s",
                  v.blockN, v.stages, v.pingpong ? "ping-pong" : "cooperative", w.ok ? "ok" : "MISMATCH",
                  (long long)w.bad, w.worst, w.ms, tf(w));
      if (old.ms > 0 && w.ms > 0) std::printf(", %.2fx mma.sync", old.ms / w.ms);
      if (lt > 0 && w.ms > 0) std::printf(", %.2fx cuBLASLt", lt / w.ms);
      std::printf("\n");
      if (!w.error.empty()) std::printf("  wgmma error: %s\n", w.error.substr(0, 2000).c_str());
      allOk = allOk && w.ok;
    }
    if (z.m == 4096 && z.n == 768 && z.k == 768) {  // an epilogue: 0.5 · acc + bias[col] (128x128)
      std::vector<float> bias = fill(z.n, out);
      codegen::WgmmaGemmSpec ws;
      ws.M = z.m, ws.N = z.n, ws.K = z.k, ws.blockN = 128, ws.stages = 6, ws.type = inType;
      ws.epilogue.inputShapes = {{z.n}};
      ws.epilogue.inputTypes = {outType};
      ws.epilogue.body = {"const float t0 = acc * 0.5f + x0;"};
      ws.epilogue.result = "t0";
      Result w =
          runKernel(codegen::emitWgmmaGemm(ws), "sm_90a", z.m, z.n, z.k, z.type, out, a, b, iterations, true, bias);
      std::printf("  wgmma tile 128x128 6 stages, epilogue 0.5 acc + bias: %s %lld bad, worst %.2f of tol, %.4f ms\n",
                  w.ok ? "ok" : "MISMATCH", (long long)w.bad, w.worst, w.ms);
      if (!w.error.empty()) std::printf("  wgmma error: %s\n", w.error.substr(0, 2000).c_str());
      allOk = allOk && w.ok;
    }
    std::fflush(stdout);
  }
  return allOk ? 0 : 1;
}

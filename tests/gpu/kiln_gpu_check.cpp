// GPU end-to-end check: compile a model with kiln, run the engine through the C API on random
// inputs (never zeros; outputs poisoned with NaN first), and compare every output with the CPU
// reference evaluator (double precision). Then time the engine: CUDA events after warm-up,
// median of N runs, with min/p90.
//
//   kiln-gpu-check MODEL [--shapes ..] [--route ROUTE] [--calib FILE [--keep-float RE]]
//                  [--no-reference] [--reference-dir DIR] [--iterations N] [--tolerance T] [--min-cos C]
//
// The engine is built with the route (default: the default route, fp32); the reference is the
// model's own fp32 semantics (import + cleanup only), or with --calib the graph the route's
// compile pipeline makes with that calibration (int8 products as the kernels compute them). Per output: ‖kiln − ref‖/‖ref‖ ≤ T
// (default 1e-4 for fp32 routes, 1e-2 for fp16/bf16 and gemm.tf32=on), cosine ≥ C (default 0.999 for those
// routes), no NaN where the reference has none, and for [batch, classes] outputs the top-1
// agreement is printed.
//
// --reference-dir DIR takes the inputs and the expected outputs from DIR/input_K.bin and
// DIR/output_K.bin (raw little-endian tensors in I/O order; bench/ort_reference.py writes them
// with onnxruntime) instead of random inputs and the CPU evaluator.
//
// Exit: 0 agree, 1 disagree or failed, 77 no GPU (ctest reports a skip).
#include "codegen/lowering/ModelBuild.h"
#include "compiler/eval/Evaluator.h"
#include "compiler/importer/Importer.h"
#include "compiler/ir/TensorConversion.h"
#include "passes/Passes.h"
#include "tuner/Accuracy.h"

#include "kiln/kiln.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassManager.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace {

std::vector<uint8_t> readAll(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

#define CUDA_OK(x)                                                                                                     \
  do {                                                                                                                 \
    cudaError_t e_ = (x);                                                                                              \
    if (e_ != cudaSuccess) {                                                                                           \
      std::fprintf(stderr, "CUDA error %s at %s:%d\n", cudaGetErrorString(e_), __FILE__, __LINE__);                    \
      std::exit(1);                                                                                                    \
    }                                                                                                                  \
  } while (0)

int fail(const char *what, kiln_status s) {
  std::fprintf(stderr, "%s failed: %s\n", what, kiln_status_message(s));
  return 1;
}

}  // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: kiln-gpu-check MODEL [--shapes S] [--no-reference] [--iterations N] [--tolerance T]\n");
    return 2;
  }
  std::string model = argv[1], shapes, refDir, routeText;
  kiln::codegen::BuildOptions bo;
  bool reference = true;
  int iterations = 50;
  double tolerance = -1, minCos = -1;
  bool profile = false;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--shapes" && i + 1 < argc)
      shapes = argv[++i];
    else if (a == "--no-reference")
      reference = false;
    else if (a == "--reference-dir" && i + 1 < argc)
      refDir = argv[++i];
    else if (a == "--iterations" && i + 1 < argc)
      iterations = std::atoi(argv[++i]);
    else if (a == "--tolerance" && i + 1 < argc)
      tolerance = std::atof(argv[++i]);
    else if (a == "--min-cos" && i + 1 < argc)
      minCos = std::atof(argv[++i]);
    else if (a == "--route" && i + 1 < argc)
      routeText = argv[++i];
    else if (a == "--calib" && i + 1 < argc)
      bo.pipeline.calib = argv[++i];
    else if (a == "--keep-float" && i + 1 < argc)
      bo.pipeline.keepFloat = argv[++i];
    else if (a == "--profile")
      profile = true;
    else {
      std::fprintf(stderr, "unknown argument %s\n", a.c_str());
      return 2;
    }
  }
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("skipped: no GPU\n");
    return 77;
  }

  cudaDeviceProp prop;
  CUDA_OK(cudaGetDeviceProperties(&prop, 0));
  bo.target = kiln::target::GpuTarget::fromDeviceProperties(prop.major, prop.minor, prop.multiProcessorCount,
                                                            int(prop.sharedMemPerBlockOptin), prop.name);
  std::string routeError;
  if (!kiln::knobs::Route::parse(routeText, &bo.route, &routeError))
    return std::fprintf(stderr, "--route: %s\n", routeError.c_str()), 2;
  // Half-precision storage (int8: fp16 elsewhere) or TF32 products: the looser tolerances.
  const bool half = kiln::tuner::reducedPrecision(bo.route.canonical());
  // int8: an activation on a rounding boundary may quantize one step apart on the GPU.
  if (tolerance < 0) tolerance = half ? 1e-2 : !bo.pipeline.calib.empty() ? 2e-3 : 1e-4;
  if (minCos < 0) minCos = half ? 0.999 : 0.0;
  // The reference: the model's own semantics (import + cleanup, fp32).
  mlir::MLIRContext ctx;
  kiln::ImportOptions io;
  if (auto err = kiln::parseShapeOverrides(shapes, io); !err.empty())
    return std::fprintf(stderr, "%s\n", err.c_str()), 2;
  kiln::ImportResult imp = kiln::importModelFile(model, ctx, io);
  if (!imp.error.empty()) return std::fprintf(stderr, "import: %s\n", imp.error.c_str()), 1;
  mlir::PassManager pm(&ctx);
  if (bo.pipeline.calib.empty())
    kiln::buildImportCleanupPipeline(pm);
  else
    kiln::buildCompilePipeline(pm, bo.route.canonical(), bo.target, bo.pipeline);
  if (mlir::failed(pm.run(*imp.module))) return std::fprintf(stderr, "cleanup failed\n"), 1;
  auto f = (*imp.module).lookupSymbol<mlir::func::FuncOp>("main");

  mlir::MLIRContext buildCtx;
  kiln::codegen::ModelBuild mb = kiln::codegen::buildModel(model, io, bo, buildCtx);
  for (auto &r : mb.remarks) std::printf("  note: %s\n", r.c_str());
  if (!mb.ok()) return std::fprintf(stderr, "build: %s\n", mb.error.c_str()), 1;
  const kiln::codegen::BuildResult &built = mb.engine;
  double buildSecs = mb.seconds;

  kiln_engine *engine = nullptr;
  if (kiln_status s = kiln_engine_load_from_memory(built.engine.data(), built.engine.size(), &engine))
    return fail("load", s);
  kiln_context *kctx = nullptr;
  if (kiln_status s = kiln_context_create(engine, &kctx)) return fail("context_create", s);

  // Random inputs (integers small and non-negative: they are token ids or masks in the zoo).
  std::mt19937 rng(1234);
  std::vector<kiln::ops::Tensor> inputs;
  std::vector<void *> buffers;
  int n = kiln_engine_num_io(engine);
  for (int i = 0; i < n; ++i) {
    int rank = kiln_engine_io_rank(engine, i);
    const int64_t *dims = kiln_engine_io_shape(engine, i);
    kiln::ops::Tensor t(static_cast<kiln::ops::DType>(kiln_engine_io_dtype(engine, i)),
                        kiln::ops::Shape(dims, dims + rank));
    size_t bytes = t.size() * kiln::ops::byteSize(t.dtype);
    void *d = nullptr;
    CUDA_OK(cudaMalloc(&d, std::max<size_t>(bytes, 1)));
    buffers.push_back(d);
    if (kiln_engine_io_is_input(engine, i)) {
      std::vector<uint8_t> raw;
      if (!refDir.empty()) {
        raw = readAll(refDir + "/input_" + std::to_string(inputs.size()) + ".bin");
        if (raw.size() != bytes)
          return std::fprintf(stderr, "%s: reference input has %zu bytes, expected %zu\n",
                              kiln_engine_io_name(engine, i), raw.size(), bytes),
                 1;
        t = kiln::ops::tensorFromBytes(t.dtype, t.shape, raw.data(), raw.size());
      } else {
        // Floats of both signs away from 0; masks 1 with the last quarter of each row 0; other
        // integers (token ids) in [0, 97), inside every vocabulary of the test models.
        std::uniform_real_distribution<double> mag(0.25, 1.0);
        bool isMask = std::string(kiln_engine_io_name(engine, i)).find("mask") != std::string::npos;
        int64_t row = t.shape.empty() ? 1 : t.shape.back();
        for (int64_t k = 0; k < t.size(); ++k)
          t.set(k, t.isFloating() ? (rng() % 2 ? 1 : -1) * mag(rng)
                   : isMask       ? double(k % row < row - row / 4)
                                  : double(rng() % 97));
        raw = kiln::ops::tensorToBytes(t);
      }
      CUDA_OK(cudaMemcpy(d, raw.data(), raw.size(), cudaMemcpyHostToDevice));
      inputs.push_back(t);
    } else {
      CUDA_OK(cudaMemset(d, 0xff, bytes));  // NaN for floats: an unwritten output cannot pass
    }
    if (kiln_status s = kiln_context_set_tensor_address(kctx, kiln_engine_io_name(engine, i), d))
      return fail("set_tensor_address", s);
  }
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreate(&stream));
  if (kiln_status s = kiln_context_enqueue(kctx, stream)) return fail("enqueue", s);
  CUDA_OK(cudaStreamSynchronize(stream));

  int rc = 0;
  std::printf("model %s: built in %.1f s (%zu launches, %zu kernels)\n", model.c_str(), buildSecs, built.stats.launches,
              built.stats.uniqueKernels);
  if (reference) {
    std::vector<kiln::ops::Tensor> want;
    auto r0 = std::chrono::steady_clock::now();
    if (!refDir.empty()) {
      for (int i = 0; i < n; ++i) {
        if (kiln_engine_io_is_input(engine, i)) continue;
        const int64_t *dims = kiln_engine_io_shape(engine, i);
        auto dt = static_cast<kiln::ops::DType>(kiln_engine_io_dtype(engine, i));
        kiln::ops::Shape shape(dims, dims + kiln_engine_io_rank(engine, i));
        std::vector<uint8_t> raw = readAll(refDir + "/output_" + std::to_string(want.size()) + ".bin");
        if (raw.size() != kiln::ops::numElements(shape) * static_cast<size_t>(kiln::ops::byteSize(dt)))
          return std::fprintf(stderr, "%s: reference output has the wrong size\n", kiln_engine_io_name(engine, i)), 1;
        want.push_back(kiln::ops::tensorFromBytes(dt, shape, raw.data(), raw.size()));
      }
    } else if (auto err = kiln::evaluateFunction(f, inputs, want)) {
      return std::fprintf(stderr, "reference: %s\n", err->c_str()), 1;
    }
    double refSecs = std::chrono::duration<double>(std::chrono::steady_clock::now() - r0).count();
    int out = 0;
    for (int i = 0; i < n; ++i) {
      if (kiln_engine_io_is_input(engine, i)) continue;
      const kiln::ops::Tensor &w = want[out++];
      std::vector<uint8_t> raw(w.size() * kiln::ops::byteSize(w.dtype));
      CUDA_OK(cudaMemcpy(raw.data(), buffers[i], raw.size(), cudaMemcpyDeviceToHost));
      kiln::ops::Tensor got = kiln::ops::tensorFromBytes(w.dtype, w.shape, raw.data(), raw.size());
      double num = 0, den = 0, maxAbs = 0, dot = 0, gg = 0;
      bool nan = false;
      for (int64_t k = 0; k < w.size(); ++k) {
        double g = got.get(k), e = w.get(k);
        nan |= std::isnan(g) != std::isnan(e);
        if (std::isnan(e)) continue;
        num += (g - e) * (g - e), den += e * e, maxAbs = std::max(maxAbs, std::fabs(g - e));
        dot += g * e, gg += g * g;
      }
      double rel = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
      double cosine = den > 0 && gg > 0 ? dot / std::sqrt(den * gg) : (num == 0 ? 1.0 : 0.0);
      // Top-1 agreement for [batch, classes] outputs.
      std::string top1;
      if (w.shape.size() == 2 && w.shape[1] > 1 && w.isFloating()) {
        int64_t agree = 0, rows = w.shape[0], cols = w.shape[1];
        for (int64_t r = 0; r < rows; ++r) {
          int64_t bg = 0, be = 0;
          for (int64_t c = 1; c < cols; ++c) {
            if (got.get(r * cols + c) > got.get(r * cols + bg)) bg = c;
            if (w.get(r * cols + c) > w.get(r * cols + be)) be = c;
          }
          agree += bg == be;
        }
        top1 = "  top1 " + std::to_string(agree) + "/" + std::to_string(rows);
      }
      bool ok = !nan && rel <= tolerance && cosine >= minCos;
      std::printf("  output %-20s rel_l2 %.3e  max_abs %.3e  cos %.6f%s  %s (reference: %s, %.1f s)\n",
                  kiln_engine_io_name(engine, i), rel, maxAbs, cosine, top1.c_str(), ok ? "ok" : "MISMATCH",
                  refDir.empty() ? "CPU evaluator" : "files", refSecs);
      if (!ok) rc = 1;
    }
  }

  // Timing: warm-up, then CUDA events around each run.
  for (int i = 0; i < 5; ++i)
    if (kiln_status s = kiln_context_enqueue(kctx, stream)) return fail("enqueue", s);
  std::vector<float> ms;
  cudaEvent_t a, b;
  CUDA_OK(cudaEventCreate(&a));
  CUDA_OK(cudaEventCreate(&b));
  for (int i = 0; i < iterations; ++i) {
    CUDA_OK(cudaEventRecord(a, stream));
    kiln_context_enqueue(kctx, stream);
    CUDA_OK(cudaEventRecord(b, stream));
    CUDA_OK(cudaEventSynchronize(b));
    float t = 0;
    CUDA_OK(cudaEventElapsedTime(&t, a, b));
    ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  if (!ms.empty())
    std::printf("  latency median %.3f ms  min %.3f  p90 %.3f  (%d runs, route '%s')\n", ms[ms.size() / 2], ms.front(),
                ms[ms.size() * 9 / 10], iterations, bo.route.canonical().c_str());
  if (profile) {
    // Per-launch device times (median of 5 profiled runs), by kernel kind and the slowest launches.
    int32_t count = 0;
    if (kiln_status s = kiln_context_profile(kctx, stream, nullptr, 0, &count)) return fail("profile", s);
    std::vector<kiln_launch_profile> runs[5];
    for (auto &r : runs) {
      r.resize(size_t(count));
      if (kiln_status s = kiln_context_profile(kctx, stream, r.data(), count, &count)) return fail("profile", s);
    }
    std::vector<std::pair<float, int>> byTime;
    std::map<std::string, std::pair<float, int>> byKind;
    float total = 0;
    for (int i = 0; i < count; ++i) {
      std::vector<float> t;
      for (auto &r : runs) t.push_back(r[size_t(i)].ms);
      std::sort(t.begin(), t.end());
      float m = t[2];
      total += m;
      byTime.push_back({m, i});
      std::string k = runs[0][size_t(i)].kernel;
      k = k.substr(0, k.rfind('_'));
      byKind[k].first += m, byKind[k].second += 1;
    }
    std::printf("  profile: %d launches, %.3f ms launched one by one\n", count, total);
    for (auto &[k, v] : byKind)
      std::printf("    %-16s %4d launches %8.3f ms %5.1f%%\n", k.c_str(), v.second, v.first, 100 * v.first / total);
    std::sort(byTime.rbegin(), byTime.rend());
    for (size_t j = 0; j < byTime.size() && j < 25; ++j) {
      const kiln_launch_profile &p = runs[0][size_t(byTime[j].second)];
      std::printf("    %8.3f ms  %-26s %s\n", byTime[j].first, p.kernel, p.node);
    }
  }
  kiln_context_destroy(kctx);
  kiln_engine_destroy(engine);
  for (void *d : buffers) cudaFree(d);
  return rc;
}

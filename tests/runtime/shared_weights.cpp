// kiln-shared-weights-test: the contexts of one engine on one CUDA context share one copy of its
// weights (and its loaded kernels), through the public C API.
//
//   kiln-shared-weights-test [--weights-mib W] [--threads T] [--rounds R]
//
// The engine is the hand-made y = a * x + b + k of TestEngine.h (PTX, CUDA graphs on) over 1M
// floats (4 MiB arena), with W MiB of weights (default 256): b sits at their end, and every byte
// before it is 0xff (a NaN), so a context that read another context's or freed weights would
// compute NaNs. Device memory is measured with cuMemGetInfo (device-wide: run it on an otherwise
// idle GPU). The steps, each printing the device memory in use above the baseline, in MiB:
//   1. 1, 2, 3, 4 contexts on the primary context: the first costs the weights, each further one
//      less than W/8; all four compute the exact result, equal to the first context's.
//   2. the first context (the one that uploaded the weights) destroyed: the others still compute
//      the right result, and the weights stay on the device.
//   3. a context on a CUDA context of its own (cuCtxCreate): it uploads a copy of its own.
//   4. every context destroyed: the memory goes back to the baseline (within W/8).
//   5. T threads each create, run (checking the result) and destroy a context R times, with no
//      other context alive, so the shared copy is made and freed again and again while others use
//      it; the peak must stay below 1.5 W (one copy), and the memory return to the baseline.
//   6. the engine handle destroyed before its two contexts: both still compute the right result;
//      the memory goes back to the baseline after the second is destroyed.
// Exit 0 when every check held, 1 otherwise, 77 (skipped) without a driver or a GPU.
#include <kiln/kiln.h>

#include "runtime/driver/CudaDriver.h"
#include "TestEngine.h"

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

using namespace kiln::rt;

namespace {

constexpr int kN = 1 << 20;           // elements of x and y (4 MiB each, and the arena)
constexpr int kEnqueuesPerCheck = 3;  // direct, then captured, then replayed (CUDA graphs)
const CudaDriver* cu = nullptr;
CUcontext primary = nullptr;
std::atomic<int> failures{0};
std::mutex printMutex;

void fail(const std::string& what) {
  std::lock_guard<std::mutex> lock(printMutex);
  std::printf("FAIL: %s\n", what.c_str());
  std::fflush(stdout);
  ++failures;
}

bool check(CUresult r, const char* call) {
  if (r == CUDA_SUCCESS) return true;
  fail(std::string(call) + ": " + cu->describe(r));
  return false;
}

double mib(double bytes) { return bytes / (1024.0 * 1024.0); }

std::string oneDecimal(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", v);
  return text;
}

// Device memory in use, device-wide.
size_t usedBytes() {
  size_t freeBytes = 0, total = 0;
  check(cu->cuMemGetInfo(&freeBytes, &total), "cuMemGetInfo");
  return total - freeBytes;
}

// Expected y[i], as the kernel computes it (fma, then the add, both rounded to nearest).
float expected(int i) { return std::fma(test::kAxpbA, test::axpbX(i), test::axpbB(i)) + float(test::kAxpbK); }

EngineDesc makeEngine(uint64_t weightsBytes, int sm) {
  EngineDesc d = test::makeAxpbEngine(kN);
  if (sm < 90) {  // (the PTX uses nothing newer; a Hopper or newer GPU JITs the sm_90 PTX)
    std::string ptx = d.modules[0].ptx;
    ptx.replace(ptx.find(".target sm_90"), 13, ".target sm_" + std::to_string(sm));
    d.modules[0].ptx = ptx, d.sm = sm, d.arch = "sm_" + std::to_string(sm);
  }
  d.cudaGraph = true;
  const uint64_t bBytes = d.weights.size(), bOffset = weightsBytes - bBytes;
  std::vector<uint8_t> weights(size_t(weightsBytes), 0xff);
  std::memcpy(weights.data() + bOffset, d.weights.data(), bBytes);
  d.weights = std::move(weights);
  d.launches[0].args[1].buffer.offset = bOffset;
  return d;
}

// One context with its stream and output buffer, in the CUDA context current on the thread.
struct Runner {
  kiln_context* context = nullptr;
  CUstream stream = nullptr;
  CUdeviceptr y = 0;
  std::vector<float> out;

  bool create(kiln_engine* engine, const std::string& what) {
    kiln_status s = kiln_context_create(engine, &context);
    if (s != KILN_OK) {
      fail(what + ": kiln_context_create: " + kiln_status_message(s));
      return false;
    }
    return check(cu->cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate") &&
           check(cu->cuMemAlloc(&y, size_t(kN) * 4), "cuMemAlloc");
  }
  // Poisons y, enqueues kEnqueuesPerCheck times, and checks the result against expected().
  bool run(CUdeviceptr x, const std::string& what) {
    if (!check(cu->cuMemsetD8Async(y, 0xff, size_t(kN) * 4, stream), "cuMemsetD8Async")) return false;
    kiln_status s = kiln_context_set_tensor_address(context, "x", reinterpret_cast<void*>(x));
    if (s == KILN_OK) s = kiln_context_set_tensor_address(context, "y", reinterpret_cast<void*>(y));
    for (int i = 0; s == KILN_OK && i < kEnqueuesPerCheck; ++i) s = kiln_context_enqueue(context, stream);
    if (s != KILN_OK) {
      fail(what + ": " + kiln_status_message(s));
      return false;
    }
    out.assign(size_t(kN), 0.f);
    if (!check(cu->cuStreamSynchronize(stream), "cuStreamSynchronize") ||
        !check(cu->cuMemcpyDtoH(out.data(), y, size_t(kN) * 4), "cuMemcpyDtoH"))
      return false;
    for (int i = 0; i < kN; ++i)
      if (out[size_t(i)] != expected(i)) {
        fail(what + ": y[" + std::to_string(i) + "] = " + std::to_string(out[size_t(i)]) + ", expected " +
             std::to_string(expected(i)));
        return false;
      }
    return true;
  }
  void destroy() {
    kiln_context_destroy(context);
    if (y) cu->cuMemFree(y);
    if (stream) cu->cuStreamDestroy(stream);
    context = nullptr, y = 0, stream = nullptr;
  }
};

struct Options {
  uint64_t weightsMib = 256;
  int threads = 4, rounds = 10;
};

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (i + 1 < argc && a == "--weights-mib")
      o.weightsMib = std::strtoull(argv[++i], nullptr, 10);
    else if (i + 1 < argc && a == "--threads")
      o.threads = std::atoi(argv[++i]);
    else if (i + 1 < argc && a == "--rounds")
      o.rounds = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr, "usage: %s [--weights-mib W] [--threads T] [--rounds R]\n", argv[0]);
      return 2;
    }
  }
  if (o.weightsMib < 16 || o.threads < 1 || o.rounds < 1) {
    std::fprintf(stderr, "--weights-mib must be at least 16, --threads and --rounds at least 1\n");
    return 2;
  }
  std::string why;
  int devices = 0;
  if (!(cu = cudaDriver(why)) || cu->cuDeviceGetCount(&devices) != CUDA_SUCCESS || devices == 0) {
    std::printf("skipped: no GPU (%s)\n", why.empty() ? "no device" : why.c_str());
    return 77;
  }
  if (!cu->cuMemGetInfo || !cu->cuMemcpyDtoH) {
    std::printf("FAIL: the driver lacks cuMemGetInfo_v2 or cuMemcpyDtoH_v2\n");
    return 1;
  }
  CUdevice device = 0;
  int major = 0, minor = 0;
  char name[256] = {0};
  if (!check(cu->cuDeviceGet(&device, 0), "cuDeviceGet") ||
      !check(cu->cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device), "attribute") ||
      !check(cu->cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device), "attribute") ||
      !check(cu->cuDevicePrimaryCtxRetain(&primary, device), "cuDevicePrimaryCtxRetain") ||
      !check(cu->cuCtxSetCurrent(primary), "cuCtxSetCurrent"))
    return 1;
  cu->cuDeviceGetName(name, sizeof name - 1, device);
  const uint64_t W = o.weightsMib << 20;
  const double limitExtra = double(W) / 8;  // what one more context may cost at most
  std::printf("device 0: %s (sm_%d%d); weights %.1f MiB, arena %.1f MiB per context\n", name, major, minor, mib(W),
              mib(kN * 4.0));

  std::vector<uint8_t> file = writeEngine(makeEngine(W, std::min(major * 10 + minor, 90)));
  kiln_engine* engine = nullptr;
  if (kiln_status s = kiln_engine_load_from_memory(file.data(), file.size(), &engine); s != KILN_OK) {
    std::printf("FAIL: kiln_engine_load_from_memory: %s\n", kiln_status_message(s));
    return 1;
  }

  // The input, shared by every context of the primary context.
  std::vector<float> hostX(static_cast<size_t>(kN));
  for (int i = 0; i < kN; ++i) hostX[size_t(i)] = test::axpbX(i);
  CUdeviceptr x = 0;
  if (!check(cu->cuMemAlloc(&x, size_t(kN) * 4), "cuMemAlloc") ||
      !check(cu->cuMemcpyHtoD(x, hostX.data(), size_t(kN) * 4), "cuMemcpyHtoD"))
    return 1;

  // 1. One, two, three, four contexts. (Each runner's y and stream count in the baseline: they
  // are made before the memory is measured.)
  std::vector<Runner> r(4);
  for (Runner& k : r)
    if (!check(cu->cuStreamCreate(&k.stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate") ||
        !check(cu->cuMemAlloc(&k.y, size_t(kN) * 4), "cuMemAlloc"))
      return 1;
  const size_t base = usedBytes();
  std::vector<double> used;  // MiB above the baseline with 1..4 contexts
  for (size_t k = 0; k < r.size(); ++k) {
    kiln_status s = kiln_context_create(engine, &r[k].context);
    if (s != KILN_OK) {
      std::printf("FAIL: kiln_context_create (context %zu): %s\n", k + 1, kiln_status_message(s));
      return 1;
    }
    used.push_back(mib(double(usedBytes()) - double(base)));
    std::printf("%zu context%s: %8.1f MiB in use above the baseline", k + 1, k ? "s" : " ", used.back());
    if (k) std::printf(" (+%.1f MiB)", used[k] - used[k - 1]);
    std::printf("\n");
  }
  std::printf("per extra context: %.1f MiB on average (the weights: %.1f MiB)\n", (used.back() - used[0]) / 3, mib(W));
  if (used[0] < mib(W) * 0.95) fail("the first context holds less device memory than the weights");
  for (size_t k = 1; k < used.size(); ++k)
    if (used[k] - used[k - 1] > mib(limitExtra))
      fail("context " + std::to_string(k + 1) + " added " + oneDecimal(used[k] - used[k - 1]) + " MiB, more than " +
           oneDecimal(mib(limitExtra)) + " (weights not shared?)");
  for (size_t k = 0; k < r.size(); ++k) r[k].run(x, "context " + std::to_string(k + 1));
  for (size_t k = 1; k < r.size(); ++k)
    if (r[k].out != r[0].out) fail("context " + std::to_string(k + 1) + "'s output differs from context 1's");

  // 2. The first context, which uploaded the weights, destroyed.
  kiln_context_destroy(r[0].context);
  r[0].context = nullptr;
  const double afterFirst = mib(double(usedBytes()) - double(base));
  std::printf("first context destroyed, 3 left: %8.1f MiB in use above the baseline\n", afterFirst);
  if (afterFirst < mib(W) * 0.95) fail("the weights were freed while three contexts still use them");
  for (size_t k = 1; k < r.size(); ++k)
    r[k].run(x, "context " + std::to_string(k + 1) + " after context 1 was destroyed");

  // 3. A context on a CUDA context of its own gets a copy of its own.
  using CtxCreate = CUresult (*)(CUcontext*, unsigned, CUdevice);
  using CtxDestroy = CUresult (*)(CUcontext);
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  auto ctxCreate = lib ? reinterpret_cast<CtxCreate>(dlsym(lib, "cuCtxCreate_v2")) : nullptr;
  auto ctxDestroy = lib ? reinterpret_cast<CtxDestroy>(dlsym(lib, "cuCtxDestroy_v2")) : nullptr;
  CUcontext own = nullptr;
  if (!ctxCreate || !ctxDestroy) {
    std::printf("(not checked: a context on its own CUDA context; libcuda lacks cuCtxCreate_v2)\n");
  } else if (check(ctxCreate(&own, 0, device), "cuCtxCreate")) {  // (made current on this thread)
    Runner other;
    CUdeviceptr x2 = 0;
    const size_t before = usedBytes();
    if (other.create(engine, "context on its own CUDA context") &&
        check(cu->cuMemAlloc(&x2, size_t(kN) * 4), "cuMemAlloc") &&
        check(cu->cuMemcpyHtoD(x2, hostX.data(), size_t(kN) * 4), "cuMemcpyHtoD")) {
      // (its x and y, 8 MiB, counted in)
      const double added = mib(double(usedBytes()) - double(before));
      std::printf("a context on its own CUDA context: +%.1f MiB (its own copy of the weights)\n", added);
      if (added < mib(W) * 0.95) fail("a context on another CUDA context did not get its own copy of the weights");
      other.run(x2, "context on its own CUDA context");
      if (other.out != r[1].out) fail("the context on its own CUDA context computes another result");
    }
    other.destroy();
    if (x2) cu->cuMemFree(x2);
    check(ctxDestroy(own), "cuCtxDestroy");
    check(cu->cuCtxSetCurrent(primary), "cuCtxSetCurrent");
  }

  // 4. Every context destroyed: the weights go with the last one.
  for (size_t k = 1; k < r.size(); ++k) {
    kiln_context_destroy(r[k].context);
    r[k].context = nullptr;
  }
  double left = mib(double(usedBytes()) - double(base));
  std::printf("every context destroyed: %8.1f MiB in use above the baseline\n", left);
  if (left > mib(limitExtra)) fail("device memory not freed after the last context was destroyed");
  for (Runner& k : r) k.destroy();

  // 5. Threads creating, running and destroying contexts, none alive in between.
  const size_t threadBase = usedBytes();
  std::atomic<size_t> peak{0};
  std::atomic<int> runs{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < o.threads; ++t)
    threads.emplace_back([&, t] {
      if (!check(cu->cuCtxSetCurrent(primary), "cuCtxSetCurrent")) return;
      for (int round = 0; round < o.rounds; ++round) {
        Runner k;
        std::string what = "thread " + std::to_string(t) + " round " + std::to_string(round);
        if (k.create(engine, what)) {
          size_t u = usedBytes(), p = peak.load();
          while (u > p && !peak.compare_exchange_weak(p, u)) continue;
          if (k.run(x, what)) ++runs;
        }
        k.destroy();
      }
    });
  for (std::thread& t : threads) t.join();
  const double peakMib = mib(double(peak.load()) - double(threadBase));
  left = mib(double(usedBytes()) - double(threadBase));
  std::printf("%d threads x %d rounds: %d runs correct; peak %.1f MiB above the baseline, %.1f MiB left after\n",
              o.threads, o.rounds, runs.load(), peakMib, left);
  if (runs.load() != o.threads * o.rounds) fail("not every threaded run computed the right result");
  if (peakMib > 1.5 * mib(W)) fail("more than one copy of the weights while threads shared one engine");
  if (left > mib(limitExtra)) fail("device memory not freed after the threads' contexts were destroyed");

  // 6. The engine handle destroyed before its contexts.
  Runner a, b;
  const size_t engineBase = usedBytes();
  if (a.create(engine, "context A") && b.create(engine, "context B")) {
    kiln_engine_destroy(engine);
    engine = nullptr;
    a.run(x, "context A after kiln_engine_destroy");
    b.run(x, "context B after kiln_engine_destroy");
    a.destroy();
    b.run(x, "context B after kiln_engine_destroy and context A's destroy");
  }
  a.destroy();
  b.destroy();
  kiln_engine_destroy(engine);
  left = mib(double(usedBytes()) - double(engineBase));
  std::printf("engine destroyed before its contexts, then both contexts: %.1f MiB left above the baseline\n", left);
  if (left > mib(limitExtra)) fail("device memory not freed after an engine's last context was destroyed");

  cu->cuMemFree(x);
  cu->cuCtxSetCurrent(nullptr);
  cu->cuDevicePrimaryCtxRelease(device);
  std::printf("%s: %d failure%s\n", failures ? "FAILED" : "PASSED", failures.load(), failures == 1 ? "" : "s");
  return failures ? 1 : 0;
}

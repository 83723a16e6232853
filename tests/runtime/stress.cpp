// kiln-stress: the runtime under load, through the public C API only (as an application would).
//
//   kiln-stress ENGINE [--threads N] [--iterations K | --seconds S] [--check-every M]
//                      [--rebind] [--stagger-ms T] [--runs R] [--tolerance X]
//   kiln-stress ENGINE --create-destroy N
//
// Concurrency and soak: R runs; in each, N threads each create their own context (thread i after
// i*T ms, so contexts are created while others already run) and their own blocking stream
// (cudaStreamCreate, what most applications use), bind their own buffers, and enqueue K times (or
// for S seconds). Every M enqueues a thread poisons its outputs, enqueues, waits and compares the
// outputs with its own first result (bit for bit: one context always runs the same kernels) and
// with the reference computed before the threads start (rel L2 <= X; contexts may time different
// cuBLASLt algorithms). --rebind alternates two sets of output buffers, so graph engines capture
// again at every enqueue. Device memory (cudaMemGetInfo) and host RSS are printed before and after.
// --create-destroy: one thread creates, runs once and destroys a context N times; prints memory
// growth after the first 10.
// The last line is a summary; exit 0 only when nothing failed. Exit 77 (skipped) without a GPU.
#include <kiln/kiln.h>

#include <cuda_runtime.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

struct Options {
  const char* engine = nullptr;
  int threads = 8, iterations = 200, checkEvery = 10, runs = 1, staggerMs = 5, createDestroy = 0;
  double seconds = 0, tolerance = 1e-3;
  bool rebind = false;
};

size_t dtypeBytes(kiln_dtype t) {
  switch (t) {
    case KILN_DTYPE_FLOAT64:
    case KILN_DTYPE_INT64:
    case KILN_DTYPE_UINT64: return 8;
    case KILN_DTYPE_FLOAT32:
    case KILN_DTYPE_INT32:
    case KILN_DTYPE_UINT32: return 4;
    case KILN_DTYPE_FLOAT16:
    case KILN_DTYPE_BFLOAT16:
    case KILN_DTYPE_INT16:
    case KILN_DTYPE_UINT16: return 2;
    default: return 1;
  }
}

uint16_t toHalf(float f) {  // round to nearest even, finite inputs in [-1, 1]
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  int exp = int((x >> 23) & 0xff) - 127 + 15;
  uint32_t mant = x & 0x7fffffu;
  if (exp <= 0) return uint16_t(sign);
  uint32_t h = sign | (uint32_t(exp) << 10) | (mant >> 13);
  uint32_t rest = mant & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;
  return uint16_t(h);
}

double asDouble(const unsigned char* p, kiln_dtype t) {
  switch (t) {
    case KILN_DTYPE_FLOAT32: {
      float f;
      std::memcpy(&f, p, 4);
      return f;
    }
    case KILN_DTYPE_FLOAT64: {
      double d;
      std::memcpy(&d, p, 8);
      return d;
    }
    case KILN_DTYPE_FLOAT16: {
      uint16_t h;
      std::memcpy(&h, p, 2);
      int e = (h >> 10) & 0x1f, m = h & 0x3ff;
      double v = e == 0 ? std::ldexp(m, -24) : e == 31 ? NAN : std::ldexp(1024 + m, e - 25);
      return (h & 0x8000) ? -v : v;
    }
    case KILN_DTYPE_BFLOAT16: {
      uint32_t x = uint32_t(p[0] | (p[1] << 8)) << 16;
      float f;
      std::memcpy(&f, &x, 4);
      return f;
    }
    case KILN_DTYPE_INT64: {
      int64_t v;
      std::memcpy(&v, p, 8);
      return double(v);
    }
    case KILN_DTYPE_INT32: {
      int32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
    default: return p[0];
  }
}

struct Tensor {
  int32_t io;
  std::string name;
  kiln_dtype dtype;
  size_t bytes;
  bool input;
};

struct Shared {
  kiln_engine* engine = nullptr;
  std::vector<Tensor> tensors;
  std::vector<std::vector<unsigned char>> inputData, reference;  // per tensor (empty where n/a)
};

std::vector<unsigned char> makeInput(const Tensor& t, uint64_t seed) {
  std::vector<unsigned char> out(t.bytes);
  const size_t n = t.bytes / dtypeBytes(t.dtype);
  uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
  for (size_t i = 0; i < n; ++i) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    const float u = float(s >> 40) / float(1 << 24) * 2.f - 1.f;  // [-1, 1), never all zeros
    unsigned char* p = out.data() + i * dtypeBytes(t.dtype);
    switch (t.dtype) {
      case KILN_DTYPE_FLOAT32: std::memcpy(p, &u, 4); break;
      case KILN_DTYPE_FLOAT16: {
        uint16_t h = toHalf(u);
        std::memcpy(p, &h, 2);
        break;
      }
      case KILN_DTYPE_INT64: {
        int64_t v = int64_t(s % 100);
        std::memcpy(p, &v, 8);
        break;
      }  // token ids, indices
      case KILN_DTYPE_INT32: {
        int32_t v = int32_t(s % 100);
        std::memcpy(p, &v, 4);
        break;
      }
      case KILN_DTYPE_BOOL: *p = 1; break;  // masks: everything visible
      default: std::memset(p, 1, dtypeBytes(t.dtype)); break;
    }
  }
  return out;
}

double relL2(const std::vector<unsigned char>& a, const std::vector<unsigned char>& ref, kiln_dtype t) {
  const size_t w = dtypeBytes(t), n = ref.size() / w;
  double num = 0, den = 0;
  for (size_t i = 0; i < n; ++i) {
    double x = asDouble(a.data() + i * w, t), y = asDouble(ref.data() + i * w, t);
    if (std::isnan(x) != std::isnan(y)) return INFINITY;
    if (std::isnan(x)) continue;
    num += (x - y) * (x - y), den += y * y;
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

long rssKiB() {
  long pages = 0, resident = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  return resident * 4;
}

size_t deviceUsedMiB() {
  size_t free = 0, total = 0;
  cudaMemGetInfo(&free, &total);
  return (total - free) >> 20;
}

// One thread's context, stream and buffers.
struct Worker {
  kiln_context* ctx = nullptr;
  cudaStream_t stream = nullptr;
  std::vector<void*> buffers[2];  // per tensor; [1] holds the alternate outputs of --rebind
  std::vector<std::vector<unsigned char>> first;
  std::string error;
  long enqueues = 0, checks = 0, mismatches = 0;
  double worstRel = 0;

  bool fail(const std::string& what) {
    if (error.empty()) error = what;
    return false;
  }
  bool kiln(kiln_status s, const char* what) {
    return s == KILN_OK || fail(std::string(what) + ": " + kiln_status_message(s));
  }
  bool cuda(cudaError_t e, const char* what) {
    return e == cudaSuccess || fail(std::string(what) + ": " + cudaGetErrorString(e));
  }

  bool setUp(const Shared& sh) {
    if (!kiln(kiln_context_create(sh.engine, &ctx), "kiln_context_create")) return false;
    if (!cuda(cudaStreamCreate(&stream), "cudaStreamCreate")) return false;
    for (int set = 0; set < 2; ++set) {
      buffers[set].assign(sh.tensors.size(), nullptr);
      for (size_t i = 0; i < sh.tensors.size(); ++i) {
        const Tensor& t = sh.tensors[i];
        if (set == 1 && t.input) {
          buffers[1][i] = buffers[0][i];
          continue;
        }
        if (!cuda(cudaMalloc(&buffers[set][i], t.bytes ? t.bytes : 1), "cudaMalloc")) return false;
        if (t.input &&
            !cuda(cudaMemcpy(buffers[set][i], sh.inputData[i].data(), t.bytes, cudaMemcpyHostToDevice), "cudaMemcpy"))
          return false;
      }
    }
    return bind(sh, 0);
  }
  bool bind(const Shared& sh, int set) {
    for (size_t i = 0; i < sh.tensors.size(); ++i)
      if (!kiln(kiln_context_set_tensor_address(ctx, sh.tensors[i].name.c_str(), buffers[set][i]),
                "set_tensor_address"))
        return false;
    return true;
  }
  // Poisons the outputs of `set`, enqueues, waits and reads them back.
  bool runChecked(const Shared& sh, int set, std::vector<std::vector<unsigned char>>& out) {
    out.assign(sh.tensors.size(), {});
    for (size_t i = 0; i < sh.tensors.size(); ++i)
      if (!sh.tensors[i].input &&
          !cuda(cudaMemsetAsync(buffers[set][i], 0xff, sh.tensors[i].bytes, stream), "cudaMemsetAsync"))
        return false;
    if (!kiln(kiln_context_enqueue(ctx, stream), "kiln_context_enqueue")) return false;
    ++enqueues;
    if (!cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize (execution)")) return false;
    for (size_t i = 0; i < sh.tensors.size(); ++i) {
      if (sh.tensors[i].input) continue;
      out[i].resize(sh.tensors[i].bytes);
      if (!cuda(cudaMemcpy(out[i].data(), buffers[set][i], out[i].size(), cudaMemcpyDeviceToHost), "cudaMemcpy"))
        return false;
    }
    return true;
  }
  void compare(const Shared& sh, const std::vector<std::vector<unsigned char>>& out, double tolerance) {
    ++checks;
    bool bad = false;
    for (size_t i = 0; i < sh.tensors.size(); ++i) {
      if (sh.tensors[i].input) continue;
      double r = relL2(out[i], sh.reference[i], sh.tensors[i].dtype);
      worstRel = std::max(worstRel, r);
      bad = bad || !(r <= tolerance) || (!first.empty() && out[i] != first[i]);
    }
    if (bad) ++mismatches;
  }
  void tearDown() {
    if (stream) cudaStreamSynchronize(stream);
    kiln_context_destroy(ctx);
    ctx = nullptr;
    for (auto& set : buffers)
      for (size_t i = 0; i < set.size(); ++i)
        if (set[i] && (&set == &buffers[0] || set[i] != buffers[0][i])) cudaFree(set[i]);
    buffers[0].clear(), buffers[1].clear();
    if (stream) cudaStreamDestroy(stream);
    stream = nullptr;
  }
};

void work(const Shared& sh, const Options& o, Worker& w, int index) {
  std::this_thread::sleep_for(std::chrono::milliseconds(o.staggerMs * index));
  if (!w.setUp(sh)) return;
  if (!w.runChecked(sh, 0, w.first)) return;
  w.compare(sh, w.first, o.tolerance);
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::vector<unsigned char>> out;
  for (long k = 1;; ++k) {
    if (o.seconds > 0 ? std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() >= o.seconds
                      : k >= o.iterations)
      break;
    const int set = o.rebind ? int(k & 1) : 0;
    if (o.rebind && !w.bind(sh, set)) return;
    if (k % o.checkEvery == 0) {
      if (!w.runChecked(sh, set, out)) return;
      w.compare(sh, out, o.tolerance);
    } else {
      if (!w.kiln(kiln_context_enqueue(w.ctx, w.stream), "kiln_context_enqueue")) return;
      ++w.enqueues;
      // Keep the queue bounded (and surface asynchronous errors) without waiting every time.
      if (k % 16 == 0 && !w.cuda(cudaStreamSynchronize(w.stream), "cudaStreamSynchronize (execution)")) return;
    }
  }
  w.cuda(cudaStreamSynchronize(w.stream), "cudaStreamSynchronize (execution)");
}

int usage() {
  std::fprintf(stderr,
               "usage: kiln-stress ENGINE [--threads N] [--iterations K | --seconds S] [--check-every M] [--rebind]\n"
               "                   [--stagger-ms T] [--runs R] [--tolerance X] | ENGINE --create-destroy N\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    const char* v = nullptr;
    if (a == "--rebind")
      o.rebind = true;
    else if (a[0] != '-' && !o.engine)
      o.engine = argv[i];
    else if (!(v = next()))
      return usage();
    else if (a == "--threads")
      o.threads = std::atoi(v);
    else if (a == "--iterations")
      o.iterations = std::atoi(v);
    else if (a == "--seconds")
      o.seconds = std::atof(v);
    else if (a == "--check-every")
      o.checkEvery = std::atoi(v);
    else if (a == "--runs")
      o.runs = std::atoi(v);
    else if (a == "--stagger-ms")
      o.staggerMs = std::atoi(v);
    else if (a == "--tolerance")
      o.tolerance = std::atof(v);
    else if (a == "--create-destroy")
      o.createDestroy = std::atoi(v);
    else
      return usage();
  }
  if (!o.engine || o.threads < 1 || o.iterations < 1 || o.checkEvery < 1 || o.runs < 1) return usage();
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("skipped: no GPU\n");
    return 77;
  }
  Shared sh;
  if (kiln_status s = kiln_engine_load(o.engine, &sh.engine); s != KILN_OK) {
    std::fprintf(stderr, "kiln-stress: %s\n", kiln_status_message(s));
    return 1;
  }
  const int32_t n = kiln_engine_num_io(sh.engine);
  for (int32_t i = 0; i < n; ++i) {
    Tensor t{i, kiln_engine_io_name(sh.engine, i), kiln_engine_io_dtype(sh.engine, i), 0,
             kiln_engine_io_is_input(sh.engine, i) == 1};
    size_t count = 1;
    const int64_t* shape = kiln_engine_io_shape(sh.engine, i);
    for (int32_t d = 0; d < kiln_engine_io_rank(sh.engine, i); ++d) count *= size_t(shape[d]);
    t.bytes = count * dtypeBytes(t.dtype);
    sh.inputData.push_back(t.input ? makeInput(t, uint64_t(i) + 1) : std::vector<unsigned char>());
    sh.tensors.push_back(t);
  }
  cudaFree(nullptr);  // the primary context, before the first reading of memory
  const size_t memStart = deviceUsedMiB();
  const long rssStart = rssKiB();

  if (o.createDestroy > 0) {
    size_t memAfterWarmup = 0;
    long rssAfterWarmup = 0;
    std::string error;
    int done = 0;
    for (; done < o.createDestroy && error.empty(); ++done) {
      if (done == 10) memAfterWarmup = deviceUsedMiB(), rssAfterWarmup = rssKiB();
      Worker w;
      std::vector<std::vector<unsigned char>> out;
      if (w.setUp(sh)) w.runChecked(sh, 0, out);
      w.tearDown();
      error = w.error;
    }
    const size_t memEnd = deviceUsedMiB();
    const long rssEnd = rssKiB();
    if (!error.empty()) std::fprintf(stderr, "create-destroy %d: %s\n", done, error.c_str());
    std::printf(
        "create-destroy: cycles=%d device_used_mib start=%zu after10=%zu end=%zu rss_kib start=%ld after10=%ld end=%ld "
        "errors=%d\n",
        done, memStart, memAfterWarmup, memEnd, rssStart, rssAfterWarmup, rssEnd, error.empty() ? 0 : 1);
    kiln_engine_destroy(sh.engine);
    const bool grew = done > 10 && (memEnd > memAfterWarmup + 2 || rssEnd > rssAfterWarmup + 16 * 1024);
    return error.empty() && !grew ? 0 : 1;
  }

  // The reference: one context, alone.
  {
    Worker ref;
    if (!ref.setUp(sh) || !ref.runChecked(sh, 0, sh.reference)) {
      std::fprintf(stderr, "kiln-stress: reference run: %s\n", ref.error.c_str());
      return 1;
    }
    ref.tearDown();
  }
  long enqueues = 0, checks = 0, mismatches = 0, failedRuns = 0, failedThreads = 0;
  double worst = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (int run = 0; run < o.runs; ++run) {
    std::vector<Worker> workers(size_t(o.threads));
    std::vector<std::thread> threads;
    for (int t = 0; t < o.threads; ++t)
      threads.emplace_back(work, std::cref(sh), std::cref(o), std::ref(workers[size_t(t)]), t);
    for (auto& t : threads) t.join();
    bool runFailed = false;
    for (int t = 0; t < o.threads; ++t) {
      Worker& w = workers[size_t(t)];
      if (!w.error.empty()) {
        ++failedThreads, runFailed = true;
        std::fprintf(stderr, "run %d thread %d: %s\n", run, t, w.error.c_str());
      }
      if (w.mismatches) runFailed = true;
      enqueues += w.enqueues, checks += w.checks, mismatches += w.mismatches, worst = std::max(worst, w.worstRel);
      w.tearDown();
    }
    failedRuns += runFailed;
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const size_t memEnd = deviceUsedMiB();
  const long rssEnd = rssKiB();
  kiln_engine_destroy(sh.engine);
  std::printf("stress: runs=%d threads=%d enqueues=%ld checks=%ld failed_runs=%ld failed_threads=%ld mismatches=%ld "
              "worst_rel_l2=%.3g seconds=%.1f device_used_mib start=%zu end=%zu rss_kib start=%ld end=%ld%s\n",
              o.runs, o.threads, enqueues, checks, failedRuns, failedThreads, mismatches, worst, seconds, memStart,
              memEnd, rssStart, rssEnd, o.rebind ? " (rebind)" : "");
  return failedRuns == 0 ? 0 : 1;
}

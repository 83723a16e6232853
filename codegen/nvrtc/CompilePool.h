// Parallel NVRTC compilation of a model's kernel launches.
//
// Launches are de-duplicated first: launches whose (source, entry) are identical share one
// compile (a model with 50 identical ReLU launches compiles one kernel). The unique kernels are
// looked up in the CompileCache; the misses are compiled by `jobs` workers, each storing its
// result in the cache. Results come back in a deterministic order that does not depend on
// scheduling: kernels sorted by the index of the first launch that uses them.
//
// Workers are threads or forked processes. NVRTC 13.0 serializes compilation inside one process:
// measured on the 16-core H200 host, 48 small kernels (mma.h included) took 4.29 s with 1 thread
// and 3.17 s with 16 threads, but 1.02 s with 4 worker processes and 0.71 s with 16 (200 kernels:
// 1.56 s with 16 processes, ≈11x one thread). So Auto forks `jobs` worker
// processes when there are at least two kernels to compile (misses). A worker that crashes
// inside NVRTC fails only the kernel it was compiling. Forking happens with nvrtcForkMutex held
// exclusively, so no thread of this process is inside NVRTC at that moment; workers exit with
// _exit and run no atexit handlers. The custom `compiler` (tests) runs in the worker process in
// Processes mode, so Auto uses threads when one is set.
//
// Thread safety: compile() may be called concurrently, on one pool or several, and several pools
// (in one process or many) may share a cache directory. The progress callback is called with a
// lock held, one call at a time, from the worker threads (or the caller's thread with jobs == 1).
#pragma once

#include "codegen/KernelSpec.h"
#include "codegen/nvrtc/CompileCache.h"
#include "codegen/nvrtc/Nvrtc.h"

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

namespace kiln::codegen {

enum class CompileParallelism { Auto, Threads, Processes };

struct CompilePoolOptions {
  std::string arch = "sm_90";
  CompileOptions compile;
  unsigned jobs = 0;  // workers; 0: one per core
  CompileParallelism parallelism = CompileParallelism::Auto;
  // Called after each unique kernel finishes (hit or compile): done in 1..total, total = unique
  // kernels. Not called when there is nothing to compile.
  std::function<void(size_t done, size_t total)> progress;
  // When set and true, workers stop starting compiles; kernels not compiled get a "cancelled" error.
  const std::atomic<bool> *cancel = nullptr;
  // Compiles one kernel on a cache miss; default compileKernel (tests inject counting compilers).
  CompileCache::Compiler compiler;
};

struct CompiledKernel {
  std::string entry;
  uint64_t sourceHash = 0;       // support::hash64(source)
  size_t firstLaunch = 0;        // index of the first launch using this kernel
  std::vector<size_t> launches;  // every launch using it, ascending
  CompileOutput output;          // output.error non-empty when this kernel failed
  bool cacheHit = false;
};

struct CompilePoolResult {
  std::vector<CompiledKernel> kernels;  // unique kernels, ordered by firstLaunch
  std::vector<size_t> kernelOfLaunch;   // launch index -> index into kernels
  // One message per failed kernel, in kernel order; each names the kernel and its first launch.
  std::vector<std::string> errors;
  size_t cacheHits = 0;    // kernels served from the cache
  size_t compiled = 0;     // kernels handed to NVRTC (successfully or not)
  unsigned jobs = 0;       // workers actually used (0 when everything hit the cache)
  bool processes = false;  // the workers were forked processes
  double seconds = 0;      // wall time of compile()
  bool ok() const { return errors.empty(); }
};

class CompilePool {
 public:
  explicit CompilePool(CompileCache &cache, CompilePoolOptions options = {});
  CompilePoolResult compile(const std::vector<KernelLaunch> &launches) const;
  const CompilePoolOptions &options() const { return options_; }

 private:
  CompileCache &cache_;
  CompilePoolOptions options_;
};

// A progress callback that redraws one line on `out` ("compiling kernels 12/40, ETA 3s") when it
// is a terminal, and prints nothing otherwise (logs and pipes stay clean). Ends the line at done ==
// total.
std::function<void(size_t, size_t)> terminalProgress(FILE *out = stderr, std::string label = "compiling kernels");
// A status line redrawn on `out` when it is a terminal ("importing m.onnx ..."; "" clears it),
// nothing otherwise: what a long build is doing before its kernels compile.
std::function<void(const std::string &)> terminalStatus(FILE *out = stderr);

}  // namespace kiln::codegen

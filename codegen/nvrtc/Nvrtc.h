// NVRTC, loaded at run time. kiln never links libnvrtc: `kiln plan` and `kiln tune --dry-run` must
// run on machines without CUDA, and the shipped binary must not need an rpath into the toolkit.
// The library is opened once per process with dlopen, searching, in order:
//   1. $KILN_NVRTC (a path; when set, it is the only candidate, so a wrong value is an error,
//      never a silent fallback to another NVRTC),
//   2. "libnvrtc.so.13" (the dynamic loader's search path: LD_LIBRARY_PATH, ld.so.cache),
//   3. /usr/local/cuda/lib64/libnvrtc.so.13.
// Every NVRTC entry point kiln uses is resolved into one table (Nvrtc.cpp); nvrtc.h is included
// there only for its types.
//
// One compile yields both outputs the engine stores: the cubin for the requested real arch
// (`--gpu-architecture=sm_90`) and PTX for the matching virtual arch (compute_90), which the
// driver JIT-compiles on newer GPUs (forward compatibility). NVRTC 13 emits the PTX of the
// virtual arch while compiling for the real one (byte-identical to a separate compute_90 compile;
// tests/codegen/nvrtc_test.cpp checks this), so one NVRTC invocation is enough. Set
// CompileOptions::separatePtxCompile to compile the PTX on its own anyway.
//
// Thread safety: all functions may be called from several threads at once (NVRTC programs are
// independent; the library is loaded under std::call_once).
#pragma once

#include <atomic>
#include <cstdint>
#include <shared_mutex>
#include <string>
#include <vector>

namespace kiln::codegen {

struct CompileOptions {
  bool lineInfo = false;      // -lineinfo (source lines for profilers; changes the cubin)
  bool fastMath = false;      // -use_fast_math
  bool ptxasVerbose = false;  // --ptxas-options=-v: register and shared-memory use in `log`
  // Compile the PTX in a second NVRTC invocation for compute_XX instead of taking the PTX NVRTC
  // produces while compiling for sm_XX (identical on NVRTC 13; costs ≈30-40% more time).
  bool separatePtxCompile = false;
  // Fail when the compiled module has no `.entry <name>` (e.g. the kernel lacks extern "C").
  bool checkEntry = true;
  // Directory passed as -I so cuda_fp16.h, cuda_bf16.h and mma.h resolve. Empty: found
  // automatically (see cudaIncludeDir()); "-" : no include directory at all.
  std::string includeDir;
  std::vector<std::string> extraOptions;  // passed through verbatim (after kiln's own)
};

struct CompileOutput {
  std::vector<char> cubin;  // ELF for the real arch; empty on error
  std::string ptx;          // PTX text for the virtual arch, without the trailing NUL
  std::string log;          // NVRTC's program log (warnings; ptxas -v output)
  std::string error;        // empty on success; otherwise names the kernel, arch and NVRTC's log
  double seconds = 0;       // wall time spent in NVRTC (0 for a cache hit)
  bool ok() const { return error.empty(); }
};

// --- Library -------------------------------------------------------------------------------------

// True when NVRTC could be loaded (loads it on first call). On false, *why gets the reason: every
// path tried, dlerror() for each, and what to do about it.
bool nvrtcAvailable(std::string *why = nullptr);
// The reason NVRTC could not be loaded ("" when it was).
std::string nvrtcLoadError();
// "13.0" (major.minor from nvrtcVersion), or "" when NVRTC cannot be loaded.
std::string nvrtcVersionString();
// The version plus the size and modification time of the loaded library file, e.g.
// "13.0;size=104857600;mtime=1760564160": nvrtcVersion() reports only major.minor, and a patch
// release (13.0.48 -> 13.0.88) may generate different code. "" when NVRTC cannot be loaded.
// Part of compile-cache keys.
std::string nvrtcFingerprint();
// The file NVRTC was loaded from (as given to dlopen), or "".
std::string nvrtcLibraryPath();
// Real architectures this NVRTC can compile for, e.g. {75, 80, ..., 121}; empty if not loaded.
std::vector<int> nvrtcSupportedArchs();

// Tries to dlopen `path` as NVRTC and resolve the entry-point table, without touching the
// process-wide instance. Returns "" on success, else the error. For tests and `kiln` diagnostics.
std::string probeNvrtcLibrary(const std::string &path);

// --- Targets -------------------------------------------------------------------------------------

// Checks an architecture name: `sm_<NN>` or `sm_<NNN>` with NN in 75..121 and an optional `a`
// or `f` suffix (arch-specific / family-specific features, e.g. sm_90a, sm_100f). When NVRTC is
// loaded, the number must also be one it supports. Returns "" when valid, else a message such as
// "invalid GPU architecture 'sm90': expected sm_<major><minor> such as sm_90 (sm_75...sm_121)".
std::string validateArch(const std::string &arch);
// "sm_90" -> 90, "sm_100a" -> 100; -1 when the name is malformed.
int archNumber(const std::string &arch);
// "sm_90" -> "compute_90", "sm_90a" -> "compute_90a"; "" when malformed.
std::string virtualArchFor(const std::string &arch);

// --- Compilation ---------------------------------------------------------------------------------

// The include directory used when CompileOptions::includeDir is empty: the first of
// $KILN_CUDA_INCLUDE, $CUDA_HOME/include, $CUDA_PATH/include, <dir of libnvrtc>/../include,
// /usr/local/cuda/include that contains cuda_fp16.h; "" when none does.
std::string cudaIncludeDir();

// The exact NVRTC option list compileKernel passes for `arch` (real arch; the virtual one for a
// separate PTX compile uses the same list with --gpu-architecture=compute_XX). Part of cache keys.
std::vector<std::string> nvrtcOptions(const std::string &arch, const CompileOptions &options);

// Compiles one translation unit whose kernel entry is `name` (an extern "C" __global__ function)
// for `arch` ("sm_90"). Never throws; on failure `error` says what happened, naming the kernel:
//   "NVRTC failed to compile kernel 'add_f32' for sm_90 (NVRTC_ERROR_COMPILATION):\n<log>".
CompileOutput compileKernel(const std::string &source, const std::string &name, const std::string &arch,
                            const CompileOptions &options = {});

// Held shared by every NVRTC call kiln makes and exclusively by CompilePool while it forks
// worker processes, so no thread is inside NVRTC (holding its internal locks) at fork time.
std::shared_mutex &nvrtcForkMutex();
// Called in a forked worker right after fork(): the child's copy of nvrtcForkMutex is held by a
// thread that does not exist there, so the child's NVRTC calls must not take it.
void nvrtcEnterForkedChild();

// Number of nvrtcCompileProgram calls made by this process so far (tests use it to tell cache
// hits from compiles).
uint64_t nvrtcCompileCount();

}  // namespace kiln::codegen

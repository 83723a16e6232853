#include "codegen/nvrtc/Nvrtc.h"

#include <nvrtc.h>  // types only (nvrtcResult, nvrtcProgram); kiln never links libnvrtc

#include <dlfcn.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>

namespace kiln::codegen {
namespace {

// The one table of NVRTC entry points kiln uses.
struct NvrtcApi {
  nvrtcResult (*version)(int *, int *) = nullptr;
  nvrtcResult (*createProgram)(nvrtcProgram *, const char *, const char *, int, const char *const *,
                               const char *const *) = nullptr;
  nvrtcResult (*compileProgram)(nvrtcProgram, int, const char *const *) = nullptr;
  nvrtcResult (*getProgramLogSize)(nvrtcProgram, size_t *) = nullptr;
  nvrtcResult (*getProgramLog)(nvrtcProgram, char *) = nullptr;
  nvrtcResult (*getCUBINSize)(nvrtcProgram, size_t *) = nullptr;
  nvrtcResult (*getCUBIN)(nvrtcProgram, char *) = nullptr;
  nvrtcResult (*getPTXSize)(nvrtcProgram, size_t *) = nullptr;
  nvrtcResult (*getPTX)(nvrtcProgram, char *) = nullptr;
  nvrtcResult (*destroyProgram)(nvrtcProgram *) = nullptr;
  const char *(*getErrorString)(nvrtcResult) = nullptr;
  // Optional (present since CUDA 11.2): used to validate --arch precisely.
  nvrtcResult (*getNumSupportedArchs)(int *) = nullptr;
  nvrtcResult (*getSupportedArchs)(int *) = nullptr;

  void *handle = nullptr;
  std::string path;        // as given to dlopen
  std::string loadedFrom;  // the file the loader actually mapped (dladdr), for include lookup
  int major = 0, minor = 0;
  std::vector<int> archs;
  long long fileSize = -1, fileMtime = -1;  // of loadedFrom: tells patch releases apart
};

template <typename Fn> bool resolve(void *handle, const char *symbol, Fn &fn, std::string &missing) {
  fn = reinterpret_cast<Fn>(dlsym(handle, symbol));
  if (!fn) missing += std::string(missing.empty() ? "" : ", ") + symbol;
  return fn != nullptr;
}

// Opens `path` and fills `api`; returns "" or the reason it is not a usable NVRTC.
std::string loadFrom(const std::string &path, NvrtcApi &api) {
  dlerror();
  void *h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *e = dlerror();
    return e ? e : "dlopen failed";
  }
  std::string missing;
  resolve(h, "nvrtcVersion", api.version, missing);
  resolve(h, "nvrtcCreateProgram", api.createProgram, missing);
  resolve(h, "nvrtcCompileProgram", api.compileProgram, missing);
  resolve(h, "nvrtcGetProgramLogSize", api.getProgramLogSize, missing);
  resolve(h, "nvrtcGetProgramLog", api.getProgramLog, missing);
  resolve(h, "nvrtcGetCUBINSize", api.getCUBINSize, missing);
  resolve(h, "nvrtcGetCUBIN", api.getCUBIN, missing);
  resolve(h, "nvrtcGetPTXSize", api.getPTXSize, missing);
  resolve(h, "nvrtcGetPTX", api.getPTX, missing);
  resolve(h, "nvrtcDestroyProgram", api.destroyProgram, missing);
  resolve(h, "nvrtcGetErrorString", api.getErrorString, missing);
  if (!missing.empty()) {
    dlclose(h);
    return path + " lacks NVRTC symbols: " + missing;
  }
  std::string optional;  // absence tolerated
  resolve(h, "nvrtcGetNumSupportedArchs", api.getNumSupportedArchs, optional);
  resolve(h, "nvrtcGetSupportedArchs", api.getSupportedArchs, optional);

  if (api.version(&api.major, &api.minor) != NVRTC_SUCCESS) {
    dlclose(h);
    return path + ": nvrtcVersion failed";
  }
  if (api.major < 12) {
    dlclose(h);
    return path + " is NVRTC " + std::to_string(api.major) + "." + std::to_string(api.minor) +
           "; kiln needs NVRTC 12 or newer (CUDA 13 toolkit)";
  }
  int n = 0;
  if (api.getNumSupportedArchs && api.getSupportedArchs && api.getNumSupportedArchs(&n) == NVRTC_SUCCESS && n > 0 &&
      n < 1024) {
    api.archs.resize(n);
    if (api.getSupportedArchs(api.archs.data()) != NVRTC_SUCCESS) api.archs.clear();
    std::sort(api.archs.begin(), api.archs.end());
  }
  Dl_info info{};
  if (dladdr(reinterpret_cast<void *>(api.version), &info) && info.dli_fname) api.loadedFrom = info.dli_fname;
  struct stat st;
  if (!api.loadedFrom.empty() && stat(api.loadedFrom.c_str(), &st) == 0) {
    api.fileSize = static_cast<long long>(st.st_size);
    api.fileMtime = static_cast<long long>(st.st_mtime);
  }
  api.handle = h;
  api.path = path;
  return "";
}

struct Global {
  std::once_flag once;
  NvrtcApi api;
  std::string error;  // "" when loaded
};

Global &global() {
  static Global g;
  return g;
}

const NvrtcApi *api() {
  Global &g = global();
  std::call_once(g.once, [&g] {
    std::vector<std::string> candidates;
    const char *env = std::getenv("KILN_NVRTC");
    bool fromEnv = env && *env;
    if (fromEnv) {
      candidates.push_back(env);
    } else {
      candidates = {"libnvrtc.so.13", "/usr/local/cuda/lib64/libnvrtc.so.13"};
    }
    std::string tried;
    for (const std::string &c : candidates) {
      NvrtcApi a;
      std::string e = loadFrom(c, a);
      if (e.empty()) {
        g.api = std::move(a);
        g.error.clear();
        return;
      }
      tried += "\n  " + (fromEnv ? "$KILN_NVRTC=" + c : c) + ": " + e;
    }
    g.error = "cannot load NVRTC (the CUDA 13 runtime compiler); tried:" + tried +
              (fromEnv ? "\nFix or unset KILN_NVRTC."
                       : "\nInstall the CUDA 13 toolkit, add its lib64 to LD_LIBRARY_PATH, or set "
                         "KILN_NVRTC=/path/to/libnvrtc.so.13.");
  });
  return g.error.empty() ? &g.api : nullptr;
}

std::atomic<uint64_t> gCompileCount{0};
bool gForkedChild = false;  // set once, in a forked compile worker (single-threaded there)

bool isFile(const std::string &p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string parentDir(const std::string &p) {
  size_t s = p.find_last_of('/');
  return s == std::string::npos ? std::string(".") : p.substr(0, s == 0 ? 1 : s);
}

// "sm_90a" -> {90, "a"}; false when malformed.
bool parseArch(const std::string &arch, int &number, std::string &suffix) {
  if (arch.size() < 5 || arch.compare(0, 3, "sm_") != 0) return false;
  size_t i = 3, digits = 0;
  number = 0;
  while (i < arch.size() && arch[i] >= '0' && arch[i] <= '9' && digits < 4) {
    number = number * 10 + (arch[i] - '0');
    ++i, ++digits;
  }
  if (digits < 2 || digits > 3) return false;
  suffix = arch.substr(i);
  return suffix.empty() || suffix == "a" || suffix == "f";
}

std::string resultName(const NvrtcApi &a, nvrtcResult r) {
  const char *s = a.getErrorString(r);
  return s ? s : ("NVRTC error " + std::to_string(static_cast<int>(r)));
}

std::string trimLog(std::string s) {
  while (!s.empty() && (s.back() == '\0' || s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

std::vector<std::string> ptxEntries(const std::string &ptx) {
  std::vector<std::string> names;
  const std::string tag = ".entry ";
  for (size_t p = ptx.find(tag); p != std::string::npos; p = ptx.find(tag, p + tag.size())) {
    size_t b = p + tag.size(), e = b;
    while (e < ptx.size() && ptx[e] != '(' && ptx[e] != ' ' && ptx[e] != '\n') ++e;
    names.push_back(ptx.substr(b, e - b));
  }
  return names;
}

// One NVRTC invocation. Fills cubin/ptx/log of `out` as requested; returns "" or the error.
std::string runNvrtc(const NvrtcApi &a, const std::string &source, const std::string &name, const std::string &target,
                     const std::vector<std::string> &options, bool wantCubin, bool wantPtx, CompileOutput &out) {
  nvrtcProgram prog = nullptr;
  std::string file = name + ".cu";
  nvrtcResult r = a.createProgram(&prog, source.c_str(), file.c_str(), 0, nullptr, nullptr);
  if (r != NVRTC_SUCCESS)
    return "NVRTC could not create a program for kernel '" + name + "' (" + resultName(a, r) + ")";
  std::vector<const char *> argv;
  argv.reserve(options.size());
  for (const std::string &o : options) argv.push_back(o.c_str());
  gCompileCount.fetch_add(1, std::memory_order_relaxed);
  r = a.compileProgram(prog, static_cast<int>(argv.size()), argv.data());

  std::string log;
  size_t logSize = 0;
  if (a.getProgramLogSize(prog, &logSize) == NVRTC_SUCCESS && logSize > 1) {
    log.resize(logSize);
    if (a.getProgramLog(prog, &log[0]) != NVRTC_SUCCESS) log.clear();
    log = trimLog(std::move(log));
  }
  if (!log.empty()) out.log += (out.log.empty() ? "" : "\n") + log;

  std::string err;
  if (r != NVRTC_SUCCESS) {
    err = "NVRTC failed to compile kernel '" + name + "' for " + target + " (" + resultName(a, r) + "):\n" +
          (log.empty() ? std::string("(NVRTC gave no log)") : log);
  }
  if (err.empty() && wantCubin) {
    size_t n = 0;
    r = a.getCUBINSize(prog, &n);
    if (r == NVRTC_SUCCESS && n > 0) {
      out.cubin.resize(n);
      r = a.getCUBIN(prog, out.cubin.data());
    }
    if (r != NVRTC_SUCCESS || n < 4 ||
        std::memcmp(out.cubin.data(),
                    "\x7f"
                    "ELF",
                    4) != 0) {
      out.cubin.clear();
      err = "NVRTC produced no cubin for kernel '" + name + "' (" + target + ")" +
            (r != NVRTC_SUCCESS ? ": " + resultName(a, r) : std::string());
    }
  }
  if (err.empty() && wantPtx) {
    size_t n = 0;
    r = a.getPTXSize(prog, &n);  // counts the trailing NUL
    std::string ptx;
    if (r == NVRTC_SUCCESS && n > 1) {
      ptx.resize(n);
      r = a.getPTX(prog, &ptx[0]);
      while (!ptx.empty() && ptx.back() == '\0') ptx.pop_back();
    }
    if (r != NVRTC_SUCCESS || ptx.empty())
      err = "NVRTC produced no PTX for kernel '" + name + "' (" + target + ")" +
            (r != NVRTC_SUCCESS ? ": " + resultName(a, r) : std::string());
    else
      out.ptx = std::move(ptx);
  }
  a.destroyProgram(&prog);
  return err;
}

}  // namespace

bool nvrtcAvailable(std::string *why) {
  bool ok = api() != nullptr;
  if (!ok && why) *why = global().error;
  return ok;
}

std::string nvrtcLoadError() {
  api();
  return global().error;
}

std::string nvrtcVersionString() {
  const NvrtcApi *a = api();
  return a ? std::to_string(a->major) + "." + std::to_string(a->minor) : std::string();
}

std::string nvrtcFingerprint() {
  const NvrtcApi *a = api();
  if (!a) return "";
  return std::to_string(a->major) + "." + std::to_string(a->minor) + ";size=" + std::to_string(a->fileSize) +
         ";mtime=" + std::to_string(a->fileMtime);
}

std::string nvrtcLibraryPath() {
  const NvrtcApi *a = api();
  return a ? (a->loadedFrom.empty() ? a->path : a->loadedFrom) : std::string();
}

std::vector<int> nvrtcSupportedArchs() {
  const NvrtcApi *a = api();
  return a ? a->archs : std::vector<int>();
}

std::string probeNvrtcLibrary(const std::string &path) {
  NvrtcApi a;
  std::string e = loadFrom(path, a);
  if (e.empty() && a.handle) dlclose(a.handle);
  return e;
}

int archNumber(const std::string &arch) {
  int n;
  std::string suffix;
  return parseArch(arch, n, suffix) ? n : -1;
}

std::string virtualArchFor(const std::string &arch) {
  int n;
  std::string suffix;
  return parseArch(arch, n, suffix) ? "compute_" + std::to_string(n) + suffix : std::string();
}

std::string validateArch(const std::string &arch) {
  int n;
  std::string suffix;
  if (!parseArch(arch, n, suffix))
    return "invalid GPU architecture '" + arch +
           "': expected sm_<major><minor> such as sm_90 (sm_75...sm_121, optional 'a' or 'f' suffix)";
  if (n < 75 || n > 121) return "unsupported GPU architecture '" + arch + "': kiln targets sm_75...sm_121";
  if (const NvrtcApi *a = api()) {
    if (!a->archs.empty() && !std::binary_search(a->archs.begin(), a->archs.end(), n)) {
      std::string list;
      for (int x : a->archs) list += (list.empty() ? "sm_" : ", sm_") + std::to_string(x);
      return "GPU architecture '" + arch + "' is not supported by NVRTC " + nvrtcVersionString() +
             " (supported: " + list + ")";
    }
  }
  return "";
}

std::string cudaIncludeDir() {
  std::vector<std::string> dirs;
  if (const char *e = std::getenv("KILN_CUDA_INCLUDE"); e && *e) dirs.push_back(e);
  if (const char *e = std::getenv("CUDA_HOME"); e && *e) dirs.push_back(std::string(e) + "/include");
  if (const char *e = std::getenv("CUDA_PATH"); e && *e) dirs.push_back(std::string(e) + "/include");
  if (const NvrtcApi *a = api(); a && !a->loadedFrom.empty() && a->loadedFrom.find('/') != std::string::npos)
    dirs.push_back(parentDir(parentDir(a->loadedFrom)) + "/include");
  dirs.push_back("/usr/local/cuda/include");
  for (const std::string &d : dirs)
    if (isFile(d + "/cuda_fp16.h")) return d;
  return "";
}

std::vector<std::string> nvrtcOptions(const std::string &arch, const CompileOptions &o) {
  std::vector<std::string> v = {"--gpu-architecture=" + arch, "--std=c++17", "-default-device", "--dopt=on"};
  if (o.lineInfo) v.push_back("-lineinfo");
  if (o.fastMath) v.push_back("-use_fast_math");
  if (o.ptxasVerbose) v.push_back("--ptxas-options=-v");
  std::string inc = o.includeDir.empty() ? cudaIncludeDir() : (o.includeDir == "-" ? "" : o.includeDir);
  if (!inc.empty()) v.push_back("-I" + inc);
  v.insert(v.end(), o.extraOptions.begin(), o.extraOptions.end());
  return v;
}

CompileOutput compileKernel(const std::string &source, const std::string &name, const std::string &arch,
                            const CompileOptions &options) {
  CompileOutput out;
  auto t0 = std::chrono::steady_clock::now();
  try {
    const NvrtcApi *a = api();
    if (!a) {
      out.error = "cannot compile kernel '" + name + "': " + global().error;
      return out;
    }
    if (name.empty()) {
      out.error = "cannot compile a kernel without an entry name";
      return out;
    }
    if (std::string e = validateArch(arch); !e.empty()) {
      out.error = "cannot compile kernel '" + name + "': " + e;
      return out;
    }
    std::vector<std::string> opts = nvrtcOptions(arch, options);
    std::shared_lock<std::shared_mutex> forkGuard(nvrtcForkMutex(), std::defer_lock);
    if (!gForkedChild) forkGuard.lock();
    out.error = runNvrtc(*a, source, name, arch, opts, /*cubin=*/true, /*ptx=*/!options.separatePtxCompile, out);
    if (out.ok() && options.separatePtxCompile) {
      std::string varch = virtualArchFor(arch);
      opts[0] = "--gpu-architecture=" + varch;
      out.error = runNvrtc(*a, source, name, varch, opts, /*cubin=*/false, /*ptx=*/true, out);
    }
    if (out.ok() && options.checkEntry) {
      std::vector<std::string> entries = ptxEntries(out.ptx);
      if (std::find(entries.begin(), entries.end(), name) == entries.end()) {
        std::string found;
        for (const std::string &e : entries) found += (found.empty() ? "" : ", ") + e;
        out.error = "kernel '" + name + "' compiled for " + arch + ", but the module has no entry named '" + name +
                    "' (entries: " + (found.empty() ? "none" : found) + "); declare it extern \"C\" __global__";
      }
    }
  } catch (const std::exception &e) {
    out.error = "cannot compile kernel '" + name + "': " + e.what();
  }
  if (!out.ok()) {
    out.cubin.clear();
    out.ptx.clear();
  }
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

std::shared_mutex &nvrtcForkMutex() {
  static std::shared_mutex m;
  return m;
}

void nvrtcEnterForkedChild() { gForkedChild = true; }

uint64_t nvrtcCompileCount() { return gCompileCount.load(std::memory_order_relaxed); }

}  // namespace kiln::codegen

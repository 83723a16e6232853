#include "runtime/driver/CublasLt.h"

#include <dlfcn.h>

#include <cstdlib>
#include <vector>

namespace kiln::rt {

std::string CublasLt::describe(cublasStatus s) const {
  const char* name = cublasLtGetStatusName ? cublasLtGetStatusName(s) : nullptr;
  return name ? name : "cuBLAS status " + std::to_string(s);
}

namespace {

struct Loaded {
  CublasLt lt{};
  bool ok = false;
  std::string why;
};

Loaded load() {
  Loaded l;
  std::vector<std::string> paths;
  if (const char* p = std::getenv("KILN_CUBLASLT"); p && *p) {
    paths.push_back(p);
  } else {
    paths.push_back("libcublasLt.so.13");
    if (const char* home = std::getenv("CUDA_HOME"); home && *home)
      paths.push_back(std::string(home) + "/lib64/libcublasLt.so.13");
    paths.push_back("/usr/local/cuda/lib64/libcublasLt.so.13");
  }
  void* lib = nullptr;
  std::string errors;
  for (const std::string& p : paths) {
    if ((lib = dlopen(p.c_str(), RTLD_NOW | RTLD_LOCAL))) break;
    const char* e = dlerror();
    errors += (errors.empty() ? "" : "; ") + p + ": " + (e ? e : "not found");
  }
  if (!lib) {
    l.why = "cannot load cuBLASLt (" + errors + ")";
    return l;
  }
  CublasLt& t = l.lt;
#define KILN_BIND(f)                                                                                                   \
  t.f = reinterpret_cast<decltype(t.f)>(dlsym(lib, #f));                                                               \
  if (!t.f) {                                                                                                          \
    l.why = std::string("cuBLASLt lacks the symbol ") + #f;                                                            \
    return l;                                                                                                          \
  }
  KILN_BIND(cublasLtCreate)
  KILN_BIND(cublasLtDestroy)
  KILN_BIND(cublasLtMatmulDescCreate)
  KILN_BIND(cublasLtMatmulDescDestroy)
  KILN_BIND(cublasLtMatmulDescSetAttribute)
  KILN_BIND(cublasLtMatrixLayoutCreate)
  KILN_BIND(cublasLtMatrixLayoutDestroy)
  KILN_BIND(cublasLtMatrixLayoutSetAttribute)
  KILN_BIND(cublasLtMatmulPreferenceCreate)
  KILN_BIND(cublasLtMatmulPreferenceDestroy)
  KILN_BIND(cublasLtMatmulPreferenceSetAttribute)
  KILN_BIND(cublasLtMatmulAlgoGetHeuristic)
  KILN_BIND(cublasLtMatmul)
  KILN_BIND(cublasLtGetStatusName)
  KILN_BIND(cublasLtGetVersion)
#undef KILN_BIND
  l.ok = true;
  return l;
}

}  // namespace

const CublasLt* cublasLt(std::string& why) {
  static const Loaded loaded = load();
  why = loaded.why;
  return loaded.ok ? &loaded.lt : nullptr;
}

}  // namespace kiln::rt

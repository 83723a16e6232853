#include "runtime/driver/CudaDriver.h"

#include <dlfcn.h>

#include <cstdlib>

namespace kiln::rt {

std::string CudaDriver::describe(CUresult r) const {
  const char* name = nullptr;
  const char* text = nullptr;
  if (cuGetErrorName) cuGetErrorName(r, &name);
  if (cuGetErrorString) cuGetErrorString(r, &text);
  std::string s = name ? name : "CUDA error " + std::to_string(r);
  if (text) s += std::string(": ") + text;
  return s;
}

namespace {

struct Loaded {
  CudaDriver driver{};
  bool ok = false;
  std::string why;
};

// Fills the table; returns the name of the first missing symbol, or null. The names are the
// ABI symbols that cuda.h's macros map to (cuMemAlloc -> cuMemAlloc_v2, ...), in their legacy
// default-stream flavour: the stream is always explicit here.
const char* bind(void* lib, CudaDriver& d) {
#define KILN_BIND(field, symbol)                                                                                       \
  d.field = reinterpret_cast<decltype(d.field)>(dlsym(lib, symbol));                                                   \
  if (!d.field) return symbol;
  KILN_BIND(cuGetErrorName, "cuGetErrorName")
  KILN_BIND(cuGetErrorString, "cuGetErrorString")
  KILN_BIND(cuInit, "cuInit")
  KILN_BIND(cuDriverGetVersion, "cuDriverGetVersion")
  KILN_BIND(cuDeviceGetCount, "cuDeviceGetCount")
  KILN_BIND(cuDeviceGet, "cuDeviceGet")
  KILN_BIND(cuDeviceGetName, "cuDeviceGetName")
  KILN_BIND(cuDeviceGetAttribute, "cuDeviceGetAttribute")
  KILN_BIND(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain")
  KILN_BIND(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2")
  KILN_BIND(cuCtxGetCurrent, "cuCtxGetCurrent")
  KILN_BIND(cuCtxSetCurrent, "cuCtxSetCurrent")
  KILN_BIND(cuCtxPushCurrent, "cuCtxPushCurrent_v2")
  KILN_BIND(cuCtxPopCurrent, "cuCtxPopCurrent_v2")
  KILN_BIND(cuCtxGetDevice, "cuCtxGetDevice")
  KILN_BIND(cuModuleLoadData, "cuModuleLoadData")
  KILN_BIND(cuModuleLoadDataEx, "cuModuleLoadDataEx")
  KILN_BIND(cuModuleGetFunction, "cuModuleGetFunction")
  KILN_BIND(cuModuleUnload, "cuModuleUnload")
  KILN_BIND(cuFuncSetAttribute, "cuFuncSetAttribute")
  KILN_BIND(cuMemAlloc, "cuMemAlloc_v2")
  KILN_BIND(cuMemFree, "cuMemFree_v2")
  KILN_BIND(cuMemcpyHtoD, "cuMemcpyHtoD_v2")
  KILN_BIND(cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2")
  KILN_BIND(cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2")
  KILN_BIND(cuMemsetD8Async, "cuMemsetD8Async")
  KILN_BIND(cuStreamCreate, "cuStreamCreate")
  KILN_BIND(cuStreamDestroy, "cuStreamDestroy_v2")
  KILN_BIND(cuStreamSynchronize, "cuStreamSynchronize")
  KILN_BIND(cuLaunchKernel, "cuLaunchKernel")
#undef KILN_BIND
#define KILN_BIND_OPTIONAL(field, symbol) d.field = reinterpret_cast<decltype(d.field)>(dlsym(lib, symbol));
  KILN_BIND_OPTIONAL(cuStreamBeginCapture, "cuStreamBeginCapture_v2")
  KILN_BIND_OPTIONAL(cuStreamEndCapture, "cuStreamEndCapture")
  KILN_BIND_OPTIONAL(cuStreamIsCapturing, "cuStreamIsCapturing")
  KILN_BIND_OPTIONAL(cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags")
  KILN_BIND_OPTIONAL(cuGraphLaunch, "cuGraphLaunch")
  KILN_BIND_OPTIONAL(cuGraphExecDestroy, "cuGraphExecDestroy")
  KILN_BIND_OPTIONAL(cuGraphDestroy, "cuGraphDestroy")
  KILN_BIND_OPTIONAL(cuMemcpyDtoH, "cuMemcpyDtoH_v2")
  KILN_BIND_OPTIONAL(cuMemsetD8, "cuMemsetD8_v2")
  KILN_BIND_OPTIONAL(cuMemcpy2DAsync, "cuMemcpy2DAsync_v2")
  KILN_BIND_OPTIONAL(cuTensorMapEncodeTiled, "cuTensorMapEncodeTiled")
  KILN_BIND_OPTIONAL(cuMemGetInfo, "cuMemGetInfo_v2")
  KILN_BIND_OPTIONAL(cuMemAllocHost, "cuMemAllocHost_v2")
  KILN_BIND_OPTIONAL(cuMemFreeHost, "cuMemFreeHost")
  KILN_BIND_OPTIONAL(cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2")
  KILN_BIND_OPTIONAL(cuEventCreate, "cuEventCreate")
  KILN_BIND_OPTIONAL(cuEventRecord, "cuEventRecord")
  KILN_BIND_OPTIONAL(cuEventSynchronize, "cuEventSynchronize")
  KILN_BIND_OPTIONAL(cuEventElapsedTime, "cuEventElapsedTime_v2")
  KILN_BIND_OPTIONAL(cuEventDestroy, "cuEventDestroy_v2")
#undef KILN_BIND_OPTIONAL
  return nullptr;
}

Loaded load() {
  Loaded l;
  // KILN_CUDA_DRIVER lets tests point at a missing or fake library to exercise these paths.
  const char* override = std::getenv("KILN_CUDA_DRIVER");
  const char* path = override && *override ? override : "libcuda.so.1";
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* e = dlerror();
    l.why = std::string("cannot load the NVIDIA driver library ") + path + " (" + (e ? e : "unknown error") +
            "): this machine has no NVIDIA driver";
    return l;
  }
  if (const char* missing = bind(lib, l.driver)) {
    l.why = std::string(path) + " has no symbol " + missing + ": the NVIDIA driver is too old";
    return l;  // the library stays loaded; unloading a half-used driver is not worth the risk
  }
  CUresult r = l.driver.cuInit(0);
  if (r != CUDA_SUCCESS) {
    l.why = "cuInit failed: " + l.driver.describe(r) + (r == CUDA_ERROR_NO_DEVICE ? " (no GPU is visible)" : "");
    return l;
  }
  int count = 0;
  r = l.driver.cuDeviceGetCount(&count);
  if (r != CUDA_SUCCESS || count <= 0) {
    l.why = r != CUDA_SUCCESS ? "cuDeviceGetCount failed: " + l.driver.describe(r) : "the NVIDIA driver sees no GPU";
    return l;
  }
  l.ok = true;
  return l;
}

}  // namespace

const CudaDriver* cudaDriver(std::string& why) {
  static const Loaded loaded = load();  // C++11: initialized once, thread-safe
  if (!loaded.ok) {
    why = loaded.why;
    return nullptr;
  }
  return &loaded.driver;
}

}  // namespace kiln::rt

// The CUDA driver API, loaded at run time with dlopen("libcuda.so.1") through one table of
// function pointers (as IREE does), so the runtime builds without the CUDA toolkit and loads on
// machines without a driver. Only the few types and prototypes the executor uses are declared
// here; they match cuda.h of CUDA 12/13 (the _v2 entry points are the 64-bit-pointer ABI).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace kiln::rt {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st*;
using CUmodule = struct CUmod_st*;
using CUfunction = struct CUfunc_st*;
using CUstream = struct CUstream_st*;
using CUgraph = struct CUgraph_st*;
using CUgraphExec = struct CUgraphExec_st*;
using CUevent = struct CUevent_st*;
// cuda.h's CUtensorMap: 128 opaque bytes, 64-byte aligned, passed to a kernel by value.
struct alignas(64) CUtensorMap {
  uint64_t opaque[16];
};

constexpr CUresult CUDA_SUCCESS = 0;
constexpr CUresult CUDA_ERROR_NOT_SUPPORTED = 801;
constexpr CUresult CUDA_ERROR_OUT_OF_MEMORY = 2;
constexpr CUresult CUDA_ERROR_NO_DEVICE = 100;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;
constexpr int CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8;
constexpr int CU_JIT_INFO_LOG_BUFFER = 3;
constexpr int CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4;
constexpr int CU_JIT_ERROR_LOG_BUFFER = 5;
constexpr int CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6;
constexpr int CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1;
constexpr int CU_STREAM_CAPTURE_STATUS_NONE = 0;
constexpr unsigned CU_STREAM_NON_BLOCKING = 1;
constexpr int CU_MEMORYTYPE_DEVICE = 2;

// cuda.h's CUDA_MEMCPY2D (v2): a copy of Height rows of WidthInBytes between pitched buffers.
struct CUDA_MEMCPY2D {
  size_t srcXInBytes, srcY;
  int srcMemoryType;
  const void* srcHost;
  CUdeviceptr srcDevice;
  void* srcArray;
  size_t srcPitch;
  size_t dstXInBytes, dstY;
  int dstMemoryType;
  void* dstHost;
  CUdeviceptr dstDevice;
  void* dstArray;
  size_t dstPitch;
  size_t WidthInBytes, Height;
};

struct CudaDriver {
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDriverGetVersion)(int*);
  CUresult (*cuDeviceGetCount)(int*);
  CUresult (*cuDeviceGet)(CUdevice*, int);
  CUresult (*cuDeviceGetName)(char*, int, CUdevice);
  CUresult (*cuDeviceGetAttribute)(int*, int, CUdevice);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice);
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice);
  CUresult (*cuCtxGetCurrent)(CUcontext*);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuCtxPushCurrent)(CUcontext);
  CUresult (*cuCtxPopCurrent)(CUcontext*);
  CUresult (*cuCtxGetDevice)(CUdevice*);
  CUresult (*cuModuleLoadData)(CUmodule*, const void*);
  CUresult (*cuModuleLoadDataEx)(CUmodule*, const void*, unsigned, int*, void**);
  CUresult (*cuModuleGetFunction)(CUfunction*, CUmodule, const char*);
  CUresult (*cuModuleUnload)(CUmodule);
  CUresult (*cuFuncSetAttribute)(CUfunction, int, int);
  CUresult (*cuMemAlloc)(CUdeviceptr*, size_t);
  CUresult (*cuMemFree)(CUdeviceptr);
  CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void*, size_t);
  CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr, const void*, size_t, CUstream);
  CUresult (*cuMemcpyDtoDAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
  CUresult (*cuMemsetD8Async)(CUdeviceptr, unsigned char, size_t, CUstream);
  CUresult (*cuStreamCreate)(CUstream*, unsigned);
  CUresult (*cuStreamDestroy)(CUstream);
  CUresult (*cuStreamSynchronize)(CUstream);
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                             void**, void**);
  // CUDA graphs (stream capture). Optional: null when the driver lacks them, and the executor
  // then launches directly.
  CUresult (*cuStreamBeginCapture)(CUstream, int mode);
  CUresult (*cuStreamEndCapture)(CUstream, CUgraph*);
  CUresult (*cuStreamIsCapturing)(CUstream, int* status);
  CUresult (*cuGraphInstantiateWithFlags)(CUgraphExec*, CUgraph, unsigned long long);
  CUresult (*cuGraphLaunch)(CUgraphExec, CUstream);
  CUresult (*cuGraphExecDestroy)(CUgraphExec);
  CUresult (*cuGraphDestroy)(CUgraph);
  bool hasGraphs() const {
    return cuStreamBeginCapture && cuStreamEndCapture && cuStreamIsCapturing && cuGraphInstantiateWithFlags &&
           cuGraphLaunch && cuGraphExecDestroy && cuGraphDestroy;
  }

  // Host transfers and streams for tools (kiln run/check, the tuner's measurements). Optional.
  CUresult (*cuMemcpyDtoH)(void*, CUdeviceptr, size_t);
  CUresult (*cuMemsetD8)(CUdeviceptr, unsigned char, size_t);
  CUresult (*cuMemGetInfo)(size_t*, size_t*);
  // Page-locked host memory and asynchronous downloads (kiln run --host-io).
  CUresult (*cuMemAllocHost)(void**, size_t);
  CUresult (*cuMemFreeHost)(void*);
  CUresult (*cuMemcpyDtoHAsync)(void*, CUdeviceptr, size_t, CUstream);
  // Pitched copies (engines with padded profile dims). Optional.
  CUresult (*cuMemcpy2DAsync)(const CUDA_MEMCPY2D*, CUstream);
  // TMA tensor maps (CUDA 12+; engines with tensor-map arguments). Optional. The enums are
  // cuda.h's: data type, interleave, swizzle, L2 promotion, out-of-bounds fill.
  CUresult (*cuTensorMapEncodeTiled)(CUtensorMap*, int dataType, uint32_t rank, void* address, const uint64_t* dims,
                                     const uint64_t* strides, const uint32_t* box, const uint32_t* elementStrides,
                                     int interleave, int swizzle, int l2Promotion, int oobFill);
  // Events (profiling). Optional as well.
  CUresult (*cuEventCreate)(CUevent*, unsigned);
  CUresult (*cuEventRecord)(CUevent, CUstream);
  CUresult (*cuEventSynchronize)(CUevent);
  CUresult (*cuEventElapsedTime)(float*, CUevent, CUevent);
  CUresult (*cuEventDestroy)(CUevent);
  bool hasEvents() const {
    return cuEventCreate && cuEventRecord && cuEventSynchronize && cuEventElapsedTime && cuEventDestroy;
  }

  CUresult (*cuGetErrorName)(CUresult, const char**);
  CUresult (*cuGetErrorString)(CUresult, const char**);

  // "CUDA_ERROR_OUT_OF_MEMORY: out of memory" (or the number, if the driver cannot name it).
  std::string describe(CUresult r) const;
};

// The process-wide driver table, loaded and cuInit'ed on first use (thread-safe). Returns null
// when libcuda.so.1 is missing, lacks a symbol, or cuInit fails; `why` then says which.
const CudaDriver* cudaDriver(std::string& why);

}  // namespace kiln::rt

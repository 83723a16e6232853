// What every context of an engine on one CUDA context needs and none changes: the loaded modules
// (with their functions) and the weights, uploaded once. Kernels only read them (the engine
// checker rejects copies and matrix products that write into the weights, and the compiler never
// passes a weight as a kernel's output), so the contexts of one engine on the same CUDA context
// share one image: it is made by the first, kept alive by every context that uses it, and freed
// by the last to be destroyed. A context on another CUDA context (another device, or a context
// the application made itself) gets an image of its own, since modules and allocations belong to
// one CUDA context.
#pragma once

#include "runtime/driver/CudaDriver.h"
#include "Status.h"

#include <functional>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace kiln::rt {

struct DeviceImage {
  DeviceImage(const CudaDriver& cu, CUcontext context) : cu(cu), context(context) {}
  ~DeviceImage();  // unloads the modules and frees the weights, in `context`
  DeviceImage(const DeviceImage&) = delete;
  DeviceImage& operator=(const DeviceImage&) = delete;

  const CudaDriver& cu;
  const CUcontext context;
  std::vector<CUmodule> modules;
  std::vector<CUfunction> functions;  // per kernel of the engine
  CUdeviceptr weights = 0;            // 0 when the engine has no weights
};

// One engine's images, by CUDA context. It holds them weakly: an image lives exactly as long as a
// context uses it, so the cache never frees memory in a CUDA context the application may already
// have destroyed. Thread-safe.
class DeviceImageCache {
 public:
  using Make = std::function<Status(DeviceImage&)>;
  // The live image for `context`, or a new one filled by `make` (called on this thread, where
  // `context` must be current, under the cache's lock, so that two threads never upload the same
  // weights twice). On failure returns null with `status` saying why; what `make` had made is
  // freed and nothing is cached.
  std::shared_ptr<const DeviceImage> acquire(const CudaDriver& cu, CUcontext context, const Make& make, Status& status);

 private:
  std::mutex mutex_;
  std::vector<std::pair<CUcontext, std::weak_ptr<const DeviceImage>>> images_;  // (few: one per CUDA context)
};

}  // namespace kiln::rt

#include "DeviceImage.h"

#include <algorithm>

namespace kiln::rt {

DeviceImage::~DeviceImage() {
  if (modules.empty() && !weights) return;
  if (cu.cuCtxPushCurrent(context) != CUDA_SUCCESS) return;  // (its CUDA context is gone: nothing to free)
  if (weights) cu.cuMemFree(weights);
  for (CUmodule m : modules) cu.cuModuleUnload(m);
  CUcontext popped;
  cu.cuCtxPopCurrent(&popped);
}

std::shared_ptr<const DeviceImage> DeviceImageCache::acquire(const CudaDriver& cu, CUcontext context, const Make& make,
                                                             Status& status) {
  std::lock_guard<std::mutex> lock(mutex_);
  // Entries whose last context has gone are dropped: a later CUDA context may get the same handle.
  images_.erase(std::remove_if(images_.begin(), images_.end(), [](const auto& e) { return e.second.expired(); }),
                images_.end());
  for (const auto& [ctx, image] : images_)
    if (ctx == context)
      if (std::shared_ptr<const DeviceImage> live = image.lock()) return live;
  auto image = std::make_shared<DeviceImage>(cu, context);
  status = make(*image);
  if (!status.ok()) return nullptr;  // (its destructor frees what `make` made)
  images_.emplace_back(context, image);
  return image;
}

}  // namespace kiln::rt

// An engine in host memory after verification: the file bytes (kept, so the weights and module
// images are used in place) and the decoded description. Immutable once built, so it is shared
// by the engine handle and every context made from it; only its cache of device images (the
// modules and weights on each CUDA context, shared by the contexts there) changes, under its own
// lock.
#pragma once

#include "runtime/format/EngineFormat.h"
#include "DeviceImage.h"

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace kiln::rt {

struct LoadedEngine {
  std::vector<uint8_t> file;
  EngineDesc desc;    // desc.weights is empty: the weights stay in `file`
  ByteRange weights;  // where they are in `file`
  std::unordered_map<std::string, int32_t> ioByName;
  mutable DeviceImageCache images;  // (held weakly: each image lives as long as a context uses it)

  const uint8_t* weightsData() const { return file.data() + weights.offset; }
  int32_t findIo(const std::string& name) const {
    auto it = ioByName.find(name);
    return it == ioByName.end() ? -1 : it->second;
  }
};

}  // namespace kiln::rt

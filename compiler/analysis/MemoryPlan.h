// Activation memory planning: one arena, offsets assigned so that tensors whose lifetimes overlap
// never share bytes. Greedy by size (largest first, lowest fitting offset), as TFLite's and
// TensorRT's planners do; lifetimes are program-order intervals [first def, last use].
#pragma once

#include <cstdint>
#include <vector>

namespace kiln {

struct BufferRequest {
  int64_t bytes = 0;
  int64_t firstUse = 0;  // index of the op that defines it
  int64_t lastUse = 0;   // index of the last op that reads it (inclusive)
};

struct MemoryPlan {
  std::vector<int64_t> offsets;  // per request, aligned
  int64_t arenaBytes = 0;        // the arena's size
  int64_t peakLiveBytes = 0;     // most bytes live at one time (a lower bound on arenaBytes)
};

constexpr int64_t kArenaAlignment = 256;

MemoryPlan planMemory(const std::vector<BufferRequest> &requests, int64_t alignment = kArenaAlignment);

}  // namespace kiln

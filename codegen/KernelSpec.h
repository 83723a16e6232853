// What codegen hands to the rest of the compiler for one kernel launch: CUDA C++ source with one
// `extern "C" __global__` entry, and how to launch it. Shapes are static, so emitters bake sizes
// and strides into the source as constants; every kernel parameter is a device pointer, in the
// order the emitter documents (inputs first, then outputs). Identical sources are compiled once.
#pragma once

#include "compiler/target/Types.h"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace kiln::codegen {

// Element types: compiler/target/Types.h.
using target::ElemType;

struct KernelLaunch {
  std::string entry;   // the extern "C" __global__ function's name (unique per distinct source)
  std::string source;  // complete CUDA C++ translation unit for NVRTC
  std::array<uint32_t, 3> grid{1, 1, 1};
  std::array<uint32_t, 3> block{1, 1, 1};
  uint32_t sharedBytes = 0;
  int numParams = 0;  // device pointers: inputs then outputs
};

}  // namespace kiln::codegen

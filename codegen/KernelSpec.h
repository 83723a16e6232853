// What codegen hands to the rest of the compiler for one kernel launch: CUDA C++ source with one
// `extern "C" __global__` entry, and how to launch it. Shapes are static, so emitters bake sizes
// and strides into the source as constants; every kernel parameter is a device pointer (or a TMA
// tensor map over one), in the order the emitter documents (inputs first, then outputs).
// Identical sources are compiled once.
#pragma once

#include "compiler/target/Types.h"
#include "runtime/format/EngineFormat.h"

#include <array>
#include <cstdint>
#include <map>
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
  // The parameters (by index) passed as TMA tensor maps; each map's buffer is set where the
  // launch's buffers are placed.
  std::map<int, rt::TensorMap> tensorMaps;
  // Compiled for the target's arch-specific variant (sm_90a: wgmma, setmaxnreg), which runs on
  // exactly that sm; an engine with such a kernel is then arch-specific as a whole.
  bool archSpecific = false;
};

}  // namespace kiln::codegen

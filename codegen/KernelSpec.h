// What codegen hands to the rest of the compiler for one kernel launch: CUDA C++ source with one
// `extern "C" __global__` entry, and how to launch it. Shapes are static, so emitters bake sizes
// and strides into the source as constants; every kernel parameter is a device pointer, in the
// order the emitter documents (inputs first, then outputs). Identical sources are compiled once.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace kiln::codegen {

// Element types the kernels handle. F16, BF16 and F8E4M3 (float8e4m3fn) are float storage types:
// they load as float and store rounded to nearest-even (fp8 saturating to ±448, sm_89+
// conversions). F64 computes in double, the integer types in int (8 and 16 bits) or their own type.
enum class ElemType { F32, F16, BF16, I32, I64, Bool, I8, U8, F8E4M3, F64, I16, U16, U32, U64 };

struct KernelLaunch {
  std::string entry;   // the extern "C" __global__ function's name (unique per distinct source)
  std::string source;  // complete CUDA C++ translation unit for NVRTC
  std::array<uint32_t, 3> grid{1, 1, 1};
  std::array<uint32_t, 3> block{1, 1, 1};
  uint32_t sharedBytes = 0;
  int numParams = 0;  // device pointers: inputs then outputs
};

}  // namespace kiln::codegen

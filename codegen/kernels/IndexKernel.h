// Kernels written per coordinate of an iteration space: one thread per point (grid-stride), with
// the point's coordinates decoded into `c0 .. c<r-1>` (long long) and its linear index `i`, then
// an op-specific body of CUDA statements that reads the inputs and writes the outputs. The ops
// whose result element is a function of its own coordinates use it over the output's shape
// (Trilu, GatherElements, EyeLike, OneHot, Resize, ConvTranspose, N-D pooling); the row scans
// use it over the rows, the body looping along the row (ArgMax/ArgMin, Hardmax, TopK, CumSum).
//
// Correctness-first kernels for ops that are rare in inference graphs: no tiling, no shared
// memory. Kernel parameters: the spec's params in order (inputs const, then outputs).
#pragma once

#include "codegen/KernelSpec.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::codegen {

struct IndexKernelParam {
  std::string name;
  ElemType type = ElemType::F32;
  bool output = false;
};

struct IndexKernelSpec {
  std::string kind;            // entry name: kiln_<kind>_<hash>
  std::string comment;         // first line of the source (what the kernel computes)
  std::vector<int64_t> space;  // the iteration space (empty: one point)
  std::vector<IndexKernelParam> params;
  std::string prologue;  // file-scope code before the kernel (constant tables)
  std::string body;      // per point: sees c0.., i and the params
};

// Throws std::invalid_argument on a bad spec (negative dims, no outputs).
KernelLaunch emitIndexKernel(const IndexKernelSpec &spec);

}  // namespace kiln::codegen

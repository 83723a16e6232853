// Row reductions and row normalizations over a [rows, cols] view, fp32 arithmetic for every float
// storage type (f32, f16, bf16; float64 data in double):
// Softmax, LogSoftmax, LayerNormalization (scale, bias, epsilon, optional Mean/InvStdDev outputs),
// RMSNormalization (scale, epsilon),
// ReduceSum/Mean/Max/Min/Prod/SumSquare/L1/L2/LogSum/LogSumExp.
//
// The view: row r = (o, i) with o in [0, outer), i in [0, inner), rows = outer * inner; element j
// of row r is at o * cols * inner + j * inner + i. inner = 1 (the default) is the last-axis case;
// inner > 1 reduces a middle axis in place (Softmax over axis 1 of NCHW, ReduceMean over C, ...)
// without a transpose. keepdims is the caller's shape: the reduced output is `rows` contiguous
// values, in (o, i) order.
//
// Launch geometry: last-axis rows of <= 1024 elements get one warp per row (8 rows per 256-thread
// block), longer rows one block per row; rows are cached in registers when they fit (one global
// read, one write). inner > 1 gets one thread per row (coalesced across i).
//
// Kernel parameters:
//   Softmax / LogSoftmax:  in, out
//   LayerNorm:             in, scale[cols], [bias[cols]], out, [mean[rows], invStdDev[rows]]
//   RmsNorm:               in, scale[cols], out
//   InstanceNorm:          in, scale[channels], bias[channels], out
//   Reduce*:               in, out[rows]
//   MinMax:                in, in2, out[rows] (min of in), out2[rows] (max of in2)
#pragma once

#include "codegen/KernelSpec.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::codegen {

enum class RowOp {
  Softmax,
  LogSoftmax,
  LayerNorm,
  InstanceNorm,  // LayerNorm's statistics per row, scale and bias per channel: row % channels
  RmsNorm,       // x / sqrt(mean(x²) + epsilon) · scale[j] (no centering, no bias)
  Sum,
  Mean,
  Max,
  Min,
  Prod,
  SumSquare,
  L1,
  L2,
  LogSum,
  LogSumExp,
  MinMax,  // the min of `in` and the max of `in2` (the same tensor: read once when sameInput)
};

struct RowReductionSpec {
  RowOp op = RowOp::Sum;
  int64_t outer = 1;  // rows = outer * inner
  int64_t cols = 1;   // the reduced / normalized length
  int64_t inner = 1;  // distance between a row's consecutive elements
  // LayerNorm only.
  float epsilon = 1e-5f;
  bool hasBias = true;
  bool statsOutputs = false;  // also write Mean and InvStdDev per row
  int64_t channels = 1;       // InstanceNorm: rows are (n, c) slices, scale/bias have `channels` values
  // Threads per row for last-axis rows; 0 = automatic (32 up to 1024 columns, else 256..1024).
  int threadsPerRow = 0;
  // Storage types (arithmetic is fp32 whatever they are): input, scale and bias; output;
  // LayerNorm's Mean/InvStdDev outputs.
  ElemType type = ElemType::F32, outType = ElemType::F32, statsType = ElemType::F32;
  // MinMax only: in2 is in (the kernel reads one tensor).
  bool sameInput = false;
};

// "Softmax", "LogSoftmax", "LayerNormalization", "ReduceSum", ... → RowOp; false if unknown.
bool rowOpFromName(const std::string &opType, RowOp *op);

// Throws std::invalid_argument on bad specs.
KernelLaunch emitRowReduction(const RowReductionSpec &spec);

// A Reduce* (not Softmax/LogSoftmax/LayerNorm) over any set of axes of `shape`, adjacent or not:
// one thread per output element loops over its reduced elements (IndexKernel.h), fp32
// arithmetic (double for float64). For axis sets the [outer, cols, inner] view cannot express.
// Parameters: x, y.
KernelLaunch emitReduceAxes(RowOp op, const std::vector<int64_t> &shape, const std::vector<int64_t> &axes,
                            ElemType type, ElemType outType);

}  // namespace kiln::codegen

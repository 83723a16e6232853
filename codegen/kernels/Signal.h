// Kernels of the signal, linear-algebra and loss ops (compiler/ops/Signal.cpp, Loss.cpp):
// DFT and STFT as direct transforms (one thread per output bin, double accumulation and angles,
// exact integer phase reduction), Det (one thread per matrix, LU with partial pivoting in
// double), and NegativeLogLikelihoodLoss / SoftmaxCrossEntropyLoss in one kernel.
#pragma once

#include "codegen/KernelSpec.h"

#include <cstdint>
#include <vector>

namespace kiln::codegen {

// DFT along the middle axis of an input viewed as [outer, len, inner, channels (1 real, 2
// complex)], `n` points (zero padded or truncated), `outLen` bins (n, or n / 2 + 1 onesided).
// Parameters: x, y [outer, outLen, inner, 2].
struct DftSpec {
  int64_t outer = 1, len = 1, inner = 1, channels = 1, n = 1, outLen = 1;
  bool inverse = false;
  ElemType type = ElemType::F32;
};
KernelLaunch emitDft(const DftSpec &spec);

// STFT of signal [batch, length, channels] with frames of `frameLength` every `step` samples,
// `bins` bins each, times an optional window. Parameters: x, [window], y [batch, frames, bins, 2].
struct StftSpec {
  int64_t batch = 1, length = 1, channels = 1, step = 1, frameLength = 1, frames = 1, bins = 1;
  bool window = false;
  ElemType type = ElemType::F32;
};
KernelLaunch emitStft(const StftSpec &spec);

// Det of `count` matrices of m x m (m <= 32). Parameters: x, y.
KernelLaunch emitDet(int64_t count, int64_t m, ElemType type);

// NegativeLogLikelihoodLoss of input viewed as [N, C, D] (softmax: SoftmaxCrossEntropyLoss, the
// input being scores whose log-softmax over C it takes, optionally written out). Reduction none:
// one thread per position; sum / mean: one block of 256 threads, double accumulators.
// Parameters: x, target, [weight], loss, [log_prob].
struct LossSpec {
  int64_t N = 1, C = 1, D = 1;
  bool softmax = false, logProbOutput = false, weight = false, hasIgnore = false;
  int64_t ignoreIndex = 0;
  int reduction = 2;  // 0 none, 1 sum, 2 mean
  ElemType type = ElemType::F32, targetType = ElemType::I64;
};
KernelLaunch emitLoss(const LossSpec &spec);

}  // namespace kiln::codegen

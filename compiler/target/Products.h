// What the matrix-product tactics take, as rules the passes can ask before they choose a layout
// (kiln-product-views, the transpose folds) and lowering asks before it calls cuBLASLt.
#pragma once

#include "compiler/target/GpuTarget.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace kiln::target {

// Whether batch dims of sizes `shape` with element `strides` are one strided batch, as cuBLASLt
// takes them: size-1 dims aside, each dim's stride is `unit` (the innermost one's) times the
// sizes of the dims inside it (unit 0: broadcast across all).
bool uniformBatchStride(const std::vector<int64_t> &shape, const std::vector<int64_t> &strides, int64_t &unit);

// Whether kiln's tensor-core product kernel, doing work that saves a memory pass of `passBytes`
// (an epilogue cuBLASLt cannot take, a prologue), is estimated faster than cuBLASLt's product plus
// that pass: M x N x K (`batches` of them), half operands. From the target's datasheet numbers with
// the rates measured on the H100 (bench/RESULTS.md, 2026-12-07: cuBLASLt 300-380 TFLOP/s at
// BERT's sizes, 0.35 of the datasheet; kiln's mma.sync kernel 140-190, 0.16, less the part of its
// 128x128 tiles that M and N leave empty; a memory pass at 0.9 of the bandwidth plus 3 us, its
// launch), kiln's kernel is chosen when it takes under 0.7 of cuBLASLt's time with the pass, and,
// if `fullWave`, its tiles fill a wave of the target's SMs.
bool kilnProductIsCheaper(int64_t M, int64_t N, int64_t K, int64_t batches, double passBytes, const GpuTarget &t,
                          bool fullWave);

}  // namespace kiln::target

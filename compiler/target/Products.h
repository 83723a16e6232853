// What the matrix-product tactics take, as rules the passes can ask before they choose a layout
// (kiln-product-views, the transpose folds) and lowering asks before it calls cuBLASLt.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace kiln::target {

// Whether batch dims of sizes `shape` with element `strides` are one strided batch, as cuBLASLt
// takes them: size-1 dims aside, each dim's stride is `unit` (the innermost one's) times the
// sizes of the dims inside it (unit 0: broadcast across all).
bool uniformBatchStride(const std::vector<int64_t> &shape, const std::vector<int64_t> &strides, int64_t &unit);

}  // namespace kiln::target

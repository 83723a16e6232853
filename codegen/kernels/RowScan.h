// Scans along one axis, one thread per row, on emitIndexKernel (IndexKernel.h). The view is the
// row reduction's (Reduction.h): element j of row (o, i) is at o * cols * inner + j * inner + i,
// so a middle axis needs no transpose. Values compare in their compute type (float for every
// float storage); NaN rows give unspecified picks.
#pragma once

#include "codegen/KernelSpec.h"

#include <cstdint>

namespace kiln::codegen {

struct RowView {
  int64_t outer = 1, cols = 1, inner = 1;
};

// ArgMax / ArgMin: the first (or last, `selectLast`) extreme's position, int64, one per row.
// Parameters: x, y[rows].
KernelLaunch emitArgExtreme(const RowView &v, bool max, bool selectLast, ElemType type);

// Hardmax: 1 at the row's first maximum, 0 elsewhere. Parameters: x, y.
KernelLaunch emitHardmax(const RowView &v, ElemType type);

// TopK: the k largest (or smallest) of each row in order, ties by lower index, with their int64
// positions; outputs are x's view with cols = k. Parameters: x, values, indices.
KernelLaunch emitTopK(const RowView &v, int64_t k, bool largest, ElemType type);

// CumSum along the row, optionally exclusive and/or reversed; sums in the compute type.
// Parameters: x, y.
KernelLaunch emitCumSum(const RowView &v, bool exclusive, bool reverse, ElemType type);

}  // namespace kiln::codegen

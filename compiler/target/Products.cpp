#include "compiler/target/Products.h"

namespace kiln::target {

bool uniformBatchStride(const std::vector<int64_t> &shape, const std::vector<int64_t> &strides, int64_t &unit) {
  unit = 0;
  int64_t span = 0;  // (0 until the innermost non-unit dim sets the unit)
  for (size_t d = shape.size(); d-- > 0;) {
    if (shape[d] == 1) continue;
    if (span == 0) unit = strides[d], span = 1;
    if (strides[d] != unit * span) return false;
    span *= shape[d];
  }
  return true;
}

}  // namespace kiln::target

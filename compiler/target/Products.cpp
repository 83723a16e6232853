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

bool kilnProductIsCheaper(int64_t M, int64_t N, int64_t K, int64_t batches, double passBytes, const GpuTarget &t,
                          bool fullWave) {
  int64_t rowTiles = (M + 127) / 128, colTiles = (N + 127) / 128;
  if (fullWave && rowTiles * colTiles * batches < t.smCount) return false;
  double used = double(M) / double(rowTiles * 128) * double(N) / double(colTiles * 128);
  double flops = 2.0 * double(M) * double(N) * double(K) * double(batches);
  double library = flops / (0.35 * t.halfTflops * 1e12), kiln = flops / (0.16 * used * t.halfTflops * 1e12);
  double pass = passBytes / (0.9 * t.memoryGBps * 1e9) + 3e-6;
  return kiln < 0.7 * (library + pass);
}

}  // namespace kiln::target

#include "compiler/analysis/MemoryPlan.h"

#include <algorithm>
#include <numeric>

namespace kiln {

static int64_t alignUp(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

MemoryPlan planMemory(const std::vector<BufferRequest> &reqs, int64_t alignment) {
  MemoryPlan plan;
  plan.offsets.assign(reqs.size(), 0);
  std::vector<size_t> order(reqs.size());
  std::iota(order.begin(), order.end(), 0);
  // Largest first; ties by definition order so the plan is deterministic.
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return reqs[a].bytes > reqs[b].bytes; });
  std::vector<size_t> placed;
  for (size_t r : order) {
    const BufferRequest &q = reqs[r];
    if (q.bytes == 0) continue;
    // Address ranges of placed buffers alive at the same time, sorted by offset.
    std::vector<std::pair<int64_t, int64_t>> busy;
    for (size_t p : placed) {
      const BufferRequest &o = reqs[p];
      if (o.lastUse < q.firstUse || q.lastUse < o.firstUse) continue;
      busy.push_back({plan.offsets[p], plan.offsets[p] + o.bytes});
    }
    std::sort(busy.begin(), busy.end());
    int64_t offset = 0;
    for (auto &[lo, hi] : busy) {
      if (offset + q.bytes <= lo) break;  // fits in the gap before this range
      offset = std::max(offset, alignUp(hi, alignment));
    }
    plan.offsets[r] = offset;
    plan.arenaBytes = std::max(plan.arenaBytes, alignUp(offset + q.bytes, alignment));
    placed.push_back(r);
  }
  // Peak live bytes: sweep over op indices.
  int64_t last = 0;
  for (auto &q : reqs) last = std::max(last, q.lastUse);
  std::vector<int64_t> delta(last + 2, 0);
  for (auto &q : reqs) {
    delta[q.firstUse] += q.bytes;
    delta[q.lastUse + 1] -= q.bytes;
  }
  int64_t live = 0;
  for (int64_t d : delta) plan.peakLiveBytes = std::max(plan.peakLiveBytes, live += d);
  return plan;
}

}  // namespace kiln

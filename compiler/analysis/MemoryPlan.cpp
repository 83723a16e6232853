#include "compiler/analysis/MemoryPlan.h"

#include <algorithm>
#include <map>
#include <memory>
#include <numeric>

namespace kiln {

namespace {

int64_t alignUp(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

// Disjoint half-open intervals [lo, hi) of arena units (alignment-sized), merged on insertion.
class IntervalSet {
 public:
  void add(int64_t lo, int64_t hi) {
    auto it = m_.upper_bound(lo);
    if (it != m_.begin() && std::prev(it)->second >= lo) {
      --it;
      lo = it->first;
      hi = std::max(hi, it->second);
    }
    while (it != m_.end() && it->first <= hi) {
      hi = std::max(hi, it->second);
      it = m_.erase(it);
    }
    m_.emplace(lo, hi);
  }
  // The end of the interval that [y, y + size) runs into, or -1 when it meets none.
  int64_t blockedUntil(int64_t y, int64_t size) const {
    auto it = m_.lower_bound(y + size);
    if (it == m_.begin()) return -1;
    --it;
    return it->second > y ? it->second : -1;
  }

 private:
  std::map<int64_t, int64_t> m_;
};

// The placed buffers, as a segment tree over op indices: a buffer alive over [first, last] is
// stored at the O(log T) nodes whose ranges tile its lifetime (`own`), and in the union of its
// subtree at each of those nodes and their ancestors (`sub`). The buffers alive at some point of
// [first, last] are then the `sub` sets of that range's tiling nodes plus the `own` sets of their
// ancestors: O(log T) interval sets, whatever the number of buffers.
class PlacedBuffers {
 public:
  explicit PlacedBuffers(int64_t ops) {
    while (leaves_ < ops) leaves_ *= 2;
    own_.resize(size_t(2 * leaves_));
    sub_.resize(size_t(2 * leaves_));
  }

  void add(int64_t first, int64_t last, int64_t lo, int64_t hi) {
    for (int64_t n : tiling(first, last)) {
      set(own_, n).add(lo, hi);
      for (int64_t a = n; a >= 1; a /= 2) set(sub_, a).add(lo, hi);
    }
  }

  // The lowest unit y >= 0 such that [y, y + size) meets no buffer alive in [first, last].
  int64_t lowestFree(int64_t first, int64_t last, int64_t size) const {
    std::vector<const IntervalSet *> sets;
    std::vector<int64_t> tiles = tiling(first, last), ancestors;
    for (int64_t n : tiles) {
      if (sub_[size_t(n)]) sets.push_back(sub_[size_t(n)].get());
      for (int64_t a = n / 2; a >= 1; a /= 2) ancestors.push_back(a);
    }
    std::sort(ancestors.begin(), ancestors.end());
    ancestors.erase(std::unique(ancestors.begin(), ancestors.end()), ancestors.end());
    for (int64_t a : ancestors)
      if (own_[size_t(a)]) sets.push_back(own_[size_t(a)].get());
    // Each round moves y past an interval that blocks it; the sets are disjoint unions, so the
    // rounds are bounded by the gaps below the answer, not by the number of buffers.
    int64_t y = 0;
    for (bool moved = true; moved;) {
      moved = false;
      for (const IntervalSet *s : sets)
        if (int64_t end = s->blockedUntil(y, size); end >= 0) y = end, moved = true;
    }
    return y;
  }

 private:
  static IntervalSet &set(std::vector<std::unique_ptr<IntervalSet>> &v, int64_t n) {
    if (!v[size_t(n)]) v[size_t(n)] = std::make_unique<IntervalSet>();
    return *v[size_t(n)];
  }
  // The nodes whose leaf ranges exactly tile [first, last].
  std::vector<int64_t> tiling(int64_t first, int64_t last) const {
    std::vector<int64_t> out;
    for (int64_t l = first + leaves_, r = last + leaves_ + 1; l < r; l /= 2, r /= 2) {
      if (l & 1) out.push_back(l++);
      if (r & 1) out.push_back(--r);
    }
    return out;
  }

  int64_t leaves_ = 1;
  std::vector<std::unique_ptr<IntervalSet>> own_, sub_;
};

}  // namespace

MemoryPlan planMemory(const std::vector<BufferRequest> &reqs, int64_t alignment) {
  MemoryPlan plan;
  plan.offsets.assign(reqs.size(), 0);
  std::vector<size_t> order(reqs.size());
  std::iota(order.begin(), order.end(), 0);
  // Largest first; ties by definition order so the plan is deterministic.
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return reqs[a].bytes > reqs[b].bytes; });
  int64_t ops = 1;
  for (auto &q : reqs) ops = std::max(ops, std::max(q.firstUse, q.lastUse) + 1);
  // Offsets are multiples of the alignment, so conflicts are decided in alignment units: a buffer
  // of b bytes at unit y holds units [y, y + ceil(b / alignment)).
  PlacedBuffers placed(ops);
  for (size_t r : order) {
    const BufferRequest &q = reqs[r];
    if (q.bytes == 0) continue;
    int64_t first = std::max<int64_t>(q.firstUse, 0), last = std::max(first, q.lastUse);
    int64_t units = alignUp(q.bytes, alignment) / alignment;
    int64_t y = placed.lowestFree(first, last, units);
    placed.add(first, last, y, y + units);
    plan.offsets[r] = y * alignment;
    plan.arenaBytes = std::max(plan.arenaBytes, (y + units) * alignment);
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

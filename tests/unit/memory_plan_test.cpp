#include "compiler/analysis/MemoryPlan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <numeric>
#include <random>

namespace {

// The planner's definition, written the direct way (quadratic in the buffers alive at once):
// largest first, each at the lowest aligned offset that no placed buffer alive at the same time
// overlaps. planMemory must give exactly these offsets.
kiln::MemoryPlan referencePlan(const std::vector<kiln::BufferRequest> &reqs,
                               int64_t alignment = kiln::kArenaAlignment) {
  auto alignUp = [&](int64_t v) { return (v + alignment - 1) / alignment * alignment; };
  kiln::MemoryPlan plan;
  plan.offsets.assign(reqs.size(), 0);
  std::vector<size_t> order(reqs.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return reqs[a].bytes > reqs[b].bytes; });
  std::vector<size_t> placed;
  for (size_t r : order) {
    const kiln::BufferRequest &q = reqs[r];
    if (q.bytes == 0) continue;
    std::vector<std::pair<int64_t, int64_t>> busy;
    for (size_t p : placed) {
      const kiln::BufferRequest &o = reqs[p];
      if (o.lastUse < q.firstUse || q.lastUse < o.firstUse) continue;
      busy.push_back({plan.offsets[p], plan.offsets[p] + o.bytes});
    }
    std::sort(busy.begin(), busy.end());
    int64_t offset = 0;
    for (auto &[lo, hi] : busy) {
      if (offset + q.bytes <= lo) break;
      offset = std::max(offset, alignUp(hi));
    }
    plan.offsets[r] = offset;
    plan.arenaBytes = std::max(plan.arenaBytes, alignUp(offset + q.bytes));
    placed.push_back(r);
  }
  return plan;
}

// Every pair of buffers that are alive at the same time must have disjoint address ranges.
void expectValid(const std::vector<kiln::BufferRequest> &reqs, const kiln::MemoryPlan &plan) {
  for (size_t a = 0; a < reqs.size(); ++a) {
    EXPECT_EQ(plan.offsets[a] % kiln::kArenaAlignment, 0);
    EXPECT_LE(plan.offsets[a] + reqs[a].bytes, plan.arenaBytes);
    for (size_t b = a + 1; b < reqs.size(); ++b) {
      bool timeOverlap = !(reqs[a].lastUse < reqs[b].firstUse || reqs[b].lastUse < reqs[a].firstUse);
      bool addrOverlap =
          plan.offsets[a] < plan.offsets[b] + reqs[b].bytes && plan.offsets[b] < plan.offsets[a] + reqs[a].bytes;
      EXPECT_FALSE(timeOverlap && addrOverlap && reqs[a].bytes && reqs[b].bytes) << a << " vs " << b;
    }
  }
  EXPECT_GE(plan.arenaBytes, plan.peakLiveBytes);
}

TEST(MemoryPlan, ChainReusesMemory) {
  // a → b → c → d: each tensor lives for two ops, so two slots suffice.
  std::vector<kiln::BufferRequest> reqs = {{1024, 0, 1}, {1024, 1, 2}, {1024, 2, 3}, {1024, 3, 4}};
  kiln::MemoryPlan p = kiln::planMemory(reqs);
  expectValid(reqs, p);
  EXPECT_EQ(p.arenaBytes, 2048);
  EXPECT_EQ(p.peakLiveBytes, 2048);
}

TEST(MemoryPlan, RandomLifetimesNeverOverlap) {
  std::mt19937 rng(7);
  for (int round = 0; round < 50; ++round) {
    std::vector<kiln::BufferRequest> reqs;
    for (int i = 0; i < 40; ++i) {
      int64_t first = rng() % 30;
      reqs.push_back({static_cast<int64_t>(1 + rng() % 100000), first, first + static_cast<int64_t>(rng() % 8)});
    }
    kiln::MemoryPlan p = kiln::planMemory(reqs);
    expectValid(reqs, p);
    EXPECT_LE(p.arenaBytes, 2 * p.peakLiveBytes + 40 * kiln::kArenaAlignment);  // greedy stays near the bound
  }
}

// The segment-tree planner places every buffer exactly where the direct greedy does: random
// lifetimes and sizes (many equal, some zero, some below one alignment unit), short and long.
TEST(MemoryPlan, SameOffsetsAsTheDirectGreedy) {
  std::mt19937 rng(11);
  for (int round = 0; round < 200; ++round) {
    std::vector<kiln::BufferRequest> reqs;
    int n = 1 + int(rng() % 120), span = 1 + int(rng() % 60);
    for (int i = 0; i < n; ++i) {
      int64_t first = rng() % span;
      int64_t bytes = rng() % 4 == 0 ? int64_t(rng() % 300) : int64_t(256 * (1 + rng() % 8));
      if (rng() % 3 == 0) bytes = int64_t(1 + rng() % 50000);
      reqs.push_back({bytes, first, first + int64_t(rng() % (round % 2 ? 4 : 40))});
    }
    kiln::MemoryPlan got = kiln::planMemory(reqs), want = referencePlan(reqs);
    ASSERT_EQ(got.offsets, want.offsets) << "round " << round;
    ASSERT_EQ(got.arenaBytes, want.arenaBytes) << "round " << round;
    expectValid(reqs, got);
  }
}

// 100,000 results all alive at once (100,000 Relus feeding one Sum) were planned in O(n^2): about
// 100 s. Now well under a second; the arena is their sum.
TEST(MemoryPlan, ManyBuffersAliveAtOnceAreCheap) {
  const int64_t n = 100000;
  std::vector<kiln::BufferRequest> reqs;
  for (int64_t i = 0; i < n; ++i) reqs.push_back({64, i, n});
  auto t0 = std::chrono::steady_clock::now();
  kiln::MemoryPlan p = kiln::planMemory(reqs);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(p.arenaBytes, n * kiln::kArenaAlignment);
  EXPECT_EQ(p.offsets[n - 1], (n - 1) * kiln::kArenaAlignment);
  EXPECT_LT(secs, 30.0);  // (about 1 s; 10 s under ASan; the quadratic planner took ~100 s)
}

}  // namespace

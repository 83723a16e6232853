#include "compiler/analysis/MemoryPlan.h"

#include <gtest/gtest.h>

#include <random>

namespace {

// Every pair of buffers that are alive at the same time must have disjoint address ranges.
void expectValid(const std::vector<kiln::BufferRequest> &reqs, const kiln::MemoryPlan &plan) {
  for (size_t a = 0; a < reqs.size(); ++a) {
    EXPECT_EQ(plan.offsets[a] % kiln::kArenaAlignment, 0);
    EXPECT_LE(plan.offsets[a] + reqs[a].bytes, plan.arenaBytes);
    for (size_t b = a + 1; b < reqs.size(); ++b) {
      bool timeOverlap = !(reqs[a].lastUse < reqs[b].firstUse || reqs[b].lastUse < reqs[a].firstUse);
      bool addrOverlap = plan.offsets[a] < plan.offsets[b] + reqs[b].bytes &&
                         plan.offsets[b] < plan.offsets[a] + reqs[a].bytes;
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

}  // namespace

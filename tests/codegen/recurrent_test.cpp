// The recurrence emitter (codegen/kernels/Recurrent.h) without a GPU: the plans it picks for the
// shapes that matter, and every variant's source compiling for sm_90 with NVRTC, without register
// spills (ptxas -v), within the target's shared memory. The numerical checks are the GPU
// suite's (bench/gpu_suite.sh rnn: engines against the CPU evaluator).
#include "codegen/kernels/Recurrent.h"
#include "codegen/nvrtc/Nvrtc.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <regex>

namespace kiln::codegen {
namespace {

target::GpuTarget targetFor(const std::string &arch) {
  std::string error;
  auto t = target::GpuTarget::parse(arch, error);
  EXPECT_TRUE(t) << error;
  return t ? *t : target::GpuTarget{};
}

RecurrenceSpec spec(RecurrentCell cell, int64_t H, ElemType type, int64_t D = 2, int64_t B = 32, int64_t T = 64) {
  RecurrenceSpec s;
  s.cell = cell, s.H = H, s.type = type, s.D = D, s.B = B, s.T = T;
  s.reverse[0] = false, s.reverse[1] = true;
  for (auto &dir : s.acts) {
    dir[0] = {RecurrentAct::Sigmoid, 0, 0};
    dir[1] = {RecurrentAct::Tanh, 0, 0};
    dir[2] = {RecurrentAct::Tanh, 0, 0};
  }
  s.writeY = s.writeYh = true;
  s.writeYc = cell == RecurrentCell::Lstm;
  return s;
}

// ptxas -v's "Used N registers" of the log, or -1.
int registersOf(const std::string &log) {
  std::smatch m;
  return std::regex_search(log, m, std::regex("Used ([0-9]+) registers")) ? std::stoi(m[1]) : -1;
}

TEST(RecurrencePlan, PicksClustersTensorCoresAndResidentWeights) {
  target::GpuTarget h100 = targetFor("sm_90");
  // The benchmark layer: bidirectional LSTM, hidden 256, fp16: 8 CTAs per direction, each with
  // 128 gate rows of R (64 KiB) in shared memory, products on tensor cores.
  RecurrencePlan p = planRecurrence(spec(RecurrentCell::Lstm, 256, ElemType::F16), h100);
  EXPECT_EQ(p.cluster, 8);
  EXPECT_TRUE(p.tensorCores);
  EXPECT_TRUE(p.weightsInShared);
  EXPECT_EQ(p.batchChunk, 16);
  EXPECT_LE(p.sharedBytes, uint32_t(h100.maxSharedPerBlock));
  std::printf("[plan] LSTM H=256 fp16 B=32: %s\n", p.describe().c_str());
  // Hidden 512 LSTM fp16: 2 MiB of R does not fit 8 CTAs' shared memory: read from L2.
  p = planRecurrence(spec(RecurrentCell::Lstm, 512, ElemType::F16), h100);
  EXPECT_EQ(p.cluster, 8);
  EXPECT_FALSE(p.weightsInShared);
  // fp32: FMA products, R resident as fp32.
  p = planRecurrence(spec(RecurrentCell::Lstm, 256, ElemType::F32), h100);
  EXPECT_FALSE(p.tensorCores);
  EXPECT_TRUE(p.weightsInShared);
  EXPECT_EQ(p.cluster, 8);
  // Small layers stay in one CTA per direction and batch chunk.
  p = planRecurrence(spec(RecurrentCell::Gru, 32, ElemType::F16, 1, 3, 5), h100);
  EXPECT_EQ(p.cluster, 1);
  EXPECT_EQ(p.batchChunk, 3);
  // A hidden size that is no multiple of 16 has no tensor-core form.
  EXPECT_FALSE(planRecurrence(spec(RecurrentCell::Lstm, 40, ElemType::F16), h100).tensorCores);
  // Before sm_90 there are no clusters.
  p = planRecurrence(spec(RecurrentCell::Lstm, 256, ElemType::F16), targetFor("sm_80"));
  EXPECT_EQ(p.cluster, 1);
  // Operands of another cell are refused.
  RecurrenceSpec bad = spec(RecurrentCell::Gru, 16, ElemType::F32);
  bad.hasP = true;
  EXPECT_THROW(planRecurrence(bad, h100), std::invalid_argument);
}

TEST(RecurrenceKernel, LaunchShape) {
  RecurrenceSpec s = spec(RecurrentCell::Lstm, 256, ElemType::F16, 2, 40);
  RecurrencePlan p = planRecurrence(s, targetFor("sm_90"));
  KernelLaunch k = emitRecurrence(s, p);
  EXPECT_EQ(k.grid[0], 2u * 3u * 8u);  // directions × batch chunks (40 rows by 16) × cluster
  EXPECT_EQ(k.block[0], 256u);
  EXPECT_EQ(k.sharedBytes, p.sharedBytes);
  EXPECT_EQ(k.numParams, 5);  // XP, R, Y, Y_h, Y_c
  EXPECT_NE(k.source.find("__cluster_dims__(8, 1, 1)"), std::string::npos);
  EXPECT_EQ(k.entry.rfind("kiln_lstm_f16_", 0), 0u) << k.entry;
  s.hasRB = s.hasSeqLens = s.hasH0 = s.hasC0 = s.hasP = true;
  EXPECT_EQ(emitRecurrence(s, p).numParams, 10);
  RecurrencePlan wrong = p;
  wrong.cluster = 3;
  EXPECT_THROW(emitRecurrence(s, wrong), std::invalid_argument);
}

// Every variant compiles for sm_90 without spills; prints registers and shared memory.
TEST(RecurrenceKernel, VariantsCompileWithoutSpills) {
  if (!nvrtcAvailable()) GTEST_SKIP() << nvrtcLoadError();
  target::GpuTarget h100 = targetFor("sm_90");
  struct Variant {
    const char *name;
    RecurrenceSpec s;
  };
  std::vector<Variant> vs;
  vs.push_back({"lstm bidir H256 f16 (benchmark)", spec(RecurrentCell::Lstm, 256, ElemType::F16)});
  RecurrenceSpec full = spec(RecurrentCell::Lstm, 128, ElemType::BF16, 2, 5, 7);
  full.layout1 = true, full.hasRB = full.hasSeqLens = full.hasH0 = full.hasC0 = full.hasP = true;
  full.clip = 3.f, full.inputForget = true;
  full.acts[1][1] = {RecurrentAct::ScaledTanh, 0.5f, 1.5f};
  vs.push_back({"lstm everything H128 bf16", full});
  vs.push_back({"lstm H512 f16 (R in L2)", spec(RecurrentCell::Lstm, 512, ElemType::F16, 2, 1, 40)});
  vs.push_back({"lstm H256 f32", spec(RecurrentCell::Lstm, 256, ElemType::F32)});
  vs.push_back({"lstm H40 f16 (FMA)", spec(RecurrentCell::Lstm, 40, ElemType::F16, 2, 3, 8)});
  RecurrenceSpec gru = spec(RecurrentCell::Gru, 128, ElemType::F16, 2, 4, 10);
  gru.hasRB = gru.hasSeqLens = gru.seqLensI64 = gru.hasH0 = true;
  vs.push_back({"gru lbr=0 H128 f16", gru});
  gru.linearBeforeReset = true, gru.layout1 = true, gru.type = ElemType::F32;
  vs.push_back({"gru lbr=1 H128 f32", gru});
  RecurrenceSpec rnn = spec(RecurrentCell::Rnn, 512, ElemType::F32, 1, 2, 8);
  rnn.writeY = false;
  rnn.acts[0][0] = {RecurrentAct::Relu, 0, 0};
  vs.push_back({"rnn H512 f32", rnn});
  vs.push_back({"rnn H16 f16", spec(RecurrentCell::Rnn, 16, ElemType::F16, 2, 3, 4)});
  for (const Variant &v : vs) {
    SCOPED_TRACE(v.name);
    RecurrencePlan p = planRecurrence(v.s, h100);
    KernelLaunch k = emitRecurrence(v.s, p);
    EXPECT_LE(k.sharedBytes, uint32_t(h100.maxSharedPerBlock));
    CompileOptions o;
    o.ptxasVerbose = true;
    CompileOutput out = compileKernel(k.source, k.entry, "sm_90", o);
    ASSERT_TRUE(out.ok()) << out.error << "\n" << k.source;
    EXPECT_NE(out.log.find(" 0 bytes spill stores"), std::string::npos) << out.log;
    std::printf("[recurrence] %-32s %s; %d registers/thread, grid %u x %u threads\n", v.name, p.describe().c_str(),
                registersOf(out.log), k.grid[0], k.block[0]);
  }
}

}  // namespace
}  // namespace kiln::codegen

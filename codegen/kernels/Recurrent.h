// The recurrence of an LSTM, GRU or RNN layer as one persistent kernel (kiln.recurrence: the
// input projection XP = X·Wᵀ + bias of every step is already computed by a matrix product).
//
// One launch per layer: both directions and every batch chunk run side by side. The blocks of a
// (direction, batch chunk) form a thread-block cluster of `cluster` CTAs (sm_90; 1 elsewhere); CTA
// r owns hidden units [r·H/C, (r+1)·H/C) and the G gate rows of R that compute them, resident in
// its shared memory (or, when they do not fit even split 8 ways, read from global memory / L2
// each step). Per time step each CTA computes its gates' h·Rᵀ — on tensor cores (mma.sync
// m16n8k16, half operands, fp32 sums) for fp16/bf16 with H a multiple of 16, else with fp32 FMAs
// —, adds XP (+ RB), applies clip and the activations, updates its slice of the state (kept in
// fp32 for every storage type: c in fp32, and h in fp32 for the gate arithmetic; the copy that
// feeds the next product is rounded to the operand type), writes Y, and stores its new h slice
// into every CTA of the cluster (distributed shared memory), then the cluster synchronises (one
// barrier per step; GRU with linear_before_reset = 0 needs a second one for r ⊙ h). Rows beyond
// their sequence_lens keep their state and write zeros to Y; lengths are clamped to [0, T].
//
// Parameters (device pointers, in order): XP, R, then RB, sequence_lens, initial_h, initial_c, P
// where `has*` says so, then Y, Y_h, Y_c where `write*` says so. Layouts as ONNX's `layout`
// attribute: 0: XP [T, B, D·G·H], Y [T, D, B, H], states [D, B, H]; 1: XP [B, T, D·G·H],
// Y [B, T, D, H], states [B, D, H]. R [D, G·H, H], RB [D, G·H], P [D, 3H].
#pragma once

#include "codegen/KernelSpec.h"
#include "compiler/target/GpuTarget.h"
#include "compiler/target/Recurrent.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::codegen {

using RecurrentCell = target::RnnCell;
using RecurrentAct = target::RnnActKind;
struct RecurrentActivation {
  RecurrentAct kind = RecurrentAct::Sigmoid;
  float alpha = 0, beta = 0;
};

struct RecurrenceSpec {
  RecurrentCell cell = RecurrentCell::Lstm;
  int64_t T = 1, B = 1, H = 1, D = 1;  // steps, batch, hidden size, directions (1 or 2)
  bool reverse[2] = {false, true};     // per direction
  bool layout1 = false;
  ElemType type = ElemType::F32;   // XP, R, RB, states, P and outputs (F32, F16, BF16)
  RecurrentActivation acts[2][3];  // per direction: LSTM f, g, h; GRU f, g; RNN f
  float clip = -1;                 // <= 0: none
  bool inputForget = false, linearBeforeReset = false;
  bool hasRB = false, hasSeqLens = false, seqLensI64 = false, hasH0 = false, hasC0 = false, hasP = false;
  bool writeY = true, writeYh = false, writeYc = false;
};

// How a recurrence runs on a target: chosen by planRecurrence, overridable for tests.
struct RecurrencePlan {
  int cluster = 1;              // CTAs per (direction, batch chunk), sharing the hidden units
  int64_t batchChunk = 16;      // batch rows per cluster
  bool tensorCores = false;     // mma.sync for h·Rᵀ (fp16/bf16, H % 16 == 0)
  bool weightsInShared = true;  // R slice resident in shared memory
  int threads = 256;
  uint32_t sharedBytes = 0;      // dynamic shared memory per CTA
  std::string describe() const;  // "cluster 8, 16 rows, tensor cores, R in shared memory (97 KiB)"
};

// The plan for `s` on `t`: tensor cores where they apply; the smallest cluster (1, 2, 4, 8; >1
// needs sm_90) whose CTAs hold their R slice in shared memory with at most 128 gate columns each,
// else the smallest that holds it at all, else R from global memory with the largest cluster.
// Throws std::invalid_argument for specs it cannot run (cell/operand mismatches).
RecurrencePlan planRecurrence(const RecurrenceSpec &s, const target::GpuTarget &t);
// Shared memory a plan needs (the plan's sharedBytes is this).
uint32_t recurrenceSharedBytes(const RecurrenceSpec &s, const RecurrencePlan &p);

// The kernel for `s` run as `p` (grid D · ceil(B / batchChunk) · cluster blocks).
KernelLaunch emitRecurrence(const RecurrenceSpec &s, const RecurrencePlan &p);

}  // namespace kiln::codegen

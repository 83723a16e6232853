// kiln IR (after the compile pipeline) → engine file: one kernel launch per kernel region
// (kiln.fused) or remaining op, arena offsets from the memory planner, weights packed 64-byte
// aligned, kernels compiled with NVRTC (parallel, de-duplicated, cached), the result written in
// the runtime's format.
#pragma once

#include "codegen/nvrtc/CompileCache.h"
#include "compiler/knobs/Knob.h"
#include "compiler/target/GpuTarget.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace kiln::codegen {

struct BuildOptions {
  target::GpuTarget target;  // the GPU (parsed --arch, or the device); its arch is recorded in the engine
  knobs::Route route;        // codegen's knobs (tiles, pipeline depth, CUDA graphs); recorded in the engine
  PipelineOptions pipeline;  // int8/fp8 calibration (its hash is recorded in the engine), fp16 range check, I/O type
  CompileCacheOptions cache;
  unsigned jobs = 0;            // NVRTC workers; 0: all cores
  bool launchPlanOnly = false;  // lower and place, but compile no kernel: BuildResult::launchPlan
  std::function<void(size_t done, size_t total)> progress;
  // Called as each phase of buildModel ends ("import", "passes", "codegen", "kernels").
  std::function<void(const std::string &phase, double seconds)> onPhase;
  bool passTiming = false;  // buildModel: MLIR's per-pass timing report (to stderr)
};

struct BuildStats {
  size_t launches = 0, uniqueKernels = 0, cacheHits = 0, compiled = 0;
  uint64_t arenaBytes = 0, weightsBytes = 0;
  double compileSeconds = 0;
  std::string arch;  // the engine's: the target's, or its arch-specific variant (sm_90a) if a kernel is
};

struct BuildResult {
  std::vector<uint8_t> engine;
  std::string error;       // non-empty on failure: every op without a kernel, or the compile errors
  std::string launchPlan;  // BuildOptions::launchPlanOnly: one line per launch (kernel, grid, buffers)
  BuildStats stats;
  // Where each constant starts in the weights (placement order): engines of one model merged
  // into one (dynamic-shape specialisations) share the constants they have in common.
  std::vector<uint64_t> weightStarts;
};

BuildResult buildEngine(mlir::func::FuncOp f, const BuildOptions &options);

}  // namespace kiln::codegen

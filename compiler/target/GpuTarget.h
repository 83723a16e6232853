// The GPU a build is for: parsed once from `--arch` (or read from the device), then handed to the
// pass pipeline and to code generation, which ask it what the GPU can run instead of testing
// architecture numbers themselves. Plain C++ (no MLIR, no CUDA), so passes, emitters and tools
// all use it.
//
//   std::string error;
//   auto t = GpuTarget::parse("sm_80", error);   // A100 class: 108 SMs, 163 KiB per block
//   if (!t) ... error names the architectures kiln knows
//   if (!t->has(Feature::MmaHalf)) ...           // no fp16/bf16 tensor-core kernels (sm_75)
//
// A target parsed from a name assumes the reference part of that architecture for what only a
// device would tell (the SM count, shared memory per block): sm_90 is an H100/H200 with 132 SMs.
// Those numbers steer heuristics (tile sizes, split work), never correctness.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace kiln::target {

// What kiln's kernels need from a GPU, each with the first architecture that has it.
enum class Feature {
  MmaHalf,   // mma.sync m16n8k16 on fp16/bf16, cp.async, bf16 conversions (sm_80)
  MmaInt8,   // mma.sync m16n8k32 on int8 (sm_80)
  Fp8,       // e4m3 storage and conversions, fp8 tensor-core products (sm_89)
  Tma,       // the tensor memory accelerator (sm_90)
  Clusters,  // thread-block clusters, distributed shared memory (sm_90)
  Wgmma,     // warpgroup mma, setmaxnreg (sm_90 only: kernels that use them compile for sm_90a)
};
const char *featureName(Feature f);  // "fp16/bf16 tensor-core products (mma.sync, cp.async)", ...

// An architecture's arch-specific variant: "sm_90" → "sm_90a" (names with a suffix unchanged).
std::string archSpecificName(const std::string &arch);

struct GpuTarget {
  std::string arch = "sm_90";      // NVRTC's name: sm_<sm>, optionally with an 'a' or 'f' suffix
  int sm = 90;                     // compute capability major * 10 + minor
  bool archSpecific = false;       // sm_90a: runs on exactly this sm only
  int smCount = 132;               // streaming multiprocessors
  int maxSharedPerBlock = 232448;  // bytes of dynamic shared memory one block may opt into
  // The reference part's datasheet dense fp16 tensor-core rate (fp32 accumulation) and memory
  // bandwidth: cost estimates that weigh a product against a memory pass (which tactic runs a
  // product whose epilogue cuBLASLt cannot take), never correctness. A device's target takes its
  // architecture's reference numbers.
  double halfTflops = 989;
  double memoryGBps = 3350;
  std::string part = "H100/H200";  // the reference part, or the device's name
  bool fromDevice = false;

  // The target named `arch` ("sm_90", "sm_90a", "sm_121"), or nullopt with `error` listing the
  // known architectures.
  static std::optional<GpuTarget> parse(const std::string &arch, std::string &error);
  // A device's own numbers (kiln compile without --arch on a GPU host).
  static GpuTarget fromDeviceProperties(int major, int minor, int smCount, int maxSharedPerBlock,
                                        const std::string &name);
  // sm_90: every architecture kiln generates code for.
  static std::vector<std::string> knownArchitectures();

  bool has(Feature f) const;
  // Empty when the target has `f`, else "<feature> needs sm_XX or newer; the target is sm_YY".
  std::string missing(Feature f) const;
  // "sm_90 (H100/H200: 132 SMs, 227 KiB shared memory per block)"
  std::string describe() const;
};

}  // namespace kiln::target

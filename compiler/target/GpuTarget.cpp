#include "compiler/target/GpuTarget.h"

#include <cctype>

namespace kiln::target {

namespace {

struct Known {
  int sm;
  int smCount;
  int maxSharedPerBlock;
  const char *part;
  double halfTflops, memoryGBps;
};

// The reference part of each architecture NVRTC 13 compiles for (datasheet SM counts, dense fp16
// tensor rates with fp32 accumulation and memory bandwidths; the CUDA programming guide's
// per-block shared memory limits).
constexpr Known kKnown[] = {
    {75, 40, 65536, "Tesla T4", 65, 320},
    {80, 108, 166912, "A100", 312, 2039},
    {86, 84, 101376, "RTX 3090 / A40", 75, 696},
    {87, 16, 166912, "Jetson AGX Orin", 43, 205},
    {89, 128, 101376, "RTX 4090 / L40", 181, 864},
    {90, 132, 232448, "H100/H200", 989, 3350},
    {100, 148, 232448, "B200", 2250, 8000},
    {103, 148, 232448, "B300", 2250, 8000},
    {110, 20, 232448, "Jetson Thor", 250, 273},
    {120, 170, 101376, "RTX 5090", 105, 1792},
    {121, 48, 101376, "DGX Spark (GB10)", 125, 273},
};

const Known *knownArch(int sm) {
  for (const Known &k : kKnown)
    if (k.sm == sm) return &k;
  return nullptr;
}

int firstSm(Feature f) {
  switch (f) {
    case Feature::MmaHalf:
    case Feature::MmaInt8: return 80;
    case Feature::Fp8: return 89;
    case Feature::Tma:
    case Feature::Clusters:
    case Feature::Wgmma: return 90;
  }
  return 0;
}

}  // namespace

const char *featureName(Feature f) {
  switch (f) {
    case Feature::MmaHalf: return "fp16/bf16 tensor-core code (mma.sync m16n8k16, cp.async)";
    case Feature::MmaInt8: return "int8 tensor-core code (mma.sync m16n8k32)";
    case Feature::Fp8: return "fp8 e4m3 (storage, conversions and products)";
    case Feature::Tma: return "the tensor memory accelerator";
    case Feature::Clusters: return "thread-block clusters (distributed shared memory)";
    case Feature::Wgmma: return "warpgroup mma (wgmma)";
  }
  return "?";
}

std::string archSpecificName(const std::string &arch) {
  return !arch.empty() && std::isdigit(static_cast<unsigned char>(arch.back())) ? arch + "a" : arch;
}

std::vector<std::string> GpuTarget::knownArchitectures() {
  std::vector<std::string> r;
  for (const Known &k : kKnown) r.push_back("sm_" + std::to_string(k.sm));
  return r;
}

std::optional<GpuTarget> GpuTarget::parse(const std::string &arch, std::string &error) {
  auto known = [] {
    std::string s;
    for (const std::string &a : knownArchitectures()) s += (s.empty() ? "" : ", ") + a;
    return s + " (an 'a' suffix, e.g. sm_90a, for arch-specific code)";
  };
  size_t digits = 3;
  while (digits < arch.size() && std::isdigit(static_cast<unsigned char>(arch[digits]))) ++digits;
  const bool suffix = digits + 1 == arch.size() && (arch.back() == 'a' || arch.back() == 'f');
  if (arch.compare(0, 3, "sm_") != 0 || digits == 3 || digits > 6 || (digits != arch.size() && !suffix)) {
    error = "unknown GPU architecture '" + arch + "': expected one of " + known();
    return std::nullopt;
  }
  const int sm = std::stoi(arch.substr(3, digits - 3));
  const Known *k = knownArch(sm);
  if (!k) {
    error = "kiln generates no code for " + arch + ": expected one of " + known();
    return std::nullopt;
  }
  GpuTarget t;
  t.arch = arch, t.sm = sm, t.archSpecific = suffix && arch.back() == 'a';
  t.smCount = k->smCount, t.maxSharedPerBlock = k->maxSharedPerBlock, t.part = k->part;
  t.halfTflops = k->halfTflops, t.memoryGBps = k->memoryGBps;
  return t;
}

GpuTarget GpuTarget::fromDeviceProperties(int major, int minor, int smCount, int maxSharedPerBlock,
                                          const std::string &name) {
  GpuTarget t;
  t.sm = major * 10 + minor;
  t.arch = "sm_" + std::to_string(t.sm);
  t.smCount = smCount;
  t.maxSharedPerBlock = maxSharedPerBlock;
  t.part = name;
  t.fromDevice = true;
  if (const Known *k = knownArch(t.sm)) t.halfTflops = k->halfTflops, t.memoryGBps = k->memoryGBps;
  return t;
}

bool GpuTarget::has(Feature f) const {
  if (f == Feature::Wgmma) return sm == 90;
  return sm >= firstSm(f);
}

std::string GpuTarget::missing(Feature f) const {
  if (has(f)) return "";
  if (f == Feature::Wgmma)
    return std::string(featureName(f)) + " needs sm_90 (no other GPU has it); the target is " + arch;
  return std::string(featureName(f)) + " needs sm_" + std::to_string(firstSm(f)) + " or newer; the target is " + arch;
}

std::string GpuTarget::describe() const {
  return arch + " (" + part + ": " + std::to_string(smCount) + " SMs, " + std::to_string(maxSharedPerBlock / 1024) +
         " KiB shared memory per block" + (fromDevice ? ", this device" : "") + ")";
}

}  // namespace kiln::target

// The engine builder: sequences the lowering (Lowering.h) — I/O table, one lowering per op by its
// class, buffers, kernels through NVRTC — and writes the result in the runtime's format.
#include "codegen/lowering/EngineBuilder.h"

#include "codegen/lowering/Lowering.h"
#include "codegen/nvrtc/CompilePool.h"
#include "compiler/analysis/Plan.h"
#include "compiler/knobs/Knob.h"
#include "compiler/quant/Calibration.h"
#include "compiler/support/Files.h"
#include "passes/Passes.h"
#include "runtime/format/EngineFormat.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/TypeSwitch.h"

#include <fstream>
#include <iterator>

using namespace mlir;

namespace kiln::codegen {

KILN_KNOB(kGemmSearch, {"runtime.gemm_search",
                        {"auto", "on", "off"},
                        "auto",
                        "When a context is created, time cuBLASLt's eight best-ranked algorithms for each distinct "
                        "library product (scratch operands, a warm-up and 5 runs each) and keep the fastest, instead "
                        "of the heuristic's first (recorded in the engine, done by the runtime); auto: on for "
                        "engines with fp32/TF32 library products, off for half precision",
                        knobs::Tier::Fast,
                        "codegen/lowering/EngineBuilder.cpp"});
KILN_KNOB(kCudaGraph, {"runtime.cuda_graph",
                       {"on", "off"},
                       "on",
                       "Replay an engine's launches as one CUDA graph (recorded in the engine, read by the runtime)",
                       knobs::Tier::Fast,
                       "codegen/lowering/EngineBuilder.cpp"});

void Lowering::lowerOp(Operation *op) {
  Value out = op->getResult(0);
  llvm::TypeSwitch<Operation *>(op)
      .Case<MatMulOp, TransposedMatMulOp, QuantizedMatMulOp, ConvOp, ConvNhwcOp, QuantizedConvOp, QuantizedConvNhwcOp>(
          [&](Operation *) { lowerProduct(op, {}, out); })
      .Case([&](GemmOp g) { lowerGemm(g); })
      .Case([&](AttentionOp a) { lowerAttention(a); })
      .Case([&](StridedViewOp) {  // (made for attention, product operands and elementwise inputs only)
        throw std::invalid_argument("a strided view read by another op than attention, a matrix product or an "
                                    "elementwise kernel has no kernel");
      })
      .Default([&](Operation *) {
        if (isFusableElementwise(op)) return lowerElementwise({op}, out);
        if (!lowerPooling(op) && !lowerReduction(op) && !lowerDataMovement(op) && !lowerIndexing(op) &&
            !lowerVision(op) && !lowerRecurrent(op))
          throw std::invalid_argument("no GPU kernel for this op yet");
      });
}

namespace {

// The launch plan as text (kiln compile --emit=launch-plan): one line per launch with its kernel
// (or library call), grid, and the buffer of each argument ("tmap:" before a tensor map's). For
// lowering tests without NVRTC.
std::string launchPlanText(const rt::EngineDesc &d) {
  auto buffer = [&](const rt::BufferRef &b) {
    std::string s = b.space == rt::BufferRef::Space::Arena     ? "arena"
                    : b.space == rt::BufferRef::Space::Weights ? "weights"
                                                               : "io:" + d.io[size_t(b.io)].name;
    return s + "+" + std::to_string(b.offset);
  };
  std::string out = "arch " + d.arch + " route '" + d.route + "' arena " + std::to_string(d.arenaBytes) + " weights " +
                    std::to_string(d.weights.size()) + (d.cudaGraph ? " graph" : "") + "\n";
  for (size_t i = 0; i < d.launches.size(); ++i) {
    const rt::Launch &l = d.launches[i];
    out += "launch " + std::to_string(i) + " '" + l.node + "': ";
    if (l.kind == rt::Launch::Kind::Copy) {
      out += "copy " + std::to_string(l.bytes) + " bytes " + buffer(l.src) + " -> " + buffer(l.dst);
    } else if (l.kind == rt::Launch::Kind::Gemm) {
      const rt::GemmCall &g = l.gemm;
      out += "cublaslt m=" + std::to_string(g.m) + " n=" + std::to_string(g.n) + " k=" + std::to_string(g.k) +
             " batch=" + std::to_string(g.batch) + " a=" + buffer(g.a) + " b=" + buffer(g.b) + " d=" + buffer(g.d);
      if (g.epilogue & rt::GemmCall::Bias) out += " bias=" + buffer(g.bias);
      if (g.beta != 0.f) out += " c=" + buffer(g.c);
      if (g.epilogue & rt::GemmCall::Relu) out += " relu";
    } else {
      out += d.kernels[size_t(l.kernel)].entry + " grid=" + std::to_string(l.grid[0]) + "x" +
             std::to_string(l.grid[1]) + "x" + std::to_string(l.grid[2]) + " block=" + std::to_string(l.block[0]) +
             " smem=" + std::to_string(l.sharedBytes);
      for (const rt::LaunchArg &a : l.args)
        if (const rt::BufferRef *b = a.bufferRef())
          out += std::string(a.kind == rt::LaunchArg::Kind::TensorMap ? " tmap:" : " ") + buffer(*b);
    }
    out += "\n";
  }
  return out;
}

}  // namespace

BuildResult Lowering::run() {
  BuildResult result;
  desc_.kilnVersion = KILN_VERSION;
  desc_.arch = opts_.target.arch;
  desc_.sm = opts_.target.sm;
  desc_.route = opts_.route.canonical();
  desc_.cudaGraph = opts_.route.get(kCudaGraph) == "on";
  llvm::DenseMap<Value, int32_t> writesOutput;  // compute results written straight into an output
  declareIo(writesOutput);

  // Lower every op to launches (collecting every unsupported op before failing).
  std::vector<Operation *> opsInOrder;
  for (Operation &op : f_.getBody().front().without_terminator()) opsInOrder.push_back(&op);
  for (Operation *op : opsInOrder) {
    if (isa<ConstantOp, NoneOp>(op) || isAlias(op)) continue;
    if (auto u = dyn_cast<UnsupportedOp>(op)) {
      errors_.push_back(describeOp(op) + " is not supported: " + u.getReason().str());
      continue;
    }
    try {
      if (std::string why = opts_.target.missing(target::Feature::Fp8); !why.empty())
        for (ValueRange vs : {ValueRange(op->getOperands()), ValueRange(op->getResults())})
          for (Value v : vs)
            if (tensorTypeOf(v.getType()).dtype == ops::DType::F8E4M3) throw std::invalid_argument(why);
      size_t first = launches_.size();
      if (auto f = dyn_cast<FusedOp>(op))
        lowerFused(f);
      else
        lowerOp(op);
      if (launches_.size() > first) launches_[first].flops = uint64_t(opFlops(op));
    } catch (const std::exception &e) {
      Operation *at = op;
      // A region's product, or its first computing op (not a constant it holds).
      if (auto f = dyn_cast<FusedOp>(op)) {
        Operation *product = f.getKind() == FusedKind::Epilogue ? epilogueProduct(f) : nullptr;
        for (Operation &inner : f.getBody().front())
          if (!product && !isa<ConstantOp, NoneOp>(inner)) product = &inner;
        if (product) at = product;
      }
      errors_.push_back(describeOp(at) + (isa<FusedOp>(op) ? " (kernel region)" : "") + ": " + e.what());
    }
  }
  if (!errors_.empty()) {
    result.error = "cannot build:\n";
    for (auto &e : errors_) result.error += "  " + e + "\n";
    return result;
  }
  placeBuffers(writesOutput);

  // The unique kernels: compiled by NVRTC (deduplicated, cached), or only named for a launch plan.
  std::vector<KernelLaunch> kernels;
  std::vector<size_t> kernelIndex(launches_.size(), 0);  // launch → its index among kernel launches
  for (size_t i = 0; i < launches_.size(); ++i)
    if (!launches_[i].library) kernelIndex[i] = kernels.size(), kernels.push_back(launches_[i].kernel);
  std::vector<int32_t> kernelOf(launches_.size(), -1);
  // An engine with arch-specific code (sm_90a) runs on exactly its sm: its arch says so, so the
  // runtime refuses it on other GPUs by name rather than failing to JIT a module.
  if (llvm::any_of(kernels, [](const KernelLaunch &k) { return k.archSpecific; }))
    desc_.arch = target::archSpecificName(desc_.arch);
  CompilePoolResult compiled;
  if (opts_.launchPlanOnly) {
    llvm::StringMap<int32_t> byEntry;
    for (size_t i = 0; i < launches_.size(); ++i) {
      if (launches_[i].library) continue;
      auto [it, added] = byEntry.try_emplace(launches_[i].kernel.entry, int32_t(desc_.kernels.size()));
      if (added) desc_.kernels.push_back({-1, launches_[i].kernel.entry, launches_[i].node});
      kernelOf[i] = it->second;
    }
  } else {
    CompileCache cache(opts_.cache);
    CompilePoolOptions po;
    po.arch = opts_.target.arch;
    po.jobs = opts_.jobs;
    po.progress = opts_.progress;
    CompilePool pool(cache, po);
    compiled = pool.compile(kernels);
    if (!compiled.ok()) {
      result.error = "kernel compilation failed:\n";
      for (auto &e : compiled.errors) result.error += "  " + e + "\n";
      return result;
    }
    for (auto &k : compiled.kernels) {
      rt::ModuleDesc m;
      m.cubin.assign(k.output.cubin.begin(), k.output.cubin.end());
      m.ptx = k.output.ptx;
      while (!m.ptx.empty() && m.ptx.back() == '\0') m.ptx.pop_back();
      std::string node;
      for (size_t i = 0; i < launches_.size(); ++i)
        if (!launches_[i].library && kernelIndex[i] == k.firstLaunch) node = launches_[i].node;
      desc_.kernels.push_back({static_cast<int32_t>(desc_.modules.size()), k.entry, node});
      desc_.modules.push_back(std::move(m));
    }
    for (size_t i = 0; i < launches_.size(); ++i)
      if (!launches_[i].library) kernelOf[i] = static_cast<int32_t>(compiled.kernelOfLaunch[kernelIndex[i]]);
  }
  finishLaunches(kernelOf);
  const std::string gemmSearch = opts_.route.get(kGemmSearch);
  for (const rt::Launch &l : desc_.launches)
    if (l.kind == rt::Launch::Kind::Gemm)
      desc_.gemmSearch = desc_.gemmSearch || gemmSearch == "on" || (gemmSearch == "auto" && l.gemm.abType == 1);
  if (opts_.launchPlanOnly) {
    result.launchPlan = launchPlanText(desc_);
    return result;
  }

  desc_.environment["nvrtc"] = nvrtcVersionString();
  if (!opts_.pipeline.calib.empty()) {  // what the int8/fp8 scales came from
    std::string text, error;
    if (!support::readFile(opts_.pipeline.calib, text, error, "calibration file", quant::kMaxCalibrationBytes)) {
      result.error = error;
      return result;
    }
    desc_.environment["calibration"] = rt::fnv1a64Hex(text.data(), text.size());
    if (!opts_.pipeline.keepFloat.empty()) desc_.environment["keep_float"] = opts_.pipeline.keepFloat;
  }
  if (auto err = rt::checkEngineDesc(desc_); !err.empty()) {
    result.error = "internal error: the engine does not validate: " + err;
    return result;
  }
  result.engine = rt::writeEngine(desc_);
  result.weightStarts = weightStarts_;
  result.stats = {launches_.size(), compiled.kernels.size(), compiled.cacheHits, compiled.compiled,
                  desc_.arenaBytes, desc_.weights.size(),    compiled.seconds,   desc_.arch};
  return result;
}

BuildResult buildEngine(func::FuncOp f, const BuildOptions &options) {
  Lowering l(f, options);
  try {
    return l.run();
  } catch (const std::exception &e) {
    BuildResult r;
    r.error = std::string("internal error while building: ") + e.what();
    return r;
  }
}

}  // namespace kiln::codegen

#include "codegen/lowering/ModelBuild.h"

#include "compiler/ir/KilnDialect.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"

#include <chrono>

namespace kiln::codegen {

ModelBuild lowerModel(const std::string &path, const ImportOptions &importOptions, const knobs::Route &route,
                      mlir::MLIRContext &ctx, const target::GpuTarget &target, const PipelineOptions &options) {
  return lowerModelWith(path, importOptions, ctx,
                        [&](mlir::OpPassManager &pm) { buildCompilePipeline(pm, route.canonical(), target, options); });
}

namespace {

using Clock = std::chrono::steady_clock;

// A phase's time: recorded in `m`, reported to the caller.
void recordPhase(ModelBuild &m, const BuildOptions &options, const char *name, double seconds) {
  m.phases.push_back({name, seconds});
  if (options.onPhase) options.onPhase(name, seconds);
}

// Ends a phase begun at `t0` (recordPhase); returns the time now.
Clock::time_point endPhase(ModelBuild &m, const BuildOptions &options, const char *name, Clock::time_point t0) {
  Clock::time_point now = Clock::now();
  recordPhase(m, options, name, std::chrono::duration<double>(now - t0).count());
  return now;
}

}  // namespace

ModelBuild lowerModelWith(const std::string &path, const ImportOptions &importOptions, mlir::MLIRContext &ctx,
                          const std::function<void(mlir::OpPassManager &)> &pipeline, const BuildOptions &options) {
  ModelBuild m;
  Clock::time_point t = Clock::now();
  m.import = importModelFile(path, ctx, importOptions);
  t = endPhase(m, options, "import", t);
  if (!m.import.error.empty()) {
    m.error = m.import.error;
    return m;
  }
  if (!m.import.unsupported.empty()) {
    m.error = "unsupported ops:\n";
    for (auto &u : m.import.unsupported) m.error += "  " + u + "\n";
    return m;
  }
  std::string errors;
  mlir::ScopedDiagnosticHandler handler(&ctx, [&](mlir::Diagnostic &d) {
    std::string s;
    llvm::raw_string_ostream os(s);
    os << d;
    if (d.getSeverity() == mlir::DiagnosticSeverity::Error)
      errors += os.str() + "\n";
    else
      m.remarks.push_back(os.str());
    return mlir::success();
  });
  mlir::PassManager pm(&ctx);
  pipeline(pm);
  if (options.passTiming) pm.enableTiming();
  if (mlir::failed(pm.run(*m.import.module))) m.error = errors.empty() ? "the compile pipeline failed" : errors;
  endPhase(m, options, "passes", t);
  return m;
}

std::vector<knobs::NodeRef> modelNodes(mlir::ModuleOp module) {
  std::vector<knobs::NodeRef> nodes;
  module.walk([&](ShapeInferenceOpInterface op) {
    std::string name = nodeName(op);
    if (!name.empty()) nodes.push_back({name, op.getOnnxOpType().str()});
  });
  return nodes;
}

ModelBuild buildModel(const std::string &path, const ImportOptions &importOptions, const BuildOptions &options,
                      mlir::MLIRContext &ctx) {
  auto t0 = Clock::now();
  ModelBuild m = lowerModelWith(
      path, importOptions, ctx,
      [&](mlir::OpPassManager &pm) {
        buildCompilePipeline(pm, options.route.canonical(), options.target, options.pipeline);
      },
      options);
  if (m.ok()) {
    auto f = (*m.import.module).lookupSymbol<mlir::func::FuncOp>("main");
    Clock::time_point t = Clock::now();
    m.engine = buildEngine(f, options);
    if (!m.engine.error.empty()) m.error = m.engine.error;
    // (NVRTC runs inside buildEngine: its own time is the kernels phase, the rest is codegen.)
    double all = std::chrono::duration<double>(Clock::now() - t).count(), nvrtc = m.engine.stats.compileSeconds;
    recordPhase(m, options, "codegen", std::max(all - nvrtc, 0.0));
    recordPhase(m, options, "kernels", nvrtc);
  }
  m.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return m;
}

}  // namespace kiln::codegen

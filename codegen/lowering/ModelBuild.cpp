#include "codegen/lowering/ModelBuild.h"

#include "compiler/ir/KilnDialect.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"

#include <chrono>

namespace kiln::codegen {

ModelBuild lowerModel(const std::string &path, const ImportOptions &importOptions, const knobs::Route &route,
                      mlir::MLIRContext &ctx, const target::GpuTarget &target, const QuantOptions &quant) {
  return lowerModelWith(path, importOptions, ctx,
                        [&](mlir::OpPassManager &pm) { buildCompilePipeline(pm, route.canonical(), target, quant); });
}

ModelBuild lowerModelWith(const std::string &path, const ImportOptions &importOptions, mlir::MLIRContext &ctx,
                          const std::function<void(mlir::OpPassManager &)> &pipeline) {
  ModelBuild m;
  m.import = importModelFile(path, ctx, importOptions);
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
  if (mlir::failed(pm.run(*m.import.module))) m.error = errors.empty() ? "the compile pipeline failed" : errors;
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
  auto t0 = std::chrono::steady_clock::now();
  ModelBuild m = lowerModel(path, importOptions, options.route, ctx, options.target, options.quant);
  if (m.ok()) {
    auto f = (*m.import.module).lookupSymbol<mlir::func::FuncOp>("main");
    m.engine = buildEngine(f, options);
    if (!m.engine.error.empty()) m.error = m.engine.error;
  }
  m.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return m;
}

}  // namespace kiln::codegen

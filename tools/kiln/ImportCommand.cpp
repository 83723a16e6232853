// `kiln import model.onnx [--route R]`: print the imported kiln IR, or with --route the IR that
// code generation receives for that build route (for importer tests and debugging).
#include "codegen/lowering/ModelBuild.h"
#include "tools/kiln/Commands.h"
#include "tools/kiln/ModelLoading.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/OperationSupport.h"
#include "llvm/Support/raw_ostream.h"

#include <iostream>

namespace kiln::cli {

Runner addImportCommand(CLI::App &app) {
  auto *cmd = app.add_subcommand("import", "Import an ONNX model and print its kiln IR");
  auto opts = std::make_shared<ModelOptions>();
  auto noFold = std::make_shared<bool>(false);
  auto debugInfo = std::make_shared<bool>(false);
  auto elide = std::make_shared<int64_t>(0);
  auto route = std::make_shared<std::string>();
  auto routeSet = std::make_shared<bool>(false);
  opts->add(*cmd);
  cmd->add_option("--route", *route, "Run the compile pipeline for this build route (\"\" for the default route)")
      ->each([routeSet](const std::string &) { *routeSet = true; });
  cmd->add_flag("--no-cleanup", *noFold,
                "Print the IR as imported (folded while importing), before the cleanup pipeline");
  cmd->add_flag("--locations", *debugInfo, "Print node names (locations)");
  cmd->add_option("--elide-constants", *elide, "Print constants above this many elements as elided (0: print all)");
  return [=]() -> int {
    if (!*cmd) return -1;
    mlir::MLIRContext ctx;
    LoadedModel m;
    if (*routeSet) {
      knobs::Route r;
      std::string err;
      ImportOptions io;
      if (!parseRoute(*route, "", r, err) || !(err = opts->importOptions(io)).empty()) {
        std::cerr << "kiln: error: " << err << "\n";
        return 2;
      }
      codegen::ModelBuild b = codegen::lowerModel(opts->model, io, r, ctx);
      for (auto &w : b.import.warnings) warning(w);
      for (auto &n : b.remarks) note(n);
      if (!b.ok()) {
        std::cerr << "kiln: error: " << opts->model << ": " << b.error << "\n";
        return 2;
      }
      m.import = std::move(b.import);
    } else {
      m = loadModel(*opts, ctx, !*noFold);
      if (!m.ok()) return 2;
    }
    mlir::OpPrintingFlags flags;
    if (*debugInfo) flags.enableDebugInfo(true, false);
    if (*elide > 0) flags.elideLargeElementsAttrs(*elide).elideLargeResourceString(*elide);
    (*m.import.module)->print(llvm::outs(), flags);
    llvm::outs() << "\n";
    return 0;
  };
}

}  // namespace kiln::cli

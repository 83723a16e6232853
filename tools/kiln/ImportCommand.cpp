// `kiln import model.onnx`: print the imported kiln IR (for importer tests and debugging).
#include "tools/kiln/Commands.h"
#include "tools/kiln/ModelLoading.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/OperationSupport.h"
#include "llvm/Support/raw_ostream.h"

namespace kiln::cli {

Runner addImportCommand(CLI::App &app) {
  auto *cmd = app.add_subcommand("import", "Import an ONNX model and print its kiln IR");
  auto opts = std::make_shared<ModelOptions>();
  auto noFold = std::make_shared<bool>(false);
  auto debugInfo = std::make_shared<bool>(false);
  auto elide = std::make_shared<int64_t>(0);
  opts->add(*cmd);
  cmd->add_flag("--no-cleanup", *noFold, "Print the IR as imported (folded while importing), before the cleanup pipeline");
  cmd->add_flag("--locations", *debugInfo, "Print node names (locations)");
  cmd->add_option("--elide-constants", *elide, "Print constants above this many elements as elided (0: print all)");
  return [=]() -> int {
    if (!*cmd) return -1;
    mlir::MLIRContext ctx;
    LoadedModel m = loadModel(*opts, ctx, !*noFold);
    if (!m.ok()) return 2;
    mlir::OpPrintingFlags flags;
    if (*debugInfo) flags.enableDebugInfo(true, false);
    if (*elide > 0) flags.elideLargeElementsAttrs(*elide).elideLargeResourceString(*elide);
    (*m.import.module)->print(llvm::outs(), flags);
    llvm::outs() << "\n";
    return 0;
  };
}

}  // namespace kiln::cli

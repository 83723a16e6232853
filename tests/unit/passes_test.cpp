// Semantic checks of passes: on random inputs (never zeros), the reference evaluator gives the
// same outputs before and after the pass. The inputs are the functions of the pass's lit test.
#include "compiler/eval/Evaluator.h"
#include "compiler/importer/Importer.h"
#include "compiler/ir/TensorConversion.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <sstream>

namespace {

std::vector<kiln::ops::Tensor> randomInputs(mlir::func::FuncOp f, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(0.25, 2.0);
  std::vector<kiln::ops::Tensor> inputs;
  for (mlir::Type t : f.getArgumentTypes()) {
    auto rt = mlir::cast<mlir::RankedTensorType>(t);
    kiln::ops::Tensor x(kiln::dtypeOf(rt.getElementType()), {rt.getShape().begin(), rt.getShape().end()});
    for (int64_t i = 0; i < x.size(); ++i) x.set(i, (rng() % 2 ? 1 : -1) * dist(rng));
    inputs.push_back(std::move(x));
  }
  return inputs;
}

// The `// -----` chunks of a lit test file.
std::vector<std::string> splitInput(const std::string &path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str(), sep = "// -----";
  std::vector<std::string> chunks;
  for (size_t pos = 0;;) {
    size_t next = text.find(sep, pos);
    chunks.push_back(text.substr(pos, next == std::string::npos ? std::string::npos : next - pos));
    if (next == std::string::npos) break;
    pos = next + sep.size();
  }
  return chunks;
}

void expectSameBeforeAndAfter(const std::string &litFile, void (*build)(mlir::OpPassManager &)) {
  mlir::MLIRContext ctx;
  kiln::registerKilnDialects(ctx);
  int functions = 0;
  for (const std::string &chunk : splitInput(std::string(KILN_SOURCE_DIR) + "/tests/lit/" + litFile)) {
    mlir::OwningOpRef<mlir::ModuleOp> before = mlir::parseSourceString<mlir::ModuleOp>(chunk, &ctx);
    ASSERT_TRUE(before) << litFile;
    mlir::OwningOpRef<mlir::ModuleOp> after = before->clone();
    mlir::PassManager pm(&ctx);
    build(pm);
    ASSERT_TRUE(mlir::succeeded(pm.run(*after)));
    for (auto f : before->getOps<mlir::func::FuncOp>()) {
      ++functions;
      auto g = after->lookupSymbol<mlir::func::FuncOp>(f.getSymName());
      for (unsigned seed : {1u, 2u, 3u}) {
        std::vector<kiln::ops::Tensor> in = randomInputs(f, seed), want, got;
        auto e1 = kiln::evaluateFunction(f, in, want);
        ASSERT_FALSE(e1) << *e1;
        auto e2 = kiln::evaluateFunction(g, in, got);
        ASSERT_FALSE(e2) << *e2;
        ASSERT_EQ(want.size(), got.size());
        for (size_t k = 0; k < want.size(); ++k) {
          ASSERT_EQ(want[k].shape, got[k].shape);
          for (int64_t i = 0; i < want[k].size(); ++i)
            ASSERT_EQ(want[k].get(i), got[k].get(i)) << f.getSymName().str() << " output " << k;
        }
      }
    }
  }
  EXPECT_GT(functions, 0);
}

TEST(FoldConstants, PreservesSemantics) {
  expectSameBeforeAndAfter("passes/fold_constants.mlir", kiln::buildImportCleanupPipeline);
}

}  // namespace

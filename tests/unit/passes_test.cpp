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

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
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
    // Floats of both signs away from 0; 8-bit integers (quantized data) over their range; other
    // integers 0/1 (masks, indices).
    bool eightBit = x.dtype == kiln::ops::DType::I8 || x.dtype == kiln::ops::DType::U8;
    for (int64_t i = 0; i < x.size(); ++i)
      x.set(i, x.isFloating() ? (rng() % 2 ? 1 : -1) * dist(rng)
               : eightBit     ? double(int(rng() % 256) - 128)
                              : double(rng() % 2));
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

// Runs the pipeline that `build` adds on every function of a lit file and compares the
// evaluator's outputs before and after on random inputs: bit-exact when `tol` is 0, else
// ‖after − before‖ / ‖before‖ ≤ tol per output (passes that re-round, e.g. to fp16).
void expectSameBeforeAndAfter(const std::string &litFile, const std::function<void(mlir::OpPassManager &)> &build,
                              double tol = 0) {
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
          ASSERT_EQ(want[k].dtype, got[k].dtype);
          if (tol == 0) {
            for (int64_t i = 0; i < want[k].size(); ++i) {
              if (!(std::isnan(want[k].get(i)) && std::isnan(got[k].get(i)))) {
                ASSERT_EQ(want[k].get(i), got[k].get(i)) << f.getSymName().str() << " output " << k;
              }
            }
            continue;
          }
          double num = 0, den = 0;
          for (int64_t i = 0; i < want[k].size(); ++i) {
            double d = got[k].get(i) - want[k].get(i);
            ASSERT_FALSE(std::isnan(got[k].get(i))) << f.getSymName().str() << " output " << k;
            num += d * d, den += want[k].get(i) * want[k].get(i);
          }
          EXPECT_LE(std::sqrt(num / std::max(den, 1e-300)), tol) << f.getSymName().str() << " output " << k;
        }
      }
    }
  }
  EXPECT_GT(functions, 0);
}

template <class P> std::function<void(mlir::OpPassManager &)> nested(P make) {
  return [make](mlir::OpPassManager &pm) { pm.addNestedPass<mlir::func::FuncOp>(make()); };
}

TEST(FoldConstants, PreservesSemantics) {
  expectSameBeforeAndAfter("passes/fold_constants.mlir", kiln::buildImportCleanupPipeline);
}

// Folding BN into conv weights re-rounds them to f32 once: equal up to f32 rounding.
TEST(FoldBatchNorm, PreservesSemantics) {
  expectSameBeforeAndAfter("passes/fold_batchnorm.mlir", nested([] { return kiln::createFoldBatchNorm(); }), 1e-6);
}

// One LayerNorm of the same statistics in float32 (d * inv for d / std): float32 rounding.
TEST(FuseLayerNorm, PreservesSemantics) {
  expectSameBeforeAndAfter("passes/fuse_layernorm.mlir", nested([] { return kiln::createFuseLayerNorm(); }), 1e-6);
}

TEST(CanonicalizeLinear, PreservesSemantics) {
  expectSameBeforeAndAfter("passes/canonicalize_linear.mlir",
                           nested([] { return kiln::createCanonicalizeLinear({"gemm.split=on"}); }), 1e-6);
}

// fp16 storage: within fp16 rounding of the fp32 graph; bf16 within bf16's.
TEST(Precision, Fp16AndBf16StayCloseToFp32) {
  expectSameBeforeAndAfter("passes/precision.mlir", nested([] { return kiln::createPrecision({"precision=fp16"}); }),
                           2e-3);
  expectSameBeforeAndAfter("passes/precision.mlir", nested([] { return kiln::createPrecision({"precision=bf16"}); }),
                           1.5e-2);
  expectSameBeforeAndAfter("passes/precision.mlir",
                           nested([] { return kiln::createPrecision({"precision=fp16;node.fc2.precision=fp32"}); }),
                           2e-3);
}

// Layout changes only where values live: bit-exact.
TEST(Layout, PreservesSemantics) {
  expectSameBeforeAndAfter("passes/layout.mlir",
                           nested([] { return kiln::createLayout({"layout.conv=nhwc;conv.algo=implicit"}); }));
}

// Convolutions as patch matrices times weights: the same sums in another order.
TEST(Layout, Im2colPreservesSemantics) {
  expectSameBeforeAndAfter("passes/layout.mlir",
                           nested([] { return kiln::createLayout({"layout.conv=nhwc;conv.algo=im2col"}); }), 1e-6);
}

TEST(LowerEinsum, PreservesSemantics) {
  expectSameBeforeAndAfter("passes/lower_einsum.mlir", nested([] { return kiln::createLowerEinsum(); }), 1e-6);
}

TEST(SplitRecurrent, PreservesSemantics) {
  expectSameBeforeAndAfter("passes/split_recurrent.mlir", nested([] { return kiln::createSplitRecurrent(); }),
                           1e-6);  // (XP is rounded to f32)
}

// A tree of Sums adds in another order (float32 rounding); Max/Min: exact.
TEST(SplitVariadic, PreservesSemantics) {
  expectSameBeforeAndAfter("passes/split_variadic.mlir", nested([] { return kiln::createSplitVariadic(); }), 1e-6);
}

TEST(SimplifyTransposes, PreservesSemantics) {
  expectSameBeforeAndAfter("passes/simplify_transposes.mlir", nested([] { return kiln::createSimplifyTransposes(); }));
}

// One attention computed in float32 and rounded once, against fp16/bf16 ops rounded one by one
// (a wrong permutation, scale or mask is off by O(1)).
TEST(FuseAttention, PreservesSemantics) {
  expectSameBeforeAndAfter("passes/fuse_attention.mlir", nested([] { return kiln::createFuseAttention(); }), 1.5e-2);
}

// A strided view reads the same elements the copies made: bit-exact.
TEST(ElementwiseViews, PreservesSemantics) {
  expectSameBeforeAndAfter("passes/elementwise_views.mlir", nested([] { return kiln::createElementwiseViews(); }));
}

// Products reading their operands through views: the same elements, the same sums (bit-exact).
TEST(ProductViews, PreservesSemantics) {
  expectSameBeforeAndAfter("passes/product_views.mlir", nested([] { return kiln::createProductViews(); }));
}

// Kernel regions evaluate their bodies op by op: bit-exact.
TEST(Fusion, PreservesSemantics) {
  expectSameBeforeAndAfter("passes/fusion.mlir", [](mlir::OpPassManager &pm) {
    pm.addNestedPass<mlir::func::FuncOp>(kiln::createFuseElementwise());
    pm.addNestedPass<mlir::func::FuncOp>(kiln::createFuseEpilogue());
  });
}

// The whole compile pipeline on the layout test (precision, layout, fusion together).
TEST(CompilePipeline, Fp16CloseToFp32) {
  expectSameBeforeAndAfter(
      "passes/layout.mlir", [](mlir::OpPassManager &pm) { kiln::buildCompilePipeline(pm, "precision=fp16"); }, 2e-3);
  expectSameBeforeAndAfter(
      "passes/fusion.mlir", [](mlir::OpPassManager &pm) { kiln::buildCompilePipeline(pm, ""); }, 1e-6);
}

// QDQ → QuantizedMatMul: integer sums scaled once per column instead of dequantized operands
// multiplied in double: equal up to float32 rounding.
TEST(LowerQuantizedOps, PreservesSemantics) {
  // DynamicQuantizeLinear's ops and the integer products' float forms give the same values (up to
  // float rounding of the moved scales); the Q/DQ forms of requantizing ops may land a value on a
  // rounding boundary one 8-bit step away.
  expectSameBeforeAndAfter("passes/lower_quantized_ops.mlir", nested([] { return kiln::createLowerQuantizedOps(); }),
                           1e-2);
}

// Partial results of chunks, then of the partials: sums in another order (float32 rounding).
TEST(SplitReductions, PreservesSemantics) {
  expectSameBeforeAndAfter("passes/split_reductions.mlir", nested([] { return kiln::createSplitReductions(); }), 1e-6);
}

TEST(LowerQdq, PreservesSemantics) {
  expectSameBeforeAndAfter("passes/lower_qdq.mlir", nested([] { return kiln::createLowerQdq(); }), 1e-6);
}

// Moving DequantizeLinear below layout-only ops and cancelling Q(DQ(x)) changes no value.
TEST(PropagateQdq, PreservesSemanticsExactly) {
  expectSameBeforeAndAfter("passes/propagate_qdq.mlir", nested([] { return kiln::createPropagateQdq(); }));
}

// int8 / fp8 QDQ on the lit test's @matmul: the evaluator computes exactly the quantized
// arithmetic (activation rounded to int8 steps of amax/127, half to even, or to e4m3 values of
// scale amax/448; weights per column likewise), and it stays within quantization error of the
// fp32 product.
void expectQuantizedArithmetic(const char *precision, double qmax, double (*quantize)(double), double maxRelL2) {
  SCOPED_TRACE(precision);
  mlir::MLIRContext ctx;
  kiln::registerKilnDialects(ctx);
  std::string chunk = splitInput(std::string(KILN_SOURCE_DIR) + "/tests/lit/passes/quantize_products.mlir")[0];
  mlir::OwningOpRef<mlir::ModuleOp> before = mlir::parseSourceString<mlir::ModuleOp>(chunk, &ctx);
  ASSERT_TRUE(before);
  mlir::OwningOpRef<mlir::ModuleOp> after = before->clone();
  mlir::PassManager pm(&ctx);
  pm.addNestedPass<mlir::func::FuncOp>(
      kiln::createQuantizeProducts({std::string(KILN_SOURCE_DIR) + "/tests/lit/passes/Inputs/quantize_products.calib",
                                    "", std::string("precision=") + precision}));
  ctx.getDiagEngine().registerHandler([](mlir::Diagnostic &) { return mlir::success(); });  // the remark
  ASSERT_TRUE(mlir::succeeded(pm.run(*after)));
  auto f = before->lookupSymbol<mlir::func::FuncOp>("matmul"), g = after->lookupSymbol<mlir::func::FuncOp>("matmul");
  auto w = [](int k, int c) { return c == 0 ? 0.5 - k * 0.0625 : ((k % 5) - 2) * 2.0; };  // the lit test's [16, 2]
  const double ws[2] = {0.5 / qmax, 4.0 / qmax}, sa = 2.0 / qmax;                         // calibrated amax of x: 2
  for (unsigned seed : {1u, 2u, 3u}) {
    std::vector<kiln::ops::Tensor> in = randomInputs(f, seed), fp32, q;
    ASSERT_FALSE(kiln::evaluateFunction(f, in, fp32));
    ASSERT_FALSE(kiln::evaluateFunction(g, in, q));
    double err = 0, norm = 0;
    for (int r = 0; r < 2; ++r)
      for (int c = 0; c < 2; ++c) {
        double want = 0;
        for (int k = 0; k < 16; ++k) {
          double xq = quantize(float(in[0].f[size_t(r * 16 + k)]) / float(sa)) * float(sa);
          double wq = quantize(w(k, c) / float(ws[c])) * float(ws[c]);
          want += float(xq) * float(wq);
        }
        EXPECT_NEAR(q[0].f[size_t(r * 2 + c)], want, 1e-5 * (1 + std::fabs(want)));
        err += std::pow(q[0].f[size_t(r * 2 + c)] - fp32[0].f[size_t(r * 2 + c)], 2);
        norm += std::pow(fp32[0].f[size_t(r * 2 + c)], 2);
      }
    EXPECT_LT(std::sqrt(err / norm), maxRelL2);
  }
}

TEST(QuantizeProducts, ComputesQuantizedArithmetic) {
  // (x clamps at -128, weights at ±127; the calibrated x stays inside, so ±127 serves both)
  expectQuantizedArithmetic(
      "int8", 127, [](double v) { return std::clamp(double(std::nearbyint(float(v))), -127.0, 127.0); }, 0.05);
  // (e4m3 keeps 3 mantissa bits: each value within 1/16 relative, sums of 16 such cancel partly)
  expectQuantizedArithmetic(
      "fp8", 448, [](double v) { return kiln::ops::roundToE4M3(v); }, 0.15);
}

}  // namespace

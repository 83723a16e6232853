// Kernel emitters (codegen/kernels/): every emitter, on awkward shapes, produces a source that
// NVRTC compiles for sm_90 and whose cubin defines the entry; launch dims are sane. No GPU needed
// (the numerical comparison with the CPU evaluator is the GPU harness's, over KernelCases.h).
#include "codegen/kernels/Attention.h"
#include "codegen/kernels/Conv.h"
#include "codegen/kernels/Copy.h"
#include "codegen/kernels/Elementwise.h"
#include "codegen/kernels/KernelUtil.h"
#include "codegen/kernels/MatMul.h"
#include "codegen/kernels/Pool.h"
#include "codegen/kernels/Reduction.h"
#include "codegen/kernels/Wgmma.h"
#include "codegen/nvrtc/Nvrtc.h"
#include "tests/codegen/KernelCases.h"

#include <gtest/gtest.h>

#include <array>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>

namespace kiln::codegen {
namespace {

struct Timing {
  std::map<std::string, std::vector<double>> seconds;  // per kernel kind
  ~Timing() {
    for (auto &kv : seconds) {
      double sum = 0, mx = 0;
      for (double s : kv.second) {
        sum += s;
        mx = std::max(mx, s);
      }
      std::printf("[nvrtc] %-4s %3zu kernels, mean %.0f ms, max %.0f ms\n", kv.first.c_str(), kv.second.size(),
                  1000 * sum / kv.second.size(), 1000 * mx);
    }
  }
};
Timing &timing() {
  static Timing t;
  return t;
}

bool cubinHasSymbol(const std::vector<char> &cubin, const std::string &name) {
  std::string key = name;
  key.push_back('\0');
  return std::search(cubin.begin(), cubin.end(), key.begin(), key.end()) != cubin.end();
}

// Checks launch sanity and compiles. `work`: items the grid must cover (grid-stride kernels may
// cap the grid, then every thread loops). `numParams`: expected pointer count.
void expectKernel(const KernelLaunch &k, int numParams) {
  SCOPED_TRACE(k.entry);
  ASSERT_EQ(k.entry.rfind("kiln_", 0), 0u) << k.entry;
  EXPECT_NE(k.source.find("extern \"C\" __global__"), std::string::npos);
  EXPECT_NE(k.source.find(k.entry + "("), std::string::npos);
  EXPECT_EQ(k.source.find("KILN_ENTRY"), std::string::npos);
  EXPECT_EQ(k.source.find("#include"), std::string::npos) << "emitted sources must be self-contained";
  EXPECT_EQ(k.numParams, numParams);
  for (int d = 0; d < 3; ++d) {
    EXPECT_GE(k.grid[d], 1u);
    EXPECT_GE(k.block[d], 1u);
  }
  EXPECT_LE(uint64_t(k.block[0]) * k.block[1] * k.block[2], 1024u);
  EXPECT_LE(k.grid[1], 65535u);
  EXPECT_LE(k.grid[2], 65535u);
  EXPECT_LE(k.sharedBytes, 227u * 1024u);  // sm_90: dynamic shared memory above 48 KiB is opted into
  if (!nvrtcAvailable()) GTEST_SKIP() << nvrtcLoadError();
  CompileOutput out = compileKernel(k.source, k.entry, "sm_90");
  ASSERT_TRUE(out.ok()) << out.error << "\n" << k.source;
  EXPECT_FALSE(out.cubin.empty());
  EXPECT_TRUE(cubinHasSymbol(out.cubin, k.entry));
  EXPECT_NE(out.ptx.find(".entry " + k.entry), std::string::npos);
  std::string kind = k.entry.substr(5, k.entry.find('_', 5) - 5);
  timing().seconds[kind].push_back(out.seconds);
}

int64_t numElements(const std::vector<int64_t> &s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

uint64_t threads(const KernelLaunch &k) {
  return uint64_t(k.grid[0]) * k.grid[1] * k.grid[2] * k.block[0] * k.block[1] * k.block[2];
}

// ---------------------------------------------------------------------------------------------
// Elementwise

TEST(ElementwiseKernels, EveryTableOpCompiles) {
  for (const std::string &op : elementwiseOpTypes()) {
    SCOPED_TRACE(op);
    ElementwiseAttrs attrs;
    int n = 1;
    ElemType data = op == "DequantizeLinear" ? ElemType::I8 : op == "BitShift" ? ElemType::U8 : ElemType::F32;
    if (op == "Cast") attrs.ints["to"] = 7;
    if (op == "BitShift") attrs.strings["direction"] = "LEFT";
    for (int arity = 1; arity <= 3; ++arity)
      if (lookupElementwiseOp(op, arity, attrs, data)) {
        n = arity;
        break;
      }
    auto info = lookupElementwiseOp(op, n, attrs, data);
    ASSERT_TRUE(info.has_value());
    // Awkward broadcast: [2, 1, 7] with [3, 1] (and [7]).
    std::vector<std::vector<int64_t>> shapes = {{2, 1, 7}, {3, 1}, {7}};
    shapes.resize(n);
    KernelLaunch k = emitElementwiseOp(op, shapes, attrs, data);
    expectKernel(k, n + 1);
    EXPECT_GE(threads(k), 2u * 3 * 7);
  }
}

TEST(ElementwiseKernels, AttributesAndVariants) {
  ElementwiseAttrs tanh;
  tanh.strings["approximate"] = "tanh";
  expectKernel(emitElementwiseOp("Gelu", {{5, 77}}, tanh), 2);
  ElementwiseAttrs clip;
  clip.floats["min"] = -1.5;
  clip.floats["max"] = 6;
  expectKernel(emitElementwiseOp("Clip", {{1000}}, clip), 2);
  expectKernel(emitElementwiseOp("Clip", {{4, 4}, {}, {}}), 4);
  ElementwiseAttrs leaky;
  leaky.floats["alpha"] = 0.1;
  expectKernel(emitElementwiseOp("LeakyRelu", {{3, 5, 7}}, leaky), 2);
  ElementwiseAttrs mod;
  mod.ints["fmod"] = 1;
  expectKernel(emitElementwiseOp("Mod", {{6}, {6}}, mod), 3);
  expectKernel(emitElementwiseOp("Equal", {{4, 1}, {1, 5}}, {}, ElemType::I64), 3);
  expectKernel(emitElementwiseOp("Where", {{2, 1, 3}, {1, 4, 3}, {}}), 4);
  expectKernel(emitElementwiseOp("Max", {{3, 1}, {1, 4}, {3, 4}}), 4);
  expectKernel(emitElementwiseOp("Mean", {{8}, {8}, {8}}), 4);
  // Integer and double data compute in their own types (8/16-bit integers in int).
  for (ElemType t : {ElemType::U8, ElemType::I16, ElemType::U32, ElemType::U64, ElemType::F64}) {
    SCOPED_TRACE(static_cast<int>(t));
    expectKernel(emitElementwiseOp("Add", {{5, 3}, {3}}, {}, t), 3);
    expectKernel(emitElementwiseOp("Mod", {{7}, {7}}, {}, t), 3);
    expectKernel(emitElementwiseOp("Max", {{4}, {4}, {1}}, {}, t), 4);
    expectKernel(emitElementwiseOp("Pow", {{6}, {6}}, {}, t), 3);
    expectKernel(emitElementwiseOp("Clip", {{9}}, clip, t), 2);
  }
  ElementwiseAttrs toDouble;
  toDouble.ints["to"] = 11;
  auto castD = lookupElementwiseOp("Cast", 1, toDouble, ElemType::F32);
  ASSERT_TRUE(castD.has_value());
  EXPECT_EQ(castD->outType, ElemType::F64);
  EXPECT_FALSE(lookupElementwiseOp("Mean", 2, {}, ElemType::I32).has_value());     // Mean: float types
  EXPECT_FALSE(lookupElementwiseOp("BitShift", 2, {}, ElemType::U8).has_value());  // no direction
  EXPECT_FALSE(lookupElementwiseOp("NoSuchOp", 1).has_value());
  EXPECT_FALSE(lookupElementwiseOp("Add", 1).has_value());
}

TEST(ElementwiseKernels, VectorizedAndScalarPaths) {
  // Same shapes, size % 4 == 0: 16-byte path (with the scalar fallback for unaligned pointers).
  KernelLaunch v = emitElementwiseOp("Add", {{64, 3, 32}, {64, 3, 32}});
  EXPECT_NE(v.source.find("kiln_vec<float, 4>"), std::string::npos);
  expectKernel(v, 3);
  EXPECT_GE(threads(v) * 4, 64u * 3 * 32);
  // A scalar operand keeps the 16-byte path.
  KernelLaunch sc = emitElementwiseOp("Mul", {{1024}, {}});
  EXPECT_NE(sc.source.find("kiln_vec<float, 4>"), std::string::npos);
  expectKernel(sc, 3);
  // Odd size: no 16-byte path.
  KernelLaunch odd = emitElementwiseOp("Add", {{7, 13}, {7, 13}});
  EXPECT_EQ(odd.source.find("kiln_vec<float"), std::string::npos);
  expectKernel(odd, 3);
  // Rank 6 with broadcasts in several places; empty tensors; a 1-element tensor.
  expectKernel(emitElementwiseOp("Sub", {{2, 1, 3, 1, 5, 1}, {1, 4, 1, 2, 1, 3}}), 3);
  expectKernel(emitElementwiseOp("Relu", {{0, 5}}), 2);
  expectKernel(emitElementwiseOp("Sigmoid", {{1}}), 2);
  // Large: 64-bit indices.
  KernelLaunch big = emitElementwiseOp("Add", {{3, 1 << 30}, {1, 1}});
  EXPECT_NE(big.source.find("long long"), std::string::npos);
  expectKernel(big, 3);
}

// A program over a tensor and one-element inputs (DynamicQuantizeLinear's arithmetic): the
// statements that depend on the one-element inputs alone run once per thread before the 16-byte
// loop, and a division by such a value multiplies by its reciprocal (kiln_div_by).
TEST(ElementwiseKernels, UniformStatementsOncePerThread) {
  ElementwiseSpec s;
  ProgramBuilder pb(s.program);
  std::string x = pb.input({4096}, ElemType::F16), lo = pb.input({}, ElemType::F32), hi = pb.input({1}, ElemType::F32);
  auto op = [](const char *type, int n) { return *lookupElementwiseOp(type, n, {}, ElemType::F32); };
  std::string range = pb.apply(op("Sub", 2), {hi, lo});
  std::string scale = pb.apply(op("Div", 2), {range, ProgramBuilder::literal(255, ElemType::F32)});
  std::string q = pb.apply(op("Round", 1), {pb.apply(op("Div", 2), {x, scale})});
  s.program.result = pb.apply(op("Mul", 2), {q, scale});
  s.outShape = {4096};
  s.outType = ElemType::F16;
  ASSERT_EQ(s.program.uniform, (std::vector<bool>{true, true, true, false, false, false}));
  KernelLaunch k = emitElementwise(s);
  size_t loop = k.source.find("for (");
  ASSERT_NE(loop, std::string::npos);
  EXPECT_LT(k.source.find("1.f / (float)(t1)"), loop) << k.source;
  EXPECT_GT(k.source.find("kiln_div_by(a, b, t2)"), loop);
  expectKernel(k, 4);
}

// kiln_div_by as the kernels hold it (the prelude's text, only fabsf and fmaf), compiled for the
// host with the host's C compiler: equal to IEEE division on 2e7 pairs — random bit patterns,
// zeros, infinities, subnormal divisors and quantization-like scales and values (a quotient
// that overflowed used to give NaN).
TEST(DeviceMath, DivByIsTheCorrectlyRoundedQuotient) {
  std::string prelude = kernels::kDevicePrelude;
  size_t from = prelude.find("KILN_DEV float kiln_div_by(");
  ASSERT_NE(from, std::string::npos);
  std::string fn = prelude.substr(from, prelude.find("\n}\n", from) + 3 - from);
  std::string dir = ::testing::TempDir();
  std::string src = dir + "/kiln_div_by.c", exe = dir + "/kiln_div_by";
  std::FILE *f = std::fopen(src.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::string program = "#include <math.h>\n#include <stdio.h>\n#include <stdint.h>\n#include <string.h>\n"
                        "#define KILN_DEV static\n" +
                        fn + R"C(
static uint64_t s = 88172645463325252ull;
static uint32_t rnd(void) { s ^= s << 13; s ^= s >> 7; s ^= s << 17; return (uint32_t)s; }
int main(void) {
  long bad = 0;
  for (long i = 0; i < 20000000; ++i) {
    uint32_t ua = rnd(), ub = rnd();
    float a, b;
    memcpy(&a, &ua, 4); memcpy(&b, &ub, 4);
    if (i % 3 == 0) b = (float)(rnd() % 1000 + 1) / 255.f;
    if (i % 5 == 0) a = (float)(int)(rnd() % 2001 - 1000) * 0.37f;
    if (i % 7 == 0) a = i % 14 == 0 ? 0.f : -0.f;
    if (i % 11 == 0) b = i % 22 == 0 ? 0.f : -INFINITY;
    volatile float r = 1.f / b;
    float x = kiln_div_by(a, b, r), y = a / b;
    if (!(x == y || (x != x && y != y)) || (x == 0 && signbit(x) != signbit(y))) {
      if (bad++ < 3) printf("a=%a b=%a: %a, want %a\n", a, b, x, y);
    }
  }
  printf("%ld differ\n", bad);
  return bad != 0;
}
)C";
  std::fputs(program.c_str(), f);
  std::fclose(f);
  std::string cc = "cc -O2 -ffp-contract=off -o " + exe + " " + src + " -lm 2>&1";
  if (std::system(cc.c_str()) != 0) GTEST_SKIP() << "no host C compiler (cc)";
  EXPECT_EQ(std::system(exe.c_str()), 0);
}

TEST(ElementwiseKernels, StridedInputs) {
  // y[i, j] = float(x[i, j]) with x rows 8 elements apart (a column slice of [4, 8] half) plus
  // a broadcast bias: the strides reach the offset code, and no 16-byte path (rows misaligned).
  ElementwiseSpec s;
  ProgramBuilder pb(s.program);
  std::string x = pb.input({4, 5}, ElemType::F16, {8, 1});
  std::string b = pb.input({5}, ElemType::F32);
  s.program.result = "(" + x + " + " + b + ")";
  s.outType = ElemType::F32;
  KernelLaunch k = emitElementwise(s);
  EXPECT_EQ(k.source.find("kiln_vec<"), std::string::npos);
  EXPECT_NE(k.source.find("8"), std::string::npos);
  expectKernel(k, 3);
  // The same with contiguous rows is another kernel.
  ElementwiseSpec c;
  ProgramBuilder pc(c.program);
  std::string xc = pc.input({4, 5}, ElemType::F16), bc = pc.input({5}, ElemType::F32);
  c.program.result = "(" + xc + " + " + bc + ")";
  c.outType = ElemType::F32;
  EXPECT_NE(emitElementwise(c).entry, k.entry);
  // Strides must match the input's rank; epilogues take none.
  ElementwiseSpec bad = s;
  bad.program.inputStrides[0] = {1};
  EXPECT_THROW(emitElementwise(bad), std::invalid_argument);
  EXPECT_THROW(checkProgram(s.program, {4, 5}), std::invalid_argument);
}

TEST(ElementwiseKernels, IdenticalSpecsDedupe) {
  KernelLaunch a = emitElementwiseOp("Add", {{5, 7}, {7}});
  KernelLaunch b = emitElementwiseOp("Add", {{5, 7}, {7}});
  KernelLaunch c = emitElementwiseOp("Add", {{5, 7}, {5, 1}});
  EXPECT_EQ(a.entry, b.entry);
  EXPECT_EQ(a.source, b.source);
  EXPECT_NE(a.entry, c.entry);
}

TEST(ElementwiseKernels, RejectsBadSpecs) {
  EXPECT_THROW(emitElementwiseOp("Add", {{3}, {4}}), std::invalid_argument);
  EXPECT_THROW(emitElementwiseOp("Relu", {{3}, {3}}), std::invalid_argument);
  ElementwiseSpec s;
  s.expr = "a";
  EXPECT_THROW(emitElementwise(s), std::invalid_argument);
}

// ---------------------------------------------------------------------------------------------
// Reductions

TEST(RowKernels, EveryOpOnAwkwardShapes) {
  const char *ops[] = {"Softmax",   "LogSoftmax",   "LayerNormalization", "ReduceSum",       "ReduceMean",
                       "ReduceMax", "ReduceMin",    "ReduceProd",         "ReduceSumSquare", "ReduceL1",
                       "ReduceL2",  "ReduceLogSum", "ReduceLogSumExp"};
  // (outer, cols, inner): short rows, one odd warp row, block rows, uncached long rows, middle axis.
  std::vector<std::array<int64_t, 3>> views = {{7, 1, 1},     {33, 10, 1}, {5, 1000, 1}, {3, 3001, 1},
                                               {2, 50000, 1}, {2, 19, 9},  {1, 0, 1}};
  for (const char *name : ops) {
    RowOp op;
    ASSERT_TRUE(rowOpFromName(name, &op)) << name;
    for (auto v : views) {
      SCOPED_TRACE(std::string(name) + " " + std::to_string(v[0]) + "x" + std::to_string(v[1]) + "x" +
                   std::to_string(v[2]));
      RowReductionSpec s;
      s.op = op;
      s.outer = v[0];
      s.cols = v[1];
      s.inner = v[2];
      if (op == RowOp::LayerNorm && s.inner != 1) {
        EXPECT_THROW(emitRowReduction(s), std::invalid_argument);
        continue;
      }
      KernelLaunch k = emitRowReduction(s);
      expectKernel(k, op == RowOp::LayerNorm ? 4 : 2);
      // float64 data computes in double (one view is enough).
      if (v[0] == 33) {
        s.type = s.outType = s.statsType = ElemType::F64;
        KernelLaunch d = emitRowReduction(s);
        EXPECT_NE(d.source.find("typedef double AT;"), std::string::npos);
        expectKernel(d, op == RowOp::LayerNorm ? 4 : 2);
      }
    }
  }
}

// The min and max in one pass: two inputs and two outputs, one load per element when they are
// the same tensor; on the views above, in half storage too; refused over non-adjacent axes.
TEST(RowKernels, MinMaxInOnePass) {
  for (auto v : std::vector<std::array<int64_t, 3>>{{7, 1, 1}, {33, 10, 1}, {3, 3001, 1}, {2, 50000, 1}, {2, 19, 9}})
    for (bool same : {false, true})
      for (ElemType t : {ElemType::F32, ElemType::F16}) {
        RowReductionSpec s;
        s.op = RowOp::MinMax;
        s.outer = v[0], s.cols = v[1], s.inner = v[2];
        s.sameInput = same;
        s.type = s.outType = t;
        KernelLaunch k = emitRowReduction(s);
        expectKernel(k, 4);
        EXPECT_EQ(k.source.find("x2[j * INNER]") == std::string::npos, same);
      }
  EXPECT_THROW(emitReduceAxes(RowOp::MinMax, {2, 3, 4}, {0, 2}, ElemType::F32, ElemType::F32), std::invalid_argument);
}

// RMSNormalization: scale only, over even and odd rows, fp32 and half storage; a bias
// or statistics outputs are refused.
TEST(RowKernels, RmsNorm) {
  for (int64_t cols : {768, 1001, 4096})
    for (ElemType t : {ElemType::F32, ElemType::F16}) {
      RowReductionSpec s;
      s.op = RowOp::RmsNorm;
      s.outer = 64, s.cols = cols;
      s.type = s.outType = t;
      s.hasBias = false;
      s.epsilon = 1e-6f;
      expectKernel(emitRowReduction(s), 3);
    }
  RowReductionSpec s;
  s.op = RowOp::RmsNorm;
  EXPECT_THROW(emitRowReduction(s), std::invalid_argument);  // (hasBias defaults to true)
  s.hasBias = false;
  s.statsOutputs = true;
  EXPECT_THROW(emitRowReduction(s), std::invalid_argument);
}

TEST(RowKernels, LayerNormVariants) {
  RowReductionSpec s;
  s.op = RowOp::LayerNorm;
  s.outer = 4 * 128;
  s.cols = 768;
  s.hasBias = false;
  s.epsilon = 1e-12f;
  expectKernel(emitRowReduction(s), 3);
  s.hasBias = true;
  s.statsOutputs = true;
  s.cols = 1025;
  expectKernel(emitRowReduction(s), 6);
  s.threadsPerRow = 1024;
  expectKernel(emitRowReduction(s), 6);
  s.threadsPerRow = 48;
  EXPECT_THROW(emitRowReduction(s), std::invalid_argument);
}

// ---------------------------------------------------------------------------------------------
// MatMul

TEST(MatMulKernels, ShapesTransposesTilesEpilogues) {
  struct C {
    std::vector<int64_t> a, b;
  };
  std::vector<C> cases = {{{1, 1}, {1, 1}},       {{7, 5}, {5, 3}},         {{65, 33}, {33, 129}},
                          {{128, 64}, {64, 256}}, {{2, 3, 17, 9}, {9, 31}}, {{4, 1, 8, 8}, {3, 8, 5}},
                          {{13}, {13, 6}},        {{6, 13}, {13}},          {{12, 512, 64}, {12, 64, 512}},
                          {{3, 0, 4}, {4, 5}},    {{2, 4, 0}, {0, 3}}};
  for (const C &c : cases) {
    std::vector<int64_t> out;
    MatMulSpec s = matMulSpecFromShapes(c.a, c.b, &out);
    SCOPED_TRACE(std::to_string(s.M) + "x" + std::to_string(s.N) + "x" + std::to_string(s.K));
    KernelLaunch k = emitMatMul(s);
    expectKernel(k, 3);
    // The tile is named in the source's first line ("... tile 64x64").
    std::string head = k.source.substr(0, k.source.find('\n'));
    int64_t bm = std::stoll(head.substr(head.rfind("tile ") + 5));
    EXPECT_GE(int64_t(k.grid[0]) * bm, s.N);
    EXPECT_GE(int64_t(k.grid[1]) * bm, s.M);
    EXPECT_GE(int64_t(k.grid[2]), std::min<int64_t>(65535, std::max<int64_t>(1, numElements(s.batchShape))));
  }
  for (const std::string &tile : matMulTiles()) {
    for (bool ta : {false, true}) {
      for (bool tb : {false, true}) {
        MatMulSpec s = gemmSpecFromShapes(ta ? std::vector<int64_t>{37, 100} : std::vector<int64_t>{100, 37},
                                          tb ? std::vector<int64_t>{70, 37} : std::vector<int64_t>{37, 70}, true, {70},
                                          ta, tb, 0.5f, 2.f);
        s.tile = tile;
        if (ta) s.epilogue.result = "fmaxf(" + s.epilogue.result + ", 0.f)";
        KernelLaunch k = emitMatMul(s);
        expectKernel(k, 4);
        int bm = std::stoi(tile), bn = std::stoi(tile.substr(tile.find('x') + 1));
        EXPECT_GE(int64_t(k.grid[0]) * bn, 70);
        EXPECT_GE(int64_t(k.grid[1]) * bm, 100);
      }
    }
  }
  // Gemm C of every broadcastable shape.
  for (std::vector<int64_t> cshape : {std::vector<int64_t>{}, {1}, {1, 9}, {5, 1}, {5, 9}}) {
    MatMulSpec s = gemmSpecFromShapes({5, 3}, {3, 9}, true, cshape, false, false, 1.f, 1.f);
    expectKernel(emitMatMul(s), 4);
  }
  MatMulSpec bad;
  bad.tile = "16x16";
  EXPECT_THROW(emitMatMul(bad), std::invalid_argument);
  EXPECT_THROW(matMulSpecFromShapes({3, 4}, {5, 6}), std::invalid_argument);
}

// Tensor-core kernels (fp16/bf16): every tile, pipeline depth and operand layout compiles, on
// sizes that take the 16-byte cp.async path and sizes that force element loads.
// cuBLASLt's one batch stride: size-1 dims do not count (an innermost one neither), a broadcast
// operand is unit 0, and ViT's packed heads (B stride 3·H·D, H stride D) are two strides.
TEST(MatMulKernels, UniformBatchStride) {
  int64_t unit = -1;
  EXPECT_TRUE(uniformBatchStride({32, 12}, {768, 64}, unit));
  EXPECT_EQ(unit, 64);
  EXPECT_TRUE(uniformBatchStride({32, 1}, {768, 0}, unit));
  EXPECT_EQ(unit, 768);
  EXPECT_TRUE(uniformBatchStride({1, 4, 1, 3}, {0, 30, 0, 10}, unit));
  EXPECT_EQ(unit, 10);
  EXPECT_TRUE(uniformBatchStride({32, 12}, {0, 0}, unit));
  EXPECT_EQ(unit, 0);
  EXPECT_TRUE(uniformBatchStride({}, {}, unit));
  EXPECT_FALSE(uniformBatchStride({32, 12}, {2304, 64}, unit));
  EXPECT_FALSE(uniformBatchStride({32, 12}, {128, 0}, unit));
  EXPECT_FALSE(uniformBatchStride({4, 1, 3}, {31, 0, 10}, unit));
}

TEST(MatMulKernels, TensorCoreLayoutsTilesStages) {
  struct C {
    std::vector<int64_t> a, pa, b, pb;
  };
  std::vector<C> cases = {
      {{256, 128}, {}, {128, 512}, {}},                                  // A row-major, B [K, N]: vector loads
      {{128, 256}, {1, 0}, {128, 512}, {}},                              // A m-contiguous
      {{256, 128}, {}, {512, 128}, {1, 0}},                              // B k-contiguous (weights as [N, K])
      {{2, 12, 128, 64}, {}, {2, 12, 128, 64}, {0, 1, 3, 2}},            // attention Q K^T
      {{2, 128, 12, 64}, {0, 2, 1, 3}, {2, 128, 12, 64}, {0, 2, 3, 1}},  // heads read in place
      {{65, 33}, {}, {33, 129}, {}},                                     // odd sizes: element loads
      {{7, 5}, {1, 0}, {7, 3}, {}},                                      // tiny, transposed, odd
  };
  for (ElemType t : {ElemType::F16, ElemType::BF16})
    for (const C &c : cases) {
      MatMulSpec s = transposedMatMulSpec(c.a, c.pa, c.b, c.pb);
      s.type = s.outType = t;
      SCOPED_TRACE(std::to_string(s.M) + "x" + std::to_string(s.N) + "x" + std::to_string(s.K));
      expectKernel(emitMatMul(s), 3);
    }
  MatMulSpec s = transposedMatMulSpec({512, 256}, {}, {256, 384}, {});
  s.type = ElemType::F16;
  s.outType = ElemType::F32;
  s.epilogue.inputShapes = {{384}, {512, 384}};
  s.epilogue.inputTypes = {ElemType::F16, ElemType::F16};
  s.epilogue.body = {"const float t0 = acc + x0;"};
  s.epilogue.result = "fmaxf(t0 + x1, 0.f)";
  for (const std::string &tile : matMulTiles())
    for (int stages : {2, 3, 4}) {
      s.tile = tile;
      s.stages = stages;
      SCOPED_TRACE(tile + " stages " + std::to_string(stages));
      KernelLaunch k = emitMatMul(s);
      expectKernel(k, 5);
      EXPECT_GT(k.sharedBytes, 0u);
    }
}

// A prologue (onnxruntime's dynamic quantization of A with a scale and zero point read at run
// time) on every A path: fp32 SIMT, tensor cores with 16-byte copies (row-major and m-contiguous
// A), element loads, an implicit-GEMM convolution, float32 A into half products; its inputs come
// after B. 8-bit products, inputs of more than one element and float32 A without a prologue are
// refused.
TEST(MatMulKernels, Prologue) {
  FusedProgram fq;
  fq.inputShapes = {{}, {}};
  fq.inputTypes = {ElemType::F32, ElemType::F32};
  fq.body = {"const float t0 = fminf(fmaxf(rintf(acc / x0) + x1, 0.f), 255.f);"};
  fq.result = "(t0 - x1) * x0";
  struct C {
    std::vector<int64_t> a, pa, b;
    ElemType type, aType;
  };
  std::vector<C> cases = {{{64, 256}, {}, {256, 1024}, ElemType::F32, ElemType::F32},
                          {{64, 256}, {}, {256, 1024}, ElemType::F16, ElemType::F16},
                          {{64, 256}, {}, {256, 1024}, ElemType::F16, ElemType::F32},
                          {{256, 64}, {1, 0}, {256, 1024}, ElemType::F16, ElemType::F32},
                          {{65, 33}, {}, {33, 129}, ElemType::BF16, ElemType::BF16},
                          {{65, 33}, {}, {33, 129}, ElemType::BF16, ElemType::F32}};
  for (const C &c : cases) {
    MatMulSpec s = transposedMatMulSpec(c.a, c.pa, c.b, {});
    s.type = s.outType = c.type;
    s.aType = c.aType;
    s.prologue = fq;
    s.epilogue.inputShapes = {{s.N}};
    s.epilogue.inputTypes = {c.type};
    s.epilogue.result = "fmaxf(acc + x0, 0.f)";
    SCOPED_TRACE(std::to_string(s.M) + "x" + std::to_string(s.N) + "x" + std::to_string(s.K));
    KernelLaunch k = emitMatMul(s);
    EXPECT_NE(k.source.find("kiln_prologue("), std::string::npos);
    expectKernel(k, 6);
  }
  MatMulSpec conv;
  conv.conv = ConvGeometry{8, 32, 32, 16, 3, 3, 1, 1, 1, 1, 1, 1, 32, 32};
  conv.M = 8 * 32 * 32, conv.N = 32, conv.K = 3 * 3 * 16;
  conv.b.rowStride = 1, conv.b.colStride = conv.K;
  conv.type = conv.outType = ElemType::F16;
  conv.prologue = fq;
  expectKernel(emitMatMul(conv), 5);
  conv.aType = ElemType::F32;
  expectKernel(emitMatMul(conv), 5);
  MatMulSpec bad = transposedMatMulSpec({64, 256}, {}, {256, 128}, {});
  bad.prologue = fq;
  bad.prologue.inputShapes = {{64, 1}, {}};
  EXPECT_THROW(emitMatMul(bad), std::invalid_argument);
  bad.prologue = fq;
  bad.int8 = true;
  EXPECT_THROW(emitMatMul(bad), std::invalid_argument);
  bad.int8 = false;
  bad.type = ElemType::F16;
  bad.aType = ElemType::F32;
  bad.prologue = {};
  EXPECT_THROW(emitMatMul(bad), std::invalid_argument);
}

// Split K over a thread-block cluster: one cluster of SPLITK blocks per tile (grid z), the sums
// added in the leader, whose staged tile every block of the cluster stores a share of (shared
// memory for BM x (BN + 4) floats); the vector store (N % 4 == 0) and the element store (N not),
// with epilogue inputs. Unsplit, a 64x64 tile is staged whole (the pipeline's shared memory holds
// it), a 256x128 one band by band.
TEST(MatMulKernels, SplitKOverClusters) {
  for (int64_t n : {256, 250})
    for (int split : {2, 8}) {
      MatMulSpec s = transposedMatMulSpec({64, 1024}, {}, {n, 1024}, {1, 0});
      s.type = ElemType::F16;
      s.outType = ElemType::F16;
      s.tile = "64x64";
      s.splitK = split;
      s.epilogue.inputShapes = {{n}, {64, n}};
      s.epilogue.inputTypes = {ElemType::F16, ElemType::U8};
      s.epilogue.body = {"const float t0 = acc + x0;"};
      s.epilogue.result = "fmaxf(t0 + (float)x1, 0.f)";
      SCOPED_TRACE("N " + std::to_string(n) + " split " + std::to_string(split));
      KernelLaunch k = emitMatMul(s);
      EXPECT_NE(k.source.find("#define SPLITK " + std::to_string(split)), std::string::npos);
      EXPECT_EQ(k.grid[2], unsigned(split));
      EXPECT_GE(k.sharedBytes, 64u * (64 + 4) * 4);
      expectKernel(k, 5);
    }
  MatMulSpec s = transposedMatMulSpec({512, 1024}, {}, {512, 1024}, {1, 0});
  s.type = s.outType = ElemType::F16;
  s.splitK = 1;
  s.tile = "64x64";
  EXPECT_NE(emitMatMul(s).source.find("#define STAGE_WHOLE 1"), std::string::npos);
  s.tile = "256x128";
  EXPECT_NE(emitMatMul(s).source.find("#define STAGE_WHOLE 0"), std::string::npos);
}

// int8 (and fp8) tensor-core products: weights as [N, K] (k-contiguous), batched activations, implicit-GEMM
// NHWC convolutions with C % 16 == 0; other layouts are refused with a message.
TEST(MatMulKernels, Int8TensorCores) {
  for (auto [m, k, n] : {std::array<int64_t, 3>{4096, 768, 3072}, {100, 48, 40}, {7, 16, 8}}) {
    MatMulSpec s = transposedMatMulSpec({m, k}, {}, {n, k}, {1, 0});
    s.int8 = true;
    s.outType = ElemType::F16;
    SCOPED_TRACE(std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k));
    KernelLaunch kl = emitMatMul(s);
    EXPECT_NE(kl.source.find("m16n8k32.row.col.s32.\" KILN_A8 \".s8.s32"), std::string::npos);
    EXPECT_NE(kl.source.find("#define KILN_A8 \"s8\""), std::string::npos);
    expectKernel(kl, 4);
  }
  // uint8 A with a zero point: .u8.s8 and an int32 offset per column after the scales.
  MatMulSpec u8 = transposedMatMulSpec({100, 48}, {}, {40, 48}, {1, 0});
  u8.int8 = u8.aUnsigned = true;
  u8.aZeroPoint = 128;
  KernelLaunch ku = emitMatMul(u8);
  EXPECT_NE(ku.source.find("#define KILN_A8 \"u8\""), std::string::npos);
  EXPECT_NE(ku.entry.find("kiln_mma_u8_"), std::string::npos);
  expectKernel(ku, 5);
  // fp8 e4m3 operands: m16n8k32 e4m3 with fp32 sums, named kiln_mma_e4m3_; an fp8 store after
  // a QuantizeLinear epilogue; fp8 with a zero point is refused.
  MatMulSpec f8 = transposedMatMulSpec({100, 48}, {}, {40, 48}, {1, 0});
  f8.int8 = f8.fp8 = true;
  f8.outType = ElemType::F8E4M3;
  KernelLaunch kf = emitMatMul(f8);
  EXPECT_NE(kf.source.find("#define KILN_FP8 1"), std::string::npos);
  EXPECT_NE(kf.source.find("m16n8k32.row.col.f32.e4m3.e4m3.f32"), std::string::npos);
  EXPECT_NE(kf.entry.find("kiln_mma_e4m3_"), std::string::npos);
  expectKernel(kf, 4);
  f8.aZeroPoint = 3;
  EXPECT_THROW(emitMatMul(f8), std::invalid_argument);
  MatMulSpec batched = transposedMatMulSpec({2, 64, 96}, {}, {80, 96}, {1, 0});  // shared weights: folded into M
  batched.int8 = true;
  expectKernel(emitMatMul(batched), 4);
  ConvGeometry g;
  g.N = 2, g.H = 9, g.W = 9, g.C = 32, g.KH = 3, g.KW = 3, g.padTop = g.padLeft = 1, g.OH = 9, g.OW = 9;
  MatMulSpec c;
  c.conv = g;
  c.M = g.N * g.OH * g.OW, c.N = 24, c.K = g.KH * g.KW * g.C;
  c.b.rowStride = 1, c.b.colStride = c.K;
  c.int8 = true;
  expectKernel(emitMatMul(c), 4);
  // uint8 image with a zero point: padded taps hold it (four bytes of 0x83 = 131), and an offset
  // parameter; a zero point outside uint8 is refused.
  c.aUnsigned = true;
  c.aZeroPoint = 131;
  KernelLaunch kz = emitMatMul(c);
  EXPECT_NE(kz.source.find("#define KILN_ZA4 2206434179u"), std::string::npos);
  expectKernel(kz, 5);
  c.aZeroPoint = 256;
  EXPECT_THROW(emitMatMul(c), std::invalid_argument);
  MatMulSpec rowB = transposedMatMulSpec({64, 64}, {}, {64, 64}, {});  // B as [K, N]: not k-contiguous
  rowB.int8 = true;
  EXPECT_THROW(emitMatMul(rowB), std::invalid_argument);
  MatMulSpec oddK = transposedMatMulSpec({64, 24}, {}, {64, 24}, {1, 0});
  oddK.int8 = true;
  EXPECT_THROW(emitMatMul(oddK), std::invalid_argument);
}

// NHWC convolution as an implicit GEMM (tensor cores and fp32), vector and element im2col loads.
TEST(ConvKernels, ImplicitGemmNhwc) {
  for (ElemType t : {ElemType::F16, ElemType::BF16, ElemType::F32})
    for (int64_t c : {64, 3, 12}) {
      ConvGeometry g;
      g.N = 2, g.H = 15, g.W = 13, g.C = c, g.KH = 3, g.KW = 3, g.strideH = 2, g.strideW = 2;
      g.padTop = g.padLeft = 1, g.OH = 8, g.OW = 7;
      MatMulSpec s;
      s.conv = g;
      s.M = g.N * g.OH * g.OW, s.N = 40, s.K = g.KH * g.KW * g.C;
      s.b.rowStride = 1, s.b.colStride = s.K;
      s.type = s.outType = t;
      s.epilogue = convBiasEpilogue(true, 40, true, t, true);
      s.outShape = {g.N, g.OH, g.OW, 40};
      SCOPED_TRACE(std::to_string(c) + " channels");
      expectKernel(emitMatMul(s), 4);
    }
}

TEST(ConvKernels, DirectNhwcDepthwiseAndGroups) {
  for (ElemType t : {ElemType::F16, ElemType::F32})
    for (int64_t group : {int64_t(32), int64_t(4)}) {
      Conv2dSpec s;
      s.N = 2, s.C = 32, s.H = 9, s.W = 11, s.M = 32, s.KH = 3, s.KW = 3, s.group = group;
      s.padTop = s.padLeft = s.padBottom = s.padRight = 1;
      s.type = s.outType = t;
      s.epilogue = convBiasEpilogue(true, 32, true, t, false);
      expectKernel(emitConv2dNhwc(s), 4);
    }
}

// ---------------------------------------------------------------------------------------------
// Conv / Pool

TEST(ConvKernels, GeometryGroupsEpilogues) {
  struct G {
    int64_t n, c, h, w, m, kh, kw, group, sh, sw, pt, pl, pb, pr, dh, dw;
    bool bias, relu;
  };
  std::vector<G> cases = {
      {2, 3, 11, 13, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, true, false},    // 3x3 pad 1, odd image
      {1, 16, 7, 7, 24, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, false, false},   // 1x1
      {1, 5, 15, 9, 6, 3, 3, 1, 2, 2, 1, 0, 1, 1, 1, 1, true, true},      // stride 2, asymmetric pads
      {1, 3, 224, 224, 64, 7, 7, 1, 2, 2, 3, 3, 3, 3, 1, 1, true, true},  // ResNet stem
      {1, 4, 12, 12, 4, 3, 3, 1, 1, 1, 2, 3, 2, 3, 2, 3, false, false},   // dilations
      {2, 6, 9, 9, 9, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, true, false},      // 3 groups, 3 out per group
      {1, 32, 14, 14, 32, 3, 3, 32, 1, 1, 1, 1, 1, 1, 1, 1, true, true},  // depthwise
      {2, 7, 10, 11, 14, 5, 5, 7, 2, 2, 2, 2, 2, 2, 1, 1, false, false},  // depthwise x2 multiplier
      {1, 512, 4, 4, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, false, false},   // weights exceed smem
      {1, 1, 2, 2, 1, 3, 3, 1, 1, 1, 0, 0, 0, 0, 1, 1, false, false},     // empty output
  };
  for (const G &g : cases) {
    Conv2dSpec s;
    s.N = g.n;
    s.C = g.c;
    s.H = g.h;
    s.W = g.w;
    s.M = g.m;
    s.KH = g.kh;
    s.KW = g.kw;
    s.group = g.group;
    s.strideH = g.sh;
    s.strideW = g.sw;
    s.padTop = g.pt;
    s.padLeft = g.pl;
    s.padBottom = g.pb;
    s.padRight = g.pr;
    s.dilationH = g.dh;
    s.dilationW = g.dw;
    s.epilogue = convBiasEpilogue(g.bias, g.m, false, ElemType::F32, g.relu);
    KernelLaunch k = emitConv2d(s);
    SCOPED_TRACE(k.source.substr(0, k.source.find('\n')));
    expectKernel(k, g.bias ? 4 : 3);
    int64_t oh = convOutSize(g.h, g.kh, g.sh, g.pt, g.pb, g.dh), ow = convOutSize(g.w, g.kw, g.sw, g.pl, g.pr, g.dw);
    EXPECT_GE(int64_t(k.grid[0]) * k.block[0], oh * ow);
    EXPECT_EQ(int64_t(k.grid[2]), g.n);
  }
  Conv2dSpec bad;
  bad.C = 3;
  bad.group = 2;
  EXPECT_THROW(emitConv2d(bad), std::invalid_argument);
}

TEST(PoolKernels, MaxAverageGlobal) {
  for (PoolKind kind : {PoolKind::Max, PoolKind::Average}) {
    for (bool include : {false, true}) {
      Pool2dSpec s;
      s.kind = kind;
      s.N = 2;
      s.C = 3;
      s.H = 13;
      s.W = 11;
      s.KH = 3;
      s.KW = 3;
      s.strideH = 2;
      s.strideW = 2;
      s.padTop = s.padLeft = s.padBottom = s.padRight = 1;
      s.countIncludePad = include && kind == PoolKind::Average;
      s.indicesOutput = include && kind == PoolKind::Max;
      KernelLaunch k = emitPool2d(s);
      expectKernel(k, s.indicesOutput ? 3 : 2);
      EXPECT_GE(threads(k), 2u * 3 * 7 * 6);
    }
  }
  Pool2dSpec d;
  d.N = 1;
  d.C = 2;
  d.H = 9;
  d.W = 9;
  d.KH = 2;
  d.KW = 2;
  d.dilationH = 2;
  d.dilationW = 2;
  expectKernel(emitPool2d(d), 2);
  expectKernel(emitGlobalPool(false, 2 * 2048, 49), 2);
  expectKernel(emitGlobalPool(true, 10, 27), 2);
}

// ---------------------------------------------------------------------------------------------
// Copy

TEST(CopyKernels, TransposeSliceConcatExpandTileGather) {
  expectKernel(emitCopy(transposeCopy({7, 13}, {1, 0})), 2);
  expectKernel(emitCopy(transposeCopy({2, 3, 5, 7}, {0, 2, 3, 1})), 2);
  KernelLaunch id = emitCopy(transposeCopy({4, 5, 6}, {0, 1, 2}));
  EXPECT_EQ(id.source.find("r_ %"), std::string::npos) << "identity copies coalesce to 1-D";
  expectKernel(id, 2);
  expectKernel(emitCopy(sliceCopy({10, 11}, {1, 2}, {2, 3}, {4, 3})), 2);
  expectKernel(emitCopy(sliceCopy({10, 11}, {0, 10}, {1, -2}, {10, 6})), 2);
  expectKernel(emitCopy(concatCopy({2, 1, 4}, {2, 9, 4}, 1, 3)), 2);
  expectKernel(emitCopy(expandCopy({3, 1}, {2, 3, 4})), 2);
  expectKernel(emitCopy(tileCopy({3, 2}, {2, 3})), 2);
  expectKernel(emitCopy(gatherCopy({1000, 64}, 0, {2, 17})), 3);
  expectKernel(emitCopy(gatherCopy({3, 9, 5}, 1, {2, 3}, ElemType::I32)), 3);
  // Word copies where the last dim stays contiguous: a head slice of fp16 QKV (16-byte words of
  // 8 halves), a transpose keeping a last dim of 6 floats (8-byte words); none for a true transpose.
  KernelLaunch qkv = emitCopy(sliceCopy({197, 32, 2304}, {0, 0, 768}, {1, 1, 1}, {197, 32, 768}, ElemType::F16));
  EXPECT_NE(qkv.source.find("const kiln_w16* __restrict__ vin"), std::string::npos);
  EXPECT_EQ(qkv.grid[0], kernels::gridStrideBlocks(197 * 32 * 768 / 8, 256));
  expectKernel(qkv, 2);
  KernelLaunch six = emitCopy(transposeCopy({3, 5, 7, 6}, {2, 0, 1, 3}));
  EXPECT_NE(six.source.find("const unsigned long long* __restrict__ vin"), std::string::npos);
  expectKernel(six, 2);
  EXPECT_EQ(emitCopy(transposeCopy({8, 16}, {1, 0})).source.find("vin"), std::string::npos);
  expectKernel(emitCopy(gatherCopy({4, 6}, 1, {})), 3);
  // Other element types move as raw words.
  expectKernel(emitCopy(transposeCopy({3, 5}, {1, 0}, ElemType::I64)), 2);
  expectKernel(emitCopy(transposeCopy({3, 5}, {1, 0}, ElemType::F16)), 2);
  expectKernel(emitCopy(transposeCopy({3, 5}, {1, 0}, ElemType::Bool)), 2);
  expectKernel(emitCopy(transposeCopy({0, 5}, {1, 0})), 2);
  EXPECT_THROW(transposeCopy({3, 5}, {0, 0}), std::invalid_argument);
  EXPECT_THROW(sliceCopy({4}, {3}, {1}, {2}), std::invalid_argument);
}

// Constant padding stores words along the last dim (the NHWC channel pad of an RGB stem: 8 halves,
// one 16-byte word per pixel); other modes, and last dims that no word divides, go element-wise.
TEST(CopyKernels, PadWords) {
  PadSpec rgb;
  rgb.inShape = {2, 5, 7, 3}, rgb.before = {0, 0, 0, 0}, rgb.after = {0, 0, 0, 5}, rgb.type = ElemType::F16;
  KernelLaunch k = emitPad(rgb);
  EXPECT_NE(k.source.find("union { kiln_w16 w; T e[8]; } u;"), std::string::npos);
  EXPECT_EQ(k.grid[0], kernels::gridStrideBlocks(2 * 5 * 7, 256));
  expectKernel(k, 2);
  PadSpec spatial;  // NHWC spatial padding of 6 floats: 8-byte words
  spatial.inShape = {1, 4, 4, 6}, spatial.before = {0, 1, 1, 0}, spatial.after = {0, 2, 1, 0};
  KernelLaunch f = emitPad(spatial);
  EXPECT_NE(f.source.find("union { unsigned long long w; T e[2]; } u;"), std::string::npos);
  expectKernel(f, 2);
  spatial.mode = "reflect";
  EXPECT_EQ(emitPad(spatial).source.find("union"), std::string::npos);
  spatial.mode = "constant", spatial.inShape = {3, 5}, spatial.before = {1, 1}, spatial.after = {0, 1};
  EXPECT_EQ(emitPad(spatial).source.find("union"), std::string::npos);
  expectKernel(emitPad(spatial), 2);
}

// Patches of an NHWC image: 16-byte words of 8 halves (64 channels), element words for 3 float
// channels; strides, dilations and padding are constants of the source.
TEST(CopyKernels, Im2Col) {
  Im2ColSpec s;
  s.N = 2, s.H = 9, s.W = 7, s.C = 64, s.KH = 3, s.KW = 3, s.OH = 5, s.OW = 4;
  s.strideH = s.strideW = 2, s.padTop = s.padLeft = 1, s.type = ElemType::F16;
  KernelLaunch half = emitIm2Col(s);
  EXPECT_NE(half.source.find("const kiln_w16* __restrict__ vin"), std::string::npos);
  EXPECT_EQ(half.grid[0], kernels::gridStrideBlocks(2 * 5 * 4 * 9 * 64 / 8, 256));
  expectKernel(half, 2);
  s.C = 3, s.dilationH = 2, s.OH = 3, s.type = ElemType::F32;
  KernelLaunch rgb = emitIm2Col(s);
  EXPECT_EQ(rgb.source.find("vin[((t"), rgb.source.rfind("vin[((t")) << "one (element) loop only";
  expectKernel(rgb, 2);
  s.KH = 0;
  EXPECT_THROW(emitIm2Col(s), std::invalid_argument);
}

// ---------------------------------------------------------------------------------------------
// Fused attention: views from the operands' permutations, what the kernel refuses.

TEST(AttentionKernel, ViewsFromPermutations) {
  // BERT: [B, S, H, D] read as [B, H, S, D] (Kᵀ through 0,2,3,1); Y stored back as [B, S, H, D].
  AttentionSpec s = attentionSpec({{2, 77, 12, 64}, {}, {0, 2, 1, 3}}, {{2, 77, 12, 64}, {}, {0, 2, 3, 1}},
                                  {{2, 77, 12, 64}, {}, {0, 2, 1, 3}}, {0, 2, 1, 3});
  EXPECT_EQ(s.batchShape, (std::vector<int64_t>{2, 12}));
  EXPECT_EQ(s.Sq, 77);
  EXPECT_EQ(s.Sk, 77);
  EXPECT_EQ(s.D, 64);
  EXPECT_EQ(s.q.rowStride, 768);
  EXPECT_EQ(s.q.batchStrides, (std::vector<int64_t>{77 * 768, 64}));
  EXPECT_EQ(s.k.rowStride, 768);
  EXPECT_EQ(s.y.rowStride, 768);
  EXPECT_EQ(s.y.batchStrides, (std::vector<int64_t>{77 * 768, 64}));
  s.hasMask = true;
  s.maskShape = {2, 1, 1, 77};
  KernelLaunch k = emitAttention(s);
  expectKernel(k, 5);
  EXPECT_EQ(k.grid[0], 2u);   // 77 query rows in blocks of 64
  EXPECT_EQ(k.grid[1], 24u);  // one block row per batch and head
  s.rowsPerBlock = 128;       // eight warps
  KernelLaunch wide = emitAttention(s);
  EXPECT_EQ(wide.block[0], 256u);
  EXPECT_EQ(wide.grid[0], 1u);
  s.rowsPerBlock = 96;
  EXPECT_NE(attentionUnsupported(s), "");
  s.rowsPerBlock = 64;
  // K broadcast over a leading batch dim (stride 0), contiguous Y.
  AttentionSpec b = attentionSpec({{2, 3, 17, 40}}, {{3, 24, 40}, {}, {0, 2, 1}}, {{3, 24, 40}}, {});
  EXPECT_EQ(b.k.batchStrides, (std::vector<int64_t>{0, 24 * 40}));
  EXPECT_EQ(b.y.rowStride, 40);
  expectKernel(emitAttention(b), 4);
  // A strided view: ViT's packed [S, B, 3, H, D] projection, K at offset H·D, read as [B, H, S, D].
  AttentionOperand packed{{2, 12, 197, 64}, {3 * 768, 64, 2 * 3 * 768, 1}, {0, 1, 3, 2}, 768};
  AttentionSpec v = attentionSpec({{2, 12, 197, 64}}, packed, {{2, 12, 197, 64}}, {});
  EXPECT_EQ(v.k.batchStrides, (std::vector<int64_t>{3 * 768, 64}));
  EXPECT_EQ(v.k.rowStride, 2 * 3 * 768);
  EXPECT_EQ(v.k.offset, 768);
  EXPECT_NE(emitAttention(v).source.find("OFFK = 768LL"), std::string::npos);
  packed.offset = 4;  // not 16-byte aligned
  EXPECT_NE(attentionUnsupported(attentionSpec({{2, 12, 197, 64}}, packed, {{2, 12, 197, 64}}, {})), "");
}

TEST(AttentionKernel, Refusals) {
  // K stored as Kᵀ is not read along the head dim; sizes that do not chain.
  EXPECT_THROW(attentionSpec({{2, 4, 8}}, {{2, 8, 4}}, {{2, 4, 8}}, {}), std::invalid_argument);
  EXPECT_THROW(attentionSpec({{2, 4, 8}}, {{2, 5, 8}, {}, {0, 2, 1}}, {{2, 4, 8}}, {}), std::invalid_argument);
  AttentionSpec s = attentionSpec({{2, 4, 8}}, {{2, 4, 8}, {}, {0, 2, 1}}, {{2, 4, 8}}, {});
  EXPECT_EQ(attentionUnsupported(s), "");
  s.type = ElemType::F32;
  EXPECT_NE(attentionUnsupported(s), "");
  EXPECT_THROW(emitAttention(s), std::invalid_argument);
  AttentionSpec odd = attentionSpec({{2, 4, 6}}, {{2, 4, 6}, {}, {0, 2, 1}}, {{2, 4, 6}}, {});
  EXPECT_NE(attentionUnsupported(odd), "");
  AttentionSpec wide = attentionSpec({{2, 4, 136}}, {{2, 4, 136}, {}, {0, 2, 1}}, {{2, 4, 136}}, {});
  EXPECT_NE(attentionUnsupported(wide), "");
}

// The zoo's attention kernels keep their registers: no spills, and named barriers with constant
// ids (a register id makes ptxas reserve all 16 per block). Both once cost BERT's heads 15 % on
// the H200 (166 registers instead of 134 and 16 barriers).
// `k` compiled for `arch` with ptxas's resource report (registers, spills, barriers) in its log.
CompileOutput compileWithPtxasReport(const KernelLaunch &k, const char *arch) {
  CompileOptions o;
  o.ptxasVerbose = true;
  return compileKernel(k.source, k.entry, arch, o);
}

TEST(AttentionKernel, ZooShapesDoNotSpill) {
  if (!nvrtcAvailable()) GTEST_SKIP() << nvrtcLoadError();
  const std::vector<int64_t> bhsd = {0, 2, 1, 3}, bhds = {0, 2, 3, 1};
  AttentionSpec bert =
      attentionSpec({{32, 128, 12, 64}, {}, bhsd}, {{32, 128, 12, 64}, {}, bhds}, {{32, 128, 12, 64}, {}, bhsd}, bhsd);
  bert.hasMask = true, bert.maskShape = {32, 1, 1, 128}, bert.maskType = ElemType::F16;
  AttentionSpec vit = attentionSpec({{197, 384, 64}, {}, {1, 0, 2}}, {{197, 384, 64}, {}, {1, 2, 0}},
                                    {{197, 384, 64}, {}, {1, 0, 2}}, {1, 0, 2});
  vit.rowsPerBlock = 128;
  AttentionSpec gpt2 =
      attentionSpec({{1, 512, 12, 64}, {}, bhsd}, {{1, 512, 12, 64}, {}, bhds}, {{1, 512, 12, 64}, {}, bhsd}, bhsd);
  gpt2.causal = true, gpt2.keySplit = 2;
  for (const AttentionSpec &s : {bert, vit, gpt2}) {
    KernelLaunch k = emitAttention(s);
    SCOPED_TRACE(k.source.substr(0, k.source.find('\n')));
    CompileOutput out = compileWithPtxasReport(k, "sm_90");
    ASSERT_TRUE(out.ok()) << out.error;
    EXPECT_NE(out.log.find(" 0 bytes spill stores"), std::string::npos) << out.log;
    EXPECT_NE(out.log.find(s.keySplit == 1 ? "used 1 barriers" : "used 3 barriers"), std::string::npos) << out.log;
  }
}

// The wgmma product (sm_90a only): every tile width compiles for fp16 and bf16 without spills (the
// accumulators, 64 to 128 floats a thread, stay in registers) as a persistent grid of at most one
// block per SM, A and B as tensor maps; sizes it does not take are named.
TEST(WgmmaKernel, CompilesWithoutSpills) {
  if (!nvrtcAvailable()) GTEST_SKIP() << nvrtcLoadError();
  for (int bn : {64, 128, 256})
    for (ElemType t : {ElemType::F16, ElemType::BF16, ElemType::F8E4M3}) {
      WgmmaGemmSpec s;
      s.M = 1000, s.N = 1000, s.K = 1008, s.type = t, s.blockN = bn, s.stages = bn == 256 ? 3 : 4, s.smCount = 5;
      if (t == ElemType::F8E4M3) s.outType = ElemType::F16;
      KernelLaunch k = emitWgmmaGemm(s);
      SCOPED_TRACE(k.source.substr(0, k.source.find('\n')));
      CompileOutput out = compileWithPtxasReport(k, "sm_90a");
      ASSERT_TRUE(out.ok()) << out.error;
      EXPECT_NE(out.log.find(" 0 bytes spill stores"), std::string::npos) << out.log;
      EXPECT_EQ(k.sharedBytes, uint32_t(s.stages * (128 + bn) * 128 + 1024 + 16 * s.stages + 8 * 16 * 36 * 4));
      EXPECT_EQ(k.grid[0], 5u);
      EXPECT_EQ(k.block[0], 384u);
      EXPECT_TRUE(k.archSpecific);
      ASSERT_EQ(k.tensorMaps.size(), 2u);
      EXPECT_EQ(k.tensorMaps.at(1).box, (std::vector<uint32_t>{t == ElemType::F8E4M3 ? 128u : 64u, uint32_t(bn)}));
      EXPECT_EQ(k.tensorMaps.at(0).dims, (std::vector<uint64_t>{1008, 1000}));
    }
  // An epilogue (bias, then GELU's tanh form) into fp32: the bias read as vectors of 4 (16-byte
  // fp32 stores); the stores staged per warp.
  WgmmaGemmSpec epi;
  epi.M = 4096, epi.N = 768, epi.K = 768, epi.blockN = 128, epi.stages = 6;
  epi.outType = ElemType::F32;
  epi.epilogue.inputShapes = {{768}};
  epi.epilogue.inputTypes = {ElemType::F16};
  epi.epilogue.body = {"const float t0 = acc + x0;", "const float t1 = 0.5f * t0 * (1.f + tanhf(0.79788456f * t0));"};
  epi.epilogue.result = "t1";
  KernelLaunch ek = emitWgmmaGemm(epi);
  EXPECT_EQ(ek.numParams, 4);
  EXPECT_NE(ek.source.find("const kiln_vec<kiln_half, 4> v0"), std::string::npos) << ek.source;
  EXPECT_EQ(ek.sharedBytes, uint32_t(6 * 256 * 128 + 1024 + 16 * 6 + 8 * 16 * 36 * 4));
  CompileOutput eout = compileWithPtxasReport(ek, "sm_90a");
  ASSERT_TRUE(eout.ok()) << eout.error;
  EXPECT_NE(eout.log.find(" 0 bytes spill stores"), std::string::npos) << eout.log;
  // A residual of a [2, 2048, 768] result read as vectors too; a width that is no multiple of the
  // vector (770 columns) goes one element a thread.
  epi.outShape = {2, 2048, 768};
  epi.epilogue.inputShapes = {{2, 2048, 768}};
  EXPECT_NE(emitWgmmaGemm(epi).source.find("const kiln_vec<kiln_half, 4> v0"), std::string::npos);
  epi.N = 770, epi.outShape = {2, 2048, 770}, epi.epilogue.inputShapes = {{770}};
  std::string odd770 = emitWgmmaGemm(epi).source;
  EXPECT_EQ(odd770.find("kiln_vec<kiln_half"), std::string::npos);
  EXPECT_NE(odd770.find("const IDX L = row * N + col;"), std::string::npos);
  EXPECT_TRUE(compileWithPtxasReport(emitWgmmaGemm(epi), "sm_90a").ok());
  // fp8 with per-column scales (an 8-bit product's dequantization) before the epilogue.
  WgmmaGemmSpec f8 = epi;
  f8.N = 768, f8.type = ElemType::F8E4M3, f8.columnScale = true, f8.outShape = {};
  f8.epilogue.inputShapes = {{768}};
  KernelLaunch fk = emitWgmmaGemm(f8);
  EXPECT_EQ(fk.numParams, 5);
  EXPECT_NE(fk.source.find("stage[r * SLD + c + e] * colScale[gn + e]"), std::string::npos) << fk.source;
  CompileOutput fout = compileWithPtxasReport(fk, "sm_90a");
  ASSERT_TRUE(fout.ok()) << fout.error;
  EXPECT_NE(fout.log.find(" 0 bytes spill stores"), std::string::npos) << fout.log;
  // The ping-pong schedule (each consumer warpgroup its own 128-row tiles, two accumulator sets):
  // without spills at tile N 64 and 128; refused wider.
  for (int bn : {64, 128}) {
    WgmmaGemmSpec pp;
    pp.M = 4096, pp.N = 768, pp.K = 768, pp.blockN = bn, pp.stages = 6, pp.pingpong = true;
    KernelLaunch pk = emitWgmmaGemm(pp);
    EXPECT_NE(pk.source.find("#define PINGPONG 1"), std::string::npos);
    CompileOutput pout = compileWithPtxasReport(pk, "sm_90a");
    ASSERT_TRUE(pout.ok()) << pout.error;
    EXPECT_NE(pout.log.find(" 0 bytes spill stores"), std::string::npos) << pout.log;
  }
  WgmmaGemmSpec wide;
  wide.M = wide.N = wide.K = 1024, wide.blockN = 256, wide.stages = 4, wide.pingpong = true;
  EXPECT_EQ(wgmmaUnsupported(wide), "a ping-pong tile N over 128 (two accumulator sets a thread)");
  // Only sm_90 has wgmma; its kernels compile for the arch-specific variant.
  std::string error;
  EXPECT_TRUE(target::GpuTarget::parse("sm_90", error)->has(target::Feature::Wgmma));
  EXPECT_FALSE(target::GpuTarget::parse("sm_89", error)->has(target::Feature::Wgmma));
  EXPECT_FALSE(target::GpuTarget::parse("sm_100", error)->has(target::Feature::Wgmma));
  EXPECT_EQ(target::archSpecificName("sm_90"), "sm_90a");
  EXPECT_EQ(target::archSpecificName("sm_90a"), "sm_90a");
  WgmmaGemmSpec odd;
  odd.M = odd.N = 64, odd.K = 36;
  EXPECT_EQ(wgmmaUnsupported(odd), "rows of K that are no multiple of 16 bytes");
  odd.K = 64, odd.blockN = 256, odd.stages = 6;
  EXPECT_EQ(wgmmaUnsupported(odd), "more shared memory than a block has");
  odd.stages = 3, odd.type = ElemType::F32;
  EXPECT_EQ(wgmmaUnsupported(odd), "operands other than fp16, bf16 and fp8 e4m3");
  odd.type = ElemType::F16, odd.epilogue.inputShapes = {{65}}, odd.epilogue.inputTypes = {ElemType::F16};
  EXPECT_NE(wgmmaUnsupported(odd).find("its epilogue: "), std::string::npos) << wgmmaUnsupported(odd);
}

// ---------------------------------------------------------------------------------------------
// The GPU harness's cases all map to kernels that compile.

TEST(KernelCases, EveryCaseEmitsAndCompiles) {
  std::set<std::string> names;
  for (const cases::KernelCase &c : cases::kernelCases()) {
    SCOPED_TRACE(c.name);
    EXPECT_TRUE(names.insert(c.name).second) << "duplicate case name";
    std::vector<KernelLaunch> ks = cases::emitKernelCase(c);
    ASSERT_FALSE(ks.empty());
    for (const KernelLaunch &k : ks) {
      int params = k.numParams;  // checked against the emitter's own count
      expectKernel(k, params);
    }
  }
}

}  // namespace
}  // namespace kiln::codegen

// Kernel tests for the convolution, matrix, pooling, data-movement and resize ops, through the
// registry API only (kiln::ops::evaluate / inferTypes). Expected values are computed by hand.
#include "compiler/ops/OpSemantics.h"
#include "compiler/ops/Resize.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace {

using namespace kiln::ops;

Tensor f32(Shape s, std::vector<double> v) { return Tensor::fromDoubles(DType::F32, std::move(s), v); }
Tensor i64(Shape s, std::vector<int64_t> v) { return Tensor::fromInts(DType::I64, std::move(s), v); }

ShapeContext shapeCtx(const std::vector<const Tensor *> &ins, const Attrs &attrs, int nout, bool withValues) {
  ShapeContext sc{{}, {}, attrs, nout};
  for (const Tensor *t : ins) {
    sc.inputs.push_back(t ? TensorType{t->dtype, t->shape} : TensorType{});
    sc.values.push_back(withValues ? t : nullptr);
  }
  return sc;
}

// Evaluates `op` expecting success, and checks that the shape function (given every input as a
// constant) agrees with the kernel's results.
std::vector<Tensor> eval(const std::string &op, const std::vector<const Tensor *> &ins, const Attrs &attrs = Attrs(),
                         int nout = 1) {
  EvalContext ec{ins, attrs, nout};
  std::vector<Tensor> out;
  auto err = evaluate(op, ec, out);
  EXPECT_FALSE(err.has_value()) << op << ": " << err.value_or("");
  std::vector<TensorType> types;
  auto serr = inferTypes(op, shapeCtx(ins, attrs, nout, true), types);
  EXPECT_FALSE(serr.has_value()) << op << " (shape): " << serr.value_or("");
  if (!err && !serr) {
    EXPECT_EQ(types.size(), out.size()) << op;
    for (size_t k = 0; k < types.size() && k < out.size(); ++k) {
      EXPECT_EQ(types[k].dtype, out[k].dtype) << op << " output " << k;
      EXPECT_EQ(types[k].shape, out[k].shape) << op << " output " << k;
    }
  }
  return out;
}

// Expects both the kernel and the shape function to fail; returns the kernel's message.
std::string evalError(const std::string &op, const std::vector<const Tensor *> &ins, const Attrs &attrs = Attrs(),
                      int nout = 1) {
  EvalContext ec{ins, attrs, nout};
  std::vector<Tensor> out;
  auto err = evaluate(op, ec, out);
  EXPECT_TRUE(err.has_value()) << op << " unexpectedly succeeded";
  std::vector<TensorType> types;
  auto serr = inferTypes(op, shapeCtx(ins, attrs, nout, true), types);
  EXPECT_TRUE(serr.has_value()) << op << " shape function unexpectedly succeeded";
  return err.value_or("");
}

void expectValues(const Tensor &t, const Shape &shape, const std::vector<double> &v) {
  ASSERT_EQ(t.shape, shape);
  ASSERT_EQ(t.size(), static_cast<int64_t>(v.size()));
  for (size_t k = 0; k < v.size(); ++k) EXPECT_NEAR(t.get(k), v[k], 1e-5) << "element " << k;
}

bool contains(const std::string &s, const std::string &part) { return s.find(part) != std::string::npos; }

// ---------------------------------------------------------------------------------------------

TEST(OpsTensor, ConvGroupsPadsStridesBias) {
  // Two groups of one channel each; pads 1, stride 2, a 2x2 kernel.
  Tensor x = f32({1, 2, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9,             // channel 0
                                10, 11, 12, 13, 14, 15, 16, 17, 18});  // channel 1
  Tensor w = f32({2, 1, 2, 2}, {1, 1, 1, 1,                            // sums the window
                                1, 0, 0, -1});                         // top-left minus bottom-right
  Tensor b = f32({2}, {0.5, -1});
  Attrs a;
  a.set("group", int64_t{2});
  a.set("pads", std::vector<int64_t>{1, 1, 1, 1});
  a.set("strides", std::vector<int64_t>{2, 2});
  auto y = eval("Conv", {&x, &w, &b}, a);
  ASSERT_EQ(y.size(), 1u);
  // Channel 0: windows of the zero-padded input at rows/cols {-1,0} and {1,2}.
  // Channel 1: P[r][c] - P[r+1][c+1] - 1 on the padded input.
  expectValues(y[0], {1, 2, 2, 2}, {1.5, 5.5, 11.5, 28.5, -11, -13, -17, -5});
}

TEST(OpsTensor, ConvAutoPadSameUpperAndDepthwise) {
  // Depthwise (group = C = 2) 1-D conv, kernel 2, SAME_UPPER: the extra pad goes at the end.
  Tensor x = f32({1, 2, 3}, {1, 2, 3, 10, 20, 30});
  Tensor w = f32({2, 1, 2}, {1, 1, 1, -1});
  Attrs a;
  a.set("group", int64_t{2});
  a.set("auto_pad", std::string("SAME_UPPER"));
  auto y = eval("Conv", {&x, &w}, a);
  expectValues(y[0], {1, 2, 3}, {3, 5, 3, -10, -10, 30});
}

TEST(OpsTensor, ConvRejectsChannelMismatch) {
  Tensor x = f32({1, 3, 4, 4}, std::vector<double>(48, 1.0));
  Tensor w = f32({2, 2, 3, 3}, std::vector<double>(36, 1.0));
  std::string msg = evalError("Conv", {&x, &w});
  EXPECT_TRUE(contains(msg, "3 channels")) << msg;
  EXPECT_TRUE(contains(msg, "group=1")) << msg;
}

// Im2Col (kiln-internal): patches of an NHWC image as rows, (kh, kw, c) order, zero taps in the
// padding. A 1x3x3x2 image (element = 10·(row·3 + col) + channel), a 2x2 kernel, stride 2,
// pads top/left 1: output 2x2 patches of 8.
TEST(OpsTensor, Im2ColPatchesWithPadding) {
  std::vector<double> v;
  for (int p = 0; p < 9; ++p)
    for (int c = 0; c < 2; ++c) v.push_back(10 * p + c);
  Tensor x = f32({1, 3, 3, 2}, v);
  Attrs a;
  a.set("kernel_shape", std::vector<int64_t>{2, 2});
  a.set("strides", std::vector<int64_t>{2, 2});
  a.set("pads", std::vector<int64_t>{1, 1, 0, 0});
  auto y = eval("Im2Col", {&x}, a);
  expectValues(y[0], {1, 2, 2, 8}, {0,  0,  0,  0,  0,  0,  0,  1,   // (0,0): only tap (1,1) is inside → pixel (0,0)
                                    0,  0,  0,  0,  10, 11, 20, 21,  // (0,1): taps (1,0), (1,1) → pixels (0,1), (0,2)
                                    0,  0,  30, 31, 0,  0,  60, 61,  // (1,0): taps (0,1), (1,1) → pixels (1,0), (2,0)
                                    40, 41, 50, 51, 70, 71, 80, 81});  // (1,1): pixels (1,1), (1,2), (2,1), (2,2)
  a.set("kernel_shape", std::vector<int64_t>{5, 1});
  EXPECT_TRUE(contains(evalError("Im2Col", {&x}, a), "larger than the padded image"));
  a.set("kernel_shape", std::vector<int64_t>{2});
  EXPECT_TRUE(contains(evalError("Im2Col", {&x}, a), "need 2 values"));
}

// Attention (kiln-internal), by hand: one query, two keys stored [1, Sk, D] (perm_k reads Kᵀ),
// scale 0.5: scores ln 3 and 0, probabilities 3/4 and 1/4; an additive mask levels them to 1/2.
TEST(OpsTensor, AttentionByHand) {
  const double ln3 = std::log(3.0);
  Tensor q = f32({1, 1, 2}, {2, 0});
  Tensor k = f32({1, 2, 2}, {ln3, 5, 0, 7});  // keys [ln 3, 5] and [0, 7]
  Tensor v = f32({1, 2, 2}, {4, 8, 0, -4});
  Attrs a;
  a.set("scale", 0.5);
  a.set("perm_k", std::vector<int64_t>{0, 2, 1});
  expectValues(eval("Attention", {&q, &k, &v, nullptr}, a)[0], {1, 1, 2}, {3, 5});
  Tensor mask = f32({2}, {0, ln3});
  expectValues(eval("Attention", {&q, &k, &v, &mask}, a)[0], {1, 1, 2}, {2, 2});
  Tensor wide = f32({3}, {0, 0, 0});
  EXPECT_TRUE(contains(evalError("Attention", {&q, &k, &v, &wide}, a), "does not broadcast to the scores"));
  a.set("perm_q", std::vector<int64_t>{0, 0, 1});
  EXPECT_TRUE(contains(evalError("Attention", {&q, &k, &v, nullptr}, a), "perm_q [0, 0, 1] is not a permutation"));
  a.set("perm_q", std::vector<int64_t>{0, 1, 2});
  Tensor k3 = f32({1, 2, 3}, std::vector<double>(6, 1.0));  // head size 3, Q's is 2
  EXPECT_TRUE(contains(evalError("Attention", {&q, &k3, &v, nullptr}, a), "inner dimensions"));
}

// StridedView (kiln-internal): the middle column of a 3x3 matrix read as [3] (offset 1,
// stride 3), its transpose as strides; a view past the end is refused.
TEST(OpsTensor, StridedViewByHand) {
  Tensor x = f32({3, 3}, {0, 1, 2, 3, 4, 5, 6, 7, 8});
  Attrs a;
  a.set("shape", std::vector<int64_t>{3});
  a.set("strides", std::vector<int64_t>{3});
  a.set("offset", int64_t{1});
  expectValues(eval("StridedView", {&x}, a)[0], {3}, {1, 4, 7});
  a.set("shape", std::vector<int64_t>{3, 3});
  a.set("strides", std::vector<int64_t>{1, 3});
  a.set("offset", int64_t{0});
  expectValues(eval("StridedView", {&x}, a)[0], {3, 3}, {0, 3, 6, 1, 4, 7, 2, 5, 8});
  a.set("offset", int64_t{1});
  EXPECT_TRUE(contains(evalError("StridedView", {&x}, a), "reads past the end"));
}

TEST(OpsTensor, MatMulBroadcastsBatchDims) {
  Tensor a = f32({2, 1, 1, 2}, {1, 2, 3, 4});     // batch (2, 1)
  Tensor b = f32({3, 2, 1}, {1, 1, 1, 0, 0, 2});  // batch (3)
  auto y = eval("MatMul", {&a, &b});
  expectValues(y[0], {2, 3, 1, 1}, {3, 1, 4, 7, 3, 8});
}

TEST(OpsTensor, MatMulPromotesVectors) {
  Tensor v = f32({2}, {1, 2});
  Tensor m = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  auto y = eval("MatMul", {&v, &m});
  expectValues(y[0], {3}, {9, 12, 15});
  Tensor col = f32({3}, {1, 0, -1});
  auto z = eval("MatMul", {&m, &col});
  expectValues(z[0], {2}, {-2, -2});
}

TEST(OpsTensor, MatMulRejectsInnerMismatch) {
  Tensor a = f32({2, 3}, std::vector<double>(6, 1.0));
  Tensor b = f32({2, 3}, std::vector<double>(6, 1.0));
  std::string msg = evalError("MatMul", {&a, &b});
  EXPECT_TRUE(contains(msg, "inner dimensions")) << msg;
}

Attrs equation(const std::string &e) {
  Attrs a;
  a.set("equation", e);
  return a;
}

TEST(OpsTensor, EinsumByHand) {
  Tensor m = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor n = f32({3, 2}, {1, 0, 0, 1, 1, 1});
  expectValues(eval("Einsum", {&m, &n}, equation("ij,jk->ik"))[0], {2, 2}, {4, 5, 10, 11});
  expectValues(eval("Einsum", {&m}, equation("ij->ji"))[0], {3, 2}, {1, 4, 2, 5, 3, 6});
  expectValues(eval("Einsum", {&m}, equation(" i j -> i "))[0], {2}, {6, 15});
  // Implicit output: the labels seen once in character order (A-Z before a-z), so 'ba' transposes
  // and 'aB' becomes 'Ba'.
  expectValues(eval("Einsum", {&m}, equation("ba"))[0], {3, 2}, {1, 4, 2, 5, 3, 6});
  expectValues(eval("Einsum", {&m}, equation("aB"))[0], {3, 2}, {1, 4, 2, 5, 3, 6});
  // Trace (a repeated label, scalar output) and a batched diagonal through an ellipsis.
  Tensor sq = f32({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  expectValues(eval("Einsum", {&sq}, equation("...ii->...i"))[0], {2, 2}, {1, 4, 5, 8});
  Tensor t = f32({2, 2}, {1, 2, 3, 4});
  expectValues(eval("Einsum", {&t}, equation("ii"))[0], {}, {5});
  // Three operands, and an ellipsis that broadcasts (1 against 2).
  Tensor v = f32({2}, {1, -1});
  expectValues(eval("Einsum", {&m, &n, &v}, equation("ij,jk,k->i"))[0], {2}, {-1, -1});
  Tensor b1 = f32({1, 2}, {1, 2}), b2 = f32({2, 2}, {1, 0, 0, 1});
  expectValues(eval("Einsum", {&b1, &b2}, equation("...j,...j->..."))[0], {2}, {1, 2});
  // Integers wrap like a C++ kernel.
  Tensor ia = i64({2}, {3, 4}), ib = i64({2}, {5, 6});
  Tensor dot = eval("Einsum", {&ia, &ib}, equation("i,i"))[0];
  EXPECT_EQ(dot.i, std::vector<int64_t>{39});
}

TEST(OpsTensor, EinsumErrorsNameTheProblem) {
  Tensor m = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor w = f32({4}, {1, 2, 3, 4});
  EXPECT_TRUE(contains(evalError("Einsum", {&m}, equation("i1->i")), "'1' is not a label"));
  EXPECT_TRUE(contains(evalError("Einsum", {&m}, equation("ij,jk->ik")), "2 input terms for 1 inputs"));
  EXPECT_TRUE(contains(evalError("Einsum", {&m}, equation("ijk->i")), "3 labels for an input of rank 2"));
  EXPECT_TRUE(contains(evalError("Einsum", {&m, &w}, equation("ij,j->i")), "3 long in one input and 4"));
  EXPECT_TRUE(contains(evalError("Einsum", {&m}, equation("ij->ik")), "names a label no input has"));
  EXPECT_TRUE(contains(evalError("Einsum", {&m}, equation("ij->ii")), "appears twice in the output"));
  EXPECT_TRUE(contains(evalError("Einsum", {&m}, equation("......")), "two ellipses"));
  EXPECT_TRUE(contains(evalError("Einsum", {&m}, Attrs()), "'equation' is required"));
}

TEST(OpsTensor, SliceNegativeStepsAndClamping) {
  Tensor data = f32({10}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  Tensor starts = i64({1}, {-1});
  Tensor ends = i64({1}, {std::numeric_limits<int64_t>::min()});
  Tensor axes = i64({1}, {0});
  Tensor steps = i64({1}, {-3});
  auto y = eval("Slice", {&data, &starts, &ends, &axes, &steps});
  expectValues(y[0], {4}, {9, 6, 3, 0});

  // 2-D, both axes reversed, an out-of-range start clamped to the last element.
  Tensor m = f32({3, 4}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  Tensor s2 = i64({2}, {100, 3}), e2 = i64({2}, {0, 0}), a2 = i64({2}, {0, -1});
  Tensor st2 = i64({2}, {-1, -2});
  auto z = eval("Slice", {&m, &s2, &e2, &a2, &st2});
  expectValues(z[0], {2, 2}, {11, 9, 7, 5});
}

TEST(OpsTensor, SliceNeedsConstantStarts) {
  Tensor data = f32({4}, {0, 1, 2, 3});
  Tensor starts = i64({1}, {0}), ends = i64({1}, {2});
  Attrs a;
  std::vector<TensorType> types;
  auto err = inferTypes("Slice", shapeCtx({&data, &starts, &ends}, a, 1, false), types);
  ASSERT_TRUE(err.has_value());
  EXPECT_TRUE(contains(*err, "compile-time constant")) << *err;
}

TEST(OpsTensor, ReshapeZeroCopiesAndMinusOneInfers) {
  Tensor data = f32({2, 3, 4}, std::vector<double>(24, 1.0));
  Tensor shape = i64({3}, {0, -1, 2});
  auto y = eval("Reshape", {&data, &shape});
  ASSERT_EQ(y[0].shape, (Shape{2, 6, 2}));

  // allowzero=1: 0 is a real zero-size dim, so 24 elements cannot fit.
  Attrs az;
  az.set("allowzero", int64_t{1});
  Tensor zero = i64({2}, {0, 24});
  std::string msg = evalError("Reshape", {&data, &zero}, az);
  EXPECT_TRUE(contains(msg, "cannot reshape")) << msg;

  Tensor two = i64({2}, {-1, -1});
  msg = evalError("Reshape", {&data, &two});
  EXPECT_TRUE(contains(msg, "more than one -1")) << msg;
}

TEST(OpsTensor, PadReflectEdgeWrap) {
  Tensor data = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor pads = i64({4}, {0, 2, 0, 1});  // axis 1: 2 before, 1 after
  Attrs reflect;
  reflect.set("mode", std::string("reflect"));
  expectValues(eval("Pad", {&data, &pads}, reflect)[0], {2, 6}, {3, 2, 1, 2, 3, 2, 6, 5, 4, 5, 6, 5});
  Attrs edge;
  edge.set("mode", std::string("edge"));
  expectValues(eval("Pad", {&data, &pads}, edge)[0], {2, 6}, {1, 1, 1, 2, 3, 3, 4, 4, 4, 5, 6, 6});
  Attrs wrap;
  wrap.set("mode", std::string("wrap"));
  expectValues(eval("Pad", {&data, &pads}, wrap)[0], {2, 6}, {2, 3, 1, 2, 3, 1, 5, 6, 4, 5, 6, 4});
  // Constant mode with a value; a negative pad crops.
  Tensor crop = i64({4}, {1, -1, 0, 1});
  Tensor value = f32({}, {9});
  expectValues(eval("Pad", {&data, &crop, &value})[0], {3, 3}, {9, 9, 9, 2, 3, 9, 5, 6, 9});
}

TEST(OpsTensor, ResizeLinearHalfPixel) {
  Tensor x = f32({1, 1, 2, 2}, {1, 2, 3, 4});
  Tensor scales = f32({4}, {1, 1, 2, 2});
  Attrs a;
  a.set("mode", std::string("linear"));
  auto y = eval("Resize", {&x, nullptr, &scales}, a);
  expectValues(y[0], {1, 1, 4, 4}, {1, 1.25, 1.75, 2, 1.5, 1.75, 2.25, 2.5, 2.5, 2.75, 3.25, 3.5, 3, 3.25, 3.75, 4});
}

// The tap tables the GPU kernel reads (compiler/ops/Resize.h) rebuild the evaluator's output.
TEST(OpsTensor, ResizePlanTapsRebuildTheOutput) {
  Tensor x = f32({1, 1, 2, 3}, {1, 2, 3, 4, 5, 7});
  Tensor scales = f32({4}, {1, 1, 2.5, 1.5});
  for (const char *mode : {"nearest", "linear", "cubic"}) {
    SCOPED_TRACE(mode);
    Attrs a;
    a.set("mode", std::string(mode));
    ShapeContext ctx{
        {{DType::F32, x.shape}, {DType::Undefined, {}}, {DType::F32, scales.shape}}, {nullptr, nullptr, &scales}, a, 1};
    ResizePlan p = resizePlan("Resize", ctx);
    Tensor y = eval("Resize", {&x, nullptr, &scales}, a)[0];
    ASSERT_EQ(p.out, y.shape);
    ASSERT_EQ(p.axes.size(), 4u);
    EXPECT_EQ(p.axes[0][0].taps, (std::vector<std::pair<int64_t, double>>{{0, 1.0}}));  // N, C keep their index
    for (int64_t oh = 0; oh < p.out[2]; ++oh)
      for (int64_t ow = 0; ow < p.out[3]; ++ow) {
        double v = 0;
        for (auto [ih, wh] : p.axes[2][size_t(oh)].taps)
          for (auto [iw, ww] : p.axes[3][size_t(ow)].taps) v += wh * ww * x.get(ih * 3 + iw);
        EXPECT_NEAR(v, y.get(oh * p.out[3] + ow), 1e-6) << oh << "," << ow;
      }
  }
}

TEST(OpsTensor, ResizeNeedsExactlyOneOfScalesAndSizes) {
  Tensor x = f32({1, 1, 2, 2}, {1, 2, 3, 4});
  Tensor scales = f32({4}, {1, 1, 2, 2});
  Tensor sizes = i64({4}, {1, 1, 4, 4});
  std::string msg = evalError("Resize", {&x, nullptr, &scales, &sizes});
  EXPECT_TRUE(contains(msg, "exactly one")) << msg;
}

TEST(OpsTensor, MaxPoolIndices) {
  Tensor x = f32({1, 1, 2, 3}, {1, 6, 2, 5, 3, 4});
  Attrs a;
  a.set("kernel_shape", std::vector<int64_t>{2, 2});
  auto y = eval("MaxPool", {&x}, a, 2);
  ASSERT_EQ(y.size(), 2u);
  expectValues(y[0], {1, 1, 1, 2}, {6, 6});
  EXPECT_EQ(y[1].dtype, DType::I64);
  expectValues(y[1], {1, 1, 1, 2}, {1, 1});
  a.set("storage_order", int64_t{1});  // column-major: offset h + w * H
  expectValues(eval("MaxPool", {&x}, a, 2)[1], {1, 1, 1, 2}, {2, 2});
}

TEST(OpsTensor, SplitAndConcatRoundTrip) {
  Tensor x = f32({2, 5}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  Attrs a;
  a.set("axis", int64_t{1});
  auto parts = eval("Split", {&x}, a, 3);  // 5 into 3: 2, 2, 1
  ASSERT_EQ(parts.size(), 3u);
  expectValues(parts[0], {2, 2}, {0, 1, 5, 6});
  expectValues(parts[2], {2, 1}, {4, 9});
  auto joined = eval("Concat", {&parts[0], &parts[1], &parts[2]}, a);
  expectValues(joined[0], {2, 5}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
}

TEST(OpsTensor, ClearErrorsOnBadShapes) {
  Tensor a = f32({2, 3}, std::vector<double>(6, 0.0));
  Tensor b = f32({2, 4}, std::vector<double>(8, 0.0));
  Attrs axis0;
  axis0.set("axis", int64_t{0});
  std::string msg = evalError("Concat", {&a, &b}, axis0);
  EXPECT_TRUE(contains(msg, "Concat")) << msg;

  Tensor idx = i64({1}, {2});
  msg = evalError("Gather", {&a, &idx});  // axis 0 has size 2
  EXPECT_TRUE(contains(msg, "out of range")) << msg;

  Attrs badPerm;
  badPerm.set("perm", std::vector<int64_t>{0, 0});
  msg = evalError("Transpose", {&a}, badPerm);
  EXPECT_TRUE(contains(msg, "permutation")) << msg;

  Tensor big = i64({2}, {3, 3});
  msg = evalError("Expand", {&a, &big});
  EXPECT_TRUE(contains(msg, "broadcast")) << msg;
}

// float8e4m3fn: every finite bit pattern round-trips, the neighbours' midpoints round to the
// even mantissa, and the ends (448, subnormals, NaN) behave as ONNX specifies.
TEST(OpsTensor, Float8E4M3Rounding) {
  std::vector<double> finite;
  for (int b = 0; b < 256; ++b) {
    double v = e4m3FromBits(uint8_t(b));
    if ((b & 0x7f) == 0x7f) {
      EXPECT_TRUE(std::isnan(v)) << b;
      continue;
    }
    EXPECT_EQ(roundToE4M3(v), v) << b;
    EXPECT_EQ(e4m3Bits(v), uint8_t(b)) << b;
    if (b < 0x80) finite.push_back(v);
  }
  ASSERT_EQ(finite.size(), 127u);
  for (size_t k = 0; k + 1 < finite.size(); ++k) {
    double mid = (finite[k] + finite[k + 1]) / 2, even = (k % 2 == 0) ? finite[k] : finite[k + 1];
    EXPECT_EQ(roundToE4M3(mid), even) << mid;
    EXPECT_EQ(roundToE4M3(-mid), -even) << mid;
  }
  EXPECT_EQ(finite.back(), 448.0);
  EXPECT_EQ(finite[1], std::ldexp(1.0, -9));  // the smallest subnormal
  EXPECT_EQ(roundToE4M3(464.0), 448.0);       // the midpoint to 480 rounds to even (448)
  EXPECT_EQ(roundToE4M3(1e6), 448.0);
  EXPECT_EQ(roundToE4M3(-1e6), -448.0);
  EXPECT_TRUE(std::isnan(roundToE4M3(500.0, /*saturate=*/false)));
  EXPECT_EQ(roundToE4M3(std::ldexp(1.0, -10)), 0.0);  // half the smallest subnormal: to even (0)
  EXPECT_EQ(roundToE4M3(std::ldexp(1.5, -10)), std::ldexp(1.0, -9));
  // QuantizeLinear to float8 (zero point float8 0): x / scale rounded, saturating by default.
  Tensor x = f32({4}, {1.0, -3.3, 1000.0, 0.01}), scale = f32({}, {0.5});
  Tensor zp(DType::F8E4M3, {});
  Tensor q = eval("QuantizeLinear", {&x, &scale, &zp})[0];
  ASSERT_EQ(q.dtype, DType::F8E4M3);
  EXPECT_EQ(q.f, (std::vector<double>{2.0, -6.5, 448.0, 0.01953125}));
  Attrs noSat;
  noSat.set("saturate", int64_t(0));
  EXPECT_TRUE(std::isnan(eval("QuantizeLinear", {&x, &scale, &zp}, noSat)[0].f[2]));
  Tensor dq = eval("DequantizeLinear", {&q, &scale, &zp})[0];
  EXPECT_EQ(dq.f, (std::vector<double>{1.0, -3.25, 224.0, 0.009765625}));
}

}  // namespace

// halfBytesFromF32 gives the bits of the reference path (clamp to the largest finite, round with
// roundTo, tensorToBytes) for every kind of float: normals across the range, halfway cases,
// subnormals of the half types, values at and past the saturation point, zeros and infinities.
TEST(Tensor, HalfBytesFromF32MatchesTheReference) {
  std::vector<float> values = {0.0f,
                               -0.0f,
                               1.0f,
                               -1.0f,
                               65504.0f,
                               65505.0f,
                               65519.0f,
                               65520.0f,
                               1e6f,
                               -1e30f,
                               3.3895313892515355e38f,
                               3.4e38f,
                               std::numeric_limits<float>::infinity(),
                               -std::numeric_limits<float>::infinity(),
                               std::ldexp(1.0f, -14),
                               std::ldexp(1.0f, -24),
                               std::ldexp(1.0f, -25),
                               std::ldexp(1.5f, -25),
                               std::ldexp(3.0f, -26),
                               1.0f + std::ldexp(1.0f, -11),
                               1.0f + std::ldexp(3.0f, -11),
                               1.0f + std::ldexp(1.0f, -8),
                               1.0f + std::ldexp(3.0f, -8),
                               2047.5f,
                               4095.0f};
  std::mt19937 rng(5);
  for (int k = 0; k < 200000; ++k) {
    uint32_t bits = rng();
    float f;
    std::memcpy(&f, &bits, 4);
    if (!std::isnan(f)) values.push_back(f);
  }
  for (kiln::ops::DType half : {kiln::ops::DType::F16, kiln::ops::DType::BF16}) {
    const double maxFinite = half == kiln::ops::DType::F16 ? 65504.0 : 3.3895313892515355e38;
    kiln::ops::Tensor ref(half, {int64_t(values.size())});
    for (size_t k = 0; k < values.size(); ++k) {
      double v = values[k];
      if (std::isfinite(v)) v = std::max(-maxFinite, std::min(maxFinite, v));
      ref.set(int64_t(k), v);
    }
    EXPECT_EQ(kiln::ops::halfBytesFromF32(half, values.data(), values.size()), kiln::ops::tensorToBytes(ref))
        << kiln::ops::dtypeName(half);
  }
}

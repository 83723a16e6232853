// Kernel tests for the elementwise, activation, normalization, reduction and quantization ops,
// through the registry API only (kiln::ops::evaluate / inferTypes).
#include "compiler/ops/OpSemantics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace {

using namespace kiln::ops;

Tensor f32(Shape s, std::vector<double> v) { return Tensor::fromDoubles(DType::F32, std::move(s), v); }
Tensor ints(DType t, Shape s, std::vector<int64_t> v) { return Tensor::fromInts(t, std::move(s), v); }

ShapeContext shapeContext(const std::vector<const Tensor *> &ins, const Attrs &attrs, int nout,
                          bool withValues = true) {
  ShapeContext sc{{}, {}, attrs, nout};
  for (const Tensor *t : ins) {
    sc.inputs.push_back(t ? TensorType{t->dtype, t->shape} : TensorType{});
    sc.values.push_back(withValues ? t : nullptr);
  }
  return sc;
}

// Evaluates `op`, expecting success, and checks that the shape function agrees with the kernel.
std::vector<Tensor> run(const std::string &op, const std::vector<const Tensor *> &ins, const Attrs &attrs = Attrs(),
                        int nout = 1) {
  EvalContext ec{ins, attrs, nout};
  std::vector<Tensor> out;
  auto err = evaluate(op, ec, out);
  EXPECT_FALSE(err.has_value()) << op << ": " << err.value_or("");
  std::vector<TensorType> types;
  auto serr = inferTypes(op, shapeContext(ins, attrs, nout), types);
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

// Evaluates `op`, expecting failure from both the kernel and the shape function; returns the
// kernel's message.
std::string errorOf(const std::string &op, const std::vector<const Tensor *> &ins, const Attrs &attrs = Attrs(),
                    int nout = 1) {
  EvalContext ec{ins, attrs, nout};
  std::vector<Tensor> out;
  auto err = evaluate(op, ec, out);
  EXPECT_TRUE(err.has_value()) << op << " unexpectedly succeeded";
  return err.value_or("");
}

std::string shapeErrorOf(const std::string &op, const ShapeContext &sc) {
  std::vector<TensorType> types;
  auto err = inferTypes(op, sc, types);
  EXPECT_TRUE(err.has_value()) << op << " shape function unexpectedly succeeded";
  return err.value_or("");
}

void expectValues(const Tensor &t, const std::vector<double> &want, double tol = 1e-6) {
  ASSERT_EQ(t.size(), static_cast<int64_t>(want.size()));
  for (int64_t k = 0; k < t.size(); ++k) {
    if (std::isnan(want[k]))
      EXPECT_TRUE(std::isnan(t.get(k))) << "element " << k;
    else
      EXPECT_NEAR(t.get(k), want[k], tol) << "element " << k;
  }
}

void expectContains(const std::string &msg, const std::string &part) {
  EXPECT_NE(msg.find(part), std::string::npos) << "message: \"" << msg << "\" lacks \"" << part << "\"";
}

Attrs attrs(std::initializer_list<std::pair<const std::string, AttrValue>> kv) {
  Attrs a;
  for (auto &p : kv) a.set(p.first, p.second);
  return a;
}

// ---------------------------------------------------------------------------------------------
// Broadcasting

TEST(OpsElementwise, AddBroadcastsRowAgainstMatrix) {
  Tensor a = f32({2, 3}, {1, 2, 3, 4, 5, 6}), b = f32({3}, {10, 20, 30});
  auto out = run("Add", {&a, &b});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].shape, (Shape{2, 3}));
  expectValues(out[0], {11, 22, 33, 14, 25, 36});
}

TEST(OpsElementwise, MulBroadcastsBothOperands) {
  Tensor a = f32({2, 1}, {1, 2}), b = f32({1, 3}, {1, 10, 100});
  auto out = run("Mul", {&a, &b});
  EXPECT_EQ(out[0].shape, (Shape{2, 3}));
  expectValues(out[0], {1, 10, 100, 2, 20, 200});
}

TEST(OpsElementwise, WhereBroadcastsConditionAndBranches) {
  Tensor c = ints(DType::Bool, {2, 1}, {1, 0}), x = f32({3}, {1, 2, 3}), y = f32({}, {-1});
  auto out = run("Where", {&c, &x, &y});
  EXPECT_EQ(out[0].shape, (Shape{2, 3}));
  expectValues(out[0], {1, 2, 3, -1, -1, -1});
}

TEST(OpsElementwise, ComparisonsGiveBool) {
  Tensor a = ints(DType::I64, {3}, {1, 2, 3}), b = ints(DType::I64, {}, {2});
  auto out = run("Less", {&a, &b});
  EXPECT_EQ(out[0].dtype, DType::Bool);
  expectValues(out[0], {1, 0, 0});
}

TEST(OpsElementwise, VariadicMaxBroadcasts) {
  Tensor a = f32({3}, {1, 5, 3}), b = f32({2, 1}, {2, 4}), c = f32({}, {0});
  auto out = run("Max", {&a, &b, &c});
  EXPECT_EQ(out[0].shape, (Shape{2, 3}));
  expectValues(out[0], {2, 5, 3, 4, 5, 4});
}

TEST(OpsElementwise, IncompatibleShapesAreReported) {
  Tensor a = f32({2, 3}, {1, 2, 3, 4, 5, 6}), b = f32({4}, {1, 2, 3, 4});
  std::string msg = errorOf("Add", {&a, &b});
  expectContains(msg, "Add");
  expectContains(msg, "2x3");
  expectContains(msg, "4");
  std::string smsg = shapeErrorOf("Add", shapeContext({&a, &b}, Attrs(), 1));
  EXPECT_EQ(msg, smsg);
}

TEST(OpsElementwise, MismatchedDtypesAreReported) {
  Tensor a = f32({2}, {1, 2}), b = ints(DType::I64, {2}, {1, 2});
  std::string msg = errorOf("Sub", {&a, &b});
  expectContains(msg, "Sub");
  expectContains(msg, "float32");
  expectContains(msg, "int64");
  Tensor c = ints(DType::Bool, {2}, {1, 0});
  expectContains(errorOf("Where", {&c, &a, &b}), "same dtype");
}

// ---------------------------------------------------------------------------------------------
// Integer arithmetic

TEST(OpsElementwise, IntegerDivTruncatesTowardZero) {
  Tensor a = ints(DType::I32, {4}, {7, -7, 7, -7}), b = ints(DType::I32, {4}, {2, 2, -2, -2});
  auto out = run("Div", {&a, &b});
  EXPECT_EQ(out[0].dtype, DType::I32);
  expectValues(out[0], {3, -3, -3, 3});
}

TEST(OpsElementwise, IntegerDivByZeroFails) {
  Tensor a = ints(DType::I64, {2}, {1, 2}), b = ints(DType::I64, {2}, {1, 0});
  expectContains(errorOf("Div", {&a, &b}), "division by zero");
}

TEST(OpsElementwise, IntegerAddWrapsToDtype) {
  Tensor a = ints(DType::U8, {2}, {250, 3}), b = ints(DType::U8, {2}, {10, 4});
  expectValues(run("Add", {&a, &b})[0], {4, 7});
}

TEST(OpsElementwise, ModFollowsDivisorOrDividendSign) {
  Tensor a = ints(DType::I32, {4}, {-4, 7, 5, -7}), b = ints(DType::I32, {4}, {3, -3, 8, 3});
  expectValues(run("Mod", {&a, &b})[0], {2, -2, 5, 2});                                  // numpy.mod
  expectValues(run("Mod", {&a, &b}, attrs({{"fmod", int64_t{1}}}))[0], {-1, 1, 5, -1});  // C fmod
}

TEST(OpsElementwise, PowKeepsBaseDtype) {
  Tensor base = ints(DType::I32, {3}, {2, 3, -2}), e = ints(DType::I64, {3}, {10, 3, 3});
  auto out = run("Pow", {&base, &e});
  EXPECT_EQ(out[0].dtype, DType::I32);
  expectValues(out[0], {1024, 27, -8});
  Tensor fe = f32({3}, {0.5, 2, 1});
  expectValues(run("Pow", {&base, &fe})[0], {1, 9, -2});  // 2^0.5 truncates to 1
}

TEST(OpsElementwise, BitShiftDropsBitsPastTheWidth) {
  Tensor x = ints(DType::U8, {3}, {255, 1, 16}), s = ints(DType::U8, {3}, {1, 8, 2});
  expectValues(run("BitShift", {&x, &s}, attrs({{"direction", std::string("LEFT")}}))[0], {254, 0, 64});
  expectValues(run("BitShift", {&x, &s}, attrs({{"direction", std::string("RIGHT")}}))[0], {127, 0, 4});
}

// ---------------------------------------------------------------------------------------------
// Cast

TEST(OpsElementwise, CastFloatToIntTruncates) {
  Tensor x = f32({5}, {1.7, -1.7, 2.5, -0.5, 3});
  auto out = run("Cast", {&x}, attrs({{"to", int64_t{6}}}));  // int32
  EXPECT_EQ(out[0].dtype, DType::I32);
  expectValues(out[0], {1, -1, 2, 0, 3});
}

TEST(OpsElementwise, CastToBoolIsNonzero) {
  Tensor x = f32({4}, {0, 0.25, -3, std::numeric_limits<double>::quiet_NaN()});
  expectValues(run("Cast", {&x}, attrs({{"to", int64_t{9}}}))[0], {0, 1, 1, 1});
}

TEST(OpsElementwise, CastToFloat16RoundsToNearestEven) {
  // 2049 and 2051 lie halfway between representable halves (spacing 2 above 2048).
  Tensor x = Tensor::fromDoubles(DType::F64, {3}, {2049, 2051, 0.1});
  auto out = run("Cast", {&x}, attrs({{"to", int64_t{10}}}));
  EXPECT_EQ(out[0].dtype, DType::F16);
  expectValues(out[0], {2048, 2052, 0.0999755859375}, 0);
}

TEST(OpsElementwise, CastLikeTakesTheTargetDtype) {
  Tensor x = f32({2}, {1.9, -2.9}), like = ints(DType::I8, {1}, {0});
  auto out = run("CastLike", {&x, &like});
  EXPECT_EQ(out[0].dtype, DType::I8);
  expectValues(out[0], {1, -2});
}

TEST(OpsElementwise, CastToStringFails) {
  Tensor x = f32({1}, {1});
  expectContains(errorOf("Cast", {&x}, attrs({{"to", int64_t{8}}})), "string");
}

// ---------------------------------------------------------------------------------------------
// Activations and normalization

TEST(OpsElementwise, GeluExactAndTanh) {
  Tensor x = f32({2}, {1, -1});
  expectValues(run("Gelu", {&x})[0], {0.8413447460685429, -0.15865525393145707}, 1e-6);
  expectValues(run("Gelu", {&x}, attrs({{"approximate", std::string("tanh")}}))[0],
               {0.8411919906082768, -0.15880800939172324}, 1e-6);
}

TEST(OpsElementwise, ClipDefaultsToIntegerLimits) {
  Tensor x = ints(DType::I8, {3}, {-128, 0, 127}), lo = ints(DType::I8, {}, {-5});
  expectValues(run("Clip", {&x, &lo})[0], {-5, 0, 127});
  Tensor bad = ints(DType::I8, {2}, {0, 1});
  expectContains(errorOf("Clip", {&x, &bad}), "min must be a scalar");
}

TEST(OpsElementwise, SoftmaxCoerce2dNormalizesTrailingBlock) {
  Tensor x = f32({1, 2, 2}, {0, 0, 0, 0});
  auto per = run("Softmax", {&x}, attrs({{"axis", int64_t{1}}}));
  expectValues(per[0], {0.5, 0.5, 0.5, 0.5});
  auto coerced = run("Softmax", {&x}, attrs({{"axis", int64_t{1}}, {"coerce_2d", int64_t{1}}}));
  expectValues(coerced[0], {0.25, 0.25, 0.25, 0.25});
  expectContains(errorOf("Softmax", {&x}, attrs({{"axis", int64_t{3}}})), "axis 3");
}

TEST(OpsElementwise, LayerNormalizationOptionalOutputs) {
  Tensor x = f32({2, 2}, {1, 3, 2, 2}), scale = f32({2}, {1, 1});
  auto out = run("LayerNormalization", {&x, &scale}, Attrs(), 3);
  ASSERT_EQ(out.size(), 3u);
  expectValues(out[0], {-1, 1, 0, 0}, 1e-4);
  EXPECT_EQ(out[1].shape, (Shape{2, 1}));
  EXPECT_EQ(out[1].dtype, DType::F32);
  expectValues(out[1], {2, 2});
  EXPECT_EQ(run("LayerNormalization", {&x, &scale}, Attrs(), 1).size(), 1u);
}

TEST(OpsElementwise, BatchNormalizationTrainingModeIsRejected) {
  Tensor x = f32({1, 2}, {1, 2}), p = f32({2}, {1, 1});
  expectContains(errorOf("BatchNormalization", {&x, &p, &p, &p, &p}, attrs({{"training_mode", int64_t{1}}})),
                 "training_mode");
  Tensor wrong = f32({3}, {1, 1, 1});
  expectContains(errorOf("BatchNormalization", {&x, &wrong, &p, &p, &p}), "scale must have shape 2");
}

// ---------------------------------------------------------------------------------------------
// Reductions

TEST(OpsElementwise, ReduceKeepdims) {
  Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  auto kept = run("ReduceSum", {&x}, attrs({{"axes", std::vector<int64_t>{1}}}));
  EXPECT_EQ(kept[0].shape, (Shape{2, 1}));
  expectValues(kept[0], {6, 15});
  auto dropped = run("ReduceMean", {&x}, attrs({{"axes", std::vector<int64_t>{-2}}, {"keepdims", int64_t{0}}}));
  EXPECT_EQ(dropped[0].shape, (Shape{3}));
  expectValues(dropped[0], {2.5, 3.5, 4.5});
  auto all = run("ReduceMax", {&x});
  EXPECT_EQ(all[0].shape, (Shape{1, 1}));
  expectValues(all[0], {6});
  auto scalar = run("ReduceProd", {&x}, attrs({{"keepdims", int64_t{0}}}));
  EXPECT_EQ(scalar[0].shape, Shape{});
  expectValues(scalar[0], {720});
}

TEST(OpsElementwise, ReduceNoopWithEmptyAxesStillAppliesElementwisePart) {
  Tensor x = f32({2}, {-2, 3});
  Attrs noop = attrs({{"noop_with_empty_axes", int64_t{1}}});
  auto sum = run("ReduceSum", {&x}, noop);
  EXPECT_EQ(sum[0].shape, (Shape{2}));
  expectValues(sum[0], {-2, 3});
  expectValues(run("ReduceSumSquare", {&x}, noop)[0], {4, 9});
}

TEST(OpsElementwise, ReduceIntegersExactly) {
  Tensor x = ints(DType::I64, {2}, {(int64_t{1} << 60) + 1, 1});
  expectValues(run("ReduceSum", {&x})[0], {static_cast<double>((int64_t{1} << 60) + 2)});
  auto out = run("ReduceSum", {&x});
  EXPECT_EQ(out[0].i[0], (int64_t{1} << 60) + 2);
}

TEST(OpsElementwise, ReduceBadAxesAreReported) {
  Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  expectContains(errorOf("ReduceSum", {&x}, attrs({{"axes", std::vector<int64_t>{2}}})), "out of range");
  expectContains(errorOf("ReduceSum", {&x}, attrs({{"axes", std::vector<int64_t>{1, -1}}})), "twice");
}

TEST(OpsElementwise, ArgMaxSelectLastIndex) {
  Tensor x = f32({2, 3}, {1, 3, 3, 2, 2, 0});
  auto first = run("ArgMax", {&x}, attrs({{"axis", int64_t{1}}}));
  EXPECT_EQ(first[0].dtype, DType::I64);
  EXPECT_EQ(first[0].shape, (Shape{2, 1}));
  expectValues(first[0], {1, 0});
  auto last =
      run("ArgMax", {&x}, attrs({{"axis", int64_t{1}}, {"select_last_index", int64_t{1}}, {"keepdims", int64_t{0}}}));
  EXPECT_EQ(last[0].shape, (Shape{2}));
  expectValues(last[0], {2, 1});
}

TEST(OpsElementwise, TopKTiesKeepLowerIndexFirst) {
  Tensor x = f32({5}, {3, 1, 3, 2, 3}), k3 = ints(DType::I64, {1}, {3}), k2 = ints(DType::I64, {1}, {2});
  auto top = run("TopK", {&x, &k3}, Attrs(), 2);
  ASSERT_EQ(top.size(), 2u);
  expectValues(top[0], {3, 3, 3});
  expectValues(top[1], {0, 2, 4});
  Tensor y = f32({3}, {1, 1, 0});
  auto low = run("TopK", {&y, &k2}, attrs({{"largest", int64_t{0}}}), 2);
  expectValues(low[0], {0, 1});
  expectValues(low[1], {2, 0});
}

TEST(OpsElementwise, TopKNeedsAConstantInRangeK) {
  Tensor x = f32({2}, {1, 2}), k = ints(DType::I64, {1}, {3});
  expectContains(errorOf("TopK", {&x, &k}, Attrs(), 2), "out of range");
  Tensor k1 = ints(DType::I64, {1}, {1});
  expectContains(shapeErrorOf("TopK", shapeContext({&x, &k1}, Attrs(), 2, /*withValues=*/false)),
                 "compile-time constant");
}

// ---------------------------------------------------------------------------------------------
// Quantization

TEST(OpsElementwise, QuantizeRoundsHalfToEvenAndSaturates) {
  Tensor x = f32({7}, {0.5, 1.5, 2.5, -0.5, -1.5, 1000, -1000}), scale = f32({}, {1});
  Tensor zpU8 = ints(DType::U8, {}, {128}), zpI8 = ints(DType::I8, {}, {0});
  auto u8 = run("QuantizeLinear", {&x, &scale, &zpU8});
  EXPECT_EQ(u8[0].dtype, DType::U8);
  expectValues(u8[0], {128, 130, 130, 128, 126, 255, 0});
  auto i8 = run("QuantizeLinear", {&x, &scale, &zpI8});
  EXPECT_EQ(i8[0].dtype, DType::I8);
  expectValues(i8[0], {0, 2, 2, 0, -2, 127, -128});
  auto dflt = run("QuantizeLinear", {&x, &scale});  // no zero point: uint8, zero point 0
  EXPECT_EQ(dflt[0].dtype, DType::U8);
  expectValues(dflt[0], {0, 2, 2, 0, 0, 255, 0});
}

TEST(OpsElementwise, QuantizePerAxis) {
  Tensor x = f32({1, 2, 2}, {2, 4, 2, 4}), scale = f32({2}, {2, 1});
  Tensor zp = ints(DType::U8, {2}, {0, 10});
  expectValues(run("QuantizeLinear", {&x, &scale, &zp})[0], {1, 2, 12, 14});
  Tensor bad = f32({3}, {1, 1, 1});
  expectContains(errorOf("QuantizeLinear", {&x, &bad}), "per-axis scale must have shape 2");
}

TEST(OpsElementwise, DequantizeUsesZeroPointAndScaleDtype) {
  Tensor x = ints(DType::I8, {3}, {-128, 0, 127}), scale = f32({}, {0.5}), zp = ints(DType::I8, {}, {-1});
  auto out = run("DequantizeLinear", {&x, &scale, &zp});
  EXPECT_EQ(out[0].dtype, DType::F32);
  expectValues(out[0], {-63.5, 0.5, 64});
  // onnxruntime's quantize_static writes a [1] scale with a scalar zero point: both per tensor.
  Tensor scale1 = f32({1}, {0.5}), zp2 = ints(DType::I8, {2}, {0, 0});
  expectValues(run("DequantizeLinear", {&x, &scale1, &zp})[0], {-63.5, 0.5, 64});
  expectContains(errorOf("DequantizeLinear", {&x, &scale1, &zp2}),
                 "zero point shape 2 differs from the scale's shape 1");
}

}  // namespace

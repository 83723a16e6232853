// The quantized ops that onnxruntime's quantizer writes: DynamicQuantizeLinear, MatMulInteger,
// ConvInteger, QLinearMatMul, QLinearConv (ai.onnx) and the com.microsoft contrib ops QLinearAdd,
// QLinearMul, QLinearSigmoid, QLinearLeakyRelu, QLinearGlobalAveragePool, QLinearAveragePool,
// QLinearConcat, QGemm, MatMulIntegerToFloat and DynamicQuantizeMatMul (registered as
// "com.microsoft::<Op>").
//
// Their arithmetic is onnxruntime's CPU kernels' (MLAS), step by step in float32 where they compute
// in float32, so the evaluator's answers are onnxruntime's:
//   dq(x)        = f32(scale · (x - zp))
//   q(v)         = saturate(round_half_even(f32(v / scale)) + zp), saturated to the 8-bit range
//   requant(acc) = saturate(round_half_even(f32(f32(acc) · m)) + zp): integer products (exact
//                  int32 sums, wrapping as int32 would) with m = f32(f32(sa · sb) / sy) for
//                  QLinearMatMul/QLinearConv, m = f32(sx / f32(sy · n)) for the global pool
//   DynamicQuantizeLinear: lo = min(0, min x), hi = max(0, max x), scale = hi == lo ? 1 :
//                  f32(f32(hi - lo) / 255), zp = round_half_even(clamp(-f32(lo / scale), 0, 255))
//                  (uint8), y = q(x)
//   QLinearAdd   = q(f32(dq(A) + dq(B)))  (the ONNX Runtime doc's formula)
//   QLinearMul   = saturate(round_half_even(f32(f32(f32(sA · sB) / sC) · (A - zA)(B - zB))) + zC)
//   QLinearSigmoid/LeakyRelu/AveragePool/Concat = q(f(dq(X))) with f kiln's Sigmoid, LeakyRelu,
//                  AveragePool (channels_last: NHWC) or Concat in float32
//   MatMulIntegerToFloat = f32(f32(acc) · f32(sa · sb[n])) + bias[n]; DynamicQuantizeMatMul the
//                  same after DynamicQuantizeLinear of A; QGemm (below)
// Zero points are per tensor, except MatMulInteger/QLinearMatMul's per row of A ([M] or
// [..., M, 1]) and per column of B ([N] or [..., 1, N]), and the per-output-channel weight zero
// points and scales of ConvInteger/QLinearConv ([M]). Scales are float32.
#include "compiler/ops/ElementwiseUtil.h"
#include "compiler/ops/OpUtil.h"

#include <cmath>

namespace kiln::ops {
namespace {

using namespace ew;

const std::string kMs = "com.microsoft::";

double f32(double v) { return roundTo(DType::F32, v); }

bool is8Bit(DType t) { return t == DType::I8 || t == DType::U8; }

void check8Bit(const std::string &op, const std::string &what, DType t) {
  check(is8Bit(t), op + ": " + what + " has dtype " + dtypeName(t) + ", but i8 or ui8 is required");
}

void checkScale(const std::string &op, const std::string &what, DType t) {
  check(t == DType::F32, op + ": " + what + " has dtype " + dtypeName(t) + ", but f32 is required");
}

bool oneElement(const Shape &s) { return s.size() <= 1 && numElements(s) == 1; }

void checkScalar(const std::string &op, const std::string &what, const Shape &s) {
  check(oneElement(s), op + ": " + what + " must be a scalar (per-tensor quantization), got shape " + shapeString(s));
}

// Runs a registered op's kernel (one result) / shape function.
Tensor runOp(const std::string &op, std::vector<const Tensor *> in, const Attrs &attrs) {
  const OpDef *d = findOp(op);
  check(d != nullptr, "internal: op " + op + " is not registered");
  EvalContext ctx{std::move(in), attrs, 1};
  return d->eval(ctx).at(0);
}
TensorType shapeOfOp(const std::string &op, std::vector<TensorType> in, const Attrs &attrs) {
  const OpDef *d = findOp(op);
  check(d != nullptr, "internal: op " + op + " is not registered");
  std::vector<const Tensor *> values(in.size(), nullptr);
  ShapeContext ctx{std::move(in), values, attrs, 1};
  return d->shape(ctx).at(0);
}

// saturate(round_half_even(v) + zp) into an 8-bit dtype (v already rounded as the kernel does).
int64_t saturateRound(double v, int64_t zp, DType t) {
  auto [lo, hi] = intRange(t);
  double q = std::nearbyint(v) + double(zp);
  if (std::isnan(q)) q = 0;
  return int64_t(std::min(double(hi), std::max(double(lo), q)));
}

int64_t quantizeValue(double v, double scale, int64_t zp, DType t) { return saturateRound(f32(v / scale), zp, t); }

double dequantizeValue(int64_t x, double scale, int64_t zp) { return f32(scale * double(x - zp)); }

// A per-row (A side) or per-column (B side) parameter of an integer product, shaped to broadcast
// against its operand: scalars stay, A's [M] becomes [M, 1]; other shapes must broadcast to the
// operand exactly as they are ([..., M, 1], [N], [..., 1, N]).
Shape productParamShape(const std::string &op, const std::string &what, const Shape &param, const Shape &operand,
                        bool aSide) {
  if (oneElement(param)) return {};
  Shape s = param;
  check(operand.size() >= 2, op + ": " + what + " of shape " + shapeString(param) + " (per " +
                                 (aSide ? "row" : "column") + ") needs an operand of rank >= 2, got " +
                                 shapeString(operand));
  if (aSide && s.size() == 1) s = {s[0], 1};
  Shape want = operand;
  want[want.size() - (aSide ? 1 : 2)] = 1;
  bool ok = s.size() <= want.size();
  for (size_t k = 0; ok && k < s.size(); ++k) ok = s[s.size() - 1 - k] == want[want.size() - 1 - k];
  check(ok, op + ": " + what + " has shape " + shapeString(param) + "; a per-" + (aSide ? "row" : "column") +
                " parameter of an operand of shape " + shapeString(operand) + " must have shape " + shapeString(want) +
                (aSide ? " or [M]" : " or [N]") + ", or be a scalar");
  return s;
}

// x - zp (zp broadcast from `zpShape`) as int64, or as float64 when `asFloat`.
Tensor minusZeroPoint(const Tensor &x, const Tensor *zp, const Shape &zpShape, bool asFloat) {
  Tensor r(asFloat ? DType::F64 : DType::I64, x.shape);
  for (int64_t k = 0; k < x.size(); ++k) {
    int64_t z = zp ? zp->i[zpShape.empty() ? 0 : broadcastIndex(zpShape, x.shape, k)] : 0;
    if (asFloat)
      r.f[k] = double(x.i[k] - z);
    else
      r.i[k] = x.i[k] - z;
  }
  return r;
}

int64_t wrapI32(int64_t v) { return wrapInt(DType::I32, v); }

// ---------------------------------------------------------------------------------------------
// Integer matrix products: the exact sums Σ (a - za)(b - zb), wrapped to int32.

struct IntProduct {
  TensorType out;  // i32, MatMul's shape
  Shape zaShape, zbShape;
};

IntProduct intProductShape(const std::string &op, const TensorType &a, const TensorType &b, const TensorType *za,
                           const TensorType *zb) {
  check8Bit(op, "A", a.dtype);
  check8Bit(op, "B", b.dtype);
  IntProduct p;
  if (za) {
    checkSameDtype(op, "A", a.dtype, "a_zero_point", za->dtype);
    p.zaShape = productParamShape(op, "a_zero_point", za->shape, a.shape, true);
  }
  if (zb) {
    checkSameDtype(op, "B", b.dtype, "b_zero_point", zb->dtype);
    p.zbShape = productParamShape(op, "b_zero_point", zb->shape, b.shape, false);
  }
  Attrs none;
  p.out = shapeOfOp("MatMul", {{DType::I64, a.shape}, {DType::I64, b.shape}}, none);
  p.out.dtype = DType::I32;
  return p;
}

Tensor intProduct(const Tensor &a, const Tensor &b, const Tensor *za, const Tensor *zb, const IntProduct &p) {
  Tensor a64 = minusZeroPoint(a, za, p.zaShape, false), b64 = minusZeroPoint(b, zb, p.zbShape, false);
  Attrs none;
  Tensor y = runOp("MatMul", {&a64, &b64}, none);
  Tensor r(DType::I32, y.shape);
  for (int64_t k = 0; k < y.size(); ++k) r.i[k] = wrapI32(y.i[k]);
  return r;
}

int64_t productFlops(const ShapeContext &ctx, const std::vector<TensorType> &outs) {
  const Shape &a = ctx.inputs[0].shape;
  return outs.empty() || a.empty() ? 0 : 2 * numElements(outs[0].shape) * a.back();
}

// MatMulInteger(A, B, a_zero_point?, b_zero_point?) -> int32
std::vector<TensorType> matmulIntegerShape(const ShapeContext &ctx) {
  const std::string op = "MatMulInteger";
  checkInputs(op, ctx, 2, 4);
  checkOutputs(op, ctx, 1);
  return {intProductShape(op, ctx.inputs[0], ctx.inputs[1], ctx.present(2) ? &ctx.inputs[2] : nullptr,
                          ctx.present(3) ? &ctx.inputs[3] : nullptr)
              .out};
}
std::vector<Tensor> matmulIntegerEval(const EvalContext &ctx) {
  ShapeContext sc = shapeContextOf(ctx);
  matmulIntegerShape(sc);
  IntProduct p = intProductShape("MatMulInteger", sc.inputs[0], sc.inputs[1], ctx.present(2) ? &sc.inputs[2] : nullptr,
                                 ctx.present(3) ? &sc.inputs[3] : nullptr);
  return {intProduct(ctx.in(0), ctx.in(1), ctx.present(2) ? &ctx.in(2) : nullptr, ctx.present(3) ? &ctx.in(3) : nullptr,
                     p)};
}

// The f32 requantization scale of a QLinearMatMul output element: f32(f32(sa · sb) / sy).
std::vector<Tensor> qlinearMatmulEval(const EvalContext &ctx);

std::vector<TensorType> qlinearMatmulShape(const ShapeContext &ctx) {
  const std::string op = "QLinearMatMul";
  checkInputs(op, ctx, 8, 8);
  checkOutputs(op, ctx, 1);
  const TensorType &a = ctx.inputs[0], &sa = ctx.inputs[1], &za = ctx.inputs[2], &b = ctx.inputs[3],
                   &sb = ctx.inputs[4], &zb = ctx.inputs[5], &sy = ctx.inputs[6], &zy = ctx.inputs[7];
  IntProduct p = intProductShape(op, a, b, &za, &zb);
  checkScale(op, "a_scale", sa.dtype);
  checkScale(op, "b_scale", sb.dtype);
  checkScale(op, "y_scale", sy.dtype);
  check(productParamShape(op, "a_scale", sa.shape, a.shape, true) == p.zaShape,
        op + ": a_scale (" + shapeString(sa.shape) + ") and a_zero_point (" + shapeString(za.shape) +
            ") must have the same shape");
  check(productParamShape(op, "b_scale", sb.shape, b.shape, false) == p.zbShape,
        op + ": b_scale (" + shapeString(sb.shape) + ") and b_zero_point (" + shapeString(zb.shape) +
            ") must have the same shape");
  checkScalar(op, "y_scale", sy.shape);
  checkScalar(op, "y_zero_point", zy.shape);
  check8Bit(op, "y_zero_point", zy.dtype);
  return {{zy.dtype, p.out.shape}};
}

std::vector<Tensor> qlinearMatmulEval(const EvalContext &ctx) {
  ShapeContext sc = shapeContextOf(ctx);
  TensorType t = qlinearMatmulShape(sc).at(0);
  IntProduct p = intProductShape("QLinearMatMul", sc.inputs[0], sc.inputs[3], &sc.inputs[2], &sc.inputs[5]);
  Tensor acc = intProduct(ctx.in(0), ctx.in(3), &ctx.in(2), &ctx.in(5), p);
  const Tensor &sa = ctx.in(1), &sb = ctx.in(4);
  double sy = ctx.in(6).f[0];
  int64_t zy = ctx.in(7).i[0];
  // The parameters broadcast against the result as against their operands: A's [.., M, 1] and
  // B's [.., 1, N] address the result's rows and columns.
  Tensor y(t.dtype, t.shape);
  for (int64_t k = 0; k < y.size(); ++k) {
    double a = sa.f[p.zaShape.empty() ? 0 : broadcastIndex(p.zaShape, t.shape, k)];
    double b = sb.f[p.zbShape.empty() ? 0 : broadcastIndex(p.zbShape, t.shape, k)];
    double m = f32(f32(a * b) / sy);
    y.i[k] = saturateRound(f32(f32(double(acc.i[k])) * m), zy, t.dtype);
  }
  return {y};
}

// ---------------------------------------------------------------------------------------------
// Integer convolutions: Conv's geometry (and kernel, in exact float64 on x - zx and w - zw).

struct IntConv {
  TensorType out;  // i32
  int64_t channels = 0;
};

IntConv intConvShape(const std::string &op, const ShapeContext &ctx, size_t x, size_t w, size_t zx, size_t zw,
                     const TensorType *bias) {
  const TensorType &xt = ctx.inputs[x], &wt = ctx.inputs[w];
  check8Bit(op, "x", xt.dtype);
  check8Bit(op, "w", wt.dtype);
  check(xt.shape.size() >= 3 && wt.shape.size() >= 1,
        op + ": x must have rank >= 3 (N, C, spatial...), got " + shapeString(xt.shape));
  IntConv c;
  c.channels = wt.shape[0];
  if (ctx.present(zx)) {
    checkSameDtype(op, "x", xt.dtype, "x_zero_point", ctx.inputs[zx].dtype);
    checkScalar(op, "x_zero_point", ctx.inputs[zx].shape);
  }
  if (ctx.present(zw)) {
    checkSameDtype(op, "w", wt.dtype, "w_zero_point", ctx.inputs[zw].dtype);
    const Shape &s = ctx.inputs[zw].shape;
    check(oneElement(s) || s == Shape{c.channels},
          op + ": w_zero_point must be a scalar or have one value per output channel (" + std::to_string(c.channels) +
              "), got shape " + shapeString(s));
  }
  TensorType fb{DType::F32, {c.channels}};
  std::vector<TensorType> in = {{DType::F32, xt.shape}, {DType::F32, wt.shape}};
  if (bias) {
    check(bias->dtype == DType::I32,
          op + ": bias B has dtype " + std::string(dtypeName(bias->dtype)) + ", but i32 is required");
    check(bias->shape == Shape{c.channels}, op + ": bias B must have shape " + std::to_string(c.channels) +
                                                " (one per output channel), got " + shapeString(bias->shape));
    in.push_back(fb);
  }
  c.out = shapeOfOp("Conv", in, ctx.attrs);
  c.out.dtype = DType::I32;
  return c;
}

// Σ (x - zx)(w - zw[m]) (+ bias[m]) per output element, exact (float64 sums of integers), wrapped
// to int32.
Tensor intConv(const EvalContext &ctx, size_t x, size_t w, size_t zx, size_t zw, size_t bias) {
  const Tensor &xt = ctx.in(x), &wt = ctx.in(w);
  Tensor xf = minusZeroPoint(xt, ctx.present(zx) ? &ctx.in(zx) : nullptr, {}, true);
  Tensor wf(DType::F64, wt.shape);
  int64_t perChannel = wt.shape[0] ? wt.size() / wt.shape[0] : 0;
  for (int64_t k = 0; k < wt.size(); ++k) {
    int64_t z = 0;
    if (ctx.present(zw)) z = ctx.in(zw).size() == 1 ? ctx.in(zw).i[0] : ctx.in(zw).i[k / perChannel];
    wf.f[k] = double(wt.i[k] - z);
  }
  Tensor bf;
  std::vector<const Tensor *> in = {&xf, &wf};
  if (ctx.present(bias)) {
    const Tensor &b = ctx.in(bias);
    bf = Tensor(DType::F64, b.shape);
    for (int64_t k = 0; k < b.size(); ++k) bf.f[k] = double(b.i[k]);
    in.push_back(&bf);
  }
  Tensor y = runOp("Conv", in, ctx.attrs);
  Tensor r(DType::I32, y.shape);
  for (int64_t k = 0; k < y.size(); ++k) r.i[k] = wrapI32(int64_t(y.f[k]));
  return r;
}

int64_t convFlopsOf(const ShapeContext &ctx, const std::vector<TensorType> &outs, size_t w) {
  const Shape &ws = ctx.inputs[w].shape;
  return outs.empty() ? 0 : 2 * numElements(outs[0].shape) * numElements(Shape(ws.begin() + 1, ws.end()));
}

// ConvInteger(x, w, x_zero_point?, w_zero_point?) -> int32
std::vector<TensorType> convIntegerShape(const ShapeContext &ctx) {
  checkInputs("ConvInteger", ctx, 2, 4);
  checkOutputs("ConvInteger", ctx, 1);
  return {intConvShape("ConvInteger", ctx, 0, 1, 2, 3, nullptr).out};
}
std::vector<Tensor> convIntegerEval(const EvalContext &ctx) {
  convIntegerShape(shapeContextOf(ctx));
  return {intConv(ctx, 0, 1, 2, 3, 99)};
}

// QLinearConv(x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, B?)
std::vector<TensorType> qlinearConvShape(const ShapeContext &ctx) {
  const std::string op = "QLinearConv";
  checkInputs(op, ctx, 8, 9);
  checkOutputs(op, ctx, 1);
  IntConv c = intConvShape(op, ctx, 0, 3, 2, 5, ctx.present(8) ? &ctx.inputs[8] : nullptr);
  checkScale(op, "x_scale", ctx.inputs[1].dtype);
  checkScale(op, "w_scale", ctx.inputs[4].dtype);
  checkScale(op, "y_scale", ctx.inputs[6].dtype);
  checkScalar(op, "x_scale", ctx.inputs[1].shape);
  const Shape &sw = ctx.inputs[4].shape;
  check(oneElement(sw) || sw == Shape{c.channels},
        op + ": w_scale must be a scalar or have one value per output channel (" + std::to_string(c.channels) +
            "), got shape " + shapeString(sw));
  checkScalar(op, "y_scale", ctx.inputs[6].shape);
  checkScalar(op, "y_zero_point", ctx.inputs[7].shape);
  check8Bit(op, "y_zero_point", ctx.inputs[7].dtype);
  return {{ctx.inputs[7].dtype, c.out.shape}};
}
std::vector<Tensor> qlinearConvEval(const EvalContext &ctx) {
  TensorType t = qlinearConvShape(shapeContextOf(ctx)).at(0);
  Tensor acc = intConv(ctx, 0, 3, 2, 5, 8);
  double sx = ctx.in(1).f[0], sy = ctx.in(6).f[0];
  const Tensor &sw = ctx.in(4);
  int64_t zy = ctx.in(7).i[0];
  int64_t channels = t.shape[1], inner = channels ? acc.size() / (t.shape[0] * channels) : 0;
  Tensor y(t.dtype, t.shape);
  for (int64_t k = 0; k < y.size(); ++k) {
    int64_t m = (k / std::max<int64_t>(inner, 1)) % channels;
    double mul = f32(f32(sx * sw.f[sw.size() == 1 ? 0 : m]) / sy);
    y.i[k] = saturateRound(f32(f32(double(acc.i[k])) * mul), zy, t.dtype);
  }
  return {y};
}

// ---------------------------------------------------------------------------------------------
// DynamicQuantizeLinear(x) -> (y uint8, y_scale f32 scalar, y_zero_point uint8 scalar)

std::vector<TensorType> dynamicQuantizeShape(const ShapeContext &ctx) {
  const std::string op = "DynamicQuantizeLinear";
  checkInputs(op, ctx, 1, 1);
  check(ctx.numOutputs == 3, op + ": the node must declare its 3 outputs (y, y_scale, y_zero_point), it declares " +
                                 std::to_string(ctx.numOutputs));
  check(ctx.inputs[0].dtype == DType::F32,
        op + ": x has dtype " + std::string(dtypeName(ctx.inputs[0].dtype)) + ", but f32 is required");
  return {{DType::U8, ctx.inputs[0].shape}, {DType::F32, {}}, {DType::U8, {}}};
}

// onnxruntime's GetQuantizationParameter: the range of x widened to include 0, over uint8.
std::pair<double, int64_t> dynamicQuantParams(const Tensor &x) {
  double lo = 0, hi = 0;
  for (double v : x.f) {
    if (v < lo) lo = v;
    if (v > hi) hi = v;
  }
  double scale = hi == lo ? 1.0 : f32(f32(hi - lo) / 255.0);
  double zp = std::min(255.0, std::max(0.0, f32(0.0 - f32(lo / scale))));
  return {scale, int64_t(std::nearbyint(zp))};
}

std::vector<Tensor> dynamicQuantizeEval(const EvalContext &ctx) {
  dynamicQuantizeShape(shapeContextOf(ctx));
  const Tensor &x = ctx.in(0);
  auto [scale, zp] = dynamicQuantParams(x);
  Tensor y(DType::U8, x.shape);
  for (int64_t k = 0; k < x.size(); ++k) y.i[k] = quantizeValue(x.f[k], scale, zp, DType::U8);
  return {y, Tensor::scalar(DType::F32, scale), Tensor::fromInts(DType::U8, {}, {zp})};
}

// ---------------------------------------------------------------------------------------------
// MatMulIntegerToFloat(A, B, a_scale, b_scale, a_zero_point?, b_zero_point?, bias?) and
// DynamicQuantizeMatMul(A, B, b_scale, b_zero_point?, bias?): float32 results.

TensorType toFloatShape(const std::string &op, const TensorType &a, const TensorType &b, const TensorType *sa,
                        const TensorType &sb, const TensorType *za, const TensorType *zb, const TensorType *bias) {
  IntProduct p = intProductShape(op, a, b, za, zb);
  if (za) checkScalar(op, "a_zero_point", za->shape);
  if (sa) {
    checkScale(op, "a_scale", sa->dtype);
    checkScalar(op, "a_scale", sa->shape);
  }
  checkScale(op, "b_scale", sb.dtype);
  int64_t n = b.shape.empty() ? 1 : b.shape.back();
  check(oneElement(sb.shape) || sb.shape == Shape{n},
        op + ": b_scale must be a scalar or have one value per column of B (" + std::to_string(n) + "), got shape " +
            shapeString(sb.shape));
  if (zb)
    check(oneElement(zb->shape) || zb->shape == Shape{n},
          op + ": b_zero_point must be a scalar or have one value per column of B (" + std::to_string(n) +
              "), got shape " + shapeString(zb->shape));
  if (bias) {
    checkScale(op, "bias", bias->dtype);
    check(bias->shape == Shape{n},
          op + ": bias must have shape " + std::to_string(n) + " (B's columns), got " + shapeString(bias->shape));
  }
  return {DType::F32, p.out.shape};
}

Tensor toFloat(const Tensor &acc, double sa, const Tensor &sb, const Tensor *bias) {
  Tensor y(DType::F32, acc.shape);
  int64_t n = acc.shape.empty() ? 1 : acc.shape.back();
  for (int64_t k = 0; k < y.size(); ++k) {
    int64_t col = k % n;
    double v = f32(f32(double(acc.i[k])) * f32(sa * sb.f[sb.size() == 1 ? 0 : col]));
    y.f[k] = bias ? f32(v + bias->f[col]) : v;
  }
  return y;
}

std::vector<TensorType> matmulIntegerToFloatShape(const ShapeContext &ctx) {
  const std::string op = kMs + "MatMulIntegerToFloat";
  checkInputs(op, ctx, 4, 7);
  checkOutputs(op, ctx, 1);
  auto opt = [&](size_t k) { return ctx.present(k) ? &ctx.inputs[k] : nullptr; };
  return {toFloatShape(op, ctx.inputs[0], ctx.inputs[1], &ctx.inputs[2], ctx.inputs[3], opt(4), opt(5), opt(6))};
}
std::vector<Tensor> matmulIntegerToFloatEval(const EvalContext &ctx) {
  ShapeContext sc = shapeContextOf(ctx);
  matmulIntegerToFloatShape(sc);
  auto opt = [&](size_t k) { return ctx.present(k) ? &ctx.in(k) : nullptr; };
  IntProduct p = intProductShape("MatMulIntegerToFloat", sc.inputs[0], sc.inputs[1], opt(4) ? &sc.inputs[4] : nullptr,
                                 opt(5) ? &sc.inputs[5] : nullptr);
  Tensor acc = intProduct(ctx.in(0), ctx.in(1), opt(4), opt(5), p);
  return {toFloat(acc, ctx.in(2).f[0], ctx.in(3), opt(6))};
}

std::vector<TensorType> dynamicQuantizeMatmulShape(const ShapeContext &ctx) {
  const std::string op = kMs + "DynamicQuantizeMatMul";
  checkInputs(op, ctx, 3, 5);
  checkOutputs(op, ctx, 1);
  check(ctx.inputs[0].dtype == DType::F32,
        op + ": A has dtype " + std::string(dtypeName(ctx.inputs[0].dtype)) + ", but f32 is required");
  TensorType aq{DType::U8, ctx.inputs[0].shape};
  return {toFloatShape(op, aq, ctx.inputs[1], nullptr, ctx.inputs[2], nullptr,
                       ctx.present(3) ? &ctx.inputs[3] : nullptr, ctx.present(4) ? &ctx.inputs[4] : nullptr)};
}
std::vector<Tensor> dynamicQuantizeMatmulEval(const EvalContext &ctx) {
  ShapeContext sc = shapeContextOf(ctx);
  dynamicQuantizeMatmulShape(sc);
  const Tensor &a = ctx.in(0);
  auto [scale, zp] = dynamicQuantParams(a);
  Tensor aq(DType::U8, a.shape);
  for (int64_t k = 0; k < a.size(); ++k) aq.i[k] = quantizeValue(a.f[k], scale, zp, DType::U8);
  Tensor za = Tensor::fromInts(DType::U8, {}, {zp});
  const Tensor *zb = ctx.present(3) ? &ctx.in(3) : nullptr;
  TensorType zaType{DType::U8, {}};
  IntProduct p = intProductShape("DynamicQuantizeMatMul", {DType::U8, a.shape}, sc.inputs[1], &zaType,
                                 zb ? &sc.inputs[3] : nullptr);
  Tensor acc = intProduct(aq, ctx.in(1), &za, zb, p);
  return {toFloat(acc, scale, ctx.in(2), ctx.present(4) ? &ctx.in(4) : nullptr)};
}

// QGemm(A, a_scale, a_zero_point, B, b_scale, b_zero_point, C?, y_scale?, y_zero_point?;
// alpha, transA, transB): acc = C (int32, broadcast) + Σ (a - za)(b - zb[n]); with m[n] =
// f32(f32(f32(alpha · sa) · sb[n]) / sy) (no division without y_scale), requant(acc) when
// y_zero_point is given, else f32(f32(acc) · m[n]) (float32 result).
struct QGemmGeometry {
  TensorType out;
  int64_t m = 0, n = 0, k = 0;
};
QGemmGeometry qgemmGeometry(const ShapeContext &ctx) {
  const std::string op = kMs + "QGemm";
  checkInputs(op, ctx, 6, 9);
  checkOutputs(op, ctx, 1);
  const TensorType &a = ctx.inputs[0], &b = ctx.inputs[3];
  check8Bit(op, "A", a.dtype);
  check8Bit(op, "B", b.dtype);
  check(a.shape.size() == 2 && b.shape.size() == 2,
        op + ": A and B must be matrices, got " + shapeString(a.shape) + " and " + shapeString(b.shape));
  bool ta = ctx.attrs.getInt("transA", 0) != 0, tb = ctx.attrs.getInt("transB", 0) != 0;
  QGemmGeometry g;
  g.m = ta ? a.shape[1] : a.shape[0];
  g.k = ta ? a.shape[0] : a.shape[1];
  g.n = tb ? b.shape[0] : b.shape[1];
  int64_t kb = tb ? b.shape[1] : b.shape[0];
  check(kb == g.k,
        op + ": inner dimensions differ: A gives K=" + std::to_string(g.k) + ", B gives K=" + std::to_string(kb));
  checkSameDtype(op, "A", a.dtype, "a_zero_point", ctx.inputs[2].dtype);
  checkSameDtype(op, "B", b.dtype, "b_zero_point", ctx.inputs[5].dtype);
  checkScale(op, "a_scale", ctx.inputs[1].dtype);
  checkScalar(op, "a_scale", ctx.inputs[1].shape);
  checkScalar(op, "a_zero_point", ctx.inputs[2].shape);
  checkScale(op, "b_scale", ctx.inputs[4].dtype);
  for (size_t p : {size_t(4), size_t(5)})
    check(oneElement(ctx.inputs[p].shape) || ctx.inputs[p].shape == Shape{g.n},
          op + ": " + (p == 4 ? "b_scale" : "b_zero_point") + " must be a scalar or have one value per column (" +
              std::to_string(g.n) + "), got shape " + shapeString(ctx.inputs[p].shape));
  if (ctx.present(6)) {
    check(ctx.inputs[6].dtype == DType::I32,
          op + ": C must be int32, got " + std::string(dtypeName(ctx.inputs[6].dtype)));
    broadcastOrFail(op, {ctx.inputs[6].shape, Shape{g.m, g.n}});
    check(broadcastShapes({ctx.inputs[6].shape, Shape{g.m, g.n}}) == Shape{g.m, g.n},
          op + ": C of shape " + shapeString(ctx.inputs[6].shape) + " does not broadcast to the result's " +
              shapeString({g.m, g.n}));
  }
  if (ctx.present(7)) {
    checkScale(op, "y_scale", ctx.inputs[7].dtype);
    checkScalar(op, "y_scale", ctx.inputs[7].shape);
  }
  if (ctx.present(8)) {
    check(ctx.present(7), op + ": y_zero_point without y_scale");
    check8Bit(op, "y_zero_point", ctx.inputs[8].dtype);
    checkScalar(op, "y_zero_point", ctx.inputs[8].shape);
  }
  g.out = {ctx.present(8) ? ctx.inputs[8].dtype : DType::F32, {g.m, g.n}};
  return g;
}
std::vector<TensorType> qgemmShape(const ShapeContext &ctx) { return {qgemmGeometry(ctx).out}; }
std::vector<Tensor> qgemmEval(const EvalContext &ctx) {
  ShapeContext sc = shapeContextOf(ctx);
  QGemmGeometry g = qgemmGeometry(sc);
  Attrs perm, none;
  perm.set("perm", Shape{1, 0});
  Tensor a = ctx.in(0), b = ctx.in(3);
  if (ctx.attrs.getInt("transA", 0)) a = runOp("Transpose", {&a}, perm);
  if (ctx.attrs.getInt("transB", 0)) b = runOp("Transpose", {&b}, perm);
  TensorType zb = sc.inputs[5];
  IntProduct p = intProductShape("QGemm", typeOf(a), typeOf(b), &sc.inputs[2], &zb);
  Tensor acc = intProduct(a, b, &ctx.in(2), &ctx.in(5), p);
  const Tensor &sb = ctx.in(4);
  double alphaSa = f32(f32(ctx.attrs.getFloat("alpha", 1.0)) * ctx.in(1).f[0]);
  Tensor y(g.out.dtype, g.out.shape);
  for (int64_t k = 0; k < y.size(); ++k) {
    int64_t v = acc.i[k];
    if (ctx.present(6)) v = wrapI32(v + ctx.in(6).i[broadcastIndex(ctx.in(6).shape, g.out.shape, k)]);
    double m = f32(alphaSa * sb.f[sb.size() == 1 ? 0 : k % g.n]);
    if (ctx.present(7)) m = f32(m / ctx.in(7).f[0]);
    double scaled = f32(f32(double(v)) * m);
    if (ctx.present(8))
      y.i[k] = saturateRound(scaled, ctx.in(8).i[0], g.out.dtype);
    else
      y.f[k] = scaled;
  }
  return {y};
}

// ---------------------------------------------------------------------------------------------
// com.microsoft QLinear elementwise ops, pools and concat: per-tensor parameters, 8-bit X and Y
// of one dtype. Absent zero points are 0.

struct QParams {
  double scale = 1;
  int64_t zp = 0;
};

// The (scale, zero point) pair at inputs (s, z) of a QLinear op: f32 scalars and a zero point of
// the data's dtype.
void checkQParams(const std::string &op, const ShapeContext &ctx, size_t s, size_t z, DType data,
                  const std::string &name) {
  checkScale(op, name + "_scale", ctx.inputs[s].dtype);
  checkScalar(op, name + "_scale", ctx.inputs[s].shape);
  if (ctx.present(z)) {
    checkSameDtype(op, name, data, name + "_zero_point", ctx.inputs[z].dtype);
    checkScalar(op, name + "_zero_point", ctx.inputs[z].shape);
  }
}
QParams qparams(const EvalContext &ctx, size_t s, size_t z) {
  return {ctx.in(s).f[0], ctx.present(z) ? ctx.in(z).i[0] : 0};
}

Tensor dequantized(const Tensor &x, QParams p) {
  Tensor r(DType::F32, x.shape);
  for (int64_t k = 0; k < x.size(); ++k) r.f[k] = dequantizeValue(x.i[k], p.scale, p.zp);
  return r;
}
Tensor quantized(const Tensor &v, QParams p, DType t) {
  Tensor r(t, v.shape);
  for (int64_t k = 0; k < v.size(); ++k) r.i[k] = quantizeValue(v.f[k], p.scale, p.zp, t);
  return r;
}

// QLinearAdd / QLinearMul (A, A_scale, A_zero_point?, B, B_scale, B_zero_point?, C_scale, C_zero_point?)
ShapeFn qlinearBinaryShape(std::string op) {
  return [op](const ShapeContext &ctx) -> std::vector<TensorType> {
    checkInputs(op, ctx, 2, 8);
    for (size_t k : {size_t(3), size_t(4), size_t(6)})
      check(ctx.present(k), op + ": required input #" + std::to_string(k) + " is missing");
    checkOutputs(op, ctx, 1);
    DType t = ctx.inputs[0].dtype;
    check8Bit(op, "A", t);
    checkSameDtype(op, "A", t, "B", ctx.inputs[3].dtype);
    checkQParams(op, ctx, 1, 2, t, "A");
    checkQParams(op, ctx, 4, 5, t, "B");
    checkQParams(op, ctx, 6, 7, t, "C");
    return {{t, broadcastOrFail(op, {ctx.inputs[0].shape, ctx.inputs[3].shape})}};
  };
}
EvalFn qlinearBinaryEval(std::string op, bool add) {
  ShapeFn shape = qlinearBinaryShape(op);
  return [shape, add](const EvalContext &ctx) {
    TensorType t = shape(shapeContextOf(ctx)).at(0);
    const Tensor &a = ctx.in(0), &b = ctx.in(3);
    QParams pa = qparams(ctx, 1, 2), pb = qparams(ctx, 4, 5), pc = qparams(ctx, 6, 7);
    double ratio = f32(f32(pa.scale * pb.scale) / pc.scale);
    Tensor y(t.dtype, t.shape);
    for (int64_t k = 0; k < y.size(); ++k) {
      int64_t av = a.i[broadcastIndex(a.shape, t.shape, k)], bv = b.i[broadcastIndex(b.shape, t.shape, k)];
      if (add)
        y.i[k] = quantizeValue(f32(dequantizeValue(av, pa.scale, pa.zp) + dequantizeValue(bv, pb.scale, pb.zp)),
                               pc.scale, pc.zp, t.dtype);
      else
        y.i[k] = saturateRound(f32(ratio * double((av - pa.zp) * (bv - pb.zp))), pc.zp, t.dtype);
    }
    return std::vector<Tensor>{y};
  };
}

// Unary QLinear ops (X, X_scale, X_zero_point?, Y_scale, Y_zero_point?): q(f(dq(X))), f a
// float32 op of the registry (attributes passed on), optionally over NHWC data.
std::vector<int64_t> channelsLastPerm(size_t rank, bool toNchw) {
  std::vector<int64_t> p(rank);
  p[0] = 0;
  if (toNchw) {  // [N, D1.., C] -> [N, C, D1..]
    p[1] = int64_t(rank) - 1;
    for (size_t k = 2; k < rank; ++k) p[k] = int64_t(k) - 1;
  } else {  // [N, C, D1..] -> [N, D1.., C]
    for (size_t k = 1; k + 1 < rank; ++k) p[k] = int64_t(k) + 1;
    p[rank - 1] = 1;
  }
  return p;
}

TensorType permutedType(const TensorType &t, const std::vector<int64_t> &perm) {
  TensorType r{t.dtype, Shape(perm.size())};
  for (size_t k = 0; k < perm.size(); ++k) r.shape[k] = t.shape[perm[k]];
  return r;
}

Attrs withoutChannelsLast(const Attrs &attrs) {
  Attrs a = attrs;
  a.values.erase("channels_last");
  return a;
}

ShapeFn qlinearUnaryShape(std::string op, std::string floatOp, bool layoutAware) {
  return [op, floatOp, layoutAware](const ShapeContext &ctx) -> std::vector<TensorType> {
    checkInputs(op, ctx, 2, 5);
    check(ctx.present(3), op + ": required input #3 (Y_scale) is missing");
    checkOutputs(op, ctx, 1);
    DType t = ctx.inputs[0].dtype;
    check8Bit(op, "X", t);
    checkQParams(op, ctx, 1, 2, t, "X");
    checkQParams(op, ctx, 3, 4, t, "Y");
    TensorType x{DType::F32, ctx.inputs[0].shape};
    bool nhwc = layoutAware && ctx.attrs.getInt("channels_last", 0) != 0;
    if (nhwc) {
      check(x.shape.size() >= 3, op + ": channels_last needs an input of rank >= 3, got " + shapeString(x.shape));
      x = permutedType(x, channelsLastPerm(x.shape.size(), true));
    }
    TensorType y = shapeOfOp(floatOp, {x}, withoutChannelsLast(ctx.attrs));
    if (nhwc) y = permutedType(y, channelsLastPerm(y.shape.size(), false));
    return {{t, y.shape}};
  };
}
EvalFn qlinearUnaryEval(std::string op, std::string floatOp, bool layoutAware) {
  ShapeFn shape = qlinearUnaryShape(op, floatOp, layoutAware);
  return [shape, floatOp, layoutAware](const EvalContext &ctx) {
    TensorType t = shape(shapeContextOf(ctx)).at(0);
    Tensor x = dequantized(ctx.in(0), qparams(ctx, 1, 2));
    bool nhwc = layoutAware && ctx.attrs.getInt("channels_last", 0) != 0;
    Attrs perm;
    if (nhwc) {
      perm.set("perm", channelsLastPerm(x.shape.size(), true));
      x = runOp("Transpose", {&x}, perm);
    }
    Tensor y = runOp(floatOp, {&x}, withoutChannelsLast(ctx.attrs));
    if (nhwc) {
      perm.set("perm", channelsLastPerm(y.shape.size(), false));
      y = runOp("Transpose", {&y}, perm);
    }
    return std::vector<Tensor>{quantized(y, qparams(ctx, 3, 4), t.dtype)};
  };
}

// QLinearAveragePool as onnxruntime computes it: per window, the float32 sum of the dequantized
// taps in row-major order (taps clipped to the input; the window's start may lie in the padding),
// divided by the tap count (count_include_pad: the kernel's size), then
// saturate(round_half_even(f32(f32(avg / y_scale) + y_zero_point))). X as NCHW (`x`, transposed
// before for channels_last), output shape `outShape` (NCHW).
Tensor averagePoolOrt(const Tensor &x, const Shape &outShape, const Attrs &attrs, QParams px, QParams py, DType t) {
  size_t n = x.shape.size() - 2;
  Shape in(x.shape.begin() + 2, x.shape.end()), out(outShape.begin() + 2, outShape.end());
  Shape kernel = attrs.getInts("kernel_shape");
  Shape strides = attrs.getInts("strides", Shape(n, 1));
  Shape padBegin(n, 0), padEnd(n, 0);
  std::string autoPad = attrs.getString("auto_pad", "NOTSET");
  if (autoPad == "NOTSET") {
    explicitPads("QLinearAveragePool", attrs, n, padBegin, padEnd);
  } else if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    for (size_t d = 0; d < n; ++d) {
      int64_t total = std::max<int64_t>(0, (out[d] - 1) * strides[d] + kernel[d] - in[d]);
      padBegin[d] = autoPad == "SAME_UPPER" ? total / 2 : total - total / 2;
    }
  }
  bool includePad = attrs.getInt("count_include_pad", 0) != 0;
  int64_t planes = x.shape[0] * x.shape[1], inSize = numElements(in), outSize = numElements(out);
  Tensor y(t, outShape);
  std::vector<int64_t> o(n, 0), lo(n), hi(n), k(n);
  for (int64_t plane = 0; plane < planes; ++plane) {
    std::fill(o.begin(), o.end(), 0);
    for (int64_t p = 0; p < outSize; ++p, nextIndex(o, out)) {
      int64_t count = 1;
      for (size_t d = 0; d < n; ++d) {
        int64_t start = o[d] * strides[d] - padBegin[d];
        hi[d] = std::min(start + kernel[d], in[d]);
        lo[d] = std::max<int64_t>(start, 0);
        count *= includePad ? kernel[d] : std::max<int64_t>(hi[d] - lo[d], 0);
      }
      double sum = 0;
      bool empty = false;
      for (size_t d = 0; d < n; ++d) empty |= hi[d] <= lo[d];
      if (!empty) {
        k = lo;
        do {
          int64_t off = 0;
          for (size_t d = 0; d < n; ++d) off = off * in[d] + k[d];
          sum = f32(sum + dequantizeValue(x.i[plane * inSize + off], px.scale, px.zp));
          size_t d = n;
          while (d-- > 0 && ++k[d] == hi[d]) k[d] = lo[d];
          if (d == size_t(-1)) break;
        } while (true);
      }
      double avg = count ? f32(sum / double(count)) : 0.0;
      y.i[plane * outSize + p] = saturateRound(f32(f32(avg / py.scale) + double(py.zp)), 0, t);
    }
  }
  return y;
}

// QLinearGlobalAveragePool (X, x_scale, x_zero_point, y_scale, y_zero_point; channels_last):
// integer sums over each channel's image, requantized with f32(x_scale / f32(y_scale · n)).
std::vector<TensorType> qlinearGlobalPoolShape(const ShapeContext &ctx) {
  const std::string op = kMs + "QLinearGlobalAveragePool";
  checkInputs(op, ctx, 5, 5);
  checkOutputs(op, ctx, 1);
  DType t = ctx.inputs[0].dtype;
  check8Bit(op, "X", t);
  checkQParams(op, ctx, 1, 2, t, "x");
  checkQParams(op, ctx, 3, 4, t, "y");
  Shape s = ctx.inputs[0].shape;
  check(s.size() >= 3, op + ": X must have rank >= 3, got " + shapeString(s));
  bool nhwc = ctx.attrs.getInt("channels_last", 0) != 0;
  for (size_t k = nhwc ? 1 : 2; k < (nhwc ? s.size() - 1 : s.size()); ++k) s[k] = 1;
  return {{t, s}};
}
std::vector<Tensor> qlinearGlobalPoolEval(const EvalContext &ctx) {
  TensorType t = qlinearGlobalPoolShape(shapeContextOf(ctx)).at(0);
  const Tensor &x = ctx.in(0);
  QParams px = qparams(ctx, 1, 2), py = qparams(ctx, 3, 4);
  bool nhwc = ctx.attrs.getInt("channels_last", 0) != 0;
  int64_t n = x.shape[0], c = nhwc ? x.shape.back() : x.shape[1];
  int64_t image = (n * c) ? x.size() / (n * c) : 0;
  double mul = f32(px.scale / f32(py.scale * f32(double(image))));
  Tensor y(t.dtype, t.shape);
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ch = 0; ch < c; ++ch) {
      int64_t sum = -px.zp * image;
      for (int64_t p = 0; p < image; ++p) sum += x.i[nhwc ? (b * image + p) * c + ch : (b * c + ch) * image + p];
      y.i[b * c + ch] = saturateRound(f32(f32(double(wrapI32(sum))) * mul), py.zp, t.dtype);
    }
  return {y};
}

// QLinearConcat(Y_scale, Y_zero_point, (X, X_scale, X_zero_point)...; axis)
std::vector<TensorType> qlinearConcatShape(const ShapeContext &ctx) {
  const std::string op = kMs + "QLinearConcat";
  size_t n = ctx.inputs.size();
  check(n >= 5 && (n - 2) % 3 == 0,
        op + ": expected Y_scale, Y_zero_point and a (tensor, scale, zero point) triple per input, got " +
            plural(int64_t(n), "input"));
  checkOutputs(op, ctx, 1);
  for (size_t k = 0; k < n; ++k) check(ctx.present(k), op + ": input #" + std::to_string(k) + " is missing");
  DType t = ctx.inputs[1].dtype;
  check8Bit(op, "Y_zero_point", t);
  checkQParams(op, ctx, 0, 1, t, "Y");
  std::vector<TensorType> xs;
  for (size_t k = 2; k < n; k += 3) {
    std::string name = "input " + std::to_string((k - 2) / 3);
    checkSameDtype(op, name, ctx.inputs[k].dtype, "Y_zero_point", t);
    checkQParams(op, ctx, k + 1, k + 2, t, name);
    xs.push_back({DType::F32, ctx.inputs[k].shape});
  }
  return {{t, shapeOfOp("Concat", xs, ctx.attrs).shape}};
}
std::vector<Tensor> qlinearConcatEval(const EvalContext &ctx) {
  TensorType t = qlinearConcatShape(shapeContextOf(ctx)).at(0);
  QParams py = qparams(ctx, 0, 1);
  std::vector<Tensor> parts;
  for (size_t k = 2; k < ctx.inputs.size(); k += 3)
    parts.push_back(quantized(dequantized(ctx.in(k), qparams(ctx, k + 1, k + 2)), py, t.dtype));
  std::vector<const Tensor *> in;
  for (auto &p : parts) in.push_back(&p);
  return {runOp("Concat", in, ctx.attrs)};
}

std::vector<Tensor> qlinearAveragePoolEval(const EvalContext &ctx) {
  static const ShapeFn shape = qlinearUnaryShape(kMs + "QLinearAveragePool", "AveragePool", true);
  TensorType t = shape(shapeContextOf(ctx)).at(0);
  bool nhwc = ctx.attrs.getInt("channels_last", 0) != 0;
  Tensor x = ctx.in(0);
  Shape outShape = t.shape;
  Attrs perm;
  if (nhwc) {
    perm.set("perm", channelsLastPerm(x.shape.size(), true));
    x = runOp("Transpose", {&x}, perm);
    outShape = permutedType({t.dtype, t.shape}, channelsLastPerm(t.shape.size(), true)).shape;
  }
  Tensor y = averagePoolOrt(x, outShape, ctx.attrs, qparams(ctx, 1, 2), qparams(ctx, 3, 4), t.dtype);
  if (nhwc) {
    perm.set("perm", channelsLastPerm(y.shape.size(), false));
    y = runOp("Transpose", {&y}, perm);
  }
  return {y};
}

int64_t concatFlops(const ShapeContext &, const std::vector<TensorType> &outs) {
  return outs.empty() ? 0 : 3 * numElements(outs[0].shape);
}

}  // namespace

KILN_REGISTER_OP({"DynamicQuantizeLinear", dynamicQuantizeShape, dynamicQuantizeEval, ew::perElementFlops(5)});
KILN_REGISTER_OP({"MatMulInteger", matmulIntegerShape, matmulIntegerEval, productFlops});
KILN_REGISTER_OP({"QLinearMatMul", qlinearMatmulShape, qlinearMatmulEval, productFlops});
KILN_REGISTER_OP({"ConvInteger", convIntegerShape, convIntegerEval,
                  [](const ShapeContext &c, const std::vector<TensorType> &o) { return convFlopsOf(c, o, 1); }});
KILN_REGISTER_OP({"QLinearConv", qlinearConvShape, qlinearConvEval,
                  [](const ShapeContext &c, const std::vector<TensorType> &o) { return convFlopsOf(c, o, 3); }});
KILN_REGISTER_OP({kMs + "QLinearAdd", qlinearBinaryShape(kMs + "QLinearAdd"),
                  qlinearBinaryEval(kMs + "QLinearAdd", true), ew::perElementFlops(6)});
KILN_REGISTER_OP({kMs + "QLinearMul", qlinearBinaryShape(kMs + "QLinearMul"),
                  qlinearBinaryEval(kMs + "QLinearMul", false), ew::perElementFlops(5)});
KILN_REGISTER_OP({kMs + "QLinearSigmoid", qlinearUnaryShape(kMs + "QLinearSigmoid", "Sigmoid", false),
                  qlinearUnaryEval(kMs + "QLinearSigmoid", "Sigmoid", false), ew::perElementFlops(8)});
KILN_REGISTER_OP({kMs + "QLinearLeakyRelu", qlinearUnaryShape(kMs + "QLinearLeakyRelu", "LeakyRelu", false),
                  qlinearUnaryEval(kMs + "QLinearLeakyRelu", "LeakyRelu", false), ew::perElementFlops(5)});
KILN_REGISTER_OP({kMs + "QLinearAveragePool", qlinearUnaryShape(kMs + "QLinearAveragePool", "AveragePool", true),
                  qlinearAveragePoolEval, ew::perElementFlops(4)});
KILN_REGISTER_OP({kMs + "QLinearGlobalAveragePool", qlinearGlobalPoolShape, qlinearGlobalPoolEval,
                  [](const ShapeContext &c, const std::vector<TensorType> &) {
                    return numElements(c.inputs[0].shape);
                  }});
KILN_REGISTER_OP({kMs + "QLinearConcat", qlinearConcatShape, qlinearConcatEval, concatFlops});
KILN_REGISTER_OP({kMs + "MatMulIntegerToFloat", matmulIntegerToFloatShape, matmulIntegerToFloatEval, productFlops});
KILN_REGISTER_OP({kMs + "QGemm", qgemmShape, qgemmEval, [](const ShapeContext &c, const std::vector<TensorType> &o) {
                    const Shape &a = c.inputs[0].shape;
                    return o.empty() || a.size() != 2
                               ? int64_t(0)
                               : 2 * numElements(o[0].shape) * (c.attrs.getInt("transA", 0) ? a[0] : a[1]);
                  }});
KILN_REGISTER_OP({kMs + "DynamicQuantizeMatMul", dynamicQuantizeMatmulShape, dynamicQuantizeMatmulEval, productFlops});

}  // namespace kiln::ops

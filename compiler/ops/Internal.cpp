// kiln-internal ops: forms that compiler passes create, not ONNX ops. Each is defined by the ONNX
// ops it stands for, so its reference semantics are those ops' kernels composed:
//   TransposedMatMul(A, B, perm_a, perm_b) = MatMul(Transpose(A, perm_a), Transpose(B, perm_b))
//   ReduceMinMax(lo_in, hi_in, axes, keepdims) = {ReduceMin(lo_in), ReduceMax(hi_in)}, both with
//     those axes and keepdims (lo_in and hi_in of one shape and type)
//   QuantizedMatMul(A, B, scale, perm_a, perm_b, a_zero_point) = float32(float32(Σ (a - za)·b) · scale[n]):
//     int8 (or uint8) A with zero point za (attribute, default 0), int8 B
//     (as TransposedMatMul's operands), exact integer sums, the per-column scale applied in
//     float32 as the int8 kernel does (scale: [N], or one element)
//   QuantizedConv(X, W, scale, B, a_zero_point) = float32(float32(Conv(X - za, W)) · scale[m]) + B[m]:
//     int8 (or uint8) X with zero point za (attribute, default 0; the padding of X - za is 0, as
//     X padded with za), int8 W, exact integer sums (scale: [M], or one element; B: float32 [M],
//     optional)
//   ConvNhwc(X, W, B)                      = Transpose(Conv(Transpose(X, 0231ᵀ), W, B), 0231)
//     (also 1-D, with the pools: X [N, L, C], the transposes 021)
//   QuantizedConvNhwc(X, W, scale, B)      = the same transposes around QuantizedConv
//   MaxPoolNhwc(X), AveragePoolNhwc(X)     = the same transposes around MaxPool / AveragePool
//   Attention(Q, K, V, mask, scale, perm_q, perm_k, perm_v, perm_y, causal_diagonal) =
//     Transpose(MatMul(Softmax(scale · MatMul(Q', K') + mask, axis -1), V'), perm_y) with
//     Q' = Transpose(Q, perm_q) etc., computed in float32 and rounded to Q's type (Q, K, V of one
//     float type; K' is Kᵀ); with causal_diagonal d >= 0, scores [.., i, j] with j > i + d are -inf;
//     with zero_masked_rows = 1, NaN probabilities (a row whose scores are all -inf) become 0
//   StridedView(X, shape, strides, offset): Y[i] = flat(X)[offset + Σ_k i_k · strides[k]], Y of
//     `shape` (strides >= 0; every element read must lie inside X)
//   Im2Col(X, kernel_shape, strides, dilations, pads): the patches of an NHWC image as rows,
//     Y[n, oh, ow, (kh·KW + kw)·C + c] = X[n, oh·sh + kh·dh - top, ow·sw + kw·dw - left, c], 0
//     outside the image (pads [top, left, bottom, right])
// (ConvNhwc keeps W in ONNX's [M, C/group, KH, KW] layout: only activations change layout.)
#include "compiler/ops/OpSemantics.h"
#include "compiler/ops/OpUtil.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace kiln::ops {
namespace {

// Channels last and back, for a tensor of rank r >= 3 (N, C, spatial... ⇄ N, spatial..., C).
Shape toNhwc(size_t r) {
  Shape p = {0};
  for (size_t k = 2; k < r; ++k) p.push_back(int64_t(k));
  p.push_back(1);
  return p;
}
Shape toNchw(size_t r) {
  Shape p = {0, int64_t(r) - 1};
  for (size_t k = 1; k + 1 < r; ++k) p.push_back(int64_t(k));
  return p;
}

TensorType permuted(const TensorType &t, const Shape &perm) {
  check(t.shape.size() == perm.size(),
        "expected rank " + std::to_string(perm.size()) + ", got " + shapeString(t.shape));
  TensorType r{t.dtype, Shape(perm.size())};
  for (size_t k = 0; k < perm.size(); ++k) r.shape[k] = t.shape[perm[k]];
  return r;
}

Tensor transposed(const Tensor &t, const Shape &perm) {
  Attrs a;
  a.set("perm", perm);
  EvalContext ctx{{&t}, a, 1};
  return findOp("Transpose")->eval(ctx).at(0);
}

// ONNX Cast of `t` to `to` (DType values are ONNX's type codes).
Tensor castTo(const Tensor &t, DType to) {
  Attrs a;
  a.set("to", int64_t(to));
  EvalContext ctx{{&t}, a, 1};
  return findOp("Cast")->eval(ctx).at(0);
}

const OpDef &base(const char *name) {
  const OpDef *d = findOp(name);
  check(d != nullptr, std::string("internal: op ") + name + " is not registered");
  return *d;
}

// The permutation named by attribute `name` for an operand of rank `rank` (identity if absent).
Shape permOf(const Attrs &attrs, const char *name, size_t rank) {
  Shape id(rank);
  for (size_t k = 0; k < rank; ++k) id[k] = static_cast<int64_t>(k);
  Shape p = attrs.getInts(name, id);
  Shape sorted = p;
  std::sort(sorted.begin(), sorted.end());
  check(sorted == id, std::string(name) + " " + listString(p) + " is not a permutation of the operand's " +
                          std::to_string(rank) + " dims");
  return p;
}

// ---- TransposedMatMul ------------------------------------------------------------------------

ShapeContext matmulContext(const ShapeContext &ctx, std::vector<TensorType> &types) {
  check(ctx.present(0) && ctx.present(1), "TransposedMatMul: needs A and B");
  check(ctx.inputs[0].shape.size() >= 2 && ctx.inputs[1].shape.size() >= 2,
        "TransposedMatMul: A and B must have rank >= 2");
  types = {permuted(ctx.inputs[0], permOf(ctx.attrs, "perm_a", ctx.inputs[0].shape.size())),
           permuted(ctx.inputs[1], permOf(ctx.attrs, "perm_b", ctx.inputs[1].shape.size()))};
  return ShapeContext{types, {nullptr, nullptr}, ctx.attrs, ctx.numOutputs};
}

std::vector<TensorType> transposedMatMulShape(const ShapeContext &ctx) {
  std::vector<TensorType> types;
  return base("MatMul").shape(matmulContext(ctx, types));
}

std::vector<Tensor> transposedMatMulEval(const EvalContext &ctx) {
  const Tensor &a = ctx.in(0), &b = ctx.in(1);
  Tensor at = transposed(a, permOf(ctx.attrs, "perm_a", a.shape.size()));
  Tensor bt = transposed(b, permOf(ctx.attrs, "perm_b", b.shape.size()));
  EvalContext inner{{&at, &bt}, ctx.attrs, 1};
  return base("MatMul").eval(inner);
}

int64_t transposedMatMulFlops(const ShapeContext &ctx, const std::vector<TensorType> &outputs) {
  std::vector<TensorType> types;
  return base("MatMul").flops(matmulContext(ctx, types), outputs);
}

// ---- ReduceMinMax ------------------------------------------------------------------------------

// {ReduceMin(lo_in), ReduceMax(hi_in)} with the same axes and keepdims; lo_in and hi_in of one
// shape and type.
ShapeContext oneInput(const ShapeContext &ctx, size_t i) {
  return ShapeContext{{ctx.inputs.at(i)}, {ctx.values.size() > i ? ctx.values[i] : nullptr}, ctx.attrs, 1};
}

std::vector<TensorType> reduceMinMaxShape(const ShapeContext &ctx) {
  check(ctx.inputs.size() == 2 && ctx.numOutputs == 2, "ReduceMinMax takes two inputs and has two outputs");
  check(ctx.inputs[0].shape == ctx.inputs[1].shape && ctx.inputs[0].dtype == ctx.inputs[1].dtype,
        "ReduceMinMax's inputs differ in shape or type");
  std::vector<TensorType> lo = base("ReduceMin").shape(oneInput(ctx, 0)),
                          hi = base("ReduceMax").shape(oneInput(ctx, 1));
  return {lo.at(0), hi.at(0)};
}

std::vector<Tensor> reduceMinMaxEval(const EvalContext &ctx) {
  EvalContext lo{{&ctx.in(0)}, ctx.attrs, 1}, hi{{&ctx.in(1)}, ctx.attrs, 1};
  return {base("ReduceMin").eval(lo).at(0), base("ReduceMax").eval(hi).at(0)};
}

int64_t reduceMinMaxFlops(const ShapeContext &ctx, const std::vector<TensorType> &outputs) {
  return base("ReduceMin").flops(oneInput(ctx, 0), {outputs.at(0)}) +
         base("ReduceMax").flops(oneInput(ctx, 1), {outputs.at(1)});
}

// ---- QuantizedMatMul ---------------------------------------------------------------------------

// MatMul's view of a QuantizedMatMul: the transposed A and B, without the scale.
ShapeContext quantizedProductContext(const ShapeContext &ctx, std::vector<TensorType> &types) {
  ShapeContext c = matmulContext(ctx, types);
  c.inputs.resize(2);
  c.values.resize(2);
  c.inputs[0].dtype = c.inputs[1].dtype = DType::F64;  // (a uint8 A multiplies int8 B as well)
  return c;
}

// The 8-bit operands of a quantized product: int8 (A may be uint8) or float8e4m3fn, both alike.
void checkQuantizedOperands(const char *op, const TensorType &a, const TensorType &b, bool aMayBeUint8) {
  bool int8 = (a.dtype == DType::I8 || (aMayBeUint8 && a.dtype == DType::U8)) && b.dtype == DType::I8;
  bool fp8 = a.dtype == DType::F8E4M3 && b.dtype == DType::F8E4M3;
  check(int8 || fp8, std::string(op) + ": the operands must be int8 (" + (aMayBeUint8 ? "A may be uint8" : "both") +
                         ") or both f8E4M3FN, got " + dtypeName(a.dtype) + " and " + dtypeName(b.dtype));
}

// 8-bit values as doubles: products and sums stay exact (|sum| < 2^53).
Tensor widened(const Tensor &t) {
  Tensor w(DType::F64, t.shape);
  for (int64_t i = 0; i < t.size(); ++i) w.f[size_t(i)] = t.get(i);
  return w;
}

std::vector<TensorType> quantizedMatMulShape(const ShapeContext &ctx) {
  check(ctx.present(0) && ctx.present(1) && ctx.present(2), "QuantizedMatMul: needs A, B and scale");
  checkQuantizedOperands("QuantizedMatMul", ctx.inputs[0], ctx.inputs[1], true);
  check(ctx.inputs[2].dtype == DType::F32, "QuantizedMatMul: scale must be float32");
  std::vector<TensorType> types;
  std::vector<TensorType> out = base("MatMul").shape(quantizedProductContext(ctx, types));
  int64_t n = out[0].shape.back(), ns = numElements(ctx.inputs[2].shape);
  check(ctx.inputs[2].shape.size() <= 1 && (ns == n || ns == 1),
        "QuantizedMatMul: scale must have one element or N = " + std::to_string(n) + ", got " +
            shapeString(ctx.inputs[2].shape));
  out[0].dtype = DType::F32;
  return out;
}

std::vector<Tensor> quantizedMatMulEval(const EvalContext &ctx) {
  auto operand = [&](int k, const char *perm) {
    return widened(transposed(ctx.in(k), permOf(ctx.attrs, perm, ctx.in(k).shape.size())));
  };
  Tensor a = operand(0, "perm_a"), b = operand(1, "perm_b");
  int64_t za = ctx.attrs.getInt("a_zero_point", 0);
  for (double &v : a.f) v -= double(za);
  EvalContext inner{{&a, &b}, ctx.attrs, 1};
  Tensor sums = base("MatMul").eval(inner)[0];
  const Tensor &scale = ctx.in(2);
  Tensor y(DType::F32, sums.shape);
  int64_t n = sums.shape.back(), ns = numElements(scale.shape);
  for (int64_t i = 0; i < y.size(); ++i)
    y.set(i, double(float(sums.f[size_t(i)]) * float(scale.f[size_t(ns == 1 ? 0 : i % n)])));
  return {y};
}

int64_t quantizedMatMulFlops(const ShapeContext &ctx, const std::vector<TensorType> &outputs) {
  std::vector<TensorType> types;
  return base("MatMul").flops(quantizedProductContext(ctx, types), outputs);
}

// ---- QuantizedConv -----------------------------------------------------------------------------

// Conv's view of a QuantizedConv: X and W as float32, no bias.
ShapeContext quantizedConvContext(const ShapeContext &ctx, std::vector<TensorType> &types) {
  check(ctx.present(0) && ctx.present(1) && ctx.present(2), "QuantizedConv: needs X, W and scale");
  checkQuantizedOperands("QuantizedConv", ctx.inputs[0], ctx.inputs[1], true);
  check(ctx.inputs[2].dtype == DType::F32, "QuantizedConv: scale must be float32");
  types = {{DType::F32, ctx.inputs[0].shape}, {DType::F32, ctx.inputs[1].shape}};
  return ShapeContext{types, {nullptr, nullptr}, ctx.attrs, ctx.numOutputs};
}

std::vector<TensorType> quantizedConvShape(const ShapeContext &ctx) {
  std::vector<TensorType> types;
  std::vector<TensorType> out = base("Conv").shape(quantizedConvContext(ctx, types));
  int64_t m = ctx.inputs[1].shape.at(0), ns = numElements(ctx.inputs[2].shape);
  check(ctx.inputs[2].shape.size() <= 1 && (ns == m || ns == 1),
        "QuantizedConv: scale must have one element or M = " + std::to_string(m) + ", got " +
            shapeString(ctx.inputs[2].shape));
  if (ctx.present(3))
    check(ctx.inputs[3].dtype == DType::F32 && ctx.inputs[3].shape == Shape{m},
          "QuantizedConv: B must be float32 [" + std::to_string(m) + "], got " + shapeString(ctx.inputs[3].shape));
  return out;
}

std::vector<Tensor> quantizedConvEval(const EvalContext &ctx) {
  Tensor x = widened(ctx.in(0)), w = widened(ctx.in(1));
  int64_t za = ctx.attrs.getInt("a_zero_point", 0);
  for (double &v : x.f) v -= double(za);
  EvalContext inner{{&x, &w}, ctx.attrs, 1};
  Tensor sums = base("Conv").eval(inner)[0];
  const Tensor &scale = ctx.in(2);
  const Tensor *bias = ctx.present(3) ? &ctx.in(3) : nullptr;
  Tensor y(DType::F32, sums.shape);
  int64_t m = sums.shape.at(1), inner1 = y.size() / std::max<int64_t>(sums.shape.at(0) * m, 1),
          ns = numElements(scale.shape);
  for (int64_t i = 0; i < y.size(); ++i) {
    int64_t c = (i / inner1) % m;
    float v = float(sums.f[size_t(i)]) * float(scale.f[size_t(ns == 1 ? 0 : c)]);
    y.set(i, double(bias ? v + float(bias->f[size_t(c)]) : v));
  }
  return {y};
}

int64_t quantizedConvFlops(const ShapeContext &ctx, const std::vector<TensorType> &outputs) {
  std::vector<TensorType> types;
  return base("Conv").flops(quantizedConvContext(ctx, types), outputs);
}

// ---- NHWC forms of Conv and pooling ------------------------------------------------------------

// The NCHW view of the context: input 0 transposed, the others as they are.
ShapeContext nchwContext(const char *op, const ShapeContext &ctx, std::vector<TensorType> &types) {
  // (3-D: a 1-D convolution's or pool's [N, L, C])
  size_t r = ctx.present(0) ? ctx.inputs[0].shape.size() : 0;
  check(r == 4 || (r == 3 && std::string(op) != "QuantizedConvNhwc"),
        std::string(op) + ": X must be a 4-D NHWC tensor (or 3-D NLC), got " + shapeString(ctx.inputs[0].shape));
  types = ctx.inputs;
  types[0] = permuted(ctx.inputs[0], toNchw(r));
  std::vector<const Tensor *> values = ctx.values;
  values[0] = nullptr;
  return ShapeContext{types, values, ctx.attrs, ctx.numOutputs};
}

ShapeFn nhwcShape(const char *name, const char *nchw) {
  return [name, nchw](const ShapeContext &ctx) {
    check(ctx.numOutputs == 1, std::string(name) + " has one output");
    std::vector<TensorType> types;
    std::vector<TensorType> out = base(nchw).shape(nchwContext(name, ctx, types));
    out.resize(1);
    out[0] = permuted(out[0], toNhwc(out[0].shape.size()));
    return out;
  };
}

EvalFn nhwcEval(const char *nchw) {
  return [nchw](const EvalContext &ctx) {
    Tensor x = transposed(ctx.in(0), toNchw(ctx.in(0).shape.size()));
    EvalContext inner = ctx;
    inner.inputs[0] = &x;
    std::vector<Tensor> out = base(nchw).eval(inner);
    out.resize(1);
    out[0] = transposed(out[0], toNhwc(out[0].shape.size()));
    return out;
  };
}

FlopsFn nhwcFlops(const char *name, const char *nchw) {
  return [name, nchw](const ShapeContext &ctx, const std::vector<TensorType> &outputs) -> int64_t {
    const OpDef &d = base(nchw);
    if (!d.flops) return 0;
    std::vector<TensorType> types;
    std::vector<TensorType> outs = {permuted(outputs.at(0), toNchw(outputs.at(0).shape.size()))};
    return d.flops(nchwContext(name, ctx, types), outs);
  };
}

// ---- Attention ---------------------------------------------------------------------------------

// Q', K' and V' (the operands through their permutations), checked to chain.
std::vector<TensorType> attentionOperands(const ShapeContext &ctx) {
  check(ctx.present(0) && ctx.present(1) && ctx.present(2), "Attention: needs Q, K and V");
  std::vector<TensorType> t;
  const char *perms[] = {"perm_q", "perm_k", "perm_v"};
  for (size_t k = 0; k < 3; ++k) {
    check(ctx.inputs[k].shape.size() >= 2, "Attention: Q, K and V must have rank >= 2");
    check(isFloat(ctx.inputs[k].dtype) && ctx.inputs[k].dtype == ctx.inputs[0].dtype,
          "Attention: Q, K and V must be of one float type");
    t.push_back(permuted(ctx.inputs[k], permOf(ctx.attrs, perms[k], ctx.inputs[k].shape.size())));
  }
  return t;
}

std::vector<TensorType> attentionShape(const ShapeContext &ctx) {
  std::vector<TensorType> t = attentionOperands(ctx);
  const OpDef &mm = base("MatMul");
  TensorType scores = mm.shape(ShapeContext{{t[0], t[1]}, {nullptr, nullptr}, ctx.attrs, 1}).at(0);
  if (ctx.present(3)) {
    check(isFloat(ctx.inputs[3].dtype), "Attention: the mask must be a float tensor");
    const Shape &m = ctx.inputs[3].shape, &s = scores.shape;
    bool fits = m.size() <= s.size();
    for (size_t d = 1; fits && d <= m.size(); ++d) fits = m[m.size() - d] == 1 || m[m.size() - d] == s[s.size() - d];
    check(fits, "Attention: the mask " + shapeString(m) + " does not broadcast to the scores " + shapeString(s));
  }
  TensorType y = mm.shape(ShapeContext{{scores, t[2]}, {nullptr, nullptr}, ctx.attrs, 1}).at(0);
  return {permuted(y, permOf(ctx.attrs, "perm_y", y.shape.size()))};
}

std::vector<Tensor> attentionEval(const EvalContext &ctx) {
  attentionShape(shapeContextOf(ctx));  // the checks, with their messages
  auto operand = [&](int k, const char *perm) {
    return castTo(transposed(ctx.in(k), permOf(ctx.attrs, perm, ctx.in(k).shape.size())), DType::F32);
  };
  Tensor q = operand(0, "perm_q"), k = operand(1, "perm_k"), v = operand(2, "perm_v");
  Attrs none;
  auto run = [&](const char *op, std::vector<const Tensor *> in, const Attrs &a) {
    return base(op).eval({in, a, 1}).at(0);
  };
  Tensor s = run("MatMul", {&q, &k}, none);
  Tensor scale(DType::F32, {});
  scale.set(0, ctx.attrs.getFloat("scale", 1.0));
  s = run("Mul", {&s, &scale}, none);
  if (ctx.present(3)) {
    Tensor mask = castTo(ctx.in(3), DType::F32);
    s = run("Add", {&s, &mask}, none);
  }
  if (ctx.attrs.has("causal_diagonal")) {
    const int64_t d = ctx.attrs.getInt("causal_diagonal"), sk = s.shape.back(), sq = s.shape[s.shape.size() - 2];
    check(d >= 0, "Attention: causal_diagonal must be >= 0");
    for (int64_t e = 0; e < s.size(); ++e)
      if (e % sk > (e / sk) % sq + d) s.f[size_t(e)] = -std::numeric_limits<double>::infinity();
  }
  Attrs lastAxis;
  lastAxis.set("axis", int64_t(-1));
  Tensor p = run("Softmax", {&s}, lastAxis);
  if (ctx.attrs.getInt("zero_masked_rows", 0))
    for (double &x : p.f)
      if (std::isnan(x)) x = 0;
  Tensor y = run("MatMul", {&p, &v}, none);
  return {castTo(transposed(y, permOf(ctx.attrs, "perm_y", y.shape.size())), ctx.in(0).dtype)};
}

int64_t attentionFlops(const ShapeContext &ctx, const std::vector<TensorType> &outputs) {
  std::vector<TensorType> t = attentionOperands(ctx);
  int64_t scores = numElements(outputs.at(0).shape) / t[2].shape.back() * t[1].shape.back();
  // Two products (2 · D and 2 · Dv per score), and scale, mask, exp, sum and divide per score.
  return scores * (2 * t[0].shape.back() + 2 * t[2].shape.back() + 5);
}

// ---- StridedView -------------------------------------------------------------------------------

std::vector<TensorType> stridedViewShape(const ShapeContext &ctx) {
  check(ctx.inputs.size() == 1 && ctx.present(0) && ctx.numOutputs == 1, "StridedView has one input and one output");
  Shape shape = ctx.attrs.getInts("shape"), strides = ctx.attrs.getInts("strides");
  int64_t offset = ctx.attrs.getInt("offset", 0), last = offset;
  check(shape.size() == strides.size(), "StridedView: one stride per dim");
  bool empty = false;
  for (size_t k = 0; k < shape.size(); ++k) {
    check(shape[k] >= 0 && strides[k] >= 0, "StridedView: sizes and strides must be >= 0");
    empty = empty || shape[k] == 0;
    if (shape[k] > 0) last += (shape[k] - 1) * strides[k];
  }
  check(offset >= 0 && (empty || last < numElements(ctx.inputs[0].shape)),
        "StridedView: the view reads past the end of its input " + shapeString(ctx.inputs[0].shape));
  return {TensorType{ctx.inputs[0].dtype, shape}};
}

std::vector<Tensor> stridedViewEval(const EvalContext &ctx) {
  std::vector<TensorType> t = stridedViewShape(shapeContextOf(ctx));
  const Tensor &x = ctx.in(0);
  Shape strides = ctx.attrs.getInts("strides");
  Tensor y(x.dtype, t[0].shape);
  for (int64_t i = 0; i < y.size(); ++i) {
    int64_t at = ctx.attrs.getInt("offset", 0), rest = i;
    for (size_t k = y.shape.size(); k-- > 0;) at += (rest % y.shape[k]) * strides[k], rest /= y.shape[k];
    if (y.isFloating())
      y.f[size_t(i)] = x.f[size_t(at)];
    else
      y.i[size_t(i)] = x.i[size_t(at)];
  }
  return {y};
}

// ---- Im2Col ----------------------------------------------------------------------------------

struct Im2ColGeometry {
  int64_t N, H, W, C, KH, KW, sh, sw, dh, dw, top, left, OH, OW;
};

Im2ColGeometry im2colGeometry(const TensorType &x, const Attrs &attrs) {
  check(x.shape.size() == 4, "Im2Col: X must be an NHWC image (rank 4), got " + shapeString(x.shape));
  Shape k = attrs.getInts("kernel_shape", {}), s = attrs.getInts("strides", {1, 1}),
        d = attrs.getInts("dilations", {1, 1}), p = attrs.getInts("pads", {0, 0, 0, 0});
  check(k.size() == 2 && s.size() == 2 && d.size() == 2 && p.size() == 4,
        "Im2Col: kernel_shape, strides and dilations need 2 values, pads 4");
  for (size_t a = 0; a < 2; ++a) check(k[a] >= 1 && s[a] >= 1 && d[a] >= 1, "Im2Col: sizes must be >= 1");
  for (int64_t v : p) check(v >= 0, "Im2Col: pads must be >= 0");
  Im2ColGeometry g{x.shape[0], x.shape[1], x.shape[2], x.shape[3], k[0], k[1], s[0],
                   s[1],       d[0],       d[1],       p[0],       p[1], 0,    0};
  int64_t effH = (g.KH - 1) * g.dh + 1, effW = (g.KW - 1) * g.dw + 1, H = g.H + p[0] + p[2], W = g.W + p[1] + p[3];
  check(H >= effH && W >= effW, "Im2Col: the kernel is larger than the padded image " + shapeString(x.shape));
  g.OH = (H - effH) / g.sh + 1;
  g.OW = (W - effW) / g.sw + 1;
  return g;
}

std::vector<TensorType> im2colShape(const ShapeContext &ctx) {
  check(ctx.inputs.size() == 1 && ctx.numOutputs == 1, "Im2Col has one input and one output");
  Im2ColGeometry g = im2colGeometry(ctx.inputs[0], ctx.attrs);
  return {TensorType{ctx.inputs[0].dtype, {g.N, g.OH, g.OW, g.KH * g.KW * g.C}}};
}

std::vector<Tensor> im2colEval(const EvalContext &ctx) {
  const Tensor &x = ctx.in(0);
  Im2ColGeometry g = im2colGeometry(TensorType{x.dtype, x.shape}, ctx.attrs);
  Tensor y(x.dtype, {g.N, g.OH, g.OW, g.KH * g.KW * g.C});
  int64_t o = 0;
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t oh = 0; oh < g.OH; ++oh)
      for (int64_t ow = 0; ow < g.OW; ++ow)
        for (int64_t kh = 0; kh < g.KH; ++kh)
          for (int64_t kw = 0; kw < g.KW; ++kw)
            for (int64_t c = 0; c < g.C; ++c, ++o) {
              int64_t ih = oh * g.sh + kh * g.dh - g.top, iw = ow * g.sw + kw * g.dw - g.left;
              if (ih < 0 || ih >= g.H || iw < 0 || iw >= g.W) continue;  // (y is zero-filled)
              int64_t src = ((n * g.H + ih) * g.W + iw) * g.C + c;
              if (y.isFloating())
                y.f[o] = x.f[src];
              else
                y.i[o] = x.i[src];
            }
  return {y};
}

}  // namespace

KILN_REGISTER_OP({"Im2Col", im2colShape, im2colEval, nullptr});
KILN_REGISTER_OP({"Attention", attentionShape, attentionEval, attentionFlops});
KILN_REGISTER_OP({"StridedView", stridedViewShape, stridedViewEval, nullptr});
KILN_REGISTER_OP({"TransposedMatMul", transposedMatMulShape, transposedMatMulEval, transposedMatMulFlops});
KILN_REGISTER_OP({"ReduceMinMax", reduceMinMaxShape, reduceMinMaxEval, reduceMinMaxFlops});
KILN_REGISTER_OP({"QuantizedMatMul", quantizedMatMulShape, quantizedMatMulEval, quantizedMatMulFlops});
KILN_REGISTER_OP({"QuantizedConv", quantizedConvShape, quantizedConvEval, quantizedConvFlops});
KILN_REGISTER_OP({"ConvNhwc", nhwcShape("ConvNhwc", "Conv"), nhwcEval("Conv"), nhwcFlops("ConvNhwc", "Conv")});
KILN_REGISTER_OP({"QuantizedConvNhwc", nhwcShape("QuantizedConvNhwc", "QuantizedConv"), nhwcEval("QuantizedConv"),
                  nhwcFlops("QuantizedConvNhwc", "QuantizedConv")});
KILN_REGISTER_OP({"MaxPoolNhwc", nhwcShape("MaxPoolNhwc", "MaxPool"), nhwcEval("MaxPool"),
                  nhwcFlops("MaxPoolNhwc", "MaxPool")});
KILN_REGISTER_OP({"AveragePoolNhwc", nhwcShape("AveragePoolNhwc", "AveragePool"), nhwcEval("AveragePool"),
                  nhwcFlops("AveragePoolNhwc", "AveragePool")});

}  // namespace kiln::ops

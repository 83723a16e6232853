// Loss ops: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (opset 13).
//
//   NLL(input [N, C, d...], target [N, d...], weight? [C]): loss[n, d] = -input[n, t, d] · w[t]
//   with t = target[n, d] (w = 1 without weights), 0 where t == ignore_index; reduction "none"
//   keeps [N, d...], "sum" adds, "mean" divides the sum by Σ w[t] over the positions not ignored.
//   SCE(scores, labels, weights?) = NLL(LogSoftmax(scores, axis 1), labels, weights); its optional
//   second output is that log-probability tensor.
//
// Sums are in double, results rounded to the input's dtype.
#include "compiler/ops/ElementwiseUtil.h"

#include <cmath>

namespace kiln::ops {
namespace {

using namespace ew;

struct LossGeometry {
  int64_t N = 1, C = 1, D = 1;  // input viewed as [N, C, D]
};

// Checks the operands of both losses (inputs: x, target, weight?) and returns the result types.
std::vector<TensorType> lossShape(const std::string &op, const ShapeContext &ctx, int maxOutputs) {
  checkInputs(op, ctx, 2, 3);
  checkOutputs(op, ctx, maxOutputs);
  const TensorType &x = ctx.inputs[0], &t = ctx.inputs[1];
  checkKind(op, "input", x.dtype, Kind::Float);
  check(x.shape.size() >= 2, op + ": input must have rank >= 2 (N x C x d...), got " + shapeString(x.shape));
  check(t.dtype == DType::I32 || t.dtype == DType::I64,
        op + ": target must be int32 or int64, got " + dtypeName(t.dtype));
  Shape want = {x.shape[0]};
  want.insert(want.end(), x.shape.begin() + 2, x.shape.end());
  check(t.shape == want,
        op + ": target must have shape " + shapeString(want) + " (input's without C), got " + shapeString(t.shape));
  if (ctx.present(2)) {
    checkSameDtype(op, "input", x.dtype, "weight", ctx.inputs[2].dtype);
    check(ctx.inputs[2].shape == Shape{x.shape[1]},
          op + ": weight must have shape " + std::to_string(x.shape[1]) + ", got " + shapeString(ctx.inputs[2].shape));
  }
  std::string red = ctx.attrs.getString("reduction", "mean");
  check(red == "none" || red == "sum" || red == "mean",
        op + ": reduction must be none, sum or mean, got '" + red + "'");
  std::vector<TensorType> out = {{x.dtype, red == "none" ? want : Shape{}}};
  if (ctx.numOutputs > 1) out.push_back(x);
  return out;
}

LossGeometry geometryOf(const Shape &x) {
  LossGeometry g;
  g.N = x[0], g.C = x[1];
  for (size_t k = 2; k < x.size(); ++k) g.D *= x[k];
  return g;
}

// NLL of log-probabilities `logp` (the input's layout).
Tensor nll(const std::string &op, const std::vector<double> &logp, const Tensor &x, const Tensor &target,
           const Tensor *weight, const Attrs &attrs, const TensorType &outType) {
  LossGeometry g = geometryOf(x.shape);
  bool hasIgnore = attrs.has("ignore_index");
  int64_t ignore = attrs.getInt("ignore_index", 0);
  std::string red = attrs.getString("reduction", "mean");
  Tensor out(outType.dtype, outType.shape);
  double sum = 0, wsum = 0;
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t d = 0; d < g.D; ++d) {
      int64_t pos = n * g.D + d, t = target.i[pos];
      double l = 0, w = 0;
      if (!(hasIgnore && t == ignore)) {
        check(t >= 0 && t < g.C, op + ": target " + std::to_string(t) + " at position " + std::to_string(pos) +
                                     " is outside [0, " + std::to_string(g.C) + ")");
        w = weight ? weight->f[t] : 1.0;
        l = -logp[(n * g.C + t) * g.D + d] * w;
      }
      if (red == "none") out.set(pos, l);
      sum += l, wsum += w;
    }
  if (red == "sum") out.set(0, sum);
  if (red == "mean") out.set(0, sum / wsum);
  return out;
}

std::vector<TensorType> nllShape(const ShapeContext &ctx) { return lossShape("NegativeLogLikelihoodLoss", ctx, 1); }

std::vector<Tensor> nllEval(const EvalContext &ctx) {
  std::vector<TensorType> types = nllShape(shapeContextOf(ctx));
  const Tensor &x = ctx.in(0);
  return {
      nll("NegativeLogLikelihoodLoss", x.f, x, ctx.in(1), ctx.present(2) ? &ctx.in(2) : nullptr, ctx.attrs, types[0])};
}

std::vector<TensorType> sceShape(const ShapeContext &ctx) { return lossShape("SoftmaxCrossEntropyLoss", ctx, 2); }

std::vector<Tensor> sceEval(const EvalContext &ctx) {
  std::vector<TensorType> types = sceShape(shapeContextOf(ctx));
  const Tensor &x = ctx.in(0);
  LossGeometry g = geometryOf(x.shape);
  std::vector<double> logp(x.f.size());
  Tensor lp(x.dtype, x.shape);
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t d = 0; d < g.D; ++d) {
      auto at = [&](int64_t c) { return (n * g.C + c) * g.D + d; };
      double m = -INFINITY, s = 0;
      for (int64_t c = 0; c < g.C; ++c) m = std::max(m, x.f[at(c)]);
      for (int64_t c = 0; c < g.C; ++c) s += std::exp(x.f[at(c)] - m);
      for (int64_t c = 0; c < g.C; ++c) {
        lp.set(at(c), x.f[at(c)] - m - std::log(s));
        logp[at(c)] = lp.f[at(c)];  // (the loss reads the log-probabilities as stored, as ONNX's function)
      }
    }
  std::vector<Tensor> out = {
      nll("SoftmaxCrossEntropyLoss", logp, x, ctx.in(1), ctx.present(2) ? &ctx.in(2) : nullptr, ctx.attrs, types[0])};
  if (types.size() > 1) out.push_back(lp);
  return out;
}

int64_t lossFlops(const ShapeContext &ctx, const std::vector<TensorType> &) {
  return 2 * numElements(ctx.inputs[0].shape);
}
int64_t sceFlops(const ShapeContext &ctx, const std::vector<TensorType> &) {
  return (kTranscendentalFlops + 4) * numElements(ctx.inputs[0].shape);
}

}  // namespace

KILN_REGISTER_OP({"NegativeLogLikelihoodLoss", nllShape, nllEval, lossFlops});
KILN_REGISTER_OP({"SoftmaxCrossEntropyLoss", sceShape, sceEval, sceFlops});

}  // namespace kiln::ops

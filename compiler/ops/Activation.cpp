// Activation functions: Relu, LeakyRelu, PRelu, Sigmoid, Tanh, Gelu, HardSigmoid, HardSwish, Clip,
// Softplus, Softsign, Mish, Elu, Selu, Celu, ThresholdedRelu, Shrink.
//
// All are elementwise. Float math runs in double and is rounded to the tensor's dtype on store;
// the ops that also accept integers (Relu, PRelu, Clip, Shrink) handle them exactly.
#include "compiler/ops/ElementwiseUtil.h"

#include <cmath>

namespace kiln::ops {
namespace {

using namespace ew;

constexpr int64_t kT = kTranscendentalFlops;

// A float-only activation whose function reads attributes: `make` turns the attributes into the
// per-element function once per evaluation.
using MakeFn = std::function<std::function<double(double)>(const Attrs &)>;

EvalFn floatActivation(std::string op, MakeFn make, ShapeFn shape = nullptr) {
  if (!shape) shape = unaryShape(op, Kind::Float);
  return [shape, make](const EvalContext &ctx) {
    shape(shapeContextOf(ctx));
    return std::vector<Tensor>{mapFloat(ctx.in(0), make(ctx.attrs))};
  };
}

double sigmoid(double x) {
  // Both branches avoid overflow of exp for large |x|.
  if (x >= 0) return 1.0 / (1.0 + std::exp(-x));
  double e = std::exp(x);
  return e / (1.0 + e);
}

// log(1 + exp(x)) without overflow.
double softplus(double x) { return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x)); }

// ---------------------------------------------------------------------------------------------
// Relu: floats and integers (unsigned values are never negative).

std::vector<Tensor> reluKernel(const EvalContext &ctx) {
  unaryShape("Relu", Kind::Numeric)(shapeContextOf(ctx));
  const Tensor &x = ctx.in(0);
  // `x < 0 ? 0 : x` lets NaN through, as numpy's maximum(x, 0) does.
  if (x.isFloating()) return {mapFloat(x, [](double v) { return v < 0 ? 0.0 : v; })};
  Tensor y(x.dtype, x.shape);
  for (int64_t k = 0; k < y.size(); ++k) y.i[k] = intIsNegative(x.dtype, x.i[k]) ? 0 : x.i[k];
  return {y};
}

// ---------------------------------------------------------------------------------------------
// PRelu(X, slope): slope broadcasts to X's shape (unidirectionally).

std::vector<TensorType> preluShape(const ShapeContext &ctx) {
  const std::string op = "PRelu";
  checkInputs(op, ctx, 2, 2);
  checkOutputs(op, ctx, 1);
  const TensorType &x = ctx.inputs[0], &slope = ctx.inputs[1];
  checkKind(op, "X", x.dtype, Kind::Numeric);
  checkSameDtype(op, "X", x.dtype, "slope", slope.dtype);
  Shape b = broadcastOrFail(op, {x.shape, slope.shape});
  check(b == x.shape, op + ": slope of shape " + shapeString(slope.shape) + " does not broadcast to X's shape " +
                          shapeString(x.shape));
  return {x};
}

std::vector<Tensor> preluKernel(const EvalContext &ctx) {
  preluShape(shapeContextOf(ctx));
  const Tensor &x = ctx.in(0), &slope = ctx.in(1);
  Tensor y(x.dtype, x.shape);
  std::vector<int64_t> ms = broadcastMap(slope.shape, x.shape);
  for (int64_t k = 0; k < y.size(); ++k) {
    if (x.isFloating()) {
      double v = x.f[k];
      y.set(k, v < 0 ? v * slope.f[ms[k]] : v);
    } else {
      int64_t v = x.i[k];
      y.setInt(k, intIsNegative(x.dtype, v) ? wrapMul(v, slope.i[ms[k]]) : v);
    }
  }
  return {y};
}

// ---------------------------------------------------------------------------------------------
// Gelu(approximate = "none" | "tanh")

std::vector<TensorType> geluShape(const ShapeContext &ctx) {
  std::string approx = ctx.attrs.getString("approximate", "none");
  check(approx == "none" || approx == "tanh",
        "Gelu: attribute approximate must be \"none\" or \"tanh\", got \"" + approx + "\"");
  return unaryShape("Gelu", Kind::Float)(ctx);
}

std::vector<Tensor> geluKernel(const EvalContext &ctx) {
  geluShape(shapeContextOf(ctx));
  const Tensor &x = ctx.in(0);
  if (ctx.attrs.getString("approximate", "none") == "tanh") {
    const double c = std::sqrt(2.0 / 3.14159265358979323846);  // sqrt(2/pi)
    return {mapFloat(x, [c](double v) { return 0.5 * v * (1.0 + std::tanh(c * (v + 0.044715 * v * v * v))); })};
  }
  return {mapFloat(x, [](double v) { return 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0))); })};
}

// ---------------------------------------------------------------------------------------------
// Clip(input, min?, max?): bounds are optional scalars (one-element tensors are accepted) of the
// input's dtype. Without a bound, floats are unbounded and integers are bounded by their dtype.
// As in numpy.clip, max wins when min > max.

std::vector<TensorType> clipShape(const ShapeContext &ctx) {
  const std::string op = "Clip";
  checkInputs(op, ctx, 1, 3);
  checkOutputs(op, ctx, 1);
  checkKind(op, "input", ctx.inputs[0].dtype, Kind::Numeric);
  const char *names[] = {"", "min", "max"};
  for (size_t k = 1; k <= 2; ++k) {
    if (!ctx.present(k)) continue;
    checkSameDtype(op, "input", ctx.inputs[0].dtype, names[k], ctx.inputs[k].dtype);
    check(numElements(ctx.inputs[k].shape) == 1,
          op + ": " + names[k] + " must be a scalar, got shape " + shapeString(ctx.inputs[k].shape));
  }
  return {ctx.inputs[0]};
}

std::vector<Tensor> clipKernel(const EvalContext &ctx) {
  clipShape(shapeContextOf(ctx));
  const Tensor &x = ctx.in(0);
  Tensor y(x.dtype, x.shape);
  if (x.isFloating()) {
    double lo = ctx.present(1) ? ctx.in(1).f[0] : -INFINITY;
    double hi = ctx.present(2) ? ctx.in(2).f[0] : INFINITY;
    for (int64_t k = 0; k < y.size(); ++k) {
      double v = x.f[k];  // NaN passes through both comparisons
      v = v < lo ? lo : v;
      v = v > hi ? hi : v;
      y.f[k] = v;
    }
  } else {
    auto range = intRange(x.dtype);
    int64_t lo = ctx.present(1) ? ctx.in(1).i[0] : range.first;
    int64_t hi = ctx.present(2) ? ctx.in(2).i[0] : range.second;
    for (int64_t k = 0; k < y.size(); ++k) {
      int64_t v = x.i[k];
      v = intLess(x.dtype, v, lo) ? lo : v;
      v = intLess(x.dtype, hi, v) ? hi : v;
      y.i[k] = v;
    }
  }
  return {y};
}

// ---------------------------------------------------------------------------------------------
// Shrink(bias=0, lambd=0.5): x < -lambd → x + bias; x > lambd → x - bias; else 0. Numeric.

std::vector<Tensor> shrinkKernel(const EvalContext &ctx) {
  unaryShape("Shrink", Kind::Numeric)(shapeContextOf(ctx));
  double bias = ctx.attrs.getFloat("bias", 0.0), lambd = ctx.attrs.getFloat("lambd", 0.5);
  const Tensor &x = ctx.in(0);
  Tensor y(x.dtype, x.shape);
  for (int64_t k = 0; k < y.size(); ++k) {
    double v = valueAt(x, k);
    y.set(k, v < -lambd ? v + bias : v > lambd ? v - bias : 0.0);
  }
  return {y};
}

std::vector<TensorType> celuShape(const ShapeContext &ctx) {
  check(ctx.attrs.getFloat("alpha", 1.0) != 0, "Celu: alpha must be nonzero");
  return unaryShape("Celu", Kind::Float)(ctx);
}

// Selu's defaults are the float32 constants of the ONNX spec.
constexpr double kSeluAlpha = 1.67326319217681884765625;
constexpr double kSeluGamma = 1.05070102214813232421875;

}  // namespace

KILN_REGISTER_OP({"Relu", unaryShape("Relu", Kind::Numeric), reluKernel, perElementFlops(1)});
KILN_REGISTER_OP({"LeakyRelu", unaryShape("LeakyRelu", Kind::Float),
                  floatActivation("LeakyRelu",
                                  [](const Attrs &a) {
                                    double alpha = a.getFloat("alpha", 0.01);
                                    return [alpha](double x) { return x < 0 ? alpha * x : x; };
                                  }),
                  perElementFlops(2)});
KILN_REGISTER_OP({"PRelu", preluShape, preluKernel, perElementFlops(2)});
KILN_REGISTER_OP({"Sigmoid", unaryShape("Sigmoid", Kind::Float), unaryFloatKernel("Sigmoid", sigmoid),
                  perElementFlops(kT)});
KILN_REGISTER_OP({"Tanh", unaryShape("Tanh", Kind::Float),
                  unaryFloatKernel("Tanh", [](double x) { return std::tanh(x); }), perElementFlops(kT)});
KILN_REGISTER_OP({"Gelu", geluShape, geluKernel, perElementFlops(2 * kT)});
KILN_REGISTER_OP({"HardSigmoid", unaryShape("HardSigmoid", Kind::Float),
                  floatActivation("HardSigmoid",
                                  [](const Attrs &a) {
                                    double alpha = a.getFloat("alpha", 0.2), beta = a.getFloat("beta", 0.5);
                                    return [alpha, beta](double x) {
                                      return std::max(0.0, std::min(1.0, alpha * x + beta));
                                    };
                                  }),
                  perElementFlops(4)});
// HardSwish(x) = x * HardSigmoid(x) with alpha = 1/6, beta = 0.5.
KILN_REGISTER_OP({"HardSwish", unaryShape("HardSwish", Kind::Float),
                  unaryFloatKernel("HardSwish",
                                   [](double x) { return x * std::max(0.0, std::min(1.0, x / 6.0 + 0.5)); }),
                  perElementFlops(5)});
KILN_REGISTER_OP({"Clip", clipShape, clipKernel, perElementFlops(2)});
KILN_REGISTER_OP({"Softplus", unaryShape("Softplus", Kind::Float), unaryFloatKernel("Softplus", softplus),
                  perElementFlops(2 * kT)});
KILN_REGISTER_OP({"Softsign", unaryShape("Softsign", Kind::Float),
                  unaryFloatKernel("Softsign", [](double x) { return x / (1.0 + std::fabs(x)); }), perElementFlops(3)});
// Mish(x) = x * tanh(softplus(x)).
KILN_REGISTER_OP({"Mish", unaryShape("Mish", Kind::Float),
                  unaryFloatKernel("Mish", [](double x) { return x * std::tanh(softplus(x)); }),
                  perElementFlops(3 * kT)});
KILN_REGISTER_OP({"Elu", unaryShape("Elu", Kind::Float),
                  floatActivation("Elu",
                                  [](const Attrs &a) {
                                    double alpha = a.getFloat("alpha", 1.0);
                                    return [alpha](double x) { return x < 0 ? alpha * std::expm1(x) : x; };
                                  }),
                  perElementFlops(kT)});
KILN_REGISTER_OP({"Selu", unaryShape("Selu", Kind::Float),
                  floatActivation("Selu",
                                  [](const Attrs &a) {
                                    double alpha = a.getFloat("alpha", kSeluAlpha),
                                           gamma = a.getFloat("gamma", kSeluGamma);
                                    return [alpha, gamma](double x) {
                                      return gamma * (x > 0 ? x : alpha * std::expm1(x));
                                    };
                                  }),
                  perElementFlops(kT)});
// Celu(x) = max(0, x) + min(0, alpha * (exp(x / alpha) - 1)).
KILN_REGISTER_OP({"Celu", celuShape,
                  floatActivation(
                      "Celu",
                      [](const Attrs &a) {
                        double alpha = a.getFloat("alpha", 1.0);
                        return [alpha](double x) {
                          return std::max(0.0, x) + std::min(0.0, alpha * std::expm1(x / alpha));
                        };
                      },
                      celuShape),
                  perElementFlops(kT)});
KILN_REGISTER_OP({"ThresholdedRelu", unaryShape("ThresholdedRelu", Kind::Float),
                  floatActivation("ThresholdedRelu",
                                  [](const Attrs &a) {
                                    double alpha = a.getFloat("alpha", 1.0);
                                    return [alpha](double x) { return x > alpha ? x : 0.0; };
                                  }),
                  perElementFlops(1)});
KILN_REGISTER_OP({"Shrink", unaryShape("Shrink", Kind::Numeric), shrinkKernel, perElementFlops(2)});

}  // namespace kiln::ops

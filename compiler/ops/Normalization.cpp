// Normalization ops: BatchNormalization (inference), LayerNormalization, InstanceNormalization,
// and the normalizing activations Softmax, LogSoftmax, Hardmax.
//
// Statistics are computed in double (ONNX computes them in the stash type, float32 by default;
// double is at least as accurate) and results are rounded to the output dtype on store.
#include "compiler/ops/ElementwiseUtil.h"

#include <cmath>

namespace kiln::ops {
namespace {

using namespace ew;

int64_t product(const Shape &s, size_t from, size_t to) {
  int64_t n = 1;
  for (size_t k = from; k < to && k < s.size(); ++k) n *= s[k];
  return n;
}

// Checks that a per-channel parameter is a 1-D float tensor of C elements.
void checkPerChannel(const std::string &op, const std::string &what, const TensorType &t, int64_t channels) {
  checkKind(op, what, t.dtype, Kind::Float);
  check(t.shape == Shape{channels}, op + ": " + what + " must have shape " + std::to_string(channels) +
                                        " (one value per channel), got " + shapeString(t.shape));
}

// =============================================================================================
// BatchNormalization(X, scale, B, input_mean, input_var), inference form:
//   Y = (X - mean) / sqrt(var + epsilon) * scale + B, per channel (dimension 1).

std::vector<TensorType> batchNormShape(const ShapeContext &ctx) {
  const std::string op = "BatchNormalization";
  check(ctx.attrs.getInt("training_mode", 0) == 0,
        op + ": training_mode=1 is not supported (kiln evaluates inference only)");
  check(ctx.numOutputs <= 1, op +
                                 ": the running_mean/running_var outputs exist only in training mode, but the node "
                                 "declares " +
                                 std::to_string(ctx.numOutputs) + " outputs");
  checkInputs(op, ctx, 5, 5);
  const TensorType &x = ctx.inputs[0];
  checkKind(op, "X", x.dtype, Kind::Float);
  check(x.shape.size() >= 2, op + ": X must have rank >= 2 (N x C x ...), got shape " + shapeString(x.shape));
  const char *names[] = {"X", "scale", "B", "input_mean", "input_var"};
  for (size_t k = 1; k < 5; ++k) checkPerChannel(op, names[k], ctx.inputs[k], x.shape[1]);
  return {x};
}

std::vector<Tensor> batchNormKernel(const EvalContext &ctx) {
  batchNormShape(shapeContextOf(ctx));
  const Tensor &x = ctx.in(0), &scale = ctx.in(1), &bias = ctx.in(2), &mean = ctx.in(3), &var = ctx.in(4);
  double eps = ctx.attrs.getFloat("epsilon", 1e-5);
  int64_t channels = x.shape[1], inner = product(x.shape, 2, x.shape.size());
  Tensor y(x.dtype, x.shape);
  for (int64_t k = 0; k < y.size(); ++k) {
    int64_t c = (k / inner) % channels;
    y.set(k, (x.f[k] - mean.f[c]) / std::sqrt(var.f[c] + eps) * scale.f[c] + bias.f[c]);
  }
  return {y};
}

// =============================================================================================
// InstanceNormalization(input, scale, B): normalizes each (n, c) slice over the spatial dims.

std::vector<TensorType> instanceNormShape(const ShapeContext &ctx) {
  const std::string op = "InstanceNormalization";
  checkInputs(op, ctx, 3, 3);
  checkOutputs(op, ctx, 1);
  const TensorType &x = ctx.inputs[0];
  checkKind(op, "input", x.dtype, Kind::Float);
  check(x.shape.size() >= 3, op + ": input must have rank >= 3 (N x C x D1 ...), got shape " + shapeString(x.shape));
  checkPerChannel(op, "scale", ctx.inputs[1], x.shape[1]);
  checkPerChannel(op, "B", ctx.inputs[2], x.shape[1]);
  return {x};
}

std::vector<Tensor> instanceNormKernel(const EvalContext &ctx) {
  instanceNormShape(shapeContextOf(ctx));
  const Tensor &x = ctx.in(0), &scale = ctx.in(1), &bias = ctx.in(2);
  double eps = ctx.attrs.getFloat("epsilon", 1e-5);
  int64_t channels = x.shape[1], inner = product(x.shape, 2, x.shape.size());
  int64_t slices = product(x.shape, 0, 2);
  Tensor y(x.dtype, x.shape);
  for (int64_t s = 0; s < slices; ++s) {
    const double *p = x.f.data() + s * inner;
    double mean = 0, var = 0;
    for (int64_t j = 0; j < inner; ++j) mean += p[j];
    mean /= static_cast<double>(inner);
    for (int64_t j = 0; j < inner; ++j) var += (p[j] - mean) * (p[j] - mean);
    var /= static_cast<double>(inner);
    int64_t c = s % channels;
    double inv = 1.0 / std::sqrt(var + eps);
    for (int64_t j = 0; j < inner; ++j) y.set(s * inner + j, (p[j] - mean) * inv * scale.f[c] + bias.f[c]);
  }
  return {y};
}

// =============================================================================================
// LayerNormalization(X, Scale, B?) -> Y, Mean?, InvStdDev?
// Normalizes over dims [axis, rank). Scale and B broadcast to X's shape. Mean and InvStdDev have
// X's shape with the normalized dims set to 1, and dtype stash_type (float32 by default).
// RMSNormalization(X, Scale) -> Y (ONNX opset 23's; kiln makes it from T5's and Llama's written-out
// norm, passes/FuseLayerNorm.cpp): the same without centering, Y = X / sqrt(mean(X²) + ε) · Scale.

ShapeFn normShape(std::string op, bool rms) {
  return [op, rms](const ShapeContext &ctx) {
    checkInputs(op, ctx, 2, rms ? 2 : 3);
    checkOutputs(op, ctx, rms ? 1 : 3);
    const TensorType &x = ctx.inputs[0];
    checkKind(op, "X", x.dtype, Kind::Float);
    int64_t rank = static_cast<int64_t>(x.shape.size());
    check(rank >= 1, op + ": X must have rank >= 1");
    int64_t axis = normalizeAxis(ctx.attrs.getInt("axis", -1), rank);
    const char *names[] = {"X", "Scale", "B"};
    for (size_t k = 1; k < 3; ++k) {
      if (!ctx.present(k)) continue;
      checkSameDtype(op, "X", x.dtype, names[k], ctx.inputs[k].dtype);
      Shape b = broadcastOrFail(op, {x.shape, ctx.inputs[k].shape});
      check(b == x.shape, op + ": " + names[k] + " of shape " + shapeString(ctx.inputs[k].shape) +
                              " does not broadcast to X's shape " + shapeString(x.shape));
    }
    int64_t stash = ctx.attrs.getInt("stash_type", 1);
    DType stashType = static_cast<DType>(stash);
    check(stash == 1 || stash == 10 || stash == 11 || stash == 16,
          op + ": stash_type must be a floating-point dtype, got " + std::to_string(stash));
    Shape reduced = x.shape;
    for (int64_t d = axis; d < rank; ++d) reduced[d] = 1;
    std::vector<TensorType> out{x};
    for (int k = 1; k < ctx.numOutputs; ++k) out.push_back({stashType, reduced});
    return out;
  };
}

EvalFn normKernel(std::string op, bool rms) {
  ShapeFn shape = normShape(op, rms);
  return [shape, rms](const EvalContext &ctx) {
    std::vector<TensorType> types = shape(shapeContextOf(ctx));
    const Tensor &x = ctx.in(0), &scale = ctx.in(1);
    double eps = ctx.attrs.getFloat("epsilon", 1e-5);
    int64_t axis = normalizeAxis(ctx.attrs.getInt("axis", -1), x.rank());
    int64_t cols = product(x.shape, axis, x.shape.size());
    int64_t rows = product(x.shape, 0, axis);
    std::vector<int64_t> ms = broadcastMap(scale.shape, x.shape);
    std::vector<int64_t> mb;
    if (ctx.present(2)) mb = broadcastMap(ctx.in(2).shape, x.shape);
    std::vector<Tensor> out;
    for (const TensorType &t : types) out.emplace_back(t.dtype, t.shape);
    for (int64_t r = 0; r < rows; ++r) {
      const double *p = x.f.data() + r * cols;
      double mean = 0, var = 0;
      if (!rms) {
        for (int64_t j = 0; j < cols; ++j) mean += p[j];
        mean /= static_cast<double>(cols);
      }
      for (int64_t j = 0; j < cols; ++j) var += (p[j] - mean) * (p[j] - mean);
      var /= static_cast<double>(cols);
      double inv = 1.0 / std::sqrt(var + eps);
      for (int64_t j = 0; j < cols; ++j) {
        int64_t k = r * cols + j;
        double v = (p[j] - mean) * inv * scale.f[ms[k]];
        if (ctx.present(2)) v += ctx.in(2).f[mb[k]];
        out[0].set(k, v);
      }
      if (out.size() > 1) out[1].set(r, mean);
      if (out.size() > 2) out[2].set(r, inv);
    }
    return out;
  };
}

// =============================================================================================
// Softmax, LogSoftmax, Hardmax along `axis` (default -1). With coerce_2d=1 (set by the importer for
// opset < 13) the input is viewed as [prod(d < axis), prod(d >= axis)] and normalized over the
// second dimension instead of only along `axis`.

enum class Norm { Softmax, LogSoftmax, Hardmax };

ShapeFn softmaxShape(std::string op) {
  return [op](const ShapeContext &ctx) {
    checkInputs(op, ctx, 1, 1);
    checkOutputs(op, ctx, 1);
    const TensorType &x = ctx.inputs[0];
    checkKind(op, "input", x.dtype, Kind::Float);
    int64_t rank = static_cast<int64_t>(x.shape.size());
    check(rank >= 1, op + ": input must have rank >= 1");
    normalizeAxis(ctx.attrs.getInt("axis", -1), rank);
    int64_t coerce = ctx.attrs.getInt("coerce_2d", 0);
    check(coerce == 0 || coerce == 1, op + ": coerce_2d must be 0 or 1");
    return std::vector<TensorType>{x};
  };
}

EvalFn softmaxKernel(std::string op, Norm kind) {
  ShapeFn shape = softmaxShape(op);
  return [shape, kind](const EvalContext &ctx) {
    shape(shapeContextOf(ctx));
    const Tensor &x = ctx.in(0);
    size_t axis = static_cast<size_t>(normalizeAxis(ctx.attrs.getInt("axis", -1), x.rank()));
    bool coerce = ctx.attrs.getInt("coerce_2d", 0) == 1;
    // Each (o, i) pair is one vector of `len` elements spaced `inner` apart.
    int64_t outer = product(x.shape, 0, axis);
    int64_t len = coerce ? product(x.shape, axis, x.shape.size()) : x.shape[axis];
    int64_t inner = coerce ? 1 : product(x.shape, axis + 1, x.shape.size());
    Tensor y(x.dtype, x.shape);
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        int64_t base = o * len * inner + i;
        auto at = [&](int64_t j) { return base + j * inner; };
        // Subtracting the maximum keeps exp from overflowing.
        double mx = -INFINITY;
        int64_t argmax = 0;
        for (int64_t j = 0; j < len; ++j) {
          if (x.f[at(j)] > mx) {
            mx = x.f[at(j)];
            argmax = j;
          }
        }
        if (kind == Norm::Hardmax) {
          for (int64_t j = 0; j < len; ++j) y.f[at(j)] = j == argmax ? 1.0 : 0.0;
          continue;
        }
        double sum = 0;
        for (int64_t j = 0; j < len; ++j) sum += std::exp(x.f[at(j)] - mx);
        for (int64_t j = 0; j < len; ++j) {
          double d = x.f[at(j)] - mx;
          y.set(at(j), kind == Norm::Softmax ? std::exp(d) / sum : d - std::log(sum));
        }
      }
    }
    return std::vector<Tensor>{y};
  };
}

}  // namespace

KILN_REGISTER_OP({"BatchNormalization", batchNormShape, batchNormKernel, perElementFlops(4)});
KILN_REGISTER_OP({"InstanceNormalization", instanceNormShape, instanceNormKernel, perElementFlops(8)});
KILN_REGISTER_OP({"LayerNormalization", normShape("LayerNormalization", false), normKernel("LayerNormalization", false),
                  perElementFlops(8)});
KILN_REGISTER_OP({"RMSNormalization", normShape("RMSNormalization", true), normKernel("RMSNormalization", true),
                  perElementFlops(5)});
KILN_REGISTER_OP({"Softmax", softmaxShape("Softmax"), softmaxKernel("Softmax", Norm::Softmax),
                  perElementFlops(kTranscendentalFlops + 3)});
KILN_REGISTER_OP({"LogSoftmax", softmaxShape("LogSoftmax"), softmaxKernel("LogSoftmax", Norm::LogSoftmax),
                  perElementFlops(kTranscendentalFlops + 3)});
KILN_REGISTER_OP({"Hardmax", softmaxShape("Hardmax"), softmaxKernel("Hardmax", Norm::Hardmax), perElementFlops(1)});

}  // namespace kiln::ops

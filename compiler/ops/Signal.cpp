// Signal processing and small linear algebra: the window functions (HannWindow, HammingWindow,
// BlackmanWindow), MelWeightMatrix, DFT, STFT (opset 17) and Det.
//
// Windows and MelWeightMatrix are functions of scalar inputs that fix their result shape, so they
// need those inputs at build time (and then fold). DFT and STFT are direct O(n²) transforms in
// double; Det is an LU factorisation with partial pivoting in double.
#include "compiler/ops/ElementwiseUtil.h"

#include <cmath>

namespace kiln::ops {
namespace {

using namespace ew;

constexpr double kPi = 3.14159265358979323846;

int64_t scalarInput(const ShapeContext &ctx, size_t k, const std::string &op, const std::string &what) {
  check(ctx.present(k), op + ": input '" + what + "' is required");
  const Tensor *v = k < ctx.values.size() ? ctx.values[k] : nullptr;
  check(v != nullptr, op + ": the '" + what + "' input must be a compile-time constant");
  check(v->size() == 1, op + ": '" + what + "' must have one element");
  return v->getInt(0);
}

DType outputDatatype(const std::string &op, const Attrs &a) {
  DType t = static_cast<DType>(a.getInt("output_datatype", 1));
  check(isFloat(t) || isInteger(t), op + ": output_datatype must be a numeric type");
  return t;
}

// =============================================================================================
// Window functions: w[n] = a0 - a1·cos(2πn/N') + a2·cos(4πn/N'), N' = size (periodic) or size - 1.

struct Cosines {
  double a0, a1, a2;
};

ShapeFn windowShape(std::string op) {
  return [op](const ShapeContext &ctx) {
    checkInputs(op, ctx, 1, 1);
    checkOutputs(op, ctx, 1);
    checkKind(op, "size", ctx.inputs[0].dtype, Kind::Integer);
    int64_t n = scalarInput(ctx, 0, op, "size");
    check(n >= 0, op + ": size must be >= 0");
    return std::vector<TensorType>{{outputDatatype(op, ctx.attrs), {n}}};
  };
}

EvalFn windowEval(std::string op, Cosines c) {
  ShapeFn shape = windowShape(op);
  return [shape, c](const EvalContext &ctx) {
    TensorType t = shape(shapeContextOf(ctx))[0];
    int64_t n = t.shape[0];
    double den = ctx.attrs.getInt("periodic", 1) ? double(n) : double(n - 1);
    Tensor y(t.dtype, t.shape);
    for (int64_t k = 0; k < n; ++k) {
      double x = 2 * kPi * double(k) / den;
      y.set(k, c.a0 - c.a1 * std::cos(x) + c.a2 * std::cos(2 * x));
    }
    return std::vector<Tensor>{y};
  };
}

// =============================================================================================
// MelWeightMatrix(num_mel_bins, dft_length, sample_rate, lower_edge_hertz, upper_edge_hertz) ->
// [dft_length / 2 + 1, num_mel_bins] triangular filters (ONNX's reference algorithm).

std::vector<TensorType> melShape(const ShapeContext &ctx) {
  const std::string op = "MelWeightMatrix";
  checkInputs(op, ctx, 5, 5);
  checkOutputs(op, ctx, 1);
  int64_t mel = scalarInput(ctx, 0, op, "num_mel_bins"), dft = scalarInput(ctx, 1, op, "dft_length");
  for (size_t k = 2; k < 5; ++k)
    scalarInput(ctx, k, op, k == 2 ? "sample_rate" : k == 3 ? "lower_edge_hertz" : "upper_edge_hertz");
  check(mel >= 1 && dft >= 1, op + ": num_mel_bins and dft_length must be positive");
  return {{outputDatatype(op, ctx.attrs), {dft / 2 + 1, mel}}};
}

std::vector<Tensor> melEval(const EvalContext &ctx) {
  TensorType t = melShape(shapeContextOf(ctx))[0];
  int64_t mel = ctx.in(0).getInt(0), dft = ctx.in(1).getInt(0), rate = ctx.in(2).getInt(0);
  double lo = ctx.in(3).get(0), hi = ctx.in(4).get(0);
  double loMel = 2595 * std::log10(1 + lo / 700), hiMel = 2595 * std::log10(1 + hi / 700);
  double step = (hiMel - loMel) / double(mel + 2);
  std::vector<int64_t> bins(size_t(mel + 2));
  for (int64_t k = 0; k < mel + 2; ++k) {
    double hz = 700 * (std::pow(10.0, (double(k) * step + loMel) / 2595) - 1);
    bins[size_t(k)] = int64_t(std::floor(double(dft + 1) * hz / double(rate)));
  }
  Tensor y(t.dtype, t.shape);
  int64_t rows = t.shape[0];
  auto put = [&](int64_t r, int64_t c, double v) {
    check(r >= 0 && r < rows, "MelWeightMatrix: a filter reaches past the spectrum (upper_edge_hertz too high)");
    y.set(r * mel + c, v);
  };
  for (int64_t i = 0; i < mel; ++i) {
    int64_t l = bins[size_t(i)], c = bins[size_t(i + 1)], h = bins[size_t(i + 2)];
    if (c == l)
      put(c, i, 1);
    else
      for (int64_t j = l; j <= c; ++j) put(j, i, double(j - l) / double(c - l));
    if (h > c)
      for (int64_t j = c; j < h; ++j) put(j, i, double(h - j) / double(h - c));
  }
  return {y};
}

// =============================================================================================
// DFT(input [batch, dims..., 1|2], dft_length?, axis = 1, inverse, onesided) -> [..., 2].

int64_t dftAxis(const ShapeContext &ctx) {
  int64_t r = int64_t(ctx.inputs[0].shape.size());
  int64_t a = ctx.attrs.getInt("axis", 1);
  check(a >= -r + 1 && a < r - 1 && a != 0 && a != -r, "DFT: axis must be a signal axis (not the batch or last axis)");
  return a < 0 ? a + r : a;
}

std::vector<TensorType> dftShape(const ShapeContext &ctx) {
  const std::string op = "DFT";
  checkInputs(op, ctx, 1, 2);
  checkOutputs(op, ctx, 1);
  const TensorType &x = ctx.inputs[0];
  checkKind(op, "input", x.dtype, Kind::Float);
  check(x.shape.size() >= 3 && (x.shape.back() == 1 || x.shape.back() == 2),
        op + ": input must be [batch, signal..., 1 or 2], got " + shapeString(x.shape));
  int64_t axis = dftAxis(ctx);
  int64_t n = ctx.present(1) ? scalarInput(ctx, 1, op, "dft_length") : x.shape[size_t(axis)];
  check(n >= 1, op + ": dft_length must be positive");
  bool onesided = ctx.attrs.getInt("onesided", 0) != 0;
  check(!(onesided && ctx.attrs.getInt("inverse", 0)), op + ": onesided with inverse is not supported");
  Shape out = x.shape;
  out[size_t(axis)] = onesided ? n / 2 + 1 : n;
  out.back() = 2;
  return {{x.dtype, out}};
}

std::vector<Tensor> dftEval(const EvalContext &ctx) {
  ShapeContext sc = shapeContextOf(ctx);
  TensorType t = dftShape(sc)[0];
  const Tensor &x = ctx.in(0);
  size_t axis = size_t(dftAxis(sc));
  bool inverse = ctx.attrs.getInt("inverse", 0) != 0, complexIn = x.shape.back() == 2;
  int64_t n = ctx.present(1) ? ctx.in(1).getInt(0) : x.shape[axis], len = x.shape[axis], outLen = t.shape[axis];
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < axis; ++d) outer *= x.shape[d];
  for (size_t d = axis + 1; d + 1 < x.shape.size(); ++d) inner *= x.shape[d];
  int64_t cin = x.shape.back();
  Tensor y(t.dtype, t.shape);
  double sign = inverse ? 1.0 : -1.0;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i)
      for (int64_t k = 0; k < outLen; ++k) {
        double re = 0, im = 0;
        for (int64_t m = 0; m < std::min(n, len); ++m) {
          int64_t at = ((o * len + m) * inner + i) * cin;
          double xr = x.f[at], xi = complexIn ? x.f[at + 1] : 0.0;
          double ang = sign * 2 * kPi * double((k * m) % n) / double(n), c = std::cos(ang), s = std::sin(ang);
          re += xr * c - xi * s, im += xr * s + xi * c;
        }
        if (inverse) re /= double(n), im /= double(n);
        int64_t out = ((o * outLen + k) * inner + i) * 2;
        y.set(out, re), y.set(out + 1, im);
      }
  return {y};
}

// =============================================================================================
// STFT(signal [batch, length, 1|2], frame_step, window? [L], frame_length?, onesided = 1) ->
// [batch, frames, bins, 2]: the DFT of each windowed frame.

struct StftGeometry {
  int64_t step, frameLength, frames, bins;
};

StftGeometry stftGeometry(const ShapeContext &ctx) {
  const std::string op = "STFT";
  const Shape &x = ctx.inputs[0].shape;
  StftGeometry g;
  g.step = scalarInput(ctx, 1, op, "frame_step");
  if (ctx.present(3))
    g.frameLength = scalarInput(ctx, 3, op, "frame_length");
  else {
    check(ctx.present(2), op + ": needs a window or a frame_length");
    check(ctx.inputs[2].shape.size() == 1, op + ": window must be 1-D");
    g.frameLength = ctx.inputs[2].shape[0];
  }
  if (ctx.present(2))
    check(ctx.inputs[2].shape == Shape{g.frameLength}, op + ": window must have frame_length elements");
  check(g.step >= 1 && g.frameLength >= 1 && g.frameLength <= x[1], op + ": bad frame_step or frame_length");
  g.frames = (x[1] - g.frameLength) / g.step + 1;
  bool onesided = ctx.attrs.getInt("onesided", 1) != 0;
  check(!(onesided && x[2] == 2), op + ": onesided needs a real signal");
  g.bins = onesided ? g.frameLength / 2 + 1 : g.frameLength;
  return g;
}

std::vector<TensorType> stftShape(const ShapeContext &ctx) {
  const std::string op = "STFT";
  checkInputs(op, ctx, 2, 4);
  checkOutputs(op, ctx, 1);
  const TensorType &x = ctx.inputs[0];
  checkKind(op, "signal", x.dtype, Kind::Float);
  check(x.shape.size() == 3 && (x.shape[2] == 1 || x.shape[2] == 2), op + ": signal must be [batch, length, 1 or 2]");
  if (ctx.present(2)) checkSameDtype(op, "signal", x.dtype, "window", ctx.inputs[2].dtype);
  StftGeometry g = stftGeometry(ctx);
  return {{x.dtype, {x.shape[0], g.frames, g.bins, 2}}};
}

std::vector<Tensor> stftEval(const EvalContext &ctx) {
  ShapeContext sc = shapeContextOf(ctx);
  TensorType t = stftShape(sc)[0];
  StftGeometry g = stftGeometry(sc);
  const Tensor &x = ctx.in(0);
  int64_t len = x.shape[1], c = x.shape[2];
  Tensor y(t.dtype, t.shape);
  for (int64_t b = 0; b < x.shape[0]; ++b)
    for (int64_t f = 0; f < g.frames; ++f)
      for (int64_t k = 0; k < g.bins; ++k) {
        double re = 0, im = 0;
        for (int64_t m = 0; m < g.frameLength; ++m) {
          int64_t at = (b * len + f * g.step + m) * c;
          double w = ctx.present(2) ? ctx.in(2).f[m] : 1.0;
          double xr = x.f[at] * w, xi = c == 2 ? x.f[at + 1] * w : 0.0;
          double ang = -2 * kPi * double((k * m) % g.frameLength) / double(g.frameLength);
          re += xr * std::cos(ang) - xi * std::sin(ang), im += xr * std::sin(ang) + xi * std::cos(ang);
        }
        int64_t out = ((b * g.frames + f) * g.bins + k) * 2;
        y.set(out, re), y.set(out + 1, im);
      }
  return {y};
}

// =============================================================================================
// Det(X [..., M, M]) -> [...].

std::vector<TensorType> detShape(const ShapeContext &ctx) {
  checkInputs("Det", ctx, 1, 1);
  checkOutputs("Det", ctx, 1);
  const TensorType &x = ctx.inputs[0];
  checkKind("Det", "X", x.dtype, Kind::Float);
  check(x.shape.size() >= 2 && x.shape[x.shape.size() - 1] == x.shape[x.shape.size() - 2],
        "Det: X must be [..., M, M], got " + shapeString(x.shape));
  return {{x.dtype, Shape(x.shape.begin(), x.shape.end() - 2)}};
}

std::vector<Tensor> detEval(const EvalContext &ctx) {
  TensorType t = detShape(shapeContextOf(ctx))[0];
  const Tensor &x = ctx.in(0);
  int64_t m = x.shape.back(), count = numElements(t.shape);
  Tensor y(t.dtype, t.shape);
  for (int64_t b = 0; b < count; ++b) {
    std::vector<double> a(x.f.begin() + b * m * m, x.f.begin() + (b + 1) * m * m);
    double det = 1;
    for (int64_t c = 0; c < m; ++c) {
      int64_t p = c;
      for (int64_t r = c + 1; r < m; ++r)
        if (std::fabs(a[size_t(r * m + c)]) > std::fabs(a[size_t(p * m + c)])) p = r;
      if (a[size_t(p * m + c)] == 0) {
        det = 0;
        break;
      }
      if (p != c) {
        for (int64_t k = 0; k < m; ++k) std::swap(a[size_t(p * m + k)], a[size_t(c * m + k)]);
        det = -det;
      }
      double piv = a[size_t(c * m + c)];
      det *= piv;
      for (int64_t r = c + 1; r < m; ++r) {
        double f = a[size_t(r * m + c)] / piv;
        for (int64_t k = c; k < m; ++k) a[size_t(r * m + k)] -= f * a[size_t(c * m + k)];
      }
    }
    y.set(b, det);
  }
  return {y};
}

}  // namespace

KILN_REGISTER_OP({"HannWindow", windowShape("HannWindow"), windowEval("HannWindow", {0.5, 0.5, 0}), {}});
KILN_REGISTER_OP(
    {"HammingWindow", windowShape("HammingWindow"), windowEval("HammingWindow", {25.0 / 46, 21.0 / 46, 0}), {}});
KILN_REGISTER_OP(
    {"BlackmanWindow", windowShape("BlackmanWindow"), windowEval("BlackmanWindow", {0.42, 0.5, 0.08}), {}});
KILN_REGISTER_OP({"MelWeightMatrix", melShape, melEval, {}});
KILN_REGISTER_OP({"DFT", dftShape, dftEval, perElementFlops(8)});
KILN_REGISTER_OP({"STFT", stftShape, stftEval, perElementFlops(8)});
KILN_REGISTER_OP({"Det", detShape, detEval, perElementFlops(8)});

}  // namespace kiln::ops

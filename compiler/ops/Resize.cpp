// Resize (opset 11-19) and the deprecated Upsample (opset 9 form), which is Resize with
// coordinate_transformation_mode=asymmetric and floor rounding for nearest.
//
// Interpolation is separable: for every axis and output coordinate we compute the input taps
// (index, weight) along that axis; an output element is the sum over the cartesian product of its
// per-axis taps of the product of the weights times the input element. The per-axis coordinate
// mapping and filter coefficients follow the ONNX reference implementation
// (onnx/reference/ops/op_resize.py), which generated the ONNX backend tests:
//  - x_original's fractional part `ratio` lies in (0, 1]: an integer coordinate uses ratio 1 with
//    the taps shifted one to the left (the same result as ratio 0, but it fixes which taps count
//    as "outside" for exclude_outside);
//  - taps outside the input are clamped to the edge, unless exclude_outside zeroes them and
//    renormalises (far outside, the tap window is shifted back as the reference does);
//  - align_corners and tf_crop_and_resize use the real-valued resized length scale * length,
//    which differs from the integer output length when `scales` is given;
//  - except: pytorch_half_pixel with an integer output length of 1 maps to 0, as the spec and
//    ONNX Runtime say (the reference uses -0.5 and the real-valued length; the two agree for
//    nearest and linear).
#include "compiler/ops/Resize.h"

#include "compiler/ops/OpSemantics.h"
#include "compiler/ops/OpUtil.h"

#include <algorithm>
#include <cmath>

namespace kiln::ops {
namespace {

// Everything that determines a resize, from either op's inputs and attributes.
struct ResizeSpec {
  std::string op;  // for messages
  std::string mode = "nearest", transform = "half_pixel", nearestMode = "round_prefer_floor";
  std::string keepAspect = "stretch";
  double cubicA = -0.75, extrapolation = 0.0;
  bool excludeOutside = false, antialias = false;
  std::vector<int64_t> axes;   // the axes that scales/sizes/roi refer to
  std::vector<double> scales;  // per entry of `axes`, or empty
  std::vector<int64_t> sizes;  // per entry of `axes`, or empty
  std::vector<double> roi;     // [starts..., ends...] per entry of `axes`, or empty
};

struct ResizeGeometry {
  Shape in, out;
  std::vector<double> scale;             // per axis of X
  std::vector<double> roiStart, roiEnd;  // per axis of X
};

const Tensor *nonEmptyValue(const ShapeContext &ctx, size_t k) {
  if (!ctx.present(k) || numElements(ctx.inputs[k].shape) == 0) return nullptr;
  return k < ctx.values.size() ? ctx.values[k] : nullptr;
}
bool nonEmptyInput(const ShapeContext &ctx, size_t k) {
  return ctx.present(k) && numElements(ctx.inputs[k].shape) != 0;
}

std::vector<double> floatList(const Tensor &t, const std::string &op, const std::string &what) {
  check(isFloat(t.dtype), op + ": '" + what + "' must be a float tensor, got " + dtypeName(t.dtype));
  check(t.rank() == 1, op + ": '" + what + "' must be 1-D, got shape " + shapeString(t.shape));
  return t.f;
}

void checkX(const std::string &op, const ShapeContext &ctx) {
  check(ctx.present(0), op + ": input X is required");
  DType t = ctx.inputs[0].dtype;
  check(isFloat(t) || isInteger(t), op + ": input X must be numeric, got " + dtypeName(t));
}

// Resize: X, roi, scales, sizes. `needRoi` is false for shape inference (roi never affects the
// output shape).
ResizeSpec resizeSpec(const ShapeContext &ctx, bool needRoi) {
  const std::string op = "Resize";
  checkX(op, ctx);
  ResizeSpec s;
  s.op = op;
  const Attrs &a = ctx.attrs;
  s.mode = a.getString("mode", "nearest");
  s.transform = a.getString("coordinate_transformation_mode", "half_pixel");
  s.nearestMode = a.getString("nearest_mode", "round_prefer_floor");
  s.keepAspect = a.getString("keep_aspect_ratio_policy", "stretch");
  s.cubicA = a.getFloat("cubic_coeff_a", -0.75);
  s.extrapolation = a.getFloat("extrapolation_value", 0.0);
  s.excludeOutside = a.getInt("exclude_outside", 0) != 0;
  s.antialias = a.getInt("antialias", 0) != 0;

  int64_t r = static_cast<int64_t>(ctx.inputs[0].shape.size());
  std::vector<int64_t> axes = a.getInts("axes", {});
  if (axes.empty())
    for (int64_t k = 0; k < r; ++k) axes.push_back(k);
  std::vector<bool> seen(r, false);
  for (int64_t &ax : axes) {
    check(ax >= -r && ax < r,
          "Resize: axes " + listString(a.getInts("axes", {})) + " are out of range for rank " + std::to_string(r));
    if (ax < 0) ax += r;
    check(!seen[ax], "Resize: axes " + listString(a.getInts("axes", {})) + " repeat an axis");
    seen[ax] = true;
  }
  s.axes = axes;

  bool hasScales = nonEmptyInput(ctx, 2), hasSizes = nonEmptyInput(ctx, 3);
  check(hasScales != hasSizes, "Resize: exactly one of 'scales' and 'sizes' must be given");
  if (hasScales) {
    const Tensor *v = nonEmptyValue(ctx, 2);
    check(v != nullptr, "Resize: the 'scales' input must be a compile-time constant");
    s.scales = floatList(*v, op, "scales");
  } else {
    const Tensor *v = nonEmptyValue(ctx, 3);
    check(v != nullptr, "Resize: the 'sizes' input must be a compile-time constant");
    check(v->dtype == DType::I64, "Resize: 'sizes' must be int64, got " + std::string(dtypeName(v->dtype)));
    check(v->rank() == 1, "Resize: 'sizes' must be 1-D, got shape " + shapeString(v->shape));
    s.sizes = v->toInts();
  }
  if (needRoi && s.transform == "tf_crop_and_resize" && nonEmptyInput(ctx, 1)) {
    const Tensor *v = nonEmptyValue(ctx, 1);
    check(v != nullptr, "Resize: the 'roi' input must be a compile-time constant");
    s.roi = floatList(*v, op, "roi");
  }
  return s;
}

// Upsample (opset 9: X, scales input; opset 7: `scales` attribute).
ResizeSpec upsampleSpec(const ShapeContext &ctx) {
  const std::string op = "Upsample";
  checkX(op, ctx);
  ResizeSpec s;
  s.op = op;
  std::string mode = ctx.attrs.getString("mode", "nearest");
  check(mode == "nearest" || mode == "linear" || mode == "bilinear",
        "Upsample: unknown mode '" + mode + "' (expected nearest or linear)");
  s.mode = mode == "nearest" ? "nearest" : "linear";
  s.transform = "asymmetric";
  s.nearestMode = "floor";
  int64_t r = static_cast<int64_t>(ctx.inputs[0].shape.size());
  for (int64_t k = 0; k < r; ++k) s.axes.push_back(k);
  if (ctx.present(1)) {
    check(ctx.values.size() > 1 && ctx.values[1], "Upsample: the 'scales' input must be a compile-time constant");
    s.scales = floatList(*ctx.values[1], op, "scales");
  } else {
    check(ctx.attrs.has("scales"), "Upsample: 'scales' is required");
    s.scales = ctx.attrs.getFloats("scales", {});
  }
  return s;
}

ResizeGeometry resizeGeometry(const ResizeSpec &s, const Shape &in) {
  const std::string &op = s.op;
  check(s.mode == "nearest" || s.mode == "linear" || s.mode == "cubic",
        op + ": unknown mode '" + s.mode + "' (expected nearest, linear or cubic)");
  const std::string &t = s.transform;
  check(t == "half_pixel" || t == "half_pixel_symmetric" || t == "pytorch_half_pixel" || t == "align_corners" ||
            t == "asymmetric" || t == "tf_half_pixel_for_nn" || t == "tf_crop_and_resize",
        op + ": unknown coordinate_transformation_mode '" + t + "'");
  const std::string &nm = s.nearestMode;
  check(nm == "round_prefer_floor" || nm == "round_prefer_ceil" || nm == "floor" || nm == "ceil",
        op + ": unknown nearest_mode '" + nm + "'");
  check(!(s.antialias && s.mode == "nearest"), op + ": antialias is not defined for mode=nearest");

  size_t r = in.size(), n = s.axes.size();
  ResizeGeometry g;
  g.in = in;
  g.out = in;
  g.scale.assign(r, 1.0);
  g.roiStart.assign(r, 0.0);
  g.roiEnd.assign(r, 1.0);
  if (!s.scales.empty()) {
    check(s.scales.size() == n,
          op + ": 'scales' has " + std::to_string(s.scales.size()) + " values, expected " + std::to_string(n));
    for (size_t k = 0; k < n; ++k) {
      int64_t ax = s.axes[k];
      check(s.scales[k] > 0, op + ": scales must be positive");
      g.scale[ax] = s.scales[k];
      double o = std::floor(s.scales[k] * static_cast<double>(in[ax]));
      check(o <= 1125899906842624.0, op + ": the output is too large");  // 2^50
      g.out[ax] = static_cast<int64_t>(o);
    }
  } else {
    check(s.sizes.size() == n,
          op + ": 'sizes' has " + std::to_string(s.sizes.size()) + " values, expected " + std::to_string(n));
    for (size_t k = 0; k < n; ++k) {
      int64_t ax = s.axes[k];
      check(s.sizes[k] >= 0 && s.sizes[k] <= (int64_t{1} << 50),
            op + ": sizes must be non-negative (and not huge), got " + listString(s.sizes));
      check(in[ax] > 0, op + ": cannot resize axis " + std::to_string(ax) + " of size 0 to a given size");
      g.out[ax] = s.sizes[k];
      g.scale[ax] = static_cast<double>(s.sizes[k]) / static_cast<double>(in[ax]);
    }
    if (s.keepAspect != "stretch") {
      check(s.keepAspect == "not_larger" || s.keepAspect == "not_smaller",
            op + ": unknown keep_aspect_ratio_policy '" + s.keepAspect + "'");
      // One common scale for all resized axes; sizes round half up.
      double common = g.scale[s.axes[0]];
      for (int64_t ax : s.axes)
        common = s.keepAspect == "not_larger" ? std::min(common, g.scale[ax]) : std::max(common, g.scale[ax]);
      for (int64_t ax : s.axes) {
        g.scale[ax] = common;
        double o = common * static_cast<double>(in[ax]) + 0.5;
        check(o <= 1125899906842624.0, op + ": the output is too large");
        g.out[ax] = static_cast<int64_t>(o);
      }
    }
  }
  if (!s.roi.empty()) {
    check(s.roi.size() == 2 * n,
          op + ": 'roi' has " + std::to_string(s.roi.size()) + " values, expected " + std::to_string(2 * n));
    for (size_t k = 0; k < n; ++k) {
      g.roiStart[s.axes[k]] = s.roi[k];
      g.roiEnd[s.axes[k]] = s.roi[k + n];
    }
  }
  double elements = 1;
  for (int64_t d : g.out) elements *= static_cast<double>(d);
  check(elements <= 1125899906842624.0, op + ": the output " + shapeString(g.out) + " is too large");
  for (size_t ax = 0; ax < r; ++ax)
    check(g.out[ax] == 0 || in[ax] > 0,
          op + ": cannot resize axis " + std::to_string(ax) + " of size 0 to a non-empty size");
  return g;
}

double cubicWeight(double x, double A) {
  x = std::fabs(x);
  if (x <= 1) return ((A + 2) * x - (A + 3)) * x * x + 1;
  if (x < 2) return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A;
  return 0.0;
}

ResizeTaps axisTaps(const ResizeSpec &s, const ResizeGeometry &g, size_t ax, int64_t xOut) {
  const double x = static_cast<double>(xOut);
  const double inLen = static_cast<double>(g.in[ax]);
  const double scale = g.scale[ax];
  const double resizedLen = scale * inLen;  // real-valued, as in the reference
  const std::string &t = s.transform;
  double xo;
  if (t == "half_pixel") {
    xo = (x + 0.5) / scale - 0.5;
  } else if (t == "half_pixel_symmetric") {
    double adjustment = static_cast<double>(g.out[ax]) / resizedLen;
    double center = inLen / 2;
    xo = center * (1 - adjustment) + (x + 0.5) / scale - 0.5;
  } else if (t == "pytorch_half_pixel") {
    xo = g.out[ax] > 1 ? (x + 0.5) / scale - 0.5 : 0.0;
  } else if (t == "align_corners") {
    xo = (resizedLen == 1 || g.out[ax] == 1) ? 0.0 : x * (inLen - 1) / (resizedLen - 1);
  } else if (t == "asymmetric") {
    xo = x / scale;
  } else if (t == "tf_half_pixel_for_nn") {
    xo = (x + 0.5) / scale;
  } else {  // tf_crop_and_resize
    double s0 = g.roiStart[ax], s1 = g.roiEnd[ax];
    xo = resizedLen == 1 ? (s1 - s0) * (inLen - 1) / 2 : x * (s1 - s0) * (inLen - 1) / (resizedLen - 1);
    xo += s0 * (inLen - 1);
  }
  ResizeTaps r;
  if (t == "tf_crop_and_resize" && (xo < 0 || xo > inLen - 1)) {
    r.extrapolate = true;
    return r;
  }
  check(std::isfinite(xo) && std::fabs(xo) < 1e15,
        s.op + ": the coordinate transformation gives a non-finite or huge input coordinate");
  int64_t last = g.in[ax] - 1;
  auto clampIdx = [last](int64_t i) { return std::max<int64_t>(0, std::min(i, last)); };

  double fl = std::floor(xo);
  bool integral = fl == xo;
  if (s.mode == "nearest") {
    double ratio = xo - fl;
    int64_t base = static_cast<int64_t>(fl);
    int64_t pick = base;
    if (!integral) {
      const std::string &nm = s.nearestMode;
      bool up =
          nm == "ceil" || (nm == "round_prefer_floor" && ratio > 0.5) || (nm == "round_prefer_ceil" && ratio >= 0.5);
      pick = up ? base + 1 : base;
    }
    r.taps.push_back({clampIdx(pick), 1.0});
    return r;
  }

  // `base` is the tap just left of xo (one further left when xo is integral, ratio = 1).
  int64_t base = static_cast<int64_t>(fl) - (integral ? 1 : 0);
  double ratio = integral ? 1.0 : xo - fl;
  std::vector<std::pair<int64_t, double>> w;  // (offset from base, weight), consecutive offsets
  if (s.mode == "linear" && !s.antialias) {
    w = {{0, 1 - ratio}, {1, ratio}};
  } else if (s.mode == "cubic" && !s.antialias) {
    for (int64_t o = -1; o <= 2; ++o) w.push_back({o, cubicWeight(static_cast<double>(o) - ratio, s.cubicA)});
  } else {
    // Antialiased filters stretch the kernel by 1/scale when downsampling, normalised to sum 1.
    double fs = std::min(scale, 1.0);
    double support = s.mode == "linear" ? 1.0 : 2.0;
    int64_t start = static_cast<int64_t>(std::floor(-support / fs)) + 1;
    int64_t end = 2 - start;  // exclusive: the footprint is 2 - 2 * start taps
    double sum = 0.0;
    for (int64_t o = start; o < end; ++o) {
      double arg = (static_cast<double>(o) - ratio) * fs;
      double v = s.mode == "linear" ? std::max(0.0, std::min(1.0, 1 - std::fabs(arg))) : cubicWeight(arg, s.cubicA);
      w.push_back({o, v});
      sum += v;
    }
    for (auto &p : w) p.second /= sum;
  }
  // The reference takes the w.size() input positions nearest to xo within the input extended
  // by ceil(n / 2) edge positions on each side; far outside the input that window is shifted
  // back inside (keeping the coefficients in order), which matters for exclude_outside and cubic.
  int64_t n = static_cast<int64_t>(w.size()), ext = (n + 1) / 2;
  int64_t first = std::max(-ext, std::min(base + w.front().first, last + 1 + ext - n));
  for (int64_t k = 0; k < n; ++k) w[k].first = first + k;
  if (s.excludeOutside) {
    double sum = 0.0;
    for (auto &p : w) {
      if (p.first < 0 || p.first > last) p.second = 0.0;
      sum += p.second;
    }
    for (auto &p : w) p.second /= sum;
  }
  for (auto &p : w)
    if (p.second != 0.0) r.taps.push_back({clampIdx(p.first), p.second});
  return r;
}

std::vector<std::vector<ResizeTaps>> allTaps(const ResizeSpec &s, const ResizeGeometry &g) {
  std::vector<std::vector<ResizeTaps>> taps(g.in.size());
  for (size_t ax = 0; ax < g.in.size(); ++ax)
    for (int64_t o = 0; o < g.out[ax]; ++o) taps[ax].push_back(axisTaps(s, g, ax, o));
  return taps;
}

std::vector<Tensor> resizeKernel(const ResizeSpec &s, const Tensor &x) {
  ResizeGeometry g = resizeGeometry(s, x.shape);
  size_t r = x.shape.size();
  Tensor y(x.dtype, g.out);
  if (y.size() == 0) return {y};
  std::vector<std::vector<ResizeTaps>> taps = allTaps(s, g);
  Shape xs = x.strides();

  std::vector<int64_t> oc(r, 0), pick(r, 0);
  for (int64_t idx = 0; idx < y.size(); ++idx) {
    bool extrapolate = false;
    for (size_t ax = 0; ax < r; ++ax) extrapolate = extrapolate || taps[ax][oc[ax]].extrapolate;
    if (extrapolate) {
      y.set(idx, s.extrapolation);
    } else {
      // Sum over the cartesian product of this element's per-axis taps.
      double acc = 0.0;
      std::fill(pick.begin(), pick.end(), 0);
      while (true) {
        double wgt = 1.0;
        int64_t src = 0;
        for (size_t ax = 0; ax < r; ++ax) {
          const auto &tp = taps[ax][oc[ax]].taps[pick[ax]];
          wgt *= tp.second;
          src += tp.first * xs[ax];
        }
        acc += wgt * x.get(src);
        size_t ax = r;
        while (ax-- > 0) {
          if (++pick[ax] < static_cast<int64_t>(taps[ax][oc[ax]].taps.size())) break;
          pick[ax] = 0;
        }
        if (ax == static_cast<size_t>(-1)) break;
      }
      y.set(idx, acc);
    }
    for (size_t ax = r; ax-- > 0;) {
      if (++oc[ax] < g.out[ax]) break;
      oc[ax] = 0;
    }
  }
  return {y};
}

std::vector<TensorType> resizeShape(const ShapeContext &ctx) {
  ResizeSpec s = resizeSpec(ctx, false);
  return {{ctx.inputs[0].dtype, resizeGeometry(s, ctx.inputs[0].shape).out}};
}
std::vector<Tensor> resizeEval(const EvalContext &ctx) {
  return resizeKernel(resizeSpec(shapeContextOf(ctx), true), ctx.in(0));
}

std::vector<TensorType> upsampleShape(const ShapeContext &ctx) {
  ResizeSpec s = upsampleSpec(ctx);
  return {{ctx.inputs[0].dtype, resizeGeometry(s, ctx.inputs[0].shape).out}};
}
std::vector<Tensor> upsampleEval(const EvalContext &ctx) {
  return resizeKernel(upsampleSpec(shapeContextOf(ctx)), ctx.in(0));
}

// Per output element: one multiply-add per tap of the separable filter.
int64_t resizeFlops(const ShapeContext &ctx, const std::vector<TensorType> &outs) {
  std::string mode = ctx.attrs.getString("mode", "nearest");
  int64_t resized = 0;
  const Shape &in = ctx.inputs[0].shape, &out = outs[0].shape;
  for (size_t k = 0; k < in.size() && k < out.size(); ++k) resized += in[k] != out[k];
  int64_t perAxis = mode == "cubic" ? 4 : (mode == "nearest" ? 1 : 2);
  int64_t taps = 1;
  for (int64_t k = 0; k < resized; ++k) taps *= perAxis;
  return mode == "nearest" ? 0 : 2 * numElements(out) * taps;
}

}  // namespace

ResizePlan resizePlan(const std::string &opType, const ShapeContext &ctx) {
  ResizeSpec s = opType == "Upsample" ? upsampleSpec(ctx) : resizeSpec(ctx, true);
  ResizeGeometry g = resizeGeometry(s, ctx.inputs[0].shape);
  return {g.in, g.out, s.extrapolation, allTaps(s, g)};
}

KILN_REGISTER_OP({"Resize", resizeShape, resizeEval, resizeFlops});
KILN_REGISTER_OP({"Upsample", upsampleShape, upsampleEval, resizeFlops});

}  // namespace kiln::ops

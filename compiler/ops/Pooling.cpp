// Pooling over N-D spatial dimensions, layout (N, C, D1, ..., Dn): MaxPool (with optional
// Indices), AveragePool, LpPool, GlobalAveragePool, GlobalMaxPool.
//
// The windowed pools share `PoolGeometry` (kernel_shape, strides, dilations, pads, auto_pad,
// ceil_mode), so the shape function and the kernel agree on the output size.
#include "compiler/ops/OpSemantics.h"
#include "compiler/ops/OpUtil.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace kiln::ops {
namespace {

void checkInput(const std::string &op, const TensorType &x, bool allowInt8) {
  bool ok = isFloat(x.dtype) || (allowInt8 && (x.dtype == DType::I8 || x.dtype == DType::U8));
  check(ok, op + ": input X must be " + (allowInt8 ? "a float, int8 or uint8" : "a floating-point") + " tensor, got " +
                dtypeName(x.dtype));
  check(x.shape.size() >= 3,
        op + ": input X must have rank >= 3 (N, C, spatial...), got shape " + shapeString(x.shape));
}

struct PoolGeometry {
  int64_t planes = 0;  // N * C
  Shape inSpatial, kernel, strides, dilations, padBegin, padEnd, outSpatial;
};

PoolGeometry poolGeometry(const std::string &op, const TensorType &x, const Attrs &attrs) {
  PoolGeometry g;
  size_t n = x.shape.size() - 2;
  g.planes = x.shape[0] * x.shape[1];
  g.inSpatial.assign(x.shape.begin() + 2, x.shape.end());
  check(attrs.has("kernel_shape"), op + ": attribute 'kernel_shape' is required");
  g.kernel = spatialAttr(op, attrs, "kernel_shape", n, 1, 1);
  g.strides = spatialAttr(op, attrs, "strides", n, 1, 1);
  g.dilations = spatialAttr(op, attrs, "dilations", n, 1, 1);
  bool ceilMode = attrs.getInt("ceil_mode", 0) != 0;
  std::string autoPad = attrs.getString("auto_pad", "NOTSET");
  g.padBegin.assign(n, 0);
  g.padEnd.assign(n, 0);
  g.outSpatial.resize(n);
  if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    // Output = ceil(in / stride); the odd padding goes to the end (SAME_UPPER) or the beginning.
    for (size_t i = 0; i < n; ++i) {
      int64_t effK = (g.kernel[i] - 1) * g.dilations[i] + 1;
      g.outSpatial[i] = (g.inSpatial[i] + g.strides[i] - 1) / g.strides[i];
      int64_t total = std::max<int64_t>(0, (g.outSpatial[i] - 1) * g.strides[i] + effK - g.inSpatial[i]);
      g.padBegin[i] = autoPad == "SAME_UPPER" ? total / 2 : total - total / 2;
      g.padEnd[i] = total - g.padBegin[i];
    }
    return g;
  }
  if (autoPad == "NOTSET") {
    explicitPads(op, attrs, n, g.padBegin, g.padEnd);
  } else {
    check(autoPad == "VALID",
          op + ": unknown auto_pad '" + autoPad + "' (expected NOTSET, SAME_UPPER, SAME_LOWER or VALID)");
  }
  for (size_t i = 0; i < n; ++i) {
    int64_t effK = (g.kernel[i] - 1) * g.dilations[i] + 1;
    int64_t span = g.inSpatial[i] + g.padBegin[i] + g.padEnd[i] - effK;
    check(span >= 0, op + ": the kernel (effective size " + std::to_string(effK) +
                         ") is larger than the padded input (size " + std::to_string(span + effK) +
                         ") along spatial axis " + std::to_string(i));
    int64_t s = g.strides[i];
    int64_t out = (ceilMode ? (span + s - 1) / s : span / s) + 1;
    // With ceil_mode, a last window that would start inside the end padding is dropped.
    if (ceilMode && (out - 1) * s >= g.inSpatial[i] + g.padBegin[i]) --out;
    g.outSpatial[i] = out;
  }
  return g;
}

Shape pooledShape(const TensorType &x, const PoolGeometry &g) {
  Shape s{x.shape[0], x.shape[1]};
  s.insert(s.end(), g.outSpatial.begin(), g.outSpatial.end());
  return s;
}

// Visits every output position of one (n, c) plane with the window's taps: fn(outOffset, taps,
// tapsInPaddedRange) where `taps` holds the spatial input offsets inside the input, in row-major
// kernel order, and tapsInPaddedRange counts the taps inside the padded input (for
// AveragePool's count_include_pad).
template <typename Fn> void forEachWindow(const PoolGeometry &g, Fn fn) {
  size_t n = g.inSpatial.size();
  if (numElements(g.outSpatial) == 0) return;
  std::vector<int64_t> o(n, 0), k(n, 0);
  std::vector<int64_t> taps;
  int64_t oIdx = 0;
  do {
    taps.clear();
    int64_t padded = 0;
    std::fill(k.begin(), k.end(), 0);
    do {
      int64_t off = 0;
      bool inside = true, inPadded = true;
      for (size_t d = 0; d < n; ++d) {
        int64_t c = o[d] * g.strides[d] - g.padBegin[d] + k[d] * g.dilations[d];
        inside = inside && c >= 0 && c < g.inSpatial[d];
        inPadded = inPadded && c < g.inSpatial[d] + g.padEnd[d];
        off = off * g.inSpatial[d] + c;
      }
      if (inside) taps.push_back(off);
      if (inPadded) ++padded;
    } while (nextIndex(k, g.kernel));
    fn(oIdx, taps, padded);
    ++oIdx;
  } while (nextIndex(o, g.outSpatial));
}

int64_t windowFlops(const ShapeContext &ctx, const std::vector<TensorType> &outs) {
  std::vector<int64_t> k = ctx.attrs.getInts("kernel_shape", {});
  return numElements(outs[0].shape) * numElements(k);
}

// ---------------------------------------------------------------------------------------------
// MaxPool. The optional Indices output holds, per output element, the flat index of the chosen
// input element over the whole X tensor: (n * C + c) * prod(spatial) + spatial offset, where the
// spatial offset is row-major (storage_order 0) or column-major (storage_order 1).

std::vector<TensorType> maxPoolShape(const ShapeContext &ctx) {
  check(ctx.present(0), "MaxPool: input X is required");
  checkInput("MaxPool", ctx.inputs[0], true);
  check(ctx.numOutputs == 1 || ctx.numOutputs == 2,
        "MaxPool: expects 1 or 2 outputs, got " + std::to_string(ctx.numOutputs));
  PoolGeometry g = poolGeometry("MaxPool", ctx.inputs[0], ctx.attrs);
  int64_t order = ctx.attrs.getInt("storage_order", 0);
  check(order == 0 || order == 1, "MaxPool: storage_order must be 0 or 1, got " + std::to_string(order));
  Shape s = pooledShape(ctx.inputs[0], g);
  std::vector<TensorType> r{{ctx.inputs[0].dtype, s}};
  if (ctx.numOutputs == 2) r.push_back({DType::I64, s});
  return r;
}

double lowestValue(DType t) {
  switch (t) {
    case DType::I8: return -128;
    case DType::U8: return 0;
    default: return -std::numeric_limits<double>::infinity();
  }
}

std::vector<Tensor> maxPoolEval(const EvalContext &ctx) {
  const Tensor &x = ctx.in(0);
  TensorType xt{x.dtype, x.shape};
  checkInput("MaxPool", xt, true);
  check(ctx.numOutputs == 1 || ctx.numOutputs == 2,
        "MaxPool: expects 1 or 2 outputs, got " + std::to_string(ctx.numOutputs));
  PoolGeometry g = poolGeometry("MaxPool", xt, ctx.attrs);
  int64_t order = ctx.attrs.getInt("storage_order", 0);
  check(order == 0 || order == 1, "MaxPool: storage_order must be 0 or 1, got " + std::to_string(order));
  Shape s = pooledShape(xt, g);
  Tensor y(x.dtype, s), ind(DType::I64, s);
  int64_t inSize = numElements(g.inSpatial), outSize = numElements(g.outSpatial);
  size_t n = g.inSpatial.size();

  // Row-major spatial offset → the offset in the requested storage order.
  auto storedOffset = [&](int64_t off) {
    if (order == 0) return off;
    int64_t r = 0, stride = 1;
    std::vector<int64_t> coord(n);
    for (size_t d = n; d-- > 0;) {
      coord[d] = off % g.inSpatial[d];
      off /= g.inSpatial[d];
    }
    for (size_t d = 0; d < n; ++d) {
      r += coord[d] * stride;
      stride *= g.inSpatial[d];
    }
    return r;
  };

  double lowest = lowestValue(x.dtype);
  forEachWindow(g, [&](int64_t oIdx, const std::vector<int64_t> &taps, int64_t) {
    for (int64_t p = 0; p < g.planes; ++p) {
      double best = lowest;
      int64_t bestOff = -1;
      for (int64_t off : taps) {
        double v = x.get(p * inSize + off);
        if (bestOff < 0 || v > best) {  // first maximum wins; NaNs never replace a value
          if (bestOff < 0 && std::isnan(v)) continue;
          best = v;
          bestOff = off;
        }
      }
      y.set(p * outSize + oIdx, best);
      ind.setInt(p * outSize + oIdx, bestOff < 0 ? -1 : p * inSize + storedOffset(bestOff));
    }
  });
  if (ctx.numOutputs == 2) return {y, ind};
  return {y};
}

// ---------------------------------------------------------------------------------------------
// AveragePool: the mean over the window's taps inside the input, or, with count_include_pad,
// the sum divided by the number of taps inside the padded input.

std::vector<TensorType> averagePoolShape(const ShapeContext &ctx) {
  check(ctx.present(0), "AveragePool: input X is required");
  checkInput("AveragePool", ctx.inputs[0], false);
  PoolGeometry g = poolGeometry("AveragePool", ctx.inputs[0], ctx.attrs);
  return {{ctx.inputs[0].dtype, pooledShape(ctx.inputs[0], g)}};
}

std::vector<Tensor> averagePoolEval(const EvalContext &ctx) {
  const Tensor &x = ctx.in(0);
  TensorType xt{x.dtype, x.shape};
  checkInput("AveragePool", xt, false);
  PoolGeometry g = poolGeometry("AveragePool", xt, ctx.attrs);
  bool includePad = ctx.attrs.getInt("count_include_pad", 0) != 0;
  Tensor y(x.dtype, pooledShape(xt, g));
  int64_t inSize = numElements(g.inSpatial), outSize = numElements(g.outSpatial);
  forEachWindow(g, [&](int64_t oIdx, const std::vector<int64_t> &taps, int64_t padded) {
    double count = static_cast<double>(includePad ? padded : static_cast<int64_t>(taps.size()));
    for (int64_t p = 0; p < g.planes; ++p) {
      double sum = 0.0;
      for (int64_t off : taps) sum += x.f[p * inSize + off];
      y.set(p * outSize + oIdx, sum / count);
    }
  });
  return {y};
}

// ---------------------------------------------------------------------------------------------
// LpPool: (sum over the window of |x|^p)^(1/p); padding contributes zeros.

std::vector<TensorType> lpPoolShape(const ShapeContext &ctx) {
  check(ctx.present(0), "LpPool: input X is required");
  checkInput("LpPool", ctx.inputs[0], false);
  PoolGeometry g = poolGeometry("LpPool", ctx.inputs[0], ctx.attrs);
  return {{ctx.inputs[0].dtype, pooledShape(ctx.inputs[0], g)}};
}

std::vector<Tensor> lpPoolEval(const EvalContext &ctx) {
  const Tensor &x = ctx.in(0);
  TensorType xt{x.dtype, x.shape};
  checkInput("LpPool", xt, false);
  PoolGeometry g = poolGeometry("LpPool", xt, ctx.attrs);
  double p = static_cast<double>(ctx.attrs.getInt("p", 2));
  check(p > 0, "LpPool: p must be positive");
  Tensor y(x.dtype, pooledShape(xt, g));
  int64_t inSize = numElements(g.inSpatial), outSize = numElements(g.outSpatial);
  forEachWindow(g, [&](int64_t oIdx, const std::vector<int64_t> &taps, int64_t) {
    for (int64_t pl = 0; pl < g.planes; ++pl) {
      double sum = 0.0;
      for (int64_t off : taps) sum += std::pow(std::fabs(x.f[pl * inSize + off]), p);
      y.set(pl * outSize + oIdx, std::pow(sum, 1.0 / p));
    }
  });
  return {y};
}

int64_t lpPoolFlops(const ShapeContext &ctx, const std::vector<TensorType> &outs) {
  return 3 * windowFlops(ctx, outs);  // abs, pow and add per tap
}

// ---------------------------------------------------------------------------------------------
// GlobalAveragePool / GlobalMaxPool: reduce every spatial axis to size 1.

std::vector<TensorType> globalPoolShape(const std::string &op, const ShapeContext &ctx) {
  check(ctx.present(0), op + ": input X is required");
  const TensorType &x = ctx.inputs[0];
  check(isFloat(x.dtype), op + ": input X must be a floating-point tensor, got " + dtypeName(x.dtype));
  check(x.shape.size() >= 2,
        op + ": input X must have rank >= 2 (N, C, spatial...), got shape " + shapeString(x.shape));
  Shape s = x.shape;
  std::fill(s.begin() + 2, s.end(), 1);
  return {{x.dtype, s}};
}

std::vector<Tensor> globalPoolEval(const std::string &op, const EvalContext &ctx, bool isMax) {
  const Tensor &x = ctx.in(0);
  ShapeContext sc{{{x.dtype, x.shape}}, {nullptr}, ctx.attrs, 1};
  Tensor y(x.dtype, globalPoolShape(op, sc)[0].shape);
  int64_t planes = x.shape[0] * x.shape[1];
  int64_t inSize = planes == 0 ? 0 : x.size() / planes;
  for (int64_t p = 0; p < planes; ++p) {
    double acc = isMax ? -std::numeric_limits<double>::infinity() : 0.0;
    for (int64_t e = 0; e < inSize; ++e) {
      double v = x.f[p * inSize + e];
      if (isMax)
        acc = (v > acc || std::isnan(v)) ? v : acc;  // NaN propagates, as with ReduceMax
      else
        acc += v;
    }
    y.set(p, isMax ? acc : acc / static_cast<double>(inSize));
  }
  return {y};
}

int64_t globalPoolFlops(const ShapeContext &ctx, const std::vector<TensorType> &) {
  return numElements(ctx.inputs[0].shape);
}

}  // namespace

KILN_REGISTER_OP({"MaxPool", maxPoolShape, maxPoolEval, windowFlops});
KILN_REGISTER_OP({"AveragePool", averagePoolShape, averagePoolEval, windowFlops});
KILN_REGISTER_OP({"LpPool", lpPoolShape, lpPoolEval, lpPoolFlops});
KILN_REGISTER_OP({"GlobalAveragePool", [](const ShapeContext &c) { return globalPoolShape("GlobalAveragePool", c); },
                  [](const EvalContext &c) { return globalPoolEval("GlobalAveragePool", c, false); }, globalPoolFlops});
KILN_REGISTER_OP({"GlobalMaxPool", [](const ShapeContext &c) { return globalPoolShape("GlobalMaxPool", c); },
                  [](const EvalContext &c) { return globalPoolEval("GlobalMaxPool", c, true); }, globalPoolFlops});

}  // namespace kiln::ops

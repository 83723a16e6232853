// Linear (de)quantization: QuantizeLinear and DequantizeLinear.
//
//   QuantizeLinear:   y = saturate(round_half_even(x / y_scale) + y_zero_point)
//   DequantizeLinear: y = (x - x_zero_point) * x_scale
//
// The scale (and zero point, which has the scale's shape) is per tensor (a scalar or one-element
// tensor), per axis (a 1-D tensor of x.shape[axis] values; attribute axis, default 1), or blocked
// (opset 21, block_size > 0: x's rank, with dimension `axis` shrunk to ceil(d / block_size)).
// Integer types int8/uint8/int16/uint16 and float8e4m3fn are supported (and int32 input for
// DequantizeLinear); other float8 types and int4 are not. For float8 the quotient (plus zero
// point) is rounded to nearest-even float8; attribute `saturate` (default 1) clamps values out of
// range to ±448, else they become NaN.
#include "compiler/ops/ElementwiseUtil.h"

#include <cmath>

namespace kiln::ops {
namespace {

using namespace ew;

enum class Granularity { PerTensor, PerAxis, Blocked };

struct QuantLayout {
  Granularity granularity = Granularity::PerTensor;
  int64_t axis = 0;
  int64_t blockSize = 0;
};

// Validates the scale (and zero point) shapes against x and says how they are applied.
QuantLayout quantLayout(const std::string &op, const ShapeContext &ctx) {
  const TensorType &x = ctx.inputs[0], &scale = ctx.inputs[1];
  checkKind(op, "scale", scale.dtype, Kind::Float);
  // onnxruntime's quantize_static writes scale [1] with a scalar zero point (both one element,
  // per tensor); any other shape difference is an error.
  auto oneElement = [](const Shape &s) { return s.size() <= 1 && numElements(s) == 1; };
  if (ctx.present(2))
    check(ctx.inputs[2].shape == scale.shape || (oneElement(ctx.inputs[2].shape) && oneElement(scale.shape)),
          op + ": zero point shape " + shapeString(ctx.inputs[2].shape) + " differs from the scale's shape " +
              shapeString(scale.shape));
  QuantLayout l;
  l.blockSize = ctx.attrs.getInt("block_size", 0);
  check(l.blockSize >= 0, op + ": block_size must be >= 0, got " + std::to_string(l.blockSize));
  int64_t rank = static_cast<int64_t>(x.shape.size());
  if (l.blockSize == 0 && numElements(scale.shape) == 1 && scale.shape.size() <= 1) return l;
  check(rank >= 1, op + ": a per-axis or blocked scale needs an input of rank >= 1");
  l.axis = normalizeAxis(ctx.attrs.getInt("axis", 1), rank);
  int64_t d = x.shape[l.axis];
  if (l.blockSize == 0) {
    check(scale.shape == Shape{d}, op + ": per-axis scale must have shape " + std::to_string(d) + " (input dimension " +
                                       std::to_string(l.axis) + "), got " + shapeString(scale.shape));
    l.granularity = Granularity::PerAxis;
    return l;
  }
  Shape want = x.shape;
  want[l.axis] = (d + l.blockSize - 1) / l.blockSize;
  check(scale.shape == want, op + ": with block_size=" + std::to_string(l.blockSize) + " on axis " +
                                 std::to_string(l.axis) + " the scale must have shape " + shapeString(want) + ", got " +
                                 shapeString(scale.shape));
  l.granularity = Granularity::Blocked;
  return l;
}

// For each element of x, the index of its scale / zero point.
std::vector<int64_t> paramIndices(const Shape &x, const Shape &scale, const QuantLayout &l) {
  int64_t n = numElements(x);
  std::vector<int64_t> idx(n, 0);
  if (l.granularity == Granularity::PerTensor) return idx;
  int64_t inner = 1;
  for (size_t d = l.axis + 1; d < x.size(); ++d) inner *= x[d];
  if (l.granularity == Granularity::PerAxis) {
    for (int64_t k = 0; k < n; ++k) idx[k] = (k / inner) % x[l.axis];
    return idx;
  }
  // Blocked: the scale element at x's coordinates, with coordinate `axis` divided by block_size.
  Shape ss(scale.size(), 1);
  for (size_t d = ss.size(); d-- > 1;) ss[d - 1] = ss[d] * scale[d];
  for (int64_t k = 0; k < n; ++k) {
    int64_t rem = k, s = 0;
    for (size_t d = x.size(); d-- > 0;) {
      int64_t c = rem % x[d];
      rem /= x[d];
      if (static_cast<int64_t>(d) == l.axis) c /= l.blockSize;
      s += c * ss[d];
    }
    idx[k] = s;
  }
  return idx;
}

bool supportedQuantType(DType t) {
  return t == DType::I8 || t == DType::U8 || t == DType::I16 || t == DType::U16 || t == DType::F8E4M3;
}

// =============================================================================================
// QuantizeLinear(x, y_scale, y_zero_point?) -> y
// The result dtype is the zero point's; without one, output_dtype (opset 21) or else uint8.

std::vector<TensorType> quantizeShape(const ShapeContext &ctx) {
  const std::string op = "QuantizeLinear";
  checkInputs(op, ctx, 2, 3);
  checkOutputs(op, ctx, 1);
  const TensorType &x = ctx.inputs[0];
  check(isFloat(x.dtype) || x.dtype == DType::I32,
        op + ": x has dtype " + dtypeName(x.dtype) + ", but a float type or i32 is required");
  int64_t outAttr = ctx.attrs.getInt("output_dtype", 0);
  DType out = ctx.present(2) ? ctx.inputs[2].dtype : outAttr ? static_cast<DType>(outAttr) : DType::U8;
  if (ctx.present(2) && outAttr != 0)
    check(static_cast<DType>(outAttr) == out,
          op + ": output_dtype " + std::to_string(outAttr) + " differs from the zero point's dtype " + dtypeName(out));
  check(supportedQuantType(out),
        op + ": quantizing to " + (ctx.present(2) ? std::string(dtypeName(out)) : "dtype " + std::to_string(outAttr)) +
            " is not supported (supported: int8, uint8, int16, uint16, float8_e4m3fn)");
  quantLayout(op, ctx);
  return {{out, x.shape}};
}

std::vector<Tensor> quantizeKernel(const EvalContext &ctx) {
  ShapeContext sc = shapeContextOf(ctx);
  TensorType t = quantizeShape(sc).at(0);
  QuantLayout l = quantLayout("QuantizeLinear", sc);
  const Tensor &x = ctx.in(0), &scale = ctx.in(1);
  std::vector<int64_t> pi = paramIndices(x.shape, scale.shape, l);
  auto range = intRange(t.dtype);
  // The quotient is rounded to the scale's precision (float32 unless the scale is double), as an
  // implementation computing in float32 would, before rounding half to even.
  DType calc = scale.dtype == DType::F64 ? DType::F64 : DType::F32;
  Tensor y(t.dtype, t.shape);
  if (t.dtype == DType::F8E4M3) {
    bool saturate = ctx.attrs.getInt("saturate", 1) != 0;
    for (int64_t k = 0; k < y.size(); ++k) {
      double zp = ctx.present(2) ? ctx.in(2).f[pi[k]] : 0.0;
      y.f[k] = roundToE4M3(roundTo(calc, valueAt(x, k) / scale.f[pi[k]]) + zp, saturate);
    }
    return {y};
  }
  for (int64_t k = 0; k < y.size(); ++k) {
    double s = scale.f[pi[k]];
    double zp = ctx.present(2) ? static_cast<double>(ctx.in(2).i[pi[k]]) : 0.0;
    double q = std::nearbyint(roundTo(calc, valueAt(x, k) / s)) + zp;
    if (std::isnan(q)) q = 0;
    q = std::min(static_cast<double>(range.second), std::max(static_cast<double>(range.first), q));
    y.i[k] = static_cast<int64_t>(q);
  }
  return {y};
}

// =============================================================================================
// DequantizeLinear(x, x_scale, x_zero_point?) -> y, with the scale's dtype.

std::vector<TensorType> dequantizeShape(const ShapeContext &ctx) {
  const std::string op = "DequantizeLinear";
  checkInputs(op, ctx, 2, 3);
  checkOutputs(op, ctx, 1);
  const TensorType &x = ctx.inputs[0];
  check(supportedQuantType(x.dtype) || x.dtype == DType::I32,
        op + ": x has dtype " + dtypeName(x.dtype) +
            ", but int8, uint8, int16, uint16, float8_e4m3fn or int32 is required");
  if (ctx.present(2)) checkSameDtype(op, "x", x.dtype, "x_zero_point", ctx.inputs[2].dtype);
  quantLayout(op, ctx);
  return {{ctx.inputs[1].dtype, x.shape}};
}

std::vector<Tensor> dequantizeKernel(const EvalContext &ctx) {
  ShapeContext sc = shapeContextOf(ctx);
  TensorType t = dequantizeShape(sc).at(0);
  QuantLayout l = quantLayout("DequantizeLinear", sc);
  const Tensor &x = ctx.in(0), &scale = ctx.in(1);
  std::vector<int64_t> pi = paramIndices(x.shape, scale.shape, l);
  Tensor y(t.dtype, t.shape);
  for (int64_t k = 0; k < y.size(); ++k) {
    double zp = ctx.present(2) ? ctx.in(2).get(pi[k]) : 0;
    y.set(k, (x.get(k) - zp) * scale.f[pi[k]]);
  }
  return {y};
}

}  // namespace

KILN_REGISTER_OP({"QuantizeLinear", quantizeShape, quantizeKernel, ew::perElementFlops(3)});
KILN_REGISTER_OP({"DequantizeLinear", dequantizeShape, dequantizeKernel, ew::perElementFlops(2)});

}  // namespace kiln::ops

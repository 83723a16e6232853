// Convolutions over N-D spatial dimensions, layout (N, C, D1, ..., Dn): Conv and ConvTranspose.
//
// Both ops share the attribute handling (kernel_shape, strides, dilations, pads, auto_pad, group)
// in `ConvGeometry`; the shape functions and kernels use the same geometry, so they cannot
// disagree about the output size.
#include "compiler/ops/Conv.h"

#include "compiler/ops/OpSemantics.h"
#include "compiler/ops/OpUtil.h"

#include <algorithm>

namespace kiln::ops {
namespace {

// Floor division (Python's //), used where ONNX's formulas may see negative numerators.
int64_t floorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if (a % b != 0 && ((a < 0) != (b < 0))) --q;
  return q;
}

struct ConvGeometry {
  int64_t batch = 0, inChannels = 0, outChannels = 0, group = 1;
  Shape inSpatial, kernel, strides, dilations, padBegin, padEnd, outSpatial;
};

// Validation common to Conv and ConvTranspose: ranks, dtypes, group, kernel_shape, strides,
// dilations. `weightInAxis` is the weight axis holding input channels (Conv: 1, ConvTranspose: 0).
ConvGeometry commonGeometry(const std::string &op, const TensorType &x, const TensorType &w, const Attrs &attrs) {
  check(isFloat(x.dtype), op + ": input X must be a floating-point tensor, got " + dtypeName(x.dtype));
  check(w.dtype == x.dtype,
        op + ": weight W has dtype " + std::string(dtypeName(w.dtype)) + " but X has " + dtypeName(x.dtype));
  check(x.shape.size() >= 3,
        op + ": input X must have rank >= 3 (N, C, spatial...), got shape " + shapeString(x.shape));
  check(w.shape.size() == x.shape.size(), op + ": weight W has rank " + std::to_string(w.shape.size()) +
                                              " but X has rank " + std::to_string(x.shape.size()));
  ConvGeometry g;
  size_t n = x.shape.size() - 2;
  g.batch = x.shape[0];
  g.inChannels = x.shape[1];
  g.group = attrs.getInt("group", 1);
  check(g.group >= 1, op + ": group must be >= 1, got " + std::to_string(g.group));
  g.inSpatial.assign(x.shape.begin() + 2, x.shape.end());
  g.kernel.assign(w.shape.begin() + 2, w.shape.end());
  for (int64_t k : g.kernel)
    check(k >= 1 && k <= kMaxAttr, op + ": weight W has an empty or huge kernel, shape " + shapeString(w.shape));
  if (attrs.has("kernel_shape")) {
    std::vector<int64_t> ks = attrs.getInts("kernel_shape");
    check(ks == g.kernel, op + ": kernel_shape " + listString(ks) + " does not match the weight's spatial dims " +
                              listString(g.kernel));
  }
  g.strides = spatialAttr(op, attrs, "strides", n, 1, 1);
  g.dilations = spatialAttr(op, attrs, "dilations", n, 1, 1);
  return g;
}

ConvGeometry convGeometry(const TensorType &x, const TensorType &w, const Attrs &attrs) {
  const std::string op = "Conv";
  ConvGeometry g = commonGeometry(op, x, w, attrs);
  size_t n = g.inSpatial.size();
  g.outChannels = w.shape[0];
  check(g.inChannels % g.group == 0, "Conv: input has " + std::to_string(g.inChannels) +
                                         " channels, not divisible by group=" + std::to_string(g.group));
  check(w.shape[1] * g.group == g.inChannels,
        "Conv: input has " + std::to_string(g.inChannels) + " channels but the weight expects " +
            std::to_string(w.shape[1] * g.group) + " (W.shape[1]=" + std::to_string(w.shape[1]) +
            ", group=" + std::to_string(g.group) + ")");
  check(g.outChannels % g.group == 0, "Conv: weight has " + std::to_string(g.outChannels) +
                                          " output channels, not divisible by group=" + std::to_string(g.group));
  std::string autoPad = attrs.getString("auto_pad", "NOTSET");
  g.padBegin.assign(n, 0);
  g.padEnd.assign(n, 0);
  if (autoPad == "NOTSET") {
    explicitPads(op, attrs, g.inSpatial.size(), g.padBegin, g.padEnd);
  } else if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    // Output = ceil(in / stride); the total padding needed for that is split evenly, the odd one
    // going to the end (SAME_UPPER) or the beginning (SAME_LOWER).
    for (size_t i = 0; i < n; ++i) {
      int64_t out = (g.inSpatial[i] + g.strides[i] - 1) / g.strides[i];
      int64_t effK = (g.kernel[i] - 1) * g.dilations[i] + 1;
      int64_t total = std::max<int64_t>(0, (out - 1) * g.strides[i] + effK - g.inSpatial[i]);
      g.padBegin[i] = autoPad == "SAME_UPPER" ? total / 2 : total - total / 2;
      g.padEnd[i] = total - g.padBegin[i];
    }
  } else if (autoPad != "VALID") {
    fail("Conv: unknown auto_pad '" + autoPad + "' (expected NOTSET, SAME_UPPER, SAME_LOWER or VALID)");
  }
  g.outSpatial.resize(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t effK = (g.kernel[i] - 1) * g.dilations[i] + 1;
    int64_t padded = g.inSpatial[i] + g.padBegin[i] + g.padEnd[i];
    check(padded >= effK, "Conv: the kernel (effective size " + std::to_string(effK) +
                              ") is larger than the padded input (size " + std::to_string(padded) +
                              ") along spatial axis " + std::to_string(i));
    g.outSpatial[i] = (padded - effK) / g.strides[i] + 1;
  }
  return g;
}

void checkBias(const std::string &op, const TensorType &b, DType dt, int64_t channels) {
  check(b.dtype == dt, op + ": bias B has dtype " + std::string(dtypeName(b.dtype)) + " but X has " + dtypeName(dt));
  check(b.shape == Shape{channels}, op + ": bias B must have shape " + std::to_string(channels) +
                                        " (one per output channel), got " + shapeString(b.shape));
}

Shape outputShape(const ConvGeometry &g) {
  Shape s{g.batch, g.outChannels};
  s.insert(s.end(), g.outSpatial.begin(), g.outSpatial.end());
  return s;
}

// ---------------------------------------------------------------------------------------------
// Conv

std::vector<TensorType> convShape(const ShapeContext &ctx) {
  check(ctx.present(0) && ctx.present(1), "Conv: inputs X and W are required");
  ConvGeometry g = convGeometry(ctx.inputs[0], ctx.inputs[1], ctx.attrs);
  if (ctx.present(2)) checkBias("Conv", ctx.inputs[2], ctx.inputs[0].dtype, g.outChannels);
  return {{ctx.inputs[0].dtype, outputShape(g)}};
}

std::vector<Tensor> convEval(const EvalContext &ctx) {
  const Tensor &x = ctx.in(0), &w = ctx.in(1);
  ConvGeometry g = convGeometry({x.dtype, x.shape}, {w.dtype, w.shape}, ctx.attrs);
  const Tensor *b = ctx.present(2) ? &ctx.in(2) : nullptr;
  if (b) checkBias("Conv", {b->dtype, b->shape}, x.dtype, g.outChannels);

  size_t n = g.inSpatial.size();
  int64_t inSize = numElements(g.inSpatial), outSize = numElements(g.outSpatial);
  int64_t kSize = numElements(g.kernel);
  int64_t cPerGroup = g.inChannels / g.group, mPerGroup = g.outChannels / g.group;
  Tensor y(x.dtype, outputShape(g));
  if (y.size() == 0) return {y};

  // Per output position, the kernel taps that fall inside the (unpadded) input:
  // (kernel offset, input spatial offset).
  std::vector<std::vector<std::pair<int64_t, int64_t>>> taps(static_cast<size_t>(outSize));
  std::vector<int64_t> o(n, 0), k(n, 0);
  int64_t oIdx = 0;
  do {
    std::fill(k.begin(), k.end(), 0);
    int64_t kIdx = 0;
    do {
      int64_t inOff = 0;
      bool inside = true;
      for (size_t d = 0; d < n && inside; ++d) {
        int64_t c = o[d] * g.strides[d] - g.padBegin[d] + k[d] * g.dilations[d];
        inside = c >= 0 && c < g.inSpatial[d];
        inOff = inOff * g.inSpatial[d] + c;
      }
      if (inside) taps[size_t(oIdx)].emplace_back(kIdx, inOff);
      ++kIdx;
    } while (nextIndex(k, g.kernel));
    ++oIdx;
  } while (nextIndex(o, g.outSpatial));

  // (batch, output channel) planes are independent: they run on all cores for large convolutions.
  parallelRows(g.batch * g.outChannels, outSize * cPerGroup * kSize, [&](int64_t plane) {
    int64_t b0 = plane / g.outChannels, m = plane % g.outChannels, grp = m / mPerGroup;
    for (int64_t p = 0; p < outSize; ++p) {
      double acc = b ? b->f[m] : 0.0;
      for (int64_t c = 0; c < cPerGroup; ++c) {
        const double *xp = &x.f[(b0 * g.inChannels + grp * cPerGroup + c) * inSize];
        const double *wp = &w.f[(m * cPerGroup + c) * kSize];
        for (auto &t : taps[size_t(p)]) acc += xp[t.second] * wp[t.first];
      }
      y.set(plane * outSize + p, acc);
    }
  });
  return {y};
}

int64_t convFlops(const ShapeContext &ctx, const std::vector<TensorType> &outs) {
  // Each output element is a dot product over (C / group) * prod(kernel) taps.
  const Shape &w = ctx.inputs[1].shape;
  int64_t taps = numElements(Shape(w.begin() + 1, w.end()));
  return 2 * numElements(outs[0].shape) * taps;
}

// ---------------------------------------------------------------------------------------------
// ConvTranspose: each input element scatters `x * W[c, m, k]` to output position
// i * stride + k * dilation - padBegin, per spatial axis.

ConvGeometry convTransposeGeometry(const TensorType &x, const TensorType &w, const Attrs &attrs) {
  const std::string op = "ConvTranspose";
  ConvGeometry g = commonGeometry(op, x, w, attrs);
  size_t n = g.inSpatial.size();
  check(w.shape[0] == g.inChannels, "ConvTranspose: input has " + std::to_string(g.inChannels) +
                                        " channels but the weight's first dim is " + std::to_string(w.shape[0]));
  check(g.inChannels % g.group == 0, "ConvTranspose: input has " + std::to_string(g.inChannels) +
                                         " channels, not divisible by group=" + std::to_string(g.group));
  g.outChannels = w.shape[1] * g.group;
  std::vector<int64_t> outPad = spatialAttr(op, attrs, "output_padding", n, 0, 0);

  // The output size without any padding removed.
  Shape full(n);
  for (size_t i = 0; i < n; ++i) {
    check(g.inSpatial[i] >= 1 && g.inSpatial[i] <= kMaxAttr && g.kernel[i] <= kMaxAttr,
          "ConvTranspose: spatial input and kernel sizes must be in [1, 2^31], got " + shapeString(x.shape) + " and " +
              shapeString(w.shape));
    full[i] = g.strides[i] * (g.inSpatial[i] - 1) + outPad[i] + (g.kernel[i] - 1) * g.dilations[i] + 1;
  }

  std::string autoPad = attrs.getString("auto_pad", "NOTSET");
  check(autoPad == "NOTSET" || autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER" || autoPad == "VALID",
        "ConvTranspose: unknown auto_pad '" + autoPad + "' (expected NOTSET, SAME_UPPER, SAME_LOWER or VALID)");
  g.padBegin.assign(n, 0);
  g.padEnd.assign(n, 0);
  if (attrs.has("output_shape")) {
    // Explicit output size: the pads follow from it (ONNX's formula, with floor division, so a
    // negative total "padding" extends the output instead).
    std::vector<int64_t> os = attrs.getInts("output_shape");
    if (os.size() == n + 2) os.erase(os.begin(), os.begin() + 2);  // given with N and C
    check(os.size() == n, "ConvTranspose: output_shape " + listString(os) + " must have one value per spatial axis (" +
                              std::to_string(n) + ")");
    for (size_t i = 0; i < n; ++i) {
      check(os[i] >= 1 && os[i] <= kMaxAttr * kMaxAttr,
            "ConvTranspose: output_shape must be positive (and not huge), got " + listString(os));
      int64_t total = full[i] - os[i];
      if (autoPad == "SAME_UPPER") {
        g.padBegin[i] = floorDiv(total, 2);
        g.padEnd[i] = total - floorDiv(total, 2);
      } else {
        g.padBegin[i] = total - floorDiv(total, 2);
        g.padEnd[i] = floorDiv(total, 2);
      }
    }
  } else if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    // Output = input * stride. The odd padding goes to the end (SAME_UPPER) or the beginning
    // (SAME_LOWER); if the natural output is smaller than that, it is extended at the end.
    for (size_t i = 0; i < n; ++i) {
      int64_t total = full[i] - g.inSpatial[i] * g.strides[i];
      if (total < 0) {
        g.padEnd[i] = total;
      } else {
        g.padBegin[i] = autoPad == "SAME_UPPER" ? total / 2 : total - total / 2;
        g.padEnd[i] = total - g.padBegin[i];
      }
    }
  } else if (autoPad == "NOTSET") {
    explicitPads(op, attrs, g.inSpatial.size(), g.padBegin, g.padEnd);
  }
  g.outSpatial.resize(n);
  for (size_t i = 0; i < n; ++i) {
    g.outSpatial[i] = full[i] - g.padBegin[i] - g.padEnd[i];
    check(g.outSpatial[i] >= 1, "ConvTranspose: the pads remove the whole output along spatial axis " +
                                    std::to_string(i) + " (size " + std::to_string(full[i]) + " before padding)");
  }
  return g;
}

std::vector<TensorType> convTransposeShape(const ShapeContext &ctx) {
  check(ctx.present(0) && ctx.present(1), "ConvTranspose: inputs X and W are required");
  ConvGeometry g = convTransposeGeometry(ctx.inputs[0], ctx.inputs[1], ctx.attrs);
  if (ctx.present(2)) checkBias("ConvTranspose", ctx.inputs[2], ctx.inputs[0].dtype, g.outChannels);
  return {{ctx.inputs[0].dtype, outputShape(g)}};
}

std::vector<Tensor> convTransposeEval(const EvalContext &ctx) {
  const Tensor &x = ctx.in(0), &w = ctx.in(1);
  ConvGeometry g = convTransposeGeometry({x.dtype, x.shape}, {w.dtype, w.shape}, ctx.attrs);
  const Tensor *b = ctx.present(2) ? &ctx.in(2) : nullptr;
  if (b) checkBias("ConvTranspose", {b->dtype, b->shape}, x.dtype, g.outChannels);

  size_t n = g.inSpatial.size();
  int64_t inSize = numElements(g.inSpatial), outSize = numElements(g.outSpatial);
  int64_t kSize = numElements(g.kernel);
  int64_t cPerGroup = g.inChannels / g.group, mPerGroup = g.outChannels / g.group;
  Shape yShape = outputShape(g);
  std::vector<double> acc(numElements(yShape), 0.0);

  if (inSize > 0 && g.inChannels > 0) {
    std::vector<int64_t> i(n, 0), k(n, 0);
    std::vector<std::pair<int64_t, int64_t>> taps;  // (kernel offset, output spatial offset)
    int64_t iIdx = 0;
    do {
      taps.clear();
      std::fill(k.begin(), k.end(), 0);
      int64_t kIdx = 0;
      do {
        int64_t outOff = 0;
        bool inside = true;
        for (size_t d = 0; d < n && inside; ++d) {
          int64_t c = i[d] * g.strides[d] + k[d] * g.dilations[d] - g.padBegin[d];
          inside = c >= 0 && c < g.outSpatial[d];
          outOff = outOff * g.outSpatial[d] + c;
        }
        if (inside) taps.emplace_back(kIdx, outOff);
        ++kIdx;
      } while (nextIndex(k, g.kernel));

      for (int64_t b0 = 0; b0 < g.batch; ++b0) {
        for (int64_t c = 0; c < g.inChannels; ++c) {
          double xv = x.f[(b0 * g.inChannels + c) * inSize + iIdx];
          int64_t grp = c / cPerGroup;
          for (int64_t m = 0; m < mPerGroup; ++m) {
            const double *wp = &w.f[(c * mPerGroup + m) * kSize];
            double *yp = &acc[(b0 * g.outChannels + grp * mPerGroup + m) * outSize];
            for (auto &t : taps) yp[t.second] += xv * wp[t.first];
          }
        }
      }
      ++iIdx;
    } while (nextIndex(i, g.inSpatial));
  }

  Tensor y(x.dtype, yShape);
  for (int64_t e = 0; e < y.size(); ++e) {
    int64_t m = (e / outSize) % g.outChannels;
    y.set(e, acc[e] + (b ? b->f[m] : 0.0));
  }
  return {y};
}

int64_t convTransposeFlops(const ShapeContext &ctx, const std::vector<TensorType> &) {
  // Each input element is multiplied into (M / group) * prod(kernel) output taps.
  const Shape &w = ctx.inputs[1].shape;
  int64_t taps = numElements(Shape(w.begin() + 1, w.end()));
  return 2 * numElements(ctx.inputs[0].shape) * taps;
}

}  // namespace

std::pair<std::vector<int64_t>, std::vector<int64_t>> convPads(const TensorType &x, const TensorType &w,
                                                               const Attrs &attrs) {
  ConvGeometry g = convGeometry(x, w, attrs);
  return {g.padBegin, g.padEnd};
}

std::vector<int64_t> convTransposePadBegin(const TensorType &x, const TensorType &w, const Attrs &attrs) {
  return convTransposeGeometry(x, w, attrs).padBegin;
}

KILN_REGISTER_OP({"Conv", convShape, convEval, convFlops});
KILN_REGISTER_OP({"ConvTranspose", convTransposeShape, convTransposeEval, convTransposeFlops});

}  // namespace kiln::ops

// Ops of detection, segmentation and vision models: GatherND, ScatterND, ScatterElements (and the
// deprecated Scatter), GridSample, RoiAlign, MaxUnpool, LRN, MeanVarianceNormalization,
// ReverseSequence. Latest-opset semantics (ScatterND/ScatterElements reductions of opset 18,
// GridSample's 2-D modes of opset 16 with opset 20's mode names accepted, RoiAlign's
// coordinate_transformation_mode of opset 16: the importer sets opset 10's default).
//
// Elements are copied through the tensors' storage, so no value is converted; float arithmetic is
// in double and rounded to the dtype on store.
#include "compiler/ops/ElementwiseUtil.h"

#include <algorithm>
#include <cmath>

namespace kiln::ops {
namespace {

using namespace ew;

void copyElem(Tensor &dst, int64_t di, const Tensor &src, int64_t si) {
  if (dst.isFloating())
    dst.f[di] = src.f[si];
  else
    dst.i[di] = src.i[si];
}

void checkIndexType(const std::string &op, const TensorType &t) {
  check(t.dtype == DType::I32 || t.dtype == DType::I64,
        op + ": indices must be int32 or int64, got " + dtypeName(t.dtype));
}

int64_t resolve(const std::string &op, int64_t v, int64_t dim) {
  check(v >= -dim && v < dim,
        op + ": index " + std::to_string(v) + " is out of range for an axis of size " + std::to_string(dim));
  return v < 0 ? v + dim : v;
}

// The reduction of ScatterND / ScatterElements applied to element k of `out` with `u`.
void reduceInto(Tensor &out, int64_t k, const Tensor &upd, int64_t u, const std::string &red) {
  if (red == "none") return copyElem(out, k, upd, u);
  if (out.isFloating()) {
    double a = out.f[k], b = upd.f[u];
    out.set(k, red == "add" ? a + b : red == "mul" ? a * b : red == "max" ? std::max(a, b) : std::min(a, b));
    return;
  }
  int64_t a = out.i[k], b = upd.i[u];
  DType t = out.dtype;
  out.setInt(k, red == "add"   ? wrapAdd(a, b)
                : red == "mul" ? wrapMul(a, b)
                : red == "max" ? (intLess(t, a, b) ? b : a)
                               : (intLess(t, a, b) ? a : b));
}

std::string reductionAttr(const std::string &op, const Attrs &a) {
  std::string r = a.getString("reduction", "none");
  check(r == "none" || r == "add" || r == "mul" || r == "max" || r == "min",
        op + ": reduction must be none, add, mul, max or min, got '" + r + "'");
  return r;
}

// =============================================================================================
// GatherND(data, indices, batch_dims): out[b..., i...] = data[b..., indices[b..., i..., :]...].

std::vector<TensorType> gatherNdShape(const ShapeContext &ctx) {
  const std::string op = "GatherND";
  checkInputs(op, ctx, 2, 2);
  checkOutputs(op, ctx, 1);
  const Shape &d = ctx.inputs[0].shape, &ind = ctx.inputs[1].shape;
  check(ctx.inputs[1].dtype == DType::I64, op + ": indices must be int64, got " + dtypeName(ctx.inputs[1].dtype));
  int64_t b = ctx.attrs.getInt("batch_dims", 0);
  check(!d.empty() && !ind.empty(), op + ": data and indices must have rank >= 1");
  check(b >= 0 && b < int64_t(std::min(d.size(), ind.size())), op + ": batch_dims must be in [0, min(ranks))");
  for (int64_t k = 0; k < b; ++k)
    check(d[k] == ind[k], op + ": data and indices differ in batch dim " + std::to_string(k));
  int64_t last = ind.back();
  check(last >= 1 && last <= int64_t(d.size()) - b,
        op + ": indices' last dim (" + std::to_string(last) + ") must be in [1, rank(data) - batch_dims]");
  Shape out(ind.begin(), ind.end() - 1);
  out.insert(out.end(), d.begin() + b + last, d.end());
  return {{ctx.inputs[0].dtype, out}};
}

std::vector<Tensor> gatherNdEval(const EvalContext &ctx) {
  TensorType t = gatherNdShape(shapeContextOf(ctx))[0];
  const Tensor &data = ctx.in(0), &ind = ctx.in(1);
  int64_t b = ctx.attrs.getInt("batch_dims", 0), last = ind.shape.back();
  int64_t batch = 1;
  for (int64_t k = 0; k < b; ++k) batch *= data.shape[k];
  int64_t tuples = ind.size() / last / batch;  // index tuples per batch
  int64_t slice = 1;                           // elements per gathered slice
  for (size_t k = size_t(b + last); k < data.shape.size(); ++k) slice *= data.shape[k];
  Shape st = data.strides();
  int64_t batchStride = b ? st[size_t(b - 1)] : data.size();
  Tensor out(t.dtype, t.shape);
  for (int64_t bi = 0; bi < batch; ++bi)
    for (int64_t j = 0; j < tuples; ++j) {
      int64_t off = bi * batchStride;
      for (int64_t k = 0; k < last; ++k)
        off += resolve("GatherND", ind.i[(bi * tuples + j) * last + k], data.shape[size_t(b + k)]) * st[size_t(b + k)];
      for (int64_t e = 0; e < slice; ++e) copyElem(out, (bi * tuples + j) * slice + e, data, off + e);
    }
  return {out};
}

// =============================================================================================
// ScatterND(data, indices, updates, reduction): out = data; out[indices[i...]] (op)= updates[i...].

std::vector<TensorType> scatterNdShape(const ShapeContext &ctx) {
  const std::string op = "ScatterND";
  checkInputs(op, ctx, 3, 3);
  checkOutputs(op, ctx, 1);
  const Shape &d = ctx.inputs[0].shape, &ind = ctx.inputs[1].shape, &u = ctx.inputs[2].shape;
  check(ctx.inputs[1].dtype == DType::I64, op + ": indices must be int64, got " + dtypeName(ctx.inputs[1].dtype));
  checkSameDtype(op, "data", ctx.inputs[0].dtype, "updates", ctx.inputs[2].dtype);
  check(!d.empty() && !ind.empty(), op + ": data and indices must have rank >= 1");
  int64_t last = ind.back();
  check(last >= 1 && last <= int64_t(d.size()), op + ": indices' last dim must be in [1, rank(data)]");
  Shape want(ind.begin(), ind.end() - 1);
  want.insert(want.end(), d.begin() + last, d.end());
  check(u == want, op + ": updates must have shape " + shapeString(want) + ", got " + shapeString(u));
  reductionAttr(op, ctx.attrs);
  return {ctx.inputs[0]};
}

std::vector<Tensor> scatterNdEval(const EvalContext &ctx) {
  scatterNdShape(shapeContextOf(ctx));
  const Tensor &data = ctx.in(0), &ind = ctx.in(1), &upd = ctx.in(2);
  std::string red = reductionAttr("ScatterND", ctx.attrs);
  int64_t last = ind.shape.back(), tuples = ind.size() / last, slice = 1;
  for (size_t k = size_t(last); k < data.shape.size(); ++k) slice *= data.shape[k];
  Shape st = data.strides();
  Tensor out = data;
  for (int64_t j = 0; j < tuples; ++j) {
    int64_t off = 0;
    for (int64_t k = 0; k < last; ++k)
      off += resolve("ScatterND", ind.i[j * last + k], data.shape[size_t(k)]) * st[size_t(k)];
    for (int64_t e = 0; e < slice; ++e) reduceInto(out, off + e, upd, j * slice + e, red);
  }
  return {out};
}

// =============================================================================================
// ScatterElements(data, indices, updates, axis, reduction) and Scatter (opsets 9-10, no
// reduction): out = data; out[c with c[axis] = indices[c]] (op)= updates[c].

ShapeFn scatterElementsShape(std::string op) {
  return [op](const ShapeContext &ctx) {
    checkInputs(op, ctx, 3, 3);
    checkOutputs(op, ctx, 1);
    const Shape &d = ctx.inputs[0].shape;
    checkIndexType(op, ctx.inputs[1]);
    checkSameDtype(op, "data", ctx.inputs[0].dtype, "updates", ctx.inputs[2].dtype);
    check(ctx.inputs[1].shape == ctx.inputs[2].shape, op + ": indices and updates must have one shape");
    check(ctx.inputs[1].shape.size() == d.size() && !d.empty(), op + ": indices must have data's rank (>= 1)");
    normalizeAxis(ctx.attrs.getInt("axis", 0), int64_t(d.size()));
    for (size_t k = 0; k < d.size(); ++k)
      check(ctx.inputs[1].shape[k] <= d[k], op + ": indices dim " + std::to_string(k) + " exceeds data's");
    if (op == "ScatterElements") reductionAttr(op, ctx.attrs);
    return std::vector<TensorType>{ctx.inputs[0]};
  };
}

EvalFn scatterElementsEval(std::string op) {
  ShapeFn shape = scatterElementsShape(op);
  return [op, shape](const EvalContext &ctx) {
    shape(shapeContextOf(ctx));
    const Tensor &data = ctx.in(0), &ind = ctx.in(1), &upd = ctx.in(2);
    std::string red = op == "ScatterElements" ? reductionAttr(op, ctx.attrs) : "none";
    size_t axis = size_t(normalizeAxis(ctx.attrs.getInt("axis", 0), data.rank()));
    Shape st = data.strides();
    Tensor out = data;
    std::vector<int64_t> c(ind.shape.size(), 0);
    for (int64_t k = 0; k < ind.size(); ++k, nextIndex(c, ind.shape)) {
      int64_t off = 0;
      for (size_t d = 0; d < c.size(); ++d) off += (d == axis ? resolve(op, ind.i[k], data.shape[d]) : c[d]) * st[d];
      reduceInto(out, off, upd, k, red);
    }
    return std::vector<Tensor>{out};
  };
}

// =============================================================================================
// GridSample(X [N, C, H, W], grid [N, Ho, Wo, 2]) -> [N, C, Ho, Wo]: PyTorch's grid_sample
// (bilinear, nearest, bicubic with A = -0.75; zeros, border, reflection padding).

std::vector<TensorType> gridSampleShape(const ShapeContext &ctx) {
  const std::string op = "GridSample";
  checkInputs(op, ctx, 2, 2);
  checkOutputs(op, ctx, 1);
  const TensorType &x = ctx.inputs[0], &g = ctx.inputs[1];
  checkKind(op, "X", x.dtype, Kind::Float);
  checkKind(op, "grid", g.dtype, Kind::Float);
  check(x.shape.size() == 4, op + ": only 2-D sampling (X of rank 4) is supported, got X " + shapeString(x.shape));
  check(g.shape.size() == 4 && g.shape[0] == x.shape[0] && g.shape[3] == 2,
        op + ": grid must be [N, H_out, W_out, 2], got " + shapeString(g.shape));
  std::string mode = ctx.attrs.getString("mode", "bilinear"), pad = ctx.attrs.getString("padding_mode", "zeros");
  check(mode == "bilinear" || mode == "linear" || mode == "nearest" || mode == "bicubic" || mode == "cubic",
        op + ": unknown mode '" + mode + "'");
  check(pad == "zeros" || pad == "border" || pad == "reflection", op + ": unknown padding_mode '" + pad + "'");
  return {{x.dtype, {x.shape[0], x.shape[1], g.shape[1], g.shape[2]}}};
}

double gsReflect(double x, double twiceLow, double twiceHigh) {
  if (twiceLow == twiceHigh) return 0;
  double mn = twiceLow / 2, span = (twiceHigh - twiceLow) / 2;
  x = std::fabs(x - mn);
  double extra = std::fmod(x, span);
  int64_t flips = int64_t(std::floor(x / span));
  return flips % 2 == 0 ? extra + mn : span - extra + mn;
}

// A coordinate after the padding mode (border: clamped; reflection: reflected, then clamped).
double gsPad(double x, int64_t size, const std::string &pad, bool align) {
  if (pad == "border") return std::clamp(x, 0.0, double(size - 1));
  if (pad == "reflection") {
    x = align ? gsReflect(x, 0, 2.0 * double(size - 1)) : gsReflect(x, -1, 2.0 * double(size) - 1);
    return std::clamp(x, 0.0, double(size - 1));
  }
  return x;
}

double cubic1(double x, double A) { return ((A + 2) * x - (A + 3)) * x * x + 1; }
double cubic2(double x, double A) { return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A; }

std::vector<Tensor> gridSampleEval(const EvalContext &ctx) {
  TensorType t = gridSampleShape(shapeContextOf(ctx))[0];
  const Tensor &x = ctx.in(0), &g = ctx.in(1);
  std::string mode = ctx.attrs.getString("mode", "bilinear"), pad = ctx.attrs.getString("padding_mode", "zeros");
  bool align = ctx.attrs.getInt("align_corners", 0) != 0;
  int64_t N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3], Ho = t.shape[2], Wo = t.shape[3];
  Tensor y(t.dtype, t.shape);
  auto unnorm = [&](double v, int64_t size) {
    return align ? (v + 1) / 2 * double(size - 1) : ((v + 1) * double(size) - 1) / 2;
  };
  for (int64_t n = 0; n < N; ++n)
    for (int64_t oh = 0; oh < Ho; ++oh)
      for (int64_t ow = 0; ow < Wo; ++ow) {
        int64_t gi = ((n * Ho + oh) * Wo + ow) * 2;
        double ix = unnorm(g.f[gi], W), iy = unnorm(g.f[gi + 1], H);
        for (int64_t c = 0; c < C; ++c) {
          const double *img = x.f.data() + (n * C + c) * H * W;
          auto at = [&](int64_t r, int64_t col) {
            return r >= 0 && r < H && col >= 0 && col < W ? img[r * W + col] : 0.0;
          };
          double v = 0;
          if (mode == "bicubic" || mode == "cubic") {
            double x0 = std::floor(ix), y0 = std::floor(iy), tx = ix - x0, ty = iy - y0;
            double cx[4] = {cubic2(tx + 1, -0.75), cubic1(tx, -0.75), cubic1(1 - tx, -0.75), cubic2(2 - tx, -0.75)};
            double cy[4] = {cubic2(ty + 1, -0.75), cubic1(ty, -0.75), cubic1(1 - ty, -0.75), cubic2(2 - ty, -0.75)};
            for (int j = 0; j < 4; ++j)
              for (int i = 0; i < 4; ++i) {
                // Each tap's coordinate goes through the padding mode (PyTorch's get_value_bounded).
                double px = gsPad(x0 - 1 + i, W, pad, align), py = gsPad(y0 - 1 + j, H, pad, align);
                v += cx[i] * cy[j] * at(int64_t(py), int64_t(px));
              }
          } else {
            double sx = gsPad(ix, W, pad, align), sy = gsPad(iy, H, pad, align);
            if (mode == "nearest") {
              v = at(int64_t(std::nearbyint(sy)), int64_t(std::nearbyint(sx)));
            } else {
              double x0 = std::floor(sx), y0 = std::floor(sy), fx = sx - x0, fy = sy - y0;
              int64_t c0 = int64_t(x0), r0 = int64_t(y0);
              v = at(r0, c0) * (1 - fx) * (1 - fy) + at(r0, c0 + 1) * fx * (1 - fy) + at(r0 + 1, c0) * (1 - fx) * fy +
                  at(r0 + 1, c0 + 1) * fx * fy;
            }
          }
          y.set(((n * C + c) * Ho + oh) * Wo + ow, v);
        }
      }
  return {y};
}

// =============================================================================================
// RoiAlign(X [N, C, H, W], rois [R, 4], batch_indices [R]) -> [R, C, oh, ow] (onnxruntime's
// algorithm: bilinear samples on a sampling_ratio grid per bin, averaged or max-pooled).

std::vector<TensorType> roiAlignShape(const ShapeContext &ctx) {
  const std::string op = "RoiAlign";
  checkInputs(op, ctx, 3, 3);
  checkOutputs(op, ctx, 1);
  const TensorType &x = ctx.inputs[0], &r = ctx.inputs[1], &b = ctx.inputs[2];
  checkKind(op, "X", x.dtype, Kind::Float);
  checkKind(op, "rois", r.dtype, Kind::Float);  // (ONNX: X's type; kiln keeps boxes fp32 in half graphs)
  check(x.shape.size() == 4, op + ": X must be [N, C, H, W], got " + shapeString(x.shape));
  check(r.shape.size() == 2 && r.shape[1] == 4, op + ": rois must be [num_rois, 4], got " + shapeString(r.shape));
  checkIndexType(op, b);
  check(b.shape == Shape{r.shape[0]}, op + ": batch_indices must have shape [num_rois]");
  std::string mode = ctx.attrs.getString("mode", "avg"),
              ctm = ctx.attrs.getString("coordinate_transformation_mode", "half_pixel");
  check(mode == "avg" || mode == "max", op + ": mode must be avg or max");
  check(ctm == "half_pixel" || ctm == "output_half_pixel",
        op + ": unknown coordinate_transformation_mode '" + ctm + "'");
  int64_t oh = ctx.attrs.getInt("output_height", 1), ow = ctx.attrs.getInt("output_width", 1);
  check(oh >= 1 && ow >= 1 && ctx.attrs.getInt("sampling_ratio", 0) >= 0, op + ": bad output size or sampling_ratio");
  return {{x.dtype, {r.shape[0], x.shape[1], oh, ow}}};
}

std::vector<Tensor> roiAlignEval(const EvalContext &ctx) {
  TensorType t = roiAlignShape(shapeContextOf(ctx))[0];
  const Tensor &x = ctx.in(0), &rois = ctx.in(1), &bi = ctx.in(2);
  const Attrs &a = ctx.attrs;
  bool avg = a.getString("mode", "avg") == "avg";
  bool half = a.getString("coordinate_transformation_mode", "half_pixel") == "half_pixel";
  double scale = a.getFloat("spatial_scale", 1.0);
  int64_t sr = a.getInt("sampling_ratio", 0), OH = t.shape[2], OW = t.shape[3];
  int64_t N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3];
  Tensor y(t.dtype, t.shape);
  double off = half ? 0.5 : 0.0;
  for (int64_t r = 0; r < t.shape[0]; ++r) {
    int64_t n = bi.i[r];
    check(n >= 0 && n < N, "RoiAlign: batch index " + std::to_string(n) + " is out of range");
    double x0 = rois.f[r * 4] * scale - off, y0 = rois.f[r * 4 + 1] * scale - off;
    double x1 = rois.f[r * 4 + 2] * scale - off, y1 = rois.f[r * 4 + 3] * scale - off;
    double rw = x1 - x0, rh = y1 - y0;
    if (!half) rw = std::max(rw, 1.0), rh = std::max(rh, 1.0);
    double bh = rh / double(OH), bw = rw / double(OW);
    int64_t gh = sr > 0 ? sr : int64_t(std::ceil(rh / double(OH))),
            gw = sr > 0 ? sr : int64_t(std::ceil(rw / double(OW)));
    double count = double(std::max<int64_t>(gh * gw, 1));
    for (int64_t c = 0; c < C; ++c) {
      const double *img = x.f.data() + (n * C + c) * H * W;
      for (int64_t ph = 0; ph < OH; ++ph)
        for (int64_t pw = 0; pw < OW; ++pw) {
          double acc = avg ? 0.0 : -INFINITY;
          bool any = false;
          for (int64_t iy = 0; iy < gh; ++iy)
            for (int64_t ix = 0; ix < gw; ++ix) {
              double yy = y0 + double(ph) * bh + (double(iy) + 0.5) * bh / double(gh);
              double xx = x0 + double(pw) * bw + (double(ix) + 0.5) * bw / double(gw);
              double v = 0;
              if (!(yy < -1.0 || yy > double(H) || xx < -1.0 || xx > double(W))) {
                yy = std::max(yy, 0.0), xx = std::max(xx, 0.0);
                int64_t yl = int64_t(yy), xl = int64_t(xx), yh, xh;
                if (yl >= H - 1)
                  yh = yl = H - 1, yy = double(yl);
                else
                  yh = yl + 1;
                if (xl >= W - 1)
                  xh = xl = W - 1, xx = double(xl);
                else
                  xh = xl + 1;
                double ly = yy - double(yl), lx = xx - double(xl), hy = 1 - ly, hx = 1 - lx;
                double w1 = hy * hx * img[yl * W + xl], w2 = hy * lx * img[yl * W + xh],
                       w3 = ly * hx * img[yh * W + xl], w4 = ly * lx * img[yh * W + xh];
                v = avg ? w1 + w2 + w3 + w4 : std::max(std::max(w1, w2), std::max(w3, w4));
              }
              acc = avg ? acc + v : std::max(acc, v);
              any = true;
            }
          y.set(((r * C + c) * OH + ph) * OW + pw, avg ? acc / count : (any ? acc : 0.0));
        }
    }
  }
  return {y};
}

// =============================================================================================
// MaxUnpool(X, I, output_shape?): zeros of the output shape, with X[k] stored at flat index I[k].

// The unpooled shape the indices refer to (from the attributes); with `given`, output_shape
// instead when the input gives one.
Shape maxUnpoolOut(const ShapeContext &ctx, bool given = true) {
  const std::string op = "MaxUnpool";
  const Shape &x = ctx.inputs[0].shape;
  size_t n = x.size() - 2;
  if (given && ctx.present(2)) {
    const Tensor *v = ctx.values.size() > 2 ? ctx.values[2] : nullptr;
    check(v != nullptr, op + ": the 'output_shape' input must be a compile-time constant");
    Shape s = v->toInts();
    check(s.size() == x.size() && s[0] == x[0] && s[1] == x[1],
          op + ": output_shape must be [N, C, spatial...] of X's N and C");
    return s;
  }
  std::vector<int64_t> k = ctx.attrs.getInts("kernel_shape");
  check(k.size() == n, op + ": kernel_shape must have one value per spatial axis");
  std::vector<int64_t> st = spatialAttr(op, ctx.attrs, "strides", n, 1, 1);
  Shape pb, pe;
  explicitPads(op, ctx.attrs, n, pb, pe);
  Shape out = {x[0], x[1]};
  for (size_t d = 0; d < n; ++d) out.push_back((x[d + 2] - 1) * st[d] + k[d] - pb[d] - pe[d]);
  return out;
}

std::vector<TensorType> maxUnpoolShape(const ShapeContext &ctx) {
  const std::string op = "MaxUnpool";
  checkInputs(op, ctx, 2, 3);
  checkOutputs(op, ctx, 1);
  checkKind(op, "X", ctx.inputs[0].dtype, Kind::Float);
  check(ctx.inputs[0].shape.size() >= 3, op + ": X must have rank >= 3");
  check(ctx.inputs[1].dtype == DType::I64 && ctx.inputs[1].shape == ctx.inputs[0].shape,
        op + ": I must be int64 of X's shape");
  return {{ctx.inputs[0].dtype, maxUnpoolOut(ctx)}};
}

// The indices are flat positions in the unpooled shape of the attributes; a larger output_shape
// keeps each element's coordinates (the extra rows and columns at the end stay zero).
std::vector<Tensor> maxUnpoolEval(const EvalContext &ctx) {
  ShapeContext sc = shapeContextOf(ctx);
  TensorType t = maxUnpoolShape(sc)[0];
  Shape base = maxUnpoolOut(sc, false);
  const Tensor &x = ctx.in(0), &ind = ctx.in(1);
  Tensor y(t.dtype, t.shape);
  Shape bst = Tensor(DType::F32, base).strides(), yst = y.strides();
  for (int64_t k = 0; k < x.size(); ++k) {
    int64_t j = ind.i[k], to = 0;
    check(j >= 0 && j < numElements(base), "MaxUnpool: index " + std::to_string(j) + " is outside the unpooled tensor");
    bool inside = true;
    for (size_t d = 0; d < base.size(); ++d) {
      int64_t c = (j / bst[d]) % base[d];
      inside = inside && c < t.shape[d];
      to += c * yst[d];
    }
    if (inside) y.f[to] = x.f[k];
  }
  return {y};
}

// =============================================================================================
// LRN: y = x / (bias + alpha / size · Σ x²[c' in the window of c])^beta.

std::vector<TensorType> lrnShape(const ShapeContext &ctx) {
  const std::string op = "LRN";
  checkInputs(op, ctx, 1, 1);
  checkOutputs(op, ctx, 1);
  checkKind(op, "X", ctx.inputs[0].dtype, Kind::Float);
  check(ctx.inputs[0].shape.size() >= 2, op + ": X must have rank >= 2");
  check(ctx.attrs.getInt("size") >= 1, op + ": size must be >= 1");
  return {ctx.inputs[0]};
}

std::vector<Tensor> lrnEval(const EvalContext &ctx) {
  lrnShape(shapeContextOf(ctx));
  const Tensor &x = ctx.in(0);
  int64_t size = ctx.attrs.getInt("size");
  double alpha = ctx.attrs.getFloat("alpha", 1e-4), beta = ctx.attrs.getFloat("beta", 0.75),
         bias = ctx.attrs.getFloat("bias", 1.0);
  int64_t C = x.shape[1], inner = x.size() / (x.shape[0] * C);
  int64_t lo = (size - 1) / 2, hi = size - 1 - lo;  // floor((size-1)/2) before, ceil after
  Tensor y(x.dtype, x.shape);
  for (int64_t k = 0; k < x.size(); ++k) {
    int64_t c = (k / inner) % C, base = k - c * inner;
    double s = 0;
    for (int64_t j = std::max<int64_t>(0, c - lo); j <= std::min(C - 1, c + hi); ++j)
      s += x.f[base + j * inner] * x.f[base + j * inner];
    y.set(k, x.f[k] / std::pow(bias + alpha / double(size) * s, beta));
  }
  return {y};
}

// =============================================================================================
// MeanVarianceNormalization(X, axes = [0, 2, 3]): (X - E[X]) / (sqrt(E[X²] - E[X]²) + 1e-9), the
// expectations over `axes` (ONNX's function body).

std::vector<TensorType> mvnShape(const ShapeContext &ctx) {
  const std::string op = "MeanVarianceNormalization";
  checkInputs(op, ctx, 1, 1);
  checkOutputs(op, ctx, 1);
  checkKind(op, "X", ctx.inputs[0].dtype, Kind::Float);
  for (int64_t a : ctx.attrs.getInts("axes", {0, 2, 3})) normalizeAxis(a, int64_t(ctx.inputs[0].shape.size()));
  return {ctx.inputs[0]};
}

std::vector<Tensor> mvnEval(const EvalContext &ctx) {
  mvnShape(shapeContextOf(ctx));
  const Tensor &x = ctx.in(0);
  std::vector<bool> red(x.shape.size(), false);
  for (int64_t a : ctx.attrs.getInts("axes", {0, 2, 3})) red[size_t(normalizeAxis(a, x.rank()))] = true;
  // Group elements by their coordinates along the axes not reduced.
  Shape st = x.strides();
  std::vector<int64_t> group(size_t(x.size()));
  Shape keep;
  int64_t groups = 1;
  for (size_t d = 0; d < x.shape.size(); ++d)
    if (!red[d]) groups *= x.shape[d];
  std::vector<double> s1(size_t(groups), 0), s2(size_t(groups), 0), cnt(size_t(groups), 0);
  std::vector<int64_t> c(x.shape.size(), 0);
  for (int64_t k = 0; k < x.size(); ++k, nextIndex(c, x.shape)) {
    int64_t g = 0;
    for (size_t d = 0; d < c.size(); ++d)
      if (!red[d]) g = g * x.shape[d] + c[d];
    group[size_t(k)] = g;
    s1[size_t(g)] += x.f[k], s2[size_t(g)] += x.f[k] * x.f[k], cnt[size_t(g)] += 1;
  }
  Tensor y(x.dtype, x.shape);
  for (int64_t k = 0; k < x.size(); ++k) {
    size_t g = size_t(group[size_t(k)]);
    double m = s1[g] / cnt[g], var = s2[g] / cnt[g] - m * m;
    y.set(k, (x.f[k] - m) / (std::sqrt(var) + 1e-9));
  }
  return {y};
}

// =============================================================================================
// ReverseSequence(input, sequence_lens): per batch entry b, the first sequence_lens[b] steps along
// time_axis reversed, the rest copied.

std::vector<TensorType> reverseSequenceShape(const ShapeContext &ctx) {
  const std::string op = "ReverseSequence";
  checkInputs(op, ctx, 2, 2);
  checkOutputs(op, ctx, 1);
  const Shape &x = ctx.inputs[0].shape;
  check(x.size() >= 2, op + ": input must have rank >= 2");
  int64_t b = ctx.attrs.getInt("batch_axis", 1), t = ctx.attrs.getInt("time_axis", 0);
  check((b == 0 && t == 1) || (b == 1 && t == 0), op + ": batch_axis/time_axis must be 0 and 1 in some order");
  check(ctx.inputs[1].dtype == DType::I64 && ctx.inputs[1].shape == Shape{x[size_t(b)]},
        op + ": sequence_lens must be int64 of shape [batch]");
  return {ctx.inputs[0]};
}

std::vector<Tensor> reverseSequenceEval(const EvalContext &ctx) {
  reverseSequenceShape(shapeContextOf(ctx));
  const Tensor &x = ctx.in(0), &lens = ctx.in(1);
  size_t b = size_t(ctx.attrs.getInt("batch_axis", 1)), t = size_t(ctx.attrs.getInt("time_axis", 0));
  Shape st = x.strides();
  Tensor y(x.dtype, x.shape);
  std::vector<int64_t> c(x.shape.size(), 0);
  for (int64_t k = 0; k < x.size(); ++k, nextIndex(c, x.shape)) {
    int64_t len = lens.i[size_t(c[b])];
    check(len >= 0 && len <= x.shape[t], "ReverseSequence: sequence length " + std::to_string(len) + " out of range");
    int64_t src = k;
    if (c[t] < len) src = k + (len - 1 - 2 * c[t]) * st[t];
    copyElem(y, k, x, src);
  }
  return {y};
}

}  // namespace

KILN_REGISTER_OP({"GatherND", gatherNdShape, gatherNdEval, {}});
KILN_REGISTER_OP({"ScatterND", scatterNdShape, scatterNdEval, {}});
KILN_REGISTER_OP(
    {"ScatterElements", scatterElementsShape("ScatterElements"), scatterElementsEval("ScatterElements"), {}});
KILN_REGISTER_OP({"Scatter", scatterElementsShape("Scatter"), scatterElementsEval("Scatter"), {}});
KILN_REGISTER_OP({"GridSample", gridSampleShape, gridSampleEval, perElementFlops(40)});
KILN_REGISTER_OP({"RoiAlign", roiAlignShape, roiAlignEval, perElementFlops(40)});
KILN_REGISTER_OP({"MaxUnpool", maxUnpoolShape, maxUnpoolEval, {}});
KILN_REGISTER_OP({"LRN", lrnShape, lrnEval, perElementFlops(16)});
KILN_REGISTER_OP({"MeanVarianceNormalization", mvnShape, mvnEval, perElementFlops(8)});
KILN_REGISTER_OP({"ReverseSequence", reverseSequenceShape, reverseSequenceEval, {}});

}  // namespace kiln::ops

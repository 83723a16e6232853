// Ops whose result shape depends on input values: NonZero, Compress, Unique, NonMaxSuppression.
//
// kiln's engines have static shapes, so these have a result type only when the values it depends
// on are known at build time (constants, --constant-inputs); the shape function then computes the
// result, and otherwise fails with kNeedsConstantPhrase, naming the input (the importer reports
// the node as unsupported as given). Compress depends on its condition only: with a constant
// condition its data may still be an engine input (a gather on the GPU).
#include "compiler/ops/ElementwiseUtil.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace kiln::ops {
namespace {

using namespace ew;

// The known value of input k, or a failure saying the result shape depends on it.
const Tensor &dataValue(const ShapeContext &ctx, size_t k, const std::string &op, const std::string &what) {
  const Tensor *v = k < ctx.values.size() ? ctx.values[k] : nullptr;
  check(v != nullptr, op + ": the output shape depends on the values of input '" + what +
                          "', so it must be a compile-time constant (engines have static shapes; bind it with "
                          "--constant-inputs)");
  return *v;
}

void copyElem(Tensor &dst, int64_t di, const Tensor &src, int64_t si) {
  if (dst.isFloating())
    dst.f[di] = src.f[si];
  else
    dst.i[di] = src.i[si];
}

// =============================================================================================
// NonZero(X) -> int64 [rank, count]: the coordinates of the non-zero elements, row-major order.

Tensor nonZero(const Tensor &x) {
  std::vector<int64_t> hits;
  for (int64_t k = 0; k < x.size(); ++k)
    if (valueAt(x, k) != 0) hits.push_back(k);
  int64_t r = std::max<int64_t>(x.rank(), 1), n = int64_t(hits.size());
  Tensor y(DType::I64, {r, n});
  Shape st = x.rank() ? x.strides() : Shape{1};
  for (int64_t j = 0; j < n; ++j)
    for (int64_t d = 0; d < x.rank(); ++d) y.i[d * n + j] = (hits[j] / st[d]) % x.shape[d];
  return y;
}

std::vector<TensorType> nonZeroShape(const ShapeContext &ctx) {
  checkInputs("NonZero", ctx, 1, 1);
  checkOutputs("NonZero", ctx, 1);
  checkKind("NonZero", "X", ctx.inputs[0].dtype, Kind::Any);
  return {{DType::I64, nonZero(dataValue(ctx, 0, "NonZero", "X")).shape}};
}

std::vector<Tensor> nonZeroEval(const EvalContext &ctx) {
  nonZeroShape(shapeContextOf(ctx));
  return {nonZero(ctx.in(0))};
}

// =============================================================================================
// Compress(input, condition, axis?): the slices along `axis` (elements of the flattened input
// without one) whose condition is true; the condition may be shorter than the axis.

std::vector<int64_t> compressKept(const Tensor &cond, int64_t dim, const std::string &op) {
  check(cond.rank() == 1, op + ": condition must be 1-D");
  check(cond.size() <= dim,
        op + ": condition has " + std::to_string(cond.size()) + " entries, the axis only " + std::to_string(dim));
  std::vector<int64_t> kept;
  for (int64_t k = 0; k < cond.size(); ++k)
    if (valueAt(cond, k) != 0) kept.push_back(k);
  return kept;
}

std::vector<TensorType> compressShape(const ShapeContext &ctx) {
  const std::string op = "Compress";
  checkInputs(op, ctx, 2, 2);
  checkOutputs(op, ctx, 1);
  const Shape &x = ctx.inputs[0].shape;
  check(ctx.inputs[1].dtype == DType::Bool, op + ": condition must be bool, got " + dtypeName(ctx.inputs[1].dtype));
  const Tensor &cond = dataValue(ctx, 1, op, "condition");
  if (!ctx.attrs.has("axis")) return {{ctx.inputs[0].dtype, {int64_t(compressKept(cond, numElements(x), op).size())}}};
  check(!x.empty(), op + ": input must have rank >= 1 with an axis");
  size_t axis = size_t(normalizeAxis(ctx.attrs.getInt("axis"), int64_t(x.size())));
  Shape out = x;
  out[axis] = int64_t(compressKept(cond, x[axis], op).size());
  return {{ctx.inputs[0].dtype, out}};
}

std::vector<Tensor> compressEval(const EvalContext &ctx) {
  TensorType t = compressShape(shapeContextOf(ctx))[0];
  const Tensor &x = ctx.in(0);
  Tensor y(t.dtype, t.shape);
  if (!ctx.attrs.has("axis")) {
    std::vector<int64_t> kept = compressKept(ctx.in(1), x.size(), "Compress");
    for (size_t j = 0; j < kept.size(); ++j) copyElem(y, int64_t(j), x, kept[j]);
    return {y};
  }
  size_t axis = size_t(normalizeAxis(ctx.attrs.getInt("axis"), x.rank()));
  std::vector<int64_t> kept = compressKept(ctx.in(1), x.shape[axis], "Compress");
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < axis; ++d) outer *= x.shape[d];
  for (size_t d = axis + 1; d < x.shape.size(); ++d) inner *= x.shape[d];
  int64_t n = int64_t(kept.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < n; ++j)
      for (int64_t i = 0; i < inner; ++i)
        copyElem(y, (o * n + j) * inner + i, x, (o * x.shape[axis] + kept[size_t(j)]) * inner + i);
  return {y};
}

// =============================================================================================
// Unique(X, axis?, sorted = 1) -> Y, indices, inverse_indices, counts (numpy.unique's, with
// first-occurrence order when sorted = 0).

struct UniqueResult {
  std::vector<int64_t> firsts;   // per unique slice: the index of its first occurrence
  std::vector<int64_t> inverse;  // per slice of X: its unique slice
  std::vector<int64_t> counts;
};

std::vector<Tensor> unique(const Tensor &x, const Attrs &attrs, int numOutputs) {
  bool hasAxis = attrs.has("axis");
  int64_t axis = hasAxis ? normalizeAxis(attrs.getInt("axis"), x.rank()) : 0;
  Shape view = hasAxis ? x.shape : Shape{x.size()};
  int64_t outer = 1, inner = 1, n = view[size_t(axis)];
  for (int64_t d = 0; d < axis; ++d) outer *= view[size_t(d)];
  for (size_t d = size_t(axis) + 1; d < view.size(); ++d) inner *= view[d];
  // Slice j as a vector of values (its elements in row-major order over the other axes).
  auto slice = [&](int64_t j) {
    std::vector<double> s;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) s.push_back(valueAt(x, (o * n + j) * inner + i));
    return s;
  };
  std::map<std::vector<double>, int64_t> seen;  // slice → its unique slot in first-occurrence order
  UniqueResult r;
  std::vector<std::vector<double>> values;
  for (int64_t j = 0; j < n; ++j) {
    auto s = slice(j);
    auto [it, added] = seen.try_emplace(s, int64_t(r.firsts.size()));
    if (added) r.firsts.push_back(j), r.counts.push_back(0), values.push_back(s);
    r.counts[size_t(it->second)] += 1;
    r.inverse.push_back(it->second);
  }
  std::vector<int64_t> order(r.firsts.size());  // output slot → first-occurrence slot
  for (size_t k = 0; k < order.size(); ++k) order[k] = int64_t(k);
  if (attrs.getInt("sorted", 1))
    std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return values[size_t(a)] < values[size_t(b)]; });
  std::vector<int64_t> slotOf(order.size());
  for (size_t k = 0; k < order.size(); ++k) slotOf[size_t(order[k])] = int64_t(k);
  int64_t u = int64_t(order.size());
  Shape yShape = view;
  yShape[size_t(axis)] = u;
  Tensor y(x.dtype, yShape), first(DType::I64, {u}), inv(DType::I64, {n}), cnt(DType::I64, {u});
  for (int64_t k = 0; k < u; ++k) {
    int64_t j = r.firsts[size_t(order[size_t(k)])];
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) copyElem(y, (o * u + k) * inner + i, x, (o * n + j) * inner + i);
    first.i[size_t(k)] = j;
    cnt.i[size_t(k)] = r.counts[size_t(order[size_t(k)])];
  }
  for (int64_t j = 0; j < n; ++j) inv.i[size_t(j)] = slotOf[size_t(r.inverse[size_t(j)])];
  std::vector<Tensor> out = {y, first, inv, cnt};
  out.resize(size_t(std::max(1, numOutputs)));
  return out;
}

std::vector<TensorType> uniqueShape(const ShapeContext &ctx) {
  checkInputs("Unique", ctx, 1, 1);
  checkOutputs("Unique", ctx, 4);
  checkKind("Unique", "X", ctx.inputs[0].dtype, Kind::Any);
  std::vector<TensorType> types;
  for (const Tensor &t : unique(dataValue(ctx, 0, "Unique", "X"), ctx.attrs, ctx.numOutputs))
    types.push_back({t.dtype, t.shape});
  return types;
}

std::vector<Tensor> uniqueEval(const EvalContext &ctx) {
  uniqueShape(shapeContextOf(ctx));
  return unique(ctx.in(0), ctx.attrs, ctx.numOutputs);
}

// =============================================================================================
// NonMaxSuppression(boxes [B, N, 4], scores [B, C, N], max_output_boxes_per_class?,
// iou_threshold?, score_threshold?) -> int64 [selected, 3] of (batch, class, box), onnxruntime's
// greedy selection: by descending score (ties: lower index first), a box is dropped when its IoU
// with a selected one exceeds the threshold.

bool suppressedBy(const double *a, const double *b, bool center, double threshold) {
  auto corners = [center](const double *p, double &x0, double &y0, double &x1, double &y1) {
    if (center) {
      x0 = p[0] - p[2] / 2, x1 = p[0] + p[2] / 2, y0 = p[1] - p[3] / 2, y1 = p[1] + p[3] / 2;
    } else {
      y0 = std::min(p[0], p[2]), y1 = std::max(p[0], p[2]), x0 = std::min(p[1], p[3]), x1 = std::max(p[1], p[3]);
    }
  };
  double ax0, ay0, ax1, ay1, bx0, by0, bx1, by1;
  corners(a, ax0, ay0, ax1, ay1);
  corners(b, bx0, by0, bx1, by1);
  double ix0 = std::max(ax0, bx0), iy0 = std::max(ay0, by0), ix1 = std::min(ax1, bx1), iy1 = std::min(ay1, by1);
  if (ix1 <= ix0 || iy1 <= iy0) return false;
  double inter = (ix1 - ix0) * (iy1 - iy0), areaA = (ax1 - ax0) * (ay1 - ay0), areaB = (bx1 - bx0) * (by1 - by0);
  double uni = areaA + areaB - inter;
  if (areaA <= 0 || areaB <= 0 || uni <= 0) return false;
  return inter / uni > threshold;
}

Tensor nms(const std::vector<const Tensor *> &in, const Attrs &attrs) {
  const Tensor &boxes = *in[0], &scores = *in[1];
  int64_t maxOut = in[2] && in[2]->size() ? in[2]->getInt(0) : 0;
  double iou = in[3] && in[3]->size() ? in[3]->get(0) : 0.0;
  bool hasScore = in[4] && in[4]->size();
  double scoreThreshold = hasScore ? in[4]->get(0) : 0.0;
  bool center = attrs.getInt("center_point_box", 0) != 0;
  int64_t B = boxes.shape[0], N = boxes.shape[1], C = scores.shape[1];
  std::vector<int64_t> rows;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t c = 0; c < C; ++c) {
      if (maxOut <= 0) continue;
      const double *sc = scores.f.data() + (b * C + c) * N;
      std::vector<int64_t> cand;
      for (int64_t k = 0; k < N; ++k)
        if (!hasScore || sc[k] > scoreThreshold) cand.push_back(k);
      std::stable_sort(cand.begin(), cand.end(), [&](int64_t p, int64_t q) { return sc[p] > sc[q]; });
      std::vector<int64_t> kept;
      for (int64_t k : cand) {
        if (int64_t(kept.size()) >= maxOut) break;
        bool drop = false;
        for (int64_t s : kept)
          drop = drop || suppressedBy(boxes.f.data() + (b * N + k) * 4, boxes.f.data() + (b * N + s) * 4, center, iou);
        if (!drop) kept.push_back(k);
      }
      for (int64_t k : kept) rows.insert(rows.end(), {b, c, k});
    }
  return Tensor::fromInts(DType::I64, {int64_t(rows.size() / 3), 3}, rows);
}

std::vector<TensorType> nmsShape(const ShapeContext &ctx) {
  const std::string op = "NonMaxSuppression";
  checkInputs(op, ctx, 2, 5);
  checkOutputs(op, ctx, 1);
  const TensorType &b = ctx.inputs[0], &s = ctx.inputs[1];
  checkKind(op, "boxes", b.dtype, Kind::Float);
  checkKind(op, "scores", s.dtype, Kind::Float);
  check(b.shape.size() == 3 && b.shape[2] == 4, op + ": boxes must be [batch, boxes, 4], got " + shapeString(b.shape));
  check(s.shape.size() == 3 && s.shape[0] == b.shape[0] && s.shape[2] == b.shape[1],
        op + ": scores must be [batch, classes, boxes], got " + shapeString(s.shape));
  std::vector<const Tensor *> in(5, nullptr);
  const char *names[] = {"boxes", "scores", "max_output_boxes_per_class", "iou_threshold", "score_threshold"};
  for (size_t k = 0; k < 5; ++k)
    if (ctx.present(k)) in[k] = &dataValue(ctx, k, op, names[k]);
  return {{DType::I64, nms(in, ctx.attrs).shape}};
}

std::vector<Tensor> nmsEval(const EvalContext &ctx) {
  nmsShape(shapeContextOf(ctx));
  std::vector<const Tensor *> in(5, nullptr);
  for (size_t k = 0; k < 5; ++k)
    if (ctx.present(k)) in[k] = &ctx.in(k);
  return {nms(in, ctx.attrs)};
}

}  // namespace

KILN_REGISTER_OP({"NonZero", nonZeroShape, nonZeroEval, {}});
KILN_REGISTER_OP({"Compress", compressShape, compressEval, {}});
KILN_REGISTER_OP({"Unique", uniqueShape, uniqueEval, {}});
KILN_REGISTER_OP({"NonMaxSuppression", nmsShape, nmsEval, {}});

}  // namespace kiln::ops

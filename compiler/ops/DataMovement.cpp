// Data movement and tensor-construction ops: Identity, Dropout (inference), Flatten, Reshape,
// Transpose, Squeeze, Unsqueeze, Concat, Split, Slice, Gather, GatherElements, Expand, Tile, Pad,
// Shape, Size, ConstantOfShape, Range, EyeLike, OneHot, Trilu, CumSum, DepthToSpace,
// SpaceToDepth.
//
// Every kernel first runs its op's shape function on the actual inputs (`shapeOf`), so the
// validation and the result shapes are written once and cannot disagree. Shape functions that
// depend on operand values (Reshape's shape, Slice's starts/ends, ...) read them from
// ctx.values and fail when they are not compile-time constants.
//
// Elements are copied through the tensors' storage (`f` or `i`), so no value is ever converted.
#include "compiler/ops/OpSemantics.h"
#include "compiler/ops/OpUtil.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace kiln::ops {
namespace {

// ---------------------------------------------------------------------------------------------
// Helpers

void checkSupported(const std::string &op, const TensorType &t, const std::string &what) {
  check(t.dtype != DType::String, op + ": string tensors are not supported (input " + what + ")");
  check(t.dtype != DType::Undefined, op + ": input " + what + " is required");
}

template <typename ShapeFnT> std::vector<TensorType> shapeOf(ShapeFnT fn, const EvalContext &ctx) {
  return fn(shapeContextOf(ctx));
}

// The constant value of input k, which the shape function needs.
const Tensor &constInput(const ShapeContext &ctx, size_t k, const std::string &op, const std::string &what) {
  check(ctx.present(k), op + ": input '" + what + "' is required");
  const Tensor *v = k < ctx.values.size() ? ctx.values[k] : nullptr;
  check(v != nullptr, op + ": the '" + what + "' input must be a compile-time constant");
  return *v;
}

// An integer tensor of rank <= 1 as a list (shape, starts, pads, repeats, ...).
std::vector<int64_t> intList(const Tensor &t, const std::string &op, const std::string &what) {
  check(isInteger(t.dtype), op + ": input '" + what + "' must be an integer tensor, got " + dtypeName(t.dtype));
  check(t.rank() <= 1, op + ": input '" + what + "' must be 1-D, got shape " + shapeString(t.shape));
  return t.toInts();
}

// A scalar (or one-element) tensor's value.
double scalarOf(const Tensor &t, const std::string &op, const std::string &what) {
  check(t.size() == 1, op + ": input '" + what + "' must hold exactly one value, got shape " + shapeString(t.shape));
  return t.get(0);
}

void copyElem(Tensor &dst, int64_t di, const Tensor &src, int64_t si) {
  if (dst.isFloating())
    dst.f[di] = src.f[si];
  else
    dst.i[di] = src.i[si];
}

// Same elements, new shape (Identity, Flatten, Reshape, Squeeze, Unsqueeze).
Tensor withShape(const Tensor &src, const Shape &shape) {
  Tensor r = src;
  r.shape = shape;
  return r;
}

// Calls fn(flatIndex, coords) for every element of `shape` in row-major order.
template <typename Fn> void forEachCoord(const Shape &shape, Fn fn) {
  int64_t total = numElements(shape);
  std::vector<int64_t> c(shape.size(), 0);
  for (int64_t idx = 0; idx < total; ++idx) {
    fn(idx, c);
    for (size_t k = shape.size(); k-- > 0;) {
      if (++c[k] < shape[k]) break;
      c[k] = 0;
    }
  }
}

// `axis` in [-rank, rank) → [0, rank), failing with the op's name otherwise.
int64_t axisOf(const std::string &op, int64_t axis, int64_t rank, const std::string &what = "axis") {
  check(axis >= -rank && axis < rank,
        op + ": " + what + " " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

// Limits on shapes built from operand values (Reshape's shape, Tile's repeats, pads, ...), so
// that no later size computation can overflow int64.
constexpr int64_t kMaxDim = int64_t{1} << 50;

// Fails unless every dim of `s` is in [0, kMaxDim] and the element count is at most kMaxDim.
void checkDims(const std::string &op, const Shape &s) {
  int64_t n = 1;
  for (int64_t d : s) {
    check(d >= 0, op + ": negative dimension in result shape " + listString(s));
    check(d <= kMaxDim, op + ": result shape " + listString(s) + " is too large");
    if (d == 0) continue;
    // Checked before multiplying: two factors <= 2^50 can overflow int64.
    check(n <= kMaxDim / d, op + ": result shape " + listString(s) + " is too large");
    n *= d;
  }
}

int64_t floorMod(int64_t a, int64_t b) {
  int64_t m = a % b;
  return m < 0 ? m + b : m;
}

// ---------------------------------------------------------------------------------------------
// Identity, Dropout

std::vector<TensorType> identityShape(const ShapeContext &ctx) {
  checkSupported("Identity", ctx.present(0) ? ctx.inputs[0] : TensorType{}, "input");
  return {ctx.inputs[0]};
}
std::vector<Tensor> identityEval(const EvalContext &ctx) {
  shapeOf(identityShape, ctx);
  return {ctx.in(0)};
}

// Inference-mode Dropout: Y = X and the optional mask is all true. (The ratio input and the
// old `ratio` attribute only matter in training mode.)
std::vector<TensorType> dropoutShape(const ShapeContext &ctx) {
  checkSupported("Dropout", ctx.present(0) ? ctx.inputs[0] : TensorType{}, "data");
  check(ctx.numOutputs == 1 || ctx.numOutputs == 2,
        "Dropout: expects 1 or 2 outputs, got " + std::to_string(ctx.numOutputs));
  // Training mode is random unless ratio is 0, where it is the identity as well.
  if (ctx.present(2) && ctx.values.size() > 2 && ctx.values[2] &&
      scalarOf(*ctx.values[2], "Dropout", "training_mode") != 0) {
    const Tensor *ratio = ctx.present(1) && ctx.values.size() > 1 ? ctx.values[1] : nullptr;
    check(ratio && scalarOf(*ratio, "Dropout", "ratio") == 0,
          "Dropout: training_mode=true is not supported (inference only, unless ratio is a "
          "constant 0)");
  }
  std::vector<TensorType> r{ctx.inputs[0]};
  if (ctx.numOutputs == 2) r.push_back({DType::Bool, ctx.inputs[0].shape});
  return r;
}
std::vector<Tensor> dropoutEval(const EvalContext &ctx) {
  auto types = shapeOf(dropoutShape, ctx);
  std::vector<Tensor> r{ctx.in(0)};
  if (types.size() == 2) {
    Tensor mask(DType::Bool, types[1].shape);
    std::fill(mask.i.begin(), mask.i.end(), 1);
    r.push_back(mask);
  }
  return r;
}

// ---------------------------------------------------------------------------------------------
// Flatten, Reshape, Squeeze, Unsqueeze: shape changes only.

std::vector<TensorType> flattenShape(const ShapeContext &ctx) {
  checkSupported("Flatten", ctx.present(0) ? ctx.inputs[0] : TensorType{}, "input");
  const Shape &s = ctx.inputs[0].shape;
  int64_t r = static_cast<int64_t>(s.size());
  int64_t axis = ctx.attrs.getInt("axis", 1);
  check(axis >= -r && axis <= r,
        "Flatten: axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(r));
  if (axis < 0) axis += r;
  int64_t outer = numElements(Shape(s.begin(), s.begin() + axis));
  int64_t inner = numElements(Shape(s.begin() + axis, s.end()));
  return {{ctx.inputs[0].dtype, {outer, inner}}};
}
std::vector<Tensor> flattenEval(const EvalContext &ctx) {
  return {withShape(ctx.in(0), shapeOf(flattenShape, ctx)[0].shape)};
}

// Reshape: 0 copies the input dim (unless allowzero=1, where it means size 0); one -1 is
// inferred from the element count.
std::vector<TensorType> reshapeShape(const ShapeContext &ctx) {
  checkSupported("Reshape", ctx.present(0) ? ctx.inputs[0] : TensorType{}, "data");
  const Shape &in = ctx.inputs[0].shape;
  std::vector<int64_t> target = intList(constInput(ctx, 1, "Reshape", "shape"), "Reshape", "shape");
  bool allowZero = ctx.attrs.getInt("allowzero", 0) != 0;
  Shape out(target.size());
  int64_t inferAxis = -1;
  bool hasZero = false;
  for (size_t k = 0; k < target.size(); ++k) {
    int64_t v = target[k];
    if (v == -1) {
      check(inferAxis < 0, "Reshape: shape " + listString(target) + " has more than one -1");
      inferAxis = static_cast<int64_t>(k);
      out[k] = 1;
    } else if (v == 0 && !allowZero) {
      check(k < in.size(), "Reshape: shape " + listString(target) + " has 0 at position " + std::to_string(k) +
                               " but the input " + shapeString(in) + " has only " + std::to_string(in.size()) +
                               " dims to copy");
      out[k] = in[k];
    } else {
      check(v >= 0, "Reshape: invalid dimension " + std::to_string(v) + " in shape " + listString(target));
      hasZero = hasZero || v == 0;
      out[k] = v;
    }
  }
  checkDims("Reshape", out);
  int64_t inSize = numElements(in);
  if (inferAxis >= 0) {
    check(!hasZero, "Reshape: shape " + listString(target) + " cannot contain both 0 and -1 when allowzero=1");
    int64_t known = numElements(out);
    check(known != 0,
          "Reshape: cannot infer the -1 in shape " + listString(target) + " because the other dims have zero elements");
    check(inSize % known == 0, "Reshape: cannot reshape " + shapeString(in) + " (" + std::to_string(inSize) +
                                   " elements) to " + listString(target));
    out[inferAxis] = inSize / known;
  }
  check(numElements(out) == inSize, "Reshape: cannot reshape " + shapeString(in) + " (" + std::to_string(inSize) +
                                        " elements) to " + shapeString(out) + " (" + std::to_string(numElements(out)) +
                                        " elements)");
  return {{ctx.inputs[0].dtype, out}};
}
std::vector<Tensor> reshapeEval(const EvalContext &ctx) {
  return {withShape(ctx.in(0), shapeOf(reshapeShape, ctx)[0].shape)};
}

// Squeeze: removes the listed size-1 axes, or every size-1 axis when `axes` is absent or empty.
std::vector<TensorType> squeezeShape(const ShapeContext &ctx) {
  checkSupported("Squeeze", ctx.present(0) ? ctx.inputs[0] : TensorType{}, "data");
  const Shape &in = ctx.inputs[0].shape;
  int64_t r = static_cast<int64_t>(in.size());
  std::vector<int64_t> axes = ctx.attrs.getInts("axes", {});
  std::vector<bool> drop(in.size(), false);
  if (axes.empty()) {
    for (size_t k = 0; k < in.size(); ++k) drop[k] = in[k] == 1;
  } else {
    for (int64_t a : axes) {
      int64_t n = axisOf("Squeeze", a, r, "axes entry");
      check(in[n] == 1, "Squeeze: cannot squeeze axis " + std::to_string(a) + " of shape " + shapeString(in) +
                            ": its size is " + std::to_string(in[n]) + ", not 1");
      drop[n] = true;
    }
  }
  Shape out;
  for (size_t k = 0; k < in.size(); ++k)
    if (!drop[k]) out.push_back(in[k]);
  return {{ctx.inputs[0].dtype, out}};
}
std::vector<Tensor> squeezeEval(const EvalContext &ctx) {
  return {withShape(ctx.in(0), shapeOf(squeezeShape, ctx)[0].shape)};
}

// Unsqueeze: inserts size-1 axes at the listed positions of the output.
std::vector<TensorType> unsqueezeShape(const ShapeContext &ctx) {
  checkSupported("Unsqueeze", ctx.present(0) ? ctx.inputs[0] : TensorType{}, "data");
  const Shape &in = ctx.inputs[0].shape;
  check(ctx.attrs.has("axes"), "Unsqueeze: 'axes' is required");
  std::vector<int64_t> axes = ctx.attrs.getInts("axes");
  int64_t outRank = static_cast<int64_t>(in.size() + axes.size());
  std::vector<bool> inserted(outRank, false);
  for (int64_t a : axes) {
    int64_t n = axisOf("Unsqueeze", a, outRank, "axes entry");
    check(!inserted[n], "Unsqueeze: axes " + listString(axes) + " repeat an axis");
    inserted[n] = true;
  }
  Shape out;
  size_t next = 0;
  for (int64_t k = 0; k < outRank; ++k) out.push_back(inserted[k] ? 1 : in[next++]);
  return {{ctx.inputs[0].dtype, out}};
}
std::vector<Tensor> unsqueezeEval(const EvalContext &ctx) {
  return {withShape(ctx.in(0), shapeOf(unsqueezeShape, ctx)[0].shape)};
}

// ---------------------------------------------------------------------------------------------
// Transpose

std::vector<int64_t> transposePerm(const ShapeContext &ctx) {
  int64_t r = static_cast<int64_t>(ctx.inputs[0].shape.size());
  std::vector<int64_t> perm;
  for (int64_t k = r - 1; k >= 0; --k) perm.push_back(k);
  perm = ctx.attrs.getInts("perm", perm);
  check(static_cast<int64_t>(perm.size()) == r, "Transpose: perm " + listString(perm) + " has " +
                                                    std::to_string(perm.size()) + " entries but the input has rank " +
                                                    std::to_string(r));
  std::vector<bool> seen(r, false);
  for (int64_t &p : perm) {
    check(p >= -r && p < r && !seen[p < 0 ? p + r : p], "Transpose: perm " + listString(ctx.attrs.getInts("perm", {})) +
                                                            " is not a permutation of 0.." + std::to_string(r - 1));
    if (p < 0) p += r;
    seen[p] = true;
  }
  return perm;
}

std::vector<TensorType> transposeShape(const ShapeContext &ctx) {
  checkSupported("Transpose", ctx.present(0) ? ctx.inputs[0] : TensorType{}, "data");
  std::vector<int64_t> perm = transposePerm(ctx);
  Shape out;
  for (int64_t p : perm) out.push_back(ctx.inputs[0].shape[p]);
  return {{ctx.inputs[0].dtype, out}};
}
std::vector<Tensor> transposeEval(const EvalContext &ctx) {
  ShapeContext sc = shapeContextOf(ctx);
  Shape outShape = transposeShape(sc)[0].shape;
  std::vector<int64_t> perm = transposePerm(sc);
  const Tensor &x = ctx.in(0);
  Shape xs = x.strides();
  Tensor y(x.dtype, outShape);
  forEachCoord(outShape, [&](int64_t idx, const std::vector<int64_t> &c) {
    int64_t src = 0;
    for (size_t k = 0; k < c.size(); ++k) src += c[k] * xs[perm[k]];
    copyElem(y, idx, x, src);
  });
  return {y};
}

// ---------------------------------------------------------------------------------------------
// Concat, Split

std::vector<TensorType> concatShape(const ShapeContext &ctx) {
  check(!ctx.inputs.empty(), "Concat: needs at least one input");
  for (size_t k = 0; k < ctx.inputs.size(); ++k) checkSupported("Concat", ctx.inputs[k], "#" + std::to_string(k));
  const TensorType &first = ctx.inputs[0];
  int64_t r = static_cast<int64_t>(first.shape.size());
  check(r >= 1, "Concat: inputs must have rank >= 1");
  check(ctx.attrs.has("axis"), "Concat: attribute 'axis' is required");
  int64_t axis = axisOf("Concat", ctx.attrs.getInt("axis"), r);
  Shape out = first.shape;
  out[axis] = 0;
  for (size_t k = 0; k < ctx.inputs.size(); ++k) {
    const TensorType &t = ctx.inputs[k];
    check(t.dtype == first.dtype, "Concat: input #" + std::to_string(k) + " has dtype " + dtypeName(t.dtype) +
                                      " but input #0 has " + dtypeName(first.dtype));
    bool same = t.shape.size() == first.shape.size();
    for (int64_t d = 0; same && d < r; ++d) same = d == axis || t.shape[d] == first.shape[d];
    check(same, "Concat: input #" + std::to_string(k) + " has shape " + shapeString(t.shape) +
                    ", incompatible with input #0 " + shapeString(first.shape) + " for concatenation along axis " +
                    std::to_string(axis));
    out[axis] += t.shape[axis];
  }
  return {{first.dtype, out}};
}
std::vector<Tensor> concatEval(const EvalContext &ctx) {
  ShapeContext sc = shapeContextOf(ctx);
  Shape outShape = concatShape(sc)[0].shape;
  int64_t axis = normalizeAxis(ctx.attrs.getInt("axis"), static_cast<int64_t>(outShape.size()));
  Tensor y(ctx.in(0).dtype, outShape);
  int64_t outer = numElements(Shape(outShape.begin(), outShape.begin() + axis));
  int64_t inner = numElements(Shape(outShape.begin() + axis + 1, outShape.end()));
  int64_t dst = 0;
  for (int64_t o = 0; o < outer; ++o)
    for (size_t k = 0; k < ctx.inputs.size(); ++k) {
      const Tensor &x = ctx.in(k);
      int64_t chunk = x.shape[axis] * inner;
      for (int64_t e = 0; e < chunk; ++e) copyElem(y, dst++, x, o * chunk + e);
    }
  return {y};
}

// Split sizes along the axis: attribute `split`, or `num_outputs` / the number of outputs with
// equal chunks (the last one smaller when the axis does not divide evenly, as in opset 18).
std::vector<int64_t> splitSizes(const ShapeContext &ctx, int64_t dim) {
  int64_t n = ctx.numOutputs;
  check(n >= 1, "Split: needs at least one output");
  std::vector<int64_t> split = ctx.attrs.getInts("split", {});
  if (!split.empty()) {
    check(static_cast<int64_t>(split.size()) == n, "Split: split " + listString(split) + " has " +
                                                       std::to_string(split.size()) + " entries but the node has " +
                                                       std::to_string(n) + " outputs");
    int64_t sum = 0;
    for (int64_t s : split) {
      check(s >= 0, "Split: split sizes must be non-negative, got " + listString(split));
      sum += s;
    }
    check(sum == dim, "Split: split " + listString(split) + " sums to " + std::to_string(sum) +
                          " but the axis has size " + std::to_string(dim));
    return split;
  }
  if (ctx.attrs.has("num_outputs"))
    check(ctx.attrs.getInt("num_outputs") == n,
          "Split: num_outputs=" + std::to_string(ctx.attrs.getInt("num_outputs")) + " but the node has " +
              std::to_string(n) + " outputs");
  int64_t chunk = (dim + n - 1) / n;
  int64_t last = dim - chunk * (n - 1);
  check(last >= 0,
        "Split: cannot split an axis of size " + std::to_string(dim) + " into " + std::to_string(n) + " parts");
  std::vector<int64_t> sizes(n, chunk);
  sizes.back() = last;
  return sizes;
}

std::vector<TensorType> splitShape(const ShapeContext &ctx) {
  checkSupported("Split", ctx.present(0) ? ctx.inputs[0] : TensorType{}, "input");
  const TensorType &x = ctx.inputs[0];
  check(!x.shape.empty(), "Split: input must have rank >= 1");
  int64_t axis = axisOf("Split", ctx.attrs.getInt("axis", 0), static_cast<int64_t>(x.shape.size()));
  std::vector<TensorType> r;
  for (int64_t s : splitSizes(ctx, x.shape[axis])) {
    Shape o = x.shape;
    o[axis] = s;
    r.push_back({x.dtype, o});
  }
  return r;
}
std::vector<Tensor> splitEval(const EvalContext &ctx) {
  auto types = shapeOf(splitShape, ctx);
  const Tensor &x = ctx.in(0);
  int64_t axis = normalizeAxis(ctx.attrs.getInt("axis", 0), x.rank());
  int64_t outer = numElements(Shape(x.shape.begin(), x.shape.begin() + axis));
  int64_t inner = numElements(Shape(x.shape.begin() + axis + 1, x.shape.end()));
  int64_t rowLen = x.shape[axis] * inner;
  std::vector<Tensor> r;
  int64_t begin = 0;  // offset of this part within a row
  for (auto &t : types) {
    Tensor y(x.dtype, t.shape);
    int64_t chunk = t.shape[axis] * inner;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t e = 0; e < chunk; ++e) copyElem(y, o * chunk + e, x, o * rowLen + begin + e);
    begin += chunk;
    r.push_back(std::move(y));
  }
  return r;
}

// ---------------------------------------------------------------------------------------------
// Slice: per axis, the elements start, start + step, ... before end, after ONNX's clamping.

struct SliceAxis {
  int64_t start = 0, step = 1, count = 0;
};

std::vector<SliceAxis> sliceParams(const ShapeContext &ctx) {
  const Shape &in = ctx.inputs[0].shape;
  int64_t r = static_cast<int64_t>(in.size());
  std::vector<int64_t> starts = intList(constInput(ctx, 1, "Slice", "starts"), "Slice", "starts");
  std::vector<int64_t> ends = intList(constInput(ctx, 2, "Slice", "ends"), "Slice", "ends");
  check(starts.size() == ends.size(),
        "Slice: starts has " + std::to_string(starts.size()) + " values but ends has " + std::to_string(ends.size()));
  size_t n = starts.size();
  std::vector<int64_t> axes, steps(n, 1);
  for (size_t k = 0; k < n; ++k) axes.push_back(static_cast<int64_t>(k));
  if (ctx.present(3)) axes = intList(constInput(ctx, 3, "Slice", "axes"), "Slice", "axes");
  if (ctx.present(4)) steps = intList(constInput(ctx, 4, "Slice", "steps"), "Slice", "steps");
  check(axes.size() == n,
        "Slice: axes has " + std::to_string(axes.size()) + " values but starts has " + std::to_string(n));
  check(steps.size() == n,
        "Slice: steps has " + std::to_string(steps.size()) + " values but starts has " + std::to_string(n));
  std::vector<SliceAxis> p(r);
  for (int64_t d = 0; d < r; ++d) p[d].count = in[d];
  std::vector<bool> seen(r, false);
  for (size_t k = 0; k < n; ++k) {
    int64_t a = axisOf("Slice", axes[k], r, "axes entry");
    check(!seen[a], "Slice: axes " + listString(axes) + " repeat an axis");
    seen[a] = true;
    int64_t dim = in[a], step = steps[k];
    check(step != 0, "Slice: steps must be non-zero");
    int64_t s = starts[k], e = ends[k];
    if (s < 0) s += dim;
    if (e < 0) e += dim;
    int64_t count;
    if (step > 0) {
      s = std::max<int64_t>(0, std::min(s, dim));
      e = std::max<int64_t>(0, std::min(e, dim));
      count = e > s ? 1 + (e - s - 1) / step : 0;
    } else {
      s = std::max<int64_t>(0, std::min(s, dim - 1));
      e = std::max<int64_t>(-1, std::min(e, dim - 1));
      int64_t mag = step == std::numeric_limits<int64_t>::min() ? std::numeric_limits<int64_t>::max() : -step;
      count = dim > 0 && s > e ? 1 + (s - e - 1) / mag : 0;
    }
    p[a] = {s, step, count};
  }
  return p;
}

std::vector<TensorType> sliceShape(const ShapeContext &ctx) {
  checkSupported("Slice", ctx.present(0) ? ctx.inputs[0] : TensorType{}, "data");
  Shape out;
  for (auto &a : sliceParams(ctx)) out.push_back(a.count);
  return {{ctx.inputs[0].dtype, out}};
}
std::vector<Tensor> sliceEval(const EvalContext &ctx) {
  ShapeContext sc = shapeContextOf(ctx);
  Shape outShape = sliceShape(sc)[0].shape;
  std::vector<SliceAxis> p = sliceParams(sc);
  const Tensor &x = ctx.in(0);
  Shape xs = x.strides();
  Tensor y(x.dtype, outShape);
  forEachCoord(outShape, [&](int64_t idx, const std::vector<int64_t> &c) {
    int64_t src = 0;
    for (size_t k = 0; k < c.size(); ++k) src += (p[k].start + c[k] * p[k].step) * xs[k];
    copyElem(y, idx, x, src);
  });
  return {y};
}

// ---------------------------------------------------------------------------------------------
// Gather, GatherElements

void checkIndices(const std::string &op, const TensorType &t) {
  check(t.dtype == DType::I32 || t.dtype == DType::I64,
        op + ": indices must be int32 or int64, got " + dtypeName(t.dtype));
}

// Index value `v` into an axis of size `dim`, negative values counting from the end.
int64_t resolveIndex(const std::string &op, int64_t v, int64_t dim) {
  check(v >= -dim && v < dim,
        op + ": index " + std::to_string(v) + " is out of range for an axis of size " + std::to_string(dim));
  return v < 0 ? v + dim : v;
}

std::vector<TensorType> gatherShape(const ShapeContext &ctx) {
  checkSupported("Gather", ctx.present(0) ? ctx.inputs[0] : TensorType{}, "data");
  check(ctx.present(1), "Gather: input 'indices' is required");
  checkIndices("Gather", ctx.inputs[1]);
  const Shape &d = ctx.inputs[0].shape;
  check(!d.empty(), "Gather: data must have rank >= 1");
  int64_t axis = axisOf("Gather", ctx.attrs.getInt("axis", 0), static_cast<int64_t>(d.size()));
  if (ctx.values.size() > 1 && ctx.values[1])
    for (int64_t v : ctx.values[1]->i) resolveIndex("Gather", v, d[axis]);
  Shape out(d.begin(), d.begin() + axis);
  out.insert(out.end(), ctx.inputs[1].shape.begin(), ctx.inputs[1].shape.end());
  out.insert(out.end(), d.begin() + axis + 1, d.end());
  return {{ctx.inputs[0].dtype, out}};
}
std::vector<Tensor> gatherEval(const EvalContext &ctx) {
  Shape outShape = shapeOf(gatherShape, ctx)[0].shape;
  const Tensor &x = ctx.in(0), &ind = ctx.in(1);
  int64_t axis = normalizeAxis(ctx.attrs.getInt("axis", 0), x.rank());
  int64_t outer = numElements(Shape(x.shape.begin(), x.shape.begin() + axis));
  int64_t inner = numElements(Shape(x.shape.begin() + axis + 1, x.shape.end()));
  int64_t dim = x.shape[axis];
  Tensor y(x.dtype, outShape);
  int64_t dst = 0;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < ind.size(); ++j) {
      int64_t idx = resolveIndex("Gather", ind.i[j], dim);
      for (int64_t e = 0; e < inner; ++e) copyElem(y, dst++, x, (o * dim + idx) * inner + e);
    }
  return {y};
}

std::vector<TensorType> gatherElementsShape(const ShapeContext &ctx) {
  checkSupported("GatherElements", ctx.present(0) ? ctx.inputs[0] : TensorType{}, "data");
  check(ctx.present(1), "GatherElements: input 'indices' is required");
  checkIndices("GatherElements", ctx.inputs[1]);
  const Shape &d = ctx.inputs[0].shape, &i = ctx.inputs[1].shape;
  check(!d.empty(), "GatherElements: data must have rank >= 1");
  check(i.size() == d.size(),
        "GatherElements: indices " + shapeString(i) + " must have the same rank as data " + shapeString(d));
  int64_t axis = axisOf("GatherElements", ctx.attrs.getInt("axis", 0), static_cast<int64_t>(d.size()));
  for (size_t k = 0; k < d.size(); ++k)
    check(static_cast<int64_t>(k) == axis || i[k] <= d[k], "GatherElements: indices " + shapeString(i) +
                                                               " are larger than data " + shapeString(d) +
                                                               " along axis " + std::to_string(k));
  if (ctx.values.size() > 1 && ctx.values[1])
    for (int64_t v : ctx.values[1]->i) resolveIndex("GatherElements", v, d[axis]);
  return {{ctx.inputs[0].dtype, i}};
}
std::vector<Tensor> gatherElementsEval(const EvalContext &ctx) {
  Shape outShape = shapeOf(gatherElementsShape, ctx)[0].shape;
  const Tensor &x = ctx.in(0), &ind = ctx.in(1);
  int64_t axis = normalizeAxis(ctx.attrs.getInt("axis", 0), x.rank());
  Shape xs = x.strides();
  Tensor y(x.dtype, outShape);
  forEachCoord(outShape, [&](int64_t idx, const std::vector<int64_t> &c) {
    int64_t src = 0;
    for (size_t k = 0; k < c.size(); ++k) {
      int64_t v = static_cast<int64_t>(k) == axis ? resolveIndex("GatherElements", ind.i[idx], x.shape[k]) : c[k];
      src += v * xs[k];
    }
    copyElem(y, idx, x, src);
  });
  return {y};
}

// ---------------------------------------------------------------------------------------------
// Expand, Tile

std::vector<TensorType> expandShape(const ShapeContext &ctx) {
  checkSupported("Expand", ctx.present(0) ? ctx.inputs[0] : TensorType{}, "input");
  std::vector<int64_t> shape = intList(constInput(ctx, 1, "Expand", "shape"), "Expand", "shape");
  for (int64_t d : shape) check(d >= 0, "Expand: shape " + listString(shape) + " has a negative dimension");
  checkDims("Expand", shape);
  Shape out;
  try {
    out = broadcastShapes({ctx.inputs[0].shape, shape});
  } catch (const OpError &e) {
    fail(std::string("Expand: ") + e.what());
  }
  checkDims("Expand", out);
  return {{ctx.inputs[0].dtype, out}};
}
std::vector<Tensor> expandEval(const EvalContext &ctx) {
  Shape outShape = shapeOf(expandShape, ctx)[0].shape;
  const Tensor &x = ctx.in(0);
  Tensor y(x.dtype, outShape);
  for (int64_t e = 0; e < y.size(); ++e) copyElem(y, e, x, broadcastIndex(x.shape, outShape, e));
  return {y};
}

std::vector<TensorType> tileShape(const ShapeContext &ctx) {
  checkSupported("Tile", ctx.present(0) ? ctx.inputs[0] : TensorType{}, "input");
  const Shape &in = ctx.inputs[0].shape;
  std::vector<int64_t> reps = intList(constInput(ctx, 1, "Tile", "repeats"), "Tile", "repeats");
  check(reps.size() == in.size(), "Tile: repeats " + listString(reps) + " has " + std::to_string(reps.size()) +
                                      " values but the input has rank " + std::to_string(in.size()));
  Shape out(in.size());
  for (size_t k = 0; k < in.size(); ++k) {
    check(reps[k] >= 0, "Tile: repeats must be non-negative, got " + listString(reps));
    check(reps[k] <= kMaxDim && (reps[k] == 0 || in[k] <= kMaxDim / reps[k]),
          "Tile: repeats " + listString(reps) + " make the result too large");
    out[k] = in[k] * reps[k];
  }
  checkDims("Tile", out);
  return {{ctx.inputs[0].dtype, out}};
}
std::vector<Tensor> tileEval(const EvalContext &ctx) {
  Shape outShape = shapeOf(tileShape, ctx)[0].shape;
  const Tensor &x = ctx.in(0);
  Shape xs = x.strides();
  Tensor y(x.dtype, outShape);
  forEachCoord(outShape, [&](int64_t idx, const std::vector<int64_t> &c) {
    int64_t src = 0;
    for (size_t k = 0; k < c.size(); ++k) src += (c[k] % x.shape[k]) * xs[k];
    copyElem(y, idx, x, src);
  });
  return {y};
}

// ---------------------------------------------------------------------------------------------
// Pad. Negative pads crop. For reflect/edge/wrap, cropping happens first and the remaining
// region is then padded (so the padding reflects/repeats the kept elements).

struct PadAxis {
  int64_t before = 0, after = 0;
};

std::vector<PadAxis> padParams(const ShapeContext &ctx) {
  const Shape &in = ctx.inputs[0].shape;
  int64_t r = static_cast<int64_t>(in.size());
  std::vector<int64_t> pads = intList(constInput(ctx, 1, "Pad", "pads"), "Pad", "pads");
  std::vector<int64_t> axes;
  if (ctx.present(3)) {
    axes = intList(constInput(ctx, 3, "Pad", "axes"), "Pad", "axes");
  } else {
    for (int64_t k = 0; k < r; ++k) axes.push_back(k);
  }
  size_t n = axes.size();
  check(pads.size() == 2 * n, "Pad: pads " + listString(pads) + " has " + std::to_string(pads.size()) +
                                  " values, expected " + std::to_string(2 * n) + " (begin and end for each of " +
                                  std::to_string(n) + " axes)");
  std::vector<PadAxis> p(r);
  std::vector<bool> seen(r, false);
  for (size_t k = 0; k < n; ++k) {
    int64_t a = axisOf("Pad", axes[k], r, "axes entry");
    check(!seen[a], "Pad: axes " + listString(axes) + " repeat an axis");
    seen[a] = true;
    p[a] = {pads[k], pads[k + n]};
    check(pads[k] >= -kMaxDim && pads[k] <= kMaxDim && pads[k + n] >= -kMaxDim && pads[k + n] <= kMaxDim &&
              in[a] <= kMaxDim,
          "Pad: pads " + listString(pads) + " are too large");
    check(in[a] + pads[k] + pads[k + n] >= 0, "Pad: pads " + listString(pads) + " crop more than the whole axis " +
                                                  std::to_string(a) + " of shape " + shapeString(in));
  }
  return p;
}

std::string padMode(const Attrs &attrs) {
  std::string mode = attrs.getString("mode", "constant");
  check(mode == "constant" || mode == "reflect" || mode == "edge" || mode == "wrap",
        "Pad: unknown mode '" + mode + "' (expected constant, reflect, edge or wrap)");
  return mode;
}

std::vector<TensorType> padShape(const ShapeContext &ctx) {
  checkSupported("Pad", ctx.present(0) ? ctx.inputs[0] : TensorType{}, "data");
  std::string mode = padMode(ctx.attrs);
  if (ctx.present(2))
    check(ctx.inputs[2].dtype == ctx.inputs[0].dtype, "Pad: constant_value has dtype " +
                                                          std::string(dtypeName(ctx.inputs[2].dtype)) +
                                                          " but data has " + dtypeName(ctx.inputs[0].dtype));
  const Shape &in = ctx.inputs[0].shape;
  std::vector<PadAxis> p = padParams(ctx);
  Shape out(in.size());
  for (size_t k = 0; k < in.size(); ++k) {
    out[k] = in[k] + p[k].before + p[k].after;
    int64_t kept = in[k] - std::max<int64_t>(0, -p[k].before) - std::max<int64_t>(0, -p[k].after);
    bool grows = p[k].before > 0 || p[k].after > 0;
    check(mode == "constant" || !grows || kept > 0,
          "Pad: " + mode + " mode cannot pad axis " + std::to_string(k) + ", which has no elements left to copy from");
  }
  checkDims("Pad", out);
  return {{ctx.inputs[0].dtype, out}};
}
std::vector<Tensor> padEval(const EvalContext &ctx) {
  ShapeContext sc = shapeContextOf(ctx);
  Shape outShape = padShape(sc)[0].shape;
  std::vector<PadAxis> p = padParams(sc);
  std::string mode = padMode(ctx.attrs);
  const Tensor &x = ctx.in(0);
  Shape xs = x.strides();
  Tensor fill(x.dtype, {1});
  if (ctx.present(2) && ctx.in(2).size() > 0) {
    check(ctx.in(2).size() == 1, "Pad: constant_value must hold one value, got shape " + shapeString(ctx.in(2).shape));
    copyElem(fill, 0, ctx.in(2), 0);
  }
  Tensor y(x.dtype, outShape);
  forEachCoord(outShape, [&](int64_t idx, const std::vector<int64_t> &c) {
    int64_t src = 0;
    for (size_t k = 0; k < c.size() && src >= 0; ++k) {
      int64_t dim = x.shape[k];
      int64_t i = c[k] - p[k].before;  // coordinate in the input
      if (mode == "constant") {
        if (i < 0 || i >= dim) src = -1;
      } else if (i < 0 || i >= dim || p[k].before < 0 || p[k].after < 0) {
        int64_t lo = std::max<int64_t>(0, -p[k].before);
        int64_t len = dim - lo - std::max<int64_t>(0, -p[k].after);  // the kept elements
        int64_t j = i - lo;
        if (mode == "edge") {
          j = std::max<int64_t>(0, std::min(j, len - 1));
        } else if (mode == "wrap") {
          j = floorMod(j, len);
        } else if (len == 1) {  // reflect of a single element repeats it
          j = 0;
        } else {
          int64_t period = 2 * (len - 1);
          j = floorMod(j, period);
          if (j >= len) j = period - j;
        }
        i = j + lo;
      }
      if (src >= 0) src += i * xs[k];
    }
    if (src < 0)
      copyElem(y, idx, fill, 0);
    else
      copyElem(y, idx, x, src);
  });
  return {y};
}

// ---------------------------------------------------------------------------------------------
// Shape, Size: computed from the input's (static) shape alone.

std::pair<int64_t, int64_t> shapeRange(const ShapeContext &ctx) {
  int64_t r = static_cast<int64_t>(ctx.inputs[0].shape.size());
  auto clampDim = [r](int64_t v) {
    if (v < 0) v += r;
    return std::max<int64_t>(0, std::min(v, r));
  };
  int64_t start = clampDim(ctx.attrs.getInt("start", 0));
  int64_t end = clampDim(ctx.attrs.getInt("end", r));
  return {start, std::max(start, end)};
}

std::vector<TensorType> shapeShape(const ShapeContext &ctx) {
  check(ctx.present(0), "Shape: input 'data' is required");
  auto [start, end] = shapeRange(ctx);
  return {{DType::I64, {end - start}}};
}
std::vector<Tensor> shapeEval(const EvalContext &ctx) {
  const Tensor &x = ctx.in(0);
  ShapeContext sc{{{x.dtype, x.shape}}, {nullptr}, ctx.attrs, ctx.numOutputs};
  auto [start, end] = shapeRange(sc);
  return {Tensor::fromInts(DType::I64, {end - start},
                           std::vector<int64_t>(x.shape.begin() + start, x.shape.begin() + end))};
}

std::vector<TensorType> sizeShape(const ShapeContext &ctx) {
  check(ctx.present(0), "Size: input 'data' is required");
  return {{DType::I64, {}}};
}
std::vector<Tensor> sizeEval(const EvalContext &ctx) {
  Tensor r(DType::I64, {});
  r.i[0] = ctx.in(0).size();
  return {r};
}

// ---------------------------------------------------------------------------------------------
// ConstantOfShape, Range, EyeLike, OneHot

Tensor constantOfShapeValue(const Attrs &attrs) {
  const Tensor *v = attrs.getTensor("value");
  if (!v) return Tensor(DType::F32, {1});
  check(v->size() == 1, "ConstantOfShape: attribute 'value' must hold one element, got shape " + shapeString(v->shape));
  check(v->dtype != DType::String, "ConstantOfShape: string values are not supported");
  return *v;
}

std::vector<TensorType> constantOfShapeShape(const ShapeContext &ctx) {
  std::vector<int64_t> shape = intList(constInput(ctx, 0, "ConstantOfShape", "shape"), "ConstantOfShape", "shape");
  for (int64_t d : shape) check(d >= 0, "ConstantOfShape: shape " + listString(shape) + " has a negative dimension");
  checkDims("ConstantOfShape", shape);
  return {{constantOfShapeValue(ctx.attrs).dtype, shape}};
}
std::vector<Tensor> constantOfShapeEval(const EvalContext &ctx) {
  Shape outShape = shapeOf(constantOfShapeShape, ctx)[0].shape;
  Tensor v = constantOfShapeValue(ctx.attrs);
  Tensor y(v.dtype, outShape);
  for (int64_t e = 0; e < y.size(); ++e) copyElem(y, e, v, 0);
  return {y};
}

// Range: max(ceil((limit - start) / delta), 0) elements start + k * delta. The count is
// computed in the operands' precision so float32 ranges have the length a float32 kernel gives.
int64_t rangeCount(const Tensor &start, const Tensor &limit, const Tensor &delta) {
  DType t = start.dtype;
  if (isFloat(t)) {
    double d = delta.f[0];
    check(d != 0, "Range: delta must be non-zero");
    double q = roundTo(t, roundTo(t, limit.f[0] - start.f[0]) / d);
    check(std::isfinite(q), "Range: the number of elements is not finite");
    if (q > 9.0e18) return std::numeric_limits<int64_t>::max();  // rejected by checkDims
    return std::max<int64_t>(0, static_cast<int64_t>(std::ceil(q)));
  }
  int64_t s = start.i[0], l = limit.i[0], d = delta.i[0];
  check(d != 0, "Range: delta must be non-zero");
  // Widen to avoid overflow in limit - start for int64 ranges.
  long double diff = static_cast<long double>(l) - static_cast<long double>(s);
  long double q = std::ceil(diff / static_cast<long double>(d));
  if (q > 9.0e18L) return std::numeric_limits<int64_t>::max();  // rejected by checkDims
  return q <= 0 ? 0 : static_cast<int64_t>(q);
}

std::vector<TensorType> rangeShape(const ShapeContext &ctx) {
  const char *names[3] = {"start", "limit", "delta"};
  const Tensor *v[3];
  for (int k = 0; k < 3; ++k) {
    v[k] = &constInput(ctx, k, "Range", names[k]);
    check(v[k]->size() == 1,
          std::string("Range: '") + names[k] + "' must be a scalar, got shape " + shapeString(v[k]->shape));
  }
  DType t = v[0]->dtype;
  check(t == DType::F32 || t == DType::F64 || t == DType::I16 || t == DType::I32 || t == DType::I64,
        std::string("Range: unsupported dtype ") + dtypeName(t) + " (expected float, double, int16, int32 or int64)");
  check(v[1]->dtype == t && v[2]->dtype == t, "Range: start, limit and delta must have the same dtype");
  Shape out{rangeCount(*v[0], *v[1], *v[2])};
  checkDims("Range", out);
  return {{t, out}};
}
std::vector<Tensor> rangeEval(const EvalContext &ctx) {
  Shape outShape = shapeOf(rangeShape, ctx)[0].shape;
  const Tensor &start = ctx.in(0), &delta = ctx.in(2);
  Tensor y(start.dtype, outShape);
  for (int64_t k = 0; k < y.size(); ++k) {
    if (y.isFloating())
      y.set(k, start.f[0] + static_cast<double>(k) * delta.f[0]);
    else
      y.setInt(k, static_cast<int64_t>(static_cast<uint64_t>(start.i[0]) +
                                       static_cast<uint64_t>(k) * static_cast<uint64_t>(delta.i[0])));
  }
  return {y};
}

DType eyeLikeDType(const ShapeContext &ctx) {
  if (!ctx.attrs.has("dtype")) return ctx.inputs[0].dtype;
  DType t = static_cast<DType>(ctx.attrs.getInt("dtype"));
  check(isFloat(t) || isInteger(t) || t == DType::Bool,
        "EyeLike: unsupported dtype " + std::to_string(ctx.attrs.getInt("dtype")));
  return t;
}
std::vector<TensorType> eyeLikeShape(const ShapeContext &ctx) {
  checkSupported("EyeLike", ctx.present(0) ? ctx.inputs[0] : TensorType{}, "input");
  check(ctx.inputs[0].shape.size() == 2, "EyeLike: input must be 2-D, got shape " + shapeString(ctx.inputs[0].shape));
  return {{eyeLikeDType(ctx), ctx.inputs[0].shape}};
}
std::vector<Tensor> eyeLikeEval(const EvalContext &ctx) {
  auto t = shapeOf(eyeLikeShape, ctx)[0];
  int64_t k = ctx.attrs.getInt("k", 0);
  Tensor y(t.dtype, t.shape);
  for (int64_t r = 0; r < t.shape[0]; ++r) {
    int64_t c = r + k;
    if (c >= 0 && c < t.shape[1]) y.setInt(r * t.shape[1] + c, 1);
  }
  return {y};
}

// OneHot: output[..., j, ...] = (j == index) ? on : off, with j on the new axis `axis`.
std::vector<TensorType> oneHotShape(const ShapeContext &ctx) {
  check(ctx.present(0), "OneHot: input 'indices' is required");
  check(isFloat(ctx.inputs[0].dtype) || isInteger(ctx.inputs[0].dtype),
        std::string("OneHot: indices must be numeric, got ") + dtypeName(ctx.inputs[0].dtype));
  const Tensor &depthT = constInput(ctx, 1, "OneHot", "depth");
  check(isFloat(depthT.dtype) || isInteger(depthT.dtype), "OneHot: depth must be numeric");
  double depthV = scalarOf(depthT, "OneHot", "depth");
  check(depthV >= 1 && depthV <= static_cast<double>(kMaxDim),
        "OneHot: depth must be positive (and not huge), got " + std::to_string(depthV));
  int64_t depth = static_cast<int64_t>(depthV);
  check(ctx.present(2), "OneHot: input 'values' is required");
  checkSupported("OneHot", ctx.inputs[2], "values");
  check(numElements(ctx.inputs[2].shape) == 2,
        "OneHot: values must hold [off_value, on_value], got shape " + shapeString(ctx.inputs[2].shape));
  Shape out = ctx.inputs[0].shape;
  int64_t r = static_cast<int64_t>(out.size()) + 1;
  int64_t axis = axisOf("OneHot", ctx.attrs.getInt("axis", -1), r);
  out.insert(out.begin() + axis, depth);
  checkDims("OneHot", out);
  return {{ctx.inputs[2].dtype, out}};
}
std::vector<Tensor> oneHotEval(const EvalContext &ctx) {
  auto t = shapeOf(oneHotShape, ctx)[0];
  const Tensor &ind = ctx.in(0), &values = ctx.in(2);
  int64_t axis = normalizeAxis(ctx.attrs.getInt("axis", -1), static_cast<int64_t>(t.shape.size()));
  int64_t depth = t.shape[axis];
  int64_t outer = numElements(Shape(t.shape.begin(), t.shape.begin() + axis));
  int64_t inner = numElements(Shape(t.shape.begin() + axis + 1, t.shape.end()));
  Tensor y(t.dtype, t.shape);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < depth; ++j)
      for (int64_t e = 0; e < inner; ++e) {
        double raw = ind.get(o * inner + e);
        // Non-integer indices are truncated; out-of-range ones give an all-off row.
        int64_t idx = -1;
        if (raw > -static_cast<double>(depth) - 1 && raw < static_cast<double>(depth)) {
          idx = static_cast<int64_t>(raw);
          if (idx < 0) idx += depth;
        }
        copyElem(y, (o * depth + j) * inner + e, values, idx == j ? 1 : 0);
      }
  return {y};
}

// ---------------------------------------------------------------------------------------------
// Trilu, CumSum

std::vector<TensorType> triluShape(const ShapeContext &ctx) {
  checkSupported("Trilu", ctx.present(0) ? ctx.inputs[0] : TensorType{}, "input");
  check(ctx.inputs[0].shape.size() >= 2,
        "Trilu: input must have rank >= 2, got shape " + shapeString(ctx.inputs[0].shape));
  if (ctx.present(1))
    check(isInteger(ctx.inputs[1].dtype) && numElements(ctx.inputs[1].shape) == 1,
          "Trilu: k must be an integer scalar");
  return {ctx.inputs[0]};
}
std::vector<Tensor> triluEval(const EvalContext &ctx) {
  shapeOf(triluShape, ctx);
  const Tensor &x = ctx.in(0);
  int64_t k = ctx.present(1) ? ctx.in(1).getInt(0) : 0;
  bool upper = ctx.attrs.getInt("upper", 1) != 0;
  int64_t rows = x.shape[x.rank() - 2], cols = x.shape[x.rank() - 1];
  Tensor y(x.dtype, x.shape);  // zero-filled
  for (int64_t e = 0; e < x.size(); ++e) {
    int64_t c = e % cols, r = (e / cols) % rows;
    bool keep = upper ? (c - r >= k) : (c - r <= k);
    if (keep) copyElem(y, e, x, e);
  }
  return {y};
}

// CumSum's axis is an input; the result shape does not depend on it, so it is only validated
// here when it is known.
int64_t cumsumAxis(const Tensor &axisT, int64_t rank) {
  check(axisT.dtype == DType::I32 || axisT.dtype == DType::I64, "CumSum: axis must be int32 or int64");
  check(axisT.size() == 1, "CumSum: axis must be a scalar, got shape " + shapeString(axisT.shape));
  return axisOf("CumSum", axisT.i[0], rank);
}
std::vector<TensorType> cumsumShape(const ShapeContext &ctx) {
  check(ctx.present(0), "CumSum: input 'x' is required");
  const TensorType &x = ctx.inputs[0];
  check(isFloat(x.dtype) || isInteger(x.dtype), std::string("CumSum: x must be numeric, got ") + dtypeName(x.dtype));
  check(ctx.present(1), "CumSum: input 'axis' is required");
  if (ctx.values.size() > 1 && ctx.values[1]) cumsumAxis(*ctx.values[1], static_cast<int64_t>(x.shape.size()));
  return {x};
}
std::vector<Tensor> cumsumEval(const EvalContext &ctx) {
  shapeOf(cumsumShape, ctx);
  const Tensor &x = ctx.in(0);
  int64_t axis = cumsumAxis(ctx.in(1), x.rank());
  bool exclusive = ctx.attrs.getInt("exclusive", 0) != 0;
  bool reverse = ctx.attrs.getInt("reverse", 0) != 0;
  int64_t dim = x.shape[axis];
  int64_t inner = numElements(Shape(x.shape.begin() + axis + 1, x.shape.end()));
  int64_t outer = dim * inner == 0 ? 0 : x.size() / (dim * inner);
  Tensor y(x.dtype, x.shape);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t e = 0; e < inner; ++e) {
      double facc = 0.0;
      uint64_t iacc = 0;  // wraps like an integer kernel
      for (int64_t s = 0; s < dim; ++s) {
        int64_t j = reverse ? dim - 1 - s : s;
        int64_t idx = (o * dim + j) * inner + e;
        if (!exclusive) {
          if (x.isFloating())
            facc += x.f[idx];
          else
            iacc += static_cast<uint64_t>(x.i[idx]);
        }
        if (x.isFloating())
          y.set(idx, facc);
        else
          y.setInt(idx, static_cast<int64_t>(iacc));
        if (exclusive) {
          if (x.isFloating())
            facc += x.f[idx];
          else
            iacc += static_cast<uint64_t>(x.i[idx]);
        }
      }
    }
  return {y};
}
int64_t cumsumFlops(const ShapeContext &ctx, const std::vector<TensorType> &) {
  return numElements(ctx.inputs[0].shape);
}

// ---------------------------------------------------------------------------------------------
// DepthToSpace, SpaceToDepth (4-D, NCHW)

int64_t blockSize(const std::string &op, const Attrs &attrs) {
  check(attrs.has("blocksize"), op + ": attribute 'blocksize' is required");
  int64_t b = attrs.getInt("blocksize");
  check(b >= 1, op + ": blocksize must be >= 1, got " + std::to_string(b));
  return b;
}

std::vector<TensorType> depthToSpaceShape(const ShapeContext &ctx) {
  checkSupported("DepthToSpace", ctx.present(0) ? ctx.inputs[0] : TensorType{}, "input");
  const Shape &s = ctx.inputs[0].shape;
  check(s.size() == 4, "DepthToSpace: input must be 4-D (N, C, H, W), got shape " + shapeString(s));
  int64_t b = blockSize("DepthToSpace", ctx.attrs);
  std::string mode = ctx.attrs.getString("mode", "DCR");
  check(mode == "DCR" || mode == "CRD", "DepthToSpace: mode must be DCR or CRD, got '" + mode + "'");
  check(s[1] % (b * b) == 0, "DepthToSpace: channels (" + std::to_string(s[1]) +
                                 ") must be divisible by blocksize^2 (" + std::to_string(b * b) + ")");
  return {{ctx.inputs[0].dtype, {s[0], s[1] / (b * b), s[2] * b, s[3] * b}}};
}
std::vector<Tensor> depthToSpaceEval(const EvalContext &ctx) {
  Shape o = shapeOf(depthToSpaceShape, ctx)[0].shape;
  const Tensor &x = ctx.in(0);
  int64_t b = blockSize("DepthToSpace", ctx.attrs);
  bool dcr = ctx.attrs.getString("mode", "DCR") == "DCR";
  int64_t C = x.shape[1], H = x.shape[2], W = x.shape[3], Co = o[1];
  Tensor y(x.dtype, o);
  forEachCoord(o, [&](int64_t idx, const std::vector<int64_t> &c) {
    int64_t h = c[2] / b, i = c[2] % b, w = c[3] / b, j = c[3] % b;
    // DCR: depth is (blockRow, blockCol, channel); CRD: (channel, blockRow, blockCol).
    int64_t ch = dcr ? (i * b + j) * Co + c[1] : c[1] * b * b + i * b + j;
    copyElem(y, idx, x, ((c[0] * C + ch) * H + h) * W + w);
  });
  return {y};
}

std::vector<TensorType> spaceToDepthShape(const ShapeContext &ctx) {
  checkSupported("SpaceToDepth", ctx.present(0) ? ctx.inputs[0] : TensorType{}, "input");
  const Shape &s = ctx.inputs[0].shape;
  check(s.size() == 4, "SpaceToDepth: input must be 4-D (N, C, H, W), got shape " + shapeString(s));
  int64_t b = blockSize("SpaceToDepth", ctx.attrs);
  check(s[2] % b == 0 && s[3] % b == 0,
        "SpaceToDepth: height and width of " + shapeString(s) + " must be divisible by blocksize " + std::to_string(b));
  return {{ctx.inputs[0].dtype, {s[0], s[1] * b * b, s[2] / b, s[3] / b}}};
}
std::vector<Tensor> spaceToDepthEval(const EvalContext &ctx) {
  Shape o = shapeOf(spaceToDepthShape, ctx)[0].shape;
  const Tensor &x = ctx.in(0);
  int64_t b = blockSize("SpaceToDepth", ctx.attrs);
  int64_t C = x.shape[1], H = x.shape[2], W = x.shape[3];
  Tensor y(x.dtype, o);
  forEachCoord(o, [&](int64_t idx, const std::vector<int64_t> &c) {
    int64_t blk = c[1] / C, ch = c[1] % C;  // depth is (blockRow, blockCol, channel)
    int64_t i = blk / b, j = blk % b;
    copyElem(y, idx, x, ((c[0] * C + ch) * H + c[2] * b + i) * W + c[3] * b + j);
  });
  return {y};
}

}  // namespace

KILN_REGISTER_OP({"Identity", identityShape, identityEval, nullptr});
KILN_REGISTER_OP({"Dropout", dropoutShape, dropoutEval, nullptr});
KILN_REGISTER_OP({"Flatten", flattenShape, flattenEval, nullptr});
KILN_REGISTER_OP({"Reshape", reshapeShape, reshapeEval, nullptr});
KILN_REGISTER_OP({"Squeeze", squeezeShape, squeezeEval, nullptr});
KILN_REGISTER_OP({"Unsqueeze", unsqueezeShape, unsqueezeEval, nullptr});
KILN_REGISTER_OP({"Transpose", transposeShape, transposeEval, nullptr});
KILN_REGISTER_OP({"Concat", concatShape, concatEval, nullptr});
KILN_REGISTER_OP({"Split", splitShape, splitEval, nullptr});
KILN_REGISTER_OP({"Slice", sliceShape, sliceEval, nullptr});
KILN_REGISTER_OP({"Gather", gatherShape, gatherEval, nullptr});
KILN_REGISTER_OP({"GatherElements", gatherElementsShape, gatherElementsEval, nullptr});
KILN_REGISTER_OP({"Expand", expandShape, expandEval, nullptr});
KILN_REGISTER_OP({"Tile", tileShape, tileEval, nullptr});
KILN_REGISTER_OP({"Pad", padShape, padEval, nullptr});
KILN_REGISTER_OP({"Shape", shapeShape, shapeEval, nullptr});
KILN_REGISTER_OP({"Size", sizeShape, sizeEval, nullptr});
KILN_REGISTER_OP({"ConstantOfShape", constantOfShapeShape, constantOfShapeEval, nullptr});
KILN_REGISTER_OP({"Range", rangeShape, rangeEval, nullptr});
KILN_REGISTER_OP({"EyeLike", eyeLikeShape, eyeLikeEval, nullptr});
KILN_REGISTER_OP({"OneHot", oneHotShape, oneHotEval, nullptr});
KILN_REGISTER_OP({"Trilu", triluShape, triluEval, nullptr});
KILN_REGISTER_OP({"CumSum", cumsumShape, cumsumEval, cumsumFlops});
KILN_REGISTER_OP({"DepthToSpace", depthToSpaceShape, depthToSpaceEval, nullptr});
KILN_REGISTER_OP({"SpaceToDepth", spaceToDepthShape, spaceToDepthEval, nullptr});

}  // namespace kiln::ops

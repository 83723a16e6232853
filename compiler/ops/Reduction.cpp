// Reductions: ReduceSum/Mean/Max/Min/Prod/L1/L2/LogSum/LogSumExp/SumSquare, ArgMax/ArgMin, TopK.
//
// The Reduce* ops read `axes` from an attribute only (the importer moves the opset-18 axes input
// there). Absent or empty axes reduce every axis, unless noop_with_empty_axes=1, in which case no
// axis is reduced: each output element then "reduces" the single input element at its position,
// so the ops' elementwise parts still apply (ReduceSumSquare squares, ReduceL1 takes |x|,
// ReduceLogSum takes the log), as the corrected ONNX spec says.
//
// Reducing over an empty set gives the op's identity: 0 for sums and norms, 1 for products,
// -inf / +inf for Max / Min (the dtype's minimum / maximum for integers), log(0) = -inf for LogSum
// and LogSumExp, NaN for Mean.
#include "compiler/ops/ElementwiseUtil.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace kiln::ops {
namespace {

using namespace ew;

// =============================================================================================
// Reduce*

enum class Red { Sum, Mean, Max, Min, Prod, L1, L2, LogSum, LogSumExp, SumSquare };

struct ReducePlan {
  std::vector<bool> reduced;  // per input axis
  Shape kept;                 // the input shape with reduced axes set to 1
  Shape out;                  // kept, or without the reduced axes when keepdims=0
};

ReducePlan planReduce(const std::string &op, const Shape &in, const Attrs &attrs) {
  int64_t rank = static_cast<int64_t>(in.size());
  std::vector<int64_t> axes = attrs.getInts("axes", {});
  bool noop = attrs.getInt("noop_with_empty_axes", 0) != 0;
  bool keepdims = attrs.getInt("keepdims", 1) != 0;
  ReducePlan p;
  p.reduced.assign(rank, axes.empty() && !noop);
  for (int64_t a : axes) {
    check(a >= -rank && a < rank,
          op + ": axis " + std::to_string(a) + " is out of range for an input of rank " + std::to_string(rank));
    int64_t n = a < 0 ? a + rank : a;
    check(!p.reduced[n], op + ": axis " + std::to_string(n) + " is listed twice in axes");
    p.reduced[n] = true;
  }
  for (int64_t d = 0; d < rank; ++d) {
    p.kept.push_back(p.reduced[d] ? 1 : in[d]);
    if (!p.reduced[d] || keepdims) p.out.push_back(p.reduced[d] ? 1 : in[d]);
  }
  return p;
}

Kind reduceKind(Red r) { return (r == Red::Max || r == Red::Min) ? Kind::Any : Kind::Numeric; }

ShapeFn reduceShape(std::string op, Red r) {
  return [op, r](const ShapeContext &ctx) {
    checkInputs(op, ctx, 1, 1);
    checkOutputs(op, ctx, 1);
    checkKind(op, "input", ctx.inputs[0].dtype, reduceKind(r));
    ReducePlan p = planReduce(op, ctx.inputs[0].shape, ctx.attrs);
    return std::vector<TensorType>{{ctx.inputs[0].dtype, p.out}};
  };
}

// For each input element, the flat index (in `kept`) of the output element it contributes to.
std::vector<int64_t> reduceTargets(const Shape &in, const ReducePlan &p) {
  size_t rank = in.size();
  Shape outStrides(rank, 1);
  for (size_t d = rank; d-- > 1;) outStrides[d - 1] = outStrides[d] * p.kept[d];
  std::vector<int64_t> target(numElements(in));
  std::vector<int64_t> coord(rank, 0);
  for (int64_t k = 0; k < static_cast<int64_t>(target.size()); ++k) {
    int64_t t = 0;
    for (size_t d = 0; d < rank; ++d)
      if (!p.reduced[d]) t += coord[d] * outStrides[d];
    target[k] = t;
    for (size_t d = rank; d-- > 0;) {  // advance the row-major coordinate
      if (++coord[d] < in[d]) break;
      coord[d] = 0;
    }
  }
  return target;
}

// Integer inputs are reduced exactly for the ops whose result is an integer anyway.
bool exactIntegerPath(Red r) {
  return r == Red::Sum || r == Red::Prod || r == Red::Max || r == Red::Min || r == Red::L1 || r == Red::SumSquare;
}

EvalFn reduceKernel(std::string op, Red r) {
  ShapeFn shape = reduceShape(op, r);
  return [op, r, shape](const EvalContext &ctx) {
    TensorType t = shape(shapeContextOf(ctx)).at(0);
    const Tensor &x = ctx.in(0);
    ReducePlan p = planReduce(op, x.shape, ctx.attrs);
    std::vector<int64_t> target = reduceTargets(x.shape, p);
    Tensor y(t.dtype, t.shape);  // same element order as `kept`
    int64_t n = y.size();
    int64_t count = 1;  // elements per output
    for (size_t d = 0; d < x.shape.size(); ++d)
      if (p.reduced[d]) count *= x.shape[d];

    if (!x.isFloating() && exactIntegerPath(r)) {
      auto range = intRange(x.dtype);
      int64_t init = r == Red::Prod ? 1 : r == Red::Max ? range.first : r == Red::Min ? range.second : 0;
      std::vector<int64_t> acc(n, init);
      for (int64_t k = 0; k < x.size(); ++k) {
        int64_t v = x.i[k];
        int64_t &a = acc[target[k]];
        switch (r) {
          case Red::Sum: a = wrapAdd(a, v); break;
          case Red::Prod: a = wrapMul(a, v); break;
          case Red::Max:
            if (intLess(x.dtype, a, v)) a = v;
            break;
          case Red::Min:
            if (intLess(x.dtype, v, a)) a = v;
            break;
          case Red::L1: a = wrapAdd(a, intIsNegative(x.dtype, v) ? wrapSub(0, v) : v); break;
          case Red::SumSquare: a = wrapAdd(a, wrapMul(v, v)); break;
          default: break;
        }
      }
      for (int64_t k = 0; k < n; ++k) y.setInt(k, acc[k]);
      return std::vector<Tensor>{y};
    }

    // Double path. LogSumExp subtracts each output's maximum first so exp cannot overflow.
    std::vector<double> shift(n, 0.0);
    if (r == Red::LogSumExp) {
      std::fill(shift.begin(), shift.end(), -INFINITY);
      for (int64_t k = 0; k < x.size(); ++k) shift[target[k]] = std::max(shift[target[k]], valueAt(x, k));
      for (double &s : shift)
        if (std::isinf(s)) s = 0;  // all -inf (or an inf): exp of the raw values is exact enough
    }
    double init = r == Red::Prod ? 1.0 : r == Red::Max ? -INFINITY : r == Red::Min ? INFINITY : 0.0;
    std::vector<double> acc(n, init);
    for (int64_t k = 0; k < x.size(); ++k) {
      double v = valueAt(x, k);
      double &a = acc[target[k]];
      switch (r) {
        case Red::Sum:
        case Red::Mean:
        case Red::LogSum: a += v; break;
        case Red::Prod: a *= v; break;
        case Red::Max: a = (std::isnan(v) || std::isnan(a)) ? NAN : std::max(a, v); break;
        case Red::Min: a = (std::isnan(v) || std::isnan(a)) ? NAN : std::min(a, v); break;
        case Red::L1: a += std::fabs(v); break;
        case Red::L2:
        case Red::SumSquare: a += v * v; break;
        case Red::LogSumExp: a += std::exp(v - shift[target[k]]); break;
      }
    }
    for (int64_t k = 0; k < n; ++k) {
      double a = acc[k];
      switch (r) {
        case Red::Mean: a /= static_cast<double>(count); break;
        case Red::L2: a = std::sqrt(a); break;
        case Red::LogSum: a = std::log(a); break;
        case Red::LogSumExp: a = std::log(a) + shift[k]; break;
        default: break;
      }
      y.set(k, a);
    }
    return std::vector<Tensor>{y};
  };
}

FlopsFn reduceFlops(int64_t perInput) {
  return [perInput](const ShapeContext &ctx, const std::vector<TensorType> &) -> int64_t {
    return ctx.inputs.empty() ? 0 : perInput * numElements(ctx.inputs[0].shape);
  };
}

// =============================================================================================
// ArgMax / ArgMin(axis=0, keepdims=1, select_last_index=0) -> int64
// NaN counts as the extreme value (as numpy's argmax/argmin do): the first NaN wins.

ShapeFn argShape(std::string op) {
  return [op](const ShapeContext &ctx) {
    checkInputs(op, ctx, 1, 1);
    checkOutputs(op, ctx, 1);
    const TensorType &x = ctx.inputs[0];
    checkKind(op, "input", x.dtype, Kind::Numeric);
    int64_t rank = static_cast<int64_t>(x.shape.size());
    check(rank >= 1, op + ": input must have rank >= 1");
    int64_t axis = normalizeAxis(ctx.attrs.getInt("axis", 0), rank);
    check(x.shape[axis] > 0,
          op + ": cannot reduce axis " + std::to_string(axis) + " of size 0 (shape " + shapeString(x.shape) + ")");
    Shape out;
    for (int64_t d = 0; d < rank; ++d) {
      if (d != axis)
        out.push_back(x.shape[d]);
      else if (ctx.attrs.getInt("keepdims", 1) != 0)
        out.push_back(1);
    }
    return std::vector<TensorType>{{DType::I64, out}};
  };
}

// Is `a` strictly better than `b` (greater for ArgMax, smaller for ArgMin)? NaN beats numbers.
bool better(const Tensor &x, int64_t ia, int64_t ib, bool isMax) {
  if (x.isFloating()) {
    double a = x.f[ia], b = x.f[ib];
    if (std::isnan(b)) return false;
    if (std::isnan(a)) return true;
    return isMax ? a > b : a < b;
  }
  return isMax ? intLess(x.dtype, x.i[ib], x.i[ia]) : intLess(x.dtype, x.i[ia], x.i[ib]);
}

EvalFn argKernel(std::string op, bool isMax) {
  ShapeFn shape = argShape(op);
  return [shape, isMax](const EvalContext &ctx) {
    TensorType t = shape(shapeContextOf(ctx)).at(0);
    const Tensor &x = ctx.in(0);
    size_t axis = static_cast<size_t>(normalizeAxis(ctx.attrs.getInt("axis", 0), x.rank()));
    bool last = ctx.attrs.getInt("select_last_index", 0) != 0;
    int64_t len = x.shape[axis], inner = 1, outer = 1;
    for (size_t d = axis + 1; d < x.shape.size(); ++d) inner *= x.shape[d];
    for (size_t d = 0; d < axis; ++d) outer *= x.shape[d];
    Tensor y(DType::I64, t.shape);
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        int64_t base = o * len * inner + i, best = 0;
        for (int64_t j = 1; j < len; ++j) {
          int64_t cur = base + j * inner, b = base + best * inner;
          // With select_last_index, an equal value (neither is better) moves the choice forward.
          bool take = better(x, cur, b, isMax) || (last && !better(x, b, cur, isMax));
          if (take) best = j;
        }
        y.i[o * inner + i] = best;
      }
    }
    return std::vector<Tensor>{y};
  };
}

// =============================================================================================
// TopK(X, K) -> Values, Indices (int64), attrs axis=-1, largest=1, sorted=1.
// Results are always sorted (allowed for sorted=0). Equal values keep the lower index first.
// NaN sorts as larger than every number (first with largest=1, last with largest=0).

int64_t topkK(const std::string &op, const Tensor &k) {
  check(k.dtype == DType::I64, op + ": K must be int64, got " + dtypeName(k.dtype));
  check(k.size() == 1, op + ": K must have exactly one element, got shape " + shapeString(k.shape));
  return k.i[0];
}

std::vector<TensorType> topkShape(const ShapeContext &ctx) {
  const std::string op = "TopK";
  checkInputs(op, ctx, 2, 2);
  checkOutputs(op, ctx, 2);
  const TensorType &x = ctx.inputs[0];
  checkKind(op, "X", x.dtype, Kind::Numeric);
  int64_t rank = static_cast<int64_t>(x.shape.size());
  check(rank >= 1, op + ": X must have rank >= 1");
  int64_t axis = normalizeAxis(ctx.attrs.getInt("axis", -1), rank);
  check(ctx.values.size() > 1 && ctx.values[1] != nullptr, op + ": the K input must be a compile-time constant");
  int64_t k = topkK(op, *ctx.values[1]);
  check(k >= 0 && k <= x.shape[axis], op + ": K = " + std::to_string(k) + " is out of range for axis " +
                                          std::to_string(axis) + " of size " + std::to_string(x.shape[axis]));
  Shape out = x.shape;
  out[axis] = k;
  return {{x.dtype, out}, {DType::I64, out}};
}

std::vector<Tensor> topkKernel(const EvalContext &ctx) {
  std::vector<TensorType> types = topkShape(shapeContextOf(ctx));
  const Tensor &x = ctx.in(0);
  size_t axis = static_cast<size_t>(normalizeAxis(ctx.attrs.getInt("axis", -1), x.rank()));
  bool largest = ctx.attrs.getInt("largest", 1) != 0;
  int64_t k = types[0].shape[axis];
  int64_t len = x.shape[axis], inner = 1, outer = 1;
  for (size_t d = axis + 1; d < x.shape.size(); ++d) inner *= x.shape[d];
  for (size_t d = 0; d < axis; ++d) outer *= x.shape[d];
  Tensor values(types[0].dtype, types[0].shape), indices(DType::I64, types[1].shape);

  // Strict "a sorts before b" on element indices; ties are left to stable_sort (lower index first).
  auto before = [&](int64_t ia, int64_t ib) {
    if (x.isFloating()) {
      double a = x.f[ia], b = x.f[ib];
      if (std::isnan(a) || std::isnan(b))
        return largest ? (std::isnan(a) && !std::isnan(b)) : (!std::isnan(a) && std::isnan(b));
      return largest ? a > b : a < b;
    }
    return largest ? intLess(x.dtype, x.i[ib], x.i[ia]) : intLess(x.dtype, x.i[ia], x.i[ib]);
  };

  std::vector<int64_t> order(len);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      int64_t base = o * len * inner + i;
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(),
                       [&](int64_t a, int64_t b) { return before(base + a * inner, base + b * inner); });
      for (int64_t j = 0; j < k; ++j) {
        int64_t src = base + order[j] * inner, dst = o * k * inner + j * inner + i;
        if (x.isFloating())
          values.f[dst] = x.f[src];
        else
          values.i[dst] = x.i[src];
        indices.i[dst] = order[j];
      }
    }
  }
  return {values, indices};
}

int64_t topkFlops(const ShapeContext &ctx, const std::vector<TensorType> &) {
  // About n log2 n comparisons per sorted vector; counted as one FLOP each.
  if (ctx.inputs.empty()) return 0;
  const Shape &s = ctx.inputs[0].shape;
  int64_t n = numElements(s);
  int64_t len = 1;
  if (!s.empty()) {
    int64_t rank = static_cast<int64_t>(s.size());
    int64_t axis = ctx.attrs.getInt("axis", -1);
    if (axis >= -rank && axis < rank) len = s[axis < 0 ? axis + rank : axis];
  }
  int64_t lg = 1;
  while ((int64_t{1} << lg) < len) ++lg;
  return n * lg;
}

}  // namespace

KILN_REGISTER_OP({"ReduceSum", reduceShape("ReduceSum", Red::Sum), reduceKernel("ReduceSum", Red::Sum),
                  reduceFlops(1)});
KILN_REGISTER_OP({"ReduceMean", reduceShape("ReduceMean", Red::Mean), reduceKernel("ReduceMean", Red::Mean),
                  reduceFlops(1)});
KILN_REGISTER_OP({"ReduceMax", reduceShape("ReduceMax", Red::Max), reduceKernel("ReduceMax", Red::Max),
                  reduceFlops(1)});
KILN_REGISTER_OP({"ReduceMin", reduceShape("ReduceMin", Red::Min), reduceKernel("ReduceMin", Red::Min),
                  reduceFlops(1)});
KILN_REGISTER_OP({"ReduceProd", reduceShape("ReduceProd", Red::Prod), reduceKernel("ReduceProd", Red::Prod),
                  reduceFlops(1)});
KILN_REGISTER_OP({"ReduceL1", reduceShape("ReduceL1", Red::L1), reduceKernel("ReduceL1", Red::L1), reduceFlops(2)});
KILN_REGISTER_OP({"ReduceL2", reduceShape("ReduceL2", Red::L2), reduceKernel("ReduceL2", Red::L2), reduceFlops(2)});
KILN_REGISTER_OP({"ReduceLogSum", reduceShape("ReduceLogSum", Red::LogSum), reduceKernel("ReduceLogSum", Red::LogSum),
                  reduceFlops(1)});
KILN_REGISTER_OP({"ReduceLogSumExp", reduceShape("ReduceLogSumExp", Red::LogSumExp),
                  reduceKernel("ReduceLogSumExp", Red::LogSumExp), reduceFlops(kTranscendentalFlops + 1)});
KILN_REGISTER_OP({"ReduceSumSquare", reduceShape("ReduceSumSquare", Red::SumSquare),
                  reduceKernel("ReduceSumSquare", Red::SumSquare), reduceFlops(2)});
KILN_REGISTER_OP({"ArgMax", argShape("ArgMax"), argKernel("ArgMax", true), reduceFlops(1)});
KILN_REGISTER_OP({"ArgMin", argShape("ArgMin"), argKernel("ArgMin", false), reduceFlops(1)});
KILN_REGISTER_OP({"TopK", topkShape, topkKernel, topkFlops});

}  // namespace kiln::ops

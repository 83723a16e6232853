// Elementwise ONNX ops: unary math, broadcasting binary arithmetic / comparison / logic, the
// variadic Sum/Mean/Min/Max, Where, Cast and CastLike.
//
// Floating-point tensors are computed in double and rounded to their dtype when stored. Integer
// tensors are computed exactly in (wrapping) 64-bit arithmetic and wrapped to their dtype, so
// int64 values above 2^53 and uint64 values above 2^63 stay exact.
#include "compiler/ops/ElementwiseUtil.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace kiln::ops {
namespace {

using namespace ew;

// =============================================================================================
// Unary ops

// Float-only unary math: registered with unaryShape/unaryFloatKernel from ElementwiseUtil.h.

double signOf(double x) { return x > 0 ? 1.0 : x < 0 ? -1.0 : x; }  // keeps ±0 and NaN

// Abs, Neg, Sign: any numeric dtype; integers take an exact path.
using IntUnaryFn = std::function<int64_t(DType, int64_t)>;

EvalFn numericUnaryKernel(std::string op, std::function<double(double)> ff, IntUnaryFn fi) {
  ShapeFn shape = unaryShape(op, Kind::Numeric);
  return [shape, ff, fi](const EvalContext &ctx) {
    shape(shapeContextOf(ctx));
    const Tensor &x = ctx.in(0);
    if (x.isFloating()) return std::vector<Tensor>{mapFloat(x, ff)};
    Tensor y(x.dtype, x.shape);
    for (int64_t k = 0; k < y.size(); ++k) y.setInt(k, fi(x.dtype, x.i[k]));
    return std::vector<Tensor>{y};
  };
}

int64_t intAbs(DType t, int64_t v) { return intIsNegative(t, v) ? wrapSub(0, v) : v; }
int64_t intNeg(DType, int64_t v) { return wrapSub(0, v); }
int64_t intSign(DType t, int64_t v) { return intIsNegative(t, v) ? -1 : v != 0 ? 1 : 0; }

// IsNaN, IsInf: float → bool.
ShapeFn floatPredicateShape(std::string op) {
  return [op](const ShapeContext &ctx) {
    checkInputs(op, ctx, 1, 1);
    checkOutputs(op, ctx, 1);
    checkKind(op, "input", ctx.inputs[0].dtype, Kind::Float);
    return std::vector<TensorType>{{DType::Bool, ctx.inputs[0].shape}};
  };
}

std::vector<Tensor> isNaNKernel(const EvalContext &ctx) {
  floatPredicateShape("IsNaN")(shapeContextOf(ctx));
  const Tensor &x = ctx.in(0);
  Tensor y(DType::Bool, x.shape);
  for (int64_t k = 0; k < y.size(); ++k) y.i[k] = std::isnan(x.f[k]);
  return {y};
}

std::vector<Tensor> isInfKernel(const EvalContext &ctx) {
  floatPredicateShape("IsInf")(shapeContextOf(ctx));
  bool negative = ctx.attrs.getInt("detect_negative", 1) != 0;
  bool positive = ctx.attrs.getInt("detect_positive", 1) != 0;
  const Tensor &x = ctx.in(0);
  Tensor y(DType::Bool, x.shape);
  for (int64_t k = 0; k < y.size(); ++k) {
    double v = x.f[k];
    y.i[k] = std::isinf(v) && ((v > 0 && positive) || (v < 0 && negative));
  }
  return {y};
}

std::vector<Tensor> notKernel(const EvalContext &ctx) {
  unaryShape("Not", Kind::Bool)(shapeContextOf(ctx));
  const Tensor &x = ctx.in(0);
  Tensor y(DType::Bool, x.shape);
  for (int64_t k = 0; k < y.size(); ++k) y.i[k] = x.i[k] == 0;
  return {y};
}

// =============================================================================================
// Binary broadcasting ops

// Shape of a two-input broadcasting op. Both inputs must be of `kind`; if `sameDtype`, of one
// dtype. The result has dtype `outDtype` (Undefined: the first input's dtype).
std::vector<TensorType> binaryTypes(const std::string &op, const ShapeContext &ctx, Kind kind, bool sameDtype,
                                    DType outDtype) {
  checkInputs(op, ctx, 2, 2);
  checkOutputs(op, ctx, 1);
  const TensorType &a = ctx.inputs[0], &b = ctx.inputs[1];
  checkKind(op, "input A", a.dtype, kind);
  checkKind(op, "input B", b.dtype, kind);
  if (sameDtype) checkSameDtype(op, "input A", a.dtype, "input B", b.dtype);
  Shape out = broadcastOrFail(op, {a.shape, b.shape});
  return {{outDtype == DType::Undefined ? a.dtype : outDtype, out}};
}

ShapeFn binaryShape(std::string op, Kind kind, DType outDtype = DType::Undefined, bool sameDtype = true) {
  return [=](const ShapeContext &ctx) { return binaryTypes(op, ctx, kind, sameDtype, outDtype); };
}

// Evaluates the shape function, allocates the result and gives the broadcast index maps.
struct BinaryEval {
  TensorType type;  // computed first: the shape function validates the inputs
  const Tensor &a, &b;
  Tensor out;
  std::vector<int64_t> ia, ib;
  BinaryEval(const ShapeFn &shape, const EvalContext &ctx)
      : type(shape(shapeContextOf(ctx)).at(0)),
        a(ctx.in(0)),
        b(ctx.in(1)),
        out(type.dtype, type.shape),
        ia(broadcastMap(a.shape, type.shape)),
        ib(broadcastMap(b.shape, type.shape)) {}
};

using FloatBinFn = std::function<double(double, double)>;
using IntBinFn = std::function<int64_t(DType, int64_t, int64_t)>;

// Add, Sub, Mul, Div: numeric, same dtype.
EvalFn arithKernel(std::string op, FloatBinFn ff, IntBinFn fi) {
  ShapeFn shape = binaryShape(op, Kind::Numeric);
  return [shape, ff, fi](const EvalContext &ctx) {
    BinaryEval e(shape, ctx);
    for (int64_t k = 0; k < e.out.size(); ++k) {
      if (e.a.isFloating())
        e.out.set(k, ff(e.a.f[e.ia[k]], e.b.f[e.ib[k]]));
      else
        e.out.setInt(k, fi(e.a.dtype, e.a.i[e.ia[k]], e.b.i[e.ib[k]]));
    }
    return std::vector<Tensor>{e.out};
  };
}

// Integer division truncates toward zero (C semantics, as ONNX's reference does).
int64_t intDiv(DType t, int64_t a, int64_t b) {
  check(b != 0, "Div: integer division by zero");
  if (t == DType::U64) return static_cast<int64_t>(static_cast<uint64_t>(a) / static_cast<uint64_t>(b));
  if (b == -1) return wrapSub(0, a);  // INT64_MIN / -1 overflows in C++
  return a / b;
}

// Mod. fmod=0: the result takes the divisor's sign (Python/numpy `mod`); fmod=1: the dividend's
// (C fmod). ONNX asks for fmod=1 on floats; fmod=0 on floats is accepted with numpy.mod semantics.
ShapeFn modShape() {
  return [](const ShapeContext &ctx) {
    int64_t fmod = ctx.attrs.getInt("fmod", 0);
    check(fmod == 0 || fmod == 1, "Mod: fmod must be 0 or 1, got " + std::to_string(fmod));
    return binaryTypes("Mod", ctx, Kind::Numeric, true, DType::Undefined);
  };
}

int64_t intMod(DType t, int64_t a, int64_t b, bool cStyle) {
  check(b != 0, "Mod: integer division by zero");
  if (t == DType::U64) return static_cast<int64_t>(static_cast<uint64_t>(a) % static_cast<uint64_t>(b));
  if (b == -1) return 0;  // INT64_MIN % -1 overflows in C++
  int64_t r = a % b;      // sign of the dividend
  if (!cStyle && r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

double floatMod(double a, double b, bool cStyle) {
  double r = std::fmod(a, b);
  if (!cStyle && r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

std::vector<Tensor> modKernel(const EvalContext &ctx) {
  BinaryEval e(modShape(), ctx);
  bool cStyle = ctx.attrs.getInt("fmod", 0) == 1;
  for (int64_t k = 0; k < e.out.size(); ++k) {
    if (e.a.isFloating())
      e.out.set(k, floatMod(e.a.f[e.ia[k]], e.b.f[e.ib[k]], cStyle));
    else
      e.out.setInt(k, intMod(e.a.dtype, e.a.i[e.ia[k]], e.b.i[e.ib[k]], cStyle));
  }
  return {e.out};
}

// Pow: the base and exponent may have different numeric dtypes; the result has the base's dtype.
// Integer bases raised to integer exponents are computed exactly (wrapping); integer results of
// a float exponent are truncated toward zero.
int64_t intPow(int64_t base, int64_t exp) {
  if (exp < 0) {
    check(base != 0, "Pow: zero raised to a negative integer power");
    if (base == 1) return 1;
    if (base == -1) return (exp % 2 == 0) ? 1 : -1;
    return 0;  // |base| > 1: the true value is a fraction that truncates to 0
  }
  int64_t result = 1;
  while (exp > 0) {
    if (exp & 1) result = wrapMul(result, base);
    base = wrapMul(base, base);
    exp >>= 1;
  }
  return result;
}

std::vector<Tensor> powKernel(const EvalContext &ctx) {
  BinaryEval e(binaryShape("Pow", Kind::Numeric, DType::Undefined, /*sameDtype=*/false), ctx);
  for (int64_t k = 0; k < e.out.size(); ++k) {
    int64_t ka = e.ia[k], kb = e.ib[k];
    if (!e.a.isFloating() && !e.b.isFloating()) {
      check(e.b.dtype != DType::U64 || e.b.i[kb] >= 0, "Pow: exponent too large");
      e.out.setInt(k, intPow(e.a.i[ka], e.b.i[kb]));
    } else {
      e.out.set(k, std::pow(valueAt(e.a, ka), valueAt(e.b, kb)));
    }
  }
  return {e.out};
}

// BitShift: unsigned integers; shifting by the bit width or more gives 0.
ShapeFn bitShiftShape() {
  return [](const ShapeContext &ctx) {
    std::string dir = ctx.attrs.getString("direction", "");
    check(dir == "LEFT" || dir == "RIGHT",
          "BitShift: attribute direction must be \"LEFT\" or \"RIGHT\", got \"" + dir + "\"");
    return binaryTypes("BitShift", ctx, Kind::Unsigned, true, DType::Undefined);
  };
}

std::vector<Tensor> bitShiftKernel(const EvalContext &ctx) {
  BinaryEval e(bitShiftShape(), ctx);
  bool left = ctx.attrs.getString("direction", "") == "LEFT";
  uint64_t bits = 8 * static_cast<uint64_t>(byteSize(e.a.dtype));
  for (int64_t k = 0; k < e.out.size(); ++k) {
    uint64_t v = static_cast<uint64_t>(e.a.i[e.ia[k]]);
    uint64_t s = static_cast<uint64_t>(e.b.i[e.ib[k]]);
    uint64_t r = s >= bits ? 0 : left ? v << s : v >> s;
    e.out.setInt(k, static_cast<int64_t>(r));  // wraps bits shifted past the dtype's width
  }
  return {e.out};
}

// Comparisons: same dtype, bool result. NaN compares false (Equal: NaN != NaN).
using FloatCmpFn = std::function<bool(double, double)>;
using IntCmpFn = std::function<bool(DType, int64_t, int64_t)>;

EvalFn compareKernel(std::string op, Kind kind, FloatCmpFn ff, IntCmpFn fi) {
  ShapeFn shape = binaryShape(op, kind, DType::Bool);
  return [shape, ff, fi](const EvalContext &ctx) {
    BinaryEval e(shape, ctx);
    for (int64_t k = 0; k < e.out.size(); ++k) {
      bool r = e.a.isFloating() ? ff(e.a.f[e.ia[k]], e.b.f[e.ib[k]]) : fi(e.a.dtype, e.a.i[e.ia[k]], e.b.i[e.ib[k]]);
      e.out.i[k] = r;
    }
    return std::vector<Tensor>{e.out};
  };
}

// And, Or, Xor: bool.
EvalFn logicKernel(std::string op, std::function<bool(bool, bool)> fn) {
  ShapeFn shape = binaryShape(op, Kind::Bool);
  return [shape, fn](const EvalContext &ctx) {
    BinaryEval e(shape, ctx);
    for (int64_t k = 0; k < e.out.size(); ++k) e.out.i[k] = fn(e.a.i[e.ia[k]] != 0, e.b.i[e.ib[k]] != 0);
    return std::vector<Tensor>{e.out};
  };
}

// =============================================================================================
// Variadic broadcasting ops: Sum, Mean, Min, Max

ShapeFn variadicShape(std::string op, Kind kind) {
  return [op, kind](const ShapeContext &ctx) {
    check(!ctx.inputs.empty(), op + ": needs at least one input");
    checkInputs(op, ctx, ctx.inputs.size(), ctx.inputs.size());
    checkOutputs(op, ctx, 1);
    std::vector<Shape> shapes;
    for (size_t k = 0; k < ctx.inputs.size(); ++k) {
      std::string what = "input #" + std::to_string(k);
      checkKind(op, what, ctx.inputs[k].dtype, kind);
      checkSameDtype(op, "input #0", ctx.inputs[0].dtype, what, ctx.inputs[k].dtype);
      shapes.push_back(ctx.inputs[k].shape);
    }
    return std::vector<TensorType>{{ctx.inputs[0].dtype, broadcastOrFail(op, shapes)}};
  };
}

enum class Fold { Sum, Mean, Min, Max };

EvalFn variadicKernel(std::string op, Kind kind, Fold fold) {
  ShapeFn shape = variadicShape(op, kind);
  return [shape, fold](const EvalContext &ctx) {
    TensorType t = shape(shapeContextOf(ctx)).at(0);
    Tensor out(t.dtype, t.shape);
    size_t n = ctx.inputs.size();
    std::vector<std::vector<int64_t>> maps;
    for (size_t j = 0; j < n; ++j) maps.push_back(broadcastMap(ctx.in(j).shape, t.shape));
    for (int64_t k = 0; k < out.size(); ++k) {
      if (out.isFloating()) {
        double acc = ctx.in(0).f[maps[0][k]];
        for (size_t j = 1; j < n; ++j) {
          double v = ctx.in(j).f[maps[j][k]];
          if (fold == Fold::Sum || fold == Fold::Mean)
            acc += v;
          else if (std::isnan(acc) || std::isnan(v))
            acc = std::nan("");  // NaN propagates
          else
            acc = (fold == Fold::Min) ? std::min(acc, v) : std::max(acc, v);
        }
        out.set(k, fold == Fold::Mean ? acc / static_cast<double>(n) : acc);
      } else {
        int64_t acc = ctx.in(0).i[maps[0][k]];
        for (size_t j = 1; j < n; ++j) {
          int64_t v = ctx.in(j).i[maps[j][k]];
          if (fold == Fold::Sum)
            acc = wrapAdd(acc, v);
          else if (fold == Fold::Min)
            acc = intLess(t.dtype, v, acc) ? v : acc;
          else
            acc = intLess(t.dtype, acc, v) ? v : acc;
        }
        out.setInt(k, acc);
      }
    }
    return std::vector<Tensor>{out};
  };
}

FlopsFn variadicFlops() {
  return [](const ShapeContext &ctx, const std::vector<TensorType> &outs) -> int64_t {
    if (outs.empty() || ctx.inputs.empty()) return 0;
    return static_cast<int64_t>(std::max<size_t>(ctx.inputs.size() - 1, 1)) * numElements(outs[0].shape);
  };
}

// =============================================================================================
// Where(condition, X, Y)

std::vector<TensorType> whereShape(const ShapeContext &ctx) {
  const std::string op = "Where";
  checkInputs(op, ctx, 3, 3);
  checkOutputs(op, ctx, 1);
  checkKind(op, "condition", ctx.inputs[0].dtype, Kind::Bool);
  checkKind(op, "X", ctx.inputs[1].dtype, Kind::Any);
  checkSameDtype(op, "X", ctx.inputs[1].dtype, "Y", ctx.inputs[2].dtype);
  Shape out = broadcastOrFail(op, {ctx.inputs[0].shape, ctx.inputs[1].shape, ctx.inputs[2].shape});
  return {{ctx.inputs[1].dtype, out}};
}

std::vector<Tensor> whereKernel(const EvalContext &ctx) {
  TensorType t = whereShape(shapeContextOf(ctx)).at(0);
  const Tensor &c = ctx.in(0), &x = ctx.in(1), &y = ctx.in(2);
  Tensor out(t.dtype, t.shape);
  auto mc = broadcastMap(c.shape, t.shape), mx = broadcastMap(x.shape, t.shape), my = broadcastMap(y.shape, t.shape);
  for (int64_t k = 0; k < out.size(); ++k) {
    const Tensor &src = c.i[mc[k]] ? x : y;
    int64_t idx = c.i[mc[k]] ? mx[k] : my[k];
    if (out.isFloating())
      out.f[k] = src.f[idx];
    else
      out.i[k] = src.i[idx];
  }
  return {out};
}

// =============================================================================================
// Cast(to), CastLike(input, target_type)

// The dtype named by an ONNX TensorProto.DataType value, or a clear failure.
DType castTarget(const std::string &op, int64_t to) {
  switch (to) {
    case 1:
    case 2:
    case 3:
    case 4:
    case 5:
    case 6:
    case 7:
    case 9:
    case 10:
    case 11:
    case 12:
    case 13:
    case 16: return static_cast<DType>(to);
    case 8: fail(op + ": casting to string is not supported");
    default:
      fail(op + ": unsupported target dtype " + std::to_string(to) +
           " (supported: float, integer and bool types; not string, complex or float8)");
  }
}

// Conversion rules: to float rounds to the target precision; float to integer truncates toward
// zero (then wraps, like a C cast of an in-range value); integer to integer wraps; anything to
// bool is "nonzero" (NaN is nonzero).
Tensor castTo(const Tensor &x, DType to) {
  Tensor y(to, x.shape);
  for (int64_t k = 0; k < y.size(); ++k) {
    if (isFloat(to))
      y.f[k] = roundTo(to, valueAt(x, k));
    else if (to == DType::Bool)
      y.i[k] = x.isFloating() ? x.f[k] != 0.0 : x.i[k] != 0;
    else if (x.isFloating())
      y.set(k, x.f[k]);
    else
      y.setInt(k, x.i[k]);
  }
  return y;
}

std::vector<TensorType> castShape(const ShapeContext &ctx) {
  checkInputs("Cast", ctx, 1, 1);
  checkOutputs("Cast", ctx, 1);
  checkKind("Cast", "input", ctx.inputs[0].dtype, Kind::Any);
  check(ctx.attrs.has("to"), "Cast: missing required attribute 'to'");
  return {{castTarget("Cast", ctx.attrs.getInt("to")), ctx.inputs[0].shape}};
}

std::vector<Tensor> castKernel(const EvalContext &ctx) {
  TensorType t = castShape(shapeContextOf(ctx)).at(0);
  return {castTo(ctx.in(0), t.dtype)};
}

std::vector<TensorType> castLikeShape(const ShapeContext &ctx) {
  checkInputs("CastLike", ctx, 2, 2);
  checkOutputs("CastLike", ctx, 1);
  checkKind("CastLike", "input", ctx.inputs[0].dtype, Kind::Any);
  checkKind("CastLike", "target_type", ctx.inputs[1].dtype, Kind::Any);
  return {{ctx.inputs[1].dtype, ctx.inputs[0].shape}};
}

std::vector<Tensor> castLikeKernel(const EvalContext &ctx) {
  TensorType t = castLikeShape(shapeContextOf(ctx)).at(0);
  return {castTo(ctx.in(0), t.dtype)};
}

}  // namespace

// =============================================================================================
// Registrations

constexpr int64_t kT = kTranscendentalFlops;

// Float-only unary math.
KILN_REGISTER_OP({"Sqrt", unaryShape("Sqrt", Kind::Float),
                  unaryFloatKernel("Sqrt", [](double x) { return std::sqrt(x); }), perElementFlops(kT)});
KILN_REGISTER_OP({"Exp", unaryShape("Exp", Kind::Float), unaryFloatKernel("Exp", [](double x) { return std::exp(x); }),
                  perElementFlops(kT)});
KILN_REGISTER_OP({"Log", unaryShape("Log", Kind::Float), unaryFloatKernel("Log", [](double x) { return std::log(x); }),
                  perElementFlops(kT)});
KILN_REGISTER_OP({"Reciprocal", unaryShape("Reciprocal", Kind::Float),
                  unaryFloatKernel("Reciprocal", [](double x) { return 1.0 / x; }), perElementFlops(1)});
KILN_REGISTER_OP({"Floor", unaryShape("Floor", Kind::Float),
                  unaryFloatKernel("Floor", [](double x) { return std::floor(x); }), perElementFlops(1)});
KILN_REGISTER_OP({"Ceil", unaryShape("Ceil", Kind::Float),
                  unaryFloatKernel("Ceil", [](double x) { return std::ceil(x); }), perElementFlops(1)});
// Round: halves go to the nearest even integer (nearbyint in the default rounding mode).
KILN_REGISTER_OP({"Round", unaryShape("Round", Kind::Float),
                  unaryFloatKernel("Round", [](double x) { return std::nearbyint(x); }), perElementFlops(1)});
KILN_REGISTER_OP({"Sin", unaryShape("Sin", Kind::Float), unaryFloatKernel("Sin", [](double x) { return std::sin(x); }),
                  perElementFlops(kT)});
KILN_REGISTER_OP({"Cos", unaryShape("Cos", Kind::Float), unaryFloatKernel("Cos", [](double x) { return std::cos(x); }),
                  perElementFlops(kT)});
KILN_REGISTER_OP({"Tan", unaryShape("Tan", Kind::Float), unaryFloatKernel("Tan", [](double x) { return std::tan(x); }),
                  perElementFlops(kT)});
KILN_REGISTER_OP({"Asin", unaryShape("Asin", Kind::Float),
                  unaryFloatKernel("Asin", [](double x) { return std::asin(x); }), perElementFlops(kT)});
KILN_REGISTER_OP({"Acos", unaryShape("Acos", Kind::Float),
                  unaryFloatKernel("Acos", [](double x) { return std::acos(x); }), perElementFlops(kT)});
KILN_REGISTER_OP({"Atan", unaryShape("Atan", Kind::Float),
                  unaryFloatKernel("Atan", [](double x) { return std::atan(x); }), perElementFlops(kT)});
KILN_REGISTER_OP({"Sinh", unaryShape("Sinh", Kind::Float),
                  unaryFloatKernel("Sinh", [](double x) { return std::sinh(x); }), perElementFlops(kT)});
KILN_REGISTER_OP({"Cosh", unaryShape("Cosh", Kind::Float),
                  unaryFloatKernel("Cosh", [](double x) { return std::cosh(x); }), perElementFlops(kT)});
KILN_REGISTER_OP({"Asinh", unaryShape("Asinh", Kind::Float),
                  unaryFloatKernel("Asinh", [](double x) { return std::asinh(x); }), perElementFlops(kT)});
KILN_REGISTER_OP({"Acosh", unaryShape("Acosh", Kind::Float),
                  unaryFloatKernel("Acosh", [](double x) { return std::acosh(x); }), perElementFlops(kT)});
KILN_REGISTER_OP({"Atanh", unaryShape("Atanh", Kind::Float),
                  unaryFloatKernel("Atanh", [](double x) { return std::atanh(x); }), perElementFlops(kT)});
KILN_REGISTER_OP({"Erf", unaryShape("Erf", Kind::Float), unaryFloatKernel("Erf", [](double x) { return std::erf(x); }),
                  perElementFlops(kT)});

// Numeric unary ops with an exact integer path.
KILN_REGISTER_OP({"Abs", unaryShape("Abs", Kind::Numeric),
                  numericUnaryKernel(
                      "Abs", [](double x) { return std::fabs(x); }, intAbs),
                  perElementFlops(1)});
KILN_REGISTER_OP({"Neg", unaryShape("Neg", Kind::Numeric),
                  numericUnaryKernel(
                      "Neg", [](double x) { return -x; }, intNeg),
                  perElementFlops(1)});
KILN_REGISTER_OP({"Sign", unaryShape("Sign", Kind::Numeric), numericUnaryKernel("Sign", signOf, intSign),
                  perElementFlops(1)});

KILN_REGISTER_OP({"IsNaN", floatPredicateShape("IsNaN"), isNaNKernel, perElementFlops(1)});
KILN_REGISTER_OP({"IsInf", floatPredicateShape("IsInf"), isInfKernel, perElementFlops(1)});
KILN_REGISTER_OP({"Not", unaryShape("Not", Kind::Bool), notKernel, perElementFlops(1)});

// Binary arithmetic.
KILN_REGISTER_OP({"Add", binaryShape("Add", Kind::Numeric),
                  arithKernel(
                      "Add", [](double a, double b) { return a + b; },
                      [](DType, int64_t a, int64_t b) { return wrapAdd(a, b); }),
                  perElementFlops(1)});
KILN_REGISTER_OP({"Sub", binaryShape("Sub", Kind::Numeric),
                  arithKernel(
                      "Sub", [](double a, double b) { return a - b; },
                      [](DType, int64_t a, int64_t b) { return wrapSub(a, b); }),
                  perElementFlops(1)});
KILN_REGISTER_OP({"Mul", binaryShape("Mul", Kind::Numeric),
                  arithKernel(
                      "Mul", [](double a, double b) { return a * b; },
                      [](DType, int64_t a, int64_t b) { return wrapMul(a, b); }),
                  perElementFlops(1)});
KILN_REGISTER_OP({"Div", binaryShape("Div", Kind::Numeric),
                  arithKernel(
                      "Div", [](double a, double b) { return a / b; }, intDiv),
                  perElementFlops(1)});
KILN_REGISTER_OP({"Mod", modShape(), modKernel, perElementFlops(1)});
KILN_REGISTER_OP({"Pow", binaryShape("Pow", Kind::Numeric, DType::Undefined, /*sameDtype=*/false), powKernel,
                  perElementFlops(kT)});
KILN_REGISTER_OP({"BitShift", bitShiftShape(), bitShiftKernel, perElementFlops(1)});

// Logic.
KILN_REGISTER_OP({"And", binaryShape("And", Kind::Bool), logicKernel("And", [](bool a, bool b) { return a && b; }),
                  perElementFlops(1)});
KILN_REGISTER_OP({"Or", binaryShape("Or", Kind::Bool), logicKernel("Or", [](bool a, bool b) { return a || b; }),
                  perElementFlops(1)});
KILN_REGISTER_OP({"Xor", binaryShape("Xor", Kind::Bool), logicKernel("Xor", [](bool a, bool b) { return a != b; }),
                  perElementFlops(1)});

// Comparisons.
KILN_REGISTER_OP({"Equal", binaryShape("Equal", Kind::Any, DType::Bool),
                  compareKernel(
                      "Equal", Kind::Any, [](double a, double b) { return a == b; },
                      [](DType, int64_t a, int64_t b) { return a == b; }),
                  perElementFlops(1)});
KILN_REGISTER_OP({"Less", binaryShape("Less", Kind::Numeric, DType::Bool),
                  compareKernel(
                      "Less", Kind::Numeric, [](double a, double b) { return a < b; },
                      [](DType t, int64_t a, int64_t b) { return intLess(t, a, b); }),
                  perElementFlops(1)});
KILN_REGISTER_OP({"Greater", binaryShape("Greater", Kind::Numeric, DType::Bool),
                  compareKernel(
                      "Greater", Kind::Numeric, [](double a, double b) { return a > b; },
                      [](DType t, int64_t a, int64_t b) { return intLess(t, b, a); }),
                  perElementFlops(1)});
KILN_REGISTER_OP({"LessOrEqual", binaryShape("LessOrEqual", Kind::Numeric, DType::Bool),
                  compareKernel(
                      "LessOrEqual", Kind::Numeric, [](double a, double b) { return a <= b; },
                      [](DType t, int64_t a, int64_t b) { return !intLess(t, b, a); }),
                  perElementFlops(1)});
KILN_REGISTER_OP({"GreaterOrEqual", binaryShape("GreaterOrEqual", Kind::Numeric, DType::Bool),
                  compareKernel(
                      "GreaterOrEqual", Kind::Numeric, [](double a, double b) { return a >= b; },
                      [](DType t, int64_t a, int64_t b) { return !intLess(t, a, b); }),
                  perElementFlops(1)});

// Variadic.
KILN_REGISTER_OP({"Sum", variadicShape("Sum", Kind::Numeric), variadicKernel("Sum", Kind::Numeric, Fold::Sum),
                  variadicFlops()});
KILN_REGISTER_OP({"Mean", variadicShape("Mean", Kind::Float), variadicKernel("Mean", Kind::Float, Fold::Mean),
                  variadicFlops()});
KILN_REGISTER_OP({"Min", variadicShape("Min", Kind::Numeric), variadicKernel("Min", Kind::Numeric, Fold::Min),
                  variadicFlops()});
KILN_REGISTER_OP({"Max", variadicShape("Max", Kind::Numeric), variadicKernel("Max", Kind::Numeric, Fold::Max),
                  variadicFlops()});

KILN_REGISTER_OP({"Where", whereShape, whereKernel, perElementFlops(1)});
KILN_REGISTER_OP({"Cast", castShape, castKernel, nullptr});
KILN_REGISTER_OP({"CastLike", castLikeShape, castLikeKernel, nullptr});

}  // namespace kiln::ops

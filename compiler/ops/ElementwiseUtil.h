// Small helpers shared by the elementwise, activation, normalization, reduction and quantization
// kernels: dtype checks with op-specific messages, broadcasting index maps, integer helpers that
// respect unsigned 64-bit values (stored as their int64 bit pattern in Tensor::i), and factories for
// the shape function / kernel / FLOP count of simple one-input ops.
//
// Kernels here compute their result types by calling their own shape function on the actual
// inputs (`shapeContextOf`), so the shape function and the kernel cannot disagree.
#pragma once

#include "compiler/ops/OpSemantics.h"
#include "compiler/ops/OpUtil.h"

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace kiln::ops::ew {

// ---------------------------------------------------------------------------------------------
// Contexts and argument checks

inline TensorType typeOf(const Tensor &t) { return TensorType{t.dtype, t.shape}; }

inline std::string plural(int64_t n, const char *what) { return std::to_string(n) + " " + what + (n == 1 ? "" : "s"); }

// Checks that inputs [0, minCount) are present and that no input at or beyond maxCount is.
inline void checkInputs(const std::string &op, const ShapeContext &ctx, size_t minCount, size_t maxCount) {
  size_t last = 0;  // one past the last present input
  for (size_t k = 0; k < ctx.inputs.size(); ++k)
    if (ctx.present(k)) last = k + 1;
  check(last <= maxCount, op + ": expected at most " + plural(maxCount, "input") + ", got " + std::to_string(last));
  for (size_t k = 0; k < minCount; ++k)
    check(ctx.present(k), op + ": required input #" + std::to_string(k) + " is missing");
  for (size_t k = 0; k < ctx.inputs.size(); ++k)
    check(ctx.inputs[k].dtype != DType::String,
          op + ": string tensors are not supported (input #" + std::to_string(k) + ")");
}

// Single-result ops: a node may not declare more results than the op has.
inline void checkOutputs(const std::string &op, const ShapeContext &ctx, int maxCount) {
  check(ctx.numOutputs <= maxCount,
        op + ": the op has " + plural(maxCount, "output") + " but the node declares " + std::to_string(ctx.numOutputs));
}

enum class Kind {
  Float,     // f16, bf16, f32, f64
  Numeric,   // floats and integers (not bool)
  Integer,   // integers (not bool)
  Unsigned,  // unsigned integers
  Bool,
  Any,  // any supported dtype (not string)
};

inline bool isUnsigned(DType t) { return isInteger(t) && !isSignedInteger(t); }

inline bool inKind(DType t, Kind k) {
  switch (k) {
    case Kind::Float: return isFloat(t);
    case Kind::Numeric: return isFloat(t) || isInteger(t);
    case Kind::Integer: return isInteger(t);
    case Kind::Unsigned: return isUnsigned(t);
    case Kind::Bool: return t == DType::Bool;
    case Kind::Any: return isFloat(t) || isInteger(t) || t == DType::Bool;
  }
  return false;
}

inline const char *kindName(Kind k) {
  switch (k) {
    case Kind::Float: return "a floating-point type";
    case Kind::Numeric: return "a numeric type";
    case Kind::Integer: return "an integer type";
    case Kind::Unsigned: return "an unsigned integer type";
    case Kind::Bool: return "bool";
    case Kind::Any: return "a numeric or bool type";
  }
  return "?";
}

inline void checkKind(const std::string &op, const std::string &what, DType t, Kind k) {
  check(inKind(t, k), op + ": " + what + " has dtype " + dtypeName(t) + ", but " + kindName(k) + " is required");
}

inline void checkSameDtype(const std::string &op, const std::string &whatA, DType a, const std::string &whatB,
                           DType b) {
  check(a == b, op + ": " + whatA + " (" + dtypeName(a) + ") and " + whatB + " (" + dtypeName(b) +
                    ") must have the same dtype");
}

// broadcastShapes with the op's name in the message.
inline Shape broadcastOrFail(const std::string &op, const std::vector<Shape> &shapes) {
  try {
    return broadcastShapes(shapes);
  } catch (const OpError &e) {
    fail(op + ": " + e.what());
  }
}

// For every element of `out`, the flat index of the element of `in` (broadcast to `out`) it reads.
inline std::vector<int64_t> broadcastMap(const Shape &in, const Shape &out) {
  int64_t n = numElements(out);
  std::vector<int64_t> map(n);
  for (int64_t k = 0; k < n; ++k) map[k] = broadcastIndex(in, out, k);
  return map;
}

// ---------------------------------------------------------------------------------------------
// Integer helpers. Tensor::i holds every integer dtype as int64; uint64 values above 2^63 appear
// negative, so comparisons and conversions go through these.

inline bool intLess(DType t, int64_t a, int64_t b) {
  if (t == DType::U64) return static_cast<uint64_t>(a) < static_cast<uint64_t>(b);
  return a < b;
}
inline bool intIsNegative(DType t, int64_t v) { return isSignedInteger(t) && v < 0; }

inline double intToDouble(DType t, int64_t v) {
  return t == DType::U64 ? static_cast<double>(static_cast<uint64_t>(v)) : static_cast<double>(v);
}

// The element as a double, whatever the storage (uint64 read as unsigned).
inline double valueAt(const Tensor &t, int64_t k) { return t.isFloating() ? t.f[k] : intToDouble(t.dtype, t.i[k]); }

// Smallest and largest value of an integer or bool dtype (uint64's max is the bit pattern -1).
inline std::pair<int64_t, int64_t> intRange(DType t) {
  switch (t) {
    case DType::Bool: return {0, 1};
    case DType::I8: return {-128, 127};
    case DType::U8: return {0, 255};
    case DType::I16: return {-32768, 32767};
    case DType::U16: return {0, 65535};
    case DType::I32: return {std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()};
    case DType::U32: return {0, static_cast<int64_t>(std::numeric_limits<uint32_t>::max())};
    case DType::U64: return {0, -1};
    default: return {std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()};
  }
}

// Wrapping integer arithmetic (through uint64, so overflow is defined); callers wrap the result
// to the dtype with Tensor::setInt.
inline int64_t wrapAdd(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
inline int64_t wrapSub(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}
inline int64_t wrapMul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}

// ---------------------------------------------------------------------------------------------
// Factories for one-input, one-output ops whose result has the input's type.

// Shape function: exactly one input of the given kind; result = the input's type.
inline ShapeFn unaryShape(std::string op, Kind kind) {
  return [op, kind](const ShapeContext &ctx) {
    checkInputs(op, ctx, 1, 1);
    checkOutputs(op, ctx, 1);
    checkKind(op, "input", ctx.inputs[0].dtype, kind);
    return std::vector<TensorType>{ctx.inputs[0]};
  };
}

// Applies fn to every element of a float tensor (in double; set() rounds to the dtype).
template <typename F> Tensor mapFloat(const Tensor &x, F fn) {
  Tensor y(x.dtype, x.shape);
  for (int64_t k = 0; k < y.size(); ++k) y.set(k, fn(x.f[k]));
  return y;
}

// Kernel of a float-only unary op whose function has no attributes.
inline EvalFn unaryFloatKernel(std::string op, std::function<double(double)> fn) {
  ShapeFn shape = unaryShape(op, Kind::Float);
  return [shape, fn](const EvalContext &ctx) {
    shape(shapeContextOf(ctx));
    return std::vector<Tensor>{mapFloat(ctx.in(0), fn)};
  };
}

// FLOP count: `perElement` per element of the first result.
inline FlopsFn perElementFlops(int64_t perElement) {
  return [perElement](const ShapeContext &, const std::vector<TensorType> &outs) -> int64_t {
    return outs.empty() ? 0 : perElement * numElements(outs[0].shape);
  };
}

// Cost guesses for transcendental functions (exp, log, tanh, erf, ...), in FLOPs per element.
constexpr int64_t kTranscendentalFlops = 4;

}  // namespace kiln::ops::ew

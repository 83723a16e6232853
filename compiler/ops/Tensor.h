// Plain C++ tensors for the reference semantics of kiln ops (no MLIR, no protobuf).
//
// The reference evaluator favours clarity over speed: every floating-point element is held as a
// double and every integer or bool element as an int64, whatever the tensor's declared dtype.
// Values are rounded to the declared dtype when a kernel stores them (see `roundTo`), so float32
// results match a float32 computation closely while the arithmetic itself runs in double.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::ops {

// Values match onnx::TensorProto::DataType so conversions are casts.
enum class DType : int32_t {
  Undefined = 0,
  F32 = 1,
  U8 = 2,
  I8 = 3,
  U16 = 4,
  I16 = 5,
  I32 = 6,
  I64 = 7,
  String = 8,
  Bool = 9,
  F16 = 10,
  F64 = 11,
  U32 = 12,
  U64 = 13,
  BF16 = 16,
  F8E4M3 = 17,  // float8e4m3fn
};

bool isFloat(DType t);    // F8E4M3, F16, BF16, F32, F64
bool isInteger(DType t);  // signed and unsigned integers (not Bool)
bool isSignedInteger(DType t);
int64_t byteSize(DType t);  // bytes per element as stored in a model or engine (Bool: 1)
// The one spelling of element types in everything kiln prints (plan, inspect, eval, messages):
// numpy's (ml_dtypes' for bfloat16 and float8_e4m3fn), what users' .npz files say.
const char *dtypeName(DType t);  // "float32", "int64", "bool", ...

using Shape = std::vector<int64_t>;
int64_t numElements(const Shape &s);
std::string shapeString(const Shape &s);  // "1x3x224x224", "scalar" for rank 0

// Rounds v to what dtype t can hold: float32/float16/bfloat16/float8 rounding (nearest-even;
// float8e4m3fn saturates to ±448), integer wrap-around for integer dtypes, 0/1 for Bool. Doubles
// pass through.
double roundTo(DType t, double v);
// float8e4m3fn (1 sign, 4 exponent bits biased by 7, 3 mantissa bits; no infinities, S.1111.111
// is NaN, largest finite 448): nearest-even rounding; out of range → ±448 when `saturate`, NaN
// otherwise (ONNX QuantizeLinear's `saturate` attribute and Cast's semantics).
double roundToE4M3(double v, bool saturate = true);
uint8_t e4m3Bits(double v);  // v must already be an e4m3 value (or NaN)
double e4m3FromBits(uint8_t bits);
int64_t wrapInt(DType t, int64_t v);

struct Tensor {
  DType dtype = DType::Undefined;
  Shape shape;
  std::vector<double> f;   // used when isFloat(dtype)
  std::vector<int64_t> i;  // used for integers and Bool

  Tensor() = default;
  Tensor(DType t, Shape s);  // zero-filled storage of the right kind

  int64_t size() const { return numElements(shape); }
  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  bool isFloating() const { return isFloat(dtype); }

  // Element access through double, whatever the storage (int64 → double may round above 2^53).
  double get(int64_t idx) const { return isFloating() ? f[idx] : static_cast<double>(i[idx]); }
  // Stores v rounded to the dtype (float) or truncated toward zero and wrapped (integer).
  void set(int64_t idx, double v);
  int64_t getInt(int64_t idx) const { return isFloating() ? static_cast<int64_t>(f[idx]) : i[idx]; }
  void setInt(int64_t idx, int64_t v);

  // Row-major strides of `shape`.
  Shape strides() const;
  // Values as int64 (for shape-like tensors such as Reshape's shape input).
  std::vector<int64_t> toInts() const;

  static Tensor scalar(DType t, double v);
  static Tensor fromInts(DType t, Shape s, const std::vector<int64_t> &vals);
  static Tensor fromDoubles(DType t, Shape s, const std::vector<double> &vals);
};

// Raw little-endian bytes (as in ONNX raw_data or an engine file) ⇄ Tensor.
Tensor tensorFromBytes(DType t, const Shape &s, const void *data, size_t nbytes);
std::vector<uint8_t> tensorToBytes(const Tensor &t);
// float32 values straight to float16 or bfloat16 bits (nearest-even; finite values beyond the
// type's largest saturate to it): the bytes tensorToBytes gives for those values rounded to the
// type after clamping, without the double-precision detour (the precision pass converts every
// weight of a model this way: BERT-base's 110 M in well under a second instead of eight).
std::vector<uint8_t> halfBytesFromF32(DType half, const float *values, size_t n);

}  // namespace kiln::ops

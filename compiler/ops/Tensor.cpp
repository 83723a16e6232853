#include "compiler/ops/Tensor.h"

#include "compiler/ops/OpSemantics.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace kiln::ops {

bool isFloat(DType t) {
  return t == DType::F16 || t == DType::BF16 || t == DType::F32 || t == DType::F64 || t == DType::F8E4M3;
}
bool isSignedInteger(DType t) { return t == DType::I8 || t == DType::I16 || t == DType::I32 || t == DType::I64; }
bool isInteger(DType t) {
  return isSignedInteger(t) || t == DType::U8 || t == DType::U16 || t == DType::U32 || t == DType::U64;
}

int64_t byteSize(DType t) {
  switch (t) {
    case DType::Bool:
    case DType::U8:
    case DType::I8:
    case DType::F8E4M3: return 1;
    case DType::U16:
    case DType::I16:
    case DType::F16:
    case DType::BF16: return 2;
    case DType::U32:
    case DType::I32:
    case DType::F32: return 4;
    case DType::U64:
    case DType::I64:
    case DType::F64: return 8;
    default: return 0;
  }
}

const char *dtypeName(DType t) {
  switch (t) {
    case DType::F32: return "float32";
    case DType::F64: return "float64";
    case DType::F16: return "float16";
    case DType::BF16: return "bfloat16";
    case DType::F8E4M3: return "float8_e4m3fn";
    case DType::I8: return "int8";
    case DType::I16: return "int16";
    case DType::I32: return "int32";
    case DType::I64: return "int64";
    case DType::U8: return "uint8";
    case DType::U16: return "uint16";
    case DType::U32: return "uint32";
    case DType::U64: return "uint64";
    case DType::Bool: return "bool";
    case DType::String: return "string";
    default: return "undefined";
  }
}

int64_t numElements(const Shape &s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

std::string shapeString(const Shape &s) {
  if (s.empty()) return "scalar";
  std::string r;
  for (size_t k = 0; k < s.size(); ++k) r += (k ? "x" : "") + std::to_string(s[k]);
  return r;
}

// float → half/bfloat16 rounding, nearest-even, through the bit patterns.
static float roundToHalf(float x) {
  if (std::isnan(x) || std::isinf(x)) return x;
  float a = std::fabs(x);
  if (a >= 65520.0f) return std::copysign(std::numeric_limits<float>::infinity(), x);
  if (a < std::ldexp(1.0f, -25)) return std::copysign(0.0f, x);
  int e;
  std::frexp(a, &e);               // a = m * 2^e, m in [0.5, 1)
  int exp = std::max(e - 1, -14);  // half has 10 mantissa bits, min normal exponent -14
  float quantum = std::ldexp(1.0f, exp - 10);
  float q = std::nearbyint(a / quantum) * quantum;  // default rounding mode: nearest-even
  return std::copysign(q, x);
}
static float roundToBF16(float x) {
  if (std::isnan(x)) return x;
  uint32_t u;
  std::memcpy(&u, &x, 4);
  uint32_t lsb = (u >> 16) & 1;
  u += 0x7fff + lsb;
  u &= 0xffff0000u;
  float r;
  std::memcpy(&r, &u, 4);
  return r;
}

double roundToE4M3(double v, bool saturate) {
  if (std::isnan(v)) return v;
  double a = std::fabs(v);
  if (std::isinf(a)) return saturate ? std::copysign(448.0, v) : std::numeric_limits<double>::quiet_NaN();
  if (a < std::ldexp(1.0, -10)) return std::copysign(0.0, v);  // below half the smallest subnormal
  int e;
  std::frexp(a, &e);              // a = m * 2^e, m in [0.5, 1)
  int exp = std::max(e - 1, -6);  // 3 mantissa bits, min normal exponent -6
  double quantum = std::ldexp(1.0, exp - 3);
  double q = std::nearbyint(a / quantum) * quantum;
  if (q > 448.0) return saturate ? std::copysign(448.0, v) : std::numeric_limits<double>::quiet_NaN();
  return std::copysign(q, v);
}

uint8_t e4m3Bits(double v) {
  if (std::isnan(v)) return 0x7f;
  uint8_t sign = std::signbit(v) ? 0x80 : 0;
  double a = std::fabs(v);
  if (a == 0) return sign;
  int e;
  std::frexp(a, &e);
  int exp = e - 1;
  if (exp < -6) return sign | static_cast<uint8_t>(std::nearbyint(a / std::ldexp(1.0, -9)));  // subnormal
  int man = static_cast<int>(std::nearbyint(a / std::ldexp(1.0, exp - 3))) - 8;
  return sign | static_cast<uint8_t>((exp + 7) << 3) | static_cast<uint8_t>(man);
}

double e4m3FromBits(uint8_t b) {
  int exp = (b >> 3) & 0xf, man = b & 7;
  if (exp == 15 && man == 7) return std::numeric_limits<double>::quiet_NaN();
  double v = exp == 0 ? std::ldexp(double(man), -9) : std::ldexp(double(8 + man), exp - 10);
  return (b & 0x80) ? -v : v;
}

int64_t wrapInt(DType t, int64_t v) {
  switch (t) {
    case DType::I8: return static_cast<int8_t>(v);
    case DType::I16: return static_cast<int16_t>(v);
    case DType::I32: return static_cast<int32_t>(v);
    case DType::U8: return static_cast<uint8_t>(v);
    case DType::U16: return static_cast<uint16_t>(v);
    case DType::U32: return static_cast<uint32_t>(v);
    case DType::Bool: return v != 0;
    default: return v;
  }
}

double roundTo(DType t, double v) {
  switch (t) {
    case DType::F64: return v;
    case DType::F32: return static_cast<float>(v);
    case DType::F16: return roundToHalf(static_cast<float>(v));
    case DType::BF16: return roundToBF16(static_cast<float>(v));
    case DType::F8E4M3: return roundToE4M3(v);
    case DType::Bool: return v != 0.0;
    default: {
      if (std::isnan(v)) return 0;
      return static_cast<double>(wrapInt(t, static_cast<int64_t>(v)));
    }
  }
}

Tensor::Tensor(DType t, Shape s) : dtype(t), shape(std::move(s)) {
  if (isFloat(t))
    f.assign(size(), 0.0);
  else
    i.assign(size(), 0);
}

void Tensor::set(int64_t idx, double v) {
  if (isFloating()) {
    f[idx] = roundTo(dtype, v);
  } else if (dtype == DType::Bool) {
    i[idx] = v != 0.0;
  } else {
    // Saturate before the cast so out-of-range doubles are defined; then wrap like a C cast.
    double c = std::isnan(v) ? 0.0 : std::trunc(v);
    c = std::max(-9.2e18, std::min(9.2e18, c));
    i[idx] = wrapInt(dtype, static_cast<int64_t>(c));
  }
}

void Tensor::setInt(int64_t idx, int64_t v) {
  if (isFloating())
    f[idx] = roundTo(dtype, static_cast<double>(v));
  else
    i[idx] = wrapInt(dtype, v);
}

Shape Tensor::strides() const {
  Shape s(shape.size(), 1);
  for (int64_t k = rank() - 2; k >= 0; --k) s[k] = s[k + 1] * shape[k + 1];
  return s;
}

std::vector<int64_t> Tensor::toInts() const {
  std::vector<int64_t> r(size());
  for (int64_t k = 0; k < size(); ++k) r[k] = getInt(k);
  return r;
}

Tensor Tensor::scalar(DType t, double v) {
  Tensor r(t, {});
  r.set(0, v);
  return r;
}
Tensor Tensor::fromInts(DType t, Shape s, const std::vector<int64_t> &vals) {
  Tensor r(t, std::move(s));
  check(static_cast<int64_t>(vals.size()) == r.size(), "fromInts: size mismatch");
  for (int64_t k = 0; k < r.size(); ++k) r.setInt(k, vals[k]);
  return r;
}
Tensor Tensor::fromDoubles(DType t, Shape s, const std::vector<double> &vals) {
  Tensor r(t, std::move(s));
  check(static_cast<int64_t>(vals.size()) == r.size(), "fromDoubles: size mismatch");
  for (int64_t k = 0; k < r.size(); ++k) r.set(k, vals[k]);
  return r;
}

static double halfBitsToDouble(uint16_t h) {
  int sign = h >> 15, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  double v;
  if (exp == 0)
    v = std::ldexp(static_cast<double>(man), -24);
  else if (exp == 31)
    v = man ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  else
    v = std::ldexp(static_cast<double>(man | 0x400), exp - 25);
  return sign ? -v : v;
}
static uint16_t doubleToHalfBits(double d) {
  float x = roundToHalf(static_cast<float>(d));
  uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  float a = std::fabs(x);
  if (std::isnan(x)) return sign | 0x7e00;
  if (std::isinf(a)) return sign | 0x7c00;
  if (a == 0) return sign;
  int e;
  float m = std::frexp(a, &e);  // a = m*2^e, m in [0.5,1)
  int exp = e - 1;
  if (exp < -14) return sign | static_cast<uint16_t>(std::nearbyint(a / std::ldexp(1.0f, -24)));
  uint16_t man = static_cast<uint16_t>(std::nearbyint((m * 2 - 1) * 1024));
  return sign | static_cast<uint16_t>((exp + 15) << 10) | man;
}

std::vector<uint8_t> halfBytesFromF32(DType half, const float *values, size_t n) {
  check(half == DType::F16 || half == DType::BF16, "halfBytesFromF32 makes float16 or bfloat16");
  std::vector<uint8_t> out(n * 2);
  for (size_t k = 0; k < n; ++k) {
    uint32_t x;
    std::memcpy(&x, &values[k], 4);
    const uint32_t sign = (x >> 16) & 0x8000u, a = x & 0x7fffffffu;
    uint16_t h;
    if (half == DType::BF16) {
      if (a > 0x7f800000u)
        h = uint16_t(sign | 0x7fc0u);  // NaN
      else if (a == 0x7f800000u)
        h = uint16_t(sign | 0x7f80u);  // inf
      else if (a >= 0x7f7f0000u)
        h = uint16_t(sign | 0x7f7fu);  // saturate
      else
        h = uint16_t(sign | ((a + 0x7fffu + ((a >> 16) & 1u)) >> 16));  // nearest-even
    } else if (a > 0x7f800000u) {
      h = uint16_t(sign | 0x7e00u);
    } else if (a == 0x7f800000u) {
      h = uint16_t(sign | 0x7c00u);
    } else if (a >= 0x477fe000u) {  // >= 65504: saturate
      h = uint16_t(sign | 0x7bffu);
    } else if (a < 0x38800000u) {  // below 2^-14: a subnormal, in units of 2^-24 (exact scaling)
      float m;
      std::memcpy(&m, &a, 4);
      h = uint16_t(sign | uint32_t(std::nearbyint(m * 16777216.0f)));
    } else {
      uint32_t bits = ((a >> 23) - 112u) << 10 | ((a >> 13) & 0x3ffu), rest = a & 0x1fffu;
      if (rest > 0x1000u || (rest == 0x1000u && (bits & 1u))) ++bits;  // (a carry moves into the exponent)
      h = uint16_t(sign | bits);
    }
    std::memcpy(out.data() + 2 * k, &h, 2);
  }
  return out;
}

Tensor tensorFromBytes(DType t, const Shape &s, const void *data, size_t nbytes) {
  Tensor r(t, s);
  check(static_cast<int64_t>(nbytes) == r.size() * byteSize(t),
        "tensor data has " + std::to_string(nbytes) + " bytes, expected " + std::to_string(r.size() * byteSize(t)) +
            " for " + dtypeName(t) + " " + shapeString(s));
  const uint8_t *p = static_cast<const uint8_t *>(data);
  for (int64_t k = 0; k < r.size(); ++k) {
    const uint8_t *e = p + k * byteSize(t);
    switch (t) {
      case DType::F32: {
        float v;
        std::memcpy(&v, e, 4);
        r.f[k] = v;
        break;
      }
      case DType::F64: {
        double v;
        std::memcpy(&v, e, 8);
        r.f[k] = v;
        break;
      }
      case DType::F16: {
        uint16_t v;
        std::memcpy(&v, e, 2);
        r.f[k] = halfBitsToDouble(v);
        break;
      }
      case DType::BF16: {
        uint16_t v;
        std::memcpy(&v, e, 2);
        uint32_t u = static_cast<uint32_t>(v) << 16;
        float x;
        std::memcpy(&x, &u, 4);
        r.f[k] = x;
        break;
      }
      case DType::F8E4M3: r.f[k] = e4m3FromBits(*e); break;
      case DType::I8: r.i[k] = static_cast<int8_t>(*e); break;
      case DType::U8:
      case DType::Bool: r.i[k] = *e; break;
      case DType::I16: {
        int16_t v;
        std::memcpy(&v, e, 2);
        r.i[k] = v;
        break;
      }
      case DType::U16: {
        uint16_t v;
        std::memcpy(&v, e, 2);
        r.i[k] = v;
        break;
      }
      case DType::I32: {
        int32_t v;
        std::memcpy(&v, e, 4);
        r.i[k] = v;
        break;
      }
      case DType::U32: {
        uint32_t v;
        std::memcpy(&v, e, 4);
        r.i[k] = v;
        break;
      }
      case DType::I64:
      case DType::U64: {
        int64_t v;
        std::memcpy(&v, e, 8);
        r.i[k] = v;
        break;
      }
      default: fail(std::string("unsupported dtype ") + dtypeName(t));
    }
  }
  return r;
}

std::vector<uint8_t> tensorToBytes(const Tensor &t) {
  int64_t bs = byteSize(t.dtype);
  check(bs > 0, std::string("unsupported dtype ") + dtypeName(t.dtype));
  std::vector<uint8_t> out(t.size() * bs);
  for (int64_t k = 0; k < t.size(); ++k) {
    uint8_t *e = out.data() + k * bs;
    switch (t.dtype) {
      case DType::F32: {
        float v = static_cast<float>(t.f[k]);
        std::memcpy(e, &v, 4);
        break;
      }
      case DType::F64: std::memcpy(e, &t.f[k], 8); break;
      case DType::F16: {
        uint16_t v = doubleToHalfBits(t.f[k]);
        std::memcpy(e, &v, 2);
        break;
      }
      case DType::BF16: {
        float x = roundToBF16(static_cast<float>(t.f[k]));
        uint32_t u;
        std::memcpy(&u, &x, 4);
        uint16_t v = static_cast<uint16_t>(u >> 16);
        std::memcpy(e, &v, 2);
        break;
      }
      case DType::F8E4M3: *e = e4m3Bits(roundToE4M3(t.f[k])); break;
      case DType::I8:
      case DType::U8:
      case DType::Bool: *e = static_cast<uint8_t>(t.i[k]); break;
      case DType::I16:
      case DType::U16: {
        uint16_t v = static_cast<uint16_t>(t.i[k]);
        std::memcpy(e, &v, 2);
        break;
      }
      case DType::I32:
      case DType::U32: {
        uint32_t v = static_cast<uint32_t>(t.i[k]);
        std::memcpy(e, &v, 4);
        break;
      }
      default: std::memcpy(e, &t.i[k], 8); break;
    }
  }
  return out;
}

}  // namespace kiln::ops

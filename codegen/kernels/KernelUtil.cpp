#include "codegen/kernels/KernelUtil.h"

#include "compiler/support/Hash.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace kiln::codegen::kernels {

KernelLaunch finalizeKernel(const std::string &kind, const std::string &source) {
  KernelLaunch k;
  k.entry = "kiln_" + kind + "_" + support::hex64(support::hash64(source));
  const std::string key = "KILN_ENTRY";
  std::string out;
  out.reserve(source.size() + 32);
  size_t pos = 0;
  for (;;) {
    size_t at = source.find(key, pos);
    if (at == std::string::npos) break;
    out.append(source, pos, at - pos);
    out += k.entry;
    pos = at + key.size();
  }
  out.append(source, pos, std::string::npos);
  k.source = std::move(out);
  return k;
}

const char *typeTag(ElemType t) {
  switch (t) {
    case ElemType::F32: return "f32";
    case ElemType::F16: return "f16";
    case ElemType::BF16: return "bf16";
    case ElemType::I32: return "s32";
    case ElemType::I64: return "s64";
    case ElemType::Bool: return "b8";
    case ElemType::I8: return "s8";
    case ElemType::U8: return "u8";
    case ElemType::F8E4M3: return "e4m3";
    case ElemType::F64: return "f64";
    case ElemType::I16: return "s16";
    case ElemType::U16: return "u16";
    case ElemType::U32: return "u32";
    case ElemType::U64: return "u64";
  }
  return "f32";
}

std::string storeExpr(ElemType t, const std::string &v) {
  if (isFloatType(t)) return std::string("kiln_st<") + storageTypeName(t) + ">(" + v + ")";
  return std::string("(") + storageTypeName(t) + ")(" + v + ")";
}

const char *kDevicePrelude = R"CUDA(
#pragma nv_diag_suppress 177
#define KILN_DEV static __device__ __forceinline__
KILN_DEV float kiln_inf() { return __int_as_float(0x7f800000); }
KILN_DEV float kiln_nan() { return __int_as_float(0x7fc00000); }
KILN_DEV bool kiln_isnan(float x) { return x != x; }
KILN_DEV bool kiln_isinf(float x) { return fabsf(x) == kiln_inf(); }
KILN_DEV bool kiln_isinf(double x) { return fabs(x) == (double)kiln_inf(); }
// Math on float or double (reductions compute float64 data in double).
KILN_DEV float kiln_exp(float x) { return expf(x); }
KILN_DEV double kiln_exp(double x) { return exp(x); }
KILN_DEV float kiln_log(float x) { return logf(x); }
KILN_DEV double kiln_log(double x) { return log(x); }
KILN_DEV float kiln_sqrt(float x) { return sqrtf(x); }
KILN_DEV double kiln_sqrt(double x) { return sqrt(x); }
KILN_DEV float kiln_fabs(float x) { return fabsf(x); }
KILN_DEV double kiln_fabs(double x) { return fabs(x); }
KILN_DEV float kiln_fmax(float a, float b) { return fmaxf(a, b); }
KILN_DEV double kiln_fmax(double a, double b) { return fmax(a, b); }
// max/min that propagate NaN (fmaxf/fminf drop it), as numpy's maximum/minimum do.
KILN_DEV float kiln_max(float a, float b) { return (a != a || b != b) ? kiln_nan() : fmaxf(a, b); }
KILN_DEV float kiln_min(float a, float b) { return (a != a || b != b) ? kiln_nan() : fminf(a, b); }
KILN_DEV double kiln_max(double a, double b) { return (a != a || b != b) ? a + b : fmax(a, b); }
KILN_DEV double kiln_min(double a, double b) { return (a != a || b != b) ? a + b : fmin(a, b); }
template <class T> KILN_DEV T kiln_max(T a, T b) { return a < b ? b : a; }  // integers
template <class T> KILN_DEV T kiln_min(T a, T b) { return b < a ? b : a; }
KILN_DEV float kiln_sigmoid(float x) {
  if (x >= 0.f) return 1.f / (1.f + expf(-x));
  float e = expf(x);
  return e / (1.f + e);
}
KILN_DEV float kiln_softplus(float x) { return x > 0.f ? x + log1pf(expf(-x)) : log1pf(expf(x)); }
// numpy.mod: the remainder takes the divisor's sign.
KILN_DEV float kiln_pymod(float a, float b) {
  float r = fmodf(a, b);
  return (r != 0.f && ((r < 0.f) != (b < 0.f))) ? r + b : r;
}
KILN_DEV double kiln_pymod(double a, double b) {
  double r = fmod(a, b);
  return (r != 0. && ((r < 0.) != (b < 0.))) ? r + b : r;
}
template <class T> KILN_DEV T kiln_pymod(T a, T b) {  // integers (b != 0)
  T r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
// Clip as numpy.clip: NaN passes, max wins when min > max.
KILN_DEV float kiln_clip(float x, float lo, float hi) {
  x = x < lo ? lo : x;
  return x > hi ? hi : x;
}
// Half types are 16-bit storage with explicit conversions (cuda_fp16.h would cost NVRTC time).
// Loads give the compute type (float for every float storage), stores round to nearest even.
struct kiln_half { unsigned short x; };
struct kiln_bf16 { unsigned short x; };
KILN_DEV float kiln_ld(float v) { return v; }
KILN_DEV float kiln_ld(kiln_half h) { float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h.x)); return f; }
KILN_DEV float kiln_ld(kiln_bf16 h) { return __uint_as_float(((unsigned)h.x) << 16); }
KILN_DEV int kiln_ld(int v) { return v; }
KILN_DEV long long kiln_ld(long long v) { return v; }
KILN_DEV bool kiln_ld(bool v) { return v; }
KILN_DEV int kiln_ld(signed char v) { return v; }
KILN_DEV int kiln_ld(unsigned char v) { return v; }
KILN_DEV int kiln_ld(short v) { return v; }
KILN_DEV int kiln_ld(unsigned short v) { return v; }
KILN_DEV unsigned kiln_ld(unsigned v) { return v; }
KILN_DEV unsigned long long kiln_ld(unsigned long long v) { return v; }
KILN_DEV double kiln_ld(double v) { return v; }
// a / b given r = 1 / b (a QuantizeLinear's literal scale, or a divisor the same across a kernel's
// elements, its reciprocal computed once): IEEE's correctly rounded quotient in a few instructions
// instead of the division routine (Markstein: one fma correction of a·r). Where the correction
// could be inexact or meaningless — a, r or the quotient subnormal or near overflow, infinities,
// NaN — it divides (a zero a gives a·r, exact for any finite r). On the host, with the same
// operations: equal to a / b on 2e8 pairs (random bit patterns, zeros, infinities, subnormal
// divisors, quantization scales); without the guards, a·r overflowing gave NaN for ±inf.
KILN_DEV float kiln_div_by(float a, float b, float r) {
  const float q = a * r, aa = fabsf(a), ar = fabsf(r), aq = fabsf(q);
  if (a == 0.f && ar <= 0x1.fffffep127f) return q;
  if (!(aa >= 0x1p-100f && aq >= 0x1p-100f && aq <= 0x1p+126f && ar >= 0x1p-126f && ar <= 0x1.fffffep127f))
    return a / b;
  return fmaf(fmaf(-q, b, a), r, q);
}
// QuantizeLinear's saturation to int8 / uint8 (the value is already rounded; NaN gives 0).
KILN_DEV int kiln_sat_i8(float v) { return v != v ? 0 : (int)fminf(fmaxf(v, -128.f), 127.f); }
KILN_DEV int kiln_sat_u8(float v) { return v != v ? 0 : (int)fminf(fmaxf(v, 0.f), 255.f); }
template <class T> __device__ __forceinline__ T kiln_st(float v) { return (T)v; }
template <> __device__ __forceinline__ kiln_half kiln_st<kiln_half>(float v) {
  kiln_half h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h.x) : "f"(v)); return h;
}
template <> __device__ __forceinline__ kiln_bf16 kiln_st<kiln_bf16>(float v) {
  unsigned u = __float_as_uint(v);
  kiln_bf16 h;
  h.x = (unsigned short)((u & 0x7fffffffu) > 0x7f800000u ? 0x7fc0u : (u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
  return h;
}
// float8e4m3fn storage (sm_89+ conversion instructions; kiln refuses fp8 for older targets).
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 890
struct kiln_fp8 { unsigned char x; };
KILN_DEV float kiln_ld(kiln_fp8 v) {
  unsigned h2;
  asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(h2) : "h"((unsigned short)v.x));
  return kiln_ld(kiln_half{(unsigned short)(h2 & 0xffffu)});
}
template <> __device__ __forceinline__ kiln_fp8 kiln_st<kiln_fp8>(float v) {
  unsigned short p;  // (the pair's upper byte converts 0)
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(p) : "f"(0.f), "f"(v));
  return kiln_fp8{(unsigned char)(p & 0xffu)};
}
#endif
// W elements of T as one aligned access (16 bytes at most for a single load or store).
template <class T, int W> struct __align__(sizeof(T) * W) kiln_vec { T v[W]; };
KILN_DEV float kiln_round_f16(float v) { return kiln_ld(kiln_st<kiln_half>(v)); }
KILN_DEV float kiln_round_bf16(float v) { return kiln_ld(kiln_st<kiln_bf16>(v)); }
)CUDA";

uint32_t gridStrideBlocks(int64_t work, int64_t block, int64_t maxBlocks) {
  int64_t b = ceilDiv(work, block);
  if (b < 1) b = 1;
  if (b > maxBlocks) b = maxBlocks;
  return static_cast<uint32_t>(b);
}

StridedSpace coalesce(StridedSpace s) {
  StridedSpace out;
  out.strides.assign(s.strides.size(), {});
  for (size_t d = 0; d < s.dims.size(); ++d) {
    if (s.dims[d] == 1) continue;
    if (s.dims[d] == 0) {  // empty space: one dim of size 0 is enough
      StridedSpace e;
      e.dims = {0};
      for (size_t k = 0; k < s.strides.size(); ++k) e.strides.push_back({0});
      return e;
    }
    bool merge = !out.dims.empty();
    for (size_t k = 0; merge && k < s.strides.size(); ++k) merge = out.strides[k].back() == s.strides[k][d] * s.dims[d];
    if (merge) {
      out.dims.back() *= s.dims[d];
      for (size_t k = 0; k < s.strides.size(); ++k) out.strides[k].back() = s.strides[k][d];
    } else {
      out.dims.push_back(s.dims[d]);
      for (size_t k = 0; k < s.strides.size(); ++k) out.strides[k].push_back(s.strides[k][d]);
    }
  }
  return out;
}

std::string offsetCode(const StridedSpace &s, const std::vector<std::string> &names, const std::string &idxType,
                       const std::string &linear) {
  std::vector<int64_t> contiguous = contiguousStrides(s.dims);
  std::vector<bool> direct(names.size());
  bool anyStrided = false;
  for (size_t k = 0; k < names.size(); ++k) {
    direct[k] = s.strides[k] == contiguous;
    anyStrided = anyStrided || !direct[k];
  }
  std::string code;
  for (size_t k = 0; k < names.size(); ++k)
    code += "    " + idxType + " " + names[k] + " = " + (direct[k] ? linear : std::string("0")) + ";\n";
  if (!anyStrided) return code;
  code += "    { " + idxType + " r_ = " + linear + ", c_;\n";
  for (int64_t d = static_cast<int64_t>(s.dims.size()) - 1; d >= 0; --d) {
    if (d > 0)
      code += "      c_ = r_ % " + std::to_string(s.dims[d]) + "; r_ /= " + std::to_string(s.dims[d]) + ";";
    else
      code += "      c_ = r_;";
    for (size_t k = 0; k < names.size(); ++k) {
      if (direct[k] || s.strides[k][d] == 0) continue;
      int64_t st = s.strides[k][d];
      code += " " + names[k] + (st == 1 ? " += c_;" : " += c_ * (" + std::to_string(st) + ");");
    }
    code += "\n";
  }
  code += "    }\n";
  return code;
}

std::vector<int64_t> broadcastStrides(const std::vector<int64_t> &shape, const std::vector<int64_t> &outShape,
                                      const std::vector<int64_t> &memStrides) {
  if (shape.size() > outShape.size()) throw std::invalid_argument("broadcast: input rank exceeds output rank");
  if (!memStrides.empty() && memStrides.size() != shape.size())
    throw std::invalid_argument("broadcast: one stride per dim");
  std::vector<int64_t> inStrides = memStrides.empty() ? contiguousStrides(shape) : memStrides;
  std::vector<int64_t> st(outShape.size(), 0);
  size_t off = outShape.size() - shape.size();
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == outShape[off + d])
      st[off + d] = shape[d] == 1 ? 0 : inStrides[d];
    else if (shape[d] == 1)
      st[off + d] = 0;
    else
      throw std::invalid_argument("broadcast: dim " + std::to_string(shape[d]) + " vs " +
                                  std::to_string(outShape[off + d]));
  }
  return st;
}

std::string indexType(int64_t maxExtent) { return maxExtent < (int64_t(1) << 31) ? "int" : "long long"; }

std::string replaceAll(std::string s, const std::string &from, const std::string &to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

std::string arrayLit(const std::vector<int64_t> &v) {
  std::string s = "{";
  for (size_t k = 0; k < v.size(); ++k) s += (k ? ", " : "") + std::to_string(v[k]) + "LL";
  return s + "}";
}

}  // namespace kiln::codegen::kernels

#include "compiler/target/Types.h"

#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <algorithm>

namespace kiln::target {

bool isFloatType(ElemType t) {
  return t == ElemType::F32 || t == ElemType::F16 || t == ElemType::BF16 || t == ElemType::F8E4M3;
}

size_t elemSize(ElemType t) {
  switch (t) {
    case ElemType::F32:
    case ElemType::I32:
    case ElemType::U32: return 4;
    case ElemType::F16:
    case ElemType::BF16:
    case ElemType::I16:
    case ElemType::U16: return 2;
    case ElemType::I64:
    case ElemType::F64:
    case ElemType::U64: return 8;
    case ElemType::Bool:
    case ElemType::I8:
    case ElemType::U8:
    case ElemType::F8E4M3: return 1;
  }
  return 4;
}

int64_t numElementsOf(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::vector<int64_t> contiguousStrides(const std::vector<int64_t> &shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int64_t k = static_cast<int64_t>(shape.size()) - 2; k >= 0; --k) s[k] = s[k + 1] * shape[k + 1];
  return s;
}

const char *storageTypeName(ElemType t) {
  switch (t) {
    case ElemType::F32: return "float";
    case ElemType::F16: return "kiln_half";
    case ElemType::BF16: return "kiln_bf16";
    case ElemType::I32: return "int";
    case ElemType::I64: return "long long";
    case ElemType::Bool: return "bool";
    case ElemType::I8: return "signed char";
    case ElemType::U8: return "unsigned char";
    case ElemType::F8E4M3: return "kiln_fp8";
    case ElemType::F64: return "double";
    case ElemType::I16: return "short";
    case ElemType::U16: return "unsigned short";
    case ElemType::U32: return "unsigned int";
    case ElemType::U64: return "unsigned long long";
  }
  return "float";
}

const char *computeTypeName(ElemType t) {
  if (isFloatType(t)) return "float";
  bool narrow = t == ElemType::I8 || t == ElemType::U8 || t == ElemType::I16 || t == ElemType::U16;
  return narrow ? "int" : storageTypeName(t);
}

std::vector<int64_t> broadcastShapes(const std::vector<std::vector<int64_t>> &shapes) {
  size_t rank = 0;
  for (const auto &s : shapes) rank = std::max(rank, s.size());
  std::vector<int64_t> out(rank, 1);
  for (const auto &s : shapes) {
    size_t off = rank - s.size();
    for (size_t d = 0; d < s.size(); ++d) {
      int64_t &o = out[off + d];
      if (s[d] == o || s[d] == 1) continue;
      if (o == 1)
        o = s[d];
      else
        throw std::invalid_argument("shapes do not broadcast");
    }
  }
  return out;
}

std::string floatLiteral(float v) {
  if (std::isnan(v)) return "(__int_as_float(0x7fc00000))";
  if (std::isinf(v)) return v > 0 ? "(__int_as_float(0x7f800000))" : "(__int_as_float(0xff800000))";
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(v));
  std::string s = buf;
  if (s.find_first_of(".eE") == std::string::npos) s += ".0";
  return "(" + s + "f)";
}

std::string typedLiteral(double v, ElemType t) {
  if (isFloatType(t)) return floatLiteral(static_cast<float>(v));
  if (t == ElemType::Bool) return v != 0 ? "true" : "false";
  if (t == ElemType::F64) {
    if (!std::isfinite(v)) return "((double)" + floatLiteral(static_cast<float>(v)) + ")";
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    std::string s = buf;
    if (s.find_first_of(".eE") == std::string::npos) s += ".0";
    return "(" + s + ")";
  }
  if (t == ElemType::U64) return "(" + std::to_string(static_cast<uint64_t>(v)) + "ULL)";
  if (t == ElemType::U32) return "(" + std::to_string(static_cast<uint32_t>(v)) + "u)";
  if (t == ElemType::I64) return "(" + intLiteral(static_cast<int64_t>(v)) + ")";
  return "(" + std::to_string(static_cast<int64_t>(v)) + ")";  // int, and 8/16-bit types computed in int
}

std::string intLiteral(int64_t v) {
  if (v == INT64_MIN) return "(-9223372036854775807LL - 1)";
  return std::to_string(v) + "LL";
}

}  // namespace kiln::target

#include "codegen/KernelSpec.h"

namespace kiln::codegen {

const char *cudaTypeName(ElemType t) {
  switch (t) {
    case ElemType::F32: return "float";
    case ElemType::F16: return "__half";
    case ElemType::BF16: return "__nv_bfloat16";
    case ElemType::I32: return "int";
    case ElemType::I64: return "long long";
    case ElemType::Bool: return "bool";
    case ElemType::I8: return "signed char";
    case ElemType::U8: return "unsigned char";
  }
  return "float";
}

}  // namespace kiln::codegen

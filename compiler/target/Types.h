// Element types and shape arithmetic shared by the compiler's passes and the kernel emitters
// (plain C++, no MLIR): what a value is stored as on the GPU, and the CUDA spelling of constants
// that the elementwise table writes into its expressions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace kiln::target {

// Element types the kernels handle. F16, BF16 and F8E4M3 (float8e4m3fn) are float storage types:
// they load as float and store rounded to nearest-even (fp8 saturating to ±448, sm_89+
// conversions). F64 computes in double, the integer types in int (8 and 16 bits) or their own type.
enum class ElemType { F32, F16, BF16, I32, I64, Bool, I8, U8, F8E4M3, F64, I16, U16, U32, U64 };

bool isFloatType(ElemType t);  // F32, F16, BF16, F8E4M3
size_t elemSize(ElemType t);

inline int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Product of dims (1 for an empty shape).
int64_t numElementsOf(const std::vector<int64_t> &shape);

// Row-major strides of a shape.
std::vector<int64_t> contiguousStrides(const std::vector<int64_t> &shape);

// Element type of a tensor as CUDA spells it, with bool kept 1 byte and half types as the
// kernel prelude's 16-bit `kiln_half` / `kiln_bf16` and 8-bit `kiln_fp8` (no cuda_fp16.h).
const char *storageTypeName(ElemType t);
// The type a value is computed in: float for every float storage, else the storage type (int for
// 8- and 16-bit integers).
const char *computeTypeName(ElemType t);

// numpy broadcast of several shapes; throws std::invalid_argument when incompatible.
std::vector<int64_t> broadcastShapes(const std::vector<std::vector<int64_t>> &shapes);

// A CUDA float literal that round-trips `v` exactly ("1.00000001e-07f", "(__int_as_float(0x7f800000))"
// for infinities/NaN, since NVRTC has no INFINITY).
std::string floatLiteral(float v);

// An integer literal of a 64-bit value ("123LL").
std::string intLiteral(int64_t v);

// A compile-time constant of compute type `t`, as a CUDA literal.
std::string typedLiteral(double v, ElemType t);

}  // namespace kiln::target

// Shared helpers of the kernel emitters: content hashes for entry names, exact float literals,
// launch-size arithmetic. Every emitter writes its source with the placeholder `KILN_ENTRY` for
// the entry's name; `finalizeKernel` replaces it with `kiln_<kind>_<hash of the source>`, so two
// emitters' calls that produce the same source produce the same entry (and dedupe).
#pragma once

#include "codegen/KernelSpec.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::codegen::kernels {

using target::broadcastShapes;
using target::ceilDiv;
using target::computeTypeName;
using target::contiguousStrides;
using target::elemSize;
using target::floatLiteral;
using target::intLiteral;
using target::isFloatType;
using target::numElementsOf;
using target::storageTypeName;

// Replaces every `KILN_ENTRY` in `source` by `kiln_<kind>_<16 hex digits>` and fills `entry`
// and `source` of the result.
KernelLaunch finalizeKernel(const std::string &kind, const std::string &source);

// A short tag for kernel names: "f32", "f16", "bf16", "e4m3", "s8", "u8", "s32", "s64", "b8". Product and
// convolution kernels are named kiln_<kind>_<tag>_<hash> (`kiln inspect` reads their precision).
const char *typeTag(ElemType t);
// A store of compute value `v` to storage type `t`: "kiln_st<kiln_half>(v)" or "(int)(v)".
std::string storeExpr(ElemType t, const std::string &v);

// Device helpers every emitted source may use (no headers): kiln_isnan, kiln_inf, NaN-propagating
// max/min, sigmoid, softplus, the half types with kiln_ld (load → compute type) and kiln_st<T>
// (compute → storage, round to nearest even), kiln_round_f16/bf16.
extern const char *kDevicePrelude;

// Blocks for a grid-stride loop over `work` items with `block` threads each, capped at
// `maxBlocks` (the loop covers the rest). At least 1.
uint32_t gridStrideBlocks(int64_t work, int64_t block, int64_t maxBlocks = 8192);

// Strided N-D iteration shared by Elementwise and Copy. `dims` is an iteration space (row-major);
// each operand has one element stride per dim (0 = broadcast, negative allowed).
struct StridedSpace {
  std::vector<int64_t> dims;
  std::vector<std::vector<int64_t>> strides;  // [operand][dim]
};

// Drops size-1 dims and merges neighbours that every operand walks contiguously, so identical
// shapes become one flat dim. The element count is unchanged; an empty space stays rank 0.
StridedSpace coalesce(StridedSpace s);

// CUDA statements that decompose the linear index `linear` (of type `idxType`) over `s.dims` and
// declare `idxType <names[k]>` = the element offset of operand k. Operands whose strides are the
// row-major strides of the whole space get `linear` itself.
std::string offsetCode(const StridedSpace &s, const std::vector<std::string> &names, const std::string &idxType,
                       const std::string &linear);

// Broadcast strides of an input `shape` right-aligned to `outShape` (numpy rules): the input's
// own element strides `memStrides` (default: row-major) for its dims, 0 where it broadcasts;
// throws std::invalid_argument when it does not broadcast.
std::vector<int64_t> broadcastStrides(const std::vector<int64_t> &shape, const std::vector<int64_t> &outShape,
                                      const std::vector<int64_t> &memStrides = {});

// "int" when every offset fits in 31 bits, else "long long".
std::string indexType(int64_t maxExtent);

// Every occurrence of `from` in `s` replaced by `to` (emitters fill their templates' placeholders).
std::string replaceAll(std::string s, const std::string &from, const std::string &to);

// A CUDA array initialiser of 64-bit values: "{1LL, 2LL}".
std::string arrayLit(const std::vector<int64_t> &v);

// Tensor-core device helpers (MatMul.cpp): smem_addr, cp_async16 (zero fill when not valid),
// cp_async_commit/wait, ldsm_x4[_trans], and mma_step, the m16n8k16 fp32-accumulating step for
// `type` (F16 or BF16). The source must define KILN_INT8 and KILN_FP8 (0, or 1 for MatMul's
// 8-bit steps) before it.
std::string mmaHelpers(ElemType type);

}  // namespace kiln::codegen::kernels

// cuBLASLt, loaded at run time with dlopen only by engines that use it (gemm.tactic=cublaslt),
// through one table of function pointers as the driver is. The declarations below are the few
// types and enum values of cublasLt.h (CUDA 13) that the executor needs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace kiln::rt {

using cublasStatus = int;
using cublasLtHandle = struct cublasLtContext*;
using cublasLtMatmulDesc = struct cublasLtMatmulDescOpaque*;
using cublasLtMatrixLayout = struct cublasLtMatrixLayoutOpaque*;
using cublasLtMatmulPreference = struct cublasLtMatmulPreferenceOpaque*;
struct cublasLtMatmulAlgo {
  uint64_t data[8];
};
struct cublasLtMatmulHeuristicResult {
  cublasLtMatmulAlgo algo;
  size_t workspaceSize;
  cublasStatus state;
  float wavesCount;
  int reserved[4];
};

namespace lt {
constexpr int CUBLAS_COMPUTE_32F = 68, CUBLAS_COMPUTE_32F_FAST_TF32 = 77;
constexpr int CUDA_R_32F = 0, CUDA_R_16F = 2, CUDA_R_16BF = 14, CUDA_R_8F_E4M3 = 28;
constexpr int OP_N = 0, OP_T = 1;
constexpr int DESC_TRANSA = 3, DESC_TRANSB = 4, DESC_EPILOGUE = 7, DESC_BIAS_POINTER = 8, DESC_BIAS_DATA_TYPE = 26;
constexpr int DESC_A_SCALE_POINTER = 17, DESC_B_SCALE_POINTER = 18, DESC_A_SCALE_MODE = 31, DESC_B_SCALE_MODE = 32;
constexpr int32_t MATRIX_SCALE_OUTER_VEC_32F = 3;
constexpr int LAYOUT_BATCH_COUNT = 5, LAYOUT_STRIDED_BATCH_OFFSET = 6, LAYOUT_BATCH_MODE = 8;
constexpr uint32_t BATCH_MODE_POINTER_ARRAY = 1;
constexpr int PREF_MAX_WORKSPACE_BYTES = 1, PREF_MIN_ALIGNMENT_A_BYTES = 5;  // (B, C, D: 6, 7, 8)
constexpr uint32_t EPILOGUE_DEFAULT = 1, EPILOGUE_RELU = 2, EPILOGUE_BIAS = 4, EPILOGUE_RELU_BIAS = 6;
}  // namespace lt

struct CublasLt {
  cublasStatus (*cublasLtCreate)(cublasLtHandle*);
  cublasStatus (*cublasLtDestroy)(cublasLtHandle);
  cublasStatus (*cublasLtMatmulDescCreate)(cublasLtMatmulDesc*, int computeType, int scaleType);
  cublasStatus (*cublasLtMatmulDescDestroy)(cublasLtMatmulDesc);
  cublasStatus (*cublasLtMatmulDescSetAttribute)(cublasLtMatmulDesc, int attr, const void*, size_t);
  cublasStatus (*cublasLtMatrixLayoutCreate)(cublasLtMatrixLayout*, int type, uint64_t rows, uint64_t cols, int64_t ld);
  cublasStatus (*cublasLtMatrixLayoutDestroy)(cublasLtMatrixLayout);
  cublasStatus (*cublasLtMatrixLayoutSetAttribute)(cublasLtMatrixLayout, int attr, const void*, size_t);
  cublasStatus (*cublasLtMatmulPreferenceCreate)(cublasLtMatmulPreference*);
  cublasStatus (*cublasLtMatmulPreferenceDestroy)(cublasLtMatmulPreference);
  cublasStatus (*cublasLtMatmulPreferenceSetAttribute)(cublasLtMatmulPreference, int attr, const void*, size_t);
  cublasStatus (*cublasLtMatmulAlgoGetHeuristic)(cublasLtHandle, cublasLtMatmulDesc, cublasLtMatrixLayout,
                                                 cublasLtMatrixLayout, cublasLtMatrixLayout, cublasLtMatrixLayout,
                                                 cublasLtMatmulPreference, int, cublasLtMatmulHeuristicResult*, int*);
  cublasStatus (*cublasLtMatmul)(cublasLtHandle, cublasLtMatmulDesc, const void* alpha, const void* A,
                                 cublasLtMatrixLayout, const void* B, cublasLtMatrixLayout, const void* beta,
                                 const void* C, cublasLtMatrixLayout, void* D, cublasLtMatrixLayout,
                                 const cublasLtMatmulAlgo*, void* workspace, size_t workspaceBytes, void* stream);
  const char* (*cublasLtGetStatusName)(cublasStatus);
  size_t (*cublasLtGetVersion)();

  std::string describe(cublasStatus s) const;
};

// The process-wide table, loaded on first use (thread-safe): libcublasLt.so.13 from the loader's
// path, else $CUDA_HOME/lib64 or /usr/local/cuda/lib64 ($KILN_CUBLASLT names the file
// instead). Null when it cannot be loaded; `why` then says why.
const CublasLt* cublasLt(std::string& why);

}  // namespace kiln::rt

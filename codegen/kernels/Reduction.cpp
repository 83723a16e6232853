#include "codegen/kernels/Reduction.h"

#include "codegen/kernels/IndexKernel.h"
#include "codegen/kernels/KernelUtil.h"

#include <map>
#include <stdexcept>

namespace kiln::codegen {

using namespace kernels;

bool rowOpFromName(const std::string &opType, RowOp *op) {
  static const std::map<std::string, RowOp> names = {
      {"Softmax", RowOp::Softmax},
      {"LogSoftmax", RowOp::LogSoftmax},
      {"LayerNormalization", RowOp::LayerNorm},
      {"RMSNormalization", RowOp::RmsNorm},
      {"ReduceSum", RowOp::Sum},
      {"ReduceMean", RowOp::Mean},
      {"ReduceMax", RowOp::Max},
      {"ReduceMin", RowOp::Min},
      {"ReduceProd", RowOp::Prod},
      {"ReduceSumSquare", RowOp::SumSquare},
      {"ReduceL1", RowOp::L1},
      {"ReduceL2", RowOp::L2},
      {"ReduceLogSum", RowOp::LogSum},
      {"ReduceLogSumExp", RowOp::LogSumExp},
  };
  auto it = names.find(opType);
  if (it == names.end()) return false;
  *op = it->second;
  return true;
}

namespace {

// Shared by every row kernel: the constants and AT (the arithmetic type: double for float64
// data, else float) come first (emitted), then this.
// Combines: 0 sum, 1 fmax (NaN-skipping, for softmax), 2 NaN-propagating max, 3 NaN-propagating
// min, 4 product.
const char *kRowCommon = R"CUDA(
constexpr int PER = (int)((COLS + T - 1) / T);  // elements of a row per thread
template <int K> KILN_DEV AT comb(AT a, AT b) {
  if (K == 0) return a + b;
  if (K == 1) return kiln_fmax(a, b);
  if (K == 2) return kiln_max(a, b);
  if (K == 3) return kiln_min(a, b);
  return a * b;
}
// Combines v over the T threads of one row (every one gets the result). T is 1, 32 or a multiple
// of 32 (then one row per block, using sm[32]).
template <int K> KILN_DEV AT row_reduce(AT v, AT *sm) {
  if (T == 1) return v;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = comb<K>(v, __shfl_xor_sync(0xffffffffu, v, o));
  if (T > 32) {
    __syncthreads();  // earlier readers of sm are done
    if ((threadIdx.x & 31) == 0) sm[threadIdx.x >> 5] = v;
    __syncthreads();
    v = sm[0];
    for (int k = 1; k < T / 32; ++k) v = comb<K>(v, sm[k]);
  }
  return v;
}
)CUDA";

const char *opName(RowOp op) {
  switch (op) {
    case RowOp::Softmax: return "Softmax";
    case RowOp::LogSoftmax: return "LogSoftmax";
    case RowOp::LayerNorm: return "LayerNormalization";
    case RowOp::InstanceNorm: return "InstanceNormalization";
    case RowOp::RmsNorm: return "RMSNormalization";
    case RowOp::Sum: return "ReduceSum";
    case RowOp::Mean: return "ReduceMean";
    case RowOp::Max: return "ReduceMax";
    case RowOp::Min: return "ReduceMin";
    case RowOp::Prod: return "ReduceProd";
    case RowOp::SumSquare: return "ReduceSumSquare";
    case RowOp::L1: return "ReduceL1";
    case RowOp::L2: return "ReduceL2";
    case RowOp::LogSum: return "ReduceLogSum";
    case RowOp::LogSumExp: return "ReduceLogSumExp";
    case RowOp::MinMax: return "ReduceMinMax";
  }
  return "?";
}

// How a one-output reduction accumulates `xv` into `acc`: its start, step, final value (`count`:
// the reduced length, for Mean) and row_reduce's combine (kRowCommon). Not LogSumExp, which
// needs the maximum first.
struct Accumulation {
  std::string init = "(AT)0", step = "acc += xv;", fin = "acc";
  int combine = 0;
};
Accumulation accumulationOf(RowOp op, const std::string &count) {
  Accumulation a;
  switch (op) {
    case RowOp::Mean: a.fin = "acc / " + count; break;
    case RowOp::Max: a = {"-kiln_inf()", "acc = kiln_max(acc, xv);", "acc", 2}; break;
    case RowOp::Min: a = {"kiln_inf()", "acc = kiln_min(acc, xv);", "acc", 3}; break;
    case RowOp::Prod: a = {"(AT)1", "acc *= xv;", "acc", 4}; break;
    case RowOp::SumSquare: a.step = "acc += xv * xv;"; break;
    case RowOp::L1: a.step = "acc += kiln_fabs(xv);"; break;
    case RowOp::L2: a = {"(AT)0", "acc += xv * xv;", "kiln_sqrt(acc)", 0}; break;
    case RowOp::LogSum: a.fin = "kiln_log(acc)"; break;
    default: break;  // Sum
  }
  return a;
}

}  // namespace

// The loop over a thread's elements of the row: `body` sees `j` (column) and `p` (slot).
static std::string rowLoop(const std::string &body, bool full) {
  return std::string(full ? "#pragma unroll\n" : "#pragma unroll 4\n") +
         "    for (int p = 0; p < PER; ++p) { const long long j = (long long)t + (long long)p * T;"
         " if (j < COLS) { " +
         body + " } }\n";
}

KernelLaunch emitRowReduction(const RowReductionSpec &s) {
  if (s.outer < 0 || s.cols < 0 || s.inner < 1) throw std::invalid_argument("row reduction: bad view");
  const bool norm = s.op == RowOp::LayerNorm || s.op == RowOp::InstanceNorm || s.op == RowOp::RmsNorm;
  if (norm && s.inner != 1) throw std::invalid_argument("row reduction: a normalization needs inner == 1");
  if (s.op == RowOp::RmsNorm && (s.hasBias || s.statsOutputs))
    throw std::invalid_argument("row reduction: RMSNormalization has no bias and no statistics outputs");
  if (s.op == RowOp::InstanceNorm && (s.channels < 1 || !s.hasBias || s.statsOutputs))
    throw std::invalid_argument(
        "row reduction: InstanceNormalization needs channels, a bias and no statistics outputs");
  const int64_t rows = s.outer * s.inner;
  int T, rpb, block;
  if (s.inner > 1) {
    T = 1;
    rpb = 256;
    block = 256;
  } else {
    T = s.threadsPerRow;
    if (T == 0) T = s.cols <= 1024 ? 32 : s.cols <= 4096 ? 256 : s.cols <= 8192 ? 512 : 1024;
    if (T != 32 && (T % 32 != 0 || T > 1024))
      throw std::invalid_argument("row reduction: threadsPerRow must be 32..1024, a multiple of 32");
    rpb = T == 32 ? 8 : 1;
    block = T * rpb;
  }
  int64_t per = (s.cols + T - 1) / T;
  bool normalize = s.op == RowOp::Softmax || s.op == RowOp::LogSoftmax || norm || s.op == RowOp::LogSumExp;
  bool cache = normalize && per <= 32;
  const bool second = s.op == RowOp::MinMax && !s.sameInput;

  std::string src = std::string("// kiln row kernel: ") + opName(s.op) + " over [" + std::to_string(s.outer) + ", " +
                    std::to_string(s.cols) + ", " + std::to_string(s.inner) + "]\n";
  src += kDevicePrelude;
  src += std::string("typedef ") + storageTypeName(s.type) + " XT;\ntypedef " + storageTypeName(s.outType) +
         " OT;\ntypedef " + storageTypeName(s.statsType) + " ST;\ntypedef " +
         (s.type == ElemType::F64 ? "double" : "float") + " AT;\n";
  src += "constexpr long long ROWS = " + std::to_string(rows) + "LL, COLS = " + std::to_string(s.cols) +
         "LL, INNER = " + std::to_string(s.inner) + "LL;\n";
  src += "constexpr int T = " + std::to_string(T) + ", RPB = " + std::to_string(rpb) + ";\n";
  src += kRowCommon;
  // Stores of AT values: double storage takes them as they are, float storage rounds.
  src += std::string("#define KILN_ST_OT(v) ") + (s.outType == ElemType::F64 ? "((OT)(v))" : "kiln_st<OT>(v)") + "\n";
  src += std::string("#define KILN_ST_ST(v) ") + (s.statsType == ElemType::F64 ? "((ST)(v))" : "kiln_st<ST>(v)") + "\n";

  // Parameters.
  std::string params = "const XT* __restrict__ in, ";
  if (norm) {
    params += "const XT* __restrict__ scale, ";
    if (s.hasBias) params += "const XT* __restrict__ bias, ";
    params += "OT* __restrict__ out";
    if (s.statsOutputs) params += ", ST* __restrict__ mean_out, ST* __restrict__ inv_out";
  } else if (s.op == RowOp::MinMax) {
    params += "const XT* __restrict__ in2, OT* __restrict__ out, OT* __restrict__ out2";
  } else {
    params += "OT* __restrict__ out";
  }

  src +=
      "\nextern \"C\" __global__ void __launch_bounds__(" + std::to_string(block) + ") KILN_ENTRY(" + params + ") {\n";
  src += "  __shared__ AT sm[32];\n";
  src += "  const int t = T == 1 ? 0 : (int)(threadIdx.x % T);\n";
  src += "  const long long sub = T == 1 ? threadIdx.x : threadIdx.x / T;\n";
  src += "  for (long long row = (long long)blockIdx.x * RPB + sub; row < ROWS; row += (long long)gridDim.x * RPB) {\n";
  src += "    const long long base = (row / INNER) * COLS * INNER + (row % INNER);\n";
  src += "    const XT* x = in + base;\n";
  if (second) src += "    const XT* x2 = in2 + base;\n";
  std::string load = cache ? "v[p]" : "kiln_ld(x[j * INNER])", load2 = "(AT)kiln_ld(x2[j * INNER])",
              store = "out[base + j * INNER]";
  auto forEach = [&](const std::string &body) { return rowLoop(body, cache); };
  if (cache) {
    src += "    AT v[PER > 0 ? PER : 1];\n";
    src += "#pragma unroll\n    for (int p = 0; p < PER; ++p) { const long long j = (long long)t + (long long)p * T;"
           " v[p] = j < COLS ? (AT)kiln_ld(x[j * INNER]) : (AT)0; }\n";
  }
  // The row's maximum m (`fmax`: NaN-skipping kiln_fmax, combine 1; else kiln_max, 2), then
  // sum, the sum of exp(x - m).
  auto maxThenSumExp = [&](bool fmax) {
    std::string f = fmax ? "kiln_fmax" : "kiln_max";
    src += "    AT m = -kiln_inf();\n";
    src += "    " + forEach("m = " + f + "(m, " + load + ");");
    src += std::string("    m = row_reduce<") + (fmax ? "1" : "2") + ">(m, sm);\n";
    src += "    AT sum = (AT)0;\n";
    src += "    " + forEach("sum += kiln_exp(" + load + " - m);");
    src += "    sum = row_reduce<0>(sum, sm);\n";
  };
  switch (s.op) {
    case RowOp::Softmax:
    case RowOp::LogSoftmax:
      maxThenSumExp(true);
      if (s.op == RowOp::Softmax)
        src += "    const AT inv_sum = (AT)1 / sum;\n    " +
               forEach(store + " = KILN_ST_OT(kiln_exp(" + load + " - m) * inv_sum);");
      else
        src += "    const AT ls = kiln_log(sum);\n    " + forEach(store + " = KILN_ST_OT((" + load + " - m) - ls);");
      break;
    case RowOp::LayerNorm:
    case RowOp::InstanceNorm:
    case RowOp::RmsNorm: {
      // (LayerNorm, RMSNorm: scale and bias per column; InstanceNorm: per channel, the row's.
      // RMSNorm: LayerNorm with a mean of zero.)
      const std::string at = s.op == RowOp::InstanceNorm ? "row % " + std::to_string(s.channels) + "LL" : "j";
      if (s.op == RowOp::RmsNorm) {
        src += "    const AT mean = (AT)0;\n";
      } else {
        src += "    AT sum = (AT)0;\n";
        src += "    " + forEach("sum += " + load + ";");
        src += "    const AT mean = row_reduce<0>(sum, sm) / (AT)COLS;\n";
      }
      src += "    AT sq = (AT)0;\n";
      src += "    " + forEach("const AT d = " + load + " - mean; sq += d * d;");
      src += "    const AT var = row_reduce<0>(sq, sm) / (AT)COLS;\n";
      src += "    const AT inv = (AT)1 / kiln_sqrt(var + " + floatLiteral(s.epsilon) + ");\n";
      src += "    " + forEach(store + " = KILN_ST_OT((" + load + " - mean) * inv * kiln_ld(scale[" + at + "])" +
                              (s.hasBias ? " + kiln_ld(bias[" + at + "])" : std::string()) + ");");
      if (s.statsOutputs)
        src += "    if (t == 0) { mean_out[row] = KILN_ST_ST(mean); inv_out[row] = KILN_ST_ST(inv); }\n";
      break;
    }
    case RowOp::MinMax:
      src += "    AT lo = kiln_inf(), hi = -kiln_inf();\n";
      src += "    " + forEach("const AT xv = " + load + "; lo = kiln_min(lo, xv); hi = kiln_max(hi, " +
                              (second ? load2 : std::string("xv")) + ");");
      src += "    lo = row_reduce<3>(lo, sm);\n    hi = row_reduce<2>(hi, sm);\n";
      src += "    if (t == 0) { out[row] = KILN_ST_OT(lo); out2[row] = KILN_ST_OT(hi); }\n";
      break;
    case RowOp::LogSumExp:
      maxThenSumExp(false);
      src += "    if (t == 0) out[row] = KILN_ST_OT(kiln_isinf(m) ? m : m + kiln_log(sum));\n";
      break;
    default: {
      const Accumulation a = accumulationOf(s.op, "(AT)COLS");
      src += "    AT acc = " + a.init + ";\n";
      src += "    " + forEach("const AT xv = " + load + "; " + a.step);
      src += "    acc = row_reduce<" + std::to_string(a.combine) + ">(acc, sm);\n";
      src += "    if (t == 0) out[row] = KILN_ST_OT(" + a.fin + ");\n";
      break;
    }
  }
  src += "  }\n}\n";

  KernelLaunch k = finalizeKernel("row", src);
  k.block = {static_cast<uint32_t>(block), 1, 1};
  k.grid = {gridStrideBlocks(rows, rpb, 65535), 1, 1};
  if (norm)
    k.numParams = 3 + (s.hasBias ? 1 : 0) + (s.statsOutputs ? 2 : 0);
  else
    k.numParams = s.op == RowOp::MinMax ? 4 : 2;
  return k;
}

KernelLaunch emitReduceAxes(RowOp op, const std::vector<int64_t> &shape, const std::vector<int64_t> &axes,
                            ElemType type, ElemType outType) {
  if (op == RowOp::Softmax || op == RowOp::LogSoftmax || op == RowOp::LayerNorm || op == RowOp::InstanceNorm ||
      op == RowOp::RmsNorm || op == RowOp::MinMax)
    throw std::invalid_argument("reduce: not a one-output reduction");
  std::vector<bool> reduced(shape.size(), false);
  for (int64_t a : axes) {
    if (a < 0 || size_t(a) >= shape.size()) throw std::invalid_argument("reduce: axis out of range");
    reduced[size_t(a)] = true;
  }
  std::vector<int64_t> st = contiguousStrides(shape);
  IndexKernelSpec k;
  k.kind = "reduce";
  k.comment = std::string(opName(op)) + " over non-adjacent axes";
  k.params = {{"x", type}, {"y", outType, true}};
  k.prologue = std::string("typedef ") + (type == ElemType::F64 ? "double" : "float") + " AT;\n";
  std::string off = "0LL", loops, close;
  int64_t count = 1;
  for (size_t d = 0; d < shape.size(); ++d) {
    std::string D = std::to_string(d), S = std::to_string(st[d]) + "LL";
    if (!reduced[d]) {
      off += " + c" + std::to_string(k.space.size()) + " * " + S;
      k.space.push_back(shape[d]);
      continue;
    }
    count *= shape[d];
    loops += "for (long long r" + D + " = 0; r" + D + " < " + std::to_string(shape[d]) + "LL; ++r" + D + ") ";
    off += " + r" + D + " * " + S;
  }
  // Every element of the point's reduction: `body` sees xv.
  auto each = [&](const std::string &body) {
    return "    " + loops + "{ const AT xv = kiln_ld(x[" + off + "]); " + body + " }\n";
  };
  Accumulation a = accumulationOf(op, floatLiteral(float(count)));
  if (op == RowOp::LogSumExp) {
    a.step = "acc += kiln_exp(xv - m);", a.fin = "kiln_isinf(m) ? m : m + kiln_log(acc)";
    k.body += "    AT m = -kiln_inf();\n" + each("m = kiln_max(m, xv);");
  }
  k.body += "    AT acc = " + a.init + ";\n" + each(a.step);
  k.body += "    y[i] = " + storeExpr(outType, a.fin) + ";\n";
  return emitIndexKernel(k);
}

}  // namespace kiln::codegen

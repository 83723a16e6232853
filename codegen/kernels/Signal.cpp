#include "codegen/kernels/Signal.h"

#include "codegen/kernels/IndexKernel.h"
#include "codegen/kernels/KernelUtil.h"

#include <stdexcept>
#include <string>

namespace kiln::codegen {

using namespace kernels;

namespace {

std::string L(int64_t v) { return intLiteral(v); }

std::string store(ElemType t, const std::string &v) {
  if (t == ElemType::F64) return "(double)(" + v + ")";
  return storeExpr(t, "(float)(" + v + ")");
}

void requireFloat(ElemType t, const std::string &op) {
  if ((!isFloatType(t) && t != ElemType::F64) || t == ElemType::F8E4M3)
    throw std::invalid_argument(op + ": needs f32, f16, bf16 or f64 data");
}

}  // namespace

KernelLaunch emitDft(const DftSpec &d) {
  requireFloat(d.type, "DFT");
  if (d.n < 1 || d.outLen < 1 || (d.channels != 1 && d.channels != 2)) throw std::invalid_argument("DFT: bad spec");
  IndexKernelSpec s;
  s.kind = "dft";
  s.comment = std::string(d.inverse ? "inverse " : "") + "DFT of " + std::to_string(d.n) + " points";
  s.space = {d.outer, d.outLen, d.inner};
  s.params = {{"x", d.type}, {"y", d.type, true}};
  s.body = "    double re = 0, im = 0;\n";
  s.body += "    for (long long m = 0; m < " + L(std::min(d.n, d.len)) + "; ++m) {\n";
  s.body +=
      "      const long long at = ((c0 * " + L(d.len) + " + m) * " + L(d.inner) + " + c2) * " + L(d.channels) + ";\n";
  s.body += "      const double xr = (double)kiln_ld(x[at]), xi = " +
            std::string(d.channels == 2 ? "(double)kiln_ld(x[at + 1])" : "0.0") + ";\n";
  s.body += "      double sn, cs;\n      sincospi(" + std::string(d.inverse ? "2.0" : "-2.0") +
            " * (double)((c1 * m) % " + L(d.n) + ") / (double)" + L(d.n) + ", &sn, &cs);\n";
  s.body += "      re += xr * cs - xi * sn; im += xr * sn + xi * cs;\n    }\n";
  if (d.inverse) s.body += "    re /= (double)" + L(d.n) + "; im /= (double)" + L(d.n) + ";\n";
  s.body += "    y[i * 2] = " + store(d.type, "re") + ";\n    y[i * 2 + 1] = " + store(d.type, "im") + ";\n";
  return emitIndexKernel(s);
}

KernelLaunch emitStft(const StftSpec &t) {
  requireFloat(t.type, "STFT");
  if (t.frameLength < 1 || t.step < 1 || (t.channels != 1 && t.channels != 2))
    throw std::invalid_argument("STFT: bad spec");
  IndexKernelSpec s;
  s.kind = "stft";
  s.comment = "STFT frames of " + std::to_string(t.frameLength) + " every " + std::to_string(t.step);
  s.space = {t.batch, t.frames, t.bins};
  s.params = {{"x", t.type}};
  if (t.window) s.params.push_back({"win", t.type});
  s.params.push_back({"y", t.type, true});
  s.body = "    double re = 0, im = 0;\n";
  s.body += "    for (long long m = 0; m < " + L(t.frameLength) + "; ++m) {\n";
  s.body +=
      "      const long long at = (c0 * " + L(t.length) + " + c1 * " + L(t.step) + " + m) * " + L(t.channels) + ";\n";
  s.body += "      const double w = " + std::string(t.window ? "(double)kiln_ld(win[m])" : "1.0") + ";\n";
  s.body += "      const double xr = (double)kiln_ld(x[at]) * w, xi = " +
            std::string(t.channels == 2 ? "(double)kiln_ld(x[at + 1]) * w" : "0.0") + ";\n";
  s.body += "      double sn, cs;\n      sincospi(-2.0 * (double)((c2 * m) % " + L(t.frameLength) + ") / (double)" +
            L(t.frameLength) + ", &sn, &cs);\n";
  s.body += "      re += xr * cs - xi * sn; im += xr * sn + xi * cs;\n    }\n";
  s.body += "    y[i * 2] = " + store(t.type, "re") + ";\n    y[i * 2 + 1] = " + store(t.type, "im") + ";\n";
  return emitIndexKernel(s);
}

KernelLaunch emitDet(int64_t count, int64_t m, ElemType type) {
  requireFloat(type, "Det");
  if (m < 1 || m > 32) throw std::invalid_argument("Det: matrices larger than 32 x 32 have no kernel");
  IndexKernelSpec s;
  s.kind = "det";
  s.comment = "Det of " + std::to_string(m) + "x" + std::to_string(m) + " matrices";
  s.space = {count};
  s.params = {{"x", type}, {"y", type, true}};
  std::string M = L(m);
  s.body = "    double a[" + std::to_string(m * m) + "];\n";
  s.body +=
      "    for (int k = 0; k < " + M + " * " + M + "; ++k) a[k] = (double)kiln_ld(x[i * " + L(m * m) + " + k]);\n";
  s.body += "    double det = 1;\n";
  s.body += "    for (int c = 0; c < " + M + "; ++c) {\n";
  s.body += "      int p = c;\n      for (int r = c + 1; r < " + M + "; ++r) if (fabs(a[r * " + M +
            " + c]) > fabs(a[p * " + M + " + c])) p = r;\n";
  s.body += "      if (a[p * " + M + " + c] == 0) { det = 0; break; }\n";
  s.body += "      if (p != c) { for (int k = 0; k < " + M + "; ++k) { const double t = a[p * " + M + " + k]; a[p * " +
            M + " + k] = a[c * " + M + " + k]; a[c * " + M + " + k] = t; } det = -det; }\n";
  s.body += "      const double piv = a[c * " + M + " + c];\n      det *= piv;\n";
  s.body += "      for (int r = c + 1; r < " + M + "; ++r) { const double f = a[r * " + M +
            " + c] / piv;"
            " for (int k = c; k < " +
            M + "; ++k) a[r * " + M + " + k] -= f * a[c * " + M + " + k]; }\n    }\n";
  s.body += "    y[i] = " + store(type, "det") + ";\n";
  return emitIndexKernel(s);
}

KernelLaunch emitLoss(const LossSpec &l) {
  requireFloat(l.type, "loss");
  if (l.targetType != ElemType::I64 && l.targetType != ElemType::I32)
    throw std::invalid_argument("loss: targets must be int32 or int64");
  if (l.reduction < 0 || l.reduction > 2 || l.N < 0 || l.C < 1 || l.D < 0)
    throw std::invalid_argument("loss: bad spec");
  const int64_t P = l.N * l.D;
  std::string T = storageTypeName(l.type), A = l.type == ElemType::F64 ? "double" : "float";
  std::string src = std::string("// kiln ") + (l.softmax ? "SoftmaxCrossEntropyLoss" : "NegativeLogLikelihoodLoss") +
                    " over [" + std::to_string(l.N) + ", " + std::to_string(l.C) + ", " + std::to_string(l.D) +
                    "], reduction " + std::to_string(l.reduction) + "\n";
  src += kDevicePrelude;
  src += "typedef " + A + " AT;\nconstexpr long long P = " + L(P) + ", C = " + L(l.C) + ", D = " + L(l.D) + ";\n";
  src += "extern \"C\" __global__ void __launch_bounds__(256) KILN_ENTRY(const " + T + "* __restrict__ x, const " +
         storageTypeName(l.targetType) + "* __restrict__ target, ";
  if (l.weight) src += "const " + T + "* __restrict__ weight, ";
  src += T + "* __restrict__ loss";
  if (l.logProbOutput) src += ", " + T + "* __restrict__ logp";
  src += ") {\n";
  // One position's loss (l) and weight (w): log-softmax over C first for SCE.
  std::string pos = "    const long long n = p / D, d = p % D;\n    const long long base = n * C * D + d;\n";
  if (l.softmax) {
    pos += "    AT m = -kiln_inf();\n    for (long long c = 0; c < C; ++c) m = kiln_fmax(m, (AT)kiln_ld(x[base + c * "
           "D]));\n";
    pos += "    AT s = 0;\n    for (long long c = 0; c < C; ++c) s += kiln_exp((AT)kiln_ld(x[base + c * D]) - m);\n";
    pos += "    const AT ls = kiln_log(s);\n";
    if (l.logProbOutput)
      pos += "    for (long long c = 0; c < C; ++c) logp[base + c * D] = " +
             store(l.type, "(AT)kiln_ld(x[base + c * D]) - m - ls") + ";\n";
  }
  pos += "    const long long t = (long long)target[p];\n    double lv = 0, wv = 0;\n";
  pos += "    if (" + std::string(l.hasIgnore ? "t != " + L(l.ignoreIndex) + " && " : "") + "t >= 0 && t < C) {\n";
  pos += "      wv = " + std::string(l.weight ? "(double)kiln_ld(weight[t])" : "1.0") + ";\n";
  // (the loss reads the log-probability as stored, as ONNX's function body does)
  std::string lp = l.softmax ? "(double)kiln_ld(" + store(l.type, "(AT)kiln_ld(x[base + t * D]) - m - ls") + ")"
                             : "(double)kiln_ld(x[base + t * D])";
  pos += "      lv = -" + lp + " * wv;\n    }\n";
  if (l.reduction == 0) {
    src += "  for (long long p = (long long)blockIdx.x * blockDim.x + threadIdx.x; p < P; p += (long long)gridDim.x * "
           "blockDim.x) {\n";
    src += pos + "    loss[p] = " + store(l.type, "lv") + ";\n  }\n}\n";
  } else {
    src += "  __shared__ double sl[256], sw[256];\n  double tl = 0, tw = 0;\n";
    src += "  for (long long p = threadIdx.x; p < P; p += 256) {\n" + pos + "    tl += lv; tw += wv;\n  }\n";
    src += "  sl[threadIdx.x] = tl; sw[threadIdx.x] = tw;\n  __syncthreads();\n";
    src += "  for (int o = 128; o > 0; o >>= 1) {\n    if (threadIdx.x < o) { sl[threadIdx.x] += sl[threadIdx.x + o]; "
           "sw[threadIdx.x] += sw[threadIdx.x + o]; }\n"
           "    __syncthreads();\n  }\n";
    src +=
        "  if (threadIdx.x == 0) loss[0] = " + store(l.type, l.reduction == 1 ? "sl[0]" : "sl[0] / sw[0]") + ";\n}\n";
  }
  KernelLaunch k = finalizeKernel(l.softmax ? "sce" : "nll", src);
  k.block = {256, 1, 1};
  k.grid = {l.reduction == 0 ? gridStrideBlocks(P, 256) : 1u, 1, 1};
  k.numParams = 3 + (l.weight ? 1 : 0) + (l.logProbOutput ? 1 : 0);
  return k;
}

}  // namespace kiln::codegen

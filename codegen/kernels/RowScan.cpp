#include "codegen/kernels/RowScan.h"

#include "codegen/kernels/IndexKernel.h"
#include "codegen/kernels/KernelUtil.h"

#include <stdexcept>
#include <string>

namespace kiln::codegen {

using namespace kernels;

namespace {

// A spec over the rows of `v`, with `base` (the row's first element) and `COLS`/`INNER` defined.
IndexKernelSpec rowSpec(const std::string &kind, const std::string &what, const RowView &v, ElemType type) {
  if (v.outer < 0 || v.cols < 1 || v.inner < 1) throw std::invalid_argument(what + ": bad row view");
  IndexKernelSpec s;
  s.kind = kind;
  s.comment =
      what + " over [" + std::to_string(v.outer) + ", " + std::to_string(v.cols) + ", " + std::to_string(v.inner) + "]";
  s.space = {v.outer, v.inner};
  s.prologue = "typedef " + std::string(computeTypeName(type)) +
               " CT;\nconstexpr long long COLS = " + std::to_string(v.cols) + "LL, INNER = " + std::to_string(v.inner) +
               "LL;\n";
  s.body = "    const long long base = c0 * COLS * INNER + c1;\n";
  return s;
}

}  // namespace

KernelLaunch emitArgExtreme(const RowView &v, bool max, bool selectLast, ElemType type) {
  IndexKernelSpec s = rowSpec("argext", max ? "ArgMax" : "ArgMin", v, type);
  s.params = {{"x", type}, {"y", ElemType::I64, true}};
  std::string better = std::string(max ? ">" : "<") + (selectLast ? "=" : "");
  s.body += "    CT best = kiln_ld(x[base]);\n    long long at = 0;\n"
            "    for (long long j = 1; j < COLS; ++j) {\n"
            "      const CT e = kiln_ld(x[base + j * INNER]);\n"
            "      if (e " +
            better + " best) { best = e; at = j; }\n    }\n    y[i] = at;\n";
  return emitIndexKernel(s);
}

KernelLaunch emitHardmax(const RowView &v, ElemType type) {
  IndexKernelSpec s = rowSpec("hardmax", "Hardmax", v, type);
  s.params = {{"x", type}, {"y", type, true}};
  s.body += "    CT best = kiln_ld(x[base]);\n    long long at = 0;\n"
            "    for (long long j = 1; j < COLS; ++j) {\n"
            "      const CT e = kiln_ld(x[base + j * INNER]);\n"
            "      if (e > best) { best = e; at = j; }\n    }\n"
            "    for (long long j = 0; j < COLS; ++j) y[base + j * INNER] = " +
            storeExpr(type, "j == at ? 1 : 0") + ";\n";
  return emitIndexKernel(s);
}

KernelLaunch emitTopK(const RowView &v, int64_t k, bool largest, ElemType type) {
  if (k < 0 || k > v.cols) throw std::invalid_argument("TopK: k must be in [0, " + std::to_string(v.cols) + "]");
  IndexKernelSpec s =
      rowSpec("topk", std::string("TopK ") + (largest ? "largest " : "smallest ") + std::to_string(k), v, type);
  s.params = {{"x", type}, {"values", type, true}, {"indices", ElemType::I64, true}};
  // Selection by rank: the kk-th pick is the first element (in the order: value, then lower index)
  // after the previous pick, so no per-row scratch is needed.
  std::string cmp = largest ? ">" : "<";
  s.prologue += "KILN_DEV bool before(CT a, long long ia, CT b, long long ib) { return a " + cmp +
                " b || (a == b && ia < ib); }\n";
  s.body += "    const long long obase = c0 * " + std::to_string(k) +
            "LL * INNER + c1;\n"
            "    CT pv = 0; long long pi = -1;\n"
            "    for (long long kk = 0; kk < " +
            std::to_string(k) +
            "LL; ++kk) {\n"
            "      CT bv = 0; long long bi = -1;\n"
            "      for (long long j = 0; j < COLS; ++j) {\n"
            "        const CT e = kiln_ld(x[base + j * INNER]);\n"
            "        if (pi >= 0 && !before(pv, pi, e, j)) continue;\n"
            "        if (bi < 0 || before(e, j, bv, bi)) { bv = e; bi = j; }\n"
            "      }\n"
            "      values[obase + kk * INNER] = " +
            storeExpr(type, "bv") +
            ";\n"
            "      indices[obase + kk * INNER] = bi;\n"
            "      pv = bv; pi = bi;\n    }\n";
  return emitIndexKernel(s);
}

KernelLaunch emitCumSum(const RowView &v, bool exclusive, bool reverse, ElemType type) {
  IndexKernelSpec s =
      rowSpec("cumsum", std::string("CumSum") + (exclusive ? " exclusive" : "") + (reverse ? " reverse" : ""), v, type);
  s.params = {{"x", type}, {"y", type, true}};
  std::string at = reverse ? "base + (COLS - 1 - j) * INNER" : "base + j * INNER";
  s.body += "    CT acc = 0;\n    for (long long j = 0; j < COLS; ++j) {\n      const long long at = " + at + ";\n";
  s.body += exclusive
                ? "      const CT e = kiln_ld(x[at]);\n      y[at] = " + storeExpr(type, "acc") + ";\n      acc += e;\n"
                : "      acc += kiln_ld(x[at]);\n      y[at] = " + storeExpr(type, "acc") + ";\n";
  s.body += "    }\n";
  return emitIndexKernel(s);
}

}  // namespace kiln::codegen

#include "codegen/kernels/Vision.h"

#include "codegen/kernels/IndexKernel.h"
#include "codegen/kernels/KernelUtil.h"

#include <stdexcept>

namespace kiln::codegen {

using namespace kernels;

namespace {

std::string L(int64_t v) { return intLiteral(v); }

// The arithmetic type of a float storage type (double for float64).
std::string arith(ElemType t) { return t == ElemType::F64 ? "double" : "float"; }

// A store of an arithmetic value into storage type t (float64 kept in double).
std::string store(ElemType t, const std::string &v) {
  if (t == ElemType::F64) return "(double)(" + v + ")";
  if (isFloatType(t)) return storeExpr(t, "(float)(" + v + ")");
  return storeExpr(t, v);
}

void requireFloat(ElemType t, const std::string &op) {
  if (!isFloatType(t) && t != ElemType::F64) throw std::invalid_argument(op + ": needs a float type");
  if (t == ElemType::F8E4M3) throw std::invalid_argument(op + ": float8 data has no kernel");
}

void requireIndex(ElemType t, const std::string &op) {
  if (t != ElemType::I64 && t != ElemType::I32) throw std::invalid_argument(op + ": indices must be int32 or int64");
}

// `v` clamped into [0, n) after adding n to a negative value (code).
std::string resolved(const std::string &v, int64_t n) { return "kiln_resolve((long long)(" + v + "), " + L(n) + ")"; }

const char *kResolve = "static __device__ __forceinline__ long long kiln_resolve(long long v, long long n) {\n"
                       "  if (v < 0) v += n;\n  return v < 0 ? 0 : v >= n ? n - 1 : v;\n}\n";

// The scatter reduction applied to `ref` with `u` (both as loaded values).
std::string reduceStmt(const std::string &red, ElemType t, const std::string &ref, const std::string &u) {
  std::string cur = "kiln_ld(" + ref + ")";
  std::string v = red == "none"  ? u
                  : red == "add" ? cur + " + " + u
                  : red == "mul" ? cur + " * " + u
                  : red == "max" ? "kiln_max(" + cur + ", " + u + ")"
                  : red == "min" ? "kiln_min(" + cur + ", " + u + ")"
                                 : "";
  if (v.empty()) throw std::invalid_argument("scatter: unknown reduction '" + red + "'");
  if (red == "none") return ref + " = " + u + "_raw;";
  return ref + " = " + store(t, v) + ";";
}

}  // namespace

KernelLaunch emitGatherNd(const std::vector<int64_t> &data, const std::vector<int64_t> &ind, int64_t b, ElemType type) {
  if (ind.empty() || data.empty() || b < 0 || size_t(b) >= ind.size())
    throw std::invalid_argument("GatherND: bad shapes");
  int64_t last = ind.back();
  if (last < 1 || size_t(b + last) > data.size()) throw std::invalid_argument("GatherND: bad index depth");
  int64_t batch = numElementsOf(std::vector<int64_t>(data.begin(), data.begin() + b));
  int64_t tuples = numElementsOf(std::vector<int64_t>(ind.begin(), ind.end() - 1)) / batch;
  int64_t slice = numElementsOf(std::vector<int64_t>(data.begin() + b + last, data.end()));
  std::vector<int64_t> st = contiguousStrides(data);
  int64_t batchStride = b ? st[size_t(b - 1)] : numElementsOf(data);
  IndexKernelSpec s;
  s.kind = "gather_nd";
  s.comment = "GatherND: " + std::to_string(tuples) + " index tuples of depth " + std::to_string(last);
  s.space = {batch * tuples * slice};
  s.params = {{"data", type}, {"idx", ElemType::I64}, {"y", type, true}};
  s.prologue = kResolve;
  s.body = "    const long long j = i / " + L(slice) + ", e = i % " + L(slice) + ";\n";
  s.body += "    long long off = (j / " + L(tuples) + ") * " + L(batchStride) + " + e;\n";
  for (int64_t k = 0; k < last; ++k)
    s.body += "    off += " + resolved("idx[j * " + L(last) + " + " + L(k) + "]", data[size_t(b + k)]) + " * " +
              L(st[size_t(b + k)]) + ";\n";
  s.body += "    y[i] = data[off];\n";
  return emitIndexKernel(s);
}

KernelLaunch emitScatterCopy(int64_t elements, ElemType type) {
  IndexKernelSpec s;
  s.kind = "scatter_copy";
  s.comment = "scatter: the data copied into the output";
  s.space = {elements};
  s.params = {{"data", type}, {"y", type, true}};
  s.body = "    y[i] = data[i];\n";
  return emitIndexKernel(s);
}

KernelLaunch emitScatterNd(const std::vector<int64_t> &data, const std::vector<int64_t> &ind, const std::string &red,
                           ElemType type) {
  if (ind.empty() || data.empty()) throw std::invalid_argument("ScatterND: bad shapes");
  int64_t last = ind.back();
  if (last < 1 || size_t(last) > data.size()) throw std::invalid_argument("ScatterND: bad index depth");
  int64_t tuples = numElementsOf(std::vector<int64_t>(ind.begin(), ind.end() - 1));
  int64_t slice = numElementsOf(std::vector<int64_t>(data.begin() + last, data.end()));
  std::vector<int64_t> st = contiguousStrides(data);
  IndexKernelSpec s;
  s.kind = "scatter_nd";
  s.comment = "ScatterND reduction " + red + ": " + std::to_string(tuples) + " tuples of depth " + std::to_string(last);
  s.params = {{"idx", ElemType::I64}, {"upd", type}, {"y", type, true}};
  s.prologue = kResolve;
  std::string off = "0LL";
  for (int64_t k = 0; k < last; ++k)
    off += " + " + resolved("idx[j * " + L(last) + " + " + L(k) + "]", data[size_t(k)]) + " * " + L(st[size_t(k)]);
  std::string apply = "      const auto u_raw = upd[j * " + L(slice) +
                      " + e]; (void)u_raw;\n      const auto u = kiln_ld(u_raw); (void)u;\n      " +
                      reduceStmt(red, type, "y[" + off + " + e]", "u") + "\n";
  if (red == "none") {
    s.space = {tuples * slice};
    s.body = "    const long long j = i / " + L(slice) + ", e = i % " + L(slice) + ";\n    {\n" + apply + "    }\n";
  } else {
    s.space = {slice};
    s.body =
        "    const long long e = i;\n    for (long long j = 0; j < " + L(tuples) + "; ++j) {\n" + apply + "    }\n";
  }
  return emitIndexKernel(s);
}

KernelLaunch emitScatterElements(const std::vector<int64_t> &data, const std::vector<int64_t> &ind, int axis,
                                 const std::string &red, ElemType indexType, ElemType type) {
  requireIndex(indexType, "ScatterElements");
  if (ind.size() != data.size() || axis < 0 || size_t(axis) >= data.size())
    throw std::invalid_argument("ScatterElements: bad shapes or axis");
  std::vector<int64_t> ist = contiguousStrides(ind), dst = contiguousStrides(data);
  IndexKernelSpec s;
  s.kind = "scatter_el";
  s.comment = "ScatterElements along axis " + std::to_string(axis) + ", reduction " + red;
  s.params = {{"idx", indexType}, {"upd", type}, {"y", type, true}};
  s.prologue = kResolve;
  // The space: the indices' coordinates without `axis` (c<k> numbered over the remaining dims).
  std::string src = "0LL", dstOff = "0LL";
  for (size_t d = 0, k = 0; d < ind.size(); ++d) {
    if (int(d) == axis) continue;
    s.space.push_back(ind[d]);
    std::string c = "c" + std::to_string(k++);
    src += " + " + c + " * " + L(ist[d]);
    dstOff += " + " + c + " * " + L(dst[d]);
  }
  if (s.space.empty()) s.space = {1};  // (rank 1: one thread walks the axis)
  s.body = "    for (long long a = 0; a < " + L(ind[size_t(axis)]) + "; ++a) {\n";
  s.body += "      const long long at = " + src + " + a * " + L(ist[size_t(axis)]) + ";\n";
  s.body += "      const long long to = " + dstOff + " + " + resolved("idx[at]", data[size_t(axis)]) + " * " +
            L(dst[size_t(axis)]) + ";\n";
  s.body += "      const auto u_raw = upd[at]; (void)u_raw;\n      const auto u = kiln_ld(u_raw); (void)u;\n      " +
            reduceStmt(red, type, "y[to]", "u") + "\n    }\n";
  return emitIndexKernel(s);
}

KernelLaunch emitGridSample(const GridSampleSpec &g) {
  requireFloat(g.type, "GridSample");
  requireFloat(g.gridType, "GridSample");
  bool cubic = g.mode == "bicubic" || g.mode == "cubic", nearest = g.mode == "nearest";
  if (!cubic && !nearest && g.mode != "bilinear" && g.mode != "linear")
    throw std::invalid_argument("GridSample: unknown mode '" + g.mode + "'");
  int padMode = g.padding == "zeros" ? 0 : g.padding == "border" ? 1 : g.padding == "reflection" ? 2 : -1;
  if (padMode < 0) throw std::invalid_argument("GridSample: unknown padding '" + g.padding + "'");
  IndexKernelSpec s;
  s.kind = "grid_sample";
  s.comment = "GridSample " + g.mode + ", padding " + g.padding + (g.alignCorners ? ", align_corners" : "");
  s.space = {g.N, g.C, g.Ho, g.Wo};
  s.params = {{"x", g.type}, {"grid", g.gridType}, {"y", g.type, true}};
  std::string A = arith(g.type);
  s.prologue = "typedef " + A + " AT;\nconstexpr bool ALIGN = " + (g.alignCorners ? "true" : "false") +
               ";\nconstexpr int PAD = " + std::to_string(padMode) + ";\n" + R"CUDA(
static __device__ AT gs_unnorm(AT v, long long size) {
  return ALIGN ? (v + 1) / 2 * (AT)(size - 1) : ((v + 1) * (AT)size - 1) / 2;
}
static __device__ AT gs_reflect(AT x, AT lo2, AT hi2) {
  if (lo2 == hi2) return 0;
  const AT mn = lo2 / 2, span = (hi2 - lo2) / 2;
  x = fabs(x - mn);
  const AT extra = fmod(x, span);
  const long long flips = (long long)floor(x / span);
  return (flips % 2 == 0) ? extra + mn : span - extra + mn;
}
static __device__ AT gs_pad(AT x, long long size) {
  if (PAD == 1) return fmin(fmax(x, (AT)0), (AT)(size - 1));
  if (PAD == 2) {
    x = ALIGN ? gs_reflect(x, 0, (AT)2 * (AT)(size - 1)) : gs_reflect(x, -1, (AT)2 * (AT)size - 1);
    return fmin(fmax(x, (AT)0), (AT)(size - 1));
  }
  return x;
}
static __device__ AT gs_cubic1(AT x) { const AT A = -0.75; return ((A + 2) * x - (A + 3)) * x * x + 1; }
static __device__ AT gs_cubic2(AT x) { const AT A = -0.75; return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A; }
)CUDA";
  std::string H = L(g.H), W = L(g.W);
  s.body = "    const long long gi = ((c0 * " + L(g.Ho) + " + c2) * " + L(g.Wo) + " + c3) * 2;\n";
  s.body += "    const AT ix = gs_unnorm((AT)kiln_ld(grid[gi]), " + W +
            "), iy = gs_unnorm((AT)kiln_ld(grid[gi + 1]), " + H + ");\n";
  s.body += "    const auto* img = x + (c0 * " + L(g.C) + " + c1) * " + L(g.H * g.W) + ";\n";
  s.body += "    auto at = [&](long long r, long long c) -> AT { return (r >= 0 && r < " + H + " && c >= 0 && c < " +
            W + ") ? (AT)kiln_ld(img[r * " + W + " + c]) : (AT)0; };\n";
  s.body += "    AT v = 0;\n";
  if (cubic) {
    s.body += "    const AT x0 = floor(ix), y0 = floor(iy), tx = ix - x0, ty = iy - y0;\n";
    s.body += "    const AT cx[4] = {gs_cubic2(tx + 1), gs_cubic1(tx), gs_cubic1(1 - tx), gs_cubic2(2 - tx)};\n";
    s.body += "    const AT cy[4] = {gs_cubic2(ty + 1), gs_cubic1(ty), gs_cubic1(1 - ty), gs_cubic2(2 - ty)};\n";
    s.body += "    for (int j = 0; j < 4; ++j) for (int k = 0; k < 4; ++k) {\n";
    s.body += "      const AT px = gs_pad(x0 - 1 + k, " + W + "), py = gs_pad(y0 - 1 + j, " + H + ");\n";
    s.body += "      v += cx[k] * cy[j] * at((long long)py, (long long)px);\n    }\n";
  } else {
    s.body += "    const AT sx = gs_pad(ix, " + W + "), sy = gs_pad(iy, " + H + ");\n";
    if (nearest) {
      s.body += "    v = at((long long)rint(sy), (long long)rint(sx));\n";
    } else {
      s.body += "    const AT x0 = floor(sx), y0 = floor(sy), fx = sx - x0, fy = sy - y0;\n";
      s.body += "    const long long cc = (long long)x0, rr = (long long)y0;\n";
      s.body +=
          "    v = at(rr, cc) * (1 - fx) * (1 - fy) + at(rr, cc + 1) * fx * (1 - fy) + at(rr + 1, cc) * (1 - fx) * fy +"
          " at(rr + 1, cc + 1) * fx * fy;\n";
    }
  }
  s.body += "    y[i] = " + store(g.type, "v") + ";\n";
  return emitIndexKernel(s);
}

KernelLaunch emitRoiAlign(const RoiAlignSpec &r) {
  requireFloat(r.type, "RoiAlign");
  requireIndex(r.indexType, "RoiAlign");
  requireFloat(r.roisType, "RoiAlign");
  IndexKernelSpec s;
  s.kind = "roi_align";
  s.comment =
      std::string("RoiAlign ") + (r.average ? "avg" : "max") + (r.halfPixel ? ", half_pixel" : ", output_half_pixel");
  s.space = {r.R, r.C, r.OH, r.OW};
  s.params = {{"x", r.type}, {"rois", r.roisType}, {"bidx", r.indexType}, {"y", r.type, true}};
  s.prologue = "typedef " + arith(r.type) + " AT;\n";
  std::string H = L(r.H), W = L(r.W);
  std::string b = "    const AT off = " + std::string(r.halfPixel ? "(AT)0.5" : "(AT)0") + ", scale = (AT)" +
                  floatLiteral(r.spatialScale) + ";\n";
  b += "    long long n = (long long)bidx[c0];\n    n = n < 0 ? 0 : n >= " + L(r.N) + " ? " + L(r.N - 1) + " : n;\n";
  b += "    const AT x0 = (AT)kiln_ld(rois[c0 * 4]) * scale - off, y0 = (AT)kiln_ld(rois[c0 * 4 + 1]) * scale - off;\n";
  b += "    AT rw = (AT)kiln_ld(rois[c0 * 4 + 2]) * scale - off - x0, rh = (AT)kiln_ld(rois[c0 * 4 + 3]) * scale - off "
       "- y0;\n";
  if (!r.halfPixel) b += "    rw = rw > (AT)1 ? rw : (AT)1; rh = rh > (AT)1 ? rh : (AT)1;\n";
  b += "    const AT bh = rh / (AT)" + L(r.OH) + ", bw = rw / (AT)" + L(r.OW) + ";\n";
  if (r.samplingRatio > 0)
    b += "    const long long gh = " + L(r.samplingRatio) + ", gw = " + L(r.samplingRatio) + ";\n";
  else
    b += "    const long long gh = (long long)ceil(rh / (AT)" + L(r.OH) + "), gw = (long long)ceil(rw / (AT)" +
         L(r.OW) + ");\n";
  b += "    const AT count = (AT)(gh * gw > 1 ? gh * gw : 1);\n";
  b += "    const auto* img = x + (n * " + L(r.C) + " + c1) * " + L(r.H * r.W) + ";\n";
  b += std::string("    AT acc = ") + (r.average ? "0" : "-kiln_inf()") + ";\n    bool any = false;\n";
  b += "    for (long long iy = 0; iy < gh; ++iy) for (long long ix = 0; ix < gw; ++ix) {\n";
  b += "      AT yy = y0 + (AT)c2 * bh + ((AT)iy + (AT)0.5) * bh / (AT)gh;\n";
  b += "      AT xx = x0 + (AT)c3 * bw + ((AT)ix + (AT)0.5) * bw / (AT)gw;\n";
  b += "      AT v = 0;\n";
  b += "      if (!(yy < (AT)-1 || yy > (AT)" + H + " || xx < (AT)-1 || xx > (AT)" + W + ")) {\n";
  b += "        yy = yy > 0 ? yy : (AT)0; xx = xx > 0 ? xx : (AT)0;\n";
  b += "        long long yl = (long long)yy, xl = (long long)xx, yh, xh;\n";
  b += "        if (yl >= " + H + " - 1) { yh = yl = " + H + " - 1; yy = (AT)yl; } else yh = yl + 1;\n";
  b += "        if (xl >= " + W + " - 1) { xh = xl = " + W + " - 1; xx = (AT)xl; } else xh = xl + 1;\n";
  b += "        const AT ly = yy - (AT)yl, lx = xx - (AT)xl, hy = 1 - ly, hx = 1 - lx;\n";
  b += "        const AT w1 = hy * hx * (AT)kiln_ld(img[yl * " + W + " + xl]), w2 = hy * lx * (AT)kiln_ld(img[yl * " +
       W + " + xh]);\n";
  b += "        const AT w3 = ly * hx * (AT)kiln_ld(img[yh * " + W + " + xl]), w4 = ly * lx * (AT)kiln_ld(img[yh * " +
       W + " + xh]);\n";
  b += r.average ? "        v = w1 + w2 + w3 + w4;\n" : "        v = fmax(fmax(w1, w2), fmax(w3, w4));\n";
  b += "      }\n";
  b += r.average ? "      acc += v;\n" : "      acc = fmax(acc, v);\n";
  b += "      any = true;\n    }\n";
  b += "    y[i] = " + store(r.type, r.average ? "acc / count" : "(any ? acc : (AT)0)") + ";\n";
  s.body = b;
  return emitIndexKernel(s);
}

KernelLaunch emitFillZero(int64_t elements, ElemType type) {
  IndexKernelSpec s;
  s.kind = "fill_zero";
  s.comment = "zero fill";
  s.space = {elements};
  s.params = {{"y", type, true}};
  s.body = "    y[i] = " + store(type, "0") + ";\n";
  return emitIndexKernel(s);
}

KernelLaunch emitUnpoolScatter(int64_t in, const std::vector<int64_t> &unpooled, const std::vector<int64_t> &out,
                               ElemType type) {
  if (unpooled.size() != out.size()) throw std::invalid_argument("MaxUnpool: shapes of different ranks");
  IndexKernelSpec s;
  s.kind = "unpool";
  s.comment = "MaxUnpool: y[I[k]] = x[k]";
  s.space = {in};
  s.params = {{"x", type}, {"idx", ElemType::I64}, {"y", type, true}};
  s.body = "    const long long j = idx[i];\n    if (j < 0 || j >= " + L(numElementsOf(unpooled)) + ") continue;\n";
  if (unpooled == out) {
    s.body += "    y[j] = x[i];\n";
    return emitIndexKernel(s);
  }
  std::vector<int64_t> ust = contiguousStrides(unpooled), ost = contiguousStrides(out);
  s.body += "    long long to = 0;\n    bool inside = true;\n";
  for (size_t d = 0; d < out.size(); ++d)
    s.body += "    { const long long c = (j / " + L(ust[d]) + ") % " + L(unpooled[d]) + "; inside = inside && c < " +
              L(out[d]) + "; to += c * " + L(ost[d]) + "; }\n";
  s.body += "    if (inside) y[to] = x[i];\n";
  return emitIndexKernel(s);
}

KernelLaunch emitLrn(const std::vector<int64_t> &shape, int64_t size, float alpha, float beta, float bias,
                     ElemType type) {
  requireFloat(type, "LRN");
  if (shape.size() < 2 || size < 1) throw std::invalid_argument("LRN: bad shape or size");
  int64_t C = shape[1], inner = numElementsOf(shape) / (shape[0] * C);
  int64_t lo = (size - 1) / 2, hi = size - 1 - lo;
  IndexKernelSpec s;
  s.kind = "lrn";
  s.comment = "LRN size " + std::to_string(size);
  s.space = {shape[0], C, inner};
  s.params = {{"x", type}, {"y", type, true}};
  s.prologue = "typedef " + arith(type) + " AT;\n";
  s.body = "    AT sum = 0;\n    const long long base = c0 * " + L(C * inner) + " + c2;\n";
  s.body += "    const long long a = c1 - " + L(lo) + " < 0 ? 0 : c1 - " + L(lo) + ", b = c1 + " + L(hi) + " > " +
            L(C - 1) + " ? " + L(C - 1) + " : c1 + " + L(hi) + ";\n";
  s.body += "    for (long long j = a; j <= b; ++j) { const AT v = (AT)kiln_ld(x[base + j * " + L(inner) +
            "]); sum += v * v; }\n";
  s.body += "    y[i] = " +
            store(type, "(AT)kiln_ld(x[i]) / pow((AT)" + floatLiteral(bias) + " + (AT)" + floatLiteral(alpha) +
                            " / (AT)" + L(size) + " * sum, (AT)" + floatLiteral(beta) + ")") +
            ";\n";
  return emitIndexKernel(s);
}

KernelLaunch emitMeanVarianceNorm(const std::vector<int64_t> &shape, const std::vector<int64_t> &axes, ElemType type) {
  requireFloat(type, "MeanVarianceNormalization");
  std::vector<bool> red(shape.size(), false);
  for (int64_t a : axes) {
    if (a < 0 || size_t(a) >= shape.size()) throw std::invalid_argument("MeanVarianceNormalization: axis out of range");
    red[size_t(a)] = true;
  }
  std::vector<int64_t> st = contiguousStrides(shape);
  IndexKernelSpec s;
  s.kind = "mvn";
  s.comment = "MeanVarianceNormalization, one thread per group";
  s.params = {{"x", type}, {"y", type, true}};
  s.prologue = "typedef " + arith(type) + " AT;\n";
  std::string base = "0LL", loops, off = "";
  int64_t count = 1;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (!red[d]) {
      base += " + c" + std::to_string(s.space.size()) + " * " + L(st[d]);
      s.space.push_back(shape[d]);
      continue;
    }
    count *= shape[d];
    std::string r = "r" + std::to_string(d);
    loops += "for (long long " + r + " = 0; " + r + " < " + L(shape[d]) + "; ++" + r + ") ";
    off += " + " + r + " * " + L(st[d]);
  }
  if (s.space.empty()) s.space = {1};
  std::string at = "(" + base + off + ")";
  s.body = "    AT s1 = 0, s2 = 0;\n";
  s.body += "    " + loops + "{ const AT v = (AT)kiln_ld(x[" + at + "]); s1 += v; s2 += v * v; }\n";
  s.body += "    const AT mean = s1 / (AT)" + L(count) + ", var = s2 / (AT)" + L(count) + " - mean * mean;\n";
  s.body += "    const AT den = sqrt(var > 0 ? var : (AT)0) + (AT)1e-9;\n";
  s.body += "    " + loops + "{ y[" + at + "] = " + store(type, "((AT)kiln_ld(x[" + at + "]) - mean) / den") + "; }\n";
  return emitIndexKernel(s);
}

KernelLaunch emitReverseSequence(const std::vector<int64_t> &shape, int batchAxis, int timeAxis, ElemType type) {
  if (shape.size() < 2 || batchAxis + timeAxis != 1) throw std::invalid_argument("ReverseSequence: bad axes");
  std::vector<int64_t> st = contiguousStrides(shape);
  IndexKernelSpec s;
  s.kind = "reverse_seq";
  s.comment = "ReverseSequence batch axis " + std::to_string(batchAxis);
  s.space = shape;
  s.params = {{"x", type}, {"lens", ElemType::I64}, {"y", type, true}};
  std::string t = "c" + std::to_string(timeAxis), b = "c" + std::to_string(batchAxis);
  s.body = "    long long len = lens[" + b + "];\n    len = len < 0 ? 0 : len > " + L(shape[size_t(timeAxis)]) + " ? " +
           L(shape[size_t(timeAxis)]) + " : len;\n";
  s.body += "    y[i] = x[" + t + " < len ? i + (len - 1 - 2 * " + t + ") * " + L(st[size_t(timeAxis)]) + " : i];\n";
  return emitIndexKernel(s);
}

}  // namespace kiln::codegen

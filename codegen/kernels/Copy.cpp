#include "codegen/kernels/Copy.h"

#include "codegen/kernels/KernelUtil.h"

#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace kiln::codegen {

using namespace kernels;

namespace {

const char *wordType(ElemType t) {
  switch (elemSize(t)) {
    case 1: return "unsigned char";
    case 2: return "unsigned short";
    case 8: return "unsigned long long";
    default: return "unsigned int";
  }
}

// The words of vectorized copies: the 16-byte one is declared in each kernel that uses it.
const char *kWord16Decl = "struct __align__(16) kiln_w16 { unsigned long long a, b; };\n";
const char *vectorWordType(int64_t bytes) {
  return bytes == 16 ? "kiln_w16" : bytes == 8 ? "unsigned long long" : "unsigned int";
}

// Elements per 16, 8 or 4-byte word, the widest holding at least 2 elements whose count divides
// `len`; 1: none.
int wordElems(int64_t len, size_t elem) {
  for (int64_t bytes : {16, 8, 4}) {
    int64_t v = bytes / int64_t(elem);
    if (v >= 2 && len % v == 0) return int(v);
  }
  return 1;
}

// Elements per word of a vectorized copy (16, 8 or 4 bytes; 1: none): the last dim of the
// coalesced space is contiguous on both sides and every stride, offset and the last dim's length
// divide by the word.
int vectorWidth(const StridedSpace &space, int64_t inOffset, int64_t outOffset, size_t elem) {
  if (space.dims.empty() || space.strides[0].back() != 1 || space.strides[1].back() != 1) return 1;
  for (int64_t bytes : {16, 8, 4}) {
    int64_t v = bytes / int64_t(elem);
    if (v < 2) continue;
    bool ok = space.dims.back() % v == 0 && inOffset % v == 0 && outOffset % v == 0;
    for (const auto &st : space.strides)
      for (size_t d = 0; ok && d + 1 < st.size(); ++d) ok = st[d] % v == 0;
    if (ok) return int(v);
  }
  return 1;
}

}  // namespace

KernelLaunch emitCopy(const CopySpec &s) {
  size_t rank = s.dims.size();
  if (s.inStrides.size() != rank) throw std::invalid_argument("copy: one input stride per dim");
  std::vector<int64_t> outStrides = s.outStrides.empty() ? contiguousStrides(s.dims) : s.outStrides;
  if (outStrides.size() != rank) throw std::invalid_argument("copy: one output stride per dim");
  if (s.gather && (s.gatherBegin < 0 || s.gatherRank < 0 || size_t(s.gatherBegin + s.gatherRank) > rank ||
                   s.gatherAxisSize < 1 || (s.indexType != ElemType::I64 && s.indexType != ElemType::I32)))
    throw std::invalid_argument("copy: bad gather dims");
  for (int64_t d : s.dims)
    if (d < 0) throw std::invalid_argument("copy: negative dim");
  const int64_t total = numElementsOf(s.dims);

  StridedSpace space;
  space.dims = s.dims;
  space.strides = {s.inStrides, outStrides};
  if (s.gather) {
    std::vector<int64_t> gdims(s.dims.begin() + s.gatherBegin, s.dims.begin() + s.gatherBegin + s.gatherRank);
    std::vector<int64_t> gs = contiguousStrides(gdims), st(rank, 0);
    for (int k = 0; k < s.gatherRank; ++k) st[s.gatherBegin + k] = gs[k];
    space.strides.push_back(st);
  }
  // Bound on every offset, for the index type.
  int64_t bound = total + 8192 * 256 + std::llabs(s.inOffset) + std::llabs(s.outOffset) +
                  std::llabs(s.gatherStride) * s.gatherAxisSize;
  for (size_t d = 0; d < rank; ++d)
    bound += (std::llabs(s.inStrides[d]) + std::llabs(outStrides[d])) * std::max<int64_t>(s.dims[d] - 1, 0);
  space = coalesce(space);
  std::string idx = indexType(bound);
  const char *w = wordType(s.type);

  std::string src = std::string("// kiln copy: ") + std::to_string(total) + " elements of " +
                    std::to_string(elemSize(s.type)) + " bytes" + (s.gather ? ", gather" : "") + "\n";
  src += kWord16Decl;
  src +=
      "extern \"C\" __global__ void __launch_bounds__(256) KILN_ENTRY(const " + std::string(w) + "* __restrict__ in, ";
  if (s.gather)
    src += std::string("const ") + (s.indexType == ElemType::I64 ? "long long" : "int") + "* __restrict__ indices, ";
  src += std::string(w) + "* __restrict__ out) {\n";
  const int vec = s.gather ? 1 : vectorWidth(space, s.inOffset, s.outOffset, elemSize(s.type));
  if (vec > 1) {
    // Both sides contiguous along the last dim: words of `vec` elements, when the pointers allow.
    int64_t bytes = vec * int64_t(elemSize(s.type));
    StridedSpace vs = space;
    vs.dims.back() /= vec;
    for (auto &st : vs.strides)
      for (size_t d = 0; d + 1 < st.size(); ++d) st[d] /= vec;
    std::string vw = vectorWordType(bytes);
    src +=
        "  if (((((unsigned long long)in) | ((unsigned long long)out)) & " + std::to_string(bytes - 1) + ") == 0) {\n";
    src += "    const " + vw + "* __restrict__ vin = reinterpret_cast<const " + vw + "*>(in);\n";
    src += "    " + vw + "* __restrict__ vout = reinterpret_cast<" + vw + "*>(out);\n";
    src += "    for (" + idx + " i = (" + idx + ")blockIdx.x * blockDim.x + threadIdx.x; i < " +
           std::to_string(total / vec) + "; i += (" + idx + ")gridDim.x * blockDim.x) {\n";
    src += offsetCode(vs, {"oi", "oo"}, idx, "i");
    src += "      vout[" + std::to_string(s.outOffset / vec) + " + oo] = vin[" + std::to_string(s.inOffset / vec) +
           " + oi];\n";
    src += "    }\n    return;\n  }\n";
  }
  src += "  const " + idx + " n = " + std::to_string(total) + ";\n";
  src += "  for (" + idx + " i = (" + idx + ")blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (" + idx +
         ")gridDim.x * blockDim.x) {\n";
  std::vector<std::string> names = {"oi", "oo"};
  if (s.gather) names.push_back("ox");
  src += offsetCode(space, names, idx, "i");
  if (s.gather) {
    src += "    long long v = indices[ox];\n";
    src += "    if (v < 0) v += " + std::to_string(s.gatherAxisSize) + "LL;\n";
    src += "    v = v < 0 ? 0 : v > " + std::to_string(s.gatherAxisSize - 1) + "LL ? " +
           std::to_string(s.gatherAxisSize - 1) + "LL : v;\n";
    src += "    oi += (" + idx + ")(v * " + std::to_string(s.gatherStride) + "LL);\n";
  }
  src += "    out[" + std::to_string(s.outOffset) + " + oo] = in[" + std::to_string(s.inOffset) + " + oi];\n";
  src += "  }\n}\n";
  KernelLaunch k = finalizeKernel("copy", src);
  k.block = {256, 1, 1};
  k.grid = {gridStrideBlocks(total / vec, 256), 1, 1};
  k.numParams = s.gather ? 3 : 2;
  return k;
}

CopySpec transposeCopy(const std::vector<int64_t> &inShape, const std::vector<int64_t> &perm, ElemType t) {
  if (perm.size() != inShape.size()) throw std::invalid_argument("transpose: perm rank");
  std::vector<int64_t> st = contiguousStrides(inShape);
  CopySpec s;
  s.type = t;
  std::vector<bool> seen(perm.size());
  for (int64_t p : perm) {
    if (p < 0 || p >= int64_t(perm.size()) || seen[p]) throw std::invalid_argument("transpose: bad perm");
    seen[p] = true;
    s.dims.push_back(inShape[p]);
    s.inStrides.push_back(st[p]);
  }
  return s;
}

CopySpec sliceCopy(const std::vector<int64_t> &inShape, const std::vector<int64_t> &starts,
                   const std::vector<int64_t> &steps, const std::vector<int64_t> &outShape, ElemType t) {
  size_t r = inShape.size();
  if (starts.size() != r || steps.size() != r || outShape.size() != r) throw std::invalid_argument("slice: ranks");
  std::vector<int64_t> st = contiguousStrides(inShape);
  CopySpec s;
  s.type = t;
  s.dims = outShape;
  for (size_t d = 0; d < r; ++d) {
    if (steps[d] == 0) throw std::invalid_argument("slice: zero step");
    if (outShape[d] > 0 && (starts[d] < 0 || starts[d] >= inShape[d] || starts[d] + (outShape[d] - 1) * steps[d] < 0 ||
                            starts[d] + (outShape[d] - 1) * steps[d] >= inShape[d]))
      throw std::invalid_argument("slice: out of range");
    if (outShape[d] > 0) s.inOffset += starts[d] * st[d];
    s.inStrides.push_back(st[d] * steps[d]);
  }
  return s;
}

CopySpec concatCopy(const std::vector<int64_t> &inShape, const std::vector<int64_t> &outShape, int axis, int64_t offset,
                    ElemType t) {
  if (inShape.size() != outShape.size() || axis < 0 || axis >= int(inShape.size()) ||
      offset + inShape[axis] > outShape[axis])
    throw std::invalid_argument("concat: shapes");
  CopySpec s;
  s.type = t;
  s.dims = inShape;
  s.inStrides = contiguousStrides(inShape);
  s.outStrides = contiguousStrides(outShape);
  s.outOffset = offset * s.outStrides[axis];
  return s;
}

CopySpec expandCopy(const std::vector<int64_t> &inShape, const std::vector<int64_t> &outShape, ElemType t) {
  CopySpec s;
  s.type = t;
  s.dims = outShape;
  s.inStrides = broadcastStrides(inShape, outShape);
  return s;
}

CopySpec tileCopy(const std::vector<int64_t> &inShape, const std::vector<int64_t> &repeats, ElemType t) {
  if (repeats.size() != inShape.size()) throw std::invalid_argument("tile: repeats rank");
  std::vector<int64_t> st = contiguousStrides(inShape);
  CopySpec s;
  s.type = t;
  for (size_t d = 0; d < inShape.size(); ++d) {
    if (repeats[d] < 0) throw std::invalid_argument("tile: negative repeat");
    s.dims.push_back(repeats[d]);
    s.inStrides.push_back(0);
    s.dims.push_back(inShape[d]);
    s.inStrides.push_back(st[d]);
  }
  return s;
}

CopySpec gatherCopy(const std::vector<int64_t> &dataShape, int axis, const std::vector<int64_t> &indicesShape,
                    ElemType indexType, ElemType t) {
  if (axis < 0 || axis >= int(dataShape.size())) throw std::invalid_argument("gather: axis");
  std::vector<int64_t> st = contiguousStrides(dataShape);
  CopySpec s;
  s.type = t;
  for (int d = 0; d < axis; ++d) {
    s.dims.push_back(dataShape[d]);
    s.inStrides.push_back(st[d]);
  }
  for (int64_t d : indicesShape) {
    s.dims.push_back(d);
    s.inStrides.push_back(0);
  }
  for (size_t d = axis + 1; d < dataShape.size(); ++d) {
    s.dims.push_back(dataShape[d]);
    s.inStrides.push_back(st[d]);
  }
  s.gather = true;
  s.gatherBegin = axis;
  s.gatherRank = static_cast<int>(indicesShape.size());
  s.indexType = indexType;
  s.gatherAxisSize = dataShape[axis];
  s.gatherStride = st[axis];
  return s;
}

}  // namespace kiln::codegen

namespace kiln::codegen {

KernelLaunch emitPad(const PadSpec &s) {
  size_t r = s.inShape.size();
  if (s.before.size() != r || s.after.size() != r) throw std::invalid_argument("pad: one pad pair per dim");
  if (s.mode != "constant" && s.mode != "edge" && s.mode != "reflect" && s.mode != "wrap")
    throw std::invalid_argument("pad: unknown mode '" + s.mode + "'");
  std::vector<int64_t> out(r), inStrides = contiguousStrides(s.inShape);
  for (size_t k = 0; k < r; ++k) {
    out[k] = s.inShape[k] + s.before[k] + s.after[k];
    if (out[k] < 0) throw std::invalid_argument("pad: negative output size");
  }
  const int64_t total = numElementsOf(out);
  std::string idx = indexType(total + numElementsOf(s.inShape) + 8192 * 256);
  // Dim d's coordinate from r_ (which it then divides), its source offset added to `src`.
  auto dimCode = [&](size_t d) {
    int64_t dim = s.inShape[d];
    int64_t lo = std::max<int64_t>(0, -s.before[d]);
    int64_t len = dim - lo - std::max<int64_t>(0, -s.after[d]);
    std::string c =
        "    { long long c = r_ % " + std::to_string(out[d]) + "LL; r_ /= " + std::to_string(out[d]) + "LL;";
    c += " long long x = c - (" + std::to_string(s.before[d]) + "LL);";
    if (s.mode == "constant") {
      c += " inside = inside && x >= 0 && x < " + std::to_string(dim) + "LL;";
    } else {
      c += " long long j = x - " + std::to_string(lo) + "LL;";
      if (s.mode == "edge")
        c += " j = j < 0 ? 0 : j > " + std::to_string(len - 1) + "LL ? " + std::to_string(len - 1) + "LL : j;";
      else if (s.mode == "wrap")
        c += " j = floor_mod(j, " + std::to_string(std::max<int64_t>(len, 1)) + "LL);";
      else if (len == 1)
        c += " j = 0;";
      else
        c += " j = floor_mod(j, " + std::to_string(2 * (len - 1)) + "LL); if (j >= " + std::to_string(len) +
             "LL) j = " + std::to_string(2 * (len - 1)) + "LL - j;";
      c += " x = j + " + std::to_string(lo) + "LL;";
    }
    return c + " src += x * " + std::to_string(inStrides[d]) + "LL; }\n";
  };
  const std::string value = storeExpr(s.type, floatLiteral(static_cast<float>(s.value)));
  std::string src = "// kiln pad (" + s.mode + "): " + std::to_string(total) + " elements\n";
  src += kDevicePrelude;
  src += "typedef " + std::string(storageTypeName(s.type)) + " T;\n";
  src += kWord16Decl;
  src += "KILN_DEV long long floor_mod(long long a, long long b) { long long m = a % b; return m < 0 ? m + b : m; }\n";
  src += "extern \"C\" __global__ void __launch_bounds__(256) KILN_ENTRY(const T* __restrict__ in, T* __restrict__ "
         "out) {\n";
  // Constant padding: words of `vec` consecutive elements along the last dim per thread (the
  // outer coordinates decoded once per word; 16/8/4-byte stores) when the output is aligned.
  const int vec = s.mode == "constant" && r > 0 ? wordElems(out[r - 1], elemSize(s.type)) : 1;
  if (vec > 1) {
    int64_t bytes = vec * int64_t(elemSize(s.type)), last = s.inShape[r - 1];
    std::string w = vectorWordType(bytes);
    src += "  if ((((unsigned long long)out) & " + std::to_string(bytes - 1) + ") == 0) {\n";
    src += "  for (" + idx + " i = (" + idx + ")blockIdx.x * blockDim.x + threadIdx.x; i < (" + idx + ")" +
           std::to_string(total / vec) + "; i += (" + idx + ")gridDim.x * blockDim.x) {\n";
    src += "    long long r_ = i * " + std::to_string(vec) + "LL, src = 0; bool inside = true;\n";
    src += "    const long long c0 = r_ % " + std::to_string(out[r - 1]) + "LL - (" + std::to_string(s.before[r - 1]) +
           "LL); r_ /= " + std::to_string(out[r - 1]) + "LL;\n";
    for (size_t d = r - 1; d-- > 0;) src += dimCode(d);
    src += "    union { " + w + " w; T e[" + std::to_string(vec) + "]; } u;\n";
    src += "    #pragma unroll\n    for (int k = 0; k < " + std::to_string(vec) + "; ++k) {\n";
    src += "      const long long x = c0 + k;\n";
    src += "      u.e[k] = inside && x >= 0 && x < " + std::to_string(last) + "LL ? in[src + x] : " + value + ";\n";
    src += "    }\n";
    src += "    reinterpret_cast<" + w + "*>(out)[i] = u.w;\n";
    src += "  }\n  return;\n  }\n";
  }
  src += "  for (" + idx + " i = (" + idx + ")blockIdx.x * blockDim.x + threadIdx.x; i < (" + idx + ")" +
         std::to_string(total) + "; i += (" + idx + ")gridDim.x * blockDim.x) {\n";
  src += "    long long r_ = i, src = 0; bool inside = true;\n";
  for (size_t d = r; d-- > 0;) src += dimCode(d);
  src += "    out[i] = inside ? in[src] : " + value + ";\n";
  src += "  }\n}\n";
  KernelLaunch k = finalizeKernel("pad", src);
  k.block = {256, 1, 1};
  k.grid = {gridStrideBlocks(total / vec, 256), 1, 1};
  k.numParams = 2;
  return k;
}

KernelLaunch emitIm2Col(const Im2ColSpec &s) {
  if (s.N < 1 || s.H < 1 || s.W < 1 || s.C < 1 || s.KH < 1 || s.KW < 1 || s.OH < 1 || s.OW < 1 || s.strideH < 1 ||
      s.strideW < 1 || s.dilationH < 1 || s.dilationW < 1)
    throw std::invalid_argument("im2col: sizes must be >= 1");
  const size_t elem = elemSize(s.type);
  const int64_t total = s.N * s.OH * s.OW * s.KH * s.KW * s.C;
  std::string idx = indexType(total + s.N * s.H * s.W * s.C + 8192 * 256);
  const int vec = wordElems(s.C, elem);  // channels per word
  auto L = [](int64_t v) { return std::to_string(v); };
  // The loop over words of `v` channels of type `w`.
  auto loop = [&](const std::string &w, int v) {
    int64_t cw = s.C / v;
    std::string r = "    const " + w + "* __restrict__ vin = reinterpret_cast<const " + w + "*>(in);\n";
    r += "    " + w + "* __restrict__ vout = reinterpret_cast<" + w + "*>(out);\n";
    r += "    for (" + idx + " i = (" + idx + ")blockIdx.x * blockDim.x + threadIdx.x; i < " + L(total / v) +
         "; i += (" + idx + ")gridDim.x * blockDim.x) {\n";
    r += "      " + idx + " t = i;\n";
    r += "      const int c = (int)(t % " + L(cw) + "); t /= " + L(cw) + ";\n";
    r += "      const int kw = (int)(t % " + L(s.KW) + "); t /= " + L(s.KW) + ";\n";
    r += "      const int kh = (int)(t % " + L(s.KH) + "); t /= " + L(s.KH) + ";\n";
    r += "      const int ow = (int)(t % " + L(s.OW) + "); t /= " + L(s.OW) + ";\n";
    r += "      const int oh = (int)(t % " + L(s.OH) + "); t /= " + L(s.OH) + ";\n";
    r += "      const int ih = oh * " + L(s.strideH) + " + kh * " + L(s.dilationH) + " - " + L(s.padTop) + ";\n";
    r += "      const int iw = ow * " + L(s.strideW) + " + kw * " + L(s.dilationW) + " - " + L(s.padLeft) + ";\n";
    r += "      " + w + " x = {};\n";
    r += "      if ((unsigned)ih < " + L(s.H) + "u && (unsigned)iw < " + L(s.W) + "u) x = vin[((t * " + L(s.H) +
         " + ih) * " + L(s.W) + " + iw) * " + L(cw) + " + c];\n";
    r += "      vout[i] = x;\n    }\n";
    return r;
  };
  std::string src = "// kiln im2col: [" + L(s.N) + "," + L(s.H) + "," + L(s.W) + "," + L(s.C) + "] -> " + L(total) +
                    " elements of " + L(int64_t(elem)) + " bytes\n";
  src += kWord16Decl;
  src += "extern \"C\" __global__ void __launch_bounds__(256) KILN_ENTRY(const " + std::string(wordType(s.type)) +
         "* __restrict__ in, " + wordType(s.type) + "* __restrict__ out) {\n";
  if (vec > 1) {
    int64_t bytes = vec * int64_t(elem);
    src += "  if (((((unsigned long long)in) | ((unsigned long long)out)) & " + L(bytes - 1) + ") == 0) {\n";
    src += loop(vectorWordType(bytes), vec);
    src += "    return;\n  }\n";
  }
  src += "  {\n" + loop(wordType(s.type), 1) + "  }\n}\n";
  KernelLaunch k = finalizeKernel("im2col", src);
  k.block = {256, 1, 1};
  k.grid = {gridStrideBlocks(total / vec, 256), 1, 1};
  k.numParams = 2;
  return k;
}

}  // namespace kiln::codegen

#include "codegen/kernels/Indexing.h"

#include "codegen/kernels/IndexKernel.h"
#include "codegen/kernels/KernelUtil.h"

#include <stdexcept>
#include <string>

namespace kiln::codegen {

using namespace kernels;

namespace {

// The row-major offset of coordinates c0.. over `shape`, with coordinate `axis` replaced by
// `axisExpr` (axis < 0: none replaced).
std::string offsetOf(const std::vector<int64_t> &shape, int axis = -1, const std::string &axisExpr = "") {
  std::vector<int64_t> st = contiguousStrides(shape);
  std::string e = "0LL";
  for (size_t d = 0; d < shape.size(); ++d)
    e += " + (" + (int(d) == axis ? axisExpr : "c" + std::to_string(d)) + ") * " + intLiteral(st[d]);
  return e;
}

}  // namespace

KernelLaunch emitTrilu(const std::vector<int64_t> &shape, int64_t k, bool upper, ElemType type) {
  if (shape.size() < 2) throw std::invalid_argument("Trilu: the input must have rank >= 2");
  size_t r = shape.size();
  IndexKernelSpec s;
  s.kind = "trilu";
  s.comment = std::string("Trilu ") + (upper ? "upper" : "lower") + ", k " + std::to_string(k);
  s.space = shape;
  s.params = {{"x", type}, {"y", type, true}};
  std::string diff = "c" + std::to_string(r - 1) + " - c" + std::to_string(r - 2);
  s.body =
      "    y[i] = (" + diff + (upper ? " >= " : " <= ") + intLiteral(k) + ") ? x[i] : " + storeExpr(type, "0") + ";\n";
  return emitIndexKernel(s);
}

KernelLaunch emitGatherElements(const std::vector<int64_t> &dataShape, const std::vector<int64_t> &indicesShape,
                                int axis, ElemType indexType, ElemType type) {
  if (dataShape.size() != indicesShape.size() || axis < 0 || size_t(axis) >= dataShape.size())
    throw std::invalid_argument("GatherElements: data and indices must have one rank, axis inside it");
  if (indexType != ElemType::I64 && indexType != ElemType::I32)
    throw std::invalid_argument("GatherElements: indices must be int32 or int64");
  IndexKernelSpec s;
  s.kind = "gather_el";
  s.comment = "GatherElements along axis " + std::to_string(axis);
  s.space = indicesShape;
  s.params = {{"data", type}, {"idx", indexType}, {"y", type, true}};
  std::string n = intLiteral(dataShape[size_t(axis)]);
  s.body = "    long long g = (long long)idx[i];\n    if (g < 0) g += " + n + ";\n    g = g < 0 ? 0 : g >= " + n +
           " ? " + n + " - 1 : g;\n    y[i] = data[" + offsetOf(dataShape, axis, "g") + "];\n";
  return emitIndexKernel(s);
}

KernelLaunch emitEyeLike(const std::vector<int64_t> &shape, int64_t k, ElemType type) {
  if (shape.size() != 2) throw std::invalid_argument("EyeLike: the input must be 2-D");
  IndexKernelSpec s;
  s.kind = "eye";
  s.comment = "EyeLike k " + std::to_string(k);
  s.space = shape;
  s.params = {{"y", type, true}};
  s.body = "    y[i] = " + storeExpr(type, "(c1 - c0 == " + intLiteral(k) + ") ? 1 : 0") + ";\n";
  return emitIndexKernel(s);
}

KernelLaunch emitOneHot(const std::vector<int64_t> &indicesShape, int64_t depth, int axis, ElemType indexType,
                        ElemType type) {
  std::vector<int64_t> out = indicesShape;
  if (axis < 0 || size_t(axis) > out.size() || depth < 1) throw std::invalid_argument("OneHot: bad axis or depth");
  out.insert(out.begin() + axis, depth);
  IndexKernelSpec s;
  s.kind = "onehot";
  s.comment = "OneHot depth " + std::to_string(depth) + " axis " + std::to_string(axis);
  s.space = out;
  s.params = {{"idx", indexType}, {"values", type}, {"y", type, true}};
  // The indices' offset: the output coordinates without `axis`.
  std::vector<int64_t> st = contiguousStrides(indicesShape);
  std::string off = "0LL";
  for (size_t d = 0, k = 0; d < out.size(); ++d)
    if (int(d) != axis) off += " + c" + std::to_string(d) + " * " + intLiteral(st[k++]);
  s.body = "    long long v = (long long)idx[" + off + "];\n    if (v < 0) v += " + intLiteral(depth) +
           ";\n    y[i] = values[v == c" + std::to_string(axis) + " ? 1 : 0];\n";
  return emitIndexKernel(s);
}

KernelLaunch emitDropoutWithMask(int64_t elements, ElemType type) {
  IndexKernelSpec s;
  s.kind = "dropout";
  s.comment = "inference Dropout: y = x, mask = true";
  s.space = {elements};
  s.params = {{"x", type}, {"y", type, true}, {"mask", ElemType::Bool, true}};
  s.body = "    y[i] = x[i];\n    mask[i] = true;\n";
  return emitIndexKernel(s);
}

}  // namespace kiln::codegen

// Small helpers shared by the op files (messages, index walking, window attributes).
#pragma once

#include "compiler/ops/OpSemantics.h"
#include "compiler/support/Parallel.h"

#include <algorithm>
#include <string>
#include <vector>

namespace kiln::ops {

// Runs body(row) for row in [0, rows) on the machine's cores when the work (rows · workPerRow
// multiply-adds) is large. Rows must be independent (each writes its own outputs).
template <class Body> void parallelRows(int64_t rows, int64_t workPerRow, const Body &body) {
  int64_t threads =
      std::min<int64_t>({int64_t(support::hardwareThreads()), rows, rows * workPerRow / (int64_t(1) << 22) + 1});
  if (threads <= 1) {
    for (int64_t r = 0; r < rows; ++r) body(r);
    return;
  }
  support::parallelFor(size_t(threads), unsigned(threads), [&](size_t t) {
    for (int64_t r = int64_t(t) * rows / threads; r < (int64_t(t) + 1) * rows / threads; ++r) body(r);
  });
}

// The ShapeContext of a kernel's actual inputs (every present input is also a known value), so a
// kernel can run its own shape function and the two cannot disagree.
inline ShapeContext shapeContextOf(const EvalContext &ctx) {
  std::vector<TensorType> types;
  for (const Tensor *t : ctx.inputs) types.push_back(t ? TensorType{t->dtype, t->shape} : TensorType{});
  return ShapeContext{std::move(types), ctx.inputs, ctx.attrs, ctx.numOutputs};
}

// "[1, 2, 3]", for messages.
inline std::string listString(const std::vector<int64_t> &v) {
  std::string r = "[";
  for (size_t k = 0; k < v.size(); ++k) r += (k ? ", " : "") + std::to_string(v[k]);
  return r + "]";
}

// Advances `idx` to the next coordinate of `dims` in row-major order; false after the last one.
inline bool nextIndex(std::vector<int64_t> &idx, const Shape &dims) {
  for (size_t k = dims.size(); k-- > 0;) {
    if (++idx[k] < dims[k]) return true;
    idx[k] = 0;
  }
  return false;
}

// Bound on kernel sizes, strides, dilations and pads, so size arithmetic cannot overflow.
constexpr int64_t kMaxAttr = int64_t{1} << 31;

// A per-spatial-axis attribute (strides, dilations, output_padding): `n` values, each >= minValue.
inline std::vector<int64_t> spatialAttr(const std::string &op, const Attrs &attrs, const std::string &name, size_t n,
                                        int64_t dflt, int64_t minValue) {
  std::vector<int64_t> v = attrs.getInts(name, std::vector<int64_t>(n, dflt));
  check(v.size() == n, op + ": attribute '" + name + "' has " + std::to_string(v.size()) +
                           " values but the input has " + std::to_string(n) + " spatial axes");
  for (int64_t x : v)
    check(x >= minValue && x <= kMaxAttr,
          op + ": attribute '" + name + "' must be in [" + std::to_string(minValue) + ", 2^31], got " + listString(v));
  return v;
}

// The explicit `pads` attribute of an n-D window op: 2n values in [0, 2^31], [begin..., end...].
inline void explicitPads(const std::string &op, const Attrs &attrs, size_t n, Shape &padBegin, Shape &padEnd) {
  std::vector<int64_t> pads = attrs.getInts("pads", std::vector<int64_t>(2 * n, 0));
  check(pads.size() == 2 * n, op + ": pads has " + std::to_string(pads.size()) + " values, expected " +
                                  std::to_string(2 * n) + " (begin and end for each spatial axis)");
  for (int64_t p : pads) check(p >= 0 && p <= kMaxAttr, op + ": pads must be in [0, 2^31], got " + listString(pads));
  padBegin.assign(pads.begin(), pads.begin() + n);
  padEnd.assign(pads.begin() + n, pads.end());
}

}  // namespace kiln::ops

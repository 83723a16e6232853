// Matrix products: MatMul (numpy matmul semantics) and Gemm.
//
// Floating-point products accumulate in double and are rounded once per output element.
// Integer products accumulate in 64-bit wrap-around arithmetic and are then wrapped to the
// result dtype, as a C++ integer kernel would.
#include "compiler/ops/OpSemantics.h"
#include "compiler/ops/OpUtil.h"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace kiln::ops {
namespace {

void checkNumeric(const std::string &op, const char *what, DType t) {
  check(isFloat(t) || isInteger(t),
        op + ": input " + what + " must be a numeric tensor (float or integer), got " + dtypeName(t));
}

// Dot product of a row of A and a column of B, with arbitrary element strides.
struct Dot {
  const Tensor &a, &b;
  double floatDot(int64_t aOff, int64_t aStride, int64_t bOff, int64_t bStride, int64_t k) const {
    double acc = 0.0;
    for (int64_t j = 0; j < k; ++j) acc += a.f[aOff + j * aStride] * b.f[bOff + j * bStride];
    return acc;
  }
  int64_t intDot(int64_t aOff, int64_t aStride, int64_t bOff, int64_t bStride, int64_t k) const {
    uint64_t acc = 0;  // unsigned so overflow wraps instead of being undefined
    for (int64_t j = 0; j < k; ++j)
      acc += static_cast<uint64_t>(a.i[aOff + j * aStride]) * static_cast<uint64_t>(b.i[bOff + j * bStride]);
    return static_cast<int64_t>(acc);
  }
};

// ---------------------------------------------------------------------------------------------
// MatMul: A (..., M, K) x B (..., K, N) → (..., M, N), batch dims broadcast. A 1-D A is treated
// as (1, K) and a 1-D B as (K, 1); the added dim is removed from the result.

struct MatMulGeometry {
  int64_t m = 0, k = 0, n = 0;
  Shape aBatch, bBatch, batch, out;
};

MatMulGeometry matmulGeometry(const TensorType &a, const TensorType &b) {
  checkNumeric("MatMul", "A", a.dtype);
  check(b.dtype == a.dtype,
        "MatMul: A has dtype " + std::string(dtypeName(a.dtype)) + " but B has " + dtypeName(b.dtype));
  check(!a.shape.empty() && !b.shape.empty(),
        "MatMul: inputs must have rank >= 1, got " + shapeString(a.shape) + " and " + shapeString(b.shape));
  Shape as = a.shape, bs = b.shape;
  bool vecA = as.size() == 1, vecB = bs.size() == 1;
  if (vecA) as.insert(as.begin(), 1);
  if (vecB) bs.push_back(1);
  MatMulGeometry g;
  g.m = as[as.size() - 2];
  g.k = as.back();
  g.n = bs.back();
  check(bs[bs.size() - 2] == g.k, "MatMul: inner dimensions differ: A is " + shapeString(a.shape) +
                                      " (K=" + std::to_string(g.k) + ") but B is " + shapeString(b.shape) +
                                      " (K=" + std::to_string(bs[bs.size() - 2]) + ")");
  g.aBatch.assign(as.begin(), as.end() - 2);
  g.bBatch.assign(bs.begin(), bs.end() - 2);
  try {
    g.batch = broadcastShapes({g.aBatch, g.bBatch});
  } catch (const OpError &e) {
    fail(std::string("MatMul: batch dimensions of ") + shapeString(a.shape) + " and " + shapeString(b.shape) +
         " do not broadcast: " + e.what());
  }
  g.out = g.batch;
  if (!vecA) g.out.push_back(g.m);
  if (!vecB) g.out.push_back(g.n);
  return g;
}

std::vector<TensorType> matmulShape(const ShapeContext &ctx) {
  check(ctx.present(0) && ctx.present(1), "MatMul: inputs A and B are required");
  MatMulGeometry g = matmulGeometry(ctx.inputs[0], ctx.inputs[1]);
  return {{ctx.inputs[0].dtype, g.out}};
}

std::vector<Tensor> matmulEval(const EvalContext &ctx) {
  const Tensor &a = ctx.in(0), &b = ctx.in(1);
  MatMulGeometry g = matmulGeometry({a.dtype, a.shape}, {b.dtype, b.shape});
  Tensor y(a.dtype, g.out);
  int64_t batches = numElements(g.batch);
  // Row at a time over contiguous rows of B (same summation order as a dot product per element,
  // j ascending, so results are identical; several times faster on large models). Integers in
  // wrap-around unsigned arithmetic.
  parallelRows(batches * g.m, g.n * g.k, [&](int64_t row) {
    int64_t bi = row / std::max<int64_t>(g.m, 1), r = row % std::max<int64_t>(g.m, 1);
    int64_t aRow = broadcastIndex(g.aBatch, g.batch, bi) * g.m * g.k + r * g.k;
    int64_t bBase = broadcastIndex(g.bBatch, g.batch, bi) * g.k * g.n;
    int64_t yRow = (bi * g.m + r) * g.n;
    if (y.isFloating()) {
      std::vector<double> acc(static_cast<size_t>(g.n), 0.0);
      for (int64_t j = 0; j < g.k; ++j) {
        const double av = a.f[aRow + j];
        const double *brow = &b.f[bBase + j * g.n];
        for (int64_t c = 0; c < g.n; ++c) acc[c] += av * brow[c];
      }
      for (int64_t c = 0; c < g.n; ++c) y.set(yRow + c, acc[c]);
      return;
    }
    std::vector<uint64_t> iacc(static_cast<size_t>(g.n), 0);
    for (int64_t j = 0; j < g.k; ++j) {
      const uint64_t av = static_cast<uint64_t>(a.i[aRow + j]);
      const int64_t *brow = &b.i[bBase + j * g.n];
      for (int64_t c = 0; c < g.n; ++c) iacc[c] += av * static_cast<uint64_t>(brow[c]);
    }
    for (int64_t c = 0; c < g.n; ++c) y.setInt(yRow + c, static_cast<int64_t>(iacc[c]));
  });
  return {y};
}

int64_t matmulFlops(const ShapeContext &ctx, const std::vector<TensorType> &) {
  MatMulGeometry g = matmulGeometry(ctx.inputs[0], ctx.inputs[1]);
  return 2 * numElements(g.batch) * g.m * g.n * g.k;
}

// ---------------------------------------------------------------------------------------------
// Gemm: Y = alpha * A' * B' + beta * C, A' = transA ? A^T : A (M x K), B' = transB ? B^T : B
// (K x N); C (optional) broadcasts unidirectionally to (M, N).

struct GemmGeometry {
  int64_t m = 0, k = 0, n = 0;
  bool transA = false, transB = false;
};

GemmGeometry gemmGeometry(const TensorType &a, const TensorType &b, const TensorType *c, const Attrs &attrs) {
  checkNumeric("Gemm", "A", a.dtype);
  check(b.dtype == a.dtype,
        "Gemm: A has dtype " + std::string(dtypeName(a.dtype)) + " but B has " + dtypeName(b.dtype));
  check(a.shape.size() == 2, "Gemm: A must be 2-D, got shape " + shapeString(a.shape));
  check(b.shape.size() == 2, "Gemm: B must be 2-D, got shape " + shapeString(b.shape));
  GemmGeometry g;
  g.transA = attrs.getInt("transA", 0) != 0;
  g.transB = attrs.getInt("transB", 0) != 0;
  g.m = g.transA ? a.shape[1] : a.shape[0];
  g.k = g.transA ? a.shape[0] : a.shape[1];
  int64_t kb = g.transB ? b.shape[1] : b.shape[0];
  g.n = g.transB ? b.shape[0] : b.shape[1];
  check(kb == g.k, "Gemm: inner dimensions differ: A' is " + std::to_string(g.m) + "x" + std::to_string(g.k) +
                       " but B' is " + std::to_string(kb) + "x" + std::to_string(g.n) +
                       " (transA=" + std::to_string(g.transA) + ", transB=" + std::to_string(g.transB) + ")");
  if (c) {
    check(c->dtype == a.dtype,
          "Gemm: C has dtype " + std::string(dtypeName(c->dtype)) + " but A has " + dtypeName(a.dtype));
    check(c->shape.size() <= 2, "Gemm: C must have rank <= 2, got shape " + shapeString(c->shape));
    // Unidirectional broadcast: each dim of C (aligned to the right) is 1 or equal to Y's.
    Shape y{g.m, g.n};
    size_t off = 2 - c->shape.size();
    for (size_t d = 0; d < c->shape.size(); ++d)
      check(c->shape[d] == 1 || c->shape[d] == y[d + off],
            "Gemm: C of shape " + shapeString(c->shape) + " cannot be broadcast to the output " + shapeString(y));
  }
  return g;
}

std::vector<TensorType> gemmShape(const ShapeContext &ctx) {
  check(ctx.present(0) && ctx.present(1), "Gemm: inputs A and B are required");
  GemmGeometry g = gemmGeometry(ctx.inputs[0], ctx.inputs[1], ctx.present(2) ? &ctx.inputs[2] : nullptr, ctx.attrs);
  return {{ctx.inputs[0].dtype, {g.m, g.n}}};
}

std::vector<Tensor> gemmEval(const EvalContext &ctx) {
  const Tensor &a = ctx.in(0), &b = ctx.in(1);
  const Tensor *c = ctx.present(2) ? &ctx.in(2) : nullptr;
  TensorType ct = c ? TensorType{c->dtype, c->shape} : TensorType{};
  GemmGeometry g = gemmGeometry({a.dtype, a.shape}, {b.dtype, b.shape}, c ? &ct : nullptr, ctx.attrs);
  double alpha = ctx.attrs.getFloat("alpha", 1.0), beta = ctx.attrs.getFloat("beta", 1.0);
  Shape yShape{g.m, g.n};
  Tensor y(a.dtype, yShape);
  Dot dot{a, b};
  // Element strides of A' rows / B' columns in the stored (possibly transposed) matrices.
  int64_t aRow = g.transA ? 1 : g.k, aStep = g.transA ? g.m : 1;
  int64_t bCol = g.transB ? g.k : 1, bStep = g.transB ? 1 : g.n;
  for (int64_t r = 0; r < g.m; ++r)
    for (int64_t col = 0; col < g.n; ++col) {
      int64_t idx = r * g.n + col;
      double prod = y.isFloating() ? dot.floatDot(r * aRow, aStep, col * bCol, bStep, g.k)
                                   : static_cast<double>(dot.intDot(r * aRow, aStep, col * bCol, bStep, g.k));
      double v = alpha * prod;
      if (c) v += beta * c->get(broadcastIndex(c->shape, yShape, idx));
      y.set(idx, v);
    }
  return {y};
}

int64_t gemmFlops(const ShapeContext &ctx, const std::vector<TensorType> &outs) {
  const Shape &a = ctx.inputs[0].shape;
  int64_t k = ctx.attrs.getInt("transA", 0) ? a[0] : a[1];
  int64_t mn = numElements(outs[0].shape);
  // Multiply-adds, plus the alpha scaling and beta*C add per output element.
  return 2 * mn * k + (ctx.present(2) ? 2 * mn : mn);
}

}  // namespace

KILN_REGISTER_OP({"MatMul", matmulShape, matmulEval, matmulFlops});
KILN_REGISTER_OP({"Gemm", gemmShape, gemmEval, gemmFlops});

}  // namespace kiln::ops

#include "codegen/lowering/Lowering.h"

#include "codegen/kernels/KernelUtil.h"
#include "passes/ElementwiseUse.h"
#include "passes/StridedViews.h"

#include <cstring>

using namespace mlir;

namespace kiln::codegen {

Shape shapeOf(Value v) {
  auto t = cast<RankedTensorType>(v.getType());
  return Shape(t.getShape().begin(), t.getShape().end());
}
int64_t product(const Shape &s, size_t b, size_t e) {
  int64_t p = 1;
  for (size_t k = b; k < e && k < s.size(); ++k) p *= s[k];
  return p;
}
int64_t bytesOf(Value v) {
  auto t = cast<RankedTensorType>(v.getType());
  return t.getNumElements() * ops::byteSize(dtypeOf(t.getElementType()));
}

ElemType elemTypeOf(Value v) {
  Type e = cast<RankedTensorType>(v.getType()).getElementType();
  if (auto t = kernelElemType(e)) return *t;
  throw std::invalid_argument(std::string("element type ") + ops::dtypeName(dtypeOf(e)) + " has no kernels");
}

namespace {

// Byte-level transpose of a row-major tensor of `shape` (elements of `elem` bytes) by `perm`.
std::vector<uint8_t> permuteBytes(const std::vector<uint8_t> &in, const Shape &shape, const Shape &perm, size_t elem) {
  Shape out(perm.size());
  for (size_t k = 0; k < perm.size(); ++k) out[k] = shape[perm[k]];
  Shape inStrides(shape.size(), 1);
  for (int64_t k = int64_t(shape.size()) - 2; k >= 0; --k) inStrides[k] = inStrides[k + 1] * shape[k + 1];
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<uint8_t> r(in.size());
  Shape idx(out.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t src = 0;
    for (size_t k = 0; k < out.size(); ++k) src += idx[k] * inStrides[perm[k]];
    std::memcpy(&r[size_t(i) * elem], &in[size_t(src) * elem], elem);
    for (size_t k = out.size(); k-- > 0;) {
      if (++idx[k] < out[k]) break;
      idx[k] = 0;
    }
  }
  return r;
}

// Whether `u` reads `v` only as its matrix product's A or B (as kiln-product-views made it).
bool isProductOperand(Operation *u, Value v) {
  int operandOf[2];
  if (!productOf(u, operandOf)) return false;
  return llvm::all_of(u->getOpOperands(), [&](OpOperand &o) {
    return o.get() != v || int(o.getOperandNumber()) == operandOf[0] || int(o.getOperandNumber()) == operandOf[1];
  });
}

// A strided view that only attention ops, elementwise kernels and matrix products read: they
// read its operand through the view.
bool isReadInPlaceView(Operation *op) {
  return isa<StridedViewOp>(op) && llvm::all_of(op->getUsers(), [&](Operation *u) {
           auto f = dyn_cast<FusedOp>(u);
           return isa<AttentionOp>(u) || (f && f.getKind() == FusedKind::Elementwise) || isFusableElementwise(u) ||
                  isProductOperand(u, op->getResult(0));
         });
}

// Ops whose result is their first operand's bytes under another shape (or, for an attention
// view, read through strides by its users): no launch.

}  // namespace

bool isAlias(Operation *op) {
  return isa<ReshapeOp, FlattenOp, SqueezeOp, UnsqueezeOp, IdentityOp>(op) ||
         (isa<DropoutOp>(op) && op->getNumResults() == 1) || isReadInPlaceView(op);
}

std::vector<int64_t> intsOr(const ops::Attrs &a, const char *name, std::vector<int64_t> dflt) {
  return a.getInts(name, dflt);
}

// Begin and end pads of an N-D conv/pool window, from explicit pads or auto_pad and the result
// size (per spatial axis: input, output, kernel, stride, dilation).
std::pair<Shape, Shape> windowPads(const ops::Attrs &a, const Shape &in, const Shape &out, const Shape &kernel,
                                   const Shape &strides, const Shape &dilations) {
  size_t n = in.size();
  Shape begin(n, 0), end(n, 0);
  std::string autoPad = a.getString("auto_pad", "NOTSET");
  if (autoPad == "NOTSET") {
    auto pads = intsOr(a, "pads", Shape(2 * n, 0));
    if (pads.size() != 2 * n) throw std::invalid_argument("expected " + std::to_string(2 * n) + " pads");
    begin.assign(pads.begin(), pads.begin() + long(n));
    end.assign(pads.begin() + long(n), pads.end());
  } else if (autoPad != "VALID") {
    for (size_t d = 0; d < n; ++d) {
      int64_t total = std::max<int64_t>(0, (out[d] - 1) * strides[d] + (kernel[d] - 1) * dilations[d] + 1 - in[d]);
      begin[d] = autoPad == "SAME_UPPER" ? total / 2 : total - total / 2;
      end[d] = total - begin[d];
    }
  }
  return {begin, end};
}

bool Lowering::isIo(Value v) {
  if (auto arg = dyn_cast<BlockArgument>(root(v)); arg && arg.getOwner() == &f_.getBody().front()) return true;
  Operation *d = v.getDefiningOp();
  return d && !isAlias(d) && llvm::is_contained(f_.getBody().front().getTerminator()->getOperands(), v);
}

void Lowering::addLaunch(Operation *op, KernelLaunch k, std::vector<Value> params, std::vector<int64_t> offsets) {
  if (static_cast<int>(params.size()) != k.numParams && k.numParams != 0)
    throw std::logic_error("kernel " + k.entry + " takes " + std::to_string(k.numParams) + " pointers, got " +
                           std::to_string(params.size()));
  offsets.resize(params.size(), 0);
  PendingLaunch p;
  p.kernel = std::move(k);
  p.params = std::move(params);
  p.paramOffsets = std::move(offsets);
  p.node = fusedNodes_.empty() ? launchNodes(op) : fusedNodes_;
  launches_.push_back(std::move(p));
}

std::string launchNodes(Operation *op) {
  std::vector<std::string> names = nodeNames(op);
  std::string s;
  for (size_t i = 0; i < names.size() && i < 8; ++i) s += (i ? "+" : "") + names[i];
  if (names.size() > 8) s += " (+" + std::to_string(names.size() - 8) + " more)";
  return s;
}

Value Lowering::addWeights(const std::vector<float> &vals, Operation *at) {
  ops::Tensor t(ops::DType::F32, {static_cast<int64_t>(vals.size())});
  for (size_t k = 0; k < vals.size(); ++k) t.f[k] = vals[k];
  return addConstant(t, at);
}
Value Lowering::addConstant(const ops::Tensor &t, Operation *at) {
  builder_.setInsertionPoint(at);
  Value c = builder_.create<ConstantOp>(at->getLoc(), attrFromTensor(t, f_.getContext()));
  buildTimeConstants_.push_back(c.getDefiningOp());
  return c;
}

Value Lowering::repacked(Value weights, const Shape &perm, const Shape &newShape) {
  auto c = outer(weights).getDefiningOp<ConstantOp>();
  if (!c) throw std::invalid_argument("convolution weights must be constants");
  std::vector<uint8_t> bytes = bytesFromAttr(c.getValue());
  if (bytes.empty() && c.getValue().getNumElements() > 0) bytes = ops::tensorToBytes(tensorFromAttr(c.getValue()));
  auto type = cast<RankedTensorType>(c.getType());
  Shape shape(type.getShape().begin(), type.getShape().end());
  size_t elem = ops::byteSize(dtypeOf(type.getElementType()));
  std::vector<uint8_t> r = permuteBytes(bytes, shape, perm, elem);
  auto newType = RankedTensorType::get(newShape, type.getElementType());
  builder_.setInsertionPoint(c);
  ArrayRef<char> raw(reinterpret_cast<const char *>(r.data()), r.size());
  Value v = builder_.create<ConstantOp>(c.getLoc(), resourceAttrFromBytes(newType, "repacked", raw));
  buildTimeConstants_.push_back(v.getDefiningOp());
  return v;
}

Value Lowering::zeroPointOffsets(Value b, const Shape &permB, int64_t za, Operation *at) {
  auto w = constantValue(outer(b), int64_t(1) << 30);
  if (!w || w->rank() < 2)
    throw std::invalid_argument("int8 product with an activation zero point: B must be a constant matrix");
  // A matrix [K, N] (or [N, K] with perm_b 10), or convolution weights [M, C, kernel...]: [N, K].
  bool nk = permB == Shape{1, 0} || w->rank() > 2;
  int64_t n = w->shape[0], k = w->size() / std::max<int64_t>(n, 1);
  if (!nk) std::swap(n, k);
  ops::Tensor off(ops::DType::I32, {n});
  for (int64_t j = 0; j < n; ++j) {
    int64_t sum = 0;
    for (int64_t i = 0; i < k; ++i) sum += w->getInt(nk ? j * k + i : i * n + j);
    off.setInt(j, za * sum);
  }
  return addConstant(off, at);
}

Value Lowering::int8Scale(Value scale, int64_t n, Operation *at) {
  auto c = constantValue(outer(scale));
  if (!c || (c->size() != 1 && c->size() != n))
    throw std::invalid_argument("int8 product: the scale must be a constant of 1 or N elements");
  return c->size() == n ? outer(scale) : addWeights(std::vector<float>(size_t(n), float(c->get(0))), at);
}

}  // namespace kiln::codegen

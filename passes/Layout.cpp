// NHWC layout for convolutions (see Passes.td). Convolutions chosen for NHWC are wrapped in
// transposes, then transposes to NCHW are pushed down through layout-agnostic ops until they
// meet their inverses (or a graph boundary) and cancel.
#include "compiler/ir/Builders.h"
#include "compiler/ir/TensorConversion.h"
#include "passes/PassUtil.h"
#include "passes/Passes.h"
#include "passes/Transposes.h"

#include "compiler/target/ElementwiseTable.h"
#include "compiler/ops/Conv.h"
#include "compiler/ops/OpSemantics.h"

namespace kiln {
#define GEN_PASS_DEF_LAYOUT
#include "passes/Passes.h.inc"

KILN_KNOB(kLayout, {"layout.conv",
                    {"auto", "nchw", "nhwc"},
                    "auto",
                    "Activation layout of convolutions (auto: nhwc for fp32/fp16/bf16, nchw for other types)",
                    knobs::Tier::Fast,
                    "passes/Layout.cpp",
                    "layout",
                    {"Conv"}});

KILN_KNOB(kConvAlgo, {"conv.algo",
                      {"auto", "implicit", "im2col"},
                      "auto",
                      "How an NHWC convolution with a spatial kernel or stride (group 1) multiplies: implicit "
                      "(kiln's implicit-GEMM kernel reads the image through an im2col view) or im2col (the patches "
                      "written out once, then one matrix product: cuBLASLt's where gemm.tactic allows); auto: "
                      "im2col when the patch matrix is at most 64 MiB (fp16/bf16) or 512 MiB (fp32)",
                      knobs::Tier::Fast,
                      "passes/Layout.cpp",
                      "algo",
                      {"Conv"}});

namespace {

using namespace mlir;

// Above this, writing and reading the patch matrix costs more than the library product saves
// (ResNet-50's 56x56 stage, H200). fp32: cuBLASLt's fp32 product is ~3x faster than kiln's SIMT
// implicit GEMM on every ResNet-50 convolution (the 236 MB stem at batch 32 included), so
// the bound only caps the arena.
constexpr int64_t kIm2colMaxBytes = int64_t(64) << 20, kIm2colMaxBytesF32 = int64_t(512) << 20;

// Channels last and back for rank r: 2-D convolutions (r = 4) and 1-D ones (r = 3, N·L·C).
Perm toNhwc(int64_t r) {
  Perm p = {0};
  for (int64_t k = 2; k < r; ++k) p.push_back(k);
  p.push_back(1);
  return p;
}
Perm toNchw(int64_t r) {
  Perm p = {0, r - 1};
  for (int64_t k = 1; k + 1 < r; ++k) p.push_back(k);
  return p;
}
int64_t rankOf(Value v) { return cast<RankedTensorType>(v.getType()).getRank(); }

// x when v = Transpose(x, toNchw) (a channels-last tensor seen as NCHW; with `ncl`, also as NCL:
// only when a 1-D convolution was wrapped, so that a sequence model's [0, 2, 1] transposes stay
// where they are in graphs without one).
Value nhwcSource(Value v, bool ncl) {
  auto t = v.getDefiningOp<TransposeOp>();
  int64_t r = rankOf(v);
  return t && (r == 4 || (ncl && r == 3)) && permOf(t) == toNchw(r) ? t.getX() : Value();
}

bool isHalf(Type t) {
  auto e = cast<RankedTensorType>(t).getElementType();
  return e.isF16() || e.isBF16();
}

bool isF32(Type t) { return cast<RankedTensorType>(t).getElementType().isF32(); }

// Half-precision tensor-core convolutions read 8 channels (16 bytes) at a time: an input with
// fewer or an odd number of channels (an RGB image) is zero-padded to a multiple of 8, and the
// weights with it, which leaves the result unchanged. Returns false when W is not a constant.
bool padChannels(Value &xt, Value &w, OpBuilder &b, Location loc) {
  auto wt = constantValue(w, int64_t(1) << 26);
  if (!wt || (wt->rank() != 4 && wt->rank() != 3)) return false;
  int64_t r = wt->rank();
  int64_t C = wt->shape[1], C8 = (C + 7) / 8 * 8;
  ops::Tensor pads(ops::DType::I64, {2 * r});
  pads.setInt(2 * r - 1, C8 - C);  // (the channels-last input's last axis, at its end)
  Value none = b.create<NoneOp>(loc).getResult();
  std::string err;
  Operation *p = createInferred<PadOp>(b, loc, {xt, createConstant(b, loc, pads), none, none},
                                       {b.getNamedAttr("mode", b.getStringAttr("constant"))}, &err);
  if (!p) return false;
  ops::Shape s8 = wt->shape;
  s8[1] = C8;
  ops::Tensor w8(wt->dtype, s8);
  int64_t plane = 1;
  for (int64_t d = 2; d < r; ++d) plane *= wt->shape[size_t(d)];
  for (int64_t m = 0; m < wt->shape[0]; ++m)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t k = 0; k < plane; ++k) w8.f[(m * C8 + c) * plane + k] = wt->f[(m * C + c) * plane + k];
  xt = p->getResult(0);
  w = createConstant(b, loc, w8);
  return true;
}

// The NHWC convolution of `xt` by the constant `w` as Im2Col → MatMul(patches, W as
// [KH·KW·C, M]) [→ Add(B)], if `algo` (conv.algo) asks for it and the convolution reads a window
// (a 1x1, stride-1, unpadded one is a plain product already); else a null value.
Value convAsGemm(ConvOp conv, Value xt, Value w, const std::string &algo, OpBuilder &b) {
  ops::Attrs a = attrsFromOp(conv);
  auto wt = constantValue(w, int64_t(1) << 26);
  if (algo == "implicit" || a.getInt("group", 1) != 1 || !wt || wt->rank() != 4) return {};
  auto xType = cast<RankedTensorType>(xt.getType());
  auto [begin, end] = ops::convPads(tensorTypeOf(conv.getX().getType()), tensorTypeOf(conv.getW().getType()), a);
  ops::Shape strides = a.getInts("strides", {1, 1}), dilations = a.getInts("dilations", {1, 1});
  int64_t M = wt->shape[0], C = wt->shape[1], KH = wt->shape[2], KW = wt->shape[3];
  bool padded = begin[0] || begin[1] || end[0] || end[1];
  if (KH == 1 && KW == 1 && strides == ops::Shape{1, 1} && !padded) return {};
  auto yShape = cast<RankedTensorType>(conv.getResult().getType()).getShape();  // NCHW
  int64_t patchBytes = yShape[0] * yShape[2] * yShape[3] * KH * KW * C * int64_t(xType.getElementTypeBitWidth() / 8);
  if (algo == "auto" &&
      !(isHalf(xType) ? patchBytes <= kIm2colMaxBytes : isF32(xType) && patchBytes <= kIm2colMaxBytesF32))
    return {};
  Location loc = conv.getLoc();
  std::string err;
  Operation *cols =
      createInferred<Im2ColOp>(b, loc, {xt},
                               {b.getNamedAttr("kernel_shape", b.getDenseI64ArrayAttr({KH, KW})),
                                b.getNamedAttr("strides", b.getDenseI64ArrayAttr(strides)),
                                b.getNamedAttr("dilations", b.getDenseI64ArrayAttr(dilations)),
                                b.getNamedAttr("pads", b.getDenseI64ArrayAttr({begin[0], begin[1], end[0], end[1]}))},
                               &err);
  if (!cols) return {};
  ops::Tensor wm(wt->dtype, {KH * KW * C, M});  // [M, C, KH, KW] → [(kh, kw, c), m]
  for (int64_t m = 0; m < M; ++m)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t kh = 0; kh < KH; ++kh)
        for (int64_t kw = 0; kw < KW; ++kw)
          wm.f[((kh * KW + kw) * C + c) * M + m] = wt->f[((m * C + c) * KH + kh) * KW + kw];
  Operation *mm = createInferred<MatMulOp>(b, loc, {cols->getResult(0), createConstant(b, loc, wm)}, {}, &err);
  if (!mm) return {};
  if (isa<NoneType>(conv.getB().getType())) return mm->getResult(0);
  Operation *add = createInferred<AddOp>(b, loc, {mm->getResult(0), conv.getB()}, {}, &err);
  return add ? add->getResult(0) : Value();
}

// Wraps a 2-D or 1-D Conv: Transpose → ConvNhwc (or its im2col product, `algo`; 2-D) → Transpose.
bool wrapConv(ConvOp conv, const std::string &algo, OpBuilder &b) {
  int64_t r = rankOf(conv.getX());
  if (r != 4 && r != 3) return false;
  b.setInsertionPoint(conv);
  Value xt = createTranspose(b, conv.getLoc(), conv.getX(), toNhwc(r));
  Value w = conv.getW();
  int64_t C = cast<RankedTensorType>(conv.getX().getType()).getDimSize(1);
  if (isHalf(conv.getX().getType()) && C % 8 != 0 && attrsFromOp(conv).getInt("group", 1) == 1)
    padChannels(xt, w, b, conv.getLoc());
  // (Ops left behind when a form is not taken are dead and erased later.)
  Value nhwc = convAsGemm(conv, xt, w, algo, b);
  if (!nhwc) {
    std::string err;
    Operation *n = createInferred<ConvNhwcOp>(b, conv.getLoc(), {xt, w, conv.getB()}, conv->getAttrs(), &err);
    if (!n) return false;
    nhwc = n->getResult(0);
  }
  Value y = createTranspose(b, conv.getLoc(), nhwc, toNchw(r));
  conv.getResult().replaceAllUsesWith(y);
  conv->erase();
  return true;
}

// Wraps an int8 convolution: Transpose → QuantizedConvNhwc → Transpose (int8 convolutions run
// NHWC only, whatever layout.conv says).
bool wrapQuantizedConv(QuantizedConvOp conv, OpBuilder &b) {
  if (cast<RankedTensorType>(conv.getX().getType()).getRank() != 4) return false;
  b.setInsertionPoint(conv);
  Value xt = createTranspose(b, conv.getLoc(), conv.getX(), toNhwc(4));
  std::string err;
  Operation *n = createInferred<QuantizedConvNhwcOp>(b, conv.getLoc(), {xt, conv.getW(), conv.getScale(), conv.getB()},
                                                     conv->getAttrs(), &err);
  if (!n) return false;
  Value y = createTranspose(b, conv.getLoc(), n->getResult(0), toNchw(4));
  conv.getResult().replaceAllUsesWith(y);
  conv->erase();
  return true;
}

// Ops computed per element whatever the layout: those with an elementwise kernel ((de)quantization
// only per tensor: a per-axis scale follows its `axis`).
bool isLayoutAgnostic(Operation *op) {
  static const std::vector<std::string> names = target::elementwiseOpTypes();
  std::string t = onnxTypeOf(op);
  if ((t == "QuantizeLinear" || t == "DequantizeLinear") &&
      cast<RankedTensorType>(op->getOperand(1).getType()).getNumElements() != 1)
    return false;
  return !t.empty() && t != "PRelu" && std::find(names.begin(), names.end(), t) != names.end() &&
         op->getNumResults() == 1;
}

// E(…, T(x), …) → T(E(…, x, …)) when every operand is such a transpose, a constant (its
// NHWC copy is computed here) or a scalar.
bool sinkThroughElementwise(Operation *op, OpBuilder &b, bool ncl) {
  if (!isLayoutAgnostic(op)) return false;
  const int64_t r = rankOf(op->getResult(0));
  if (r != 4 && r != 3) return false;
  bool any = false;
  SmallVector<Value> operands;
  b.setInsertionPoint(op);
  for (Value v : op->getOperands()) {
    if (Value x = nhwcSource(v, ncl)) {
      operands.push_back(x);
      any = true;
      continue;
    }
    auto t = dyn_cast<RankedTensorType>(v.getType());
    if (!t) return false;  // none
    if (t.getNumElements() == 1 || t.getRank() == 0) {
      operands.push_back(v);
      continue;
    }
    auto c = constantValue(v, int64_t(1) << 24);
    if (!c || c->rank() > r) return false;
    // Broadcast to rank r (leading 1s), then channels last.
    ops::Shape sr(size_t(r - c->rank()), 1);
    sr.insert(sr.end(), c->shape.begin(), c->shape.end());
    ops::Tensor tr = *c;
    tr.shape = sr;
    ops::Attrs perm;
    Perm toLast = toNhwc(r);
    perm.set("perm", std::vector<int64_t>(toLast.begin(), toLast.end()));
    ops::EvalContext ectx{{&tr}, perm, 1};
    std::vector<ops::Tensor> moved = ops::findOp("Transpose")->eval(ectx);
    operands.push_back(createConstant(b, v.getLoc(), moved.at(0)));
  }
  if (!any) return false;
  std::string err;
  Operation *e = createInferred(b, op->getLoc(), op->getName().getStringRef(), operands, op->getAttrs(), &err);
  if (!e) return false;
  Value y = createTranspose(b, op->getLoc(), e->getResult(0), toNchw(r));
  if (!y || y.getType() != op->getResult(0).getType()) {
    if (y) y.getDefiningOp()->erase();
    e->erase();
    return false;
  }
  op->getResult(0).replaceAllUsesWith(y);
  op->erase();
  return true;
}

// MaxPool/AveragePool of an NHWC tensor → the NHWC pool; GlobalAverage/MaxPool → ReduceMean/Max
// over H and W.
bool sinkThroughPool(Operation *op, OpBuilder &b, bool ncl) {
  std::string t = onnxTypeOf(op);
  if (op->getNumOperands() < 1) return false;
  Value x = nhwcSource(op->getOperand(0), ncl);
  if (!x) return false;
  const int64_t r = rankOf(x);
  b.setInsertionPoint(op);
  std::string err;
  Operation *n = nullptr;
  std::vector<int64_t> spatial;  // (the channels-last tensor's spatial axes)
  for (int64_t k = 1; k + 1 < r; ++k) spatial.push_back(k);
  if ((t == "MaxPool" && op->getNumResults() == 1) || t == "AveragePool") {
    n = createInferred(b, op->getLoc(),
                       isa<MaxPoolOp>(op) ? MaxPoolNhwcOp::getOperationName() : AveragePoolNhwcOp::getOperationName(),
                       {x}, op->getAttrs(), &err);
  } else if (t == "GlobalAveragePool" || t == "GlobalMaxPool") {
    n = createInferred(
        b, op->getLoc(),
        isa<GlobalAveragePoolOp>(op) ? ReduceMeanOp::getOperationName() : ReduceMaxOp::getOperationName(), {x},
        {b.getNamedAttr("axes", b.getDenseI64ArrayAttr(spatial)), b.getNamedAttr("keepdims", b.getI64IntegerAttr(1))},
        &err);
  }
  if (!n) return false;
  Value y = createTranspose(b, op->getLoc(), n->getResult(0), toNchw(r));
  if (!y || y.getType() != op->getResult(0).getType()) {
    if (y) y.getDefiningOp()->erase();
    n->erase();
    return false;
  }
  op->getResult(0).replaceAllUsesWith(y);
  op->erase();
  return true;
}

struct LayoutPass : impl::LayoutBase<LayoutPass> {
  using LayoutBase::LayoutBase;

  void runOnOperation() override {
    knobs::Route r;
    if (!readRoute(route, getOperation(), r)) return signalPassFailure();
    OpBuilder b(&getContext());
    SmallVector<ConvOp> convs;
    getOperation().walk([&](ConvOp c) { convs.push_back(c); });
    bool wrapped = false, ncl = false;  // (ncl: a 1-D convolution was wrapped)
    for (ConvOp c : convs) {
      std::string v = r.get(kLayout, nodeName(c));
      if (v == "nchw" || (v == "auto" && !isHalf(c.getX().getType()) && !isF32(c.getX().getType()))) continue;
      bool oneD = cast<RankedTensorType>(c.getX().getType()).getRank() == 3;
      bool w = wrapConv(c, r.get(kConvAlgo, nodeName(c)), b);
      wrapped |= w;
      ncl |= w && oneD;
    }
    SmallVector<QuantizedConvOp> quantized;
    getOperation().walk([&](QuantizedConvOp c) { quantized.push_back(c); });
    for (QuantizedConvOp c : quantized) wrapped |= wrapQuantizedConv(c, b);
    if (!wrapped) return;
    // Push transposes down and cancel them, to a fixed point.
    for (bool changed = true; changed;) {
      changed = false;
      SmallVector<Operation *> order;
      getOperation().getBody().front().walk([&](Operation *op) { order.push_back(op); });
      llvm::DenseSet<Operation *> erased;
      for (Operation *op : order) {
        if (erased.count(op)) continue;
        if (auto t = dyn_cast<TransposeOp>(op)) {
          if (t->use_empty()) {
            t->erase();
            changed = true;
            continue;
          }
          // simplifyTranspose may erase the transpose feeding t, which is earlier in `order`.
          Operation *inner = t.getX().getDefiningOp();
          bool innerDies = inner && isa<TransposeOp>(inner) && inner->hasOneUse();
          if (simplifyTranspose(t, b)) {
            changed = true;
            if (innerDies) erased.insert(inner);
          }
          continue;
        }
        if (sinkThroughElementwise(op, b, ncl) || sinkThroughPool(op, b, ncl)) changed = true;
      }
    }
  }
};

}  // namespace
}  // namespace kiln

// onnxruntime's quantized ops → Q/DQ around float ops and float products of integer-valued
// operands (see Passes.td, kiln-lower-quantized-ops).
#include "compiler/ir/Builders.h"
#include "compiler/ir/TensorConversion.h"
#include "passes/PassUtil.h"
#include "passes/Passes.h"

namespace kiln {
#define GEN_PASS_DEF_LOWERQUANTIZEDOPS
#include "passes/Passes.h.inc"

namespace {

using namespace mlir;

ops::DType dtypeOfValue(Value v) { return tensorTypeOf(v.getType()).dtype; }
bool isNone(Value v) { return !v || isa<NoneType>(v.getType()); }
int64_t numElementsOf(Value v) { return ops::numElements(shapeOf(v)); }

// Builds the replacement ops of one node at its location. Every op's result types are inferred
// (compiler/ir/Builders.h); the first failure is kept in `error` and later calls return null
// values. Ops made while `fp32` is set carry `kiln.keep_fp32`: the quantization parameters and
// the rounding to 8 bits stay float32 on half-precision routes (kiln-precision).
struct Rewriter {
  OpBuilder b;
  Location loc;
  std::string error;
  bool fp32 = false;

  Rewriter(Operation *at) : b(at), loc(at->getLoc()) {}

  Value make(StringRef name, ValueRange operands, ArrayRef<NamedAttribute> attrs = {}, unsigned results = 1,
             unsigned which = 0) {
    if (!error.empty()) return {};
    for (Value v : operands)
      if (!v) return {};
    std::string err;
    Operation *op = createInferred(b, loc, name, operands, attrs, &err, results);
    if (!op) {
      error = err;
      return {};
    }
    if (fp32) op->setAttr(kKeepFp32Attr, b.getUnitAttr());
    return op->getResult(which);
  }
  template <class OpT> Value make(ValueRange operands, ArrayRef<NamedAttribute> attrs = {}) {
    return make(OpT::getOperationName(), operands, attrs);
  }
  NamedAttribute attr(StringRef name, Attribute a) { return b.getNamedAttr(name, a); }
  NamedAttribute intAttr(StringRef name, int64_t v) { return attr(name, b.getI64IntegerAttr(v)); }
  NamedAttribute intsAttr(StringRef name, ArrayRef<int64_t> v) { return attr(name, b.getDenseI64ArrayAttr(v)); }

  Value none() { return b.create<NoneOp>(loc); }
  Value constant(const ops::Tensor &t) { return createConstant(b, loc, t); }
  Value scalar(ops::DType t, double v) { return constant(ops::Tensor::scalar(t, v)); }
  Value cast(Value v, ops::DType to) { return v ? make<CastOp>({v}, {intAttr("to", int64_t(to))}) : Value(); }
  Value reshape(Value v, const ops::Shape &shape) {
    if (!v) return {};
    if (shapeOf(v) == shape) return v;
    return make<ReshapeOp>({v, constant(ops::Tensor::fromInts(ops::DType::I64, {int64_t(shape.size())}, shape))});
  }

  // f32(scale · (x - zp)) for integer x; `scale` null: 1 (x - zp exactly). Per-tensor parameters,
  // or per-axis ones (1-D, `axis`), constant: one DequantizeLinear; otherwise arithmetic on
  // parameters that broadcast against x as they are (`paramShape`: the shape to give them first).
  Value dequantize(Value x, Value scale, Value zp, std::optional<int64_t> axis = std::nullopt,
                   std::optional<ops::Shape> paramShape = std::nullopt) {
    if (!x) return {};
    bool zpConst = isNone(zp) || constantValue(zp);
    bool scaleConst = !scale || constantValue(scale);
    bool perTensor = (!scale || numElementsOf(scale) == 1) && (isNone(zp) || numElementsOf(zp) == 1);
    if (zpConst && scaleConst && (perTensor || axis)) {
      Value s = scale ? scale : this->scalar(ops::DType::F32, 1.0);
      SmallVector<NamedAttribute> attrs;
      Value z = isNone(zp) ? none() : zp;
      if (perTensor) {
        if (scale && numElementsOf(s) == 1) s = reshape(s, {});
        if (!isNone(z)) z = reshape(z, {});
      } else {
        attrs.push_back(intAttr("axis", *axis));
        // DequantizeLinear wants scale and zero point of one shape: a per-tensor side is spread.
        int64_t n = shapeOf(x)[size_t(*axis)];
        if (numElementsOf(s) == 1)
          s = make<ExpandOp>({reshape(s, {1}), constant(ops::Tensor::fromInts(ops::DType::I64, {1}, {n}))});
        if (!isNone(z) && numElementsOf(z) == 1)
          z = make<ExpandOp>({reshape(z, {1}), constant(ops::Tensor::fromInts(ops::DType::I64, {1}, {n}))});
        s = reshape(s, {n});
        if (!isNone(z)) z = reshape(z, {n});
      }
      return make<DequantizeLinearOp>({x, s, z}, attrs);
    }
    auto param = [&](Value p) {
      return numElementsOf(p) == 1 ? reshape(p, {}) : paramShape ? reshape(p, *paramShape) : p;
    };
    Value v = cast(x, ops::DType::F32);
    if (!isNone(zp)) v = make<SubOp>({v, cast(param(zp), ops::DType::F32)});
    if (scale) v = make<MulOp>({v, param(scale)});
    return v;
  }

  // saturate(round_half_even(v / scale) + zp) to `to` (i8 or u8), per-tensor parameters.
  Value quantize(Value v, Value scale, Value zp, ops::DType to) {
    if (!v) return {};
    if (isNone(zp)) zp = scalar(to, 0);
    if (constantValue(scale) && constantValue(zp))
      return make<QuantizeLinearOp>({v, reshape(scale, {}), reshape(zp, {})});
    bool was = fp32;
    fp32 = true;
    Value q = make<RoundOp>({make<DivOp>({v, reshape(scale, {})})});
    q = make<AddOp>({q, cast(reshape(zp, {}), ops::DType::F32)});
    q = clip(q, to);
    Value r = cast(q, to);
    fp32 = was;
    return r;
  }
  Value clip(Value v, ops::DType to) {
    double lo = to == ops::DType::U8 ? 0 : -128, hi = to == ops::DType::U8 ? 255 : 127;
    return make<ClipOp>({v, scalar(ops::DType::F32, lo), scalar(ops::DType::F32, hi)});
  }

  // DynamicQuantizeLinear(x) as kiln ops: the range of x widened to 0, scale (hi - lo) / 255 (1
  // for an all-zero x), zero point round(clamp(-lo / scale, 0, 255)), y = q(x). {y, scale, zp}.
  std::array<Value, 3> dynamicQuantize(Value x) {
    bool was = fp32;
    fp32 = true;
    Value zero = scalar(ops::DType::F32, 0.0);
    Value lo = make<MinOp>({make<ReduceMinOp>({x}, {intAttr("keepdims", 0)}), zero});
    Value hi = make<MaxOp>({make<ReduceMaxOp>({x}, {intAttr("keepdims", 0)}), zero});
    Value scale = make<WhereOp>({make<EqualOp>({hi, lo}), scalar(ops::DType::F32, 1.0),
                                 make<DivOp>({make<SubOp>({hi, lo}), scalar(ops::DType::F32, 255.0)})});
    Value zpf = make<RoundOp>({clip(make<SubOp>({zero, make<DivOp>({lo, scale})}), ops::DType::U8)});
    Value zp = cast(zpf, ops::DType::U8);
    Value q = make<AddOp>({make<RoundOp>({make<DivOp>({x, scale})}), zpf});
    Value y = cast(clip(q, ops::DType::U8), ops::DType::U8);
    fp32 = was;
    return {y, scale, zp};
  }
};

// Replaces op's results by `values` (all present) and erases it; false (op kept) otherwise.
bool replace(Operation *op, ArrayRef<Value> values, Rewriter &r) {
  if (!r.error.empty()) {
    op->emitError("kiln-lower-quantized-ops: " + r.error);
    return false;
  }
  for (unsigned k = 0; k < op->getNumResults(); ++k) {
    if (!values[k] || values[k].getType() != op->getResult(k).getType()) {
      op->emitError("kiln-lower-quantized-ops: internal: the rewrite of " + describeOp(op) + " changed result " +
                    std::to_string(k) + "'s type");
      return false;
    }
  }
  for (unsigned k = 0; k < op->getNumResults(); ++k) op->getResult(k).replaceAllUsesWith(values[k]);
  op->erase();
  return true;
}

SmallVector<NamedAttribute> attrsExcept(Operation *op, ArrayRef<StringRef> drop) {
  SmallVector<NamedAttribute> attrs;
  for (NamedAttribute a : op->getAttrs())
    if (!llvm::is_contained(drop, a.getName().strref())) attrs.push_back(a);
  return attrs;
}

// The parameter of an integer product operand (per tensor, A per row, B per column) as
// dequantize() takes it: {axis for DequantizeLinear, shape to broadcast with}.
std::pair<std::optional<int64_t>, std::optional<ops::Shape>> productParam(Value x, Value param, bool aSide) {
  if (isNone(param) || numElementsOf(param) == 1) return {std::nullopt, std::nullopt};
  ops::Shape xs = shapeOf(x), ps = shapeOf(param);
  int64_t rank = int64_t(xs.size());
  if (ps.size() == 1) {
    if (aSide) return {rank - 2, ops::Shape{ps[0], 1}};
    return {rank - 1, ps};
  }
  return {std::nullopt, ps};
}

bool sameValueOrConstant(Value a, Value b) {
  if (a == b) return true;
  auto ta = constantValue(a), tb = constantValue(b);
  if (!ta || !tb || ta->size() != 1 || tb->size() != 1 || ta->dtype != tb->dtype) return false;
  return ta->get(0) == tb->get(0);
}

// ---------------------------------------------------------------------------------------------
// QLinear ops and contrib ops → Q/DQ around float ops.

bool expand(Operation *op) {
  Rewriter r(op);
  auto in = [&](unsigned k) { return k < op->getNumOperands() ? op->getOperand(k) : Value(); };
  auto out = [&](unsigned k) { return dtypeOfValue(op->getResult(k)); };
  if (isa<QLinearMatMulOp>(op)) {
    auto [aAxis, aShape] = productParam(in(0), in(1), true);
    auto [bAxis, bShape] = productParam(in(3), in(4), false);
    Value a = r.dequantize(in(0), in(1), in(2), aAxis, aShape), b = r.dequantize(in(3), in(4), in(5), bAxis, bShape);
    return replace(op, {r.quantize(r.make<MatMulOp>({a, b}), in(6), in(7), out(0))}, r);
  }
  if (isa<QLinearConvOp>(op)) {
    bool perChannel = numElementsOf(in(4)) != 1 || numElementsOf(in(5)) != 1;
    ops::Shape wShape = shapeOf(in(3)), perChannelShape(wShape.size(), 1);
    perChannelShape[0] = wShape[0];
    Value x = r.dequantize(in(0), in(1), in(2));
    Value w = r.dequantize(in(3), in(4), in(5), perChannel ? std::optional<int64_t>(0) : std::nullopt, perChannelShape);
    Value bias = r.none();
    if (!isNone(in(8))) {
      // The int32 bias, quantized with scale f32(x_scale · w_scale) and zero point 0.
      auto sx = constantValue(in(1)), sw = constantValue(in(4));
      Value s;
      if (sx && sw) {
        ops::Tensor t(ops::DType::F32, {sw->size() == 1 ? 1 : wShape[0]});
        for (int64_t m = 0; m < t.size(); ++m) t.set(m, sx->get(0) * sw->get(sw->size() == 1 ? 0 : m));
        s = r.constant(t);
      } else {
        s = r.make<MulOp>({r.reshape(in(1), {}), in(4)});
      }
      bias = r.dequantize(in(8), s, Value(), numElementsOf(s) == 1 ? std::nullopt : std::optional<int64_t>(0));
    }
    Value y = r.make<ConvOp>({x, w, bias}, attrsExcept(op, {}));
    return replace(op, {r.quantize(y, in(6), in(7), out(0))}, r);
  }
  if (isa<QGemmOp>(op)) {
    // Gemm(DQ(A), DQ(B), DQ(C, alpha·sa·sb)) [then Q, or / y_scale]: alpha scales A·B only.
    bool transB = false;
    if (auto t = op->getAttrOfType<IntegerAttr>("transB")) transB = t.getInt() != 0;
    int64_t n = shapeOf(op->getResult(0))[1];
    bool perColumn = numElementsOf(in(4)) != 1 || numElementsOf(in(5)) != 1;
    Value zb = numElementsOf(in(5)) != 1 ? r.reshape(in(5), {n}) : in(5);
    ops::Shape bParam = transB ? ops::Shape{n, 1} : ops::Shape{n};
    Value a = r.dequantize(in(0), in(1), in(2));
    Value b = r.dequantize(in(3), numElementsOf(in(4)) != 1 ? r.reshape(in(4), {n}) : in(4), zb,
                           perColumn ? std::optional<int64_t>(transB ? 0 : 1) : std::nullopt, bParam);
    Value c = r.none();
    if (!isNone(in(6))) {
      double alpha = 1.0;
      if (auto al = op->getAttrOfType<FloatAttr>("alpha")) alpha = al.getValueAsDouble();
      auto sa = constantValue(in(1)), sb = constantValue(in(4));
      Value s;
      if (sa && sb) {
        ops::Tensor t(ops::DType::F32, {sb->size() == 1 ? 1 : n});
        for (int64_t k = 0; k < t.size(); ++k)
          t.set(k, double(float(float(alpha) * float(sa->get(0)))) * sb->get(sb->size() == 1 ? 0 : k));
        s = r.constant(t);
      } else {
        s = r.make<MulOp>({r.make<MulOp>({r.scalar(ops::DType::F32, alpha), r.reshape(in(1), {})}), in(4)});
      }
      c = r.dequantize(in(6), s, Value(), std::nullopt,
                       numElementsOf(s) == 1 ? std::nullopt : std::optional<ops::Shape>(ops::Shape{n}));
    }
    Value y = r.make<GemmOp>({a, b, c}, attrsExcept(op, {}));
    if (!isNone(in(8)))
      y = r.quantize(y, in(7), in(8), out(0));
    else if (!isNone(in(7)))
      y = r.make<DivOp>({y, r.reshape(in(7), {})});
    return replace(op, {y}, r);
  }
  if (isa<QLinearAddOp, QLinearMulOp>(op)) {
    Value a = r.dequantize(in(0), in(1), in(2)), b = r.dequantize(in(3), in(4), in(5));
    Value y = isa<QLinearAddOp>(op) ? r.make<AddOp>({a, b}) : r.make<MulOp>({a, b});
    return replace(op, {r.quantize(y, in(6), in(7), out(0))}, r);
  }
  if (isa<QLinearSigmoidOp, QLinearLeakyReluOp, QLinearGlobalAveragePoolOp, QLinearAveragePoolOp>(op)) {
    Value x = r.dequantize(in(0), in(1), in(2)), y;
    bool nhwc = false;
    if (auto a = op->getAttrOfType<IntegerAttr>("channels_last")) nhwc = a.getInt() != 0;
    int64_t rank = int64_t(shapeOf(in(0)).size());
    if (isa<QLinearSigmoidOp>(op)) {
      y = r.make<SigmoidOp>({x});
    } else if (isa<QLinearLeakyReluOp>(op)) {
      y = r.make<LeakyReluOp>({x}, attrsExcept(op, {}));
    } else if (isa<QLinearGlobalAveragePoolOp>(op)) {
      std::vector<int64_t> axes;
      for (int64_t d = nhwc ? 1 : 2; d < (nhwc ? rank - 1 : rank); ++d) axes.push_back(d);
      y = nhwc ? r.make<ReduceMeanOp>({x}, {r.intsAttr("axes", axes), r.intAttr("keepdims", 1)})
               : r.make<GlobalAveragePoolOp>({x});
    } else {
      std::vector<int64_t> toNchw = {0, rank - 1}, toNhwc = {0};
      for (int64_t d = 1; d + 1 < rank; ++d) toNchw.push_back(d), toNhwc.push_back(d + 1);
      toNhwc.push_back(1);
      if (nhwc) x = r.make<TransposeOp>({x}, {r.intsAttr("perm", toNchw)});
      y = r.make<AveragePoolOp>({x}, attrsExcept(op, {"channels_last"}));
      if (nhwc) y = r.make<TransposeOp>({y}, {r.intsAttr("perm", toNhwc)});
    }
    return replace(op, {r.quantize(y, in(3), in(4), out(0))}, r);
  }
  if (isa<QLinearConcatOp>(op)) {
    SmallVector<Value> parts;
    for (unsigned k = 2; k + 2 < op->getNumOperands(); k += 3) {
      if (sameValueOrConstant(in(k + 1), in(0)) && sameValueOrConstant(in(k + 2), in(1)))
        parts.push_back(in(k));
      else
        parts.push_back(r.quantize(r.dequantize(in(k), in(k + 1), in(k + 2)), in(0), in(1), out(0)));
    }
    return replace(op, {r.make<ConcatOp>(parts, attrsExcept(op, {}))}, r);
  }
  if (isa<MatMulIntegerToFloatOp, DynamicQuantizeMatMulOp>(op)) {
    // Y = Cast(MatMulInteger(A, B, za, zb)) · (sa · sb) + bias: the integer product is then
    // lowered like onnxruntime's dynamic QOperator form.
    Value a, sa, za, b = in(1), sb, zb, bias;
    if (isa<DynamicQuantizeMatMulOp>(op)) {
      auto [q, s, z] = r.dynamicQuantize(in(0));
      a = q, sa = s, za = z, sb = in(2), zb = in(3), bias = in(4);
    } else {
      a = in(0), sa = in(2), sb = in(3), za = in(4), zb = in(5), bias = in(6);
    }
    Value p = r.make<MatMulIntegerOp>({a, b, isNone(za) ? r.none() : r.reshape(za, {}), isNone(zb) ? r.none() : zb});
    Value y = r.make<MulOp>({r.cast(p, ops::DType::F32), r.make<MulOp>({r.reshape(sa, {}), sb})});
    if (!isNone(bias)) y = r.make<AddOp>({y, bias});
    return replace(op, {y}, r);
  }
  if (isa<DynamicQuantizeLinearOp>(op)) {
    auto [y, s, z] = r.dynamicQuantize(in(0));
    return replace(op, {y, s, z}, r);
  }
  return false;
}

// ---------------------------------------------------------------------------------------------
// Integer products → float products of integer-valued operands (exact while partial sums stay
// below 2^24), with the scale that multiplies their float result moved onto the operands.

struct FloatUse {
  Operation *cast;  // Cast<f32> of the sums (or of sums + bias)
  Value bias;       // int32 added to the sums before the Cast, or null
};

// Cast<f32>(P) and Cast<f32>(Add(P, bias)) uses of the integer product P; nullopt if P has another
// kind of use.
std::optional<std::vector<FloatUse>> floatUses(Operation *p) {
  std::vector<FloatUse> uses;
  auto isF32Cast = [](Operation *u) {
    auto c = dyn_cast<CastOp>(u);
    return c && c.getTo() == int64_t(ops::DType::F32);
  };
  for (Operation *u : p->getResult(0).getUsers()) {
    if (isF32Cast(u)) {
      uses.push_back({u, Value()});
      continue;
    }
    if (!isa<AddOp>(u) || u->getOperand(0) == u->getOperand(1)) return std::nullopt;
    Value other = u->getOperand(0) == p->getResult(0) ? u->getOperand(1) : u->getOperand(0);
    if (dtypeOfValue(other) != ops::DType::I32 || shapeOf(u->getResult(0)) != shapeOf(p->getResult(0)))
      return std::nullopt;
    for (Operation *c : u->getResult(0).getUsers()) {
      if (!isF32Cast(c)) return std::nullopt;
      uses.push_back({c, other});
    }
  }
  return uses;
}

// S = p · q with p one element (an activation scale, maybe computed at run time) and q a
// constant per tensor or per output channel (`channelAxis` of the product's result, `channels`
// of them): {p or null, q or null}.
std::optional<std::pair<Value, Value>> splitScale(Value s, int64_t channelAxis, int64_t channels, int64_t resultRank) {
  auto perChannel = [&](Value q) {
    if (!constantValue(q)) return false;
    ops::Shape qs = shapeOf(q);
    if (ops::numElements(qs) == 1) return true;
    if (int64_t(qs.size()) > resultRank) return false;
    for (size_t k = 0; k < qs.size(); ++k) {
      int64_t axis = resultRank - int64_t(qs.size()) + int64_t(k);
      if (qs[k] != (axis == channelAxis ? channels : 1)) return false;
    }
    return true;
  };
  auto scalarLike = [&](Value p) { return numElementsOf(p) == 1 && int64_t(shapeOf(p).size()) <= resultRank; };
  if (auto m = s.getDefiningOp<MulOp>()) {
    Value x = m->getOperand(0), y = m->getOperand(1);
    if (scalarLike(x) && perChannel(y)) return std::make_pair(x, y);
    if (scalarLike(y) && perChannel(x)) return std::make_pair(y, x);
  }
  if (perChannel(s)) return std::make_pair(Value(), s);
  if (scalarLike(s)) return std::make_pair(s, Value());
  return std::nullopt;
}

// The largest |x - zp| over x's elements: exact when both are constant and zp is one element,
// else from x's 8-bit type (and zp's value, if one constant element).
int64_t maxOffset(Value x, Value zp) {
  bool zKnown = isNone(zp);  // (no zero point: 0)
  int64_t zv = 0;
  if (auto z = isNone(zp) ? std::nullopt : constantValue(zp); z && z->size() == 1) zKnown = true, zv = z->getInt(0);
  if (auto xv = zKnown ? constantValue(x, int64_t(1) << 26) : std::nullopt) {
    int64_t m = 0;
    for (int64_t k = 0; k < xv->size(); ++k) m = std::max(m, std::abs(xv->getInt(k) - zv));
    return m;
  }
  bool u8 = dtypeOfValue(x) == ops::DType::U8;
  int64_t lo = u8 ? 0 : -128, hi = u8 ? 255 : 127;
  return zKnown ? std::max(zv - lo, hi - zv) : hi - lo;
}

// Integer sums used as integers (a graph output, or an integer op's operand): Cast<i32> of the
// float product of (A - za) and (B - zb), kept in fp32 on half-precision routes. Float sums of
// integers are exact while every partial sum stays below 2^24, so the reduction (MatMul: K;
// Conv: the input channels, each worth KH·KW terms) is cut into chunks that keep it so, from the
// operands' ranges (maxOffset), and the chunks' products are added in int32.
bool lowerExactIntegerProduct(Operation *p) {
  bool conv = isa<ConvIntegerOp>(p);
  Value a = p->getOperand(0), b = p->getOperand(1), za = p->getOperand(2), zb = p->getOperand(3);
  ops::Shape as = shapeOf(a), bs = shapeOf(b);
  int64_t perTerm = maxOffset(a, za) * maxOffset(b, zb);
  int64_t termsPerChunk = perTerm == 0 ? INT64_MAX : (int64_t(1) << 24) / perTerm;
  // The reduced axis of A and of B, its length, and the terms each index along it adds.
  int64_t aAxis = conv ? 1 : int64_t(as.size()) - 1, bAxis = conv ? 1 : bs.size() >= 2 ? int64_t(bs.size()) - 2 : 0;
  int64_t length = bs[size_t(bAxis)], termsPerIndex = 1;
  for (size_t k = 2; conv && k < bs.size(); ++k) termsPerIndex *= bs[k];
  int64_t perChunk = termsPerChunk / termsPerIndex;
  int64_t chunks = perChunk == 0 ? 0 : (length + perChunk - 1) / perChunk;
  int64_t group = 1;
  if (auto g = p->getAttrOfType<IntegerAttr>("group")) group = g.getInt();
  if (chunks == 0 || (chunks > 1 && group != 1)) {
    p->emitError("kiln-lower-quantized-ops: " + describeOp(p) + ": its int32 sums are used as integers and " +
                 (chunks == 0 ? "one input channel's " + std::to_string(termsPerIndex) + " terms"
                              : std::string("a grouped convolution's sums")) +
                 " cannot be kept below 2^24 in float32 (the GPU computes integer products in float32)");
    return false;
  }
  perChunk = std::min(perChunk, length);
  Rewriter r(p);
  r.fp32 = true;
  SmallVector<NamedAttribute> convAttrs = attrsExcept(p, {});
  auto slice = [&](Value v, int64_t axis, int64_t from, int64_t to) {
    if (from == 0 && to == shapeOf(v)[size_t(axis)]) return v;
    auto i64 = [&](int64_t x) { return r.constant(ops::Tensor::fromInts(ops::DType::I64, {1}, {x})); };
    return r.make<SliceOp>({v, i64(from), i64(to), i64(axis), r.none()});
  };
  // A convolution's w zero point: one, or one per output channel (w's axis 0), for every chunk.
  ops::Shape perChannel(bs.size(), 1);
  perChannel[0] = bs[0];
  Value sum;
  for (int64_t from = 0; from < length; from += perChunk) {
    int64_t to = std::min(length, from + perChunk);
    Value ac = slice(a, aAxis, from, to), bc = slice(b, bAxis, from, to);
    auto [aParamAxis, aParamShape] = productParam(ac, za, true);
    auto [bParamAxis, bParamShape] = conv ? std::pair(std::optional<int64_t>(0), std::optional<ops::Shape>(perChannel))
                                          : productParam(bc, zb, false);
    Value xa = r.dequantize(ac, Value(), za, aParamAxis, aParamShape);
    Value xb = r.dequantize(bc, Value(), zb, bParamAxis, bParamShape);
    Value y =
        r.cast(conv ? r.make<ConvOp>({xa, xb, r.none()}, convAttrs) : r.make<MatMulOp>({xa, xb}), ops::DType::I32);
    sum = sum ? r.make<AddOp>({sum, y}) : y;
  }
  return replace(p, {sum}, r);
}

// false: an error was emitted.
bool lowerIntegerProduct(Operation *p) {
  auto uses = floatUses(p);
  if (!uses) return lowerExactIntegerProduct(p);
  bool conv = isa<ConvIntegerOp>(p);
  Value a = p->getOperand(0), b = p->getOperand(1), za = p->getOperand(2), zb = p->getOperand(3);
  ops::Shape bs = shapeOf(b), ys = shapeOf(p->getResult(0));
  int64_t rank = int64_t(ys.size());
  int64_t channelAxis = conv ? 1 : rank - 1, channels = conv ? bs[0] : bs.back();
  SmallVector<NamedAttribute> convAttrs = attrsExcept(p, {});
  // B's axis indexing the output channels, and a per-channel parameter's shape against B.
  int64_t bAxis = conv ? 0 : int64_t(bs.size()) - 1;
  ops::Shape perChannelShape(bs.size(), 1);
  perChannelShape[size_t(bAxis)] = channels;
  // The product of dequantize(A, sa, za) and dequantize(B, q, zb): sa one element or null (1), q
  // per tensor or per output channel, or null (1). Constant parameters give DequantizeLinear
  // pairs, which kiln-lower-qdq turns into 8-bit products where the kernel takes them.
  auto product = [&](Rewriter &r, Value sa, Value q) -> Value {
    auto [aAxis, aShape] = productParam(a, za, true);
    Value xa = r.dequantize(a, sa ? r.reshape(sa, {}) : Value(), za, aAxis, aShape);
    Value qv = q ? (numElementsOf(q) == 1 ? r.reshape(q, {}) : r.reshape(q, {channels})) : Value();
    bool perChannel = (q && numElementsOf(q) != 1) || (!isNone(zb) && numElementsOf(zb) != 1);
    Value zbv = !isNone(zb) && numElementsOf(zb) != 1 ? r.reshape(zb, {channels}) : zb;
    Value xb = r.dequantize(b, qv, zbv, perChannel ? std::optional<int64_t>(bAxis) : std::nullopt, perChannelShape);
    return conv ? r.make<ConvOp>({xa, xb, r.none()}, convAttrs) : r.make<MatMulOp>({xa, xb});
  };
  Value plain;  // the unscaled float product, made once if a use needs it
  for (const FloatUse &u : *uses) {
    // Cast(P [+ bias]) · S with S = p · q: the product of p·(A - za) and q·(B - zb), + bias · S.
    Operation *mul = nullptr;
    if (u.cast->getResult(0).hasOneUse() && isa<MulOp>(*u.cast->getResult(0).getUsers().begin()))
      mul = *u.cast->getResult(0).getUsers().begin();
    std::optional<std::pair<Value, Value>> split;
    Value s;
    if (mul) {
      s = mul->getOperand(0) == u.cast->getResult(0) ? mul->getOperand(1) : mul->getOperand(0);
      if (s != u.cast->getResult(0) && shapeOf(mul->getResult(0)) == ys)
        split = splitScale(s, channelAxis, channels, rank);
    }
    if (split) {
      Rewriter m(mul);
      Value y = product(m, split->first, split->second);
      if (u.bias) y = m.make<AddOp>({y, m.make<MulOp>({m.cast(u.bias, ops::DType::F32), s})});
      if (!replace(mul, {y}, m)) return false;
    } else {
      if (!plain) {
        Rewriter pr(p);
        plain = product(pr, Value(), Value());
        if (!pr.error.empty()) {
          p->emitError("kiln-lower-quantized-ops: " + pr.error);
          return false;
        }
      }
      Rewriter r(u.cast);
      Value y = u.bias ? r.make<AddOp>({plain, r.cast(u.bias, ops::DType::F32)}) : plain;
      if (!replace(u.cast, {y}, r)) return false;
    }
  }
  // The Casts and bias Adds are dead now, then P.
  for (const FloatUse &u : *uses)
    if (u.cast->use_empty()) u.cast->erase();
  for (Operation *u : llvm::make_early_inc_range(p->getResult(0).getUsers()))
    if (u->use_empty()) u->erase();
  if (p->use_empty()) p->erase();
  return true;
}

struct LowerQuantizedOpsPass : impl::LowerQuantizedOpsBase<LowerQuantizedOpsPass> {
  void runOnOperation() override {
    std::vector<Operation *> contrib, products;
    getOperation().walk([&](Operation *op) {
      if (isa<QLinearMatMulOp, QLinearConvOp, QGemmOp, QLinearAddOp, QLinearMulOp, QLinearSigmoidOp, QLinearLeakyReluOp,
              QLinearGlobalAveragePoolOp, QLinearAveragePoolOp, QLinearConcatOp, MatMulIntegerToFloatOp,
              DynamicQuantizeMatMulOp, DynamicQuantizeLinearOp>(op))
        contrib.push_back(op);
    });
    for (Operation *op : contrib)
      if (!expand(op)) return signalPassFailure();
    getOperation().walk([&](Operation *op) {
      if (isa<MatMulIntegerOp, ConvIntegerOp>(op)) products.push_back(op);
    });
    for (Operation *op : products)
      if (!lowerIntegerProduct(op)) return signalPassFailure();
  }
};

}  // namespace
}  // namespace kiln

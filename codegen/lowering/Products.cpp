// Matrix products and convolutions with their epilogues on kiln's kernels (tensor-core mma.sync
// GEMM, implicit-GEMM and direct convolutions), or cuBLASLt's where tryLibraryGemm takes them.
#include "codegen/lowering/Lowering.h"

#include "codegen/kernels/Conv.h"
#include "codegen/kernels/ConvNd.h"
#include "codegen/kernels/KernelUtil.h"

using namespace mlir;

namespace kiln::codegen {

KILN_KNOB(kGemmTile, {"gemm.tile",
                      {"auto", "256x128", "128x256", "128x128", "128x64", "64x128", "64x64", "32x32"},
                      "auto",
                      "Block tile (rows x columns of the result) of matrix products and implicit-GEMM convolutions "
                      "(auto: the largest that fills the GPU)",
                      knobs::Tier::Mixed,
                      "codegen/lowering/Products.cpp",
                      "tile",
                      {"MatMul", "Gemm", "Conv"}});
KILN_KNOB(kGemmStages, {"gemm.stages",
                        {"auto", "2", "3", "4"},
                        "auto",
                        "Depth of the cp.async pipeline of tensor-core matrix products",
                        knobs::Tier::Full,
                        "codegen/lowering/Products.cpp"});

KILN_KNOB(kGemmSplitK, {"gemm.splitk",
                        {"auto", "1", "2", "4", "8"},
                        "auto",
                        "Tensor-core products (one batch) split K over a thread-block cluster of this many blocks, "
                        "their sums added through distributed shared memory before the epilogue (sm_90); auto: as many "
                        "as keep the blocks within one wave, each with 2+ k-tiles of 32; 1: off",
                        knobs::Tier::Mixed,
                        "codegen/lowering/Products.cpp",
                        "splitk",
                        {"MatMul", "Gemm", "Conv"}});

namespace {
std::string tileFor(const BuildOptions &o, Operation *op) { return o.route.get(kGemmTile, nodeName(op)); }
int splitKFor(const BuildOptions &o, Operation *op) {
  std::string v = o.route.get(kGemmSplitK, nodeName(op));
  return v == "auto" ? 0 : std::stoi(v);
}

// A 1-D convolution's attributes as a 2-D one's with a unit H axis first.
ops::Attrs convAttrs2d(const ops::Attrs &a) {
  ops::Attrs r = a;
  for (const char *name : {"strides", "dilations", "kernel_shape"})
    if (a.has(name)) r.set(name, std::vector<int64_t>{1, a.getInts(name).at(0)});
  if (a.has("pads")) {
    std::vector<int64_t> p = a.getInts("pads");
    if (p.size() != 2) throw std::invalid_argument("a 1-D convolution needs 2 pads");
    r.set("pads", std::vector<int64_t>{0, p[0], 0, p[1]});
  }
  return r;
}
}  // namespace

void Lowering::lowerConvNd(Operation *anchor, const FusedProgram &epi, const std::vector<Value> &params, Value result) {
  ops::Attrs attrs = attrsFromOp(anchor);
  Shape x = shapeOf(anchor->getOperand(0)), w = shapeOf(anchor->getOperand(1)), y = shapeOf(anchor->getResult(0));
  ConvNdSpec s;
  s.N = x[0], s.C = x[1], s.M = w[0], s.group = attrs.getInt("group", 1);
  s.in.assign(x.begin() + 2, x.end());
  s.out.assign(y.begin() + 2, y.end());
  s.kernel.assign(w.begin() + 2, w.end());
  size_t n = s.in.size();
  s.strides = intsOr(attrs, "strides", Shape(n, 1)), s.dilations = intsOr(attrs, "dilations", Shape(n, 1));
  s.padBegin = windowPads(attrs, s.in, s.out, s.kernel, s.strides, s.dilations).first;
  s.type = elemTypeOf(anchor->getOperand(0)), s.outType = elemTypeOf(result);
  if (elemTypeOf(anchor->getOperand(1)) != s.type)
    throw std::invalid_argument("convolution operands of different types");
  s.epilogue = epi;
  addLaunch(anchor, emitConvNd(s), params);
}

KernelLaunch Lowering::targetMatMul(const MatMulSpec &spec) {
  bool half = spec.type == ElemType::F16 || spec.type == ElemType::BF16;
  if (spec.int8 || half)
    if (std::string why = opts_.target.missing(spec.int8 ? target::Feature::MmaInt8 : target::Feature::MmaHalf);
        !why.empty())
      throw std::invalid_argument(why + (spec.int8 ? "" : " (build it fp32)"));
  MatMulSpec s = spec;
  s.smCount = opts_.target.smCount;
  s.clusters = opts_.target.has(target::Feature::Clusters);
  return emitMatMul(s);
}

void Lowering::lowerProduct(Operation *anchor, ArrayRef<Operation *> chain, Value result,
                            ArrayRef<Operation *> prologue) {
  ops::Attrs attrs = attrsFromOp(anchor);
  auto operands = anchor->getOperands();
  FusedProgram epi;
  ProgramBuilder pb(epi);
  llvm::DenseMap<Value, std::string> names;
  std::vector<Value> params = {outer(operands[0]), outer(operands[1])};
  FusedProgram pro;
  std::optional<ElemType> aType;  // (the prologue's input's, when it has one)
  if (!prologue.empty()) {
    // A = prologue(X): the kernel reads X, one element at a time `acc` in the prologue's program,
    // whose other inputs (one element each) follow B among the parameters.
    if (prologue.back()->getResult(0) != operands[0])
      throw std::invalid_argument("a product's prologue must compute its first operand");
    llvm::DenseSet<Operation *> inPrologue(prologue.begin(), prologue.end());
    Value x;
    for (Operation *op : prologue)
      for (Value v : op->getOperands())
        if (!inPrologue.count(v.getDefiningOp()) && shapeOf(v) == shapeOf(operands[0]) &&
            ops::numElements(shapeOf(v)) != 1)
          x = v;
    if (!x || (elemTypeOf(x) != elemTypeOf(operands[0]) && elemTypeOf(x) != ElemType::F32))
      throw std::invalid_argument("a product's prologue must read one tensor of A's shape and type (or float32)");
    aType = elemTypeOf(x);
    ProgramBuilder ppb(pro);
    llvm::DenseMap<Value, std::string> proNames = {{x, "acc"}};
    std::vector<Value> proParams;
    appendOps(ppb, proNames, prologue, proParams);
    for (auto &shape : pro.inputShapes) shape = {};  // (each one element: read at 0)
    pro.result = proNames.lookup(operands[0]);
    params[0] = outer(x);
    params.insert(params.end(), proParams.begin(), proParams.end());
  }
  names[anchor->getResult(0)] = "acc";
  // The 8-bit kernel's parameters after B (MatMul.h): the per-column scale, then za·Σ_k B[k][n]
  // when A has a zero point (B read through permB).
  auto addInt8Params = [&](MatMulSpec &spec, const Shape &permB) {
    params.insert(params.begin() + 2, int8Scale(operands[2], spec.N, anchor));
    if (int64_t za = attrs.getInt("a_zero_point", 0)) {
      params.insert(params.begin() + 3, zeroPointOffsets(operands[1], permB, za, anchor));
      spec.aZeroPoint = za;
    }
  };
  const bool quantizedConv = isa<QuantizedConvOp, QuantizedConvNhwcOp>(anchor);
  const bool conv = isa<ConvOp, ConvNhwcOp>(anchor) || quantizedConv;
  const bool nhwc = isa<ConvNhwcOp, QuantizedConvNhwcOp>(anchor);
  const unsigned biasOperand = quantizedConv ? 3 : 2;  // (QuantizedConv: X, W, scale, B)
  if (conv && !isa<NoneType>(operands[biasOperand].getType())) {
    // The convolution's own bias: per output channel, before the chain.
    Value bias = operands[biasOperand];
    int64_t M = shapeOf(operands[1])[0];
    Shape perChannel(shapeOf(operands[0]).size() - 1, 1);  // NCHW: [M, 1, ...] against [N, M, spatial...]
    perChannel[0] = M;
    std::string x = pb.input(nhwc ? Shape{M} : perChannel, elemTypeOf(bias));
    params.push_back(outer(bias));
    epi.body.push_back("const float tb = acc + " + x + ";");
    names[anchor->getResult(0)] = "tb";
    epi.result = "tb";
  }
  appendOps(pb, names, chain, params);
  epi.result = chain.empty() ? (epi.result.empty() ? "acc" : epi.result) : names.lookup(chain.back()->getResult(0));
  params.push_back(result);
  ElemType inType = elemTypeOf(operands[0]), outType = elemTypeOf(result);
  Shape outShape = shapeOf(anchor->getResult(0));
  std::string stages = opts_.route.get(kGemmStages);
  // Operands read in place through strided views (kiln-product-views): their element strides,
  // and their first element's offset in bytes.
  std::vector<int64_t> viewStrides[2];
  std::array<int64_t, 2> viewOffsets = {0, 0};
  for (int k = 0; k < 2; ++k)
    if (auto view = outer(operands[k]).getDefiningOp<StridedViewOp>()) {
      viewStrides[k].assign(view.getStrides()->begin(), view.getStrides()->end());
      viewOffsets[k] = view.getOffset().value_or(0) * int64_t(kernels::elemSize(elemTypeOf(operands[k])));
    }
  const bool viewed = !viewStrides[0].empty() || !viewStrides[1].empty();

  if (isa<MatMulOp, TransposedMatMulOp, QuantizedMatMulOp>(anchor)) {
    MatMulSpec spec;
    if (isa<MatMulOp>(anchor) && !viewed) {
      spec = matMulSpecFromShapes(shapeOf(operands[0]), shapeOf(operands[1]));
    } else {
      spec = transposedMatMulSpec(
          shapeOf(operands[0]), attrs.getInts("perm_a", {}), shapeOf(operands[1]), attrs.getInts("perm_b", {}), nullptr,
          viewStrides[0].empty() ? nullptr : &viewStrides[0], viewStrides[1].empty() ? nullptr : &viewStrides[1]);
    }
    spec.type = inType;
    spec.int8 = isa<QuantizedMatMulOp>(anchor);
    spec.fp8 = spec.int8 && inType == ElemType::F8E4M3;
    spec.aUnsigned = spec.int8 && inType == ElemType::U8;
    if (elemTypeOf(operands[1]) != (spec.aUnsigned ? ElemType::I8 : inType))
      throw std::invalid_argument("matrix product operands of different types");
    // Tensor cores read B best k-contiguous ([N, K], ldmatrix without .trans; int8 only so):
    // constant [K, N] weights are repacked once at build time.
    Shape bShape = shapeOf(operands[1]);
    if ((inType == ElemType::F16 || inType == ElemType::BF16 || spec.int8) && bShape.size() == 2 &&
        spec.b.colStride == 1 && spec.K % 8 == 0 && outer(operands[1]).getDefiningOp<ConstantOp>()) {
      params[1] = repacked(operands[1], {1, 0}, {bShape[1], bShape[0]});
      spec.b.rowStride = 1;
      spec.b.colStride = spec.K;
    }
    spec.outType = outType;
    spec.epilogue = epi;
    spec.outShape = outShape;
    spec.tile = tileFor(opts_, anchor);
    if (spec.fp8 && (tryWgmmaGemm(anchor, spec, params, viewOffsets, operands[2]) ||
                     tryLibraryGemm(anchor, chain, result, spec, params[0], params[1], operands[2])))
      return;
    if (spec.int8) {
      addInt8Params(spec, attrs.getInts("perm_b", {}));
    } else if (pro.result.empty() &&
               (tryWgmmaGemm(anchor, spec, params, viewOffsets) ||
                tryLibraryGemm(anchor, chain, result, spec, params[0], params[1], {}, {}, viewOffsets))) {
      return;
    }
    spec.prologue = pro;
    spec.aType = aType;
    spec.splitK = splitKFor(opts_, anchor);
    spec.stages = stages == "auto" ? 0 : std::stoi(stages);
    addLaunch(anchor, targetMatMul(spec), params, {viewOffsets[0], viewOffsets[1]});
    return;
  }
  if (!conv) throw std::logic_error("not a product: " + describeOp(anchor));
  auto noPrologue = [&] {  // (kiln-fuse-epilogue gives prologues to the implicit-GEMM convolutions only)
    if (!pro.result.empty()) throw std::invalid_argument("this convolution's kernel takes no prologue");
  };
  Shape x = shapeOf(operands[0]), w = shapeOf(operands[1]);
  if (quantizedConv && (!nhwc || attrs.getInt("group", 1) != 1 || x.size() != 4))
    throw std::invalid_argument("int8/fp8 convolutions run 2-D, NHWC and ungrouped only");
  if (x.size() != 4 && x.size() != 3) {  // 3-D and more: the direct N-D kernel (NCDHW)
    if (nhwc) throw std::invalid_argument("a channels-last convolution of rank " + std::to_string(x.size()));
    noPrologue();
    lowerConvNd(anchor, epi, params, result);
    return;
  }
  const bool oneD = x.size() == 3;
  if (oneD) {
    // 1-D as 2-D with H = 1: x [N, C, L] is [N, C, 1, L] (NHWC: [N, L, C] is [N, 1, L, C]), W
    // [M, C/g, K] is [M, C/g, 1, K], and the attributes gain a unit H axis.
    x.insert(x.begin() + (nhwc ? 1 : 2), 1);
    w.insert(w.begin() + 2, 1);
    outShape.insert(outShape.begin() + (nhwc ? 1 : 2), 1);
    attrs = convAttrs2d(attrs);
    for (auto &in : epi.inputShapes) {  // (epilogue inputs broadcast against the 2-D result)
      in.insert(in.begin(), 3 - std::min<size_t>(in.size(), 3), 1);
      in.insert(in.begin() + (nhwc ? 1 : 2), 1);
    }
  }
  auto st = intsOr(attrs, "strides", {1, 1}), dl = intsOr(attrs, "dilations", {1, 1});
  Conv2dSpec s;
  s.N = x[0], s.M = w[0], s.KH = w[2], s.KW = w[3];
  if (nhwc)
    s.H = x[1], s.W = x[2], s.C = x[3], s.OH = outShape[1], s.OW = outShape[2];
  else
    s.C = x[1], s.H = x[2], s.W = x[3], s.OH = outShape[2], s.OW = outShape[3];
  s.group = attrs.getInt("group", 1);
  s.strideH = st[0], s.strideW = st[1], s.dilationH = dl[0], s.dilationW = dl[1];
  setPads2d(attrs, s);
  s.type = inType;
  s.outType = outType;
  s.epilogue = epi;
  if (!nhwc) {
    noPrologue();
    addLaunch(anchor, emitConv2d(s), params);
    return;
  }
  if (s.group == 1) {
    // Implicit GEMM: A = im2col(x) [N·OH·OW, KH·KW·C], B = weights as [Cout][KH][KW][C] read as [K, Cout].
    MatMulSpec spec;
    ConvGeometry g;
    g.N = s.N, g.H = s.H, g.W = s.W, g.C = s.C, g.KH = s.KH, g.KW = s.KW, g.strideH = s.strideH, g.strideW = s.strideW;
    g.padTop = s.padTop, g.padLeft = s.padLeft, g.dilationH = s.dilationH, g.dilationW = s.dilationW, g.OH = s.OH,
    g.OW = s.OW;
    // A 1x1, stride-1, unpadded convolution reads the image as a plain [N·H·W, C] matrix.
    if (!(s.KH == 1 && s.KW == 1 && s.strideH == 1 && s.strideW == 1 && s.padTop == 0 && s.padLeft == 0))
      spec.conv = g;
    else
      spec.a.rowStride = s.C, spec.a.colStride = 1;
    spec.M = s.N * s.OH * s.OW;
    spec.N = s.M;
    spec.K = s.KH * s.KW * s.C;
    spec.b.rowStride = 1;
    spec.b.colStride = spec.K;
    spec.type = inType;
    spec.outType = outType;
    spec.epilogue = epi;
    spec.outShape = outShape;
    spec.tile = tileFor(opts_, anchor);
    spec.splitK = splitKFor(opts_, anchor);
    spec.stages = stages == "auto" ? 0 : std::stoi(stages);
    params[1] = oneD ? repacked(operands[1], {0, 2, 1}, {s.M, s.KH, s.KW, s.C})
                     : repacked(operands[1], {0, 2, 3, 1}, {s.M, s.KH, s.KW, s.C});
    // A 1x1 convolution is a plain GEMM: cuBLASLt's, where the tactic allows.
    Value ownBias = isa<NoneType>(operands[biasOperand].getType()) ? Value() : outer(operands[biasOperand]);
    if (!quantizedConv && !spec.conv && pro.result.empty() &&
        tryLibraryGemm(anchor, chain, result, spec, params[0], params[1], {}, ownBias))
      return;
    spec.prologue = pro;
    spec.aType = aType;
    if (quantizedConv) {
      spec.int8 = true;
      spec.fp8 = inType == ElemType::F8E4M3;
      spec.aUnsigned = inType == ElemType::U8;
      addInt8Params(spec, {});
    }
    addLaunch(anchor, targetMatMul(spec), params);
    return;
  }
  // Grouped / depthwise: weights as [KH][KW][C/group][M].
  noPrologue();
  params[1] = oneD ? repacked(operands[1], {2, 1, 0}, {s.KH, s.KW, s.C / s.group, s.M})
                   : repacked(operands[1], {2, 3, 1, 0}, {s.KH, s.KW, s.C / s.group, s.M});
  addLaunch(anchor, emitConv2dNhwc(s), params);
}

void Lowering::lowerGemm(GemmOp op) {
  ops::Attrs attrs = attrsFromOp(op);
  Value out = op->getResult(0);
  auto operands = op->getOperands();
  bool hasC = !isa<NoneType>(operands[2].getType());
  MatMulSpec spec = gemmSpecFromShapes(
      shapeOf(operands[0]), shapeOf(operands[1]), hasC, hasC ? shapeOf(operands[2]) : Shape{},
      attrs.getInt("transA", 0), attrs.getInt("transB", 0), attrs.getFloat("alpha", 1.0), attrs.getFloat("beta", 1.0));
  spec.type = elemTypeOf(operands[0]);
  spec.outType = elemTypeOf(out);
  if (spec.epilogue.numInputs()) spec.epilogue.inputTypes = {elemTypeOf(operands[2])};
  spec.tile = tileFor(opts_, op);
  spec.splitK = splitKFor(opts_, op);
  std::vector<Value> params = {operands[0], operands[1]};
  if (spec.epilogue.numInputs()) params.push_back(operands[2]);
  params.push_back(out);
  addLaunch(op, targetMatMul(spec), params);
  return;
}

}  // namespace kiln::codegen

#include "codegen/lowering/EngineBuilder.h"

#include "codegen/kernels/Attention.h"
#include "codegen/kernels/Conv.h"
#include "codegen/kernels/ConvTranspose.h"
#include "codegen/kernels/Copy.h"
#include "codegen/kernels/Elementwise.h"
#include "codegen/kernels/FusedProgram.h"
#include "codegen/kernels/Indexing.h"
#include "codegen/kernels/KernelUtil.h"
#include "codegen/kernels/MatMul.h"
#include "codegen/kernels/Pool.h"
#include "codegen/kernels/Reduction.h"
#include "codegen/kernels/Resize.h"
#include "codegen/kernels/RowScan.h"
#include "codegen/nvrtc/CompilePool.h"
#include "compiler/analysis/MemoryPlan.h"
#include "compiler/ir/KilnDialect.h"
#include "compiler/ir/TensorConversion.h"
#include "compiler/ops/Conv.h"
#include "compiler/ops/Resize.h"
#include "compiler/quant/Calibration.h"
#include "compiler/support/Files.h"
#include "compiler/knobs/Knob.h"
#include "passes/ElementwiseUse.h"
#include "passes/FuseAttention.h"
#include "passes/Passes.h"
#include "passes/StridedViews.h"
#include "runtime/src/EngineFormat.h"

#include "llvm/ADT/DenseMap.h"

#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <numeric>
#include <stdexcept>

using namespace mlir;

namespace kiln::codegen {

KILN_KNOB(kGemmTile, {"gemm.tile", {"auto", "256x128", "128x256", "128x128", "128x64", "64x128", "64x64", "32x32"},
                      "auto",
                      "Block tile (rows x columns of the result) of matrix products and implicit-GEMM convolutions "
                      "(auto: the largest that fills the GPU)",
                      knobs::Tier::Mixed, "codegen/lowering/EngineBuilder.cpp", "tile", {"MatMul", "Gemm", "Conv"}});
KILN_KNOB(kAttentionRows, {"attention.rows", {"auto", "64", "128"}, "auto",
                           "Query rows per block of the fused attention kernel (four or eight warps; auto: 128 where "
                           "that still makes 512 blocks, else 64)",
                           knobs::Tier::Mixed, "codegen/lowering/EngineBuilder.cpp"});
KILN_KNOB(kAttentionSplit, {"attention.split", {"auto", "1", "2"}, "auto",
                            "Groups of warps per fused attention block that take alternate key tiles of the same "
                            "rows (auto: 2 where the blocks are fewer than an H100/H200 has SMs, 132)",
                            knobs::Tier::Mixed, "codegen/lowering/EngineBuilder.cpp"});
KILN_KNOB(kGemmStages, {"gemm.stages", {"auto", "2", "3", "4"}, "auto",
                        "Depth of the cp.async pipeline of tensor-core matrix products", knobs::Tier::Full,
                        "codegen/lowering/EngineBuilder.cpp"});
KILN_KNOB(kGemmTactic, {"gemm.tactic", {"auto", "kiln", "cublaslt"}, "auto",
                        "Who computes matrix products and 1x1 NHWC convolutions: kiln's kernels or cuBLASLt "
                        "(bias/ReLU/residual/scale epilogues only); auto: cuBLASLt for every fp32/fp16/bf16/fp8 "
                        "product it can take, else kiln",
                        knobs::Tier::Fast, "codegen/lowering/EngineBuilder.cpp", "tactic", {"MatMul", "Gemm", "Conv"}});
KILN_KNOB(kGemmTf32, {"gemm.tf32", {"off", "on"}, "off",
                      "fp32 products that cuBLASLt computes (gemm.tactic) round A and B to TF32 (10-bit mantissa) "
                      "on tensor cores, accumulating in fp32: several times faster, about fp16's accuracy "
                      "(TensorRT's TF32 flag, PyTorch's allow_tf32)",
                      knobs::Tier::Fast, "codegen/lowering/EngineBuilder.cpp", "tf32", {"MatMul", "Gemm", "Conv"}});
KILN_KNOB(kGemmSearch, {"runtime.gemm_search", {"auto", "on", "off"}, "auto",
                        "When a context is created, time cuBLASLt's eight best-ranked algorithms for each distinct "
                        "library product (scratch operands, a warm-up and 5 runs each) and keep the fastest, instead "
                        "of the heuristic's first (recorded in the engine, done by the runtime); auto: on for "
                        "engines with fp32/TF32 library products (H200: ViT-B/16 fp32 -7 %, BERT TF32 -8 %), off "
                        "for half precision (ResNet-50 fp16 -4 % but ViT-B/16 fp16 +2 %)",
                        knobs::Tier::Fast, "codegen/lowering/EngineBuilder.cpp"});
KILN_KNOB(kCudaGraph, {"runtime.cuda_graph", {"on", "off"}, "on",
                       "Replay an engine's launches as one CUDA graph (recorded in the engine, read by the runtime)",
                       knobs::Tier::Fast, "codegen/lowering/EngineBuilder.cpp"});

namespace {

using Shape = std::vector<int64_t>;

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
           return isa<AttentionOp>(u) || (f && f.getKind() == "elementwise") || isFusableElementwise(u) ||
                  isProductOperand(u, op->getResult(0));
         });
}

// Ops whose result is their first operand's bytes under another shape (or, for an attention
// view, read through strides by its users): no launch.
bool isAlias(Operation *op) {
  return isa<ReshapeOp, FlattenOp, SqueezeOp, UnsqueezeOp, IdentityOp>(op) ||
         (isa<DropoutOp>(op) && op->getNumResults() == 1) || isReadInPlaceView(op);
}

// One launch: a kernel and the values bound to its pointer parameters, in order.
struct PendingLaunch {
  KernelLaunch kernel;
  // A library GEMM instead of a kernel: its buffers are params {A, B, [C], [bias], D}.
  bool library = false;
  rt::GemmCall gemm;
  std::vector<Value> params;
  std::vector<int64_t> paramOffsets;  // extra byte offset per param (Split/Concat write into a part)
  std::string node;
};

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

// The four pads of a 2-D conv/pool spec (Conv2dSpec, Pool2dSpec) whose sizes are set.
template <class Spec>
void setPads2d(const ops::Attrs &a, Spec &s) {
  auto [begin, end] = windowPads(a, {s.H, s.W}, {s.OH, s.OW}, {s.KH, s.KW}, {s.strideH, s.strideW}, {s.dilationH, s.dilationW});
  s.padTop = begin[0], s.padLeft = begin[1], s.padBottom = end[0], s.padRight = end[1];
}

class Lowering {
 public:
  Lowering(func::FuncOp f, const BuildOptions &opts) : f_(f), opts_(opts) {}
  BuildResult run();

 private:
  void lowerOp(Operation *op);
  // Coordinate ops and row scans (Indexing.h, RowScan.h); false: not one of them.
  bool lowerIndexOp(Operation *op, const std::string &type, const ops::Attrs &attrs);
  void lowerFused(FusedOp f);
  // A product (MatMul, TransposedMatMul, Conv, ConvNhwc) whose result flows through `chain`
  // (elementwise ops, possibly empty) to `result`, in one launch.
  void lowerProduct(Operation *anchor, ArrayRef<Operation *> chain, Value result);
  // Elementwise ops (a DAG whose last op yields `result`) in one launch.
  void lowerElementwise(ArrayRef<Operation *> ops, Value result);
  // Appends `ops` to a program: values already named are reused, single-element constants become
  // literals, anything else becomes an input (its outer value pushed on `params`).
  // `offsets`: null in epilogues; in elementwise kernels, where inputs read through strided views
  // (kiln-elementwise-views) get their views' byte offsets (params then name the views).
  void appendOps(ProgramBuilder &pb, llvm::DenseMap<Value, std::string> &names, ArrayRef<Operation *> ops,
                 std::vector<Value> &params, std::vector<int64_t> *offsets = nullptr);
  // The value outside a kernel region that a region's block argument stands for.
  Value outer(Value v) {
    if (auto a = dyn_cast<BlockArgument>(v))
      if (auto f = dyn_cast<FusedOp>(a.getOwner()->getParentOp())) return f.getInputs()[a.getArgNumber()];
    return v;
  }
  // A constant's raw bytes permuted (weights repacked for a kernel layout), as a build-time
  // constant in the IR so it is placed like any other weight.
  Value repacked(Value weights, const Shape &perm, const Shape &newShape);
  std::string tileFor(Operation *op) { return opts_.route.get(kGemmTile, nodeName(op)); }
  // The product and its chain as one cuBLASLt call, when the knob allows and cuBLASLt can
  // express the chain (scale, bias, residual add, ReLU, a final cast to fp32). False: use kiln.
  // `aMem`/`bMem` are the values `spec`'s views read (B may be a repacked copy of the weights).
  // `fp8Scale`: for an fp8 product, its scale operand (sa · sw[n]). `bias`: a convolution's own
  // bias (per output channel), added before the chain.
  // (offsets: of A's and B's first element in their buffers, bytes: operands read through views)
  bool tryLibraryGemm(Operation *anchor, ArrayRef<Operation *> chain, Value result, const MatMulSpec &spec, Value aMem,
                      Value bMem, Value fp8Scale = {}, Value bias = {}, std::array<int64_t, 2> offsets = {0, 0});
  void addLaunch(Operation *op, KernelLaunch k, std::vector<Value> params, std::vector<int64_t> offsets = {});
  // emitMatMul, refusing tensor-core kernels (8-bit and half operands: cp.async, mma m16n8k16 /
  // m16n8k32) for targets below sm_80 with a message instead of ptxas errors.
  KernelLaunch tensorCoreCheckedMatMul(const MatMulSpec &spec) {
    bool tensorCores = spec.int8 || spec.type == ElemType::F16 || spec.type == ElemType::BF16;
    if (tensorCores && desc_.sm < 80)
      throw std::invalid_argument(std::string(spec.int8 ? "int8" : "fp16/bf16") +
                                  " tensor-core products need sm_80 or newer; the target is " + opts_.arch +
                                  (spec.int8 ? "" : " (build it fp32)"));
    return emitMatMul(spec);
  }
  rt::BufferRef bufferOf(Value v, int64_t extraOffset = 0);
  // Whether `v`'s memory will be an I/O tensor's: an input's (through aliases), or a result
  // that a launch writes straight into its output.
  bool isIo(Value v) {
    if (auto arg = dyn_cast<BlockArgument>(root(v)); arg && arg.getOwner() == &f_.getBody().front()) return true;
    Operation *d = v.getDefiningOp();
    return d && !isAlias(d) && llvm::is_contained(f_.getBody().front().getTerminator()->getOperands(), v);
  }
  Value root(Value v) {
    while (Operation *d = v.getDefiningOp())
      if (isAlias(d)) v = d->getOperand(0);
      else break;
    return v;
  }
  // Packs a constant into the weights blob (64-byte aligned, bytes as stored in the IR), once.
  void placeWeights(ConstantOp c) {
    if (placed_.count(c.getResult())) return;
    std::vector<uint8_t> bytes = bytesFromAttr(c.getValue());
    if (bytes.empty() && c.getValue().getNumElements() > 0) bytes = ops::tensorToBytes(tensorFromAttr(c.getValue()));
    size_t offset = (desc_.weights.size() + 63) / 64 * 64;
    desc_.weights.resize(offset);
    desc_.weights.insert(desc_.weights.end(), bytes.begin(), bytes.end());
    placed_[c.getResult()] = {rt::BufferRef::Space::Weights, offset, -1};
  }
  // A float32 constant computed at build time (BatchNormalization's scale and shift).
  Value addWeights(const std::vector<float> &vals, Operation *at);
  Value addConstant(const ops::Tensor &t, Operation *at);
  // The Resize kernel's spec and its tap tables, as build-time constants.
  struct ResizeTables {
    ResizeKernelSpec spec;
    Value index, weight;
  };
  ResizeTables resizeTables(Operation *op, const std::string &type, ElemType et);
  // za · Σ_k B[k][n] per column of a constant 2-D int8 B (read through perm_b): the int8
  // kernel's offsets for an A with zero point za (MatMul.h).
  Value zeroPointOffsets(Value b, const Shape &permB, int64_t za, Operation *at) {
    auto w = constantValue(outer(b), int64_t(1) << 30);
    if (!w || w->rank() != 2) throw std::invalid_argument("int8 product with an activation zero point: B must be a constant matrix");
    bool nk = permB == Shape{1, 0};  // stored [N, K]
    int64_t n = w->shape[nk ? 0 : 1], k = w->shape[nk ? 1 : 0];
    ops::Tensor off(ops::DType::I32, {n});
    for (int64_t j = 0; j < n; ++j) {
      int64_t sum = 0;
      for (int64_t i = 0; i < k; ++i) sum += w->getInt(nk ? j * k + i : i * n + j);
      off.setInt(j, za * sum);
    }
    return addConstant(off, at);
  }
  // The int8 kernel's per-column scale parameter (MatMul.h): the constant `scale` operand of n
  // elements, or one element spread over n.
  Value int8Scale(Value scale, int64_t n, Operation *at) {
    auto c = constantValue(outer(scale));
    if (!c || (c->size() != 1 && c->size() != n))
      throw std::invalid_argument("int8 product: the scale must be a constant of 1 or N elements");
    return c->size() == n ? outer(scale) : addWeights(std::vector<float>(size_t(n), float(c->get(0))), at);
  }

  func::FuncOp f_;
  const BuildOptions &opts_;
  rt::EngineDesc desc_;
  llvm::DenseMap<Value, rt::BufferRef> placed_;  // constants, I/O and planned intermediates
  std::vector<PendingLaunch> launches_;
  std::vector<std::string> errors_;
  std::vector<Operation *> buildTimeConstants_;  // erased when done: the caller's IR is unchanged
  OpBuilder builder_{f_.getContext()};

 public:
  ~Lowering() {
    for (Operation *op : buildTimeConstants_) op->erase();
  }
};

rt::BufferRef Lowering::bufferOf(Value v, int64_t extraOffset) {
  auto it = placed_.find(root(v));
  if (it == placed_.end()) throw std::logic_error("value has no buffer");
  rt::BufferRef b = it->second;
  b.offset += extraOffset;
  return b;
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
  p.node = nodeName(op);
  launches_.push_back(std::move(p));
}

Value Lowering::addWeights(const std::vector<float> &vals, Operation *at) {
  ops::Tensor t(ops::DType::F32, {static_cast<int64_t>(vals.size())});
  for (size_t k = 0; k < vals.size(); ++k) t.f[k] = vals[k];
  return addConstant(t, at);
}

Lowering::ResizeTables Lowering::resizeTables(Operation *op, const std::string &type, ElemType et) {
  ops::ResizePlan plan = ops::resizePlan(type, operandInfo(op).context(1));
  ResizeKernelSpec k;
  k.inShape = plan.in, k.outShape = plan.out, k.type = et;
  k.extrapolation = static_cast<float>(plan.extrapolation);
  std::vector<int32_t> index;
  std::vector<float> weight;
  for (size_t a = 0; a < plan.axes.size(); ++a) {
    const auto &axis = plan.axes[a];
    bool identity = plan.in[a] == plan.out[a];
    size_t taps = 1;
    for (size_t o = 0; o < axis.size(); ++o) {
      identity = identity && !axis[o].extrapolate && axis[o].taps.size() == 1 &&
                 axis[o].taps[0] == std::pair<int64_t, double>(int64_t(o), 1.0);
      taps = std::max(taps, axis[o].taps.size());
    }
    k.taps.push_back(identity ? 0 : int(taps));
    if (identity) continue;
    for (const auto &t : axis)
      for (size_t j = 0; j < taps; ++j) {
        bool used = !t.extrapolate && j < t.taps.size();
        index.push_back(t.extrapolate && j == 0 ? -1 : used ? int32_t(t.taps[j].first) : 0);
        weight.push_back(used ? float(t.taps[j].second) : 0.f);
      }
  }
  if (index.empty()) index.push_back(0), weight.push_back(0.f);  // (no axis resized: unused tables)
  ops::Tensor ti(ops::DType::I32, {int64_t(index.size())});
  for (size_t j = 0; j < index.size(); ++j) ti.setInt(int64_t(j), index[j]);
  return {k, addConstant(ti, op), addWeights(weight, op)};
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

void Lowering::appendOps(ProgramBuilder &pb, llvm::DenseMap<Value, std::string> &names, ArrayRef<Operation *> ops,
                         std::vector<Value> &params, std::vector<int64_t> *offsets) {
  for (Operation *op : ops) {
    auto use = elementwiseUse(op);
    if (!use) throw std::invalid_argument("no elementwise kernel for this op");
    std::vector<std::string> args;
    for (size_t k = 0; k < use->inputs.size(); ++k) {
      Value v = use->inputs[k];
      auto it = names.find(v);
      if (it != names.end()) {
        args.push_back(it->second);
        continue;
      }
      auto t = cast<RankedTensorType>(v.getType());
      if (t.getNumElements() == 1)
        if (auto c = constantValue(outer(v))) {
          args.push_back(ProgramBuilder::literal(c->get(0), computeTypeOf(elemTypeOf(v))));
          continue;
        }
      std::vector<int64_t> strides;
      int64_t offset = 0;
      if (auto view = outer(v).getDefiningOp<StridedViewOp>()) {
        if (!offsets || use->views[k] != shapeOf(v)) throw std::invalid_argument("a strided view read by a product epilogue or a per-axis operand");
        strides.assign(view.getStrides()->begin(), view.getStrides()->end());
        offset = view.getOffset().value_or(0) * int64_t(kernels::elemSize(elemTypeOf(v)));
      }
      std::string name = pb.input(use->views[k], elemTypeOf(v), strides);
      params.push_back(outer(v));
      if (offsets) offsets->resize(params.size() - 1), offsets->push_back(offset);
      names[v] = name;
      args.push_back(name);
    }
    names[op->getResult(0)] = pb.apply(use->op, args);
  }
}

void Lowering::lowerElementwise(ArrayRef<Operation *> ops, Value result) {
  ElementwiseSpec spec;
  ProgramBuilder pb(spec.program);
  llvm::DenseMap<Value, std::string> names;
  std::vector<Value> params;
  std::vector<int64_t> offsets;
  appendOps(pb, names, ops, params, &offsets);
  spec.program.result = names.lookup(ops.back()->getResult(0));
  spec.outShape = shapeOf(result);
  spec.outType = elemTypeOf(result);
  if (spec.program.numInputs() == 0) spec.allowVectorized = false;
  params.push_back(result);
  addLaunch(ops.back(), emitElementwise(spec), params, offsets);
}

void Lowering::lowerProduct(Operation *anchor, ArrayRef<Operation *> chain, Value result) {
  std::string type = cast<ShapeInferenceOpInterface>(anchor).getOnnxOpType().str();
  ops::Attrs attrs = attrsFromOp(anchor);
  auto operands = anchor->getOperands();
  FusedProgram epi;
  ProgramBuilder pb(epi);
  llvm::DenseMap<Value, std::string> names;
  std::vector<Value> params = {outer(operands[0]), outer(operands[1])};
  names[anchor->getResult(0)] = "acc";
  const bool quantizedConv = type == "QuantizedConv" || type == "QuantizedConvNhwc";
  const bool conv = type == "Conv" || type == "ConvNhwc" || quantizedConv;
  const bool nhwc = type == "ConvNhwc" || type == "QuantizedConvNhwc";
  const unsigned biasOperand = quantizedConv ? 3 : 2;  // (QuantizedConv: X, W, scale, B)
  if (conv && !isa<NoneType>(operands[biasOperand].getType())) {
    // The convolution's own bias: per output channel, before the chain.
    Value bias = operands[biasOperand];
    int64_t M = shapeOf(operands[1])[0];
    std::string x = pb.input(nhwc ? Shape{M} : Shape{M, 1, 1}, elemTypeOf(bias));
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

  if (type == "MatMul" || type == "TransposedMatMul" || type == "QuantizedMatMul") {
    MatMulSpec spec;
    if (type == "MatMul" && !viewed) {
      spec = matMulSpecFromShapes(shapeOf(operands[0]), shapeOf(operands[1]));
    } else {
      spec = transposedMatMulSpec(shapeOf(operands[0]), attrs.getInts("perm_a", {}), shapeOf(operands[1]),
                                  attrs.getInts("perm_b", {}), nullptr, viewStrides[0].empty() ? nullptr : &viewStrides[0],
                                  viewStrides[1].empty() ? nullptr : &viewStrides[1]);
    }
    spec.type = inType;
    spec.int8 = type == "QuantizedMatMul";
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
    if (spec.fp8 && tryLibraryGemm(anchor, chain, result, spec, params[0], params[1], operands[2])) return;
    if (spec.int8) {
      params.insert(params.begin() + 2, int8Scale(operands[2], spec.N, anchor));
      if (int64_t za = attrs.getInt("a_zero_point", 0)) {
        params.insert(params.begin() + 3, zeroPointOffsets(operands[1], attrs.getInts("perm_b", {}), za, anchor));
        spec.aOffset = true;
      }
    } else if (tryLibraryGemm(anchor, chain, result, spec, params[0], params[1], {}, {}, viewOffsets)) {
      return;
    }
    spec.epilogue = epi;
    spec.outShape = outShape;
    spec.tile = tileFor(anchor);
    spec.stages = stages == "auto" ? 0 : std::stoi(stages);
    addLaunch(anchor, tensorCoreCheckedMatMul(spec), params, {viewOffsets[0], viewOffsets[1]});
    return;
  }
  if (!conv) throw std::logic_error("not a product: " + type);
  Shape x = shapeOf(operands[0]), w = shapeOf(operands[1]);
  if (x.size() != 4) throw std::invalid_argument("only 2-D convolutions have kernels yet");
  if (quantizedConv && (!nhwc || attrs.getInt("group", 1) != 1))
    throw std::invalid_argument("int8/fp8 convolutions run NHWC and ungrouped only");
  auto st = intsOr(attrs, "strides", {1, 1}), dl = intsOr(attrs, "dilations", {1, 1});
  Conv2dSpec s;
  s.N = x[0], s.M = w[0], s.KH = w[2], s.KW = w[3];
  if (nhwc) s.H = x[1], s.W = x[2], s.C = x[3], s.OH = outShape[1], s.OW = outShape[2];
  else s.C = x[1], s.H = x[2], s.W = x[3], s.OH = outShape[2], s.OW = outShape[3];
  s.group = attrs.getInt("group", 1);
  s.strideH = st[0], s.strideW = st[1], s.dilationH = dl[0], s.dilationW = dl[1];
  setPads2d(attrs, s);
  s.type = inType;
  s.outType = outType;
  s.epilogue = epi;
  if (!nhwc) {
    addLaunch(anchor, emitConv2d(s), params);
    return;
  }
  if (s.group == 1) {
    // Implicit GEMM: A = im2col(x) [N·OH·OW, KH·KW·C], B = weights as [Cout][KH][KW][C] read as [K, Cout].
    MatMulSpec spec;
    ConvGeometry g;
    g.N = s.N, g.H = s.H, g.W = s.W, g.C = s.C, g.KH = s.KH, g.KW = s.KW, g.strideH = s.strideH, g.strideW = s.strideW;
    g.padTop = s.padTop, g.padLeft = s.padLeft, g.dilationH = s.dilationH, g.dilationW = s.dilationW, g.OH = s.OH, g.OW = s.OW;
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
    spec.tile = tileFor(anchor);
    spec.stages = stages == "auto" ? 0 : std::stoi(stages);
    params[1] = repacked(operands[1], {0, 2, 3, 1}, {s.M, s.KH, s.KW, s.C});
    // A 1x1 convolution is a plain GEMM: cuBLASLt's, where the tactic allows.
    Value ownBias = isa<NoneType>(operands[biasOperand].getType()) ? Value() : outer(operands[biasOperand]);
    if (!quantizedConv && !spec.conv && tryLibraryGemm(anchor, chain, result, spec, params[0], params[1], {}, ownBias))
      return;
    if (quantizedConv) {
      spec.int8 = true;
      spec.fp8 = inType == ElemType::F8E4M3;
      params.insert(params.begin() + 2, int8Scale(operands[2], spec.N, anchor));
    }
    addLaunch(anchor, tensorCoreCheckedMatMul(spec), params);
    return;
  }
  // Grouped / depthwise: weights as [KH][KW][C/group][M].
  params[1] = repacked(operands[1], {2, 3, 1, 0}, {s.KH, s.KW, s.C / s.group, s.M});
  addLaunch(anchor, emitConv2dNhwc(s), params);
}

bool Lowering::tryLibraryGemm(Operation *anchor, ArrayRef<Operation *> chain, Value result, const MatMulSpec &product,
                              Value aMem, Value bMem, Value fp8Scale, Value bias, std::array<int64_t, 2> offsets) {
  std::string tactic = opts_.route.get(kGemmTactic, nodeName(anchor));
  // One batch dim that B is shared across, with more batches than rows (an [S, B, K] activation
  // read as a transposed [B, S, K], times W): computed the other way round, as B products of S
  // rows each, so every GEMM has the larger M; D's rows are then M·N apart.
  MatMulSpec spec = product;
  int64_t ldD = spec.N, strideD = spec.M * spec.N;
  int swapDim = -1, nonUnit = 0;
  for (size_t d = 0; d < spec.batchShape.size(); ++d)
    if (spec.batchShape[d] != 1) swapDim = int(d), ++nonUnit;
  if (nonUnit == 1 && !spec.conv && spec.b.batchStrides[size_t(swapDim)] == 0 && spec.batchShape[size_t(swapDim)] > spec.M &&
      spec.a.colStride == 1 && spec.a.batchStrides[size_t(swapDim)] >= spec.K) {
    int64_t rows = spec.batchShape[size_t(swapDim)], rowStride = spec.a.batchStrides[size_t(swapDim)];
    ldD = spec.M * spec.N, strideD = spec.N;
    spec.batchShape = {spec.M};
    spec.a.batchStrides = {spec.a.rowStride};
    spec.a.rowStride = rowStride;
    spec.b.batchStrides = {0};
    spec.M = rows;
  }
  const bool fp8 = spec.fp8;  // (kiln's fp8 kernel is mma.sync: no faster than fp16 on sm_90)
  ElemType in = fp8 ? ElemType::F8E4M3 : spec.type, out = elemTypeOf(result);
  bool half = in == ElemType::F16 || in == ElemType::BF16;
  if (tactic == "kiln" || (!half && !fp8 && in != ElemType::F32)) return false;
  // Operand views: one unit stride each (cuBLASLt's op N / op T).
  const MatrixView &a = spec.a, &b = spec.b;
  bool aK = a.colStride == 1 && a.rowStride >= spec.K, aM = !aK && a.rowStride == 1 && a.colStride >= spec.M;
  bool bN = b.colStride == 1 && b.rowStride >= spec.N, bK = !bN && b.rowStride == 1 && b.colStride >= spec.K;
  if (!(aK || aM) || !(bN || bK)) return false;
  // fp8: both operands read along K (cuBLASLt's "TN"), no batch; under auto only sizes in
  // multiples of 16, which cuBLASLt's fp8 kernels take.
  if (fp8 && (!aK || !bK || kernels::numElementsOf(spec.batchShape) != 1)) return false;
  if (fp8 && tactic == "auto" && (spec.M % 16 || spec.N % 16 || spec.K % 16)) return false;
  // The batch dims: one uniform stride per operand, else (gemm.batch_pointers) cuBLASLt's
  // pointer-array batches, whose addresses the runtime builds once: not for I/O tensors.
  int64_t nbatch = 1;
  for (int64_t d : spec.batchShape) nbatch *= d;
  int64_t strideA = 0, strideB = 0;
  const bool pointers = nbatch > 1 && (!uniformBatchStride(spec.batchShape, a.batchStrides, strideA) ||
                                       !uniformBatchStride(spec.batchShape, b.batchStrides, strideB));
  if (pointers && !batchPointers(opts_.route)) return false;
  // The chain's longest prefix cuBLASLt expresses: scale, then bias and residual adds, then ReLU,
  // then a cast to fp32 (no C then). The rest, if any, runs as an elementwise kernel after it.
  // An fp8 product's fp32 result may first be cast to half: D is then half, as its bias.
  Value v = anchor->getResult(0), residual;
  float alpha = 1.f;
  bool relu = false, toF32 = false;
  Shape outShape = shapeOf(result);
  size_t taken = 0;
  ElemType dt = in;  // D's type before a final cast to fp32
  if (bias && elemTypeOf(bias) != dt) return false;
  if (fp8) {
    dt = ElemType::F32;
    if (!chain.empty() && cast<ShapeInferenceOpInterface>(chain[0]).getOnnxOpType() == "Cast" &&
        (elemTypeOf(chain[0]->getResult(0)) == ElemType::F16 || elemTypeOf(chain[0]->getResult(0)) == ElemType::BF16)) {
      dt = elemTypeOf(chain[0]->getResult(0));
      v = chain[0]->getResult(0);
      taken = 1;
    }
  }
  for (; taken < chain.size(); ++taken) {
    Operation *op = chain[taken];
    std::string type = cast<ShapeInferenceOpInterface>(op).getOnnxOpType().str();
    if (toF32) break;
    Value other;
    if (op->getNumOperands() == 2) other = op->getOperand(0) == v ? op->getOperand(1) : op->getOperand(1) == v ? op->getOperand(0) : Value();
    if ((type == "Mul" || type == "Div") && other && op->getOperand(0) == v && !bias && !residual && !relu) {
      auto c = constantValue(outer(other));
      if (!c || c->size() != 1) break;
      alpha = type == "Mul" ? alpha * float(c->get(0)) : alpha / float(c->get(0));
    } else if (type == "Add" && other && !relu) {
      Shape os = shapeOf(other);
      int64_t n = 1;
      for (int64_t d : os) n *= d;
      if (!bias && n == spec.N && !os.empty() && os.back() == spec.N && elemTypeOf(other) == dt) bias = other;
      else if (!residual && os == outShape && elemTypeOf(other) == dt) residual = other;
      else break;
    } else if (type == "Relu" && !relu) {
      relu = true;
    } else if (type == "Cast" && attrsFromOp(op).getInt("to", 0) == 1 && taken + 1 == chain.size() && !bias && !residual &&
               dt != ElemType::F32) {
      toF32 = true;
    } else {
      break;
    }
    v = op->getResult(0);
  }
  // The product's output: the result, or the value where the chain splits (an intermediate).
  Value d = taken == chain.size() ? result : v;
  out = elemTypeOf(d);
  if (out != (toF32 ? ElemType::F32 : dt)) return false;
  if (pointers && (isIo(aMem) || isIo(bMem) || isIo(d) || (residual && isIo(residual)))) return false;
  PendingLaunch p;
  p.library = true;
  rt::GemmCall &g = p.gemm;
  g.abType = static_cast<int32_t>(fp8 ? ops::DType::F8E4M3 : in == ElemType::F16 ? ops::DType::F16
                                  : in == ElemType::BF16 ? ops::DType::BF16 : ops::DType::F32);
  g.cdType = static_cast<int32_t>(out == ElemType::F16 ? ops::DType::F16 : out == ElemType::BF16 ? ops::DType::BF16 : ops::DType::F32);
  // Row-major C = A·B is column-major Cᵀ = Bᵀ·Aᵀ: cuBLASLt's A is our B, its B our A.
  g.m = spec.N, g.n = spec.M, g.k = spec.K;
  g.transA = !bN, g.lda = bN ? b.rowStride : b.colStride;
  g.transB = !aK, g.ldb = aK ? a.rowStride : a.colStride;
  g.ldc = ldD;
  g.batch = nbatch, g.strideA = strideB, g.strideB = strideA, g.strideC = strideD;
  if (pointers) {  // (size-1 dims dropped; D's products stay strideD apart)
    g.strideA = g.strideB = g.strideC = 0;
    int64_t inner = nbatch;
    for (size_t k = 0; k < spec.batchShape.size(); ++k) {
      inner /= spec.batchShape[k];
      if (spec.batchShape[k] == 1) continue;
      g.batchDims.push_back(spec.batchShape[k]);
      g.batchStepsA.push_back(b.batchStrides[k]), g.batchStepsB.push_back(a.batchStrides[k]);
      g.batchStepsC.push_back(inner * strideD);
    }
  }
  g.alpha = alpha, g.beta = residual ? 1.f : 0.f;
  g.epilogue = (bias ? rt::GemmCall::Bias : 0) | (relu ? rt::GemmCall::Relu : 0);
  g.tf32 = in == ElemType::F32 && opts_.route.get(kGemmTf32, nodeName(anchor)) == "on";
  p.params = {bMem, aMem};
  if (residual) p.params.push_back(outer(residual));
  if (bias) p.params.push_back(outer(bias));
  p.params.push_back(d);
  if (fp8) {  // cuBLASLt's A is our B: its row scales are the columns' sa · sw[n]; its B's are 1
    p.params.push_back(int8Scale(fp8Scale, spec.N, anchor));
    p.params.push_back(addWeights(std::vector<float>(size_t(spec.M), 1.f), anchor));
  }
  p.paramOffsets.assign(p.params.size(), 0);
  p.paramOffsets[0] = offsets[1], p.paramOffsets[1] = offsets[0];  // (cuBLASLt's A is our B)
  p.node = nodeName(anchor);
  launches_.push_back(std::move(p));
  if (taken < chain.size()) lowerElementwise(chain.drop_front(taken), result);
  return true;
}

void Lowering::lowerFused(FusedOp f) {
  SmallVector<Operation *> body;
  for (Operation &op : f.getBody().front().without_terminator())
    if (!isa<NoneOp, ConstantOp>(op)) body.push_back(&op);
  if (body.empty()) throw std::invalid_argument("empty kernel region");
  if (f.getKind() == "epilogue") lowerProduct(body.front(), ArrayRef<Operation *>(body).drop_front(), f.getResult(0));
  else lowerElementwise(body, f.getResult(0));
}

void Lowering::lowerOp(Operation *op) {
  auto sem = cast<ShapeInferenceOpInterface>(op);
  std::string type = sem.getOnnxOpType().str();
  ops::Attrs attrs = attrsFromOp(op);
  Value out = op->getResult(0);
  Shape outShape = shapeOf(out);
  auto operands = op->getOperands();

  if (isa<MatMulOp, TransposedMatMulOp, QuantizedMatMulOp, ConvOp, ConvNhwcOp, QuantizedConvOp, QuantizedConvNhwcOp>(op)) {
    lowerProduct(op, {}, out);
    return;
  }
  if (type == "Gemm") {
    bool hasC = !isa<NoneType>(operands[2].getType());
    MatMulSpec spec = gemmSpecFromShapes(shapeOf(operands[0]), shapeOf(operands[1]), hasC,
                                         hasC ? shapeOf(operands[2]) : Shape{}, attrs.getInt("transA", 0),
                                         attrs.getInt("transB", 0), attrs.getFloat("alpha", 1.0),
                                         attrs.getFloat("beta", 1.0));
    spec.type = elemTypeOf(operands[0]);
    spec.outType = elemTypeOf(out);
    if (spec.epilogue.numInputs()) spec.epilogue.inputTypes = {elemTypeOf(operands[2])};
    spec.tile = tileFor(op);
    std::vector<Value> params = {operands[0], operands[1]};
    if (spec.epilogue.numInputs()) params.push_back(operands[2]);
    params.push_back(out);
    addLaunch(op, tensorCoreCheckedMatMul(spec), params);
    return;
  }
  if (auto attn = dyn_cast<AttentionOp>(op)) {
    AttentionSpec s = attentionSpecOf(attn);
    // auto: eight warps share each K/V tile where 128-row blocks still number 512 or more
    // (measured on the H200: ViT-B/16 b32, 768 blocks, 3.239 -> 3.175 ms; with fewer blocks the
    // SMs idle: BERT-base 32x128, 384, 1.858 -> 1.882; GPT-2 1x512, 48, 0.888 -> 0.971).
    std::string rows = opts_.route.get(kAttentionRows);
    s.rowsPerBlock = rows != "auto" ? std::stoi(rows) : kernels::numElementsOf(s.batchShape) * kernels::ceilDiv(s.Sq, 128) >= 512 ? 128 : 64;
    // auto: with fewer blocks than SMs each block's rows walk all their keys alone (GPT-2 1x512:
    // 96 blocks); two groups of warps halve that walk.
    std::string split = opts_.route.get(kAttentionSplit);
    s.keySplit = split != "auto" ? std::stoi(split) : kernels::numElementsOf(s.batchShape) * kernels::ceilDiv(s.Sq, s.rowsPerBlock) < 132 ? 2 : 1;
    // Q, K, V: the tensors, or the memory their strided views read; then the mask and Y.
    std::vector<Value> params;
    for (int k = 0; k < 3; ++k) {
      auto view = operands[k].getDefiningOp<StridedViewOp>();
      params.push_back(view ? view.getX() : operands[k]);
    }
    if (s.hasMask) params.push_back(operands[3]);
    params.push_back(out);
    if (desc_.sm < 80) throw std::invalid_argument("fused attention needs sm_80 or newer; the target is " + opts_.arch);
    addLaunch(op, emitAttention(s), params);
    return;
  }
  if (type == "StridedView")  // (made for attention, product operands and elementwise inputs only)
    throw std::invalid_argument("a strided view read by another op than attention, a matrix product or an elementwise kernel has no kernel");
  if (isFusableElementwise(op)) {
    lowerElementwise({op}, out);
    return;
  }
  if (type == "MaxPool" || type == "AveragePool" || type == "MaxPoolNhwc" || type == "AveragePoolNhwc") {
    Shape x = shapeOf(operands[0]);
    if (x.size() != 4) {  // 1-D, 3-D, ...: the direct N-D kernel (NCHW-style layout, no Indices)
      if (op->getNumResults() > 1 || (type.size() > 4 && type.compare(type.size() - 4, 4, "Nhwc") == 0))
        throw std::invalid_argument("only 2-D pooling has kernels with the Indices output or NHWC");
      PoolNdSpec s;
      s.max = type == "MaxPool";
      s.N = x[0], s.C = x[1];
      s.in.assign(x.begin() + 2, x.end());
      s.out.assign(outShape.begin() + 2, outShape.end());
      s.kernel = attrs.getInts("kernel_shape");
      size_t n = s.in.size();
      s.strides = intsOr(attrs, "strides", Shape(n, 1)), s.dilations = intsOr(attrs, "dilations", Shape(n, 1));
      std::tie(s.padBegin, s.padEnd) = windowPads(attrs, s.in, s.out, s.kernel, s.strides, s.dilations);
      s.countIncludePad = attrs.getInt("count_include_pad", 0);
      s.type = elemTypeOf(out);
      addLaunch(op, emitPoolNd(s), {operands[0], out});
      return;
    }
    auto ks = attrs.getInts("kernel_shape");
    auto st = intsOr(attrs, "strides", {1, 1}), dl = intsOr(attrs, "dilations", {1, 1});
    Pool2dSpec s;
    s.kind = type.rfind("MaxPool", 0) == 0 ? PoolKind::Max : PoolKind::Average;
    s.nhwc = type.size() > 4 && type.compare(type.size() - 4, 4, "Nhwc") == 0;
    s.type = elemTypeOf(out);
    if (s.nhwc) s.N = x[0], s.H = x[1], s.W = x[2], s.C = x[3], s.OH = outShape[1], s.OW = outShape[2];
    else s.N = x[0], s.C = x[1], s.H = x[2], s.W = x[3], s.OH = outShape[2], s.OW = outShape[3];
    s.KH = ks[0], s.KW = ks[1];
    s.strideH = st[0], s.strideW = st[1], s.dilationH = dl[0], s.dilationW = dl[1];
    setPads2d(attrs, s);
    s.countIncludePad = attrs.getInt("count_include_pad", 0);
    s.indicesOutput = op->getNumResults() > 1;
    s.columnMajorIndices = attrs.getInt("storage_order", 0) == 1;
    std::vector<Value> params = {operands[0], out};
    if (s.indicesOutput) params.push_back(op->getResult(1));
    addLaunch(op, emitPool2d(s), params);
    return;
  }
  if (type == "GlobalAveragePool" || type == "GlobalMaxPool") {
    Shape x = shapeOf(operands[0]);
    addLaunch(op, emitGlobalPool(type == "GlobalMaxPool", x[0] * x[1], product(x, 2, x.size()), elemTypeOf(out)),
              {operands[0], out});
    return;
  }
  RowOp rowOp;
  if (rowOpFromName(type, &rowOp)) {
    Shape x = shapeOf(operands[0]);
    int64_t r = static_cast<int64_t>(x.size());
    RowReductionSpec s;
    s.op = rowOp;
    s.type = elemTypeOf(operands[0]);
    s.outType = elemTypeOf(out);
    if (op->getNumResults() > 1) s.statsType = elemTypeOf(op->getResult(1));
    if (type == "LayerNormalization" && (elemTypeOf(operands[1]) != s.type ||
                                         (!isa<NoneType>(operands[2].getType()) && elemTypeOf(operands[2]) != s.type)))
      throw std::invalid_argument("LayerNormalization scale/bias must have X's type");
    if (type == "Softmax" || type == "LogSoftmax") {
      int64_t axis = ops::normalizeAxis(attrs.getInt("axis", -1), r);
      if (attrs.getInt("coerce_2d", 0)) {
        s.outer = product(x, 0, axis), s.cols = product(x, axis, r), s.inner = 1;
      } else {
        s.outer = product(x, 0, axis), s.cols = x[axis], s.inner = product(x, axis + 1, r);
      }
      addLaunch(op, emitRowReduction(s), {operands[0], out});
      return;
    }
    if (type == "LayerNormalization") {
      int64_t axis = ops::normalizeAxis(attrs.getInt("axis", -1), r);
      s.outer = product(x, 0, axis), s.cols = product(x, axis, r);
      s.epsilon = attrs.getFloat("epsilon", 1e-5);
      s.hasBias = !isa<NoneType>(operands[2].getType());
      s.statsOutputs = op->getNumResults() > 1;
      if (op->getNumResults() == 2) throw std::invalid_argument("LayerNormalization with only the Mean output");
      if (shapeOf(operands[1]) != Shape(x.begin() + axis, x.end()) ||
          (s.hasBias && shapeOf(operands[2]) != Shape(x.begin() + axis, x.end())))
        throw std::invalid_argument("LayerNormalization scale/bias must have the normalized shape");
      std::vector<Value> params = {operands[0], operands[1]};
      if (s.hasBias) params.push_back(operands[2]);
      params.push_back(out);
      if (s.statsOutputs) params.push_back(op->getResult(1)), params.push_back(op->getResult(2));
      addLaunch(op, emitRowReduction(s), params);
      return;
    }
    // Reduce*: the reduced axes must be contiguous (one [outer, cols, inner] view).
    std::vector<int64_t> axes = attrs.getInts("axes", {});
    if (axes.empty()) {
      if (attrs.getInt("noop_with_empty_axes", 0)) {  // the identity
        addLaunch(op, emitCopy(expandCopy(x, x, s.outType)), {operands[0], out});
        return;
      }
      axes.resize(r);
      std::iota(axes.begin(), axes.end(), 0);
    }
    for (auto &a : axes) a = ops::normalizeAxis(a, r);
    std::sort(axes.begin(), axes.end());
    for (size_t k = 1; k < axes.size(); ++k)
      if (axes[k] != axes[k - 1] + 1) {
        addLaunch(op, emitReduceAxes(rowOp, x, axes, s.type, s.outType), {operands[0], out});
        return;
      }
    s.outer = product(x, 0, axes.front()), s.cols = product(x, axes.front(), axes.back() + 1);
    s.inner = product(x, axes.back() + 1, r);
    addLaunch(op, emitRowReduction(s), {operands[0], out});
    return;
  }
  if (type == "BatchNormalization") {
    // Inference BN with constant statistics is y = x * a + b per channel; a and b are computed
    // here, once, in double.
    std::vector<ops::Tensor> p;
    for (int k = 1; k <= 4; ++k) {
      auto c = constantValue(operands[k], 1 << 24);
      if (!c) throw std::invalid_argument("BatchNormalization parameters must be constants");
      p.push_back(*c);
    }
    double eps = attrs.getFloat("epsilon", 1e-5);
    int64_t C = p[0].size();
    std::vector<float> a(C), b(C);
    for (int64_t c = 0; c < C; ++c) {
      double s = p[0].get(c) / std::sqrt(p[3].get(c) + eps);
      a[c] = static_cast<float>(s);
      b[c] = static_cast<float>(p[1].get(c) - p[2].get(c) * s);
    }
    Shape x = shapeOf(operands[0]);
    Shape chan(x.size() - 1, 1);
    chan[0] = C;
    Value av = addWeights(a, op), bv = addWeights(b, op);
    ElementwiseSpec spec;
    spec.expr = "a * b + c";
    spec.inputShapes = {x, chan, chan};
    spec.inputTypes = {elemTypeOf(operands[0]), ElemType::F32, ElemType::F32};
    spec.outShape = outShape;
    spec.outType = elemTypeOf(out);
    addLaunch(op, emitElementwise(spec), {operands[0], av, bv, out});
    return;
  }
  ElemType et = elemTypeOf(out);
  if (type == "Transpose") {
    Shape x = shapeOf(operands[0]);
    std::vector<int64_t> perm(x.size());
    for (size_t k = 0; k < perm.size(); ++k) perm[k] = perm.size() - 1 - k;
    perm = attrs.getInts("perm", perm);
    addLaunch(op, emitCopy(transposeCopy(x, perm, et)), {operands[0], out});
    return;
  }
  if (type == "Im2Col") {
    Shape x = shapeOf(operands[0]);
    auto k = attrs.getInts("kernel_shape"), st = intsOr(attrs, "strides", {1, 1}), dl = intsOr(attrs, "dilations", {1, 1}),
         pads = intsOr(attrs, "pads", {0, 0, 0, 0});
    Im2ColSpec s;
    s.type = et;
    s.N = x[0], s.H = x[1], s.W = x[2], s.C = x[3], s.KH = k[0], s.KW = k[1], s.OH = outShape[1], s.OW = outShape[2];
    s.strideH = st[0], s.strideW = st[1], s.dilationH = dl[0], s.dilationW = dl[1], s.padTop = pads[0], s.padLeft = pads[1];
    addLaunch(op, emitIm2Col(s), {operands[0], out});
    return;
  }
  if (type == "Concat") {
    int64_t axis = ops::normalizeAxis(attrs.getInt("axis"), outShape.size());
    int64_t offset = 0;
    for (Value v : operands) {
      Shape s = shapeOf(v);
      if (s[axis] == 0) continue;
      addLaunch(op, emitCopy(concatCopy(s, outShape, axis, offset, et)), {v, out});
      offset += s[axis];
    }
    return;
  }
  if (type == "Slice" || type == "Split") {
    Shape x = shapeOf(operands[0]);
    int64_t r = x.size();
    if (type == "Split") {
      int64_t axis = ops::normalizeAxis(attrs.getInt("axis", 0), r), offset = 0;
      for (Value res : op->getResults()) {
        Shape os = shapeOf(res);
        Shape starts(r, 0), steps(r, 1);
        starts[axis] = offset;
        addLaunch(op, emitCopy(sliceCopy(x, starts, steps, os, et)), {operands[0], res});
        offset += os[axis];
      }
      return;
    }
    auto get = [&](int k) -> std::optional<std::vector<int64_t>> {
      if (isa<NoneType>(operands[k].getType())) return std::nullopt;
      auto c = constantValue(operands[k]);
      if (!c) throw std::invalid_argument("Slice parameters must be constants");
      return c->toInts();
    };
    auto starts = *get(1);
    auto axes = get(3);
    auto stepsIn = get(4);
    Shape st(r, 0), steps(r, 1);
    for (size_t k = 0; k < starts.size(); ++k) {
      int64_t a = axes ? ops::normalizeAxis((*axes)[k], r) : static_cast<int64_t>(k);
      int64_t step = stepsIn ? (*stepsIn)[k] : 1, d = x[a], s = starts[k];
      if (s < 0) s += d;
      s = step > 0 ? std::clamp<int64_t>(s, 0, d) : std::clamp<int64_t>(s, 0, d - 1);
      st[a] = s;
      steps[a] = step;
    }
    addLaunch(op, emitCopy(sliceCopy(x, st, steps, outShape, et)), {operands[0], out});
    return;
  }
  if (type == "Pad") {
    auto pads = constantValue(operands[1]);
    if (!pads) throw std::invalid_argument("Pad pads must be constants");
    Shape x = shapeOf(operands[0]);
    size_t r = x.size();
    std::vector<int64_t> axes;
    if (!isa<NoneType>(operands[3].getType())) {
      auto a = constantValue(operands[3]);
      if (!a) throw std::invalid_argument("Pad axes must be constants");
      for (int64_t v : a->toInts()) axes.push_back(ops::normalizeAxis(v, r));
    } else {
      for (size_t k = 0; k < r; ++k) axes.push_back(static_cast<int64_t>(k));
    }
    std::vector<int64_t> p = pads->toInts();
    PadSpec s;
    s.inShape = x;
    s.before.assign(r, 0);
    s.after.assign(r, 0);
    for (size_t k = 0; k < axes.size(); ++k) s.before[axes[k]] = p.at(k), s.after[axes[k]] = p.at(k + axes.size());
    s.mode = attrs.getString("mode", "constant");
    if (!isa<NoneType>(operands[2].getType())) {
      auto v = constantValue(operands[2]);
      if (!v) throw std::invalid_argument("Pad constant_value must be a constant");
      if (v->size() == 1) s.value = v->get(0);
    }
    s.type = et;
    addLaunch(op, emitPad(s), {operands[0], out});
    return;
  }
  if (type == "Expand") {
    addLaunch(op, emitCopy(expandCopy(shapeOf(operands[0]), outShape, et)), {operands[0], out});
    return;
  }
  if (type == "Tile") {
    auto reps = constantValue(operands[1]);
    if (!reps) throw std::invalid_argument("Tile repeats must be constants");
    addLaunch(op, emitCopy(tileCopy(shapeOf(operands[0]), reps->toInts(), et)), {operands[0], out});
    return;
  }
  if (type == "Gather") {
    Shape data = shapeOf(operands[0]);
    int axis = static_cast<int>(ops::normalizeAxis(attrs.getInt("axis", 0), data.size()));
    addLaunch(op, emitCopy(gatherCopy(data, axis, shapeOf(operands[1]), elemTypeOf(operands[1]), et)),
              {operands[0], operands[1], out});
    return;
  }
  if (lowerIndexOp(op, type, attrs)) return;
  throw std::invalid_argument("no GPU kernel for this op yet");
}

bool Lowering::lowerIndexOp(Operation *op, const std::string &type, const ops::Attrs &attrs) {
  if (op->getNumOperands() == 0 || !isa<RankedTensorType>(op->getOperand(0).getType())) return false;
  Value out = op->getResult(0);
  Shape outShape = shapeOf(out);
  auto operands = op->getOperands();
  ElemType et = elemTypeOf(out);
  Shape x = shapeOf(operands[0]);
  int64_t r = static_cast<int64_t>(x.size());
  auto present = [&](unsigned k) { return k < operands.size() && !isa<NoneType>(operands[k].getType()); };
  // An input the kernel needs at build time (Trilu's k, TopK's K, CumSum's axis, OneHot's depth).
  auto constantInt = [&](unsigned k, const char *what) {
    auto c = constantValue(operands[k]);
    if (!c || c->size() != 1) throw std::invalid_argument(type + ": " + what + " must be a one-element constant");
    return c->getInt(0);
  };
  auto rowView = [&](int64_t axis) {
    return RowView{product(x, 0, size_t(axis)), x[size_t(axis)], product(x, size_t(axis) + 1, x.size())};
  };
  if (type == "Trilu") {
    int64_t k = present(1) ? constantInt(1, "k") : 0;
    addLaunch(op, emitTrilu(x, k, attrs.getInt("upper", 1) != 0, et), {operands[0], out});
  } else if (type == "GatherElements") {
    int axis = int(ops::normalizeAxis(attrs.getInt("axis", 0), r));
    addLaunch(op, emitGatherElements(x, shapeOf(operands[1]), axis, elemTypeOf(operands[1]), et),
              {operands[0], operands[1], out});
  } else if (type == "EyeLike") {
    addLaunch(op, emitEyeLike(outShape, attrs.getInt("k", 0), et), {out});
  } else if (type == "OneHot") {
    int axis = int(ops::normalizeAxis(attrs.getInt("axis", -1), r + 1));
    addLaunch(op, emitOneHot(x, constantInt(1, "depth"), axis, elemTypeOf(operands[0]), et), {operands[0], operands[2], out});
  } else if (type == "Dropout" && op->getNumResults() == 2) {
    // Inference (training_mode absent or false), or a ratio of 0: the identity, mask all true.
    bool training = present(2) && constantInt(2, "training_mode") != 0;
    auto ratio = present(1) ? constantValue(operands[1]) : std::nullopt;
    if (training && (!ratio || ratio->get(0) != 0.0))
      throw std::invalid_argument("Dropout in training mode with a non-zero ratio is random; no kernel");
    addLaunch(op, emitDropoutWithMask(product(x, 0, x.size()), et), {operands[0], out, op->getResult(1)});
  } else if (type == "ArgMax" || type == "ArgMin") {
    addLaunch(op, emitArgExtreme(rowView(ops::normalizeAxis(attrs.getInt("axis", 0), r)), type == "ArgMax",
                                 attrs.getInt("select_last_index", 0) != 0, elemTypeOf(operands[0])),
              {operands[0], out});
  } else if (type == "Hardmax") {
    int64_t axis = ops::normalizeAxis(attrs.getInt("axis", -1), r);
    RowView v = rowView(axis);
    if (attrs.getInt("coerce_2d", 0)) v = {product(x, 0, size_t(axis)), product(x, size_t(axis), x.size()), 1};
    addLaunch(op, emitHardmax(v, et), {operands[0], out});
  } else if (type == "TopK") {
    RowView v = rowView(ops::normalizeAxis(attrs.getInt("axis", -1), r));
    addLaunch(op, emitTopK(v, constantInt(1, "K"), attrs.getInt("largest", 1) != 0, et), {operands[0], out, op->getResult(1)});
  } else if (type == "CumSum") {
    RowView v = rowView(ops::normalizeAxis(constantInt(1, "axis"), r));
    addLaunch(op, emitCumSum(v, attrs.getInt("exclusive", 0) != 0, attrs.getInt("reverse", 0) != 0, et), {operands[0], out});
  } else if (type == "ConvTranspose") {
    Shape w = shapeOf(operands[1]);
    ConvTransposeSpec s;
    s.N = x[0], s.C = x[1], s.group = attrs.getInt("group", 1), s.M = w[1] * s.group;
    s.in.assign(x.begin() + 2, x.end());
    s.out.assign(outShape.begin() + 2, outShape.end());
    s.kernel.assign(w.begin() + 2, w.end());
    size_t n = s.in.size();
    s.strides = intsOr(attrs, "strides", Shape(n, 1)), s.dilations = intsOr(attrs, "dilations", Shape(n, 1));
    s.padBegin = ops::convTransposePadBegin(tensorTypeOf(operands[0].getType()), tensorTypeOf(operands[1].getType()), attrs);
    s.hasBias = present(2);
    s.type = et;
    std::vector<Value> params = {operands[0], operands[1]};
    if (s.hasBias) params.push_back(operands[2]);
    params.push_back(out);
    addLaunch(op, emitConvTranspose(s), params);
  } else if (type == "Resize" || type == "Upsample") {
    ResizeTables t = resizeTables(op, type, et);
    addLaunch(op, emitResize(t.spec), {operands[0], t.index, t.weight, out});
  } else if (type == "DepthToSpace" || type == "SpaceToDepth") {
    // Both are a transpose of a 6-D view of NCHW.
    int64_t b = attrs.getInt("blocksize"), N = x[0], C = x[1], H = x[2], W = x[3];
    Shape view, perm;
    if (type == "SpaceToDepth") view = {N, C, H / b, b, W / b, b}, perm = {0, 3, 5, 1, 2, 4};
    else if (attrs.getString("mode", "DCR") == "CRD") view = {N, C / (b * b), b, b, H, W}, perm = {0, 1, 4, 2, 5, 3};
    else view = {N, b, b, C / (b * b), H, W}, perm = {0, 3, 4, 1, 5, 2};
    addLaunch(op, emitCopy(transposeCopy(view, perm, et)), {operands[0], out});
  } else {
    return false;
  }
  return true;
}

BuildResult Lowering::run() {
  BuildResult result;
  Block &body = f_.getBody().front();
  Operation *terminator = body.getTerminator();
  desc_.kilnVersion = KILN_VERSION;
  desc_.arch = opts_.arch;
  desc_.sm = archNumber(opts_.arch);
  desc_.route = opts_.route.canonical();
  desc_.cudaGraph = opts_.route.get(kCudaGraph) == "on";

  // I/O table: arguments, then results.
  for (unsigned k = 0; k < body.getNumArguments(); ++k) {
    auto name = f_.getArgAttrOfType<StringAttr>(k, "kiln.name");
    ops::TensorType t = tensorTypeOf(body.getArgument(k).getType());
    desc_.io.push_back({name ? name.str() : "input" + std::to_string(k), static_cast<int32_t>(t.dtype), t.shape, true});
    placed_[body.getArgument(k)] = {rt::BufferRef::Space::Io, 0, static_cast<int32_t>(k)};
  }
  std::vector<Value> results(terminator->getOperands().begin(), terminator->getOperands().end());
  llvm::DenseMap<Value, int32_t> writesOutput;  // compute results written straight into an output
  for (unsigned k = 0; k < results.size(); ++k) {
    auto name = f_.getResultAttrOfType<StringAttr>(k, "kiln.name");
    ops::TensorType t = tensorTypeOf(results[k].getType());
    int32_t io = static_cast<int32_t>(desc_.io.size());
    desc_.io.push_back({name ? name.str() : "output" + std::to_string(k), static_cast<int32_t>(t.dtype), t.shape, false});
    Value v = results[k];
    Operation *d = v.getDefiningOp();
    if (d && !isAlias(d) && !isa<ConstantOp>(d) && !writesOutput.count(v)) writesOutput[v] = io;
  }

  // Lower every op to launches (collecting every unsupported op before failing).
  std::vector<Operation *> opsInOrder;
  for (Operation &op : body.without_terminator()) opsInOrder.push_back(&op);
  for (Operation *op : opsInOrder) {
    if (isa<ConstantOp, NoneOp>(op) || isAlias(op)) continue;
    if (auto u = dyn_cast<UnsupportedOp>(op)) {
      errors_.push_back(describeOp(op) + " is not supported: " + u.getReason().str());
      continue;
    }
    try {
      if (desc_.sm < 89)  // fp8 storage and products need sm_89's e4m3 instructions
        for (ValueRange vs : {ValueRange(op->getOperands()), ValueRange(op->getResults())})
          for (Value v : vs)
            if (tensorTypeOf(v.getType()).dtype == ops::DType::F8E4M3)
              throw std::invalid_argument("fp8 (float8e4m3fn) needs sm_89 or newer; the target is " + opts_.arch);
      if (auto f = dyn_cast<FusedOp>(op)) lowerFused(f);
      else lowerOp(op);
    } catch (const std::exception &e) {
      Operation *at = op;
      if (auto f = dyn_cast<FusedOp>(op)) at = &f.getBody().front().front();
      errors_.push_back(describeOp(at) + (isa<FusedOp>(op) ? " (kernel region)" : "") + ": " + e.what());
    }
  }
  if (!errors_.empty()) {
    result.error = "cannot build:\n";
    for (auto &e : errors_) result.error += "  " + e + "\n";
    return result;
  }

  // Weights: every constant that a launch reads, 64-byte aligned (bytes as stored in the IR), in
  // first-use order.
  for (auto &l : launches_) for (Value param : l.params) {
    if (auto c = root(param).getDefiningOp<ConstantOp>()) placeWeights(c);
  }

  // Arena: intermediates, lifetimes over launch order (an alias extends its root's lifetime).
  llvm::DenseMap<Value, int64_t> firstUse, lastUse;
  for (size_t i = 0; i < launches_.size(); ++i)
    for (Value v : launches_[i].params) {
      Value r = root(v);
      if (!firstUse.count(r)) firstUse[r] = i;
      lastUse[r] = i;
    }
  int64_t end = static_cast<int64_t>(launches_.size());
  for (Value v : results) lastUse[root(v)] = end;  // copied into outputs after the last launch
  std::vector<Value> arenaValues;
  std::vector<BufferRequest> requests;
  for (auto &[v, first] : firstUse) {
    (void)first;
    if (placed_.count(v)) continue;
    if (writesOutput.count(v)) {
      placed_[v] = {rt::BufferRef::Space::Io, 0, writesOutput.lookup(v)};
      continue;
    }
    arenaValues.push_back(v);
  }
  // Deterministic order: by first use, then by result position.
  std::sort(arenaValues.begin(), arenaValues.end(), [&](Value a, Value b) {
    if (firstUse[a] != firstUse[b]) return firstUse[a] < firstUse[b];
    return cast<OpResult>(a).getResultNumber() < cast<OpResult>(b).getResultNumber();
  });
  for (Value v : arenaValues) requests.push_back({bytesOf(v), firstUse[v], lastUse[v]});
  MemoryPlan plan = planMemory(requests);
  for (size_t k = 0; k < arenaValues.size(); ++k)
    placed_[arenaValues[k]] = {rt::BufferRef::Space::Arena, static_cast<uint64_t>(plan.offsets[k]), -1};
  desc_.arenaBytes = plan.arenaBytes;

  // Compile the unique kernels.
  std::vector<KernelLaunch> kernels;
  std::vector<size_t> kernelIndex(launches_.size(), 0);  // launch → its index among kernel launches
  for (size_t i = 0; i < launches_.size(); ++i)
    if (!launches_[i].library) kernelIndex[i] = kernels.size(), kernels.push_back(launches_[i].kernel);
  CompileCache cache(opts_.cache);
  CompilePoolOptions po;
  po.arch = opts_.arch;
  po.jobs = opts_.jobs;
  po.progress = opts_.progress;
  CompilePool pool(cache, po);
  CompilePoolResult compiled = pool.compile(kernels);
  if (!compiled.ok()) {
    result.error = "kernel compilation failed:\n";
    for (auto &e : compiled.errors) result.error += "  " + e + "\n";
    return result;
  }
  for (auto &k : compiled.kernels) {
    rt::ModuleDesc m;
    m.cubin.assign(k.output.cubin.begin(), k.output.cubin.end());
    m.ptx = k.output.ptx;
    while (!m.ptx.empty() && m.ptx.back() == '\0') m.ptx.pop_back();
    std::string node;
    for (size_t i = 0; i < launches_.size(); ++i)
      if (!launches_[i].library && kernelIndex[i] == k.firstLaunch) node = launches_[i].node;
    desc_.kernels.push_back({static_cast<int32_t>(desc_.modules.size()), k.entry, node});
    desc_.modules.push_back(std::move(m));
  }
  const std::string gemmSearch = opts_.route.get(kGemmSearch);
  for (size_t i = 0; i < launches_.size(); ++i) {
    const PendingLaunch &p = launches_[i];
    rt::Launch l;
    l.node = p.node;
    if (p.library) {
      l.kind = rt::Launch::Kind::Gemm;
      l.gemm = p.gemm;
      size_t k = 0;
      auto next = [&] {  // (an operand read through a view starts inside its buffer)
        size_t i = k++;
        return bufferOf(p.params[i], p.paramOffsets[i]);
      };
      l.gemm.a = next();
      l.gemm.b = next();
      if (p.gemm.beta != 0.f) l.gemm.c = next();
      if (p.gemm.epilogue & rt::GemmCall::Bias) l.gemm.bias = next();
      l.gemm.d = next();
      if (p.gemm.fp8()) l.gemm.scaleA = next(), l.gemm.scaleB = next();
      desc_.gemmSearch = desc_.gemmSearch || gemmSearch == "on" || (gemmSearch == "auto" && l.gemm.abType == 1);
      desc_.launches.push_back(std::move(l));
      continue;
    }
    l.kind = rt::Launch::Kind::Kernel;
    l.kernel = static_cast<int32_t>(compiled.kernelOfLaunch[kernelIndex[i]]);
    for (int d = 0; d < 3; ++d) l.grid[d] = p.kernel.grid[d], l.block[d] = p.kernel.block[d];
    l.sharedBytes = p.kernel.sharedBytes;
    l.node = p.node;
    for (size_t k = 0; k < p.params.size(); ++k) l.args.push_back(rt::LaunchArg::buf(bufferOf(p.params[k], p.paramOffsets[k])));
    desc_.launches.push_back(std::move(l));
  }
  for (Value v : results)
    if (auto c = root(v).getDefiningOp<ConstantOp>()) placeWeights(c);  // a constant output
  // Outputs not written in place (aliases of inputs, weights or intermediates; repeated results).
  for (unsigned k = 0; k < results.size(); ++k) {
    int32_t io = static_cast<int32_t>(body.getNumArguments() + k);
    rt::BufferRef src = bufferOf(results[k]);
    if ((src.space == rt::BufferRef::Space::Io && src.io == io) || bytesOf(results[k]) == 0) continue;
    rt::Launch l;
    l.kind = rt::Launch::Kind::Copy;
    l.src = src;
    l.dst = {rt::BufferRef::Space::Io, 0, io};
    l.bytes = bytesOf(results[k]);
    l.node = "output " + desc_.io[io].name;
    desc_.launches.push_back(std::move(l));
  }
  desc_.environment["nvrtc"] = nvrtcVersionString();
  if (!opts_.quant.calib.empty()) {  // what the int8/fp8 scales came from
    std::string text, error;
    if (!support::readFile(opts_.quant.calib, text, error, "calibration file", quant::kMaxCalibrationBytes)) {
      result.error = error;
      return result;
    }
    desc_.environment["calibration"] = rt::fnv1a64Hex(text.data(), text.size());
    if (!opts_.quant.keepFloat.empty()) desc_.environment["keep_float"] = opts_.quant.keepFloat;
  }
  if (auto err = rt::checkEngineDesc(desc_); !err.empty()) {
    result.error = "internal error: the engine does not validate: " + err;
    return result;
  }
  result.engine = rt::writeEngine(desc_);
  result.stats = {launches_.size(), compiled.kernels.size(), compiled.cacheHits, compiled.compiled,
                  desc_.arenaBytes, desc_.weights.size(), compiled.seconds};
  return result;
}

}  // namespace

BuildResult buildEngine(func::FuncOp f, const BuildOptions &options) {
  Lowering l(f, options);
  try {
    return l.run();
  } catch (const std::exception &e) {
    BuildResult r;
    r.error = std::string("internal error while building: ") + e.what();
    return r;
  }
}

}  // namespace kiln::codegen

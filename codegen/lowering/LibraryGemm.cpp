// The gemm.tactic knob's other tactics: products on cuBLASLt (the product and the longest prefix
// of its epilogue chain that cuBLASLt expresses, as one GemmCall the runtime issues), and on
// kiln's Hopper kernel (TMA, warp-specialised wgmma; codegen/kernels/Wgmma.h).
#include "codegen/lowering/Lowering.h"

#include "codegen/kernels/KernelUtil.h"
#include "codegen/kernels/Wgmma.h"
#include "passes/StridedViews.h"

using namespace mlir;

namespace kiln::codegen {

KILN_KNOB(kGemmTactic, {"gemm.tactic",
                        {"auto", "kiln", "cublaslt", "kiln_wgmma"},
                        "auto",
                        "Who computes matrix products and 1x1 NHWC convolutions: kiln's kernels or cuBLASLt "
                        "(bias/ReLU/residual/scale epilogues only); auto: cuBLASLt for every fp32/fp16/bf16/fp8 "
                        "product it can take, else kiln, and kiln for a half product whose epilogue cuBLASLt "
                        "cannot take when the extra elementwise pass would cost more than kiln's slower product "
                        "(memory-bound products: 1x1 expansions with ReLU6 or HardSwish); kiln_wgmma: kiln's "
                        "Hopper kernel (TMA loads, warp-specialised wgmma, the whole epilogue; sm_90, compiled "
                        "for sm_90a) for fp16/bf16/fp8 MatMuls of contiguous rows by constant weights with a "
                        "quarter wave of tiles or more, the others as auto",
                        knobs::Tier::Fast,
                        "codegen/lowering/LibraryGemm.cpp",
                        "tactic",
                        {"MatMul", "Gemm", "Conv"}});
KILN_KNOB(kGemmTf32, {"gemm.tf32",
                      {"off", "on"},
                      "off",
                      "fp32 products that cuBLASLt computes (gemm.tactic) round A and B to TF32 (10-bit mantissa) "
                      "on tensor cores, accumulating in fp32: several times faster, about fp16's accuracy "
                      "(TensorRT's TF32 flag, PyTorch's allow_tf32)",
                      knobs::Tier::Fast,
                      "codegen/lowering/LibraryGemm.cpp",
                      "tf32",
                      {"MatMul", "Gemm", "Conv"}});

// cuBLASLt takes only a prefix of the chain (scale, bias, residual, ReLU); the rest (ReLU6, SiLU,
// HardSwish, GELU...) would run as an elementwise kernel after it: one more pass over D and one
// more launch. kiln's kernel stores the whole chain with the product, but runs the product at
// less than half cuBLASLt's rate. Estimated from the target's datasheet numbers with the rates
// measured on the H100 (bench/RESULTS.md, 2026-12-07: cuBLASLt 300-380 TFLOP/s at BERT's sizes,
// 0.35 of the datasheet; kiln's mma.sync kernel 140-190, 0.16, less the part of its 128x128 tiles
// that M and N leave empty; a memory pass at 0.9 of the bandwidth plus 3 us), kiln's kernel is
// chosen when it takes under 0.7 of cuBLASLt's time with the extra pass, and its tiles fill a
// wave. So memory-bound products with such epilogues go to kiln — the 1x1 expansions of
// MobileNetV2 (ReLU6), measured 1.1-1.6x faster so — while narrow ones
// (a stem of 32 channels: 3/4 of each tile empty, measured slower), ResNet-50's downsampling
// blocks and BERT's, ViT's and GPT-2's FFN products with GELU stay on cuBLASLt.
// Epilogue ops made of comparisons and arithmetic (ReLU6, HardSwish, HardSigmoid, LeakyReLU). The
// move to kiln's kernel is limited to those: with EfficientNet-B0's SiLU (Sigmoid, Mul) three
// expansions took 0.168 ms on kiln's kernel against 0.064 ms on cuBLASLt with their passes (b8,
// H100, 2026-12-07, per-launch profiles), a cause not yet found.
static bool piecewiseLinear(ArrayRef<Operation *> ops) {
  return llvm::all_of(ops, [](Operation *op) {
    return isa<ClipOp, MinOp, MaxOp, ReluOp, LeakyReluOp, HardSigmoidOp, HardSwishOp, AddOp, SubOp, MulOp, DivOp, NegOp,
               CastOp>(op);
  });
}

static bool fusedKernelIsCheaper(const MatMulSpec &s, int64_t batches, const target::GpuTarget &t) {
  int64_t rowTiles = kernels::ceilDiv(s.M, 128), colTiles = kernels::ceilDiv(s.N, 128);
  if (rowTiles * colTiles * batches < t.smCount) return false;
  double used = double(s.M) / double(rowTiles * 128) * double(s.N) / double(colTiles * 128);
  double flops = 2.0 * double(s.M) * double(s.N) * double(s.K) * double(batches);
  double library = flops / (0.35 * t.halfTflops * 1e12), kiln = flops / (0.16 * used * t.halfTflops * 1e12);
  double pass = 2.0 * 2.0 * double(s.M) * double(s.N) * double(batches) / (0.9 * t.memoryGBps * 1e9) + 3e-6;
  return kiln < 0.7 * (library + pass);
}

bool Lowering::tryWgmmaGemm(Operation *anchor, const MatMulSpec &spec, std::vector<Value> params,
                            std::array<int64_t, 2> offsets, Value fp8Scale) {
  if (opts_.route.get(kGemmTactic, nodeName(anchor)) != "kiln_wgmma") return false;
  if (std::string why = opts_.target.missing(target::Feature::Wgmma); !why.empty())
    throw std::invalid_argument("gemm.tactic=kiln_wgmma: " + why);
  // (operand types, K's row bytes and shared memory: wgmmaUnsupported below)
  if ((spec.int8 && !spec.fp8) || spec.conv || offsets[0] % 16 || offsets[1] % 16) return false;
  // B: constant weights as [N, K] (repacked so by lowerProduct), shared by every batch.
  if (spec.b.rowStride != 1 || spec.b.colStride != spec.K ||
      llvm::any_of(spec.b.batchStrides, [](int64_t s) { return s != 0; }) || !params[1].getDefiningOp<ConstantOp>())
    return false;
  // A: contiguous rows, its batches one after another: one [batch · M, K] matrix.
  if (spec.a.colStride != 1 || (spec.a.rowStride != spec.K && spec.M > 1)) return false;
  int64_t step = spec.M * spec.K, rows = spec.M;
  for (size_t d = spec.batchShape.size(); d-- > 0;) {
    if (spec.batchShape[d] != 1 && spec.a.batchStrides[d] != step) return false;
    step *= spec.batchShape[d], rows *= spec.batchShape[d];
  }
  // Small products (under a quarter wave of 128x128 tiles) stay as auto: measured slower there
  // (bench/RESULTS.md, 2026-12-07 eighth session: 2x cuBLASLt's time at 111 rows).
  const int64_t rowTiles = kernels::ceilDiv(rows, 128);
  if (rowTiles * kernels::ceilDiv(spec.N, 128) * 4 < opts_.target.smCount) return false;
  WgmmaGemmSpec w;
  w.M = rows, w.N = spec.N, w.K = spec.K, w.type = spec.fp8 ? ElemType::F8E4M3 : spec.type, w.outType = spec.outType;
  if (spec.fp8) {  // (the per-column dequantization sa · sw[n] after B)
    w.columnScale = true;
    params.insert(params.begin() + 2, int8Scale(fp8Scale, spec.N, anchor));
  }
  w.epilogue = spec.epilogue;
  w.outShape = spec.outShape;
  w.smCount = opts_.target.smCount;
  // 128x256 tiles for long K or many tiles (they measured faster at 4096x768x3072 and 8192^3,
  // slower at 4096x2304x768 and 6304x2304x768: bench/RESULTS.md, eighth session), else 128x128;
  // gemm.tile picks either.
  const bool wide = spec.tile == "auto" || spec.tile.empty()
                        ? spec.K >= 2048 || rowTiles * kernels::ceilDiv(spec.N, 256) >= 4 * opts_.target.smCount
                        : spec.tile == "128x256";
  w.blockN = wide ? 256 : 128;
  w.stages = int(std::min<int64_t>(wide ? 4 : 6, std::max<int64_t>(2, kernels::ceilDiv(spec.K, 64))));
  if (!wgmmaUnsupported(w).empty()) return false;
  addLaunch(anchor, emitWgmmaGemm(w), params, {offsets[0], offsets[1]});
  return true;
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
  if (nonUnit == 1 && !spec.conv && spec.b.batchStrides[size_t(swapDim)] == 0 &&
      spec.batchShape[size_t(swapDim)] > spec.M && spec.a.colStride == 1 &&
      spec.a.batchStrides[size_t(swapDim)] >= spec.K) {
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
    if (!chain.empty() && isa<CastOp>(chain[0]) &&
        (elemTypeOf(chain[0]->getResult(0)) == ElemType::F16 || elemTypeOf(chain[0]->getResult(0)) == ElemType::BF16)) {
      dt = elemTypeOf(chain[0]->getResult(0));
      v = chain[0]->getResult(0);
      taken = 1;
    }
  }
  for (; taken < chain.size(); ++taken) {
    Operation *op = chain[taken];
    if (toF32) break;
    Value other;
    if (op->getNumOperands() == 2)
      other = op->getOperand(0) == v ? op->getOperand(1) : op->getOperand(1) == v ? op->getOperand(0) : Value();
    if (isa<MulOp, DivOp>(op) && other && op->getOperand(0) == v && !bias && !residual && !relu) {
      auto c = constantValue(outer(other));
      if (!c || c->size() != 1) break;
      alpha = isa<MulOp>(op) ? alpha * float(c->get(0)) : alpha / float(c->get(0));
    } else if (isa<AddOp>(op) && other && !relu) {
      Shape os = shapeOf(other);
      int64_t n = 1;
      for (int64_t d : os) n *= d;
      if (!bias && n == spec.N && !os.empty() && os.back() == spec.N && elemTypeOf(other) == dt)
        bias = other;
      else if (!residual && os == outShape && elemTypeOf(other) == dt)
        residual = other;
      else
        break;
    } else if (isa<ReluOp>(op) && !relu) {
      relu = true;
    } else if (isa<CastOp>(op) && attrsFromOp(op).getInt("to", 0) == 1 && taken + 1 == chain.size() && !bias &&
               !residual && dt != ElemType::F32) {
      toF32 = true;
    } else {
      break;
    }
    v = op->getResult(0);
  }
  // (A read along K: the estimate's rate is that of contiguous rows; a view read across them is not)
  if (tactic == "auto" && taken < chain.size() && half && aK && piecewiseLinear(chain.drop_front(taken)) &&
      fusedKernelIsCheaper(spec, nbatch, opts_.target))
    return false;
  // The product's output: the result, or the value where the chain splits (an intermediate).
  Value d = taken == chain.size() ? result : v;
  out = elemTypeOf(d);
  if (out != (toF32 ? ElemType::F32 : dt)) return false;
  if (pointers && (isIo(aMem) || isIo(bMem) || isIo(d) || (residual && isIo(residual)))) return false;
  PendingLaunch p;
  p.library = true;
  rt::GemmCall &g = p.gemm;
  g.abType = static_cast<int32_t>(fp8                    ? ops::DType::F8E4M3
                                  : in == ElemType::F16  ? ops::DType::F16
                                  : in == ElemType::BF16 ? ops::DType::BF16
                                                         : ops::DType::F32);
  g.cdType = static_cast<int32_t>(out == ElemType::F16    ? ops::DType::F16
                                  : out == ElemType::BF16 ? ops::DType::BF16
                                                          : ops::DType::F32);
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
  p.node = fusedNodes_.empty() ? launchNodes(anchor) : fusedNodes_;
  launches_.push_back(std::move(p));
  if (taken < chain.size()) lowerElementwise(chain.drop_front(taken), result);
  return true;
}
}  // namespace kiln::codegen

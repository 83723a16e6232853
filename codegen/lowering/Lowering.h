// The lowering of kiln IR (after the compile pipeline) to an engine description, shared by the
// files that lower one op family each:
//
//   EngineBuilder.cpp  sequencing: I/O table, dispatch on op classes, kernels through NVRTC, write
//   Products.cpp       MatMul / TransposedMatMul / Gemm / Conv (+ epilogues), kiln's kernels
//   LibraryGemm.cpp    the same products as cuBLASLt calls (gemm.tactic)
//   Attention.cpp      the fused attention op
//   Elementwise.cpp    elementwise ops and kernel regions (kiln.fused)
//   Reductions.cpp     softmax, LayerNorm, Reduce*, BatchNormalization
//   Pooling.cpp        Max/Average/Global pooling
//   DataMovement.cpp   Transpose, Concat, Slice, Split, Pad, Expand, Tile, Gather, Im2Col, ...
//   Indexing.cpp       coordinate ops and row scans (Trilu, TopK, CumSum, ...), ConvTranspose, Resize
//   Vision.cpp         GatherND, scatters, GridSample, RoiAlign, losses, DFT/STFT, Det, ...
//   Recurrent.cpp      LSTM / GRU / RNN recurrences (kiln.recurrence), one persistent kernel each
//   Placement.cpp      weights, the arena (liveness), the final launch list
//
// A lowering appends launches (a kernel spec's emitted source, or a cuBLASLt call) whose
// parameters are IR values; placement later gives every value its buffer. Lowerings throw
// std::invalid_argument for what they cannot build; the builder collects one message per node.
#pragma once

#include "codegen/kernels/FusedProgram.h"
#include "codegen/kernels/MatMul.h"
#include "codegen/kernels/Resize.h"
#include "codegen/lowering/EngineBuilder.h"
#include "compiler/ir/KilnDialect.h"
#include "compiler/ir/TensorConversion.h"
#include "runtime/format/EngineFormat.h"

#include "llvm/ADT/DenseMap.h"

#include <array>
#include <stdexcept>
#include <string>
#include <vector>

namespace kiln::codegen {

using Shape = std::vector<int64_t>;

Shape shapeOf(mlir::Value v);
int64_t product(const Shape &s, size_t b, size_t e);  // dims [b, e) multiplied
int64_t bytesOf(mlir::Value v);
ElemType elemTypeOf(mlir::Value v);  // throws for element types without kernels
std::vector<int64_t> intsOr(const ops::Attrs &a, const char *name, std::vector<int64_t> dflt);

// Begin and end pads of an N-D conv/pool window, from explicit pads or auto_pad and the result
// size (per spatial axis: input, output, kernel, stride, dilation).
std::pair<Shape, Shape> windowPads(const ops::Attrs &a, const Shape &in, const Shape &out, const Shape &kernel,
                                   const Shape &strides, const Shape &dilations);

// The four pads of a 2-D conv/pool spec (Conv2dSpec, Pool2dSpec) whose sizes are set.
template <class Spec> void setPads2d(const ops::Attrs &a, Spec &s) {
  auto [begin, end] =
      windowPads(a, {s.H, s.W}, {s.OH, s.OW}, {s.KH, s.KW}, {s.strideH, s.strideW}, {s.dilationH, s.dilationW});
  s.padTop = begin[0], s.padLeft = begin[1], s.padBottom = end[0], s.padRight = end[1];
}

// Ops whose result is their first operand's bytes under another shape (or, for an attention
// view, read through strides by its users): no launch.
bool isAlias(mlir::Operation *op);

// One launch: a kernel and the values bound to its pointer parameters, in order.
struct PendingLaunch {
  KernelLaunch kernel;
  // A library GEMM instead of a kernel: its buffers are params {A, B, [C], [bias], D}.
  bool library = false;
  rt::GemmCall gemm;
  std::vector<mlir::Value> params;
  std::vector<int64_t> paramOffsets;  // extra byte offset per param (Split/Concat write into a part)
  std::string node;
  uint64_t flops = 0;  // its op's FLOPs (on the op's first launch)
};

class Lowering {
 public:
  Lowering(mlir::func::FuncOp f, const BuildOptions &opts) : f_(f), opts_(opts) {}
  ~Lowering() {
    for (mlir::Operation *op : buildTimeConstants_) op->erase();
  }
  BuildResult run();

  // ---- Per-family lowerings (one launch or a few per op) ---------------------------------------
  void lowerOp(mlir::Operation *op);  // dispatch on the op's class (EngineBuilder.cpp)
  void lowerFused(FusedOp f);
  // A product (MatMul, TransposedMatMul, Conv, ConvNhwc, their quantized forms) whose result
  // flows through `chain` (elementwise ops, possibly empty) to `result`, in one launch; with a
  // `prologue` (elementwise ops computing its A operand from one tensor of A's shape and
  // one-element values, kiln-fuse-epilogue) applied to A's elements as the kernel loads them.
  void lowerProduct(mlir::Operation *anchor, llvm::ArrayRef<mlir::Operation *> chain, mlir::Value result,
                    llvm::ArrayRef<mlir::Operation *> prologue = {});
  // A convolution of 3 or more spatial axes (NCDHW...) on the direct N-D kernel, `epi` and
  // `params` as lowerProduct made them.
  void lowerConvNd(mlir::Operation *anchor, const FusedProgram &epi, const std::vector<mlir::Value> &params,
                   mlir::Value result);
  void lowerGemm(GemmOp op);
  // The product and its chain as one cuBLASLt call, when the knob allows and cuBLASLt can
  // express the chain (scale, bias, residual add, ReLU, a final cast to fp32). False: use kiln.
  // `aMem`/`bMem` are the values `spec`'s views read (B may be a repacked copy of the weights).
  // `fp8Scale`: for an fp8 product, its scale operand (sa · sw[n]). `bias`: a convolution's own
  // bias (per output channel), added before the chain.
  // (offsets: of A's and B's first element in their buffers, bytes: operands read through views)
  bool tryLibraryGemm(mlir::Operation *anchor, llvm::ArrayRef<mlir::Operation *> chain, mlir::Value result,
                      const MatMulSpec &spec, mlir::Value aMem, mlir::Value bMem, mlir::Value fp8Scale = {},
                      mlir::Value bias = {}, std::array<int64_t, 2> offsets = {0, 0});
  // The product on kiln's Hopper kernel (gemm.tactic=kiln_wgmma) with its whole epilogue, when
  // it takes the product: fp16/bf16 or fp8 (`fp8Scale`: its scale operand, sa · sw[n], applied
  // per column), A of contiguous rows (batches flattened into M), B constant
  // weights as [N, K]; a quarter wave of tiles at least. `spec` and `params` as lowerProduct made
  // them (epilogue, outShape and tile set).
  bool tryWgmmaGemm(mlir::Operation *anchor, const MatMulSpec &spec, std::vector<mlir::Value> params,
                    std::array<int64_t, 2> offsets, mlir::Value fp8Scale = {});
  void lowerAttention(AttentionOp op);
  // Elementwise ops (a DAG whose last op yields `result`) in one launch.
  void lowerElementwise(llvm::ArrayRef<mlir::Operation *> ops, mlir::Value result);
  // The family lowerings below return false for an op not of their family.
  // Softmax, LogSoftmax, LayerNormalization, Reduce*, BatchNormalization.
  bool lowerReduction(mlir::Operation *op);
  void lowerBatchNorm(BatchNormalizationOp op);
  // MaxPool, AveragePool (2-D NCHW/NHWC, N-D), GlobalAveragePool, GlobalMaxPool.
  bool lowerPooling(mlir::Operation *op);
  void lowerGlobalPool(mlir::Operation *op);
  // Layout and copies: Transpose, Im2Col, Concat, Slice, Split, Pad, Expand, Tile, Gather,
  // DepthToSpace, SpaceToDepth. False: not one of them.
  bool lowerDataMovement(mlir::Operation *op);
  // Coordinate ops and row scans (Indexing.h, RowScan.h), ConvTranspose, Resize. False: not one.
  bool lowerIndexing(mlir::Operation *op);
  // Vision, detection, loss and signal ops (Vision.cpp): GatherND, scatters, GridSample, RoiAlign,
  // MaxUnpool, InstanceNormalization, LRN, MVN, ReverseSequence, Compress, losses, DFT, STFT, Det.
  bool lowerVision(mlir::Operation *op);
  // Recurrent layers (kiln.recurrence) as one persistent kernel each. False: not one.
  bool lowerRecurrent(mlir::Operation *op);

  // ---- Shared helpers --------------------------------------------------------------------------
  // The value outside a kernel region that a region's block argument stands for.
  mlir::Value outer(mlir::Value v) {
    if (auto a = mlir::dyn_cast<mlir::BlockArgument>(v))
      if (auto f = mlir::dyn_cast<FusedOp>(a.getOwner()->getParentOp())) return f.getInputs()[a.getArgNumber()];
    return v;
  }
  // The value an alias chain reads (its own value when `v` is no alias).
  mlir::Value root(mlir::Value v) {
    while (mlir::Operation *d = v.getDefiningOp())
      if (isAlias(d))
        v = d->getOperand(0);
      else
        break;
    return v;
  }
  // Whether `v`'s memory will be an I/O tensor's: an input's (through aliases), or a result
  // that a launch writes straight into its output.
  bool isIo(mlir::Value v);
  void addLaunch(mlir::Operation *op, KernelLaunch k, std::vector<mlir::Value> params,
                 std::vector<int64_t> offsets = {});
  // emitMatMul for this target: refuses tensor-core kernels (8-bit and half operands: cp.async,
  // mma m16n8k16 / m16n8k32) the target lacks with a message instead of ptxas errors, and sizes
  // auto tiles for its SMs.
  KernelLaunch targetMatMul(const MatMulSpec &spec);
  // Appends `ops` to a program: values already named are reused, single-element constants become
  // literals, anything else becomes an input (its outer value pushed on `params`).
  // `offsets`: null in epilogues; in elementwise kernels, where inputs read through strided views
  // (kiln-elementwise-views) get their views' byte offsets (params then name the views).
  void appendOps(ProgramBuilder &pb, llvm::DenseMap<mlir::Value, std::string> &names,
                 llvm::ArrayRef<mlir::Operation *> ops, std::vector<mlir::Value> &params,
                 std::vector<int64_t> *offsets = nullptr);
  // A constant's raw bytes permuted (weights repacked for a kernel layout), as a build-time
  // constant in the IR so it is placed like any other weight.
  mlir::Value repacked(mlir::Value weights, const Shape &perm, const Shape &newShape);
  // A float32 constant computed at build time (BatchNormalization's scale and shift).
  mlir::Value addWeights(const std::vector<float> &vals, mlir::Operation *at);
  mlir::Value addConstant(const ops::Tensor &t, mlir::Operation *at);
  // za · Σ_k B[k][n] per column of a constant int8 B — a matrix read through perm_b, or
  // convolution weights [M, C, kernel...] (a column per output channel): the int8 kernel's
  // offsets for an A with zero point za (MatMul.h).
  mlir::Value zeroPointOffsets(mlir::Value b, const Shape &permB, int64_t za, mlir::Operation *at);
  // The int8 kernel's per-column scale parameter (MatMul.h): the constant `scale` operand of n
  // elements, or one element spread over n.
  mlir::Value int8Scale(mlir::Value scale, int64_t n, mlir::Operation *at);

  // ---- Placement (Placement.cpp) ----------------------------------------------------------------
  // The I/O table from the function's arguments and results; results a launch will write
  // straight into their outputs go to `writesOutput`.
  void declareIo(llvm::DenseMap<mlir::Value, int32_t> &writesOutput);
  // Weights (every constant a launch reads) and the arena (intermediates by liveness).
  void placeBuffers(const llvm::DenseMap<mlir::Value, int32_t> &writesOutput);
  rt::BufferRef bufferOf(mlir::Value v, int64_t extraOffset = 0);
  // desc_.launches from the pending launches (`kernelOf[i]`: launch i's kernel index), then a copy
  // into each output not written in place.
  void finishLaunches(const std::vector<int32_t> &kernelOf);
  // Packs a constant into the weights blob (64-byte aligned, bytes as stored in the IR), once.
  void placeWeights(ConstantOp c);

  mlir::func::FuncOp f_;
  const BuildOptions &opts_;
  rt::EngineDesc desc_;
  std::vector<uint64_t> weightStarts_;                 // placeWeights: each constant's offset
  llvm::DenseMap<mlir::Value, rt::BufferRef> placed_;  // constants, I/O and planned intermediates
  std::vector<PendingLaunch> launches_;
  std::vector<std::string> errors_;
  std::vector<mlir::Operation *> buildTimeConstants_;  // erased when done: the caller's IR is unchanged
  mlir::OpBuilder builder_{f_.getContext()};
  std::string fusedNodes_;  // while lowerFused runs: its launches' node names, "a+b+c"
};

// A launch's node text: every ONNX node `op` stands for (nodeNames), "+"-joined, eight at most.
std::string launchNodes(mlir::Operation *op);

}  // namespace kiln::codegen

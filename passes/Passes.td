#ifndef KILN_PASSES_TD
#define KILN_PASSES_TD

include "mlir/Pass/PassBase.td"

def FoldConstants : Pass<"kiln-fold-constants", "mlir::func::FuncOp"> {
  let summary = "Evaluate ops whose operands are all constants with the reference evaluator";
  let description = [{
    Replaces every kiln op whose operands are constants (or `none`) by constants computed with
    the CPU reference evaluator — the Shape→Gather→Concat→Reshape chains of exported
    transformers fold to a constant shape. `Shape` and `Size` fold from their operand's static
    type alone. Results with more than `max-elements` elements in total stay as ops unless they are
    no larger than a constant operand (up to 64M elements: a Cast and scale of int8-stored weights
    run once at build time, not in every inference), so folding never multiplies the size of
    large weights. A ConstantOfShape of a constant shape folds to a splat at any size up to 2^30
    elements. Unused constants are erased.

    Before:
      %s = kiln.shape %x : (tensor<2x3xf32>) -> tensor<2xi64>
    After:
      %s = kiln.constant dense<[2, 3]> : tensor<2xi64>
  }];
  let options = [
    Option<"maxElements", "max-elements", "int64_t", /*default=*/"1 << 22",
           "Largest result (in elements) that is folded">,
    Option<"foldDequantize", "fold-dequantize", "bool", /*default=*/"true",
           "Fold DequantizeLinear of constants (false keeps int8 weights for kiln-lower-qdq)">,
  ];
  let dependentDialects = ["::kiln::KilnDialect"];
}

// Passes that read knobs take the build route as an option (`route="precision=fp16"`); each
// reads only the knobs it owns (registered in its .cpp). They also take the target GPU
// (`arch="sm_80"`), which those that make kernel-specific rewrites ask what it can run.
class RoutePass<string arg, string root> : Pass<arg, root> {
  let options = [
    Option<"route", "route", "std::string", /*default=*/"\"\"",
           "Build route (canonical `knob=value;...` text); knobs it does not set keep their default">,
    Option<"arch", "arch", "std::string", /*default=*/"\"sm_90\"",
           "Target GPU architecture (compiler/target/GpuTarget.h): rewrites the target cannot run are refused">,
  ];
  let dependentDialects = ["::kiln::KilnDialect"];
}

def FoldBatchNorm : RoutePass<"kiln-fold-batchnorm", "mlir::func::FuncOp"> {
  let summary = "Fold inference BatchNormalization into the preceding Conv (knob fusion.batchnorm)";
  let description = [{
    `BN(Conv(x, W, b))` with constant statistics becomes `Conv(x, W', b')`, W' = W·s and
    b' = (b − mean)·s + B per output channel, s = scale / sqrt(var + ε), computed in double
    (needs the Conv result to have no other use). A BatchNormalization left over becomes
    `x·s + t` with constant per-channel `s` and `t`, which elementwise fusion can absorb.
    With `fusion.batchnorm=off` nothing changes.

    Before:
      %y = kiln.conv %x, %w, %b ...
      %z = kiln.batch_normalization %y, %scale, %bias, %mean, %var ...
    After:
      %z = kiln.conv %x, %w_folded, %b_folded ...
  }];
}

def CanonicalizeLinear : RoutePass<"kiln-canonicalize-linear", "mlir::func::FuncOp"> {
  let summary = "One form for matrix products: Gemm and transposed operands become TransposedMatMul";
  let description = [{
    `Gemm(A, B, C)` becomes `TransposedMatMul(A, B)` (transA/transB as operand permutations),
    then `· alpha` and `+ beta·C` as elementwise ops that epilogue fusion puts back into the
    product's store. With `fusion.transpose=on` (the default), a `Transpose` whose only user is
    a matrix product is folded into the product's operand permutation (attention's head
    transposes and K^T read in place), composing with permutations already there; and a
    Transpose that keeps the last axis, after a row-wise product `A·W` (2-D W) and at most an
    Add/Sub/Mul/Div chain along the last axis and a row-regrouping Reshape, moves onto A, where it
    folds into perm_a (torch's sequence-first attention output projection writes batch-first,
    and the residual Add after it joins the product's epilogue). With `fusion.scale=on`, a
    constant scalar Mul/Div of an operand moves to the result. With `fusion.epilogue=on`, an
    Add/Sub/Mul/Div after a row-regrouping Reshape of a product's result (torch.export's Linear of
    a 3-D input is a Gemm of a 2-D view, reshaped back, then GPT-2's residual Add) moves above the
    Reshape, its other operand viewed as the product's rows, so that it joins the epilogue.

    Before:
      %kt = kiln.transpose %k {perm = array<i64: 0, 1, 3, 2>}
      %s = kiln.matmul %q, %kt
    After:
      %s = kiln.transposed_matmul %q, %k {perm_b = array<i64: 0, 1, 3, 2>}
  }];
}

def HalfSafety : Pass<"kiln-half-safety", "mlir::func::FuncOp"> {
  let summary = "Mark what a half-precision route must keep in fp32 (knob precision.safety)";
  let description = [{
    On fp16 routes (and the fp16 rest of int8/fp8 routes) marks with `kiln.keep_fp32 = "why"` the
    ops fp16 would get wrong, which kiln-precision then runs in fp32 and reports: a sum of squares
    (Pow(x, 2) or Mul(x, x) reaching a reduction, ReduceSumSquare, ReduceL2) and the statistics
    computed from it up to a Sqrt, Log or Reciprocal (a decomposed LayerNorm's variance, whose sum
    of squares overflows above 65504; a power spectrum re² + im², whose squares flush below 6e-8);
    exp feeding a sum or a division (a softmax or log-sum-exp written out); `1 - p` of a Sigmoid or
    Softmax (0.99998921 rounds to 1.0). On bf16 routes only `1 - p`. With `check-inputs` (an .npz
    of the model's inputs) the CPU evaluator runs the fp32 graph on them and every op whose values
    exceed 65504, or are mostly below 6e-8, is marked too, with the magnitude it reached. A node
    whose precision the route sets (node.NAME.precision) is left to the route.

    Before (route precision=fp16):
      %d = kiln.sub %x, %mean
      %s = kiln.pow %d, %two
      %v = kiln.reduce_mean %s {axes = array<i64: -1>}
      %e = kiln.add %v, %eps
      %r = kiln.sqrt %e
    After:
      %s = kiln.pow %d, %two {kiln.keep_fp32 = "a sum of squares ..."}
      %v = kiln.reduce_mean %s {axes = array<i64: -1>, kiln.keep_fp32 = "a sum of squares ..."}
      %e = kiln.add %v, %eps {kiln.keep_fp32 = "a sum of squares ..."}
      %r = kiln.sqrt %e {kiln.keep_fp32 = "a sum of squares ..."}
  }];
  let options = [
    Option<"route", "route", "std::string", /*default=*/"\"\"", "Build route (canonical text)">,
    Option<"arch", "arch", "std::string", /*default=*/"\"sm_90\"", "Target GPU architecture">,
    Option<"checkInputs", "check-inputs", "std::string", /*default=*/"\"\"",
           "Inputs (.npz) on which the CPU evaluator checks fp16's range">,
  ];
  let dependentDialects = ["::kiln::KilnDialect"];
}

def Precision : RoutePass<"kiln-precision", "mlir::func::FuncOp"> {
  let summary = "Run the graph in fp16 or bf16 (knob precision; per node node.<name>.precision)";
  let description = [{
    With `precision=fp16|bf16`, every float32 tensor of the graph becomes half precision:
    float inputs are cast on entry, outputs cast back to their declared float32 type, float
    constants converted (finite values saturated to fp16's range, so `finfo.min` masks stay
    finite), `Cast(to=float)` retargeted. Kernels still accumulate matrix products, reductions,
    softmax and normalisations in float32. An op whose kernel has no half form, or a node
    whose `node.<name>.precision` is fp32, runs in float32 between casts (`kiln.cast`), reported
    as a remark.
  }];
}

def MarkOutputs : Pass<"kiln-mark-outputs", "mlir::func::FuncOp"> {
  let summary = "Intermediate tensors as extra outputs, for finding where an engine drifts (`kiln check --mark`)";
  let description = [{
    Appends the result of every ONNX node whose name matches `nodes` (a regular expression matched
    against the whole name; `all` takes every node) to the function's results, named by the node
    (`kiln.name`), in program order: the first float result of the last op that carries the name
    (a node imported as several ops, a Gemm's product and bias add, is marked at its own result).
    Constants, nodes with no float result and values the function already returns are skipped. Runs right after import cleanup, so every
    later pass keeps each marked value's meaning (it may fuse less around it, as Polygraphy's
    `mark all` does in TensorRT).

    Before (nodes=all):
      func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
        %r = kiln.relu %x loc("act")
        %y = kiln.neg %r loc("out")
        return %y
    After:
      func.func @f(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32> {kiln.name = "act"}) {
        ...
        return %y, %r
  }];
  let options = [
    Option<"nodes", "nodes", "std::string", /*default=*/"\"\"",
           "Node names to mark (regular expression, or `all`); empty marks nothing">,
  ];
  let dependentDialects = ["::kiln::KilnDialect"];
}

def IoDtype : Pass<"kiln-io-dtype", "mlir::func::FuncOp"> {
  let summary = "Engine inputs and outputs in fp16 or bf16 (`kiln compile --io-dtype`)";
  let description = [{
    Every float32 input and output of the function becomes `dtype` (fp16 or bf16), so callers
    that hold half-precision tensors bind them directly and the engine has no cast kernels at its
    boundary. An input's casts to `dtype` (kiln-precision's entry casts) are replaced by the input
    itself; its other users (float32 islands) read it cast up. An output that is a cast up from
    `dtype` returns the cast's operand; any other float32 output is cast down. Both are exact
    rewrites of the declared graph composed with the boundary conversion. Runs after
    kiln-precision; `dtype` empty or fp32 leaves the function as it is.

    Before (after kiln-precision, precision=fp16):
      func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
        %h = kiln.cast %x {to = 10} : (tensor<4xf32>) -> tensor<4xf16>
        %r = kiln.relu %h : (tensor<4xf16>) -> tensor<4xf16>
        %o = kiln.cast %r {to = 1} : (tensor<4xf16>) -> tensor<4xf32>
        return %o
    After (dtype=fp16):
      func.func @f(%x: tensor<4xf16>) -> tensor<4xf16> {
        %r = kiln.relu %x : (tensor<4xf16>) -> tensor<4xf16>
        return %r
  }];
  let options = [
    Option<"dtype", "dtype", "std::string", /*default=*/"\"\"",
           "I/O storage type of float32 inputs and outputs: fp16, bf16 (empty or fp32: as declared)">,
  ];
  let dependentDialects = ["::kiln::KilnDialect"];
}

def Layout : RoutePass<"kiln-layout", "mlir::func::FuncOp"> {
  let summary = "NHWC activations for convolutions (knob layout.conv; per node node.<name>.layout)";
  let description = [{
    Each 2-D Conv chosen for NHWC becomes `Transpose → ConvNhwc → Transpose`; transposes are
    then pushed through elementwise ops, pooling (MaxPoolNhwc/AveragePoolNhwc) and global
    average pooling (ReduceMean over H, W), and cancelled where they meet, so a chain of
    convolutions keeps NHWC and transposes remain only at its boundaries. `auto` picks NHWC
    for half-precision graphs (tensor-core implicit GEMM) and NCHW for float32. With
    `conv.algo` (auto: half precision and at most 64 MiB of patches) a group-1 convolution
    with a window or stride becomes `Im2Col → MatMul(patches, W as [KH·KW·C, M]) → Add(B)`
    instead of ConvNhwc, so its product can run on cuBLASLt. A 1-D Conv (N·C·L) is wrapped the
    same way with [0, 2, 1] transposes (ConvNhwc of an N·L·C input; codegen runs it as 2-D with
    H = 1), and then those transposes are pushed down too (through 1-D pools as well: the NHWC pools
    of [N, 1, L, C]); 3-D and larger convolutions stay NCDHW.
  }];
}

def LowerEinsum : Pass<"kiln-lower-einsum", "mlir::func::FuncOp"> {
  let summary = "Einsum as transposes, reshapes, ReduceSum and batched MatMul";
  let description = [{
    Each operand first gives up its repeated labels (a diagonal: both dims moved last, flattened,
    every (n+1)-th element sliced) and the labels no other operand and not the output has
    (ReduceSum); then the operands are contracted left to right, each pair as one batched product
    [batch..., left, inner] × [batch..., inner, right] (transposes and reshapes around it; the
    batch dims kept as they are, so attention written as Einsum still fuses), where batch labels
    are shared and still needed, inner labels shared and not; a final transpose puts the output's
    order. An Einsum whose ellipsis dims broadcast (1 against n) between operands stays
    (the engine builder then reports it).

    Before:
      %y = kiln.einsum %a, %b {equation = "bij,bjk->bik"}
    After:
      %y = kiln.matmul %a, %b
  }];
}

def SplitVariadic : Pass<"kiln-split-variadic", "mlir::func::FuncOp"> {
  let summary = "Sum/Mean/Max/Min of more than three operands as a tree of three-operand ones";
  let description = [{
    The elementwise kernels take one to three operands; an exporter's AddN of many tensors
    becomes a Sum of all of them. Operands are folded three at a time, level by level (a
    balanced tree, so fp16 sums add like magnitudes); Mean is the Sum tree divided by n.
    Broadcasting is unchanged: every op broadcasts its operands as the original did.

    Before:
      %y = kiln.sum %a, %b, %c, %d, %e
    After:
      %0 = kiln.sum %a, %b, %c
      %1 = kiln.sum %d, %e
      %y = kiln.sum %0, %1
  }];
}

def FuseLayerNorm : RoutePass<"kiln-fuse-layernorm", "mlir::func::FuncOp"> {
  let summary = "LayerNorm and RMSNorm as exporters write them out, back to one op (knob fusion.layernorm)";
  let description = [{
    TorchScript before opset 17 and Paddle2ONNX write LayerNorm over the last axes as
    `d = x - ReduceMean(x)`, `var = ReduceMean(Pow(d, 2))` (or `d * d`),
    `d / Sqrt(var + eps)` (or `d * Reciprocal(Sqrt(..))`), then `* scale` and `+ bias`: five
    launches or more (two reductions, their elementwise kernels), and in fp16 a sum of squares that
    the half-safety pass must keep in fp32. They become one `kiln.layer_normalization` (axis = the
    first reduced axis, the reduced axes the trailing ones, keepdims; the same statistics in fp32:
    one row kernel). Every intermediate must have no other user; scale and bias must be of the
    normalized shape (leading ones allowed: reshaped), a missing scale is ones, a missing bias none.
    RMSNorm as T5 and Llama write it, `x / Sqrt(ReduceMean(Pow(x, 2)) + eps)` (or `x *
    Reciprocal(..)`, `x * (1 / ..)`) then `* scale`, becomes `kiln.rms_normalization` (ONNX opset
    23's RMSNormalization; x may have other users). With `fusion.layernorm=off` nothing changes.

    Before:
      %m = kiln.reduce_mean %x {axes = [-1]}
      %d = kiln.sub %x, %m
      %q = kiln.pow %d, %two
      %v = kiln.reduce_mean %q {axes = [-1]}
      %e = kiln.add %v, %eps
      %s = kiln.sqrt %e
      %n = kiln.div %d, %s
      %g = kiln.mul %n, %scale
      %y = kiln.add %g, %bias
    After:
      %y = kiln.layer_normalization %x, %scale, %bias {axis = 2, epsilon = ...}
  }];
}

def SplitRecurrent : Pass<"kiln-split-recurrent", "mlir::func::FuncOp"> {
  let summary = "LSTM/GRU/RNN as one input-projection product and kiln.recurrence";
  let description = [{
    A recurrent layer's input projection does not depend on the recurrence: X·W[d]ᵀ for every
    step and direction is one matrix product [T·B, I] × [I, D·G·H] (W reshaped and transposed;
    folded when constant), plus the bias Wb + Rb (GRU: Rb of z and r only; Rb_h stays the
    recurrence's RB, inside the reset gate's product). What is left, `kiln.recurrence` over that
    projection, is one persistent GPU kernel. com.microsoft::DynamicQuantizeLSTM with constant
    weights becomes the same with its weights dequantized (its inputs are then not quantized per
    step as onnxruntime does; the float recurrence is the more accurate one).

    Before:
      %y:2 = kiln.lstm %x, %w, %r, %b, %none, %none, %none, %none {hidden_size = 16}
    After:
      %p = kiln.matmul %x, %wt          (+ kiln.add of the folded bias)
      %y:2 = kiln.recurrence %p, %r, %none, ... {cell = "LSTM", hidden_size = 16}
  }];
}

def SimplifyTransposes : Pass<"kiln-simplify-transposes", "mlir::func::FuncOp"> {
  let summary = "Compose transposes, drop identities, turn unit-dim transposes into reshapes";
  let description = [{
    Also a Reduce* over every axis reads a transposed tensor's input instead: the order of the
    elements does not change the min, max or sum (the layout pass's NCHW copy before
    DynamicQuantizeLinear's range goes).

    Before:
      %t = kiln.transpose %x {perm = array<i64: 0, 3, 1, 2>}
      %m = kiln.reduce_min %t {keepdims = 0 : i64}
    After:
      %m = kiln.reduce_min %x {keepdims = 0 : i64}
  }];
  let dependentDialects = ["::kiln::KilnDialect"];
}

def SplitReductions : RoutePass<"kiln-split-reductions", "mlir::func::FuncOp"> {
  let summary = "Long reductions over few rows in two stages (knob reduce.split); min and max of one tensor in one pass";
  let description = [{
    The row kernel gives each row of a reduction over trailing axes one block; a reduction of a
    whole tensor (DynamicQuantizeLinear's ReduceMin and ReduceMax, a global mean) is then one
    block reading everything (20 us for 1 MiB on an H100). When the rows are fewer than the
    target's SMs and at least 65536 long, ReduceSum/Mean/Max/Min/SumSquare/L1 become a reduction
    of [rows, S, cols / S] over its last axis (S chunks of 2048 or more, up to two blocks per SM
    in all) and a ReduceSum (SumSquare, L1), ReduceMean, ReduceMax or ReduceMin of the S
    partial results; cols must divide by S.

    Before:
      %m = kiln.reduce_min %x {keepdims = 0 : i64} : (tensor<8x32x32x32xf32>) -> tensor<f32>
    After:
      %v = kiln.reshape %x, %shape : (tensor<8x32x32x32xf32>, tensor<3xi64>) -> tensor<1x128x2048xf32>
      %p = kiln.reduce_min %v {axes = array<i64: 2>, keepdims = 0 : i64} -> tensor<1x128xf32>
      %q = kiln.reduce_min %p {axes = array<i64: 1>, keepdims = 0 : i64} -> tensor<1xf32>
      %m = kiln.reshape %q, %scalar : (tensor<1xf32>, tensor<0xi64>) -> tensor<f32>

    Whatever the knob, first: a ReduceMin or ReduceMax of a half tensor widened to fp32 (the
    fp32 island a half route keeps for DynamicQuantizeLinear's range) reduces the half tensor
    and widens the result, exactly the same values, so no kernel writes an fp32 copy just for
    it; and a ReduceMin and a ReduceMax of one tensor over the same axes become one
    kiln.reduce_min_max, one kernel reading the tensor once (a split pair stays a pair: stage two
    reduces the partial minima and maxima):

    Before:
      %w = kiln.cast %h {to = 1 : i64} : (tensor<64x256xf16>) -> tensor<64x256xf32>
      %lo = kiln.reduce_min %w {keepdims = 0 : i64} : (tensor<64x256xf32>) -> tensor<f32>
      %hi = kiln.reduce_max %w {keepdims = 0 : i64} : (tensor<64x256xf32>) -> tensor<f32>
    After:
      %l, %h2 = kiln.reduce_min_max %h, %h {keepdims = 0 : i64} : (...) -> (tensor<f16>, tensor<f16>)
      %lo = kiln.cast %l {to = 1 : i64} : (tensor<f16>) -> tensor<f32>
      %hi = kiln.cast %h2 {to = 1 : i64} : (tensor<f16>) -> tensor<f32>
  }];
}

def FuseAttention : RoutePass<"kiln-fuse-attention", "mlir::func::FuncOp"> {
  let summary = "Attention as one flash-attention op (knob fusion.attention)";
  let description = [{
    `Softmax(scale · Q·Kᵀ + mask, last axis) · V` in fp16 or bf16 becomes one `kiln.attention`
    (codegen: one flash-attention kernel; the scores never reach memory). Between the scores
    product and the Softmax it takes constant scalar Mul/Div (the scale) and then at most one
    additive mask or `Where(constant condition, scores, c)` with c ≤ -10⁴ (GPT-2's causal mask,
    made an additive constant; a constant lower-triangular condition instead becomes the
    `causal_diagonal` attribute, computed in the kernel, whose blocks then skip the key tiles past
    the diagonal); each intermediate must have one use. A `Where(IsNaN(p), 0, p)` between the
    Softmax and the second product (PyTorch's exporters write one after every
    scaled_dot_product_attention) becomes `zero_masked_rows = 1`: a query whose keys are all
    masked stores 0. The products' operand
    permutations become perm_q, perm_k, perm_v, and a Transpose of the result that keeps its
    last dim last becomes perm_y (the kernel stores heads where the Transpose would put them).
    Only sizes the kernel takes are fused: head sizes multiples of 8 up to 128, operands read
    along the head dim. Then each Q, K, V that layout ops made from another tensor (Transpose,
    Slice, Gather of one constant index, Split, with reshapes between: torch's packed QKV
    projection split into heads) becomes `kiln.strided_view` of that tensor when every dim of
    the operand walks it with one stride and the kernel takes the offset and strides; the copies
    are erased. With `fusion.qkv=on`, separate Q, K and V products of one input with constant 2-D
    weights (BERT's query/key/value Linear layers, with the reshapes and transposes that split
    heads between them and the attention, as torch.export writes K) first become one product of
    the weights side by side and a Slice of its columns each, which the views then read in place.

    Before:
      %s = kiln.transposed_matmul %q, %k {perm_a = array<i64: 0, 2, 1, 3>, perm_b = array<i64: 0, 2, 3, 1>}
      %d = kiln.div %s, %c8
      %m = kiln.add %d, %mask
      %p = kiln.softmax %m {axis = -1 : i64}
      %o = kiln.transposed_matmul %p, %v {perm_b = array<i64: 0, 2, 1, 3>}
      %y = kiln.transpose %o {perm = array<i64: 0, 2, 1, 3>}
    After:
      %y = kiln.attention %q, %k, %v, %mask {perm_k = array<i64: 0, 2, 3, 1>, perm_q = array<i64: 0, 2, 1, 3>,
                                             perm_v = array<i64: 0, 2, 1, 3>, perm_y = array<i64: 0, 2, 1, 3>,
                                             scale = 1.250000e-01 : f32}
  }];
}

def ElementwiseViews : RoutePass<"kiln-elementwise-views", "mlir::func::FuncOp"> {
  let summary = "Elementwise kernels read sliced or transposed operands in place (knob fusion.views)";
  let description = [{
    After kernel regions are formed: each input of an elementwise region (or of a lone
    elementwise op) that layout ops copied out of another tensor (Slice, Transpose, Gather of
    one constant index, Split, with reshapes between) becomes `kiln.strided_view` of that
    tensor, when every dim walks it with one stride and the innermost dim stays contiguous
    (stride 1: coalesced reads); the copies are erased. Product epilogues keep contiguous inputs.

    Before (GPT-2's vocabulary head padded to 50264 columns):
      %s = kiln.slice %p, %c0, %c50257, %axis, %none : (tensor<1x512x50264xf16>, ...) -> tensor<1x512x50257xf16>
      %y = kiln.cast %s {to = 1 : i64}
    After:
      %v = kiln.strided_view %p {offset = 0, shape = array<i64: 1, 512, 50257>, strides = array<i64: 25735168, 50264, 1>}
      %y = kiln.cast %v {to = 1 : i64}
  }];
}

def ProductViews : RoutePass<"kiln-product-views", "mlir::func::FuncOp"> {
  let summary = "Matrix products read sliced or transposed operands in place (knob fusion.transpose)";
  let description = [{
    After kernel regions are formed: an A or B operand of a matrix product (alone or heading an
    epilogue region) that layout ops copied out of another tensor (Slice, Transpose, Gather of
    one constant index, Split, with reshapes between) becomes `kiln.strided_view` of that tensor
    when cuBLASLt can read it so: every dim one stride, one of the matrix dims unit-stride, the
    batch dims one uniform stride, the first element 16-byte aligned. The copies are erased.
    Transposes directly under a product fold into its perm_a/perm_b earlier
    (kiln-canonicalize-linear); this reaches the heads of a packed projection, split per column
    range by gemm.split, behind reshapes (ViT's fp32 attention products).

    Before (a head-major view of a sequence-first Q [S, B, H·D]):
      %r = kiln.reshape %q, %c : (tensor<197x32x768xf32>, tensor<3xi64>) -> tensor<197x384x64xf32>
      %t = kiln.transpose %r {perm = array<i64: 1, 0, 2>} : (tensor<197x384x64xf32>) -> tensor<384x197x64xf32>
      %p = kiln.transposed_matmul %t, %k {perm_b = array<i64: 0, 2, 1>}
    After:
      %v = kiln.strided_view %q {offset = 0, shape = array<i64: 384, 197, 64>, strides = array<i64: 64, 24576, 1>}
      %p = kiln.transposed_matmul %v, %k {perm_b = array<i64: 0, 2, 1>}
  }];
}

def FuseEpilogue : RoutePass<"kiln-fuse-epilogue", "mlir::func::FuncOp"> {
  let summary = "Fuse elementwise ops into the store of a matrix product or convolution (knob fusion.epilogue)";
  let description = [{
    A MatMul, TransposedMatMul, Conv or ConvNhwc whose result flows through a chain of
    elementwise ops or `kiln.fused elementwise` regions (bias add, scale, activation, residual
    add, casts), each the single user of the value before it, becomes one `kiln.fused
    "epilogue"` region: the chain runs on each output element as it is stored (absorbed regions
    are inlined). Chain links keep the product's result shape; their other operands broadcast
    into it. Runs after elementwise fusion in the compile pipeline.

    With knob fusion.prologue=on (default off), a prologue too: an elementwise op or region that
    computes the A operand of a MatMul, TransposedMatMul or ungrouped 2-D ConvNhwc from one tensor
    of A's shape (or float32) and one-element values joins the region before the product (a copy
    of it for each product that reads that A); the kernel applies it to each element of A as it
    loads it. onnxruntime's dynamic quantization of an activation (scale and zero point from its
    min and max) is such a function; its quantized copy of A is then never stored. Off by default:
    it moves the product from cuBLASLt to kiln's kernel, which was slower on every model measured.

    Before:
      %q = kiln.fused elementwise %x, %lo, %hi {...}   : (tensor<64x256xf16>, tensor<f32>, tensor<f32>) -> tensor<64x256xf16>
      %y = kiln.matmul %q, %w
      %z = kiln.relu %y
    After:
      %z = kiln.fused epilogue %x, %lo, %hi, %w {...} (the prologue's ops, the product, the Relu)
  }];
}

def FuseElementwise : RoutePass<"kiln-fuse-elementwise", "mlir::func::FuncOp"> {
  let summary = "Group elementwise ops into one kernel each (knob fusion.elementwise)";
  let description = [{
    Grows regions backwards from each elementwise op over elementwise producers whose results
    are used only inside the region, and makes every region of two or more ops one
    `kiln.fused elementwise` op (one launch, intermediates never stored).
  }];
}

def LowerQuantizedOps : Pass<"kiln-lower-quantized-ops", "mlir::func::FuncOp"> {
  let summary = "onnxruntime's quantized ops become Q/DQ around float ops and float products of integer values";
  let description = [{
    What onnxruntime's quantizer writes, in the forms the rest of the pipeline compiles:
    - `QLinearMatMul`, `QLinearConv` (int32 bias: DequantizeLinear with scale x_scale·w_scale),
      com.microsoft `QLinearAdd`, `QLinearMul`, `QLinearSigmoid`, `QLinearLeakyRelu`,
      `QLinearGlobalAveragePool` (channels_last: ReduceMean), `QLinearAveragePool`
      (channels_last: transposes around it), `QLinearConcat` (inputs already in the output's
      scale and zero point join as they are) → `Q(op(DQ(x)...), y_scale, y_zero_point)`. With
      constant parameters these are ONNX Q/DQ ops, so kiln-lower-qdq makes 8-bit tensor-core
      products of them where the kernel takes the shape; parameters computed at run time become
      the same arithmetic (Cast, Sub, Mul; Div, Round, Add, Clip, Cast).
    - `DynamicQuantizeLinear(x)` → min/max reductions and scalar arithmetic for the scale and zero
      point, then the quantization as elementwise ops (one fused kernel on the GPU): bit for bit
      the evaluator's (onnxruntime's) arithmetic. These ops carry `kiln.keep_fp32`, which keeps
      them float32 on half-precision routes.
    - com.microsoft `MatMulIntegerToFloat` → `Cast(MatMulInteger) · (a_scale·b_scale) + bias`;
      `DynamicQuantizeMatMul` → the same after DynamicQuantizeLinear of A.
    - `MatMulInteger` / `ConvInteger` whose int32 sums are only cast to float (onnxruntime's
      dynamic QOperator form, optionally with an int32 bias added first) → the float product of
      `A - za` and `B - zb`: exact while partial sums stay below 2^24 (K·255·255 < 2^24 for any
      data up to K = 258). When the float sums are then multiplied by `S = s_a · s_b` (s_a one
      element, maybe computed at run time; s_b constant per tensor or per output channel), the
      scales move onto the operands: `MatMul(DQ(A, s_a, za), DQ(B, s_b, zb))` — the dequantized
      float product, which runs on fp16 tensor cores on half routes without ever holding the
      unscaled sums in half precision (an int32 bias becomes `+ Cast(bias)·S`).
    - `MatMulInteger` / `ConvInteger` whose int32 sums are used as integers (a graph output, an
      integer op's operand) → `Cast<i32>` of the float product of `A - za` and `B - zb`, kept in
      fp32. The reduction (K; a convolution's input channels, KH·KW terms each) is cut into
      chunks whose partial sums provably stay below 2^24 (from the operands' 8-bit ranges, or
      the constant weights' largest |w - zw|), and the chunks' results are added in int32: exact
      for any K. A grouped convolution that would need chunks is refused, naming the node.

    Before:
      %q, %s, %z = kiln.dynamic_quantize_linear %x
      %p = kiln.matmul_integer %q, %w, %z, %wz
      %f = kiln.cast %p {to = 1}
      %sc = kiln.mul %s, %ws
      %y = kiln.mul %f, %sc
    After:
      (%q, %s, %z from ReduceMin/ReduceMax, Div, Round, Clip, Cast: kiln.keep_fp32)
      %a = kiln.mul (kiln.sub (kiln.cast %q), (kiln.cast %z)), %s
      %b = kiln.dequantize_linear %w, %ws, %wz
      %y = kiln.matmul %a, %b
  }];
  let dependentDialects = ["::kiln::KilnDialect"];
}

def QuantizeProducts : Pass<"kiln-quantize", "mlir::func::FuncOp"> {
  let summary = "Post-training int8/fp8 quantization: Q/DQ around convolutions and matrix products from a calibration";
  let description = [{
    For every Conv, MatMul and TransposedMatMul whose precision is int8 (or fp8) in the route
    (`precision=int8`, or `node.<name>.precision=int8`), whose weight (operand 1) is a float32
    constant, whose activation (operand 0) has a range in the calibration file (`kiln
    calibrate`, keyed by node name and operand) and which the int8 kernel can run
    (`eightBitKernelTakes`: K % 16 == 0 and operands read along K; 2-D ungrouped convolutions with
    C % 16 == 0): the activation becomes
    `DequantizeLinear(QuantizeLinear(x, amax/127, 0), amax/127, 0)` (int8, per tensor,
    symmetric) and the weight `DequantizeLinear(Wq, s)` with Wq an int8 constant quantized per
    output channel, symmetric, to [-127, 127] (s = max|W[c]| / 127). The graph stays in ONNX's
    QDQ form, so the reference evaluator computes exactly what int8 kernels must, and explicit
    Q/DQ models and calibrated ones meet in one form. Products of two activations (attention),
    products without an int8 kernel and nodes without a range stay float; the counts are
    reported as a remark. A route asking for int8 without a calibration file is an error. fp8
    is the same with float8e4m3fn: scales amax/448, weights rounded to nearest-even e4m3.

    Before:
      %y = kiln.matmul %x, %w
    After:
      %q = kiln.quantize_linear %x, %sa, %zp      (tensor<...xi8>)
      %xd = kiln.dequantize_linear %q, %sa, %zp
      %wd = kiln.dequantize_linear %wq, %sw {axis = 1}
      %y = kiln.matmul %xd, %wd
  }];
  let options = [
    Option<"calib", "calib", "std::string", /*default=*/"\"\"", "Calibration file (kiln calibrate)">,
    Option<"keepFloat", "keep-float", "std::string", /*default=*/"\"\"",
           "ECMAScript regex: products whose node name it matches (whole name) stay float">,
    Option<"route", "route", "std::string", /*default=*/"\"\"", "Build route (canonical text)">,
    Option<"arch", "arch", "std::string", /*default=*/"\"sm_90\"", "Target GPU architecture">,
  ];
  let dependentDialects = ["::kiln::KilnDialect"];
}

def PropagateQdq : Pass<"kiln-propagate-qdq", "mlir::func::FuncOp"> {
  let summary = "Move per-tensor DequantizeLinear below layout-only ops; cancel Q(DQ(x)) with equal parameters";
  let description = [{
    QDQ models quantize around every op (onnxruntime puts Q/DQ pairs around MaxPool, Reshape,
    Transpose, Concat...), which would leave those ops in float between a DequantizeLinear and
    a QuantizeLinear. For a layout-only op L (Reshape, Transpose, Flatten, Squeeze, Unsqueeze,
    Slice, Identity, Concat with equal parameters on every input, and MaxPool without Indices)
    whose data operand is a per-tensor DequantizeLinear with a positive scale,
    `L(DQ(x, s, zp))` becomes `DQ(L(x), s, zp)`: L runs on the 8-bit data. Then
    `QuantizeLinear(DequantizeLinear(x, s, zp), s, zp)` with the same scale, zero point and type
    is x. Both rewrites are exact, so the quantized regions grow without changing a value.

    Before:
      %d = kiln.dequantize_linear %q, %s, %zp
      %p = kiln.max_pool %d
      %q2 = kiln.quantize_linear %p, %s, %zp
    After:
      %p = kiln.max_pool %q        (int8)
      (%q2 is %p)
  }];
  let dependentDialects = ["::kiln::KilnDialect"];
}

def LowerQdq : RoutePass<"kiln-lower-qdq", "mlir::func::FuncOp"> {
  let summary = "Matrix products and convolutions between DequantizeLinear pairs become int8/fp8 ops";
  let description = [{
    `MatMul(DQ(a, sa, 0), DQ(b, sb, 0))` with int8 `a` and `b`, a one-element activation scale
    and a weight scale that is one element or per output channel (the DequantizeLinear axis is
    the dimension of B that indexes the product's columns), and zero points absent or zero,
    becomes `QuantizedMatMul(a, b, sa·sb)`: exact integer sums scaled per column, what the int8
    tensor-core kernel computes. TransposedMatMul keeps its operand permutations. A 2-D,
    ungrouped Conv likewise becomes `QuantizedConv(x, w, sa·sw[m], B)` (weights per output
    channel, axis 0; the float bias added after the scale). A uint8 (or int8) activation with a
    per-tensor zero point (onnxruntime's U8S8) keeps it as `a_zero_point`: the kernel subtracts
    za·Σw per column, and a convolution's padded taps read za, as onnxruntime pads. float8e4m3fn data on both sides
    (zero points zero) becomes the same ops with fp8 operands. Products the 8-bit kernel cannot run
    (`eightBitKernelTakes`) and other DequantizeLinear uses are left as they are, and so are
    the products that knob `quant.products` keeps float: on a half-precision route (auto) a
    model's own QDQ product runs as a dequantized fp16/bf16 tensor-core product, which is faster
    than kiln's int8 kernel on the products measured so far; products the route itself quantizes
    (`precision=int8|fp8`) always become 8-bit ops.

    Before:
      %xd = kiln.dequantize_linear %xq, %sa, %zp
      %wd = kiln.dequantize_linear %wq, %sw, %none {axis = 1}
      %y = kiln.matmul %xd, %wd
    After:
      %y = kiln.quantized_matmul %xq, %wq, %scale     (scale = sa · sw)
  }];
}

#endif

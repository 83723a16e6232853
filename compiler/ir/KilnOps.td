// kiln ops. Each op has the semantics of the ONNX op named in its definition (latest opset; the
// importer normalises older opsets). Attributes are all optional here: their defaults are ONNX's
// and live, once, in the semantics registry.
#ifndef KILN_OPS_TD
#define KILN_OPS_TD

include "compiler/ir/KilnDialect.td"
include "compiler/ir/KilnInterfaces.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"
include "mlir/IR/EnumAttr.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Kiln_Tensor : AnyTypeOf<[AnyRankedTensor, AnyUnrankedTensor]>;
def Kiln_TensorOrNone : AnyTypeOf<[AnyRankedTensor, AnyUnrankedTensor, NoneType]>;

def I64Opt : OptionalAttr<I64Attr>;
def F32Opt : OptionalAttr<F32Attr>;
def StrOpt : OptionalAttr<StrAttr>;
def IntsOpt : OptionalAttr<DenseI64ArrayAttr>;
def FloatsOpt : OptionalAttr<DenseF32ArrayAttr>;
def TensorOpt : OptionalAttr<ElementsAttr>;

// Ops of kiln's own (made by passes, never by the importer): the importer's ONNX name map is the
// set of ops without this trait (compiler/importer/OpTable.cpp), so a model's node named like one
// of them is an unsupported op, not a way into kiln's internals.
def Kiln_Internal : NativeOpTrait<"KilnInternal">;

// Every semantic op: pure, shape-inferred and verified through the registry. `onnx` is the op
// type whose semantics it has (compiler/ops) and, unless Kiln_Internal, the ONNX op type the
// importer maps to it: the one place an op's name is written.
class Kiln_Op<string mnemonic, string onnx, list<Trait> traits = []>
    : Op<Kiln_Dialect, mnemonic, !listconcat(traits, [Pure, Kiln_ShapeInferenceOpInterface])> {
  let summary = "ONNX " # onnx;
  let extraClassDeclaration = [{
    static ::llvm::StringRef getOnnxName() { return "}] # onnx # [{"; }
  }];
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

class Kiln_UnaryOp<string mnemonic, string onnx, dag attrs = (ins), list<Trait> traits = []>
    : Kiln_Op<mnemonic, onnx, traits> {
  let arguments = !con((ins Kiln_Tensor:$X), attrs);
  let results = (outs Kiln_Tensor:$Y);
}
class Kiln_BinaryOp<string mnemonic, string onnx, dag attrs = (ins)>
    : Kiln_Op<mnemonic, onnx> {
  let arguments = !con((ins Kiln_Tensor:$A, Kiln_Tensor:$B), attrs);
  let results = (outs Kiln_Tensor:$C);
}
class Kiln_VariadicOp<string mnemonic, string onnx, dag attrs = (ins)>
    : Kiln_Op<mnemonic, onnx> {
  let arguments = !con((ins Variadic<Kiln_Tensor>:$inputs), attrs);
  let results = (outs Kiln_Tensor:$output);
}
// Ops whose trailing ONNX outputs are optional: results are the outputs the node declared.
class Kiln_MultiResultOp<string mnemonic, string onnx, dag args>
    : Kiln_Op<mnemonic, onnx> {
  let arguments = args;
  let results = (outs Variadic<Kiln_Tensor>:$outputs);
}

//===--- Structural ops (no ONNX semantics of their own) ------------------------------------===//

def Kiln_ConstantOp : Op<Kiln_Dialect, "constant",
    [ConstantLike, Pure, AllTypesMatch<["value", "output"]>]> {
  let summary = "A constant tensor (weights, folded values)";
  let description = [{ Large values are dense resources (`dense_resource<blob>`), never copied
                       element by element; small ones are inline dense attributes. }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs AnyRankedTensor:$output);
  let builders = [OpBuilder<(ins "::mlir::ElementsAttr":$value), [{
    build($_builder, $_state, ::llvm::cast<::mlir::RankedTensorType>(value.getType()), value);
  }]>];
  let hasFolder = 1;
  let assemblyFormat = "attr-dict $value";
}

def Kiln_NoneOp : Op<Kiln_Dialect, "none", [ConstantLike, Pure]> {
  let summary = "The absent optional input";
  let results = (outs NoneType:$none);
  let builders = [OpBuilder<(ins), [{ build($_builder, $_state, $_builder.getNoneType()); }]>];
  let hasFolder = 1;
  let assemblyFormat = "attr-dict";
}

def Kiln_UnsupportedOp : Op<Kiln_Dialect, "unsupported"> {
  let summary = "An ONNX node kiln does not support (kept so every problem is reported at once)";
  let arguments = (ins Variadic<Kiln_TensorOrNone>:$inputs, StrAttr:$op_type, StrAttr:$domain,
                   I64Attr:$opset, StrAttr:$reason, DictionaryAttr:$onnx_attributes);
  let results = (outs Variadic<Kiln_Tensor>:$outputs);
  let assemblyFormat = "$op_type operands attr-dict `:` functional-type(operands, results)";
}

//===--- Elementwise ------------------------------------------------------------------------===//

foreach op = [["sqrt", "Sqrt"], ["exp", "Exp"], ["log", "Log"], ["neg", "Neg"], ["abs", "Abs"],
              ["reciprocal", "Reciprocal"], ["floor", "Floor"], ["ceil", "Ceil"],
              ["round", "Round"], ["sign", "Sign"], ["sin", "Sin"], ["cos", "Cos"], ["tan", "Tan"],
              ["asin", "Asin"], ["acos", "Acos"], ["atan", "Atan"], ["sinh", "Sinh"],
              ["cosh", "Cosh"], ["asinh", "Asinh"], ["acosh", "Acosh"], ["atanh", "Atanh"],
              ["erf", "Erf"], ["isnan", "IsNaN"], ["not", "Not"], ["relu", "Relu"],
              ["sigmoid", "Sigmoid"], ["tanh", "Tanh"], ["softsign", "Softsign"],
              ["softplus", "Softplus"], ["mish", "Mish"], ["hard_swish", "HardSwish"],
              ["identity", "Identity"], ["size", "Size"], ["global_average_pool", "GlobalAveragePool"],
              ["global_max_pool", "GlobalMaxPool"]] in
  def Kiln_ # op[1] # Op : Kiln_UnaryOp<op[0], op[1]>;

def Kiln_LeakyReluOp : Kiln_UnaryOp<"leaky_relu", "LeakyRelu", (ins F32Opt:$alpha)>;
def Kiln_GeluOp : Kiln_UnaryOp<"gelu", "Gelu", (ins StrOpt:$approximate)>;
def Kiln_HardSigmoidOp : Kiln_UnaryOp<"hard_sigmoid", "HardSigmoid", (ins F32Opt:$alpha, F32Opt:$beta)>;
def Kiln_EluOp : Kiln_UnaryOp<"elu", "Elu", (ins F32Opt:$alpha)>;
def Kiln_SeluOp : Kiln_UnaryOp<"selu", "Selu", (ins F32Opt:$alpha, F32Opt:$gamma)>;
def Kiln_CeluOp : Kiln_UnaryOp<"celu", "Celu", (ins F32Opt:$alpha)>;
def Kiln_ThresholdedReluOp : Kiln_UnaryOp<"thresholded_relu", "ThresholdedRelu", (ins F32Opt:$alpha)>;
def Kiln_ShrinkOp : Kiln_UnaryOp<"shrink", "Shrink", (ins F32Opt:$bias, F32Opt:$lambd)>;
def Kiln_IsInfOp : Kiln_UnaryOp<"isinf", "IsInf", (ins I64Opt:$detect_negative, I64Opt:$detect_positive)>;
def Kiln_CastOp : Kiln_UnaryOp<"cast", "Cast", (ins I64Attr:$to, I64Opt:$saturate)>;

foreach op = [["add", "Add"], ["sub", "Sub"], ["mul", "Mul"], ["div", "Div"], ["pow", "Pow"],
              ["and", "And"], ["or", "Or"], ["xor", "Xor"], ["equal", "Equal"], ["less", "Less"],
              ["greater", "Greater"], ["less_or_equal", "LessOrEqual"],
              ["greater_or_equal", "GreaterOrEqual"], ["prelu", "PRelu"], ["matmul", "MatMul"],
              ["cast_like", "CastLike"], ["expand", "Expand"], ["tile", "Tile"]] in
  def Kiln_ # op[1] # Op : Kiln_BinaryOp<op[0], op[1]>;

def Kiln_ModOp : Kiln_BinaryOp<"mod", "Mod", (ins I64Opt:$fmod)>;
def Kiln_BitShiftOp : Kiln_BinaryOp<"bit_shift", "BitShift", (ins StrAttr:$direction)>;
def Kiln_ReshapeOp : Kiln_BinaryOp<"reshape", "Reshape", (ins I64Opt:$allowzero)>;
def Kiln_GatherOp : Kiln_BinaryOp<"gather", "Gather", (ins I64Opt:$axis)>;
def Kiln_GatherElementsOp : Kiln_BinaryOp<"gather_elements", "GatherElements", (ins I64Opt:$axis)>;

foreach op = [["sum", "Sum"], ["mean", "Mean"], ["min", "Min"], ["max", "Max"]] in
  def Kiln_ # op[1] # Op : Kiln_VariadicOp<op[0], op[1]>;
def Kiln_ConcatOp : Kiln_VariadicOp<"concat", "Concat", (ins I64Attr:$axis)>;
def Kiln_EinsumOp : Kiln_VariadicOp<"einsum", "Einsum", (ins StrAttr:$equation)>;

def Kiln_WhereOp : Kiln_Op<"where", "Where"> {
  let arguments = (ins Kiln_Tensor:$condition, Kiln_Tensor:$X, Kiln_Tensor:$Y);
  let results = (outs Kiln_Tensor:$output);
}
def Kiln_ClipOp : Kiln_Op<"clip", "Clip"> {
  let arguments = (ins Kiln_Tensor:$input, Kiln_TensorOrNone:$min, Kiln_TensorOrNone:$max);
  let results = (outs Kiln_Tensor:$output);
}

//===--- Linear algebra and convolution -----------------------------------------------------===//

def Kiln_GemmOp : Kiln_Op<"gemm", "Gemm"> {
  let arguments = (ins Kiln_Tensor:$A, Kiln_Tensor:$B, Kiln_TensorOrNone:$C, F32Opt:$alpha,
                   F32Opt:$beta, I64Opt:$transA, I64Opt:$transB);
  let results = (outs Kiln_Tensor:$Y);
}
def Kiln_ConvOp : Kiln_Op<"conv", "Conv"> {
  let arguments = (ins Kiln_Tensor:$X, Kiln_Tensor:$W, Kiln_TensorOrNone:$B, StrOpt:$auto_pad,
                   IntsOpt:$dilations, I64Opt:$group, IntsOpt:$kernel_shape, IntsOpt:$pads,
                   IntsOpt:$strides);
  let results = (outs Kiln_Tensor:$Y);
}
def Kiln_ConvTransposeOp : Kiln_Op<"conv_transpose", "ConvTranspose"> {
  let arguments = (ins Kiln_Tensor:$X, Kiln_Tensor:$W, Kiln_TensorOrNone:$B, StrOpt:$auto_pad,
                   IntsOpt:$dilations, I64Opt:$group, IntsOpt:$kernel_shape,
                   IntsOpt:$output_padding, IntsOpt:$output_shape, IntsOpt:$pads,
                   IntsOpt:$strides);
  let results = (outs Kiln_Tensor:$Y);
}

//===--- Normalisation, softmax, reductions --------------------------------------------------===//

def Kiln_BatchNormalizationOp : Kiln_Op<"batch_normalization", "BatchNormalization"> {
  let arguments = (ins Kiln_Tensor:$X, Kiln_Tensor:$scale, Kiln_Tensor:$B, Kiln_Tensor:$input_mean,
                   Kiln_Tensor:$input_var, F32Opt:$epsilon, F32Opt:$momentum,
                   I64Opt:$training_mode);
  let results = (outs Kiln_Tensor:$Y);
}
def Kiln_LayerNormalizationOp : Kiln_MultiResultOp<"layer_normalization", "LayerNormalization",
    (ins Kiln_Tensor:$X, Kiln_Tensor:$Scale, Kiln_TensorOrNone:$B, I64Opt:$axis, F32Opt:$epsilon,
     I64Opt:$stash_type)>;
// ONNX opset 23's RMSNormalization (beyond the importer's opsets): made by kiln-fuse-layernorm from
// T5's and Llama's written-out norm.
def Kiln_RMSNormalizationOp : Kiln_Op<"rms_normalization", "RMSNormalization"> {
  let arguments = (ins Kiln_Tensor:$X, Kiln_Tensor:$Scale, I64Opt:$axis, F32Opt:$epsilon, I64Opt:$stash_type);
  let results = (outs Kiln_Tensor:$Y);
}
def Kiln_InstanceNormalizationOp : Kiln_Op<"instance_normalization", "InstanceNormalization"> {
  let arguments = (ins Kiln_Tensor:$input, Kiln_Tensor:$scale, Kiln_Tensor:$B, F32Opt:$epsilon);
  let results = (outs Kiln_Tensor:$output);
}

foreach op = [["softmax", "Softmax"], ["log_softmax", "LogSoftmax"], ["hardmax", "Hardmax"]] in
  def Kiln_ # op[1] # Op : Kiln_UnaryOp<op[0], op[1], (ins I64Opt:$axis, I64Opt:$coerce_2d)>;

foreach op = [["reduce_mean", "ReduceMean"], ["reduce_sum", "ReduceSum"],
              ["reduce_max", "ReduceMax"], ["reduce_min", "ReduceMin"],
              ["reduce_prod", "ReduceProd"], ["reduce_l1", "ReduceL1"], ["reduce_l2", "ReduceL2"],
              ["reduce_log_sum", "ReduceLogSum"], ["reduce_log_sum_exp", "ReduceLogSumExp"],
              ["reduce_sum_square", "ReduceSumSquare"]] in
  def Kiln_ # op[1] # Op : Kiln_UnaryOp<op[0], op[1],
      (ins IntsOpt:$axes, I64Opt:$keepdims, I64Opt:$noop_with_empty_axes)>;

foreach op = [["argmax", "ArgMax"], ["argmin", "ArgMin"]] in
  def Kiln_ # op[1] # Op : Kiln_UnaryOp<op[0], op[1],
      (ins I64Opt:$axis, I64Opt:$keepdims, I64Opt:$select_last_index)>;

def Kiln_TopKOp : Kiln_Op<"topk", "TopK"> {
  let arguments = (ins Kiln_Tensor:$X, Kiln_Tensor:$K, I64Opt:$axis, I64Opt:$largest,
                   I64Opt:$sorted);
  let results = (outs Kiln_Tensor:$Values, Kiln_Tensor:$Indices);
}
def Kiln_CumSumOp : Kiln_Op<"cumsum", "CumSum"> {
  let arguments = (ins Kiln_Tensor:$x, Kiln_Tensor:$axis, I64Opt:$exclusive, I64Opt:$reverse);
  let results = (outs Kiln_Tensor:$y);
}

//===--- Pooling ----------------------------------------------------------------------------===//

def Kiln_MaxPoolOp : Kiln_MultiResultOp<"max_pool", "MaxPool",
    (ins Kiln_Tensor:$X, StrOpt:$auto_pad, I64Opt:$ceil_mode, IntsOpt:$dilations,
     IntsOpt:$kernel_shape, IntsOpt:$pads, I64Opt:$storage_order, IntsOpt:$strides)>;
def Kiln_AveragePoolOp : Kiln_UnaryOp<"average_pool", "AveragePool",
    (ins StrOpt:$auto_pad, I64Opt:$ceil_mode, I64Opt:$count_include_pad, IntsOpt:$dilations,
     IntsOpt:$kernel_shape, IntsOpt:$pads, IntsOpt:$strides)>;
def Kiln_LpPoolOp : Kiln_UnaryOp<"lp_pool", "LpPool",
    (ins StrOpt:$auto_pad, I64Opt:$ceil_mode, IntsOpt:$dilations, IntsOpt:$kernel_shape,
     I64Opt:$p, IntsOpt:$pads, IntsOpt:$strides)>;

//===--- Data movement ----------------------------------------------------------------------===//

def Kiln_FlattenOp : Kiln_UnaryOp<"flatten", "Flatten", (ins I64Opt:$axis)>;
def Kiln_TransposeOp : Kiln_UnaryOp<"transpose", "Transpose", (ins IntsOpt:$perm)>;
def Kiln_SqueezeOp : Kiln_UnaryOp<"squeeze", "Squeeze", (ins IntsOpt:$axes)>;
def Kiln_UnsqueezeOp : Kiln_UnaryOp<"unsqueeze", "Unsqueeze", (ins IntsOpt:$axes)>;
def Kiln_ShapeOp : Kiln_UnaryOp<"shape", "Shape", (ins I64Opt:$start, I64Opt:$end)>;
def Kiln_DepthToSpaceOp : Kiln_UnaryOp<"depth_to_space", "DepthToSpace", (ins I64Attr:$blocksize, StrOpt:$mode)>;
def Kiln_SpaceToDepthOp : Kiln_UnaryOp<"space_to_depth", "SpaceToDepth", (ins I64Attr:$blocksize)>;
def Kiln_EyeLikeOp : Kiln_UnaryOp<"eye_like", "EyeLike", (ins I64Opt:$dtype, I64Opt:$k)>;
def Kiln_ConstantOfShapeOp : Kiln_UnaryOp<"constant_of_shape", "ConstantOfShape", (ins TensorOpt:$value)>;

def Kiln_SplitOp : Kiln_MultiResultOp<"split", "Split",
    (ins Kiln_Tensor:$input, I64Opt:$axis, IntsOpt:$split, I64Opt:$num_outputs)>;
def Kiln_SliceOp : Kiln_Op<"slice", "Slice"> {
  let arguments = (ins Kiln_Tensor:$data, Kiln_Tensor:$starts, Kiln_Tensor:$ends,
                   Kiln_TensorOrNone:$axes, Kiln_TensorOrNone:$steps);
  let results = (outs Kiln_Tensor:$output);
}
def Kiln_PadOp : Kiln_Op<"pad", "Pad"> {
  let arguments = (ins Kiln_Tensor:$data, Kiln_Tensor:$pads, Kiln_TensorOrNone:$constant_value,
                   Kiln_TensorOrNone:$axes, StrOpt:$mode);
  let results = (outs Kiln_Tensor:$output);
}
def Kiln_ResizeOp : Kiln_Op<"resize", "Resize"> {
  let arguments = (ins Kiln_Tensor:$X, Kiln_TensorOrNone:$roi, Kiln_TensorOrNone:$scales,
                   Kiln_TensorOrNone:$sizes, IntsOpt:$axes, I64Opt:$antialias,
                   StrOpt:$coordinate_transformation_mode, F32Opt:$cubic_coeff_a,
                   I64Opt:$exclude_outside, F32Opt:$extrapolation_value,
                   StrOpt:$keep_aspect_ratio_policy, StrOpt:$mode, StrOpt:$nearest_mode);
  let results = (outs Kiln_Tensor:$Y);
}
// Deprecated since opset 10 (Resize replaces it); opset 7 gives scales as an attribute.
def Kiln_UpsampleOp : Kiln_Op<"upsample", "Upsample"> {
  let arguments = (ins Kiln_Tensor:$X, Kiln_TensorOrNone:$scales_input, StrOpt:$mode,
                   FloatsOpt:$scales);
  let results = (outs Kiln_Tensor:$Y);
}
def Kiln_RangeOp : Kiln_Op<"range", "Range"> {
  let arguments = (ins Kiln_Tensor:$start, Kiln_Tensor:$limit, Kiln_Tensor:$delta);
  let results = (outs Kiln_Tensor:$output);
}
def Kiln_OneHotOp : Kiln_Op<"one_hot", "OneHot"> {
  let arguments = (ins Kiln_Tensor:$indices, Kiln_Tensor:$depth, Kiln_Tensor:$values, I64Opt:$axis);
  let results = (outs Kiln_Tensor:$output);
}
def Kiln_TriluOp : Kiln_Op<"trilu", "Trilu"> {
  let arguments = (ins Kiln_Tensor:$input, Kiln_TensorOrNone:$k, I64Opt:$upper);
  let results = (outs Kiln_Tensor:$output);
}
def Kiln_DropoutOp : Kiln_MultiResultOp<"dropout", "Dropout",
    (ins Kiln_Tensor:$data, Kiln_TensorOrNone:$ratio, Kiln_TensorOrNone:$training_mode,
     I64Opt:$seed)>;

//===--- Quantisation -----------------------------------------------------------------------===//

def Kiln_QuantizeLinearOp : Kiln_Op<"quantize_linear", "QuantizeLinear"> {
  let arguments = (ins Kiln_Tensor:$x, Kiln_Tensor:$y_scale, Kiln_TensorOrNone:$y_zero_point,
                   I64Opt:$axis, I64Opt:$saturate);
  let results = (outs Kiln_Tensor:$y);
}
def Kiln_DequantizeLinearOp : Kiln_Op<"dequantize_linear", "DequantizeLinear"> {
  let arguments = (ins Kiln_Tensor:$x, Kiln_Tensor:$x_scale, Kiln_TensorOrNone:$x_zero_point,
                   I64Opt:$axis);
  let results = (outs Kiln_Tensor:$y);
}

//===--- Vision, detection, losses, signal processing (compiler/ops/Vision.cpp, DataDependent.cpp,
//===--- Loss.cpp, Signal.cpp) -----------------------------------------------------------------===//

def Kiln_GatherNDOp : Kiln_BinaryOp<"gather_nd", "GatherND", (ins I64Opt:$batch_dims)>;
def Kiln_ScatterNDOp : Kiln_Op<"scatter_nd", "ScatterND"> {
  let arguments = (ins Kiln_Tensor:$data, Kiln_Tensor:$indices, Kiln_Tensor:$updates, StrOpt:$reduction);
  let results = (outs Kiln_Tensor:$output);
}
def Kiln_ScatterElementsOp : Kiln_Op<"scatter_elements", "ScatterElements"> {
  let arguments = (ins Kiln_Tensor:$data, Kiln_Tensor:$indices, Kiln_Tensor:$updates, I64Opt:$axis,
                   StrOpt:$reduction);
  let results = (outs Kiln_Tensor:$output);
}
// Deprecated (opsets 9-10): ScatterElements without reduction.
def Kiln_ScatterOp : Kiln_Op<"scatter", "Scatter"> {
  let arguments = (ins Kiln_Tensor:$data, Kiln_Tensor:$indices, Kiln_Tensor:$updates, I64Opt:$axis);
  let results = (outs Kiln_Tensor:$output);
}
def Kiln_GridSampleOp : Kiln_BinaryOp<"grid_sample", "GridSample",
    (ins I64Opt:$align_corners, StrOpt:$mode, StrOpt:$padding_mode)>;
def Kiln_RoiAlignOp : Kiln_Op<"roi_align", "RoiAlign"> {
  let arguments = (ins Kiln_Tensor:$X, Kiln_Tensor:$rois, Kiln_Tensor:$batch_indices,
                   StrOpt:$coordinate_transformation_mode, StrOpt:$mode, I64Opt:$output_height,
                   I64Opt:$output_width, I64Opt:$sampling_ratio, F32Opt:$spatial_scale);
  let results = (outs Kiln_Tensor:$Y);
}
def Kiln_MaxUnpoolOp : Kiln_Op<"max_unpool", "MaxUnpool"> {
  let arguments = (ins Kiln_Tensor:$X, Kiln_Tensor:$I, Kiln_TensorOrNone:$output_shape,
                   IntsOpt:$kernel_shape, IntsOpt:$pads, IntsOpt:$strides);
  let results = (outs Kiln_Tensor:$output);
}
def Kiln_LRNOp : Kiln_UnaryOp<"lrn", "LRN", (ins F32Opt:$alpha, F32Opt:$beta, F32Opt:$bias, I64Attr:$size)>;
def Kiln_MeanVarianceNormalizationOp : Kiln_UnaryOp<"mean_variance_normalization", "MeanVarianceNormalization",
    (ins IntsOpt:$axes)>;
def Kiln_ReverseSequenceOp : Kiln_BinaryOp<"reverse_sequence", "ReverseSequence",
    (ins I64Opt:$batch_axis, I64Opt:$time_axis)>;
// Result shapes that depend on input values: only with those values known at build time.
def Kiln_NonZeroOp : Kiln_UnaryOp<"non_zero", "NonZero">;
def Kiln_CompressOp : Kiln_BinaryOp<"compress", "Compress", (ins I64Opt:$axis)>;
def Kiln_UniqueOp : Kiln_MultiResultOp<"unique", "Unique", (ins Kiln_Tensor:$X, I64Opt:$axis, I64Opt:$sorted)>;
def Kiln_NonMaxSuppressionOp : Kiln_Op<"non_max_suppression", "NonMaxSuppression"> {
  let arguments = (ins Kiln_Tensor:$boxes, Kiln_Tensor:$scores, Kiln_TensorOrNone:$max_output_boxes_per_class,
                   Kiln_TensorOrNone:$iou_threshold, Kiln_TensorOrNone:$score_threshold,
                   I64Opt:$center_point_box);
  let results = (outs Kiln_Tensor:$selected_indices);
}
def Kiln_NegativeLogLikelihoodLossOp : Kiln_Op<"negative_log_likelihood_loss", "NegativeLogLikelihoodLoss"> {
  let arguments = (ins Kiln_Tensor:$input, Kiln_Tensor:$target, Kiln_TensorOrNone:$weight,
                   I64Opt:$ignore_index, StrOpt:$reduction);
  let results = (outs Kiln_Tensor:$loss);
}
def Kiln_SoftmaxCrossEntropyLossOp : Kiln_MultiResultOp<"softmax_cross_entropy_loss", "SoftmaxCrossEntropyLoss",
    (ins Kiln_Tensor:$scores, Kiln_Tensor:$labels, Kiln_TensorOrNone:$weights, I64Opt:$ignore_index,
     StrOpt:$reduction)>;
foreach op = [["hann_window", "HannWindow"], ["hamming_window", "HammingWindow"],
              ["blackman_window", "BlackmanWindow"]] in
  def Kiln_ # op[1] # Op : Kiln_UnaryOp<op[0], op[1], (ins I64Opt:$output_datatype, I64Opt:$periodic)>;
def Kiln_MelWeightMatrixOp : Kiln_Op<"mel_weight_matrix", "MelWeightMatrix"> {
  let arguments = (ins Kiln_Tensor:$num_mel_bins, Kiln_Tensor:$dft_length, Kiln_Tensor:$sample_rate,
                   Kiln_Tensor:$lower_edge_hertz, Kiln_Tensor:$upper_edge_hertz, I64Opt:$output_datatype);
  let results = (outs Kiln_Tensor:$output);
}
def Kiln_DFTOp : Kiln_Op<"dft", "DFT"> {
  let arguments = (ins Kiln_Tensor:$input, Kiln_TensorOrNone:$dft_length, I64Opt:$axis, I64Opt:$inverse,
                   I64Opt:$onesided);
  let results = (outs Kiln_Tensor:$output);
}
def Kiln_STFTOp : Kiln_Op<"stft", "STFT"> {
  let arguments = (ins Kiln_Tensor:$signal, Kiln_Tensor:$frame_step, Kiln_TensorOrNone:$window,
                   Kiln_TensorOrNone:$frame_length, I64Opt:$onesided);
  let results = (outs Kiln_Tensor:$output);
}
def Kiln_DetOp : Kiln_UnaryOp<"det", "Det">;

//===--- Recurrent layers (compiler/ops/Recurrent.cpp) ----------------------------------------===//

// Optional operands are `none` when absent (the importer pads them); the results are the outputs
// the node declares (Y, Y_h[, Y_c]), an unnamed one being a result nobody uses.
defvar Kiln_RnnAttrs = (ins FloatsOpt:$activation_alpha, FloatsOpt:$activation_beta,
                        OptionalAttr<StrArrayAttr>:$activations, F32Opt:$clip, StrOpt:$direction,
                        I64Opt:$hidden_size, I64Opt:$layout);
def Kiln_LSTMOp : Kiln_MultiResultOp<"lstm", "LSTM", !con(
    (ins Kiln_Tensor:$X, Kiln_Tensor:$W, Kiln_Tensor:$R, Kiln_TensorOrNone:$B, Kiln_TensorOrNone:$sequence_lens,
     Kiln_TensorOrNone:$initial_h, Kiln_TensorOrNone:$initial_c, Kiln_TensorOrNone:$P, I64Opt:$input_forget),
    Kiln_RnnAttrs)>;
def Kiln_GRUOp : Kiln_MultiResultOp<"gru", "GRU", !con(
    (ins Kiln_Tensor:$X, Kiln_Tensor:$W, Kiln_Tensor:$R, Kiln_TensorOrNone:$B, Kiln_TensorOrNone:$sequence_lens,
     Kiln_TensorOrNone:$initial_h, I64Opt:$linear_before_reset),
    Kiln_RnnAttrs)>;
def Kiln_RNNOp : Kiln_MultiResultOp<"rnn", "RNN", !con(
    (ins Kiln_Tensor:$X, Kiln_Tensor:$W, Kiln_Tensor:$R, Kiln_TensorOrNone:$B, Kiln_TensorOrNone:$sequence_lens,
     Kiln_TensorOrNone:$initial_h),
    Kiln_RnnAttrs)>;
// onnxruntime's com.microsoft DynamicQuantizeLSTM.
def Kiln_DynamicQuantizeLSTMOp : Kiln_MultiResultOp<"dynamic_quantize_lstm", "com.microsoft::DynamicQuantizeLSTM",
    (ins Kiln_Tensor:$X, Kiln_Tensor:$W, Kiln_Tensor:$R, Kiln_TensorOrNone:$B, Kiln_TensorOrNone:$sequence_lens,
     Kiln_TensorOrNone:$initial_h, Kiln_TensorOrNone:$initial_c, Kiln_TensorOrNone:$P, Kiln_Tensor:$W_scale,
     Kiln_Tensor:$W_zero_point, Kiln_Tensor:$R_scale, Kiln_Tensor:$R_zero_point,
     FloatsOpt:$activation_alpha, FloatsOpt:$activation_beta, OptionalAttr<StrArrayAttr>:$activations,
     F32Opt:$clip, StrOpt:$direction, I64Opt:$hidden_size, I64Opt:$input_forget)>;
// A recurrent layer whose input projection XP = X·Wᵀ + bias (every direction's, [T, B, D·G·H] or
// [B, T, D·G·H] by layout) is computed: what kiln-split-recurrent leaves of LSTM/GRU/RNN, one
// persistent GPU kernel. `cell` is LSTM, GRU or RNN; RB [D, G·H] is added to h·Rᵀ.
def Kiln_RecurrenceOp : Kiln_Op<"recurrence", "Recurrence", [Kiln_Internal]> {
  let arguments = !con(
      (ins Kiln_Tensor:$XP, Kiln_Tensor:$R, Kiln_TensorOrNone:$RB, Kiln_TensorOrNone:$sequence_lens,
       Kiln_TensorOrNone:$initial_h, Kiln_TensorOrNone:$initial_c, Kiln_TensorOrNone:$P, StrAttr:$cell,
       I64Opt:$input_forget, I64Opt:$linear_before_reset),
      Kiln_RnnAttrs);
  let results = (outs Variadic<Kiln_Tensor>:$outputs);
}

//===--- Integer and QLinear ops (onnxruntime's quantizer; compiler/ops/OrtQuantization.cpp) -===//
// kiln-lower-quantized-ops (passes/LowerQuantizedOps.cpp) rewrites every one of them into
// Q/DQ around float ops, or 8-bit products, before code generation.

def Kiln_DynamicQuantizeLinearOp : Kiln_Op<"dynamic_quantize_linear", "DynamicQuantizeLinear"> {
  let arguments = (ins Kiln_Tensor:$x);
  let results = (outs Kiln_Tensor:$y, Kiln_Tensor:$y_scale, Kiln_Tensor:$y_zero_point);
}
def Kiln_MatMulIntegerOp : Kiln_Op<"matmul_integer", "MatMulInteger"> {
  let arguments = (ins Kiln_Tensor:$A, Kiln_Tensor:$B, Kiln_TensorOrNone:$a_zero_point,
                   Kiln_TensorOrNone:$b_zero_point);
  let results = (outs Kiln_Tensor:$Y);
}
def Kiln_ConvIntegerOp : Kiln_Op<"conv_integer", "ConvInteger"> {
  let arguments = (ins Kiln_Tensor:$x, Kiln_Tensor:$w, Kiln_TensorOrNone:$x_zero_point,
                   Kiln_TensorOrNone:$w_zero_point, StrOpt:$auto_pad, IntsOpt:$dilations,
                   I64Opt:$group, IntsOpt:$kernel_shape, IntsOpt:$pads, IntsOpt:$strides);
  let results = (outs Kiln_Tensor:$y);
}
def Kiln_QLinearMatMulOp : Kiln_Op<"qlinear_matmul", "QLinearMatMul"> {
  let arguments = (ins Kiln_Tensor:$a, Kiln_Tensor:$a_scale, Kiln_Tensor:$a_zero_point,
                   Kiln_Tensor:$b, Kiln_Tensor:$b_scale, Kiln_Tensor:$b_zero_point,
                   Kiln_Tensor:$y_scale, Kiln_Tensor:$y_zero_point);
  let results = (outs Kiln_Tensor:$y);
}
def Kiln_QLinearConvOp : Kiln_Op<"qlinear_conv", "QLinearConv"> {
  let arguments = (ins Kiln_Tensor:$x, Kiln_Tensor:$x_scale, Kiln_Tensor:$x_zero_point,
                   Kiln_Tensor:$w, Kiln_Tensor:$w_scale, Kiln_Tensor:$w_zero_point,
                   Kiln_Tensor:$y_scale, Kiln_Tensor:$y_zero_point, Kiln_TensorOrNone:$B,
                   StrOpt:$auto_pad, IntsOpt:$dilations, I64Opt:$group, IntsOpt:$kernel_shape,
                   IntsOpt:$pads, IntsOpt:$strides);
  let results = (outs Kiln_Tensor:$y);
}

// onnxruntime's contrib ops (domain com.microsoft, opset 1): the ONNX name carries the domain,
// so the importer maps (domain, op type) to them and the registry keys them apart from ai.onnx.
class Kiln_MsQLinearBinaryOp<string mnemonic, string onnx> : Kiln_Op<mnemonic, "com.microsoft::" # onnx> {
  let arguments = (ins Kiln_Tensor:$A, Kiln_Tensor:$A_scale, Kiln_TensorOrNone:$A_zero_point,
                   Kiln_Tensor:$B, Kiln_Tensor:$B_scale, Kiln_TensorOrNone:$B_zero_point,
                   Kiln_Tensor:$C_scale, Kiln_TensorOrNone:$C_zero_point);
  let results = (outs Kiln_Tensor:$C);
}
def Kiln_QLinearAddOp : Kiln_MsQLinearBinaryOp<"qlinear_add", "QLinearAdd">;
def Kiln_QLinearMulOp : Kiln_MsQLinearBinaryOp<"qlinear_mul", "QLinearMul">;
class Kiln_MsQLinearUnaryOp<string mnemonic, string onnx, dag attrs = (ins)>
    : Kiln_Op<mnemonic, "com.microsoft::" # onnx> {
  let arguments = !con((ins Kiln_Tensor:$X, Kiln_Tensor:$X_scale, Kiln_TensorOrNone:$X_zero_point,
                        Kiln_Tensor:$Y_scale, Kiln_TensorOrNone:$Y_zero_point), attrs);
  let results = (outs Kiln_Tensor:$Y);
}
def Kiln_QLinearSigmoidOp : Kiln_MsQLinearUnaryOp<"qlinear_sigmoid", "QLinearSigmoid">;
def Kiln_QLinearLeakyReluOp : Kiln_MsQLinearUnaryOp<"qlinear_leaky_relu", "QLinearLeakyRelu", (ins F32Opt:$alpha)>;
def Kiln_QLinearGlobalAveragePoolOp
    : Kiln_MsQLinearUnaryOp<"qlinear_global_average_pool", "QLinearGlobalAveragePool", (ins I64Opt:$channels_last)>;
def Kiln_QLinearAveragePoolOp : Kiln_MsQLinearUnaryOp<"qlinear_average_pool", "QLinearAveragePool",
    (ins StrOpt:$auto_pad, I64Opt:$ceil_mode, I64Opt:$channels_last, I64Opt:$count_include_pad,
     IntsOpt:$dilations, IntsOpt:$kernel_shape, IntsOpt:$pads, IntsOpt:$strides)>;
// Y_scale, Y_zero_point, then (tensor, scale, zero point) per input.
def Kiln_QLinearConcatOp : Kiln_VariadicOp<"qlinear_concat", "com.microsoft::QLinearConcat", (ins I64Attr:$axis)>;
def Kiln_QGemmOp : Kiln_Op<"qgemm", "com.microsoft::QGemm"> {
  let arguments = (ins Kiln_Tensor:$A, Kiln_Tensor:$a_scale, Kiln_Tensor:$a_zero_point, Kiln_Tensor:$B,
                   Kiln_Tensor:$b_scale, Kiln_Tensor:$b_zero_point, Kiln_TensorOrNone:$C,
                   Kiln_TensorOrNone:$y_scale, Kiln_TensorOrNone:$y_zero_point, F32Opt:$alpha,
                   I64Opt:$transA, I64Opt:$transB);
  let results = (outs Kiln_Tensor:$Y);
}
def Kiln_DynamicQuantizeMatMulOp : Kiln_Op<"dynamic_quantize_matmul", "com.microsoft::DynamicQuantizeMatMul"> {
  let arguments = (ins Kiln_Tensor:$A, Kiln_Tensor:$B, Kiln_Tensor:$b_scale, Kiln_TensorOrNone:$b_zero_point,
                   Kiln_TensorOrNone:$bias);
  let results = (outs Kiln_Tensor:$Y);
}
def Kiln_MatMulIntegerToFloatOp : Kiln_Op<"matmul_integer_to_float", "com.microsoft::MatMulIntegerToFloat"> {
  let arguments = (ins Kiln_Tensor:$A, Kiln_Tensor:$B, Kiln_Tensor:$a_scale, Kiln_Tensor:$b_scale,
                   Kiln_TensorOrNone:$a_zero_point, Kiln_TensorOrNone:$b_zero_point,
                   Kiln_TensorOrNone:$bias);
  let results = (outs Kiln_Tensor:$Y);
}

//===--- kiln-internal forms (made by passes; semantics in compiler/ops/Internal.cpp) --------===//

// ReduceMin(lo_in) and ReduceMax(hi_in) over the same axes in one pass (kiln-split-reductions
// pairs the two of DynamicQuantizeLinear's range; lo_in and hi_in are the same tensor there, and
// stage two of a split reduces the partial minima and maxima).
def Kiln_ReduceMinMaxOp : Kiln_Op<"reduce_min_max", "ReduceMinMax", [Kiln_Internal]> {
  let arguments = (ins Kiln_Tensor:$lo_in, Kiln_Tensor:$hi_in, IntsOpt:$axes, I64Opt:$keepdims);
  let results = (outs Kiln_Tensor:$lo, Kiln_Tensor:$hi);
}

// MatMul(Transpose(A, perm_a), Transpose(B, perm_b)): transposes folded into the operand reads.
def Kiln_TransposedMatMulOp : Kiln_Op<"transposed_matmul", "TransposedMatMul", [Kiln_Internal]> {
  let arguments = (ins Kiln_Tensor:$A, Kiln_Tensor:$B, IntsOpt:$perm_a, IntsOpt:$perm_b);
  let results = (outs Kiln_Tensor:$Y);
}
// int8 A and B (TransposedMatMul's operand permutations), exact integer sums, then · scale[n] in
// float32: what QDQ around a matrix product becomes for the int8 kernel.
def Kiln_QuantizedMatMulOp : Kiln_Op<"quantized_matmul", "QuantizedMatMul", [Kiln_Internal]> {
  let arguments = (ins Kiln_Tensor:$A, Kiln_Tensor:$B, Kiln_Tensor:$scale, IntsOpt:$perm_a, IntsOpt:$perm_b,
                   I64Opt:$a_zero_point);
  let results = (outs Kiln_Tensor:$Y);
}
// int8 convolution: int8 (or uint8) X with zero point za (padding reads za), int8 W, exact sums
// of (x - za)·w × scale[m] in float32, + float32 bias B[m].
def Kiln_QuantizedConvOp : Kiln_Op<"quantized_conv", "QuantizedConv", [Kiln_Internal]> {
  let arguments = (ins Kiln_Tensor:$X, Kiln_Tensor:$W, Kiln_Tensor:$scale, Kiln_TensorOrNone:$B,
                   StrOpt:$auto_pad, IntsOpt:$dilations, I64Opt:$group, IntsOpt:$kernel_shape,
                   IntsOpt:$pads, IntsOpt:$strides, I64Opt:$a_zero_point);
  let results = (outs Kiln_Tensor:$Y);
}
def Kiln_QuantizedConvNhwcOp : Kiln_Op<"quantized_conv_nhwc", "QuantizedConvNhwc", [Kiln_Internal]> {
  let arguments = (ins Kiln_Tensor:$X, Kiln_Tensor:$W, Kiln_Tensor:$scale, Kiln_TensorOrNone:$B,
                   StrOpt:$auto_pad, IntsOpt:$dilations, I64Opt:$group, IntsOpt:$kernel_shape,
                   IntsOpt:$pads, IntsOpt:$strides, I64Opt:$a_zero_point);
  let results = (outs Kiln_Tensor:$Y);
}
// Conv, Max/AveragePool with NHWC activations (W keeps ONNX's [M, C/group, KH, KW] layout).
def Kiln_ConvNhwcOp : Kiln_Op<"conv_nhwc", "ConvNhwc", [Kiln_Internal]> {
  let arguments = (ins Kiln_Tensor:$X, Kiln_Tensor:$W, Kiln_TensorOrNone:$B, StrOpt:$auto_pad,
                   IntsOpt:$dilations, I64Opt:$group, IntsOpt:$kernel_shape, IntsOpt:$pads,
                   IntsOpt:$strides);
  let results = (outs Kiln_Tensor:$Y);
}
// Y[i] = X's elements in row-major order, at offset + Σ_k i_k · strides[k] (shape: Y's dims): a
// strided view of X's memory, which kiln-fuse-attention gives the attention kernel to read in
// place of the copies (Transpose, Slice, Gather, Split) that made its operands.
def Kiln_StridedViewOp : Kiln_UnaryOp<"strided_view", "StridedView",
    (ins IntsOpt:$shape, IntsOpt:$strides, I64Opt:$offset), [Kiln_Internal]>;
// Softmax(scale · Transpose(Q, perm_q) · Transpose(K, perm_k) + mask, last axis) ·
// Transpose(V, perm_v), stored as Transpose(·, perm_y), in float32, the result rounded to Q's
// type: the attention that kiln-fuse-attention finds (one flash-attention kernel). perm_k gives
// Kᵀ, [.., D, Sk]; the mask (optional) broadcasts to the scores. causal_diagonal d (optional,
// >= 0): query i sees keys j <= i + d only (the others' scores are -inf). zero_masked_rows = 1:
// probabilities that are NaN become 0 (PyTorch's exported Where(IsNaN(p), 0, p): a query whose
// keys are all masked gives 0, not NaN).
def Kiln_AttentionOp : Kiln_Op<"attention", "Attention", [Kiln_Internal]> {
  let arguments = (ins Kiln_Tensor:$Q, Kiln_Tensor:$K, Kiln_Tensor:$V, Kiln_TensorOrNone:$mask, F32Opt:$scale,
                   IntsOpt:$perm_q, IntsOpt:$perm_k, IntsOpt:$perm_v, IntsOpt:$perm_y, I64Opt:$causal_diagonal,
                   I64Opt:$zero_masked_rows);
  let results = (outs Kiln_Tensor:$Y);
}
// The patches of an NHWC image as rows: Y[n, oh, ow, (kh·KW + kw)·C + c] =
// X[n, oh·sh + kh·dh - top, ow·sw + kw·dw - left, c], 0 outside the image (pads: top, left,
// bottom, right). A convolution is then one matrix product of Y with its weights as [KH·KW·C, M].
def Kiln_Im2ColOp : Kiln_UnaryOp<"im2col", "Im2Col", (ins IntsOpt:$kernel_shape, IntsOpt:$strides,
                                                          IntsOpt:$dilations, IntsOpt:$pads), [Kiln_Internal]>;
def Kiln_MaxPoolNhwcOp : Kiln_UnaryOp<"max_pool_nhwc", "MaxPoolNhwc",
    (ins StrOpt:$auto_pad, I64Opt:$ceil_mode, IntsOpt:$dilations, IntsOpt:$kernel_shape,
     IntsOpt:$pads, I64Opt:$storage_order, IntsOpt:$strides), [Kiln_Internal]>;
def Kiln_AveragePoolNhwcOp : Kiln_UnaryOp<"average_pool_nhwc", "AveragePoolNhwc",
    (ins StrOpt:$auto_pad, I64Opt:$ceil_mode, I64Opt:$count_include_pad, IntsOpt:$dilations,
     IntsOpt:$kernel_shape, IntsOpt:$pads, IntsOpt:$strides), [Kiln_Internal]>;

//===--- Kernel regions ---------------------------------------------------------------------===//

// How codegen reads a kernel region's body (kiln.fused).
def Kiln_FusedKind : I32EnumAttr<"FusedKind", "the kind of a kernel region", [
    I32EnumAttrCase<"Elementwise", 0, "elementwise">,  // a DAG of elementwise ops, one output
    I32EnumAttrCase<"Epilogue", 1, "epilogue">          // a product first, then ops on its result
  ]> {
  let cppNamespace = "::kiln";
}

def Kiln_FusedOp : Op<Kiln_Dialect, "fused", [IsolatedFromAbove, Pure]> {
  let summary = "A kernel region: the ops that one kernel launch computes";
  let description = [{
    The body is ordinary kiln ops over the region's block arguments (bound to `inputs`);
    `kiln.yield` returns the region's results. `kind` says how codegen reads the body:
    `elementwise` (a DAG of elementwise ops, one output) or `epilogue` (a matrix product or
    convolution first, then elementwise ops applied to its result as it is stored). Fusion
    passes create these; the evaluator runs the body op by op, so a fused graph keeps its
    reference semantics.
  }];
  let arguments = (ins Variadic<Kiln_Tensor>:$inputs, Kiln_FusedKind:$kind);
  let results = (outs Variadic<Kiln_Tensor>:$outputs);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$kind `(` $inputs `)` attr-dict `:` functional-type($inputs, results) $body";
  let hasVerifier = 1;
}

def Kiln_YieldOp : Op<Kiln_Dialect, "yield", [Pure, Terminator, HasParent<"FusedOp">]> {
  let summary = "The results of a kernel region";
  let arguments = (ins Variadic<Kiln_Tensor>:$values);
  let assemblyFormat = "$values attr-dict `:` type($values)";
}

#endif

// Test cases for the GPU harness that runs the emitted kernels (codegen/kernels/) and compares
// them with the CPU reference evaluator (compiler/ops/). Each case is an ONNX node: op type,
// input shapes (ONNX input order; {} is a scalar), attributes as text ("0.1", "1,0,2", "tanh"),
// chosen to be awkward: odd sizes, broadcasts, groups, padding, strides, empty and 1-element
// tensors. `emitKernelCase` maps a case to its kernel launch(es) exactly as codegen does, so the
// harness and kernels_test.cpp share one mapping.
//
// Harness contract (per case): random float inputs (Gather indices: int64 in [-axis, axis);
// GatherND / ScatterND / ScatterElements indices: int64 in range of the axis each indexes; Where
// condition: bool), launches in order, each with parameters = the case's inputs in ONNX
// order (Concat: launch k reads input k only; Clip's/Slice's/Expand's/Tile's constant inputs are
// attributes here, not parameters) followed by the output(s). Tolerance: fp32 kernels vs the
// double reference, rtol 1e-5 / atol 1e-6 for data movement and simple arithmetic, 1e-4 for
// transcendental ops, reductions and matmul/conv (K-long sums).
// Launches of a case that write one output (ScatterND's copy, then its updates) run in order on
// the same buffers: each launch's parameters are the case's inputs it reads, then the output.
// Ops with extra outputs: LayerNormalization with attr "stats"="1" writes Y, Mean, InvStdDev;
// MaxPool with "indices"="1" writes Y, Indices (int64). Conv with "fused_relu"="1" is Relu(Conv).
#pragma once

#include "codegen/kernels/Conv.h"
#include "codegen/kernels/ConvNd.h"
#include "codegen/kernels/ConvTranspose.h"
#include "codegen/kernels/Copy.h"
#include "codegen/kernels/Elementwise.h"
#include "codegen/kernels/Indexing.h"
#include "codegen/kernels/MatMul.h"
#include "codegen/kernels/Pool.h"
#include "codegen/kernels/Reduction.h"
#include "codegen/kernels/RowScan.h"
#include "codegen/kernels/Signal.h"
#include "codegen/kernels/Vision.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <numeric>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace kiln::codegen::cases {

using Shape = std::vector<int64_t>;

struct KernelCase {
  std::string name;  // unique
  std::string op;    // ONNX op type
  std::vector<Shape> inputs;
  std::map<std::string, std::string> attrs;
  ElemType dtype = ElemType::F32;  // of the data inputs
};

inline std::vector<KernelCase> kernelCases() {
  std::vector<KernelCase> c;
  auto add = [&](std::string name, std::string op, std::vector<Shape> in, std::map<std::string, std::string> attrs = {},
                 ElemType t = ElemType::F32) {
    c.push_back({std::move(name), std::move(op), std::move(in), std::move(attrs), t});
  };
  // --- Elementwise: unary on odd sizes, binary with broadcasting, rank 6, scalars, empty.
  for (const char *op :
       {"Relu",     "Sigmoid", "Tanh",      "Erf",   "Exp",  "Log",   "Sqrt", "Neg", "Abs", "Reciprocal", "Softplus",
        "Softsign", "Mish",    "HardSwish", "Floor", "Ceil", "Round", "Sign", "Sin", "Cos", "Identity"})
    add(std::string(op) + "_odd", op, {{3, 5, 7}});
  add("Relu_vec4", "Relu", {{4, 256}});
  add("Sigmoid_one", "Sigmoid", {{1}});
  add("Relu_empty", "Relu", {{0, 5}});
  add("LeakyRelu_alpha", "LeakyRelu", {{1001}}, {{"alpha", "0.1"}});
  add("Elu_alpha", "Elu", {{2, 3, 5}}, {{"alpha", "0.5"}});
  add("Selu_default", "Selu", {{17}});
  add("Celu_alpha", "Celu", {{17}}, {{"alpha", "2.0"}});
  add("HardSigmoid_ab", "HardSigmoid", {{33}}, {{"alpha", "0.25"}, {"beta", "0.4"}});
  add("ThresholdedRelu", "ThresholdedRelu", {{33}}, {{"alpha", "0.3"}});
  add("Shrink", "Shrink", {{33}}, {{"lambd", "0.4"}, {"bias", "0.1"}});
  add("Gelu_none", "Gelu", {{8, 77}});
  add("Gelu_tanh", "Gelu", {{8, 77}}, {{"approximate", "tanh"}});
  add("Clip_attr", "Clip", {{6, 7}}, {{"min", "-0.5"}, {"max", "0.5"}});
  add("Clip_inputs", "Clip", {{6, 7}, {}, {}});
  add("Add_same_vec4", "Add", {{64, 3, 32}, {64, 3, 32}});
  add("Add_same_odd", "Add", {{7, 13}, {7, 13}});
  add("Add_row", "Add", {{5, 7}, {7}});
  add("Sub_col", "Sub", {{5, 7}, {5, 1}});
  add("Mul_scalar", "Mul", {{1024}, {}});
  add("Div_outer", "Div", {{2, 1, 7}, {3, 1}});
  add("Pow_bcast", "Pow", {{4, 5}, {1, 5}});
  add("Max_bcast", "Max", {{3, 1}, {1, 4}});
  add("Min_three", "Min", {{3, 1}, {1, 4}, {3, 4}});
  add("Sum_three", "Sum", {{2, 3}, {3}, {2, 1}});
  add("Mean_three", "Mean", {{8}, {8}, {8}});
  add("PRelu_channel", "PRelu", {{2, 3, 4, 5}, {3, 1, 1}});
  add("Mod_fmod", "Mod", {{6, 5}, {5}}, {{"fmod", "1"}});
  add("Sub_rank6", "Sub", {{2, 1, 3, 1, 5, 1}, {1, 4, 1, 2, 1, 3}});
  add("Equal_bcast", "Equal", {{4, 1}, {1, 5}});
  add("Less_bcast", "Less", {{4, 5}, {5}});
  add("Greater_bcast", "Greater", {{4, 5}, {4, 1}});
  add("Where_bcast", "Where", {{2, 1, 3}, {1, 4, 3}, {}});
  // --- Row reductions.
  add("Softmax_short", "Softmax", {{33, 10}});
  add("Softmax_bert", "Softmax", {{4, 12, 128, 128}});
  add("Softmax_long", "Softmax", {{3, 3001}});
  add("Softmax_huge", "Softmax", {{2, 50000}});
  add("Softmax_1028", "Softmax", {{3, 1028}});
  add("Softmax_axis1", "Softmax", {{2, 19, 3, 3}}, {{"axis", "1"}});
  add("LogSoftmax_odd", "LogSoftmax", {{7, 1000}});
  add("LogSoftmax_one", "LogSoftmax", {{5, 1}});
  add("LayerNorm_768", "LayerNormalization", {{2, 7, 768}, {768}, {768}});
  add("LayerNorm_odd", "LayerNormalization", {{3, 1025}, {1025}, {1025}}, {{"epsilon", "1e-6"}});
  add("LayerNorm_1024", "LayerNormalization", {{4, 1024}, {1024}, {1024}});
  add("LayerNorm_nobias", "LayerNormalization", {{5, 33}, {33}});
  add("LayerNorm_stats", "LayerNormalization", {{4, 300}, {300}, {300}}, {{"stats", "1"}});
  add("LayerNorm_axis1", "LayerNormalization", {{2, 3, 5}, {3, 5}, {3, 5}}, {{"axis", "1"}});
  for (const char *op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceSumSquare",
                         "ReduceL1", "ReduceL2", "ReduceLogSumExp"}) {
    add(std::string(op) + "_last", op, {{6, 37}}, {{"axes", "-1"}, {"keepdims", "1"}});
    add(std::string(op) + "_mid", op, {{2, 9, 5}}, {{"axes", "1"}, {"keepdims", "0"}});
    add(std::string(op) + "_long", op, {{3, 5000}}, {{"axes", "1"}, {"keepdims", "0"}});
  }
  // The min of one input and the max of another in one pass (kiln-split-reductions' pairs).
  add("ReduceMinMax_last", "ReduceMinMax", {{6, 37}, {6, 37}}, {{"axes", "-1"}, {"keepdims", "1"}});
  add("ReduceMinMax_mid", "ReduceMinMax", {{2, 9, 5}, {2, 9, 5}}, {{"axes", "1"}, {"keepdims", "0"}});
  add("ReduceMinMax_whole", "ReduceMinMax", {{3, 5000}, {3, 5000}}, {{"keepdims", "0"}});
  add("ReduceMinMax_long", "ReduceMinMax", {{2, 70001}, {2, 70001}}, {{"axes", "1"}, {"keepdims", "0"}});
  add("ReduceMinMax_vec", "ReduceMinMax", {{2, 70000}, {2, 70000}}, {{"axes", "1"}, {"keepdims", "0"}});
  add("ReduceLogSum_pos", "ReduceLogSum", {{4, 21}}, {{"axes", "1"}});
  add("ReduceMean_spatial", "ReduceMean", {{2, 3, 7, 7}}, {{"axes", "2,3"}});
  // --- MatMul / Gemm.
  add("MatMul_1x1", "MatMul", {{1, 1}, {1, 1}});
  add("MatMul_odd", "MatMul", {{7, 5}, {5, 3}});
  add("MatMul_edge", "MatMul", {{65, 33}, {33, 129}});
  add("MatMul_even", "MatMul", {{128, 64}, {64, 256}});
  add("MatMul_big", "MatMul", {{256, 300}, {300, 520}});
  add("MatMul_batchB2d", "MatMul", {{2, 3, 17, 9}, {9, 31}});
  add("MatMul_batch_bcast", "MatMul", {{4, 1, 8, 8}, {3, 8, 5}});
  add("MatMul_vec_left", "MatMul", {{13}, {13, 6}});
  add("MatMul_vec_right", "MatMul", {{6, 13}, {13}});
  add("MatMul_attention", "MatMul", {{2, 12, 64, 64}, {2, 12, 64, 65}});
  add("MatMul_K0", "MatMul", {{2, 4, 0}, {0, 3}});
  for (const char *ta : {"0", "1"})
    for (const char *tb : {"0", "1"})
      add(std::string("Gemm_t") + ta + tb, "Gemm",
          {ta[0] == '1' ? Shape{37, 100} : Shape{100, 37}, tb[0] == '1' ? Shape{70, 37} : Shape{37, 70}, {70}},
          {{"transA", ta}, {"transB", tb}, {"alpha", "0.5"}, {"beta", "2.0"}});
  add("Gemm_C_scalar", "Gemm", {{5, 3}, {3, 9}, {}});
  add("Gemm_C_col", "Gemm", {{5, 3}, {3, 9}, {5, 1}});
  add("Gemm_C_full", "Gemm", {{5, 3}, {3, 9}, {5, 9}}, {{"beta", "0.25"}});
  add("Gemm_noC", "Gemm", {{64, 48}, {48, 80}});
  // --- Conv / Pool.
  add("Conv_3x3_pad", "Conv", {{2, 3, 11, 13}, {8, 3, 3, 3}, {8}}, {{"pads", "1,1,1,1"}});
  add("Conv_1x1", "Conv", {{1, 16, 7, 7}, {24, 16, 1, 1}});
  add("Conv_stride2_odd", "Conv", {{1, 5, 15, 9}, {6, 5, 3, 3}, {6}}, {{"strides", "2,2"}, {"pads", "1,0,1,1"}});
  add("Conv_7x7_s2", "Conv", {{1, 3, 32, 32}, {16, 3, 7, 7}, {16}}, {{"strides", "2,2"}, {"pads", "3,3,3,3"}});
  add("Conv_dilated", "Conv", {{1, 4, 12, 12}, {4, 4, 3, 3}}, {{"dilations", "2,3"}, {"pads", "2,3,2,3"}});
  add("Conv_groups", "Conv", {{2, 6, 9, 9}, {9, 2, 3, 3}, {9}}, {{"group", "3"}, {"pads", "1,1,1,1"}});
  add("Conv_depthwise", "Conv", {{1, 32, 14, 14}, {32, 1, 3, 3}, {32}}, {{"group", "32"}, {"pads", "1,1,1,1"}});
  add("Conv_depthwise_s2", "Conv", {{2, 7, 10, 11}, {14, 1, 5, 5}},
      {{"group", "7"}, {"strides", "2,2"}, {"pads", "2,2,2,2"}});
  add("Conv_relu", "Conv", {{1, 3, 8, 8}, {5, 3, 3, 3}, {5}}, {{"pads", "1,1,1,1"}, {"fused_relu", "1"}});
  add("Conv_bigweights", "Conv", {{1, 512, 4, 4}, {8, 512, 3, 3}}, {{"pads", "1,1,1,1"}});
  add("MaxPool_3x3_s2", "MaxPool", {{2, 3, 13, 11}},
      {{"kernel_shape", "3,3"}, {"strides", "2,2"}, {"pads", "1,1,1,1"}});
  add("MaxPool_ceil", "MaxPool", {{1, 2, 8, 8}}, {{"kernel_shape", "3,3"}, {"strides", "2,2"}, {"ceil_mode", "1"}});
  add("MaxPool_dilated", "MaxPool", {{1, 2, 9, 9}}, {{"kernel_shape", "2,2"}, {"dilations", "2,2"}});
  add("MaxPool_indices", "MaxPool", {{2, 3, 7, 5}}, {{"kernel_shape", "2,3"}, {"indices", "1"}});
  add("MaxPool_indices_colmajor", "MaxPool", {{2, 3, 7, 5}},
      {{"kernel_shape", "2,3"}, {"strides", "2,2"}, {"indices", "1"}, {"storage_order", "1"}});
  add("AveragePool_pad", "AveragePool", {{2, 3, 9, 7}},
      {{"kernel_shape", "3,3"}, {"strides", "2,2"}, {"pads", "1,1,1,1"}});
  add("AveragePool_incl", "AveragePool", {{2, 3, 9, 7}},
      {{"kernel_shape", "3,3"}, {"strides", "2,2"}, {"pads", "1,1,1,1"}, {"count_include_pad", "1"}});
  add("AveragePool_ceil_incl", "AveragePool", {{1, 1, 6, 6}},
      {{"kernel_shape", "3,3"},
       {"strides", "2,2"},
       {"pads", "1,1,1,1"},
       {"ceil_mode", "1"},
       {"count_include_pad", "1"}});
  add("GlobalAveragePool", "GlobalAveragePool", {{2, 5, 7, 7}});
  add("GlobalMaxPool", "GlobalMaxPool", {{2, 5, 3, 9}});
  add("GlobalAveragePool_1x1", "GlobalAveragePool", {{3, 2048, 1, 1}});
  // --- Data movement.
  add("Transpose_2d", "Transpose", {{7, 13}}, {{"perm", "1,0"}});
  add("Transpose_0213", "Transpose", {{2, 3, 5, 7}}, {{"perm", "0,2,1,3"}});
  add("Transpose_nchw_nhwc", "Transpose", {{2, 3, 5, 7}}, {{"perm", "0,2,3,1"}});
  add("Transpose_identity", "Transpose", {{4, 5}}, {{"perm", "0,1"}});
  add("Slice_steps", "Slice", {{10, 11}}, {{"starts", "1,2"}, {"ends", "9,11"}, {"axes", "0,1"}, {"steps", "2,3"}});
  add("Slice_negative", "Slice", {{10, 11}}, {{"starts", "-1"}, {"ends", "-100"}, {"axes", "1"}, {"steps", "-2"}});
  add("Slice_clamped", "Slice", {{4, 6, 5}}, {{"starts", "1"}, {"ends", "1000"}, {"axes", "-2"}});
  // Vectorized copies: the last axis stays contiguous (16-byte words of 4 floats; 8-byte words).
  add("Slice_last_vec", "Slice", {{7, 5, 24}}, {{"starts", "8"}, {"ends", "16"}, {"axes", "2"}});
  add("Transpose_keep_last_vec", "Transpose", {{9, 6, 16}}, {{"perm", "1,0,2"}});
  add("Transpose_keep_last_vec2", "Transpose", {{3, 5, 7, 6}}, {{"perm", "2,0,1,3"}});
  add("Concat_last_vec", "Concat", {{3, 8}, {3, 12}}, {{"axis", "1"}});
  add("Concat_axis1", "Concat", {{2, 3, 4}, {2, 1, 4}, {2, 5, 4}}, {{"axis", "1"}});
  add("Concat_axis_last", "Concat", {{3, 5}, {3, 2}}, {{"axis", "-1"}});
  add("Expand_bcast", "Expand", {{3, 1}}, {{"shape", "2,3,4"}});
  add("Tile_odd", "Tile", {{3, 2}}, {{"repeats", "2,3"}});
  add("Gather_axis0", "Gather", {{10, 7}, {4}}, {{"axis", "0"}});
  add("Gather_axis1_2d", "Gather", {{3, 9, 5}, {2, 3}}, {{"axis", "1"}});
  add("Gather_embedding", "Gather", {{1000, 64}, {2, 17}}, {{"axis", "0"}});
  add("Gather_scalar_idx", "Gather", {{4, 6}, {}}, {{"axis", "1"}});
  // --- Coordinate ops and row scans (IndexKernel.h). TopK's K, CumSum's axis and Trilu's k are
  // constant inputs in the ONNX model, attributes here.
  add("GatherElements_axis1", "GatherElements", {{4, 9, 6}, {4, 5, 6}}, {{"axis", "1"}});
  add("GatherElements_last", "GatherElements", {{3, 7}, {3, 11}}, {{"axis", "-1"}});
  add("Trilu_upper_neg", "Trilu", {{2, 7, 9}}, {{"k", "-2"}});
  add("Trilu_lower", "Trilu", {{5, 4}}, {{"k", "1"}, {"upper", "0"}});
  add("ArgMax_mid", "ArgMax", {{3, 17, 5}}, {{"axis", "1"}, {"keepdims", "0"}});
  add("ArgMin_last", "ArgMin", {{7, 33}}, {{"axis", "-1"}, {"select_last_index", "1"}});
  add("Hardmax_mid", "Hardmax", {{2, 9, 4}}, {{"axis", "1"}});
  add("TopK_mid", "TopK", {{3, 20, 7}}, {{"k", "5"}, {"axis", "1"}});
  add("TopK_smallest", "TopK", {{4, 33}}, {{"k", "6"}, {"largest", "0"}});
  add("CumSum_rev_excl", "CumSum", {{5, 37, 3}}, {{"cumsum_axis", "1"}, {"exclusive", "1"}, {"reverse", "1"}});
  add("CumSum_last", "CumSum", {{4, 129}}, {{"cumsum_axis", "-1"}});
  add("ConvTranspose_s2_pads", "ConvTranspose", {{2, 4, 5, 7}, {4, 3, 3, 3}, {3}},
      {{"strides", "2,2"}, {"pads", "1,0,1,1"}});
  add("ConvTranspose_group_dil", "ConvTranspose", {{1, 6, 5, 5}, {6, 2, 3, 3}}, {{"group", "3"}, {"dilations", "2,2"}});
  add("ConvTranspose_1d", "ConvTranspose", {{2, 3, 11}, {3, 5, 4}, {5}}, {{"strides", "3"}});
  add("ConvTranspose_3d", "ConvTranspose", {{1, 2, 3, 4, 5}, {2, 3, 2, 3, 2}}, {{"strides", "1,2,1"}});
  // --- Convolutions of other ranks: 1-D as 2-D with H = 1, 3-D on the direct N-D kernel.
  add("Conv_1d_s2", "Conv", {{2, 3, 19}, {4, 3, 3}, {4}}, {{"strides", "2"}, {"pads", "1,1"}});
  add("Conv_1d_dw_dil", "Conv", {{1, 6, 23}, {6, 1, 3}}, {{"group", "6"}, {"dilations", "2"}, {"pads", "2,2"}});
  add("Conv_3d_groups", "Conv", {{2, 4, 5, 6, 7}, {6, 2, 3, 3, 3}, {6}},
      {{"group", "2"}, {"pads", "1,0,1,1,0,1"}, {"strides", "1,2,1"}});
  // --- Vision, detection and signal ops (indices: GatherND in range per tuple position,
  // ScatterND/ScatterElements with duplicates, reduced by add).
  add("GatherND_batch1", "GatherND", {{3, 5, 4, 2}, {3, 6, 2}}, {{"batch_dims", "1"}});
  add("ScatterND_add", "ScatterND", {{6, 5, 3}, {7, 1}, {7, 5, 3}}, {{"reduction", "add"}});
  add("ScatterElements_add", "ScatterElements", {{4, 9, 3}, {4, 5, 3}, {4, 5, 3}},
      {{"axis", "1"}, {"reduction", "add"}});
  add("GridSample_linear_zeros", "GridSample", {{2, 3, 5, 7}, {2, 4, 6, 2}}, {{"mode", "linear"}});
  add("GridSample_cubic_reflect", "GridSample", {{1, 2, 6, 5}, {1, 3, 7, 2}},
      {{"mode", "cubic"}, {"padding_mode", "reflection"}, {"align_corners", "1"}});
  add("GridSample_nearest_border", "GridSample", {{2, 1, 4, 9}, {2, 5, 3, 2}},
      {{"mode", "nearest"}, {"padding_mode", "border"}});
  add("InstanceNorm", "InstanceNormalization", {{2, 3, 37}, {3}, {3}}, {{"epsilon", "0.001"}});
  add("LRN_3", "LRN", {{2, 7, 5, 3}}, {{"size", "3"}, {"alpha", "0.02"}, {"beta", "0.75"}, {"bias", "1.5"}});
  add("MVN_default", "MeanVarianceNormalization", {{2, 3, 4, 5}});
  add("Det_4x4", "Det", {{3, 4, 4}});
  add("MaxPool_3d", "MaxPool", {{1, 3, 5, 6, 7}},
      {{"kernel_shape", "2,3,2"}, {"strides", "2,2,1"}, {"pads", "1,1,0,0,1,1"}});
  add("AveragePool_1d_incl", "AveragePool", {{2, 3, 13}},
      {{"kernel_shape", "4"}, {"strides", "3"}, {"pads", "2,1"}, {"count_include_pad", "1"}});
  add("ReduceMean_nonadjacent", "ReduceMean", {{3, 4, 5, 6}}, {{"axes", "0,2"}, {"keepdims", "1"}});
  add("ReduceLogSumExp_nonadjacent", "ReduceLogSumExp", {{3, 4, 5, 6}}, {{"axes", "1,3"}, {"keepdims", "0"}});
  return c;
}

// --- Mapping a case to launches --------------------------------------------------------------

inline std::vector<int64_t> parseInts(const std::string &s) {
  std::vector<int64_t> v;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) v.push_back(std::stoll(item));
  return v;
}

inline int64_t prodOf(const Shape &s, size_t from, size_t to) {
  int64_t n = 1;
  for (size_t k = from; k < to && k < s.size(); ++k) n *= s[k];
  return n;
}

inline int64_t normAxis(int64_t a, size_t rank) { return a < 0 ? a + int64_t(rank) : a; }

// Spatial output size of a pooling window (ONNX, ceil_mode included).
inline int64_t poolOut(int64_t in, int64_t k, int64_t s, int64_t pb, int64_t pe, int64_t d, bool ceilMode) {
  int64_t span = in + pb + pe - d * (k - 1) - 1;
  int64_t out = (ceilMode ? (span + s - 1) / s : span / s) + 1;
  if (ceilMode && (out - 1) * s >= in + pb) --out;
  return out;
}

inline std::vector<KernelLaunch> emitKernelCase(const KernelCase &c) {
  auto attr = [&](const std::string &k, const std::string &d) {
    auto it = c.attrs.find(k);
    return it == c.attrs.end() ? d : it->second;
  };
  auto ints = [&](const std::string &k, std::vector<int64_t> d) {
    auto it = c.attrs.find(k);
    return it == c.attrs.end() ? d : parseInts(it->second);
  };
  const Shape &x = c.inputs.at(0);
  const std::string &op = c.op;

  RowOp rowOp;
  const bool minMax = op == "ReduceMinMax";
  if (minMax) rowOp = RowOp::MinMax;
  if (minMax || rowOpFromName(op, &rowOp)) {
    RowReductionSpec s;
    s.op = rowOp;
    if (op == "Softmax" || op == "LogSoftmax") {
      int64_t axis = normAxis(std::stoll(attr("axis", "-1")), x.size());
      s.outer = prodOf(x, 0, axis);
      s.cols = x[axis];
      s.inner = prodOf(x, axis + 1, x.size());
    } else if (op == "LayerNormalization") {
      int64_t axis = normAxis(std::stoll(attr("axis", "-1")), x.size());
      s.outer = prodOf(x, 0, axis);
      s.cols = prodOf(x, axis, x.size());
      s.epsilon = std::stof(attr("epsilon", "1e-5"));
      s.hasBias = c.inputs.size() > 2;
      s.statsOutputs = attr("stats", "0") == "1";
    } else {
      std::vector<int64_t> axes = ints("axes", {});
      if (axes.empty())
        for (size_t d = 0; d < x.size(); ++d) axes.push_back(int64_t(d));
      for (int64_t &a : axes) a = normAxis(a, x.size());
      std::sort(axes.begin(), axes.end());
      for (size_t k = 1; k < axes.size(); ++k)
        if (axes[k] != axes[k - 1] + 1) return {emitReduceAxes(rowOp, x, axes, ElemType::F32, ElemType::F32)};
      s.outer = prodOf(x, 0, axes.front());
      s.cols = prodOf(x, axes.front(), axes.back() + 1);
      s.inner = prodOf(x, axes.back() + 1, x.size());
    }
    return {emitRowReduction(s)};
  }
  if (op == "MatMul") return {emitMatMul(matMulSpecFromShapes(c.inputs[0], c.inputs[1]))};
  if (op == "Gemm") {
    bool hasC = c.inputs.size() > 2;
    return {emitMatMul(gemmSpecFromShapes(c.inputs[0], c.inputs[1], hasC, hasC ? c.inputs[2] : Shape{},
                                          attr("transA", "0") == "1", attr("transB", "0") == "1",
                                          std::stof(attr("alpha", "1")), std::stof(attr("beta", "1"))))};
  }
  if (op == "Conv" && x.size() == 4) {
    const Shape &w = c.inputs.at(1);
    Conv2dSpec s;
    s.N = x[0];
    s.C = x[1];
    s.H = x[2];
    s.W = x[3];
    s.M = w[0];
    s.KH = w[2];
    s.KW = w[3];
    s.group = std::stoll(attr("group", "1"));
    auto st = ints("strides", {1, 1}), dil = ints("dilations", {1, 1}), pads = ints("pads", {0, 0, 0, 0});
    s.strideH = st[0];
    s.strideW = st[1];
    s.dilationH = dil[0];
    s.dilationW = dil[1];
    s.padTop = pads[0];
    s.padLeft = pads[1];
    s.padBottom = pads[2];
    s.padRight = pads[3];
    s.epilogue = convBiasEpilogue(c.inputs.size() > 2, s.M, false, ElemType::F32, attr("fused_relu", "0") == "1");
    return {emitConv2d(s)};
  }
  if ((op == "MaxPool" || op == "AveragePool") && x.size() != 4) {
    PoolNdSpec s;
    size_t n = x.size() - 2;
    s.max = op == "MaxPool";
    s.N = x[0], s.C = x[1];
    s.in.assign(x.begin() + 2, x.end());
    s.kernel = ints("kernel_shape", {}), s.strides = ints("strides", Shape(n, 1)),
    s.dilations = ints("dilations", Shape(n, 1));
    auto pads = ints("pads", Shape(2 * n, 0));
    s.padBegin.assign(pads.begin(), pads.begin() + long(n)), s.padEnd.assign(pads.begin() + long(n), pads.end());
    for (size_t d = 0; d < n; ++d)
      s.out.push_back(poolOut(s.in[d], s.kernel[d], s.strides[d], s.padBegin[d], s.padEnd[d], s.dilations[d], false));
    s.countIncludePad = attr("count_include_pad", "0") == "1";
    return {emitPoolNd(s)};
  }
  if (op == "Conv" && x.size() == 3) {  // 1-D as 2-D with H = 1, as Products.cpp
    const Shape &w = c.inputs.at(1);
    Conv2dSpec s;
    s.N = x[0];
    s.C = x[1];
    s.H = 1;
    s.W = x[2];
    s.M = w[0];
    s.KH = 1;
    s.KW = w[2];
    s.group = std::stoll(attr("group", "1"));
    auto pads = ints("pads", {0, 0});
    s.strideW = ints("strides", {1})[0], s.dilationW = ints("dilations", {1})[0];
    s.padLeft = pads[0], s.padRight = pads[1];
    s.epilogue = convBiasEpilogue(c.inputs.size() > 2, s.M, false, ElemType::F32, false);
    return {emitConv2d(s)};
  }
  if (op == "Conv" && x.size() > 4) {
    const Shape &w = c.inputs.at(1);
    ConvNdSpec s;
    size_t n = x.size() - 2;
    s.N = x[0], s.C = x[1], s.M = w[0], s.group = std::stoll(attr("group", "1"));
    s.in.assign(x.begin() + 2, x.end());
    s.kernel.assign(w.begin() + 2, w.end());
    s.strides = ints("strides", Shape(n, 1)), s.dilations = ints("dilations", Shape(n, 1));
    auto pads = ints("pads", Shape(2 * n, 0));
    s.padBegin.assign(pads.begin(), pads.begin() + long(n));
    for (size_t d = 0; d < n; ++d)
      s.out.push_back(poolOut(s.in[d], s.kernel[d], s.strides[d], pads[d], pads[d + n], s.dilations[d], false));
    if (c.inputs.size() > 2) {
      Shape bias(x.size() - 1, 1);
      bias[0] = s.M;
      s.epilogue.inputShapes = {bias};
      s.epilogue.inputTypes = {ElemType::F32};
      s.epilogue.result = "(acc + x0)";
    }
    return {emitConvNd(s)};
  }
  if (op == "GatherND") return {emitGatherNd(x, c.inputs.at(1), std::stoll(attr("batch_dims", "0")), c.dtype)};
  if (op == "ScatterND")
    return {emitScatterCopy(prodOf(x, 0, x.size()), c.dtype),
            emitScatterNd(x, c.inputs.at(1), attr("reduction", "none"), c.dtype)};
  if (op == "ScatterElements")
    return {emitScatterCopy(prodOf(x, 0, x.size()), c.dtype),
            emitScatterElements(x, c.inputs.at(1), int(normAxis(std::stoll(attr("axis", "0")), x.size())),
                                attr("reduction", "none"), ElemType::I64, c.dtype)};
  if (op == "GridSample") {
    GridSampleSpec s;
    const Shape &g = c.inputs.at(1);
    s.N = x[0], s.C = x[1], s.H = x[2], s.W = x[3], s.Ho = g[1], s.Wo = g[2];
    s.mode = attr("mode", "linear"), s.padding = attr("padding_mode", "zeros");
    s.alignCorners = attr("align_corners", "0") == "1";
    return {emitGridSample(s)};
  }
  if (op == "InstanceNormalization") {
    RowReductionSpec s;
    s.op = RowOp::InstanceNorm;
    s.outer = x[0] * x[1], s.cols = prodOf(x, 2, x.size()), s.channels = x[1];
    s.epsilon = std::stof(attr("epsilon", "1e-5"));
    return {emitRowReduction(s)};
  }
  if (op == "LRN")
    return {emitLrn(x, std::stoll(attr("size", "1")), std::stof(attr("alpha", "1e-4")), std::stof(attr("beta", "0.75")),
                    std::stof(attr("bias", "1")), c.dtype)};
  if (op == "MeanVarianceNormalization") return {emitMeanVarianceNorm(x, ints("axes", {0, 2, 3}), c.dtype)};
  if (op == "Det") return {emitDet(prodOf(x, 0, x.size() - 2), x.back(), c.dtype)};
  if (op == "ConvTranspose") {
    const Shape &w = c.inputs.at(1);
    ConvTransposeSpec s;
    size_t n = x.size() - 2;
    s.N = x[0], s.C = x[1], s.group = std::stoll(attr("group", "1")), s.M = w[1] * s.group;
    s.in.assign(x.begin() + 2, x.end());
    s.kernel.assign(w.begin() + 2, w.end());
    s.strides = ints("strides", Shape(n, 1)), s.dilations = ints("dilations", Shape(n, 1));
    auto pads = ints("pads", Shape(2 * n, 0));
    s.padBegin.assign(pads.begin(), pads.begin() + long(n));
    for (size_t d = 0; d < n; ++d)
      s.out.push_back((s.in[d] - 1) * s.strides[d] + (s.kernel[d] - 1) * s.dilations[d] + 1 - pads[d] - pads[d + n]);
    s.hasBias = c.inputs.size() > 2;
    return {emitConvTranspose(s)};
  }
  auto rowView = [&](int64_t axis) {
    axis = normAxis(axis, x.size());
    return RowView{prodOf(x, 0, size_t(axis)), x[size_t(axis)], prodOf(x, size_t(axis) + 1, x.size())};
  };
  if (op == "ArgMax" || op == "ArgMin")
    return {emitArgExtreme(rowView(std::stoll(attr("axis", "0"))), op == "ArgMax",
                           attr("select_last_index", "0") == "1", c.dtype)};
  if (op == "Hardmax") return {emitHardmax(rowView(std::stoll(attr("axis", "-1"))), c.dtype)};
  if (op == "TopK")
    return {emitTopK(rowView(std::stoll(attr("axis", "-1"))), std::stoll(attr("k", "1")), attr("largest", "1") == "1",
                     c.dtype)};
  if (op == "CumSum")
    return {emitCumSum(rowView(std::stoll(attr("cumsum_axis", "0"))), attr("exclusive", "0") == "1",
                       attr("reverse", "0") == "1", c.dtype)};
  if (op == "Trilu") return {emitTrilu(x, std::stoll(attr("k", "0")), attr("upper", "1") == "1", c.dtype)};
  if (op == "GatherElements")
    return {emitGatherElements(x, c.inputs.at(1), int(normAxis(std::stoll(attr("axis", "0")), x.size())), ElemType::I64,
                               c.dtype)};
  if (op == "MaxPool" || op == "AveragePool") {
    Pool2dSpec s;
    s.kind = op == "MaxPool" ? PoolKind::Max : PoolKind::Average;
    s.N = x[0];
    s.C = x[1];
    s.H = x[2];
    s.W = x[3];
    auto k = ints("kernel_shape", {1, 1}), st = ints("strides", {1, 1}), dil = ints("dilations", {1, 1}),
         pads = ints("pads", {0, 0, 0, 0});
    s.KH = k[0];
    s.KW = k[1];
    s.strideH = st[0];
    s.strideW = st[1];
    s.dilationH = dil[0];
    s.dilationW = dil[1];
    s.padTop = pads[0];
    s.padLeft = pads[1];
    s.padBottom = pads[2];
    s.padRight = pads[3];
    bool ceilMode = attr("ceil_mode", "0") == "1";
    s.OH = poolOut(s.H, s.KH, s.strideH, s.padTop, s.padBottom, s.dilationH, ceilMode);
    s.OW = poolOut(s.W, s.KW, s.strideW, s.padLeft, s.padRight, s.dilationW, ceilMode);
    s.countIncludePad = attr("count_include_pad", "0") == "1";
    s.indicesOutput = attr("indices", "0") == "1";
    s.columnMajorIndices = attr("storage_order", "0") == "1";
    return {emitPool2d(s)};
  }
  if (op == "GlobalAveragePool" || op == "GlobalMaxPool")
    return {emitGlobalPool(op == "GlobalMaxPool", x[0] * x[1], prodOf(x, 2, x.size()))};
  if (op == "Transpose") {
    std::vector<int64_t> perm = ints("perm", {});
    if (perm.empty())
      for (size_t d = x.size(); d-- > 0;) perm.push_back(int64_t(d));
    return {emitCopy(transposeCopy(x, perm, c.dtype))};
  }
  if (op == "Slice") {
    std::vector<int64_t> starts = ints("starts", {}), ends = ints("ends", {}), axes = ints("axes", {}),
                         steps = ints("steps", {});
    if (axes.empty())
      for (size_t k = 0; k < starts.size(); ++k) axes.push_back(int64_t(k));
    if (steps.empty()) steps.assign(starts.size(), 1);
    std::vector<int64_t> st(x.size(), 0), sp(x.size(), 1), out = x;
    for (size_t k = 0; k < axes.size(); ++k) {
      int64_t a = normAxis(axes[k], x.size()), dim = x[a], step = steps[k];
      int64_t b = starts[k] < 0 ? starts[k] + dim : starts[k], e = ends[k] < 0 ? ends[k] + dim : ends[k];
      if (step > 0) {
        b = std::clamp<int64_t>(b, 0, dim);
        e = std::clamp<int64_t>(e, 0, dim);
      } else {
        b = std::clamp<int64_t>(b, 0, dim - 1);
        e = std::clamp<int64_t>(e, -1, dim - 1);
      }
      int64_t n = step > 0 ? (e - b + step - 1) / step : (b - e + (-step) - 1) / (-step);
      st[a] = b;
      sp[a] = step;
      out[a] = std::max<int64_t>(n, 0);
    }
    return {emitCopy(sliceCopy(x, st, sp, out, c.dtype))};
  }
  if (op == "Concat") {
    int axis = int(normAxis(std::stoll(attr("axis", "0")), x.size()));
    Shape out = x;
    out[axis] = 0;
    for (const Shape &s : c.inputs) out[axis] += s[axis];
    std::vector<KernelLaunch> ks;
    int64_t off = 0;
    for (const Shape &s : c.inputs) {
      ks.push_back(emitCopy(concatCopy(s, out, axis, off, c.dtype)));
      off += s[axis];
    }
    return ks;
  }
  if (op == "Expand") {
    Shape target = ints("shape", {});
    // numpy broadcast of x and the target shape.
    size_t r = std::max(x.size(), target.size());
    Shape out(r, 1);
    for (size_t k = 0; k < r; ++k) {
      int64_t a = k + x.size() >= r ? x[k + x.size() - r] : 1,
              b = k + target.size() >= r ? target[k + target.size() - r] : 1;
      out[k] = a == 1 ? b : a;
    }
    return {emitCopy(expandCopy(x, out, c.dtype))};
  }
  if (op == "Tile") return {emitCopy(tileCopy(x, ints("repeats", {}), c.dtype))};
  if (op == "Gather") {
    int axis = int(normAxis(std::stoll(attr("axis", "0")), x.size()));
    return {emitCopy(gatherCopy(x, axis, c.inputs.at(1), ElemType::I64, c.dtype))};
  }
  // Everything else: the elementwise table.
  ElementwiseAttrs ea;
  for (const auto &kv : c.attrs) {
    char *end = nullptr;
    double v = std::strtod(kv.second.c_str(), &end);
    if (end && *end == '\0' && !kv.second.empty()) {
      ea.floats[kv.first] = v;
      ea.ints[kv.first] = static_cast<int64_t>(v);
    } else {
      ea.strings[kv.first] = kv.second;
    }
  }
  return {emitElementwiseOp(op, c.inputs, ea, c.dtype)};
}

}  // namespace kiln::codegen::cases

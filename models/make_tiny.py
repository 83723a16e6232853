#!/usr/bin/env python3
"""Generate kiln's tiny test models (checked in under models/tiny/).

    python3 models/make_tiny.py            # rewrite models/tiny/ and verify it
    python3 models/make_tiny.py --out DIR  # write elsewhere

This script is the single source of every file under models/tiny/; re-running
it reproduces them byte-identically (fixed seeds, weights and inputs that are
exact multiples of 1/16 or 1/64, zip entries with a fixed timestamp).

Valid models (pass onnx.checker with full_check) come as protobuf text format
of ModelProto (``.onnxtxt``, google.protobuf.text_format), some also as binary
``.onnx``, each with a reference ``<name>.npz``: the graph inputs by input name
and the expected outputs by output name, computed in numpy (float64, stored as
float32) from the initializers.  ``bad/`` holds inputs the importer must
reject with a clear error.  See models/README.md for the list.
"""

import argparse
import io
import os
import shutil
import sys
import zipfile

import numpy as np
import onnx
from google.protobuf import text_format
from onnx import TensorProto, helper, numpy_helper

IR_VERSION = 8
PRODUCER = "kiln models/make_tiny.py"
F32 = TensorProto.FLOAT
I64 = TensorProto.INT64


# --------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------

def rng_for(name):
    """One fixed-seed generator per model, so models do not depend on order."""
    return np.random.default_rng(sum(name.encode()) * 7919 + 17)


def weights(rng, shape, lo=-1.0, hi=1.0, step=1 / 16):
    """Random float32 weights on a 1/16 grid: short, exact in text format."""
    v = np.round(rng.uniform(lo, hi, size=shape) / step) * step
    return v.astype(np.float32)


def inputs(rng, shape, step=1 / 64):
    """Random non-zero float32 inputs in [-2, 2] on a 1/64 grid."""
    v = np.round(rng.uniform(-2.0, 2.0, size=shape) / step) * step
    v[v == 0] = step
    return v.astype(np.float32)


def f32_tensor(name, arr):
    """Initializer with float_data (readable in text format)."""
    arr = np.asarray(arr, dtype=np.float32)
    return helper.make_tensor(name, F32, arr.shape, arr.flatten().tolist())


def raw_tensor(name, arr):
    """Initializer with raw_data (what torch exports)."""
    return numpy_helper.from_array(np.ascontiguousarray(arr), name)


def i64_const(out, values, name, scalar=False):
    """Constant node producing an int64 tensor (1-D, or a scalar)."""
    vals = list(values)
    dims = [] if scalar else [len(vals)]
    return helper.make_node("Constant", [], [out], name=name,
                            value=helper.make_tensor(out + "_value", I64, dims, vals))


def vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def model(graph, opset=17, extra_opsets=()):
    opsets = [helper.make_opsetid("", opset)]
    opsets += [helper.make_opsetid(d, v) for d, v in extra_opsets]
    m = helper.make_model(graph, opset_imports=opsets, producer_name=PRODUCER)
    m.ir_version = IR_VERSION
    return m


def write_bytes(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def write_text(path, m):
    write_bytes(path, text_format.MessageToString(m).encode())


def write_binary(path, m):
    write_bytes(path, m.SerializeToString())


def write_npz(path, arrays):
    """np.savez equivalent with fixed zip timestamps (np.savez stamps 'now')."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_STORED) as zf:
        for key, arr in arrays.items():
            npy = io.BytesIO()
            np.lib.format.write_array(npy, np.ascontiguousarray(arr),
                                      allow_pickle=False)
            info = zipfile.ZipInfo(key + ".npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = 0o644 << 16
            zf.writestr(info, npy.getvalue())
    write_bytes(path, buf.getvalue())


def softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def f64(a):
    return np.asarray(a, dtype=np.float64)


# --------------------------------------------------------------------------
# valid models: each returns (ModelProto, {input: array}, {output: array})
# --------------------------------------------------------------------------

def make_mlp():
    r = rng_for("mlp")
    w1 = weights(r, (16, 8))      # Gemm transB=1 (torch nn.Linear layout)
    b1 = weights(r, (16,))
    w2 = weights(r, (16, 4))      # Gemm transB=0, no bias (C omitted)
    x = inputs(r, (2, 8))
    g = helper.make_graph(
        [helper.make_node("Gemm", ["x", "fc1.weight", "fc1.bias"], ["h"],
                          name="fc1", transB=1),
         helper.make_node("Relu", ["h"], ["h_relu"], name="relu"),
         helper.make_node("Gemm", ["h_relu", "fc2.weight"], ["logits"], name="fc2"),
         helper.make_node("Softmax", ["logits"], ["y"], name="softmax", axis=-1)],
        "mlp", [vi("x", F32, [2, 8])], [vi("y", F32, [2, 4])],
        [f32_tensor("fc1.weight", w1), f32_tensor("fc1.bias", b1),
         f32_tensor("fc2.weight", w2)],
        doc_string="x[2,8] -> Gemm(16, bias, transB=1) -> Relu -> Gemm(4) -> Softmax")
    h = np.maximum(f64(x) @ f64(w1).T + f64(b1), 0.0)
    y = softmax(h @ f64(w2), axis=-1)
    return model(g), {"x": x}, {"y": y.astype(np.float32)}


def make_dynamic(mix):
    """Dynamic shapes: x[batch, seq, 8] (ONNX dim names) -> MatMul(4) -> Add -> Softmax over the
    features (every row on its own: both dims may be padded), or (mix) ReduceMean over seq, which
    mixes along seq (batch may be padded, seq may not)."""
    r = rng_for("dynamic_mix" if mix else "dynamic")
    w = weights(r, (8, 4))
    b = weights(r, (4,))
    x = inputs(r, (2, 5, 8))
    last = (helper.make_node("ReduceMean", ["h"], ["y"], name="mean_seq", axes=[1], keepdims=0) if mix
            else helper.make_node("Softmax", ["h"], ["y"], name="softmax", axis=-1))
    g = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["xw"], name="proj"),
         helper.make_node("Add", ["xw", "b"], ["h"], name="bias"), last],
        "dynamic_mix" if mix else "dynamic", [vi("x", F32, ["batch", "seq", 8])],
        [vi("y", F32, ["batch", 4] if mix else ["batch", "seq", 4])],
        [f32_tensor("w", w), f32_tensor("b", b)],
        doc_string="x[batch,seq,8] -> MatMul(4) -> Add -> " + ("ReduceMean(seq)" if mix else "Softmax"))
    h = f64(x) @ f64(w) + f64(b)
    y = h.mean(axis=1) if mix else softmax(h, axis=-1)
    return model(g), {"x": x}, {"y": y.astype(np.float32)}


def make_dynamic_stride():
    """Dynamic shapes with an output axis that is half a dim: x[batch, seq, 8] -> MatMul(4) ->
    every second step along seq (Slice, step 2) -> y[batch, seq / 2, 4] (a recognizer whose output
    length is its input width over its stride)."""
    r = rng_for("dynamic_stride")
    w = weights(r, (8, 4))
    x = inputs(r, (2, 6, 8))
    g = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["xw"], name="proj"),
         helper.make_node("Slice", ["xw", "zero", "big", "one", "two"], ["y"], name="every_second")],
        "dynamic_stride", [vi("x", F32, ["batch", "seq", 8])], [vi("y", F32, ["batch", "half_seq", 4])],
        [f32_tensor("w", w)] + [numpy_helper.from_array(np.array([v], np.int64), n)
                                 for n, v in (("zero", 0), ("big", 2**62), ("one", 1), ("two", 2))],
        doc_string="x[batch,seq,8] -> MatMul(4) -> Slice(axis 1, step 2) -> y[batch,seq/2,4]")
    y = (f64(x) @ f64(w))[:, ::2, :]
    return model(g), {"x": x}, {"y": y.astype(np.float32)}


def make_seq_first_linear():
    """A sequence-first linear layer (torch's MultiheadAttention export): the [B, S, K] activation
    is transposed to [S, B, K] before x·W + b. kiln computes it as B products of S rows."""
    r = rng_for("seq_first_linear")
    w = weights(r, (16, 24))
    b = weights(r, (24,))
    x = inputs(r, (4, 20, 16))
    g = helper.make_graph(
        [helper.make_node("Transpose", ["x"], ["xt"], name="to_seq_first", perm=[1, 0, 2]),
         helper.make_node("MatMul", ["xt", "w"], ["h"], name="proj"),
         helper.make_node("Add", ["h", "b"], ["y"], name="bias")],
        "seq_first_linear", [vi("x", F32, [4, 20, 16])], [vi("y", F32, [20, 4, 24])],
        [f32_tensor("w", w), f32_tensor("b", b)],
        doc_string="x[4,20,16] -> Transpose(1,0,2) -> MatMul(16x24) -> Add(bias)")
    y = np.transpose(f64(x), (1, 0, 2)) @ f64(w) + f64(b)
    return model(g), {"x": x}, {"y": y.astype(np.float32)}


def make_views():
    """torch's sequence-first attention output projection and reads of its result in place:
    Gemm on [S·B, K] rows, regrouped to [S, B, N] and transposed batch-first, plus a residual
    (kiln moves the transpose onto the Gemm's input: the product writes [B, S, N] and takes the
    residual add); then a Relu of a column slice and a scale of a transpose that keeps the last
    axis, both read by their elementwise kernels in place."""
    r = rng_for("views")
    s, b, k, n = 20, 4, 16, 24
    x = inputs(r, (s * b, k))
    res = inputs(r, (b, s, n))
    w, bias = weights(r, (n, k)), weights(r, (n,))
    scale = weights(r, (n,))
    g = helper.make_graph(
        [helper.make_node("Gemm", ["x", "w", "bias"], ["h"], name="out_proj", transB=1),
         helper.make_node("Reshape", ["h", "sbn"], ["h3"], name="split_rows"),
         helper.make_node("Transpose", ["h3"], ["hb"], name="batch_first", perm=[1, 0, 2]),
         helper.make_node("Add", ["hb", "res"], ["sum"], name="residual"),
         helper.make_node("Slice", ["sum", "start", "end", "axis"], ["cols"], name="columns"),
         helper.make_node("Relu", ["cols"], ["y"], name="relu"),
         helper.make_node("Transpose", ["sum"], ["st"], name="seq_first", perm=[1, 0, 2]),
         helper.make_node("Mul", ["st", "scale"], ["z"], name="scaled")],
        "views", [vi("x", F32, [s * b, k]), vi("res", F32, [b, s, n])],
        [vi("y", F32, [b, s, 20]), vi("z", F32, [s, b, n])],
        [f32_tensor("w", w), f32_tensor("bias", bias), f32_tensor("scale", scale),
         helper.make_tensor("sbn", TensorProto.INT64, [3], [s, b, n]),
         helper.make_tensor("start", TensorProto.INT64, [1], [0]),
         helper.make_tensor("end", TensorProto.INT64, [1], [20]),
         helper.make_tensor("axis", TensorProto.INT64, [1], [-1])],
        doc_string="x[80,16] -> Gemm(24, transB) -> [20,4,24] -> Transpose(1,0,2) + res -> "
                   "y = Relu(columns 0:20), z = Transpose(1,0,2) * scale")
    total = np.transpose((f64(x) @ f64(w).T + f64(bias)).reshape(s, b, n), (1, 0, 2)) + f64(res)
    y = np.maximum(total[:, :, :20], 0.0)
    z = np.transpose(total, (1, 0, 2)) * f64(scale)
    return model(g), {"x": x, "res": res}, {"y": y.astype(np.float32), "z": z.astype(np.float32)}


def make_einsum():
    """Attention written with Einsum (as torch.einsum exports it): scores 'bhqd,bhkd->bhqk',
    Softmax, then 'bhqk,bhkd->bhqd'; and the diagonal of each head's query self-scores
    ('...ii->...i'). kiln lowers each Einsum to batched MatMul, reshapes and a strided slice."""
    r = rng_for("einsum")
    b, h, sq, sk, d = 2, 3, 7, 5, 8
    q, k, v = inputs(r, (b, h, sq, d)), inputs(r, (b, h, sk, d)), inputs(r, (b, h, sk, d))
    g = helper.make_graph(
        [helper.make_node("Einsum", ["q", "k"], ["s"], name="scores", equation="bhqd,bhkd->bhqk"),
         helper.make_node("Softmax", ["s"], ["p"], name="softmax", axis=-1),
         helper.make_node("Einsum", ["p", "v"], ["y"], name="pv", equation="bhqk,bhkd->bhqd"),
         helper.make_node("Einsum", ["q", "q"], ["qq"], name="self_scores", equation="bhid,bhjd->bhij"),
         helper.make_node("Einsum", ["qq"], ["z"], name="diagonal", equation="...ii->...i")],
        "einsum", [vi("q", F32, [b, h, sq, d]), vi("k", F32, [b, h, sk, d]), vi("v", F32, [b, h, sk, d])],
        [vi("y", F32, [b, h, sq, d]), vi("z", F32, [b, h, sq])], [],
        doc_string="y = softmax(einsum(bhqd,bhkd->bhqk)) einsum(bhqk,bhkd->bhqd); "
                   "z = diagonal of einsum(bhid,bhjd->bhij)(q, q)")
    s = np.einsum("bhqd,bhkd->bhqk", f64(q), f64(k))
    pr = np.exp(s - s.max(axis=-1, keepdims=True))
    pr /= pr.sum(axis=-1, keepdims=True)
    y = np.einsum("bhqk,bhkd->bhqd", pr, f64(v))
    z = np.einsum("bhid,bhid->bhi", f64(q), f64(q))
    return model(g), {"q": q, "k": k, "v": v}, {"y": y.astype(np.float32), "z": z.astype(np.float32)}


def qdq_matmul_graph(name, x_shape, y_shape, initializers, doc, w_axis=None):
    """x -> QuantizeLinear/DequantizeLinear (x_scale, x_zero) -> MatMul with DequantizeLinear(w_q,
    w_scale) weights (per column when w_axis=1): the graph of the QDQ product models."""
    w_attrs = {} if w_axis is None else {"axis": w_axis}
    return helper.make_graph(
        [helper.make_node("QuantizeLinear", ["x", "x_scale", "x_zero"], ["xq"], name="quant_x"),
         helper.make_node("DequantizeLinear", ["xq", "x_scale", "x_zero"], ["xd"], name="dequant_x"),
         helper.make_node("DequantizeLinear", ["w_q", "w_scale"], ["wd"], name="dequant_w", **w_attrs),
         helper.make_node("MatMul", ["xd", "wd"], ["y"], name="matmul")],
        name, [vi("x", F32, list(x_shape))], [vi("y", F32, list(y_shape))], initializers, doc_string=doc)


def make_qdq_matmul():
    """An explicitly quantized (QDQ) product: int8 activation per tensor, int8 weights per column."""
    r = rng_for("qdq_matmul")
    x = inputs(r, (2, 16))
    wq = r.integers(-127, 128, size=(16, 8)).astype(np.int8)
    ws = (np.arange(8, dtype=np.float32) + 1) / np.float32(256)
    xs = np.float32(1 / 64)
    g = qdq_matmul_graph(
        "qdq_matmul", (2, 16), (2, 8),
        [numpy_helper.from_array(np.array(xs, np.float32), "x_scale"),
         numpy_helper.from_array(np.array(0, np.int8), "x_zero"),
         numpy_helper.from_array(wq, "w_q"), numpy_helper.from_array(ws, "w_scale")],
        "x[2,16] -> QuantizeLinear/DequantizeLinear (int8, 1/64) -> MatMul with int8 weights per column", w_axis=1)
    xq = np.clip(np.round(f64(x) / f64(xs)), -128, 127)  # numpy rounds half to even, as ONNX
    y = (xq * f64(xs)).astype(np.float32).astype(np.float64) @ (f64(wq) * f64(ws)).astype(np.float32).astype(np.float64)
    return model(g), {"x": x}, {"y": y.astype(np.float32)}


def make_qdq_matmul_u8():
    """onnxruntime's default QDQ form (U8S8): uint8 activations with a zero point, int8 weights."""
    r = rng_for("qdq_matmul_u8")
    x = inputs(r, (2, 16))
    wq = r.integers(-127, 128, size=(16, 8)).astype(np.int8)
    ws = np.float32(1 / 128)
    xs, xz = np.float32(1 / 32), np.uint8(100)
    g = qdq_matmul_graph(
        "qdq_matmul_u8", (2, 16), (2, 8),
        [numpy_helper.from_array(np.array(xs, np.float32), "x_scale"),
         numpy_helper.from_array(np.array(xz, np.uint8), "x_zero"),
         numpy_helper.from_array(wq, "w_q"), numpy_helper.from_array(np.array(ws, np.float32), "w_scale")],
        "x[2,16] -> QuantizeLinear/DequantizeLinear (uint8, 1/32, zero point 100) -> MatMul with int8 weights")
    xq = np.clip(np.round(f64(x) / f64(xs)) + 100, 0, 255)
    y = ((xq - 100) * f64(xs)).astype(np.float32).astype(np.float64) @ (f64(wq) * f64(ws)).astype(np.float32).astype(np.float64)
    return model(g), {"x": x}, {"y": y.astype(np.float32)}


def make_qdq_conv_u8():
    """onnxruntime's static QDQ convolution (U8S8): a uint8 image with zero point 131, padded by 1,
    int8 weights per output channel, a float bias. Padding is zero after dequantization, so the
    int8 kernel's padded taps must hold the zero point (131), not 0: the border pixels check it."""
    r = rng_for("qdq_conv_u8")
    x = inputs(r, (2, 32, 7, 7))
    wq = r.integers(-127, 128, size=(24, 32, 3, 3)).astype(np.int8)
    ws = ((np.arange(24, dtype=np.float32) % 5) + 1) / np.float32(2048)
    b = weights(r, (24,))
    xs, xz = np.float32(1 / 64), np.uint8(131)
    g = helper.make_graph(
        [helper.make_node("QuantizeLinear", ["x", "x_scale", "x_zero"], ["xq"], name="quant_x"),
         helper.make_node("DequantizeLinear", ["xq", "x_scale", "x_zero"], ["xd"], name="dequant_x"),
         helper.make_node("DequantizeLinear", ["w_q", "w_scale"], ["wd"], name="dequant_w", axis=0),
         helper.make_node("Conv", ["xd", "wd", "b"], ["y"], name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1])],
        "qdq_conv_u8", [vi("x", F32, [2, 32, 7, 7])], [vi("y", F32, [2, 24, 7, 7])],
        [numpy_helper.from_array(np.array(xs, np.float32), "x_scale"),
         numpy_helper.from_array(np.array(xz, np.uint8), "x_zero"),
         numpy_helper.from_array(wq, "w_q"), numpy_helper.from_array(ws, "w_scale"), raw_tensor("b", b)],
        doc_string="x[2,32,7,7] -> QuantizeLinear/DequantizeLinear (uint8, 1/64, zero point 131) -> "
                   "Conv 3x3 pad 1 with int8 weights per output channel and a float bias")
    f32 = lambda a: f64(np.asarray(a, np.float32))
    xq = np.clip(np.round(f64(np.asarray(x, np.float32) / xs)) + 131, 0, 255)
    xd = f32((xq - 131) * f64(xs))
    y = conv2d_ref(xd, f32(f64(wq) * f64(ws)[:, None, None, None]), f64(b), 1)
    return model(g), {"x": x}, {"y": y.astype(np.float32)}


# float8e4m3fn (ONNX data type 17; Debian's onnx 1.12 predates the enum, so tensors are built by
# hand): bits <-> values, round to nearest even, saturating at 448 (ONNX's default).
FLOAT8E4M3FN = 17


def e4m3_values():
    """The 127 non-negative finite e4m3 values, ascending (index = bit pattern)."""
    return [(m / 8) * 2.0 ** -6 if e == 0 else (1 + m / 8) * 2.0 ** (e - 7)
            for e in range(16) for m in range(8)][:127]


def e4m3_round(x):
    """Nearest-even e4m3 bit patterns of float64 values, saturating to ±448."""
    vals = np.array(e4m3_values())
    a = np.minimum(np.abs(x), 448.0)
    i = np.clip(np.searchsorted(vals, a), 1, 126)  # vals[i-1] < a <= vals[i]
    lo, hi = vals[i - 1], vals[i]
    up = (a - lo > hi - a) | ((a - lo == hi - a) & (i % 2 == 0))  # a tie goes to the even pattern
    bits = np.where(up, i, i - 1)
    bits = np.where(a == 0, 0, bits)
    return (bits | np.where(np.signbit(x), 0x80, 0)).astype(np.uint8)


def e4m3_decode(bits):
    vals = np.array(e4m3_values() + [np.nan])
    return np.where(bits & 0x80, -1.0, 1.0) * vals[bits & 0x7f]


def f8_tensor(name, bits):
    t = onnx.TensorProto()
    t.name, t.data_type = name, FLOAT8E4M3FN
    t.dims.extend(bits.shape)
    t.raw_data = np.ascontiguousarray(bits, np.uint8).tobytes()
    return t


def make_qdq_matmul_fp8():
    """An fp8 QDQ product (opset 19): float8e4m3fn activation per tensor, fp8 weights per column."""
    r = rng_for("qdq_matmul_fp8")
    x = inputs(r, (16, 32))
    w = weights(r, (32, 16))
    ws = (np.abs(f64(w)).max(axis=0) / 448).astype(np.float32)
    wq = e4m3_round(f64(w) / f64(ws))
    xs = np.float32(1 / 256)
    g = qdq_matmul_graph(
        "qdq_matmul_fp8", (16, 32), (16, 16),
        [numpy_helper.from_array(np.array(xs, np.float32), "x_scale"),
         f8_tensor("x_zero", np.zeros((), np.uint8)), f8_tensor("w_q", wq),
         numpy_helper.from_array(ws, "w_scale")],
        "x[16,32] -> QuantizeLinear/DequantizeLinear (float8e4m3fn, 1/256) -> MatMul with fp8 weights per column", w_axis=1)
    xq = e4m3_decode(e4m3_round(f64(f64(x).astype(np.float32) / xs)))
    y = (xq * f64(xs)).astype(np.float32).astype(np.float64) @ (e4m3_decode(wq) * f64(ws)).astype(np.float32).astype(np.float64)
    return model(g, opset=19), {"x": x}, {"y": y.astype(np.float32)}


def make_conv16():
    """A residual block with 16/32 channels: the convolutions int8 quantization covers (2-D,
    ungrouped, C % 16 == 0)."""
    r = rng_for("conv16")
    w1, b1 = weights(r, (32, 16, 3, 3), -0.25, 0.25), weights(r, (32,))
    w2, b2 = weights(r, (16, 32, 1, 1), -0.25, 0.25), weights(r, (16,))
    x = inputs(r, (2, 16, 7, 7))
    g = helper.make_graph(
        [helper.make_node("Conv", ["x", "conv1.weight", "conv1.bias"], ["c1"], name="conv1",
                          kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["c1"], ["a1"], name="relu1"),
         helper.make_node("Conv", ["a1", "conv2.weight", "conv2.bias"], ["c2"], name="conv2",
                          kernel_shape=[1, 1]),
         helper.make_node("Add", ["c2", "x"], ["y"], name="residual")],
        "conv16", [vi("x", F32, [2, 16, 7, 7])], [vi("y", F32, [2, 16, 7, 7])],
        [raw_tensor("conv1.weight", w1), raw_tensor("conv1.bias", b1),
         raw_tensor("conv2.weight", w2), raw_tensor("conv2.bias", b2)],
        doc_string="x[2,16,7,7] -> Conv(32,3x3,pad1,bias) -> Relu -> Conv(16,1x1,bias) -> + x")
    a1 = np.maximum(conv2d_ref(f64(x), f64(w1), f64(b1), 1), 0.0)
    y = conv2d_ref(a1, f64(w2), f64(b2), 0) + f64(x)
    return model(g), {"x": x}, {"y": y.astype(np.float32)}


def make_qdq_pool():
    """onnxruntime-style QDQ around a MaxPool and a Reshape between two int8 products: kiln moves
    the DequantizeLinear below them (int8 pooling), and the Q/DQ pairs with equal parameters
    cancel."""
    r = rng_for("qdq_pool")
    x = inputs(r, (2, 16, 6, 6))
    w1 = r.integers(-127, 128, size=(16, 16, 3, 3)).astype(np.int8)
    w2 = r.integers(-127, 128, size=(144, 8)).astype(np.int8)
    b1 = weights(r, (16,))
    xs, as_, w1s, w2s = np.float32(1 / 64), np.float32(1 / 8), np.float32(1 / 1024), np.float32(1 / 256)
    def qdq(name, inp, scale):
        return [helper.make_node("QuantizeLinear", [inp, scale, "zero"], [name + "_q"], name="quant_" + name),
                helper.make_node("DequantizeLinear", [name + "_q", scale, "zero"], [name + "_d"], name="dequant_" + name)]
    g = helper.make_graph(
        qdq("x", "x", "x_scale") +
        [helper.make_node("DequantizeLinear", ["w1_q", "w1_scale"], ["w1"], name="dequant_w1"),
         helper.make_node("Conv", ["x_d", "w1", "b1"], ["c1"], name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["c1"], ["a1"], name="relu")] +
        qdq("a1", "a1", "a_scale") +
        [helper.make_node("MaxPool", ["a1_d"], ["p"], name="pool", kernel_shape=[2, 2], strides=[2, 2])] +
        qdq("p", "p", "a_scale") +
        [helper.make_node("Reshape", ["p_d", "shape"], ["f"], name="flatten")] +
        qdq("f", "f", "a_scale") +
        [helper.make_node("DequantizeLinear", ["w2_q", "w2_scale"], ["w2"], name="dequant_w2"),
         helper.make_node("MatMul", ["f_d", "w2"], ["y"], name="fc")],
        "qdq_pool", [vi("x", F32, [2, 16, 6, 6])], [vi("y", F32, [2, 8])],
        [numpy_helper.from_array(np.array(xs), "x_scale"), numpy_helper.from_array(np.array(as_), "a_scale"),
         numpy_helper.from_array(np.array(0, np.int8), "zero"), numpy_helper.from_array(w1, "w1_q"),
         numpy_helper.from_array(np.array(w1s), "w1_scale"), raw_tensor("b1", b1),
         numpy_helper.from_array(w2, "w2_q"), numpy_helper.from_array(np.array(w2s), "w2_scale"),
         numpy_helper.from_array(np.array([2, 144], np.int64), "shape")],
        doc_string="x[2,16,6,6] -> QDQ -> Conv(int8) -> Relu -> QDQ -> MaxPool 2x2 -> QDQ -> Reshape [2,144] -> QDQ -> MatMul(int8)")
    f32 = lambda a: f64(np.asarray(a, np.float32))
    q = lambda v, s: np.clip(np.round(f64(np.asarray(v, np.float32) / s)), -128, 127)  # ONNX: x / scale in float32
    xd = f32(q(x, xs) * f64(xs))
    a1 = np.maximum(conv2d_ref(xd, f32(f64(w1) * f64(w1s)), f64(b1), 1), 0.0)
    ad = f32(q(a1, as_) * f64(as_))
    p = ad.reshape(2, 16, 3, 2, 3, 2).max(axis=(3, 5))
    y = p.reshape(2, 144) @ f32(f64(w2) * f64(w2s))
    return model(g), {"x": x}, {"y": y.astype(np.float32)}


def make_pool_same():
    """AveragePool with auto_pad and count_include_pad=1 where the total padding is odd (H 8,
    kernel 3, stride 2: one row of padding, at the end for SAME_UPPER, at the start for
    SAME_LOWER): the divisor counts the auto pads, so each side's pad must be the right one."""
    r = rng_for("pool_same")
    x = inputs(r, (1, 2, 8, 9))
    attrs = dict(kernel_shape=[3, 3], strides=[2, 2], count_include_pad=1)
    g = helper.make_graph(
        [helper.make_node("AveragePool", ["x"], ["y"], name="pool_upper", auto_pad="SAME_UPPER", **attrs),
         helper.make_node("AveragePool", ["x"], ["lower"], name="pool_lower", auto_pad="SAME_LOWER", **attrs)],
        "pool_same", [vi("x", F32, [1, 2, 8, 9])], [vi("y", F32, [1, 2, 4, 5]), vi("lower", F32, [1, 2, 4, 5])],
        doc_string="x[1,2,8,9] -> AveragePool 3x3/2 count_include_pad=1, auto_pad SAME_UPPER -> y, SAME_LOWER -> lower")

    def avg(pads):  # (top, bottom, left, right): every window lies inside the padded input
        xp = np.pad(f64(x), ((0, 0), (0, 0), pads[:2], pads[2:]))
        return np.stack([np.stack([xp[:, :, 2 * i:2 * i + 3, 2 * j:2 * j + 3].mean(axis=(2, 3))
                                   for j in range(5)], -1) for i in range(4)], -2)
    # H: total (4-1)*2+3-8 = 1; W: total (5-1)*2+3-9 = 2.
    return model(g), {"x": x}, {"y": avg((0, 1, 1, 1)).astype(np.float32),
                                "lower": avg((1, 0, 1, 1)).astype(np.float32)}


def make_attention():
    """BERT's attention heads: Q, K, V [B, S, H, D] read as [B, H, S, D] (K transposed to
    [B, H, D, S]), scores / sqrt(D) + an additive padding mask, softmax, · V, the heads transposed
    back. In fp16/bf16 kiln runs it as one fused attention kernel."""
    r = rng_for("attention")
    b, s, h, d = 2, 9, 2, 16
    q, k, v = inputs(r, (b, s, h, d)), inputs(r, (b, s, h, d)), inputs(r, (b, s, h, d))
    mask = np.zeros((b, 1, 1, s), np.float32)
    mask[1, :, :, 6:] = -10000.0  # the second sequence's last 3 keys are padding
    bhsd = [0, 2, 1, 3]
    g = helper.make_graph(
        [helper.make_node("Transpose", ["q"], ["qt"], name="q_heads", perm=bhsd),
         helper.make_node("Transpose", ["k"], ["kt"], name="k_heads_t", perm=[0, 2, 3, 1]),
         helper.make_node("Transpose", ["v"], ["vt"], name="v_heads", perm=bhsd),
         helper.make_node("MatMul", ["qt", "kt"], ["scores"], name="qk"),
         helper.make_node("Div", ["scores", "sqrt_d"], ["scaled"], name="scale"),
         helper.make_node("Add", ["scaled", "mask"], ["masked"], name="mask_add"),
         helper.make_node("Softmax", ["masked"], ["probs"], name="softmax", axis=-1),
         helper.make_node("MatMul", ["probs", "vt"], ["ctx"], name="pv"),
         helper.make_node("Transpose", ["ctx"], ["y"], name="merge_heads", perm=bhsd)],
        "attention", [vi("q", F32, [b, s, h, d]), vi("k", F32, [b, s, h, d]), vi("v", F32, [b, s, h, d]),
                      vi("mask", F32, [b, 1, 1, s])],
        [vi("y", F32, [b, s, h, d])], [f32_tensor("sqrt_d", np.array(4.0, np.float32))],
        doc_string="q, k, v [2,9,2,16] -> heads -> softmax(q·kT / 4 + mask) · v -> [2,9,2,16]")
    qt, kt, vt = (np.transpose(f64(a), bhsd) for a in (q, k, v))
    probs = softmax(qt @ np.swapaxes(kt, -1, -2) / 4.0 + f64(mask), axis=-1)
    y = np.transpose(probs @ vt, bhsd)
    return model(g), {"q": q, "k": k, "v": v, "mask": mask}, {"y": y.astype(np.float32)}


def make_attention_sdpa():
    """scaled_dot_product_attention as PyTorch's ONNX exporters write it (torch.onnx's torchlib,
    the torch.export-based default; TorchScript's symbolic is the same without the last Where):
    the scale 1/sqrt(D) taken from Q's shape, its square root multiplied into Q and into Kᵀ before
    the product, a boolean mask (from an int64 attention_mask) made additive by Where(m, 0, -inf),
    and Where(IsNaN(p), 0, p) after the Softmax (a row whose keys are all masked gives 0, not NaN).
    Q, K, V [B, H, S, D]; the third sequence is all padding, so its rows are 0."""
    r = rng_for("attention_sdpa")
    b, h, s, d = 3, 2, 9, 16
    q, k, v = inputs(r, (b, h, s, d)), inputs(r, (b, h, s, d)), inputs(r, (b, h, s, d))
    am = np.ones((b, s), np.int64)
    am[1, 6:] = 0  # the second sequence's last 3 keys are padding
    am[2, :] = 0   # the third is all padding
    g = helper.make_graph(
        [helper.make_node("Shape", ["q"], ["q_shape"], name="q_shape"),
         helper.make_node("Slice", ["q_shape", "minus_one", "int_max"], ["q_last"], name="q_last"),
         helper.make_node("Cast", ["q_last"], ["d_f"], name="d_float", to=F32),
         helper.make_node("Sqrt", ["d_f"], ["sqrt_d"], name="sqrt_d"),
         helper.make_node("Div", ["one", "sqrt_d"], ["scale"], name="scale"),
         helper.make_node("Sqrt", ["scale"], ["sqrt_scale"], name="sqrt_scale"),
         helper.make_node("Transpose", ["k"], ["kt"], name="k_t", perm=[0, 1, 3, 2]),
         helper.make_node("Mul", ["q", "sqrt_scale"], ["q_scaled"], name="q_scaled"),
         helper.make_node("Mul", ["kt", "sqrt_scale"], ["kt_scaled"], name="kt_scaled"),
         helper.make_node("MatMul", ["q_scaled", "kt_scaled"], ["scores"], name="qk"),
         helper.make_node("Cast", ["attention_mask"], ["keep"], name="keep", to=TensorProto.BOOL),
         helper.make_node("Unsqueeze", ["keep", "axes12"], ["keep4"], name="keep4"),
         helper.make_node("Where", ["keep4", "zero", "neg_inf"], ["mask"], name="additive_mask"),
         helper.make_node("Add", ["scores", "mask"], ["masked"], name="mask_add"),
         helper.make_node("Softmax", ["masked"], ["probs"], name="softmax", axis=-1),
         helper.make_node("IsNaN", ["probs"], ["nan"], name="nan"),
         helper.make_node("Where", ["nan", "zero", "probs"], ["probs0"], name="nan_to_zero"),
         helper.make_node("MatMul", ["probs0", "v"], ["y"], name="pv")],
        "attention_sdpa", [vi("q", F32, [b, h, s, d]), vi("k", F32, [b, h, s, d]), vi("v", F32, [b, h, s, d]),
                           vi("attention_mask", I64, [b, s])],
        [vi("y", F32, [b, h, s, d])],
        [f32_tensor("one", np.array([1.0], np.float32)), f32_tensor("zero", np.array(0.0, np.float32)),
         f32_tensor("neg_inf", np.array(-np.inf, np.float32)),
         numpy_helper.from_array(np.array([-1], np.int64), "minus_one"),
         numpy_helper.from_array(np.array([2**63 - 1], np.int64), "int_max"),
         numpy_helper.from_array(np.array([1, 2], np.int64), "axes12")],
        doc_string="torch.onnx's scaled_dot_product_attention: q, k, v [3,2,9,16], attention_mask [3,9] -> [3,2,9,16]")
    qs = f64(q) * np.sqrt(1 / 4.0)
    ks = np.swapaxes(f64(k), -1, -2) * np.sqrt(1 / 4.0)
    add = np.where(am[:, None, None, :] != 0, 0.0, -np.inf)
    with np.errstate(invalid="ignore"):
        probs = softmax(qs @ ks + add, axis=-1)
    probs = np.where(np.isnan(probs), 0.0, probs)
    y = probs @ f64(v)
    return model(g, opset=18), {"q": q, "k": k, "v": v, "attention_mask": am}, {"y": y.astype(np.float32)}


def conv2d_ref(x, w, b, pad):
    n, c, hh, ww = x.shape
    k, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    ho, wo = hh + 2 * pad - kh + 1, ww + 2 * pad - kw + 1
    out = np.zeros((n, k, ho, wo))
    for i in range(kh):
        for j in range(kw):
            out += np.einsum("nchw,kc->nkhw", xp[:, :, i:i + ho, j:j + wo], w[:, :, i, j])
    return out + b[None, :, None, None]


def make_conv_bn_relu():
    r = rng_for("conv_bn_relu")
    w = weights(r, (4, 3, 3, 3))
    b = weights(r, (4,))
    scale = weights(r, (4,), 0.5, 1.5)
    bias = weights(r, (4,))
    mean = weights(r, (4,), -0.5, 0.5)
    var = weights(r, (4,), 0.5, 2.0)
    eps = 1e-5
    x = inputs(r, (1, 3, 8, 8))
    g = helper.make_graph(
        [helper.make_node("Conv", ["x", "conv.weight", "conv.bias"], ["c"], name="conv",
                          kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1]),
         helper.make_node("BatchNormalization",
                          ["c", "bn.scale", "bn.bias", "bn.mean", "bn.var"], ["n"],
                          name="bn", epsilon=eps),
         helper.make_node("Relu", ["n"], ["a"], name="relu"),
         helper.make_node("MaxPool", ["a"], ["p"], name="pool",
                          kernel_shape=[2, 2], strides=[2, 2]),
         helper.make_node("GlobalAveragePool", ["p"], ["gap"], name="gap"),
         helper.make_node("Flatten", ["gap"], ["y"], name="flatten", axis=1)],
        "conv_bn_relu", [vi("x", F32, [1, 3, 8, 8])], [vi("y", F32, [1, 4])],
        # raw_data initializers here (the torch-export encoding); the other
        # text models use float_data, so the importer sees both.
        [raw_tensor("conv.weight", w), raw_tensor("conv.bias", b),
         raw_tensor("bn.scale", scale), raw_tensor("bn.bias", bias),
         raw_tensor("bn.mean", mean), raw_tensor("bn.var", var)],
        doc_string="x[1,3,8,8] -> Conv(4,3x3,pad1,bias) -> BatchNormalization -> "
                   "Relu -> MaxPool(2x2) -> GlobalAveragePool -> Flatten -> [1,4]")
    c = conv2d_ref(f64(x), f64(w), f64(b), 1)
    s = f64(scale)[None, :, None, None]
    n = (c - f64(mean)[None, :, None, None]) / np.sqrt(f64(var)[None, :, None, None] + eps)
    a = np.maximum(n * s + f64(bias)[None, :, None, None], 0.0)
    p = a.reshape(1, 4, 4, 2, 4, 2).max(axis=(3, 5))
    y = p.mean(axis=(2, 3))
    return model(g), {"x": x}, {"y": y.astype(np.float32)}


def make_shape_chain():
    r = rng_for("shape_chain")
    x = inputs(r, (2, 3, 4))
    g = helper.make_graph(
        [helper.make_node("Shape", ["x"], ["shape"], name="shape"),
         i64_const("idx0", [0], "const_idx0", scalar=True),
         helper.make_node("Gather", ["shape", "idx0"], ["dim0"], name="gather", axis=0),
         i64_const("axes0", [0], "const_axes0"),
         helper.make_node("Unsqueeze", ["dim0", "axes0"], ["dim0_1d"], name="unsqueeze"),
         i64_const("minus1", [-1], "const_minus1"),
         helper.make_node("Concat", ["dim0_1d", "minus1"], ["new_shape"],
                          name="concat", axis=0),
         helper.make_node("Reshape", ["x", "new_shape"], ["y"], name="reshape")],
        "shape_chain", [vi("x", F32, [2, 3, 4])], [vi("y", F32, [2, 12])],
        doc_string="x[2,3,4] -> Shape -> Gather(0) -> Unsqueeze -> Concat([-1]) "
                   "-> Reshape(x) -> [2,12]")
    return model(g), {"x": x}, {"y": x.reshape(2, 12)}


def make_opset11_mix():
    r = rng_for("opset11_mix")
    x = inputs(r, (2, 6, 4))
    lo, hi = np.float32(-0.5), np.float32(0.75)
    g = helper.make_graph(
        [# opset 11 Softmax: coerces to 2-D at `axis`, i.e. softmax over 6*4 values
         helper.make_node("Softmax", ["x"], ["sm"], name="softmax", axis=1),
         helper.make_node("Split", ["x"], ["xa", "xb"], name="split", axis=1, split=[2, 4]),
         # Clip-11 takes min/max as (scalar) inputs
         helper.make_node("Clip", ["xa", "clip_min", "clip_max"], ["clipped"], name="clip"),
         helper.make_node("ReduceMean", ["xb"], ["mean"], name="reduce_mean",
                          axes=[2], keepdims=1),
         helper.make_node("Squeeze", ["mean"], ["sq"], name="squeeze", axes=[2]),
         helper.make_node("Unsqueeze", ["sq"], ["unsq"], name="unsqueeze", axes=[0])],
        "opset11_mix", [vi("x", F32, [2, 6, 4])],
        [vi("sm", F32, [2, 6, 4]), vi("clipped", F32, [2, 2, 4]),
         vi("unsq", F32, [1, 2, 4])],
        [f32_tensor("clip_min", np.array(lo)), f32_tensor("clip_max", np.array(hi))],
        doc_string="opset 11 forms: Softmax(axis=1) on rank 3, Split(split attr), "
                   "Clip(min,max inputs), ReduceMean(axes attr), Squeeze/Unsqueeze(axes attr)")
    xd = f64(x)
    sm = softmax(xd.reshape(2, 24), axis=1).reshape(2, 6, 4)
    clipped = np.clip(xd[:, :2], lo, hi)
    unsq = xd[:, 2:].mean(axis=2)[None]
    outs = {"sm": sm, "clipped": clipped, "unsq": unsq}
    return model(g, opset=11), {"x": x}, {k: v.astype(np.float32) for k, v in outs.items()}


def make_external_data_model():
    r = rng_for("external_data")
    w = weights(r, (4, 3))
    b = weights(r, (3,))
    x = inputs(r, (2, 4))
    g = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["xw"], name="matmul"),
         helper.make_node("Add", ["xw", "b"], ["y"], name="add")],
        "external_data", [vi("x", F32, [2, 4])], [vi("y", F32, [2, 3])],
        [raw_tensor("w", w), raw_tensor("b", b)],
        doc_string="x[2,4] -> MatMul(w[4,3]) -> Add(b[3]); w and b in weights.bin")
    y = f64(x) @ f64(w) + f64(b)
    return model(g), {"x": x}, {"y": y.astype(np.float32)}


def make_unsupported():
    """Supported ops around two that kiln does not support (no reference)."""
    r = rng_for("unsupported")
    hidden = 3
    g = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["r"], name="relu0"),
         helper.make_node("LSTM", ["r", "lstm.W", "lstm.R", "lstm.B"], ["lstm_y"],
                          name="lstm0", hidden_size=hidden),
         helper.make_node("Foo", ["lstm_y"], ["foo_y"], name="foo1",
                          domain="com.example"),
         helper.make_node("Sigmoid", ["foo_y"], ["y"], name="sigmoid0")],
        "unsupported", [vi("x", F32, [5, 1, 4])], [vi("y", F32, [5, 1, 1, hidden])],
        [f32_tensor("lstm.W", weights(r, (1, 4 * hidden, 4))),
         f32_tensor("lstm.R", weights(r, (1, 4 * hidden, hidden))),
         f32_tensor("lstm.B", weights(r, (1, 8 * hidden)))],
        doc_string="Relu -> LSTM 'lstm0' -> com.example::Foo 'foo1' -> Sigmoid")
    return model(g, extra_opsets=[("com.example", 1)])


# --------------------------------------------------------------------------
# bad inputs (kiln must reject; the .onnxtxt ones parse as protobuf text,
# except bad/garbled_text.onnxtxt)
# --------------------------------------------------------------------------

def _relu_graph(name, x_shape=(2, 3), doc=""):
    return helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")],
                             name, [vi("x", F32, list(x_shape))],
                             [vi("y", F32, list(x_shape))], doc_string=doc)


def make_bad_text():
    bad = {}
    bad["cycle"] = model(helper.make_graph(
        [helper.make_node("Add", ["x", "t1"], ["t0"], name="add"),
         helper.make_node("Relu", ["t0"], ["t1"], name="relu")],
        "cycle", [vi("x", F32, [2, 3])], [vi("t1", F32, [2, 3])],
        doc_string="add consumes relu's output and relu consumes add's"))
    bad["duplicate_names"] = model(helper.make_graph(
        [helper.make_node("Relu", ["x"], ["t"], name="relu"),
         helper.make_node("Sigmoid", ["x"], ["t"], name="sigmoid")],
        "duplicate_names", [vi("x", F32, [2, 3])], [vi("t", F32, [2, 3])],
        doc_string="two nodes produce tensor 't'"))
    bad["empty_graph"] = model(helper.make_graph(
        [], "empty_graph", [vi("x", F32, [2, 3])], [],
        doc_string="no nodes, no outputs"))
    bad["unknown_opset"] = model(
        _relu_graph("unknown_opset", doc="default-domain opset 99"), opset=99)
    bad["symbolic_dim"] = model(helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")], "symbolic_dim",
        [vi("x", F32, ["batch", 3])], [vi("y", F32, ["batch", 3])],
        doc_string="input dim 0 is dim_param 'batch'"))
    bad["bad_shapes"] = model(helper.make_graph(
        [helper.make_node("Add", ["a", "b"], ["c"], name="add")], "bad_shapes",
        [vi("a", F32, [2, 3]), vi("b", F32, [4, 5])], [vi("c", F32, [2, 3])],
        doc_string="Add of [2,3] and [4,5]: not broadcastable"))
    bad["undefined_input"] = model(helper.make_graph(
        [helper.make_node("Relu", ["nonexistent"], ["y"], name="relu")],
        "undefined_input", [vi("x", F32, [2, 3])], [vi("y", F32, [2, 3])],
        doc_string="relu reads 'nonexistent', which nothing produces"))
    return bad


def make_missing_external():
    t = TensorProto(name="w", data_type=F32, dims=[4, 3],
                    data_location=TensorProto.EXTERNAL)
    for k, v in (("location", "weights.bin"), ("offset", "0"), ("length", "48")):
        e = t.external_data.add()
        e.key, e.value = k, v
    g = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"], name="matmul")],
        "missing_external", [vi("x", F32, [2, 4])], [vi("y", F32, [2, 3])], [t],
        doc_string="w lives in weights.bin, which does not exist")
    return model(g)


def garbage_bytes():
    data = np.random.default_rng(20240601).bytes(256)
    try:
        onnx.ModelProto().ParseFromString(data)
    except Exception:
        return data
    raise SystemExit("garbage.onnx parses as a ModelProto; pick another seed")


def truncate(data):
    cut = len(data) // 2
    while True:                     # walk back until it no longer parses
        try:
            onnx.ModelProto().ParseFromString(data[:cut])
        except Exception:
            return data[:cut]
        cut -= 1


# --------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------

def check_text(path, full_check=True):
    """Parse a .onnxtxt back; with full_check also run the strict checker."""
    with open(path) as f:
        m = text_format.Parse(f.read(), onnx.ModelProto())
    if full_check is not None:
        onnx.checker.check_model(m, full_check=full_check)
    return m


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                  "tiny"))
    a = ap.parse_args(argv)
    out = a.out
    written = []

    def p(*parts):
        path = os.path.join(out, *parts)
        written.append(path)
        return path

    # valid models + references
    valid = {"mlp": make_mlp(), "conv_bn_relu": make_conv_bn_relu(),
             "shape_chain": make_shape_chain(), "opset11_mix": make_opset11_mix(),
             "qdq_matmul": make_qdq_matmul(), "qdq_matmul_u8": make_qdq_matmul_u8(),
             "qdq_matmul_fp8": make_qdq_matmul_fp8(), "qdq_pool": make_qdq_pool(),
             "qdq_conv_u8": make_qdq_conv_u8(),
             "conv16": make_conv16(), "seq_first_linear": make_seq_first_linear(),
             "pool_same": make_pool_same(), "attention": make_attention(),
             "attention_sdpa": make_attention_sdpa(), "views": make_views(),
             "einsum": make_einsum(), "dynamic": make_dynamic(False), "dynamic_mix": make_dynamic(True),
             "dynamic_stride": make_dynamic_stride()}
    binary_too = {"mlp", "conv_bn_relu"}
    for name, (m, ins, outs) in valid.items():
        write_text(p(name + ".onnxtxt"), m)
        if name in binary_too:
            write_binary(p(name + ".onnx"), m)
        write_npz(p(name + ".npz"), {**ins, **outs})
    write_text(p("unsupported.onnxtxt"), make_unsupported())

    # external data: onnx.save_model appends to an existing data file -> clear it
    ext_dir = os.path.join(out, "external_data")
    shutil.rmtree(ext_dir, ignore_errors=True)
    os.makedirs(ext_dir)
    m, ins, outs = make_external_data_model()
    onnx.save_model(m, p("external_data", "model.onnx"), save_as_external_data=True,
                    all_tensors_to_one_file=True, location="weights.bin",
                    size_threshold=0)
    written.append(os.path.join(ext_dir, "weights.bin"))
    write_npz(p("external_data.npz"), {**ins, **outs})

    # bad inputs
    shutil.rmtree(os.path.join(out, "bad"), ignore_errors=True)
    for name, m in make_bad_text().items():
        write_text(p("bad", name + ".onnxtxt"), m)
    write_bytes(p("bad", "truncated.onnx"), truncate(valid["mlp"][0].SerializeToString()))
    write_bytes(p("bad", "garbage.onnx"), garbage_bytes())
    # text that stops mid-message: not parseable as protobuf text format
    write_bytes(p("bad", "garbled_text.onnxtxt"),
                b'ir_version: 8\ngraph { node { op_type: "Relu" \n')
    write_binary(p("bad", "missing_external", "model.onnx"), make_missing_external())

    # ---- verify ----------------------------------------------------------
    for name, (m, ins, outs) in valid.items():
        # (onnx 1.12's checker predates float8 and opset 19: parse only)
        back = check_text(os.path.join(out, name + ".onnxtxt"), None if name == "qdq_matmul_fp8" else True)
        assert back == m, name
        if name in binary_too:
            back = onnx.load(os.path.join(out, name + ".onnx"))
            onnx.checker.check_model(back, full_check=True)
            assert back == m, name
        ref = np.load(os.path.join(out, name + ".npz"))
        assert sorted(ref.files) == sorted(list(ins) + list(outs)), name
        assert [i.name for i in m.graph.input] == list(ins), name
        assert [o.name for o in m.graph.output] == list(outs), name
    check_text(os.path.join(out, "unsupported.onnxtxt"), full_check=False)
    ext = onnx.load(os.path.join(ext_dir, "model.onnx"), load_external_data=False)
    for t in ext.graph.initializer:
        keys = {e.key for e in t.external_data}
        assert t.data_location == TensorProto.EXTERNAL and \
            {"location", "offset", "length"} <= keys, t.name
    onnx.checker.check_model(os.path.join(ext_dir, "model.onnx"), full_check=True)

    verdicts = []
    for name in make_bad_text():
        path = os.path.join(out, "bad", name + ".onnxtxt")
        check_text(path, full_check=None)          # must parse as protobuf text
        try:
            check_text(path, full_check=True)
            verdicts.append(f"{name}: parses; onnx.checker accepts it")
        except Exception as e:
            verdicts.append(f"{name}: parses; onnx.checker rejects it "
                            f"({str(e).splitlines()[0][:90]})")
    try:
        check_text(os.path.join(out, "bad", "garbled_text.onnxtxt"), full_check=None)
        raise SystemExit("garbled_text.onnxtxt unexpectedly parses")
    except text_format.ParseError as e:
        verdicts.append(f"garbled_text.onnxtxt: text_format.Parse fails ({e})")
    for name in ("truncated.onnx", "garbage.onnx"):
        try:
            onnx.load(os.path.join(out, "bad", name))
            raise SystemExit(f"{name} unexpectedly loads")
        except Exception as e:
            verdicts.append(f"{name}: onnx.load fails ({type(e).__name__})")
    try:
        onnx.load(os.path.join(out, "bad", "missing_external", "model.onnx"))
        raise SystemExit("missing_external unexpectedly loads")
    except Exception as e:
        verdicts.append(f"missing_external/model.onnx: onnx.load fails ({type(e).__name__})")

    for path in written:
        print(f"{os.path.getsize(path):6d}  {os.path.relpath(path, out)}")
    print("bad inputs:")
    for v in verdicts:
        print("  " + v)
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""A convolutional network quantized by onnxruntime (QDQ), with onnxruntime's int8 CPU outputs as
the reference for kiln's engine of the same QDQ file.

    build/ort-venv/bin/python bench/qdq_cnn.py build/models/resnet50_b32.onnx OUT_DIR \\
        [--calib-batches 2] [--seed 7]

Writes OUT_DIR/model.qdq.onnx (quantize_static: QDQ, int8 activations per tensor symmetric —
zero point 0, what kiln's int8 convolutions take —, int8 weights per channel, MinMax over random
batches) and OUT_DIR/reference.npz (a fixed random input and onnxruntime's outputs for the QDQ
model with graph optimizations off: Q and DQ run as written, in float32, the graph's own
semantics), and prints how far that is from the fp32 model and from onnxruntime's fused int8
kernels (cosine, top-1). The fused kernels are not the reference: on a CPU without VNNI their
u8s8 16-bit pair sums saturate (onnxruntime's documented issue), cosine ~0.98 on ResNet-50. Then, on a GPU host:

    kiln compile OUT_DIR/model.qdq.onnx -o qdq.kiln
    kiln check qdq.kiln --reference OUT_DIR/reference.npz --accuracy 'cos>=0.99'

Needs the venv of bench/qdq_ort_check.py
(onnxruntime 1.32).
"""
import argparse
import os

import numpy as np
import onnx
import onnxruntime as ort
from onnxruntime.quantization import (CalibrationDataReader, CalibrationMethod, QuantFormat, QuantType,
                                      quantize_static)

ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
ap.add_argument("model")
ap.add_argument("out")
ap.add_argument("--calib-batches", type=int, default=2)
ap.add_argument("--seed", type=int, default=7)
a = ap.parse_args()
os.makedirs(a.out, exist_ok=True)

m = onnx.load(a.model, load_external_data=False)
inp = m.graph.input[0]
name = inp.name
shape = [d.dim_value for d in inp.type.tensor_type.shape.dim]
rng = np.random.default_rng(a.seed)
# Inputs in steps of 1/8 (N(0, 1) rounded): the reference file compresses to a few MiB for the
# trip to the GPU host.
batch = lambda: (np.round(rng.standard_normal(shape) * 8) / 8).astype(np.float32)


class Reader(CalibrationDataReader):
    def __init__(self):
        self.left = a.calib_batches

    def get_next(self):
        if self.left == 0:
            return None
        self.left -= 1
        return {name: batch()}


qdq = os.path.join(a.out, "model.qdq.onnx")
quantize_static(a.model, qdq, Reader(), quant_format=QuantFormat.QDQ, per_channel=True,
                activation_type=QuantType.QInt8, weight_type=QuantType.QInt8,
                calibrate_method=CalibrationMethod.MinMax,
                extra_options={"ActivationSymmetric": True, "WeightSymmetric": True})
x = batch()
out_names = [o.name for o in m.graph.output]


def run(path, optimize=True):
    so = ort.SessionOptions()
    if not optimize:  # Q and DQ run as written, in float32: the QDQ graph's own semantics
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    s = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    return dict(zip(out_names, s.run(out_names, {name: x})))


lit, fused, f = run(qdq, optimize=False), run(qdq), run(a.model)
np.savez_compressed(os.path.join(a.out, "reference.npz"), **{name: x}, **lit)


def compare(label, p, r):
    for o in out_names:
        pa, ra = p[o].reshape(p[o].shape[0], -1).astype(np.float64), r[o].reshape(r[o].shape[0], -1).astype(np.float64)
        cos = (pa * ra).sum(1) / np.linalg.norm(pa, axis=1) / np.linalg.norm(ra, axis=1)
        top1 = (pa.argmax(1) == ra.argmax(1)).sum()
        print(f"{o}: {label}: cosine mean {cos.mean():.5f} min {cos.min():.5f}, top-1 {top1}/{pa.shape[0]}")


compare("onnxruntime QDQ as written (the reference) vs fp32", lit, f)
compare("onnxruntime fused int8 kernels vs the QDQ as written", fused, lit)
ops = {}
for n in onnx.load(qdq, load_external_data=False).graph.node:
    ops[n.op_type] = ops.get(n.op_type, 0) + 1
print("QDQ model ops:", dict(sorted(ops.items())))

#!/usr/bin/env python3
"""Reference outputs from onnxruntime (CPU provider, fp32) for kiln-gpu-check --reference-dir.

    python3 bench/ort_reference.py MODEL.onnx OUTDIR

Writes OUTDIR/input_K.bin (random, non-zero: floats in ±[0.25, 1]; token ids in [0, 1000);
attention masks all ones) and OUTDIR/output_K.bin, raw little-endian in graph order, and
OUTDIR/reference.npz with the same arrays by name (for kiln tune --reference).
"""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort

model_path, out = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)
model = onnx.load(model_path, load_external_data=False)
inits = {i.name for i in model.graph.initializer}
rng = np.random.default_rng(1234)
so = ort.SessionOptions()
so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL  # plain fp32 semantics
sess = ort.InferenceSession(model_path, so, providers=["CPUExecutionProvider"])
feeds = {}
for k, i in enumerate(x for x in sess.get_inputs() if x.name not in inits):
    shape = [int(d) for d in i.shape]
    if "float" in i.type:
        a = (rng.uniform(0.25, 1.0, shape) * rng.choice([-1.0, 1.0], shape)).astype(np.float32)
    elif "mask" in i.name:
        a = np.ones(shape, dtype=np.int64)
    else:
        a = rng.integers(0, 1000, shape, dtype=np.int64)
    a.tofile(os.path.join(out, f"input_{k}.bin"))
    feeds[i.name] = a
outputs = dict(zip((o.name for o in sess.get_outputs()), sess.run(None, feeds)))
for k, y in enumerate(outputs.values()):
    np.ascontiguousarray(y).tofile(os.path.join(out, f"output_{k}.bin"))
np.savez(os.path.join(out, "reference.npz"), **feeds, **outputs)
print(f"{model_path}: {len(feeds)} inputs, reference written to {out}")

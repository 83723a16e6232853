#!/usr/bin/env python3
"""Single-product ONNX models for kernel benchmarks: Y = X @ W (+ b), W a random initializer.

    python3 bench/make_gemm_models.py OUTDIR [M,N,K ...]    (default: 4096,4096,4096 and BERT's shapes)
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
shapes = [tuple(int(v) for v in s.split(",")) for s in sys.argv[2:]] or [
    (4096, 4096, 4096), (4096, 768, 768), (4096, 3072, 768), (4096, 768, 3072)]
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(0)
for m, n, k in shapes:
    w = (rng.standard_normal((k, n)) / np.sqrt(k)).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    g = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["p"]), helper.make_node("Add", ["p", "b"], ["y"])],
        "gemm", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [m, k])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [m, n])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    path = os.path.join(out, f"gemm_{m}x{n}x{k}.onnx")
    onnx.save(model, path)
    print("wrote", path)

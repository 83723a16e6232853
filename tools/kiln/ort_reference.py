#!/usr/bin/env python3
"""onnxruntime as kiln's reference (`kiln check --ort`; embedded into kiln at build time, see
tools/kiln/OrtReference.cpp): runs MODEL on the arrays of INPUTS.npz with onnxruntime's CPU provider
(graph optimizations off) and writes every output to OUTPUTS.npz by name. MARKS: node names, one per
line (kiln's names: the node's name, else its first output's); each node's first output is written
too, under the node's name. Float feeds are cast to the input's declared type (an engine's fp16
I/O, bfloat16 sent as float32). Models in protobuf text format (.onnxtxt, .pbtxt, .txt) are read
as kiln reads them.

    python3 ort_reference.py MODEL INPUTS.npz OUTPUTS.npz MARKS
"""
import sys
import numpy as np
import onnx
import onnxruntime as ort

model_path, inputs_path, outputs_path, marks = sys.argv[1:5]
marks = [m for m in marks.split("\n") if m]
text = model_path.endswith((".onnxtxt", ".pbtxt", ".txt"))  # (protobuf text, as kiln reads it)
if text:
    from google.protobuf import text_format
    with open(model_path) as f:
        model = text_format.Parse(f.read(), onnx.ModelProto())
else:
    model = onnx.load(model_path)
declared = {o.name for o in model.graph.output}
tensor_of = {}  # kiln's node names (Importer.cpp displayName) -> first output
for n in model.graph.node:
    if n.output and n.output[0]:
        tensor_of.setdefault(n.name or n.output[0], n.output[0])
node_of = {}
for m in marks:
    t = tensor_of.get(m)
    if t is None:
        continue  # (a node kiln's passes made has no ONNX tensor: it is left out of the comparison)
    if t not in declared:
        model.graph.output.append(onnx.ValueInfoProto(name=t))
        declared.add(t)
    node_of.setdefault(t, m)
options = ort.SessionOptions()
options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL  # marked tensors stay
session = ort.InferenceSession(model.SerializeToString() if marks or text else model_path, options,
                               providers=["CPUExecutionProvider"])
arrays = dict(np.load(inputs_path))
types = {"tensor(float)": np.float32, "tensor(float16)": np.float16, "tensor(double)": np.float64}
feeds = {}
for i in session.get_inputs():
    if i.name not in arrays:
        sys.exit("no value for the model's input '%s'" % i.name)
    a = arrays[i.name]
    if i.type in types and a.dtype.kind == "f" and a.dtype != types[i.type]:
        a = a.astype(types[i.type])
    feeds[i.name] = a
names = [o.name for o in session.get_outputs()]
results = {}
for name, value in zip(names, session.run(names, feeds)):
    results[name] = np.asarray(value)
    if name in node_of:
        results[node_of[name]] = results[name]
np.savez(outputs_path, **results)

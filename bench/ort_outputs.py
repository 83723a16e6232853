#!/usr/bin/env python3
"""onnxruntime CPU outputs of a model on given inputs (graph optimizations off, as the corpus's
references), written as .npz, with the CPU's 8-bit dot-product features named: onnxruntime's
u8·s8 MatMulInteger sums pairs in 16 bits on x86 CPUs without VNNI/AMX and can saturate, so
a quantized model's reference depends on the machine that made it.

    python3 bench/ort_outputs.py MODEL.onnx INPUTS.npz OUT.npz
"""
import sys

try:
    import numpy as np
    import onnxruntime as ort
except ImportError as e:
    print(f"SKIP: {e}")
    sys.exit(77)

model, inputs, out = sys.argv[1:4]
flags = set()
try:
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags"):
                flags |= set(line.split(":", 1)[1].split())
except OSError:
    pass
isa = sorted(flags & {"avx512_vnni", "avx_vnni", "amx_int8", "avx512bw", "avx2"})
so = ort.SessionOptions()
so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
so.log_severity_level = 3
sess = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
feeds = dict(np.load(inputs))
names = [o.name for o in sess.get_outputs()]
np.savez(out, **dict(zip(names, sess.run(names, feeds))))
print(f"onnxruntime {ort.__version__}, CPU features {' '.join(isa) or 'none of avx2/avx512bw/vnni/amx'}: wrote {out}")

"""check --ort's script (tools/kiln/ort_reference.py, compiled into kiln) on a model in protobuf
text format with marked nodes: every output and every marked node's tensor, named as kiln names
them, equal to numpy's evaluation of the same graph; a node kiln's passes made (no ONNX tensor) is
left out; float16 feeds reach a float32 model as float32. Exits 77 (skipped) without onnxruntime.

    python ort_reference_test.py SOURCE_DIR
"""
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import onnxruntime  # noqa: F401
except ImportError as e:
    print("skipped: %s (tools/setup-debian.sh installs onnxruntime into ~/.cache/kiln/venv)" % e)
    sys.exit(77)

src = sys.argv[1]
script = os.path.join(src, "tools/kiln/ort_reference.py")
model = os.path.join(src, "models/tiny/fp16_overflow.onnxtxt")
data = np.load(os.path.join(src, "models/tiny/fp16_overflow.npz"))
x, z = data["x"].astype(np.float64), data["z"].astype(np.float16)  # (z sent as an fp16 engine would)
square = x.astype(np.float64) ** 2
want = {"y": x / np.sqrt(square.sum(-1, keepdims=True) + 1e-5), "square": square,
        "sigmoid": 1 / (1 + np.exp(-z.astype(np.float64)))}
want["lq"] = np.log(1 - want["sigmoid"])
with tempfile.TemporaryDirectory() as tmp:
    np.savez(os.path.join(tmp, "in.npz"), x=data["x"], z=z)
    out = os.path.join(tmp, "out.npz")
    subprocess.run([sys.executable, script, model, os.path.join(tmp, "in.npz"), out, "square\nsigmoid\nsplit_3\n"],
                   check=True)
    got = dict(np.load(out))
ok = sorted(k for k in got if k in want) == sorted(want)
for k, w in want.items():
    g = got.get(k)
    err = np.linalg.norm(g.astype(np.float64) - w) / np.linalg.norm(w) if g is not None else float("inf")
    print("%-8s %s rel_l2 %.2e" % (k, None if g is None else g.dtype, err))
    # (log(1 - p) for p near 1 cancels in onnxruntime's float32: 4.6e-4 from float64)
    ok &= g is not None and g.dtype == np.float32 and err < (1e-3 if k == "lq" else 1e-6)
ok &= "split_3" not in got
print("passed" if ok else "FAILED")
sys.exit(0 if ok else 1)

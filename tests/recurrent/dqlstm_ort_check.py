#!/usr/bin/env python3
"""com.microsoft::DynamicQuantizeLSTM: kiln against onnxruntime (which defines the op).

Builds DynamicQuantizeLSTM models (bidirectional and forward, int8 and uint8 weights, per-tensor
and per-column scales, bias, initial states, batch 1 and 3) with random weights, or takes the
node out of a real model (--model, with --input X.npy for its input), runs onnxruntime's CPU
kernel and kiln: `kiln eval --import-only` (the op's own semantics: onnxruntime's arithmetic,
activations quantized per step) and `kiln eval` (the compile pipeline's float LSTM with
dequantized weights, what an engine runs). Prints rel L2 of each against onnxruntime.

Needs onnxruntime: run it with the realmodels venv (models/realmodels/fetch.py makes it), e.g.
  ~/.cache/kiln-realmodels/venv/bin/python tests/recurrent/dqlstm_ort_check.py --kiln build/bin/kiln
Exit 0 when --import-only matches onnxruntime within 1e-5 on every case.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

try:
    import onnxruntime as ort
except ImportError:
    print("dqlstm_ort_check: skipped (no onnxruntime)")
    sys.exit(77)


def rel_l2(a, b):
    a, b = np.asarray(a, np.float64).ravel(), np.asarray(b, np.float64).ravel()
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30))


def synthetic(rng, D, T, B, I, H, wtype, per_column):
    dt = np.int8 if wtype == "int8" else np.uint8
    # int8 weights within ±63: onnxruntime on AVX2 without VNNI computes u8·s8 with vpmaddubsw, whose
    # int16 pair sums saturate beyond that (255·64·2 > 32767); exact products need no saturation.
    lo, hi = (-63, 64) if dt == np.int8 else (0, 256)
    qshape = (D, 4 * H) if per_column else (D,)
    zp = np.zeros(qshape, dt) if dt == np.int8 else np.full(qshape, rng.integers(100, 156), dt)  # (onnxruntime: one value)
    inits = [
        numpy_helper.from_array(rng.integers(lo, hi, (D, I, 4 * H)).astype(dt), "W"),
        numpy_helper.from_array(rng.integers(lo, hi, (D, H, 4 * H)).astype(dt), "R"),
        numpy_helper.from_array(rng.uniform(-0.3, 0.3, (D, 8 * H)).astype(np.float32), "B"),
        numpy_helper.from_array((rng.uniform(0.5, 1.5, qshape) / (64 * np.sqrt(H))).astype(np.float32), "W_scale"),
        numpy_helper.from_array(zp, "W_zero_point"),
        numpy_helper.from_array((rng.uniform(0.5, 1.5, qshape) / (64 * np.sqrt(H))).astype(np.float32), "R_scale"),
        numpy_helper.from_array(zp.copy(), "R_zero_point"),
    ]
    node = helper.make_node("DynamicQuantizeLSTM", ["X", "W", "R", "B", "", "h0", "c0", "", "W_scale", "W_zero_point",
                                                    "R_scale", "R_zero_point"], ["Y", "Y_h", "Y_c"], domain="com.microsoft",
                            hidden_size=H, direction="bidirectional" if D == 2 else "forward")
    ins = [helper.make_tensor_value_info("X", TensorProto.FLOAT, (T, B, I)),
           helper.make_tensor_value_info("h0", TensorProto.FLOAT, (D, B, H)),
           helper.make_tensor_value_info("c0", TensorProto.FLOAT, (D, B, H))]
    outs = [helper.make_tensor_value_info("Y", TensorProto.FLOAT, (T, D, B, H)),
            helper.make_tensor_value_info("Y_h", TensorProto.FLOAT, (D, B, H)),
            helper.make_tensor_value_info("Y_c", TensorProto.FLOAT, (D, B, H))]
    model = helper.make_model(helper.make_graph([node], "dqlstm", ins, outs, inits),
                              opset_imports=[helper.make_opsetid("", 14), helper.make_opsetid("com.microsoft", 1)])
    feeds = {"X": rng.uniform(-1, 1, (T, B, I)).astype(np.float32),
             "h0": rng.uniform(-0.5, 0.5, (D, B, H)).astype(np.float32),
             "c0": rng.uniform(-0.5, 0.5, (D, B, H)).astype(np.float32)}
    return model, feeds


def extracted(path, x, clip=False):
    """The first DynamicQuantizeLSTM of a real model as a one-node model taking its X; with `clip`,
    int8 weights clipped to ±63 (where onnxruntime's AVX2 u8·s8 products do not saturate)."""
    m = onnx.load(path)
    node = next(n for n in m.graph.node if n.op_type == "DynamicQuantizeLSTM")
    inits = {i.name: i for i in m.graph.initializer}
    used = [inits[i] for i in node.input if i in inits]
    if clip:
        for k in (1, 2):
            a = numpy_helper.to_array(inits[node.input[k]])
            if a.dtype == np.int8:
                used[used.index(inits[node.input[k]])] = numpy_helper.from_array(np.clip(a, -63, 63), node.input[k])
    # initial states that are not initializers become zeros of their shape
    H = next(a.i for a in node.attribute if a.name == "hidden_size")
    D = 2 if any(a.name == "direction" and a.s == b"bidirectional" for a in node.attribute) else 1
    ins = list(node.input)
    for k in (4, 5, 6, 7):
        if k < len(ins) and ins[k] and ins[k] not in inits:
            ins[k] = ""
    new = helper.make_node(node.op_type, ins, ["Y", "Y_h", "Y_c"], domain=node.domain, name="dqlstm")
    new.attribute.extend(node.attribute)
    ins_vi = [helper.make_tensor_value_info(node.input[0], TensorProto.FLOAT, x.shape)]
    T, B = x.shape[0], x.shape[1]
    outs = [helper.make_tensor_value_info("Y", TensorProto.FLOAT, (T, D, B, H)),
            helper.make_tensor_value_info("Y_h", TensorProto.FLOAT, (D, B, H)),
            helper.make_tensor_value_info("Y_c", TensorProto.FLOAT, (D, B, H))]
    model = helper.make_model(helper.make_graph([new], "dqlstm", ins_vi, outs, used),
                              opset_imports=[helper.make_opsetid("", 12), helper.make_opsetid("com.microsoft", 1)])
    return model, {node.input[0]: x}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kiln", default="build/bin/kiln")
    ap.add_argument("--model", default="", help="a real model with a DynamicQuantizeLSTM")
    ap.add_argument("--input", default="", help="X of its DynamicQuantizeLSTM (.npy)")
    args = ap.parse_args()
    rng = np.random.default_rng(7)
    cases = []
    for D, B, wtype, per_col in ((2, 1, "int8", False), (1, 1, "uint8", True), (2, 3, "int8", True)):
        cases.append(("synthetic D%d B%d %s %s" % (D, B, wtype, "per-column" if per_col else "per-tensor"),
                      *synthetic(rng, D, 9, B, 12, 16, wtype, per_col), True))
    if args.model:
        x = np.load(args.input)
        cases.append((os.path.basename(args.model) + " (weights as they are)", *extracted(args.model, x), False))
        cases.append((os.path.basename(args.model) + " (int8 weights within ±63)", *extracted(args.model, x, True), True))
    work = tempfile.mkdtemp(prefix="kiln-dqlstm-")
    failed = 0
    for name, model, feeds, gated in cases:
        path, inp = os.path.join(work, "m.onnx"), os.path.join(work, "in.npz")
        onnx.save(model, path)
        np.savez(inp, **feeds)
        so = ort.SessionOptions()
        so.intra_op_num_threads = 1  # (with several threads onnxruntime quantizes each thread's batch rows apart)
        want = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"]).run(None, feeds)
        errs = {}
        for mode, extra in (("import-only", ["--import-only"]), ("pipeline", [])):
            out = os.path.join(work, "out.npz")
            p = subprocess.run([args.kiln, "eval", path, "--inputs", inp, "--outputs", out] + extra,
                               capture_output=True, text=True)
            if p.returncode != 0:
                print("FAIL %s (%s): %s" % (name, mode, p.stderr.strip()[-300:]))
                failed += 1
                continue
            got = np.load(out)
            errs[mode] = max(rel_l2(got[k], w) for k, w in zip(("Y", "Y_h", "Y_c"), want))
        ok = errs.get("import-only", 1) <= 1e-5 or not gated
        failed += not ok
        print("%s %-60s rel L2 vs onnxruntime: import-only %.1e, pipeline (float LSTM) %.1e" %
              ("ok  " if ok and gated else "info" if ok else "FAIL", name, errs.get("import-only", float("nan")), errs.get("pipeline", float("nan"))))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

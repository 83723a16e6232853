#!/usr/bin/env python3
"""Recurrent test models (ONNX LSTM, GRU, RNN) and an independent NumPy reference for them.

  rnn_models.py --out DIR [--set cpu|gpu]                 # writes DIR/<case>.onnx (+ .inputs.npz, .ref.npz)
  rnn_models.py --out DIR --check KILN [--precision fp16] # ... then `kiln eval` each, against the reference

The `cpu` set covers what the ONNX node tests miss: bidirectional layers with sequence_lens and
layout 1, clip, LSTM peepholes and input_forget, GRU with and without linear_before_reset,
every activation function (with activation_alpha/beta), initial states, and every optional
output present or absent. The `gpu` set (bench/gpu_suite.sh rnn, kiln-gpu-check) has hidden
sizes 16..512 and the same features; there kiln-gpu-check compares the engine with kiln's CPU
evaluator on random inputs. Weights, biases, peepholes and sequence_lens are initializers;
X and the initial states are graph inputs.

The reference below is written from the ONNX operator documentation alone (float64, one time
step at a time), not from kiln's C++ kernels. Needs Debian's python3-onnx and numpy only.
"""
import argparse
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

# ---- reference ---------------------------------------------------------------------------------

DEFAULT_ALPHA = {"leakyrelu": 0.01, "thresholdedrelu": 1.0, "hardsigmoid": 0.2, "elu": 1.0, "affine": 1.0,
                 "scaledtanh": 1.0}
DEFAULT_BETA = {"hardsigmoid": 0.5, "affine": 0.0, "scaledtanh": 1.0}
USES = {"leakyrelu": (1, 0), "thresholdedrelu": (1, 0), "hardsigmoid": (1, 1), "elu": (1, 0), "affine": (1, 1),
        "scaledtanh": (1, 1)}


def activation(name, alpha, beta):
    n = name.lower()
    if n == "sigmoid":
        return lambda x: 1.0 / (1.0 + np.exp(-x))
    if n == "tanh":
        return np.tanh
    if n == "relu":
        return lambda x: np.maximum(x, 0.0)
    if n == "hardsigmoid":
        return lambda x: np.clip(alpha * x + beta, 0.0, 1.0)
    if n == "affine":
        return lambda x: alpha * x + beta
    if n == "leakyrelu":
        return lambda x: np.where(x >= 0, x, alpha * x)
    if n == "thresholdedrelu":
        return lambda x: np.where(x > alpha, x, 0.0)
    if n == "scaledtanh":
        return lambda x: alpha * np.tanh(beta * x)
    if n == "elu":
        return lambda x: np.where(x >= 0, x, alpha * (np.exp(x) - 1.0))
    if n == "softsign":
        return lambda x: x / (1.0 + np.abs(x))
    if n == "softplus":
        return lambda x: np.log1p(np.exp(x))
    raise ValueError(name)


def resolve_activations(names, alphas, betas):
    """The functions in order, each taking the next alpha/beta if it uses one (as onnxruntime)."""
    out, ai, bi = [], 0, 0
    for name in names:
        n = name.lower()
        ua, ub = USES.get(n, (0, 0))
        a, b = DEFAULT_ALPHA.get(n, 0.0), DEFAULT_BETA.get(n, 0.0)
        if ua and ai < len(alphas):
            a, ai = alphas[ai], ai + 1
        if ub and bi < len(betas):
            b, bi = betas[bi], bi + 1
        out.append(activation(n, a, b))
    return out


def reference(kind, a, X, W, R, B=None, seq=None, h0=None, c0=None, P=None):
    """Y, Y_h, Y_c (Y_c None but for LSTM) of an ONNX recurrent layer, float64."""
    G = {"LSTM": 4, "GRU": 3, "RNN": 1}[kind]
    direction = a.get("direction", "forward")
    D = 2 if direction == "bidirectional" else 1
    layout = a.get("layout", 0)
    H = R.shape[-1]
    clip = a.get("clip")
    per = {"LSTM": 3, "GRU": 2, "RNN": 1}[kind]
    names = a.get("activations") or {"LSTM": ["Sigmoid", "Tanh", "Tanh"], "GRU": ["Sigmoid", "Tanh"],
                                     "RNN": ["Tanh"]}[kind] * D
    acts = resolve_activations(names, a.get("activation_alpha", []), a.get("activation_beta", []))
    X = X.astype(np.float64)
    if layout == 1:
        X = X.transpose(1, 0, 2)
    T, Bt, _ = X.shape
    lens = np.full(Bt, T) if seq is None else seq.astype(np.int64)
    to_state = (lambda s: s.transpose(1, 0, 2)) if layout == 1 else (lambda s: s)
    h0 = np.zeros((D, Bt, H)) if h0 is None else to_state(h0.astype(np.float64))
    c0 = np.zeros((D, Bt, H)) if c0 is None else to_state(c0.astype(np.float64))
    Bz = np.zeros((D, 2 * G * H)) if B is None else B.astype(np.float64)
    Pz = np.zeros((D, 3 * H)) if P is None else P.astype(np.float64)
    cl = (lambda v: np.clip(v, -clip, clip)) if clip else (lambda v: v)
    Y = np.zeros((T, D, Bt, H))
    Yh, Yc = np.zeros((D, Bt, H)), np.zeros((D, Bt, H))
    for d in range(D):
        f, g, h = (acts[d * per:(d + 1) * per] + [None, None])[:3]
        Wd, Rd = W[d].astype(np.float64), R[d].astype(np.float64)
        Wb, Rb = Bz[d, :G * H], Bz[d, G * H:]
        reverse = direction == "reverse" or d == 1
        for b in range(Bt):
            ht, ct = h0[d, b].copy(), c0[d, b].copy()
            L = int(lens[b])
            steps = range(L - 1, -1, -1) if reverse else range(L)
            for t in steps:
                x = X[t, b]
                if kind == "LSTM":
                    gates = x @ Wd.T + ht @ Rd.T + Wb + Rb
                    i, o, fg, c = np.split(gates, 4)
                    pi, po, pf = np.split(Pz[d], 3)
                    i = f(cl(i + pi * ct))
                    fg = 1.0 - i if a.get("input_forget", 0) else f(cl(fg + pf * ct))
                    c = g(cl(c))
                    ct = fg * ct + i * c
                    o = f(cl(o + po * ct))
                    ht = o * h(ct)
                elif kind == "GRU":
                    Wz, Wr, Wh = np.split(Wd, 3)
                    Rz, Rr, Rh = np.split(Rd, 3)
                    wbz, wbr, wbh = np.split(Wb, 3)
                    rbz, rbr, rbh = np.split(Rb, 3)
                    z = f(cl(x @ Wz.T + ht @ Rz.T + wbz + rbz))
                    r = f(cl(x @ Wr.T + ht @ Rr.T + wbr + rbr))
                    if a.get("linear_before_reset", 0):
                        hh = g(cl(x @ Wh.T + r * (ht @ Rh.T + rbh) + wbh))
                    else:
                        hh = g(cl(x @ Wh.T + (r * ht) @ Rh.T + rbh + wbh))
                    ht = (1 - z) * hh + z * ht
                else:
                    ht = f(cl(x @ Wd.T + ht @ Rd.T + Wb + Rb))
                Y[t, d, b] = ht
            Yh[d, b], Yc[d, b] = ht, ct
    if layout == 1:
        Y, Yh, Yc = Y.transpose(2, 0, 1, 3), Yh.transpose(1, 0, 2), Yc.transpose(1, 0, 2)
    return Y, Yh, (Yc if kind == "LSTM" else None)


# ---- cases -------------------------------------------------------------------------------------

# name: (kind, T, B, I, H, attributes, features, outputs); features: B, seq, h0, c0, P
CPU_CASES = {
    "lstm_bidir_seq_layout1": ("LSTM", 7, 3, 5, 16, {"direction": "bidirectional", "layout": 1, "clip": 2.5},
                               "B seq h0 c0 P", ["Y", "Y_h", "Y_c"]),
    "lstm_reverse_input_forget": ("LSTM", 6, 2, 4, 8, {"direction": "reverse", "input_forget": 1,
                                  "activations": ["HardSigmoid", "LeakyRelu", "Softsign"],
                                  "activation_alpha": [0.3, 0.05], "activation_beta": [0.4]},
                                  "B h0 c0", ["", "Y_h", "Y_c"]),
    "lstm_layout1_affine": ("LSTM", 5, 4, 3, 12, {"layout": 1, "direction": "reverse",
                            "activations": ["Sigmoid", "Affine", "ThresholdedRelu"],
                            "activation_alpha": [0.7, 0.1], "activation_beta": [0.2]},
                            "B seq P", ["Y", "", "Y_c"]),
    "gru_bidir_seq": ("GRU", 6, 3, 4, 10, {"direction": "bidirectional"}, "B seq h0", ["Y", "Y_h"]),
    "gru_lbr_layout1_clip": ("GRU", 5, 2, 3, 16, {"layout": 1, "linear_before_reset": 1, "clip": 1.5,
                             "activations": ["Sigmoid", "ScaledTanh"], "activation_alpha": [0.8],
                             "activation_beta": [1.2]}, "B h0", ["Y", "Y_h"]),
    "gru_reverse_softplus": ("GRU", 4, 2, 3, 6, {"direction": "reverse", "activations": ["Sigmoid", "Softplus"]},
                             "B seq", ["", "Y_h"]),
    "rnn_bidir_seq_clip": ("RNN", 6, 3, 4, 9, {"direction": "bidirectional", "clip": 2.0,
                           "activations": ["Relu", "Elu"], "activation_alpha": [0.7]},
                           "B seq h0", ["Y", "Y_h"]),
    "rnn_layout1": ("RNN", 5, 2, 3, 8, {"layout": 1}, "B h0", ["Y"]),
}


def gpu_cases():
    cases = {}
    for H in (16, 64, 128, 256, 512):
        cases["lstm_bidir_h%d" % H] = ("LSTM", 12, 5, 48, H, {"direction": "bidirectional"}, "B seq h0 c0",
                                      ["Y", "Y_h", "Y_c"])
    cases["lstm_layout1_peep_clip_h256"] = ("LSTM", 10, 3, 32, 256, {"layout": 1, "clip": 3.0}, "B seq h0 c0 P",
                                            ["Y", "Y_h", "Y_c"])
    cases["lstm_reverse_b40_h128"] = ("LSTM", 9, 40, 64, 128, {"direction": "reverse"}, "B", ["Y", "Y_h"])
    cases["lstm_h40_fma"] = ("LSTM", 8, 3, 16, 40, {"direction": "bidirectional"}, "B seq", ["Y", "Y_h", "Y_c"])
    cases["gru_bidir_seq_h128"] = ("GRU", 10, 4, 32, 128, {"direction": "bidirectional"}, "B seq h0", ["Y", "Y_h"])
    cases["gru_lbr_layout1_h256"] = ("GRU", 10, 4, 32, 256, {"layout": 1, "linear_before_reset": 1}, "B h0",
                                     ["Y", "Y_h"])
    cases["gru_bidir_h512"] = ("GRU", 6, 2, 32, 512, {"direction": "bidirectional"}, "B", ["Y", "Y_h"])
    cases["rnn_bidir_seq_h64"] = ("RNN", 12, 3, 16, 64, {"direction": "bidirectional", "activations": ["Relu", "Tanh"]},
                                  "B seq h0", ["Y", "Y_h"])
    cases["rnn_h512"] = ("RNN", 8, 2, 32, 512, {}, "B", ["", "Y_h"])
    return cases


def make(name, case, rng):
    kind, T, Bt, I, H, attrs, features, outputs = case
    G = {"LSTM": 4, "GRU": 3, "RNN": 1}[kind]
    D = 2 if attrs.get("direction") == "bidirectional" else 1
    layout = attrs.get("layout", 0)
    s = 1.0 / np.sqrt(H)
    feats = features.split()
    W = rng.uniform(-s, s, (D, G * H, I)).astype(np.float32)
    R = rng.uniform(-s, s, (D, G * H, H)).astype(np.float32)
    B = rng.uniform(-s, s, (D, 2 * G * H)).astype(np.float32) if "B" in feats else None
    seq = None
    if "seq" in feats:
        seq = rng.integers(1, T + 1, Bt).astype(np.int32)
        seq[0] = T
    xshape = (Bt, T, I) if layout == 1 else (T, Bt, I)
    sshape = (Bt, D, H) if layout == 1 else (D, Bt, H)
    X = rng.uniform(-1, 1, xshape).astype(np.float32)
    h0 = rng.uniform(-1, 1, sshape).astype(np.float32) if "h0" in feats else None
    c0 = rng.uniform(-1, 1, sshape).astype(np.float32) if "c0" in feats else None
    P = rng.uniform(-s, s, (D, 3 * H)).astype(np.float32) if "P" in feats else None

    inits = [numpy_helper.from_array(W, "W"), numpy_helper.from_array(R, "R")]
    ins = ["X", "W", "R", "", "", "", "", ""]
    graph_inputs = [helper.make_tensor_value_info("X", TensorProto.FLOAT, xshape)]
    feeds = {"X": X}
    if B is not None:
        inits.append(numpy_helper.from_array(B, "B"))
        ins[3] = "B"
    if seq is not None:
        inits.append(numpy_helper.from_array(seq, "sequence_lens"))
        ins[4] = "sequence_lens"
    for k, (nm, v) in enumerate((("initial_h", h0), ("initial_c", c0))):
        if v is not None:
            graph_inputs.append(helper.make_tensor_value_info(nm, TensorProto.FLOAT, sshape))
            feeds[nm] = v
            ins[5 + k] = nm
    if P is not None:
        inits.append(numpy_helper.from_array(P, "P"))
        ins[7] = "P"
    while ins and ins[-1] == "":
        ins.pop()
    node_attrs = dict(attrs)
    node_attrs["hidden_size"] = H
    node = helper.make_node(kind, ins, outputs, name=name, **node_attrs)
    Y, Yh, Yc = reference(kind, attrs, X, W, R, B, seq, h0, c0, P)
    ref, graph_outputs = {}, []
    for nm, v in zip(outputs, (Y, Yh, Yc)):
        if nm:
            ref[nm] = v.astype(np.float32)
            graph_outputs.append(helper.make_tensor_value_info(nm, TensorProto.FLOAT, v.shape))
    graph = helper.make_graph([node], name, graph_inputs, graph_outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)], producer_name="kiln-tests")
    onnx.checker.check_model(model)
    return model, feeds, ref


def rel_l2(got, want):
    got, want = np.asarray(got, np.float64).ravel(), np.asarray(want, np.float64).ravel()
    return float(np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--set", choices=["cpu", "gpu"], default="cpu")
    ap.add_argument("--check", default="", help="kiln binary: run `kiln eval` on each model against the reference")
    ap.add_argument("--precision", default="fp32")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    rng = np.random.default_rng(23)
    cases = CPU_CASES if args.set == "cpu" else gpu_cases()
    bound = 1e-6 if args.precision == "fp32" else 1e-2
    failed = 0
    for name, case in cases.items():
        model, feeds, ref = make(name, case, rng)
        base = os.path.join(args.out, name)
        onnx.save(model, base + ".onnx")
        np.savez(base + ".inputs.npz", **feeds)
        np.savez(base + ".ref.npz", **ref)
        if not args.check:
            print("wrote", base + ".onnx")
            continue
        cmd = [args.check, "eval", base + ".onnx", "--inputs", base + ".inputs.npz", "--outputs", base + ".out.npz"]
        if args.precision != "fp32":
            cmd += ["--precision", args.precision]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            print("FAIL %-28s kiln eval: %s" % (name, (p.stdout + p.stderr).strip()[-400:]))
            failed += 1
            continue
        got = np.load(base + ".out.npz")
        errs = {k: rel_l2(got[k], v) for k, v in ref.items()}
        ok = all(e <= bound for e in errs.values()) and set(got.files) == set(ref)
        failed += not ok
        print("%s %-28s %s" % ("ok  " if ok else "FAIL", name, " ".join("%s %.1e" % kv for kv in errs.items())))
    if args.check:
        print("%d of %d recurrent models match the NumPy reference (rel L2 <= %g, %s)" %
              (len(cases) - failed, len(cases), bound, args.precision))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

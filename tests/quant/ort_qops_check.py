#!/usr/bin/env python3
"""kiln's evaluator against onnxruntime on onnxruntime's quantized ops, on random data.

Single-node models of DynamicQuantizeLinear, MatMulInteger, ConvInteger, QLinearMatMul,
QLinearConv (ai.onnx) and com.microsoft's QLinearAdd, QLinearMul, QLinearSigmoid,
QLinearLeakyRelu, QLinearGlobalAveragePool, QLinearAveragePool, QLinearConcat, QGemm,
MatMulIntegerToFloat and DynamicQuantizeMatMul, over uint8 and int8 data with negative (int8)
zero points, per-channel weight scales and zero points where the op takes them. onnxruntime (CPU,
optimizations off) gives the reference; `kiln eval` (the evaluator, and with --route the compile
pipeline's graph, i.e. after kiln-lower-quantized-ops) must agree:
  - the evaluator on the imported graph (`kiln-conformance --data`, the cases written as ONNX node
    tests): integers and 8-bit outputs exactly, floats within ONNX's tolerance, and rel L2 <= 1e-6;
  - `kiln eval` (the compile pipeline's graph: Q/DQ around float ops, float products): integer
    sums and DynamicQuantizeLinear exactly; 8-bit outputs at most 1 step off (a value on a
    rounding boundary of the requantization, which the Q/DQ form rounds in another order), on
    at most 10% of the elements (reported); float outputs rel L2 <= 1e-6.
Weights of uint8 x int8 products are drawn from [-64, 63]: onnxruntime's AVX2 u8s8 kernel sums
pairs in int16 (vpmaddubsw) and saturates beyond that (its quantizer's reduce_range).

Usage: ort_qops_check.py KILN KILN_CONFORMANCE [--keep DIR] [--route ROUTE]
Run with an interpreter that has onnxruntime; exits 77 (skipped) if it cannot import it.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper
except ImportError as e:  # pragma: no cover
    print(f"SKIP: {e} (run with the venv that has onnxruntime)")
    sys.exit(77)

MS = "com.microsoft"
rng = np.random.default_rng(20261206)


def tensor_type(dtype):
    return helper.np_dtype_to_tensor_dtype(np.dtype(dtype))


def q8(dtype, shape, lo=None, hi=None):
    info = np.iinfo(dtype)
    return rng.integers(info.min if lo is None else lo, (info.max if hi is None else hi) + 1, size=shape).astype(dtype)


def scale(shape=()):
    return rng.uniform(0.002, 0.05, size=shape).astype(np.float32)


def zp(dtype, shape=()):
    # int8 zero points of both signs; uint8 ones around the middle.
    return (rng.integers(-20, 21, size=shape) if dtype == np.int8 else rng.integers(100, 156, size=shape)).astype(dtype)


def model(op, order, inputs, consts, outputs, domain="", attrs=None, opset=17):
    """order: the node's inputs ("" for absent ones); inputs: name -> array fed at run time;
    consts: name -> initializer; outputs: [(name, dtype)]."""
    node = helper.make_node(op, order, [o for o, _ in outputs], domain=domain, **(attrs or {}))
    graph = helper.make_graph(
        [node], op,
        [helper.make_tensor_value_info(k, tensor_type(v.dtype), v.shape) for k, v in inputs.items() if v is not None],
        [helper.make_tensor_value_info(o, tensor_type(t), None) for o, t in outputs],
        [onnx.numpy_helper.from_array(v, k) for k, v in consts.items() if v is not None])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset), helper.make_opsetid(MS, 1)])
    m.ir_version = 8
    return m


def case(name, op, order, feeds, consts, outputs, domain="", attrs=None, kind="int", opset=17):
    order = [n if (n in feeds or n in consts) else "" for n in order]
    while order and order[-1] == "":
        order.pop()
    return dict(name=name, model=model(op, order, feeds, consts, outputs, domain, attrs, opset), feeds=feeds, kind=kind)


def cases():
    out = []
    for dt in (np.uint8, np.int8):
        t = dt.__name__
        # DynamicQuantizeLinear (uint8 output only)
        if dt == np.uint8:
            for k, (lo, hi) in enumerate([(-3.0, 5.0), (0.5, 4.0), (-6.0, -0.25)]):
                x = rng.uniform(lo, hi, size=(4, 33)).astype(np.float32)
                out.append(case(f"DynamicQuantizeLinear_{k}", "DynamicQuantizeLinear", ["x"], {"x": x}, {},
                                [("y", np.uint8), ("y_scale", np.float32), ("y_zero_point", np.uint8)], kind="exact"))
        wlo, whi = (-64, 63) if dt == np.uint8 else (None, None)
        # MatMulInteger: A (dt) x B (int8), per-tensor and per-column zero points
        a = q8(dt, (3, 5, 32))
        for per_col in (False, True):
            b = q8(np.int8, (32, 24), wlo, whi)
            zb = zp(np.int8, (24,) if per_col else ())
            out.append(case(f"MatMulInteger_{t}_s8{'_percol' if per_col else ''}", "MatMulInteger",
                            ["A", "B", "a_zero_point", "b_zero_point"], {"A": a}, {"B": b, "a_zero_point": zp(dt), "b_zero_point": zb},
                            [("Y", np.int32)], kind="exact"))
        # ConvInteger: x (dt), w (dt as onnxruntime's old quantizer writes: u8 x u8, s8 x s8), padding
        x = q8(dt, (2, 8, 9, 7))
        w = q8(dt, (6, 8, 3, 3))
        out.append(case(f"ConvInteger_{t}", "ConvInteger", ["x", "w", "x_zero_point", "w_zero_point"], {"x": x},
                        {"w": w, "x_zero_point": zp(dt), "w_zero_point": zp(dt)}, [("y", np.int32)],
                        attrs=dict(pads=[1, 1, 1, 1], strides=[2, 1]), kind="exact"))
        # QLinearMatMul: a (dt) x b (int8, per column) -> dt
        b = q8(np.int8, (32, 16), wlo, whi)
        out.append(case(f"QLinearMatMul_{t}_percol", "QLinearMatMul",
                        ["a", "a_scale", "a_zero_point", "b", "b_scale", "b_zero_point", "y_scale", "y_zero_point"],
                        {"a": q8(dt, (2, 7, 32))},
                        {"a_scale": scale(), "a_zero_point": zp(dt), "b": b, "b_scale": scale((16,)),
                         "b_zero_point": np.zeros((16,), np.int8), "y_scale": np.float32(0.4), "y_zero_point": zp(dt)},
                        [("y", dt)]))
        # QLinearConv: x (dt), w (int8, per output channel), int32 bias -> dt
        w = q8(np.int8, (12, 8, 3, 3), wlo, whi)
        out.append(case(f"QLinearConv_{t}_perchannel", "QLinearConv",
                        ["x", "x_scale", "x_zero_point", "w", "w_scale", "w_zero_point", "y_scale", "y_zero_point", "B"],
                        {"x": q8(dt, (1, 8, 10, 11))},
                        {"x_scale": scale(), "x_zero_point": zp(dt), "w": w, "w_scale": scale((12,)),
                         "w_zero_point": np.zeros((12,), np.int8), "y_scale": np.float32(0.3), "y_zero_point": zp(dt),
                         "B": rng.integers(-3000, 3000, size=(12,)).astype(np.int32)},
                        [("y", dt)], attrs=dict(pads=[1, 1, 1, 1])))
        # com.microsoft binary ops, with broadcasting
        for op in ("QLinearAdd", "QLinearMul"):
            out.append(case(f"{op}_{t}", op, ["A", "A_scale", "A_zero_point", "B", "B_scale", "B_zero_point", "C_scale", "C_zero_point"],
                            {"A": q8(dt, (4, 6, 10)), "B": q8(dt, (6, 1))},
                            {"A_scale": scale(), "A_zero_point": zp(dt), "B_scale": scale(), "B_zero_point": zp(dt),
                             "C_scale": np.float32(0.03 if op == "QLinearAdd" else 0.004), "C_zero_point": zp(dt)},
                            [("C", dt)], domain=MS))
        for op, attrs in (("QLinearSigmoid", {}), ("QLinearLeakyRelu", dict(alpha=0.1))):
            out.append(case(f"{op}_{t}", op, ["X", "X_scale", "X_zero_point", "Y_scale", "Y_zero_point"],
                            {"X": q8(dt, (3, 50))},
                            {"X_scale": np.float32(0.05), "X_zero_point": zp(dt), "Y_scale": np.float32(1 / 256 if op == "QLinearSigmoid" else 0.04),
                             "Y_zero_point": (np.array(-128, np.int8) if dt == np.int8 else np.array(0, np.uint8)) if op == "QLinearSigmoid" else zp(dt)},
                            [("Y", dt)], domain=MS, attrs=attrs))
        for last in (0, 1):
            x = q8(dt, (2, 5, 6, 16) if last else (2, 16, 5, 6))
            out.append(case(f"QLinearGlobalAveragePool_{t}_{'nhwc' if last else 'nchw'}", "QLinearGlobalAveragePool",
                            ["X", "x_scale", "x_zero_point", "y_scale", "y_zero_point"], {"X": x},
                            {"x_scale": np.float32(0.05), "x_zero_point": zp(dt), "y_scale": np.float32(0.02), "y_zero_point": zp(dt)},
                            [("Y", dt)], domain=MS, attrs=dict(channels_last=last)))
            x = q8(dt, (1, 9, 8, 4) if last else (1, 4, 9, 8))
            out.append(case(f"QLinearAveragePool_{t}_{'nhwc' if last else 'nchw'}", "QLinearAveragePool",
                            ["X", "x_scale", "x_zero_point", "y_scale", "y_zero_point"], {"X": x},
                            {"x_scale": np.float32(0.05), "x_zero_point": zp(dt), "y_scale": np.float32(0.04), "y_zero_point": zp(dt)},
                            [("Y", dt)], domain=MS,
                            attrs=dict(channels_last=last, kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], count_include_pad=0)))
        sy, zy = np.float32(0.05), zp(dt)
        out.append(case(f"QLinearConcat_{t}", "QLinearConcat", ["Y_scale", "Y_zero_point", "x0", "s0", "z0", "x1", "s1", "z1"],
                        {"x0": q8(dt, (2, 3, 4)), "x1": q8(dt, (2, 5, 4))},
                        {"Y_scale": sy, "Y_zero_point": zy, "s0": np.float32(0.03), "z0": zp(dt), "s1": sy, "z1": zy},
                        [("Y", dt)], domain=MS, attrs=dict(axis=1)))
    # MatMulIntegerToFloat (uint8 A) and DynamicQuantizeMatMul (float A), int8 weights per column
    for wdt in (np.int8, np.uint8):
        b = q8(wdt, (48, 20), -64 if wdt == np.int8 else None, 63 if wdt == np.int8 else None)
        out.append(case(f"MatMulIntegerToFloat_u8{wdt.__name__[0]}8", "MatMulIntegerToFloat",
                        ["A", "B", "a_scale", "b_scale", "a_zero_point", "b_zero_point", "bias"], {"A": q8(np.uint8, (3, 4, 48))},
                        {"B": b, "a_scale": scale(), "b_scale": scale((20,)), "a_zero_point": zp(np.uint8),
                         "b_zero_point": zp(wdt), "bias": rng.normal(size=(20,)).astype(np.float32)},
                        [("Y", np.float32)], domain=MS, kind="float"))
        out.append(case(f"DynamicQuantizeMatMul_{wdt.__name__}", "DynamicQuantizeMatMul", ["A", "B", "b_scale", "b_zero_point", "bias"],
                        {"A": rng.normal(size=(5, 48)).astype(np.float32)},
                        {"B": b, "b_scale": scale((20,)), "b_zero_point": zp(wdt), "bias": rng.normal(size=(20,)).astype(np.float32)},
                        [("Y", np.float32)], domain=MS, kind="float"))
    # QGemm (com.microsoft): uint8 A, int8 B^T per column, int32 C; quantized and float results
    for quant_out in (True, False):
        consts = {"a_scale": scale(), "a_zero_point": zp(np.uint8), "B": q8(np.int8, (12, 32), -64, 63),
                  "b_scale": scale((12,)), "b_zero_point": np.zeros((12,), np.int8),
                  "C": rng.integers(-2000, 2000, size=(12,)).astype(np.int32)}
        if quant_out:
            consts.update({"y_scale": np.float32(0.2), "y_zero_point": zp(np.uint8)})
        out.append(case(f"QGemm_{'u8' if quant_out else 'f32'}", "QGemm",
                        ["A", "a_scale", "a_zero_point", "B", "b_scale", "b_zero_point", "C", "y_scale", "y_zero_point"],
                        {"A": q8(np.uint8, (6, 32))}, consts, [("Y", np.uint8 if quant_out else np.float32)], domain=MS,
                        attrs=dict(alpha=0.75, transB=1), kind="int" if quant_out else "float"))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("kiln")
    ap.add_argument("conformance", help="kiln-conformance (the evaluator on the imported graph)")
    ap.add_argument("--keep", help="write the models, inputs and onnxruntime outputs here")
    ap.add_argument("--route", default=None, help="evaluate the compile pipeline's graph for this route")
    args = ap.parse_args()
    work = args.keep or tempfile.mkdtemp(prefix="kiln-ort-qops-")
    os.makedirs(work, exist_ok=True)
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    failures, rows = 0, []
    cases_run = cases()
    for c in cases_run:
        path = os.path.join(work, c["name"] + ".onnx")
        onnx.save(c["model"], path)
        sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
        want = sess.run(None, c["feeds"])
        names = [o.name for o in sess.get_outputs()]
        np.savez(os.path.join(work, c["name"] + ".inputs.npz"), **c["feeds"])
        # The same case as an ONNX node test, for kiln-conformance.
        test = os.path.join(work, "node", "test_ort_" + c["name"])
        os.makedirs(os.path.join(test, "test_data_set_0"), exist_ok=True)
        onnx.save(c["model"], os.path.join(test, "model.onnx"))
        for k, (n, v) in enumerate(c["feeds"].items()):
            with open(os.path.join(test, "test_data_set_0", f"input_{k}.pb"), "wb") as f:
                f.write(onnx.numpy_helper.from_array(v, n).SerializeToString())
        for k, (n, v) in enumerate(zip(names, want)):
            with open(os.path.join(test, "test_data_set_0", f"output_{k}.pb"), "wb") as f:
                f.write(onnx.numpy_helper.from_array(v, n).SerializeToString())
        np.savez(os.path.join(work, c["name"] + ".ref.npz"), **dict(zip(names, want)))
        got_path = os.path.join(work, c["name"] + ".kiln.npz")
        cmd = [args.kiln, "eval", path, "--inputs", os.path.join(work, c["name"] + ".inputs.npz"), "--outputs", got_path]
        if args.route is not None:
            cmd += ["--route", args.route]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            failures += 1
            print(f"FAIL {c['name']}: kiln eval exited {p.returncode}: {p.stderr.strip()[:400]}")
            continue
        got = np.load(got_path)
        verdicts = []
        ok = True
        for n, w in zip(names, want):
            g = got[n]
            if g.shape != w.shape or g.dtype != w.dtype:
                ok = False
                verdicts.append(f"{n}: {g.dtype}{list(g.shape)} vs onnxruntime {w.dtype}{list(w.shape)}")
                continue
            if w.dtype.kind == "f":
                rel = float(np.linalg.norm((g - w).astype(np.float64)) / max(np.linalg.norm(w.astype(np.float64)), 1e-30))
                good = rel <= 1e-6 and (c["kind"] != "exact" or np.array_equal(g, w))
                ok &= good
                verdicts.append(f"{n}: rel L2 {rel:.1e}")
                continue
            d = np.abs(g.astype(np.int64) - w.astype(np.int64))
            off = int((d > 0).sum())
            frac = off / max(d.size, 1)
            good = off == 0 if c["kind"] == "exact" else (int(d.max(initial=0)) <= 1 and frac <= 0.1)
            ok &= good
            verdicts.append(f"{n}: {off}/{d.size} differ" + (f" (max {int(d.max())})" if off else ""))
        failures += not ok
        rows.append({"case": c["name"], "ok": ok, "outputs": verdicts})
        print(("ok   " if ok else "FAIL ") + c["name"] + ": " + "; ".join(verdicts))
    print(f"kiln eval: {len(rows)} cases, {failures} failed" + (f" (route '{args.route}')" if args.route is not None else ""))
    # The evaluator on the imported graph, exactly (kiln-conformance compares integers exactly).
    p = subprocess.run([args.conformance, "--data", os.path.join(work, "node")], capture_output=True, text=True)
    print("evaluator (kiln-conformance): " + p.stdout.strip().splitlines()[-1] if p.stdout.strip() else p.stderr)
    if p.returncode != 0 or " 0 fail, 0 unsupported, 0 error" not in p.stdout:
        print(p.stdout[-3000:], p.stderr[-2000:])
        failures += 1
    with open(os.path.join(work, "summary.json"), "w") as f:
        json.dump(rows, f, indent=1)
    # For bench/gpu_suite.sh qops: each case's engine against onnxruntime (8-bit outputs within one
    # step, float ones to float rounding).
    with open(os.path.join(work, "cases.tsv"), "w") as f:
        for c in cases_run:
            f.write(f"{c['name']}\t{'rel_l2<=1e-5' if c['kind'] == 'float' else 'max_abs<=1'}\n")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

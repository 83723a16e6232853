#!/usr/bin/env python3
"""Small models quantized by onnxruntime's quantizer, in every form it writes, with their float
originals, fixed inputs and onnxruntime's outputs: what `kiln` must import, evaluate, compile and
run like onnxruntime (bench/gpu_suite.sh qops; the `ort_quant_models` ctest on the CPU).

    /root/.cache/kiln-realmodels/venv/bin/python bench/ort_quant_models.py OUT_DIR
    ... bench/ort_quant_models.py OUT_DIR --check build/bin/kiln     # CPU: eval, compile for sm_90
    ... bench/ort_quant_models.py .carry/qops --corpus /root/.cache/kiln-realmodels/out  # for the GPU

Two float models built with onnx.helper from seeded random weights:
  cnn  x[8,16,32,32]: Conv 3x3 (16→32) Relu, Conv 3x3 (32→32) + residual Add, LeakyRelu,
       x·Sigmoid(x), Conv 3x3 stride 2 (32→64), AveragePool 3x3 ‖ Relu concatenated (128),
       GlobalAveragePool, Flatten, Gemm (128→10)
  mlp  x[64,256]: MatMul (256→1024) + bias, Relu, MatMul (1024→256) + bias, + x (a transformer's
       feed-forward block)
and from each:
  NAME.dyn.onnx     quantize_dynamic (QOperator: DynamicQuantizeLinear, MatMulInteger, ConvInteger)
  NAME.qop.onnx     quantize_static, QOperator, uint8 activations, int8 per-channel weights
                    (QLinearConv, QLinearMatMul, com.microsoft QLinearAdd, QLinearMul,
                    QLinearSigmoid, QLinearLeakyRelu, QLinearAveragePool, QLinearConcat,
                    QLinearGlobalAveragePool)
  mlp.dyn.ortopt.onnx  the dynamic MLP as onnxruntime's own graph optimizer saves it
                    (com.microsoft DynamicQuantizeMatMul / MatMulIntegerToFloat)
Each NAME.*.onnx has NAME.*.inputs.npz and NAME.*.ref.npz (onnxruntime CPU, optimizations off);
manifest.json lists them with the float model they came from (the fp16 baseline for timing).
"""
import argparse
import json
import os
import subprocess
import sys

try:
    import numpy as np
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper
    from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType, quantize_dynamic,
                                          quantize_static)
except ImportError as e:
    print(f"SKIP: {e} (run with an interpreter that has onnxruntime)")
    sys.exit(77)

rng = np.random.default_rng(23)


def init(name, shape, std):
    return numpy_helper.from_array((rng.standard_normal(shape) * std).astype(np.float32), name)


def cnn():
    n = lambda op, ins, outs, **kw: helper.make_node(op, ins, outs, name=outs[0], **kw)
    inits = [init("w1", (32, 16, 3, 3), 0.12), init("b1", (32,), 0.1), init("w2", (32, 32, 3, 3), 0.06),
             init("b2", (32,), 0.1), init("w3", (64, 32, 3, 3), 0.06), init("b3", (64,), 0.1),
             init("fc_w", (10, 128), 0.1), init("fc_b", (10,), 0.1)]
    nodes = [
        n("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]), n("Relu", ["c1"], ["r1"]),
        n("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1]), n("Add", ["c2", "r1"], ["res"]),
        n("LeakyRelu", ["res"], ["lr"], alpha=0.1), n("Sigmoid", ["lr"], ["sg"]), n("Mul", ["lr", "sg"], ["swish"]),
        n("Conv", ["swish", "w3", "b3"], ["c3"], pads=[1, 1, 1, 1], strides=[2, 2]),
        n("AveragePool", ["c3"], ["ap"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1]),
        n("Relu", ["c3"], ["r3"]), n("Concat", ["ap", "r3"], ["cat"], axis=1),
        n("GlobalAveragePool", ["cat"], ["gap"]), n("Flatten", ["gap"], ["flat"]),
        n("Gemm", ["flat", "fc_w", "fc_b"], ["y"], transB=1)]
    g = helper.make_graph(nodes, "cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, 16, 32, 32])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [8, 10])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def mlp():
    inits = [init("w1", (256, 1024), 0.06), init("b1", (1024,), 0.1), init("w2", (1024, 256), 0.03),
             init("b2", (256,), 0.1)]
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"], name="fc1"), helper.make_node("Add", ["h", "b1"], ["hb"], name="fc1_bias"),
             helper.make_node("Relu", ["hb"], ["hr"], name="act"), helper.make_node("MatMul", ["hr", "w2"], ["o"], name="fc2"),
             helper.make_node("Add", ["o", "b2"], ["ob"], name="fc2_bias"), helper.make_node("Add", ["ob", "x"], ["y"], name="residual")]
    g = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [64, 256])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [64, 256])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def feeds(model, seed):
    r = np.random.default_rng(seed)
    out = {}
    for i in model.graph.input:
        shape = [d.dim_value for d in i.type.tensor_type.shape.dim]
        out[i.name] = r.standard_normal(shape).astype(np.float32)
    return out


class Reader(CalibrationDataReader):
    def __init__(self, model, batches=4):
        self.items = [feeds(model, 100 + k) for k in range(batches)]

    def get_next(self):
        return self.items.pop() if self.items else None


def reference(path, inputs):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    s = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in s.get_outputs()], s.run(None, inputs)))


def rel_l2(a, b):
    return float(np.linalg.norm((a - b).astype(np.float64)) / max(np.linalg.norm(b.astype(np.float64)), 1e-30))


def generate(out):
    os.makedirs(out, exist_ok=True)
    manifest = []
    for name, make, ops in (("cnn", cnn, ["Conv"]), ("mlp", mlp, ["MatMul"])):
        f = make()
        onnx.checker.check_model(f)
        fpath = os.path.join(out, f"{name}.onnx")
        onnx.save(f, fpath)
        x = feeds(f, 1)
        variants = {name: fpath}
        dyn = os.path.join(out, f"{name}.dyn.onnx")
        # reduce_range (7-bit weights): onnxruntime's u8s8 kernels on CPUs without VNNI sum
        # pairs of products in int16 and saturate on full-range weights (its documented issue);
        # its references would then not be the model's arithmetic.
        quantize_dynamic(fpath, dyn, weight_type=QuantType.QInt8, op_types_to_quantize=ops, reduce_range=True)
        variants[f"{name}.dyn"] = dyn
        qop = os.path.join(out, f"{name}.qop.onnx")
        quantize_static(fpath, qop, Reader(f), quant_format=QuantFormat.QOperator, activation_type=QuantType.QUInt8,
                        weight_type=QuantType.QInt8, per_channel=True, reduce_range=True)
        variants[f"{name}.qop"] = qop
        if name == "mlp":
            # onnxruntime's own optimizer fuses the dynamic form into com.microsoft ops.
            so = ort.SessionOptions()
            so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
            opt = os.path.join(out, f"{name}.dyn.ortopt.onnx")
            so.optimized_model_filepath = opt
            ort.InferenceSession(dyn, so, providers=["CPUExecutionProvider"])
            variants[f"{name}.dyn.ortopt"] = opt
        for v, path in variants.items():
            ref = reference(path, x)
            np.savez(os.path.join(out, f"{v}.inputs.npz"), **x)
            np.savez(os.path.join(out, f"{v}.ref.npz"), **ref)
            m = onnx.load(path)
            ops_used = sorted({(n.domain + "::" if n.domain else "") + n.op_type for n in m.graph.node})
            entry = {"id": v, "onnx": os.path.basename(path), "float": f"{name}.onnx", "ops": ops_used}
            if v != name:
                fref = np.load(os.path.join(out, f"{name}.ref.npz"))
                entry["ort_vs_float_rel_l2"] = {k: rel_l2(ref[k], fref[k]) for k in ref}
            manifest.append(entry)
            print(v, ops_used, entry.get("ort_vs_float_rel_l2", ""))
    with open(os.path.join(out, "manifest.json"), "w") as fh:
        json.dump(manifest, fh, indent=1)
    return manifest


def check(out, kiln, manifest):
    """The CPU side: kiln eval (the compile pipeline's graph) against onnxruntime, compile for sm_90."""
    bad = 0
    for e in manifest:
        path = os.path.join(out, e["onnx"])
        got = os.path.join(out, e["id"] + ".kiln.npz")
        p = subprocess.run([kiln, "eval", path, "--inputs", os.path.join(out, e["id"] + ".inputs.npz"), "--outputs", got],
                           capture_output=True, text=True)
        if p.returncode:
            print(f"FAIL {e['id']}: kiln eval: {p.stderr.strip()[:300]}")
            bad += 1
            continue
        ref, g = np.load(os.path.join(out, e["id"] + ".ref.npz")), np.load(got)
        rels = {k: rel_l2(g[k], ref[k]) for k in ref.files}
        # Dynamic quantization: the evaluator's float products are onnxruntime's integer sums up
        # to float rounding. Static QOperator graphs go through Q/DQ forms whose values on a
        # rounding boundary land one 8-bit step apart, which later layers carry on.
        bound = 1e-4 if ".qop" not in e["id"] else 1e-3
        comp = []
        for prec in ("fp32", "fp16"):
            q = subprocess.run([kiln, "compile", path, "--arch", "sm_90", "--precision", prec, "-o",
                                os.path.join(out, f"{e['id']}.{prec}.kiln")], capture_output=True, text=True)
            comp.append(f"{prec} {'ok' if q.returncode == 0 else 'FAIL: ' + q.stderr.strip()[:200]}")
            bad += q.returncode != 0
        ok = all(r <= bound for r in rels.values())
        bad += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {e['id']}: eval rel L2 vs onnxruntime " +
              ", ".join(f"{k} {v:.2e}" for k, v in rels.items()) + f" (bound {bound:g}); compile " + "; ".join(comp))
    return bad


# The corpus's onnxruntime-quantized real models (models/realmodels/fetch.py), with the shapes
# their symbolic dimensions take.
CORPUS = {"t5_span_encoder_quant": "--shapes input_ids:1x32,attention_mask:1x32",
          "ddddocr_common_old_quant": "--shapes input1:1x1x64x160"}


def carry(out, manifest, corpus):
    """qops.tsv for bench/gpu_suite.sh qops: name, float model (the fp16 engine to match), fp32 and
    fp16 accuracy constraints against onnxruntime, extra compile flags."""
    rows = []
    for e in manifest:
        if e["id"] in ("cnn", "mlp"):
            continue
        static = ".qop" in e["id"]
        rows.append([e["id"], e["float"][:-5], "cos>=0.999" if static else "rel_l2<=1e-4",
                     "cos>=0.999" if static else "rel_l2<=1e-2", ""])
    if corpus:
        import shutil
        for name, flags in CORPUS.items():
            src = os.path.join(corpus, name + ".onnx")
            if not os.path.exists(src):
                print(f"note: {src} is missing (models/realmodels/fetch.py fetches it)")
                continue
            for suffix in (".onnx", ".inputs.npz", ".ref.npz"):
                shutil.copy(os.path.join(corpus, name + suffix), os.path.join(out, name + suffix))
            rows.append([name, "-", "rel_l2<=1e-4", "rel_l2<=1e-2", flags])
    with open(os.path.join(out, "qops.tsv"), "w") as fh:
        fh.write("# name\tfloat model\tfp32 accuracy\tfp16 accuracy\tcompile flags\n")
        for r in rows:
            fh.write("\t".join(r) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--check", metavar="KILN", help="then evaluate and compile each model with this kiln")
    ap.add_argument("--corpus", metavar="DIR", help="also copy the corpus's ORT-quantized real models here "
                    "(with inputs and references) and list everything in qops.tsv for bench/gpu_suite.sh qops")
    a = ap.parse_args()
    manifest = generate(a.out)
    carry(a.out, manifest, a.corpus)
    if a.check:
        return 1 if check(a.out, a.check, manifest) else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())

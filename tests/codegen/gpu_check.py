#!/usr/bin/env python3
"""GPU check of the emitted kernels against onnxruntime (CPU provider), on a GPU host.

  g++ -std=c++17 -O1 -I. -o /tmp/kernel_cases_dump tests/codegen/kernel_cases_dump.cpp \
      codegen/KernelSpec.cpp codegen/kernels/*.cpp
  /tmp/kernel_cases_dump > /tmp/cases.jsonl
  python3 tests/codegen/gpu_check.py /tmp/cases.jsonl [--arch sm_90]

Each case of KernelCases.h becomes a one-node ONNX model (opset 20; constant operands such as
Slice's starts or ReduceSum's axes become initializers); random inputs are run through
onnxruntime and through the kernel launches (NVRTC + the driver API via ctypes, device memory
from torch). Outputs are pre-filled with NaN, so an unwritten element fails. Exit code 1 when a
case fails.
"""
import ctypes
import json
import sys

import numpy as np
import onnx
import onnxruntime as ort
import torch
from onnx import TensorProto, helper, numpy_helper

ARCH = "sm_90"
if "--arch" in sys.argv:
    ARCH = sys.argv[sys.argv.index("--arch") + 1]

nvrtc = ctypes.CDLL("/usr/local/cuda/lib64/libnvrtc.so.13")
cuda = ctypes.CDLL("libcuda.so.1")
cuda.cuLaunchKernel.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p,
                                                                            ctypes.POINTER(ctypes.c_void_p),
                                                                            ctypes.c_void_p]
cuda.cuModuleLoadData.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_char_p]
cuda.cuModuleGetFunction.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p, ctypes.c_char_p]


def compile_cubin(src, name):
    prog = ctypes.c_void_p()
    r = nvrtc.nvrtcCreateProgram(ctypes.byref(prog), src.encode(), (name + ".cu").encode(), 0, None, None)
    assert r == 0, r
    opts = [("--gpu-architecture=" + ARCH).encode(), b"--std=c++17"]
    arr = (ctypes.c_char_p * len(opts))(*opts)
    r = nvrtc.nvrtcCompileProgram(prog, len(opts), arr)
    if r != 0:
        n = ctypes.c_size_t()
        nvrtc.nvrtcGetProgramLogSize(prog, ctypes.byref(n))
        log = ctypes.create_string_buffer(n.value)
        nvrtc.nvrtcGetProgramLog(prog, log)
        raise RuntimeError("NVRTC: " + log.value.decode())
    n = ctypes.c_size_t()
    nvrtc.nvrtcGetCUBINSize(prog, ctypes.byref(n))
    buf = ctypes.create_string_buffer(n.value)
    nvrtc.nvrtcGetCUBIN(prog, buf)
    return buf.raw


def load(cubin, name):
    mod = ctypes.c_void_p()
    r = cuda.cuModuleLoadData(ctypes.byref(mod), cubin)
    assert r == 0, "cuModuleLoadData %d" % r
    fn = ctypes.c_void_p()
    r = cuda.cuModuleGetFunction(ctypes.byref(fn), mod, name.encode())
    assert r == 0, "cuModuleGetFunction %d" % r
    return fn


def launch(fn, l, ptrs):
    vals = [ctypes.c_void_p(p) for p in ptrs]
    args = (ctypes.c_void_p * len(vals))(*[ctypes.cast(ctypes.pointer(v), ctypes.c_void_p) for v in vals])
    g, b = l["grid"], l["block"]
    r = cuda.cuLaunchKernel(fn, g[0], g[1], g[2], b[0], b[1], b[2], l["shared"], None, args, None)
    assert r == 0, "cuLaunchKernel %d" % r
    torch.cuda.synchronize()


INT_LISTS = {"perm", "kernel_shape", "strides", "pads", "dilations", "axes"}
INTS = {"axis", "group", "transA", "transB", "keepdims", "ceil_mode", "count_include_pad", "fmod",
        "detect_negative", "detect_positive", "select_last_index", "largest", "exclusive", "reverse", "upper",
        "size", "align_corners", "batch_dims"}
STRINGS = {"approximate", "mode", "padding_mode", "reduction"}
CUSTOM = {"stats", "indices", "fused_relu"}


def ints(s):
    return [int(v) for v in s.split(",")]


def make_inputs(case, rng):
    op, shapes = case["op"], case["inputs"]
    vals = []
    for k, s in enumerate(shapes):
        s = tuple(s)
        if op in ("Gather", "GatherElements") and k == 1:
            d = case["inputs"][0][int(case["attrs"].get("axis", "0")) % len(case["inputs"][0])]
            vals.append(np.asarray(rng.integers(-d, d, size=s), dtype=np.int64))
            continue
        if op in ("GatherND", "ScatterND") and k == 1:  # each tuple position in range of its axis
            data, b = case["inputs"][0], int(case["attrs"].get("batch_dims", "0"))
            hi = np.array([data[b + j] for j in range(s[-1])])
            vals.append(np.asarray(rng.integers(0, 1 << 30, size=s) % hi, dtype=np.int64))
            continue
        if op == "ScatterElements" and k == 1:
            d = case["inputs"][0][int(case["attrs"].get("axis", "0")) % len(case["inputs"][0])]
            vals.append(np.asarray(rng.integers(-d, d, size=s), dtype=np.int64))
            continue
        if op == "Where" and k == 0:
            vals.append(np.asarray(rng.random(s) < 0.5))
            continue
        v = np.asarray(rng.standard_normal(s), dtype=np.float32)
        if op in ("Log", "Sqrt", "ReduceLogSum") or (op == "Pow" and k == 0):
            v = np.abs(v) + np.float32(0.1)
        if op in ("Reciprocal",) or (op in ("Div", "Mod") and k == 1):
            v = (np.sign(v) * (np.abs(v) + 0.5)).astype(np.float32)
            v[v == 0] = 1
        vals.append(v)
    return vals


def make_model(case, vals):
    op, attrs = case["op"], dict(case["attrs"])
    names = ["in%d" % k for k in range(len(vals))]
    inits, node_inputs, kw = [], list(names), {}

    def const(name, arr):
        inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    if op.startswith("Reduce"):
        if "axes" in attrs:
            node_inputs.append(const("axes", np.array(ints(attrs.pop("axes")), np.int64)))
        kw["keepdims"] = int(attrs.pop("keepdims", "1"))
    if op == "Slice":
        for key in ("starts", "ends", "axes", "steps"):
            if key in attrs:
                node_inputs.append(const(key, np.array(ints(attrs.pop(key)), np.int64)))
            elif key == "axes" and "steps" in attrs:
                node_inputs.append("")
    if op == "Expand":
        node_inputs.append(const("shape", np.array(ints(attrs.pop("shape")), np.int64)))
    if op == "Tile":
        node_inputs.append(const("repeats", np.array(ints(attrs.pop("repeats")), np.int64)))
    if op == "Clip" and "min" in attrs:
        node_inputs.append(const("min", np.array(float(attrs.pop("min")), np.float32)))
        node_inputs.append(const("max", np.array(float(attrs.pop("max")), np.float32)))
    # Inputs the kernels take as attributes: TopK's K, CumSum's axis, Trilu's k.
    if op == "TopK":
        node_inputs.append(const("K", np.array([int(attrs.pop("k"))], np.int64)))
    if op == "CumSum":
        node_inputs.append(const("axis", np.array(int(attrs.pop("cumsum_axis")), np.int64)))
    if op == "Trilu" and "k" in attrs:
        node_inputs.append(const("k", np.array(int(attrs.pop("k")), np.int64)))
    n_out = 2 if op == "TopK" else 1
    if attrs.pop("stats", "0") == "1":
        n_out = 3
    if attrs.pop("indices", "0") == "1":
        n_out = 2
    attrs.pop("fused_relu", None)
    for k, v in attrs.items():
        if k in INT_LISTS:
            kw[k] = ints(v)
        elif k in INTS:
            kw[k] = int(v)
        elif k in STRINGS:
            kw[k] = v
        else:
            kw[k] = float(v)
    if op == "ReduceMinMax":  # (kiln's own: ReduceMin of in0 and ReduceMax of in1, as two nodes)
        axes = node_inputs[2:]
        nodes = [helper.make_node("ReduceMin", ["in0"] + axes, ["out0"], **kw),
                 helper.make_node("ReduceMax", ["in1"] + axes, ["out1"], **kw)]
        outs = ["out0", "out1"]
    else:
        outs = ["out%d" % k for k in range(n_out)]
        nodes = [helper.make_node(op, node_inputs, outs, **kw)]

    def vi(name, v):
        dt = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.int64): TensorProto.INT64,
              np.dtype(bool): TensorProto.BOOL}[v.dtype]
        return helper.make_tensor_value_info(name, dt, list(v.shape))

    graph = helper.make_graph(nodes, case["name"], [vi(n, v) for n, v in zip(names, vals)],
                              [helper.make_tensor_value_info(o, out_type(op, k), None) for k, o in enumerate(outs)],
                              initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
    model.ir_version = 9
    return model


def out_type(op, k):
    if op in ("Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "IsNaN", "IsInf", "And", "Or", "Not"):
        return TensorProto.BOOL
    if (op == "MaxPool" and k == 1) or (op == "TopK" and k == 1) or op in ("ArgMax", "ArgMin"):
        return TensorProto.INT64
    return TensorProto.FLOAT


def torch_of(a):
    return torch.from_numpy(np.ascontiguousarray(a)).cuda()


def bench(path):
    """Times the launches of `kernel_cases_dump --bench` (median of 20 after warm-up)."""
    torch.zeros(1, device="cuda")
    for line in open(path):
        case = json.loads(line)
        l = case["launches"][0]
        fn = load(compile_cubin(l["source"], l["entry"]), l["entry"])
        bufs = [torch.randn(int(n), device="cuda") for n in case["buffers"]]
        ptrs = [b.data_ptr() for b in bufs]
        vals = [ctypes.c_void_p(p) for p in ptrs]
        args = (ctypes.c_void_p * len(vals))(*[ctypes.cast(ctypes.pointer(v), ctypes.c_void_p) for v in vals])
        g, b = l["grid"], l["block"]
        times = []
        for it in range(25):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            r = cuda.cuLaunchKernel(fn, g[0], g[1], g[2], b[0], b[1], b[2], l["shared"], None, args, None)
            e.record()
            torch.cuda.synchronize()
            assert r == 0
            if it >= 5:
                times.append(s.elapsed_time(e))
        ms = sorted(times)[len(times) // 2]
        rate = ""
        if case.get("flops"):
            rate += " %.1f TFLOP/s" % (case["flops"] / ms / 1e9)
        if case.get("bytes"):
            rate += " %.0f GB/s" % (case["bytes"] / ms / 1e6)
        print("%-28s %8.3f ms%s" % (case["name"], ms, rate))


def main():
    if "--bench" in sys.argv:
        bench(sys.argv[1])
        return 0
    rng = np.random.default_rng(7)
    torch.zeros(1, device="cuda")  # creates and binds the primary context
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    failed, passed, skipped = [], 0, []
    for line in open(sys.argv[1]):
        case = json.loads(line)
        name = case["name"]
        if "error" in case:
            failed.append((name, "emit: " + case["error"]))
            continue
        vals = make_inputs(case, rng)
        try:
            sess = ort.InferenceSession(make_model(case, vals).SerializeToString(), so,
                                        providers=["CPUExecutionProvider"])
            refs = sess.run(None, {"in%d" % k: v for k, v in enumerate(vals)})
        except Exception as e:  # noqa: BLE001
            skipped.append((name, "onnxruntime: " + str(e).splitlines()[0][:160]))
            continue
        if case["attrs"].get("fused_relu") == "1":
            refs = [np.maximum(refs[0], 0)]
        ins = [torch_of(v) for v in vals]
        outs = []
        for r in refs:
            dt = {np.dtype(np.float32): torch.float32, np.dtype(np.int64): torch.int64,
                  np.dtype(bool): torch.bool}[r.dtype]
            t = torch.empty(r.shape, dtype=dt, device="cuda")
            if t.is_floating_point():
                t.fill_(float("nan"))
            else:
                t.fill_(-7 if t.dtype != torch.bool else 0)
            outs.append(t)
        try:
            for k, l in enumerate(case["launches"]):
                fn = load(compile_cubin(l["source"], l["entry"]), l["entry"])
                if case["op"] == "Concat":
                    ptrs = [ins[k].data_ptr(), outs[0].data_ptr()]
                elif case["op"] in ("ScatterND", "ScatterElements"):  # the data copied, then the updates
                    ptrs = [t.data_ptr() for t in (ins[:1] if k == 0 else ins[1:])] + [outs[0].data_ptr()]
                else:
                    ptrs = [t.data_ptr() for t in ins] + [t.data_ptr() for t in outs]
                assert len(ptrs) == l["params"], "parameter count %d != %d" % (len(ptrs), l["params"])
                launch(fn, l, ptrs)
        except Exception as e:  # noqa: BLE001
            failed.append((name, "launch: " + str(e)[:300]))
            continue
        msgs = []
        for k, (r, t) in enumerate(zip(refs, outs)):
            got = t.cpu().numpy()
            if got.shape != r.shape:
                msgs.append("out%d shape %s vs %s" % (k, got.shape, r.shape))
                continue
            if r.dtype.kind in "biu":
                bad = int(np.sum(got != r))
                if bad:
                    msgs.append("out%d: %d of %d differ" % (k, bad, r.size))
                continue
            rd, gd = np.atleast_1d(r.astype(np.float64)), np.atleast_1d(got.astype(np.float64))  # (0-d: scalars)
            both_nan = np.isnan(rd) & np.isnan(gd)
            # fp32 kernels vs fp32 ORT: relative 1e-4, plus an absolute term that scales with the
            # output's magnitude (long sums cancel: conv with K = 4608 loses ~1e-5 absolutely).
            scale = max(1.0, float(np.nanmax(np.abs(rd[np.isfinite(rd)]), initial=0.0)))
            err = np.abs(gd - rd) / (1e-5 * scale + 1e-4 * np.abs(rd))
            err[both_nan] = 0
            err[np.isnan(err)] = np.inf
            if r.size and err.max() > 1:
                i = int(np.argmax(err))
                msgs.append("out%d: worst at %d got %r want %r (%d bad of %d)" %
                            (k, i, gd.flat[i], rd.flat[i], int(np.sum(err > 1)), r.size))
        if msgs:
            failed.append((name, "; ".join(msgs)))
        else:
            passed += 1
    print("passed %d, failed %d, skipped %d" % (passed, len(failed), len(skipped)))
    for n, m in failed:
        print("FAIL", n, m)
    for n, m in skipped:
        print("SKIP", n, m)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

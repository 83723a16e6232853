#!/usr/bin/env python3
"""kiln's LSTM against PyTorch's cuDNN LSTM, side by side on one GPU (issue 23).

A bidirectional 2-layer nn.LSTM (input 256, hidden 256; sequence 64, batch 32 by default) is
exported to ONNX with the host's PyTorch (torch.onnx.export, dynamo=False), compiled by kiln
(--precision fp16 unless --precision says otherwise) and timed with `kiln run` (CUDA events,
median after warm-up); the same module in fp16 on cuDNN (torch.backends.cudnn) is timed with
CUDA events around each forward, median of --iterations runs after warm-up. Prints both
medians, the ratio kiln / cuDNN (target <= 1.2) and the accuracy of kiln's outputs (Y, h_n,
c_n) and of cuDNN fp16's against PyTorch fp32 on the same input.

  python3 bench/lstm_vs_cudnn.py --kiln build/bin/kiln [--seq 64 --batch 32 --input 256 --hidden 256
      --layers 2] [--iterations 200] [--precision fp16] [--json out.json]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch

from cuda_timing import time_cuda


def rel_l2(got, want):
    got, want = np.asarray(got, np.float64).ravel(), np.asarray(want, np.float64).ravel()
    return float(np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kiln", default="build/bin/kiln")
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--input", type=int, default=256)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--iterations", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--precision", default="fp16")
    ap.add_argument("--route", default="", help="extra kiln route terms")
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("lstm_vs_cudnn: skipped (no GPU)")
        return 77
    torch.manual_seed(0)
    dev = torch.device("cuda")
    model = torch.nn.LSTM(args.input, args.hidden, num_layers=args.layers, bidirectional=True).eval()
    x = torch.randn(args.seq, args.batch, args.input)
    work = tempfile.mkdtemp(prefix="kiln-lstm-")
    onnx_path, engine = os.path.join(work, "lstm.onnx"), os.path.join(work, "lstm.kiln")
    with torch.no_grad():
        torch.onnx.export(model, (x,), onnx_path, input_names=["x"], output_names=["y", "h_n", "c_n"],
                          opset_version=17, dynamo=False)
        ref = [t.numpy() for t in (lambda o: (o[0], o[1][0], o[1][1]))(model(x))]

    route = "precision=" + args.precision + (";" + args.route if args.route else "")
    p = subprocess.run([args.kiln, "compile", onnx_path, "-o", engine, "--route", route], capture_output=True, text=True)
    print(p.stdout.strip() or p.stderr.strip())
    if p.returncode != 0:
        print("kiln compile failed:", p.stderr.strip())
        return 1
    inputs, outputs = os.path.join(work, "in.npz"), os.path.join(work, "out.npz")
    np.savez(inputs, x=x.numpy())
    p = subprocess.run([args.kiln, "run", engine, "--inputs", inputs, "--outputs", outputs, "--warmup",
                        str(args.warmup), "--iterations", str(args.iterations), "--json"], capture_output=True, text=True)
    if p.returncode != 0:
        print("kiln run failed:", p.stdout.strip(), p.stderr.strip())
        return 1
    run = json.loads(p.stdout)
    kiln_ms = run["latency_ms"]["median"]
    got = np.load(outputs)
    kiln_err = {n: rel_l2(got[n], r) for n, r in zip(("y", "h_n", "c_n"), ref)}
    kiln_max = {n: float(np.abs(got[n].astype(np.float64) - r).max()) for n, r in zip(("y", "h_n", "c_n"), ref)}

    half = torch.float16 if args.precision == "fp16" else torch.bfloat16 if args.precision == "bf16" else torch.float32
    m = model.to(dev, half)
    xd = x.to(dev, half)
    with torch.no_grad():
        o = m(xd)
        cudnn_err = {n: rel_l2(t.float().cpu().numpy(), r) for n, t, r in zip(("y", "h_n", "c_n"), (o[0], o[1][0], o[1][1]), ref)}
        cudnn_ms, cudnn_min, _ = time_cuda(lambda: m(xd), args.warmup, args.iterations)

    ratio = kiln_ms / cudnn_ms
    print("device: %s; torch %s, cuDNN %s" % (torch.cuda.get_device_name(), torch.__version__,
                                               torch.backends.cudnn.version()))
    print("LSTM bidirectional x%d layers, seq %d, batch %d, input %d, hidden %d, %s" %
          (args.layers, args.seq, args.batch, args.input, args.hidden, args.precision))
    print("latency: kiln median %.3f ms (min %.3f), cuDNN median %.3f ms (min %.3f); kiln / cuDNN = %.2f (target <= 1.2)" %
          (kiln_ms, run["latency_ms"]["min"], cudnn_ms, cudnn_min, ratio))
    print("accuracy vs PyTorch fp32 (rel_l2): kiln " + ", ".join("%s %.2e" % kv for kv in kiln_err.items()) +
          "; cuDNN %s " % args.precision + ", ".join("%s %.2e" % kv for kv in cudnn_err.items()))
    print("max abs error, kiln: " + ", ".join("%s %.2e" % kv for kv in kiln_max.items()))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"kiln_ms": kiln_ms, "cudnn_ms": cudnn_ms, "ratio": ratio, "kiln_rel_l2": kiln_err,
                       "cudnn_rel_l2": cudnn_err, "kiln_max_abs": kiln_max, "device": torch.cuda.get_device_name()},
                      f, indent=1)
    ok = all(e <= 1e-2 for e in kiln_err.values())
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

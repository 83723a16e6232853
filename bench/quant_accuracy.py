#!/usr/bin/env python3
"""Accuracy of int8 post-training quantization on the CPU reference evaluator.

For each held-out batch (.npz with the model's inputs and the fp32 reference output, as
models/make_minilm.py writes them), runs `kiln eval` on the fp32 graph and on the int8 QDQ graph
of each calibration file, and reports per-row cosine similarity with the reference output:

    /usr/bin/python3 bench/quant_accuracy.py build/bin/kiln build/models/minilm_l6_b16_s64.onnx \\
        build/models/minilm_heldout_b16_s64 --rows 100 --calib entropy=m.entropy.calib \\
        --calib minmax=m.minmax.calib --calib minmax_ffn2_float='m.minmax.calib@.*/dense_1/MatMul'

The int8 variants are `kiln eval --precision int8 --calib FILE`: int8 products, fp16 elsewhere,
as `kiln compile --precision int8` builds them (before 2026-12-03 the rest was fp32; the CPU
table in RESULTS.md used that). These are the numerics int8 kernels must reproduce (the
evaluator computes Q/DQ exactly).
Engine outputs measured elsewhere (`kiln run ENGINE --inputs BATCH --outputs DIR/BATCH` on a
GPU, same file names as the held-out batches) are compared the same way with
--outputs NAME=DIR; --no-eval skips the CPU evaluator runs.
"""
import argparse
import glob
import os
import subprocess
import sys
import tempfile

import numpy as np

ap = argparse.ArgumentParser()
ap.add_argument("kiln")
ap.add_argument("model")
ap.add_argument("heldout", help="folder of .npz batches with inputs and the reference output")
ap.add_argument("--output", default="sentence_embedding", help="output compared with the reference")
ap.add_argument("--calib", action="append", default=[],
                help="NAME=FILE or NAME=FILE@REGEX (REGEX: node names kept float); repeatable")
ap.add_argument("--outputs", action="append", default=[],
                help="NAME=DIR: outputs already computed (e.g. by an engine on a GPU), one .npz per batch; repeatable")
ap.add_argument("--no-eval", action="store_true", help="only the --outputs variants (no kiln eval)")
ap.add_argument("--reference-dir", help="take the reference output from DIR/<batch>.npz instead of the batch itself")
ap.add_argument("--rows", type=int, default=0, help="count only the first N rows (the distinct sentences; 0: all)")
args = ap.parse_args()

def variant(spec):
    """NAME=FILE or NAME=FILE@REGEX (products whose node name matches stay float)."""
    name, rest = spec.split("=", 1)
    path, _, keep = rest.partition("@")
    return name, ["--precision", "int8", "--calib", path] + (["--keep-float", keep] if keep else [])


variants = [] if args.no_eval else [("fp32", [])] + [variant(c) for c in args.calib]
variants += [(name, dirname) for name, dirname in (o.split("=", 1) for o in args.outputs)]
batches = sorted(glob.glob(os.path.join(args.heldout, "*.npz")))
if not batches:
    sys.exit(f"no .npz batches in {args.heldout}")
work = tempfile.mkdtemp(prefix="kiln-quant-")
cos = {name: [] for name, _ in variants}
for b in batches:
    ref = np.load(os.path.join(args.reference_dir, os.path.basename(b)) if args.reference_dir else b)[args.output]
    ref = ref.astype(np.float64)
    for name, extra in variants:
        if isinstance(extra, str):  # a folder of outputs
            got = np.load(os.path.join(extra, os.path.basename(b)))[args.output].astype(np.float64)
        else:
            out = os.path.join(work, "out.npz")
            r = subprocess.run([args.kiln, "eval", args.model, "--inputs", b, "--outputs", out] + extra,
                               capture_output=True, text=True)
            if r.returncode != 0:
                sys.exit(f"kiln eval failed on {b} ({name}): {r.stderr.strip()}")
            got = np.load(out)[args.output].astype(np.float64)
        c = (got * ref).sum(-1) / (np.linalg.norm(got, axis=-1) * np.linalg.norm(ref, axis=-1))
        cos[name].extend(c.tolist())
    print(f"{os.path.basename(b)}: " + "  ".join(f"{n} mean cos {np.mean(cos[n][-len(ref):]):.5f}" for n, _ in variants),
          flush=True)
n = args.rows or len(cos[variants[0][0]])
print(f"\n{n} rows" + ("" if args.rows else " (the last batch may repeat rows to fill it)"))
for name, _ in variants:
    c = np.array(cos[name][:n])
    print(f"{name:12s} cosine vs the {'reference' if args.reference_dir else 'fp32 torch reference'}: "
          f"mean {c.mean():.5f}  min {c.min():.5f}")

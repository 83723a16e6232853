#!/usr/bin/env python3
"""Runs kiln over the real-model corpus that fetch.py made (its manifest.json, inputs and
onnxruntime references): per model `kiln plan`, `kiln compile` fp32 and fp16 (no GPU needed),
`kiln eval` (the CPU evaluator) against onnxruntime, and with --gpu the fp32 and fp16 engines
against onnxruntime too. Prints a table; --json writes every number.

  /usr/bin/python3 models/realmodels/run_corpus.py --dir build/realmodels [--kiln build/bin/kiln]
      [--only ID,...] [--gpu] [--no-eval] [--json out.json] [--expect models/realmodels/expected.json]

Bounds (issue 23): CPU evaluator and fp32 engines rel L2 <= 1e-4, fp16 engines <= 1e-2 (per
output, against onnxruntime fp32; an --expect entry's "fp16_bound" replaces 1e-2 for a model whose
fp16 error is fp16's own, its "why" saying how that was established; an entry's "fp16_route" is the
route of its fp16 engine instead of precision=fp16 — nodes kept in fp32, which the table lists —
and the CPU evaluator checks that route against 1e-2 too, step eval_fp16). A model whose --expect entry has "attention_launches": N must
have N fused attention launches in its fp16 engine (the exporter's attention pattern recognised),
and one with "max_launches": N at most N launches. Needs numpy only (Debian's python3). Exit 0 when every step
ran as --expect says ("fail", "either" where the reference varies by machine; default: every
model passes every step), 1 otherwise.
"""
import argparse
import concurrent.futures
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

FP32_BOUND, FP16_BOUND = 1e-4, 1e-2


def run(cmd, timeout=900):
    t0 = time.time()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        out, rc = p.stdout + p.stderr, p.returncode
    except subprocess.TimeoutExpired:
        out, rc = "timeout after %d s" % timeout, 124
    return rc, out, time.time() - t0


def first_error(text):
    lines = text.splitlines()
    for k, line in enumerate(lines):
        if "error" in line or "not supported" in line or "unsupported" in line:
            msg = line.strip()
            if msg.endswith(":") and k + 1 < len(lines):
                msg += " " + lines[k + 1].strip()
            return msg[:300]
    lines = [l for l in text.splitlines() if l.strip()]
    return lines[-1][:200] if lines else ""


def rel_l2(got, want):
    got = np.asarray(got, dtype=np.float64).ravel()
    want = np.asarray(want, dtype=np.float64).ravel()
    if got.shape != want.shape:
        return float("inf")
    if np.isnan(got).any() != np.isnan(want).any():
        return float("inf")
    mask = ~np.isnan(want)
    num = np.linalg.norm(got[mask] - want[mask])
    den = np.linalg.norm(want[mask])
    return float(num / den) if den > 0 else float(num)


def npz_key(name):
    """The key np.load shows for an array kiln wrote: '/', '\\', '%' and control characters as %XX
    (compiler/io/Npz.h: an entry name cannot lead an unzipper out of its folder)."""
    return "".join("%%%02X" % ord(c) if c in "/\\%" or ord(c) < 0x20 or ord(c) == 0x7F else c for c in name)


def compare(out_npz, ref_npz, outputs):
    got, ref = np.load(out_npz), np.load(ref_npz)
    worst = 0.0
    for o in outputs:
        name = o["name"]
        key = npz_key(name)
        if key not in got.files:
            return float("inf"), "no output '%s'" % name
        worst = max(worst, rel_l2(got[key], ref[name]))
    return worst, ""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(os.path.dirname(here))
    ap.add_argument("--dir", default=os.path.join(root, "build", "realmodels"))
    ap.add_argument("--kiln", default=os.path.join(root, "build", "bin", "kiln"))
    ap.add_argument("--only", default="")
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--gpu", action="store_true", help="also run the engines (needs a GPU)")
    ap.add_argument("--no-eval", action="store_true", help="skip the CPU evaluator (slow on large models)")
    ap.add_argument("--jobs", type=int, default=1, help="models at a time")
    ap.add_argument("--json", default="")
    ap.add_argument("--expect", default="", help="JSON {id: {step: 'fail'}} of known failures")
    args = ap.parse_args()

    manifest_path = os.path.join(args.dir, "manifest.json")
    if not os.path.exists(manifest_path):
        print("skipped: no corpus at %s (run models/realmodels/fetch.py)" % args.dir)
        return 77
    manifest = json.load(open(manifest_path))
    only = set(filter(None, args.only.split(",")))
    expect = json.load(open(args.expect)) if args.expect else {}
    tmp = tempfile.mkdtemp(prefix="kiln-corpus-")

    def one(m):
        mid, model = m["id"], os.path.join(args.dir, m["onnx"])
        inputs = np.load(os.path.join(args.dir, m["inputs_npz"]))
        ref = os.path.join(args.dir, m["ref_npz"])
        common, shapes = [], []
        const = {i["name"]: inputs[i["name"]] for i in m["inputs"] if i.get("compile_time_constant")}
        runtime = {i["name"]: inputs[i["name"]] for i in m["inputs"] if not i.get("compile_time_constant")}
        for i in m["inputs"]:
            if not i.get("compile_time_constant"):
                shapes.append("%s:%s" % (i["name"], "x".join(str(d) for d in i["shape"]) or "scalar"))
        if shapes:
            common += ["--shapes", ",".join(shapes)]
        if const:
            cpath = os.path.join(tmp, mid + ".const.npz")
            np.savez(cpath, **const)
            common += ["--constant-inputs", cpath]
        rpath = os.path.join(tmp, mid + ".inputs.npz")
        np.savez(rpath, **runtime)
        r = {"id": mid, "exporter": m.get("exporter", ""), "steps": {}}
        route16 = expect.get(mid, {}).get("fp16_route")  # (nodes kept in fp32 for fp16's accuracy)
        rc, out, secs = run([args.kiln, "plan", model] + common)
        r["steps"]["plan"] = {"rc": rc, "seconds": round(secs, 1), "message": "" if rc == 0 else first_error(out)}
        for prec in ("fp32", "fp16"):
            engine = os.path.join(tmp, "%s_%s.kiln" % (mid, prec))
            # fp16: the range check on the CPU evaluator over the model's inputs (--check-inputs)
            # keeps in fp32 what those inputs push past half's range, as a user with
            # representative inputs would compile.
            check = ["--check-inputs", rpath] if prec == "fp16" and runtime else []
            route = ["--precision", prec] if prec == "fp32" or not route16 else ["--route", route16]
            rc, out, secs = run([args.kiln, "compile", model, "-o", engine, "--arch", args.arch] + route + common +
                                check)
            step = {"rc": rc, "seconds": round(secs, 1), "message": "" if rc == 0 else first_error(out)}
            kept = [l.replace("kiln: note: ", "") for l in out.splitlines() if "runs in fp32" in l]
            if kept:
                step["kept_fp32"] = len(kept)
                step["notes"] = kept[:20]
            r["steps"]["compile_" + prec] = step
            # Exporter patterns (issue 25): the fused attention launches the fp16 engine must have
            # ("attention_launches" in --expect) and the most launches it may have ("max_launches":
            # Q/K/V merged, constant weights folded), from inspect --json.
            want_attn = expect.get(mid, {}).get("attention_launches")
            max_launches = expect.get(mid, {}).get("max_launches")
            if rc == 0 and prec == "fp16" and (want_attn is not None or max_launches is not None):
                rc3, out3, _ = run([args.kiln, "inspect", engine, "--json"])
                launches = json.loads(out3)["launch_list"] if rc3 == 0 else []
                if want_attn is not None:
                    got = sum(1 for l in launches if l.get("kernel", "").startswith("kiln_attn")) if rc3 == 0 else -1
                    r["steps"]["attention"] = {"rc": 0 if got == want_attn else 1,
                                               "message": "%d fused attention launches, %d expected" % (got, want_attn)}
                if max_launches is not None:
                    got = len(launches) if rc3 == 0 else -1
                    r["steps"]["launches"] = {"rc": 0 if 0 <= got <= max_launches else 1,
                                              "message": "%d launches, at most %d expected" % (got, max_launches)}
            if rc == 0 and args.gpu:
                opath = os.path.join(tmp, "%s_%s.out.npz" % (mid, prec))
                rc2, out2, secs2 = run([args.kiln, "run", engine, "--inputs", rpath, "--outputs", opath,
                                        "--warmup", "0", "--iterations", "1"])
                if rc2 == 0:
                    err, why = compare(opath, ref, m["outputs"])
                    # (a model's own fp16 bound in --expect, where fp16 itself cannot do better: its why says so)
                    bound = FP32_BOUND if prec == "fp32" else expect.get(mid, {}).get("fp16_bound", FP16_BOUND)
                    r["steps"]["gpu_" + prec] = {"rc": 0 if err <= bound else 1, "rel_l2": err, "message": why}
                else:
                    r["steps"]["gpu_" + prec] = {"rc": rc2, "message": first_error(out2)}
            if os.path.exists(engine):
                os.remove(engine)
        if not args.no_eval:
            opath = os.path.join(tmp, mid + ".eval.npz")
            rc, out, secs = run([args.kiln, "eval", model, "--inputs", rpath, "--outputs", opath] + common)
            step = {"rc": rc, "seconds": round(secs, 1), "message": "" if rc == 0 else first_error(out)}
            if rc == 0:
                err, why = compare(opath, ref, m["outputs"])
                step.update({"rel_l2": err, "rc": 0 if err <= FP32_BOUND else 1, "message": why})
            r["steps"]["eval"] = step
            if route16:  # the fp16 route's accuracy on the CPU evaluator (its fp16 rounding, as the GPU's)
                opath = os.path.join(tmp, mid + ".eval16.npz")
                rc, out, secs = run([args.kiln, "eval", model, "--route", route16, "--inputs", rpath, "--outputs",
                                     opath] + common)
                step = {"rc": rc, "seconds": round(secs, 1), "message": "" if rc == 0 else first_error(out)}
                if rc == 0:
                    err, why = compare(opath, ref, m["outputs"])
                    bound = expect.get(mid, {}).get("fp16_bound", FP16_BOUND)
                    step.update({"rel_l2": err, "rc": 0 if err <= bound else 1, "message": why})
                r["steps"]["eval_fp16"] = step
        return r

    def report(r):
        mid = r["id"]
        cells = []
        for k, s in r["steps"].items():
            cell = "%s:%s" % (k, "ok" if s["rc"] == 0 else "FAIL")
            if "rel_l2" in s:
                cell += "(%.1e)" % s["rel_l2"]
            cells.append(cell)
        print("%-30s %s" % (mid, " ".join(cells)), flush=True)
        for k, s in r["steps"].items():
            if s["rc"] != 0 and s.get("message"):
                print("    %s: %s" % (k, s["message"]))

    todo = [m for m in manifest["models"] if not only or m["id"] in only]
    results = []
    # Models in parallel (--jobs): kiln runs as subprocesses, so threads suffice.
    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        for r in pool.map(one, todo):
            results.append(r)
            report(r)
    failures = 0
    for r in results:
        for k, s in r["steps"].items():
            want = expect.get(r["id"], {}).get(k)  # "fail", "either" (the reference varies by machine) or none
            if want != "either" and (s["rc"] != 0) != (want == "fail"):
                failures += 1
    if args.json:
        json.dump({"results": results, "failures": failures}, open(args.json, "w"), indent=1)
    print("corpus: %d models, %d unexpected step results" % (len(results), failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

